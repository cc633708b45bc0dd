r"""Discriminative projections with label projections (Wang & Mahadevan).

See :mod:`sdpembed.formulations.discriminative` for the model.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from .._labels import check_partial_labels
from .._params import constraints_of
from .._typing import ArrayLike
from ..exceptions import InputError
from ..formulations.discriminative import (
    check_continuous_labels,
    continuous_discriminative_pencil,
    discriminative_pencil,
    discriminative_projections_formulation,
)
from ..formulations.lpp import AFFINITY_PARAMETERS
from ..relaxations import RANK_TOL, Pencil
from ._projection import ProjectionEstimator, with_projection_parameters

__all__ = ["DiscriminativeProjections"]


@with_projection_parameters
class DiscriminativeProjections(ProjectionEstimator):
    r"""Locality-preserving discriminative projections with a label map (Wang & Mahadevan).

    Learns an instance map :math:`f` (``components_``) and a label map
    :math:`g` (``label_components_``) that send instances and their labels
    to the same :math:`d`-dimensional space, minimising

    .. math::

        C(f, g) = \frac{\sum_{i \le l} \|f^\top x_i - g^\top y_i\|^2
                        + \mu \sum_{i,j} W_{ij} \|f^\top x_i - f^\top x_j\|^2}
                       {\sum_{i \le l} \sum_{k \ne y_i} \|f^\top x_i - g^\top s_k\|^2},

    solved by the :math:`d` smallest solutions of :math:`(A + C)x = \lambda (B + C)x`
    (Theorem 1). Unlike LDA, :math:`d` is bounded only by ``n_features``.
    With ``labels="continuous"``, ``y`` holds real-valued label vectors (NaN
    rows for unlabeled points) and the problem is
    :math:`Z \hat L Z^\top x = \lambda Z \hat D Z^\top x` (Theorem 2).

    Parameters
    ----------
    n_components : int, default 2
        At most ``n_features``.
    mu : "auto" or float, default "auto"
        Topology weight; ``"auto"`` is :math:`l/s` (discrete) or :math:`0.1\,l/s`
        (continuous), :math:`l` labelled points and :math:`s` the sum of the
        affinity entries (the paper's choice).
    n_neighbors : int, default 5
        Neighbours of the affinity graph over all points.
    labels : {"discrete", "continuous"}, default "discrete"
        ``"discrete"``: integer classes, ``-1`` unlabeled.
    weights : {"heat", "binary"}, default "heat"
    sigma : float or None
        Heat-kernel width (median neighbour distance when ``None``).
    regularization : float, default 0
        Relative ridge on :math:`B + C` (on the informative directions).
    {projection_parameters}

    Attributes
    ----------
    components_ : ndarray, shape (n_components, n_features)
        :math:`f^\top`; ``transform(X) = X @ components_.T`` (the paper's :math:`f^\top X`).
    label_components_ : ndarray, shape (n_components, n_classes) or (n_components, r)
        :math:`g^\top`.
    classes_ : ndarray
        Discrete labels only.
    mu_ : float
        The :math:`\mu` used.
    eigenvalues_, objective_, solve_report_, formulation_, rank_gap_
        See :class:`~sdpembed.estimators.ProjectionEstimator`.

    Notes
    -----
    The eigenvalues lie in :math:`[0, 1]` because :math:`A \preceq B`. With
    equal class sizes, :math:`\gamma = (0; \mathbf 1)` (every instance mapped
    to 0, every label to the same point) solves the pencil exactly with
    :math:`\lambda = 1/c`; when it falls among the :math:`d` smallest (iris,
    :math:`d = 3`), the matching row of ``components_`` is zero. The paper
    does not discuss this degenerate direction; it is kept, as the paper's
    algorithm prescribes, and is visible in ``eigenvalues_``; ``fit`` warns
    (:class:`~sdpembed.exceptions.DegenerateEmbeddingWarning`) because it maps
    every instance to the same point (its :math:`f` carries a round-off share
    of :math:`\gamma^\top (B + C)\gamma`). Compare the closed form and SDP paths on
    the joint subspace of ``np.vstack([components_.T, label_components_.T])``.

    **Rank-revealing step.** :math:`A \preceq B` (each labelled instance's
    distance to its own label is one of the :math:`c` terms of :math:`B`), so
    :math:`\ker(B + C) \subseteq \ker(A + C)`: the directions removed by
    restricting to the numerical range of :math:`B + C` (unit-diagonal
    scaling, eigenvalues :math:`> \text{rank\_tol}`, whitening basis
    :math:`T`, :math:`T^\top (B + C) T = I`) carry no information. They are
    :math:`(f; 0)` with :math:`Xf = 0` (constant-zero or collinear features,
    :math:`p \ge n`) and :math:`(f; a\mathbf 1)` with :math:`Xf = a\mathbf 1`
    (a constant nonzero feature): every instance and every label mapped to
    one point. The paper's pencil (Theorem 1) is singular on both; every
    finite eigenpair is unchanged.
    """

    _parameter_constraints: dict = {
        **ProjectionEstimator._parameter_constraints,
        **constraints_of(discriminative_projections_formulation, "mu", "labels",
                         *AFFINITY_PARAMETERS),
    }

    def __init__(self, *, n_components: int = 2, mu: float | str = "auto", n_neighbors: int = 5,
                 labels: str = "discrete", weights: str = "heat", sigma: float | None = None,
                 regularization: float = 0.0, method: str = "eigen", solver: str = "auto",
                 solver_options: dict[str, Any] | None = None, rank_tol: float = RANK_TOL) -> None:
        super().__init__(n_components=n_components, method=method, solver=solver,
                         solver_options=solver_options, rank_tol=rank_tol)
        self.mu = mu
        self.n_neighbors = n_neighbors
        self.labels = labels
        self.weights = weights
        self.sigma = sigma
        self.regularization = regularization

    @property
    def _multi_output_y(self):
        return self.labels == "continuous"

    def _validate_Xy(self, X, y):
        if self.labels == "continuous":  # NaN marks unlabeled rows
            X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
            return X, y
        return super()._validate_Xy(X, y)

    def _pencil(self, X, y) -> Pencil:
        self.__dict__.pop("classes_", None)
        if self.labels == "discrete":
            y_int, classes, _ = check_partial_labels(y, X.shape[0])
            self.classes_ = classes
            pencil = discriminative_pencil(X, y_int, classes.size, mu=self.mu,
                                           n_neighbors=self.n_neighbors, weights=self.weights,
                                           sigma=self.sigma)
        else:
            Y, labeled = check_continuous_labels(y, X.shape[0])
            pencil = continuous_discriminative_pencil(X, Y, labeled, mu=self.mu,
                                                      n_neighbors=self.n_neighbors,
                                                      weights=self.weights, sigma=self.sigma)
        self.mu_ = pencil.meta["mu"]
        return pencil

    def _default_n_components(self, pencil, X):
        return min(2, X.shape[1])

    def _max_n_components(self, pencil, X):
        return X.shape[1], "n_features: the instance map f has one row per feature"

    def _set_components(self, vectors, values):
        p = self.n_features_in_
        self.components_ = np.ascontiguousarray(vectors[:p].T)
        self.label_components_ = np.ascontiguousarray(vectors[p:].T)
        self.eigenvalues_ = np.asarray(values, dtype=float)

    def _instance_share(self, pencil, vectors):
        r""":math:`f^\top (B + C)_{ff} f / \gamma^\top (B + C) \gamma` per direction."""
        p = self.n_features_in_
        M = pencil.B
        total = np.einsum("ik,ij,jk->k", vectors, M, vectors)
        inst = np.einsum("ik,ij,jk->k", vectors[:p], M[:p, :p], vectors[:p])
        return np.divide(inst, total, out=np.zeros_like(inst), where=total > 0)

    def _formulation_meta(self):
        return {"method": "discriminative_projections"}

    def label_prototypes(self, labels: ArrayLike | None = None) -> np.ndarray:
        r"""Images :math:`g^\top s` of labels in the embedding space.

        Parameters
        ----------
        labels : array-like, optional
            Discrete: ignored / ``None`` gives one row per class in ``classes_``
            (:math:`g^\top s_k`, the paper's label prototypes). Continuous:
            label values, shape (k,) or (k, r).

        Returns
        -------
        ndarray, shape (n_labels, n_components)
        """
        check_is_fitted(self, "label_components_")
        if self.labels == "discrete":
            if labels is not None:
                raise InputError("label_prototypes() takes no labels for discrete labels; "
                                 "row k is the prototype of classes_[k]")
            return self.label_components_.T.copy()
        if labels is None:
            raise InputError("label_prototypes(labels) needs label values for "
                             "labels='continuous'")
        V = np.asarray(labels, dtype=float)
        V = V[:, None] if V.ndim == 1 else V
        if V.shape[1] != self.label_components_.shape[1]:
            raise InputError(f"labels must have {self.label_components_.shape[1]} columns")
        return V @ self.label_components_.T

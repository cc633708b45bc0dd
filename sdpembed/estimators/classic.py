r"""Classic eigen-based projections with a closed-form and an SDP path: LDA, LPP, SDA, PCA.

Each estimator builds the pencil of its method (see
:mod:`sdpembed.formulations.lda`, :mod:`~sdpembed.formulations.lpp`,
:mod:`~sdpembed.formulations.sda`) and lets
:class:`~sdpembed.estimators.ProjectionEstimator` solve it with
``method="eigen"`` (``scipy.linalg.eigh``) or ``method="sdp"`` (the exact
relaxation of :mod:`sdpembed.relaxations`), after the rank-revealing step
(:func:`sdpembed.relaxations.reduce_pencil`; each docstring states what it removes
for that method).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._labels import check_partial_labels
from .._params import constraints_of
from .._typing import ArrayLike
from ..formulations.lda import lda_formulation, lda_pencil
from ..formulations.lpp import AFFINITY_PARAMETERS, lpp_formulation, lpp_pencil
from ..formulations.sda import sda_formulation, sda_pencil
from ..relaxations import RANK_TOL, Pencil
from ..scatter.discriminant import total_scatter
from ._projection import ProjectionEstimator, with_projection_parameters

__all__ = ["LDA", "LPP", "SDA", "PCA"]


#: Constraints shared by the graph-based estimators (LPP, SDA).


class _ClassBased(ProjectionEstimator):
    """Shared label handling of LDA and SDA: at most ``n_classes - 1`` directions."""

    def _labels(self, X, y):
        y_int, classes, labeled = check_partial_labels(y, X.shape[0])
        self.classes_ = classes
        return y_int, classes

    def _default_n_components(self, pencil, X):
        return min(self.classes_.size - 1, X.shape[1])

    def _max_n_components(self, pencil, X):
        return (min(self.classes_.size - 1, X.shape[1]),
                f"{type(self).__name__} has at most n_classes - 1 = {self.classes_.size - 1} "
                f"informative directions and n_features = {X.shape[1]}")


@with_projection_parameters
class LDA(_ClassBased):
    r"""Linear discriminant analysis, closed form or exact SDP.

    Solves :math:`S_b p = \lambda S_w p` for the largest :math:`\lambda`
    (``criterion="ratio_trace"``, the subspace of scikit-learn's
    ``LinearDiscriminantAnalysis(solver="eigen")``), or the trace-ratio
    problem :math:`\max_{P^\top P = I}
    \operatorname{tr}(P^\top S_b P)/\operatorname{tr}(P^\top S_w P)`
    (``criterion="trace_ratio"``; closed form by the iterative trace-ratio
    algorithm, SDP by Charnes–Cooper). Points with ``y == -1`` are ignored.

    **Rank-revealing step.** :math:`S_w` is singular on real data (constant
    pixels, collinear features, fewer labelled points than features). The
    pencil is restricted to the numerical range of :math:`S_w`, decided on
    :math:`\Delta^{-1/2} S_w \Delta^{-1/2}`, :math:`\Delta = \operatorname{diag}(S_w)`,
    with eigenvalues :math:`\mu_i > \text{rank\_tol}`: with the whitening
    basis :math:`T = \Delta^{-1/2} U \operatorname{diag}(\mu)^{-1/2}`
    (``ratio_trace``, :math:`T^\top S_w T = I`) the problem becomes the
    eigenproblem of :math:`T^\top S_b T` and :math:`P = TQ`, the subspace of
    scikit-learn's ``LinearDiscriminantAnalysis(solver="svd")`` (same
    threshold, :math:`10^{-4}` on singular values of the standardised data).
    Directions where :math:`S_w` vanishes but :math:`S_b` does not (infinite
    Fisher ratio, only when features outnumber labelled points) are excluded
    with a :class:`~sdpembed.exceptions.RankDeficiencyWarning`; with
    ``regularization > 0`` only :math:`\ker S_t` is removed and
    :math:`S_w + rI` is used on the rest. ``trace_ratio`` uses an orthonormal
    basis of the same range (:func:`sdpembed.relaxations.reduce_pencil`).

    Parameters
    ----------
    n_components : int or None
        At most ``n_classes - 1``; default that bound (capped by ``n_features``
        and by the rank left by the rank-revealing step).
    criterion : {"ratio_trace", "trace_ratio"}
    regularization : float, default 0
        Relative ridge :math:`S_w + r I` with
        :math:`r = \text{regularization}\cdot\operatorname{tr}(S_w)/m` over
        the :math:`m` informative directions. Keeps the directions of infinite
        ratio (above) at a finite, large ratio, as shrinkage LDA does.
    {projection_parameters}

    Attributes
    ----------
    classes_ : ndarray
    components_, eigenvalues_, objective_, ...
        See :class:`~sdpembed.estimators.ProjectionEstimator`.
    """

    _parameter_constraints: dict = {
        **ProjectionEstimator._parameter_constraints,
        **constraints_of(lda_formulation, "criterion", "regularization", "rank_tol"),
    }

    def __init__(self, *, n_components: int | None = None, criterion: str = "ratio_trace",
                 regularization: float = 0.0, method: str = "eigen", solver: str = "auto",
                 solver_options: dict[str, Any] | None = None, rank_tol: float = RANK_TOL) -> None:
        super().__init__(n_components=n_components, method=method, solver=solver,
                         solver_options=solver_options, rank_tol=rank_tol)
        self.criterion = criterion
        self.regularization = regularization

    def _pencil(self, X, y) -> Pencil:
        y_int, classes = self._labels(X, y)
        return lda_pencil(X, y_int, classes.size, criterion=self.criterion)

    def _formulation_meta(self):
        return {"method": "lda"}


@with_projection_parameters
class SDA(_ClassBased):
    r"""Semi-supervised discriminant analysis (Cai, He & Han, ICCV 2007).

    Solves :math:`S_b a = \lambda (S_t + \alpha X^\top L X) a` for the
    largest :math:`\lambda`; :math:`S_b, S_t` over the labelled points,
    :math:`L` the Laplacian of a ``n_neighbors`` graph over all points
    (``y == -1`` marks unlabeled points, which enter only through :math:`L`).

    Parameters
    ----------
    n_components : int or None
        At most ``n_classes - 1``.
    alpha : float, default 0.1
        Weight of the graph regulariser.
    n_neighbors : int, default 5
    weights : {"binary", "heat"}, default "binary"
        Graph weights (the paper uses binary).
    sigma : float or None
        Heat-kernel width (median neighbour distance when ``None``).
    regularization : float, default 0
        Relative Tikhonov term (the paper's :math:`\beta I`), on the
        informative directions.
    {projection_parameters}

    Notes
    -----
    **Rank-revealing step.** With :math:`B = S_t + \alpha X^\top L X`,
    :math:`S_b \preceq S_t` gives :math:`\ker B \subseteq \ker S_b`, so
    restricting to the numerical range of :math:`B` (unit-diagonal scaling,
    eigenvalues :math:`> \text{rank\_tol}`, whitening basis :math:`T`,
    :math:`T^\top B T = I`) removes only directions with no information
    (constant or collinear features, :math:`p > n`) and leaves every finite
    generalized eigenpair unchanged; the paper's :math:`\beta I` remains the
    ``regularization`` option.
    """

    _parameter_constraints: dict = {
        **ProjectionEstimator._parameter_constraints,
        **constraints_of(sda_formulation, "alpha", *AFFINITY_PARAMETERS),
    }

    def __init__(self, *, n_components: int | None = None, alpha: float = 0.1, n_neighbors: int = 5,
                 weights: str = "binary", sigma: float | None = None, regularization: float = 0.0,
                 method: str = "eigen", solver: str = "auto",
                 solver_options: dict[str, Any] | None = None, rank_tol: float = RANK_TOL) -> None:
        super().__init__(n_components=n_components, method=method, solver=solver,
                         solver_options=solver_options, rank_tol=rank_tol)
        self.alpha = alpha
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.sigma = sigma
        self.regularization = regularization

    def _pencil(self, X, y) -> Pencil:
        y_int, classes = self._labels(X, y)
        return sda_pencil(X, y_int, classes.size, alpha=self.alpha,
                          n_neighbors=self.n_neighbors, weights=self.weights, sigma=self.sigma)

    def _formulation_meta(self):
        return {"method": "sda"}


@with_projection_parameters
class LPP(ProjectionEstimator):
    r"""Locality preserving projections (He & Niyogi, NIPS 2003), unsupervised.

    Solves :math:`X_c^\top L X_c a = \lambda X_c^\top D X_c a` for the smallest
    :math:`\lambda` over a ``n_neighbors`` graph, with :math:`X_c` the data
    centred over the training points. ``y`` is ignored.

    The paper first projects the data onto their principal components
    (step 1), which centres them; centring also excludes the trivial
    solution :math:`X a = \mathbf 1` (eigenvalue 0, every point mapped to the
    same value), which uncentred data far from the origin nearly attain.
    :meth:`transform` therefore centres too: ``(X - mean_) @ components_.T``.

    **Rank-revealing step** (the paper's PCA step with a stated tolerance).
    With :math:`L \preceq 2D`, :math:`\ker X_c^\top D X_c \subseteq
    \ker X_c^\top L X_c`, so the pencil is restricted to the numerical range
    of :math:`B = X_c^\top D X_c` (unit-diagonal scaling, eigenvalues
    :math:`> \text{rank\_tol}`, whitening basis :math:`T` with
    :math:`T^\top B T = I`). This removes exactly the directions along which the
    centred data do not vary (constant or collinear features, :math:`p \ge n`);
    every finite eigenpair is unchanged. Without it, a ridge :math:`B + rI`
    would give those directions eigenvalue 0, the smallest, and an embedding
    of size ~1e-16.

    Parameters
    ----------
    n_components : int, default 2
    n_neighbors : int, default 5
    weights : {"heat", "binary"}, default "heat"
    sigma : float or None
        Heat-kernel width (median neighbour distance when ``None``).
    regularization : float, default 0
        Relative ridge on :math:`X_c^\top D X_c` (on the informative directions).
    {projection_parameters}

    Attributes
    ----------
    mean_ : ndarray, shape (n_features,)
        Mean of the training points.
    components_, eigenvalues_, objective_, ...
        See :class:`~sdpembed.estimators.ProjectionEstimator`.
    """

    _requires_y = False

    _parameter_constraints: dict = {
        **ProjectionEstimator._parameter_constraints,
        **constraints_of(lpp_formulation, *AFFINITY_PARAMETERS),
    }

    def __init__(self, *, n_components: int = 2, n_neighbors: int = 5, weights: str = "heat",
                 sigma: float | None = None, regularization: float = 0.0, method: str = "eigen",
                 solver: str = "auto", solver_options: dict[str, Any] | None = None,
                 rank_tol: float = RANK_TOL) -> None:
        super().__init__(n_components=n_components, method=method, solver=solver,
                         solver_options=solver_options, rank_tol=rank_tol)
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.sigma = sigma
        self.regularization = regularization

    def _pencil(self, X, y) -> Pencil:
        self.mean_ = X.mean(axis=0)
        return lpp_pencil(X - self.mean_, n_neighbors=self.n_neighbors, weights=self.weights,
                          sigma=self.sigma)

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Project the centred data: ``(X - mean_) @ components_.T``."""
        check_is_fitted(self, "components_")
        return super().transform(X) - self.mean_ @ self.components_.T

    def _formulation_meta(self):
        return {"method": "lpp"}


@with_projection_parameters
class PCA(ProjectionEstimator):
    r"""Principal component analysis on the Fantope.

    :math:`\max_{P^\top P = I} \operatorname{tr}(P^\top \Sigma P)`, :math:`\Sigma` the covariance.

    Exact by Ky Fan; included as the simplest instance of the machinery and
    as the pre-step the papers use. Unlike the other estimators,
    :meth:`transform` centres: ``(X - mean_) @ components_.T``. ``y`` is ignored.

    **Rank-revealing step.** The Fantope problem is restricted to the
    numerical range of :math:`\Sigma` (orthonormal basis, unit-diagonal
    scaling, eigenvalues :math:`> \text{rank\_tol}`), so ``n_components`` is
    at most the numerical rank of the centred data and no returned direction
    has zero variance.

    Parameters
    ----------
    n_components : int, default 2
    {projection_parameters}

    Attributes
    ----------
    mean_ : ndarray, shape (n_features,)
    explained_variance_ : ndarray, shape (n_components,)
        Equal to ``eigenvalues_``.
    """

    _requires_y = False

    def __init__(self, *, n_components: int = 2, method: str = "eigen", solver: str = "auto",
                 solver_options: dict[str, Any] | None = None, rank_tol: float = RANK_TOL) -> None:
        super().__init__(n_components=n_components, method=method, solver=solver,
                         solver_options=solver_options, rank_tol=rank_tol)

    def _pencil(self, X, y) -> Pencil:
        self.mean_ = X.mean(axis=0)
        cov = total_scatter(X) / max(X.shape[0] - 1, 1)
        return Pencil(cov, None, "max", "trace", {"method": "pca", "equations": ("Ky Fan 1949",)})

    def _set_components(self, vectors, values):
        super()._set_components(vectors, values)
        self.explained_variance_ = self.eigenvalues_

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Project the centred data: ``(X - mean_) @ components_.T``."""
        return super().transform(X) - self.mean_ @ self.components_.T

    def _formulation_meta(self):
        return {"method": "pca"}

r"""Exact graph-based transductive classifiers: LGC (Zhou et al.) and GFHF (Zhu et al.).

Both fit on all points, labelled and unlabelled (``y == -1``), and label the
unlabelled ones through a graph over all of them; they are the baselines of
the TCA paper's tables (Liu, Tao & Liu, ICDM 2008, Table 4). The closed forms
(:mod:`sdpembed.scatter.propagation`) are solved once by a sparse LU or dense
Cholesky factorisation, so the result is the fixed point of the papers'
iterations, not an iterate stopped early (scikit-learn's ``LabelSpreading``
at its default ``max_iter=30`` is far from converged at Zhou et al.'s
:math:`\alpha = 0.99`: the error decays like :math:`0.99^t`).

The API follows scikit-learn's ``semi_supervised`` estimators: ``fit(X, y)``,
``transduction_``, ``label_distributions_``, and an inductive ``predict`` /
``predict_proba`` for new points, :math:`p(x) \propto \sum_i k(x, x_i) F_i`
with :math:`F` the row-normalised ``label_distributions_`` (as scikit-learn
does; ``fit(X, y).predict(X)`` need not equal ``transduction_``).

Graphs (``kernel``), all symmetric with zero diagonal:

* ``"knn"``: :math:`W_{ij} = 1` if :math:`x_j` is among the ``n_neighbors``
  nearest neighbours of :math:`x_i` or vice versa;
* ``"heat_knn"``: the same pattern with heat-kernel weights
  :math:`\exp(-\lVert x_i - x_j\rVert^2/\sigma^2)`, :math:`\sigma` the mean
  edge length by default (the graph of TCA's eq. 4,
  :func:`sdpembed.scatter.tca.tca_graph`);
* ``"rbf"``: the dense :math:`W_{ij} = \exp(-\gamma\lVert x_i - x_j\rVert^2)`,
  :math:`i \ne j` (Zhou et al.'s and Zhu et al.'s Gaussian affinity);
* a callable ``kernel(A, B)`` returning the ``(len(A), len(B))`` affinity
  (dense or sparse; its diagonal on ``kernel(X, X)`` is ignored).
"""

from __future__ import annotations

import logging
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from .._labels import check_partial_labels, label_indicator
from .._sklearn import Interval, StrOptions, _fit_context
from ..exceptions import InputError, LabelError, warn
from ..scatter.discriminant import knn_affinity
from ..scatter.propagation import (
    check_affinity,
    check_components,
    class_mass_normalization,
    harmonic_scores,
    lgc_scores,
    orphan_rows,
)
from ..scatter.tca import tca_graph
from ._validation import TypedParameterValidation

__all__ = ["LGC", "GFHF", "KERNELS"]

logger = logging.getLogger(__name__)

#: Graphs accepted by ``kernel`` (besides a callable).
KERNELS = ("knn", "heat_knn", "rbf")


class _GraphTransduction(TypedParameterValidation, ClassifierMixin, BaseEstimator):
    """Shared graph construction, label handling and inductive prediction."""

    _parameter_constraints: dict = {
        "kernel": [StrOptions(set(KERNELS)), callable],
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "sigma": [Interval(Real, 0, None, closed="neither"), None],
        "orphans": [StrOptions({"raise", "prior"})],
    }

    # ----------------------------------------------------------------- graph
    def _affinity(self, X: np.ndarray):
        """Affinity over the training points (sparse for the k-NN graphs)."""
        n = X.shape[0]
        self.sigma_ = None
        if self.kernel in ("knn", "heat_knn") and self.n_neighbors >= n:
            raise InputError(f"n_neighbors={self.n_neighbors} must be below n_samples={n}")
        if self.kernel == "knn":
            W = knn_affinity(X, self.n_neighbors, weights="binary")
        elif self.kernel == "heat_knn":
            graph = tca_graph(X, n_neighbors=self.n_neighbors, sigma=self.sigma)
            d = np.sqrt(graph.sqdist)
            sigma = self.sigma if self.sigma is not None else (
                float(d.mean()) if d.size and d.mean() > 0 else 1.0)
            self.sigma_ = float(sigma)
            W = graph.adjacency()
        elif self.kernel == "rbf":
            W = rbf_kernel(X, X, gamma=self.gamma)
        else:
            W = self.kernel(X, X)
            if not (sp.issparse(W) or isinstance(W, np.ndarray)) or W.shape != (n, n):
                raise InputError(f"kernel(X, X) must return an ({n}, {n}) array or sparse "
                                 f"matrix; got {type(W).__name__} of shape "
                                 f"{getattr(W, 'shape', None)}")
        return check_affinity(W)

    def _kernel_to_training(self, X: np.ndarray) -> np.ndarray:
        """Weights ``(n_new, n_train)`` of new points to the training points."""
        n_new, n_train = X.shape[0], self.X_.shape[0]
        if self.kernel in ("knn", "heat_knn"):
            k = min(self.n_neighbors, n_train)
            dist, ind = self._nn.kneighbors(X, n_neighbors=k)
            w = np.ones_like(dist) if self.kernel == "knn" else np.exp(-dist**2 / self.sigma_**2)
            K = np.zeros((n_new, n_train))
            np.put_along_axis(K, ind, w, axis=1)
            return K
        if self.kernel == "rbf":
            return rbf_kernel(X, self.X_, gamma=self.gamma)
        K = self.kernel(X, self.X_)
        K = K.toarray() if sp.issparse(K) else np.asarray(K, dtype=float)
        if K.shape != (n_new, n_train):
            raise InputError(f"kernel(X_new, X_train) must return shape {(n_new, n_train)}; "
                             f"got {K.shape}")
        return K

    # ---------------------------------------------------------------- labels
    def _labels(self, y, n: int):
        target = type_of_target(y, input_name="y")
        if target not in ("binary", "multiclass"):
            raise LabelError(f"Unknown label type: {target}. {type(self).__name__} needs "
                             "class labels, -1 for unlabelled points")
        y_int, classes, labeled = check_partial_labels(y, n, min_per_class=1,
                                                       allow_strings=True)
        return y_int, classes, labeled

    # ------------------------------------------------------------------- fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Label the unlabelled points (``y == -1``) of ``X``.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
            All points, labelled and unlabelled.
        y : array-like, shape (n_samples,)
            Class labels, ``-1`` for unlabelled points.

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        y_int, self.classes_, labeled = self._labels(y, X.shape[0])
        W = self._affinity(X)
        Y = label_indicator(y_int, self.classes_.size)
        orphans = orphan_rows(W, labeled)
        self.n_orphans_ = int(orphans.sum())
        if self.orphans == "raise" or not orphans.any():
            check_components(W, labeled)
            F = self._scores(W, Y, labeled)
        else:
            keep = ~orphans
            W_keep = W[keep][:, keep] if sp.issparse(W) else W[np.ix_(keep, keep)]
            F = np.empty((X.shape[0], self.classes_.size))
            F[keep] = self._scores(W_keep, Y[keep], labeled[keep])
            F[orphans] = Y[labeled].mean(axis=0)  # the labelled class proportions
            warn(f"{self.n_orphans_} point(s) lie in connected components of the "
                          "graph without a labelled point; orphans='prior' gives them the "
                          "labelled class proportions (the most frequent labelled class)",
                          UserWarning)
        total = F.sum(axis=1, keepdims=True)
        if np.any(total <= 0):  # pragma: no cover - excluded by check_components
            raise LabelError("some points received no label mass; connect the graph")
        self.X_ = X
        self.label_distributions_ = F / total
        self.transduction_ = self.classes_[np.argmax(F, axis=1)]
        self.n_labeled_ = int(labeled.sum())
        self._nn = (NearestNeighbors().fit(X) if self.kernel in ("knn", "heat_knn") else None)
        logger.info("%s: %d labelled, %d unlabelled points, %d classes", type(self).__name__,
                    self.n_labeled_, X.shape[0] - self.n_labeled_, self.classes_.size)
        return self

    def _scores(self, W, Y: np.ndarray, labeled: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    # --------------------------------------------------------------- predict
    def predict_proba(self, X):
        r"""Class probabilities of new points, :math:`p(x) \propto \sum_i k(x, x_i) F_i`.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)

        Returns
        -------
        ndarray, shape (n_samples, n_classes)

        Raises
        ------
        InputError
            A point has zero affinity to every training point (e.g. far away
            under a narrow ``"rbf"`` kernel).
        """
        check_is_fitted(self, "label_distributions_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        P = self._kernel_to_training(X) @ self.label_distributions_
        total = P.sum(axis=1, keepdims=True)
        if np.any(total <= 0):
            raise InputError(
                f"{int(np.sum(total <= 0))} point(s) have zero affinity to every training point "
                f"under kernel={self.kernel!r}; use a wider kernel (smaller gamma) or 'knn'")
        return P / total

    def predict(self, X):
        """Most probable class of new points (see :meth:`predict_proba`)."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags


class LGC(_GraphTransduction):
    r"""Learning with local and global consistency (Zhou et al., NIPS 2004), in closed form.

    .. math::

        F^* = (1 - \alpha)(I - \alpha S)^{-1} Y,\qquad S = D^{-1/2} W D^{-1/2},

    the limit of Zhou et al.'s iteration
    :math:`F_{t+1} = \alpha S F_t + (1 - \alpha) Y` (their section 2; section 3
    gives the cost it minimises), computed by one factorisation of the sparse
    (or dense) symmetric positive definite :math:`I - \alpha S`
    (:func:`sdpembed.scatter.propagation.lgc_scores`). Point :math:`i` gets
    class :math:`\arg\max_j F^*_{ij}`; labelled points may be relabelled, as
    in the paper. Every connected component of the graph must hold a
    labelled point (else :class:`~sdpembed.exceptions.DisconnectedGraphError`).

    Parameters
    ----------
    alpha : float in (0, 1), default 0.99
        Zhou et al.'s value (scikit-learn's ``LabelSpreading`` defaults to 0.2).
    kernel : {"knn", "heat_knn", "rbf"} or callable, default "knn"
        The graph (module docstring); ``"knn"`` needs no scale.
    gamma : float, default 20
        ``"rbf"`` width, as scikit-learn's.
    n_neighbors : int, default 7
        ``"knn"`` and ``"heat_knn"``.
    sigma : float or None, default None
        ``"heat_knn"`` width; ``None`` uses the mean edge length.
    orphans : {"raise", "prior"}, default "raise"
        Points in a connected component without a labelled point carry no
        label information. ``"raise"``: refuse the graph
        (:class:`~sdpembed.exceptions.DisconnectedGraphError`). ``"prior"``: solve
        on the components that hold a label and give those points the class
        proportions of the labelled points (so the most frequent labelled
        class), with a warning. Iterative implementations leave their scores
        at 0 and label them with the first class.

    Attributes
    ----------
    transduction_ : ndarray, shape (n_samples,)
        Label of every training point.
    label_distributions_ : ndarray, shape (n_samples, n_classes)
        Rows of :math:`F^*` normalised to sum 1.
    classes_ : ndarray
    X_ : ndarray
        The training points (for :meth:`predict`).
    sigma_ : float or None
        The ``"heat_knn"`` width used.
    n_labeled_ : int
    n_orphans_ : int
        Points in components without a labelled point (see ``orphans``).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> y_semi = np.where(np.arange(150) % 10 == 0, y, -1)
    >>> lgc = LGC().fit(X, y_semi)
    >>> round(float((lgc.transduction_ == y).mean()), 2)
    0.9
    """

    _parameter_constraints: dict = {
        **_GraphTransduction._parameter_constraints,
        "alpha": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(self, *, alpha: float = 0.99, kernel: str = "knn", gamma: float = 20.0,
                 n_neighbors: int = 7, sigma: float | None = None,
                 orphans: str = "raise") -> None:
        self.alpha = alpha
        self.kernel = kernel
        self.gamma = gamma
        self.n_neighbors = n_neighbors
        self.sigma = sigma
        self.orphans = orphans

    def _scores(self, W, Y, labeled):
        return lgc_scores(W, Y, self.alpha)


class GFHF(_GraphTransduction):
    r"""Gaussian fields and harmonic functions (Zhu, Ghahramani & Lafferty, ICML 2003), exact.

    The harmonic function fixed to the labels on the labelled points,

    .. math::

        f_u = (D_{uu} - W_{uu})^{-1} W_{ul} f_l = -L_{uu}^{-1} L_{ul} f_l,

    one column per class (:func:`sdpembed.scatter.propagation.harmonic_scores`;
    the fixed point of scikit-learn's ``LabelPropagation``). Labelled points
    keep their labels. Every connected component of the graph must hold a
    labelled point (else :class:`~sdpembed.exceptions.DisconnectedGraphError`).

    Parameters
    ----------
    kernel : {"knn", "heat_knn", "rbf"} or callable, default "knn"
    gamma : float, default 20
    n_neighbors : int, default 7
    sigma : float or None, default None
    orphans : {"raise", "prior"}, default "raise"
        As in :class:`LGC`.
    class_mass_normalization : bool, default False
        Zhu et al.'s class mass normalisation (their use of class prior
        knowledge): unlabelled point :math:`i` is
        scored :math:`q_k f_{ik} / \sum_u f_{uk}`, :math:`q` the class
        proportions of the labelled points.

    Attributes
    ----------
    transduction_, label_distributions_
        As in :class:`LGC`; unlabelled rows of ``label_distributions_`` are
        the harmonic solution (they already sum to 1), rescaled by the class
        mass normalisation when asked for.
    classes_, X_, sigma_, n_labeled_, n_orphans_, n_features_in_
        As in :class:`LGC`.
    """

    _parameter_constraints: dict = {
        **_GraphTransduction._parameter_constraints,
        "class_mass_normalization": ["boolean"],
    }

    def __init__(self, *, kernel: str = "knn", gamma: float = 20.0, n_neighbors: int = 7,
                 sigma: float | None = None, orphans: str = "raise",
                 class_mass_normalization: bool = False) -> None:
        self.kernel = kernel
        self.gamma = gamma
        self.n_neighbors = n_neighbors
        self.sigma = sigma
        self.orphans = orphans
        self.class_mass_normalization = class_mass_normalization

    def _scores(self, W, Y, labeled):
        F = harmonic_scores(W, Y, labeled)
        if self.class_mass_normalization:
            q = Y[labeled].sum(axis=0) / labeled.sum()
            F = class_mass_normalization(F, labeled, q)
        return F


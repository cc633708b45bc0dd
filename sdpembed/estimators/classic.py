r"""Classic eigen-based projections with a closed-form and an SDP path: LDA, LPP, SDA, PCA.

Each estimator builds the pencil of its method (see
:mod:`sdpembed.formulations.lda`, :mod:`~sdpembed.formulations.lpp`,
:mod:`~sdpembed.formulations.sda`) and lets
:class:`~sdpembed.estimators._projection.ProjectionEstimator` solve it with
``method="eigen"`` (``scipy.linalg.eigh``) or ``method="sdp"`` (the exact
relaxation of :mod:`sdpembed.relaxations`).
"""

from __future__ import annotations

from .._labels import check_partial_labels
from ..formulations.lda import lda_pencil
from ..formulations.lpp import lpp_pencil
from ..formulations.sda import sda_pencil
from ..relaxations import Pencil
from ..scatter.discriminant import total_scatter
from ._projection import ProjectionEstimator

__all__ = ["LDA", "LPP", "SDA", "PCA"]


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


class LDA(_ClassBased):
    r"""Linear discriminant analysis, closed form or exact SDP.

    Solves :math:`S_b p = \lambda S_w p` for the largest :math:`\lambda`
    (``criterion="ratio_trace"``, the subspace of scikit-learn's
    ``LinearDiscriminantAnalysis(solver="eigen")``), or the trace-ratio
    problem :math:`\max_{P^\top P = I}
    \operatorname{tr}(P^\top S_b P)/\operatorname{tr}(P^\top S_w P)`
    (``criterion="trace_ratio"``; closed form by the iterative trace-ratio
    algorithm, SDP by Charnes–Cooper). Points with ``y == -1`` are ignored.

    Parameters
    ----------
    n_components : int or None
        At most ``n_classes - 1``; default that bound (capped by ``n_features``).
    criterion : {"ratio_trace", "trace_ratio"}
    regularization : float, default 0
        Relative ridge :math:`S_w + r I` with
        :math:`r = \text{regularization}\cdot\operatorname{tr}(S_w)/p`.
        Needed when :math:`S_w` is singular (more features than labelled points).
    method, solver, solver_options
        See :class:`~sdpembed.estimators._projection.ProjectionEstimator`.

    Attributes
    ----------
    classes_ : ndarray
    components_, eigenvalues_, objective_, ...
        See :class:`~sdpembed.estimators._projection.ProjectionEstimator`.
    """

    def __init__(self, *, n_components=None, criterion="ratio_trace", regularization=0.0,
                 method="eigen", solver="CLARABEL", solver_options=None):
        super().__init__(n_components=n_components, method=method, solver=solver,
                         solver_options=solver_options)
        self.criterion = criterion
        self.regularization = regularization

    def _pencil(self, X, y) -> Pencil:
        y_int, classes = self._labels(X, y)
        return lda_pencil(X, y_int, classes.size, criterion=self.criterion)

    def _formulation_meta(self):
        return {"method": "lda"}


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
        Relative Tikhonov term (the paper's :math:`\beta I`).
    method, solver, solver_options
        See :class:`~sdpembed.estimators._projection.ProjectionEstimator`.
    """

    def __init__(self, *, n_components=None, alpha=0.1, n_neighbors=5, weights="binary",
                 sigma=None, regularization=0.0, method="eigen", solver="CLARABEL",
                 solver_options=None):
        super().__init__(n_components=n_components, method=method, solver=solver,
                         solver_options=solver_options)
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


class LPP(ProjectionEstimator):
    r"""Locality preserving projections (He & Niyogi, NIPS 2003), unsupervised.

    Solves :math:`X^\top L X a = \lambda X^\top D X a` for the smallest
    :math:`\lambda` over a ``n_neighbors`` graph. ``y`` is ignored.

    Parameters
    ----------
    n_components : int, default 2
    n_neighbors : int, default 5
    weights : {"heat", "binary"}, default "heat"
    sigma : float or None
        Heat-kernel width (median neighbour distance when ``None``).
    regularization : float, default 0
        Relative ridge on :math:`X^\top D X`; needed when it is singular
        (or reduce the data with PCA first, as the paper does).
    method, solver, solver_options
        See :class:`~sdpembed.estimators._projection.ProjectionEstimator`.
    """

    _requires_y = False

    def __init__(self, *, n_components=2, n_neighbors=5, weights="heat", sigma=None,
                 regularization=0.0, method="eigen", solver="CLARABEL", solver_options=None):
        super().__init__(n_components=n_components, method=method, solver=solver,
                         solver_options=solver_options)
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.sigma = sigma
        self.regularization = regularization

    def _pencil(self, X, y) -> Pencil:
        return lpp_pencil(X, n_neighbors=self.n_neighbors, weights=self.weights,
                          sigma=self.sigma)

    def _formulation_meta(self):
        return {"method": "lpp"}


class PCA(ProjectionEstimator):
    r"""Principal component analysis on the Fantope.

    :math:`\max_{P^\top P = I} \operatorname{tr}(P^\top \Sigma P)`, :math:`\Sigma` the covariance.

    Exact by Ky Fan; included as the simplest instance of the machinery and
    as the pre-step the papers use. Unlike the other estimators,
    :meth:`transform` centres: ``(X - mean_) @ components_.T``. ``y`` is ignored.

    Attributes
    ----------
    mean_ : ndarray, shape (n_features,)
    explained_variance_ : ndarray, shape (n_components,)
        Equal to ``eigenvalues_``.
    """

    _requires_y = False

    def __init__(self, *, n_components=2, method="eigen", solver="CLARABEL",
                 solver_options=None):
        super().__init__(n_components=n_components, method=method, solver=solver,
                         solver_options=solver_options)

    def _pencil(self, X, y) -> Pencil:
        self.mean_ = X.mean(axis=0)
        cov = total_scatter(X) / max(X.shape[0] - 1, 1)
        return Pencil(cov, None, "max", "trace", {"method": "pca", "equations": ("Ky Fan 1949",)})

    def _set_components(self, vectors, values):
        super()._set_components(vectors, values)
        self.explained_variance_ = self.eigenvalues_

    def transform(self, X):
        """Project the centred data: ``(X - mean_) @ components_.T``."""
        return super().transform(X) - self.mean_ @ self.components_.T

    def _formulation_meta(self):
        return {"method": "pca"}

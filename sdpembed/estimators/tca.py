"""Transductive Component Analysis (TCA) and Orthogonal TCA as scikit-learn transformers."""

from __future__ import annotations

import logging
from numbers import Integral
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from .._labels import check_partial_labels
from .._params import constraints_of
from .._sklearn import Interval, StrOptions, _fit_context
from .._typing import ArrayLike
from ..exceptions import InputError
from ..formulations.tca import (
    OTCA_EQUATIONS,
    TCA_EQUATIONS,
    otca_objective,
    otca_step_formulation,
    tca_formulation,
    tca_pencil,
)
from ..relaxations import RANK_TOL, Pencil
from ..scatter.tca import TCAOperators, otca_basis, tca_graph, tca_operators
from ..sequential import otca_sequence
from ._projection import ProjectionEstimator, check_collapse

__all__ = ["TCA", "OTCA"]

logger = logging.getLogger(__name__)

class _TransductiveBase(ProjectionEstimator):
    """Shared preprocessing of TCA and OTCA: labels, centring, PCA step 4, operators.

    ``transform(X) = (X - mean_) @ components_.T`` with ``components_`` the
    rows of :math:`U^T = (P[a_1 \\cdots a_r])^T`, :math:`P` the PCA basis.
    """

    _parameter_constraints: dict = {
        **ProjectionEstimator._parameter_constraints,
        **constraints_of(tca_formulation, "alpha", "beta", "n_neighbors", "sigma", "rank_tol"),
        "pca": ["boolean", Interval(Integral, 1, None, closed="left")],
    }

    def _pca_dimension(self, singular_values: np.ndarray, n_features: int, n_labeled: int) -> int:
        """d1 of TCA's step 4; ``n_features`` means "no PCA"."""
        s = singular_values
        tol = s[0] * max(len(s), n_features) * np.finfo(float).eps if s.size and s[0] > 0 else 0
        rank = int(np.sum(s > tol))
        if rank == 0:
            raise InputError("X is constant: every direction has zero variance")
        if self.pca is False or self.pca is np.False_:
            return n_features
        if self.pca is True or self.pca is np.True_:
            # step 4: "if d > l, project ... retaining d1 (<= l) dimensions". d1 = l - 1:
            # with d1 = l the l labeled points leave X_l D_l X_l' barely nonsingular (singular
            # in floating point on small labeled splits). The null directions of
            # the centred data are dropped too (they make the pencil singular).
            if n_features < n_labeled and rank == n_features:
                return n_features
            return min(n_labeled - 1, rank)
        d1 = int(self.pca)
        if d1 > rank:
            raise InputError(f"pca={d1} exceeds the rank {rank} of the centred data")
        return d1

    #: Whether the solve basis may be whitened (TCA: yes, its projections are invariant to
    #: an invertible change of basis; OTCA: no, its orthogonality is Euclidean).
    _whiten = False

    def _prepare(self, X: np.ndarray, y) -> tuple[TCAOperators, np.ndarray]:
        """Labels, graph (step 1), PCA step 4 and the operators of eqs. (10), (18).

        Follows the order of the paper's Table 1: the unsupervised graph is
        built on the centred data before the optional PCA step, which only
        changes the coordinates the problem is solved in (``basis_``).
        Returns the operators and the class indices (``-1`` unlabeled).
        """
        y_int, self.classes_, labeled = check_partial_labels(y, X.shape[0])
        self.n_labeled_ = int(labeled.sum())
        if self.n_neighbors >= X.shape[0]:
            raise InputError(f"n_neighbors={self.n_neighbors} must be below n_samples="
                             f"{X.shape[0]}")
        self.mean_ = X.mean(axis=0)
        Xc = X - self.mean_
        _, s, Vt = np.linalg.svd(Xc, full_matrices=False)
        graph = tca_graph(Xc, n_neighbors=self.n_neighbors, sigma=self.sigma)
        d1 = self._pca_dimension(s, X.shape[1], self.n_labeled_)
        reduce = d1 < X.shape[1]
        self.pca_components_ = Vt[:d1] if reduce else None
        self.n_pca_components_ = d1
        if self._whiten and self.pca is not False and self.pca is not np.False_:
            # unit-variance principal coordinates: the pencil of eq. (21) is covariant
            # under x -> T^T x, so projections are unchanged while B is far better
            # conditioned (raw UCI features differ in scale by 1e5)
            self.basis_ = Vt[:d1].T * (np.sqrt(X.shape[0]) / s[:d1])
        else:
            self.basis_ = Vt[:d1].T if reduce else np.eye(X.shape[1])
        if reduce:
            logger.info("%s: PCA step 4 keeps %d of %d dimensions (%d labeled points)",
                        type(self).__name__, d1, X.shape[1], self.n_labeled_)
        ops = tca_operators(Xc @ self.basis_, y_int, alpha=self.alpha, graph=graph)
        return ops, y_int

    def _to_input_space(self, vectors: np.ndarray) -> np.ndarray:
        """:math:`U = P\\,[a_1 \\cdots a_r]` (eq. 22; P = ``basis_``)."""
        return self.basis_ @ vectors

    def transform(self, X):
        """Project ``X``: ``(X - mean_) @ components_.T``, shape (n_samples, n_components_)."""
        check_is_fitted(self, "components_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (X - self.mean_) @ self.components_.T


class TCA(_TransductiveBase):
    """Transductive Component Analysis (Liu, Tao & Liu, ICDM 2008, Table 1).

    Semi-supervised linear projection: smooth on a k-NN graph over all points
    and with a large average margin between the few labeled classes. With
    ``X`` centred over all points (operators and derivations in
    :mod:`sdpembed.scatter.tca`),

    .. math::

       \\min_{U^TX_lD_lX_l^TU = I}\\ \\mathrm{tr}\\Big(U^T\\big(XSX^T
       + \\beta X_lM_lX_l^T\\big)U\\Big)            \\quad (20)

    solved by the r smallest generalized eigenvectors of eq. (21), where
    :math:`S = (I+\\alpha L)^{-1}\\alpha L` (eq. 10, formed through a sparse
    factorisation, never a dense inverse), and :math:`D_l, M_l` (eq. 18) come
    from the intra-/inter-class weights of eq. (15).

    Parameters
    ----------
    n_components : int or None, default None
        r. ``None`` gives :math:`\\max(c - 1, 1)` for c classes (the paper fixes
        no default). At most the size of the (PCA-reduced) problem,
        :math:`\\min(d, l)`.
    alpha : float, default 10.0
        Smoothness trade-off :math:`\\alpha > 0` (eq. 6). Default: the paper's
        two-moons setting (it gives no values for the UCI experiments).
    beta : float, default 6.0
        Margin trade-off :math:`\\beta \\ge 0` (eq. 20); two-moons setting.
    n_neighbors : int, default 5
        k of the unsupervised graph, eq. (4) (5 in the paper's UCI runs).
    sigma : float or None, default None
        Heat-kernel width of eq. (4), :math:`w = \\exp(-\\lVert x_i-x_j\\rVert^2/\\sigma^2)`;
        ``None`` uses the mean edge length.
    pca : bool or int, default True
        Step 4. ``True``: when :math:`d \\ge l` (or the centred data are rank
        deficient) project onto the leading :math:`d_1 = \\min(l - 1,
        \\mathrm{rank})` principal components, so that :math:`X_lD_lX_l^T` is
        nonsingular (the paper asks for :math:`d_1 \\le l`; at :math:`d_1 = l`
        it is only barely nonsingular, and singular in floating point on small
        labeled splits); an int sets :math:`d_1`; ``False`` skips it.
        TCA solves in whitened principal coordinates whenever ``pca`` is not
        ``False``: eq. (21) is covariant under an invertible change of basis,
        so the projections are unchanged and the pencil is far better
        conditioned.
    regularization : float, default 0.0
        Relative ridge on :math:`B = X_lD_lX_l^T`: uses :math:`B + rI` with
        :math:`r = \\text{regularization}\\cdot\\mathrm{tr}(B)/m` over the
        :math:`m` informative directions (:math:`m = d_1` unless the data
        leave fewer). Never applied unless asked for; without it a singular
        ``B`` is handled by the rank-revealing step (Notes).
    normalize : {"unit", "constraint"}, default "unit"
        Scale of each direction :math:`u_k` in input space. Eq. (20) fixes
        only a direction; ``"constraint"`` keeps the scale of the constraint,
        :math:`u_k^TX_lD_lX_l^Tu_k = 1` (``U^T B U = I``), ``"unit"`` makes
        :math:`\\lVert u_k\\rVert = 1`, as reference implementations of this
        family of projections do (e.g. D. Cai's LPP/SDA code). The scale
        matters for k-NN: under ``"constraint"`` a direction along which the
        few labeled points barely spread is blown up (``docs/tuning.md``).
    method : {"eigen", "sdp"}, default "eigen"
        ``"eigen"``: ``scipy.linalg.eigh(A, B)``. ``"sdp"``: the exact
        ratio-trace SDP in :math:`Z = UU^T` (:mod:`sdpembed.formulations.tca`).
    solver : str, default "auto"
        Backend for ``method="sdp"``; ``"auto"`` lets
        :func:`sdpembed.solvers.choose_backend` pick one that fits and records why
        in ``solve_report_.selection``.
    solver_options : dict or None
        Backend options (name the backend to pass them).
    rank_tol : float, default 1e-8
        Threshold of the rank-revealing step (Notes).

    Attributes
    ----------
    components_ : ndarray, shape (``n_components_``, n_features)
        Rows of :math:`U^T = (P[a_1\\cdots a_r])^T`, smallest eigenvalue
        first, scaled as ``normalize`` says (not orthogonal: see :class:`OTCA`).
    eigenvalues_ : ndarray, shape (``n_components_``,)
        Generalized eigenvalues of eq. (21) (Ritz values on the SDP path).
    objective_ : float
        Their sum, the optimum of eq. (20) for r directions.
    mean_ : ndarray, shape (n_features,)
        Mean of all training points (labeled and unlabeled).
    pca_components_ : ndarray, shape (``n_pca_components_``, n_features) or None
        :math:`P^T` of step 4, or ``None`` when it was skipped.
    n_pca_components_ : int
        :math:`d_1`.
    basis_ : ndarray, shape (n_features, ``n_pca_components_``)
        The coordinates eq. (21) is solved in: whitened principal axes
        (unless ``pca=False``, then the identity); ``components_`` are
        ``basis_ @ a``.
    n_labeled_ : int
    classes_ : ndarray
    n_components_, pencil_kind_, solve_report_, formulation_, rank_gap_
        See :class:`~sdpembed.estimators.ProjectionEstimator`.

    Notes
    -----
    **Rank-revealing step.** After step 4, the pencil of eq. (21) is
    restricted to the numerical range of :math:`B = X_lD_lX_l^T`
    (unit-diagonal scaling, eigenvalues :math:`> \\text{rank\\_tol}`,
    whitening basis :math:`T`, :math:`T^TBT = I`;
    :func:`sdpembed.relaxations.reduce_pencil`). A direction with
    :math:`Ba = 0` has a generalized eigenvalue :math:`+\\infty` unless
    :math:`A` vanishes on it too (then it carries no information), so it is
    never among the r smallest: every finite eigenpair is unchanged. With
    ``regularization > 0`` only the common null space of :math:`A` and
    :math:`B` is removed.
    """

    _parameter_constraints: dict = {
        **_TransductiveBase._parameter_constraints,
        **constraints_of(tca_formulation, "regularization"),
        "normalize": [StrOptions({"unit", "constraint"})],
    }

    def __init__(self, *, n_components: int | None = None, alpha: float = 10.0, beta: float = 6.0,
                 n_neighbors: int = 5, sigma: float | None = None, pca: bool | int = True,
                 regularization: float = 0.0, normalize: str = "unit", method: str = "eigen",
                 solver: str = "auto", solver_options: dict[str, Any] | None = None,
                 rank_tol: float = RANK_TOL) -> None:
        self.n_components = n_components
        self.alpha = alpha
        self.beta = beta
        self.n_neighbors = n_neighbors
        self.sigma = sigma
        self.pca = pca
        self.regularization = regularization
        self.normalize = normalize
        self.method = method
        self.solver = solver
        self.solver_options = solver_options
        self.rank_tol = rank_tol

    _whiten = True

    def _pencil(self, X: np.ndarray, y) -> Pencil:
        return tca_pencil(self._prepare(X, y)[0], beta=self.beta)

    def _default_n_components(self, pencil: Pencil, X: np.ndarray) -> int:
        return min(max(len(self.classes_) - 1, 1), pencil.A.shape[0])

    def _max_n_components(self, pencil: Pencil, X: np.ndarray) -> tuple[int, str]:
        return pencil.A.shape[0], (f"the problem size d1 = {pencil.A.shape[0]} after the PCA "
                                   f"step; TCA gives at most min(d, l) directions")

    def _set_components(self, vectors: np.ndarray, values: np.ndarray) -> None:
        U = self._to_input_space(vectors)
        if self.normalize == "unit":
            U = U / np.linalg.norm(U, axis=0)
        self.components_ = np.ascontiguousarray(U.T)
        self.eigenvalues_ = np.asarray(values, dtype=float)

    def _formulation_meta(self) -> dict:
        return {"method": "tca", "variant": "ratio_trace", "equations": TCA_EQUATIONS}


class OTCA(_TransductiveBase):
    """Orthogonal Transductive Component Analysis (Liu, Tao & Liu, ICDM 2008, Section 4).

    Builds at most c mutually orthogonal directions one at a time. Step k
    minimises TCA's smoothness and margin regularizers plus a least-squares fit
    of the labeled projections to the class-k indicator (which also fixes the
    scale), over directions orthogonal to the previous ones:

    .. math::

       \\min_{a \\perp a_1,\\dots,a_{k-1}}\\ a^TXSX^Ta + \\beta\\,a^TX_lM_lX_l^Ta
       + \\gamma\\lVert X_l^Ta - Y_{\\cdot k}\\rVert^2      \\quad (25)

    solved in closed form through a QR basis :math:`E_{k-1}` of the
    orthogonal complement, :math:`a_k = E_{k-1}b^*` with :math:`b^* =
    (E^T(XSX^T + \\beta X_lM_lX_l^T + \\gamma X_lX_l^T)E)^{-1}\\gamma E^TX_lY_{\\cdot k}`
    (eqs. 23-27; :func:`sdpembed.scatter.tca.otca_basis`). Classes are taken in
    the order of ``classes_``.

    OTCA has no eigenproblem, so ``method="sdp"`` here means the *convex
    program* path: each step (25) is solved by a conic backend as a DPP cvxpy
    problem with the orthogonality as linear equality constraints instead of
    QR (a second-order-cone program, re-solved per step without recompiling;
    :func:`sdpembed.formulations.tca.otca_step_formulation`). It must
    reproduce the closed form.

    Parameters
    ----------
    n_components : int or None, default None
        r, at most the number of classes c (and :math:`d_1`); ``None`` gives c.
    alpha : float, default 4.0
        Smoothness trade-off (eq. 6); default the paper's two-moons setting.
    beta : float, default 10.0
        Margin trade-off (eq. 25); two-moons setting.
    gamma : float, default 1e-3
        Fitting trade-off :math:`\\gamma > 0` (eq. 25), "a small value
        throughout this paper"; two-moons setting.
    n_neighbors, sigma, pca
        As in :class:`TCA`.
    method : {"eigen", "sdp"}, default "eigen"
        ``"eigen"``: the closed form (27). ``"sdp"``: the per-step convex
        programs, see above.
    solver : str, default "auto"
        Backend of each step's program for ``method="sdp"``; ``"auto"`` as in
        :class:`TCA` (each step's report has its ``selection``).
    solver_options : dict or None
        Backend options (name the backend to pass them).

    Attributes
    ----------
    components_ : ndarray, shape (``n_components_``, n_features)
        Mutually orthogonal rows :math:`u_k^T = (Pa_k)^T` (eq. 22), not
        normalised (the indicator fit sets their scale), in class order.
    step_objectives_ : ndarray, shape (``n_components_``,)
        Value of eq. (25) at each :math:`a_k`.
    objective_ : float
        Their sum.
    mean_, pca_components_, n_pca_components_, n_labeled_, classes_, n_components_
        As in :class:`TCA`.
    basis_ : ndarray, shape (n_features, ``n_pca_components_``)
        The orthonormal principal axes of step 4 (never whitened: OTCA's
        orthogonality is Euclidean), or the identity when step 4 is skipped.
    solve_reports_ : list of SolveReport
        ``method="sdp"`` only, one per step; ``solve_report_`` is the last.
    formulation_ : Formulation
        ``method="sdp"`` only: the per-step program.

    Notes
    -----
    OTCA has no pencil; its rank-revealing step is the PCA step 4 (``pca``),
    which keeps only components of the centred data above the numerical rank
    tolerance :math:`s_1 \\max(n, p)\\,\\varepsilon`, so that the quadratic
    form of eq. (26) is positive definite on the directions it solves over.
    A direction along which the training data do not spread raises
    :class:`~sdpembed.exceptions.DegenerateEmbeddingError` (all of them) or warns
    with :class:`~sdpembed.exceptions.DegenerateEmbeddingWarning`, as for the other
    projections.
    """

    _parameter_constraints: dict = {
        **{k: v for k, v in _TransductiveBase._parameter_constraints.items() if k != "rank_tol"},
        **constraints_of(otca_step_formulation, "gamma"),
    }

    def __init__(self, *, n_components: int | None = None, alpha: float = 4.0, beta: float = 10.0,
                 gamma: float = 1e-3, n_neighbors: int = 5, sigma: float | None = None,
                 pca: bool | int = True, method: str = "eigen", solver: str = "auto",
                 solver_options: dict[str, Any] | None = None) -> None:
        self.n_components = n_components
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma
        self.n_neighbors = n_neighbors
        self.sigma = sigma
        self.pca = pca
        self.method = method
        self.solver = solver
        self.solver_options = solver_options

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike, y: ArrayLike | None = None) -> OTCA:
        """Fit OTCA on all points; ``y == -1`` marks the unlabeled ones.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
        y : array-like, shape (n_samples,)

        Returns
        -------
        self
        """
        gamma = float(self.gamma)
        X, y = self._validate_Xy(X, y)
        for attr in ("solve_report_", "solve_reports_", "formulation_"):
            self.__dict__.pop(attr, None)
        ops, y_int = self._prepare(X, y)
        c, d1 = len(self.classes_), self.n_pca_components_
        r = min(c, d1) if self.n_components is None else int(self.n_components)
        if r > min(c, d1):
            raise InputError(
                f"n_components={r} is too large: OTCA gives at most min(n_classes, d1) = "
                f"{min(c, d1)} directions (one per class; d1 = {d1} after the PCA step)")
        Q, R = ops.otca_system(self.beta, gamma)
        if self.method == "eigen":
            A = otca_basis(Q, R, r)
        else:
            form = otca_step_formulation(ops, beta=self.beta, gamma=gamma, n_components=r)
            A, reports = otca_sequence(form, r, solver=self.solver,
                                       **(self.solver_options or {}))
            self.formulation_ = form
            self.solve_reports_ = reports
            self.solve_report_ = reports[-1]
        class_sizes = np.bincount(y_int[y_int >= 0], minlength=c)
        self.step_objectives_ = otca_objective(Q, R, A, gamma, class_sizes)
        self.objective_ = float(self.step_objectives_.sum())
        self.n_components_ = r
        # no sign flip: the indicator fit of eq. (25) fixes the sign of each a_k
        self.components_ = np.ascontiguousarray(self._to_input_space(A).T)
        check_collapse(X, self.components_, "OTCA")
        return self

    def _formulation_meta(self) -> dict:  # pragma: no cover - OTCA overrides fit
        return {"method": "otca", "variant": "sequential-qp", "equations": OTCA_EQUATIONS}

r"""Convex relaxations that turn eigenproblems into semidefinite programs.

Every eigen-based method of the toolkit (discriminative projections, LDA, LPP,
SDA, DNE, TCA, OTCA) optimises a quadratic trace over a subspace. This module
states those problems as SDPs and solves them in closed form too, so the two
paths can be compared.

Three problem families, for symmetric :math:`A, B \in \mathbb{S}^p` and a
target dimension :math:`1 \le d \le p`:

*trace*
    :math:`\min_{P^\top P = I_d} \operatorname{tr}(P^\top A P)`. With
    :math:`Y = P P^\top` this is :math:`\min \langle A, Y\rangle` over the
    Fantope :math:`\mathcal{F}_d = \{0 \preceq Y \preceq I,\ \operatorname{tr} Y = d\}`,
    the convex hull of the rank-:math:`d` orthogonal projectors. The
    relaxation is exact (Ky Fan, 1949): a linear function attains its minimum
    over :math:`\mathcal{F}_d` at an extreme point, and the minimum is the sum
    of the :math:`d` smallest eigenvalues of :math:`A`
    (:func:`fantope_trace`).

*ratio trace* (generalized eigenproblem)
    :math:`\min_{P^\top B P = I_d} \operatorname{tr}(P^\top A P)` with
    :math:`B \succ 0`. With :math:`Z = P P^\top` and the congruence
    :math:`W = B^{1/2} Z B^{1/2}` the feasible set becomes the Fantope in
    :math:`W`, so the relaxation is exact and its value is the sum of the
    :math:`d` extreme generalized eigenvalues of :math:`(A, B)`
    (:func:`ratio_trace`).

*trace ratio*
    :math:`\max_{P^\top P = I_d} \operatorname{tr}(P^\top A P) / \operatorname{tr}(P^\top B P)`.
    Over the Fantope the objective :math:`\langle A, Y\rangle / \langle B, Y\rangle`
    is linear-fractional, hence quasi-linear, and its maximum is attained at
    an extreme point (a rank-:math:`d` projector), so the Fantope relaxation is
    exact as well. It is solved either as one SDP through the Charnes–Cooper
    transformation (:func:`trace_ratio`) or as a Dinkelbach iteration over
    Fantope subproblems (:func:`sdpembed.sequential.dinkelbach`, which calls
    the solver repeatedly and so lives above :mod:`sdpembed.solvers`); its
    classical closed-form solver is the iterative trace-ratio algorithm of
    Wang et al. (2007) (:func:`trace_ratio_iteration`).

*Rank-deficient pencils.* Scatter matrices of real data are often singular
(constant or collinear features, more features than samples). The builders
above never regularise silently: they raise :class:`SingularMatrixError`.
:func:`reduce_pencil` is the explicit rank-revealing step the estimators take
first: it restricts the pencil to the numerical range of its matrices (an
eigendecomposition with a stated tolerance, :data:`RANK_TOL`), which removes
the directions that carry no information and leaves the solutions along the
others unchanged; ``regularization=r`` (:math:`B + r I`) remains available.

References
----------
Ky Fan, "On a theorem of Weyl concerning eigenvalues of linear
transformations", PNAS 35 (1949).
Overton & Womersley, "On the sum of the largest eigenvalues of a symmetric
matrix", SIAM J. Matrix Anal. Appl. 13 (1992).
H. Wang, S. Yan, D. Xu, X. Tang, T. Huang, "Trace ratio vs. ratio trace for
dimensionality reduction", CVPR 2007.
A. Charnes, W. W. Cooper, "Programming with linear fractional functionals",
Naval Res. Logist. Q. 9 (1962).
W. Dinkelbach, "On nonlinear fractional programming", Management Sci. 13 (1967).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

import cvxpy as cp
import numpy as np
import scipy.linalg

from ._checks import as_int
from ._typing import ArrayLike
from .backends.table import CONIC_BACKENDS
from .exceptions import InputError, ProblemTooLargeError, SingularMatrixError  # re-exported
from .formulation import Formulation

__all__ = [
    "SingularMatrixError",
    "Pencil",
    "TraceRatioResult",
    "KINDS",
    "fantope_constraints",
    "fantope_trace",
    "ratio_trace",
    "trace_ratio",
    "fantope_subproblem",
    "trace_ratio_iteration",
    "formulate",
    "solve_closed_form",
    "generalized_eigh",
    "recover_basis",
    "rayleigh_ritz",
    "rank_gap",
    "principal_angles",
    "check_sdp_size",
    "absolute_regularization",
    "precondition",
    "PRECONDITIONERS",
    "RANK_TOL",
    "NumericalRange",
    "numerical_range",
    "PencilReduction",
    "reduce_pencil",
    "formulate_reduced",
]

logger = logging.getLogger(__name__)

#: Kinds of eigenproblem a :class:`Pencil` can describe.
KINDS = ("trace", "ratio_trace", "trace_ratio")

#: ``B`` counts as singular when ``lambda_min(B) <= SINGULAR_RCOND * lambda_max(B)``.
SINGULAR_RCOND = 1e-10

#: Default ``rank_tol`` of :func:`numerical_range` and :func:`reduce_pencil`: eigenvalues of
#: the unit-diagonal (Jacobi-scaled) matrix at or below it count as zero. For a scatter
#: matrix this is :math:`10^{-4}` on the singular values of the standardised data, the
#: threshold scikit-learn's ``LinearDiscriminantAnalysis`` uses (its ``tol``).
RANK_TOL = 1e-8

#: Largest matrix side accepted for interior-point backends: their Newton
#: systems hold dense blocks of size ``p(p+1)/2`` squared per PSD cone.
MAX_INTERIOR_POINT_DIM = 150



class Pencil(NamedTuple):
    """An eigenproblem as returned by the estimators' ``_pencil`` hook.

    Attributes
    ----------
    A, B : ndarray, shape (m, m)
        Symmetric matrices. ``B`` is ignored (may be ``None``) for ``kind="trace"``.
    sense : {"min", "max"}
        Whether the ``d`` smallest or largest solutions are wanted.
    kind : {"trace", "ratio_trace", "trace_ratio"}
        ``"trace"``: extreme eigenvectors of ``A`` (Fantope);
        ``"ratio_trace"``: extreme generalized eigenvectors of ``(A, B)``;
        ``"trace_ratio"``: optimum of ``tr(P'AP) / tr(P'BP)`` over orthonormal ``P``.
    meta : dict or None
        Method-specific data carried into the formulation's ``meta``.
    """

    A: np.ndarray
    B: np.ndarray | None
    sense: str
    kind: str
    meta: dict | None = None


@dataclass
class TraceRatioResult:
    """Outcome of :func:`trace_ratio_iteration` (and, extended, of
    :func:`sdpembed.sequential.dinkelbach`).

    Attributes
    ----------
    value : float
        The trace-ratio optimum :math:`\\lambda^* = \\langle A, Y\\rangle / \\langle B, Y\\rangle`.
    vectors : ndarray, shape (p, d)
        Orthonormal basis of the optimal subspace, ordered by the eigenvalues
        of :math:`P^\\top (A - \\lambda^* B) P` (best first).
    Y : ndarray, shape (p, p)
        The Fantope point (projector) of the last iterate.
    history : list of float
        :math:`\\lambda_k` per iteration, starting value first.
    iterations : int
    converged : bool
    seconds : float
        Wall time of the whole iteration.
    """

    value: float
    vectors: np.ndarray
    Y: np.ndarray
    history: list[float]
    iterations: int
    converged: bool
    seconds: float = 0.0


# ---------------------------------------------------------------- validation
def _check_sense(sense: str) -> str:
    if sense not in ("min", "max"):
        raise InputError(f"sense must be 'min' or 'max'; got {sense!r}")
    return sense


def _check_symmetric(M, name: str, p: int | None = None) -> np.ndarray:
    try:
        M = np.asarray(M, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a numeric matrix: {exc}") from exc
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise InputError(f"{name} must be a square matrix; got shape {M.shape}")
    if p is not None and M.shape[0] != p:
        raise InputError(f"{name} must be {p} x {p} to match A; got {M.shape}")
    if not np.all(np.isfinite(M)):
        raise InputError(f"{name} contains NaN or infinite entries")
    scale = max(np.abs(M).max(), 1.0)
    if not np.allclose(M, M.T, rtol=0.0, atol=1e-8 * scale):
        raise InputError(f"{name} must be symmetric (max |{name} - {name}'| = "
                         f"{np.abs(M - M.T).max():.3g})")
    return 0.5 * (M + M.T)


def _check_d(d, p: int) -> int:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise InputError(f"d must be an integer; got {d!r}")
    d = int(d)
    if not 1 <= d <= p:
        raise InputError(f"d must lie in [1, {p}] for {p} x {p} matrices; got {d}")
    return d


def _check_pencil(A, B, d, regularization: float = 0.0, *, need_definite: bool = True):
    A = _check_symmetric(A, "A")
    p = A.shape[0]
    d = _check_d(d, p)
    B = _check_symmetric(B, "B", p)
    regularization = float(regularization)
    if not np.isfinite(regularization) or regularization < 0:
        raise InputError(f"regularization must be finite and >= 0; got {regularization}")
    if regularization:
        B = B + regularization * np.eye(p)
    ev = np.linalg.eigvalsh(B)
    top = max(abs(ev[-1]), np.finfo(float).tiny)
    if need_definite:
        if ev[0] <= SINGULAR_RCOND * top:
            raise SingularMatrixError(
                f"B is singular or not positive definite (lambda_min = {ev[0]:.3g}, "
                f"lambda_max = {ev[-1]:.3g}); pass regularization=r > 0 to use B + r I "
                "(e.g. r = 1e-6 * trace(B) / p), or restrict the pencil to its informative "
                "directions first with reduce_pencil / formulate_reduced (the estimators do)")
    elif ev[:d].sum() <= SINGULAR_RCOND * top * d or ev[0] < -SINGULAR_RCOND * top:
        raise SingularMatrixError(
            f"B must be positive semidefinite with tr(P'BP) > 0 for every orthonormal P "
            f"(sum of its {d} smallest eigenvalues is {ev[:d].sum():.3g}); pass "
            "regularization=r > 0 to use B + r I, or restrict the pencil first with "
            "reduce_pencil / formulate_reduced")
    return A, B, d


def check_sdp_size(p: int, solver: str) -> None:
    """Raise :class:`ProblemTooLargeError` when a ``p x p`` SDP is too big for ``solver``."""
    entry = CONIC_BACKENDS.get(str(solver).upper())
    if entry is not None and entry.interior_point and p > MAX_INTERIOR_POINT_DIM:
        raise ProblemTooLargeError(
            f"a {p} x {p} matrix variable is too large for the interior-point backend "
            f"{str(solver).upper()} (limit {MAX_INTERIOR_POINT_DIM}: its Newton system holds a "
            f"dense {p * (p + 1) // 2}^2 block per PSD cone). Reduce the features first, e.g. "
            "make_pipeline(PCA(n_components=50), estimator), or use solver='SCS'")


def absolute_regularization(B: ArrayLike, relative: float) -> float:
    r"""Ridge :math:`B + r I` with :math:`r = \text{relative} \cdot \operatorname{tr}(B) / m`.

    Estimators and method builders take ``regularization`` in this relative
    form, so the same value works whatever the units of the data; the
    relaxations themselves take the absolute :math:`r`.
    """
    if relative is None or isinstance(relative, bool):
        raise InputError(f"regularization must be a finite number >= 0; got {relative!r}")
    try:
        relative = float(relative)
    except (TypeError, ValueError) as exc:
        raise InputError(f"regularization must be a finite number >= 0; got {relative!r}") from exc
    if not np.isfinite(relative) or relative < 0:
        raise InputError(f"regularization must be a finite number >= 0; got {relative!r}")
    if relative == 0 or B is None:
        return 0.0
    B = np.asarray(B, dtype=float)
    return relative * float(np.trace(B)) / B.shape[0]


def _inner(C: np.ndarray, Y) -> cp.Expression:
    """:math:`\\langle C, Y\\rangle` without the :math:`p^3` operator of ``trace(C @ Y)``."""
    return cp.sum(cp.multiply(C, Y))


def _objective(sense: str, expr):
    return cp.Minimize(expr) if sense == "min" else cp.Maximize(expr)


# --------------------------------------------------------------------- Fantope
def fantope_constraints(Y: cp.Expression, d: int) -> list:
    r"""Constraints of the Fantope.

    :math:`\mathcal{F}_d = \{0 \preceq Y \preceq I,\ \operatorname{tr} Y = d\}`.

    :math:`\mathcal{F}_d` is the convex hull of the rank-:math:`d` orthogonal
    projectors :math:`\{P P^\top : P^\top P = I_d\}` (Overton & Womersley 1992).

    Parameters
    ----------
    Y : cvxpy expression, shape (p, p)
        Symmetric matrix variable or affine expression.
    d : int
        Target dimension, ``1 <= d <= p``.
    """
    p = Y.shape[0]
    d = _check_d(d, p)
    return [Y >> 0, np.eye(p) - Y >> 0, cp.trace(Y) == d]


def fantope_trace(A: ArrayLike, d: int, *, sense: str = "min") -> Formulation:
    r"""Trace optimisation over orthonormal bases as an exact Fantope SDP.

    .. math::

        \min_{P^\top P = I_d} \operatorname{tr}(P^\top A P)
        \;=\; \min_{Y \in \mathbb{S}^p} \langle A, Y\rangle
        \quad\text{s.t.}\quad 0 \preceq Y \preceq I,\ \operatorname{tr} Y = d .

    Exact by Ky Fan's theorem: the optimum is :math:`\sum_{i \le d} \lambda_i(A)`
    (ascending eigenvalues; the :math:`d` largest for ``sense="max"``), attained
    at :math:`Y = P P^\top` with :math:`P` the matching eigenvectors, unique
    when :math:`\lambda_d < \lambda_{d+1}`.

    Parameters
    ----------
    A : array-like, shape (p, p)
        Symmetric cost matrix.
    d : int
        Target dimension.
    sense : {"min", "max"}

    Returns
    -------
    Formulation
        Variable ``"Y"``; recover ``P`` with :func:`recover_basis`.
    """
    _check_sense(sense)
    A = _check_symmetric(A, "A")
    p = A.shape[0]
    d = _check_d(d, p)
    Y = cp.Variable((p, p), symmetric=True, name="Y")
    problem = cp.Problem(_objective(sense, _inner(A, Y)), fantope_constraints(Y, d))
    return Formulation(problem, {"Y": Y}, meta={
        "method": "fantope_trace", "variant": sense, "equations": ("Ky Fan 1949",),
        "kind": "trace", "d": d, "sense": sense, "statement": (
            f"{sense}imize     <A, Y>  over Y in S^{p}",
            "subject to   0 << Y << I,  tr Y = d   (the Fantope; exact by Ky Fan)")})


# ----------------------------------------------------------------- ratio trace
def ratio_trace(A: ArrayLike, B: ArrayLike, d: int, *, sense: str = "min",
                regularization: float = 0.0) -> Formulation:
    r"""Generalized eigenproblem :math:`A p = \lambda B p` as an exact SDP in :math:`Z = P P^\top`.

    .. math::

        \min_{P^\top B P = I_d} \operatorname{tr}(P^\top A P)
        \;=\; \min_{Z \in \mathbb{S}^p} \langle A, Z\rangle
        \quad\text{s.t.}\quad 0 \preceq B^{1/2} Z B^{1/2} \preceq I,\
        \langle B, Z\rangle = d .

    Tightness: with :math:`B \succ 0` the map :math:`W = B^{1/2} Z B^{1/2}` is
    a bijection of :math:`\mathbb{S}^p` that turns the feasible set into the
    Fantope :math:`\mathcal{F}_d` and the objective into
    :math:`\langle B^{-1/2} A B^{-1/2}, W\rangle`, so by Ky Fan the optimum is
    the sum of the :math:`d` smallest (``sense="max"``: largest) generalized
    eigenvalues of :math:`(A, B)`, attained at :math:`Z = P P^\top` with
    :math:`P` the :math:`B`-orthonormal generalized eigenvectors.

    The upper bound is imposed in the equivalent congruent form
    :math:`Z \preceq B^{-1}` (multiply :math:`B^{1/2} Z B^{1/2} \preceq I` by
    :math:`B^{-1/2}` on both sides), which keeps the constraint operator the
    identity instead of the dense :math:`p^2 \times p^2` map
    :math:`B^{1/2} \otimes B^{1/2}`.

    Parameters
    ----------
    A, B : array-like, shape (p, p)
        Symmetric, ``B`` positive definite.
    d : int
        Target dimension.
    sense : {"min", "max"}
    regularization : float, default 0
        Use :math:`B + r I`. Never applied unless asked for.

    Returns
    -------
    Formulation
        Variable ``"Z"``; ``meta["B"]`` holds the (regularised) ``B`` for
        ``recover_basis(Z, d, B=meta["B"])``.

    Raises
    ------
    SingularMatrixError
        ``B`` is singular and ``regularization`` is 0.
    """
    _check_sense(sense)
    A, B, d = _check_pencil(A, B, d, regularization)
    p = A.shape[0]
    B_inv = np.linalg.inv(B)
    B_inv = 0.5 * (B_inv + B_inv.T)
    Z = cp.Variable((p, p), symmetric=True, name="Z")
    constraints = [Z >> 0, B_inv - Z >> 0, _inner(B, Z) == d]
    problem = cp.Problem(_objective(sense, _inner(A, Z)), constraints)
    return Formulation(problem, {"Z": Z}, meta={
        "method": "ratio_trace", "variant": sense, "equations": ("Ky Fan 1949",),
        "kind": "ratio_trace", "d": d, "sense": sense, "B": B,
        "regularization": float(regularization), "statement": (
            f"{sense}imize     <A, Z>  over Z in S^{p}",
            "subject to   0 << Z << B^-1,  <B, Z> = d   (exact for B >> 0: "
            "B^1/2 Z B^1/2 is a Fantope point)")})


# ----------------------------------------------------------------- trace ratio
def trace_ratio(A: ArrayLike, B: ArrayLike, d: int, *, sense: str = "max",
                regularization: float = 0.0) -> Formulation:
    r"""Trace-ratio problem as one SDP through the Charnes–Cooper transformation.

    The Fantope relaxation of
    :math:`\max_{P^\top P = I_d} \operatorname{tr}(P^\top A P) / \operatorname{tr}(P^\top B P)`
    is :math:`\max_{Y \in \mathcal{F}_d} \langle A, Y\rangle / \langle B, Y\rangle`.
    With :math:`t = 1 / \langle B, Y\rangle` and :math:`\tilde Y = t Y` it becomes
    the SDP

    .. math::

        \max_{\tilde Y, t} \ \langle A, \tilde Y\rangle
        \quad\text{s.t.}\quad \langle B, \tilde Y\rangle = 1,\
        0 \preceq \tilde Y \preceq t I,\ \operatorname{tr} \tilde Y = d\, t,\ t \ge 0,

    whose optimum equals the trace-ratio optimum :math:`\lambda^*`, with
    :math:`Y = \tilde Y / t` (expression ``"Y_fantope"``).

    Tightness: a linear-fractional function with positive denominator is
    quasi-linear, so its maximum over the compact convex Fantope is attained
    at an extreme point, i.e. at a rank-:math:`d` projector :math:`P P^\top`;
    the relaxation therefore has the same optimum as the non-convex problem,
    and the Charnes–Cooper map is a bijection between the two feasible sets
    (Charnes & Cooper 1962). The denominator is positive on the Fantope iff the
    sum of the :math:`d` smallest eigenvalues of :math:`B` is positive.

    Parameters
    ----------
    A, B : array-like, shape (p, p)
        Symmetric; ``B`` positive semidefinite with positive sum of its
        ``d`` smallest eigenvalues.
    d : int
    sense : {"max", "min"}
    regularization : float, default 0
        Use :math:`B + r I`.

    Returns
    -------
    Formulation
        Variables ``"Y"`` (:math:`\tilde Y`) and ``"t"``; expression ``"Y_fantope"``.
    """
    _check_sense(sense)
    A, B, d = _check_pencil(A, B, d, regularization, need_definite=False)
    p = A.shape[0]
    Y = cp.Variable((p, p), symmetric=True, name="Y")
    t = cp.Variable(nonneg=True, name="t")
    constraints = [_inner(B, Y) == 1, Y >> 0, t * np.eye(p) - Y >> 0, cp.trace(Y) == d * t]
    problem = cp.Problem(_objective(sense, _inner(A, Y)), constraints)
    return Formulation(problem, {"Y": Y, "t": t}, meta={
        "method": "trace_ratio", "variant": f"charnes-cooper/{sense}",
        "equations": ("Charnes & Cooper 1962",), "kind": "trace_ratio", "d": d,
        "sense": sense, "B": B, "regularization": float(regularization), "statement": (
            f"{sense}imize     <A, Y>  over Y in S^{p}, t >= 0",
            "subject to   <B, Y> = 1,  0 << Y << t I,  tr Y = d t",
            f"             (Charnes-Cooper form of {sense} <A, W> / <B, W> over the Fantope, "
            "W = Y / t)")},
        expressions={"Y_fantope": Y / t})


def fantope_subproblem(A: ArrayLike, B: ArrayLike, d: int, *, sense: str = "max",
                       regularization: float = 0.0) -> Formulation:
    r"""Dinkelbach's subproblem :math:`\max_{Y \in \mathcal{F}_d} \langle A - \lambda B, Y\rangle`.

    Exact by Ky Fan for every fixed :math:`\lambda` (its optimum
    :math:`F(\lambda)` is the sum of the :math:`d` extreme eigenvalues of
    :math:`A - \lambda B`). Built once with :math:`\lambda` the
    ``cp.Parameter`` ``"lam"`` (DPP), so :func:`sdpembed.sequential.dinkelbach`
    re-solves it without recompiling.

    Parameters
    ----------
    A, B : array-like, shape (p, p)
        As for :func:`trace_ratio`.
    d : int
    sense : {"max", "min"}
    regularization : float
        Use :math:`B + r I`.

    Returns
    -------
    Formulation
        Variable ``"Y"``, parameter ``"lam"``; ``meta["A"]``, ``meta["B"]`` the
        validated (symmetrised, regularised) matrices.
    """
    _check_sense(sense)
    A, B, d = _check_pencil(A, B, d, regularization, need_definite=False)
    p = A.shape[0]
    Y = cp.Variable((p, p), symmetric=True, name="Y")
    lam = cp.Parameter(name="lam")
    expr = _inner(A, Y) - lam * _inner(B, Y)
    problem = cp.Problem(_objective(sense, expr), fantope_constraints(Y, d))
    assert problem.is_dpp()
    return Formulation(problem, {"Y": Y}, {"lam": lam}, meta={
        "method": "trace_ratio", "variant": f"dinkelbach/{sense}",
        "equations": ("Dinkelbach 1967",), "kind": "trace_ratio", "d": d, "sense": sense,
        "A": A, "B": B, "regularization": float(regularization), "statement": (
            f"{sense}imize     <A, Y> - lam <B, Y>  over Y in S^{p}",
            "subject to   0 << Y << I,  tr Y = d   (Dinkelbach's subproblem at lam)")})


def trace_ratio_iteration(A: ArrayLike, B: ArrayLike, d: int, *, sense: str = "max",
                          tol: float = 1e-12, max_iter: int = 100, regularization: float = 0.0,
                          lam0: float | None = None) -> TraceRatioResult:
    r"""Iterative trace-ratio algorithm (ITR) of Wang, Yan, Xu, Tang & Huang (CVPR 2007).

    Iterates :math:`P_k` = the :math:`d` leading (``sense="min"``: trailing)
    eigenvectors of :math:`A - \lambda_k B` and
    :math:`\lambda_{k+1} = \operatorname{tr}(P_k^\top A P_k) / \operatorname{tr}(P_k^\top B P_k)`;
    this is Dinkelbach's method with each subproblem solved exactly by
    ``eigh`` (Ky Fan), and :math:`\lambda_k` increases monotonically to the
    global optimum :math:`\lambda^*`.

    Parameters
    ----------
    A, B : array-like, shape (p, p)
    d : int
    sense : {"max", "min"}
    tol : float
        Stop when :math:`|\lambda_{k+1} - \lambda_k| \le tol \cdot \max(1, |\lambda_{k+1}|)`.
    max_iter : int
    regularization : float
        Use :math:`B + r I`.
    lam0 : float, optional
        Default ``tr A / tr B``.

    Returns
    -------
    TraceRatioResult
    """
    _check_sense(sense)
    A, B, d = _check_pencil(A, B, d, regularization, need_definite=False)
    t0 = time.perf_counter()
    lam = float(np.trace(A) / np.trace(B)) if lam0 is None else float(lam0)
    history, converged = [lam], False
    for _ in range(as_int(max_iter, "max_iter", 1)):
        _, P = _extreme_eigh(A - lam * B, None, d, sense)
        lam_new = float(np.vdot(P, A @ P) / np.vdot(P, B @ P))
        history.append(lam_new)
        done = abs(lam_new - lam) <= tol * max(1.0, abs(lam_new))
        lam = lam_new
        if done:
            converged = True
            break
    if not converged:
        logger.warning("trace_ratio_iteration did not converge in %d iterations", max_iter)
    _, P = _extreme_eigh(A - lam * B, None, d, sense)
    return TraceRatioResult(value=lam, vectors=P, Y=P @ P.T, history=history,
                            iterations=len(history) - 1, converged=converged,
                            seconds=time.perf_counter() - t0)


# ------------------------------------------------------------- closed forms
def _extreme_eigh(A, B, d, sense):
    """``d`` extreme (generalized) eigenpairs, best first, via ``scipy.linalg.eigh``."""
    p = A.shape[0]
    idx = (0, d - 1) if sense == "min" else (p - d, p - 1)
    w, V = scipy.linalg.eigh(A, B, subset_by_index=idx)
    if sense == "max":
        w, V = w[::-1], V[:, ::-1]
    return w, np.ascontiguousarray(V)


def generalized_eigh(A: ArrayLike, B: ArrayLike | None = None, d: int | None = None, *,
                     sense: str = "min",
                     regularization: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    r"""The ``d`` extreme solutions of :math:`A v = \lambda B v` (``scipy.linalg.eigh``).

    Parameters
    ----------
    A : array-like, shape (p, p)
        Symmetric.
    B : array-like, shape (p, p), optional
        Symmetric positive definite; ``None`` for the standard problem.
    d : int, optional
        Number of pairs; default all ``p``.
    sense : {"min", "max"}
        Smallest first, or largest first.
    regularization : float
        Use :math:`B + r I`.

    Returns
    -------
    values : ndarray, shape (d,)
        Ordered best first (ascending for ``"min"``, descending for ``"max"``).
    vectors : ndarray, shape (p, d)
        :math:`B`-orthonormal columns (:math:`V^\top B V = I`).

    Raises
    ------
    SingularMatrixError
        ``B`` is singular and ``regularization`` is 0.
    """
    _check_sense(sense)
    A = _check_symmetric(A, "A")
    p = A.shape[0]
    d = p if d is None else d
    if B is None:
        d = _check_d(d, p)
    else:
        A, B, d = _check_pencil(A, B, d, regularization)
    return _extreme_eigh(A, B, d, sense)


def recover_basis(M: ArrayLike, d: int, *, B: ArrayLike | None = None) -> np.ndarray:
    r"""Basis of the top-:math:`d` eigenspace of an SDP solution.

    * ``B=None``: ``M`` is a Fantope point :math:`Y`; returns the :math:`d`
      leading eigenvectors (orthonormal, :math:`P^\top P = I`). When the
      relaxation is tight, :math:`Y = P P^\top` exactly.
    * ``B`` given: ``M`` is :math:`Z` of :func:`ratio_trace`; returns the
      leading solutions of :math:`B Z B v = \mu B v`, i.e.
      :math:`P = B^{-1/2} U` with :math:`U` the leading eigenvectors of
      :math:`B^{1/2} Z B^{1/2}`, so that :math:`P^\top B P = I` and
      :math:`Z = P P^\top` when tight.

    Columns are ordered by decreasing eigenvalue of ``M`` (all close to 1
    when the relaxation is tight, so the order inside the subspace is
    arbitrary; use :func:`rayleigh_ritz` for a canonical basis).
    """
    M = _check_symmetric(M, "M")
    p = M.shape[0]
    d = _check_d(d, p)
    if B is None:
        return _extreme_eigh(M, None, d, "max")[1]
    B = _check_symmetric(B, "B", p)
    BMB = B @ M @ B
    return _extreme_eigh(0.5 * (BMB + BMB.T), B, d, "max")[1]


def rayleigh_ritz(A: ArrayLike, B: ArrayLike | None, P: ArrayLike, *,
                  sense: str = "min") -> tuple[np.ndarray, np.ndarray]:
    r"""Rotate a basis of a subspace onto the (generalized) Ritz vectors of ``(A, B)``.

    Solves the :math:`d \times d` pencil :math:`(P^\top A P, P^\top B P)` and
    returns Ritz values and vectors :math:`P Q`, best first. When the span of
    ``P`` is an exact invariant subspace these are the eigenpairs of
    :math:`(A, B)` themselves, so an SDP solution and the closed form can be
    compared vector by vector. ``B=None`` means the identity.
    """
    _check_sense(sense)
    P = np.asarray(P, dtype=float)
    Ad = P.T @ A @ P
    Bd = None if B is None else P.T @ B @ P
    Ad = 0.5 * (Ad + Ad.T)
    if Bd is not None:
        Bd = 0.5 * (Bd + Bd.T)
    w, Q = _extreme_eigh(Ad, Bd, P.shape[1], sense)
    return w, P @ Q


def rank_gap(M: ArrayLike, d: int, *, B: ArrayLike | None = None) -> float:
    r"""Tightness diagnostic: eigenvalue mass of ``M`` beyond the top :math:`d`, as a fraction.

    .. math:: \mathrm{gap}(M) = \frac{\sum_{i > d} \lambda_i^+}{\sum_i \lambda_i^+}

    with eigenvalues in decreasing order and :math:`\lambda^+ = \max(\lambda, 0)`.
    Zero iff ``M`` has rank at most :math:`d`, i.e. the SDP solution is a
    (scaled) projector of the wanted rank. With ``B``, the eigenvalues of
    :math:`B^{1/2} M B^{1/2}` are used (the Fantope coordinates of :func:`ratio_trace`).
    """
    M = _check_symmetric(M, "M")
    d = _check_d(d, M.shape[0])
    if B is None:
        ev = np.linalg.eigvalsh(M)
    else:
        B = _check_symmetric(B, "B", M.shape[0])
        BMB = B @ M @ B
        ev = scipy.linalg.eigh(0.5 * (BMB + BMB.T), B, eigvals_only=True)
    ev = np.clip(ev[::-1], 0.0, None)
    total = ev.sum()
    return float(ev[d:].sum() / total) if total > 0 else 0.0


def principal_angles(U: ArrayLike, V: ArrayLike) -> np.ndarray:
    """Principal angles (radians, ascending) between the column spans of ``U`` and ``V``."""
    return scipy.linalg.subspace_angles(np.asarray(U, float), np.asarray(V, float))[::-1]


# ------------------------------------------------------------ pencil helpers
def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise InputError(f"kind must be one of {KINDS}; got {kind!r}")
    return kind


#: Preconditioners accepted by :func:`precondition` for ``"ratio_trace"`` pencils.
PRECONDITIONERS = ("cholesky", "jacobi", "none")


def precondition(pencil: Pencil, *, regularization: float = 0.0,
                 method: str = "cholesky") -> tuple[Pencil, np.ndarray, float]:
    r"""Rescale a pencil for the SDP backends without changing its solutions.

    SDP solvers are sensitive to the scale and conditioning of the data
    (e.g. unstandardised features spanning five orders of magnitude make
    :math:`B^{-1}` in the ratio-trace SDP badly conditioned). Every
    transformation below maps optima and optimal subspaces exactly:

    * ``"trace"``: :math:`A' = A / a`, :math:`a = \max_{ij} |A_{ij}|`.
    * ``"ratio_trace"``: a congruence :math:`P = T P'`, :math:`A' = T^\top A T / a`,
      :math:`B' = T^\top B T`. Since :math:`P'^\top B' P' = P^\top B P` and
      :math:`\operatorname{tr}(P'^\top A' P') = \operatorname{tr}(P^\top A P) / a`,
      the problems are equivalent for any invertible :math:`T`:

      - ``method="cholesky"`` (default): :math:`T = L^{-\top}`, :math:`B = L L^\top`,
        so :math:`B' = I` and the SDP in :math:`Z'` is the Fantope problem of
        :math:`L^{-1} A L^{-\top}` — the congruence of the tightness proof of
        :func:`ratio_trace`, and the reduction ``scipy.linalg.eigh(A, B)``
        performs too; it makes the conic solvers' subspaces far more accurate
        (``docs/tuning.md``);
      - ``"jacobi"``: :math:`T = \operatorname{diag}(B_{ii})^{-1/2}` (unit diagonal);
      - ``"none"``: :math:`T = I` (scalar scaling of ``A`` only).
    * ``"trace_ratio"``: :math:`A' = A / a`, :math:`B' = B / b` with
      :math:`b = \max_{ij} |B_{ij}|` (scalars only: the orthonormality
      constraint forbids a congruence). The trace-ratio problem itself is not
      invariant to the units of the features, so standardise them first.

    ``regularization`` (absolute) is applied to ``B`` first.

    Returns
    -------
    scaled : Pencil
    T : ndarray, shape (m, m)
        The congruence; map a basis of the scaled problem back with ``T @ P'``.
    objective_scale : float
        The original optimum is ``objective_scale`` times the scaled one.
    """
    A, B, sense, kind = pencil[:4]
    _check_kind(kind)
    if method not in PRECONDITIONERS:
        raise InputError(f"method must be one of {PRECONDITIONERS}; got {method!r}")
    A = _check_symmetric(A, "A")
    m = A.shape[0]
    T = np.eye(m)
    if kind == "trace":
        a = float(np.abs(A).max()) or 1.0
        return Pencil(A / a, None, sense, kind, pencil.meta), T, a
    B = _check_symmetric(B, "B", m) + float(regularization) * np.eye(m)
    if kind == "trace_ratio":
        a, b = float(np.abs(A).max()) or 1.0, float(np.abs(B).max()) or 1.0
        return Pencil(A / a, B / b, sense, kind, pencil.meta), T, a / b
    if method == "cholesky":
        try:
            Lc = np.linalg.cholesky(B)
        except np.linalg.LinAlgError as exc:
            raise SingularMatrixError(
                "B is not positive definite (Cholesky failed); pass regularization or reduce "
                "the data with PCA first") from exc
        T = scipy.linalg.solve_triangular(Lc, np.eye(m), lower=True).T
    elif method == "jacobi":
        diag = np.diag(B)
        if np.any(diag <= 0):
            raise SingularMatrixError("B has a non-positive diagonal entry; pass regularization "
                                      "or reduce the data with PCA first")
        T = np.diag(1.0 / np.sqrt(diag))
    At, Bt = T.T @ A @ T, T.T @ B @ T
    a = float(np.abs(At).max()) or 1.0
    return Pencil(0.5 * (At + At.T) / a, 0.5 * (Bt + Bt.T), sense, kind, pencil.meta), T, a



# ------------------------------------------------------- rank-revealing step
@dataclass(frozen=True)
class NumericalRange:
    r"""Numerical range and null space of a symmetric PSD :math:`M \in \mathbb{S}^m`.

    With :math:`\Delta = \operatorname{diag}(M)` restricted to the coordinates
    ``coords`` whose diagonal is not negligible, the unit-diagonal matrix
    :math:`\tilde M = \Delta^{-1/2} M \Delta^{-1/2}` has eigenpairs
    :math:`(\mu_i, u_i)`; ``U`` holds those with :math:`\mu_i > \text{rank\_tol}`
    (``U_null`` the others), so that
    :math:`M \approx \Delta^{1/2} U \operatorname{diag}(\mu) U^\top \Delta^{1/2}`
    and the numerical null space is spanned by :math:`\Delta^{-1/2} U_{\rm null}`
    and the coordinates outside ``coords``.

    Attributes
    ----------
    size : int
        :math:`m`.
    coords : ndarray of int
        Coordinates with :math:`M_{ii} > m\,\varepsilon \max_j M_{jj}` (the
        others are exactly null coordinates, e.g. constant features).
    sqrt_diag : ndarray, shape (len(coords),)
        :math:`\Delta^{1/2}`.
    U : ndarray, shape (len(coords), rank)
        Kept eigenvectors, largest eigenvalue first.
    mu : ndarray, shape (rank,)
    U_null : ndarray, shape (len(coords), len(coords) - rank)
    """

    size: int
    coords: np.ndarray
    sqrt_diag: np.ndarray
    U: np.ndarray
    mu: np.ndarray
    U_null: np.ndarray

    @property
    def rank(self) -> int:
        """Numerical rank of :math:`M`."""
        return int(self.mu.size)

    def _embed(self, V: np.ndarray) -> np.ndarray:
        out = np.zeros((self.size, V.shape[1]))
        out[self.coords] = V
        return out

    def orthonormal_basis(self) -> np.ndarray:
        r"""Orthonormal basis of the range, :math:`\operatorname{orth}(\Delta^{1/2} U)`.

        Its span is the Euclidean orthogonal complement of the numerical null
        space (:math:`U^\top U_{\rm null} = 0`); shape ``(m, rank)``.
        """
        if self.rank == 0:
            return np.zeros((self.size, 0))
        return self._embed(np.linalg.qr(self.sqrt_diag[:, None] * self.U)[0])

    def whitening_basis(self) -> np.ndarray:
        r""":math:`W = \Delta^{-1/2} U \operatorname{diag}(\mu)^{-1/2}`: :math:`W^\top M W = I`.

        Its span is the complement of the null space that is orthogonal in the
        standardised coordinates :math:`\Delta^{1/2} x`, the minimum-norm
        choice of scikit-learn's LDA (``scalings_`` of its ``svd`` solver);
        shape ``(m, rank)``.
        """
        return self._embed(self.U / (self.sqrt_diag[:, None] * np.sqrt(self.mu)[None, :]))

    def null_basis(self) -> np.ndarray:
        r"""Orthonormal basis of the numerical null space, shape ``(m, m - rank)``."""
        N = self._embed(self.U_null / self.sqrt_diag[:, None])
        zero = np.setdiff1d(np.arange(self.size), self.coords)
        E = np.zeros((self.size, zero.size))
        E[zero, np.arange(zero.size)] = 1.0
        N = np.hstack([N, E])
        return np.linalg.qr(N)[0] if N.shape[1] else N


def numerical_range(M: ArrayLike, *, rank_tol: float = RANK_TOL) -> NumericalRange:
    r"""Rank-revealing eigendecomposition of a PSD matrix, invariant to the units of the features.

    The rank is decided on the unit-diagonal (Jacobi-scaled) matrix
    :math:`\tilde M = \Delta^{-1/2} M \Delta^{-1/2}`, :math:`\Delta = \operatorname{diag}(M)`,
    whose eigenvalues lie in :math:`[0, m]`: an eigenvalue
    :math:`\mu \le \text{rank\_tol}` counts as zero. Scaling first makes the
    decision independent of the units of the data (a feature measured in
    thousands and one in thousandths are treated alike, as scikit-learn's LDA
    does by standardising), while exact zeros (constant features) are removed
    through their zero diagonal.

    Parameters
    ----------
    M : array-like, shape (m, m)
        Symmetric positive semidefinite (round-off negatives are tolerated).
    rank_tol : float, default :data:`RANK_TOL`
        Threshold on the eigenvalues of :math:`\tilde M`, in ``[0, 1)``.

    Returns
    -------
    NumericalRange
    """
    M = _check_symmetric(M, "M")
    rank_tol = _check_rank_tol(rank_tol)
    m = M.shape[0]
    diag = np.clip(np.diag(M), 0.0, None)
    top = float(diag.max()) if m else 0.0
    coords = np.flatnonzero(diag > m * np.finfo(float).eps * top) if top > 0 else \
        np.zeros(0, dtype=int)
    s = np.sqrt(diag[coords])
    Ms = M[np.ix_(coords, coords)] / np.outer(s, s)
    mu, U = np.linalg.eigh(0.5 * (Ms + Ms.T))
    keep = mu > rank_tol
    return NumericalRange(m, coords, s, np.ascontiguousarray(U[:, keep][:, ::-1]),
                          mu[keep][::-1].copy(), np.ascontiguousarray(U[:, ~keep]))


def _check_rank_tol(rank_tol) -> float:
    if isinstance(rank_tol, bool):
        raise InputError(f"rank_tol must be a number in [0, 1); got {rank_tol!r}")
    try:
        rank_tol = float(rank_tol)
    except (TypeError, ValueError) as exc:
        raise InputError(f"rank_tol must be a number in [0, 1); got {rank_tol!r}") from exc
    if not 0 <= rank_tol < 1:
        raise InputError(f"rank_tol must be a number in [0, 1); got {rank_tol!r}")
    return rank_tol


def _psd_part(A: np.ndarray) -> np.ndarray:
    r""":math:`A` itself when it is positive semidefinite, else :math:`|A| = V|\Lambda|V^\top`.

    Either way the null space is that of :math:`A`; the absolute value keeps
    indefinite matrices (DNE's :math:`X(S - F)X^\top`) from cancelling.
    """
    w, V = np.linalg.eigh(A)
    scale = float(np.abs(w).max()) if w.size else 0.0
    if w.size == 0 or w[0] >= -A.shape[0] * np.finfo(float).eps * scale:
        return A
    return (V * np.abs(w)) @ V.T


@dataclass(frozen=True)
class PencilReduction:
    r"""A pencil restricted to a subspace by :func:`reduce_pencil`.

    Attributes
    ----------
    pencil : Pencil
        :math:`(T^\top A T, T^\top B T)`, same ``sense``, ``kind`` and ``meta``.
    basis : ndarray, shape (m, r)
        :math:`T`; a solution :math:`Q` of the reduced pencil is
        :math:`P = T Q` in the original coordinates.
    size : int
        :math:`m`.
    n_null : int
        Directions removed because every matrix of the pencil vanishes on
        them (they carry no information).
    n_infinite : int
        Further directions removed because :math:`B` vanishes on them while
        :math:`A` does not (generalized eigenvalue :math:`\pm\infty`); only
        without regularization.
    """

    pencil: Pencil
    basis: np.ndarray
    size: int
    n_null: int
    n_infinite: int

    @property
    def rank(self) -> int:
        """:math:`r`, the size of the reduced pencil."""
        return int(self.basis.shape[1])

    @property
    def is_identity(self) -> bool:
        """Whether nothing was removed (the pencil is returned unchanged)."""
        return self.rank == self.size


def reduce_pencil(pencil: Pencil, *, rank_tol: float = RANK_TOL,
                  regularized: bool = False) -> PencilReduction:
    r"""Rank-revealing step: reduce a singular pencil to an equivalent nonsingular one.

    Every reduction is a congruence :math:`(A, B) \to (T^\top A T, T^\top B T)`,
    a solution :math:`Q` of the reduced pencil giving :math:`P = TQ`. Ranks
    are decided by :func:`numerical_range` (unit-diagonal scaling, eigenvalues
    :math:`\le` ``rank_tol`` count as zero).

    **1. Null directions.** :math:`\mathcal N = \ker A \cap \ker B`
    (``"trace"``: :math:`\ker A`), the range of
    :math:`|A|/\lVert A\rVert_2 + B/\lVert B\rVert_2` (:math:`|A| = A` when
    :math:`A \succeq 0`). For data-derived pencils these are the directions
    :math:`v` with :math:`Xv` constant (constant or collinear features,
    :math:`p \ge n`), along which every term of the method vanishes.
    Since :math:`Av = Bv = 0` for :math:`v \in \mathcal N`, the pencil does
    not couple :math:`\mathcal N` to any complement, so restricting to a
    complement keeps every solution that is not itself null: the
    eigenvectors of nonzero eigenvalue (``"trace"``, which lie in
    :math:`\mathcal N^\perp`), the finite generalized eigenpairs
    (``"ratio_trace"``), the trace-ratio optimum (``"trace_ratio"``, whose
    optimal basis diagonalises :math:`A - \lambda^* B` and so lies in
    :math:`\mathcal N^\perp`). The complement is :math:`\mathcal N^\perp` with
    an orthonormal basis for ``"trace"``, ``"trace_ratio"`` and a regularized
    ``"ratio_trace"`` (their constraint :math:`P^\top P = I` and the ridge
    :math:`T^\top (B + rI) T = T^\top B T + rI` need the Euclidean metric); an
    unregularized ``"ratio_trace"``, invariant under any congruence, uses the
    complement orthogonal in standardised coordinates
    (:meth:`NumericalRange.whitening_basis`: minimum-norm weights on the
    standardised features, like scikit-learn's LDA). With
    ``regularized=True`` this is the only step.

    **2. Directions of infinite ratio** (no regularization, ``B`` present).
    Let :math:`K` (orthonormal basis :math:`N_2`) be the numerical null space
    of :math:`B` on the complement of step 1 and :math:`W` the whitening basis
    of its range (:math:`W^\top B W = I`).

    * ``"ratio_trace"``, ``sense="min"``: every finite eigenvector satisfies
      :math:`N_2^\top A v = \lambda N_2^\top B v = 0`, i.e. lies in the
      :math:`A`-orthogonal complement of :math:`K`. With
      :math:`A_{22} = N_2^\top A N_2 \succ 0` (true for :math:`A \succeq 0`
      once :math:`\mathcal N` is removed),

      .. math::

          T = W - N_2 A_{22}^{-1} N_2^\top A W,\qquad
          T^\top A T = W^\top A W - W^\top A N_2 A_{22}^{-1} N_2^\top A W,\qquad
          T^\top B T = I,

      the Schur complement that eliminates :math:`K` exactly: the minimum of
      :math:`\operatorname{tr}(P^\top A P)` over :math:`P^\top B P = I` (where
      components in :math:`K` are free) and every finite eigenpair are those
      of the reduced pencil; the :math:`\dim K` eigenvalues removed are
      :math:`+\infty`. (Merely restricting to :math:`\operatorname{range}(B)`
      would not be exact when :math:`A` couples it to :math:`K`, as TCA's
      pencil does.)
    * ``"ratio_trace"`` and ``"trace_ratio"`` with ``sense="max"``: a
      direction with :math:`Bv = 0 \ne Av` makes the problem unbounded
      (for LDA with fewer labelled points than features, it separates the
      labelled classes perfectly). The pencil is restricted to the range of
      :math:`B`, decided on :math:`B` in the original coordinates
      (:math:`T` its whitening basis, or an orthonormal basis for
      ``"trace_ratio"``; this also removes :math:`\mathcal N \subseteq \ker B`),
      the convention of scikit-learn's ``LinearDiscriminantAnalysis``
      (``svd`` solver); ``n_infinite`` counts the directions excluded so the
      caller can warn.
    * ``"trace_ratio"`` with ``sense="min"`` keeps :math:`K` (step 1 only):
      the problem is well posed whenever the sum of the :math:`d` smallest
      eigenvalues of :math:`B` is positive, which its builders check.

    When nothing is removed the pencil is returned unchanged with
    :math:`T = I`, so full-rank problems are solved exactly as before.

    Parameters
    ----------
    pencil : Pencil
    rank_tol : float, default :data:`RANK_TOL`
    regularized : bool, default False
        Whether the caller will add :math:`rI` to :math:`B` (then only
        :math:`\mathcal N` is removed).

    Returns
    -------
    PencilReduction

    Raises
    ------
    SingularMatrixError
        Every direction is null (e.g. constant data), or ``sense="min"`` and
        :math:`A` is not positive definite on :math:`\ker B` (the minimum is
        then unbounded or undetermined; pass a regularization).
    """
    A, B, sense, kind = pencil[:4]
    _check_kind(kind)
    _check_sense(sense)
    A = _check_symmetric(A, "A")
    m = A.shape[0]
    Apsd = _psd_part(A)
    if kind == "trace":
        info = numerical_range(Apsd, rank_tol=rank_tol)
    else:
        B = _check_symmetric(B, "B", m)
        a = float(np.linalg.norm(Apsd, 2)) or 1.0
        b = float(np.linalg.norm(B, 2)) or 1.0
        info = numerical_range(Apsd / a + B / b, rank_tol=rank_tol)
    if info.rank == 0:
        raise SingularMatrixError(
            "the pencil has no informative direction: its matrices vanish numerically "
            f"(rank_tol={rank_tol:g}); the data are constant or the labels carry no "
            "information")
    n_null = m - info.rank
    step2 = kind != "trace" and not regularized and not (kind == "trace_ratio" and sense == "min")
    if step2 and sense == "max":
        # restriction to range(B), decided in the original coordinates (scikit-learn's LDA)
        split = numerical_range(B, rank_tol=rank_tol)
        _check_some_range(split, rank_tol)
        T = split.whitening_basis() if kind == "ratio_trace" else split.orthonormal_basis()
        if split.rank == m:
            T = np.eye(m)
    elif step2:  # ratio_trace, min: remove N, then eliminate ker B by the Schur complement
        V = np.eye(m) if info.rank == m else info.whitening_basis()
        split = numerical_range(V.T @ B @ V, rank_tol=rank_tol)
        _check_some_range(split, rank_tol)
        W = split.whitening_basis()
        if split.rank < V.shape[1]:
            W = _eliminate_kernel(V.T @ A @ V, W, split.null_basis(), rank_tol)
        T = np.eye(m) if split.rank == m else V @ W
    else:
        T = np.eye(m) if info.rank == m else info.orthonormal_basis()
    if T.shape[1] == m:
        return PencilReduction(Pencil(A, B, sense, kind, pencil.meta), np.eye(m), m, 0, 0)
    Ar = T.T @ A @ T
    Br = None if B is None else T.T @ B @ T
    reduced = Pencil(0.5 * (Ar + Ar.T), None if Br is None else 0.5 * (Br + Br.T), sense, kind,
                     pencil.meta)
    n_inf = max(m - n_null - T.shape[1], 0)
    logger.info("reduce_pencil: %d -> %d dimensions (%d null, %d of infinite ratio)",
                m, T.shape[1], n_null, n_inf)
    return PencilReduction(reduced, T, m, n_null, n_inf)


def _check_some_range(split: NumericalRange, rank_tol: float) -> None:
    if split.rank == 0:
        raise SingularMatrixError(
            f"B vanishes numerically on every informative direction (rank_tol={rank_tol:g}); "
            "pass regularization=r > 0 to use B + r I")


def _eliminate_kernel(A: np.ndarray, W: np.ndarray, N2: np.ndarray,
                      rank_tol: float) -> np.ndarray:
    r""":math:`W - N_2 A_{22}^{-1} N_2^\top A W` (see :func:`reduce_pencil`, step 2).

    :math:`A_{22} = N_2^\top A N_2` must be numerically positive definite,
    decided like the ranks: unit-diagonal scaling, smallest eigenvalue above
    ``rank_tol``.
    """
    A22 = N2.T @ A @ N2
    A22 = 0.5 * (A22 + A22.T)
    diag = np.diag(A22)
    ok = bool(np.all(diag > 0))
    if ok:
        s = np.sqrt(diag)
        ok = float(np.linalg.eigvalsh(A22 / np.outer(s, s))[0]) > rank_tol
    if not ok:
        raise SingularMatrixError(
            f"B is singular on {N2.shape[1]} direction(s) on which A is not positive definite: "
            "the minimum of tr(P'AP) subject to P'BP = I is unbounded or undetermined; pass "
            "regularization=r > 0 to use B + r I")
    return W - N2 @ scipy.linalg.solve(A22, N2.T @ A @ W, assume_a="pos")


def formulate(pencil: Pencil, d: int, *, regularization: float = 0.0,
              meta: dict[str, Any] | None = None) -> Formulation:
    """Build the exact SDP of a :class:`Pencil` (dispatch on ``pencil.kind``).

    ``"trace"`` -> :func:`fantope_trace`, ``"ratio_trace"`` -> :func:`ratio_trace`,
    ``"trace_ratio"`` -> :func:`trace_ratio` (Charnes–Cooper). ``meta`` (and
    ``pencil.meta``) are merged over the relaxation's own meta, so method
    builders can record their name and the paper's equation numbers.
    """
    A, B, sense, kind = pencil[:4]
    _check_kind(kind)
    if kind == "trace":
        form = fantope_trace(A, d, sense=sense)
    elif kind == "ratio_trace":
        form = ratio_trace(A, B, d, sense=sense, regularization=regularization)
    else:
        form = trace_ratio(A, B, d, sense=sense, regularization=regularization)
    merged = {**form.meta, "relaxation": form.meta["method"], **(pencil.meta or {}),
              **(meta or {})}
    return Formulation(form.problem, form.variables, form.parameters, merged, form.expressions)


def formulate_reduced(pencil: Pencil, d: int, *, regularization: float = 0.0,
                      relative: bool = True, rank_tol: float = RANK_TOL,
                      meta: dict[str, Any] | None = None) -> Formulation:
    r"""The exact SDP of a pencil after the rank-revealing step (:func:`reduce_pencil`).

    Builds :func:`formulate` on :math:`(T^\top A T, T^\top B T)`; the variables
    live in the reduced coordinates, and a basis :math:`Q` recovered from the
    solution maps back as :math:`P = T Q` with :math:`T` =
    ``meta["reduction_basis"]`` (the identity when nothing was removed).

    Parameters
    ----------
    pencil : Pencil
    d : int
        Target dimension, at most the reduced size.
    regularization : float, default 0
        Ridge on the reduced :math:`B`; relative
        (:func:`absolute_regularization` of the reduced :math:`B`) unless
        ``relative=False``. A positive value makes the reduction remove only
        the null directions.
    relative : bool, default True
    rank_tol : float, default :data:`RANK_TOL`
    meta : dict, optional
        Merged into the formulation's ``meta``.

    Returns
    -------
    Formulation
        ``meta`` also holds ``"reduction_basis"`` (:math:`T`), ``"n_null"`` and
        ``"n_infinite"``.
    """
    red = reduce_pencil(pencil, rank_tol=rank_tol, regularized=float(regularization) > 0)
    reg = absolute_regularization(red.pencil.B, regularization) if relative \
        else float(regularization)
    if isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > red.rank:
        raise InputError(f"d={d} exceeds the {red.rank} informative direction(s) left by the "
                         f"rank-revealing step (rank_tol={rank_tol:g})")
    return formulate(red.pencil, d, regularization=reg, meta={
        **(meta or {}), "reduction_basis": red.basis, "n_null": red.n_null,
        "n_infinite": red.n_infinite})


def solve_closed_form(pencil: Pencil, d: int, *,
                      regularization: float = 0.0) -> tuple[np.ndarray, np.ndarray, float]:
    """Solve a :class:`Pencil` in closed form.

    Returns
    -------
    values : ndarray, shape (d,)
        Extreme (generalized) eigenvalues, best first; for ``"trace_ratio"``
        the eigenvalues of :math:`P^\\top (A - \\lambda^* B) P`.
    vectors : ndarray, shape (m, d)
        Orthonormal (``"trace"``, ``"trace_ratio"``) or :math:`B`-orthonormal
        (``"ratio_trace"``) columns.
    objective : float
        Sum of ``values`` for ``"trace"``/``"ratio_trace"``; :math:`\\lambda^*` for
        ``"trace_ratio"``.
    """
    A, B, sense, kind = pencil[:4]
    _check_kind(kind)
    if kind == "trace":
        w, V = generalized_eigh(A, None, d, sense=sense)
        return w, V, float(w.sum())
    if kind == "ratio_trace":
        w, V = generalized_eigh(A, B, d, sense=sense, regularization=regularization)
        return w, V, float(w.sum())
    res = trace_ratio_iteration(A, B, d, sense=sense, regularization=regularization)
    Bm = _check_symmetric(B, "B") + float(regularization) * np.eye(A.shape[0])
    w, V = rayleigh_ritz(_check_symmetric(A, "A") - res.value * Bm, None, res.vectors,
                         sense=sense)
    return w, V, res.value

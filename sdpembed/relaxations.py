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
    Fantope subproblems (:func:`dinkelbach`); its classical closed-form
    solver is the iterative trace-ratio algorithm of Wang et al. (2007)
    (:func:`trace_ratio_iteration`).

Singular :math:`B` (scatter matrices of data with fewer samples than
features) is never regularised silently: pass ``regularization=r`` (the
problems then use :math:`B + r I`) or reduce the data with PCA first, as the
papers do.

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
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import cvxpy as cp
import numpy as np
import scipy.linalg

from .exceptions import InputError, ProblemTooLargeError, SingularMatrixError  # re-exported
from .formulation import Formulation
from .solvers import SolveReport, solve

__all__ = [
    "SingularMatrixError",
    "Pencil",
    "TraceRatioResult",
    "KINDS",
    "fantope_constraints",
    "fantope_trace",
    "ratio_trace",
    "trace_ratio",
    "dinkelbach",
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
]

logger = logging.getLogger(__name__)

#: Kinds of eigenproblem a :class:`Pencil` can describe.
KINDS = ("trace", "ratio_trace", "trace_ratio")

#: ``B`` counts as singular when ``lambda_min(B) <= SINGULAR_RCOND * lambda_max(B)``.
SINGULAR_RCOND = 1e-10

#: Largest matrix side accepted for interior-point backends: their Newton
#: systems hold dense blocks of size ``p(p+1)/2`` squared per PSD cone.
MAX_INTERIOR_POINT_DIM = 150

_INTERIOR_POINT = frozenset({"CLARABEL", "CVXOPT", "SDPA", "MOSEK", "CSDP"})


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
    """Outcome of :func:`dinkelbach` or :func:`trace_ratio_iteration`.

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
    reports : list of SolveReport
        One per SDP solve (Dinkelbach only; empty in closed form).
    formulation : Formulation or None
        The parametrised Fantope subproblem (Dinkelbach only).
    seconds : float
        Wall time of the whole iteration.
    """

    value: float
    vectors: np.ndarray
    Y: np.ndarray
    history: list[float]
    iterations: int
    converged: bool
    reports: list[SolveReport] = field(default_factory=list)
    formulation: Formulation | None = None
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
                "(e.g. r = 1e-6 * trace(B) / p), or reduce the data with PCA first "
                "(the PCA pre-step of LPP/SDA/TCA)")
    elif ev[:d].sum() <= SINGULAR_RCOND * top * d or ev[0] < -SINGULAR_RCOND * top:
        raise SingularMatrixError(
            f"B must be positive semidefinite with tr(P'BP) > 0 for every orthonormal P "
            f"(sum of its {d} smallest eigenvalues is {ev[:d].sum():.3g}); pass "
            "regularization=r > 0 to use B + r I, or reduce the data with PCA first")
    return A, B, d


def check_sdp_size(p: int, solver: str) -> None:
    """Raise :class:`ProblemTooLargeError` when a ``p x p`` SDP is too big for ``solver``."""
    if str(solver).upper() in _INTERIOR_POINT and p > MAX_INTERIOR_POINT_DIM:
        raise ProblemTooLargeError(
            f"a {p} x {p} matrix variable is too large for the interior-point backend "
            f"{str(solver).upper()} (limit {MAX_INTERIOR_POINT_DIM}: its Newton system holds a "
            f"dense {p * (p + 1) // 2}^2 block per PSD cone). Reduce the features first, e.g. "
            "make_pipeline(PCA(n_components=50), estimator), or use solver='SCS'")


def absolute_regularization(B, relative: float) -> float:
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
def fantope_constraints(Y, d: int) -> list:
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


def fantope_trace(A, d: int, *, sense: str = "min") -> Formulation:
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
        "kind": "trace", "d": d, "sense": sense})


# ----------------------------------------------------------------- ratio trace
def ratio_trace(A, B, d: int, *, sense: str = "min", regularization: float = 0.0) -> Formulation:
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
        "regularization": float(regularization)})


# ----------------------------------------------------------------- trace ratio
def trace_ratio(A, B, d: int, *, sense: str = "max", regularization: float = 0.0) -> Formulation:
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
        "sense": sense, "B": B, "regularization": float(regularization)},
        expressions={"Y_fantope": Y / t})


def _fantope_subproblem(A, B, d, sense) -> Formulation:
    r"""Dinkelbach's subproblem :math:`\max_{Y \in \mathcal{F}_d} \langle A - \lambda B, Y\rangle`.

    Built once; :math:`\lambda` is the ``cp.Parameter`` ``"lam"`` (DPP).
    """
    p = A.shape[0]
    Y = cp.Variable((p, p), symmetric=True, name="Y")
    lam = cp.Parameter(name="lam")
    expr = _inner(A, Y) - lam * _inner(B, Y)
    problem = cp.Problem(_objective(sense, expr), fantope_constraints(Y, d))
    assert problem.is_dpp()
    return Formulation(problem, {"Y": Y}, {"lam": lam}, meta={
        "method": "trace_ratio", "variant": f"dinkelbach/{sense}",
        "equations": ("Dinkelbach 1967",), "kind": "trace_ratio", "d": d, "sense": sense})


def dinkelbach(A, B, d: int, *, sense: str = "max", solver: str = "CLARABEL", tol: float = 1e-8,
               max_iter: int = 100, regularization: float = 0.0, lam0: float | None = None,
               **solver_options) -> TraceRatioResult:
    r"""Trace ratio by Dinkelbach's iteration over Fantope SDPs.

    With :math:`F(\lambda) = \max_{Y \in \mathcal{F}_d} \langle A - \lambda B, Y\rangle`
    (exact by Ky Fan), :math:`F` is convex, decreasing, and
    :math:`F(\lambda) = 0` exactly at the trace-ratio optimum :math:`\lambda^*`.
    Dinkelbach's update :math:`\lambda_{k+1} = \langle A, Y_k\rangle / \langle B, Y_k\rangle`,
    :math:`Y_k` the maximiser at :math:`\lambda_k`, is Newton's method on
    :math:`F` and converges superlinearly. The subproblem is built once with
    :math:`\lambda` a ``cp.Parameter`` named ``"lam"`` (DPP), so every
    re-solve reuses cvxpy's compiled program. ``sense="min"`` minimises the
    ratio with the analogous iteration.

    Parameters
    ----------
    A, B : array-like, shape (p, p)
        As for :func:`trace_ratio`.
    d : int
    sense : {"max", "min"}
    solver : str
        Backend for :func:`sdpembed.solvers.solve`.
    tol : float
        Stop when :math:`|F(\lambda_k)| \le tol \cdot (|\langle A, Y_k\rangle| +
        |\lambda_k \langle B, Y_k\rangle|)` or
        :math:`|\lambda_{k+1} - \lambda_k| \le tol \cdot \max(1, |\lambda_{k+1}|)`.
    max_iter : int
    regularization : float
        Use :math:`B + r I`.
    lam0 : float, optional
        Starting value; default the ratio at :math:`Y = (d/p) I`, i.e. ``tr A / tr B``.
    **solver_options
        Passed to the backend.

    Returns
    -------
    TraceRatioResult
    """
    _check_sense(sense)
    A, B, d = _check_pencil(A, B, d, regularization, need_definite=False)
    check_sdp_size(A.shape[0], solver)
    t0 = time.perf_counter()
    form = _fantope_subproblem(A, B, d, sense)
    lam_par, Y = form.parameters["lam"], form.variables["Y"]
    lam = float(np.trace(A) / np.trace(B)) if lam0 is None else float(lam0)
    history, reports, converged = [lam], [], False
    for _ in range(int(max_iter)):
        lam_par.value = lam
        reports.append(solve(form, solver=solver, **solver_options))
        Yk = Y.value
        num, den = float(np.vdot(A, Yk)), float(np.vdot(B, Yk))
        F = num - lam * den
        lam_new = num / den
        history.append(lam_new)
        logger.debug("dinkelbach: lam=%.12g F=%.3g", lam_new, F)
        done = (abs(F) <= tol * (abs(num) + abs(lam * den))
                or abs(lam_new - lam) <= tol * max(1.0, abs(lam_new)))
        lam = lam_new
        if done:
            converged = True
            break
    if not converged:
        logger.warning("dinkelbach did not converge in %d iterations (last change %.3g)",
                       max_iter, abs(history[-1] - history[-2]))
    P = recover_basis(Yk, d)
    P = rayleigh_ritz(A - lam * B, None, P, sense=sense)[1]
    return TraceRatioResult(value=lam, vectors=P, Y=Yk, history=history,
                            iterations=len(reports), converged=converged, reports=reports,
                            formulation=form, seconds=time.perf_counter() - t0)


def trace_ratio_iteration(A, B, d: int, *, sense: str = "max", tol: float = 1e-12,
                          max_iter: int = 100, regularization: float = 0.0,
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
        ``reports`` is empty and ``formulation`` is ``None``.
    """
    _check_sense(sense)
    A, B, d = _check_pencil(A, B, d, regularization, need_definite=False)
    t0 = time.perf_counter()
    lam = float(np.trace(A) / np.trace(B)) if lam0 is None else float(lam0)
    history, converged = [lam], False
    for _ in range(int(max_iter)):
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


def generalized_eigh(A, B=None, d: int | None = None, *, sense: str = "min",
                     regularization: float = 0.0):
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


def recover_basis(M, d: int, *, B=None) -> np.ndarray:
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


def rayleigh_ritz(A, B, P, *, sense: str = "min"):
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


def rank_gap(M, d: int, *, B=None) -> float:
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


def principal_angles(U, V) -> np.ndarray:
    """Principal angles (radians, ascending) between the column spans of ``U`` and ``V``."""
    return scipy.linalg.subspace_angles(np.asarray(U, float), np.asarray(V, float))[::-1]


# ------------------------------------------------------------ pencil helpers
def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise InputError(f"kind must be one of {KINDS}; got {kind!r}")
    return kind


#: Preconditioners accepted by :func:`precondition` for ``"ratio_trace"`` pencils.
PRECONDITIONERS = ("cholesky", "jacobi", "none")


def precondition(pencil: Pencil, *, regularization: float = 0.0, method: str = "cholesky"):
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
        performs too. Measured on iris/wine pencils (LPP, SDA, discriminative
        projections) it brings Clarabel's subspace error from up to
        :math:`10^{-3}` rad to below :math:`10^{-10}`;
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


def solve_closed_form(pencil: Pencil, d: int, *, regularization: float = 0.0):
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

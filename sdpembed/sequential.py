r"""Algorithms that call :func:`sdpembed.solvers.solve` repeatedly.

The builders of :mod:`sdpembed.relaxations` and :mod:`sdpembed.formulations`
state one convex program each; the iterations here re-solve such a program
with new parameter values, so they sit above :mod:`sdpembed.solvers` (and the
builder modules import no solver):

* :func:`dinkelbach`: the trace-ratio problem as a sequence of Fantope SDPs
  (Dinkelbach 1967), each re-solve reusing cvxpy's compiled DPP program;
* :func:`otca_sequence`: Orthogonal TCA's r steps (Liu, Tao & Liu 2008,
  eqs. 22-27), each a convex quadratic program under the orthogonality
  constraints of the previous steps;
* :func:`minimum_volume_embedding`: Minimum Volume Embedding (Shaw & Jebara
  2007), a sequence of linear-objective Gram SDPs, each MVU's constraints with
  an objective added by ``with_objective``.

References
----------
W. Dinkelbach, "On nonlinear fractional programming", Management Sci. 13 (1967).
W. Liu, D. Tao, J. Liu, "Transductive Component Analysis", ICDM 2008.
B. Shaw, T. Jebara, "Minimum Volume Embedding", AISTATS 2007.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ._checks import as_int
from ._typing import ArrayLike
from .exceptions import InputError
from .formulation import Formulation
from .relaxations import (
    TraceRatioResult,
    check_sdp_size,
    fantope_subproblem,
    rayleigh_ritz,
    recover_basis,
)
from .solvers import SolveReport, solve

if TYPE_CHECKING:  # annotations only
    from .formulations.gram import GramFormulation
    from .graphs import NeighborhoodGraph

__all__ = ["DinkelbachResult", "dinkelbach", "otca_sequence", "MinimumVolumeResult",
           "minimum_volume_embedding", "minimum_volume_step"]

logger = logging.getLogger(__name__)


@dataclass
class DinkelbachResult(TraceRatioResult):
    """:class:`~sdpembed.relaxations.TraceRatioResult` of :func:`dinkelbach`, with its solves.

    Attributes
    ----------
    reports : list of SolveReport
        One per SDP solve.
    formulation : Formulation or None
        The parametrised Fantope subproblem
        (:func:`sdpembed.relaxations.fantope_subproblem`).
    """

    reports: list[SolveReport] = field(default_factory=list)
    formulation: Formulation | None = None


def dinkelbach(A: ArrayLike, B: ArrayLike, d: int, *, sense: str = "max", solver: str = "auto",
               tol: float = 1e-8, max_iter: int = 100, regularization: float = 0.0,
               lam0: float | None = None, **solver_options: Any) -> DinkelbachResult:
    r"""Trace ratio by Dinkelbach's iteration over Fantope SDPs.

    With :math:`F(\lambda) = \max_{Y \in \mathcal{F}_d} \langle A - \lambda B, Y\rangle`
    (exact by Ky Fan), :math:`F` is convex, decreasing, and
    :math:`F(\lambda) = 0` exactly at the trace-ratio optimum :math:`\lambda^*`.
    Dinkelbach's update :math:`\lambda_{k+1} = \langle A, Y_k\rangle / \langle B, Y_k\rangle`,
    :math:`Y_k` the maximiser at :math:`\lambda_k`, is Newton's method on
    :math:`F` and converges superlinearly. The subproblem
    (:func:`sdpembed.relaxations.fantope_subproblem`) is built once with
    :math:`\lambda` a ``cp.Parameter`` named ``"lam"`` (DPP), so every
    re-solve reuses cvxpy's compiled program. ``sense="min"`` minimises the
    ratio with the analogous iteration.

    Parameters
    ----------
    A, B : array-like, shape (p, p)
        As for :func:`sdpembed.relaxations.trace_ratio`.
    d : int
    sense : {"max", "min"}
    solver : str, default "auto"
        Backend for :func:`sdpembed.solvers.solve` (``"auto"``: its choice).
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
    DinkelbachResult
    """
    form = fantope_subproblem(A, B, d, sense=sense, regularization=regularization)
    A, B, d = form.meta["A"], form.meta["B"], form.meta["d"]
    check_sdp_size(A.shape[0], solver)
    t0 = time.perf_counter()
    lam_par, Y = form.parameters["lam"], form.variables["Y"]
    lam = float(np.trace(A) / np.trace(B)) if lam0 is None else float(lam0)
    history, reports, converged = [lam], [], False
    for _ in range(as_int(max_iter, "max_iter", 1)):
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
    return DinkelbachResult(value=lam, vectors=P, Y=Yk, history=history,
                            iterations=len(reports), converged=converged,
                            seconds=time.perf_counter() - t0, reports=reports, formulation=form)


def otca_sequence(formulation: Formulation, n_components: int, *, solver: str = "auto",
                  **solver_options: Any) -> tuple[np.ndarray, list[SolveReport]]:
    r"""Run OTCA's r steps on :func:`sdpembed.formulations.tca.otca_step_formulation`.

    Step k sets the parameters ``"target"`` (:math:`\gamma X_lY_{\cdot k}`
    scaled to unit norm) and ``"previous"`` (the unit directions
    :math:`a_1, \dots, a_{k-1}` as rows) and re-solves the same DPP program
    without recompiling; the scaled solution is mapped back,
    :math:`a_k = (\tau_k/q)\,\hat a^*` (Liu, Tao & Liu, eqs. 22-27).

    Returns
    -------
    A : ndarray (p, r)
        The directions :math:`a_1, \dots, a_r` (unscaled, comparable with
        :func:`sdpembed.scatter.tca.otca_basis`).
    reports : list of SolveReport
        One per step.
    """
    R, q = formulation.meta["R"], formulation.meta["q"]
    p, c = R.shape
    r = as_int(n_components, "n_components")
    if not 1 <= r <= min(c, p):
        raise InputError(f"OTCA gives at most min(n_classes, n_features) = {min(c, p)} "
                         f"directions; got n_components={r}")
    target = formulation.parameters["target"]
    previous = formulation.parameters["previous"]
    a_hat = formulation.variables["a_hat"]
    C = np.zeros(previous.shape)
    A = np.zeros((p, r))
    reports = []
    for k in range(r):
        tau = float(np.linalg.norm(R[:, k]))
        if tau == 0:
            raise InputError(f"OTCA step {k + 1}: X_l Y_k is zero (the labeled points of class "
                             f"{k} sum to the origin); the direction is undefined")
        target.value = R[:, k] / tau
        previous.value = C
        reports.append(solve(formulation, solver=solver, **solver_options))
        A[:, k] = (tau / q) * a_hat.value
        if k < C.shape[0] and k + 1 < r:
            C[k] = A[:, k] / np.linalg.norm(A[:, k])
        logger.debug("OTCA step %d: %s", k + 1, reports[-1])
    return A, reports


@dataclass
class MinimumVolumeResult:
    """Outcome of :func:`minimum_volume_embedding`.

    Attributes
    ----------
    formulation : GramFormulation
        The last step's formulation (MVU's constraints and the step's objective); its
        solution is ``formulation.value("gram")``.
    gram : ndarray (n, n)
        The final Gram matrix.
    history : list of float
        :math:`\\sum_{i\\le d}\\lambda_i(G_t) - \\sum_{i>d}\\lambda_i(G_t)` after each
        solve, starting with the MVU solution.
    reports : list of SolveReport
        One per solve, MVU first.
    converged : bool
    """

    formulation: Any
    gram: np.ndarray
    history: list[float]
    reports: list[SolveReport]
    converged: bool


def _spectrum_of(form) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and eigenvectors of the solved Gram matrix (from the
    LOWRANK factor when there is one, else dense)."""
    F = form.factor
    if F is not None:
        U, s, _ = np.linalg.svd(F, full_matrices=False)
        lam = np.zeros(F.shape[0])
        lam[:s.size] = s * s
        return lam, U
    lam, V = np.linalg.eigh(form.value("gram"))
    return lam[::-1], V[:, ::-1]


def minimum_volume_step(formulation: GramFormulation, vectors: ArrayLike) -> GramFormulation:
    r"""One step of :func:`minimum_volume_embedding`: ``formulation`` (MVU's, minimising
    :math:`-\mathrm{tr}\,G`) with the objective :math:`-\langle 2V_dV_d^T - I, G\rangle`,
    :math:`V_d` = ``vectors`` (n x d, orthonormal columns: the top eigenvectors of the
    current Gram matrix).

    Raises
    ------
    InputError
        ``vectors`` of the wrong shape, not finite, or without orthonormal columns.
    """
    import cvxpy as cp

    from .formulations.objective import gram_inner

    G = formulation.expressions["gram"]
    V = np.asarray(vectors, dtype=float)
    if V.ndim != 2 or V.shape[0] != G.shape[0] or not np.all(np.isfinite(V)):
        raise InputError(f"vectors must be a finite ({G.shape[0]}, d) array; got shape "
                         f"{V.shape}")
    if not np.allclose(V.T @ V, np.eye(V.shape[1]), atol=1e-8):
        raise InputError("vectors must have orthonormal columns (eigenvectors of the Gram "
                         "matrix)")
    d = V.shape[1]
    return formulation.with_objective(2 * cp.trace(G) - gram_inner(G, V, np.full(d, 2.0)))


def minimum_volume_embedding(graph: NeighborhoodGraph, n_components: int = 2, *,
                             solver: str = "auto",
                             max_iter: int = 20, tol: float = 1e-6,
                             **solver_options: Any) -> MinimumVolumeResult:
    r"""Minimum Volume Embedding (Shaw & Jebara, AISTATS 2007) by its sequence of SDPs.

    MVE keeps MVU's constraints (:func:`sdpembed.formulations.mvu`: distances on the
    graph's edges preserved, :math:`G\mathbf 1 = 0`, :math:`G\succeq 0`) and maximises
    the spectral gap :math:`\sum_{i\le d}\lambda_i(G) - \sum_{i>d}\lambda_i(G)`, which
    is not concave. Each step maximises its linearisation at the current
    :math:`G_t`, with :math:`V_d` the top ``d`` eigenvectors of :math:`G_t`:

    .. math::

        G_{t+1} = \arg\max_G\ \langle 2V_dV_d^T - I, G\rangle
        \quad\text{s.t. MVU's constraints},

    a linear-objective SDP; since :math:`\langle 2V_dV_d^T - I, G\rangle \le
    \sum_{i\le d}\lambda_i - \sum_{i>d}\lambda_i` (Ky Fan) with equality at
    :math:`G_t`, the gap never decreases. The first iterate is MVU's solution. Each
    step is ``f.with_objective(...)`` on MVU's formulation (MVU minimises
    :math:`-\mathrm{tr}\,G`; the added term :math:`2\,\mathrm{tr}\,G -
    2\langle V_dV_d^T, G\rangle` by :func:`~sdpembed.formulations.objective.gram_inner`
    turns it into :math:`-\langle 2V_dV_d^T - I, G\rangle`), so every backend solves
    it, ``"LOWRANK"`` included.

    Parameters
    ----------
    graph : NeighborhoodGraph
        Connected, with distinct points (as for MVU).
    n_components : int
        :math:`d`, at least 1 and below the number of points.
    solver : str
    max_iter : int
        Steps after the MVU solve.
    tol : float
        Stop when the gap grows by at most ``tol`` relative.
    **solver_options
        Passed to :func:`sdpembed.solvers.solve`.

    Returns
    -------
    MinimumVolumeResult
    """
    from .formulations import mvu

    base = mvu(graph, distances="equality")
    n = base.n_points
    d = as_int(n_components, "n_components", 1, n - 1)
    max_iter = as_int(max_iter, "max_iter", 1)
    if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol >= 0):
        raise InputError(f"tol must be a finite number >= 0; got {tol!r}")
    reports = [solve(base, solver=solver, **solver_options)]
    form = base

    def gap(lam):
        return float(lam[:d].sum() - lam[d:].sum())

    lam, V = _spectrum_of(form)
    history, converged = [gap(lam)], False
    for _ in range(max_iter):
        step = minimum_volume_step(base, V[:, :d])
        reports.append(solve(step, solver=solver, **solver_options))
        form = step
        lam, V = _spectrum_of(form)
        history.append(gap(lam))
        logger.debug("MVE step %d: gap %.10g", len(history) - 1, history[-1])
        if abs(history[-1] - history[-2]) <= tol * max(1.0, abs(history[-1])):
            converged = True
            break
    if not converged:
        logger.warning("minimum_volume_embedding did not converge in %d steps (last change "
                       "%.3g)", max_iter, abs(history[-1] - history[-2]))
    return MinimumVolumeResult(formulation=form, gram=(V * lam[:V.shape[1]]) @ V.T, history=history,
                               reports=reports, converged=converged)

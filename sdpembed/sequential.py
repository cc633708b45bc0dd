r"""Algorithms that call :func:`sdpembed.solvers.solve` repeatedly.

The builders of :mod:`sdpembed.relaxations` and :mod:`sdpembed.formulations`
state one convex program each; the iterations here re-solve such a program
with new parameter values, so they sit above :mod:`sdpembed.solvers` (and the
builder modules import no solver):

* :func:`dinkelbach`: the trace-ratio problem as a sequence of Fantope SDPs
  (Dinkelbach 1967), each re-solve reusing cvxpy's compiled DPP program;
* :func:`otca_sequence`: Orthogonal TCA's r steps (Liu, Tao & Liu 2008,
  eqs. 22-27), each a convex quadratic program under the orthogonality
  constraints of the previous steps.

References
----------
W. Dinkelbach, "On nonlinear fractional programming", Management Sci. 13 (1967).
W. Liu, D. Tao, J. Liu, "Transductive Component Analysis", ICDM 2008.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

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

__all__ = ["DinkelbachResult", "dinkelbach", "otca_sequence"]

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

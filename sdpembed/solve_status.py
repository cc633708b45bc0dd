"""When an inaccurate solve is still a result: the rule shared by ``solve()`` and the runner.

A backend stopped by an iteration or time limit reports
``optimal_inaccurate``. Close to the optimum that is a usable result (it is
kept, with an :class:`~sdpembed.exceptions.InaccurateSolutionWarning`); far
from it -- SCS cut off by ``max_iters`` with a duality gap hundreds of times
the objective -- it is not, and calling it a solution would put a wrong
number in a table. The measure is the largest of the relative duality gap
and the relative primal and dual residuals,

.. math:: \\max\\Bigl(\\frac{|p - d|}{\\max(1, |p|)},\\;
          \\frac{r_p}{\\max(1, |p|)},\\; \\frac{r_d}{\\max(1, |p|)}\\Bigr)

(:math:`p` the objective; a quantity the backend already reports relative is
taken as it is). The gap alone is not enough: an SCS iterate cut off early can
have a small gap while violating the constraints, and then its objective is
far from the optimum. A solve whose measure exceeds :data:`FAR_FROM_OPTIMAL`
raises :class:`~sdpembed.exceptions.SolverFailedError`. Backends differ in
what they report: SCS's gap :math:`|c^Tx + b^Ty|` and residuals are absolute;
CLARABEL (as filled in by :mod:`sdpembed.solvers`), CSDP and CVXOPT report
relative ones; SDPA a relative gap :math:`|p - d| / \\max(1, (|p| + |d|)/2)` and
absolute feasibility errors (kept by :mod:`sdpembed.solvers`: cvxpy drops
them), taken as they are. A solve that reports none of them cannot be judged and
stays ``optimal_inaccurate``. A solve that carries a *certified* gap
(LOWRANK's duality certificate) at a primal point whose infeasibility is at most
:data:`FAR_FROM_OPTIMAL` is exempt: its distance from the optimum is proven and
reported beside it, so it is an honest, if loose, result. A primal point further
from feasibility bounds nothing (an infeasible problem ends that way), and is
judged like the others, its ``primal_infeasibility`` counting as a residual.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .exceptions import SolverFailedError

if TYPE_CHECKING:
    from .report import SolveReport

__all__ = ["FAR_FROM_OPTIMAL", "relative_gap", "distance_from_optimal", "check_inaccurate"]

#: Relative gap or residual above which an ``optimal_inaccurate`` solve is an error: its
#: objective may be more than about 1 % from the optimum.
FAR_FROM_OPTIMAL = 1e-2

#: Backends whose reported gap and residuals are absolute (divided by max(1, |p|) here).
_ABSOLUTE = frozenset({"SCS"})


def _get(stats, key):
    if stats is None:
        return None
    value = stats.get(key) if isinstance(stats, Mapping) else getattr(stats, key, None)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _scale(solver: str, objective) -> float:
    if str(solver).upper() not in _ABSOLUTE:
        return 1.0
    p = _get({"p": objective}, "p")
    return max(1.0, abs(p) if p is not None else 0.0)


def relative_gap(solver: str, objective: float | None,
                 stats: Mapping[str, Any] | SolveReport) -> float | None:
    """Relative duality gap of a solve, or ``None`` if the backend reported no gap.

    Parameters
    ----------
    solver : str
        Backend name.
    objective : float or None
        Objective value of the solution.
    stats : mapping or SolveReport
        Anything with ``gap``, ``primal_residual`` and ``dual_residual``
        entries or attributes (the ``extra`` statistics that
        :mod:`sdpembed.solvers` collects, or a finished
        :class:`~sdpembed.solvers.SolveReport`).
    """
    gap = _get(stats, "gap")
    return None if gap is None else abs(gap) / _scale(solver, objective)


def distance_from_optimal(solver: str, objective: float | None,
                          stats: Mapping[str, Any] | SolveReport) -> float | None:
    """The largest of the relative gap and relative residuals (``None`` if none is known)."""
    scale = _scale(solver, objective)
    values = [abs(v) / scale for v in (_get(stats, k) for k in
                                       ("gap", "primal_residual", "dual_residual",
                                        "primal_infeasibility"))
              if v is not None]
    return max(values) if values else None


def check_inaccurate(solver: str, status: str, objective: float | None,
                     stats: Mapping[str, Any] | SolveReport, *, what: str = "") -> None:
    """Raise :class:`SolverFailedError` if an ``optimal_inaccurate`` solve is far from optimal.

    Does nothing for other statuses (they are judged by the caller), for
    inaccurate solves whose :func:`distance_from_optimal` is at most
    :data:`FAR_FROM_OPTIMAL` or unknown, and for solves with a certified gap
    (``stats.certified_gap``).

    Parameters
    ----------
    solver, objective, stats
        See :func:`relative_gap`.
    status : str
        The solve's status.
    what : str, optional
        What was solved, for the message (e.g. the formulation's method).
    """
    if status != "optimal_inaccurate":
        return
    infeasibility = _get(stats, "primal_infeasibility")
    if _get(stats, "certified_gap") is not None and (
            infeasibility is None or infeasibility <= FAR_FROM_OPTIMAL):
        return
    distance = distance_from_optimal(solver, objective, stats)
    if distance is None or distance <= FAR_FROM_OPTIMAL:
        return
    gap = relative_gap(solver, objective, stats)
    scale = _scale(solver, objective)
    parts = [f"relative duality gap {gap:.3g}" if gap is not None else None] + [
        f"relative {name} {abs(v) / scale:.3g}"
        for name, v in (("primal residual", _get(stats, "primal_residual")),
                        ("dual residual", _get(stats, "dual_residual")),
                        ("primal infeasibility", infeasibility)) if v is not None]
    on = f" on {what}" if what else ""
    maybe = (" The constraints may not hold together (an infeasible problem ends this way): "
             "check them with an interior-point backend, which proves infeasibility."
             if infeasibility is not None and infeasibility > FAR_FROM_OPTIMAL else "")
    raise SolverFailedError(
        f"{str(solver).upper()}{on} stopped before converging (optimal_inaccurate) with "
        f"{', '.join(p for p in parts if p)}; the largest is above {FAR_FROM_OPTIMAL:g}: the "
        "point it returned is far from optimal and is not a solution. Raise the iteration or "
        "time limit (SCS max_iters, CLARABEL max_iter/time_limit, CSDP maxiter, SDPA "
        "maxIteration, LOWRANK time_limit/max_outer) or use an interior-point backend." + maybe)

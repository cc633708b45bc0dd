"""When an inaccurate solve is still a result: the rule shared by ``solve()`` and the runner.

A backend stopped by an iteration or time limit reports
``optimal_inaccurate``. Close to the optimum that is a usable result (it is
kept, with an :class:`~sdpembed.exceptions.InaccurateSolutionWarning`); far
from it -- SCS cut off by ``max_iters`` with a duality gap hundreds of times
the objective -- it is not, and calling it a solution would put a wrong
number in a table. The measure is the relative duality gap

.. math:: \\frac{|p - d|}{\\max(1, |p|)}

(:math:`p` the objective), which bounds how far the objective can be from
the optimum when the residuals are small; a solve whose gap exceeds
:data:`FAR_FROM_OPTIMAL` raises :class:`~sdpembed.exceptions.SolverFailedError`.
Backends differ in what their ``gap`` is: SCS reports the absolute gap
:math:`|c^Tx + b^Ty|`, which is divided here by :math:`\\max(1, |p|)`;
CLARABEL (as filled in by :mod:`sdpembed.solvers`), CSDP and LOWRANK
report relative gaps already. A solve that reports no gap cannot be judged
and stays ``optimal_inaccurate``. A solve that carries a *certified* gap
(LOWRANK's duality certificate) is exempt: its distance from the optimum is
proven and reported beside it, so it is an honest, if loose, result.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from .exceptions import SolverFailedError

__all__ = ["FAR_FROM_OPTIMAL", "relative_gap", "check_inaccurate"]

#: Relative duality gap above which an ``optimal_inaccurate`` solve is an error: the
#: objective may be more than 1 % from the optimum.
FAR_FROM_OPTIMAL = 1e-2

#: Backends whose reported ``gap`` is absolute.
_ABSOLUTE_GAP = frozenset({"SCS"})


def _get(stats, key):
    if stats is None:
        return None
    value = stats.get(key) if isinstance(stats, Mapping) else getattr(stats, key, None)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def relative_gap(solver: str, objective, stats) -> float | None:
    """Relative duality gap of a solve, or ``None`` if the backend reported no gap.

    Parameters
    ----------
    solver : str
        Backend name.
    objective : float or None
        Objective value of the solution.
    stats : mapping or SolveReport
        Anything with a ``gap`` entry or attribute (the ``extra`` statistics
        that :mod:`sdpembed.solvers` collects, or a finished
        :class:`~sdpembed.solvers.SolveReport`).
    """
    gap = _get(stats, "gap")
    if gap is None:
        return None
    gap = abs(gap)
    if str(solver).upper() in _ABSOLUTE_GAP:
        p = _get({"p": objective}, "p")
        gap /= max(1.0, abs(p) if p is not None else 0.0)
    return gap


def check_inaccurate(solver: str, status: str, objective, stats, *, what: str = "") -> None:
    """Raise :class:`SolverFailedError` if an ``optimal_inaccurate`` solve is far from optimal.

    Does nothing for other statuses (they are judged by the caller), for
    inaccurate solves whose relative gap is at most :data:`FAR_FROM_OPTIMAL`
    or unknown, and for solves with a certified gap (``stats.certified_gap``).

    Parameters
    ----------
    solver, objective, stats
        See :func:`relative_gap`.
    status : str
        The solve's status.
    what : str, optional
        What was solved, for the message (e.g. the formulation's method).
    """
    if status != "optimal_inaccurate" or _get(stats, "certified_gap") is not None:
        return
    gap = relative_gap(solver, objective, stats)
    if gap is None or gap <= FAR_FROM_OPTIMAL:
        return
    on = f" on {what}" if what else ""
    raise SolverFailedError(
        f"{str(solver).upper()}{on} stopped before converging (optimal_inaccurate) with "
        f"relative duality gap {gap:.3g}, above {FAR_FROM_OPTIMAL:g}: the point it returned is "
        "far from optimal and is not a solution. Raise the iteration or time limit "
        "(SCS max_iters, CLARABEL max_iter/time_limit, LOWRANK time_limit/max_outer) or use "
        "an interior-point backend.")

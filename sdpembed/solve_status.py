"""When a solve is a result: the one rule shared by ``solve()``, the estimators and the runner.

A backend returns a point, its objective :math:`p` and, where it knows them, a
duality gap, residuals and a bound. The point is a *result* only if

1. its objective is a finite number;
2. it is feasible to the stated tolerance: its relative infeasibility (LOWRANK's
   ``primal_infeasibility``) is at most :data:`FEASIBILITY_TOLERANCE` or the
   ``feas_tol`` the solve was given, whichever is larger (a backend's primal residual
   counts under rule 4);
3. where a bound :math:`\\ell` on the optimum is reported (LOWRANK's certified lower
   bound), the objective lies within the reported gap of it on the right side:
   :math:`\\ell \\le p` up to :data:`BOUND_TOLERANCE`, and the signed gap
   :func:`bound_gap` is at most :data:`FAR_FROM_OPTIMAL`, both relative to the objective
   (not to :math:`\\max(1, \\cdot)`: its unit, below);
4. for an ``optimal_inaccurate`` solve, the largest of its relative gap and relative
   residuals (each in the unit of its own terms, below; the gap of a conic iterate is the
   solver's number, ``extra["solver_gap"]``) is at most :data:`FAR_FROM_OPTIMAL`, or the
   stricter :data:`NEAR_OPTIMAL` of the backend;
5. for an ``optimal_inaccurate`` solve whose backend reports what its point's violations
   can buy (``violation_worth``: :math:`\\sum_i |y_i| r_i`, each affine row's violation
   :math:`r_i` priced at the backend's own multiplier :math:`y_i`, relative to the
   objective in its unit, below; :mod:`sdpembed.violation_worth`, every conic backend;
   LOWRANK's hard rows at its certificate's multipliers,
   :func:`sdpembed.lowrank.row_worth.row_price`), it is at most :data:`VIOLATION_WORTH`,
   unless the point moved onto its rows proves it within that of the optimum
   (``repaired_worth`` at most :data:`VIOLATION_WORTH`, below). LOWRANK reports a point
   that converged to its tolerances but is priced above the limit and above its own
   certified gap ``optimal_inaccurate``, so this rule judges it too (below), and so does
   :func:`sdpembed.solvers.solve` an SCS point that converged to its tolerances but is
   priced above the limit and above the accuracy its ``eps_abs``/``eps_rel`` state
   (``stated_accuracy``, below).

Anything else raises :class:`~sdpembed.exceptions.SolverFailedError` carrying the
objective, the bound, the gap and the point (:func:`check_result`); certified or not.
A certified gap does not excuse a far point: "optimum within a factor 2 of this" is a
bound, not a solution, and an objective *below* a proven lower bound is not the
objective of a feasible point. LOWRANK's own relative gap
:math:`|p - \\ell| / \\max(|p|, |\\ell|)` cannot exceed 2, so a point whose objective is
18 times the optimum with the opposite sign reads as "1.3"; :func:`bound_gap` divides
by :math:`\\min(|p|, |\\ell|)` and keeps the sign, so such a point reads as "4.3" and an
objective below its bound as negative.

**The objective's unit.** An SDP's objective has no natural unit: a gap is relative to
the objective, whatever its magnitude, and 1 is no floor (an objective -0.573 over a
bound -0.583 is 1.7 % from the optimum, not "9.8e-3"). A floor is needed only where the
objective is near 0, and it comes from the problem's data: the size :math:`s` of the
objective's terms at the point (:math:`\\langle |C|, G\\rangle` plus the distance penalty,
:func:`~sdpembed.lowrank.penalty.objective_scale`, reported by LOWRANK as
``extra["objective_scale"]``; :math:`s \\ge |p|`, far above it where the terms cancel). A
point feasible to :data:`FEASIBILITY_TOLERANCE` has an objective known to about that share
of :math:`s`, so a relative statement to :data:`FAR_FROM_OPTIMAL` needs
:math:`|p| \\ge` :data:`OBJECTIVE_RESOLUTION` :math:`s` (1e-3 s); below that the gap is
measured against :math:`10^{-3} s`. The same measure decides everywhere a bound meets an
objective: this rule (refusal far from optimal, and below the bound), LOWRANK's own
refusals (:mod:`sdpembed.lowrank.backend`), :attr:`SolveReport.bound_gap
<sdpembed.report.SolveReport.bound_gap>` and the differential test's counters
(:mod:`problems.differential`, whose agreement is relative with the same floor), and
LOWRANK's outer loop, which stops only at a pair this rule keeps (the scale of its best
point). Without a reported scale :func:`bound_gap` has no floor, which is stricter.

**The residuals' unit.** A residual is a violation of the constraints, so its unit is the
size of the constraints' own terms at the point, not the objective (nor 1): for conic
data :math:`Ax + s = b`, :math:`\\|Ax + s - b\\| / \\max(\\|Ax\\|, \\|s\\|, \\|b\\|)`, and
:math:`\\|A^Ty + c\\| / \\max(\\|A^Ty\\|, \\|c\\|)` for the dual, the measure first-order and
interior-point solvers stop on. SCS reports absolute numbers; :mod:`sdpembed.backends`
keeps the sizes of its terms at the point it returns and reports its residuals relative
to them (:func:`~sdpembed.backends.interfaces.scs_stats`, SCS's own ``eps_rel`` unit): a cut
point whose residual is 5.6e-4 of its terms' size no longer reads as "4.3e-5" because its
objective is 132. A gap is the objective's, so it is relative to the objective as posed,
with the floor :data:`OBJECTIVE_RESOLUTION` times the size of the objective's terms
(:func:`gap_in_objective_unit`), not to those terms: where they cancel (SCS's
:math:`|c^Tx|` and :math:`|b^Ty|` far above :math:`|p|`) they would hide a point 3 % off.
For the same reason the dual residual :math:`r = Px + A^Ty + c` is also judged by its
effect on the objective, :math:`|r^Tx|` in the objective's unit (``dual_residual_effect``):
relative to :math:`\\|c\\|` it hid a cut point 0.66 % below the optimum.
CLARABEL's residuals are its own, relative to
:math:`\\max(1, \\|b\\| + \\|x\\| + \\|s\\|)`; CSDP's and CVXOPT's relative ones; SDPA's
relative gap :math:`|p - d| / \\max(1, (|p| + |d|)/2)` and absolute feasibility errors (kept
by :mod:`sdpembed.backends.interfaces`: cvxpy drops them) are taken as they are. LOWRANK's
``primal_infeasibility`` (rule 2) is relative row by row, to the size of each row's
right-hand side and coefficients at the data's scale. Only a registered backend whose
entry says ``absolute_residuals`` (no built-in one) has its numbers divided by
:math:`\\max(1, |p|)`, the only unit known there.

**Violations priced at their multipliers (rule 5).** By Lagrangian duality every point
:math:`x` of the cone has :math:`f(x) \\ge p^\\star - \\sum_i |y^\\star_i| r_i(x)`, so
:math:`\\sum_i |y_i| r_i` is the objective a point may owe to its infeasibility, each row in
its own unit. A residual relative to the rows' size does not see it where a row has a
small target and a large weight, or where the problem has no strictly feasible point and
its multipliers are large: CLARABEL's ``AlmostSolved`` point on differential seed 100165
violates its rows by 8e-8 of the trace, its residuals pass, and its violations buy
1.0e-3 of its objective at its own multipliers (it lay 2.9e-4 below the optimum's
interval). Every conic backend returns its multipliers with its point (cvxpy's
``dual_value``), so an ``optimal_inaccurate`` point is priced at its own and refused above
:data:`VIOLATION_WORTH` (1e-5) with :class:`~sdpembed.exceptions.SolverFailedError`
carrying it. The numbers behind the limit (docs/tuning.md, "Conic points priced at their
own multipliers"): the convicted points (CLARABEL's ``AlmostSolved`` on differential seeds
100165, 101286, 101352, 101161; CSDP's on 100165, 101161 and its "Success" on 383) are
priced at 4.4e-5 to 1.0e-3 at their own multipliers, the healthy inaccurate ones of two
slices (seeds 101,300-101,339 and 101,600-101,639) at 1.3e-6 or less. An inaccurate
point's multipliers are no more converged than it is: CLARABEL's on 101286 priced its
violations at 4.4e-5, the optimum's (CSDP's) at 1.4e-3, 31 times more, with its objective
2.0e-4 below the optimum; hence a limit 10 times below the differential judge's 1e-4. An
``optimal`` point is not judged by its price (it is reported): a backend that converged
to its tolerances may still hold huge multipliers where the problem has no strictly
feasible point (CLARABEL's ``optimal`` point of seed 383 without face reduction is priced
at 0.95 with its objective 3e-6 from the optimum), and an objective near 0 without a
Gram problem's scale has no floor (a trace-ratio solve at 1e-12 priced at 4e-3): the
price bounds the bought objective only at the optimal multipliers. A price is an
estimate; a repair is a proof: the Gram point moved onto its rows
(:func:`sdpembed.violation_worth.repaired_objective`: PSD and centred, the penalty at its
exact value, shrink distances scaled; not where an equality row must hold) is feasible, so
its objective :math:`p_r \\ge p^\\star` and :math:`p \\ge p^\\star - (p_r - p)`. A priced point
whose ``repaired_worth`` :math:`(p_r - p)` (in the objective's unit) is at most
:data:`VIOLATION_WORTH` is kept. The repair is no gate of its own (it moves the point: the
healthy CLARABEL points of seeds 101315 and 101320 cost 1.1e-5 to repair, priced at 7.9e-7
and 2.3e-8), and it keeps none of the convicted points nor CLARABEL's point on
``moons_dvu(40, 0)``: reported 7e-6 above the optimum, its own Gram matrix with the
penalty at its exact value costs 1.06e-4 more and the repaired point 4.6e-4 more (its
objective is near the optimum by a cancellation the point does not share), so it stays
refused (docs/tuning.md, "Rule 5 after the repair"). LOWRANK prices its hard rows
(equality and shrink distances, the SNR constraint, added rows) at the multipliers of its
certificate: cut by ``max_outer`` with a loose ``feas_tol`` on seed 101319 it stops 0.58 %
below the optimum within its feasibility tolerance, priced at 3.1e-3. Unlike a conic
backend's, LOWRANK's ``optimal`` points are priced too: its multipliers are those of the
certificate that proves its bound, and with ``feas_tol=5e-5, max_outer=4`` on 101319 it
converged to its tolerances (certified gap 5.4e-5) at a point 3.5e-3 below the optimum,
priced at 1.85e-3: the interval [bound, objective] it stated missed the optimum. Such a
point, priced above the limit and above its certified gap :math:`g`, is reported
``optimal_inaccurate`` and judged here (docs/tuning.md, "LOWRANK's optimal points
priced; 1,000 fresh instances"); a price :math:`W \\le g` keeps ``optimal``, the optimum
lying in :math:`[\\ell, p + W] \\subset [p - g, p + g]` (violations of one sign are priced
at about the gap itself). SCS's ``optimal`` is first-order convergence to its ``eps``: its
gap test :math:`|x^TPx + c^Tx + b^Ty| \\le \\epsilon_{abs} + \\epsilon_{rel} \\max(|x^TPx|,
|c^Tx|, |b^Ty|)` states the objective to that accuracy (in the objective's unit:
``extra["stated_accuracy"]``, its entry's ``stated_accuracy``), but its residual tests
bound each row's violation, not what the violations buy summed at its multipliers: on
differential seed 104113 (interval DVU, three added rows) it converged at its default
``eps`` 1e-6 (stated 2.0e-6, gap 5.5e-7) to an objective 1.0e-5 from the optimum, priced at
6.3e-4. An SCS ``optimal`` point priced above :data:`VIOLATION_WORTH`, its stated accuracy
and its gap is reported ``optimal_inaccurate`` and judged here; a loose ``eps`` states a
loose accuracy, so a point priced within it stays ``optimal`` (docs/tuning.md, "SCS's
optimal points priced; 105002 and 103458 explained"). Equality rows (equality distances,
added ``==`` rows) have no repair, so a point violating them is judged by its price alone.
Rows only: a violation of a cone (SDPA's and CSDP's points often meet their rows exactly
and are priced at 0) is left to the backend's residuals.

**A conic iterate cut by a limit is not a result.** An iterate stopped by an iteration or
time limit is neither primal nor dual feasible, so nothing it reports bounds its error:
SCS's cut points 8 % from the optimum had gaps and residuals near 1e-3, CLARABEL's
``AlmostSolved`` points after 6 and 10 iterations lay 0.38 % and 0.51 % from the optimum
with gaps of 2.2e-5 and 1.1e-5, and one after 10 iterations (a quadratic DVU) 1.19 % from
it, feasible, with a gap of 3.6e-5. Recomputing a true bound from the returned dual
variables would need a bound on the primal feasible set to absorb their infeasibility,
which these problems do not have (LOWRANK's certificate is that work, for its own
problems). So a conic solve that used up its iteration or time limit (each backend's
entry's ``limits``: CLARABEL ``max_iter``/``time_limit``, SCS ``max_iters``/
``time_limit_secs``, CSDP ``maxiter``/``time_limit``, SDPA ``maxIteration``, CVXOPT
``maxiters``, MOSEK's iteration and time parameters) without converging is refused with
:class:`~sdpembed.exceptions.SolverLimitError`, which says how far it got and carries the
last iterate's report (``report``: its objective, residuals, and the solver's gap in
``extra["solver_gap"]``; it states no ``gap``). An ``optimal_inaccurate`` solve that was
not cut (a backend stopping at reduced accuracy on its own) keeps rule 4: its solver's gap
is judged but never stated (``solver_gap``), and :data:`NEAR_OPTIMAL` holds where an entry
sets it. A solve that reports none of these numbers cannot be judged and stays
``optimal_inaccurate`` (with its warning).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .backends.table import CONIC_BACKENDS, EntryView
from .exceptions import SolverFailedError, SolverLimitError
from .report import OBJECTIVE_RESOLUTION, _finite, bound_gap, objective_unit

if TYPE_CHECKING:
    from .report import SolveReport

__all__ = ["FAR_FROM_OPTIMAL", "NEAR_OPTIMAL", "BOUND_TOLERANCE", "FEASIBILITY_TOLERANCE",
           "OBJECTIVE_RESOLUTION", "relative_gap", "bound_gap", "reported_objective_scale",
           "distance_from_optimal", "check_result", "gap_in_objective_unit", "check_inaccurate",
           "INFEASIBILITY_PROVERS", "VIOLATION_WORTH", "priced_beyond"]

#: Relative gap, residual or infeasibility above which a solve is an error: its objective
#: may be more than about 1 % from the optimum.
FAR_FROM_OPTIMAL = 1e-2

#: Stricter limits for the ``optimal_inaccurate`` solves of backends whose gap and
#: residuals do not bound the objective's error (first-order SCS, cut off by an
#: iteration limit): each entry's ``near_optimal`` in
#: :data:`sdpembed.backends.CONIC_BACKENDS` (a live view).
NEAR_OPTIMAL: Mapping[str, float] = EntryView(lambda b: b.near_optimal,
                                              lambda v: v is not None)

#: Relative infeasibility (``primal_infeasibility``, LOWRANK's measure) above which a point
#: is no result, unless the solve stated a looser ``feas_tol``.
FEASIBILITY_TOLERANCE = 1e-5

#: How far (relative, as :func:`bound_gap` measures) a reported lower bound may exceed the
#: objective: rounding, and the tolerated infeasibility of a point on equality constraints
#: (``feas_tol``).
BOUND_TOLERANCE = 1e-5


#: How much of the objective (relative, in its unit) an ``optimal_inaccurate`` point's
#: violations may buy, priced at the backend's own multipliers (rule 5,
#: ``violation_worth``), above which it is no result.
VIOLATION_WORTH = 1e-5


def priced_beyond(worth: float, allowances: Mapping[str, float | None]) -> str | None:
    """Rule 5's demotion of a point its backend called ``optimal``, one rule for LOWRANK
    (:mod:`sdpembed.lowrank.backend`) and the conic backends that state an accuracy
    (:func:`sdpembed.solvers.solve`, SCS): where its violations, priced at its own
    multipliers (``worth``, relative in the objective's unit), exceed
    :data:`VIOLATION_WORTH` and every allowance its backend states (``allowances``: a
    phrase with ``{}`` where the value goes, to the value or ``None`` where not stated:
    LOWRANK's certified gap; SCS's stated accuracy and its own gap), the clause saying so
    (the point is then ``optimal_inaccurate``, and this rule judges it); ``None`` where the
    price lies within them (the point stays ``optimal``). A price within a gap the backend
    states says the optimum lies within that gap at its multipliers; within its stated
    accuracy, that it bought no more than its tolerances allowed."""
    stated = {k: float(v) for k, v in allowances.items() if v is not None}
    if worth <= max([VIOLATION_WORTH, *stated.values()]):
        return None
    said = [k.format(f"{v:.3g}") for k, v in stated.items()] + [f"the limit {VIOLATION_WORTH:g}"]
    above = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]
    return (f"its constraint violations, priced at its own multipliers, can buy {worth:.3g} "
            f"of its objective (relative), above {above}")


#: The backends that prove infeasibility (an interior-point method's certificate), named
#: in the messages of solves that may be infeasible.
INFEASIBILITY_PROVERS = "CLARABEL, CSDP, SDPA or MOSEK"

#: Backends that report a gap whenever they know anything about their distance from the
#: optimum: an inaccurate solve of theirs without one is not a result.
_GAP_OR_NOTHING = frozenset({"LOWRANK"})


def _absolute(solver: str) -> bool:
    """Whether the backend's reported gap and residuals are absolute without their terms'
    size (divided by max(1, |p|) here, the only unit known): its entry's
    ``absolute_residuals`` (no built-in backend)."""
    entry = CONIC_BACKENDS.get(str(solver).upper())
    return entry is not None and entry.absolute_residuals


def _get(stats, key):
    if stats is None:
        return None
    return _finite(stats.get(key) if isinstance(stats, Mapping) else getattr(stats, key, None))


def gap_in_objective_unit(gap: float, objective: float | None, terms: float) -> float | None:
    """An absolute duality gap made relative to the objective :math:`p` as posed, with the
    floor :data:`OBJECTIVE_RESOLUTION` times ``terms``, the size of the objective's terms at
    the point (SCS's :math:`\\max(|x^TPx|, |c^Tx|, |b^Ty|)`): the unit of
    :func:`bound_gap` ("The objective's unit"). ``None`` without a finite objective."""
    p, g = _finite(objective), _finite(gap)
    if p is None or g is None:
        return None
    unit = objective_unit(p, terms)
    return abs(g) / unit if unit > 0 else (0.0 if g == 0 else float("inf"))


def _reported(stats, key):
    """``key`` of a backend's ``stats``, or of a report's ``extra`` where the report has no
    such field (finite, else ``None``)."""
    value = _get(stats, key)
    if value is None and stats is not None and not isinstance(stats, Mapping):
        value = _get(getattr(stats, "extra", None), key)
    return value


def _dual_effect(stats):
    """The dual residual's effect on the objective, relative to it (SCS: ``|r'x|``,
    :func:`gap_in_objective_unit`), where the backend reports it."""
    return _reported(stats, "dual_residual_effect")


def _solver_gap(stats):
    """The gap a solve's judgement reads: its reported ``gap``, else the solver's own number
    of an iterate stopped before converging (``solver_gap``: no claim, see the module)."""
    gap = _get(stats, "gap")
    return gap if gap is not None else _reported(stats, "solver_gap")


def _scale(solver: str, objective) -> float:
    if not _absolute(solver):
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


def reported_objective_scale(stats: Mapping[str, Any] | SolveReport | None) -> float | None:
    """The size of the objective's terms at a solve's point, where the backend reports it
    (``objective_scale`` in ``stats`` or in a report's ``extra``; LOWRANK's
    :func:`~sdpembed.lowrank.penalty.objective_scale`), else ``None``."""
    return _reported(stats, "objective_scale")


def distance_from_optimal(solver: str, objective: float | None,
                          stats: Mapping[str, Any] | SolveReport) -> float | None:
    """The largest of the relative gap, relative residuals and relative infeasibility, the
    gap taken from the reported bound where there is one (``None`` if none is known)."""
    scale = _scale(solver, objective)
    signed = bound_gap(objective, _get(stats, "bound"), reported_objective_scale(stats))
    keys = ("primal_residual", "dual_residual", "primal_infeasibility")
    values = [abs(v) / scale for v in (_get(stats, k) for k in keys) if v is not None]
    effect = _dual_effect(stats)
    if effect is not None:
        values.append(abs(effect))
    solver_gap = _solver_gap(stats)
    if signed is None and solver_gap is not None:
        values.append(abs(solver_gap) / scale)
    if signed is not None:
        values.append(abs(signed))
    return max(values) if values else None


def _fail(message: str, objective, stats, point,
          violation_worth: float | None = None) -> SolverFailedError:
    return SolverFailedError(message, objective=objective, bound=_get(stats, "bound"),
                             gap=_solver_gap(stats), point=point,
                             violation_worth=violation_worth)


def _said(stats, key):
    """The first set (truthy) ``key`` of a backend's ``stats`` or a report's ``extra``, as
    reported (flags and messages: :func:`_reported` keeps finite numbers only)."""
    for where in (stats, getattr(stats, "extra", None)):
        if isinstance(where, Mapping) and where.get(key):
            return where[key]
    return None


def _cut(stats) -> bool:
    """Whether a solve's statistics (or a report's ``extra``) say that it stopped at its
    iteration or time limit (``stopped_by_limit``)."""
    return bool(_said(stats, "stopped_by_limit"))


def _limit_error(name: str, on: str, status: str, objective, stats, point) -> SolverLimitError:
    """The refusal of a conic iterate cut by a limit: how far it got, what to raise."""
    entry = CONIC_BACKENDS.get(name)
    raise_what = (entry.limit_options if entry is not None and entry.limit_options
                  else "its iteration or time limit")
    p, gap = _get({"p": objective}, "p"), _solver_gap(stats)
    parts = [f"objective {p:.6g}" if p is not None else "no finite objective",
             f"the solver's relative gap {abs(gap):.3g}" if gap is not None else None] + [
        f"relative {label} {abs(v):.3g}"
        for label, v in (("primal residual", _get(stats, "primal_residual")),
                         ("dual residual", _get(stats, "dual_residual"))) if v is not None]
    said = _reported(stats, "iterations")
    message = str(_said(stats, "message") or "")
    return SolverLimitError(
        f"{name}{on} stopped at its iteration or time limit before converging ({status}"
        + (f", {message}" if message else "") + (f", {said:.0f} iterations" if said else "")
        + f"): its last iterate has {', '.join(x for x in parts if x)}. A cut iterate is "
        "neither primal nor dual feasible and nothing it reports bounds its distance from the "
        f"optimum, so it is not a result. Raise the limit ({raise_what}) and solve again, or "
        "use another backend; the last iterate's report is on this error (.report).",
        report=None if isinstance(stats, Mapping) else stats, objective=objective,
        gap=gap, point=point)


def check_result(solver: str, status: str, objective: float | None,
                 stats: Mapping[str, Any] | SolveReport, *, what: str = "",
                 point: Any = None) -> None:
    """Raise :class:`SolverFailedError` unless an ``optimal`` or ``optimal_inaccurate`` solve
    is a result by the rule of this module.

    A solve stopped at its iteration or time limit (``user_limit``, or
    ``optimal_inaccurate`` with ``stopped_by_limit`` in ``stats`` or a report's ``extra``)
    raises :class:`~sdpembed.exceptions.SolverLimitError` (carrying ``stats`` as its
    ``report`` where it is one). Does nothing for other statuses (they are judged by the
    caller). The error carries ``objective``, ``bound``, ``gap`` and ``point``.

    Parameters
    ----------
    solver, objective, stats
        See :func:`relative_gap`; ``stats`` may also carry ``bound`` (a proven lower
        bound on the optimum), ``primal_infeasibility``, ``certified_gap`` and
        ``stop_advice`` (what to change, by why the backend stopped: the refusals say it
        in place of "raise the time or iteration limit").
    status : str
        The solve's status.
    what : str, optional
        What was solved, for the message (e.g. the formulation's method).
    point : optional
        The point returned (carried by the error).
    """
    name = str(solver).upper()
    on = f" on {what}" if what else ""
    if status == "user_limit" or (status == "optimal_inaccurate" and _cut(stats)):
        raise _limit_error(name, on, status, objective, stats, point)
    if status not in ("optimal", "optimal_inaccurate"):
        return
    p = _get({"p": objective}, "p")
    if p is None:
        raise _fail(f"{name}{on} reported status {status!r} without a finite objective "
                    f"({objective!r}): there is no result. Try another backend.",
                    objective, stats, point)
    infeasibility = _get(stats, "primal_infeasibility")
    options = getattr(stats, "options", None)
    feas_tol = max(FEASIBILITY_TOLERANCE, _get(options, "feas_tol") or 0.0)
    # a backend's note on why such a point may be all there is (LOWRANK, equality distances)
    rigid = f" {note}" if (note := _said(stats, "rigidity_note")) else ""
    # a backend's own advice, by why it stopped (LOWRANK: the limit that stopped it, or that
    # no limit is what stopped it); else the limits' advice
    stop = _said(stats, "stop_advice")
    limits = (f" {stop}" if stop else " Raise the time or iteration limit (LOWRANK "
              "time_limit/max_outer) or use an interior-point backend.")
    if infeasibility is not None and infeasibility > feas_tol:
        maybe = (" The problem may be infeasible (the constraints may not hold together): an "
                 f"interior-point backend ({INFEASIBILITY_PROVERS}) proves infeasibility; "
                 + (f"otherwise: {stop}" if stop else "otherwise raise the time or iteration "
                    "limit.")
                 if infeasibility > FAR_FROM_OPTIMAL else
                 (f" {stop} A looser feas_tol also does, if that violation is acceptable."
                  if stop else
                  " Raise the time or iteration limit (LOWRANK time_limit/max_outer), or state "
                  "a looser feas_tol if that violation is acceptable."))
        raise _fail(
            f"{name}{on} stopped ({status}) at a point that violates the constraints by "
            f"{infeasibility:.3g} (relative), above the feasibility tolerance {feas_tol:g}: it "
            "is not a solution, and its objective bounds nothing." + maybe + rigid,
            objective, stats, point)
    bought = _reported(stats, "violation_worth")
    repaired = _reported(stats, "repaired_worth")
    stated = _reported(stats, "stated_accuracy")
    if (status == "optimal_inaccurate" and bought is not None and bought > VIOLATION_WORTH
            and not (repaired is not None and repaired <= VIOLATION_WORTH)):
        raise _fail(
            (f"{name}{on} converged to its tolerances, which state its objective to within "
             f"{stated:.3g} (relative), and is reported {status}: its point's"
             if stated is not None else f"{name}{on} stopped ({status}) at a point whose")
            + " constraint violations, priced at "
            f"its own multipliers, can buy {bought:.3g} of its objective (relative), above "
            f"{VIOLATION_WORTH:g}: the objective {p:.6g} may owe that much to the violations, "
            "so the point is not a solution (its residuals may look small: a row with a small "
            "target and a large weight, or large multipliers where the problem has no strictly "
            "feasible point)"
            + (f"; moved onto its rows it costs {repaired:.3g} more (relative), so nothing "
               "proves it near the optimum" if repaired is not None else
               "; no repair of it proves it (none is made where an equality row must hold), "
               "so its price alone judges it")
            + ". Tighten the backend's tolerances or "
            + (f"{advice}." if (advice := _said(stats, "advice")) else "try another backend.")
            + rigid, objective, stats, point, violation_worth=bought)
    bound = _get(stats, "bound")
    signed = bound_gap(p, bound, reported_objective_scale(stats))
    if signed is not None and signed < -BOUND_TOLERANCE:
        raise _fail(
            f"{name}{on} returned objective {p:.6g} below its own certified lower bound "
            f"{bound:.6g} (signed relative gap {signed:.3g}; tolerance {BOUND_TOLERANCE:g}): "
            "the point violates the constraints "
            + (f"(relative infeasibility {infeasibility:.3g}) " if infeasibility else "")
            + "by more than its objective can absorb, so it is not a solution. "
            + (f"Tighten feas_tol or use an interior-point backend ({INFEASIBILITY_PROVERS}); "
               f"the problem may be infeasible. {stop}" if stop else
               "Tighten feas_tol, raise the time or iteration limit, or use an interior-point "
               f"backend ({INFEASIBILITY_PROVERS}); the problem may be infeasible.") + rigid,
            objective, stats, point)
    if signed is not None and signed > FAR_FROM_OPTIMAL:
        raise _fail(
            f"{name}{on} stopped ({status}) with objective {p:.6g} and certified lower bound "
            f"{bound:.6g}: signed relative gap {signed:.3g}, above {FAR_FROM_OPTIMAL:g}. The "
            "bound is proven and the optimum lies between the two: the point may be nearer "
            "the optimum than its bound, but nothing proves it, so by the certified gap it is "
            "far from optimal and not a solution." + limits, objective, stats, point)
    if status != "optimal_inaccurate":
        return
    limit = NEAR_OPTIMAL.get(name, FAR_FROM_OPTIMAL)
    distance = distance_from_optimal(name, p, stats)
    if name in _GAP_OR_NOTHING and signed is None and _solver_gap(stats) is None:
        # a relative infeasibility alone (0 at a feasible point) says nothing of optimality
        raise _fail(
            f"{name}{on} stopped (optimal_inaccurate) without a certificate or an estimate of "
            "its gap: nothing says how far its point is from the optimum, so it is not a "
            "solution." + limits, objective, stats, point)
    if distance is None or distance <= limit:
        return
    gap = _solver_gap(stats)
    scale = _scale(name, p)
    gap = None if gap is None else abs(gap) / scale
    parts = [f"relative duality gap {gap:.3g}" if gap is not None and signed is None
             else None] + [
        f"relative {label} {abs(v) / scale:.3g}"
        for label, v in (("primal residual", _get(stats, "primal_residual")),
                         ("dual residual", _get(stats, "dual_residual")),
                         ("primal infeasibility", infeasibility)) if v is not None] + [
        f"dual residual's effect on the objective {_dual_effect(stats):.3g} (relative)"
        if _dual_effect(stats) is not None else None]
    raise _fail(
        f"{name}{on} stopped before converging (optimal_inaccurate) with "
        f"{', '.join(x for x in parts if x)}; the largest is above {limit:g}: the point it "
        "returned may be far from optimal and is not a solution. "
        + (stop or "Raise the iteration or time limit (SCS max_iters, CLARABEL "
           "max_iter/time_limit, CSDP maxiter, SDPA maxIteration, LOWRANK time_limit/max_outer) "
           "or use an interior-point backend."), objective, stats, point)


def check_inaccurate(solver: str, status: str, objective: float | None,
                     stats: Mapping[str, Any] | SolveReport, *, what: str = "") -> None:
    """:func:`check_result` (kept under its former name)."""
    check_result(solver, status, objective, stats, what=what)

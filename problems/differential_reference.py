"""Which reference's objective the differential judge takes as the optimum.

:func:`problems.differential._optimum` delegates here. The candidates are the feasible
results (violation at most ``feas``) of the references (CLARABEL and the second one). In
order of preference:

1. an ``optimal`` one before an ``optimal_inaccurate`` one (CLARABEL's ``AlmostSolved``
   can be 0.7 % off where CSDP solves);
2. of one status, one that no witness's feasible objective contradicts: every instance
   is a minimisation, so a feasible point (violation at most ``feas``) whose objective
   lies more than ``agree`` (relative, with the instance's floor ``unit``) below a
   reference's objective proves that objective is not the optimum. The witnesses are the
   instance's subjects (LOWRANK, the cut subjects, ``DVU.fit``). This only chooses
   between references that return a result; where every candidate is contradicted it
   changes nothing (the counters then say so). Differential seed 106844 (truncated):
   LOWRANK's point, feasible to 2.6e-16, has objective 0.1442623; CLARABEL's inaccurate
   0.1442987 lies 2.5e-4 above it and CSDP's inaccurate 0.1442610 below it, and the judge
   took CLARABEL's for a gap a hair smaller (1.47e-6 against 1.53e-6);
3. of those, the point nearer optimality by the larger of its violation and its own
   relative gap: an inaccurate point's small violation can buy an objective below the
   optimum (seed 50024), and on a problem without a strictly feasible point a violation
   of 2e-10 bought CSDP's point an objective 0.1 % below the optimum, which its real gap
   of -9e-5 (primal below dual objective) showed (seed 383).

A witness's own small violation may buy an objective below the optimum as well; it is
held to the judge's ``feas`` here, and its violations are priced at the chosen optimum's
multipliers by the counters (``wrong_point``), so a witness that bought its objective is
still counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["optimum", "contradicted"]


def contradicted(o: dict[str, Any], witnesses: Iterable[dict[str, Any] | None], *,
                 feas: float, agree: float, unit: float) -> bool:
    """Whether a feasible result among ``witnesses`` has an objective more than ``agree``
    (relative to the larger magnitude and ``unit``) below reference ``o``'s."""
    p = o["objective"]
    for w in witnesses:
        if w is None or w is o or w.get("kind") != "result" or w.get("objective") is None:
            continue
        if w["violation"] <= feas and p - w["objective"] > agree * max(
                abs(p), abs(w["objective"]), unit):
            return True
    return False


def optimum(refs: Iterable[dict[str, Any] | None], witnesses: Iterable[dict[str, Any] | None]
            = (), *, feas: float, agree: float, unit: float) -> dict[str, Any] | None:
    """The reference outcome whose objective is the optimum, by the order of the module
    (``None``: no reference gives a feasible result)."""
    witnesses = [w for w in witnesses if w is not None]
    feasible = [o for o in refs if o is not None and o["kind"] == "result"
                and o["violation"] <= feas]
    feasible.sort(key=lambda o: (
        o["status"] != "optimal",
        contradicted(o, witnesses, feas=feas, agree=agree, unit=unit),
        max(o["violation"], abs(o.get("gap") or o.get("solver_gap") or 0.0))))
    return feasible[0] if feasible else None

"""Every row's violation weighed by what it can buy, for the differential test's judge.

The judge's first measure (:data:`problems.differential.FEAS`) takes a point's largest
constraint violation relative to max(1, tr G). It cannot see a violation on a row with
a small target and a large weight: on 100165 CLARABEL's rows with targets of 4.2e-3 and
weights up to 2,700 were off by 5.6e-6 (8.2e-8 of the trace), and its reported objective
lay 0.0155 below that of its own Gram matrix (docs/tuning.md, "100165 in exact
arithmetic"); priced as below, its violations buy 1.0e-3 of its objective.

What a violation is worth is what it can lower the objective by. For a convex program
:math:`\\min f(x)` s.t. :math:`g_i(x) \\le 0` (an equality row a pair of them) with
optimal multipliers :math:`y^\\star`, every point :math:`x` of the cone satisfies

.. math:: f(x) \\ge p^\\star - \\sum_i |y^\\star_i| \\, r_i(x),

:math:`r_i(x)` its violation of row :math:`i` (Lagrangian duality). So
:math:`W(x) = \\sum_i |y_i| r_i(x)` is the objective the point's violations can buy, each
row in its own unit (its multiplier is the price of one unit of it), and a point whose
:math:`W` exceeds ``FEAS`` of the objective (relative, as every measure of the judge) may
owe its objective to its infeasibility. :func:`weigh` states it as ``worth`` on each
outcome, with the multipliers of the references (their cvxpy ``dual_value`` s: the first
reference in the order given that has them; LOWRANK writes none). A row without a
multiplier (a reference that failed, a row it holds inactive) is left to the first
measure, which still sees every gross violation. The judge counts a subject's (LOWRANK's)
convicted result a ``wrong_point`` and a reference's ``reference_bought``: CLARABEL's
``AlmostSolved`` points and CSDP's on problems without a strictly feasible point are
convicted now and then (docs/tuning.md, "The judge per row; a fresh slice"), a finding
about what ``solve`` returns for them, not about the subject.

Why not each row's residual relative to its target, or to the size of its terms
:math:`\\sum_j |a_{ij} x_j|`: the first has no unit on rows whose target is 0 (a fixed
entry ``G[i, j] == 0``, the centring rows, the SNR row at its bound), where a solver's
residual of 1e-9 would be convicted; the second does not see 100165 (a distance row's
terms :math:`G_{ii} + G_{jj} + 2|G_{ij}|` are the points' squared norms, tr G / n = 1.35
there, not its target 4.2e-3). Neither says how much objective the violation moves,
which is what makes a point wrong.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["RowState", "convicted", "jsonable", "snapshot", "weigh", "worth"]

#: an outcome's key holding its :class:`RowState` (written as ``null`` by :func:`jsonable`)
ROWS = "rows"


class RowState:
    """A point's per-row violations and, where its solver wrote them, its multipliers:
    one array per constraint of the cvxpy problem (``None`` where cvxpy gives none)."""

    __slots__ = ("violations", "duals")

    def __init__(self, violations: list, duals: list):
        self.violations = violations
        self.duals = duals

    @property
    def has_duals(self) -> bool:
        """Whether it prices anything: some multiplier, or no row to price at all."""
        return not self.duals or any(d is not None for d in self.duals)


def _array(get, errors: tuple = (ValueError, TypeError, AttributeError), *,
           finite: bool = True) -> np.ndarray | None:
    try:
        value = get()
    except errors:
        return None
    if value is None:
        return None
    a = np.asarray(value, dtype=float)
    return a if not finite or np.all(np.isfinite(a)) else None


def snapshot(problem) -> RowState:
    """The per-row violations (as cvxpy gives them, non-finite ones included: the judge's
    first measure reads them too) and multipliers of the point now written into the cvxpy
    ``problem``'s variables (call it right after the solve that wrote them)."""
    cons = problem.constraints
    return RowState([_array(c.violation, (ValueError, TypeError), finite=False) for c in cons],
                    [_array(lambda c=c: c.dual_value) for c in cons])


def worth(point: RowState, prices: RowState) -> float | None:
    """:math:`\\sum_i |y_i| r_i`: ``point``'s violations priced by ``prices``' multipliers
    (constraint by constraint, where both exist with the same shape); ``None`` where
    ``prices`` has rows but no multiplier (0 where the problem has no row)."""
    if not prices.has_duals:
        return None
    total = 0.0
    for r, y in zip(point.violations, prices.duals):
        if r is None or y is None or r.shape != y.shape or not np.all(np.isfinite(r)):
            continue
        total += float(np.sum(np.abs(y) * np.maximum(r, 0.0)))
    return total


def weigh(outcomes, references, unit: float) -> None:
    """Set ``worth`` on each result of ``outcomes`` and ``references`` that has none yet:
    :func:`worth` of its point at the multipliers of the first of ``references``
    (results, in order) that has them, relative to ``max(|objective|, unit)`` (``unit``:
    the instance's floor, :func:`problems.differential._unit`); ``None`` where no
    reference has multipliers."""
    subjects = [o for o in list(outcomes) + list(references) if o is not None]
    prices = next((o[ROWS] for o in references if o is not None and o.get("kind") == "result"
                   and isinstance(o.get(ROWS), RowState) and o[ROWS].has_duals), None)
    for o in subjects:
        state = o.get(ROWS)
        if o.get("kind") == "result" and isinstance(state, RowState) and "worth" not in o:
            w = None if prices is None else worth(state, prices)
            o["worth"] = None if w is None else w / max(abs(o["objective"]), unit, 1e-300)


def jsonable(x):
    """``json.dumps``'s ``default``: a :class:`RowState` as ``null``, else its string."""
    return None if isinstance(x, RowState) else str(x)


def convicted(o: dict[str, Any], feas: float) -> bool:
    """Whether result ``o``'s violations can buy more than ``feas`` of its objective: its
    ``worth``, or where smaller its ``worth_validated`` (the same quantity bounded at
    multipliers checked dual feasible, :func:`problems.differential._validated_worth`)."""
    w = o.get("worth")
    if w is not None and o.get("worth_validated") is not None:
        w = min(w, o["worth_validated"])
    return w is not None and w > feas

r"""An equality solve that cannot certify, told early: the stalled-violation rule.

With ``distances="equality"`` on a graph that is (numerically) universally rigid, e.g.
a k-NN graph of exact low-dimensional data (docs/tuning.md, "Equality MVU on the
manifold rows: the remaining degeneracy is universal rigidity"), the data itself is the
only feasible point: there is no strictly feasible point, the dual optimum is not
attained, and the augmented Lagrangian's iterates approach the constraints ever more
slowly while the cheap gap :math:`(p + \varphi^*(y))/|p|` stays put. More time does not
help; a solve so stopped is refused with the note of
:func:`~sdpembed.formulations.gram_problem.rigidity_note` (``distances="shrink"`` is
strictly feasible and certifies).

The rule (:meth:`StalledEquality.observe`, after each outer iteration): equality mode,
the penalty at its cap, the factor's rank unchanged for ``WINDOW`` outer iterations, and
over those iterations

* the violation (the loop's ``infeas``) above :data:`~sdpembed.solve_status.FEASIBILITY_TOLERANCE`
  fell by less than half (``now > INFEAS_SHARE * then``), and
* the cheap gap (the smaller of it and the refined one, where made) did not halve and
  stays above ``GAP_FLOOR * tol``.

Where the same holds over the last ``WINDOW_PROVED`` outer iterations and maximal cliques of
the graph have equality targets that fix a Gram block of rank below the clique's size less
one (``proof``: the loop gives
:meth:`~sdpembed.lowrank.equality_barrier.EqualityOptimum.stall_proof`, positive only
beyond the equality barrier's early size; asked once, when the shorter window first
stalls), the problem is proven to have no strictly feasible point and the rule fires on
the shorter window. Its last entry then carries the clique count (:data:`PROVEN`,
:func:`proven_stall`): the backend restores the point onto the clique face but does not
solve on that face (the face solve stalls too and ends in the same refusal).

It reads outer iterations only, never the clock. Measurements: docs/tuning.md,
"Equality MVU on a rigid graph: refused early", "Equality MVU refusals: a stall window
of 3 where cliques prove no interior" and "Equality MVU refusals: no face solve after a
proven stall".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..exceptions import SolverFailedError
from ..formulations.gram_problem import rigidity_note
from ..solve_status import FEASIBILITY_TOLERANCE

__all__ = ["StalledEquality", "STOP_REASON", "PROVEN", "proven_stall", "refuse_stalled"]

#: ``LowRankResult.stop_reason`` of a solve the rule ended
STOP_REASON = "stalled_equality"
#: the key of the last outer iteration's entry where the rule fired on the shorter window
#: (its value: the cliques that prove no strictly feasible point)
PROVEN = "stalled_equality_cliques"

#: outer iterations the stall must last (at one rank, the penalty at its cap)
WINDOW = 6
#: the same where the graph's cliques prove that no strictly feasible point exists
WINDOW_PROVED = 3
#: the violation counts as stalled while above this share of its value ``WINDOW`` ago
INFEAS_SHARE = 0.5
#: the cheap gap counts as not closing while above this share of its value ``WINDOW``
#: ago and above ``GAP_FLOOR * tol``
GAP_SHARE = 0.5
GAP_FLOOR = 10.0


class StalledEquality:
    """The stalled-violation rule of an outer loop (module docstring); inert unless
    ``mode == "equality"``. ``proof``: how many cliques prove that the problem has no
    strictly feasible point (called at most once; ``None``: never proven)."""

    def __init__(self, mode: str, tol: float, feas_tol: float,
                 proof: Callable[[], int] | None = None):
        self.on = mode == "equality"
        self.tol = tol
        self.floor = max(FEASIBILITY_TOLERANCE, feas_tol)
        self.rows: list[tuple[int, float, float, bool]] = []   # (rank, infeas, gap, at cap)
        self.proof, self.cliques = proof, None   # the proof's count, once asked
        self.window = WINDOW   # the window the rule fired on

    def _stalled(self, window: int) -> bool:
        """Whether the last ``window`` outer iterations stalled (module docstring)."""
        if len(self.rows) <= window:
            return False
        rows = self.rows[-window - 1:]
        rank0, infeas0, gap0, _ = rows[0]
        rank1, infeas1, gap1, _ = rows[-1]
        return (all(r == rank0 and cap for r, _, _, cap in rows[1:])
                and infeas1 > self.floor and infeas1 > INFEAS_SHARE * infeas0
                and gap1 > GAP_FLOOR * self.tol and gap1 > GAP_SHARE * gap0)

    def _proven(self) -> bool:
        """Whether cliques prove that no strictly feasible point exists (asked once)."""
        if self.cliques is None:
            self.cliques = self.proof() if self.proof is not None else 0
        return self.cliques > 0

    def observe(self, entry: dict, infeas: float, at_cap: bool) -> bool:
        """Record outer iteration ``entry`` (its violation ``infeas``; ``at_cap``: the
        penalty cannot be raised further); whether the rule now fires (then
        ``entry[STOP_REASON]`` says what it saw)."""
        if not self.on:
            return False
        gap = min(entry["cheap_gap"], entry.get("refined_cheap_gap", float("inf")))
        self.rows.append((entry["rank"], float(infeas), float(gap), at_cap))
        if self._stalled(WINDOW):
            self.window = WINDOW
        elif self._stalled(WINDOW_PROVED) and self._proven():
            self.window = WINDOW_PROVED
            entry[PROVEN] = self.cliques   # read by the backend: no face solve after it
        else:
            return False
        entry[STOP_REASON] = self.describe()   # read by the backend's refusal
        return True

    def describe(self) -> str:
        """What the rule saw, for the refusal's message."""
        window = self.rows[-self.window - 1:]
        (_, i0, g0, _), (_, i1, g1, _) = window[0], window[-1]
        return (f"over the last {self.window} outer iterations (at rank {window[-1][0]}, "
                f"the penalty at its cap) the violation fell only from {i0:.2g} to {i1:.2g} "
                f"and the cheap gap stayed at {g1:.2g} (from {g0:.2g})")


def proven_stall(result: Any) -> int:
    """How many cliques proved that ``result``'s problem has no strictly feasible point
    where its loop stopped on the rule's shorter window (:data:`PROVEN`); 0 otherwise."""
    if result.stop_reason != STOP_REASON or not result.history:
        return 0
    return int(result.history[-1].get(PROVEN, 0))


def refuse_stalled(gp: Any, result: Any, opts: Any, formulation: Any, cliques: int = 0) -> None:
    """Raise :class:`SolverFailedError` where the outer loop stopped on the stalled-violation
    rule and the point reported is still off the equality constraints: no strictly
    feasible point, and more time does not make one. ``cliques``: how many cliques' targets
    fix a Gram block of rank below the clique's size less one
    (:func:`~sdpembed.lowrank.face.clique_null_vectors`), a proof of that; the message says
    so where there is one."""
    if result.stop_reason != STOP_REASON or result.status == "optimal" \
            or not result.infeasibility > max(FEASIBILITY_TOLERANCE, opts.feas_tol):
        return
    seen = next((e[STOP_REASON] for e in reversed(result.history) if STOP_REASON in e), "")
    why = (f"the equality distances leave no strictly feasible point ({cliques} clique"
           f"{'s' if cliques != 1 else ''} of the graph ha{'ve' if cliques != 1 else 's'} "
           "targets that fix a Gram block of rank below the clique's size less one, so "
           "every feasible Gram matrix has null vectors besides the constant one)" if cliques else
           "the equality distances evidently leave no strictly feasible point")
    raise SolverFailedError(
        f"LOWRANK on {formulation.method} ({formulation.variant or ''}) stopped after "
        f"{result.iterations} outer iterations: {seen}. The point violates the constraints "
        f"by {result.infeasibility:.2g} (relative), above the feasibility tolerance, so it is "
        f"not a solution, and {why}: more time (time_limit) does not make one."
        + rigidity_note(gp.distances),
        objective=float(result.objective), bound=result.bound, gap=result.certified_gap,
        point=result.factor)

"""An equality point moved onto its distance rows must stay on its added rows.

Differential seed 106324 (equality MVU, 29 points; added rows ``diag(11,2)``,
``trace_le(15,23)``, ``trace_ge(1,8)``): the outer loop's restoration
(``_onto_constraints``) moved an iterate onto its distance rows to 3.8e-9 and broke an
added row by 1.33e-5; the loop certified that point ``optimal`` on the distance rows'
residual alone, and rule 2 then refused it (``SolverFailedError``, infeasibility 1.33e-5
above 1e-5). The restoration now counts the added rows.
"""

from __future__ import annotations

import warnings

import pytest

from problems.differential import make_instance
from sdpembed import solve
from sdpembed.lowrank import outer
from sdpembed.solvers import available_solvers

needs_clarabel = pytest.mark.skipif("CLARABEL" not in available_solvers(),
                                    reason="CLARABEL not installed")


@needs_clarabel
def test_106324_certified_point_is_feasible_and_its_interval_holds_the_optimum():
    f, _ = make_instance(106324).build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = solve(f, "LOWRANK")
        optimum = solve(f, "CLARABEL").objective          # -30.6739188 ('optimal')
    assert rep.status == "optimal"
    assert rep.primal_infeasibility <= rep.options["feas_tol"]
    slack = 1e-7 * abs(optimum)
    assert rep.bound - slack <= optimum <= rep.objective + slack
    assert abs(rep.objective - optimum) <= 1e-4 * abs(optimum)


def _distance_rows_only(self, W, quad, feas_target):
    """The restoration before 573051e: the distance rows' residual alone is stated, the
    added rows the move may break are not measured."""
    W_r, r_r = outer.restore_feasibility(self.space, self.pen, W, tol=0.1 * feas_target,
                                         deadline=self.deadline)
    quad_r, D_r, h_r = self.alm.objective_parts(W_r)
    if r_r <= feas_target and self.space.snr_violation(h_r, quad) <= self.opts.feas_tol:
        return W_r, quad_r + self.pen.objective(D_r), r_r
    return None


@needs_clarabel
def test_a_best_point_recorded_from_part_of_its_rows_is_never_certified(monkeypatch):
    """106324 with the old restoration put back: it records a best point whose stated
    infeasibility (the distance rows', 3.8e-9) understates its real one (an added row off
    by 1.33e-5). ``attempt_certificate`` re-measures the best point in full and drops it:
    the solve goes on to a point that is feasible, and its interval holds the optimum.
    Without the re-check the point is certified and then refused (``SolverFailedError``)."""
    dropped = []
    attempt = outer._OuterLoop._best_understated

    def spy(self, entry):
        out = attempt(self, entry)
        if out:
            dropped.append(entry["best_dropped"])
        return out

    monkeypatch.setattr(outer._OuterLoop, "_onto_constraints", _distance_rows_only)
    monkeypatch.setattr(outer._OuterLoop, "_best_understated", spy)
    f, _ = make_instance(106324).build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = solve(f, "LOWRANK")
        optimum = solve(f, "CLARABEL").objective
    assert dropped and all(d["infeasibility"] > rep.options["feas_tol"] >= d["stated"]
                           for d in dropped)
    assert rep.status == "optimal"
    assert rep.primal_infeasibility <= rep.options["feas_tol"]
    slack = 1e-7 * abs(optimum)
    assert rep.bound - slack <= optimum <= rep.objective + slack

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

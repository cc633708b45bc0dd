"""The cold barrier once the subproblems have done its estimated work, whatever the
refinement gate (docs/tuning.md, "The last rows over 10 s at n <= 600")."""

from __future__ import annotations

import numpy as np

from sdpembed.formulations.dvu import dvu
from sdpembed.graphs import knn_graph
from sdpembed.lowrank.backend import _formulation_problem
from sdpembed.lowrank.dual_barrier import DualOptimum, barrier_work
from sdpembed.lowrank.penalty import DistancePenalty
from sdpembed.lowrank.space import FactorSpace
from sdpembed.solvers import solve


def _swiss120(seed: int):
    from sklearn.datasets import make_swiss_roll
    X, t = make_swiss_roll(120, random_state=seed)
    y = np.where(np.random.default_rng(seed).random(120) < 0.2,
                 (t > np.median(t)).astype(int), -1)
    return dvu(knn_graph(X, n_neighbors=6, n_random=0), y)


def test_paid_for_only_where_the_cold_run_fits_has_not_run_and_is_paid():
    gp, _, _ = _formulation_problem(_swiss120(2))
    space, pen = FactorSpace(gp), DistancePenalty(gp)
    dual = DualOptimum(space, pen, 1e-4)
    cost = barrier_work(space.dim, pen.t.size)
    assert dual.fits and not dual.paid_for(0.5 * cost) and dual.paid_for(cost)
    # early() without a pass of the gate: nothing unless paid
    assert dual.early(np.inf, 0.5 * cost, paid=True) is None and dual.result is None
    assert dual.early(np.inf, cost) is None and dual.result is None
    got = dual.early(np.inf, cost, paid=True)
    assert got is not None and dual.result.status == "converged"
    assert not dual.paid_for(10 * cost)          # once


def test_swiss_roll_seed_2_certifies_at_the_barrier_point_before_the_gate():
    # the 120-point Swiss roll, seed 2: its cheap gap stays at 1e-2-1 for 21 outer
    # iterations (cutting-plane subproblems at their cap), so the refinement gate and
    # with it the barrier came only at outer 27 on main (5e6fa5a; 13-15 CPU s). The
    # barrier (19 steps, ~0.2 s) is paid for after the first subproblem; its point and
    # multipliers prove tol at once. At this max_outer main stops uncertified
    rep = solve(_swiss120(2), solver="LOWRANK", tol=1e-4, max_outer=3)
    assert rep.status == "optimal" and rep.certified_gap <= 1e-4
    assert "barrier multipliers" in rep.extra["certificate"]
    first = rep.extra["history"][0]
    assert "refined_cheap_gap" not in first and first["barrier"]["status"] == "converged"


def test_a_warm_started_solve_counts_its_barrier_as_paid():
    # a solve from a previous solve's multipliers (a sweep) has its barrier paid for at
    # work 0; without them the first subproblem's work is still short of barrier_work
    gp, _, _ = _formulation_problem(_swiss120(2))
    space, pen = FactorSpace(gp), DistancePenalty(gp)
    dual = DualOptimum(space, pen, 1e-4)
    assert not dual.paid_for(0.0)
    dual.prepaid = True
    assert dual.paid_for(0.0)
    got = dual.early(np.inf, 0.0, paid=True)
    assert got is not None and dual.result.status == "converged"
    assert not dual.paid_for(0.0)                # once

"""The dual optimum of small ``"interval"`` problems by a barrier method on the multipliers
(docs/tuning.md, "Moons: the dual optimum by a barrier method").
"""

import time

import numpy as np
import pytest

from sdpembed.lowrank.backend import _formulation_problem
from sdpembed.lowrank.certificate import certify
from sdpembed.lowrank.dual_barrier import DualOptimum, dual_barrier, dual_barrier_fits
from sdpembed.lowrank.options import DenseLimits
from sdpembed.lowrank.penalty import DistancePenalty
from sdpembed.lowrank.space import FactorSpace
from sdpembed.lowrank.spectrum import _gershgorin
from sdpembed.solvers import solve


def test_the_barrier_reaches_the_dual_optimum_clarabel_finds(moons40):
    f, optimum, space, pen = moons40
    assert dual_barrier_fits(space, pen)
    res = dual_barrier(space, pen, rel_gap=1e-6)
    assert res.status == "converged" and res.gap <= 1e-6 * abs(res.bound)
    assert np.all(np.abs(res.y) < pen.w)                  # strictly inside the box
    cert = certify(space, pen, res.y, None)
    # strictly feasible: S(y) >= 0 by a dense eigendecomposition, lambda_min 5e-13 there,
    # inside eigh's rounding allowance (1e-11, ``rounding.eigh_allowance``): the bound is
    # the dual function less what the shift towards the coercive point costs (6e-9)
    assert cert.check == "dense" and cert.method in ("dual-feasible", "shifted")
    assert cert.lambda_min >= 0 and cert.bound <= res.bound
    assert cert.bound == pytest.approx(res.bound, rel=1e-8)
    # the recorded optimum (CSDP's; CLARABEL's refused point 7e-6 above it) on both
    # sides: weak duality and the barrier's stopping gap
    assert cert.bound == pytest.approx(optimum, rel=2e-5)
    # a loose run stops early, and its verified gap (to the primal value of one of its
    # primal estimates) still brackets the optimum: bound <= optimum <= bound + gap
    loose = dual_barrier(space, pen, rel_gap=1e-2)
    assert loose.status == "converged" and loose.gap <= 1e-2 * abs(loose.bound)
    assert loose.iterations < res.iterations
    assert loose.gap > 1e-3 * abs(res.bound)             # loose enough for the check to bite
    assert loose.bound <= res.bound + 1e-12 * abs(res.bound)
    assert loose.bound + loose.gap >= res.bound


def test_the_barrier_is_refused_outside_its_domain(moons_dvu):
    f = moons_dvu(40, 0)
    gp, _, _ = _formulation_problem(f)
    pen = DistancePenalty(gp)
    assert not dual_barrier_fits(FactorSpace(gp, limits=DenseLimits(eig=20)), pen)
    # ionosphere300-std-k5's size (300 points, 1,529 edges) is inside it
    f = moons_dvu(500, 0)
    gp, _, _ = _formulation_problem(f)
    assert 1500 < gp.edges.shape[0] <= 2000
    assert dual_barrier_fits(FactorSpace(gp), DistancePenalty(gp))


def test_a_barrier_that_cannot_finish_in_time_leaves_it_to_the_refinement(monkeypatch, moons_dvu):
    # the first Newton step times the run: one that would pass its deadline stops there,
    # and DualOptimum neither keeps it nor lets its multipliers replace the refinement's
    import sdpembed.lowrank.dual_barrier as db

    f = moons_dvu(40, 0)
    gp, _, _ = _formulation_problem(f)
    space, pen = FactorSpace(gp), DistancePenalty(gp)
    monkeypatch.setattr(db, "_STEPS_EXPECTED", 1e15)     # any first step is too slow
    monkeypatch.setattr(db, "_PD_STEPS_EXPECTED", 1e15)  # (the cold run's: primal-dual)
    deadline = time.perf_counter() + 600.0
    res = dual_barrier(space, pen, rel_gap=1e-6, deadline=deadline)
    assert res.status == "no time" and res.iterations == 1
    dual = DualOptimum(space, pen, 1e-4)
    assert dual.candidate(deadline) is None                # first pass: the refinement
    assert dual.candidate(deadline) is None                # the barrier: no time
    assert dual.result is None and dual.label == "refined multipliers; "
    monkeypatch.undo()
    y, _ = dual.candidate(deadline)                        # time enough: it runs
    assert dual.result.status == "converged" and np.all(np.abs(y) < pen.w)
    # above _BARRIER_CHEAP_EDGES edges a pass runs the barrier only once the subproblems
    # have done as much work as the run is estimated to take (digits300-k10: the
    # refinement certifies at its second pass, the barrier would have cost 7 s of CPU)
    monkeypatch.setattr(db, "_BARRIER_CHEAP_EDGES", 10)
    need = db.barrier_work(space.dim, pen.t.size)
    assert need == pytest.approx(db._STEPS_EXPECTED * (pen.t.size ** 3 / 3 + space.dim ** 3)
                                 / db._FLOPS_PER_ENTRY)
    big = DualOptimum(space, pen, 1e-4)
    assert big.candidate(deadline, 10 * need) is None      # first pass: the refinement
    assert big.candidate(deadline, 0.5 * need) is None and big.result is None
    assert big.candidate(deadline, need) is not None and big.result.status == "converged"
    monkeypatch.undo()
    # a run its deadline stopped (an interior point, but anywhere on the way) leaves the
    # certificate to the refinement as well, whose shifted bound is the better one there
    dual.result = db.DualBarrierResult(y, res.bound, np.inf, "deadline", 3, 0.0)
    assert dual.candidate(deadline) is None and dual.candidate(deadline, final=True) is None
    assert dual.label == "refined multipliers; " and dual.adopt() is None


def test_a_path_without_an_interior_stops_at_its_first_null_step(monkeypatch):
    """At the boundedness threshold the dual feasible set has no interior: the path's steps
    shrink until ``y + s dy == y`` in floating point, a null step that Armijo's test passed
    (its share rounded away) and the path repeated until its deadline (1,402 factorisations
    of the slack in 60 s; 3,807 in a solve). It now stops there, "stalled", at the same
    point (docs/tuning.md, "The dual barrier's null steps")."""
    import sdpembed.lowrank.dual_barrier as db
    from problems import issue_claims
    from sdpembed.formulations.dvu import min_bounded_slack_weight

    lam = min_bounded_slack_weight(issue_claims.blobs30().points_problem)
    gp, _, _ = _formulation_problem(issue_claims.blobs30(slack_weight=lam))
    space, pen = FactorSpace(gp), DistancePenalty(gp)
    calls = []
    factor = db._slack_cholesky
    monkeypatch.setattr(db, "_slack_cholesky", lambda *a: calls.append(1) or factor(*a))
    res = dual_barrier(space, pen, rel_gap=1e-5, deadline=time.perf_counter() + 600.0)
    assert res.status == "stalled" and len(calls) <= 300
    nu0 = space.duals(None)      # strictly feasible: S(y) positive definite on 1-perp
    scale = _gershgorin(space, pen.w, nu0) + 1.0         # (the run's own scale of 11^T/n)
    assert np.all(np.abs(res.y) < pen.w) and factor(space, res.y, nu0, scale) is not None
    # a lower bound on the optimum at the threshold, which lies below the objective of any
    # point at a larger weight (the objective grows with it): LOWRANK's at 1 + 1e-6 times it
    # (-2.8127; the bound -2.8559)
    above = solve(issue_claims.blobs30(slack_weight=lam * (1 + 1e-6)), "LOWRANK",
                  time_limit=600.0).objective
    assert res.bound <= above


def test_small_moons_certify_through_the_dual_optimum(moons_dvu):
    # 60 points of two moons, seed 3: the first-order multipliers, refined or not, kept
    # S(y) indefinite and the certified gap open until outer iteration 24 (time to rank
    # 13); the barrier's strictly feasible multipliers certify the primal at 17 (from
    # rank 6, n_classes + 4: the default start of twice the average degree, 12, certifies
    # at 21, docs/tuning.md "the first rank follows the graph's density")
    f = moons_dvu(60, 3)
    rep = solve(f, solver="LOWRANK", tol=1e-4, max_outer=20, rank=6)
    assert rep.status == "optimal", (rep.status, rep.certified_gap)
    assert rep.certified_gap <= 1e-4
    cert = rep.extra["certificate"]
    assert "dual-feasible" in cert, cert
    # the note names the candidate that certified: the barrier's, not "refined" ones
    assert "barrier multipliers" in cert and "refined multipliers" not in cert, cert


def test_a_far_gap_to_the_dual_optimum_counts_as_a_missing_dimension(moons_dvu):
    # wine-std-k5: at rank 7 the augmented Lagrangian's pair agrees (cheap gap 1.9e-3) while
    # the iterate is 2.1e-2 above the dual optimum: the rank grows there, as the refined
    # multipliers' certificate attempt used to make it
    f = moons_dvu(40, 0)
    gp, _, _ = _formulation_problem(f)
    space, pen = FactorSpace(gp), DistancePenalty(gp)
    dual = DualOptimum(space, pen, 1e-4)
    assert not dual.rank_short(1.9e-3, 2.1e-2, 5)        # no dual optimum yet
    assert dual.label == "refined multipliers; "
    assert dual.adopt() is None                           # nothing to adopt yet
    assert dual.candidate(np.inf) is None                 # first pass: the refinement
    y, nu = dual.candidate(np.inf)                        # second: the barrier's multipliers
    assert np.all(np.abs(y) < pen.w) and nu.shape == (0,)
    assert dual.label == "barrier multipliers; "
    y_a, nu_a = dual.adopt()                              # the loop continues from them,
    assert np.array_equal(y_a, y) and y_a is not dual.result.y
    assert dual.adopt() is None                           # once
    assert dual.rank_short(1.9e-3, 2.1e-2, 5)
    assert not dual.rank_short(1.9e-3, 2.1e-2, 1)         # just after a growth
    assert not dual.rank_short(1.9e-3, 1.5e-2, 5)         # within 10x the cheap gap
    assert not dual.rank_short(1e-6, 9e-5, 5)             # within tol: an attempt's business


def test_a_first_pass_that_fails_starts_the_barrier_at_once(moons_dvu, monkeypatch):
    # breast-cancer-std: the refinement's attempt at the first pass (outer 4) missed tol
    # by a negative eigenvalue; the barrier then ran at the second pass (outer 6) and
    # certified there. The run that pass would start starts at the end of the first, so
    # that its point certifies in the same outer iteration (docs/tuning.md, "The
    # breast-cancer rows")
    import sdpembed.lowrank.dual_barrier as db

    f = moons_dvu(40, 0)
    gp, _, _ = _formulation_problem(f)
    space, pen = FactorSpace(gp), DistancePenalty(gp)
    W, y0, nu0 = np.zeros((space.dim, 3)), np.zeros(pen.t.size), space.duals(None)
    dual = DualOptimum(space, pen, 1e-4)
    dual.early(np.inf)                               # before the first pass: nothing
    assert dual.result is None
    assert dual.candidate(np.inf) is None                 # first pass: the refinement
    dual.early(np.inf)                               # which failed: the run, now
    assert dual.result.status == "converged"
    pair = dual.pair(W, y0, nu0)
    assert pair is not None                               # its point, in the same step
    run = dual.result
    dual.early(np.inf)                               # once
    y, _ = dual.candidate(np.inf)                         # the second pass: no new run
    assert dual.result is run and np.array_equal(y, run.y)
    # past the deadline, or above the cold cap before the subproblems' work reaches the
    # run's estimate: not run (the next pass decides again)
    late = DualOptimum(space, pen, 1e-4)
    late.candidate(np.inf)
    late.early(0.0)
    assert late.result is None
    monkeypatch.setattr(db, "_BARRIER_CHEAP_EDGES", 10)
    need = db.barrier_work(space.dim, pen.t.size)
    late.early(np.inf, 0.5 * need)
    assert late.result is None
    late.early(np.inf, need)
    assert late.result.status == "converged"
    # above the cold start's edge cap (the warm start's business): nothing before the first
    # pass; after a first pass that did not certify, the warm run from that pass's factor
    # and refined multipliers, once (docs/tuning.md, "The warm barrier on the primal-dual
    # path"); on main nothing here
    monkeypatch.setattr(db, "_BARRIER_EDGES", 10)
    warm = DualOptimum(space, pen, 1e-4)
    assert warm.early(np.inf) is None and warm.result is None
    assert not warm.warm_due() and not dual.warm_due()    # (the cold run: never)
    refined, W_opt = [], pair.points                      # the optimum's factor, and
    opt_y = run.y - 1e-3 * pen.w                          # its multipliers pushed out
    warm.candidate(np.inf, refine=(W_opt, lambda: refined.append(1) or (opt_y, nu0)))
    assert not warm.fits and warm.result is None and refined == [1]
    # the run is due at this step's end: the loop leaves out its lift (docs/tuning.md,
    # "The last rows over 10 s at n <= 600")
    assert warm.warm_due()
    y, _ = warm.early(np.inf)
    assert not warm.warm_due()
    assert warm.result.status == "converged" and np.array_equal(y, warm.result.y)
    assert warm.result.primal is not None and len(warm.result.primal) == 5
    assert abs(warm.result.bound - run.bound) <= 1e-5 * abs(run.bound)
    ran = warm.result
    assert warm.early(np.inf) is None and warm.result is ran and refined == [1]


#: CSDP's optimum of differential seed 72089 (status optimal; CLARABEL 2.0539232,
#: optimal_inaccurate)
_CSDP_72089 = 2.0539048909342723


def test_the_loop_continues_from_the_dual_optimum():
    # differential seed 72089 (DVU, 52 points, interval distances, a trace term): on the
    # kink envelope at the capped penalty the first-order multipliers crept and the primal
    # stopped 3.3e-3 above the optimum at max_outer = 200 although the barrier's bound was
    # the dual optimum; continuing from the barrier's multipliers closes the primal
    from problems.differential import make_instance
    from sdpembed.solve_status import BOUND_TOLERANCE, bound_gap

    f, _ = make_instance(72089, (12, 60)).build()
    rep = solve(f, solver="LOWRANK", tol=1e-4, max_outer=200)
    assert rep.status == "optimal", (rep.status, rep.certified_gap)
    assert rep.certified_gap <= 1e-4
    assert bound_gap(rep.objective, rep.bound) >= -BOUND_TOLERANCE
    # CSDP's objective lies 1.2e-5 below the barrier's verified bound (its point is
    # slightly infeasible): the two agree within the certificate's tolerance
    assert abs(rep.objective - _CSDP_72089) <= 1e-4 * abs(_CSDP_72089)

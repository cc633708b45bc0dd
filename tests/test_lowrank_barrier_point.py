"""The ``"interval"`` dual barrier's primal point as a factor, certified with its multipliers
(docs/tuning.md, "The slow rows at n <= 600 (2026-11-30, twentieth round)")."""


import numpy as np
import pytest

from sdpembed.formulations.dvu import dvu
from sdpembed.graphs import knn_graph
from sdpembed.lowrank.backend import _formulation_problem
from sdpembed.lowrank.barrier_point import barrier_factor, objective_of
from sdpembed.lowrank.certificate import certify
from sdpembed.lowrank.dual_barrier import DualOptimum, dual_barrier
from sdpembed.lowrank.penalty import DistancePenalty
from sdpembed.lowrank.space import FactorSpace
from sdpembed.solvers import solve


def test_the_barrier_point_brackets_the_optimum_clarabel_finds(moons40):
    f, optimum, space, pen = moons40
    res = dual_barrier(space, pen, rel_gap=1e-5)
    assert res.status == "converged" and res.primal is not None
    y_b, mu, dy, scale, X = res.primal          # X: the primal-dual path's point
    nu0 = space.duals(None)
    # the whole point (every positive eigenpair) has the objective the run recorded, up
    # to the rounding of S^+ near the optimum (5e-8 relative here)
    F, p = barrier_factor(space, pen, y_b, mu, dy, scale, nu0, space.dim, 0.0, X=X)
    assert abs(F.sum(axis=0)).max() <= 1e-9 * abs(F).max()        # centred
    assert p == pytest.approx(objective_of(space, pen, F), rel=1e-12)
    assert res.bound <= p <= res.bound + res.gap + 1e-6 * abs(res.bound)
    # truncated from rank 2 up to within a budget of 1e-5 |bound|: fewer columns, still
    # above the certified bound (any centred X >= 0 is feasible) and within the budget
    budget = 1e-5 * abs(res.bound)
    Fk, pk = barrier_factor(space, pen, y_b, mu, dy, scale, nu0, 2, budget, X=X)
    assert Fk.shape[1] < F.shape[1] and pk <= p + budget
    cert = certify(space, pen, res.y, None)
    assert cert.check == "dense" and cert.lambda_min >= 0
    assert cert.bound <= pk and (pk - cert.bound) <= 2e-5 * abs(cert.bound)
    # both on the recorded optimum (CSDP's; CLARABEL's point 7e-6 above it)
    assert pk == pytest.approx(optimum, rel=2e-5)


def test_the_pair_is_offered_once_after_a_converged_run_only(moons_dvu):
    f = moons_dvu(40, 0)
    gp, _, _ = _formulation_problem(f)
    space, pen = FactorSpace(gp), DistancePenalty(gp)
    dual = DualOptimum(space, pen, 1e-4)
    W = np.zeros((space.dim, 3))
    y0, nu0 = np.zeros(pen.t.size), space.duals(None)
    assert dual.pair(W, y0, nu0) is None                   # no run yet
    dual.candidate(np.inf)
    assert dual.pair(W, y0, nu0) is None                   # first pass: the refinement
    dual.candidate(np.inf)                                 # second: the barrier
    assert dual.result.status == "converged"
    pair = dual.pair(W, y0, nu0)
    assert pair is not None and pair.points.shape[0] == space.dim
    assert 3 <= pair.points.shape[1] < space.dim           # from the iterate's rank up
    assert np.array_equal(pair.y, dual.result.y) and pair.lead[0][0] is y0
    assert pair.bound == dual.result.bound
    assert objective_of(space, pen, pair.points) <= pair.bound + 0.6e-4 * abs(pair.bound)
    assert dual.pair(W, y0, nu0) is None                   # once


def test_a_run_stopped_within_half_tol_is_paired_one_far_from_it_is_not(moons40):
    # every iterate of the barrier is strictly dual feasible, so a run that ends at its step
    # limit (or stalls) has a valid bound; its point is paired where the run's verified gap
    # leaves the factor room within tol (docs/tuning.md, "A stalled cold barrier within tol")
    f, optimum, space, pen = moons40
    W = np.zeros((space.dim, 3))
    y0, nu0 = np.zeros(pen.t.size), space.duals(None)
    far = DualOptimum(space, pen, 1e-4)
    far.result = dual_barrier(space, pen, rel_gap=1e-5, max_iter=10)
    assert far.result.status == "max_iter" and far.result.gap > 1e-2 * abs(far.result.bound)
    assert far.pair(W, y0, nu0) is None and not far.paired
    near = DualOptimum(space, pen, 1e-4)
    # a target below the path's rounding: the run ends at its step limit, within 0.5 tol
    near.result = res = dual_barrier(space, pen, rel_gap=1e-12, max_iter=40)
    assert res.status == "max_iter" and res.gap <= 0.5e-4 * abs(res.bound)
    pair = near.pair(W, y0, nu0)
    assert pair is not None and pair.status == "max_iter" and pair.bound == res.bound
    # the bound on the recorded optimum (CSDP's, its violations priced at 1.2e-6 of it),
    # the point within tol above the bound
    assert pair.bound == pytest.approx(optimum, rel=2e-6)
    p = objective_of(space, pen, pair.points)
    assert pair.bound <= p <= pair.bound + 1e-4 * abs(pair.bound)
    cert = certify(space, pen, pair.y, None)
    assert cert.check == "dense" and cert.lambda_min >= 0
    assert cert.bound <= pair.bound and cert.bound == pytest.approx(pair.bound, rel=1e-8)
    assert near.pair(W, y0, nu0) is None                   # once


@pytest.mark.slow
def test_swiss_roll_certifies_at_the_barrier_point():
    # 120 points of a Swiss roll, 6-NN (a small swiss400-dvu-k6): the barrier converges at
    # outer iteration 16, whose iterate is still far from the optimum (cheap gap 4e-3); its
    # own point and multipliers prove tol there. Without the pair (main at 0277840) the
    # solve certifies only at outer 35 (8.7e-5), so it fails at this max_outer
    from sklearn.datasets import make_swiss_roll
    X, t = make_swiss_roll(120, random_state=0)
    y = np.where(np.random.default_rng(0).random(120) < 0.2, (t > np.median(t)).astype(int), -1)
    f = dvu(knn_graph(X, n_neighbors=6, n_random=0), y)
    rep = solve(f, solver="LOWRANK", tol=1e-4, max_outer=20)
    assert rep.status == "optimal" and rep.certified_gap <= 1e-4
    assert "barrier multipliers" in rep.extra["certificate"]
    # the reported factor: the barrier point's leading eigenpairs, fewer than n
    assert rep.extra["rank"] < 120


def test_a_truncation_moved_back_onto_the_kink_keeps_few_columns(usps_path):
    # 40 USPS digits (0-2), 5-NN + 1 random, 80 % labelled: no truncation of the barrier
    # point keeps its objective within 0.5e-4 |bound| (the dropped tail shortens the edges
    # on the kink), so without the restoration all 39 positive eigenpairs are returned;
    # the truncation to 16 columns moved back onto the kink is within it (docs/tuning.md,
    # "usps300-tangent-k5, swiss400-dvu-k6 and ionosphere")
    with np.load(usps_path) as z:
        X, y = z["X"].astype(float), z["y"]
    rng = np.random.default_rng(0)
    idx = rng.choice(np.flatnonzero(y < 3), 40, replace=False)
    f = dvu(knn_graph(X[idx], n_neighbors=5, n_random=1),
            np.where(rng.random(40) < 0.8, y[idx], -1))
    gp, _, _ = _formulation_problem(f)
    space, pen = FactorSpace(gp), DistancePenalty(gp)
    res = dual_barrier(space, pen, rel_gap=1e-5)
    assert res.status == "converged"
    y_b, mu, dy, scale, X = res.primal          # X: the primal-dual path's point
    budget = 0.5e-4 * abs(res.bound)
    F_all, p_all = barrier_factor(space, pen, y_b, mu, dy, scale, space.duals(None),
                                  space.dim, 0.0, X=X)
    F, p = barrier_factor(space, pen, y_b, mu, dy, scale, space.duals(None), 2, budget, X=X)
    assert F.shape[1] <= 16 < F_all.shape[1]
    assert abs(F.sum(axis=0)).max() <= 1e-9 * abs(F).max()        # centred
    assert p == pytest.approx(objective_of(space, pen, F), rel=1e-12)
    cert = certify(space, pen, res.y, None)
    assert cert.check == "dense" and cert.lambda_min >= 0
    assert cert.bound <= p <= p_all + budget


def test_the_barrier_runs_one_pass_early_where_asked(moons_dvu):
    # DualOptimum.early: only at the pass before _BARRIER_AFTER (the outer loop asks where
    # the refined multipliers fell short of tol), once
    f = moons_dvu(40, 0)
    gp, _, _ = _formulation_problem(f)
    space, pen = FactorSpace(gp), DistancePenalty(gp)
    dual = DualOptimum(space, pen, 1e-4)
    assert dual.early(np.inf) is None and dual.result is None      # no pass yet
    assert dual.candidate(np.inf) is None                          # first pass: refinement
    y, nu = dual.early(np.inf)                                     # ... fell short: now
    assert dual.result.status == "converged" and np.array_equal(y, dual.result.y)
    res = dual.result
    assert dual.early(np.inf) is None                              # once
    y2, _ = dual.candidate(np.inf)                                 # second pass: no rerun
    assert dual.result is res and np.array_equal(y2, y)


def test_a_point_that_misses_tol_by_a_little_continues_the_run(moons40, monkeypatch):
    # the run stopped loosely (at 1.9 tol instead of 0.1 tol): its point lies 1.87 tol
    # above its bound, within _RESUME_WITHIN (2) tol; the same run continues from its own
    # multipliers to _RESUME_GAP tol and its point proves tol (docs/tuning.md, "A barrier
    # point that misses tol by a little"); before, the pair missed and the outer loop had
    # to close the gap (swiss400-dvu-k6: 12 more outer iterations)
    from sdpembed.lowrank import dual_barrier as db
    f, optimum, space, pen = moons40
    monkeypatch.setattr(db, "_BARRIER_GAP", 1.9)
    tol = 1e-4
    W, y0, nu0 = np.zeros((space.dim, 3)), np.zeros(pen.t.size), space.duals(None)
    dual = DualOptimum(space, pen, tol)
    dual.candidate(np.inf)
    dual.candidate(np.inf)
    first = dual.result
    assert first.status == "converged" and first.gap <= 1.9 * tol * abs(first.bound)
    F, p = db.barrier_factor(space, pen, *first.primal[:4], nu0, 3, 0.5 * tol * abs(first.bound),
                             X=first.primal[4] if len(first.primal) > 4 else None)
    assert tol < (p - first.bound) / abs(first.bound) <= 2 * tol        # the near miss
    pair = dual.pair(W, y0, nu0)
    p_pair = objective_of(space, pen, pair.points)
    cert = certify(space, pen, pair.y, None)
    assert cert.check == "dense" and cert.lambda_min >= 0
    # the new pair proves tol, both sides on CSDP's recorded optimum (as in the first
    # test: the record is good to a few 1e-7 here)
    assert cert.bound <= p_pair and (p_pair - cert.bound) <= tol * abs(cert.bound)
    assert cert.bound == pytest.approx(optimum, rel=2e-5)
    assert p_pair == pytest.approx(optimum, rel=tol)
    assert dual.resumed and dual.result is not first
    assert dual.result.iterations > first.iterations
    assert pair.bound == dual.result.bound >= first.bound
    # a point that misses by more than _RESUME_WITHIN tol is left to the outer loop
    monkeypatch.setattr(db, "_RESUME_WITHIN", 1.5)
    far = DualOptimum(space, pen, tol)
    far.candidate(np.inf)
    far.candidate(np.inf)
    far_pair = far.pair(W, y0, nu0)
    assert not far.resumed and far.result.iterations == first.iterations
    assert (objective_of(space, pen, far_pair.points) - far_pair.bound) > tol * abs(far_pair.bound)
    # and one within tol at the default stopping gap is offered as it is
    monkeypatch.setattr(db, "_BARRIER_GAP", 0.1)
    near = DualOptimum(space, pen, tol)
    near.candidate(np.inf)
    near.candidate(np.inf)
    assert near.pair(W, y0, nu0) is not None and not near.resumed


def test_a_rebuilt_point_is_cut_at_its_noise(moons40, monkeypatch):
    # a point rebuilt at a near-singular slack carries a symmetric rounding error whose
    # negative eigenvalues show its size (the point is PSD as built); its positive ones,
    # kept as eigenpairs, move the edges (swiss400-dvu-k6: 2.2e-4 above the bound where the
    # run measured 2.6e-6; docs/tuning.md, "The barrier's rebuilt point cut at its noise").
    # Here the primal-dual path's point with an error of eigenvalues +-3e-7 (2.3e-9 of its
    # largest) added: cut at twice its most negative eigenvalue's size (9 pairs), it lies
    # 2.9e-5 above CSDP's recorded optimum; kept whole (main at a683ca0: 25 pairs), 3.2e-4
    from sdpembed.lowrank import barrier_point as bp
    f, optimum, space, pen = moons40
    res = dual_barrier(space, pen, rel_gap=1e-5)
    y_b, mu, dy, scale, X = res.primal
    nu0, n = space.duals(None), space.dim
    Q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((n, n)))
    Q -= Q.mean(axis=0)
    noise = (Q * np.where(np.arange(n) % 2 == 0, 3e-7, -3e-7)) @ Q.T
    F, p = barrier_factor(space, pen, y_b, mu, dy, scale, nu0, n, 0.0, X=X + noise)
    assert F.shape[1] < n // 2                          # the noise's pairs dropped
    assert optimum - 1e-9 * abs(optimum) <= p <= optimum + 1e-4 * abs(optimum)
    monkeypatch.setattr(bp, "_NOISE_CUT", 0.0)          # every pair above rounding
    F0, p0 = barrier_factor(space, pen, y_b, mu, dy, scale, nu0, n, 0.0, X=X + noise)
    assert F0.shape[1] > F.shape[1] and p0 > optimum + 1e-4 * abs(optimum)


def test_the_reported_rank_is_the_returned_points():
    # extra["rank"] is LowRankResult.rank: the rank of the factor returned, not its column
    # count (a trimmed factor keeps null columns; a barrier point has a tail of tiny
    # eigenvalues): 7 columns spanning 4 directions, one of them at 1e-9 of the largest
    from sdpembed.lowrank.result import LowRankResult
    rng = np.random.default_rng(0)
    U = np.linalg.qr(rng.normal(size=(30, 5)))[0]
    F = (U * [3.0, 1.0, 0.5, 1e-4, 1e-9]) @ rng.normal(size=(5, 7))
    res = LowRankResult(factor=F, objective=0.0, bound=None, certified_gap=None,
                        infeasibility=0.0, y=np.zeros(1), nu=np.zeros(0), status="optimal",
                        iterations=1, seconds=0.0)
    assert F.shape[1] == 7 and res.rank == 4 == np.linalg.matrix_rank(F, tol=1e-6 * 3.0)
    assert LowRankResult(**{**res.__dict__, "factor": None}).rank is None

"""The interval dual barrier above its cold cap, started from the refined multipliers
(docs/tuning.md, "breast-cancer-std-k8: the barrier started inside").
"""

import numpy as np
from sklearn.datasets import make_moons

import sdpembed.lowrank.dual_barrier as db
from sdpembed.formulations.dvu import dvu
from sdpembed.graphs import knn_graph
from sdpembed.lowrank.backend import _formulation_problem
from sdpembed.lowrank.barrier_start import warm_fits, warm_start
from sdpembed.lowrank.certificate import certify
from sdpembed.lowrank.penalty import DistancePenalty
from sdpembed.lowrank.space import FactorSpace
from sdpembed.lowrank.spectrum import _dense_shifted
from sdpembed.solvers import solve


def _moons(n: int, seed: int):
    # as tests/test_lowrank_dual_barrier.py: 5-NN, no random partners, 80 % labelled
    X, y = make_moons(n, noise=0.1, random_state=seed)
    y = np.where(np.random.default_rng(seed).random(n) < 0.8, y, -1)
    return dvu(knn_graph(X, n_neighbors=5, n_random=0), y, centroids="eliminated")


def test_above_the_cold_cap_the_barrier_starts_from_the_refined_multipliers(monkeypatch):
    # 60 points of two moons, seed 3 (test_small_moons_certify_through_the_dual_optimum):
    # the refined multipliers alone leave the gap open past max_outer = 20. With the cold
    # start's cap below its edge count (breast-cancer-std-k8's 3,995 edges against 2,000),
    # the barrier runs once, at the end of the first pass of the refinement gate that did
    # not certify (or at the second pass), from the refined
    # multipliers moved inside, and its multipliers certify (here in about as many Newton
    # steps as the cold start, whose shift towards w costs twice the dual value: docs/
    # tuning.md, "breast-cancer-std-k8: the barrier started inside"). On main the solve
    # ends optimal_inaccurate 3.95e-3 at 20 outer
    f = _moons(60, 3)
    gp, _, _ = _formulation_problem(f)
    space, pen = FactorSpace(gp), DistancePenalty(gp)
    monkeypatch.setattr(db, "_BARRIER_EDGES", 10)
    assert not db.dual_barrier_fits(space, pen) and warm_fits(space, pen, 10)
    assert not warm_fits(space, pen, pen.t.size)          # the cold start's own rows
    runs, starts = [], []
    orig = db.dual_barrier

    def spy(*a, **k):
        starts.append(k.get("start"))
        runs.append(orig(*a, **k))
        return runs[-1]

    monkeypatch.setattr(db, "dual_barrier", spy)
    rep = solve(f, solver="LOWRANK", tol=1e-4, max_outer=20, rank=6)
    assert rep.status == "optimal", (rep.status, rep.certified_gap)
    assert rep.certified_gap <= 1e-4
    assert "barrier multipliers" in rep.extra["certificate"], rep.extra["certificate"]
    assert len(runs) == 1 and starts[0] is not None and runs[0].status == "converged"
    y0, mu0 = starts[0]
    assert np.all(np.abs(y0) < pen.w) and 0 < mu0
    cold = orig(space, pen, rel_gap=db._BARRIER_GAP * 1e-4)
    assert cold.status == "converged"
    # the same optimum from both starts, within their stopping gaps, and strictly feasible
    assert abs(runs[0].bound - cold.bound) <= 1e-5 * abs(cold.bound)
    assert _lambda_min(space, runs[0].y) > 0
    cert = certify(space, pen, runs[0].y, None)
    assert cert.bound <= runs[0].bound + 1e-12 * abs(cold.bound)


def _lambda_min(space, y):
    # of S(y) on 1-perp (the all-ones direction at eigenvalue 1)
    return float(np.linalg.eigvalsh(_dense_shifted(space, y, space.duals(None), 1.0)[0])[0])


def test_the_start_is_strictly_feasible_near_the_refined_value():
    f = _moons(40, 0)
    gp, _, _ = _formulation_problem(f)
    space, pen = FactorSpace(gp), DistancePenalty(gp)
    opt = db.dual_barrier(space, pen, rel_gap=1e-6)
    # the optimum pushed out of the dual feasible set (S indefinite), as refined
    # multipliers are: moved towards w it is inside again, at a small loss of dual value
    y_out = opt.y - 1e-3 * pen.w
    assert _lambda_min(space, y_out) < 0
    rng = np.random.default_rng(0)
    W = rng.standard_normal((space.dim, 3))
    y0, mu0 = warm_start(space, pen, y_out, W)
    assert np.all(np.abs(y0) < pen.w)
    assert _lambda_min(space, y0) > 0
    # the value lost to the shift: a few times what the multipliers were pushed out by
    out = float(pen.t @ (opt.y - y_out))
    assert -pen.t @ opt.y - 5 * out <= -pen.t @ y0 < -pen.t @ opt.y
    assert mu0 > 0
    res = db.dual_barrier(space, pen, rel_gap=1e-6, start=(y0, mu0))
    assert res.status == "converged"
    assert abs(res.bound - opt.bound) <= 2e-6 * abs(opt.bound)
    # a start outside the box is ignored: the cold start instead
    res = db.dual_barrier(space, pen, rel_gap=1e-6, start=(2 * pen.w, mu0))
    assert res.status == "converged" and res.iterations == opt.iterations


def test_the_warm_run_follows_the_primal_dual_path_from_the_iterate(monkeypatch):
    # the warm run of the first test, replayed: with the iterate's factor (as the outer loop
    # passes it) the primal-dual path starts from X = WcWc^T + eps I and takes far fewer
    # steps than the dual path from the same start (docs/tuning.md, "The warm barrier on the
    # primal-dual path"), to the cold run's optimum, strictly feasible
    f = _moons(60, 3)
    gp, _, _ = _formulation_problem(f)
    space, pen = FactorSpace(gp), DistancePenalty(gp)
    monkeypatch.setattr(db, "_BARRIER_EDGES", 10)
    calls = []
    orig = db.dual_barrier

    def spy(*a, **k):
        calls.append((k.get("start"), k.get("start_factor")))
        return orig(*a, **k)

    monkeypatch.setattr(db, "dual_barrier", spy)
    rep = solve(f, solver="LOWRANK", tol=1e-4, max_outer=20, rank=6)
    assert rep.status == "optimal" and rep.certified_gap <= 1e-4
    assert len(calls) == 1 and calls[0][1] is not None
    start, W = calls[0]
    rel_gap = db._BARRIER_GAP * 1e-4
    pd = orig(space, pen, rel_gap=rel_gap, start=start, start_factor=W)
    dual = orig(space, pen, rel_gap=rel_gap, start=start)
    cold = orig(space, pen, rel_gap=rel_gap)
    assert pd.status == dual.status == cold.status == "converged"
    assert pd.primal is not None and len(pd.primal) == 5     # the path's matrix for the pair
    assert 2 * pd.iterations <= dual.iterations, (pd.iterations, dual.iterations)
    assert abs(pd.bound - cold.bound) <= 1e-5 * abs(cold.bound)
    assert pd.gap <= rel_gap * abs(pd.bound)
    assert _lambda_min(space, pd.y) > 0 and np.all(np.abs(pd.y) < pen.w)

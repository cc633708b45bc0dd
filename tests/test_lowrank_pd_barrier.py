"""The primal-dual path of the ``"interval"`` dual barrier (docs/tuning.md, "The dual
barrier's step count (2026-11-30, twenty-second round)")."""

import time

import numpy as np
import pytest

from sdpembed.lowrank import dual_barrier as db
from sdpembed.lowrank.barrier_path import _slack_cholesky
from sdpembed.lowrank.barrier_point import objective_of
from sdpembed.lowrank.pd_barrier import pd_path
from sdpembed.lowrank.spectrum import _gershgorin


def _cold_start(space, pen):
    w, t = pen.w, pen.t
    nu0 = space.duals(None)
    scale = _gershgorin(space, w, nu0) + 1.0
    eps = 1e-2
    while _slack_cholesky(space, (1.0 - eps) * w, nu0, scale) is None:
        eps *= 0.5
    y = (1.0 - eps) * w
    return nu0, scale, y, abs(float(t @ y)) / (space.dim - 1 + 2 * t.size)


def test_the_primal_dual_path_brackets_the_optimum_in_fewer_steps(moons40, monkeypatch):
    f, optimum, space, pen = moons40
    nu0, scale, y0, mu0 = _cold_start(space, pen)
    path = pd_path(space, pen.t, pen.w, nu0, scale, y0, mu0, rel_gap=1e-5,
                   t0=time.perf_counter())
    assert path.status == "converged"
    bound = -float(pen.t @ path.y)
    assert np.all(np.abs(path.y) < pen.w)                          # strictly inside the box
    assert np.linalg.eigvalsh(_dense_point(space, path.y, nu0, scale))[0] > 0
    # the recorded upper bound is the objective of its matrix (any X >= 0 is a primal
    # point: the distances are penalised), and both sides hold the recorded optimum
    lam, U = np.linalg.eigh(path.X)
    F = space.project(U[:, lam > 0] * np.sqrt(lam[lam > 0]))
    assert objective_of(space, pen, F) == pytest.approx(path.upper, rel=1e-9)
    assert bound <= optimum * (1 - np.sign(optimum) * 1e-9) + 1e-12
    assert path.upper >= optimum - 2e-5 * abs(optimum)          # CSDP's optimum, rounded
    assert path.upper - bound <= 1e-5 * abs(bound)
    # the dual barrier's own path alone (main before this change) needs several times
    # the steps for the same gap (72 against 16)
    monkeypatch.setattr(db, "pd_path", _no_pd)
    alone = db.dual_barrier(space, pen, rel_gap=1e-5)
    assert alone.status == "converged"
    assert 2 * path.iterations <= alone.iterations
    assert abs(alone.bound - bound) <= 1e-5 * abs(bound)


def _no_pd(space, t, w, nu0, scale, y, mu, **kw):
    from sdpembed.lowrank.pd_barrier import PDPath
    return PDPath(y, "stalled", 0, np.inf, None, mu)


def _dense_point(space, y, nu0, scale):
    from sdpembed.lowrank.spectrum import _dense_shifted
    return _dense_shifted(space, y, nu0, scale)[0]


def test_a_stalled_primal_dual_path_hands_over_to_the_dual_path(moons40, monkeypatch):
    # a primal-dual path stopped after a few steps (as rounding stops it near the end)
    # leaves its point to the dual barrier's path, which finishes the run from there
    f, optimum, space, pen = moons40
    real = db.pd_path
    monkeypatch.setattr(db, "pd_path", lambda *a, **k: real(*a, **{**k, "max_iter": 5}))
    res = db.dual_barrier(space, pen, rel_gap=1e-6)
    assert res.status == "converged" and res.iterations > 5
    assert res.gap <= 1e-6 * abs(res.bound)
    assert res.bound == pytest.approx(optimum, rel=2e-5)
    assert res.primal is not None        # the best primal point of either path


def test_a_warm_path_takes_the_adaptive_step_share(moons40):
    # a path given its primal start (X0: the warm run's) takes, after its first step,
    # SDPT3's share 0.9 + 0.09 min(s_p, s_d) of the previous step's lengths; a cold path
    # the fixed 0.95 (docs/tuning.md, "The warm barrier's step share")
    f, optimum, space, pen = moons40
    nu0, scale, y0, mu0 = _cold_start(space, pen)
    cold_log, warm_log = [], []
    cold = pd_path(space, pen.t, pen.w, nu0, scale, y0, mu0, rel_gap=1e-5,
                   t0=time.perf_counter(), log=cold_log)
    X0 = mu0 * np.linalg.inv(_dense_point(space, y0, nu0, scale))
    warm = pd_path(space, pen.t, pen.w, nu0, scale, y0, mu0, rel_gap=1e-5,
                   t0=time.perf_counter(), log=warm_log, X0=0.5 * (X0 + X0.T))
    assert cold.status == warm.status == "converged"
    assert len(warm_log) >= 3
    assert all(entry[-1] == 0.95 for entry in cold_log)
    assert warm_log[0][-1] == 0.95
    for prev, entry in zip(warm_log, warm_log[1:]):
        assert entry[-1] == pytest.approx(0.9 + 0.09 * min(prev[5], prev[6]), abs=1e-15)
        assert 0.9 <= entry[-1] <= 0.99
    assert any(entry[-1] > 0.95 for entry in warm_log)
    # each path's bound is below the other's primal value (weak duality), both within
    # the gap asked for, at CSDP's optimum (rounded)
    for path, other in ((cold, warm), (warm, cold)):
        bound = -float(pen.t @ path.y)
        assert bound <= other.upper and bound <= path.upper
        assert path.upper - bound <= 1e-5 * abs(bound)
        assert bound == pytest.approx(optimum, rel=2e-5)


def _wine_raw_dvu(n=100, k=5):
    """LOWRANK's space and penalty of a DVU on ``n`` of scikit-learn's wine samples, raw
    features (proline in the thousands, hue near 1: squared distances over six orders
    of magnitude), ``k`` neighbours and one random partner."""
    from sklearn.datasets import load_wine

    from sdpembed.formulations.dvu import dvu
    from sdpembed.graphs import knn_graph
    from sdpembed.lowrank.backend import _formulation_problem
    from sdpembed.lowrank.penalty import DistancePenalty
    from sdpembed.lowrank.space import FactorSpace

    X, y = load_wine(return_X_y=True)
    rows = np.random.default_rng(0).permutation(len(y))[:n]
    X, y = X[rows], y[rows].copy()
    y[::5] = -1
    gp, _, _ = _formulation_problem(
        dvu(knn_graph(X, n_neighbors=k, n_random=1, random_state=0), y, centroids="eliminated"))
    return FactorSpace(gp), DistancePenalty(gp)


def test_a_cold_path_on_raw_features_is_not_stopped_by_its_first_short_steps(monkeypatch):
    # raw wine features: from the cold start the second and third steps are short (below
    # _STALL_STEP), as on breast cancer's raw features; counted, they stopped the path at
    # its third step and the dual path alone took several times the steps (docs/tuning.md,
    # "Unscaled data: the cold barrier's first steps")
    from sdpembed.lowrank import pd_barrier

    space, pen = _wine_raw_dvu()
    nu0, scale, y0, mu0 = _cold_start(space, pen)
    log = []
    path = pd_path(space, pen.t, pen.w, nu0, scale, y0, mu0, rel_gap=1e-5,
                   t0=time.perf_counter(), log=log)
    assert path.status == "converged"
    assert min(min(e[5], e[6]) for e in log[1:3]) < pd_barrier._STALL_STEP  # short, early
    bound = -float(pen.t @ path.y)
    assert np.all(np.abs(path.y) < pen.w)
    assert np.linalg.eigvalsh(_dense_point(space, path.y, nu0, scale))[0] > 0
    assert bound <= path.upper and path.upper - bound <= 1e-5 * abs(bound)
    # the run takes this path to its end, no hand-over; the dual path alone (what the
    # run did from the third step before) reaches the same bound in several times the steps
    run = db.dual_barrier(space, pen, rel_gap=1e-5)
    assert run.status == "converged" and run.iterations == path.iterations
    monkeypatch.setattr(db, "pd_path", _no_pd)
    alone = db.dual_barrier(space, pen, rel_gap=1e-5)
    assert alone.status == "converged"
    assert 2 * path.iterations <= alone.iterations
    assert abs(alone.bound - bound) <= 2e-5 * abs(bound)
    # each bound lies below the other's primal value (weak duality)
    assert bound <= alone.bound + alone.gap and alone.bound <= path.upper

"""LOWRANK's path does not depend on the clock: apart from the user's ``time_limit``, no
decision of the solver reads it (docs/tuning.md, "A path that does not depend on the
clock; breast-cancer-std-k8")."""

import sys
import time

import numpy as np
from sklearn.datasets import make_moons

import sdpembed.lowrank.barrier_path as path
import sdpembed.lowrank.dual_barrier as db
from sdpembed.formulations.dvu import dvu
from sdpembed.graphs import knn_graph
from sdpembed.solvers import solve


def _moons(n: int, seed: int):
    X, y = make_moons(n, noise=0.1, random_state=seed)
    y = np.where(np.random.default_rng(seed).random(n) < 0.8, y, -1)
    return dvu(knn_graph(X, n_neighbors=5, n_random=0), y, centroids="eliminated")


def _path(rep):
    h = rep.extra["history"]
    return (rep.status, rep.objective, rep.certified_gap, rep.extra["outer_iterations"],
            rep.extra["rank"], rep.extra["certificate"],
            [(e["rank"], e["objective"], e["lbfgs_iters"], e["cheap_gap"]) for e in h])


def test_a_slow_clock_leaves_the_path_as_it_is(monkeypatch):
    # 60 points of two moons (seed 3) reach the dual barrier's gate (test_lowrank_dual_barrier,
    # "certify through the dual optimum"); with the gate for large problems lowered to 10
    # edges, its decision is taken at every pass. It used to compare the solve's seconds
    # with the barrier's first step timed (ionosphere300-std-k5: 11 or 14 outer iterations
    # by the load); a clock that runs 10 s ahead at every reading (a machine under any
    # load, far from the time limit) must give the same iterates, bit for bit
    monkeypatch.setattr(db, "_BARRIER_CHEAP_EDGES", 10)
    gates = []
    work = db.barrier_work
    monkeypatch.setattr(db, "barrier_work", lambda n, m: gates.append(m) or work(n, m))
    opts = dict(solver="LOWRANK", tol=1e-4, max_outer=20, rank=6, time_limit=1e12)
    normal = _path(solve(_moons(60, 3), **opts))
    assert gates, "the solve never reached the barrier's gate"
    n_gates = len(gates)

    real, ahead, readings = time.perf_counter, [0.0], [0, 0]

    def slow():
        # 10 s ahead at every reading, 1,000 s at a reading inside the barrier: a machine
        # whose load rises while the barrier runs (its first step, timed, used to say
        # "no time" then, and the path went on without the barrier)
        inside = sys._getframe(1).f_globals.get("__name__") in (db.__name__, path.__name__)
        readings[inside] += 1
        ahead[0] += 1000.0 if inside else 10.0
        return real() + ahead[0]
    monkeypatch.setattr(time, "perf_counter", slow)
    slowed = _path(solve(_moons(60, 3), **opts))
    monkeypatch.setattr(time, "perf_counter", real)
    assert readings[0] > 100 and readings[1] > 0   # read, and far ahead, in both places
    assert len(gates) == 2 * n_gates
    assert slowed == normal

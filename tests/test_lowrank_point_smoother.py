"""The point-wise block smoother (:mod:`sdpembed.lowrank.point_smoother`) and the L-BFGS
memory kept across its moves (:meth:`sdpembed.lowrank.inner._Pairs.moved`)."""

from __future__ import annotations

import numpy as np

from sdpembed.lowrank import inner
from sdpembed.lowrank.alm import _ALM
from sdpembed.lowrank.options import LowRankOptions
from sdpembed.lowrank.point_smoother import PointSmoother, _edge_terms


def _subproblem(moons40, kind="equality", rank=3, seed=0):
    _, _, space, pen = moons40
    alm = _ALM(space, pen, LowRankOptions())
    rng = np.random.default_rng(seed)
    y = 0.1 * rng.standard_normal(pen.t.size)
    funs = {}
    run = alm.subproblem(y, 0.0, 2.0, 1.0)
    # the subproblem's own function (``run`` sets its shape), captured from its L-BFGS call
    W0 = space.project(rng.standard_normal((space.dim, rank)))
    orig = inner._lbfgs

    def spy(fun, x0, **kw):
        funs["fun"] = fun
        return orig(fun, x0, **{**kw, "maxiter": 5})
    import sdpembed.lowrank.alm as alm_mod
    alm_mod._lbfgs = spy
    try:
        W, _ = run(W0, 1e-12, 5, None)
    finally:
        alm_mod._lbfgs = orig
    return space, pen, alm, y, funs["fun"], W


def test_edge_terms_are_the_envelope_edge_by_edge(moons40):
    _, _, space, pen = moons40
    rng = np.random.default_rng(1)
    D = pen.t * rng.uniform(0.3, 2.0, pen.t.size)
    y = 0.05 * rng.standard_normal(pen.t.size)
    idx = np.arange(pen.t.size)
    for kind in ("equality", "interval", "shrink", "quadratic"):
        if kind == "interval" and pen.w is None:
            continue
        v, g, d2 = _edge_terms(pen, idx, D, np.abs(y) if kind == "shrink" else y, 2.0, kind)
        yk = np.abs(y) if kind == "shrink" else y
        val, grad = pen.envelope(D, yk, 2.0, kind)
        if kind == "quadratic":
            assert np.isclose(v.sum(), val, rtol=1e-12)
        else:
            assert np.isclose(v.sum(), val, rtol=1e-10, atol=1e-12)
        assert np.allclose(g, grad, rtol=1e-12, atol=1e-15)
        assert np.allclose(d2, pen.second_derivative(D, yk, 2.0, kind))


def test_a_sweep_lowers_the_subproblem_and_moves_an_independent_set(moons40):
    space, pen, alm, y, fun, W = _subproblem(moons40)
    sm = PointSmoother(space, pen, y, 2.0, alm.kind, share=1.0, newton=3)
    x = W.ravel()
    f, g = fun(x)
    out = sm.smooth(x, f, g, fun)
    assert out is not None
    xn, fn, gn = out
    assert fn < f
    f2, g2 = fun(xn)
    assert f2 == fn and np.array_equal(g2, gn)
    # (the sweep starts from the re-centred factor: rows change by rounding elsewhere)
    moved = np.flatnonzero(np.any(np.abs(xn.reshape(W.shape) - W) > 1e-10, axis=1))
    assert moved.size > 1
    i, j = space.gp.edges.T
    on = np.zeros(space.dim, dtype=bool)
    on[moved] = True
    assert not np.any(on[i] & on[j])          # no edge between two moved points


def test_a_sweep_of_one_point_moves_that_point_only(moons40):
    # share 1/n: one point chosen (the largest predicted decrease), the sweep moves it alone
    space, pen, alm, y, fun, W = _subproblem(moons40, seed=2)
    n = space.dim
    sm = PointSmoother(space, pen, y, 2.0, alm.kind, share=1.0 / n, newton=1)
    x = W.ravel()
    f, g = fun(x)
    P = sm._choose(g.reshape(W.shape), _edge_terms(pen, np.arange(pen.t.size),
                                                     np.einsum("ij,ij->i", space.diffs(W),
                                                               space.diffs(W)),
                                                     y, 2.0, alm.kind)[1])
    assert P.size == 1
    out = sm.smooth(x, f, g, fun)
    assert out is not None and out[1] < f
    moved = np.flatnonzero(np.any(np.abs(out[0].reshape(W.shape) - W) > 1e-10, axis=1))
    assert moved.tolist() == P.tolist()


def test_pairs_moved_keeps_the_two_loop_direction():
    # L-BFGS pairs, then the iterate replaced from outside (g -> g_new): the next pair's y
    # is g_next - g_new, and the compact direction still equals the two-loop one
    rng = np.random.default_rng(4)
    N, memory = 300, 4
    dg = np.exp(rng.uniform(-2, 2, N))
    b = rng.standard_normal(N)

    def grad(x):
        return dg * x - b + 0.1 * x ** 3

    def two_loop(g, S, Y, gamma):
        q = g.copy()
        alpha = np.empty(len(S))
        for i in reversed(range(len(S))):
            alpha[i] = (S[i] @ q) / (S[i] @ Y[i])
            q -= alpha[i] * Y[i]
        r = gamma * q
        for i in range(len(S)):
            r += (alpha[i] - (Y[i] @ r) / (S[i] @ Y[i])) * S[i]
        return -r

    pairs = inner._Pairs(memory, N)
    x = np.zeros(N)
    g = grad(x)
    S, Y, gamma, checked = [], [], 1.0, 0
    for step in range(10):
        d = pairs.direction(g, g, gamma) if pairs.used else -g
        if pairs.used:
            ref = two_loop(g, S, Y, gamma)
            assert np.linalg.norm(d - ref) <= 1e-5 * np.linalg.norm(ref), step
            checked += 1
        xn = x + 0.5 * d / max(1.0, np.linalg.norm(d))
        gn = grad(xn)
        s, yv = xn - x, gn - g
        pairs.add(s, yv, float(s @ yv), float(yv @ yv))
        S, Y = (S + [s])[-memory:], (Y + [yv])[-memory:]
        gamma = float(s @ yv) / float(yv @ yv)
        x, g = xn, gn
        if step in (3, 6):                    # an outside move (no pair stored)
            x = x + 0.05 * rng.standard_normal(N)
            gm = grad(x)
            pairs.moved(g, gm)
            g = gm
    assert checked == 9

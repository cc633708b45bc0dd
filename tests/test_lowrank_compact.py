"""The compact L-BFGS memory (:class:`sdpembed.lowrank.inner._Pairs`) against the
two-loop recursion in double precision over the same pairs."""

from __future__ import annotations

import numpy as np
import pytest

from sdpembed.lowrank import inner


def _two_loop(g, S, Y, gamma, Minv):
    q = g.copy()
    alpha = np.empty(len(S))
    for i in reversed(range(len(S))):
        alpha[i] = (S[i] @ q) / (S[i] @ Y[i])
        q -= alpha[i] * Y[i]
    r = gamma * Minv(q)
    for i in range(len(S)):
        r += (alpha[i] - (Y[i] @ r) / (S[i] @ Y[i])) * S[i]
    return -r


@pytest.mark.parametrize("precond", [False, True])
def test_compact_direction_is_the_two_loop_one(precond):
    # a non-quadratic function (the pairs are not those of one fixed Hessian), memory 5
    # over 14 steps (the ring wraps), a reset after step 9 (as on a non-descent direction)
    rng = np.random.default_rng(3)
    N, memory = 400, 5
    dg = np.exp(rng.uniform(-2, 2, N))
    b = rng.standard_normal(N)

    def grad(x):
        return dg * x - b + 0.1 * x ** 3

    def Minv(v):
        return v / dg if precond else v

    pairs = inner._Pairs(memory, N)
    x = np.zeros(N)
    g = grad(x)
    S, Y, gamma, checked = [], [], 1.0, 0
    for step in range(14):
        if pairs.used:
            d = pairs.direction(g, Minv(g), gamma)
            ref = _two_loop(g, S, Y, gamma, Minv)
            assert np.linalg.norm(d - ref) <= 1e-5 * np.linalg.norm(ref), step
            assert g @ d < 0
            checked += 1
        else:
            d = -Minv(g)
        if step == 9:
            pairs.reset()
            S, Y = [], []
        xn = x + 0.5 * d / max(1.0, np.linalg.norm(d))
        gn = grad(xn)
        s, y = xn - x, gn - g
        z = Minv(y)
        pairs.add(s, z, float(s @ y), float(y @ z))
        S, Y = (S + [s])[-memory:], (Y + [y])[-memory:]
        gamma = float(s @ y) / float(y @ z)
        x, g = xn, gn
    assert checked == 13


def test_directions_survive_the_next_call():
    # the products go through buffers kept by the memory: a returned direction must be
    # the caller's, unchanged by later calls, and each equal to the two-loop one
    rng = np.random.default_rng(5)
    N, memory = 300, 4
    dg = np.exp(rng.uniform(-1, 1, N))
    pairs = inner._Pairs(memory, N)
    x = rng.standard_normal(N)
    g = dg * x
    S, Y = [], []
    for _ in range(6):  # the ring wraps
        if pairs.used:
            pairs.direction(g, g, 0.5)
        xn = x + rng.standard_normal(N)
        gn = dg * xn
        s, y = xn - x, gn - g
        pairs.add(s, y, float(s @ y), float(y @ y))
        S, Y = (S + [s])[-memory:], (Y + [y])[-memory:]
        x, g = xn, gn
    g2 = rng.standard_normal(N)
    d1 = pairs.direction(g, g, 0.7)
    kept = d1.copy()
    d2 = pairs.direction(g2, g2, 0.7)
    assert np.array_equal(d1, kept)
    for gv, d in ((g, d1), (g2, d2)):
        ref = _two_loop(gv, S, Y, 0.7, lambda v: v)
        assert np.linalg.norm(d - ref) <= 1e-5 * np.linalg.norm(ref)

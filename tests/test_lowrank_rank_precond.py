"""The rank-side preconditioner of L-BFGS (:mod:`sdpembed.lowrank.rank_precond`)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from sdpembed.lowrank import rank_precond
from sdpembed.lowrank.inner import _lbfgs
from sdpembed.lowrank.rank_precond import RankPreconditioner, rank_preconditioner


def _factor(rng, n, scales):
    Q = np.linalg.qr(rng.standard_normal((n, len(scales))))[0]
    W = Q * np.asarray(scales)
    return W - W.mean(axis=0)


def test_inverse_is_symmetric_positive_definite_and_keeps_centring():
    rng = np.random.default_rng(0)
    n, r = 50, 4
    W = _factor(rng, n, [1.0, 0.3, 1e-3, 1e-5])
    pc = RankPreconditioner((n, r), 1e-4)
    Minv = pc.at(W.ravel())
    u, v = rng.standard_normal(n * r), rng.standard_normal(n * r)
    assert abs(u @ Minv(v) - v @ Minv(u)) <= 1e-10 * abs(u @ Minv(v))
    for _ in range(5):
        w = rng.standard_normal(n * r)
        assert w @ Minv(w) > 0
    # the inverse of W^T W + eta I, eta = 1e-4 tr(W^T W), on the right
    P = W.T @ W + 1e-4 * np.trace(W.T @ W) * np.eye(r)
    G = rng.standard_normal((n, r))
    assert np.allclose(Minv(G.ravel()).reshape(n, r) @ P, G, rtol=1e-8, atol=1e-8)
    Gc = G - G.mean(axis=0)
    assert np.allclose(Minv(Gc.ravel()).reshape(n, r).mean(axis=0), 0.0, atol=1e-10)


def test_eta_follows_the_residual_within_its_bounds():
    shape = (10, 2)
    assert RankPreconditioner(shape, np.inf).eta_rel == 1.0
    assert RankPreconditioner(shape, 5.0).eta_rel == 1.0
    assert RankPreconditioner(shape, 3e-3).eta_rel == 3e-3
    assert RankPreconditioner(shape, 0.0).eta_rel == rank_precond._ETA_MIN


def test_refresh_only_where_the_gram_matrix_drifts():
    rng = np.random.default_rng(1)
    n = 40
    W = _factor(rng, n, [1.0, 0.5, 1e-3])
    pc = RankPreconditioner(W.shape, 1e-6)
    pc.at(W.ravel())
    assert pc.refresh(W.ravel()) is None
    W2 = W.copy()
    W2[:, 2] *= 1.2                     # the small column grows 1.44-fold in its square
    assert pc.refresh(W2.ravel()) is None
    W2[:, 2] *= 10.0                    # now 144-fold: a new metric
    new = pc.refresh(W2.ravel())
    assert new is not None and pc.refreshes == 1
    assert pc.refresh(W2.ravel()) is None


def test_the_rule_takes_factors_with_a_small_column(monkeypatch):
    monkeypatch.setattr(rank_precond, "_ETA_RULE", "residual")
    rng = np.random.default_rng(2)
    spread = _factor(rng, 30, [1.0, 0.5, 0.2])
    # columns at 5e-3 to 1e-2 of the largest (usps1000-k8-s1's after its growth) are moved
    # by plain L-BFGS: no switch; 3e-4 (usps2500-tangent-k5's new columns) is below it
    moving = _factor(rng, 30, [1.0, 1e-2, 5e-3])
    small = _factor(rng, 30, [1.0, 0.5, 3e-4])
    assert rank_preconditioner(spread, 0.1, fresh=True) is None
    assert rank_preconditioner(moving, 0.1, fresh=True) is None
    assert isinstance(rank_preconditioner(small, 0.1, fresh=True), RankPreconditioner)
    assert rank_preconditioner(small[:, :1], 0.1, fresh=True) is None
    # a small column with no growth just before (driven there by the iterations): plain
    assert rank_preconditioner(small, 0.1) is None


def test_column_scaled_curvature_is_what_it_removes():
    # f(W) = tr(W^T L W D)/2 - <B, W>: the Hessian L (x) D, D = the starting columns'
    # squared sizes (1 to 1e-6), as a factor's Gauss-Newton curvature along its columns.
    # Plain L-BFGS, whose H0 is one number, creeps along the small columns; H0 = (W0^T W0
    # + eta I)^{-1} on the right leaves it the graph's conditioning only.
    rng = np.random.default_rng(1)
    n = 200
    s = np.array([1.0, 0.5, 1e-1, 1e-2, 1e-3])
    L = sp.diags([-np.ones(n - 1), 2.2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1]).tocsr()
    W0 = np.linalg.qr(rng.standard_normal((n, s.size)))[0] * s
    D = s ** 2
    B = rng.standard_normal((n, s.size)) * D

    def fun(x):
        W = x.reshape(n, s.size)
        LWD = (L @ W) * D
        return 0.5 * float(np.sum(W * LWD)) - float(np.sum(B * W)), (LWD - B).ravel()

    f_star = fun(np.linalg.solve(L.toarray(), B / D).ravel())[0]
    pc = RankPreconditioner(W0.shape, 1e-6)
    pre = _lbfgs(fun, W0.ravel(), gtol=1e-7, maxiter=400, ftol=0.0,
                 precond=pc.at(W0.ravel()), refresh=pc.refresh)
    plain = _lbfgs(fun, W0.ravel(), gtol=1e-7, maxiter=400, ftol=0.0)
    gap_pre, gap_plain = fun(pre.x)[0] - f_star, fun(plain.x)[0] - f_star
    assert gap_pre <= 1e-9 * abs(f_star)
    assert gap_plain > 1e3 * max(gap_pre, 1e-14)


def test_balance_is_first_order_over_gauss_newton_curvature(monkeypatch):
    # psi(D) = y D + sigma (D - t)^2 / 2 on three edges: psi' = y + sigma (D - t),
    # psi'' = sigma; the share is sum |psi'| / (2 sigma sum D)
    W = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 2.0], [0.0, 2.0]])
    ends = np.array([[0, 1], [1, 2], [2, 3]])
    t, sigma = np.array([1.0, 2.0, 3.0]), 0.5

    def envelope(D, y, s, kind):
        return 0.0, y + s * (D - t)

    alm = SimpleNamespace(
        space=SimpleNamespace(diffs=lambda V: V[ends[:, 0]] - V[ends[:, 1]]),
        pen=SimpleNamespace(envelope=envelope,
                            second_derivative=lambda D, y, s, kind: np.full_like(D, s)),
        kind="equality")
    y = np.array([0.1, -0.2, 0.3])
    D = np.array([1.0, 4.0, 1.0])
    want = np.sum(np.abs(y + sigma * (D - t))) / (2 * sigma * D.sum())
    assert np.isclose(rank_precond.balance(alm, W, y, sigma), want)
    monkeypatch.setattr(rank_precond, "_WHEN", "all")
    pc = rank_preconditioner(W, 0.1, alm, y, sigma)
    assert pc is not None and np.isclose(pc.eta_rel, want)
    alm.pen.second_derivative = lambda D, y, s, kind: np.zeros_like(D)
    assert rank_precond.balance(alm, W, y, sigma) == np.inf
    assert rank_preconditioner(W, 0.1, alm, y, sigma) is None

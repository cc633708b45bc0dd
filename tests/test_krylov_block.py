"""The unrestarted shift-invert Lanczos of sparse_bottom (sdpembed.lowrank.krylov_block).

Reference: dense ``eigh`` (error about n u ||A||). The operator's top is a crowd of close
eigenvalues, as the bottom of the dual slack near the optimum at large n, where ARPACK
restarts."""

import numpy as np
import pytest
import scipy.sparse.linalg as spla

import sdpembed.lowrank as lowrank
from sdpembed._arpack import eigsh
from sdpembed.formulations.dvu import dvu_problem
from sdpembed.formulations.gram import centering_basis
from sdpembed.lowrank import sparse_slack
from sdpembed.lowrank.krylov_block import top_pairs


def _crowded(n=600, k=40, seed=0):
    """The shift-invert operator 1/(lambda - sigma) on 1-perp of a spectrum like the dual
    slack's near the optimum: 38 tiny negative eigenvalues, 60 tiny positive ones, then
    a bulk from 1e-3; sigma just below the bottom."""
    rng = np.random.default_rng(seed)
    H = centering_basis(n)
    lam = np.r_[-3.6e-7 * rng.random(38) ** 2, 1e-8 * rng.random(60),
                1e-3 + rng.random(n - 1 - 98)]
    V, _ = np.linalg.qr(rng.standard_normal((n - 1, n - 1)))
    A = H @ (V / (lam + 3.9e-7)) @ V.T @ H.T
    count = [0]

    def mv(x):
        count[0] += 1
        return A @ x
    return spla.LinearOperator((n, n), matvec=mv, dtype=float), A, count


def test_top_pairs_match_dense_and_take_fewer_solves_than_arpack():
    n, k = 600, 40
    O, A, count = _crowded(n, k)
    v0 = np.random.default_rng(1).standard_normal(n)
    theta, X = top_pairs(O, n, k, v0=v0, tol=1e-10, max_steps=6 * k)
    mine = count[0]
    w = np.linalg.eigvalsh(A)[-k:]
    scale = w[-1]
    np.testing.assert_allclose(theta, w, atol=1e-12 * scale)
    np.testing.assert_allclose(X.T @ X, np.eye(k), atol=1e-10)
    assert np.linalg.norm(A @ X - X * theta, axis=0).max() < 1e-8 * scale
    assert np.abs(X.sum(axis=0)).max() < 1e-10              # on 1-perp
    count[0] = 0
    eigsh(O, k=k, which="LA", v0=v0, ncv=2 * k + 1, tol=1e-10)
    assert mine < count[0]


def test_top_pairs_give_up_at_max_steps():
    n, k = 600, 40
    O, _, count = _crowded(n, k)
    v0 = np.random.default_rng(1).standard_normal(n)
    assert top_pairs(O, n, k, v0=v0, tol=1e-10, max_steps=k + 5) is None
    assert count[0] == k + 5


def test_an_invariant_subspace_ends_the_run_exactly():
    """A start in the span of 8 eigenvectors: the Krylov space is exhausted after 8 steps
    and its Ritz pairs are exact."""
    n, k = 200, 5
    rng = np.random.default_rng(3)
    H = centering_basis(n)
    V, _ = np.linalg.qr(H @ rng.standard_normal((n - 1, n - 1)))
    w = np.linspace(0.0, 1.0, n - 1)
    A = (V * w) @ V.T
    v0 = V[:, -8:] @ rng.standard_normal(8)
    theta, X = top_pairs(spla.aslinearoperator(A), n, k, v0=v0, tol=1e-10, max_steps=100)
    np.testing.assert_allclose(theta, w[-5:], atol=1e-12)
    assert np.linalg.norm(A @ X - X * theta, axis=0).max() < 1e-10


@pytest.fixture(scope="module")
def data_space(partial_digits):
    X, y, graph, rng = partial_digits(90)
    gp = dvu_problem(graph, y)
    space = lowrank.FactorSpace(gp, None, limits=lowrank.DenseLimits(eig=10))
    # multipliers spread, so that S has no repeated eigenvalue (a single-vector Krylov
    # space ends at the number of distinct ones)
    ym = -0.05 * (1.0 + rng.random(gp.edges.shape[0]))
    S = space.apply_S(np.eye(space.dim), ym, space.duals(0.0))
    H = centering_basis(space.dim)
    w = np.linalg.eigvalsh(H.T @ S @ H)
    return space, ym, w, np.abs(w).max()


def test_sparse_bottom_falls_back_to_arpack(data_space, monkeypatch):
    space, ym, w, norm = data_space
    calls = []
    monkeypatch.setattr(sparse_slack, "top_pairs", lambda *a, **kw: calls.append(a[2]))
    k = sparse_slack._LANCZOS_MIN_PAIRS
    lam, _, _ = sparse_slack.sparse_bottom(space, ym, 0.0, k, sigma=w[0] - 0.1 * norm)
    assert calls == [k]                        # asked, gave up: ARPACK's pairs
    np.testing.assert_allclose(lam, w[:k], atol=1e-10 * norm)
    lam, _, _ = sparse_slack.sparse_bottom(space, ym, 0.0, 6, sigma=w[0] - 0.1 * norm)
    assert calls == [k]                        # a small block: ARPACK only
    np.testing.assert_allclose(lam, w[:6], atol=1e-10 * norm)


def test_sparse_bottom_takes_a_large_block_from_the_unrestarted_run(data_space, returns_of):
    space, ym, w, norm = data_space
    outs = returns_of(sparse_slack, "top_pairs")
    k = sparse_slack._LANCZOS_MIN_PAIRS
    lam, X, _ = sparse_slack.sparse_bottom(space, ym, 0.0, k, sigma=w[0] - 0.1 * norm)
    assert [out is not None for out in outs] == [True]
    np.testing.assert_allclose(lam, w[:k], atol=1e-10 * norm)
    np.testing.assert_allclose(X.T @ X, np.eye(k), atol=1e-10)


def test_orthogonalise_repeats_the_pass_only_where_it_cancels():
    """DGKS: a vector almost in the basis' span loses most of its norm in the first pass,
    which leaves rounding of the size of the removed part; the second pass takes it out.
    A vector mostly outside the span and 1 keeps its norm after one pass; one mostly
    along 1 does not."""
    from sdpembed.lowrank.krylov_block import _orthogonalise
    n, m = 2000, 60
    rng = np.random.default_rng(5)
    basis, _ = np.linalg.qr(centering_basis(n) @ rng.standard_normal((n - 1, m)))
    r = rng.standard_normal(n)
    w = 1e8 * (basis @ rng.standard_normal(m)) + r + 3.0
    out, norm, passes = _orthogonalise(w, basis)
    assert passes == 2
    assert np.isclose(norm, np.linalg.norm(out))
    assert np.abs(basis.T @ out).max() < 1e-12 * norm
    assert abs(out.sum()) < 1e-12 * norm * np.sqrt(n)
    assert _orthogonalise(r + 3.0, basis)[2] == 2
    out1, norm1, passes1 = _orthogonalise(r, basis)
    assert passes1 == 1
    assert np.abs(basis.T @ out1).max() < 1e-12 * norm1
    assert abs(out1.sum()) < 1e-12 * norm1 * np.sqrt(n)


def test_top_pairs_end_early_at_the_largest_pair_when_asked():
    """``early``: asked with the largest Ritz value once its pair converged; True ends the
    run there with that pair alone (the dense top eigenpair, in fewer steps than the
    block's), False leaves the full run unchanged, step for step."""
    n, k = 600, 40
    O, A, count = _crowded(n, k)
    v0 = np.random.default_rng(1).standard_normal(n)
    theta, X = top_pairs(O, n, k, v0=v0, tol=1e-10, max_steps=6 * k)
    full = count[0]
    w = np.linalg.eigvalsh(A)
    asked = []
    count[0] = 0
    th1, X1 = top_pairs(O, n, k, v0=v0, tol=1e-10, max_steps=6 * k,
                        early=lambda t: asked.append(t) or True)
    assert th1.shape == (1,) and X1.shape == (n, 1) and count[0] < full
    np.testing.assert_allclose(asked, [w[-1]], atol=1e-12 * w[-1])
    np.testing.assert_allclose(th1, w[-1:], atol=1e-12 * w[-1])
    assert np.linalg.norm(A @ X1 - X1 * th1) < 1e-8 * w[-1]
    count[0] = 0
    th2, X2 = top_pairs(O, n, k, v0=v0, tol=1e-10, max_steps=6 * k, early=lambda t: False)
    assert count[0] == full
    np.testing.assert_array_equal(th2, theta)
    np.testing.assert_array_equal(X2, X)


def test_a_lift_above_the_dense_limit_ends_on_the_smallest_pair_alone(
        partial_digits, returns_of, monkeypatch):
    """lift_multipliers on the shift-invert path (blocks of 60 pairs by the unrestarted
    run): the block that ends the lift stops at its smallest pair, and the lift is the one
    made with whole blocks (the same multipliers, bit for bit), its eigenvalue the dense
    lambda_min of the lifted slack on 1-perp."""
    X, y, graph, rng = partial_digits(90)
    gp = dvu_problem(graph, y)
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(tol=1e-8))
    space = lowrank.FactorSpace(gp, None, limits=lowrank.DenseLimits(eig=10, block=60))
    pen = lowrank.DistancePenalty(gp)
    noise = 1e-4 * np.random.default_rng(0).standard_normal(res.y.shape) * np.abs(res.y).max()
    y_noisy = np.clip(res.y + noise, -pen.w, pen.w)
    outs = returns_of(sparse_slack, "top_pairs")
    y_l, eig = lowrank.lift_multipliers(space, pen, y_noisy, res.nu)
    sizes = [None if out is None else out[0].size for out in outs]
    assert sizes[-1] == 1 and all(s == 60 for s in sizes[:-1]) and len(sizes) >= 2
    real = sparse_slack.top_pairs
    monkeypatch.setattr(sparse_slack, "top_pairs",
                        lambda *a, early=None, **kw: real(*a, **kw))
    y_w, eig_w = lowrank.lift_multipliers(space, pen, y_noisy, res.nu)
    np.testing.assert_array_equal(y_l, y_w)
    H = centering_basis(gp.n)
    SH = space.apply_S(H, y_l, res.nu)
    lam = np.linalg.eigvalsh(0.5 * (H.T @ SH + SH.T @ H))[0]
    assert eig.value == pytest.approx(lam, rel=1e-6, abs=1e-12 * np.abs(SH).max())
    assert eig_w.value == pytest.approx(eig.value, rel=1e-6, abs=1e-12 * np.abs(SH).max())


def test_each_gram_schmidt_pass_reads_one_contiguous_block_of_the_basis(monkeypatch):
    """The basis of the first m steps is handed to the Gram-Schmidt as one column-major
    block (``Q[:, :m]`` of a column-major ``Q``): a pass reads those m columns only, not a
    strided slice of every row of the whole ``n x max_steps`` array; the pairs are the
    dense ones as before."""
    from sdpembed.lowrank import krylov_block
    n, k = 600, 40
    O, A, _ = _crowded(n, k)
    seen = []
    orig = krylov_block._orthogonalise

    def spy(w, basis):
        seen.append((basis.shape[1], basis.flags.f_contiguous))
        return orig(w, basis)
    monkeypatch.setattr(krylov_block, "_orthogonalise", spy)
    v0 = np.random.default_rng(1).standard_normal(n)
    theta, X = top_pairs(O, n, k, v0=v0, tol=1e-10, max_steps=6 * k)
    assert [m for m, _ in seen] == list(range(1, len(seen) + 1))
    assert all(f for _, f in seen)
    w = np.linalg.eigvalsh(A)[-k:]
    np.testing.assert_allclose(theta, w, atol=1e-12 * w[-1])
    np.testing.assert_allclose(X.T @ X, np.eye(k), atol=1e-10)

"""The dual slack matrix factorised sparsely (sdpembed.lowrank.sparse_slack).

Reference: dense ``eigvalsh`` of S on 1-perp (error about n u ||S||, 1e-13 here). A
verification must never succeed above the true smallest eigenvalue (that would contradict
the proof) and must succeed a little below it (1e-9 ||S||, far above the rounding bounds of
about 1e-15 ||S||); shift-invert eigenvalues must match the dense ones to 1e-10 ||S||.
"""

import time

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

import sdpembed.lowrank as lowrank
from sdpembed.formulations import dvu
from sdpembed.formulations.dvu import dvu_problem
from sdpembed.formulations.gram import centering_basis
from sdpembed.formulations.mvu import mvu_problem
from sdpembed.lowrank import sparse_slack
from sdpembed.lowrank.sparse_slack import SlackParts, SparseCheck, sparse_bottom, sparse_verify
from sdpembed.lowrank.verify import (
    _dense_verified_lambda_min,
    _sparse_verified_lambda_min,
    _verified_lambda_min,
)

#: CHOLMOD needs the optional cvxopt; QDLDL and SuperLU are always there
METHODS = [pytest.param("cholmod", marks=pytest.mark.skipif(
    sparse_slack.FACTORISATION != "cholmod", reason="cvxopt (CHOLMOD) not installed")),
    "ldl", "lu"]


@pytest.fixture(scope="module")
def data(digits90):
    return digits90


def _dense_S(space, y, nu):
    n = space.dim
    return space.apply_S(np.eye(n), y, space.duals(nu))


def _exact(space, y, nu):
    S = _dense_S(space, y, nu)
    H = centering_basis(space.dim)
    w = np.linalg.eigvalsh(H.T @ S @ H)
    return w, np.abs(w).max()


def _space(gp):
    return lowrank.FactorSpace(gp, None, limits=lowrank.DenseLimits(eig=10))


def _cases(data):
    X, y, graph = data
    rng = np.random.default_rng(1)
    gp = dvu_problem(graph, y)
    pen = lowrank.DistancePenalty(gp)
    out = {"dvu": (gp, rng.uniform(-1, 1, pen.t.size) * pen.w, 0.0)}
    gp_snr = dvu_problem(graph, y, snr=3.0)
    out["dvu snr"] = (gp_snr, rng.uniform(-1, 1, pen.t.size) * pen.w, np.array([0.7]))
    f = dvu(graph, y, centroids="eliminated")
    G = f.expressions["gram"]
    g = f.with_constraints([G[0, 0] + G[1, 1] - 2 * G[0, 1] <= 0.2, G[2, 3] == 0.1,
                            cp.trace(G) <= 50])
    gp_k = g.current_problem()
    out["dvu added rows"] = (gp_k, rng.uniform(-1, 1, pen.t.size) * pen.w,
                             np.array([0.5, -0.3, 0.2]))
    gp_m = mvu_problem(graph)
    out["mvu"] = (gp_m, np.full(gp_m.edges.shape[0], 2.0), 0.0)
    return out


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", ["dvu", "dvu snr", "dvu added rows", "mvu"])
def test_verification_brackets_the_true_smallest_eigenvalue(data, case, method):
    gp, y, nu = _cases(data)[case]
    space = _space(gp)
    w, norm = _exact(space, y, nu)
    lam = w[0]
    below = sparse_verify(space, y, nu, lam - 1e-9 * norm, method=method)
    assert below.verified, below.reason
    # the margin is a rounding bound, 50 gamma_t (t the terms of one entry of S) times a
    # bound on ||S - mu I||: about 1e-11 ||S|| where added rows make the entries long sums
    assert 0 < below.bound < below.delta <= 1e-11 * norm
    for mode in ("full", "tree"):
        above = sparse_verify(space, y, nu, lam + 1e-9 * norm, mode=mode, method=method)
        assert not above.verified
    # the coordinates chosen: full where 1 is an eigenvector above the shift (DVU without
    # rows that move it), the tree basis elsewhere (MVU: 1 sits at -1)
    expected = {"dvu": "full", "dvu snr": "full", "mvu": "tree"}.get(case)
    if expected:
        assert below.mode == expected


@pytest.mark.parametrize("method", METHODS)
def test_full_coordinates_are_refused_where_they_would_fail(data, method):
    gp, y, nu = _cases(data)["mvu"]
    space = _space(gp)
    w, norm = _exact(space, y, nu)
    full = sparse_verify(space, y, nu, w[0] - 1e-9 * norm, mode="full", method=method)
    assert not full.verified and ("pivot" in full.reason or "LDL" in full.reason)


def _factor_abs(fac):
    """|L| (CSC, the factor's own storage) and the pivots of a symmetric factorisation."""
    if fac.chol is not None:
        L = fac._cholmod_factor()
        return abs(L), np.ones(fac.size)
    _, Ls, d, _ = fac.ldl
    return abs(Ls) + sp.identity(Ls.shape[0], format="csc"), d


@pytest.mark.parametrize("method", METHODS[:2])
@pytest.mark.parametrize("case,mode", [("dvu", "full"), ("dvu added rows", "full"),
                                       ("mvu", "tree")])
def test_symmetric_residual_bound_reads_the_factor_as_stored(data, case, mode, method):
    # the bound from the factor's column storage (no conversion) equals the one from its
    # rows to rounding, and lies above the same formula with the exact Perron root of
    # |L||D||L^T| (Collatz-Wielandt) and the exact block norm (dense, n = 90)
    gp, y, nu = _cases(data)[case]
    space = _space(gp)
    w, norm = _exact(space, y, nu)
    parts = SlackParts.of(space, y, nu)
    mu = w[0] - 1e-6 * norm
    T = sparse_slack._tree_basis(space) if mode == "tree" else None
    delta = sparse_slack.default_delta(parts, mu, method)
    fac = sparse_slack._Bordered(parts, mu, delta, T, method)
    assert fac.factored and not fac.reason and np.all(fac.pivots() > 0)
    bound = fac.residual_bound()
    L, d = _factor_abs(sparse_slack._Bordered(parts, mu, delta, T, method))
    assert L.format == "csc"
    rows = sparse_slack._Bordered(parts, mu, delta, T, method)._symmetric_residual_bound(
        L.tocsr(), d)
    assert bound == pytest.approx(rows, rel=1e-12, abs=0.0)
    # the formula, exactly: counts from the rows' storage, dense Perron root and block
    counts = np.diff(L.tocsr().indptr)
    size, k = L.shape[0], min(L.shape[0] - 1, 2 * fac.p + 8)
    c0 = int(np.sort(counts)[size - 1 - k])
    long = counts > c0
    P = (L @ sp.diags(np.abs(d)) @ L.T).toarray()
    rho = float(np.linalg.eigvalsh(P)[-1])
    g = sparse_slack._gamma
    exact = fac.form_error + g(c0 + 2) * rho + (
        g(int(counts.max()) + 2) - g(c0 + 2)) * float(np.linalg.norm(P[np.ix_(long, long)]))
    assert exact <= bound <= 1.01 * exact


@pytest.mark.parametrize("case", ["dvu", "dvu snr"])
def test_shift_invert_bottom_matches_dense(data, case):
    gp, y, nu = _cases(data)[case]
    space = _space(gp)
    w, norm = _exact(space, y, nu)
    lam, X, sigma = sparse_bottom(space, y, nu, 12, sigma=-1.3e-9 * norm)
    assert sigma < w[0]
    np.testing.assert_allclose(lam, w[:12], atol=1e-10 * norm)
    S = _dense_S(space, y, nu)
    assert np.abs(X.sum(axis=0)).max() < 1e-10            # on 1-perp
    np.testing.assert_allclose(X.T @ X, np.eye(12), atol=1e-10)
    assert np.linalg.norm(S @ X - X * lam, axis=0).max() < 1e-8 * norm


def test_a_positive_low_rank_part_is_left_out_and_the_proof_stays_valid(data):
    """S with a positive low-rank term: the factorised matrix is below S, so whatever it
    proves holds for S (never a success above the true value)."""
    X, y, graph = data
    gp = dvu_problem(graph, y)
    C = gp.full_objective()
    u = np.random.default_rng(2).standard_normal((gp.n, 1))
    plus = type(C)(C.diag, np.c_[C.U, u], np.r_[C.s, 0.05])
    space = lowrank.FactorSpace(gp, None, limits=lowrank.DenseLimits(eig=10), objective=plus)
    pen = lowrank.DistancePenalty(gp)
    y_ = np.random.default_rng(3).uniform(-1, 1, pen.t.size) * pen.w
    assert SlackParts.of(space, y_, 0.0).dropped
    w, norm = _exact(space, y_, 0.0)
    for mu in (w[0] + 1e-9 * norm, w[0] + 1e-3 * norm):
        assert not sparse_verify(space, y_, 0.0, mu, mode="tree").verified
    assert sparse_verify(space, y_, 0.0, w[0] - 0.2 * norm, mode="tree").verified


@pytest.fixture(scope="module")
def near_singular(data):
    """DVU at its optimum (LOWRANK, certified): S has a cluster of eigenvalues at 0, the
    factor's rank of them, the hard case for a proof just below 0."""
    X, y, graph = data
    gp = dvu_problem(graph, y)
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(tol=1e-6, random_state=0))
    assert res.status == "optimal" and res.y is not None
    return gp, res.y, res.nu


@pytest.mark.parametrize("case", ["dvu", "dvu snr", "dvu added rows", "mvu", "optimum"])
def test_verified_lambda_min_is_below_the_dense_one_and_agrees_with_the_dense_proof(
        data, near_singular, case, monkeypatch):
    """Each sparse proof (one factorisation at the estimate: CHOLMOD, QDLDL or SuperLU) gives
    a bound at or below the exact smallest eigenvalue (dense ``eigvalsh``; indefinite S:
    random multipliers, definite: MVU's, near-singular: the optimum's), within 1e-9 ||S|| of
    it, of each other and of the dense Cholesky proof's bound."""
    gp, y, nu = near_singular if case == "optimum" else _cases(data)[case]
    space = _space(gp)
    w, norm = _exact(space, y, nu)
    lam = w[0]
    if case == "optimum":
        assert abs(lam) < 1e-6 * norm and w[1] < 1e-6 * norm   # a cluster at zero
    elif case == "mvu":
        assert lam > 1e-3 * norm                                  # positive definite
    else:
        assert lam < -1e-3 * norm                                 # indefinite
    got = {}
    for method in [m if isinstance(m, str) else m.values[0] for m in METHODS]:
        if method == "cholmod" and sparse_slack.FACTORISATION != "cholmod":
            continue
        monkeypatch.setattr(sparse_slack, "FACTORISATION", method)
        mu, why, checks = _sparse_verified_lambda_min(space, y, nu, lam)
        assert mu is not None, why
        assert mu <= lam and lam - mu <= 1e-9 * norm
        assert checks[-1].verified and checks[-1].factor_nnz > 0
        got[method] = mu
    if space.gp.n <= space.limits.verify:
        mu_d, why, _ = _dense_verified_lambda_min(space, y, nu, lam)
        assert mu_d is not None, why
        assert mu_d <= lam and abs(got["ldl"] - mu_d) <= 1e-9 * norm
    assert max(got.values()) - min(got.values()) <= 1e-9 * norm
    # an estimate above the smallest eigenvalue is never "verified" there
    mu, _, checks = _sparse_verified_lambda_min(space, y, nu, lam + 1e-3 * norm)
    assert mu is None or mu <= lam


def _dvu_at_bottom(data, target):
    """DVU multipliers whose S has its smallest eigenvalue on 1-perp at ``target`` (times
    a bound on ||S||) while 1 stays an eigenvector at 0: random multipliers plus t on every
    edge (a Laplacian, raising the bottom on 1-perp monotonically), t by bisection."""
    gp, y, nu = _cases(data)["dvu"]
    space = _space(gp)
    norm = _exact(space, y, nu)[1]
    lo, hi = 0.0, 1.0
    while _exact(space, y + hi, nu)[0][0] < target * norm:
        lo, hi = hi, 2.0 * hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _exact(space, y + mid, nu)[0][0] < target * norm else (lo, mid)
    yt = y + hi
    w, norm = _exact(space, yt, nu)
    return space, yt, nu, w[0], norm


@pytest.mark.skipif(sparse_slack.FACTORISATION != "cholmod",
                    reason="cvxopt (CHOLMOD) not installed")
def test_a_positive_estimate_is_proved_at_enough_on_the_tree_basis(data):
    """The constant vector an eigenvector at 0 below a small positive bottom on 1-perp (the
    links row's final certificate): full coordinates are refused, the tree basis just below
    an estimate above the bottom fails; with ``enough = 0`` a tree-basis proof at 0 serves
    (no dense factorisation), without it the dense proof does."""
    space, y, nu, lam, norm = _dvu_at_bottom(data, 1e-7)
    assert 0 < lam < 2e-7 * norm
    est = 2.0 * lam                                        # an estimate above the bottom
    mu, why, checks = _verified_lambda_min(space, y, nu, est, enough=0.0)
    assert mu == 0.0, why
    assert all(isinstance(c, SparseCheck) and c.mode == "tree" for c in checks)
    assert [c.verified for c in checks] == [False, True]
    mu, why, checks = _verified_lambda_min(space, y, nu, est)
    assert mu is not None and mu <= lam, why
    assert not all(isinstance(c, SparseCheck) for c in checks)


@pytest.mark.skipif(sparse_slack.FACTORISATION != "cholmod",
                    reason="cvxopt (CHOLMOD) not installed")
def test_enough_is_not_proved_above_a_negative_bottom(data):
    """A wrong positive estimate of a negative bottom on 1-perp: the proof at ``enough = 0``
    must fail, and whatever is verified is at or below the true bottom."""
    space, y, nu, lam, norm = _dvu_at_bottom(data, -1e-7)
    assert -2e-7 * norm < lam < 0
    mu, why, checks = _verified_lambda_min(space, y, nu, 1e-7 * norm, enough=0.0)
    tree = [c for c in checks if isinstance(c, SparseCheck)]
    assert len(tree) == 2 and tree[1].mu == 0.0 and not tree[1].verified
    assert mu is None or mu <= lam


@pytest.mark.parametrize("method", METHODS)
def test_shift_invert_solves_agree(data, method):
    """The shift-invert operator of each factorisation solves the system (SuperLU's as
    the reference)."""
    gp, y, nu = _cases(data)["dvu"]
    space = _space(gp)
    w, norm = _exact(space, y, nu)
    b = np.random.default_rng(5).standard_normal((space.dim, 3))
    out = {}
    for m in (method, "lu"):
        solve, positive = sparse_slack.factor_at_shift(space, y, nu, w[0] - 0.1 * norm,
                                                       method=m)
        assert positive
        out[m] = solve(b)
    np.testing.assert_allclose(out[method], out["lu"], rtol=1e-8, atol=1e-10)
    S = _dense_S(space, y, nu) - (w[0] - 0.1 * norm) * np.eye(space.dim)
    np.testing.assert_allclose(S @ out[method], b, atol=1e-7 * np.abs(b).max())


@pytest.mark.parametrize("case", ["dvu", "dvu snr"])
def test_raised_shift_sits_just_below_the_bottom_in_one_factorisation(data, case,
                                                                      returns_of):
    """Given ``raise_to``, a shift far below the spectrum is raised once, to
    ``_NEAR_MARGIN`` below the shift-invert estimate of lambda_min (two factorisations in
    all, not the halvings'), still below the dense lambda_min; the pairs are the dense
    ones."""
    gp, y, nu = _cases(data)[case]
    space = _space(gp)
    w, norm = _exact(space, y, nu)
    outs = returns_of(sparse_slack, "factor_at_shift")
    sigma0 = w[0] - 100.0 * abs(w[0]) - 1e-9 * norm
    lam, X, sigma = sparse_bottom(space, y, nu, 12, sigma=sigma0, raise_to=-1e-9 * norm)
    assert [out[1] for out in outs] == [True, True]
    assert sigma < w[0]
    assert sigma >= min(w[0] - 2.0 * sparse_slack._NEAR_MARGIN * abs(w[0]), -1e-9 * norm)
    np.testing.assert_allclose(lam, w[:12], atol=1e-10 * norm)
    S = _dense_S(space, y, nu)
    assert np.linalg.norm(S @ X - X * lam, axis=0).max() < 1e-8 * norm


def test_a_block_certificate_starts_no_factorisation_past_the_time_limit(data, monkeypatch):
    """Every factorisation of the slack costs 100 s on a fake clock (the solves none).
    With 150 s to the solve's deadline and no slack, a shift-invert certificate (``certify``
    on a block, n > ``limits.eig``) makes its first factorisation, leaves out the nearer
    shift's (it would end at 200 s) and still ends with a bound, inside the limit; with
    50 s it starts none and says why. Each factorisation's measured seconds are kept in
    the cache, and the next certificate's skip estimate is made of them."""
    from sdpembed.lowrank import certificate as cmod

    gp, y, nu = _cases(data)["dvu"]
    space = _space(gp)
    pen = lowrank.DistancePenalty(gp)
    assert pen.mode == "interval" and cmod._block_certificate(space, pen)
    w0 = float(_exact(space, y, nu)[0][0])
    assert w0 < 0
    now, made = [0.0], []
    factor = sparse_slack.factor_at_shift

    def slow(*args, **kw):
        made.append(now[0])
        out = factor(*args, **kw)
        now[0] += 100.0
        return out
    monkeypatch.setattr(sparse_slack, "factor_at_shift", slow)
    monkeypatch.setattr(time, "perf_counter", lambda: now[0])

    cache = cmod.CertificateCache(deadline=150.0, slack=0.0, lambda_guess=w0)
    cert = cmod.certify(space, pen, y, nu, cache=cache, block=12)
    assert made == [0.0]                       # main: [0.0, 100.0], ending at 200 s
    assert now[0] <= cache.deadline
    assert cert.bound is not None and cert.check == cmod.CHECK_SHIFT_INVERT
    assert cache.factor_seconds == [100.0]
    assert cache.block_estimate() == 100.0     # the block just made
    # a fresh solve that has measured one factorisation (say, a verification) estimates
    # a block at two of them
    fresh = cmod.CertificateCache(deadline=np.inf, eig_seconds=3.0, factor_seconds=[100.0])
    assert fresh.block_estimate() == 200.0 and fresh.verify_estimate() == 100.0

    now[0], made[:] = 0.0, []
    cache = cmod.CertificateCache(deadline=50.0, slack=0.0, lambda_guess=w0,
                                  factor_seconds=[100.0])
    cert = cmod.certify(space, pen, y, nu, cache=cache, block=12)
    assert made == [] and cert.bound is None and cmod.BLOCK_STOPPED in cert.note


def test_an_arpack_failure_gives_a_certificate_without_a_bound(data, monkeypatch):
    """ARPACK's error 3 ("no shifts could be applied", met on a 91-point MVU slack with
    ``dense_limits.eig`` lowered) inside a block certificate's shift-invert Lanczos: the
    attempt ends without a bound and says why; the error does not escape ``solve`` untyped
    (issue 40: every exception reaching the user is typed)."""
    import scipy.sparse.linalg as spla

    from sdpembed.lowrank import certificate as cmod

    gp, y, nu = _cases(data)["dvu"]
    space = _space(gp)
    pen = lowrank.DistancePenalty(gp)
    assert cmod._block_certificate(space, pen)

    def fail(*args, **kw):
        raise spla.ArpackError(3)
    monkeypatch.setattr(sparse_slack, "eigsh", fail)
    cert = cmod.certify(space, pen, y, nu, cache=cmod.CertificateCache(), block=12)
    assert cert.bound is None and "Lanczos failed" in cert.note and "ARPACK error 3" in cert.note


def _slow_factorisations(monkeypatch, seconds=100.0):
    """Every factorisation of the slack costs ``seconds`` on a fake clock (the solves none):
    ``(now, made)``, the clock and the start of each factorisation."""
    now, made = [0.0], []
    factor = sparse_slack.factor_at_shift

    def slow(*args, **kw):
        made.append(now[0])
        out = factor(*args, **kw)
        now[0] += seconds
        return out
    monkeypatch.setattr(sparse_slack, "factor_at_shift", slow)
    monkeypatch.setattr(time, "perf_counter", lambda: now[0])
    return now, made


def test_escape_directions_start_no_factorisation_past_the_time_limit(data, monkeypatch):
    """The escape block (``escape_directions``, 16 bottom pairs by shift-invert where the
    certificate kept none) asks the solve's time limit as ``certify``'s block does: with a
    factorisation of 100 s measured and 50 s left it starts none and returns the
    certificate's own vector; with time, it factorises and finds more directions. On
    main it factorised past the limit (``made == [0.0, 100.0]``)."""
    from sdpembed.lowrank import certificate as cmod
    from sdpembed.lowrank.escape import escape_directions

    gp, y, nu = _cases(data)["dvu"]
    space = _space(gp)
    pen = lowrank.DistancePenalty(gp)
    cert = cmod.certify(space, pen, y, nu, block=4)
    assert cert.lambda_min < 0 and cert.y is not None
    now, made = _slow_factorisations(monkeypatch)
    free = escape_directions(space, cmod.CertificateCache(), cert, room=20)
    assert len(made) >= 1 and len(free) > 1       # with time: a block, more directions
    now[0], made[:] = 0.0, []
    cache = cmod.CertificateCache(deadline=50.0, slack=0.0, factor_seconds=[100.0])
    late = escape_directions(space, cache, cert, room=20)
    assert made == [] and len(late) == 1 and late[0] is cert.eig.vector


def test_the_stall_growth_starts_no_factorisation_past_the_time_limit(data, outer_loop,
                                                                      monkeypatch):
    """The outer loop's rank growth on a stalled gap (``_grow_on_stall``: 16 bottom pairs
    by shift-invert above ``limits.eig``) under the solve's time limit: with 50 s left and
    a factorisation of 100 s measured, none is started and the rank does not grow; with
    time, the rank grows along the negative eigenvectors. On main it factorised whatever
    the time (``made == [0.0, 100.0]``)."""
    X, y, graph = data
    gp, y_rand, _ = _cases(data)["dvu"]
    loop, _ = outer_loop(dvu(graph, y, centroids="eliminated"),
                         lowrank.LowRankOptions(dense_limits=lowrank.DenseLimits(eig=10)))
    assert loop.space.dim > loop.space.limits.eig
    loop.y = y_rand
    rank = loop.W.shape[1]
    now, made = _slow_factorisations(monkeypatch)
    loop.cache.deadline, loop.cache.slack, loop.cache.factor_seconds = 50.0, 0.0, [100.0]
    entry = {}
    assert not loop._grow_on_stall(entry)
    assert made == [] and loop.W.shape[1] == rank and entry == {}
    loop.cache.deadline = np.inf
    assert loop._grow_on_stall(entry)
    assert len(made) >= 1 and loop.W.shape[1] > rank and entry["stall_lambda_min"] < 0


def test_a_lift_round_starts_no_factorisation_past_the_time_limit(data, monkeypatch):
    """``lift_multipliers`` above ``limits.eig`` with the solve's ``late``: with 150 s to the
    deadline and factorisations of 100 s, the first round's block makes one (the nearer
    shift's is left out), the second round's is not started, and the lift returns the
    first round's multipliers with their own smallest eigenpair; a lift whose first
    block cannot start raises ``CertificateLate``."""
    from sdpembed.lowrank import certificate as cmod

    gp, y, nu = _cases(data)["dvu"]
    space = _space(gp)
    pen = lowrank.DistancePenalty(gp)
    w0 = float(_exact(space, y, nu)[0][0])
    assert w0 < 0
    now, made = _slow_factorisations(monkeypatch)
    cache = cmod.CertificateCache(deadline=150.0, slack=0.0)
    times = sparse_slack.FactorTimes()
    y_l, eig = lowrank.lift_multipliers(space, pen, y, nu, n_eig=12, min_block=8,
                                        late=cache.late, times=times)
    assert made == [0.0] and times.factor == [100.0] and now[0] <= cache.deadline
    assert np.array_equal(y_l, np.clip(y, -pen.w, pen.w))   # the first round's
    w, scale = _exact(space, y_l, nu)
    assert abs(eig.value - w[0]) <= 1e-8 * scale
    now[0], made[:] = 0.0, []
    with pytest.raises(sparse_slack.CertificateLate):
        lowrank.lift_multipliers(space, pen, y, nu, n_eig=12, min_block=8,
                                 late=cmod.CertificateCache(deadline=50.0, slack=0.0,
                                                            factor_seconds=[100.0]).late,
                                 times=sparse_slack.FactorTimes(first=100.0))
    assert made == []

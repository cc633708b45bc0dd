"""LOWRANK with added rows (``with_constraints``): the Newton-CG preconditioner's rows and
the outer loop's penalty schedule while only the rows are violated."""

import numpy as np
import pytest

from problems.bench_large import _with_links
from sdpembed.formulations.constraints import AffineGramConstraints
from sdpembed.lowrank.alm import _rows_blocks


def _random_rows(n: int, p: int, rng) -> AffineGramConstraints:
    """``p`` rows, each a few symmetric entries (diagonal ones included), half equalities."""
    row, i, j, val = [], [], [], []
    for k in range(p):
        for _ in range(3):
            a, b = rng.integers(0, n, 2)
            v = float(rng.normal())
            row += [k] if a == b else [k, k]
            i += [a] if a == b else [a, b]
            j += [a] if a == b else [b, a]
            val += [v] if a == b else [v, v]
    return AffineGramConstraints(
        n=n, row=np.array(row), i=np.array(i), j=np.array(j), value=np.array(val),
        rhs=rng.normal(size=p), equality=np.arange(p) % 2 == 0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rows_blocks_are_the_hessian_diagonal_blocks(seed):
    r"""The rows' part of the block-Jacobi preconditioner equals the diagonal r x r blocks of
    the Hessian of :math:`\sum_k (g_k^2 - z_k^2)/(2\rho_k)` (Gauss-Newton plus first-order
    term), written densely on vec(V): :math:`\sum_k 2g_k(A_k\otimes I)
    + 4\rho_k' \mathrm{vec}(A_kV)\mathrm{vec}(A_kV)^T`. Exact arithmetic on both sides: 1e-12."""
    rng = np.random.default_rng(seed)
    n, r, p = 7, 3, 5
    K = _random_rows(n, p, rng)
    W = rng.normal(size=(n, r))
    gk = np.where(K.equality, rng.normal(size=p), np.maximum(rng.normal(size=p), 0.0))
    rho = rng.uniform(0.5, 2.0, size=p)
    blocks = np.zeros((n, r, r))
    diag = _rows_blocks(K, W, gk, rho, blocks)
    H = np.zeros((n * r, n * r))
    for k in range(p):
        A = np.zeros((n, n))
        t = K.row == k
        np.add.at(A, (K.i[t], K.j[t]), K.value[t])
        active = K.equality[k] or gk[k] > 0
        AV = (A @ W).ravel()
        H += 2.0 * gk[k] * np.kron(A, np.eye(r)) + (4.0 * rho[k] * np.outer(AV, AV)
                                                    if active else 0.0)
    for a in range(n):
        want = H[a * r:(a + 1) * r, a * r:(a + 1) * r]
        got = blocks[a] + 2.0 * diag[a] * np.eye(r)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # the triplets' (row, point) pattern is built once per rows object, not per build
    pattern = K.row_points
    _rows_blocks(K, 2.0 * W, gk, rho, np.zeros((n, r, r)))
    assert K.row_points is pattern


def point_blocks(hv, minv, n: int, r: int, a: int) -> tuple[np.ndarray, np.ndarray]:
    """Point ``a``'s r x r diagonal blocks of the Hessian (product ``hv``) and of the
    preconditioner (its inverse applied by ``minv``), column by column on unit vectors."""
    H_a = np.empty((r, r))
    M_inv_a = np.empty((r, r))
    for c in range(r):
        e = np.zeros((n, r))
        e[a, c] = 1.0
        H_a[:, c] = hv(e.ravel()).reshape(n, r)[a]
        M_inv_a[:, c] = minv(e.ravel()).reshape(n, r)[a]
    return H_a, np.linalg.inv(M_inv_a)


@pytest.fixture(scope="module")
def linked(partial_digits):
    """DVU on 40 digits with two must-link rows, a cannot-link row and an equality, its space
    and ALM."""
    from sdpembed.formulations import dvu
    from sdpembed.lowrank import FactorSpace
    from sdpembed.lowrank.alm import _ALM
    from sdpembed.lowrank.options import LowRankOptions
    from sdpembed.lowrank.penalty import DistancePenalty

    X, y, graph, _ = partial_digits(40, n_class=3)
    f = dvu(graph, y, centroids="eliminated")
    G = f.expressions["gram"]

    def sq(a, b):
        return G[a, a] + G[b, b] - 2 * G[a, b]
    gp = f.with_constraints([sq(0, 1) <= 0.1, sq(2, 3) <= 0.1, sq(4, 5) >= 500.0,
                             G[6, 7] == 1.0]).current_problem()
    space = FactorSpace(gp, None)
    pen = DistancePenalty(gp)
    return space, pen, _ALM(space, pen, LowRankOptions())


def test_newton_preconditioner_blocks_include_the_added_rows(linked, monkeypatch):
    r"""The block-Jacobi preconditioner of Newton-CG is the inverse of the Hessian's diagonal
    r x r blocks, added rows included (without them, the rows' stiffness, which grows with
    their penalty, is left to CG: the n = 2,500 links row spent 50 Newton steps per
    subproblem). Compared with the Hessian-vector product itself, column by column, with the
    centring projection switched off on both sides; 1e-5 relative (the distance term's
    products run in single precision)."""
    import sdpembed.lowrank.alm as alm_mod

    space, pen, alm = linked
    captured = {}

    def fake_newton(fun, hess_at, x0, **kw):
        captured.update(hess_at=hess_at, precond_at=kw["precond_at"], x=x0)
        from sdpembed.lowrank.inner import _LBFGSResult
        return _LBFGSResult(x0, 0, 0.0)

    monkeypatch.setattr(alm_mod, "_newton_cg", fake_newton)
    monkeypatch.setattr(space, "project", lambda W: W)
    rng = np.random.default_rng(3)
    n, r = space.dim, 3
    W = 30.0 * rng.standard_normal((n, r))   # every edge stretched: positive diagonal
    y = 0.01 * rng.standard_normal(pen.t.shape[0])
    nu = np.zeros(space.q)
    nu[space.n_snr:] = [0.5, 0.0, 0.2, -0.3]
    rho = np.array([50.0, 50.0, 50.0, 50.0])
    alm.subproblem(y, nu, 10.0, 1.0, rho)(W, 1e-8, 1, "newton")
    x = captured["x"]
    hv = captured["hess_at"](x)
    minv = captured["precond_at"](x)
    floored = 0
    for a in range(n):
        H_a, M_a = point_blocks(hv, minv, n, r, a)
        # where the diagonal term is below the floor, M_a has the floor there instead
        shift = float(np.mean(np.diag(M_a - H_a)))
        floored += shift > 1e-5 * np.abs(H_a).max()
        np.testing.assert_allclose(M_a - shift * np.eye(r), H_a, rtol=1e-5,
                                   atol=1e-5 * np.abs(H_a).max())
    assert floored == 0


def _dense_rows(K, z):
    r""":math:`\sum_k z_kA_k` as a dense n x n matrix, from the triplets."""
    A = np.zeros((K.n, K.n))
    np.add.at(A, (K.i, K.j), K.value * z[K.row])
    return A


@pytest.mark.parametrize("basis", [False, True])
def test_rows_product_added_in_place_is_the_dense_product(linked, basis):
    r""":meth:`FactorSpace.add_K` adds :math:`\sum_k z_kA_kV` (on a basis
    :math:`Q^T(\sum_k z_kA_k)QW`) to its first argument: compared with the dense matrix built
    from the triplets (1e-12 relative), twice in a row with other multipliers (the kept
    pattern's values are rewritten, not reused), and in the full space bit for bit equal to
    ``out + apply_K`` (the same sums: the subproblems' path does not move)."""
    from sdpembed.lowrank import FactorSpace

    full = linked[0]
    rng = np.random.default_rng(5)
    space = full
    if basis:
        M = rng.standard_normal((full.gp.n, 12))
        Q, _ = np.linalg.qr(M - M.mean(axis=0))   # orthonormal columns, orthogonal to 1
        space = FactorSpace(full.gp, Q)
    K = space.K
    W = rng.standard_normal((space.dim, 3))
    for _ in range(2):
        z = rng.standard_normal(K.p)
        out = rng.standard_normal(W.shape)
        A = _dense_rows(K, z)
        want = out + (A @ W if not basis else Q.T @ A @ Q @ W)
        expected_bits = out + space.apply_K(W, z)
        got = space.add_K(out, W, z)
        assert got is out
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
        if not basis:
            assert np.array_equal(got, expected_bits)


def _links_problem(n: int, k: int, seed: int = 0):
    """DVU on ``n`` scikit-learn digits (2-NN + 1 random edge, 80 % labelled) with ``k``
    must-link rows (same class, squared distance at most the 20th percentile of the target
    distances) and ``k`` cannot-link rows (different classes, at least the 80th), drawn by
    ``dvu_scale``'s links row's own code."""
    from sklearn.datasets import load_digits

    from sdpembed.formulations import dvu
    from sdpembed.graphs import knn_graph

    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.permutation(y.size)[:n])
    X, y = X[idx].astype(float), y[idx].copy()
    y_obs = np.where(rng.random(n) < 0.8, y, -1)
    f = dvu(knn_graph(X, n_neighbors=2, n_random=1, random_state=seed), y_obs,
            centroids="eliminated")
    return _with_links(f, y_obs, {"must_link": k, "cannot_link": k, "low": 20, "high": 80,
                                  "seed": seed})


def test_no_stall_rank_growth_while_added_rows_are_violated():
    r"""While added rows are violated, the cheap gap stalls until the rows' multipliers have
    grown (their penalty is raised for that), not for want of a dimension: the outer loop
    must not grow the rank on a stalled gap then. Before, on ``dvu_scale``'s links row at
    n = 2,500 the factor grew 14 -> 30 columns at outer iteration 3 while the rows were
    violated by 8e-2, and every later inner iteration paid for it. The solve must still
    certify (the rank it needs is reached by certificate attempts)."""
    from sdpembed.lowrank.options import LowRankOptions
    from sdpembed.solvers import solve

    rep = solve(_links_problem(300, 20), solver="LOWRANK", tol=1e-4, blas_threads=1)
    history = rep.extra["history"]
    feas_tol = LowRankOptions().feas_tol
    violated = [h for h in history if h["constraint_violation"] > feas_tol]
    assert violated, "the instance must start with violated rows"
    grown = [h["outer"] for h in violated if "stall_lambda_min" in h]
    assert grown == [], f"rank grown on a stalled gap at outer iterations {grown}"
    assert rep.status == "optimal" and rep.certified_gap <= 1e-4
    assert history[-1]["constraint_violation"] <= feas_tol


def test_a_point_below_the_proven_bound_gives_way_to_one_that_is_not():
    """Seed 98029 of the differential test (quadratic DVU, 33 points, a row-sum, a must-link
    and a cannot-link row): the outer loop kept its lowest certifiable objective,
    -0.3256191 at infeasibility 9.2e-7 (outer iteration 10), as its best point while its
    bound rose to -0.3256151 above it; later iterates were feasible at -0.3256151, but none
    was lower, so no pair could end the loop and the solve was refused after ``max_outer``
    (1.23e-5 below its own bound). A point below the proven bound now gives way to one that
    is not: ``optimal`` within 1e-5 (relative) of CLARABEL's recorded optimum -0.3256149
    (CSDP: -0.3256150), its bound below the optimum up to 1e-6 (``time_limit`` far away:
    iteration-bound)."""
    from problems.differential import make_instance
    from sdpembed import solve
    from sdpembed.solve_status import BOUND_TOLERANCE, bound_gap, reported_objective_scale

    optimum = -0.32561489255527487   # CLARABEL, optimal, its gap 3.9e-10
    f, _ = make_instance(98029).build()
    rep = solve(f, "LOWRANK", time_limit=600)
    assert rep.status == "optimal"
    assert abs(rep.objective - optimum) <= 1e-5 * abs(optimum)
    assert rep.bound <= optimum + 1e-6 * abs(optimum)
    assert bound_gap(rep.objective, rep.bound, reported_objective_scale(rep)) >= -BOUND_TOLERANCE
    assert rep.primal_infeasibility <= 1e-6


@pytest.mark.parametrize("max_inner, added_rows, after", [
    (None, True, 6000), (1500, True, 1500), (None, False, 2000), (1500, False, 1500)])
def test_leaving_the_kink_restores_the_huber_envelopes_subproblem_cap(max_inner, added_rows,
                                                                       after, monkeypatch):
    """The default L-BFGS cap is 2,000 on the kink envelope (n <= DenseLimits.eig) and
    6,000 on the Huber one (LowRankOptions.max_inner): once the kink is left with added
    rows, the Huber cap holds (docs/tuning.md, "the n = 800 check instance"); without
    added rows the 2,000 cap stays (docs/tuning.md, "... sixteenth round"); a cap the
    caller set stays."""
    from types import SimpleNamespace

    from sdpembed.lowrank import outer

    monkeypatch.setattr(outer, "start_at_prices", lambda space, pen, nu, kv, rho: nu)
    left = []
    loop = SimpleNamespace(
        opts=SimpleNamespace(max_inner=max_inner), max_inner=max_inner or 2000, it=3,
        space=SimpleNamespace(K=np.ones((1, 3)) if added_rows else None),
        pen=SimpleNamespace(w=np.ones(3)), alm=SimpleNamespace(leave_kink=lambda: left.append(1)),
        _start_penalty=lambda: None, rho=np.ones(1) if added_rows else None, rho0=np.ones(1))
    g, _ = outer._OuterLoop._leave_kink(loop, np.array([2.0, -0.5, -3.0]), None, 0.0, None)
    assert left == [1]
    assert loop.max_inner == after
    # with added rows the stall rule's window restarts at the exit (outer iteration 3)
    assert getattr(loop, "left_kink_at", 0) == (3 if added_rows else 0)
    assert outer._MAX_INNER == 6000 and outer._MAX_INNER_KINK == 2000
    np.testing.assert_array_equal(g, [1.0, -0.5, -1.0])


@pytest.mark.parametrize("k_viol, rho, expected", [
    (0.308, [3.0, 0.9], [27.0, 8.1]),       # links seed 3's kink point: raised
    (0.1456, [9.0, 9.0], [81.0, 81.0]),     # n = 1,200, link seed 1's: raised
    (0.0835, [27.0, 8.1], [27.0, 8.1]),     # links seed 0's: as it was
    (0.308, [2e5, 1.0], [1e6, 9.0]),        # within the cap, 1e6 times the start
])
def test_leaving_the_kink_far_from_the_added_rows_raises_their_penalty(k_viol, rho, expected,
                                                                        monkeypatch):
    """On leaving the kink with its point violating the added rows by more than
    ``_KINK_ROWS_FAR`` (``dvu_scale``'s links row, link seed 3: 0.308; n = 1,200, 100 + 100
    rows, link seed 1: 0.1456), their penalty is raised ``_KINK_ROWS_RAISE`` times for the
    Huber envelope, capped as the schedule caps it; nearer (seeds 0 and 2: 0.07-0.08) it is
    left as the kink left it (docs/tuning.md, "The links row at seed 3: the rows' penalty at
    the Huber start", "The added rows' far line at the kink exit")."""
    from types import SimpleNamespace

    from sdpembed.lowrank import outer

    monkeypatch.setattr(outer, "start_at_prices", lambda space, pen, nu, kv, rho: nu)
    loop = SimpleNamespace(
        opts=SimpleNamespace(max_inner=None), max_inner=2000, it=3,
        space=SimpleNamespace(K=np.ones((2, 3))), pen=SimpleNamespace(w=np.ones(3)),
        alm=SimpleNamespace(leave_kink=lambda: None), _start_penalty=lambda: None,
        rho=np.array(rho), rho0=np.ones(2))
    outer._OuterLoop._leave_kink(loop, np.zeros(3), None, k_viol, None)
    assert outer._KINK_ROWS_FAR == 0.1 and outer._KINK_ROWS_RAISE == 9.0
    np.testing.assert_allclose(loop.rho, expected, rtol=1e-12)


def _stall_loop(gaps, left_kink_at):
    """A :class:`StallGrowth` above ``limits.eig`` (stall floor 1e-2 at tol 1e-4) after the
    cheap gaps ``gaps``, the added rows feasible."""
    from types import SimpleNamespace

    from sdpembed.lowrank.options import DenseLimits
    from sdpembed.lowrank.stall import StallGrowth

    loop = StallGrowth()
    loop.history = [{"cheap_gap": g} for g in gaps]
    loop.it, loop.last_growth, loop.k_viol = len(gaps) + 1, 0, 3.9e-7
    loop.left_kink_at = left_kink_at
    loop.W = np.ones((2500, 14))
    loop.space = SimpleNamespace(Q=None, dim=2500, limits=DenseLimits(eig=800))
    loop.opts = SimpleNamespace(tol=1e-4, max_rank=200, feas_tol=1e-6)
    return loop


def test_the_stall_window_restarts_where_the_kink_is_left():
    """``dvu_scale``'s links row, link seed 2: the kink envelope's last cheap gaps were 0.029
    and 0.0727 (outers 4 and 5, the exit), the first Huber subproblem's 0.0158, above half
    the kink's best, so the stall rule grew the rank 14 -> 30 there and the next
    subproblem ran at rank 30. The kink's gaps measure another augmented Lagrangian: the
    window restarts at the exit, as after a growth, and the rule reads the Huber gaps from
    ``_STALL_WINDOW`` outer iterations on (docs/tuning.md, "The links row at seeds 0, 2 and
    3: the stall window from the kink exit")."""
    from sdpembed.lowrank.stall import _STALL_WINDOW

    kink = [1.81, 0.0882, 0.0377, 0.029, 0.0727]
    assert _stall_loop(kink, left_kink_at=0)._stalled(0.0158)      # before: a stall
    assert not _stall_loop(kink, left_kink_at=5)._stalled(0.0158)  # the exit restarts it
    assert not _stall_loop(kink + [0.0158], left_kink_at=5)._stalled(0.0158)
    # from _STALL_WINDOW outers after the exit on, a stalled Huber gap still grows the rank
    assert _STALL_WINDOW == 3
    assert _stall_loop(kink + [0.0158, 0.0160], left_kink_at=5)._stalled(0.0159)
    assert not _stall_loop(kink + [0.0158, 0.0160], left_kink_at=5)._stalled(0.0070)

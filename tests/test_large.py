"""The large-n path: LOWRANK backend, its certificate, reduced bases, laziness, memory guard.

References are the conic backend CLARABEL (interior point, ~1e-8 relative
accuracy on these instances) and dense linear algebra.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.linalg

import sdpembed.formulations.gram as gram_mod
import sdpembed.formulations.memory as memory_mod
import sdpembed.lowrank as lowrank
from sdpembed.estimators.gram import DVU, MVU
from sdpembed.exceptions import (
    InfeasibleError,
    InputError,
    ProblemTooLargeError,
    UnboundedError,
)
from sdpembed.formulations.dvu import dvu, dvu_problem
from sdpembed.formulations.gram import centering_basis, laplacian_basis
from sdpembed.formulations.mvu import mvu, mvu_problem
from sdpembed.graphs import NeighborhoodGraph, knn_graph
from sdpembed.lowrank.trace_bound import shortest_path_trace_bound
from sdpembed.recovery import (
    embedding_from_factor,
    embedding_from_gram,
    spectrum,
    spectrum_from_factor,
)
from sdpembed.solvers import available_solvers, solve

# LOWRANK is asked for a certified gap of 1e-6; the objectives must agree with
# CLARABEL to 1e-4 relative (the requirement), and the certified lower
# bound may exceed CLARABEL's optimum only by CLARABEL's own inaccuracy (1e-6).
TOL = 1e-6
AGREE = 1e-4
BOUND_SLACK = 1e-6


@pytest.fixture(scope="module")
def digits():
    return _three_class_digits(36, seed=1)


def _three_class_digits(n: int, seed: int):
    """n digits of classes 0-2, about 80 % labelled, and their DVU graph (2-NN + 1 random
    long edge): ``(X, y_true, y_obs, graph)``."""
    rng = np.random.default_rng(seed)
    X, y = _digits()
    idx = np.flatnonzero(y < 3)[rng.permutation(int((y < 3).sum()))[:n]]
    X, y_true = X[idx], y[idx]
    y_obs = y_true.copy()
    y_obs[rng.random(idx.size) > 0.8] = -1
    graph = knn_graph(X, n_neighbors=2, n_random=1, random_state=0)
    return X, y_true, y_obs, graph


def _interval_objective(gp, pen, F) -> float:
    """DVU objective of the factor F, recomputed from scratch: <C~, FF^T> + sum_e w_e|D_e - t_e|."""
    D = gp.distances_of_factor(F)
    return gp.full_objective().inner_factor(F) + float(pen.w @ np.abs(D - gp.target))


def _digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data.astype(float), d.target


DVU_VARIANTS = {
    "interval": {},
    "explicit": {"centroids": "explicit"},
    "equality": {"distances": "equality"},
    "quadratic": {"distances": "quadratic"},
    "trace-min": {"trace": "min", "trace_weight": 1e-3},
    "snr": {"snr": 4.0},
}


def _check_against_clarabel(make, tol=TOL):
    f_lr = make()
    rep = solve(f_lr, solver="LOWRANK", tol=tol)
    ref = solve(make(), solver="CLARABEL")
    rel = abs(rep.objective - ref.objective) / abs(ref.objective)
    assert rel <= AGREE, (rep.objective, ref.objective)
    assert rep.certified_gap is not None and rep.certified_gap <= 10 * tol
    bound = rep.extra["lower_bound"]
    assert bound <= ref.objective + BOUND_SLACK * abs(ref.objective)
    return rep, ref, f_lr


@pytest.mark.parametrize("variant", list(DVU_VARIANTS))
def test_dvu_variants_match_clarabel(digits, variant):
    _, _, y, graph = digits
    kw = {"centroids": "eliminated", **DVU_VARIANTS[variant]}
    rep, _, f = _check_against_clarabel(lambda: dvu(graph, y, **kw))
    assert rep.solver == "LOWRANK" and rep.status == "optimal"
    assert rep.primal_infeasibility <= 1e-5
    # the conic backends never ran on f: LOWRANK did not build the cvxpy problem
    assert not f.is_built and f.factor.shape[0] == graph.n_nodes


def test_mvu_matches_clarabel(digits):
    _, _, _, graph = digits
    rep, _, _ = _check_against_clarabel(lambda: mvu(graph))
    assert rep.primal_infeasibility <= 1e-5


@pytest.mark.parametrize("envelope", ["auto", "kink", "huber"])
def test_interval_envelopes_match_clarabel(digits, envelope):
    # on these digits the optimum keeps every edge on the kink: "auto" (full space) and
    # "kink" run the equality problem's augmented Lagrangian throughout, "huber" the
    # penalty's own; all three reach the same optimum with a valid interval certificate
    _, _, y, graph = digits
    make = lambda: dvu(graph, y, centroids="eliminated")  # noqa: E731
    rep = solve(make(), solver="LOWRANK", tol=TOL, interval_envelope=envelope)
    ref = solve(make(), solver="CLARABEL")
    assert rep.status == "optimal"
    assert abs(rep.objective - ref.objective) <= AGREE * abs(ref.objective)
    assert rep.extra["lower_bound"] <= ref.objective + BOUND_SLACK * abs(ref.objective)
    assert rep.extra["interval_envelope"] == ("huber" if envelope == "huber" else "kink")
    assert not any(e.get("left_kink") for e in rep.extra["history"])
    # the certified multipliers lie in the interval penalty's box |y_e| <= w_e and give
    # the reported bound through the interval conjugate
    gp = make().meta["gram_problem"]
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(tol=TOL,
                                                               interval_envelope=envelope))
    space, pen = lowrank.FactorSpace(gp, None), lowrank.DistancePenalty(gp)
    assert np.all(np.abs(res.y) <= pen.w * (1 + 1e-12))
    assert lowrank.certify(space, pen, res.y, res.nu).bound == pytest.approx(res.bound, rel=1e-9)


def test_kink_envelope_switches_to_huber_where_the_optimum_leaves_the_kink():
    # a slack weight small enough that the optimum stretches some edges off the kink
    # (objective -1.0159 against -0.8926 at slack_weight >= 0.1 on the same digits): the
    # equality problem's multipliers leave the box |y_e| <= w_e, the solve goes on with the
    # Huber envelope from the clipped multipliers and still reaches Clarabel's optimum
    _, _, y, graph = _three_class_digits(60, seed=0)
    make = lambda: dvu(graph, y, centroids="eliminated", slack_weight=0.03)  # noqa: E731
    ref = solve(make(), solver="CLARABEL")
    rep = solve(make(), solver="LOWRANK", tol=TOL)
    assert rep.status == "optimal"
    assert rep.extra["interval_envelope"].startswith("kink, then huber from outer iteration")
    assert sum(bool(e.get("left_kink")) for e in rep.extra["history"]) == 1
    assert abs(rep.objective - ref.objective) <= AGREE * abs(ref.objective)
    assert rep.extra["lower_bound"] <= ref.objective + BOUND_SLACK * abs(ref.objective)


def test_default_initial_rank(digits):
    """DVU starts at n_classes + 4 or at twice the graph's average degree, the larger; MVU
    at a third of the Barvinok-Pataki rank (>= 16)."""
    X, _, y, graph = digits
    gp = dvu(graph, y, centroids="eliminated").meta["gram_problem"]
    degree = 2 * gp.edges.shape[0] / gp.n
    assert lowrank.solve._initial_rank(gp) == max(3 + 4, int(2 * degree))
    # seeded: an unseeded 1-NN + 1 draw can leave the graph disconnected (a typed refusal)
    few = dvu(knn_graph(X, n_neighbors=1, n_random=1, random_state=0), y,
              centroids="eliminated").meta["gram_problem"]
    assert lowrank.solve._initial_rank(few) == 3 + 4      # a sparse graph: the classes
    dense = dvu(knn_graph(X, n_neighbors=8, n_random=1, random_state=0), y,
                centroids="eliminated").meta["gram_problem"]
    assert lowrank.solve._initial_rank(dense) == int(4 * dense.edges.shape[0] / dense.n) > 7
    dense = knn_graph(X, n_neighbors=12, n_random=0)
    gp = mvu(dense).meta["gram_problem"]
    m = gp.edges.shape[0]
    r_bp = max(r for r in range(1, m + 1) if r * (r + 1) // 2 <= m)
    assert lowrank.solve._initial_rank(gp) == max(16, -(-r_bp // 3))
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(tol=1e-4))
    assert res.history[0]["rank"] == min(lowrank.solve._initial_rank(gp), gp.n - 1)


def test_reduced_basis_matches_clarabel_and_bounds_full_problem(digits):
    X, _, y, graph = digits
    basis_graph = knn_graph(X, n_neighbors=8, n_random=0)
    rep, ref, _ = _check_against_clarabel(
        lambda: dvu(graph, y, centroids="eliminated", basis_rank=8, basis_graph=basis_graph))
    full = solve(dvu(graph, y, centroids="eliminated"), solver="CLARABEL")
    # a restriction of the feasible set: its optimum is never below the full one
    assert ref.objective >= full.objective - 1e-6 * abs(full.objective)
    assert rep.extra["reduced_basis_rank"] == 8


def test_written_solution_matches_when_problem_is_built(digits):
    _, _, y, graph = digits
    f = dvu(graph, y, centroids="explicit")
    f.problem  # noqa: B018 - build the cvxpy problem first
    rep = solve(f, solver="LOWRANK", tol=TOL)
    # the variables now hold the solution: the cvxpy objective evaluates to it
    assert f.problem.objective.value == pytest.approx(rep.objective, rel=1e-6)
    G = f.value("gram")
    F = f.factor
    np.testing.assert_allclose(G, F @ F.T, atol=1e-8 * np.abs(G).max())


def test_lanczos_certificate_matches_dense(digits):
    """The sparse path (deflated Lanczos + 2x2 block bound) vs dense eigenvalues of S on 1-perp.

    With U the factor's range and C its complement in 1-perp, the estimate is the smallest
    eigenvalue of [[l11, eps], [eps, l22]] (l11 = lmin(U'SU), l22 = lmin(C'SC),
    eps = ||C'SU||). Built from dense blocks, that must match the Lanczos path to its
    tolerance, and lie below the true lmin by at most eps^2 / (l22 - l11): how far the
    factor is from stationary (eps ~ 5e-5 at tol = 1e-5) decides how loose it is, not
    Lanczos."""
    _, _, y, graph = digits
    gp = dvu_problem(graph, y)
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(tol=1e-5, warm_start=None))
    space = lowrank.FactorSpace(gp, None, limits=lowrank.DenseLimits(eig=5))  # Lanczos
    S = gp.full_objective().dense() + space.B.T @ (res.y[:, None] * space.B.toarray())
    H = centering_basis(gp.n)
    exact = np.linalg.eigvalsh(H.T @ S @ H)[0]
    est = lowrank.spectrum._lambda_min(space, res.y, 0.0, tol=1e-10, deflate=res.factor)
    Q, _ = np.linalg.qr(np.c_[np.ones((gp.n, 1)), res.factor])
    U, C = Q[:, 1:], scipy.linalg.null_space(Q.T)
    l11, l22 = np.linalg.eigvalsh(U.T @ S @ U)[0], np.linalg.eigvalsh(C.T @ S @ C)[0]
    eps = np.linalg.norm(C.T @ S @ U, 2)
    block = np.linalg.eigvalsh(np.array([[l11, eps], [eps, l22]]))[0]
    assert est.value == pytest.approx(block, abs=1e-9)  # Ritz residuals ~1e-15 here
    assert exact - eps**2 / (l22 - l11) - 1e-9 <= est.value <= exact + 1e-9
    # random multipliers (far from optimal, clearly indefinite S)
    y_rand = np.random.default_rng(0).uniform(-1, 1, size=gp.edges.shape[0])
    S = gp.full_objective().dense() + space.B.T @ (y_rand[:, None] * space.B.toarray())
    exact = np.linalg.eigvalsh(H.T @ S @ H)[0]
    est = lowrank.spectrum._lambda_min(space, y_rand, 0.0, tol=1e-10)
    assert est.value == pytest.approx(exact, abs=1e-7)


def test_small_slack_weight_is_unbounded(digits):
    _, _, y, graph = digits
    f = dvu(graph, y, centroids="eliminated", slack_weight=1e-3)
    with pytest.raises(UnboundedError, match="slack_weight"):
        solve(f, solver="CLARABEL")
    with pytest.raises(UnboundedError, match="slack_weight"):
        solve(dvu(graph, y, centroids="eliminated", slack_weight=1e-3), solver="LOWRANK")


def test_non_euclidean_distances_are_infeasible():
    # squared distances 1, 1, 9: |ab| + |bc| = 2 < 3 = |ac|, no embedding exists
    graph = NeighborhoodGraph(3, np.array([[0, 1], [1, 2], [0, 2]]), np.array([1.0, 1.0, 9.0]))
    with pytest.raises(InfeasibleError):
        solve(mvu(graph), solver="CLARABEL")
    with pytest.raises(InfeasibleError):
        solve(mvu(graph), solver="LOWRANK", max_outer=40)


def test_ratio_is_refused_with_a_typed_error(digits):
    _, _, y, graph = digits
    with pytest.raises(InputError, match="ratio"):
        solve(dvu(graph, y, centroids="eliminated", ratio=0.5), solver="LOWRANK")


def test_unknown_option_is_an_input_error(digits):
    _, _, y, graph = digits
    with pytest.raises(InputError, match="unknown LOWRANK option"):
        solve(dvu(graph, y, centroids="eliminated"), solver="LOWRANK", eps_abs=1e-3)


@pytest.mark.parametrize("bad", [{"inner": "bfgs"}, {"warm_start": "random"},
                                 {"time_limit": 0.0}, {"tol": 2.0}, {"max_outer": 0},
                                 {"max_inner": 2.5}, {"max_rank": True},
                                 {"blas_threads": -1}, {"eig_tol": 0.0},
                                 {"interval_envelope": "equality"},
                                 {"dense_limits": {"eig": 0}},
                                 {"dense_limits": {"lanczos": 10}},
                                 {"dense_limits": 800}])
def test_bad_option_values_are_input_errors(digits, bad):
    _, _, y, graph = digits
    with pytest.raises(InputError, match="LOWRANK"):
        solve(dvu(graph, y, centroids="eliminated"), solver="LOWRANK", **bad)
    with pytest.raises(InputError, match="LOWRANK"):  # direct lowrank_solve callers too
        lowrank.LowRankOptions(**bad)


def test_a_closing_unverified_estimate_is_verified_before_the_solve_stops(digits, monkeypatch):
    # An eigenvalue step that misses the negative eigenvalues (reports them as 0) makes the
    # gap look closed at the first attempt. The solve must verify that estimate (a sparse
    # factorisation) before stopping, find it wrong, and go on (a lift, more iterations) to
    # a certificate that really proves tol
    _, _, y, graph = digits
    gp = dvu_problem(graph, y)
    # the shift-invert path of interval problems above the dense size
    limits = lowrank.DenseLimits(eig=5)
    true_bottom = lowrank.certificate._bottom

    def missing_negative(space, y_, nu, k, **kw):
        lam, X = true_bottom(space, y_, nu, k, **kw)
        return np.maximum(lam, 0.0), X

    monkeypatch.setattr(lowrank.certificate, "_bottom", missing_negative)
    tol = 1e-6
    # from rank 7 (n_classes + 4) the first attempt comes below the optimum's rank
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(tol=tol, dense_limits=limits,
                                                                   rank=7))
    attempts = [e for e in res.history if "lambda_min" in e]
    assert attempts and not any(e.get("estimated_gap", np.inf) <= tol for e in attempts)
    caught = [e for e in attempts if e.get("certified_gap", 0.0) > tol]
    assert caught and all(e["lambda_min"] < 0 for e in caught)  # the verified value
    assert res.status == "optimal" and res.certified_gap <= tol
    assert res.certificate.check in (lowrank.CHECK_SPARSE, lowrank.CHECK_CHOLESKY)
    ref = solve(dvu(graph, y, centroids="eliminated"), solver="CLARABEL")
    assert res.bound <= ref.objective + BOUND_SLACK * abs(ref.objective)


def test_stopped_solve_is_no_result_but_still_certifies(digits):
    """A solve cut off by its iteration limit far from the optimum is no result: a
    SolverFailedError that carries the point and a valid certified bound."""
    from sdpembed.exceptions import SolverFailedError
    from sdpembed.solve_status import FAR_FROM_OPTIMAL, bound_gap

    _, _, y, graph = digits
    with pytest.raises(SolverFailedError, match="certified lower bound") as info:
        solve(dvu(graph, y, centroids="eliminated"), solver="LOWRANK", max_outer=1,
              max_inner=20, warm_start=None)
    exc = info.value
    opt = solve(dvu(graph, y, centroids="eliminated"), solver="CLARABEL").objective
    assert bound_gap(exc.objective, exc.bound) > FAR_FROM_OPTIMAL
    assert exc.bound <= opt + BOUND_SLACK * abs(opt)
    assert exc.point is not None and exc.point.shape[0] == len(y)


def test_memory_guard_names_lowrank(digits, monkeypatch):
    _, _, y, graph = digits
    monkeypatch.setattr(memory_mod, "available_memory", lambda: 1 << 20)  # 1 MiB
    monkeypatch.setattr(gram_mod, "available_memory", lambda: 1 << 20)    # read by LOWRANK
    f = dvu(graph, y, centroids="eliminated")
    with pytest.raises(ProblemTooLargeError, match="LOWRANK"):
        solve(f, solver="SCS")
    # the large-n solver still works on the same formulation: it never builds it
    rep = solve(f, solver="LOWRANK", tol=1e-4)
    assert rep.certified_gap <= 1e-3 and not f.is_built


def test_clarabel_memory_guard_counts_its_dense_block(digits, monkeypatch):
    """CLARABEL's dense (s(s+1)/2)^2 block is checked before it runs: with 200 MiB
    available the 35 x 35 DVU cone (630^2 block entries, ~21 MiB) passes while the
    estimate at s = 199 (the size that exhausted 24 GB) exceeds the whole machine."""
    import sdpembed.solvers as solvers_mod

    _, _, y, graph = digits
    f = dvu(graph, y, centroids="eliminated")
    est = solvers_mod.backend_memory_estimate(f.problem, "CLARABEL")
    assert est == 56 * (35 * 36 // 2) ** 2
    assert solvers_mod.backend_memory_estimate(f.problem, "SCS") is None
    assert 56 * (199 * 200 // 2) ** 2 > 24 * 2**30 * 0.8
    monkeypatch.setattr(memory_mod, "available_memory", lambda: 200 << 20)
    assert solve(f, solver="CLARABEL").status == "optimal"
    monkeypatch.setattr(memory_mod, "available_memory", lambda: est)  # 0.8 * est < est
    with pytest.raises(ProblemTooLargeError, match="LOWRANK"):
        solve(f, solver="CLARABEL")


def test_memory_estimate_scales_quadratically():
    assert gram_mod.dense_memory_estimate(2000) == 4 * gram_mod.dense_memory_estimate(1000)
    # all of USPS in dense form does not fit on a 24 GB machine
    assert gram_mod.dense_memory_estimate(9297) > 24 * 2**30


def test_lowrank_is_listed_and_formulations_pickle(digits):
    assert "LOWRANK" in available_solvers()
    _, _, y, graph = digits
    f = dvu(graph, y, centroids="eliminated")
    solve(f, solver="LOWRANK", tol=1e-4)
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_allclose(g.factor, f.factor)
    assert not g.is_built


def test_laplacian_basis_is_orthonormal_and_centred():
    X, _ = _digits()
    graph = knn_graph(X[:700], n_neighbors=8, n_random=0)
    Q = laplacian_basis(graph, rank=12)          # sparse shift-invert path (n > 600)
    np.testing.assert_allclose(Q.T @ Q, np.eye(12), atol=1e-8)
    np.testing.assert_allclose(Q.T @ np.ones(700), 0, atol=1e-8)
    # spans the bottom non-constant eigenvectors: Rayleigh quotients equal the
    # 2nd..13th Laplacian eigenvalues
    L = graph.laplacian().toarray()
    w = np.linalg.eigvalsh(L)[1:13]
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(Q.T @ L @ Q)), w, rtol=1e-6,
                               atol=1e-9)
    with pytest.raises(InputError):
        laplacian_basis(graph, rank=700)


def test_embedding_from_factor_equals_dense_recovery():
    rng = np.random.default_rng(0)
    F = rng.standard_normal((40, 5)) * np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    F -= F.mean(axis=0)
    np.testing.assert_allclose(embedding_from_factor(F, 3),
                               embedding_from_gram(F @ F.T, 3), atol=1e-8)
    Z = embedding_from_factor(F, 7)        # past the rank: zero columns
    np.testing.assert_allclose(Z[:, 5:], 0)
    np.testing.assert_allclose(spectrum_from_factor(F), spectrum(F @ F.T), atol=1e-10)


def test_estimators_with_lowrank(digits):
    X, y_true, y, graph = digits
    est = DVU(n_components=3, graph=graph, solver="LOWRANK", solver_options={"tol": 1e-5})
    est.fit(X, y)
    ref = DVU(n_components=3, graph=graph, solver="CLARABEL").fit(X, y)
    assert "gram_factor_" in est.__dict__
    # same optimum; the embeddings may differ on the optimal face, but the
    # learned kernels' objective values agree (checked via the reports)
    assert est.solve_report_.objective == pytest.approx(ref.solve_report_.objective, rel=AGREE)
    np.testing.assert_allclose(est.embedding_, embedding_from_gram(est.gram_, 3), atol=1e-6)
    m = MVU(n_components=2, graph=graph, solver="LOWRANK").fit(X)
    assert m.embedding_.shape == (X.shape[0], 2)
    # reduced basis from a plain 8-NN graph of X
    r = DVU(n_components=3, graph=graph, basis_rank=8, solver="LOWRANK").fit(X, y)
    assert r.solve_report_.objective >= ref.solve_report_.objective - 1e-6


def test_interval_envelope_is_the_moreau_envelope_of_the_slack_penalty():
    # psi(D) = min_z w|z - t| + y (D - z) + sigma_e/2 (D - z)^2 per edge (sigma_e the
    # edge's own penalty, sigma mean(t) / t_e), minimised here
    # exactly by enumeration (a convex piecewise quadratic in z attains its minimum at
    # the kink z = t or at a stationary point of one piece, z = D + (y -+ w)/sigma),
    # against the closed form in three dot products; the gradient against central
    # differences. Points inside and outside the Huber band, multipliers at the box edges.
    from types import SimpleNamespace

    rng = np.random.default_rng(4)
    m, sigma = 40, 7.0
    t = rng.uniform(0.5, 2.0, m)
    gp = SimpleNamespace(distances="interval", target=t, slack_weight=0.3)
    pen = lowrank.DistancePenalty(gp)
    y = rng.uniform(-1.0, 1.0, m) * pen.w
    y[:3] = pen.w[:3] * np.array([-1.0, 1.0, 0.0])
    D = t + rng.uniform(-0.3, 0.3, m)
    val, g = pen.envelope(D, y, sigma)
    s_e = sigma * np.mean(t) / t

    def edge(e, De):
        se = s_e[e]
        z = np.array([t[e], De + (y[e] - pen.w[e]) / se, De + (y[e] + pen.w[e]) / se])
        return float(np.min(pen.w[e] * np.abs(z - t[e]) + y[e] * (De - z)
                            + 0.5 * se * (De - z) ** 2))

    ref = sum(edge(e, D[e]) for e in range(m))
    assert val == pytest.approx(ref, rel=1e-12)
    r = s_e * (D + y / s_e - t)
    assert np.any(np.abs(r) < pen.w) and np.any(np.abs(r) > pen.w)  # both regimes
    h = 1e-6
    fd = np.array([(edge(e, D[e] + h) - edge(e, D[e] - h)) / (2 * h) for e in range(m)])
    np.testing.assert_allclose(g, fd, atol=1e-5)


@pytest.mark.parametrize("variant", ["interval", "equality", "snr"])
def test_refined_multipliers_repair_an_inexact_dual(digits, variant):
    """Complementary-slackness refinement: from multipliers perturbed by 1e-3 (an inexact
    augmented-Lagrangian dual) and a near-optimal factor, the refined point is a valid
    lower bound (never above CLARABEL's optimum) within 1e-5 of the optimum, while the
    perturbed multipliers themselves certify far less."""
    _, _, y_obs, graph = digits
    kw = {"interval": {}, "equality": {"distances": "equality"}, "snr": {"snr": 4.0}}[variant]
    gp = dvu_problem(graph, y_obs, **kw)
    # tol 1e-8, feas_tol 1e-10: a factor near stationarity (the certified point at
    # tol 1e-6 is a feasibility-restored one, 1e-6 off the stationary iterate)
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(tol=1e-8, feas_tol=1e-10,
                                                               warm_start=None))
    space, pen = lowrank.FactorSpace(gp, None), lowrank.DistancePenalty(gp)
    W = res.factor - res.factor.mean(axis=0)
    noise = 1e-3 * np.random.default_rng(0).standard_normal(res.y.shape) * np.abs(res.y).max()
    y_noisy = res.y + noise
    if variant != "equality":
        y_noisy = np.clip(y_noisy, -pen.w, pen.w)
    raw = lowrank.certify(space, pen, y_noisy, res.nu, factor=W)
    y2, nu2 = lowrank.refine_multipliers(space, pen, W, y_noisy, res.nu)
    assert np.isfinite(pen.conjugate(y2)) and np.all(nu2 >= 0)  # in the domain of phi*
    refined = lowrank.certify(space, pen, y2, nu2, factor=W)
    opt = solve(dvu(graph, y_obs, centroids="eliminated", **kw), solver="CLARABEL").objective
    assert refined.bound <= opt + BOUND_SLACK * abs(opt)
    assert (opt - refined.bound) <= 1e-5 * abs(opt)
    assert raw.bound is None or (opt - raw.bound) >= 10 * (opt - refined.bound)


def test_scaled_certificate_beats_the_trace_bound_on_mvu(digits):
    """MVU's objective is C = -I, so multipliers with lambda_min(S) = mu < 0 become dual
    feasible when scaled by 1/(1 + mu): a valid bound (never above CLARABEL's optimum)
    that loses about |mu| relative, where the trace bound loses |mu| T / |p| (T >= tr G)."""
    _, _, _, graph = digits
    f = mvu(graph)
    gp = f.meta["gram_problem"]
    space, pen = lowrank.FactorSpace(gp, None), lowrank.DistancePenalty(gp)
    assert lowrank.certificate._objective_curvature(space) == 1.0
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(tol=1e-6))
    y = res.y + 1e-3 * np.random.default_rng(0).standard_normal(res.y.shape) * np.abs(
        res.y).max()
    cert = lowrank.certify(space, pen, y, 0.0, factor=res.factor)
    assert cert.lambda_min < 0 and cert.method == "scaled" and cert.verified
    opt = solve(mvu(graph), solver="CLARABEL").objective
    assert cert.bound <= opt + BOUND_SLACK * abs(opt)
    trace_bound = -pen.conjugate(y) \
        + cert.lambda_min * shortest_path_trace_bound(gp)
    assert cert.bound > trace_bound
    # the scaled bound is exactly -phi*(y) / (1 + mu) up to the rounding margin
    assert cert.bound == pytest.approx(-pen.conjugate(y) / (1 + cert.lambda_min), rel=1e-9)


def test_objective_curvature_is_only_claimed_when_known(digits):
    _, _, y_obs, graph = digits
    space = lowrank.FactorSpace(dvu_problem(graph, y_obs), None)
    C = space.C
    expected = -float(C.diag.max()) if not np.any(C.s > 0) else 0.0
    assert lowrank.certificate._objective_curvature(space) == expected
    # on a basis: -lambda_max(Q^T C Q), compared with a dense computation
    Q = laplacian_basis(space.gp.edges, space.gp.n, 6)
    reduced = lowrank.FactorSpace(space.gp, Q)
    dense = np.linalg.eigvalsh(Q.T @ C.dense() @ Q)[-1]
    assert lowrank.certificate._objective_curvature(reduced) == pytest.approx(-dense, abs=1e-10)


# ----------------------------------------------------------------------- verified lambda_min
# The Lanczos path (n > _DENSE_EIG_MAX) is exercised on small instances by lowering
# the threshold; dense eigvalsh of S on 1-perp (error ~ n u ||S|| ~ 1e-13 here) is
# the reference.
@pytest.fixture(scope="module")
def digits120():
    X, y = _digits()
    rng = np.random.default_rng(0)
    idx = rng.permutation(y.size)[:120]
    X, y = X[idx], y[idx].copy()
    y[rng.random(idx.size) > 0.7] = -1
    graph = knn_graph(X, n_neighbors=3, n_random=1, random_state=0)
    return dvu_problem(graph, y)


def _dense_lambda_min(gp, space, y, nu=0.0):
    S = gp.full_objective().dense() + space.B.T @ (y[:, None] * space.B.toarray())
    if nu:
        S = S + nu * space.H.dense()
    w = np.linalg.eigvalsh(centering_basis(gp.n).T @ S @ centering_basis(gp.n))
    return w[0], np.abs(w).max()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sparse_verification_brackets_the_true_lambda_min(digits120, seed):
    """(a) the verified mu is <= the true lambda_min and within 1e-8 ||S|| of it, the rounding
    bound far below the shift; (b) a mu above the true lambda_min (by 1e-9 ||S||, far above
    the rounding bounds ~1e-15 ||S||) fails: a success there would contradict the proof;
    (c) an estimate far too high (as if Lanczos had missed the leftmost eigenvalue) is
    re-estimated by shift-invert, never reported as verified."""
    gp = digits120
    space = lowrank.FactorSpace(gp, None, limits=lowrank.DenseLimits(eig=50))
    pen = lowrank.DistancePenalty(gp)
    y = np.random.default_rng(seed).uniform(-1, 1, gp.edges.shape[0]) * pen.w
    lam, norm = _dense_lambda_min(gp, space, y)
    est = lowrank.spectrum._lambda_min(space, y, 0.0, tol=1e-10)
    mu, why, checks = lowrank.verify._verified_lambda_min(space, y, 0.0, est.value)
    assert mu is not None, why
    assert checks[-1].verified and checks[-1].bound < checks[-1].delta <= 1e-10 * norm
    assert mu <= lam
    assert lam - mu <= 1e-8 * norm
    for mode in ("full", "tree"):
        above = lowrank.sparse_slack.sparse_verify(space, y, 0.0, lam + 1e-9 * norm, mode=mode)
        assert not above.verified and "pivot" in above.reason
    mu2, _, checks2 = lowrank.verify._verified_lambda_min(space, y, 0.0, lam + 1e-2 * norm)
    assert not checks2[0].verified
    assert mu2 is not None and lam - 1e-8 * norm <= mu2 <= lam


def test_tree_coordinates_verify_where_the_constant_vector_is_below(digits120):
    """MVU's C = -I puts the constant vector at -1, below the spectrum on 1-perp: the full
    space cannot prove a bound there, the tree basis of 1-perp can (and only below the true
    value)."""
    X, _ = _digits()
    gp = mvu_problem(knn_graph(X[:120], n_neighbors=4, n_random=1, random_state=0))
    space = lowrank.FactorSpace(gp, None, limits=lowrank.DenseLimits(eig=50))
    y = np.full(gp.edges.shape[0], 2.0)
    lam, norm = _dense_lambda_min(gp, space, y)
    parts = lowrank.sparse_slack.SlackParts.of(space, y, 0.0)
    assert not lowrank.sparse_slack.full_coordinates(space, parts, lam - 1e-6 * norm)
    below = lowrank.sparse_slack.sparse_verify(space, y, 0.0, lam - 1e-6 * norm)
    assert below.mode == "tree" and below.verified
    assert not lowrank.sparse_slack.sparse_verify(space, y, 0.0, lam + 1e-6 * norm).verified
    full = lowrank.sparse_slack.sparse_verify(space, y, 0.0, lam - 1e-6 * norm, mode="full")
    assert not full.verified


def test_verification_is_reported_honestly_when_the_factorisation_cannot_run(digits, monkeypatch):
    """When the sparse factorisation cannot run (here: out of memory), the estimate is only
    an estimate: no certified gap, status optimal_inaccurate, the reason given."""
    _, _, y, graph = digits

    def no_memory(*args, **kwargs):
        raise MemoryError("simulated")

    # every sparse factorisation (CHOLMOD, QDLDL, SuperLU) runs out of memory
    monkeypatch.setattr(lowrank.sparse_slack.spla, "splu", no_memory)
    monkeypatch.setattr(lowrank.sparse_slack._Bordered, "_factor_ldl", no_memory)
    monkeypatch.setattr(lowrank.sparse_slack._Bordered, "_factor_cholmod", no_memory)
    with pytest.warns(Warning, match="LOWRANK"):
        rep = solve(dvu(graph, y, centroids="eliminated", distances="equality"),
                    solver="LOWRANK", tol=1e-5, dense_limits={"eig": 20})
    assert rep.extra["certificate_check"] == "lanczos (unverified)"
    assert rep.certified_gap is None and rep.extra["lower_bound"] is None
    assert rep.extra["estimated_gap"] is not None and rep.extra["estimated_gap"] <= 1e-5
    assert rep.status == "optimal_inaccurate" and "UNVERIFIED" in rep.extra["certificate"]
    assert "memory" in rep.extra["certificate"]


@pytest.mark.parametrize("variant", ["equality", "snr"])
def test_lowrank_final_certificate_is_verified_by_a_sparse_factorisation(digits, variant):
    """(c) with the Lanczos path forced (n = 36 > 20) the reported certificate is checked
    by a sparse factorisation; its bound stays below CLARABEL's optimum (+1e-6 relative:
    CLARABEL's own accuracy)."""
    _, _, y, graph = digits
    kw = DVU_VARIANTS[variant]
    rep = solve(dvu(graph, y, centroids="eliminated", **kw), solver="LOWRANK", tol=1e-5,
                dense_limits=lowrank.DenseLimits(eig=20))
    ref = solve(dvu(graph, y, centroids="eliminated", **kw), solver="CLARABEL")
    assert rep.extra["certificate_check"] == "sparse", rep.extra["certificate"]
    assert "verified by a sparse factorisation" in rep.extra["certificate"]
    assert rep.certified_gap is not None and rep.certified_gap <= 1e-4
    assert rep.extra["lower_bound"] <= ref.objective + BOUND_SLACK * abs(ref.objective)
    assert "estimated_gap" not in rep.extra


def test_small_n_certificate_is_dense(digits):
    _, _, y, graph = digits
    rep = solve(dvu(graph, y, centroids="eliminated"), solver="LOWRANK", tol=1e-5)
    assert rep.extra["certificate_check"] == "dense" and rep.certified_gap is not None


def test_rank_growth_is_refused_for_a_rank_deficient_factor():
    """A factor with a numerically null direction (an MVU optimum of rank below the
    factor's) needs no extra column; one whose smallest singular value is small but
    genuine (DVU, ~4e-4 of the largest) may still grow."""
    rng = np.random.default_rng(0)
    W = rng.standard_normal((200, 6))
    assert not lowrank.space._rank_deficient(W)
    W[:, 5] = W[:, :5] @ rng.standard_normal(5)  # rank 5 in 6 columns
    assert lowrank.space._rank_deficient(W)
    U, s, Vt = np.linalg.svd(rng.standard_normal((200, 6)), full_matrices=False)
    assert not lowrank.space._rank_deficient(U @ np.diag(np.r_[s[:5], 4e-4 * s[0]]) @ Vt)


def test_trim_rank_drops_null_directions_and_keeps_the_gram_matrix():
    """Trimming keeps ``W W^T`` (to the dropped singular values squared), leaves
    ``margin`` null columns so growth stays refused, and leaves a factor alone when
    less than a quarter of its columns are null."""
    rng = np.random.default_rng(1)
    U, _, Vt = np.linalg.svd(rng.standard_normal((300, 12)), full_matrices=False)
    s = np.r_[np.linspace(3.0, 1.0, 5), 1e-9 * np.ones(7)]
    W = U @ np.diag(s) @ Vt
    T = lowrank.outer._trim_rank(W)
    assert T.shape == (300, 5 + 2)
    # exact up to the dropped sigma_i^2 = 1e-18 and rounding of the SVD (~1e-15 relative)
    assert np.linalg.norm(T @ T.T - W @ W.T) <= 1e-13 * np.linalg.norm(W @ W.T)
    assert lowrank.space._rank_deficient(T)
    # 9 genuine of 12: trimming would drop only 1 column, not worth a restart
    s2 = np.r_[np.linspace(3.0, 1.0, 9), 1e-9 * np.ones(3)]
    assert lowrank.outer._trim_rank(U @ np.diag(s2) @ Vt) is None
    # a full-rank factor is never trimmed
    assert lowrank.outer._trim_rank(rng.standard_normal((300, 12))) is None


def test_restore_feasibility_projects_onto_the_distance_equalities(digits):
    """Gauss-Newton restoration: from a point 1e-4 off the MVU constraints it reaches
    a relative residual below 1e-10 (quadratic convergence), keeps the columns
    centred, and moves the factor no further than the feasible point it was
    perturbed from (the least-norm step), up to second-order terms."""
    X, _, _, graph = digits
    gp = mvu(graph).meta["gram_problem"]
    space, pen = lowrank.FactorSpace(gp, None), lowrank.DistancePenalty(gp)
    F = X - X.mean(axis=0)  # feasible once scaled: the targets are its squared edge
    Z = space.diffs(F)      # lengths over a common scale
    F = F * np.sqrt(pen.t[0] / np.sum(Z[0] ** 2))
    Z = space.diffs(F)
    assert np.allclose(np.einsum("ij,ij->i", Z, Z), pen.t, rtol=1e-12)
    noise = np.random.default_rng(0).standard_normal(F.shape)
    W = F + 1e-4 * np.linalg.norm(F) / np.linalg.norm(noise) * space.project(noise)
    Z = space.diffs(W)
    r0 = np.linalg.norm(np.einsum("ij,ij->i", Z, Z) - pen.t) / np.linalg.norm(pen.t)
    assert r0 > 1e-5
    W_r, r = lowrank.restore_feasibility(space, pen, W, tol=1e-12)
    Z = space.diffs(W_r)
    assert r == pytest.approx(
        np.linalg.norm(np.einsum("ij,ij->i", Z, Z) - pen.t) / np.linalg.norm(pen.t))
    assert r <= 1e-10
    assert np.abs(W_r.mean(axis=0)).max() <= 1e-12 * np.abs(W_r).max()
    assert np.linalg.norm(W_r - W) <= 1.01 * np.linalg.norm(W - F)
    # an already feasible factor is returned as it is
    W_same, r_same = lowrank.restore_feasibility(space, pen, F, tol=1e-12)
    assert W_same is F and r_same <= 1e-12
    # misuse is rejected before any work: a wrong shape, a mode without equalities
    with pytest.raises(InputError, match="shape"):
        lowrank.restore_feasibility(space, pen, F[:-1], tol=1e-12)
    _, _, y_obs, _ = digits
    gp_q = dvu_problem(graph, y_obs, distances="quadratic")
    with pytest.raises(InputError, match="distances='quadratic'"):
        lowrank.restore_feasibility(lowrank.FactorSpace(gp_q, None), lowrank.DistancePenalty(gp_q),
                                    F, tol=1e-12)


def test_restore_feasibility_moves_interval_edges_onto_the_kink(digits):
    """For distances='interval' only the edges within kink_tol of their target are
    constrained (the others are free: their penalty is differentiable there). From a
    point whose relative edge residuals straddle kink_tol, the kink edges reach
    D = t to 1e-10, the penalty they carried vanishes and the objective falls by about
    as much (measured 1.15 times: the other edges and <C, G> move a little), and the
    edges outside the set are left off it (their points move, so their residuals
    change, but stay of the order of kink_tol)."""
    X, _, y_obs, graph = digits
    gp = dvu_problem(graph, y_obs)
    space, pen = lowrank.FactorSpace(gp, None), lowrank.DistancePenalty(gp)
    F = X - X.mean(axis=0)
    Z = space.diffs(F)
    F = F * np.sqrt(pen.t[0] / np.sum(Z[0] ** 2))
    noise = np.random.default_rng(1).standard_normal(F.shape)
    W = F + 1e-4 * np.linalg.norm(F) / np.linalg.norm(noise) * space.project(noise)
    Z = space.diffs(W)
    rel = np.abs(np.einsum("ij,ij->i", Z, Z) - pen.t) / pen.t
    kink_tol = float(np.median(rel))
    on, off = rel <= kink_tol, rel > kink_tol
    assert on.sum() >= 10 and off.sum() >= 10
    W_r, r = lowrank.restore_feasibility(space, pen, W, tol=1e-12, kink_tol=kink_tol)
    Z = space.diffs(W_r)
    rel_r = np.abs(np.einsum("ij,ij->i", Z, Z) - pen.t) / pen.t
    assert r <= 1e-10
    assert r == pytest.approx(np.linalg.norm((rel_r * pen.t)[on]) / np.linalg.norm(pen.t[on]))
    assert np.min(rel_r[off]) > 1e-2 * kink_tol  # moved, but not projected onto the kink
    assert np.abs(W_r.mean(axis=0)).max() <= 1e-12 * np.abs(W_r).max()
    alm = lowrank.alm._ALM(space, pen, lowrank.LowRankOptions())
    penalty_on = float(pen.w[on] @ (rel[on] * pen.t[on]))
    assert float(pen.w[on] @ (rel_r[on] * pen.t[on])) <= 1e-8 * penalty_on
    drop = alm.true_objective(W) - alm.true_objective(W_r)
    assert 0.5 * penalty_on < drop < 2.0 * penalty_on


def test_lanczos_estimate_survives_a_poor_deflation(digits):
    """The Lanczos path (forced here on n = 36) splits off the factor's range; when
    that range is far from the null space of S the split bound is loose (it was -1.5e-2
    against a true -7.9e-4 on a USPS MVU iterate). A certificate asked for a bound it
    misses is recomputed from Lanczos on all of 1-perp: within 1e-6 of the dense
    lambda_min, never above it by more than rounding."""
    _, _, _, graph = digits
    gp = mvu(graph).meta["gram_problem"]
    space = lowrank.FactorSpace(gp, None, limits=lowrank.DenseLimits(eig=10))  # Lanczos
    pen = lowrank.DistancePenalty(gp)
    rng = np.random.default_rng(3)
    y = rng.uniform(0.0, 2.0, gp.edges.shape[0]) / gp.target.mean()
    H = centering_basis(gp.n)
    S = H.T @ space.apply_S(H, y, 0.0)
    exact = np.linalg.eigvalsh(0.5 * (S + S.T))[0]
    scale = np.abs(S).max()
    W = space.project(rng.standard_normal((gp.n, 5)))
    split = lowrank.certify(space, pen, y, 0.0, factor=W, eig_tol=1e-6)
    assert split.lambda_min < exact - 0.1 * abs(exact)  # the loose case this is about
    full = lowrank.certify(space, pen, y, 0.0, factor=W, eig_tol=1e-6, target=np.inf)
    assert full.bound > split.bound
    assert full.lambda_min <= exact + 1e-12 * scale
    assert full.lambda_min >= exact - 1e-6 * scale


def _rosenbrock(x):
    """Chained Rosenbrock function and gradient (minimum 0 at all ones)."""
    a, b = x[:-1], x[1:]
    f = float(np.sum(100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2))
    g = np.zeros_like(x)
    g[:-1] = -400.0 * a * (b - a * a) - 2.0 * (1.0 - a)
    g[1:] += 200.0 * (b - a * a)
    return f, g


@pytest.mark.parametrize("preconditioned", [False, True])
def test_lbfgs_reaches_the_minimiser(preconditioned):
    # chained Rosenbrock (non-convex, minimiser all ones) in 200 variables; the
    # preconditioned variant with a fixed diagonal M^{-1} must converge as well
    x0 = np.tile([-1.2, 1.0], 100)
    pc = (lambda v: v / 200.0) if preconditioned else None
    res = lowrank.inner._lbfgs(_rosenbrock, x0, gtol=1e-8, maxiter=5000, precond=pc, ftol=0.0,
                       stop_norm=2)
    assert res.gnorm <= 1e-8
    assert np.max(np.abs(res.x - 1.0)) < 1e-7


def test_lbfgs_agrees_with_scipy_on_a_quadratic():
    # strictly convex quadratic, diagonal A with entries in [1, 1e4]: both solvers stop
    # at ||g||_inf <= 1e-5, so each coordinate is within |g_i|/A_ii <= 1e-5 of the
    # minimiser A^{-1} b (both stall near 2e-6, where the objective's rounding hides
    # further decrease), in a comparable number of iterations
    import scipy.optimize as sopt
    rng = np.random.default_rng(3)
    d = np.exp(rng.uniform(0.0, np.log(1e4), 300))
    b = rng.standard_normal(300)

    def fun(x):
        return 0.5 * float(x @ (d * x)) - float(b @ x), d * x - b

    ours = lowrank.inner._lbfgs(fun, np.zeros(300), gtol=1e-5, maxiter=5000, ftol=0.0)
    ref = sopt.minimize(fun, np.zeros(300), jac=True, method="L-BFGS-B",
                        options={"gtol": 1e-5, "ftol": 0.0, "maxiter": 5000, "maxcor": 20})
    assert np.max(np.abs(fun(ours.x)[1])) <= 1e-5
    assert np.max(np.abs(ours.x - b / d)) <= 1e-5
    assert np.max(np.abs(ours.x - ref.x)) <= 2e-5
    assert ours.nit <= 2 * ref.nit


def test_wolfe_step_satisfies_both_conditions():
    # from the Rosenbrock start along the steepest-descent direction scaled so that
    # step 1 overshoots, and scaled so that step 1 is far too short: the step found
    # has sufficient decrease and the curvature condition in both cases
    x = np.array([-1.2, 1.0, -1.2, 1.0])
    f, g = _rosenbrock(x)
    for scale in (1e-1, 1e-6):
        d = -scale * g
        slope = float(g @ d)
        xn, fn, gn = lowrank.inner._wolfe(_rosenbrock, x, f, d, slope)
        t = float((xn - x) @ d / (d @ d))
        assert fn <= f + 1e-4 * t * slope
        assert float(gn @ d) >= 0.9 * slope


def test_reported_pair_is_the_best_primal_with_the_best_bound(digits):
    # the solve returns the lowest-objective feasible iterate with the highest bound of
    # any iteration (weak duality holds across iterations). Checked independently: the
    # objective of the returned factor, the bound recomputed from the returned
    # multipliers, the gap no larger than any single iteration's, the bound below
    # CLARABEL's optimum
    _, _, y_obs, graph = digits
    gp = dvu_problem(graph, y_obs)
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(tol=1e-6))
    space, pen = lowrank.FactorSpace(gp, None), lowrank.DistancePenalty(gp)
    F = res.factor
    obj = _interval_objective(gp, pen, F)
    assert abs(obj - res.objective) <= 1e-10 * abs(res.objective)
    cert = lowrank.certify(space, pen, res.y, res.nu, factor=F)
    assert cert.bound == pytest.approx(res.bound, rel=1e-9)
    per_iteration = [e["certified_gap"] for e in res.history if "certified_gap" in e]
    assert per_iteration and res.certified_gap <= min(per_iteration) * (1 + 1e-12)
    ref = solve(dvu(graph, y_obs, centroids="eliminated"), solver="CLARABEL")
    assert res.bound <= ref.objective + BOUND_SLACK * abs(ref.objective)


def _perturbed_optimal_multipliers(gp):
    """A tight LOWRANK solve of ``gp`` and its multipliers perturbed by 1e-4 of their
    largest magnitude (kept in the box), where S(y) has small negative eigenvalues."""
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(tol=1e-8))
    space, pen = lowrank.FactorSpace(gp, None), lowrank.DistancePenalty(gp)
    noise = 1e-4 * np.random.default_rng(0).standard_normal(res.y.shape) * np.abs(res.y).max()
    return gp, res, space, pen, np.clip(res.y + noise, -pen.w, pen.w)


@pytest.mark.parametrize("variant", ["interval", "snr"])
def test_lifted_multipliers_make_the_dual_slack_psd_cheaply(digits, variant):
    """lift_multipliers: from multipliers perturbed by 1e-4 (S(y) with lambda_min about
    -2e-5), raising a few y_e gives an exactly PSD S (dense eigenvalues on 1-perp) and a
    valid bound (below CLARABEL's optimum) that loses at least 5x less than the shifted
    certificate at the same multipliers (measured: 11x). Only raises, stays in the box."""
    _, _, y_obs, graph = digits
    kw = {"interval": {}, "snr": {"snr": 4.0}}[variant]
    gp, res, space, pen, y_noisy = _perturbed_optimal_multipliers(dvu_problem(graph, y_obs, **kw))
    shifted = lowrank.certify(space, pen, y_noisy, res.nu, factor=res.factor)
    assert shifted.method == "shifted"
    y_l, eig = lowrank.lift_multipliers(space, pen, y_noisy, res.nu)
    Hb = centering_basis(gp.n)
    SH = space.apply_S(Hb, y_l, res.nu)
    lam = np.linalg.eigvalsh(0.5 * (Hb.T @ SH + SH.T @ Hb))[0]
    assert lam >= 0 and eig.value == pytest.approx(lam, rel=1e-6)
    assert np.all(y_l >= y_noisy) and np.all(np.abs(y_l) <= pen.w)
    opt = solve(dvu(graph, y_obs, centroids="eliminated", **kw), solver="CLARABEL").objective
    bound = -pen.conjugate(y_l)
    assert bound <= opt + BOUND_SLACK * abs(opt)
    assert opt - bound <= (opt - shifted.bound) / 5


def test_two_sided_lift_lowers_multipliers_and_keeps_the_bound_valid(digits):
    """lift_multipliers(both_ways=True): from the perturbed multipliers of the test above,
    some y_e fall (inside the box), S(y) is PSD exactly (dense eigenvalues on 1-perp), the
    bound stays below CLARABEL's optimum and is higher than the one-sided lift's
    (measured: gaps 8.0e-5 against 1.5e-4)."""
    _, _, y_obs, graph = digits
    gp, res, space, pen, y_noisy = _perturbed_optimal_multipliers(dvu_problem(graph, y_obs))
    y_one, _ = lowrank.lift_multipliers(space, pen, y_noisy, res.nu)
    y_two, eig = lowrank.lift_multipliers(space, pen, y_noisy, res.nu, both_ways=True)
    Hb = centering_basis(gp.n)
    SH = space.apply_S(Hb, y_two, res.nu)
    lam = np.linalg.eigvalsh(0.5 * (Hb.T @ SH + SH.T @ Hb))[0]
    assert lam >= 0 and eig.value == pytest.approx(lam, rel=1e-6)
    assert np.any(y_two < y_noisy) and np.all(np.abs(y_two) <= pen.w)
    opt = solve(dvu(graph, y_obs, centroids="eliminated"), solver="CLARABEL").objective
    one, two = -pen.conjugate(y_one), -pen.conjugate(y_two)
    assert two <= opt + BOUND_SLACK * abs(opt)
    assert opt - two <= 0.75 * (opt - one)


def test_lift_stops_once_the_shifted_bound_reaches_its_target(digits):
    """lift_multipliers(target=, mu0=): no round when the shift towards y0 = w already
    proves the target, the untargeted result when the target is out of reach, and for a
    target between the two, multipliers whose shifted bound (and certificate) reach it
    at no more lifting cost than the lift to a PSD S."""
    _, _, y_obs, graph = digits
    gp, res, space, pen, y_noisy = _perturbed_optimal_multipliers(dvu_problem(graph, y_obs))
    mu0 = lowrank.spectrum._lambda_min(space, pen.w, 0.0, tol=1e-10).value
    mu = lowrank.spectrum._lambda_min(space, y_noisy, res.nu, tol=1e-10).value
    assert mu < 0 < mu0
    start = lowrank.repair._shifted_bound(pen, y_noisy, mu, mu0)
    y_full, eig_full = lowrank.lift_multipliers(space, pen, y_noisy, res.nu)
    full = -pen.conjugate(y_full)
    assert eig_full.value >= 0 and full > start

    # a target the shift already proves (up to the two eigensolvers' rounding, 1e-9 of it)
    y_t, eig_t = lowrank.lift_multipliers(space, pen, y_noisy, res.nu,
                                          target=start - 1e-9 * abs(start), mu0=mu0)
    np.testing.assert_array_equal(y_t, y_noisy)
    assert eig_t.value == pytest.approx(mu, rel=1e-6)

    y_t, _ = lowrank.lift_multipliers(space, pen, y_noisy, res.nu, target=np.inf, mu0=mu0)
    np.testing.assert_array_equal(y_t, y_full)

    target = 0.5 * (start + full)
    y_t, eig_t = lowrank.lift_multipliers(space, pen, y_noisy, res.nu, target=target, mu0=mu0)
    assert np.any(y_t > y_noisy)
    assert lowrank.repair._shifted_bound(pen, y_t, min(eig_t.value, 0.0), mu0) >= target
    assert pen.t @ (y_t - y_noisy) <= pen.t @ (y_full - y_noisy) * (1 + 1e-12)
    cert = lowrank.certify(space, pen, y_t, res.nu)
    assert cert.bound >= target - 1e-9 * abs(target)


def test_interval_certificate_above_the_dense_limit_uses_shift_invert(digits):
    """Interval problems with n > DenseLimits.eig (here n = 36 with the dense limit lowered
    to 5) take lambda_min from the bottom eigenpairs by shift-invert on a sparse
    factorisation: the value is the exact one (to rounding), labelled "shift-invert
    (unverified)" until verify_certificate checks it by a sparse factorisation (which can
    only lower the bound), and the bottom eigenpairs are kept for the lift, which given them
    returns the same multipliers as with its own eigenpairs."""
    _, _, y_obs, graph = digits
    gp, res, space, pen, y_noisy = _perturbed_optimal_multipliers(dvu_problem(graph, y_obs))
    space = lowrank.FactorSpace(gp, None, limits=lowrank.DenseLimits(eig=5))
    cache = lowrank.CertificateCache()
    cert = lowrank.certify(space, pen, y_noisy, res.nu, factor=res.factor, cache=cache)
    Hb = centering_basis(gp.n)
    SH = space.apply_S(Hb, y_noisy, res.nu)
    exact = np.linalg.eigvalsh(0.5 * (Hb.T @ SH + SH.T @ Hb))[0]
    assert exact < 0 and cert.lambda_min == pytest.approx(exact, abs=1e-12)
    assert cert.check == lowrank.CHECK_SHIFT_INVERT and not cert.verified
    assert "UNVERIFIED" in cert.describe()
    checked = lowrank.verify_certificate(space, pen, cert, cache=cache)
    assert checked.check == lowrank.CHECK_SPARSE and checked.verified
    assert checked.lambda_min <= exact and checked.bound <= cert.bound
    assert "shift-invert estimate" in checked.check_note
    [(y_kept, nu_kept, lam, X)] = cache.eigenpairs
    np.testing.assert_array_equal(y_kept, y_noisy)
    y_a, eig_a = lowrank.lift_multipliers(space, pen, y_noisy, res.nu, eigenpairs=(lam, X))
    y_b, eig_b = lowrank.lift_multipliers(space, pen, y_noisy, res.nu)
    np.testing.assert_array_equal(y_a, y_b)
    assert eig_a.value == eig_b.value >= 0
    with pytest.raises(InputError, match="eigenpairs"):
        lowrank.lift_multipliers(space, pen, y_noisy, res.nu, eigenpairs=(lam[:3], X[:, :3]))


def test_certificate_attempt_computes_a_full_block_only_where_the_lift_starts(digits):
    """Above the dense limit (here n = 36, limit 5) an attempt's candidates get blocks of
    _CANDIDATE_BLOCK eigenpairs, except the one the lift starts from (_lift_start), which
    gets limits.block: the same lambda_min and bounds (to rounding) as full blocks, and the
    lift from the kept block returns the same multipliers (to rounding) as from its own;
    without lift_from (no lift follows) every block is small."""
    _, _, y_obs, graph = digits
    gp, res, space, pen, y_noisy = _perturbed_optimal_multipliers(dvu_problem(graph, y_obs))
    space = lowrank.FactorSpace(gp, None, limits=lowrank.DenseLimits(eig=5, block=30))
    y_far = np.clip(res.y + 10 * (y_noisy - res.y), -pen.w, pen.w)
    candidates = [(y_far, res.nu), (y_noisy, res.nu)]
    p_best = float(res.objective)
    start = lowrank.certificate._lift_start(space, pen, candidates, p_best)
    opts = lowrank.LowRankOptions()
    cache = lowrank.CertificateCache()
    for k in range(2):   # each candidate's certificate with its full block
        full = lowrank.certify(space, pen, *candidates[k], factor=res.factor, cache=cache)
        small = lowrank.certify(space, pen, *candidates[k], factor=res.factor,
                                block=lowrank.certificate._CANDIDATE_BLOCK)
        assert small.lambda_min == pytest.approx(full.lambda_min, abs=1e-12)
        assert small.bound == pytest.approx(full.bound, rel=1e-12)
    cache = lowrank.CertificateCache()
    lowrank.certificate._best_certificate(space, pen, res.factor, candidates, opts, cache,
                                          lift_from=p_best)
    sizes = [lam.size for _, _, lam, _ in cache.eigenpairs]
    assert sizes == [30 if k == start else lowrank.certificate._CANDIDATE_BLOCK
                     for k in range(2)]
    _, _, lam, X = cache.eigenpairs[start]
    y_a, _ = lowrank.lift_multipliers(space, pen, candidates[start][0], res.nu,
                                      eigenpairs=(lam, X))
    y_b, _ = lowrank.lift_multipliers(space, pen, candidates[start][0], res.nu)
    # the kept block was shifted below the other candidate's lambda_min: rounding differs
    np.testing.assert_allclose(y_a, y_b, rtol=0, atol=1e-12 * np.abs(y_b).max())
    cache = lowrank.CertificateCache()
    lowrank.certificate._best_certificate(space, pen, res.factor, candidates, opts, cache)
    assert [lam.size for _, _, lam, _ in cache.eigenpairs] == [16, 16]


def test_lift_round_blocks_shift_below_the_last_round(digits, monkeypatch):
    """Above the dense limit (here n = 36, limit 5) a lift round after the first shifts its
    shift-invert block just below the previous round's lambda_min, a lower bound on the new
    one (the lift only adds PSD terms: Weyl), and blocks raise their shift towards the
    spectrum while the pivots stay positive: each block's eigenpairs are the dense ones of
    its S, and the lifted multipliers and returned lambda_min are those of main's shifts
    (to rounding): the shifts change the path, not the pairs."""
    _, _, y_obs, graph = digits
    gp, res, space, pen, y_noisy = _perturbed_optimal_multipliers(dvu_problem(graph, y_obs))
    space = lowrank.FactorSpace(gp, None, limits=lowrank.DenseLimits(eig=5, block=30))
    y_far = np.clip(res.y + 10 * (y_noisy - res.y), -pen.w, pen.w)
    calls, shifts = [], []
    bottom, sparse_bottom = lowrank.repair._bottom, lowrank.spectrum.sparse_bottom

    def spy(space_, y, nu, k, **kw):
        lam, X = bottom(space_, y, nu, k, **kw)
        calls.append((kw, np.array(y), lam, X))
        return lam, X

    def spy_sparse(*args, **kw):
        out = sparse_bottom(*args, **kw)
        shifts.append((kw["sigma"], out[2]))
        return out
    monkeypatch.setattr(lowrank.repair, "_bottom", spy)
    monkeypatch.setattr(lowrank.spectrum, "sparse_bottom", spy_sparse)
    y_w, eig_w = lowrank.lift_multipliers(space, pen, y_far, res.nu, min_block=8)
    assert len(calls) >= 2      # the test needs a round after the first
    assert calls[0][0].get("lower") is None
    Hb = centering_basis(gp.n)
    for (kw, y, lam, X), (_, _, lam_prev, _), (asked, used) in zip(calls[1:], calls[:-1],
                                                                   shifts[1:]):
        assert kw["lower"] == lam_prev[0]
        SH = space.apply_S(Hb, y, res.nu)
        dense = np.linalg.eigvalsh(0.5 * (Hb.T @ SH + SH.T @ Hb))
        scale = np.abs(dense).max()
        assert lam[0] >= lam_prev[0] - 1e-12 * scale      # Weyl
        assert asked <= used < dense[0]                   # raised, still below
        np.testing.assert_allclose(lam, dense[:lam.size], rtol=0, atol=1e-9 * scale)
        SX = space.apply_S(X, y, res.nu)
        assert np.linalg.norm(SX - SX.mean(axis=0) - X * lam) <= 1e-6 * scale
    assert any(used > asked for asked, used in shifts)   # some shift was raised
    calls.clear()
    shifts.clear()
    y_c, eig_c = lowrank.lift_multipliers(space, pen, y_far, res.nu, min_block=8,
                                          near_shifts=False)
    assert all(kw.get("lower") is None for kw, *_ in calls)
    assert all(used == asked for asked, used in shifts)
    np.testing.assert_allclose(y_w, y_c, rtol=0, atol=1e-9 * np.abs(y_c).max())
    assert eig_w.value == pytest.approx(eig_c.value, abs=1e-10)


def test_lift_multipliers_rejects_what_it_cannot_lift(digits):
    _, _, y_obs, graph = digits
    gp = dvu_problem(graph, y_obs, distances="equality")
    space, pen = lowrank.FactorSpace(gp, None), lowrank.DistancePenalty(gp)
    with pytest.raises(InputError, match="interval"):
        lowrank.lift_multipliers(space, pen, np.zeros(gp.edges.shape[0]), 0.0)
    gp = dvu_problem(graph, y_obs)
    space, pen = lowrank.FactorSpace(gp, None), lowrank.DistancePenalty(gp)
    with pytest.raises(InputError, match="one multiplier per edge"):
        lowrank.lift_multipliers(space, pen, np.zeros(gp.edges.shape[0] + 1), 0.0)
    y0 = np.zeros(gp.edges.shape[0])
    for bad, match in [({"min_block": 0}, "min_block must be a positive integer"),
                       ({"n_eig": 2.5}, "n_eig must be a positive integer"),
                       ({"n_edges": True}, "n_edges must be a positive integer"),
                       ({"n_lowered": 0}, "n_lowered must be a positive integer"),
                       ({"rounds": -1}, "rounds must be an integer >= 0"),
                       ({"target": -1.0}, "target needs mu0")]:
        with pytest.raises(InputError, match=match):
            lowrank.lift_multipliers(space, pen, y0, 0.0, **bad)


@pytest.mark.parametrize("kink_tol", [-1e-4, np.nan, np.inf, "1e-4", True])
def test_kink_tolerance_must_be_a_finite_nonnegative_number(digits, kink_tol):
    X, _, y_obs, graph = digits
    gp = dvu_problem(graph, y_obs)
    space, pen = lowrank.FactorSpace(gp, None), lowrank.DistancePenalty(gp)
    F = X - X.mean(axis=0)
    with pytest.raises(InputError, match="kink_tol must be a finite number >= 0"):
        lowrank.restore_feasibility(space, pen, F, tol=1e-12, kink_tol=kink_tol)
    with pytest.raises(InputError, match="kink_tol must be a finite number >= 0"):
        lowrank.refine_multipliers(space, pen, F, np.zeros(gp.edges.shape[0]), 0.0,
                                 kink_tol=kink_tol)


def test_solve_without_certificate_attempt_returns_its_best_iterate(no_paid_barrier):
    # stopped by max_outer before any certificate attempt (tol far below reach), the
    # solve still reports the lowest-objective iterate (every interval iterate is
    # feasible), certified by the last iterate's multipliers. On this instance the
    # objectives are not monotone; the solve is stopped at the first outer iteration whose
    # objective is above an earlier one (found by a longer run: the iterates are
    # deterministic, so the stopped run repeats its first iterations). The Huber envelope
    # with L-BFGS subproblems: the kink envelope's iterates, and Newton-CG's (which
    # inner="auto" gives this small factor once L-BFGS struggles), reach a certificate
    # attempt before such an iterate
    _, _, y_obs, graph = _three_class_digits(120, seed=0)
    gp = dvu_problem(graph, y_obs)
    opts = {"tol": 1e-9, "interval_envelope": "huber", "inner": "lbfgs"}
    longer = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(max_outer=20, **opts))
    path = [e["objective"] for e in longer.history]
    stop = next(i + 1 for i in range(1, len(path)) if path[i] > min(path[:i]))
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(max_outer=stop, **opts))
    objectives = [e["objective"] for e in res.history]
    assert objectives == path[:stop]
    assert res.status == "optimal_inaccurate" and len(objectives) == stop
    assert not any("lambda_min" in e for e in res.history)  # no certificate attempt
    assert objectives[-1] > min(objectives)  # the path under test: the last is not the best
    assert res.objective == pytest.approx(min(objectives), rel=1e-12)
    space, pen = lowrank.FactorSpace(gp, None), lowrank.DistancePenalty(gp)
    assert _interval_objective(gp, pen, res.factor) == pytest.approx(res.objective, rel=1e-10)
    assert res.bound is not None and res.bound <= res.objective
    assert lowrank.certify(space, pen, res.y, res.nu).bound == pytest.approx(res.bound, rel=1e-9)


def test_former_modules_reexport_the_lowrank_names():
    # sdpembed.large and sdpembed.reduced are kept for one release as re-exports
    import sdpembed.large as large
    import sdpembed.reduced as reduced

    for name in large.__all__:
        assert hasattr(large, name), name
    assert large.lowrank_solve is lowrank.lowrank_solve
    assert large.LowRankOptions is lowrank.LowRankOptions and large.certify is lowrank.certify
    assert reduced.interval_ipm is lowrank.reduced_ipm.interval_ipm
    assert reduced.rank_one_lmi_lp is lowrank.lmi_lp.rank_one_lmi_lp


def test_result_fields_are_typed_and_the_penalty_holds_no_solver_state(digits):
    # the solve's shared state (certificate cache, warm start, reduced IPM record) is
    # typed and only documented fields reach the result; the envelope the augmented
    # Lagrangian minimises belongs to it, not to the (stateless) penalty
    _, _, y, graph = digits
    gp = dvu_problem(graph, y)
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(tol=1e-4))
    assert not hasattr(res, "info")
    assert isinstance(res.certificate, lowrank.Certificate) and res.certificate.verified
    assert res.function_evaluations > 0 and res.rank == res.factor.shape[1]
    assert res.interval_envelope == "kink" and not res.unverified
    pen = lowrank.DistancePenalty(gp)
    before = dict(vars(pen))
    alm = lowrank.alm._ALM(lowrank.FactorSpace(gp), pen, lowrank.LowRankOptions())
    assert alm.kind == "equality" and alm.on_kink
    alm.leave_kink()
    assert alm.kind == "interval" and not alm.on_kink
    assert vars(pen).keys() == before.keys()
    # the Farkas operator: the same space with the objective removed
    space = lowrank.FactorSpace(gp)
    farkas = space.without_objective()
    y_ = np.random.default_rng(0).standard_normal(gp.edges.shape[0])
    V = np.random.default_rng(1).standard_normal((gp.n, 3))
    assert np.all(farkas.apply_C(V) == 0.0)
    np.testing.assert_array_equal(farkas.apply_S(V, y_, 0.0),
                                  space.ET @ (y_[:, None] * (space.E @ V)))


def test_lowrank_imports_nothing_above_it():
    # one-way layering: the lowrank backend returns a report.SolveReport and solvers
    # dispatches to it (solvers.TOOLKIT_BACKENDS); nothing in lowrank imports solvers,
    # the estimators, the experiments or the package __init__
    import ast
    from pathlib import Path

    import sdpembed.solvers as solvers_mod

    above = {"solvers", "estimators", "experiments", "sequential", "cli", "plotting"}
    for path in Path(lowrank.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 2:
                top = (node.module or "").split(".")[0]
                assert top and top not in above, (path.name, node.module)
            elif isinstance(node, ast.Import):
                assert not any(a.name == "sdpembed" or a.name.startswith("sdpembed.")
                               for a in node.names), path.name
    assert solvers_mod.TOOLKIT_BACKENDS["LOWRANK"] is lowrank.backend.BACKEND


@pytest.mark.parametrize("factorisation", ["cholmod", "lu"])
def test_mvu_verification_is_dense_below_the_limit_and_sparse_above(digits, factorisation,
                                                                     monkeypatch):
    """MVU's constant vector sits at -1, below the spectrum on 1-perp: the sparse proof
    needs a tree basis of 1-perp and can lose precision there, so up to DenseLimits.verify
    the verification is a dense Cholesky factorisation (with CHOLMOD after one sparse try
    just below the estimate, which succeeds here), above it the sparse one; every bound
    lies below CLARABEL's optimum."""
    if factorisation == "cholmod" and lowrank.sparse_slack.FACTORISATION != "cholmod":
        pytest.skip("cvxopt (CHOLMOD) not installed")
    monkeypatch.setattr(lowrank.sparse_slack, "FACTORISATION", factorisation)
    X, _, _, graph = digits
    f = mvu(graph)
    ref = solve(mvu(graph), solver="CLARABEL")
    below = "sparse" if factorisation == "cholmod" else "cholesky"
    for limits, check in (({"eig": 20}, below), ({"eig": 20, "verify": 30}, "sparse")):
        rep = solve(f, solver="LOWRANK", tol=1e-4, dense_limits=limits)
        assert rep.extra["certificate_check"] == check, rep.extra["certificate"]
        assert rep.certified_gap is not None
        assert rep.extra["lower_bound"] <= ref.objective + BOUND_SLACK * abs(ref.objective)


def test_solution_coordinates_in_an_orthonormal_basis_are_the_least_squares_ones():
    """LOWRANK writes G = F F^T into Y of G = B Y B^T with P = B^T F where B has orthonormal
    columns (the builders' bases: Householder centring, Laplacian eigenvectors) and a
    least-squares solve otherwise; both give lstsq's coordinates (to rounding)."""
    from sdpembed.formulations.gram_problem import centering_basis
    from sdpembed.lowrank.backend import _coordinates

    rng = np.random.default_rng(3)
    F = rng.standard_normal((40, 5))
    F -= F.mean(axis=0)
    for B in (centering_basis(40), np.linalg.qr(rng.standard_normal((40, 12)))[0],
              rng.standard_normal((40, 12))):          # the last: not orthonormal
        P = _coordinates(B, F)
        assert np.allclose(P, np.linalg.lstsq(B, F, rcond=None)[0], atol=1e-12)

"""DVU formulation: invariants, known optima, variants and input errors."""

import numpy as np
import pytest

from sdpembed import knn_graph, solve
from sdpembed.exceptions import (
    DisconnectedGraphError,
    DuplicatePointsError,
    InputError,
    LabelError,
    UnboundedError,
)
from sdpembed.formulations.dvu import (
    _explicit_problem,
    centroid_lifting,
    dvu,
    dvu_problem,
    explicit_centroid_factor,
    min_bounded_slack_weight,
)
from sdpembed.graphs import NeighborhoodGraph
from sdpembed.solvers import available_solvers


def complete_graph(X):
    n = X.shape[0]
    i, j = np.triu_indices(n, 1)
    return NeighborhoodGraph(n, np.c_[i, j], ((X[i] - X[j]) ** 2).sum(1))


def icv_bcv_by_hand(Z, y):
    """sigma^2_icv and sigma^2_bcv of points Z (eqs. 3-5), straight from the definitions."""
    classes = np.unique(y[y >= 0])
    means = np.array([Z[y == k].mean(0) for k in classes])
    icv = np.mean([((Z[y == k] - means[i]) ** 2).sum(1).mean() for i, k in enumerate(classes)])
    bcv = ((means - means.mean(0)) ** 2).sum(1).mean()
    return icv, bcv


def test_rigid_configuration_has_the_hand_computed_optimum():
    # Complete graph + equality distances fix the centred Gram matrix: G = -1/2 J D J.
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((6, 3))
    y = np.array([0, 0, 1, 1, -1, 1])
    f = dvu(complete_graph(Z), y, distances="equality", normalize=False, centroids="eliminated")
    report = solve(f, solver="CLARABEL")
    Zc = Z - Z.mean(0)
    np.testing.assert_allclose(f.value("gram"), Zc @ Zc.T, atol=1e-6)
    icv, bcv = icv_bcv_by_hand(Z, y)
    # interior point: 1e-7 relative is well within its default tolerance of 1e-8
    assert report.objective == pytest.approx(icv - bcv, rel=1e-6)


def test_explicit_and_eliminated_centroids_reach_the_same_optimum(usps_small):
    # Both facially reduced: interior-point accuracy ~1e-8, so 1e-6 relative.
    # (The unreduced explicit form has no Slater point; Clarabel then stops ~1e-3
    # away at default settings, which is why reduce_face=True is the default.)
    X, _, y, _ = usps_small
    g = knn_graph(X, random_state=0)
    values = []
    for centroids in ("explicit", "eliminated"):
        f = dvu(g, y, centroids=centroids, reduce_face=True)
        values.append(solve(f, solver="CLARABEL").objective)
        assert f.value("gram").shape == (40, 40)
    assert values[0] == pytest.approx(values[1], rel=1e-6)


def test_explicit_centroid_rows_are_the_class_means(usps_small):
    X, _, y, _ = usps_small
    f = dvu(knn_graph(X, random_state=0), y, centroids="explicit")
    solve(f, solver="CLARABEL")
    Xfull = f.value("gram_full")
    n, K = 40, 5
    w, U = np.linalg.eigh(Xfull)
    Z = U * np.sqrt(np.clip(w, 0, None))
    for k in range(K):
        np.testing.assert_allclose(Z[n + k], Z[:n][y == k].mean(0), atol=1e-4)
    np.testing.assert_allclose(Z[n + K], Z[n:n + K].mean(0), atol=1e-4)
    np.testing.assert_allclose(Z[:n].mean(0), 0, atol=1e-4)


def _small_dvu_problem(seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((14, 3))
    y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 2, -1, -1, 0, -1])
    return dvu_problem(complete_graph(Z), y), y, rng


def test_centroid_lifting_maps_onto_the_explicit_problem():
    # against the lifted problem as _explicit_problem writes it: centring vectors,
    # objective matrix and edges; exact algebra, so only rounding (1e-12) is allowed
    gp, y, rng = _small_dvu_problem()
    lifted = _explicit_problem(gp, 3)
    L = centroid_lifting(y, 3)
    assert L.shape == (14 + 3 + 1, 14)
    W = rng.standard_normal((14, 4))
    F = W - W.mean(axis=0)                                   # a centred factor: G 1 = 0
    G, X = F @ F.T, L @ F @ F.T @ L.T
    np.testing.assert_allclose(X[:14, :14], G)
    # every centring constraint c^T X c = 0 holds, as X c = 0
    np.testing.assert_allclose(X @ lifted.centering_vectors(), 0, atol=1e-12)
    # same objective and same edge distances as the eliminated problem
    assert lifted.objective.inner(X) == pytest.approx(gp.objective.inner(G), rel=1e-12)
    np.testing.assert_allclose(L.T @ lifted.objective.dense() @ L, gp.objective.dense(),
                               atol=1e-12)
    np.testing.assert_allclose(lifted.distances_of(X), gp.distances_of(G))
    # the factor form is the same map without forming L
    np.testing.assert_allclose(explicit_centroid_factor(gp, F), L @ F, atol=1e-14)


def test_centroid_lifting_inverts_a_solved_explicit_problem(usps_small):
    # the inverse X -> X[:n, :n] loses nothing: a solved explicit problem is L G L^T
    # of its own points block (CLARABEL's accuracy: 1e-6 relative to the largest entry)
    X, _, y, _ = usps_small
    f = dvu(knn_graph(X, random_state=0), y, centroids="explicit")
    solve(f, solver="CLARABEL")
    Xf = f.value("gram_full")
    L = centroid_lifting(f.points_problem.meta["y"], 5)
    np.testing.assert_allclose(L @ Xf[:40, :40] @ L.T, Xf, atol=1e-6 * np.abs(Xf).max())


def test_explicit_centroid_factor_checks_its_shape():
    gp, _, _ = _small_dvu_problem()
    with pytest.raises(InputError, match="shape"):
        explicit_centroid_factor(gp, np.ones((13, 2)))


def test_facial_reduction_matches_the_constrained_problem(usps_small):
    X, _, y, _ = usps_small
    g = knn_graph(X, random_state=0)
    a = solve(dvu(g, y, centroids="eliminated", reduce_face=True), solver="CLARABEL").objective
    b = solve(dvu(g, y, centroids="eliminated", reduce_face=False), solver="CLARABEL").objective
    assert a == pytest.approx(b, rel=1e-5)


@pytest.mark.parametrize("solver", [s for s in ("SCS", "CSDP") if s in available_solvers()])
def test_backends_agree_on_small_usps(usps_small, solver):
    X, _, y, _ = usps_small
    g = knn_graph(X, random_state=0)
    ref = solve(dvu(g, y, centroids="eliminated"), solver="CLARABEL").objective
    opts = {"eps_abs": 1e-7, "eps_rel": 1e-7, "max_iters": 200_000} if solver == "SCS" else {}
    got = solve(dvu(g, y, centroids="eliminated"), solver=solver, **opts).objective
    assert got == pytest.approx(ref, rel=1e-4)


def test_snr_constraint_holds_and_binds(usps_small):
    X, _, y, _ = usps_small
    g = knn_graph(X, random_state=0)
    gp = dvu_problem(g, y)
    free = dvu(g, y, centroids="eliminated")
    solve(free, solver="CLARABEL")
    G0 = free.value("gram")
    ratio0 = gp.bcv.inner(G0) / gp.icv.inner(G0)
    snr = 1.5 * ratio0  # stricter than the unconstrained optimum
    f = dvu(g, y, centroids="eliminated", snr=snr)
    report = solve(f, solver="CLARABEL")
    G = f.value("gram")
    icv, bcv = gp.icv.inner(G), gp.bcv.inner(G)
    assert bcv >= snr * icv - 1e-6
    assert bcv == pytest.approx(snr * icv, rel=1e-4)  # active
    assert report.objective >= solve(free, solver="CLARABEL").objective - 1e-7


def test_ratio_constraint_holds_at_the_optimum(usps_small):
    X, _, y, _ = usps_small
    g = knn_graph(X, random_state=0)
    gp = dvu_problem(g, y)
    f = dvu(g, y, centroids="eliminated", ratio=0.05, ratio_weight=10.0)
    solve(f, solver="CLARABEL")
    G = f.value("gram")
    icv, bcv = gp.icv.inner(G), gp.bcv.inner(G)
    xi = float(f.variables["xi"].value)
    assert xi >= -1e-8
    assert icv**2 / bcv <= 0.05 * icv + xi + 1e-6


def test_unlabeled_points_never_enter_the_objective(usps_small):
    X, _, y, _ = usps_small
    gp = dvu_problem(knn_graph(X, random_state=0), y)
    C = gp.objective.dense()
    hidden = y == -1
    assert hidden.any()
    np.testing.assert_array_equal(C[hidden], 0)
    np.testing.assert_array_equal(C[:, hidden], 0)
    assert -1 not in gp.meta["classes"]


def test_small_slack_weight_is_unbounded_with_the_threshold_in_the_message(usps_small):
    X, _, y, _ = usps_small
    g = knn_graph(X, random_state=0)
    lam_star = min_bounded_slack_weight(dvu_problem(g, y))
    assert lam_star > 0
    with pytest.raises(UnboundedError, match="bounded for slack_weight >="):
        solve(dvu(g, y, centroids="eliminated", slack_weight=0.5 * lam_star), solver="CLARABEL")
    # just above the threshold the problem is bounded and solves
    report = solve(dvu(g, y, centroids="eliminated", slack_weight=1.05 * lam_star),
                   solver="CLARABEL")
    assert np.isfinite(report.objective)
    # and a trace term bounds it below the threshold
    f = dvu(g, y, centroids="eliminated", slack_weight=0.5 * lam_star, trace="min",
            trace_weight=1.0)
    assert np.isfinite(solve(f, solver="CLARABEL").objective)


def test_quadratic_penalty_keeps_distances_with_large_weight(usps_small):
    X, _, y, _ = usps_small
    g = knn_graph(X, random_state=0)
    f = dvu(g, y, centroids="eliminated", distances="quadratic", slack_weight=1e3)
    solve(f, solver="CLARABEL")
    gp = f.meta["gram_problem"]
    D = gp.distances_of(f.value("gram"))
    assert np.median(np.abs(np.sqrt(D) - np.sqrt(gp.target))) < 1e-2


def test_slack_weight_parameter_resolves_like_a_rebuild(usps_small):
    X, _, y, _ = usps_small
    g = knn_graph(X, random_state=0)
    f = dvu(g, y, centroids="eliminated", slack_weight=1.0)
    solve(f, solver="CLARABEL")
    f.parameters["slack_weight"].value = 3.0
    resolved = solve(f, solver="CLARABEL").objective
    rebuilt = solve(dvu(g, y, centroids="eliminated", slack_weight=3.0), solver="CLARABEL")
    assert resolved == pytest.approx(rebuilt.objective, rel=1e-6)
    assert f.problem.is_dpp()


def test_normalization_is_recorded(usps_small):
    X, _, y, _ = usps_small
    g = knn_graph(X, random_state=0)
    f = dvu(g, y, centroids="explicit")
    assert f.meta["distance_scale"] == pytest.approx(g.sqdist.mean())
    np.testing.assert_allclose(f.meta["gram_problem"].target.mean(), 1.0)
    assert f.meta["method"] == "dvu" and "(3)" in f.meta["equations"]


def test_typed_description_agrees_with_meta_and_the_problem(usps_small):
    # the typed attributes are what code reads; meta stays populated for compatibility
    X, _, y, _ = usps_small
    g = knn_graph(X, random_state=0)
    explicit = dvu(g, y, centroids="explicit")
    assert explicit.centroids == "explicit" and explicit.basis_rank is None
    assert explicit.distance_scale == explicit.meta["distance_scale"] == pytest.approx(
        g.sqdist.mean())
    np.testing.assert_array_equal(explicit.classes, np.unique(y[y >= 0]))
    # the lifted problem has rows for the 5 centroids and their mean; the points' one n rows
    assert explicit.gram_problem.n == 40 + 5 + 1 and explicit.points_problem.n == 40
    assert explicit.points_problem is explicit.meta["eliminated_problem"]
    assert explicit.n_points == 40 and explicit.n_edges == g.n_edges
    assert explicit.variant == explicit.meta["variant"] and explicit.equations == "(3)-(9)"
    basis = dvu(g, y, centroids="eliminated", basis_rank=6,
                basis_graph=knn_graph(X, n_neighbors=6, n_random=0))
    assert basis.basis_rank == 6 and basis.psd_size == 6 and basis.reduced_basis.shape == (40, 6)
    assert basis.points_problem is basis.gram_problem and basis.centroids == "eliminated"
    maxed = dvu(g, y, centroids="eliminated", trace="max", trace_weight=1e-3)
    assert maxed.trace_sign == -1.0 and maxed.current_problem().trace_weight == -1e-3
    raw = dvu(g, y, centroids="eliminated", normalize=False, reduce_face=False)
    assert raw.distance_scale == 1.0 and not raw.reduce_face and raw.psd_size == 40


def test_bad_inputs_raise_before_solving():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 3))
    g = knn_graph(X, random_state=0)
    y = np.array([0, 0, 0, 1, 1, 1, -1, -1, 0, 1, -1, -1])
    dvu_problem(g, y)  # valid labels build fine
    with pytest.raises(LabelError, match="classes"):
        dvu(g, np.where(y == 1, 0, y))  # one class
    with pytest.raises(LabelError, match="at least 2 labeled"):
        dvu(g, np.r_[y[:-1], 2])  # class 2 has one sample
    with pytest.raises(InputError):
        dvu(g, y[:-1])  # wrong length
    with pytest.raises(InputError, match="distances"):
        dvu(g, y, distances="manhattan")
    with pytest.raises(InputError, match="trace_weight"):
        dvu(g, y, centroids="eliminated", trace="min")
    with pytest.raises(InputError, match="slack_weight"):
        dvu(g, y, slack_weight=-1.0)
    X2 = np.r_[X, 100 + X]
    g2 = knn_graph(X2, n_neighbors=2, n_random=0)
    with pytest.raises(DisconnectedGraphError):
        dvu(g2, np.r_[y, y])
    dup = NeighborhoodGraph(5, [[0, 1], [1, 2], [2, 3], [3, 4]], [0.0, 1.0, 1.0, 1.0])
    with pytest.raises(DuplicatePointsError):
        dvu(dup, [0, 0, 1, 1, -1])


def test_builder_and_estimator_share_the_centroids_default(usps_small):
    import inspect

    from sdpembed.estimators import DVU

    default = inspect.signature(dvu).parameters["centroids"].default
    assert default == DVU().centroids == "eliminated"
    X, _, y, _ = usps_small
    assert dvu(knn_graph(X, random_state=0), y).centroids == "eliminated"

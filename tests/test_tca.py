"""TCA and OTCA: operators against their definitions, eigen vs SDP, OTCA closed form, errors."""

import time

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp
from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sdpembed.estimators.tca import OTCA, TCA
from sdpembed.exceptions import InputError, LabelError
from sdpembed.formulations.tca import otca_step_formulation, tca_formulation
from sdpembed.relaxations import principal_angles, recover_basis
from sdpembed.scatter.tca import (
    average_margin,
    margin_matrices,
    margin_weights,
    otca_basis,
    smoothness_matrix,
    smoothness_regularizer,
    tca_graph,
    tca_operators,
)
from sdpembed.sequential import otca_sequence
from sdpembed.solvers import solve


def five_percent_labels(y, random_state):
    """The paper's protocol: round(5 %) labeled points per class (at least 2), rest -1."""
    rng = np.random.RandomState(random_state)
    y_semi = np.full_like(y, -1)
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        k = max(2, int(np.floor(0.05 * idx.size + 0.5)))
        y_semi[rng.choice(idx, size=k, replace=False)] = c
    return y_semi


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y, five_percent_labels(y, 0)


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y, five_percent_labels(y, 1)


# -------------------------------------------------------------------- operators
def test_margin_matrices_reproduce_eq16():
    """(2/l) y'D_l y - (1/l) y'M_l y equals the average pointwise margin of eq. (16)."""
    rng = np.random.default_rng(0)
    for _ in range(5):
        y_l = rng.integers(0, 4, size=15)
        if np.bincount(y_l).min() == 0:
            continue
        proj = rng.normal(size=15)
        D_l, M_l = margin_matrices(y_l)
        l = len(y_l)
        eq17 = 2 / l * proj @ D_l @ proj - proj @ M_l @ proj / l
        assert eq17 == pytest.approx(average_margin(proj, y_l), rel=1e-12)
        assert np.linalg.eigvalsh(M_l).min() > -1e-12  # Proposition 2
        assert np.allclose(np.diag(D_l), 1 + margin_weights(y_l)[1].sum(axis=0))


def test_margin_weights_eq15():
    y_l = np.array([0, 0, 1, 1, 1, 2])
    W_r, W_e = margin_weights(y_l)
    np.testing.assert_allclose(W_r.sum(axis=1), 1)
    np.testing.assert_allclose(W_e.sum(axis=1), 1)
    np.testing.assert_allclose(W_r, W_r.T)
    assert W_r[0, 1] == 0.5 and W_r[2, 4] == pytest.approx(1 / 3)
    assert W_e[0, 2] == pytest.approx(1 / 4) and W_e[5, 0] == pytest.approx(1 / 5)


@pytest.mark.parametrize("alpha", [0.3, 10.0])
def test_smoothness_regularizer_matches_dense_forms(alpha):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    X -= X.mean(axis=0)
    L = tca_graph(X, n_neighbors=4).laplacian()
    S = smoothness_matrix(L, alpha)
    # eq. (10) literally, and Proposition 1's spectral form V alpha (I + alpha Lam)^-1 Lam V'
    Ld = L.toarray()
    S10 = np.linalg.solve(np.eye(60) + alpha * Ld, alpha * Ld)
    lam, V = np.linalg.eigh(Ld)
    S11 = (V * (alpha * lam / (1 + alpha * lam))) @ V.T
    np.testing.assert_allclose(S, S10, atol=1e-12)
    np.testing.assert_allclose(S, S11, atol=1e-10)
    ev = np.linalg.eigvalsh(S)
    assert ev.min() > -1e-12 and ev.max() < 1
    np.testing.assert_allclose(smoothness_regularizer(X, L, alpha), X.T @ S @ X, rtol=1e-10,
                               atol=1e-10)


def test_smoothness_limits_eq13_eq14():
    """alpha -> 0: S / alpha -> L (LPP, eq. 13); alpha -> inf: X S X' -> X X' (eq. 14)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 3))
    X -= X.mean(axis=0)
    L = tca_graph(X, n_neighbors=5).laplacian()
    np.testing.assert_allclose(smoothness_regularizer(X, L, 1e-7) / 1e-7,
                               X.T @ (L @ X), rtol=1e-5)
    # the graph is connected, so S -> I - 11'/n and X is centred
    np.testing.assert_allclose(smoothness_regularizer(X, L, 1e8), X.T @ X, rtol=1e-5)


def test_smoothness_regularizer_scales_without_dense_inverse():
    """n = 40000: a dense S would need 12.8 GB; both sparse solvers agree and take seconds."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40_000, 2))
    L = tca_graph(X, n_neighbors=5).laplacian()
    t0 = time.perf_counter()
    A_cg = smoothness_regularizer(X, L, 1.0)  # "auto" picks conjugate gradients here
    assert time.perf_counter() - t0 < 30  # about 0.5 s on one core; generous for CI load
    A_lu = smoothness_regularizer(X, L, 1.0, linear_solver="splu")
    # CG stops at relative residual 1e-12 per column
    np.testing.assert_allclose(A_cg, A_lu, rtol=1e-9)
    assert A_cg.shape == (2, 2) and np.linalg.eigvalsh(A_cg).min() > 0


def test_graph_eq4_weights_and_duplicates(iris):
    X, _, _ = iris  # iris has duplicated rows: allowed (weight 1)
    g = tca_graph(X, n_neighbors=5, sigma=0.7)
    np.testing.assert_allclose(g.weights, np.exp(-g.sqdist / 0.49))
    assert np.all(np.bincount(g.edges.ravel(), minlength=len(X)) >= 5)
    assert np.any(g.sqdist == 0)


# ---------------------------------------------------------------------- TCA
def _dense_tca_pencil(X, y_semi, alpha, beta, k=5):
    """Eqs. (4), (10), (15), (18), (21) with dense matrices in the input space."""
    Xc = X - X.mean(axis=0)
    L = tca_graph(Xc, n_neighbors=k).laplacian().toarray()
    S = np.linalg.solve(np.eye(len(X)) + alpha * L, alpha * L)
    lab = y_semi >= 0
    D_l, M_l = margin_matrices(y_semi[lab])
    Xl = Xc[lab]
    return Xc.T @ S @ Xc + beta * Xl.T @ M_l @ Xl, Xl.T @ D_l @ Xl


def test_tca_solves_eq21(iris):
    """Components are the smallest generalized eigenvectors of the dense pencil of eq. (21).

    The estimator solves in whitened principal coordinates; eq. (21) is covariant under
    that change of basis, so the input-space vectors must coincide (up to sign).
    """
    X, _, y_semi = iris
    est = TCA(n_components=3, alpha=2.0, beta=5.0, normalize="constraint").fit(X, y_semi)
    A, B = _dense_tca_pencil(X, y_semi, 2.0, 5.0)
    w, V = sla.eigh(A, B, subset_by_index=[0, 2])
    np.testing.assert_allclose(est.eigenvalues_, w, rtol=1e-8)
    U = est.components_.T
    signs = np.sign(np.sum(U * V, axis=0))
    np.testing.assert_allclose(U, V * signs, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(U.T @ B @ U, np.eye(3), atol=1e-8)
    unit = TCA(n_components=3, alpha=2.0, beta=5.0).fit(X, y_semi).components_
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1)
    assert principal_angles(unit.T, U).max() < 1e-8


def test_tca_pca_step_and_transform(wine):
    X, _, y_semi = wine
    est = TCA(n_components=2).fit(X, y_semi)
    l = int((y_semi >= 0).sum())
    assert est.n_pca_components_ == l - 1 and est.pca_components_.shape == (l - 1, X.shape[1])
    np.testing.assert_allclose(est.transform(X), (X - X.mean(axis=0)) @ est.components_.T)


@pytest.mark.parametrize("data, pca, r", [("iris", True, 1), ("iris", True, 2), ("iris", True, 3),
                                          ("wine", 5, 2), ("wine", True, 3)])
def test_tca_eigen_and_sdp_agree(data, pca, r, request):
    X, _, y_semi = request.getfixturevalue(data)
    eig = TCA(n_components=r, pca=pca).fit(X, y_semi)
    sdp = TCA(n_components=r, pca=pca, method="sdp", solver="CLARABEL").fit(X, y_semi)
    # Clarabel's tolerances are 1e-8: 1e-5 relative on the optimum leaves margin
    assert sdp.objective_ == pytest.approx(eig.objective_, rel=1e-5)
    assert sdp.rank_gap_ < 1e-5
    full = TCA(n_components=eig.n_pca_components_, pca=pca).fit(X, y_semi).eigenvalues_
    gap = (full[r] - full[r - 1]) / abs(full).max() if r < len(full) else np.inf
    if gap > 1e-3:
        assert principal_angles(eig.components_.T, sdp.components_.T).max() < 1e-3


def test_tca_formulation_builder(wine):
    X, _, y_semi = wine
    Xc = X - X.mean(axis=0)
    Xp = Xc @ np.linalg.svd(Xc, full_matrices=False)[2][:5].T
    form = tca_formulation(Xp, y_semi, 2, alpha=10.0, beta=6.0)
    assert form.meta["method"] == "tca" and "21" in form.meta["equations"]
    report = solve(form, solver="CLARABEL")
    ops = tca_operators(Xp, y_semi, alpha=10.0)
    A, B = ops.pencil(6.0)
    w, V = sla.eigh(A, B, subset_by_index=[0, 1])
    assert report.objective == pytest.approx(w.sum(), rel=1e-5)
    assert principal_angles(recover_basis(form.value("Z"), 2, B=B), V).max() < 1e-3


# --------------------------------------------------------------------- OTCA
def test_otca_closed_form_is_kkt_point():
    """Each a_k solves min a'Qa - 2R_k'a s.t. a_j'a = 0 (j < k): check the KKT system directly."""
    rng = np.random.default_rng(4)
    G = rng.normal(size=(6, 6))
    Q = G @ G.T + 0.1 * np.eye(6)
    R = rng.normal(size=(6, 4))
    A = otca_basis(Q, R)
    np.testing.assert_allclose(A.T @ A, np.diag(np.diag(A.T @ A)), atol=1e-12)
    for k in range(4):
        C = A[:, :k].T
        K = np.block([[2 * Q, C.T], [C, np.zeros((k, k))]])
        sol = np.linalg.solve(K, np.r_[2 * R[:, k], np.zeros(k)])
        np.testing.assert_allclose(A[:, k], sol[:6], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("data", ["iris", "wine"])
def test_otca_eigen_and_convex_paths_agree(data, request):
    X, _, y_semi = request.getfixturevalue(data)
    eig = OTCA().fit(X, y_semi)
    qp = OTCA(method="sdp", solver="CLARABEL").fit(X, y_semi)
    assert len(qp.solve_reports_) == eig.n_components_ == len(eig.classes_)
    # the per-step programs are posed in unit scale, Clarabel reaches ~1e-9 relative
    np.testing.assert_allclose(qp.components_, eig.components_,
                               rtol=1e-5, atol=1e-6 * np.abs(eig.components_).max())
    assert qp.objective_ == pytest.approx(eig.objective_, rel=1e-5)
    U = eig.components_
    gram = U @ U.T
    off = gram - np.diag(np.diag(gram))
    assert np.abs(off).max() < 1e-10 * np.diag(gram).max()  # eq. (22): orthogonal


def test_otca_sequence_builder(iris):
    X, _, y_semi = iris
    Xc = X - X.mean(axis=0)
    ops = tca_operators(Xc, y_semi, alpha=4.0)
    form = otca_step_formulation(ops, beta=10.0, gamma=1e-3, n_components=3)
    assert form.problem.is_dpp()
    A, reports = otca_sequence(form, 3, solver="CLARABEL")
    Q, R = ops.otca_system(10.0, 1e-3)
    np.testing.assert_allclose(A, otca_basis(Q, R), rtol=1e-5, atol=1e-8 * np.abs(A).max())


# ---------------------------------------------------------------- determinism
@pytest.mark.parametrize("Est", [TCA, OTCA])
def test_five_percent_labels_deterministic(Est):
    X, y = load_iris(return_X_y=True)
    y_a, y_b = five_percent_labels(y, 7), five_percent_labels(y, 7)
    np.testing.assert_array_equal(y_a, y_b)
    assert (y_a >= 0).sum() == 9  # round(2.5) = 3 per class, MATLAB-style
    first = Est().fit(X, y_a)
    second = Est().fit(X, y_b)
    np.testing.assert_array_equal(first.components_, second.components_)
    np.testing.assert_array_equal(first.transform(X), second.transform(X))


# --------------------------------------------------------------------- errors
@pytest.mark.parametrize("Est", [TCA, OTCA])
def test_label_errors(Est, iris):
    X, y, y_semi = iris
    with pytest.raises(LabelError):
        Est().fit(X, np.where(y_semi >= 0, np.array(["a", "b", "c"])[y], "-1"))
    with pytest.raises(LabelError):
        Est().fit(X, np.where(y_semi >= 0, 0, -1))
    one = y_semi.copy()
    one[np.flatnonzero(one == 2)[1:]] = -1
    with pytest.raises(LabelError, match="at least 2"):
        Est().fit(X, one)


def test_too_many_components(iris):
    X, _, y_semi = iris
    with pytest.raises(InputError, match="n_components=5"):
        TCA(n_components=5).fit(X, y_semi)
    with pytest.raises(InputError, match="at most min"):
        OTCA(n_components=4).fit(X, y_semi)


def test_singular_constraint_without_pca_gives_the_finite_eigenpairs(wine):
    # 13 features, 9 labeled points: B = X_l D_l X_l' has rank 9. The rank-revealing step
    # eliminates ker B by the Schur complement (sdpembed.relaxations.reduce_pencil), so the
    # solution is made of exact eigenpairs A u = lambda B u of the singular pencil, with the
    # 2 smallest of its 9 finite eigenvalues (QZ, scipy.linalg.eigvals: the other 4 are inf).
    # Tolerances: QZ on a singular pencil is accurate to about 1e-8 relative here.
    X, _, y_semi = wine
    est = TCA(pca=False, normalize="constraint").fit(X, y_semi)
    assert est.pencil_rank_ == 9 and est.components_.shape == (2, 13)
    Xc = X - X.mean(axis=0)
    y_int = np.unique(y_semi, return_inverse=True)[1] - 1
    A, B = tca_operators(Xc, y_int, alpha=10.0, graph=tca_graph(Xc, 5)).pencil(6.0)
    w = sla.eigvals(A, B)
    finite = np.sort(w[np.isfinite(w)].real)
    assert finite.size == 9
    np.testing.assert_allclose(est.eigenvalues_, finite[:2], rtol=1e-8)
    U = est.components_.T
    residual = A @ U - B @ U * est.eigenvalues_
    assert np.abs(residual).max() < 1e-9 * np.abs(A).max() * np.abs(U).max()
    np.testing.assert_allclose(U.T @ B @ U, np.eye(2), atol=1e-9)
    # restricting to range(B) instead (no elimination) would be worse: a strictly larger sum
    Q = np.linalg.svd(B)[0][:, :9]
    restricted = sla.eigh(Q.T @ A @ Q, Q.T @ B @ Q, eigvals_only=True)[:2]
    assert restricted.sum() > est.objective_ + 1e-3
    sdp = TCA(pca=False, normalize="constraint", method="sdp").fit(X, y_semi)
    assert sdp.objective_ == pytest.approx(est.objective_, rel=1e-5)
    assert principal_angles(sdp.components_.T, U).max() < 1e-3
    # an explicit ridge keeps working: B + r I, r relative to tr(B) / 13
    reg = TCA(pca=False, regularization=1e-3).fit(X, y_semi)
    r = 1e-3 * np.trace(B) / 13
    assert reg.eigenvalues_ == pytest.approx(sla.eigh(A, B + r * np.eye(13),
                                                      eigvals_only=True)[:2], rel=1e-8)


@pytest.mark.parametrize("params", [{"alpha": 0}, {"beta": -1}, {"pca": 0}, {"n_neighbors": 0},
                                    {"normalize": "l1"}, {"sigma": -1.0}])
def test_bad_parameters(params, iris):
    X, _, y_semi = iris
    with pytest.raises(InputError):
        TCA(**params).fit(X, y_semi)


def test_bad_gamma(iris):
    X, _, y_semi = iris
    with pytest.raises(InputError, match="gamma"):
        OTCA(gamma=0.0).fit(X, y_semi)


@parametrize_with_checks([TCA(n_neighbors=2), OTCA(n_neighbors=2),
                          TCA(n_neighbors=2, method="sdp")])
def test_sklearn_api(estimator, check):
    check(estimator)


def test_sparse_input_rejected_clearly(iris):
    X, _, y_semi = iris
    with pytest.raises(TypeError):
        TCA().fit(sp.csr_matrix(X), y_semi)

"""Out-of-sample extensions (sdpembed.outofsample) and DVU/MVU transform, predict, score."""

import copy
import warnings

import cvxpy as cp
import numpy as np
import pytest
from scipy.stats import special_ortho_group
from sklearn.exceptions import NotFittedError
from sklearn.neighbors import NearestNeighbors
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sdpembed import DVU, MVU
from sdpembed.exceptions import InaccurateSolutionWarning, InputError
from sdpembed.outofsample import (
    extend,
    fitted_neighbors,
    nystrom_extension,
    place_by_distances,
)
from sdpembed.tangent import tangent_kneighbors


def _lifted_instance(seed, n=60, d=3, k=8, m=150):
    """Fitted points in R^d (height 0) and new points in R^{d+1}: exact distances."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d))
    P = np.c_[Z, np.zeros(n)]
    Xn = rng.normal(size=(m, d + 1))
    D = ((Xn[:, None, :] - P[None]) ** 2).sum(-1)
    ind = np.argsort(D, axis=1)[:, :k]
    return Z, Xn, ind, np.take_along_axis(D, ind, axis=1)


def _cvxpy_objective(Z, ind, sq):
    """The placement SOCP of one point, solved by CLARABEL (the reference)."""
    A = Z[ind]
    z, tau = cp.Variable(Z.shape[1]), cp.Variable()
    r = tau - 2 * A @ z + (A**2).sum(1) - sq
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(1 / sq, cp.abs(r)))),
                      [tau >= cp.sum_squares(z)])
    prob.solve(solver="CLARABEL")
    return prob.value


# ------------------------------------------------------------ place_by_distances
def test_distances_recovers_points_and_their_height():
    # distances exactly realised by a point (z*, h*) in R^{d+1}: the optimum is 0 and
    # unique (k = 8 >= d + 2 neighbours in general position), so the SOCP returns z* and
    # the lift |h*|; tolerances: the certified gap 1e-6 bounds the relative distance
    # errors, which moves z by about that much and h = sqrt(h^2) by its square root
    Z, Xn, ind, sq = _lifted_instance(0)
    pl = place_by_distances(Z, ind, sq)
    assert np.all(pl.gap <= 1e-6) and np.all(pl.objective <= 1e-6)
    np.testing.assert_allclose(pl.coords, Xn[:, :3], atol=1e-5)
    np.testing.assert_allclose(pl.lift, np.abs(Xn[:, 3]), atol=1e-3)


def test_distances_matches_a_conic_solver_and_certifies():
    # inconsistent distances (scaled by 0.3..2): compare the optimal value with CLARABEL
    # on the same SOCP; our objective is within its certified gap (1e-6) of the optimum,
    # CLARABEL's to about 1e-8 -> agreement to 2e-6; the lower bound objective - gap
    # must not exceed the optimum
    Z, _, ind, sq = _lifted_instance(1, m=40)
    sq = sq * np.random.default_rng(2).uniform(0.3, 2.0, size=sq.shape)
    pl = place_by_distances(Z, ind, sq)
    assert np.all(pl.gap <= 1e-6)
    ref = np.array([_cvxpy_objective(Z, ind[i], sq[i]) for i in range(40)])
    np.testing.assert_allclose(pl.objective, ref, atol=2e-6)
    assert np.all(pl.objective - pl.gap <= ref + 1e-7)
    # the optimum is an affine combination of the neighbours: inside their affine hull
    # (here R^3 itself), and the reported lift is consistent with the objective
    A = Z[ind]
    lifted = ((pl.coords[:, None, :] - A) ** 2).sum(-1) + pl.lift[:, None] ** 2
    np.testing.assert_allclose((np.abs(lifted - sq) / sq).sum(1), pl.objective, atol=1e-9)


def test_duplicates_land_on_fitted_points():
    Z, _, ind, sq = _lifted_instance(3, m=10)
    sq = sq.copy()
    sq[0, 0] = 0.0  # point 0 duplicates its nearest fitted point
    sq[1, :2] = 0.0  # point 1 duplicates two fitted points: their mean
    for coords in (place_by_distances(Z, ind, sq).coords, nystrom_extension(Z, ind, sq)):
        np.testing.assert_array_equal(coords[0], Z[ind[0, 0]])
        np.testing.assert_allclose(coords[1], Z[ind[1, :2]].mean(0), rtol=0, atol=1e-15)
    pl = place_by_distances(Z, ind, sq)
    assert pl.lift[0] == 0 and pl.objective[0] == 0 and pl.gap[0] == 0


@pytest.mark.parametrize("method", ["distances", "nystrom"])
def test_rigid_motion_of_the_fit_moves_placements(method):
    # both methods depend on the fit only through distances / affine combinations:
    # Z -> Z Q + b maps placements by the same motion (distances: up to the solver's
    # tolerance, as both runs take the same Newton steps up to round-off)
    Z, _, ind, sq = _lifted_instance(4, m=50)
    sq = sq * np.random.default_rng(5).uniform(0.5, 1.5, size=sq.shape)
    Q = special_ortho_group.rvs(3, random_state=0)
    b = np.array([5.0, -3.0, 2.0])
    a = extend(Z, ind, sq, method)
    moved = extend(Z @ Q + b, ind, sq, method)
    np.testing.assert_allclose(moved, a @ Q + b, atol=1e-6)


def test_nystrom_is_the_nystrom_formula_of_the_extended_kernel():
    # f_m(x) = lambda_m^{-1/2} sum_i u_im K(x, x_i) with K(x, x_i) = sum_j w_j G_ji:
    # evaluate the formula literally from an eigendecomposition of G (exact identity up
    # to round-off of the eigensolver, 1e-10 relative)
    rng = np.random.default_rng(6)
    F = rng.normal(size=(30, 4))
    F -= F.mean(0)
    G = F @ F.T
    lam, U = np.linalg.eigh(G)
    lam, U = lam[::-1][:4], U[:, ::-1][:, :4]
    Z = U * np.sqrt(lam)
    ind = np.array([rng.choice(30, 5, replace=False) for _ in range(7)])
    sq = rng.uniform(0.5, 2.0, size=ind.shape)
    w = (1 / sq) / (1 / sq).sum(1, keepdims=True)
    K = np.zeros((7, 30))
    np.put_along_axis(K, ind, w, axis=1)
    K = K @ G
    formula = K @ U / np.sqrt(lam)
    np.testing.assert_allclose(nystrom_extension(Z, ind, sq), formula, rtol=1e-10, atol=1e-10)


def test_placement_errors():
    Z, _, ind, sq = _lifted_instance(7, m=5)
    with pytest.raises(InputError, match="same shape"):
        place_by_distances(Z, ind, sq[:, :3])
    with pytest.raises(InputError, match="rows of the embedding"):
        nystrom_extension(Z, ind + 100, sq)
    with pytest.raises(InputError, match="non-negative"):
        place_by_distances(Z, ind, -sq)
    with pytest.raises(InputError, match="method"):
        extend(Z, ind, sq, "kernel")


def test_uncertified_points_warn():
    Z, _, ind, sq = _lifted_instance(8, m=20)
    sq = sq * np.random.default_rng(9).uniform(0.3, 2.0, size=sq.shape)
    with pytest.warns(InaccurateSolutionWarning, match="not certified"):
        pl = place_by_distances(Z, ind, sq, max_newton=3)
    assert np.all(pl.gap >= 0)


# ------------------------------------------------------------ fitted_neighbors
def test_fitted_neighbors_metrics():
    rng = np.random.default_rng(10)
    Xf, Xn = rng.normal(size=(40, 5)), rng.normal(size=(8, 5))
    D = np.sqrt(((Xn[:, None] - Xf[None]) ** 2).sum(-1))
    sq, ind = fitted_neighbors(Xn, Xf, 4)
    ref = NearestNeighbors(n_neighbors=4).fit(Xf).kneighbors(Xn, return_distance=False)
    np.testing.assert_array_equal(ind, ref)
    np.testing.assert_allclose(sq, np.take_along_axis(D, ind, 1) ** 2, rtol=1e-12)
    sq_p, ind_p = fitted_neighbors(D, Xf, 4, metric="precomputed")
    np.testing.assert_array_equal(ind_p, ind)
    np.testing.assert_allclose(sq_p, sq, rtol=1e-12)
    sq_c, ind_c = fitted_neighbors(Xn, Xf, 4, metric=lambda a, b: np.abs(a - b).sum())
    sq_m, ind_m = fitted_neighbors(Xn, Xf, 4, metric="manhattan")
    np.testing.assert_array_equal(ind_c, ind_m)
    np.testing.assert_allclose(sq_c, sq_m, rtol=1e-12)
    # leave-one-out: fitted rows without themselves
    sq_l, ind_l = fitted_neighbors(Xf[:6], Xf, 3, exclude=np.arange(6))
    ref = NearestNeighbors(n_neighbors=3).fit(Xf).kneighbors(return_distance=False)[:6]
    np.testing.assert_array_equal(ind_l, ref)
    # duplicates get exactly zero
    sq_d, ind_d = fitted_neighbors(Xf[[3]], Xf, 2)
    assert ind_d[0, 0] == 3 and sq_d[0, 0] == 0.0
    with pytest.raises(InputError, match="features"):
        fitted_neighbors(Xn[:, :4], Xf, 3)
    with pytest.raises(InputError, match="NaN"):
        fitted_neighbors(np.where(Xn > 1, np.nan, Xn), Xf, 3)
    with pytest.raises(InputError, match="n_neighbors"):
        fitted_neighbors(Xn, Xf, 41)


def test_fitted_neighbors_tangent(usps_small):
    X = usps_small[0]
    sq, ind = fitted_neighbors(X[:5] + 0.01, X, 3, metric="tangent")
    ref_sq, ref_ind = tangent_kneighbors(X[:5] + 0.01, X, n_neighbors=3)
    np.testing.assert_array_equal(ind, ref_ind)
    # the search expands |a - b|^2 (round-off ~1e-15 |a|^2, |a|^2 ~ 100 here); ours
    # is recomputed from the differences
    np.testing.assert_allclose(sq, ref_sq, rtol=1e-9, atol=1e-12)
    sq, ind = fitted_neighbors(X[:5], X, 3, metric="tangent")
    np.testing.assert_array_equal(ind[:, 0], np.arange(5))
    assert np.all(sq[:, 0] == 0.0)


# ------------------------------------------------------------ estimators
@pytest.fixture(scope="module")
def fitted(usps_small):
    """DVU fitted on 30 of the 40 digits; the other 10 are new."""
    X, y_true, y, _ = usps_small
    new = np.arange(40) % 4 == 0
    y_fit = y[~new].copy()
    est = DVU(n_components=4, solver="CLARABEL", random_state=0).fit(X[~new], y_fit)
    return est, X[~new], X[new], y_true[new]


@pytest.mark.parametrize("method", ["distances", "nystrom"])
@pytest.mark.parametrize("metric", ["euclidean", "tangent"])
def test_transform_reproduces_the_fit(usps_small, method, metric):
    # a fitted row has itself at zero distance: both methods return its embedding
    # exactly (no solve involved; tolerance 0)
    X, _, y, _ = usps_small
    est = DVU(n_components=3, metric=metric, out_of_sample=method, solver="CLARABEL",
              random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.transform(X), est.embedding_)
    Xdup = np.r_[X[[5, 17]], X[[5]]]
    np.testing.assert_array_equal(est.transform(Xdup), est.embedding_[[5, 17, 5]])


def test_transform_with_precomputed_distances(fitted):
    # metric="precomputed": fit on the distance matrix, transform distances to the
    # fitted rows; same graph and SDP as the Euclidean fit up to round-off in the target
    # distances (sqrt then square), so the placements agree to the solver's accuracy
    est, Xf, Xn, _ = fitted
    from sklearn.metrics import pairwise_distances

    pre = DVU(**{**est.get_params(), "metric": "precomputed"}).fit(
        pairwise_distances(Xf), np.where(est.labeled_mask_, est.transduction_, -1))
    spread = np.abs(est.embedding_).max()
    np.testing.assert_allclose(pre.embedding_, est.embedding_, atol=1e-5 * spread)
    np.testing.assert_allclose(pre.transform(pairwise_distances(Xn, Xf)), est.transform(Xn),
                               atol=1e-4 * spread)
    with pytest.raises(InputError, match="features"):
        pre.transform(pairwise_distances(Xn, Xf[:-1]))


@pytest.mark.parametrize("method", ["distances", "nystrom"])
def test_transform_is_continuous_at_fitted_points(fitted, method):
    # x_i + eps v lands within O(eps) of z_i: the SOCP's weight 1/delta_i on the near
    # neighbour forces |z - z_i|^2 + h^2 ~ delta_i (so |z - z_i| <= ~eps |v|), the
    # Shepard weights give the others weight O(eps^2)
    est, Xf, _, _ = fitted
    est = copy.deepcopy(est).set_params(out_of_sample=method)
    v = np.random.default_rng(12).normal(size=(6, Xf.shape[1]))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    spread = np.sqrt(((est.embedding_ - est.embedding_.mean(0)) ** 2).sum(1).mean())
    moves = []
    for eps in (1e-2, 1e-4):
        Z = est.transform(Xf[:6] + eps * v)
        moves.append(np.linalg.norm(Z - est.embedding_[:6], axis=1).max())
    assert moves[0] <= 0.1 * spread and moves[1] <= 1e-2 * moves[0] + 1e-12


def test_predict_is_invariant_under_rigid_motion_of_the_fit(fitted):
    est, Xf, Xn, _ = fitted
    Q = special_ortho_group.rvs(4, random_state=1)
    b = np.arange(4.0)
    moved = copy.deepcopy(est)
    moved.embedding_ = est.embedding_ @ Q + b
    moved._fit_out_of_sample(Xf)  # the classifier is trained on the moved embedding
    np.testing.assert_allclose(moved.transform(Xn), est.transform(Xn) @ Q + b, atol=1e-6)
    np.testing.assert_array_equal(moved.predict(Xn), est.predict(Xn))


def test_predict_score_and_pipeline(fitted, usps_small):
    est, Xf, Xn, yn = fitted
    pred = est.predict(Xn)
    assert set(pred) <= set(est.classes_)
    assert est.score(Xn, yn) == np.mean(pred == yn)
    y_partial = yn.copy()
    y_partial[:4] = -1  # unlabelled rows are skipped
    assert est.score(Xn, y_partial) == np.mean(pred[4:] == yn[4:])
    with pytest.raises(InputError, match="labelled"):
        est.score(Xn, np.full(10, -1))
    with pytest.raises(InputError, match="one label per row"):
        est.score(Xn, yn[:3])
    svm = clone_fit(est, Xf, classifier="svm")
    assert svm.score(Xn, yn) >= 0.5
    # DVU at the end of a Pipeline
    pipe = make_pipeline(FunctionTransformer(lambda a: a * 2.0),
                         DVU(n_components=4, solver="CLARABEL", random_state=0))
    pipe.fit(Xf, np.where(est.labeled_mask_, est.transduction_, -1))
    np.testing.assert_array_equal(pipe.predict(Xn), pipe[-1].predict(Xn * 2.0))
    assert 0 <= pipe.score(Xn, yn) <= 1


def clone_fit(est, Xf, **params):
    y = np.where(est.labeled_mask_, est.transduction_, -1)
    return DVU(**{**est.get_params(), **params}).fit(Xf, y)


def test_bad_input_raises_typed_errors(fitted):
    est, Xf, Xn, yn = fitted
    with pytest.raises(NotFittedError):
        DVU().transform(Xn)
    with pytest.raises(NotFittedError):
        DVU().predict(Xn)
    with pytest.raises(NotFittedError):
        MVU().transform(Xn)
    with pytest.raises(InputError, match="features"):
        est.transform(Xn[:, :-1])
    bad = Xn.copy()
    bad[2, 7] = np.nan
    with pytest.raises(InputError, match="NaN"):
        est.transform(bad)
    with pytest.raises(InputError, match="NaN"):
        est.predict(bad)
    with pytest.raises(InputError):
        est.transform(Xn[0])  # 1-D


def test_mvu_transform_recovers_a_flat_grid():
    # MVU on a rigid planar grid (8 neighbours: sides and diagonals, equality distances)
    # recovers the grid up to a rigid motion; new points inside it then have distances
    # the fit realises exactly, so the distance placement recovers them through the same
    # motion. Tolerance 1e-3: the interior-point solve of the fit (CLARABEL, about 1e-8
    # relative) fixes the embedding to about 1e-4, and the placement inherits that
    g = np.arange(6.0)
    Xf = np.array([(a, b) for a in g for b in g])
    est = MVU(n_components=2, n_neighbors=8, out_of_sample_neighbors=6,
              solver="CLARABEL").fit(Xf)
    Z = est.embedding_
    # Procrustes: Z ~ (Xf - mean) R + mean(Z)
    Xc, Zc = Xf - Xf.mean(0), Z - Z.mean(0)
    U, _, Vt = np.linalg.svd(Xc.T @ Zc)
    R = U @ Vt
    np.testing.assert_allclose(Xc @ R, Zc, atol=1e-3)
    Xn = np.random.default_rng(11).uniform(0.5, 4.5, size=(20, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", InaccurateSolutionWarning)
        Zn = est.transform(Xn)
    np.testing.assert_allclose(Zn, (Xn - Xf.mean(0)) @ R + Z.mean(0), atol=1e-3)

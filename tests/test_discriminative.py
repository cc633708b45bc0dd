"""Discriminative projections (Wang & Mahadevan): matrices, closed form vs SDP, labels.

Tolerances: the matrices are checked against the paper's cost terms to
rounding (1e-9 relative). Closed form vs SDP: objective 1e-5 relative and
largest principal angle 1e-3 rad between the joint (f; g) subspaces (issue
requirement; with the Cholesky preconditioner Clarabel reaches ~1e-9 / 1e-12).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sdpembed.estimators.discriminative import DiscriminativeProjections
from sdpembed.exceptions import DegenerateEmbeddingWarning, InputError, LabelError
from sdpembed.formulations import Formulation
from sdpembed.formulations.discriminative import discriminative_projections_formulation
from sdpembed.relaxations import principal_angles
from sdpembed.scatter.discriminant import (
    continuous_label_matrices,
    discriminative_projection_matrices,
    graph_laplacian,
    knn_affinity,
)


def _data(loader, frac_labeled=1.0, seed=0):
    X, y = loader(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    ys = y.copy()
    ys[np.random.default_rng(seed).random(y.size) >= frac_labeled] = -1
    return X, y, ys


def _gamma(est):
    return np.vstack([est.components_.T, est.label_components_.T])


# ---------------------------------------------------------------- matrices
def test_matrices_reproduce_the_paper_cost_terms():
    rng = np.random.default_rng(0)
    n, p, c, d = 30, 4, 3, 2
    X = rng.standard_normal((n, p))
    y = rng.integers(0, c, n)
    y[rng.random(n) < 0.3] = -1
    W = knn_affinity(X, 4)
    L, deg = graph_laplacian(W)
    mu = 0.7
    A, B, C = discriminative_projection_matrices(X, y, c, L, mu)
    f, g = rng.standard_normal((p, d)), rng.standard_normal((c, d))
    gam = np.vstack([f, g])
    lab = y >= 0
    F, G = X @ f, np.eye(c) @ g  # instance images, label images g's_k
    M = ((F[lab] - G[y[lab]]) ** 2).sum()
    N = ((F[lab][:, None, :] - G[None, :, :]) ** 2).sum()
    Wd = W.toarray()
    Lterm = mu * (Wd * ((F[:, None, :] - F[None, :, :]) ** 2).sum(-1)).sum() / 2
    assert np.trace(gam.T @ A @ gam) == pytest.approx(M, rel=1e-9)
    assert np.trace(gam.T @ B @ gam) == pytest.approx(N, rel=1e-9)
    assert np.trace(gam.T @ C @ gam) == pytest.approx(Lterm, rel=1e-9)
    # continuous labels (sec. 3.3): cost M + L and constraint f'X'DXf + g'Y'Yg
    Yc = rng.standard_normal((n, 1))
    ZLZ, ZDZ = continuous_label_matrices(X, Yc, lab, L, deg, mu)
    gc = rng.standard_normal((1, d))
    gam = np.vstack([f, gc])
    Mc = ((F[lab] - Yc[lab] @ gc) ** 2).sum()
    assert np.trace(gam.T @ ZLZ @ gam) == pytest.approx(Mc + Lterm, rel=1e-9)
    Dc = (deg[:, None] * F * F).sum() + ((Yc[lab] @ gc) ** 2).sum()
    assert np.trace(gam.T @ ZDZ @ gam) == pytest.approx(Dc, rel=1e-9)


def test_knn_affinity_is_symmetric_and_tolerates_duplicates():
    X, _ = load_iris(return_X_y=True)  # iris has duplicate rows
    W = knn_affinity(X, 5)
    assert sp.issparse(W) and abs(W - W.T).max() == 0 and W.diagonal().max() == 0
    assert W.data.max() <= 1.0 and W.data.min() > 0
    assert (W.getnnz(axis=1) >= 5).all()


def test_mu_auto_is_l_over_s():
    X, y, ys = _data(load_iris, 0.5)
    est = DiscriminativeProjections(n_components=2).fit(X, ys)
    W = knn_affinity(X, 5)
    assert est.mu_ == pytest.approx((ys >= 0).sum() / W.sum())
    yc = np.where(ys >= 0, ys, np.nan).astype(float)
    est = DiscriminativeProjections(labels="continuous").fit(X, yc)
    assert est.mu_ == pytest.approx(0.1 * (ys >= 0).sum() / W.sum())


# ------------------------------------------------------- closed form vs SDP
@pytest.mark.parametrize("loader", [load_iris, load_wine])
@pytest.mark.parametrize("frac", [1.0, 0.3])
def test_eigen_and_sdp_agree(loader, frac):
    X, y, ys = _data(loader, frac)
    eig = DiscriminativeProjections(n_components=2).fit(X, ys)
    sdp = DiscriminativeProjections(n_components=2, method="sdp").fit(X, ys)
    assert sdp.objective_ == pytest.approx(eig.objective_, rel=1e-5)
    assert principal_angles(_gamma(eig), _gamma(sdp)).max() < 1e-3
    assert sdp.rank_gap_ < 1e-6
    assert isinstance(sdp.formulation_, Formulation)
    assert sdp.solve_report_.status == "optimal"
    np.testing.assert_allclose(eig.eigenvalues_, sdp.eigenvalues_, rtol=1e-5, atol=1e-8)
    # the eigenvalues are the d smallest of (A + C) x = lambda (B + C) x, in [0, 1]
    assert 0 <= eig.eigenvalues_[0] <= eig.eigenvalues_[1] < 1


def test_continuous_labels_eigen_sdp_and_ordering():
    X, y, ys = _data(load_iris, 0.5, seed=1)
    yc = np.where(ys >= 0, ys, np.nan).astype(float)
    eig = DiscriminativeProjections(n_components=2, labels="continuous").fit(X, yc)
    sdp = DiscriminativeProjections(n_components=2, labels="continuous", method="sdp").fit(X, yc)
    assert sdp.objective_ == pytest.approx(eig.objective_, rel=1e-5)
    assert principal_angles(_gamma(eig), _gamma(sdp)).max() < 1e-3
    assert eig.label_components_.shape == (2, 1)
    # Theorem 2's purpose: similar label values map to similar places, so along the
    # first direction the class means are ordered like the labels 0 < 1 < 2
    emb = eig.transform(X)[:, 0]
    means = np.array([emb[y == k].mean() for k in range(3)])
    assert np.all(np.diff(means) > 0) or np.all(np.diff(means) < 0)
    proto = eig.label_prototypes([0.0, 1.0, 2.0])
    np.testing.assert_allclose(proto, np.outer([0, 1, 2], eig.label_components_[:, 0]))


def test_label_prototypes_classify_and_d_beyond_c_minus_one():
    X, y, _ = _data(load_wine)
    est = DiscriminativeProjections(n_components=5).fit(X, y)  # LDA would stop at c - 1 = 2
    assert est.components_.shape == (5, 13) and est.label_components_.shape == (5, 3)
    proto = est.label_prototypes()
    np.testing.assert_array_equal(proto, est.label_components_.T)
    emb = est.transform(X)
    assert emb.shape == (178, 5)
    np.testing.assert_allclose(emb, X @ est.components_.T)
    pred = np.argmin(((emb[:, None, :] - proto[None]) ** 2).sum(-1), axis=1)
    assert (pred == y).mean() > 0.95  # measured 1.0 (d = 2) on standardized wine


def test_balanced_classes_have_the_trivial_label_direction():
    # With equal class sizes, gamma = (0, 1) solves (A + C)x = lambda (B + C)x with
    # lambda = 1/c exactly (every instance mapped to 0 and every label to the same point):
    # a documented degeneracy of the method.
    # fit warns: that direction maps every instance to the same point.
    X, y, _ = _data(load_iris)
    with pytest.warns(DegenerateEmbeddingWarning, match=r"direction\(s\) \[2\]"):
        est = DiscriminativeProjections(n_components=3).fit(X, y)
    assert est.eigenvalues_[2] == pytest.approx(1 / 3, rel=1e-10)
    np.testing.assert_allclose(est.components_[2], 0, atol=1e-10)


def test_formulation_builder_matches_estimator():
    X, y, ys = _data(load_iris, 0.5)
    form = discriminative_projections_formulation(X, ys, 2)
    assert form.meta["method"] == "discriminative_projections"
    assert form.meta["variant"] == "discrete" and set(form.variables) == {"Z"}
    assert form.variables["Z"].shape == (7, 7)


# ----------------------------------------------------------------- errors
@pytest.mark.parametrize("y_bad,match", [
    (np.array(["a", "b", "c"] * 50), "LabelEncoder"),
    (np.zeros(150, int), "at least 2 classes"),
    (np.r_[np.zeros(75, int), np.ones(74, int), 2], "at least 2 labeled points"),
    (np.r_[np.zeros(75), np.ones(74), 0.5], "non-integer"),
])
def test_bad_labels_raise(y_bad, match):
    X, _, _ = _data(load_iris)
    with pytest.raises(LabelError, match=match):
        DiscriminativeProjections().fit(X, y_bad)


def test_bad_parameters_raise():
    X, y, _ = _data(load_iris)
    with pytest.raises(InputError, match="n_components=5 is too large"):
        DiscriminativeProjections(n_components=5).fit(X, y)
    with pytest.raises(InputError, match="labels"):
        DiscriminativeProjections(labels="fuzzy").fit(X, y)
    with pytest.raises(InputError, match="mu"):
        DiscriminativeProjections(mu=-1.0).fit(X, y)
    yc = np.c_[y, y].astype(float)
    yc[0, 0] = np.nan
    with pytest.raises(LabelError, match="partly NaN"):
        DiscriminativeProjections(labels="continuous").fit(X, yc)
    with pytest.raises(InputError, match="no labels"):
        DiscriminativeProjections().fit(X, y).label_prototypes([1])


@parametrize_with_checks([DiscriminativeProjections(n_components=2),
                          DiscriminativeProjections(n_components=1, method="sdp")])
def test_sklearn_api(estimator, check):
    check(estimator)

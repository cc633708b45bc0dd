"""Tests of sdpembed.evaluation against brute-force numpy computations and cvxpy.

The data are continuous Gaussian blobs, so distance ties (where the brute-force
ordering and scikit-learn's could legitimately differ) have probability zero.
"""

from __future__ import annotations

import numpy as np
import pytest

from sdpembed.evaluation import (
    _soft_nn_loss,
    loo_same_class_curve,
    neighbourhood_metrics,
    oracle_linear_knn,
    topology_preservation_curve,
    transductive_knn_accuracy,
    transductive_svm_accuracy,
)
from sdpembed.exceptions import InputError, LabelError


def _blobs(n=90, d=4, n_classes=3, spread=1.5, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    centres = rng.normal(scale=2.0, size=(n_classes, d))
    X = centres[y] + spread * rng.normal(size=(n, d))
    mask = np.zeros(n, bool)
    mask[rng.permutation(n)[: n // 3]] = True
    return X, y, mask


def _sqdist(A, B):
    return ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)


def _brute_knn_accuracy(X, y, mask, k):
    D = _sqdist(X[~mask], X[mask])
    nearest = np.argsort(D, axis=1, kind="stable")[:, :k]
    votes = y[mask][nearest]
    # majority vote, ties to the smallest label (bincount argmax takes the first max)
    pred = np.array([np.bincount(v, minlength=y.max() + 1).argmax() for v in votes])
    return np.mean(pred == y[~mask])


def _brute_loo_curve(X, y, max_k):
    D = _sqdist(X, X)
    np.fill_diagonal(D, np.inf)
    order = np.argsort(D, axis=1, kind="stable")[:, :max_k]
    return np.array([np.mean([(y[order[i, :K]] == y[i]).any() for i in range(len(y))])
                     for K in range(1, max_k + 1)])


def _brute_topology_curve(A, B, max_k):
    DA, DB = _sqdist(A, A), _sqdist(B, B)
    np.fill_diagonal(DA, np.inf)
    np.fill_diagonal(DB, np.inf)
    nearest = DA.argmin(axis=1)
    order = np.argsort(DB, axis=1, kind="stable")
    return np.array([np.mean([nearest[i] in order[i, :K] for i in range(len(A))])
                     for K in range(1, max_k + 1)])


# --------------------------------------------------------------------------- k-NN


@pytest.mark.parametrize("k", [1, 3, 4, 7])
@pytest.mark.parametrize("seed", [0, 1])
def test_knn_accuracy_matches_brute_force(k, seed):
    X, y, mask = _blobs(seed=seed)
    acc = transductive_knn_accuracy(X, y, mask, n_neighbors=k)
    assert acc == pytest.approx(_brute_knn_accuracy(X, y, mask, k), abs=1e-12)
    assert 0.2 < acc < 1.0  # overlapping blobs: a non-trivial score


def test_knn_precomputed_distances_match_euclidean():
    X, y, mask = _blobs(seed=2)
    D = np.sqrt(_sqdist(X, X))
    assert transductive_knn_accuracy(D, y, mask, 3, metric="precomputed") == \
        transductive_knn_accuracy(X, y, mask, 3)


def test_knn_accuracy_with_arbitrary_label_values():
    X, y, mask = _blobs(seed=3)
    relabel = np.array([7, 2, 40])[y]
    assert transductive_knn_accuracy(X, relabel, mask, 3) == \
        transductive_knn_accuracy(X, y, mask, 3)


@pytest.mark.parametrize("args, error, match", [
    (lambda X, y, m: (X, y, m.astype(int)), InputError, "boolean"),
    (lambda X, y, m: (X, y, np.ones_like(m)), InputError, "at least one labeled and one"),
    (lambda X, y, m: (X, y, np.zeros_like(m)), InputError, "at least one labeled and one"),
    (lambda X, y, m: (X, np.where(m, y, -1), m), LabelError, "no -1"),
    (lambda X, y, m: (X, y[:-1], m), LabelError, "one label per row"),
    (lambda X, y, m: (X, y + 0.5, m), LabelError, "integer"),
    (lambda X, y, m: (np.where(X > 3, np.nan, X), y, m), InputError, "NaN"),
    (lambda X, y, m: (X[:, 0], y, m), InputError, "2-D"),
])
def test_knn_input_errors(args, error, match):
    X, y, mask = _blobs()
    with pytest.raises(error, match=match):
        transductive_knn_accuracy(*args(X, y, mask))


def test_knn_neighbour_count_bounded_by_labeled_rows():
    X, y, mask = _blobs(n=30)
    with pytest.raises(InputError, match=r"\[1, 10\]"):
        transductive_knn_accuracy(X, y, mask, n_neighbors=11)
    with pytest.raises(InputError, match="square"):
        transductive_knn_accuracy(X, y, mask, metric="precomputed")


# --------------------------------------------------------------------------- SVM


def _crammer_singer_cvxpy(X, y, C):
    """Crammer & Singer's primal, no intercept, solved by Clarabel."""
    import cvxpy as cp

    n, d = X.shape
    k = y.max() + 1
    W = cp.Variable((k, d))
    xi = cp.Variable(n)
    S = X @ W.T  # (n, k) scores
    Y = np.eye(k)[y]
    true_score = cp.sum(cp.multiply(S, Y), axis=1)
    margin = (1 - Y) + S - cp.reshape(true_score, (n, 1), order="C") @ np.ones((1, k))
    cp.Problem(cp.Minimize(0.5 * cp.sum_squares(W) + C * cp.sum(xi)),
               [margin <= cp.reshape(xi, (n, 1), order="C") @ np.ones((1, k))]).solve(
        solver="CLARABEL")
    return W.value


@pytest.mark.parametrize("C", [0.05, 1.0])
def test_svm_is_crammer_singer(C):
    X, y, mask = _blobs(n=120, spread=1.8, seed=4)
    acc = transductive_svm_accuracy(X, y, mask, C=C, fit_intercept=False, tol=1e-6,
                                    max_iter=100_000)
    W = _crammer_singer_cvxpy(X[mask], y[mask], C)
    scores = X[~mask] @ W.T
    pred = scores.argmax(axis=1)
    ref = np.mean(pred == y[~mask])
    # liblinear and Clarabel stop at different tolerances: predictions may differ only
    # on points whose two best class scores are within 1e-3 of each other.
    top2 = np.sort(scores, axis=1)[:, -2:]
    near = int(np.sum(top2[:, 1] - top2[:, 0] < 1e-3))
    assert abs(acc - ref) <= near / (~mask).sum() + 1e-12
    assert 0.3 < acc < 1.0


def test_svm_separable_and_label_errors():
    X, y, mask = _blobs(spread=0.05, seed=5)
    assert transductive_svm_accuracy(X, y, mask) == 1.0
    one_class = mask & (y == 0)
    with pytest.raises(LabelError, match="two classes"):
        transductive_svm_accuracy(X, y, one_class)
    with pytest.raises(InputError, match="C must be"):
        transductive_svm_accuracy(X, y, mask, C=0.0)


# --------------------------------------------------------------------------- curves


@pytest.mark.parametrize("seed", [0, 1])
def test_loo_same_class_curve_matches_brute_force(seed):
    X, y, _ = _blobs(n=80, seed=seed)
    curve = loo_same_class_curve(X, y, max_k=10)
    np.testing.assert_allclose(curve, _brute_loo_curve(X, y, 10), rtol=0, atol=1e-12)
    assert curve.shape == (10,) and np.all(np.diff(curve) >= 0)
    # c_1 is the leave-one-out 1-NN accuracy.
    D = _sqdist(X, X)
    np.fill_diagonal(D, np.inf)
    assert curve[0] == pytest.approx(np.mean(y[D.argmin(axis=1)] == y))


def test_loo_curve_precomputed_matches_coordinates():
    X, y, _ = _blobs(n=50, seed=6)
    D = np.sqrt(_sqdist(X, X))
    np.testing.assert_array_equal(loo_same_class_curve(D, y, 5, metric="precomputed"),
                                  loo_same_class_curve(X, y, 5))


@pytest.mark.parametrize("seed", [0, 1])
def test_topology_curve_matches_brute_force(seed):
    X, _, _ = _blobs(n=70, d=6, seed=seed)
    rng = np.random.default_rng(seed)
    E = X @ rng.normal(size=(6, 2))  # a lossy linear projection
    curve = topology_preservation_curve(X, E, max_k=10)
    np.testing.assert_allclose(curve, _brute_topology_curve(X, E, 10), rtol=0, atol=1e-12)
    assert np.all(np.diff(curve) >= 0) and curve[0] < 1.0


def test_topology_curve_is_one_for_isometries():
    X, _, _ = _blobs(n=60, d=5, seed=7)
    Q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(5, 5)))
    np.testing.assert_array_equal(topology_preservation_curve(X, 3.0 * X @ Q + 1.0, 4),
                                  np.ones(4))


def test_curve_input_errors():
    X, y, _ = _blobs(n=20)
    with pytest.raises(InputError, match="at least 21 points"):
        loo_same_class_curve(X, y, max_k=20)
    with pytest.raises(InputError, match="max_k"):
        loo_same_class_curve(X, y, max_k=0)
    with pytest.raises(InputError, match="same rows"):
        topology_preservation_curve(X, X[:-1])
    with pytest.raises(LabelError):
        loo_same_class_curve(X, np.full(20, -1))


def test_neighbourhood_metrics_collects_the_curves():
    from sklearn.manifold import trustworthiness

    X, y, _ = _blobs(n=60, d=5, seed=8)
    E = X[:, :2]
    out = neighbourhood_metrics(X, E, y, max_k=5)
    np.testing.assert_array_equal(out["k"], np.arange(1, 6))
    np.testing.assert_array_equal(out["topology"], topology_preservation_curve(X, E, 5))
    np.testing.assert_array_equal(out["same_class_embedded"], loo_same_class_curve(E, y, 5))
    np.testing.assert_array_equal(out["same_class_original"], loo_same_class_curve(X, y, 5))
    assert out["trustworthiness"] == pytest.approx(trustworthiness(X, E, n_neighbors=5))


# --------------------------------------------------------------------------- oracle
def test_soft_nn_loss_gradient_matches_finite_differences():
    from scipy.optimize import check_grad

    X, y, mask = _blobs(n=40, d=3, seed=2)
    U, L = X[~mask], X[mask]
    same = y[~mask][:, None] == y[mask][None, :]
    a = np.random.default_rng(0).normal(scale=0.3, size=6)
    args = ((2, 3), U, L, same)
    f = lambda a: _soft_nn_loss(a, *args)[0]  # noqa: E731
    g = lambda a: _soft_nn_loss(a, *args)[1]  # noqa: E731
    # central differences of a smooth loss of size ~1e1: agreement to ~1e-5 relative
    assert check_grad(f, g, a) < 1e-5 * max(1.0, np.linalg.norm(g(a)))
    # the loss is the cross-entropy written out
    A = a.reshape(2, 3)
    d = _sqdist(U @ A.T, L @ A.T)
    p = np.exp(-d) * same
    assert f(a) == pytest.approx(-np.sum(np.log(p.sum(1) / np.exp(-d).sum(1))), rel=1e-10)


def test_oracle_error_is_reached_by_its_map_and_beats_each_candidate():
    X, y, mask = _blobs(n=120, d=4, spread=2.5, seed=3)
    ref = oracle_linear_knn(X, y, mask)
    Z = (X - X.mean(axis=0)) @ ref.components.T
    assert 1.0 - transductive_knn_accuracy(Z, y, mask, 1) == pytest.approx(ref.error, abs=1e-12)
    assert ref.error == min(ref.errors.values()) and ref.errors[ref.best] == ref.error
    assert ref.errors["identity"] == pytest.approx(
        1.0 - transductive_knn_accuracy(X, y, mask, 1), abs=1e-12)
    plain = oracle_linear_knn(X, y, mask, search=False)
    assert set(plain.errors) == {"identity", "lda"} and ref.error <= plain.error


def test_oracle_search_finds_a_map_that_lda_and_identity_miss():
    # class 1 at feature 0 = 0, class 0 at -3 or +3 (equal class means: Fisher's direction
    # is arbitrary), large noise in feature 1 (1-NN on the raw features is near chance);
    # the map A = diag(1, 0) makes no error
    rng = np.random.default_rng(0)
    centre = np.repeat([-3.0, 3.0, 0.0], 60)
    y = np.repeat([0, 0, 1], 60)
    X = np.column_stack([centre + 0.1 * rng.normal(size=180), 50.0 * rng.normal(size=180)])
    mask = np.zeros(180, bool)
    mask[[0, 1, 60, 61, 120, 121]] = True
    ref = oracle_linear_knn(X, y, mask)
    assert ref.errors["identity"] > 0.2 and ref.errors["lda"] > 0.2
    assert ref.error == 0.0 and ref.best.startswith("search")


def test_oracle_input_errors():
    X, y, mask = _blobs(n=30)
    one_class = mask & (y == 0)
    with pytest.raises(LabelError, match="two classes"):
        oracle_linear_knn(X, y, one_class)
    with pytest.raises(InputError, match="labeled_mask"):
        oracle_linear_knn(X, y, np.ones(30, bool))

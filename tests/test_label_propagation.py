"""LGC and GFHF: closed forms against dense formulas and scikit-learn run to convergence.

Tolerances and why:

* against the dense closed forms (``numpy.linalg.inv``/``solve`` on an
  independently built affinity): 1e-10 relative, two factorisations of the
  same small well-conditioned system (cond(I - alpha S) <= (1 + alpha)/(1 - alpha));
* against scikit-learn's ``LabelSpreading`` / ``LabelPropagation`` with
  ``max_iter=100000, tol=1e-13`` (stopping when the sum of absolute changes
  falls below tol): the iterate's error is then at most about
  tol * alpha / (1 - alpha) = 1e-11 in F, so the normalised distributions
  agree to 1e-7 absolute (a loose margin) and the labels exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris, make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.semi_supervised import LabelPropagation, LabelSpreading
from sklearn.utils.estimator_checks import parametrize_with_checks

from sdpembed.estimators.label_propagation import GFHF, LGC
from sdpembed.exceptions import DisconnectedGraphError, InputError, LabelError, ParameterError
from sdpembed.scatter.discriminant import knn_affinity
from sdpembed.scatter.propagation import class_mass_normalization, harmonic_scores, lgc_scores
from sdpembed.scatter.tca import tca_graph


def _data(n=60, seed=0, frac=0.15):
    X, y = make_blobs(n_samples=n, centers=3, cluster_std=2.0, random_state=seed)
    ys = np.where(np.random.default_rng(seed).random(n) < frac, y, -1)
    for k in range(3):  # at least one label per class
        ys[np.flatnonzero(y == k)[0]] = k
    return X, y, ys


def _rbf(X, gamma):
    W = np.exp(-gamma * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(W, 0.0)
    return W


def _onehot(ys, c=3):
    Y = np.zeros((ys.size, c))
    Y[ys >= 0, ys[ys >= 0]] = 1.0
    return Y


def _lgc_dense(W, Y, alpha):
    d = W.sum(1)
    S = W / np.sqrt(np.outer(d, d))
    return (1 - alpha) * np.linalg.inv(np.eye(len(W)) - alpha * S) @ Y


def _harmonic_dense(W, Y, labeled):
    L = np.diag(W.sum(1)) - W
    u, lab = ~labeled, labeled
    F = Y.copy()
    F[u] = -np.linalg.solve(L[np.ix_(u, u)], L[np.ix_(u, lab)] @ Y[lab])
    return F


def _normalise(F):
    return F / F.sum(1, keepdims=True)


# ------------------------------------------------------------ closed forms
@pytest.mark.parametrize("alpha", [0.2, 0.99])
@pytest.mark.parametrize("kernel", ["rbf", "knn"])
def test_lgc_equals_dense_closed_form_and_is_the_fixed_point(alpha, kernel):
    X, _, ys = _data()
    W = _rbf(X, 0.05) if kernel == "rbf" else knn_affinity(X, 7, weights="binary").toarray()
    est = LGC(alpha=alpha, kernel=kernel, gamma=0.05).fit(X, ys)
    F = _lgc_dense(W, _onehot(ys), alpha)
    np.testing.assert_allclose(est.label_distributions_, _normalise(F), rtol=1e-10)
    np.testing.assert_array_equal(est.transduction_, np.argmax(F, 1))
    # F* = alpha S F* + (1 - alpha) Y (Zhou et al.'s iteration has converged)
    d = W.sum(1)
    S = W / np.sqrt(np.outer(d, d))
    np.testing.assert_allclose(F, alpha * S @ F + (1 - alpha) * _onehot(ys), atol=1e-12)
    # sparse and dense inputs give the same scores
    np.testing.assert_allclose(lgc_scores(sp.csr_matrix(W), _onehot(ys), alpha), F, rtol=1e-10)


@pytest.mark.parametrize("kernel", ["rbf", "knn", "heat_knn"])
def test_gfhf_equals_dense_harmonic_solution(kernel):
    X, _, ys = _data(seed=1)
    labeled = ys >= 0
    if kernel == "rbf":
        W = _rbf(X, 0.05)
    elif kernel == "knn":
        W = knn_affinity(X, 7, weights="binary").toarray()
    else:
        W = tca_graph(X, 7).adjacency().toarray()
    est = GFHF(kernel=kernel, gamma=0.05).fit(X, ys)
    F = _harmonic_dense(W, _onehot(ys), labeled)
    np.testing.assert_allclose(est.label_distributions_, F, rtol=1e-10, atol=1e-14)
    # harmonic: every unlabelled value is the weighted mean of its neighbours'
    u = ~labeled
    np.testing.assert_allclose(F[u], (W @ F)[u] / W.sum(1)[u, None], atol=1e-12)
    np.testing.assert_allclose(F[u].sum(1), 1.0, atol=1e-12)  # absorption probabilities
    np.testing.assert_array_equal(est.transduction_[labeled], ys[labeled])  # clamped


def test_class_mass_normalization():
    X, _, ys = _data(seed=2)
    labeled = ys >= 0
    est = GFHF(class_mass_normalization=True).fit(X, ys)
    W = knn_affinity(X, 7, weights="binary")
    F = harmonic_scores(W, _onehot(ys), labeled)
    q = _onehot(ys)[labeled].sum(0) / labeled.sum()
    G = F.copy()
    G[~labeled] = F[~labeled] * (q / F[~labeled].sum(0))
    np.testing.assert_allclose(class_mass_normalization(F, labeled, q), G, rtol=1e-12)
    np.testing.assert_allclose(est.label_distributions_, _normalise(G), rtol=1e-10)


# -------------------------------------------------------- vs scikit-learn
def _callable(W):
    """A scikit-learn kernel returning a fixed training affinity."""
    def kernel(A, B):
        return W
    return kernel


@pytest.mark.parametrize("graph", ["rbf", "heat_knn"])
def test_lgc_equals_label_spreading_run_to_convergence(graph):
    # same symmetric, zero-diagonal W for both (scikit-learn's own rbf keeps W_ii = 1 in
    # the degrees, unlike Zhou et al.; 'heat_knn' is the TCA experiments' graph)
    X, _, ys = _data(seed=3)
    W = _rbf(X, 0.05) if graph == "rbf" else tca_graph(X, 5).adjacency().toarray()
    ours = LGC(alpha=0.99, kernel=graph, gamma=0.05, n_neighbors=5).fit(X, ys)
    sk = LabelSpreading(kernel=_callable(W), alpha=0.99, max_iter=100_000, tol=1e-13)
    sk.fit(X, ys)
    assert sk.n_iter_ < 100_000 - 1
    np.testing.assert_allclose(ours.label_distributions_, sk.label_distributions_, atol=1e-7)
    np.testing.assert_array_equal(ours.transduction_, sk.transduction_)


def test_label_spreading_stopped_at_30_iterations_is_not_lgc():
    # the experiment runner's former LGC column: max_iter=30 at alpha = 0.99
    X, _, ys = _data(seed=3)
    W = tca_graph(X, 5).adjacency().toarray()
    ours = LGC(alpha=0.99, kernel="heat_knn", n_neighbors=5).fit(X, ys)
    with pytest.warns(ConvergenceWarning):
        sk = LabelSpreading(kernel=_callable(W), alpha=0.99, max_iter=30).fit(X, ys)
    assert np.abs(ours.label_distributions_ - sk.label_distributions_).max() > 1e-3


@pytest.mark.parametrize("kernel", ["rbf", "callable"])
def test_gfhf_equals_label_propagation_run_to_convergence(kernel):
    # LabelPropagation's own rbf keeps W_ii = 1: self-loops cancel in D_uu - W_uu, so the
    # harmonic solution is the same
    X, _, ys = _data(seed=4)
    ours = GFHF(kernel="rbf", gamma=0.05).fit(X, ys)
    sk_kernel = "rbf" if kernel == "rbf" else _callable(_rbf(X, 0.05))
    sk = LabelPropagation(kernel=sk_kernel, gamma=0.05, max_iter=100_000, tol=1e-13)
    sk.fit(X, ys)
    assert sk.n_iter_ < 100_000 - 1
    np.testing.assert_allclose(ours.label_distributions_, sk.label_distributions_, atol=1e-7)
    np.testing.assert_array_equal(ours.transduction_, sk.transduction_)


# ------------------------------------------------------------- prediction
@pytest.mark.parametrize("cls", [LGC, GFHF])
@pytest.mark.parametrize("kernel", ["rbf", "knn", "heat_knn"])
def test_inductive_prediction(cls, kernel):
    X, y, ys = _data(seed=5)
    est = cls(kernel=kernel, gamma=0.05, n_neighbors=5).fit(X, ys)
    Xn = X[:7] + 0.1
    if kernel == "rbf":
        K = np.exp(-0.05 * ((Xn[:, None] - X[None]) ** 2).sum(-1))
    else:
        d = np.sqrt(((Xn[:, None] - X[None]) ** 2).sum(-1))
        idx = np.argsort(d, axis=1)[:, :5]
        K = np.zeros_like(d)
        w = 1.0 if kernel == "knn" else np.exp(-np.take_along_axis(d, idx, 1) ** 2
                                               / est.sigma_**2)
        np.put_along_axis(K, idx, w, axis=1)
    P = _normalise(K @ est.label_distributions_)
    np.testing.assert_allclose(est.predict_proba(Xn), P, rtol=1e-10)
    np.testing.assert_array_equal(est.predict(Xn), est.classes_[np.argmax(P, 1)])


def test_iris_accuracy_and_labels_other_than_integers():
    X, y = load_iris(return_X_y=True)
    ys = np.where(np.arange(150) % 10 == 0, y, -1)
    for est in (LGC(), GFHF()):
        assert (est.fit(X, ys).transduction_ == y).mean() >= 0.9  # measured 0.90, 0.91
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    est = LGC().fit(X, names)  # strings: every point labelled
    assert set(est.transduction_) <= set(names) and est.classes_.tolist() == sorted(set(names))


# ---------------------------------------------------------------- errors
def test_components_without_labels_raise():
    X = np.r_[np.random.default_rng(0).normal(0, 1, (20, 2)),
              np.random.default_rng(1).normal(100, 1, (20, 2))]
    ys = np.full(40, -1)
    ys[:2] = [0, 1]  # the far cluster has no label
    for est in (LGC(n_neighbors=3), GFHF(n_neighbors=3)):
        with pytest.raises(DisconnectedGraphError, match="20 point"):
            est.fit(X, ys)
    with pytest.raises(DisconnectedGraphError, match="component"):
        GFHF(kernel="rbf", gamma=1e6).fit(X, ys)  # every weight underflows: isolated points


def test_gfhf_on_weights_spanning_hundreds_of_orders_of_magnitude():
    # unscaled breast cancer: heat-kernel weights down to 1e-323; the unscaled system
    # D_uu - W_uu gave scores of -5e18 on this split
    from sklearn.datasets import load_breast_cancer

    from sdpembed.datasets import partial_labels

    X, y = load_breast_cancer(return_X_y=True)
    ys = partial_labels(y, 0.05, min_per_class=2, random_state=31)
    est = GFHF(kernel="heat_knn", n_neighbors=5).fit(X, ys)
    F = est.label_distributions_
    assert F.min() >= -1e-12 and np.allclose(F.sum(axis=1), 1.0)  # absorption probabilities
    # the harmonic property on every unlabelled row: f_i = sum_j P_ij f_j
    W = est._affinity(X).toarray()
    u = ys == -1
    P = W / W.sum(axis=1, keepdims=True)
    assert np.abs(F[u] - P[u] @ F).max() < 1e-10
    assert np.mean(est.transduction_[u] == y[u]) > 0.8


def test_gfhf_sparse_path_agrees_and_refuses_what_it_cannot_solve(monkeypatch):
    from sklearn.datasets import load_breast_cancer

    from sdpembed.datasets import partial_labels
    from sdpembed.scatter import propagation

    X, _, ys = _data()
    gth = GFHF(kernel="heat_knn", n_neighbors=5).fit(X, ys).label_distributions_
    monkeypatch.setattr(propagation, "GTH_MAX", 0)  # every problem through the sparse LU
    lu = GFHF(kernel="heat_knn", n_neighbors=5).fit(X, ys).label_distributions_
    assert np.allclose(lu, gth, atol=1e-10)
    Xb, yb = load_breast_cancer(return_X_y=True)
    ysb = partial_labels(yb, 0.05, min_per_class=2, random_state=31)
    with pytest.raises(InputError, match="numerically singular"):
        GFHF(kernel="heat_knn", n_neighbors=5).fit(Xb, ysb)


@pytest.mark.parametrize("cls", [LGC, GFHF])
def test_orphans_prior_solves_the_labelled_components_and_gives_orphans_the_prior(cls):
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (20, 2)), rng.normal(100, 1, (20, 2))]
    ys = np.full(40, -1)
    ys[[0, 1, 2]] = [0, 1, 1]  # the far cluster has no label; class 1 is the majority
    with pytest.warns(UserWarning, match="20 point"):
        est = cls(n_neighbors=3, orphans="prior").fit(X, ys)
    assert est.n_orphans_ == 20
    # the far cluster: the labelled class proportions, so the majority class
    assert np.allclose(est.label_distributions_[20:], [1 / 3, 2 / 3])
    assert np.all(est.transduction_[20:] == 1)
    # the labelled cluster: exactly the fit on that cluster alone
    alone = cls(n_neighbors=3).fit(X[:20], ys[:20])
    assert np.allclose(est.label_distributions_[:20], alone.label_distributions_, atol=1e-12)
    assert cls(n_neighbors=3).fit(X[:20], ys[:20]).n_orphans_ == 0


def test_bad_input_raises():
    X, _, ys = _data()
    with pytest.raises(ParameterError, match="'alpha' parameter"):
        LGC(alpha=1.0).fit(X, ys)
    with pytest.raises(ParameterError, match="'kernel' parameter"):
        LGC(kernel="cosine").fit(X, ys)
    with pytest.raises(LabelError, match="Unknown label type: continuous"):
        LGC().fit(X, ys + 0.5)
    with pytest.raises(LabelError, match="at least 2 classes"):
        GFHF().fit(X, np.where(ys == 0, 0, -1))
    asym = _rbf(X, 0.05)
    asym[0, 1] += 1.0
    with pytest.raises(InputError, match="symmetric"):
        LGC(kernel=_callable(asym)).fit(X, ys)
    with pytest.raises(InputError, match="zero affinity"):
        LGC(kernel="rbf", gamma=0.05).fit(X, ys).predict(X + 1e3)


def _semi_supervised_exemption(estimator):
    # check_classifiers_classes fits binary labels {-1, 1}; scikit-learn exempts its own
    # semi-supervised classifiers by name (_choose_check_classifiers_labels), because -1 marks
    # an unlabelled point. Here it leaves one class, which raises LabelError as it should.
    return {"check_classifiers_classes": "y == -1 marks unlabelled points (scikit-learn "
                                         "exempts LabelSpreading from this check by name)"}


@parametrize_with_checks([LGC(), GFHF(), LGC(kernel="rbf", gamma=1.0),
                          GFHF(kernel="heat_knn", n_neighbors=3)],
                         expected_failed_checks=_semi_supervised_exemption)
def test_sklearn_api(estimator, check):
    check(estimator)


def test_the_exempted_check_fails_only_through_the_unlabelled_marker():
    X, y = make_blobs(n_samples=30, centers=2, random_state=0, cluster_std=0.1)
    with pytest.raises(LabelError, match="only class \\[1\\]"):
        LGC().fit(X, np.where(y == 0, -1, 1))
    np.testing.assert_array_equal(LGC().fit(X, np.where(y == 0, 2, 1)).transduction_,
                                  np.where(y == 0, 2, 1))

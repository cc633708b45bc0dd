"""LDA, SDA, LPP, PCA: closed form vs SDP, against scikit-learn, and label validation.

Tolerances: closed form vs SDP (Clarabel) objective 1e-5 relative and
largest principal angle 1e-3 rad (issue requirement; the dimensions used
have eigengaps of at least 10 % of the spectrum). Closed form vs
scikit-learn: 1e-8 rad / 1e-8 relative (same pencil, two eigh calls).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from sklearn.datasets import load_iris, load_wine
from sklearn.decomposition import PCA as SkPCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from sdpembed._labels import check_partial_labels, label_indicator
from sdpembed.estimators.classic import LDA, LPP, PCA, SDA
from sdpembed.exceptions import (
    InputError,
    LabelError,
    ParameterError,
    ProblemTooLargeError,
    RankDeficiencyWarning,
)
from sdpembed.relaxations import principal_angles
from sdpembed.scatter.discriminant import (
    between_class_scatter,
    graph_laplacian,
    knn_affinity,
    within_class_scatter,
)


def _data(loader, standardize=False, frac_labeled=1.0, seed=0):
    X, y = loader(return_X_y=True)
    if standardize:
        X = StandardScaler().fit_transform(X)
    ys = y.copy()
    ys[np.random.default_rng(seed).random(y.size) >= frac_labeled] = -1
    return X, y, ys


# --------------------------------------------------------------- vs sklearn
@pytest.mark.parametrize("loader", [load_iris, load_wine])
@pytest.mark.parametrize("method", ["eigen", "sdp"])
def test_lda_subspace_equals_sklearn(loader, method):
    X, y, _ = _data(loader)
    ours = LDA(method=method).fit(X, y)
    sk = LinearDiscriminantAnalysis(solver="eigen").fit(X, y)
    assert ours.components_.shape == (2, X.shape[1])
    tol = 1e-8 if method == "eigen" else 1e-3
    assert principal_angles(ours.components_.T, sk.scalings_[:, :2]).max() < tol
    # sklearn divides S_b and S_w by n: same eigenvalues; its explained variance ratio
    # is the normalised spectrum
    np.testing.assert_allclose(ours.eigenvalues_ / ours.eigenvalues_.sum(),
                               sk.explained_variance_ratio_, rtol=1e-5)
    # 1-D directions agree up to sign and scale
    for k in range(2):
        cos = abs(ours.components_[k] @ sk.scalings_[:, k]) / (
            np.linalg.norm(ours.components_[k]) * np.linalg.norm(sk.scalings_[:, k]))
        assert cos == pytest.approx(1.0, abs=1e-6)


def test_pca_matches_sklearn():
    X, _, _ = _data(load_wine, standardize=True)
    for method in ("eigen", "sdp"):
        ours = PCA(n_components=3, method=method).fit(X)
        sk = SkPCA(n_components=3).fit(X)
        np.testing.assert_allclose(ours.explained_variance_, sk.explained_variance_, rtol=1e-5)
        assert principal_angles(ours.components_.T, sk.components_.T).max() < 1e-3
        # centred transform: same coordinates up to the sign of each axis
        np.testing.assert_allclose(np.abs(ours.transform(X)), np.abs(sk.transform(X)),
                                   atol=1e-3 * np.abs(sk.transform(X)).max())


def test_sda_without_graph_term_equals_lda_subspace():
    # S_t = S_b + S_w, so S_b a = lambda S_t a and S_b a = lambda' S_w a share eigenvectors
    # (lambda = lambda' / (1 + lambda')): SDA with alpha = 0 is LDA.
    X, y, _ = _data(load_wine, standardize=True)
    sda = SDA(alpha=0.0).fit(X, y)
    lda = LDA().fit(X, y)
    assert principal_angles(sda.components_.T, lda.components_.T).max() < 1e-8
    lam = lda.eigenvalues_
    np.testing.assert_allclose(sda.eigenvalues_, lam / (1 + lam), rtol=1e-8)


# ------------------------------------------------------- closed form vs SDP
def _agree(eig, sdp):
    assert sdp.objective_ == pytest.approx(eig.objective_, rel=1e-5)
    assert principal_angles(eig.components_.T, sdp.components_.T).max() < 1e-3
    assert sdp.rank_gap_ < 1e-5
    assert sdp.solve_report_.objective is not None
    assert not hasattr(eig, "solve_report_")


CASES = [
    (LDA, {}, False), (LDA, {"criterion": "trace_ratio"}, True),
    (SDA, {"n_components": 2}, False), (LPP, {"n_components": 2}, False),
    (PCA, {"n_components": 2}, False),
]


@pytest.mark.parametrize("loader", [load_iris, load_wine])
@pytest.mark.parametrize("cls,params,standardize", CASES)
def test_eigen_and_sdp_agree(loader, cls, params, standardize):
    # the trace ratio is not invariant to feature units: standardized data (see
    # sdpembed.relaxations.precondition)
    X, y, ys = _data(loader, standardize=standardize, frac_labeled=0.5)
    eig = cls(**params).fit(X, ys)
    sdp = cls(method="sdp", **params).fit(X, ys)
    _agree(eig, sdp)
    assert sdp.formulation_.meta["method"] == cls.__name__.lower()


def test_trace_ratio_lda_beats_ratio_trace_on_its_own_criterion():
    X, y, _ = _data(load_wine, standardize=True)
    tr = LDA(criterion="trace_ratio").fit(X, y)
    rt = LDA().fit(X, y)
    from sdpembed.scatter.discriminant import between_class_scatter, within_class_scatter

    Sb, Sw = between_class_scatter(X, y, 3), within_class_scatter(X, y, 3)
    Q = np.linalg.qr(rt.components_.T)[0]
    ratio_rt = np.trace(Q.T @ Sb @ Q) / np.trace(Q.T @ Sw @ Q)
    assert tr.objective_ >= ratio_rt - 1e-10
    P = tr.components_.T
    np.testing.assert_allclose(P.T @ P, np.eye(2), atol=1e-10)  # orthonormal columns
    assert np.trace(P.T @ Sb @ P) / np.trace(P.T @ Sw @ P) == pytest.approx(tr.objective_)


def test_lpp_solution_is_b_orthonormal_and_minimises_locality():
    # LPP works on the centred data (the paper's PCA step centres them)
    X, _, _ = _data(load_iris)
    est = LPP(n_components=2).fit(X)
    Xc = X - X.mean(axis=0)
    L, deg = graph_laplacian(knn_affinity(Xc, 5))
    F = est.components_.T
    np.testing.assert_allclose(F.T @ (Xc.T * deg) @ Xc @ F, np.eye(2), atol=1e-8)
    np.testing.assert_allclose(np.diag(F.T @ Xc.T @ (L @ Xc) @ F), est.eigenvalues_, rtol=1e-8)
    assert est.objective_ == pytest.approx(est.eigenvalues_.sum())
    np.testing.assert_allclose(est.transform(X), Xc @ F, atol=1e-10)
    np.testing.assert_allclose(est.mean_, X.mean(axis=0))


def test_sda_uses_unlabeled_points_through_the_graph():
    X, y, ys = _data(load_wine, standardize=True, frac_labeled=0.2)
    full = SDA(n_components=2).fit(X, ys)
    labeled_only = SDA(n_components=2).fit(X[ys >= 0], ys[ys >= 0])
    assert principal_angles(full.components_.T, labeled_only.components_.T).max() > 1e-3


# ------------------------------------------------------------- bad input
@pytest.mark.parametrize("cls", [LDA, SDA])
def test_bad_labels_raise(cls):
    X, y, _ = _data(load_iris)
    with pytest.raises(LabelError, match="LabelEncoder"):
        cls().fit(X, np.array(["setosa", "versicolor", "virginica"])[y])
    with pytest.raises(LabelError, match="at least 2 classes"):
        cls().fit(X, np.where(y == 0, 0, -1))
    y1 = y.copy()
    y1[y == 2] = -1
    y1[-1] = 2
    with pytest.raises(LabelError, match=r"class\(es\) \[2\] have \[1\]"):
        cls().fit(X, y1)
    with pytest.raises(InputError, match="n_components=3 is too large.*n_classes - 1 = 2"):
        cls(n_components=3).fit(X, y)


def test_numeric_string_labels_are_encoded():
    y_int, classes, labeled = check_partial_labels(np.array(["3", "5", "-1", "3", "5"]), 5)
    np.testing.assert_array_equal(y_int, [0, 1, -1, 0, 1])
    np.testing.assert_array_equal(classes, [3, 5])
    np.testing.assert_array_equal(labeled, [True, True, False, True, True])
    S = label_indicator(y_int, 2)
    np.testing.assert_array_equal(S.sum(axis=1), labeled)
    y_int, classes, _ = check_partial_labels(np.array(["a", "b", "a", "b"]), 4,
                                             allow_strings=True)
    np.testing.assert_array_equal(classes, ["a", "b"])
    with pytest.raises(LabelError, match="4 entries but X has 5"):
        check_partial_labels(np.zeros(4), 5)


def test_more_features_than_samples_matches_sklearn_and_regularization_still_works():
    # S_w is singular (rank n - c = 17 < 30): the rank-revealing step restricts to its range
    # and drops the one direction of infinite Fisher ratio with a warning, as scikit-learn's
    # svd solver does (same subspace to rounding); an explicit ridge keeps it.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 30))
    y = np.repeat([0, 1], 10)
    with pytest.warns(RankDeficiencyWarning, match="1 direction"):
        est = LDA().fit(X, y)
    sk = LinearDiscriminantAnalysis().fit(X, y)
    assert principal_angles(est.components_.T, sk.scalings_[:, :1]).max() < 1e-8
    reg = LDA(regularization=1e-3).fit(X, y)
    assert reg.components_.shape == (1, 30) and reg.pencil_rank_ == 19  # ker S_t removed
    Sw = within_class_scatter(X, y, 2)
    r = 1e-3 * np.trace(reg.pencil_basis_.T @ Sw @ reg.pencil_basis_) / 19
    w = scipy.linalg.eigh(between_class_scatter(X, y, 2), Sw + r * np.eye(30),
                          eigvals_only=True)
    assert reg.eigenvalues_[0] == pytest.approx(w[-1], rel=1e-8)


def test_sdp_too_large_for_interior_point():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 160))
    with pytest.raises(ProblemTooLargeError, match="PCA"):
        PCA(n_components=2, method="sdp", solver="CLARABEL").fit(X)
    # the default, solver="auto", leaves a 160 x 160 PSD cone to SCS and says why
    est = PCA(n_components=2, method="sdp").fit(X)
    assert est.solve_report_.solver == "SCS"
    assert "160 x 160 PSD cone" in est.solve_report_.selection


def test_bad_parameters_raise_scikit_learn_errors():
    # declarative checks (_parameter_constraints): the toolkit's ParameterError, which is also
    # scikit-learn's InvalidParameterError (a ValueError)
    X, y, _ = _data(load_iris)
    for est, name in [(LDA(method="magic"), "method"), (LDA(criterion="fisher"), "criterion"),
                      (LDA(regularization=-1.0), "regularization"), (LDA(rank_tol=1.0), "rank_tol"),
                      (SDA(weights="cosine"), "weights"), (LPP(sigma=0.0), "sigma"),
                      (PCA(n_components=0), "n_components")]:
        with pytest.raises(ParameterError, match=f"'{name}' parameter"):
            est.fit(X, y)
    assert issubclass(ParameterError, InvalidParameterError)
    assert issubclass(ParameterError, InputError) and issubclass(ParameterError, ValueError)


@parametrize_with_checks([LDA(), SDA(n_components=1), LPP(n_components=2), PCA(n_components=2),
                          LDA(method="sdp")])
def test_sklearn_api(estimator, check):
    check(estimator)


# --------------------------------------------------------------- solver="auto"
def _eigen_estimators():
    from sdpembed.estimators.discriminative import DiscriminativeProjections
    from sdpembed.estimators.dne import DNE
    from sdpembed.estimators.tca import OTCA, TCA

    return [LDA, LPP, SDA, PCA, DiscriminativeProjections, DNE, TCA, OTCA]


@pytest.mark.parametrize("cls", _eigen_estimators(), ids=lambda c: c.__name__)
def test_eigen_estimators_solve_their_sdp_with_auto_by_default(cls):
    # the default backend is solve()'s choice; on these small relaxations an
    # interior-point one, and the report says so
    import inspect

    assert inspect.signature(cls).parameters["solver"].default == "auto"
    X, y, ys = _data(load_iris, standardize=True, frac_labeled=0.5)
    est = cls(method="sdp").fit(X, ys)
    report = est.solve_report_
    assert report.selection and "interior-point" in report.selection
    assert report.solver == "CLARABEL"


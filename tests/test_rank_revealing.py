"""Eigen estimators on real data: the rank-revealing step and the collapse check.

What is compared and with what tolerance:

* :func:`reduce_pencil` against QZ (``scipy.linalg.eigvals(A, B)``), which
  returns the finite generalized eigenvalues of a singular pencil and marks the
  others ``inf`` / ``nan``: 1e-8 relative (QZ's accuracy on these small,
  well-separated pencils);
* collinear or constant features against the same data without them: the
  training embeddings span the same subspace of R^n (principal angles below
  1e-8 rad, rounding of two eigensolves), because the methods depend on the
  data only through their column span;
* ``method="eigen"`` against ``method="sdp"`` after the step: optimum 1e-5
  relative and largest principal angle 1e-3 rad (Clarabel's default
  tolerances, as in the other eigen tests);
* LDA on ``load_digits`` against scikit-learn's ``LinearDiscriminantAnalysis``
  (svd solver, which restricts to the range of the within-class scatter with
  the same threshold): nested subspaces to 1e-8 rad, explained-variance
  ratios to 1e-8, identical 1-NN accuracy;
* every estimator on ``load_digits``: no error, no degeneracy warning,
  standardised spread of each direction above 0.1 (measured 0.5-1.1) and a
  1-NN accuracy on the unlabelled half above 0.5 (chance is 0.1; measured
  0.67-0.99), i.e. a working embedding rather than ~1e-16 coordinates.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest
import scipy.linalg as sla
from sklearn.datasets import load_digits, load_iris, load_wine
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

from sdpembed import relaxations as rlx
from sdpembed.estimators import DNE, LDA, LPP, OTCA, PCA, SDA, TCA, DiscriminativeProjections
from sdpembed.estimators._projection import COLLAPSE_TOL, check_collapse, component_spread
from sdpembed.exceptions import (
    DegenerateEmbeddingError,
    DegenerateEmbeddingWarning,
    InputError,
    RankDeficiencyWarning,
    SingularMatrixError,
)
from sdpembed.relaxations import Pencil, principal_angles, reduce_pencil


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    ys = y.copy()
    ys[np.random.default_rng(0).random(y.size) < 0.5] = -1
    return X, y, ys


@contextlib.contextmanager
def _strict():
    """Turn the toolkit's degeneracy warnings into errors inside a ``with`` block."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateEmbeddingWarning)
        warnings.simplefilter("error", RankDeficiencyWarning)
        yield


# ----------------------------------------------------------------- reduce_pencil
def _singular_data_pencil(seed=0, n=12, p=7, rank=4):
    """A, B = X'MX, X'NX with X of rank ``rank`` < p (common null space of dim p - rank)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, p))
    G, H = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    return X.T @ (G @ G.T) @ X, X.T @ (H @ H.T / n + np.eye(n)) @ X, X


def test_full_rank_pencil_is_returned_unchanged():
    rng = np.random.default_rng(1)
    G = rng.standard_normal((5, 5))
    A, B = G + G.T, G @ G.T + np.eye(5)
    red = reduce_pencil(Pencil(A, B, "min", "ratio_trace"))
    assert red.is_identity and red.n_null == 0 and red.n_infinite == 0
    np.testing.assert_array_equal(red.basis, np.eye(5))
    np.testing.assert_array_equal(red.pencil.A, 0.5 * (A + A.T))


@pytest.mark.parametrize("sense", ["min", "max"])
def test_common_null_space_removal_keeps_the_finite_eigenvalues(sense):
    A, B, X = _singular_data_pencil()
    red = reduce_pencil(Pencil(A, B, sense, "ratio_trace"))
    assert (red.rank, red.n_null, red.n_infinite) == (4, 3, 0)
    np.testing.assert_allclose(red.pencil.B, np.eye(4), atol=1e-10)  # whitening basis
    # reference: the pencil restricted to the row space of X, from an independent SVD (QZ
    # gives arbitrary finite values on 0/0 directions, so it cannot serve here)
    Vx = np.linalg.svd(X)[2][:4].T
    w_ref = sla.eigvalsh(Vx.T @ A @ Vx, Vx.T @ B @ Vx)
    np.testing.assert_allclose(sla.eigvalsh(red.pencil.A, red.pencil.B), w_ref, rtol=1e-8)
    # the null directions are those with X v = 0: the basis spans a complement
    assert np.linalg.matrix_rank(X @ red.basis) == 4


def test_min_sense_eliminates_ker_B_by_the_schur_complement():
    rng = np.random.default_rng(2)
    G = rng.standard_normal((8, 8))
    A = G @ G.T + 0.5 * np.eye(8)  # positive definite
    F = rng.standard_normal((8, 5))
    B = F @ F.T  # rank 5: three eigenvalues +inf
    red = reduce_pencil(Pencil(A, B, "min", "ratio_trace"))
    assert (red.rank, red.n_null, red.n_infinite) == (5, 0, 3)
    w, Q = sla.eigh(red.pencil.A, red.pencil.B)
    w_qz = sla.eigvals(A, B)
    assert np.sum(~np.isfinite(w_qz)) == 3
    np.testing.assert_allclose(w, np.sort(w_qz[np.isfinite(w_qz)].real), rtol=1e-8)
    V = red.basis @ Q  # exact eigenvectors of the singular pencil
    np.testing.assert_allclose(A @ V, B @ V * w, atol=1e-8 * np.abs(A).max() * np.abs(V).max())


def test_max_sense_restricts_to_range_of_B_and_counts_the_infinite_directions():
    rng = np.random.default_rng(3)
    F = rng.standard_normal((8, 5))
    G = rng.standard_normal((8, 3))
    red = reduce_pencil(Pencil(G @ G.T, F @ F.T, "max", "ratio_trace"))
    assert (red.rank, red.n_null, red.n_infinite) == (5, 0, 3)
    np.testing.assert_allclose(red.pencil.B, np.eye(5), atol=1e-10)
    # with a regularization only the common null space (here none) would go
    assert reduce_pencil(Pencil(G @ G.T, F @ F.T, "max", "ratio_trace"),
                         regularized=True).is_identity


def test_rank_decision_is_invariant_to_feature_units():
    # features in units 1e-4 .. 1e4: the unscaled eigenvalue ratio of B is below 1e-16, yet the
    # rank is decided on the unit-diagonal scaling and the projections X P do not change
    A, B, X = _singular_data_pencil(seed=4, n=15, p=6, rank=5)
    D = np.diag(10.0 ** np.linspace(-4, 4, 6))
    red = reduce_pencil(Pencil(A, B, "min", "ratio_trace"))
    red_s = reduce_pencil(Pencil(D @ A @ D, D @ B @ D, "min", "ratio_trace"))
    assert red.rank == red_s.rank == 5
    _, Q = sla.eigh(red.pencil.A, red.pencil.B)
    _, Qs = sla.eigh(red_s.pencil.A, red_s.pencil.B)
    Z, Zs = X @ red.basis @ Q, (X @ D) @ red_s.basis @ Qs  # the scaled data are X D
    assert principal_angles(Z[:, :2], Zs[:, :2]).max() < 1e-6


def test_trace_kind_keeps_every_nonzero_eigenvector():
    rng = np.random.default_rng(5)
    Q = np.linalg.qr(rng.standard_normal((6, 6)))[0]
    A = (Q * np.array([-3.0, -1.0, 0.0, 0.0, 2.0, 5.0])) @ Q.T  # indefinite, 2 null directions
    red = reduce_pencil(Pencil(A, None, "min", "trace"))
    assert (red.rank, red.n_null) == (4, 2)
    np.testing.assert_allclose(red.basis.T @ red.basis, np.eye(4), atol=1e-12)
    np.testing.assert_allclose(np.linalg.eigvalsh(red.pencil.A), [-3, -1, 2, 5], atol=1e-12)


def test_numerical_range_zero_coordinates_and_errors():
    M = np.diag([4.0, 0.0, 1e-30, 9.0])
    nr = rlx.numerical_range(M)
    assert nr.rank == 2
    np.testing.assert_array_equal(nr.coords, [0, 3])
    N = nr.null_basis()
    np.testing.assert_allclose(np.abs(N.T @ np.eye(4)[:, [1, 2]]).sum(axis=0), [1, 1])
    np.testing.assert_allclose(nr.whitening_basis().T @ M @ nr.whitening_basis(), np.eye(2))
    with pytest.raises(SingularMatrixError, match="no informative direction"):
        reduce_pencil(Pencil(np.zeros((3, 3)), np.zeros((3, 3)), "min", "ratio_trace"))
    with pytest.raises(InputError, match="rank_tol"):
        rlx.numerical_range(M, rank_tol=1.5)
    # A indefinite on ker B: min tr(P'AP) over P'BP = I is unbounded below
    with pytest.raises(SingularMatrixError, match="unbounded"):
        reduce_pencil(Pencil(np.diag([1.0, -1.0]), np.diag([1.0, 0.0]), "min", "ratio_trace"))


def test_formulate_reduced_maps_back_to_the_closed_form():
    A, B, _ = _singular_data_pencil(seed=6)
    pencil = Pencil(A, B, "min", "ratio_trace")
    with pytest.raises(SingularMatrixError):
        rlx.formulate(pencil, 2)
    form = rlx.formulate_reduced(pencil, 2)
    from sdpembed.solvers import solve

    report = solve(form, solver="CLARABEL")
    T = form.meta["reduction_basis"]
    red = reduce_pencil(pencil)
    w, Q = sla.eigh(red.pencil.A, red.pencil.B, subset_by_index=[0, 1])
    assert report.objective == pytest.approx(w.sum(), rel=1e-5)
    P = T @ rlx.recover_basis(form.value("Z"), 2, B=form.meta["B"])
    assert principal_angles(P, T @ Q).max() < 1e-3
    with pytest.raises(InputError, match="informative"):
        rlx.formulate_reduced(pencil, 5)


# ------------------------------------------------------------------- digits
DIGITS_ESTIMATORS = [LDA(), LDA(criterion="trace_ratio"), SDA(), LPP(n_components=9),
                     DiscriminativeProjections(n_components=9), DNE(), TCA(n_components=9),
                     OTCA(), PCA(n_components=9), LDA(regularization=1e-6),
                     LPP(n_components=9, regularization=1e-6),
                     DiscriminativeProjections(n_components=9, regularization=1e-6)]


@pytest.mark.parametrize("est", DIGITS_ESTIMATORS, ids=repr)
def test_every_eigen_estimator_works_on_digits(est, digits):
    # 3 constant pixels, near-singular scatter: these raised SingularMatrixError, and with
    # the suggested regularization LPP / DiscriminativeProjections returned ~1e-19 embeddings
    X, y, ys = digits
    with _strict():
        Z = est.fit(X, ys).transform(X)
    assert np.all(np.isfinite(Z))
    assert component_spread(X, est.components_).min() > 0.1
    lab = ys >= 0
    acc = KNeighborsClassifier(1).fit(Z[lab], y[lab]).score(Z[~lab], y[~lab])
    assert acc > 0.5
    if hasattr(est, "pencil_rank_") and not isinstance(est, TCA):  # TCA: its PCA step did
        assert est.pencil_rank_ < est.pencil_basis_.shape[0]  # the step removed something


def test_lda_on_digits_equals_scikit_learn(digits):
    X, y, _ = digits
    ours = LDA().fit(X, y)
    sk = LinearDiscriminantAnalysis().fit(X, y)  # svd solver; its eigen solver fails here
    for k in range(1, 10):
        assert principal_angles(ours.components_[:k].T, sk.scalings_[:, :k]).max() < 1e-8
    np.testing.assert_allclose(ours.eigenvalues_ / ours.eigenvalues_.sum(),
                               sk.explained_variance_ratio_, rtol=1e-8)
    Zo, Zs = ours.transform(X), sk.transform(X)
    for k in range(9):  # same coordinates up to sign, a common scale and a shift
        assert abs(np.corrcoef(Zo[:, k], Zs[:, k])[0, 1]) > 1 - 1e-10
    ratio = Zo.std(axis=0) / Zs.std(axis=0)
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-8)
    train = np.arange(y.size) % 3 != 0
    acc = [KNeighborsClassifier(1).fit(Z[train], y[train]).score(Z[~train], y[~train])
           for Z in (Zo, Zs)]
    assert acc[0] == acc[1]


# --------------------------------------------------- collinear and constant features
def _augmented(X, constant=True):
    """Collinear features that keep every distance, and (last) a constant 5.

    ``[X, 0, 0, 0] Q`` for a random orthogonal Q: 7 features of rank 4, each a linear
    combination of the original ones, with the same pairwise distances (so the same
    neighbourhood graphs).
    """
    Q = np.linalg.qr(np.random.default_rng(7).standard_normal((X.shape[1] + 3,) * 2))[0]
    Xa = np.c_[X, np.zeros((len(X), 3))] @ Q
    return np.c_[Xa, np.full(len(X), 5.0)] if constant else Xa


RATIO_TRACE = [LDA(), SDA(), LPP(), TCA(n_components=2)]


def _wine():
    """Standardised wine: no duplicate points or tied distances (iris has both, and round-off
    in the augmented data would break its k-NN ties differently)."""
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.mark.parametrize("est", RATIO_TRACE, ids=repr)
def test_collinear_and_constant_features_give_the_same_embedding(est):
    X, y = _wine()
    ys = np.where(np.random.default_rng(0).random(y.size) < 0.5, y, -1)
    Xa = _augmented(X)
    with _strict():
        Z = est.fit(X, ys).transform(X)
        Za = est.fit(Xa, ys).transform(Xa)
    assert est.pencil_rank_ < Xa.shape[1]
    assert principal_angles(Z - Z.mean(axis=0), Za - Za.mean(axis=0)).max() < 1e-8


def test_discriminative_projections_ignore_collinear_features():
    # no constant nonzero column: it would add a bias term to the instance map f'x
    X, y = _wine()
    Xa = _augmented(X, constant=False)
    est = DiscriminativeProjections(n_components=2)
    Z, Za = est.fit(X, y).transform(X), est.fit(Xa, y).transform(Xa)
    assert est.pencil_rank_ == X.shape[1] + 3  # f restricted to the row space of X, g free
    assert principal_angles(Z, Za).max() < 1e-8


@pytest.mark.parametrize("cls", [DNE, PCA])
def test_trace_methods_ignore_constant_features(cls):
    X, y = load_iris(return_X_y=True)
    Xa = np.c_[X, np.zeros(len(X)), np.full(len(X), 3.0)]
    est = cls(n_components=2)
    Z = est.fit(X, y).transform(X)
    Za = est.fit(Xa, y).transform(Xa)
    assert est.pencil_rank_ == 4
    np.testing.assert_allclose(np.abs(est.components_[:, 4:]), 0, atol=1e-12)
    assert principal_angles(Z - Z.mean(0), Za - Za.mean(0)).max() < 1e-8


@pytest.mark.parametrize("est", [LDA(), LDA(criterion="trace_ratio"), SDA(), LPP(), PCA(),
                                 DNE(n_components=2), TCA(), OTCA(),
                                 DiscriminativeProjections()], ids=repr)
def test_more_features_than_samples(est):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 50))
    y = np.repeat([0, 1, 2], 10)
    X[y == 1, :5] += 2.0
    X[y == 2, 5:10] += 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateEmbeddingWarning)
        warnings.simplefilter("ignore", RankDeficiencyWarning)  # LDA: infinite ratios
        Z = est.fit(X, y).transform(X)
    assert Z.shape[0] == 30 and np.all(np.isfinite(Z))
    assert component_spread(X, est.components_).min() > 0.1
    if hasattr(est, "pencil_rank_"):
        assert est.pencil_rank_ <= 29 + (3 if isinstance(est, DiscriminativeProjections) else 0)


def test_lda_warns_when_infinite_ratio_directions_are_excluded():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 50))
    y = np.repeat([0, 1, 2], 10)
    with pytest.warns(RankDeficiencyWarning, match="2 direction"):
        LDA().fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankDeficiencyWarning)
        LDA(regularization=1e-2).fit(X, y)  # the ridge keeps them: no warning


# --------------------------------------------------------------- eigen vs sdp
SDP_CASES = [(LDA, {}), (LDA, {"criterion": "trace_ratio"}), (SDA, {"n_components": 2}),
             (LPP, {"n_components": 2}), (DiscriminativeProjections, {"n_components": 2}),
             (PCA, {"n_components": 2}), (DNE, {"n_components": 2}),
             (TCA, {"n_components": 2, "pca": False})]


@pytest.mark.parametrize("cls,params", SDP_CASES, ids=lambda v: getattr(v, "__name__", str(v)))
def test_eigen_and_sdp_agree_after_the_rank_revealing_step(cls, params):
    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)  # the trace ratio is not unit invariant
    ys = np.where(np.random.default_rng(1).random(y.size) < 0.5, y, -1)
    Xa = _augmented(X, constant=cls is not DiscriminativeProjections)
    eig = cls(**params).fit(Xa, ys)
    sdp = cls(method="sdp", **params).fit(Xa, ys)
    assert eig.pencil_rank_ == sdp.pencil_rank_ < eig.pencil_basis_.shape[0]
    assert sdp.objective_ == pytest.approx(eig.objective_, rel=1e-5)
    assert principal_angles(eig.components_.T, sdp.components_.T).max() < 1e-3
    assert sdp.rank_gap_ < 1e-5
    assert sdp.formulation_.meta["reduction_basis"].shape == eig.pencil_basis_.shape


# ----------------------------------------------------------------- collapse
def test_collapse_check_raises_or_warns():
    X, _ = load_iris(return_X_y=True)
    Xa = np.c_[X, np.zeros(len(X))]
    null = np.eye(5)[4]  # the zero feature: every point maps to 0
    good = np.r_[1.0, 0, 0, 0, 0]
    with pytest.raises(DegenerateEmbeddingError, match="every learned direction"):
        check_collapse(Xa, null[None, :], "demo")
    with pytest.warns(DegenerateEmbeddingWarning, match=r"direction\(s\) \[1\]"):
        spread = check_collapse(Xa, np.vstack([good, null, good]), "demo")
    assert spread[1] <= COLLAPSE_TOL < spread[0]
    # a solution vector whose instance map holds a round-off share collapses
    with pytest.warns(DegenerateEmbeddingWarning, match="share of the instance map"):
        check_collapse(X, np.eye(4)[:2], "demo", share=np.array([0.3, 1e-30]))
    # scale invariant: a direction along a feature in tiny units is not a collapse
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateEmbeddingWarning)
        check_collapse(X * np.array([1.0, 1e-9, 1.0, 1.0]), np.eye(4)[[0, 1]], "demo")


@pytest.mark.slow
@pytest.mark.parametrize("cls,params", [(LDA, {}), (LPP, {"n_components": 9})],
                         ids=["LDA", "LPP"])
def test_eigen_and_sdp_agree_on_digits(cls, params, digits):
    # a 61 x 61 SDP after the step (64 pixels, 3 constant)
    X, y, _ = digits
    eig = cls(**params).fit(X, y)
    sdp = cls(method="sdp", **params).fit(X, y)
    assert eig.pencil_rank_ == sdp.pencil_rank_ == 61
    assert sdp.objective_ == pytest.approx(eig.objective_, rel=1e-5)
    assert principal_angles(eig.components_.T, sdp.components_.T).max() < 1e-3

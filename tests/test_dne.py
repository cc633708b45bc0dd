"""Discriminant Neighborhood Embedding: operators, energy rule, eigen vs SDP, errors, API."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris, load_wine
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sdpembed.estimators.dne import DNE
from sdpembed.exceptions import InputError, LabelError
from sdpembed.formulations.dne import dne_formulation
from sdpembed.relaxations import principal_angles, recover_basis
from sdpembed.scatter.dne import discriminant_adjacency, dne_matrix, energy_dimension
from sdpembed.solvers import solve


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def wine_small():
    """Wine, standardised and reduced to 6 principal components (keeps the SDP small)."""
    X, y = load_wine(return_X_y=True)
    return PCA(n_components=6).fit_transform(StandardScaler().fit_transform(X)), y


def _naive_adjacency(X, y, k):
    """Eq. (1) written out with explicit loops over points (reference implementation)."""
    n = len(y)
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    F = np.zeros((n, n))
    for i in range(n):
        same = [j for j in range(n) if y[j] == y[i] and j != i]
        other = [j for j in range(n) if y[j] != y[i]]
        for j in sorted(same, key=lambda j: D[i, j])[:k]:
            F[i, j] = F[j, i] = 1
        for j in sorted(other, key=lambda j: D[i, j])[:k]:
            F[i, j] = F[j, i] = -1
    return F


@pytest.mark.parametrize("k", [1, 3])
def test_adjacency_matches_eq1(k):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))  # continuous data: no distance ties
    y = rng.integers(0, 3, size=40)
    F = discriminant_adjacency(X, y, n_neighbors=k)
    assert sp.issparse(F)
    np.testing.assert_array_equal(F.toarray(), _naive_adjacency(X, y, k))


def test_criterion_identity_eq6():
    """sum_ij ||P'x_i - P'x_j||^2 F_ij = 2 tr(P' X(S-F)X' P) for any P (eq. 6)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 5))
    y = rng.integers(0, 2, size=30)
    F = discriminant_adjacency(X, y, n_neighbors=2).toarray()
    P = rng.normal(size=(5, 2))
    Z = X @ P
    lhs = (((Z[:, None] - Z[None]) ** 2).sum(-1) * F).sum()
    rhs = 2 * np.trace(P.T @ dne_matrix(X, F) @ P)
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_unlabeled_points_get_no_edges():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 3))
    y = rng.integers(0, 2, size=30)
    y_semi = y.copy()
    y_semi[::3] = -1
    F = discriminant_adjacency(X, y_semi).toarray()
    assert not F[y_semi < 0].any() and not F[:, y_semi < 0].any()
    lab = y_semi >= 0
    np.testing.assert_array_equal(F[np.ix_(lab, lab)],
                                  discriminant_adjacency(X[lab], y[lab]).toarray())


@pytest.mark.parametrize("energy, expected", [(0.9, 2), (0.96, 3), (1.0, 3), (0.5, 1)])
def test_energy_dimension_eq14(energy, expected):
    # magnitudes 10, 1, 0.5 of 11.5: cumulative fractions 0.870, 0.957, 1.0
    assert energy_dimension([2.0, -0.5, -10.0, -1.0], energy) == expected


def test_energy_dimension_edge_cases():
    assert energy_dimension([0.1, 2.0], 0.96) == 0
    with pytest.raises(InputError):
        energy_dimension([-1.0], 0.0)


def test_dne_energy_rule_on_iris(iris):
    """The fitted dimension is the documented rule applied to an independently built spectrum."""
    X, y = iris
    lam = np.linalg.eigvalsh(dne_matrix(X, _naive_adjacency(X, y, 1)))
    neg = -lam[lam < 0]
    frac = np.cumsum(neg) / neg.sum()
    for energy in (0.5, 0.9, 0.96, 0.999):
        expected = int(np.argmax(frac >= energy)) + 1
        est = DNE(energy=energy).fit(X, y)
        assert est.n_components_ == expected
        np.testing.assert_allclose(est.eigenvalues_, lam, rtol=1e-10, atol=1e-9)
    # standardized iris: eigenvalues about -310, -30, -14, -3; 0.96 of the mass needs 3
    assert DNE().fit(X, y).n_components_ == 3
    assert DNE().fit(X, y).n_negative_ == 4


def test_dne_solution_is_ky_fan(iris):
    X, y = iris
    est = DNE(n_components=2).fit(X, y)
    P = est.components_.T
    np.testing.assert_allclose(P.T @ P, np.eye(2), atol=1e-12)
    assert est.objective_ == pytest.approx(est.eigenvalues_[:2].sum(), rel=1e-12)
    A = dne_matrix(X, est.adjacency_)
    assert np.trace(P.T @ A @ P) == pytest.approx(est.objective_, rel=1e-10)
    np.testing.assert_allclose(est.transform(X), X @ P)


@pytest.mark.parametrize("data, n_components", [("iris", None), ("iris", 2),
                                                ("wine_small", None), ("wine_small", 3)])
def test_eigen_and_sdp_paths_agree(data, n_components, request):
    X, y = request.getfixturevalue(data)
    eig = DNE(n_components=n_components).fit(X, y)
    sdp = DNE(n_components=n_components, method="sdp", solver="CLARABEL").fit(X, y)
    d = eig.n_components_
    assert sdp.n_components_ == d
    # Clarabel's default tolerances are 1e-8 (gap, feasibility): 1e-5 relative leaves margin
    assert sdp.objective_ == pytest.approx(eig.objective_, rel=1e-5)
    assert sdp.rank_gap_ < 1e-5
    lam = eig.eigenvalues_
    gap = (lam[d] - lam[d - 1]) / np.abs(lam).max() if d < len(lam) else np.inf
    if gap > 1e-3:  # subspace identified: angle error ~ solver error / eigengap
        assert principal_angles(eig.components_.T, sdp.components_.T).max() < 1e-3


def test_dne_formulation_builder(iris):
    X, y = iris
    form = dne_formulation(X, y, 2)
    assert form.meta["method"] == "dne" and "6" in form.meta["equations"]
    report = solve(form, solver="CLARABEL")
    lam = np.linalg.eigvalsh(form.meta["A"])
    assert report.objective == pytest.approx(lam[:2].sum(), rel=1e-6)
    P = recover_basis(form.value("Y"), 2)
    _, V = np.linalg.eigh(form.meta["A"])
    assert principal_angles(P, V[:, :2]).max() < 1e-3


# ----------------------------------------------------------------------- errors
def test_string_labels_raise(iris):
    X, y = iris
    with pytest.raises(LabelError):
        DNE().fit(X, np.array(["a", "b", "c"])[y])


def test_single_class_raises(iris):
    X, y = iris
    with pytest.raises(LabelError):
        DNE().fit(X, np.zeros_like(y))


def test_class_with_one_labeled_sample_raises(iris):
    X, y = iris
    y_semi = y.copy()
    y_semi[(y == 2)] = -1
    y_semi[np.flatnonzero(y == 2)[0]] = 2
    with pytest.raises(LabelError, match="at least 2"):
        DNE().fit(X, y_semi)


def test_too_many_components_raises(iris):
    X, y = iris
    with pytest.raises(InputError, match="n_components=5"):
        DNE(n_components=5).fit(X, y)


def test_too_many_neighbors_raises(iris):
    X, y = iris
    with pytest.raises(InputError, match="n_neighbors"):
        DNE(n_neighbors=50).fit(X, y)


def test_no_negative_eigenvalue_raises():
    # alternating labels on a line: same-class neighbours are always farther apart
    X = np.arange(20.0)[:, None]
    y = np.arange(20) % 2
    with pytest.raises(InputError, match="no negative eigenvalue"):
        DNE().fit(X, y)
    assert DNE(n_components=1).fit(X, y).component_eigenvalues_[0] > 0


# n_components is fixed: on the checks' random data the energy rule may find no negative
# eigenvalue, which raises by design (tested above)
@parametrize_with_checks([DNE(n_components=1), DNE(n_components=2, method="sdp")])
def test_sklearn_api(estimator, check):
    check(estimator)

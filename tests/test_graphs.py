import networkx as nx
import numpy as np
import pytest
from scipy.spatial.distance import cdist

from sdpembed.exceptions import DisconnectedGraphError, DuplicatePointsError, InputError
from sdpembed.graphs import NeighborhoodGraph, heat_kernel_weights, knn_graph


@pytest.fixture
def X():
    return np.random.default_rng(1).standard_normal((40, 5))


def test_knn_graph_contains_exact_neighbours_and_distances(X):
    g = knn_graph(X, n_neighbors=3, n_random=0)
    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)
    nearest = np.argsort(D, axis=1)[:, :3]
    edges = {tuple(e) for e in g.edges.tolist()}
    for i in range(X.shape[0]):
        for j in nearest[i]:
            assert (min(i, j), max(i, j)) in edges
    i, j = g.edges.T
    np.testing.assert_allclose(g.sqdist, ((X[i] - X[j]) ** 2).sum(1), rtol=1e-12)
    assert np.all(i < j) and len(edges) == g.n_edges


def test_random_partners_add_long_edges_deterministically(X):
    g0 = knn_graph(X, n_neighbors=2, n_random=0)
    g1 = knn_graph(X, n_neighbors=2, n_random=1, random_state=3)
    g2 = knn_graph(X, n_neighbors=2, n_random=1, random_state=3)
    assert g1.n_edges > g0.n_edges
    np.testing.assert_array_equal(g1.edges, g2.edges)
    # every node has at least n_neighbors + (own random partner, unless it coincides) edges
    degree = np.bincount(g1.edges.ravel(), minlength=X.shape[0])
    assert degree.min() >= 2


def test_precomputed_and_callable_metrics_match_euclidean(X):
    g = knn_graph(X, n_neighbors=2, n_random=1, random_state=0)
    gp = knn_graph(cdist(X, X), metric="precomputed", n_neighbors=2, n_random=1, random_state=0)
    gc = knn_graph(X, metric=lambda a, b: np.sqrt(((a - b) ** 2).sum()), n_neighbors=2,
                   n_random=1, random_state=0)
    for other in (gp, gc):
        np.testing.assert_array_equal(g.edges, other.edges)
        np.testing.assert_allclose(g.sqdist, other.sqdist, rtol=1e-10)


def test_duplicate_points_raise(X):
    X2 = np.r_[X, X[:1]]
    with pytest.raises(DuplicatePointsError, match="duplicate"):
        knn_graph(X2, n_neighbors=2)


def test_nan_and_bad_shapes_raise(X):
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(InputError, match="NaN"):
        knn_graph(Xn)
    with pytest.raises(InputError, match="2-D"):
        knn_graph(X[:, 0])
    with pytest.raises(InputError, match="square"):
        knn_graph(X, metric="precomputed")
    with pytest.raises(InputError, match="n_neighbors"):
        knn_graph(X[:3], n_neighbors=3)


def test_disconnected_graph_is_reported():
    rng = np.random.default_rng(0)
    X = np.r_[rng.standard_normal((10, 2)), 100 + rng.standard_normal((10, 2))]
    g = knn_graph(X, n_neighbors=2, n_random=0)
    assert not g.is_connected()
    with pytest.raises(DisconnectedGraphError, match="2 connected components"):
        g.check_connected()


def test_laplacian_matches_networkx(X):
    g = heat_kernel_weights(knn_graph(X, random_state=0), sigma=1.5)
    L = g.laplacian().toarray()
    Lnx = nx.laplacian_matrix(g.to_networkx(), nodelist=range(g.n_nodes), weight="weight")
    np.testing.assert_allclose(L, Lnx.toarray(), atol=1e-12)
    np.testing.assert_allclose(L.sum(axis=1), 0, atol=1e-12)
    np.testing.assert_allclose(g.weights, np.exp(-g.sqdist / (2 * 1.5**2)))


def test_networkx_round_trip(X):
    g = knn_graph(X, random_state=0)
    h = NeighborhoodGraph.from_networkx(g.to_networkx())
    order_g = np.lexsort(g.edges.T[::-1])
    order_h = np.lexsort(h.edges.T[::-1])
    np.testing.assert_array_equal(g.edges[order_g], h.edges[order_h])
    np.testing.assert_allclose(g.sqdist[order_g], h.sqdist[order_h])


def test_graph_validation():
    with pytest.raises(InputError, match="i < j"):
        NeighborhoodGraph(3, [[1, 0]], [1.0])
    with pytest.raises(InputError, match="duplicates"):
        NeighborhoodGraph(3, [[0, 1], [0, 1]], [1.0, 1.0])
    with pytest.raises(InputError, match="range"):
        NeighborhoodGraph(3, [[0, 3]], [1.0])
    with pytest.raises(InputError, match="non-negative"):
        NeighborhoodGraph(3, [[0, 1]], [-1.0])


@pytest.mark.parametrize("kwargs", [{"n_neighbors": 2.7}, {"n_neighbors": 2.0},
                                    {"n_random": 1.5}, {"n_neighbors": True}, {"n_random": "1"}])
def test_knn_graph_rejects_non_integer_counts_as_scikit_learn_does(kwargs):
    from sklearn.neighbors import NearestNeighbors

    X = np.random.default_rng(0).normal(size=(10, 2))
    name = next(iter(kwargs))
    with pytest.raises(InputError, match=f"{name} must be an integer >= 0; got"):
        knn_graph(X, **kwargs)  # was: 2.7 silently became 2
    if name == "n_neighbors" and not isinstance(kwargs[name], bool):
        with pytest.raises(ValueError, match="n_neighbors"):  # scikit-learn refuses it too
            NearestNeighbors(n_neighbors=kwargs[name]).fit(X)
    assert knn_graph(X, n_neighbors=np.int64(2), n_random=0).n_edges > 0  # numpy ints are fine

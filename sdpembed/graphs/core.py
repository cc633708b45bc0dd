"""The graph core: neighbourhood graphs with target distances.

A :class:`NeighborhoodGraph` is the topological prior of the Gram-matrix SDPs
(DVU, MVU): an undirected edge set :math:`\\mathcal{E}` over ``n_nodes``
points, with a squared target distance :math:`\\bar D_{ij}` per edge and
optional edge weights (for Laplacians). This module holds the graph type (its
Laplacian, connectivity checks and networkx round trip), the random long edges
of DVU (:func:`random_partners`), heat-kernel weights and the input checks
shared by every graph builder. It imports nothing else of the toolkit's graphs,
so that :mod:`sdpembed.tangent` builds its graphs on it and
:mod:`sdpembed.graphs.knn` (the builder :func:`~sdpembed.graphs.knn_graph`)
can dispatch to :mod:`sdpembed.tangent`: the imports run one way.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

import networkx as nx
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._checks import as_int
from .._typing import ArrayLike
from ..exceptions import DisconnectedGraphError, DuplicatePointsError, InputError

__all__ = ["NeighborhoodGraph", "check_data_matrix", "check_edge_counts", "random_partners",
           "heat_kernel_weights"]

logger = logging.getLogger(__name__)


def check_data_matrix(X: ArrayLike, *, name: str = "X", min_samples: int = 2) -> np.ndarray:
    """Return ``X`` as a finite 2-D float array or raise :class:`InputError`."""
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a numeric array: {exc}") from exc
    if X.ndim != 2:
        raise InputError(f"{name} must be 2-D (n_samples, n_features); got shape {X.shape}")
    if X.shape[0] < min_samples:
        raise InputError(f"{name} needs at least {min_samples} samples; got {X.shape[0]}")
    if not np.all(np.isfinite(X)):
        bad = np.argwhere(~np.isfinite(X))[:5].tolist()
        raise InputError(
            f"{name} contains NaN or infinite values (first at rows/cols {bad}); "
            "impute or drop them before building a graph"
        )
    return X


@dataclass(frozen=True, eq=False)
class NeighborhoodGraph:
    """Undirected graph over ``n_nodes`` points with squared target distances.

    Parameters
    ----------
    n_nodes : int
        Number of points.
    edges : ndarray of int, shape (m, 2)
        Edge list with ``edges[e, 0] < edges[e, 1]``, no duplicates.
    sqdist : ndarray of float, shape (m,)
        Squared target distance :math:`\\bar D_{ij}` of each edge.
    weights : ndarray of float, shape (m,), optional
        Non-negative edge weights, used by :meth:`laplacian`.
    """

    n_nodes: int
    edges: np.ndarray
    sqdist: np.ndarray
    weights: np.ndarray | None = None

    def __post_init__(self):
        n = int(self.n_nodes)
        edges = np.asarray(self.edges)
        if edges.size == 0:
            edges = edges.reshape(0, 2)
        if edges.ndim != 2 or edges.shape[1] != 2:
            raise InputError(f"edges must have shape (m, 2); got {edges.shape}")
        if not np.issubdtype(edges.dtype, np.integer):
            if not np.all(np.mod(edges, 1) == 0):
                raise InputError("edges must hold integer node indices")
        edges = edges.astype(np.int64)
        sqdist = np.asarray(self.sqdist, dtype=float).reshape(-1)
        if sqdist.shape != (edges.shape[0],):
            raise InputError(f"sqdist must have shape ({edges.shape[0]},); got {sqdist.shape}")
        if n < 1:
            raise InputError(f"n_nodes must be positive; got {n}")
        if edges.size and (edges.min() < 0 or edges.max() >= n):
            raise InputError(f"edge endpoints must lie in [0, {n}); got range "
                             f"[{edges.min()}, {edges.max()}]")
        if np.any(edges[:, 0] >= edges[:, 1]):
            raise InputError("each edge must satisfy i < j (no self-loops); "
                             "sort endpoints with np.sort(edges, axis=1)")
        keys = edges[:, 0] * n + edges[:, 1]
        if np.unique(keys).size != keys.size:
            raise InputError("edges contain duplicates; deduplicate them with "
                             "np.unique(edges, axis=0)")
        if not np.all(np.isfinite(sqdist)) or np.any(sqdist < 0):
            raise InputError("sqdist must be finite and non-negative")
        weights = self.weights
        if weights is not None:
            weights = np.asarray(weights, dtype=float).reshape(-1)
            if weights.shape != sqdist.shape:
                raise InputError(f"weights must have shape {sqdist.shape}; got {weights.shape}")
            if not np.all(np.isfinite(weights)) or np.any(weights < 0):
                raise InputError("weights must be finite and non-negative")
            weights.setflags(write=False)
        edges.setflags(write=False)
        sqdist.setflags(write=False)
        object.__setattr__(self, "n_nodes", n)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "sqdist", sqdist)
        object.__setattr__(self, "weights", weights)

    # ------------------------------------------------------------------ basics
    @property
    def n_edges(self) -> int:
        return int(self.edges.shape[0])

    def __repr__(self) -> str:
        return f"NeighborhoodGraph(n_nodes={self.n_nodes}, n_edges={self.n_edges})"

    def adjacency(self, weights: ArrayLike | None = None) -> sp.csr_matrix:
        """Symmetric sparse adjacency matrix :math:`W` (``weights`` or ones)."""
        w = self._weights(weights)
        i, j = self.edges.T
        W = sp.coo_matrix((np.r_[w, w], (np.r_[i, j], np.r_[j, i])),
                          shape=(self.n_nodes, self.n_nodes))
        return W.tocsr()

    def laplacian(self, weights: ArrayLike | None = None) -> sp.csr_matrix:
        """Sparse graph Laplacian :math:`L = D - W` with :math:`D = \\mathrm{diag}(W 1)`."""
        W = self.adjacency(weights)
        return (sp.diags(np.asarray(W.sum(axis=1)).ravel()) - W).tocsr()

    def _weights(self, weights) -> np.ndarray:
        if weights is None:
            weights = self.weights if self.weights is not None else np.ones(self.n_edges)
        weights = np.asarray(weights, dtype=float).reshape(-1)
        if weights.shape != (self.n_edges,):
            raise InputError(f"weights must have shape ({self.n_edges},); got {weights.shape}")
        return weights

    # ------------------------------------------------------------ connectivity
    def connected_components(self) -> tuple[int, np.ndarray]:
        """Number of connected components and the component label of each node."""
        return connected_components(self.adjacency(np.ones(self.n_edges)), directed=False)

    def is_connected(self) -> bool:
        return self.connected_components()[0] == 1

    def check_connected(self) -> NeighborhoodGraph:
        """Raise :class:`DisconnectedGraphError` unless the graph is connected."""
        k, labels = self.connected_components()
        if k > 1:
            sizes = np.sort(np.bincount(labels))[::-1]
            raise DisconnectedGraphError(
                f"the neighbourhood graph has {k} connected components (sizes "
                f"{sizes[:8].tolist()}{'...' if k > 8 else ''}); the Gram SDP is then unbounded "
                "(components can drift apart freely). Add random long edges (n_random >= 1) "
                "or more neighbours (n_neighbors)."
            )
        return self

    def check_distinct(self) -> NeighborhoodGraph:
        """Raise :class:`DuplicatePointsError` if an edge has zero target distance."""
        zero = np.flatnonzero(self.sqdist <= 0)
        if zero.size:
            pairs = self.edges[zero[:5]].tolist()
            raise DuplicatePointsError(
                f"{zero.size} edge(s) have zero target distance, e.g. node pairs {pairs}: "
                "these are duplicate points. Remove duplicates first "
                "(np.unique(X, axis=0, return_inverse=True)) and map labels back."
            )
        return self

    # ---------------------------------------------------------------- networkx
    def to_networkx(self) -> nx.Graph:
        """Undirected ``networkx.Graph`` with ``sqdist`` (and ``weight``) edge attributes."""
        g = nx.Graph()
        g.add_nodes_from(range(self.n_nodes))
        if self.weights is None:
            g.add_edges_from((int(i), int(j), {"sqdist": float(d)})
                             for (i, j), d in zip(self.edges, self.sqdist))
        else:
            g.add_edges_from((int(i), int(j), {"sqdist": float(d), "weight": float(w)})
                             for (i, j), d, w in zip(self.edges, self.sqdist, self.weights))
        return g

    @classmethod
    def from_networkx(cls, g: nx.Graph, sqdist: str = "sqdist",
                      weight: str | None = None) -> NeighborhoodGraph:
        """Build from a networkx graph whose nodes are ``0 .. n-1``.

        ``sqdist`` names the edge attribute holding squared target distances;
        ``weight`` optionally names an edge-weight attribute.
        """
        if g.is_directed():
            raise InputError("from_networkx needs an undirected graph; use g.to_undirected()")
        n = g.number_of_nodes()
        if set(g.nodes) != set(range(n)):
            raise InputError("graph nodes must be the integers 0..n-1; use "
                             "nx.convert_node_labels_to_integers(g)")
        rows, d, w = [], [], []
        for i, j, data in g.edges(data=True):
            if i == j:
                raise InputError(f"self-loop at node {i}; remove it")
            if sqdist not in data:
                raise InputError(f"edge ({i}, {j}) has no attribute {sqdist!r}")
            rows.append((min(i, j), max(i, j)))
            d.append(data[sqdist])
            if weight is not None:
                w.append(data.get(weight, 1.0))
        edges = np.array(rows, dtype=np.int64).reshape(-1, 2)
        return cls(n, edges, np.array(d, dtype=float), np.array(w) if weight is not None else None)

    def with_weights(self, weights: ArrayLike | None) -> NeighborhoodGraph:
        return dataclasses.replace(self, weights=np.asarray(weights, dtype=float))

    def union(self, other: NeighborhoodGraph) -> NeighborhoodGraph:
        """Union of two edge sets over the same nodes (distances of ``self`` win on overlap)."""
        if other.n_nodes != self.n_nodes:
            raise InputError("graphs must have the same number of nodes")
        return _from_pairs(self.n_nodes, np.r_[self.edges, other.edges],
                           np.r_[self.sqdist, other.sqdist])


def _from_pairs(n: int, pairs: np.ndarray, sqdist: np.ndarray) -> NeighborhoodGraph:
    """Sort endpoints, drop self-pairs and deduplicate (first occurrence wins)."""
    pairs = np.sort(np.asarray(pairs, dtype=np.int64), axis=1)
    keep = pairs[:, 0] != pairs[:, 1]
    pairs, sqdist = pairs[keep], np.asarray(sqdist, dtype=float)[keep]
    _, first = np.unique(pairs[:, 0] * n + pairs[:, 1], return_index=True)
    return NeighborhoodGraph(n, pairs[first], sqdist[first])


def check_edge_counts(n_neighbors: int, n_random: int) -> tuple[int, int]:
    """``(n_neighbors, n_random)`` as ints, or :class:`InputError`.

    Integers only, as scikit-learn's ``Interval(Integral, ...)``: 2.7 is not
    rounded to 2; at least one edge per point.
    """
    n_neighbors, n_random = as_int(n_neighbors, "n_neighbors", 0), as_int(n_random, "n_random", 0)
    if n_neighbors < 0 or n_random < 0 or n_neighbors + n_random == 0:
        raise InputError("need n_neighbors >= 0, n_random >= 0 and at least one edge per point")
    return n_neighbors, n_random


def random_partners(n: int, n_random: int, rng: np.random.RandomState) -> np.ndarray:
    """``n_random`` partners :math:`j \\ne i` for every node :math:`i`, uniformly at random.

    The long edges of DVU (Vernaza, Lee & Taskar, section 3.2.1), which keep a
    k-NN graph connected with high probability. Returns the ``(n * n_random, 2)``
    array of pairs ``(i, j)``, unsorted and possibly repeated; ``rng`` is a
    ``numpy.random.RandomState`` (``sklearn.utils.check_random_state``).
    """
    if n_random == 0:
        return np.empty((0, 2), dtype=np.int64)
    i = np.repeat(np.arange(n), n_random)
    j = rng.randint(0, n - 1, size=i.size)
    j = j + (j >= i)  # uniform over {0..n-1} \ {i}
    return np.c_[i, j]


def heat_kernel_weights(graph: NeighborhoodGraph, sigma: float | None = None) -> NeighborhoodGraph:
    """Return ``graph`` with heat-kernel weights.

    :math:`w_{ij} = \\exp(-\\bar D_{ij} / (2\\sigma^2))`.

    ``sigma=None`` uses the median edge length :math:`\\mathrm{median}_{ij} \\sqrt{\\bar D_{ij}}`.
    """
    if sigma is None:
        sigma = float(np.median(np.sqrt(graph.sqdist))) if graph.n_edges else 1.0
        if sigma <= 0:
            sigma = 1.0
    sigma = float(sigma)
    if not np.isfinite(sigma) or sigma <= 0:
        raise InputError(f"sigma must be positive; got {sigma}")
    return graph.with_weights(np.exp(-graph.sqdist / (2.0 * sigma**2)))

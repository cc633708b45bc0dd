"""The DVU graph builder: k nearest neighbours plus random long edges.

:func:`knn_graph` builds the DVU paper's graph (Vernaza, Lee & Taskar, section
3.2.1): each point is joined to its ``n_neighbors`` nearest neighbours plus
``n_random`` randomly chosen partners ("long edges"), which keeps the graph
connected with high probability; a disconnected graph makes the DVU objective
unbounded, so the builders check connectivity before any SDP is formed.

For ``metric="tangent"`` it hands over to
:func:`sdpembed.tangent.tangent_knn_graph`, which builds on the graph core
(:mod:`sdpembed.graphs.core`); the import is made at that call, so importing
the graph core never loads this module's dispatch target and the imports run
one way: ``graphs.core`` <- ``tangent`` <- ``graphs.knn``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
from sklearn.utils import check_random_state

from .._typing import ArrayLike, RandomStateLike
from ..exceptions import InputError
from .core import NeighborhoodGraph, check_data_matrix, check_edge_counts, random_partners

__all__ = ["knn_graph"]

logger = logging.getLogger(__name__)


def knn_graph(X: ArrayLike, n_neighbors: int = 2, n_random: int = 1,
              metric: str | Callable = "euclidean", random_state: RandomStateLike = None,
              **metric_params: object) -> NeighborhoodGraph:
    """k nearest neighbours plus random long edges, with squared target distances.

    Each point :math:`i` is joined to its ``n_neighbors`` nearest neighbours
    and to ``n_random`` partners drawn uniformly at random
    (:func:`~sdpembed.graphs.core.random_partners`); edges are made
    undirected and deduplicated. The target distance of edge :math:`(i, j)` is
    :math:`\\bar D_{ij} = d(x_i, x_j)^2`.

    Parameters
    ----------
    X : array-like, shape (n, p) or (n, n)
        Data, or a distance matrix when ``metric="precomputed"``.
    n_neighbors, n_random : int
        Nearest neighbours and random partners per point (DVU: 2 and 1).
    metric : str or callable
        Any scikit-learn metric name, ``"precomputed"``, a callable
        ``metric(a, b) -> float``, or ``"tangent"`` (images; forwards
        ``metric_params`` to :func:`sdpembed.tangent.tangent_knn_graph`).
    random_state : int, RandomState or None

    Raises
    ------
    InputError
        Bad data or parameters.
    DuplicatePointsError
        Two joined points coincide (zero target distance).
    """
    n_neighbors, n_random = check_edge_counts(n_neighbors, n_random)
    if isinstance(metric, str) and metric == "tangent":
        from ..tangent import tangent_knn_graph

        return tangent_knn_graph(X, n_neighbors=n_neighbors, n_random=n_random,
                                 random_state=random_state, **metric_params)
    rng = check_random_state(random_state)
    if isinstance(metric, str) and metric == "precomputed":
        D = _check_distance_matrix(X)
        n = D.shape[0]
        dist = lambda a, b: D[a, b]  # noqa: E731
        knn_pairs = _knn_from_matrix(D, n_neighbors)
    else:
        X = check_data_matrix(X)
        n = X.shape[0]
        if callable(metric):
            from sklearn.metrics import pairwise_distances

            D = pairwise_distances(X, metric=metric, **metric_params)
            D = _check_distance_matrix(D)
            dist = lambda a, b: D[a, b]  # noqa: E731
            knn_pairs = _knn_from_matrix(D, n_neighbors)
        else:
            from sklearn.metrics.pairwise import paired_distances
            from sklearn.neighbors import NearestNeighbors

            if n_neighbors >= n:
                raise InputError(f"n_neighbors={n_neighbors} must be below n_samples={n}")
            if n_neighbors:
                nn = NearestNeighbors(n_neighbors=n_neighbors, metric=metric, **metric_params)
                ind = nn.fit(X).kneighbors(return_distance=False)
                knn_pairs = np.c_[np.repeat(np.arange(n), n_neighbors), ind.ravel()]
            else:
                knn_pairs = np.empty((0, 2), dtype=np.int64)
            if metric == "euclidean":
                dist = lambda a, b: np.sqrt(((X[a] - X[b]) ** 2).sum(axis=1))  # noqa: E731
            else:
                dist = lambda a, b: paired_distances(X[a], X[b], metric=metric)  # noqa: E731
    if n_neighbors >= n:
        raise InputError(f"n_neighbors={n_neighbors} must be below n_samples={n}")
    pairs = np.r_[knn_pairs, random_partners(n, n_random, rng)]
    pairs = np.unique(np.sort(pairs, axis=1), axis=0)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    d = np.asarray(dist(pairs[:, 0], pairs[:, 1]), dtype=float)
    graph = NeighborhoodGraph(n, pairs, d**2)
    graph.check_distinct()
    logger.debug("knn_graph: %d nodes, %d edges", n, graph.n_edges)
    return graph


def _check_distance_matrix(D) -> np.ndarray:
    D = check_data_matrix(D, name="distance matrix")
    if D.shape[0] != D.shape[1]:
        raise InputError(f"a precomputed distance matrix must be square; got {D.shape}")
    if np.any(D < 0):
        raise InputError("distances must be non-negative")
    if not np.allclose(D, D.T, rtol=1e-8, atol=1e-10):
        raise InputError("a precomputed distance matrix must be symmetric")
    return D


def _knn_from_matrix(D: np.ndarray, k: int) -> np.ndarray:
    n = D.shape[0]
    if k == 0:
        return np.empty((0, 2), dtype=np.int64)
    if k >= n:
        raise InputError(f"n_neighbors={k} must be below n_samples={n}")
    Dm = D.copy()
    np.fill_diagonal(Dm, np.inf)
    ind = np.argpartition(Dm, k - 1, axis=1)[:, :k]
    return np.c_[np.repeat(np.arange(n), k), ind.ravel()]

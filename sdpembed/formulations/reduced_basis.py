"""Reduced bases :math:`G = Q Y Q^T` for large ``n`` (:func:`laplacian_basis`,
:func:`gram_basis`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .._arpack import eigsh
from .._checks import as_int
from .._typing import ArrayLike
from ..exceptions import InputError

if TYPE_CHECKING:  # annotations only: the graph layer is imported where it is used
    from ..graphs import NeighborhoodGraph
from .gram_problem import GramProblem, centering_basis


def laplacian_basis(graph_or_edges: NeighborhoodGraph | ArrayLike, n: int | None = None,
                    rank: int = 30, *, weights: ArrayLike | None = None) -> np.ndarray:
    """Reduced basis ``Q`` (n x rank), orthonormal, :math:`Q^T\\mathbf 1 = 0`.

    The bottom non-constant eigenvectors of a graph Laplacian (Weinberger,
    Sha, Zhu & Saul, "Graph Laplacian regularization for large-scale
    semidefinite programming", 2007): :math:`G = QYQ^T` restricts the
    embedding to functions that vary smoothly over the graph. Shift-invert
    Lanczos (sparse LU) for large graphs, dense ``eigh`` for small ones; the
    result is made exactly orthogonal to :math:`\\mathbf 1` (a disconnected
    graph contributes its centred component indicators).

    Which graph matters: random long edges (the DVU graph's) make the bottom
    eigenvectors uninformative, so build the basis from a plain k-NN graph
    (``docs/tuning.md``).

    Parameters
    ----------
    graph_or_edges : NeighborhoodGraph or ndarray (m, 2)
    n : int
        Number of nodes (only with an edge array).
    rank : int
    weights : ndarray (m,), optional
        Edge weights (default 1).
    """
    from ..graphs import NeighborhoodGraph

    if isinstance(graph_or_edges, NeighborhoodGraph):
        edges, n = graph_or_edges.edges, graph_or_edges.n_nodes
    else:
        edges = np.asarray(graph_or_edges, dtype=np.int64).reshape(-1, 2)
        if n is None:
            raise InputError("laplacian_basis needs n with an edge array")
    rank = as_int(rank, "basis_rank")
    if not 1 <= rank <= n - 1:
        raise InputError(f"basis_rank must be an integer in [1, {n - 1}]; got {rank}")
    w = np.ones(edges.shape[0]) if weights is None else np.asarray(weights, dtype=float)
    i, j = np.asarray(edges).T
    A = sp.csr_matrix((np.r_[w, w], (np.r_[i, j], np.r_[j, i])), shape=(n, n))
    L = (sp.diags(np.asarray(A.sum(axis=1)).ravel()) - A).tocsc()
    k = rank + 1
    if n <= max(600, 4 * k):
        _, U = sla.eigh(L.toarray(), subset_by_index=[0, k - 1])
    else:
        shift = 1e-6 * max(float(L.diagonal().mean()), 1e-12)
        v0 = np.random.default_rng(0).standard_normal(n)
        # shift-invert with a symmetric fill-reducing ordering (minimum degree on
        # L + L^T, diagonal pivots preferred): less fill than eigsh's own LU (COLAMD)
        lu = spla.splu((L + shift * sp.eye(n)).tocsc(), permc_spec="MMD_AT_PLUS_A",
                       options={"SymmetricMode": True})
        opinv = spla.LinearOperator((n, n), matvec=lu.solve, dtype=float)
        _, U = eigsh(L, k=k, sigma=-shift, which="LM", v0=v0, OPinv=opinv)
    U = U - U.mean(axis=0)
    Uq, _, _ = np.linalg.svd(U, full_matrices=False)
    return Uq[:, :rank]


def gram_basis(
    gp: GramProblem, reduce_face: bool, basis_rank: int | None = None,
    basis_graph: NeighborhoodGraph | None = None,
) -> tuple[np.ndarray | Callable[[], np.ndarray] | None, int]:
    """The basis of a builder: ``(basis or a callable computing it, its number of columns)``.

    ``basis_rank=r`` gives the reduced Laplacian basis of ``basis_graph``
    (default: the problem's own graph) by :func:`laplacian_basis`;
    otherwise ``reduce_face`` gives the Householder basis of
    :math:`\\mathbf 1^\\perp` (computed only when the cvxpy problem is built).
    """
    from ..graphs import NeighborhoodGraph

    if basis_rank is not None:
        if isinstance(basis_rank, bool) or not isinstance(basis_rank, (int, np.integer)):
            raise InputError(f"basis_rank must be None or a positive integer; got {basis_rank!r}")
        graph = basis_graph if basis_graph is not None else NeighborhoodGraph(
            gp.n, gp.edges, gp.target)
        if not isinstance(graph, NeighborhoodGraph):
            raise InputError("basis_graph must be a NeighborhoodGraph (e.g. knn_graph(X, 8, 0))")
        if graph.n_nodes != gp.n:
            raise InputError(f"basis_graph has {graph.n_nodes} nodes, the problem {gp.n}")
        Q = laplacian_basis(graph, rank=int(basis_rank))
        return Q, Q.shape[1]
    if basis_graph is not None:
        raise InputError("basis_graph is used only with basis_rank=r")
    if reduce_face:
        degree = np.bincount(gp.edges.ravel(), minlength=gp.n)
        pivot = int(np.argmin(degree))
        return functools.partial(centering_basis, gp.n, pivot=pivot), gp.n - 1
    return None, gp.n

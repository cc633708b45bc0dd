r"""Equality distances that leave no strictly feasible point: the face their cliques expose.

With ``distances="equality"``, the squared distances :math:`\bar D_{ij}` of a clique
:math:`K` of the graph fix the clique's centred Gram block
:math:`G_K = -\tfrac12 J\bar D_KJ` (:math:`J = I - \mathbf 1\mathbf 1^T/|K|`): every
realisation of a complete graph is congruent to every other. When the targets come from
points in :math:`\mathbb R^d` and :math:`|K| \ge d + 2`, :math:`G_K` has rank at most
:math:`d < |K| - 1`, and each null vector :math:`u` of :math:`G_K` orthogonal to
:math:`\mathbf 1_K` (padded with zeros to :math:`n`) satisfies :math:`u^TGu = 0`, so
:math:`Gu = 0`, for *every* feasible :math:`G`: the feasible set lies in the face
:math:`\{G \succeq 0 : GU = 0\}` and has no positive definite point (Krislock &
Wolkowicz, "Explicit sensor network localization using semidefinite representations and
facial reductions", SIAM J. Optim. 20, 2010).

On such a problem a point within the feasibility tolerance can lie off the face by the
square root of its residual, and that can buy an objective far below the optimum; the
certified lower bound stays valid, but "objective within the gap of the optimum" does not
follow. :func:`restore_on_face` moves a factor onto the face (:math:`F \to PF`, :math:`P`
the projection onto :math:`U^\perp`) and restores the distances there by Gauss-Newton
(least squares on the factor), so that the objective reported is that of a point on the
face, whose residual is that of a problem with a strictly feasible point.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from ..formulations.gram import GramProblem
from .space import FactorSpace

__all__ = ["exposing_vectors", "restore_on_face"]

#: up to this many Jacobian entries (rows x factor entries) Gauss-Newton factors the
#: Jacobian densely; beyond, the point is not restored (the solve reports why)
DENSE_JACOBIAN = 4_000_000

#: an eigenvalue of a clique's target Gram block at most this times its largest counts as
#: zero (targets computed from points in doubles are exact to ~1e-15 relative)
RANK_RTOL = 1e-9

#: the exposing vectors are orthonormalised densely (n x q); beyond this many entries the
#: cliques are reported without them (a dense SVD of n x q grows as n q^2)
DENSE_EXPOSING = 4_000_000


def exposing_vectors(gp: GramProblem) -> tuple[np.ndarray | None, list[tuple[list[int], int]]]:
    r"""The orthonormal exposing vectors :math:`U` (n x q, :math:`U^T\mathbf 1 = 0`) of the
    cliques whose equality targets fix a Gram block of rank below :math:`|K| - 1`, and those
    cliques with the rank of their block; ``(None, [])`` where there is none (or the
    distances are not equalities), ``(None, cliques)`` where the vectors would take more
    than :data:`DENSE_EXPOSING` entries.

    Only maximal cliques are examined: a rank-deficient sub-clique makes its maximal clique
    rank-deficient too.
    """
    if gp.distances != "equality":
        return None, []
    edges = np.asarray(gp.edges)
    target = np.asarray(gp.target, dtype=float)
    graph = nx.Graph()
    graph.add_edges_from((int(i), int(j), {"t": float(t)}) for (i, j), t in zip(edges, target))
    cols, found = [], []
    for K in nx.find_cliques(graph):
        k = len(K)
        if k < 3:
            continue
        K = sorted(int(v) for v in K)
        D = np.zeros((k, k))
        for a in range(k):
            for b in range(a + 1, k):
                D[a, b] = D[b, a] = graph.edges[K[a], K[b]]["t"]
        J = np.eye(k) - 1.0 / k
        ev, vec = np.linalg.eigh(-0.5 * J @ D @ J)
        tol = RANK_RTOL * max(float(np.abs(ev).max()), 1e-300)
        rank = int(np.sum(ev > tol))
        if rank >= k - 1 or np.any(ev < -tol):
            continue    # full rank, or targets no points realise (infeasible: not a face)
        found.append((K, rank))
        # the null space of the block, less the constant vector (J's own null vector)
        null = vec[:, np.abs(ev) <= tol]
        null = null - null.mean(axis=0)
        q, s, _ = np.linalg.svd(null, full_matrices=False)
        for c in q[:, s > 1e-8 * max(s.max(), 1e-300)].T:
            u = np.zeros(gp.n)
            u[K] = c
            cols.append(u)
    if not cols:
        return None, []
    if gp.n * len(cols) > DENSE_EXPOSING:
        return None, found
    U, s, _ = np.linalg.svd(np.array(cols).T, full_matrices=False)
    return U[:, s > 1e-10 * s[0]], found


def restore_on_face(gp: GramProblem, F: np.ndarray, U: np.ndarray, *, max_iter: int = 50,
                    space: FactorSpace | None = None) -> tuple[np.ndarray, float] | None:
    r"""A factor on the face :math:`\{GU = 0\}` near ``F``, with the constraints restored.

    Gauss-Newton with least-norm steps (halved until the residual falls) on the
    relative residuals of :math:`G = PFF^TP`, :math:`P = I - UU^T`: the distances
    :math:`(D - \bar D)/\|\bar D\|`, the added rows' violations over their sizes
    (:meth:`FactorSpace.K_scale`; an inequality's only where it is violated) and the SNR
    constraint's :math:`\max(0, \langle H, G\rangle)` over the first point's
    :math:`|\langle C, G\rangle|`, from :math:`PF`, at most ``max_iter`` steps. Returns the
    factor (on the face: :math:`U^TV = 0`) and its infeasibility as the solver measures it
    (the largest of the three relative violations), or ``None`` where the Jacobian
    (m x nk) would exceed :data:`DENSE_JACOBIAN` entries: an iterative least-squares step
    there ran past the solve's time limit by minutes (n = 1,000 Swiss roll).
    """
    space = FactorSpace(gp) if space is None else space     # the caller's, if it has one
    K, H = space.K, space.H
    n, k = F.shape
    edges = np.asarray(gp.edges)
    m = edges.shape[0]
    if m * n * k > DENSE_JACOBIAN:
        return None
    t = np.asarray(gp.target, dtype=float)
    t_norm = max(float(np.linalg.norm(t)), 1e-300)
    rows = np.r_[np.arange(m), np.arange(m)]
    E = sp.csr_matrix((np.r_[np.ones(m), -np.ones(m)], (rows, edges.T.ravel())), shape=(m, n))
    EU = E @ U                                            # m x q, nonzero near the cliques
    k_scale = space.K_scale() if K is not None else None
    A = ([K.operator(np.eye(K.p)[a]) for a in range(K.p)] if K is not None else [])

    def project(V):
        return V - U @ (U.T @ V)

    def diffs(V):
        return E @ V - EU @ (U.T @ V)                     # E P V

    PF = project(F)
    h_scale = max(abs(float(np.sum(PF * space.apply_C(PF)))), 1e-300)

    def parts(V):
        """(distance residuals, added rows' residuals, SNR residual), each relative."""
        Z = diffs(V)
        PV = project(V)
        d = (np.einsum("ij,ij->i", Z, Z) - t) / t_norm
        rk = np.zeros(0)
        if K is not None:
            v = K.values_of_factor(PV) - K.rhs
            rk = np.where(K.equality, v, np.maximum(v, 0.0)) / k_scale
        rh = np.zeros(0)
        if H is not None:
            rh = np.array([max(0.0, float(np.sum(PV * space.apply_H(PV)))) / h_scale])
        return d, rk, rh

    def residual(V):
        return np.concatenate(parts(V))

    def step(V, r):
        # the least-norm Gauss-Newton step min |J d + r|, J dense
        Z = diffs(V)
        EP = E.toarray() - EU @ U.T                       # m x n
        J = [2.0 * (EP[:, :, None] * Z[:, None, :]).reshape(m, n * k) / t_norm]
        PV = project(V)
        _, rk, rh = parts(V)
        for a in range(len(A)):
            active = K.equality[a] or rk[a] > 0
            J.append((2.0 * project(A[a] @ PV) / k_scale[a] * active).reshape(1, -1))
        if H is not None:
            J.append((2.0 * project(space.apply_H(PV)) / h_scale * (rh[0] > 0))
                     .reshape(1, -1))
        return np.linalg.lstsq(np.vstack(J), -r, rcond=None)[0].reshape(n, k)

    with threadpool_limits(limits=1, user_api="blas"):    # small dense factorisations
        V = PF
        r = residual(V)
        for _ in range(max_iter):
            if np.linalg.norm(r) <= 1e-14:
                break
            d = project(step(V, r))
            for _ in range(30):                               # halve until the residual falls
                V_new = V + d
                r_new = residual(V_new)
                if np.linalg.norm(r_new) < np.linalg.norm(r):
                    break
                d = d / 2
            else:
                break
            V, r = V_new, r_new
    d, rk, rh = parts(V)
    infeas = float(np.linalg.norm(d))
    if K is not None:
        infeas = max(infeas, float(np.max(np.abs(rk), initial=0.0)))
    if H is not None:
        quad = abs(float(np.sum(V * space.apply_C(V))))
        infeas = max(infeas, float(rh[0]) * h_scale / max(quad, 1e-300))
    return V, infeas

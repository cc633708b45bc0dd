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

On the face the restricted problem has a strictly feasible point where the cliques were
the only obstruction, and the solve can continue there (:func:`face_basis`); its
multipliers certify the *original* problem through :func:`face_certificate` (lifted by
the cliques' own rows, checked in exact arithmetic), which does not rely on the computed
face being exact.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from ..formulations.gram import GramProblem
from .ipm_common import least_squares
from .space import FactorSpace
from .trace_bound import shortest_path_trace_bound
from .verify import _U

__all__ = ["clique_null_vectors", "exposing_vectors", "restore_on_face",
           "restore_at_lower_rank", "restoration_flops", "face_basis", "face_certificate",
           "ROUNDING_FLOOR"]

#: up to this many Jacobian entries (rows x factor entries) Gauss-Newton factors the
#: Jacobian densely; beyond, the point is not restored (the solve reports why)
DENSE_JACOBIAN = 4_000_000

#: an eigenvalue of a clique's target Gram block at most this times its largest counts as
#: zero (targets computed from points in doubles are exact to ~1e-15 relative)
RANK_RTOL = 1e-9

#: the exposing vectors are orthonormalised densely (n x q); beyond this many entries the
#: cliques are reported without them (a dense SVD of n x q grows as n q^2)
DENSE_EXPOSING = 4_000_000


def clique_null_vectors(gp: GramProblem) -> list[tuple[list[int], int, np.ndarray]]:
    r"""``(K, rank, N)`` per maximal clique :math:`K` of the graph whose equality targets fix
    a centred Gram block :math:`G_K = -\tfrac12 J\bar D_KJ` of rank below :math:`|K| - 1`:
    :math:`N` (:math:`|K|\times s`, orthonormal columns orthogonal to :math:`\mathbf 1_K`)
    spans the block's null space less the constant vector. Empty where the distances are
    not equalities.

    An eigenvalue at most :data:`RANK_RTOL` times the block's largest counts as zero; a
    clique whose block has a negative eigenvalue below that (targets no points realise:
    infeasible, the Farkas certificate's business) is skipped. Only maximal cliques are
    examined: a rank-deficient sub-clique makes its maximal clique rank-deficient too.
    """
    if gp.distances != "equality":
        return []
    edges = np.asarray(gp.edges)
    target = np.asarray(gp.target, dtype=float)
    graph = nx.Graph()
    graph.add_edges_from((int(i), int(j), {"t": float(t)}) for (i, j), t in zip(edges, target))
    out = []
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
        # the null space of the block, less the constant vector (J's own null vector)
        null = vec[:, np.abs(ev) <= tol]
        null = null - null.mean(axis=0)
        q, s, _ = np.linalg.svd(null, full_matrices=False)
        out.append((K, rank, q[:, s > 1e-8 * max(s.max(), 1e-300)]))
    return out


def exposing_vectors(gp: GramProblem,
                     nulls: list[tuple[list[int], int, np.ndarray]] | None = None
                     ) -> tuple[np.ndarray | None, list[tuple[list[int], int]]]:
    r"""The orthonormal exposing vectors :math:`U` (n x q, :math:`U^T\mathbf 1 = 0`) of the
    cliques whose equality targets fix a Gram block of rank below :math:`|K| - 1`
    (:func:`clique_null_vectors`, or ``nulls`` where the caller has them), and those
    cliques with the rank of their block; ``(None, [])`` where there is none (or the
    distances are not equalities), ``(None, cliques)`` where the vectors would take more
    than :data:`DENSE_EXPOSING` entries.
    """
    nulls = clique_null_vectors(gp) if nulls is None else nulls
    found = [(K, rank) for K, rank, _ in nulls]
    cols = [_padded(gp.n, K, N) for K, _, N in nulls if N.shape[1]]
    if not cols:
        return None, []
    if gp.n * sum(c.shape[1] for c in cols) > DENSE_EXPOSING:
        return None, found
    U, s, _ = np.linalg.svd(np.hstack(cols), full_matrices=False)
    return U[:, s > 1e-10 * s[0]], found


def _padded(n: int, K: list[int], N: np.ndarray) -> np.ndarray:
    """The clique's vectors ``N`` (rows of ``K``) padded with zeros to n rows."""
    out = np.zeros((n, N.shape[1]))
    out[K] = N
    return out


def restore_on_face(gp: GramProblem, F: np.ndarray, U: np.ndarray, *, max_iter: int = 50,
                    space: FactorSpace | None = None) -> tuple[np.ndarray, float] | None:
    r"""A factor on the face :math:`\{GU = 0\}` near ``F``, with the constraints restored.

    Gauss-Newton with least-norm steps (halved until the residual falls) on the
    relative residuals of :math:`G = PFF^TP`, :math:`P = I - UU^T` with
    :math:`\mathbf 1/\sqrt n` among the columns of :math:`U` (added where it is not): the distances
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
    # the centring too (G1 = 0): the added rows' least-norm steps move the points' mean
    # (differential seed 101138: rows met by an uncentred factor, violated once centred)
    one = np.full(n, 1.0 / np.sqrt(n))
    one = one - U @ (U.T @ one)
    if np.linalg.norm(one) > 0.5:
        U = np.hstack([U, (one / np.linalg.norm(one))[:, None]])
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
        return least_squares(np.vstack(J), -r).reshape(n, k)

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


#: a restoration that ends at most this relative residual has converged (to rounding: 1e-16
#: to 1e-14 on the differential's instances); one that stalls ends at 1e-8 or above. A point
#: restored at a lower rank, or without a face, replaces the solver's only below it, so that
#: its objective, that of a point feasible to rounding, lies below the optimum by at most
#: about the square root of this (where there is no strictly feasible point), 1e-6
ROUNDING_FLOOR = 1e-12


#: :func:`restore_at_lower_rank`'s estimate of one rank's cost: ``_GN_STEPS`` Gauss-Newton
#: steps (:func:`restore_on_face`'s cap), each a least-squares solve by SVD of the
#: m x nk Jacobian, about ``6 m nk min(m, nk)`` flops
_GN_STEPS = 50


def restoration_flops(m: int, n: int, k: int) -> float:
    """The estimated flops of :func:`restore_on_face` on m edges, n points and rank k (at
    most ``_GN_STEPS`` least-squares steps on the m x nk Jacobian)."""
    return _GN_STEPS * 6.0 * m * (n * k) * min(m, n * k)


def restore_at_lower_rank(gp: GramProblem, F: np.ndarray, U: np.ndarray, floor: float, *,
                          first: int = 1, space: FactorSpace | None = None,
                          max_flops: float | None = None
                          ) -> tuple[np.ndarray, float, int] | None:
    r"""A factor of lower rank than ``F`` on the face :math:`\{GU = 0\}`, restored onto the
    constraints to a relative residual at most ``floor``: ``(V, infeasibility, rank)``, or
    ``None`` where no rank does (or the Jacobian is too large, as in
    :func:`restore_on_face`).

    Where the constraints on the face are degenerate too (a face the cliques do not expose:
    e.g. a framework that is universally rigid in :math:`\mathbb R^d`, whose only feasible
    Gram matrix has rank :math:`d`), Gauss-Newton from a factor with more columns than the
    feasible points' rank converges only linearly: the surplus columns' contribution to the
    residual is quadratic in their size, and each step halves them at best. Cut to
    :math:`k` columns (the leading singular vectors, scaled) the Jacobian has full rank at
    a feasible point of rank :math:`k` and the restoration converges. The ranks are tried
    upwards from ``first`` (e.g. the largest rank of a clique's block: no feasible point
    has less) while they restore to ``floor``, or until the first that restores; of those
    that do, the point of the lowest objective is returned (a feasible point of lower rank
    is a feasible point: its objective bounds the optimum from above). No rank is started
    after the first once the ranks tried have an estimated cost (:func:`restoration_flops`,
    each a dense Gauss-Newton) above ``max_flops``: a count, not seconds, so that the
    result does not depend on the machine's load."""
    space = FactorSpace(gp) if space is None else space
    u, s, _ = np.linalg.svd(F, full_matrices=False)
    best = None
    spent, m = 0.0, np.asarray(gp.edges).shape[0]
    for k in range(max(int(first), 1), F.shape[1]):
        if not s[k - 1] > 0:
            break
        if max_flops is not None and k > max(int(first), 1) and spent > max_flops:
            break
        spent += restoration_flops(m, gp.n, k)
        out = restore_on_face(gp, u[:, :k] * s[:k], U, space=space)
        if out is None:
            return None
        V, infeas = out
        if infeas > floor:
            if best is not None:
                break            # the ranks above the feasible points' own stall again
            continue
        p = float(np.sum(V * space.apply_C(V)))
        if best is None or p < best[3]:
            best = (V, infeas, k, p)
    return None if best is None else best[:3]


def face_basis(U: np.ndarray) -> np.ndarray:
    r"""An orthonormal basis :math:`Q` (n x (n - 1 - q)) of the complement of
    :math:`[\mathbf 1, U]`: the face :math:`\{G \succeq 0 : G\mathbf 1 = 0, GU = 0\}` is
    :math:`\{QZQ^T : Z \succeq 0\}`."""
    n = U.shape[0]
    M = np.column_stack([np.full(n, 1.0 / np.sqrt(n)), U])
    return np.linalg.qr(M, mode="complete")[0][:, M.shape[1]:]


@dataclass
class FaceCertificate:
    r"""A lower bound on the optimum of the *original* problem from multipliers of the
    problem restricted to the face (:func:`face_certificate`)."""

    bound: float
    lambda_face: float       # lambda_min(Q^T S Q), dense
    mu: float                # lambda_min(S(y + t z, nu)) > mu on 1-perp (proved exactly)
    t: float                 # the weight of the cliques' rows added to y
    method: str              # "dual-feasible", "trace-bound" or "scaled"
    y: np.ndarray = field(repr=False, default=None)   # the face's least-norm multipliers
    z: np.ndarray = field(repr=False, default=None)   # the cliques' rows: y' = y + t z

    def describe(self) -> str:
        return (f"face multipliers lifted to the full space ({self.method}): "
                f"lambda_min on the face {self.lambda_face:.3g}, lambda_min(S) >= {self.mu:.3g} "
                f"with the cliques' rows weighted t = {self.t:.3g}, checked in exact "
                "rational arithmetic")


def face_certificate(gp: GramProblem, Q: np.ndarray, U: np.ndarray,
                     nulls: list[tuple[list[int], int, np.ndarray]], y: np.ndarray,
                     nu: np.ndarray, deadline: float | None = None,
                     skipped: list[str] | None = None,
                     floor: float | None = None,
                     exposer: tuple[np.ndarray, np.ndarray] | None = None,
                     cross: bool = False) -> FaceCertificate | None:
    r"""A lower bound on the optimum of the original problem (not only of the problem
    restricted to the face) from multipliers :math:`(y, \nu)` of the restricted problem.

    ``exposer``: ``(z, F)``, the edge coefficients of an exposing matrix
    :math:`W = \sum_e z_ea_ea_e^T` found otherwise (facial reduction,
    :mod:`~sdpembed.lowrank.reduction`) and a factor with :math:`W \approx FF^T` (its range
    :math:`U`'s), in place of the cliques' (``nulls`` is then not read); the lift below is
    the same, and the exact check reads only :math:`z`. ``cross``: the multipliers moved
    along the face adjoint's kernel to the least cross block
    (:func:`_least_cross_multipliers`) rather than to the least norm.

    Why not the restricted problem's own bound: if every feasible :math:`G` lies on the
    face, both problems have one feasible set and one optimum, and the restricted bound
    would do. That rests on :math:`u^T\bar G_Ku = 0` exactly for each exposing vector
    (:math:`\bar G_K = -\tfrac12 J\bar D_KJ`), while :math:`u` is a computed null vector:
    :math:`u^T\bar G_Ku = \epsilon_K \ne 0` in general. Then the feasible points satisfy
    :math:`u^TGu = \epsilon_K`, not 0: a face computed too small (a vector taken for a null
    vector that is not one, :data:`RANK_RTOL` too loose) excludes feasible points and its
    bound can exceed the true optimum. So the bound is made in the original problem's
    dual, where any multipliers give a valid bound and the face's inexactness shows up
    as a cost, not an error.

    The dual point: :math:`W = \sum_K N_KN_K^T` (:func:`clique_null_vectors`) is
    supported on the cliques' blocks with :math:`W\mathbf 1 = 0`, so it is a combination
    of the cliques' edge matrices, :math:`W = \sum_e z_ea_ea_e^T`
    (:math:`z_{ij} = -W_{ij}`: the matrices :math:`a_ea_e^T` of a clique's edges span its
    symmetric blocks with zero row sums). With :math:`y' = y + tz` (:math:`t \ge 0`),
    :math:`S' = S(y', \nu) = S(y, \nu) + tW`, and weak duality for the original problem
    gives, for every feasible :math:`G` (:math:`\mathrm{tr}\,G \le T`, the shortest-path
    bound, valid for every feasible point of the original problem),

    .. math::

        \text{objective}(G) \ \ge\ -y^T\bar D - t\,z^T\bar D - z_\nu^Tb
        + \min(\mu', 0)\,T, \qquad \mu' \le \lambda_{\min}(S') \text{ on } \mathbf 1^\perp,

    where :math:`z^T\bar D = \sum_K \mathrm{tr}(N_K^T\bar G_KN_K) = \sum_K\epsilon_K \ge 0`,
    about :math:`10^{-16}` of the targets: the cost of the face's inexactness, times
    :math:`t`. The restricted problem's dual is attained (it has a strictly feasible
    point) while the original's, in general, is only approached as :math:`t \to \infty`:
    :math:`\lambda_{\min}(S')` tends to :math:`\lambda_{\min}(Q^TSQ)` from below, as
    :math:`-c/t`.

    Choosing :math:`t` and :math:`\mu'` (floating point, a heuristic): in the basis
    :math:`P = [Q, U]` of :math:`\mathbf 1^\perp`, :math:`A = Q^TSQ`, :math:`X = Q^TSU`,
    :math:`B = U^TSU`, :math:`W_{UU} = U^TWU \succ 0` (:math:`W`'s range is :math:`U`'s);
    for :math:`\mu' = \lambda_{\min}(A) - \delta` the Schur complement
    :math:`B + tW_{UU} - \mu'I - X^T(A - \mu'I)^{-1}X` is PSD for :math:`t` at least
    :math:`\lambda_{\max}(\mu'I - B + X^T(A - \mu'I)^{-1}X)/\lambda_{\min}(W_{UU})`;
    twice that is taken, for :math:`\delta` on a grid. A smaller :math:`\delta` costs a
    larger :math:`t`.

    Proving it (exact): at large :math:`t` the rounding of the blocks, of order
    :math:`u\,t\|W\|`, can exceed :math:`\delta` (:math:`W`'s blocks off :math:`U` are zero
    only up to rounding, times :math:`t`), so a floating-point test is no proof. The
    candidate of the best bound is checked in exact rational arithmetic, with every datum
    the rational its double is (:func:`_exact_bound`): :math:`S(y + tz, \nu) - \mu'I`
    positive definite on :math:`\mathbf 1^\perp` (:func:`_exactly_positive_definite`), the
    dual value summed exactly and rounded down. Where it fails, the candidates of larger
    :math:`\delta` are bisected (a failure moves to larger :math:`\delta`, a pass to
    smaller), at most ``_EXACT_TRIES`` checks in all, none once ``deadline`` (a
    :func:`time.perf_counter` time) has passed and none after the first that the time
    left cannot hold (the last check took longer; ``skipped`` is told of checks given up
    for time); the highest bound that passes is the certificate; if none does, there is
    none. (Trying the best six in the
    order of their bounds spent every check on neighbouring small shifts that all
    failed.) A candidate whose bound cannot reach ``floor`` (a bound already held, e.g.
    the full solve's; :func:`_dual_value`) is not checked (it could not raise that
    bound) and the bisection moves towards smaller shifts, as after a pass. Up to
    :data:`EXACT_CHECK` points.

    First :math:`y` is replaced by its least-norm equivalent on the face
    (:func:`_least_norm_multipliers`): on the face the cliques' rows are dependent, the
    restricted problem's multipliers are unique only up to the kernel of its adjoint, and
    they drift along it without bound, which the full space would see in :math:`X` and :math:`B`.

    Returns ``None`` where no bound results (no candidate passes the exact check, an
    inequality multiplier is negative, more than :data:`EXACT_CHECK` points, the face's
    adjoint too large for :func:`_least_norm_multipliers`).
    """
    if gp.distances != "equality" or gp.n > EXACT_CHECK:
        return None
    trace_bound = shortest_path_trace_bound(gp)
    y = _least_norm_multipliers(gp, Q, y)
    if y is None:
        return None
    space = FactorSpace(gp, np.c_[Q, U])
    nu = space.duals(nu)
    off = space.linear_offset(nu)
    if not np.isfinite(off) or (space.H is not None and nu[0] < 0):
        return None       # outside the dual domain: <H, G> <= 0 needs its multiplier >= 0
    r = Q.shape[1]
    M = space.dense_S(y, nu)                                  # P^T S P
    if cross:
        # the face's rows leave y free along the adjoint's kernel: take the y there whose
        # S is nearest block-diagonal in [Q, U], so that the lift needs a small t
        y = _least_cross_multipliers(gp, Q, U, y, M[:r, r:])
        M = space.dense_S(y, nu)
    A, X, B = M[:r, :r], M[:r, r:], M[r:, r:]
    if exposer is not None:
        z, NP = np.asarray(exposer[0], dtype=float), np.c_[Q, U].T @ exposer[1]
    else:
        # W = sum_K N_K N_K^T and its edge coefficients z
        index: dict[tuple[int, int], int] = {}
        for e, (i, j) in enumerate(np.asarray(gp.edges).tolist()):
            index.setdefault((min(i, j), max(i, j)), e)
        z = np.zeros(gp.edges.shape[0])
        NP = []
        for K, _, N in nulls:
            Wk = N @ N.T
            for a in range(len(K)):
                for b in range(a + 1, len(K)):
                    z[index[(K[a], K[b])]] -= Wk[a, b]
            NP.append(np.c_[Q, U][K].T @ N)                   # P^T N_K (rows of P on K)
        NP = np.hstack(NP)
    MW = NP @ NP.T                                            # P^T W P
    WUU = MW[r:, r:]
    w_min = float(np.linalg.eigvalsh(0.5 * (WUU + WUU.T))[0])
    if not w_min > 0:
        return None
    lam, V = np.linalg.eigh(0.5 * (A + A.T))
    lam_a = float(lam[0])
    scale = max(float(np.linalg.norm(M)), 1e-300)
    d_min = 64.0 * max(r, 1) * _U * scale
    target = np.asarray(gp.target, dtype=float)
    zD = max(float(z @ target), 0.0)
    phi = float(y @ target)
    candidates = []
    for delta in d_min * np.logspace(0, 14, 29):
        # floating point: the weight t that the Schur complement asks for at mu
        mu = lam_a - delta
        VX = V.T @ X
        R = -B + mu * np.eye(B.shape[0]) + VX.T @ (VX / (lam - mu)[:, None])
        t = 2.0 * max(float(np.linalg.eigvalsh(0.5 * (R + R.T))[-1]), 0.0) / w_min
        if np.isfinite(t):
            candidates.append((-phi - t * zD - off + min(mu, 0.0) * trace_bound, mu, t))
    if not candidates:
        return None
    full = FactorSpace(gp)
    # the candidates in the order of delta; the one with the best bound first, then, where
    # it fails, bisection towards larger delta (a larger shift below lambda_min(A) and a
    # smaller t: more room for the rounding that made the check fail)
    i = max(range(len(candidates)), key=lambda c: candidates[c][0])
    lo, hi, found = -1, len(candidates), None      # last failed / passed index, best passed
    last = 0.0                                      # seconds of the last exact check
    for k in range(_EXACT_TRIES):
        if deadline is not None and deadline - time.perf_counter() <= (last if k else 0.0):
            if skipped is not None:
                skipped.append(f"face certificate's exact checks after {k}")
            break
        _, mu, t = candidates[i]
        if floor is not None and _dual_value(gp, full, y, z, t, nu, mu, trace_bound) <= floor:
            # its bound cannot reach ``floor``, nor (mostly) those of larger shifts: no
            # exact check, and the search goes on towards smaller shifts as after a pass
            hi = i
            if lo < 0 or hi - lo <= 1:
                break
            i = (lo + hi) // 2
            continue
        t_check = time.perf_counter()
        exact = _exact_bound(gp, full, y, z, t, nu, mu, trace_bound,
                             _check_grid(lam_a - mu, gp.n - 1))
        last = time.perf_counter() - t_check
        if exact is None:
            lo = i
        else:
            hi = i
            if found is None or exact > found.bound:
                found = FaceCertificate(exact, lam_a, mu, t, "dual-feasible" if mu >= 0
                                        else "trace-bound", y=y, z=z)
            if lo < 0:
                break           # the best bound passed
        if hi - lo <= 1:
            break
        i = (lo + hi) // 2
    return found


#: the kernel of the face's adjoint is found by a dense SVD of m x r(r+1)/2 entries, up to
#: this many (beyond, :func:`face_certificate` gives no bound)
DENSE_ADJOINT = 4_000_000


def _least_norm_multipliers(gp: GramProblem, Q: np.ndarray, y: np.ndarray
                            ) -> np.ndarray | None:
    r"""``y`` less its component in the kernel of :math:`y \mapsto \sum_e y_e
    Q^Ta_ea_e^TQ` (the edges' rows restricted to the face): the same restricted dual slack
    matrix, with the least norm. For :math:`z` in that kernel :math:`z^T\bar D =
    \langle \sum_e z_ea_ea_e^T, G\rangle = 0` for any feasible :math:`G` on the face, so
    the dual value is unchanged too (only rounding, of the order of :math:`u\|y\|`, which
    the certificate, computed afresh from the result, does not inherit). ``None`` beyond
    :data:`DENSE_ADJOINT` entries."""
    r = Q.shape[1]
    i, j = np.asarray(gp.edges).T
    if i.size * r * (r + 1) // 2 > DENSE_ADJOINT:
        return None
    K = _adjoint_kernel(Q[i] - Q[j])
    y = np.asarray(y, dtype=float)
    return y - K @ (K.T @ y)


def _adjoint_kernel(EQ: np.ndarray) -> np.ndarray:
    r"""An orthonormal basis (columns) of the kernel of :math:`y \mapsto \sum_e y_e
    Q^Ta_ea_e^TQ`, from the rows :math:`a_e^TQ` of ``EQ`` (m x r): the left null space of the
    m x r(r+1)/2 matrix of those rank-one terms' upper triangles (off-diagonal entries
    scaled by :math:`\sqrt 2`), by a dense SVD, singular values below 1e-10 of the largest
    taken as zero."""
    r = EQ.shape[1]
    iu = np.triu_indices(r)
    R = (EQ[:, iu[0]] * EQ[:, iu[1]]) * np.where(iu[0] == iu[1], 1.0, np.sqrt(2.0))
    Ur, sv, _ = np.linalg.svd(R, full_matrices=True)
    rank = int(np.sum(sv > 1e-10 * max(float(sv[0]), 1e-300))) if sv.size else 0
    return Ur[:, rank:]


def _least_cross_multipliers(gp: GramProblem, Q: np.ndarray, U: np.ndarray, y: np.ndarray,
                             X: np.ndarray) -> np.ndarray:
    r"""``y`` moved along the kernel of the face's adjoint (:func:`_least_norm_multipliers`:
    :math:`Q^TS(y)Q` and the dual value on the face unchanged) to the least-squares zero of
    the cross block :math:`X = Q^TS(y)U`: the lift of :func:`face_certificate` needs a weight
    :math:`t` that grows as :math:`\|X\|^2`. Unchanged beyond :data:`DENSE_ADJOINT`
    entries or where the kernel is empty."""
    r, q = Q.shape[1], U.shape[1]
    i, j = np.asarray(gp.edges).T
    m = i.size
    if m * max(r * (r + 1) // 2, r * q) > DENSE_ADJOINT:
        return y
    EQ, EU = Q[i] - Q[j], U[i] - U[j]
    K = _adjoint_kernel(EQ)
    if not K.shape[1]:
        return y
    cross = (EQ[:, :, None] * EU[:, None, :]).reshape(m, r * q)   # rows vec(Q^T a_e a_e^T U)
    c = np.linalg.lstsq(cross.T @ K, -np.asarray(X, dtype=float).ravel(), rcond=1e-12)[0]
    return np.asarray(y, dtype=float) + K @ c


#: up to this many points the lifted certificate is checked in exact arithmetic
#: (:func:`_exactly_positive_definite`, O(n^3) operations on integers); beyond, no bound
EXACT_CHECK = 120


def _exact_slack(gp: GramProblem, space: FactorSpace, w: list, nu: np.ndarray) -> list:
    """:math:`S(w, \\nu)` as an n x n list of :class:`~fractions.Fraction` (``w``: one
    Fraction per edge), each term the rational its doubles are, summed exactly."""
    from fractions import Fraction

    n = gp.n
    S = [[Fraction(0)] * n for _ in range(n)]

    def add_dplr(M, scale):
        for a in range(n):
            S[a][a] += scale * Fraction(float(M.diag[a]))
        Uf = [[Fraction(float(v)) for v in row] for row in M.U]
        for k in range(M.U.shape[1]):
            sk = scale * Fraction(float(M.s[k]))
            col = [Uf[a][k] for a in range(n)]
            for a in range(n):
                if col[a]:
                    ska = sk * col[a]
                    row = S[a]
                    for b in range(n):
                        row[b] += ska * col[b]
        if M.sparse is not None:
            Sp = sp.coo_matrix(M.sparse)
            for a, b, v in zip(Sp.row.tolist(), Sp.col.tolist(), Sp.data.tolist()):
                S[a][b] += scale * Fraction(v)

    add_dplr(space.C, Fraction(1))
    if space.H is not None and nu[0]:
        add_dplr(space.H, Fraction(float(nu[0])))
    if space.K is not None:
        zk = space.user_part(nu)
        K = space.K
        for row, i, j, v in zip(K.row.tolist(), K.i.tolist(), K.j.tolist(), K.value.tolist()):
            if zk[row]:
                S[i][j] += Fraction(v) * Fraction(float(zk[row]))
    for (i, j), w_e in zip(np.asarray(gp.edges).tolist(), w):
        S[i][i] += w_e
        S[j][j] += w_e
        S[i][j] -= w_e
        S[j][i] -= w_e
    return S


def _exactly_positive_definite(S: list, mu, grid: int | None = None) -> bool:
    r"""Whether :math:`S - \mu I` is positive definite on :math:`\mathbf 1^\perp`, decided
    exactly: in the basis :math:`e_i - e_n` of :math:`\mathbf 1^\perp`, every leading
    principal minor of :math:`M = B^T(S - \mu I)B` positive (Sylvester), by fraction-free
    (Bareiss) elimination on integers.

    ``grid``: ``None``, the integers are :math:`2^E M` (the dyadic rationals exactly;
    ~110 bits at 100 points, where the growth of the minors makes the elimination slow). An
    integer :math:`g`, the integers are :math:`R = \lfloor M/h + \tfrac12\rfloor` on the grid
    :math:`h = 2^{-g}`, less :math:`c = \lceil m/2\rceil` on the diagonal (:math:`m = n - 1`):
    a sufficient test, still a proof. With :math:`E = M - hR`, :math:`|E_{ab}| \le h/2` and
    :math:`E` symmetric, so :math:`\|E\|_2 \le \|E\|_F \le mh/2 \le ch` and

    .. math::

        M = h(R - cI) + (E + chI), \qquad E + chI \succeq 0,

    so :math:`R - cI \succ 0` implies :math:`M \succ 0`. It fails where :math:`M`'s margin
    is below about :math:`mh`: the caller ties :math:`h` to the margin it expects."""
    from fractions import Fraction

    n = len(S)
    M = [[S[a][b] - S[a][n - 1] - S[n - 1][b] + S[n - 1][n - 1] - (mu if a == b else 0)
          - mu for b in range(n - 1)] for a in range(n - 1)]
    # (e_a - e_n)^T (S - mu I)(e_b - e_n) = ... - mu (delta_ab + 1)
    m = n - 1
    if grid is None:
        den = 1
        for row in M:
            for v in row:
                den = max(den, Fraction(v).denominator)
        Z = [[int(v * den) for v in row] for row in M]          # dyadic: exact integers
    else:
        # floor(v / h + 1/2) = floor((2 p + d h) / (2 d h)) for v = p / d, h = 2**-grid
        up, down = (2 ** grid, 1) if grid >= 0 else (1, 2 ** -grid)
        Z = [[(2 * Fraction(v).numerator * up + Fraction(v).denominator * down)
              // (2 * Fraction(v).denominator * down) for v in row] for row in M]
        for a in range(m):
            Z[a][a] -= (m + 1) // 2
    prev = 1
    for k in range(m):
        if Z[k][k] <= 0:
            return False
        piv = Z[k][k]
        for a in range(k + 1, m):
            za = Z[a]
            zak = za[k]
            zk = Z[k]
            for b in range(k + 1, m):
                za[b] = (piv * za[b] - zak * zk[b]) // prev
        prev = piv
    return True


#: candidates (weights t, shifts mu) of :func:`face_certificate` checked exactly: the best
#: bound first, then by bisection over the shifts
_EXACT_TRIES = 6


def _dual_value(gp: GramProblem, full: FactorSpace, y, z, t: float, nu, mu: float,
                trace_bound: float) -> float:
    r"""The bound :func:`_exact_bound` returns where its check passes: the dual value
    :math:`-y'^T\bar D - z_\nu^Tb + \min(\mu, 0)\,T` at :math:`y' = y + tz`, summed
    exactly (every datum the rational its double is), :math:`T` taken 1e-12 larger,
    rounded down. O(edges + rows) rational operations, no check."""
    import math
    from fractions import Fraction

    tf = Fraction(float(t))
    w = [Fraction(float(a)) + tf * Fraction(float(b)) for a, b in zip(y, z)]
    dual = -sum((w_e * Fraction(float(d)) for w_e, d in zip(w, gp.target)), Fraction(0))
    if full.K is not None:
        zk = full.user_part(nu)
        dual -= sum((Fraction(float(a)) * Fraction(float(b)) for a, b in zip(zk, full.K.rhs)),
                    Fraction(0))
    mu_f = Fraction(float(mu))
    if mu_f < 0:
        dual += mu_f * Fraction(float(trace_bound) * (1.0 + 1e-12))
    return math.nextafter(float(dual), -math.inf)


def _exact_bound(gp: GramProblem, full: FactorSpace, y, z, t: float, nu, mu: float,
                 trace_bound: float, grid: int | None = None) -> float | None:
    r"""The bound :math:`-y'^T\bar D - z_\nu^Tb + \min(\mu, 0)\,T` at :math:`y' = y + tz`,
    rounded down, if :math:`S(y', \nu) - \mu I` is positive definite on
    :math:`\mathbf 1^\perp` in exact arithmetic (:func:`_exactly_positive_definite`, on the
    grid :math:`2^{-\text{grid}}` where ``grid`` is given); else ``None``. The dual value is
    summed exactly; :math:`T` (shortest paths in floating point) is taken 1e-12 larger."""
    from fractions import Fraction

    if gp.n > EXACT_CHECK:
        return None
    tf = Fraction(float(t))
    w = [Fraction(float(a)) + tf * Fraction(float(b)) for a, b in zip(y, z)]
    S = _exact_slack(gp, full, w, nu)
    if not _exactly_positive_definite(S, Fraction(float(mu)), grid):
        return None
    return _dual_value(gp, full, y, z, t, nu, mu, trace_bound)


#: :func:`_check_grid`'s share of a candidate's shift that the grid's rounding allowance
#: may take (the allowance is at most m h / 2 for an m x m matrix on the grid h)
_GRID_SHARE = 1.0 / 8.0


def _check_grid(delta: float, m: int) -> int | None:
    r"""The grid :math:`h = 2^{-g}` of a candidate's exact check
    (:func:`_exactly_positive_definite`): the largest power of two with
    :math:`mh/2 \le` ``_GRID_SHARE`` :math:`\delta`, :math:`\delta` the candidate's shift
    below :math:`\lambda_{\min}(Q^TSQ)`, the margin the check has to find: a coarser grid
    means shorter integers (and a faster elimination), a finer one a smaller allowance.
    ``None`` (exact dyadic integers) where :math:`\delta` is not a positive finite number."""
    import math

    if not (np.isfinite(delta) and delta > 0):
        return None
    return math.ceil(math.log2(m / (2.0 * _GRID_SHARE * delta)))

"""A primal-dual pair of a small ``"equality"`` problem by a barrier method on the multipliers.

The augmented Lagrangian approaches the optimum of an equality problem whose distances are
barely strictly feasible by a creep of its multipliers at the capped penalty (docs/tuning.md,
"99085: equality distances barely strictly feasible"); the barrier method's Newton steps on
the dual do not depend on that margin, and each step's dual-scaling estimate is a primal point
that satisfies the rows up to the rounding of the Newton system."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from scipy.sparse.csgraph import connected_components
from threadpoolctl import threadpool_limits

from ..formulations.gram import GramProblem
from .barrier_path import BarrierProblem, barrier_path
from .dual_barrier import _STEPS_EXPECTED
from .face import clique_null_vectors
from .farkas import farkas_certificate
from .penalty import DistancePenalty
from .rounding import rounding_allowance
from .space import FactorSpace

__all__ = ["EqualityBarrierResult", "EqualityOptimum", "equality_barrier",
           "equality_barrier_fits"]

#: largest number of rows (edges, the SNR constraint, added rows) for which
#: :func:`equality_barrier` runs: a Newton step factors a matrix of that order
_EQ_BARRIER_ROWS = 2000
#: largest order of the space (n - 1): every step forms dense matrices of that order, one per
#: SNR or added row
_EQ_BARRIER_DIM = 600
#: up to this many rows and this order the barrier (a few hundredths of a second a step) runs
#: from the first raise of the penalty where the cheap gap is still above ``_EQ_EARLY_GAP``;
#: elsewhere it waits for the penalty's cap
_EQ_EARLY_ROWS, _EQ_EARLY_DIM, _EQ_EARLY_GAP = 500, 200, 1e-2


#: the barrier's pair is certified by a dense ``eigh`` of :math:`S(y,\\nu)` and the dual
#: value :math:`-y^T\\bar d - z^Tb`, both exact up to rounding; without a strictly feasible
#: point its multipliers grow to 1e7-1e9 (the clique faces), where that rounding
#: (:func:`~sdpembed.lowrank.rounding.rounding_allowance`, the dense certificate's own at the
#: pair's point) reaches the size of ``tol``: the pair is used only where the
#: allowance is at most this share of ``tol`` times the objective
_ROUNDING_SHARE = 0.1


@dataclass
class EqualityBarrierResult:
    """Outcome of :func:`equality_barrier`: strictly feasible multipliers ``(y, nu)`` and their
    dual value ``bound``; ``points`` (n x k, centred) of the primal estimate with the smallest
    objective among those within ``feas_tol`` of the rows, its ``objective`` and relative
    ``residual`` (``None``, ``inf``, ``inf`` before one is found); ``gap`` = ``objective -
    bound``; how it ended."""

    y: np.ndarray
    nu: np.ndarray
    bound: float
    points: np.ndarray | None
    objective: float
    residual: float
    gap: float
    status: str   # "converged", "max_iter", "deadline", "no time", "stalled",
    #               "numerical failure", "no interior point", "infeasible"
    iterations: int
    seconds: float


def equality_barrier_fits(space: FactorSpace, pen: DistancePenalty) -> bool:
    """Whether :func:`equality_barrier` applies: ``"equality"`` distances in the full space,
    n - 1 <= ``_EQ_BARRIER_DIM`` and ``DenseLimits.eig``, at most ``_EQ_BARRIER_ROWS`` rows."""
    return (pen.mode == "equality" and space.Q is None
            and space.dim - 1 <= _EQ_BARRIER_DIM and space.dim <= space.limits.eig
            and pen.t.size + space.q <= _EQ_BARRIER_ROWS)


def _early_size(space: FactorSpace, pen: DistancePenalty) -> bool:
    """Whether the problem is within ``_EQ_EARLY_ROWS`` rows and order ``_EQ_EARLY_DIM``
    (the barrier's steps cost a few hundredths of a second)."""
    return pen.t.size + space.q <= _EQ_EARLY_ROWS and space.dim <= _EQ_EARLY_DIM


def no_interior_cliques(gp: GramProblem) -> int:
    r"""How many maximal cliques of ``gp``'s graph have equality targets that fix a centred
    Gram block of rank below :math:`|K| - 1`
    (:func:`~sdpembed.lowrank.face.clique_null_vectors`); where there is one, every feasible
    :math:`G` has a null vector orthogonal to :math:`\mathbf 1`, so the problem has no
    strictly feasible point (0 where the distances are not equalities)."""
    return len(clique_null_vectors(gp))


def _rows(space: FactorSpace, pen: DistancePenalty):
    """The problem on an orthonormal basis ``P`` of :math:`\\mathbf 1^\\perp`: ``(P, E, C,
    A, b, signed)`` with ``E`` the edges' rows (m x r), ``C`` the objective (r x r), ``A``
    the SNR and added rows' matrices (q x r x r), ``b`` every row's right-hand side (m + q)
    and ``signed`` whether its multiplier is sign-constrained (SNR, inequality rows)."""
    n, m = space.dim, pen.t.size
    P = sla.null_space(np.ones((1, n)))
    E = np.asarray(space.B @ P)
    C = space.C.congruence(P)
    mats, rhs, signed = [], [], []
    if space.H is not None:
        mats.append(space.H.congruence(P)[None])
        rhs.append(np.zeros(1))
        signed.append(np.ones(1, bool))
    if space.K is not None:
        mats.append(space.K.congruence(P))
        rhs.append(np.asarray(space.K.rhs, float))
        signed.append(~np.asarray(space.K.equality, bool))
    r = n - 1
    A = np.concatenate(mats) if mats else np.zeros((0, r, r))
    A = 0.5 * (A + A.transpose(0, 2, 1))
    b = np.concatenate([pen.t] + rhs)
    signed = np.concatenate([np.zeros(m, bool)] + signed)
    return P, E, 0.5 * (C + C.T), A, b, signed


def _objective_cap(space: FactorSpace, pen: DistancePenalty, C: np.ndarray) -> float:
    r"""An upper bound on the objective of every feasible point: on a connected graph every
    squared distance is at most :math:`(\sum_e\sqrt{\bar D_e})^2`, so the trace of a
    centred :math:`G` with the target distances, :math:`\sum_{i<j}D_{ij}/n`, is at most
    :math:`T = \tfrac n2(\sum_e\sqrt{\bar D_e})^2` and :math:`\langle\tilde C, G\rangle
    \le \max(\lambda_{\max}(\tilde C), 0)\,T` (the SNR and added rows only shrink the
    set); ``inf`` on a disconnected graph. A dual value above it proves that no point is
    feasible."""
    n = space.dim
    if connected_components(space.B.T @ space.B, directed=False)[0] > 1:
        return np.inf
    T = 0.5 * n * float(np.sum(np.sqrt(pen.t))) ** 2
    # all eigenvalues (LAPACK's subset driver fails on a multiple one: MVU's -I)
    return max(float(np.linalg.eigvalsh(C)[-1]), 0.0) * T


def equality_barrier(space: FactorSpace, pen: DistancePenalty, *, rel_gap: float,
                     feas_tol: float, deadline: float = np.inf,
                     max_iter: int = 300) -> EqualityBarrierResult:
    r"""Multipliers near the dual optimum of an ``"equality"`` problem, and a primal point.

    On an orthonormal basis of :math:`\mathbf 1^\perp` the dual is
    :math:`\max_v -b^Tv` s.t. :math:`S(v) = \tilde C + \sum_i v_iA_i \succeq 0`, with
    :math:`A_e = a_ea_e^T` for the edges (:math:`v_e = y_e` free), the SNR functional
    (:math:`\nu_0 \ge 0`) and the added rows (:math:`z_k \ge 0` on inequality rows). Damped
    Newton steps on :math:`f_\mu(v) = b^Tv - \mu(\log\det S(v) + \sum_{i\ \mathrm{signed}}
    \log v_i)` (self-concordant after division by :math:`\mu`) with :math:`\mu` reduced at
    each centred point: the path of :func:`~.barrier_path.barrier_path`, whose next
    :math:`\mu` is set here from the gap at the point before the step (the other barriers
    take the gap after it; kept, as it sets every later :math:`\mu`). The Hessian is
    :math:`\mu(M + \mathrm{diag}(1/v_i^2))`, :math:`M_{ij} = \langle A_iS^{-1},
    S^{-1}A_j\rangle` (for two edges :math:`(a_i^TS^{-1}a_j)^2`).

    The dual-scaling estimate :math:`X = \mu S^{-1}(S - \Delta S)S^{-1}`
    (:math:`\Delta S = \sum_i\Delta v_iA_i`; Benson, Ye & Zhang 2000) satisfies
    :math:`\langle A_i, X\rangle = b_i` on the free rows by the Newton equations (up to their
    rounding), :math:`\langle A_i, X\rangle = b_i - \mu(1 - \Delta v_i/v_i)/v_i \le b_i` on
    the signed ones, and is positive semidefinite where :math:`S(v - \Delta v) \succeq 0`:
    where its rows' residual, measured, is within ``feas_tol`` it is a primal point whose
    objective bounds the optimum from above. The run stops once the smallest such objective
    is within ``rel_gap`` (relative) of :math:`-b^Tv`. The first point is :math:`y = \alpha
    \mathbf 1` (the graph's Laplacian times :math:`\alpha`, doubled until :math:`S \succ 0`),
    :math:`\nu` one on the signed rows and zero elsewhere. ``deadline`` as in
    :func:`~.dual_barrier.dual_barrier` (``"deadline"``, ``"no time"``). On an infeasible
    problem the dual value grows without bound: the run stops (``"infeasible"``) once it
    passes :func:`_objective_cap`, an upper bound on every feasible objective.
    """
    t0 = time.perf_counter()
    m = pen.t.size
    with threadpool_limits(limits=1, user_api="blas"):
        P, E, C, A, b, signed = _rows(space, pen)
        r, q = C.shape[0], A.shape[0]
        nu_bar = r + int(signed.sum())
        t_norm = max(float(np.linalg.norm(pen.t)), 1e-300)

        def S_of(v):
            return C + (E.T * v[:m]) @ E + np.tensordot(v[m:], A, axes=1)

        def chol(v):
            try:
                return sla.cholesky(S_of(v), lower=True, check_finite=False)
            except sla.LinAlgError:
                return None

        def f_mu(v, L, mu):
            return float(b @ v) - mu * (2.0 * float(np.sum(np.log(np.diag(L))))
                                        + float(np.sum(np.log(v[signed]))))

        def newton_system(v, L, mu):
            """The gradient :math:`b - \\mu(\\langle A_i, S^{-1}\\rangle + 1/v_i)` and the
            Hessian over :math:`\\mu`, :math:`M + \\mathrm{diag}(1/v_i^2)` (the
            :math:`1/v_i` terms on the signed rows only)."""
            Li = sla.solve_triangular(L, np.eye(r), lower=True, check_finite=False)
            Sinv = Li.T @ Li
            Bt = E @ Li.T                               # rows L^{-1} a_e
            R = np.matmul(np.matmul(Li, A), Li.T)       # L^{-1} A_k L^{-T}
            Gm = Bt @ Bt.T
            M = np.empty((m + q, m + q))
            M[:m, :m] = Gm * Gm
            AS = np.empty(m + q)
            AS[:m] = np.einsum("ij,ij->i", Bt, Bt)
            if q:
                BR = np.einsum("ea,kab,eb->ke", Bt, R, Bt, optimize=True)
                M[m:, :m], M[:m, m:] = BR, BR.T
                Rf = R.reshape(q, -1)
                M[m:, m:] = Rf @ Rf.T
                AS[m:] = np.einsum("kaa->k", R)
            inv_v = np.where(signed, 1.0 / np.where(signed, v, 1.0), 0.0)
            grad = b - mu * (AS + inv_v)
            M[np.diag_indices(m + q)] += inv_v ** 2
            return M, grad, Sinv

        def estimate(v, L, mu, dv, Sinv):
            """Records the dual-scaling estimate where it is positive semidefinite and within
            ``feas_tol`` of the rows, the smallest objective so far, and the gap to the dual
            value at ``v`` (a centred point's next :math:`\\mu` is set from it, the gap at
            the point before the step); converged once it is within ``rel_gap``."""
            if np.all((v - dv)[signed] >= 0) and chol(v - dv) is not None:
                X = Sinv @ (S_of(dv) - C) @ Sinv
                X = mu * (Sinv - 0.5 * (X + X.T))
                res = float(np.linalg.norm(np.einsum("ij,ij->i", E @ X, E) - pen.t)) / t_norm
                value = float(np.sum(C * X))
                if res <= feas_tol and value < best[0][0]:
                    best[0] = (value, X, res)
            gap[0] = best[0][0] + float(b @ v)
            return gap[0] <= rel_gap * abs(float(b @ v))

        def to_edge(v, dv):
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.min(np.where(signed & (dv < 0), -v / dv, np.inf), initial=np.inf)

        def infeasible(v):
            """A dual value above every feasible objective: no point is feasible."""
            return "infeasible" if -float(b @ v) > cap else None

        best = [(np.inf, None, np.inf)]     # objective, X, residual
        gap = [np.inf]
        problem = BarrierProblem(factor=chol, value=f_mu, newton_system=newton_system,
                                 estimate=estimate, to_boundary=to_edge,
                                 centred_gap=lambda v: gap[0], nu_bar=nu_bar, halvings=60,
                                 after_step=infeasible)
        v = np.zeros(m + q)
        v[signed] = 1.0
        alpha = 1e-3 * (float(np.max(np.abs(C).sum(axis=1))) + 1e-300) / float(np.mean(pen.t))
        L = None
        for _ in range(100):
            v[:m] = alpha
            if (L := chol(v)) is not None:
                break
            alpha *= 2.0
        if L is None:
            return EqualityBarrierResult(v[:m], v[m:], -float(b @ v), None, np.inf, np.inf,
                                         np.inf, "no interior point", 0,
                                         time.perf_counter() - t0)
        mu = max(abs(float(b @ v)), 1e-300) / nu_bar
        cap = _objective_cap(space, pen, C)
        path = barrier_path(problem, v, L, mu, t0=t0, deadline=deadline, max_iter=max_iter,
                            steps_expected=_STEPS_EXPECTED)
        v, (objective, X_best, residual) = path.x, best[0]
        points = None
        if X_best is not None:
            lam, U = np.linalg.eigh(X_best)
            keep = lam > 0
            points = P @ (U[:, keep] * np.sqrt(lam[keep]))[:, ::-1]
    return EqualityBarrierResult(v[:m].copy(), v[m:].copy(), -float(b @ v), points, objective,
                                 residual, objective + float(b @ v), path.status,
                                 path.iterations, time.perf_counter() - t0)


class EqualityOptimum:
    """The outer loop's way out of the creep of an ``"equality"`` problem barely strictly
    feasible: once the penalty is at its cap and the iterate is still not within
    ``feas_tol``, :func:`equality_barrier` runs (once per solve; again after a run that had
    no time), and its primal point and multipliers are certified like any other pair."""

    def __init__(self, space: FactorSpace, pen: DistancePenalty, tol: float, feas_tol: float):
        self.space, self.pen, self.tol, self.feas_tol = space, pen, tol, feas_tol
        self.fits = equality_barrier_fits(space, pen)
        # beyond the early size, not where cliques prove that no strictly feasible point
        # exists (no_interior_cliques): there the barrier's multipliers grow until rounding
        # voids its pair, at the cost of many dear steps (docs/tuning.md, "Equality MVU on
        # exact manifold data: the refusal without the equality barrier")
        self.cliques: int | None = None   # no_interior_cliques, once found (proof)
        if self.fits and not _early_size(space, pen):
            self.fits = self.proof() == 0
        self.result: EqualityBarrierResult | None = None

    def proof(self) -> int:
        """:func:`no_interior_cliques` of the problem (found once; 0 off ``"equality"``
        distances and in a reduced basis): where positive, the problem has no strictly
        feasible point."""
        if self.cliques is None:
            self.cliques = (no_interior_cliques(self.space.gp)
                            if self.pen.mode == "equality" and self.space.Q is None else 0)
        return self.cliques

    def stall_proof(self) -> int:
        """:meth:`proof` beyond the early size (where it also keeps the barrier out); 0
        within (there the clique face's own solve goes on from the loop's last point, and a
        shorter stall window left it a worse one: docs/tuning.md, "Equality MVU refusals:
        a stall window of 3 where cliques prove no interior")."""
        return 0 if _early_size(self.space, self.pen) else self.proof()

    def wanted(self, raised: bool, at_cap: bool, converged_primal: bool,
               cheap_gap: float) -> bool:
        """Whether to run now: it fits, has not run to an end yet, the iterate is not within
        ``feas_tol`` and the penalty is at its cap or, on a problem of at most
        ``_EQ_EARLY_ROWS`` rows and order ``_EQ_EARLY_DIM``, has been raised (the residual
        stalled) while the cheap gap ``cheap_gap`` is above ``_EQ_EARLY_GAP``."""
        early = _early_size(self.space, self.pen) and cheap_gap > _EQ_EARLY_GAP
        return self.fits and self.result is None and not converged_primal and (
            at_cap or (raised and early))

    def run(self, deadline: float) -> EqualityBarrierResult | None:
        """The barrier's result where it found a primal point and stopped for a reason other
        than time (kept: it does not run again); else ``None``."""
        try:
            res = equality_barrier(self.space, self.pen, rel_gap=0.1 * self.tol,
                                   feas_tol=0.1 * self.feas_tol, deadline=deadline)
        except np.linalg.LinAlgError:     # (LAPACK) the augmented Lagrangian goes on alone
            self.result = EqualityBarrierResult(np.zeros(0), np.zeros(0), -np.inf, None,
                                                np.inf, np.inf, np.inf, "numerical failure",
                                                0, 0.0)
            return None
        if res.status != "no time":
            self.result = res
        if res.points is None or res.status == "no time":
            return None
        if rounding_allowance(self.space, self.pen, res.y, res.nu, res.points) \
                > _ROUNDING_SHARE * self.tol * abs(res.objective):
            return None        # its certificate would lose more than its share of tol to rounding
        return res

    def farkas(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The barrier's multipliers ``(y, nu)`` where its run ended without a primal point
        and their direction is a verified Farkas certificate of infeasibility
        (:func:`~.farkas.farkas_certificate`; on an infeasible problem the dual value grows
        along such a ray); else ``None``."""
        res = self.result
        if res is None or res.points is not None or res.y.size != self.pen.t.size:
            return None
        if farkas_certificate(self.space.gp, self.space.Q, res.y, res.nu) is None:
            return None
        return res.y, res.nu

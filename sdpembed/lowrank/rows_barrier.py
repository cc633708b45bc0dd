"""A small ``"interval"`` problem with added rows, solved by a barrier method on its
multipliers: the dual optimum and a primal point together, before any augmented Lagrangian."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from .alm import _ALM
from .barrier_path import BarrierProblem, _slack_cholesky, barrier_path
from .certificate import _best_certificate, relative_gap
from .ipm_common import factor_from_gram
from .options import LowRankOptions
from .penalty import DistancePenalty
from .point_bound import at_point
from .result import LowRankResult, _SolveState
from .space import FactorSpace
from .spectrum import _gershgorin

__all__ = ["RowsBarrierResult", "rows_barrier", "rows_barrier_fits", "solve_by_rows_barrier"]


#: largest cost of a Newton step, in flops, for which :func:`rows_barrier` runs: it factors
#: an (m + q) x (m + q) matrix (m³/3) and takes two n x n products per row and a few more
#: ((2q + 6) n³). Above it the augmented Lagrangian is as fast or faster (the measurements:
#: docs/tuning.md, "Small interval DVU with added rows: where 20 s went")
_ROWS_FLOPS = 5e7

#: the barrier's stopping gap, relative to ``tol``
_ROWS_GAP = 0.1
#: the eigenvalues of the barrier's primal point dropped (relative to its largest), tried
#: in turn: the first that keeps the gap within ``_DROP_GAP`` times ``tol`` (the last:
#: ``tol``) and the rows within ``feas_tol`` gives the reported factor
_DROP = (1e-6, 1e-8, 1e-12)
_DROP_GAP = 0.2


def rows_barrier_fits(space: FactorSpace, pen: DistancePenalty) -> bool:
    """Whether :func:`rows_barrier` applies: ``"interval"`` distances in the full space with
    added rows (and an SNR constraint or not), n <= ``DenseLimits.eig`` (dense n x n
    matrices) and a Newton step of at most ``_ROWS_FLOPS`` flops (m edges, q rows)."""
    m, n, q = pen.t.size, space.dim, space.q
    return (pen.mode == "interval" and space.Q is None and space.K is not None
            and n <= space.limits.eig and m**3 / 3 + (2 * q + 6) * n**3 <= _ROWS_FLOPS)


@dataclass
class RowsBarrierResult:
    """Outcome of :func:`rows_barrier`: strictly feasible multipliers ``y`` (edges) and
    ``z`` (added rows), their dual value ``bound``, the best primal point ``X`` found
    (``None`` if none was feasible) and its objective ``primal``, and how it ended."""

    y: np.ndarray
    z: np.ndarray
    bound: float
    X: np.ndarray | None
    primal: float
    status: str   # "converged", "max_iter", "deadline", "stalled",
    #               "numerical failure", "no interior point"
    iterations: int
    seconds: float


def _row_matrices(space: FactorSpace) -> list:
    """The rows of the linear multipliers: the SNR functional :math:`H` (dense) if any,
    then the added rows' :math:`A_k` (sparse), each symmetric n x n."""
    K = space.K
    out = []
    if space.H is not None:
        Hd = np.asarray(space.H.matvec(np.eye(space.dim)))
        out.append(0.5 * (Hd + Hd.T))
    for k in range(K.p):
        sel = K.row == k
        out.append(sp.csr_matrix((K.value[sel], (K.i[sel], K.j[sel])), shape=(K.n, K.n)))
    return out


def rows_barrier(space: FactorSpace, pen: DistancePenalty, *, rel_gap: float,
                 feas_tol: float, deadline: float = np.inf,
                 max_iter: int = 300) -> RowsBarrierResult:
    r"""Multipliers near the dual optimum and a primal point near the primal one, by a
    barrier method on the multipliers of an ``"interval"`` problem with added rows.

    The dual is

    .. math::

        \max_{y,z}\ -\bar D^Ty - b^Tz\quad\text{s.t.}\quad
        S(y,z) = \tilde C + E^T\mathrm{diag}(y)E + \textstyle\sum_k z_kA_k
        \succeq 0 \text{ on } \mathbf 1^\perp,\quad |y_e|\le w_e,\quad z_k \ge 0
        \text{ (inequality rows)},

    and its barrier :math:`f_\mu(y,z) = \bar D^Ty + b^Tz - \mu(\log\det S
    + \sum_e\log(w_e - y_e) + \log(w_e + y_e) + \sum_{k\ \le}\log z_k)`, minimised by
    damped Newton steps as :func:`~sdpembed.lowrank.dual_barrier.dual_barrier` does for
    the problem without rows. With :math:`\Sigma = S^{-1}` on :math:`\mathbf 1^\perp`,
    :math:`M_k = \Sigma A_k\Sigma` and :math:`P = E\Sigma E^T`, the Hessian over
    :math:`\mu` has the blocks :math:`P^{\circ 2} + \mathrm{diag}(1/(w-y)^2 + 1/(w+y)^2)`,
    :math:`(a_e^TM_ka_e)_{ek}` and :math:`(\langle M_k, A_l\rangle)_{kl}
    + \mathrm{diag}(1/z_k^2)` (inequality rows).

    Each step also gives the dual-scaling primal point
    :math:`X = \mu\Sigma(S - \Delta S)\Sigma` (Benson, Ye & Zhang 2000), positive
    semidefinite where :math:`S - \Delta S \succeq 0`: the Newton equations of the rows
    make :math:`\langle A_k, X\rangle = b_k` on equality rows and
    :math:`b_k - \mu(z_k - \Delta z_k)/z_k^2` on inequality rows, so it satisfies them
    where :math:`\Delta z_k \le z_k` (the distances are penalised, not constrained). The
    point, and :math:`\mu\Sigma`, count where their rows' relative violation (as
    :meth:`FactorSpace.K_violation`) is at most ``feas_tol``; the lowest objective so far
    closes the iteration once its :func:`relative_gap` to :math:`-\bar D^Ty - b^Tz` is
    below ``rel_gap``. The first multipliers are :math:`y = (1-\epsilon)w` and, on
    inequality rows, :math:`z_k` of the size where :math:`\mu/z_k` balances :math:`b_k`,
    both halved until :math:`S` is positive definite (``"no interior point"`` where
    that fails: the rows may be what bounds the problem).
    """
    t0 = time.perf_counter()
    n, m = space.dim, pen.t.size
    K = space.K
    p = space.q
    # the SNR row <H, G> <= 0 first, as in space.duals
    w, t = pen.w, pen.t
    b = np.r_[np.zeros(space.n_snr), np.asarray(K.rhs, dtype=float)]
    ineq = np.r_[np.ones(space.n_snr, dtype=bool), ~np.asarray(K.equality, dtype=bool)]
    A = _row_matrices(space)
    Ad = [a.toarray() if sp.issparse(a) else a for a in A]
    i_e, j_e = space._ends
    nu_bar = n - 1 + 2 * m + int(ineq.sum())
    scale = _gershgorin(space, w, np.zeros(p)) + 1.0
    K_scale = space.K_scale()
    # a size of each row for the first multipliers (the SNR row: the largest added row's)
    row_scale = np.r_[np.full(space.n_snr, max(1.0, float(np.max(K_scale)))), K_scale]
    C = space.C

    best = [np.inf, None]     # the lowest objective of a feasible primal point, the point

    def factor(y, z):
        return _slack_cholesky(space, y, z, scale)

    def inverse_perp(L):
        """:math:`S^{-1}` on 1-perp: the inverse of :math:`PSP + (c/n)11^T` less its
        :math:`11^T/(nc)`."""
        Li = sla.solve_triangular(L, np.eye(n), lower=True, check_finite=False)
        return Li.T @ Li - 1.0 / (n * scale)

    def barrier(y, z, logdet, mu):
        logs = float(np.sum(np.log(w - y)) + np.sum(np.log(w + y)))
        if ineq.any():
            logs += float(np.sum(np.log(z[ineq])))
        return float(t @ y + b @ z) - mu * (logdet + logs)

    def dual(y, z):
        return -float(t @ y) - float(b @ z)

    def edge_diag(N):
        """:math:`a_e^TNa_e` for every edge."""
        return N[i_e, i_e] + N[j_e, j_e] - 2.0 * N[i_e, j_e]

    def value(X):
        """``(objective, feasible)`` of the point ``X``."""
        X = 0.5 * (X + X.T)
        quad = float(np.trace(C.matvec(X)))
        viol = float(np.max(K.residual(K.values_of(X)) / K_scale, initial=0.0))
        if space.H is not None:
            viol = max(viol, space.snr_violation(float(np.sum(Ad[0] * X)), quad))
        return quad + float(w @ np.abs(edge_diag(X) - t)), viol <= feas_tol

    def newton_system(x, fac, mu):
        """The gradient and the Hessian over :math:`\\mu` (the blocks above) at
        ``x = (y, z)``."""
        y, z = x[:m], x[m:]
        Sp = inverse_perp(fac[0])
        P = np.asarray(space.E @ (space.E @ Sp).T)
        Mk = [Sp @ (a @ Sp) for a in A]
        trSA = np.array([float(np.sum(Sp * a)) for a in Ad])
        up, lo = w - y, w + y
        zi = np.where(ineq, z, 1.0)
        grad = np.r_[t - mu * (np.diag(P) - 1.0 / up + 1.0 / lo),
                     b - mu * (trSA + np.where(ineq, 1.0 / zi, 0.0))]
        Hm = np.empty((m + p, m + p))
        Hm[:m, :m] = P * P
        Hm[np.arange(m), np.arange(m)] += 1.0 / up**2 + 1.0 / lo**2
        for k in range(p):
            Hm[:m, m + k] = Hm[m + k, :m] = edge_diag(Mk[k])
            for kk in range(k, p):
                Hm[m + k, m + kk] = Hm[m + kk, m + k] = float(np.sum(Mk[k] * Ad[kk]))
            Hm[m + k, m + k] += 1.0 / zi[k] ** 2 if ineq[k] else 0.0
        return Hm, grad, Sp

    def estimate(x, fac, mu, d, Sp):
        """Records the primal points :math:`\\mu\\Sigma` and, where :math:`S - \\Delta S
        \\succeq 0`, :math:`\\mu\\Sigma(S - \\Delta S)\\Sigma`, the lowest feasible one;
        converged once its :func:`relative_gap` to the dual value is within ``rel_gap``."""
        y, z = x[:m], x[m:]
        dy, dz = d[:m], d[m:]
        points = [mu * Sp]
        if factor(y - dy, z - dz) is not None:
            dS = (space.ET @ sp.diags(dy) @ space.E).toarray()
            for k in range(p):
                dS += dz[k] * Ad[k]
            points.append(mu * (Sp - Sp @ dS @ Sp))
        for X in points:
            val, ok = value(X)
            if ok and val < best[0]:
                best[:] = val, X
        return relative_gap(best[0], dual(y, z)) <= rel_gap

    def to_box(x, d):
        y, z = x[:m], x[m:]
        dy, dz = d[:m], d[m:]
        up, lo = w - y, w + y
        with np.errstate(divide="ignore", invalid="ignore"):
            to_box = np.min(np.where(dy > 0, up / dy, np.where(dy < 0, -lo / dy, np.inf)))
            if ineq.any():
                to_box = min(to_box, float(np.min(np.where(
                    dz[ineq] < 0, -z[ineq] / dz[ineq], np.inf))))
        return to_box

    problem = BarrierProblem(
        factor=lambda x: factor(x[:m], x[m:]),
        value=lambda x, fac, mu: barrier(x[:m], x[m:], fac[1], mu),
        newton_system=newton_system, estimate=estimate, to_boundary=to_box,
        centred_gap=lambda x: best[0] - dual(x[:m], x[m:]), nu_bar=nu_bar, mu_floor=1e-300)
    with threadpool_limits(limits=1, user_api="blas"):
        y = z = fac = None
        eps = 1e-2
        for _ in range(60):
            y = (1.0 - eps) * w
            mu0 = max(abs(float(t @ y)), 1e-300) / nu_bar
            z = np.where(ineq, np.minimum(mu0 / np.maximum(np.abs(b), row_scale), 1.0) * eps * 100,
                         0.0)
            fac = factor(y, z)
            if fac is not None:
                break
            eps *= 0.5
        if fac is None:
            return RowsBarrierResult(w.copy(), np.zeros(p), -np.inf, None, np.inf,
                                     "no interior point", 0, time.perf_counter() - t0)
        mu = max(abs(dual(y, z)), abs(float(t @ y)), 1e-300) / nu_bar
        path = barrier_path(problem, np.r_[y, z], fac, mu, t0=t0, deadline=deadline,
                            max_iter=max_iter)
    y, z = path.x[:m], path.x[m:]
    return RowsBarrierResult(y, z, dual(y, z), best[1], best[0], path.status,
                             path.iterations, time.perf_counter() - t0)


def solve_by_rows_barrier(space: FactorSpace, pen: DistancePenalty, alm: _ALM, opts: LowRankOptions,
                          t0: float, state: _SolveState, deadline: float
                          ) -> LowRankResult | None:
    """The solve of a problem :func:`rows_barrier_fits`: :func:`rows_barrier`'s primal point
    (factored, negligible eigenvalues dropped) and its multipliers, certified as any pair
    (an exact dense :math:`\\lambda_{\\min}`); ``None`` where that pair does not prove
    ``tol`` at ``feas_tol``, and the augmented Lagrangian runs as before (docs/tuning.md,
    "Small interval DVU with added rows: where 20 s went"). ``state.reduced_solver``
    records the run either way."""
    res = rows_barrier(space, pen, rel_gap=_ROWS_GAP * opts.tol, feas_tol=0.1 * opts.feas_tol,
                       deadline=deadline)
    record = {"solver": "rows_barrier", "status": res.status, "iterations": res.iterations,
              "seconds": res.seconds, "primal_objective": res.primal,
              "dual_objective": res.bound}
    state.reduced_solver = record
    if res.X is None:
        return None
    nu = space.duals(res.z)
    certificate = _best_certificate(space, pen, space.project(factor_from_gram(res.X)),
                                    [(res.y, nu)], opts, state.certificates)
    # the point's negligible eigenvalues (the barrier's interior, of the size of mu)
    # dropped: the largest cut that keeps the gap within _DROP_GAP tol (the last cut:
    # within tol) and the rows within feas_tol
    # the gap of each point against the bound of the rows relaxed by its violations
    cert_rows = certificate
    for rel_tol in _DROP:
        W = space.project(factor_from_gram(res.X, rel_tol=rel_tol))
        quad, D, h = alm.objective_parts(W)
        p = quad + pen.objective(D)
        infeas = space.K_violation(space.K_values(W))
        if space.H is not None:
            infeas = max(infeas, space.snr_violation(h, quad))
        certificate = at_point(space, cert_rows, W)
        gap = relative_gap(p, certificate.bound)
        if gap is not None and gap <= (opts.tol if rel_tol == _DROP[-1] else _DROP_GAP
                                       * opts.tol) and infeas <= opts.feas_tol:
            break
    record["certified_gap"] = gap
    if gap is None or gap > opts.tol or infeas > opts.feas_tol:
        return None
    return LowRankResult(
        factor=space.points(W), objective=p, bound=certificate.bound, certified_gap=gap,
        infeasibility=infeas, y=certificate.y, nu=certificate.nu, status="optimal",
        iterations=res.iterations, seconds=time.perf_counter() - t0, history=[],
        certificate=certificate, function_evaluations=0, reduced_solver=record,
        warm_start=state.warm_start, stop_reason="certified")

"""The dual optimum of a small ``"interval"`` problem by a barrier method on the multipliers."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from threadpoolctl import threadpool_limits

from . import barrier_start
from .barrier_path import BarrierProblem, _slack_cholesky, barrier_path
from .barrier_point import BarrierPair, barrier_factor
from .barrier_start import warm_fits, warm_start
from .certificate import relative_gap
from .pd_barrier import pd_path
from .penalty import DistancePenalty
from .space import FactorSpace
from .spectrum import _gershgorin

__all__ = ["DualBarrierResult", "dual_barrier", "dual_barrier_fits"]


#: largest number of edges for which :func:`dual_barrier` runs: a Newton step factors an
#: m x m matrix (m³/3 flops)
_BARRIER_EDGES = 2000

#: Newton steps a run is expected to take (55-142 on the battery's rows): a run whose first
#: step says it cannot finish before its deadline stops there (status ``"no time"``)
_STEPS_EXPECTED = 100
#: the same from a ``start`` near the path's end (14-23 on breast-cancer-std-k8)
_WARM_STEPS_EXPECTED = 30
#: the primal–dual steps a cold run is expected to take (:func:`~.pd_barrier.pd_path`,
#: 20-40 on the battery's rows, each about four of the dual path's)
_PD_STEPS_EXPECTED = 40
#: the same from a ``start`` with the primal iterate's factor (4-5 on breast-cancer-std-k8)
_PD_WARM_STEPS_EXPECTED = 10
#: how a primal–dual path may end for the dual path to finish the run from its point
_PD_HANDOVER = ("stalled", "numerical failure", "max_iter")
#: a warm primal–dual start's matrix is the iterate's :math:`W_cW_c^T` plus this share of
#: the start's barrier weight times I (positive definite; 1e-5 to 1 measured alike,
#: docs/tuning.md "The warm barrier on the primal-dual path")
_PD_WARM_RIDGE = 1e-3


@dataclass
class DualBarrierResult:
    """Outcome of :func:`dual_barrier`: strictly feasible multipliers ``y``, their dual value
    ``bound`` :math:`= -\\bar D^Ty`, the duality gap ``gap`` to the smallest primal
    objective of its primal estimates (weak duality: the optimum lies in
    ``[bound, bound + gap]``; ``inf`` before the first step), and how it ended."""

    y: np.ndarray
    bound: float
    gap: float
    status: str   # "converged", "max_iter", "deadline", "no time", "stalled",
    #               "numerical failure", "no interior point"
    iterations: int
    seconds: float
    #: how to rebuild the smallest primal estimate (:func:`~.barrier_point.barrier_factor`):
    #: its multipliers, barrier weight, Newton step (``None``: :math:`\mu S^+`) and slack
    #: scale, and a fifth entry, the matrix itself, where it is the primal–dual path's
    primal: tuple | None = None


def _barrier_parameter(space: FactorSpace, pen: DistancePenalty) -> float:
    r""":math:`\bar\nu = (n - 1) + 2m` of :func:`dual_barrier`'s barrier: the log-det of
    the slack on the centred space (dimension :math:`n - 1`) and the two sides of each
    edge multiplier's box."""
    return space.dim - 1 + 2 * pen.t.size


def dual_barrier_fits(space: FactorSpace, pen: DistancePenalty) -> bool:
    """Whether :func:`dual_barrier` applies: ``"interval"`` distances in the full space,
    without an SNR constraint or added rows, n <= ``DenseLimits.eig`` (dense n x n
    matrices) and at most ``_BARRIER_EDGES`` edges."""
    return (pen.mode == "interval" and space.Q is None and space.H is None
            and space.K is None and space.dim <= space.limits.eig
            and pen.t.size <= _BARRIER_EDGES)


def dual_barrier(space: FactorSpace, pen: DistancePenalty, *, rel_gap: float,
                 deadline: float = np.inf,
                 max_iter: int = 300,
                 start: tuple[np.ndarray, float] | None = None,
                 start_factor: np.ndarray | None = None) -> DualBarrierResult:
    r"""Multipliers near the dual optimum, strictly feasible, by a barrier method on :math:`y`.

    The dual of the ``"interval"`` Gram SDP is

    .. math::

        \max_y\ -\bar D^Ty\quad\text{s.t.}\quad S(y) = \tilde C + E^T\mathrm{diag}(y)E
        \succeq 0 \text{ on } \mathbf 1^\perp,\quad |y_e|\le w_e .

    Its logarithmic barrier
    :math:`f_\mu(y) = \bar D^Ty - \mu\,(\log\det S(y) + \sum_e\log(w_e - y_e)
    + \log(w_e + y_e))` is self-concordant after division by :math:`\mu`, so damped Newton
    steps :math:`y \leftarrow y + \Delta y/(1 + \delta)` (:math:`\delta` the Newton
    decrement) stay strictly feasible and centre the point whatever the conditioning of
    the feasible set (Nesterov & Nemirovskii 1994); :math:`\mu` is then reduced (the path
    of :func:`~.barrier_path.barrier_path`). The gradient is
    :math:`\bar D - \mu(\mathrm{diag}(ES^{-1}E^T) - 1/(w - y) + 1/(w + y))`, the Hessian
    :math:`\mu((ES^{-1}E^T)^{\circ 2} + \mathrm{diag}(1/(w-y)^2 + 1/(w+y)^2))`, with
    :math:`S^{-1}` the inverse on :math:`\mathbf 1^\perp` (of :math:`PSP + \mathbf
    1\mathbf 1^T/n`): an n x n inverse and an m x m Cholesky factorisation per step.

    Every :math:`X \succeq 0` is primal feasible (the distances are penalised, not
    constrained), so each step also yields a primal value: of the dual-scaling estimate
    :math:`X = \mu S^{-1}(S - \Delta S)S^{-1}` (Benson, Ye & Zhang 2000;
    :math:`\Delta S = E^T\mathrm{diag}(\Delta y)E`, positive semidefinite where
    :math:`S(y - \Delta y) \succeq 0`) or of :math:`\mu S^{-1}`, both from
    :math:`ES^{-1}E^T` and the Hessian at no m x m cost. The smallest so far, minus
    :math:`-\bar D^Ty`, is a verified duality gap: the iteration stops once it is below
    ``rel_gap`` times :math:`|\bar D^Ty|`, and a centred point's next :math:`\mu` is at
    most that gap over :math:`\nu = n - 1 + 2m` (the central point for :math:`\mu` is
    within :math:`\mu\nu` of the optimum). The first multipliers are
    :math:`(1-\epsilon)w` (:math:`S(w)` is the largest slack over the box), with
    :math:`\epsilon` halved until :math:`S` is positive definite there.

    This replaces the first-order multipliers of the augmented Lagrangian where they stall
    (docs/tuning.md, "Moons: the dual optimum by a barrier method"); the result is only a
    candidate, certified like any other dual point. ``deadline``: a
    :func:`time.perf_counter` value after which the last strictly feasible point is
    returned (status ``"deadline"``); where the first step shows that
    ``_STEPS_EXPECTED`` steps would pass it (the user's time limit), the run stops there
    (status ``"no time"``).
    ``start``: strictly feasible multipliers and a barrier weight to begin from instead
    (:mod:`~sdpembed.lowrank.barrier_start`); ignored where S is not positive definite there.
    ``start_factor``: with ``start``, the primal iterate's factor W there: the run then
    follows the primal–dual path from :math:`X = W_cW_c^T + \epsilon I` (:math:`W_c` the
    centred factor, :math:`\epsilon` ``_PD_WARM_RIDGE`` times the start's weight).
    Only where :func:`dual_barrier_fits`.

    From the cold start the run first follows the primal–dual path of
    :func:`~.pd_barrier.pd_path` (4-8x fewer steps, docs/tuning.md "The dual barrier's
    step count"); where that path stalls, the path above finishes from its multipliers at
    the weight of its verified gap over :math:`\nu`. ``iterations`` counts both.
    """
    t0 = time.perf_counter()
    n, m = space.dim, pen.t.size
    w, t = pen.w, pen.t
    nu0 = space.duals(None)
    scale = _gershgorin(space, w, nu0) + 1.0
    best = [np.inf]     # the smallest primal value so far
    where = [None]      # DualBarrierResult.primal of that value

    def factor(y):
        return _slack_cholesky(space, y, nu0, scale)

    def barrier(y, inv, mu):
        """:math:`f_\\mu(y)` at strictly feasible ``y`` (``inv[1]``: log det of S there)."""
        return float(t @ y) - mu * (inv[1] + float(np.sum(np.log(w - y))
                                                   + np.sum(np.log(w + y))))

    def dual(y):
        return -float(t @ y)

    def newton_system(y, inv, mu):
        """The gradient :math:`\\bar D - \\mu(\\mathrm{diag}(P) - 1/(w - y) + 1/(w + y))`
        and the Hessian over :math:`\\mu`, :math:`P^{\\circ 2} + \\mathrm{diag}(1/(w-y)^2
        + 1/(w+y)^2)`, with :math:`P = ES^{-1}E^T`: two sparse-dense products (the incidence
        rows a_e = e_i - e_j have two nonzeros), a third of the time of gathering the
        columns of the m x n product."""
        Li = sla.solve_triangular(inv[0], np.eye(n), lower=True, check_finite=False)
        P = np.asarray(space.E @ (space.E @ (Li.T @ Li)).T)
        up, lo = w - y, w + y
        grad = t - mu * (np.diag(P) - 1.0 / up + 1.0 / lo)
        Hm = P * P
        Hm[np.diag_indices(m)] += 1.0 / up**2 + 1.0 / lo**2
        return Hm, grad, (P, Hm, up, lo)

    def estimate(y, inv, mu, dy, aux):
        """Records the primal objective of the dual-scaling estimate
        :math:`X = \\mu S^{-1}(S - \\Delta S)S^{-1}` (:math:`\\Delta S =
        E^T\\mathrm{diag}(dy)E`) where :math:`S(y - dy) \\succeq 0`, else of
        :math:`\\mu S^{-1}`, the smaller: every :math:`X \\succeq 0` is primal feasible (the
        distances are penalised), so each is an upper bound on the optimum. Converged once
        the smallest so far is within ``rel_gap`` of the dual value."""
        P, Hm, up, lo = aux
        diagP = np.diag(P)

        def value(trace_SX, r):
            return dual(y) + trace_SX + float(np.sum(w * np.abs(r - t) - y * (r - t)))
        out, how = value(mu * (n - 1), mu * diagP), None
        if factor(y - dy) is not None:
            PPdy = Hm @ dy - (1.0 / up**2 + 1.0 / lo**2) * dy
            scaled = value(mu * (n - 1 - float(dy @ diagP)), mu * (diagP - PPdy))
            out, how = (scaled, dy.copy()) if scaled < out else (out, None)
        if out < best[0]:
            best[0], where[0] = out, (y.copy(), mu, how, scale)
        return best[0] - dual(y) <= rel_gap * abs(dual(y))

    def to_box(y, dy):
        with np.errstate(divide="ignore"):
            return np.min(np.where(dy > 0, (w - y) / dy, np.where(dy < 0, -(w + y) / dy,
                                                                  np.inf)))

    problem = BarrierProblem(factor=factor, value=barrier, newton_system=newton_system,
                             estimate=estimate, to_boundary=to_box,
                             centred_gap=lambda y: best[0] - dual(y),
                             nu_bar=_barrier_parameter(space, pen))
    with threadpool_limits(limits=1, user_api="blas"):
        eps, y, inv = 1e-2, None, None
        if start is not None and np.all(np.abs(start[0]) < w):
            y, inv = start[0], factor(start[0])
        cold = inv is None
        for _ in range(0 if inv is not None else 60):
            y = (1.0 - eps) * w
            inv = factor(y)
            if inv is not None:
                break
            eps *= 0.5
        if inv is None:
            return DualBarrierResult(w.copy(), -float(t @ w), np.inf, "no interior point", 0,
                                     time.perf_counter() - t0)
        # a barrier weight of the size of the objective per barrier term
        mu = max(abs(float(t @ y)), 1e-300) / problem.nu_bar if cold else start[1]
        done = 0
        if cold or start_factor is not None:
            X0 = None
            if not cold:
                Wc = start_factor - start_factor.mean(axis=0)
                X0 = Wc @ Wc.T
                X0[np.diag_indices(n)] += _PD_WARM_RIDGE * mu
            pd = pd_path(space, t, w, nu0, scale, y, mu, rel_gap=rel_gap, t0=t0,
                         deadline=deadline, max_iter=max_iter, X0=X0,
                         steps_expected=_PD_STEPS_EXPECTED if cold
                         else _PD_WARM_STEPS_EXPECTED)
            best[0], where[0] = pd.upper, (pd.y, pd.mu, None, scale, pd.X)
            done, y = pd.iterations, pd.y
            if pd.status not in _PD_HANDOVER or done >= max_iter:
                return DualBarrierResult(y, dual(y), best[0] - dual(y), pd.status, done,
                                         time.perf_counter() - t0, where[0])
            # the dual path from there, at the weight whose central point is within the
            # verified gap (the path's own rule; the primal-dual mu can be far below it)
            gap = best[0] - dual(y)
            mu = max(pd.mu, gap / problem.nu_bar) if np.isfinite(gap) else pd.mu
            inv = factor(y)
        path = barrier_path(problem, y, inv, mu, t0=t0, deadline=deadline,
                            max_iter=max_iter - done,
                            steps_expected=(_STEPS_EXPECTED if start is None
                                            else _WARM_STEPS_EXPECTED) if not done else None)
    y = path.x
    return DualBarrierResult(y, dual(y), best[0] - dual(y), path.status,
                             done + path.iterations, time.perf_counter() - t0, where[0])


#: the refinement gate (cheap gap within 100 ``tol``) is passed this many times with
#: :func:`~sdpembed.lowrank.repair.refine_multipliers` before the barrier replaces it; a
#: pass earlier where that pass's refined multipliers fall short of ``tol`` or its
#: certificate attempt fails (:meth:`DualOptimum.early`)
_BARRIER_AFTER = 2

#: above this many edges the barrier (m³/3 flops a step) runs at a pass only when the
#: solve's subproblems have already done as much work as the run is estimated to take
#: (:func:`barrier_work`): the refinement, far cheaper there, certifies many such rows by
#: itself. Work, not seconds: a decision on the clock made the path depend on the load
#: (docs/tuning.md, "A path that does not depend on the clock")
_BARRIER_CHEAP_EDGES = 1500

#: the dense flops (Cholesky, triangular inverse) that take as long as one entry of a
#: subproblem's evaluation or Hessian product (``_ALM.work``: (points + edges) x rank per
#: evaluation, with its Python and sparse overhead), measured on the battery's rows
_FLOPS_PER_ENTRY = 200.0


def barrier_work(n: int, m: int) -> float:
    """The estimated cost of a :func:`dual_barrier` run of ``_STEPS_EXPECTED`` steps on n
    points and m edges, in ``_ALM.work``'s entries: per step an m x m Cholesky factorisation
    (m³/3 flops) and the n x n factorisation and inverse of the slack (n³)."""
    return _STEPS_EXPECTED * (m ** 3 / 3.0 + float(n) ** 3) / _FLOPS_PER_ENTRY


#: the barrier's stopping gap, relative to ``tol``
_BARRIER_GAP = 0.1

#: :meth:`DualOptimum.pair`: a point whose gap to the run's bound lies above ``tol`` and
#: within this multiple of it continues the same run, from its own multipliers, to
#: ``_RESUME_GAP`` times ``tol``, and the point of that continuation is offered where it is
#: the closer (docs/tuning.md, "A barrier point that misses tol by a little")
_RESUME_WITHIN = 2.0
_RESUME_GAP = 0.01

#: :meth:`DualOptimum.pair`: a run that stalled or reached its step limit is paired where
#: its verified gap is within this multiple of ``tol`` (its point takes up to another half)
_PAIR_UNCONVERGED = 0.5

#: :meth:`DualOptimum.rank_short`: the gap to the dual optimum must exceed the augmented
#: Lagrangian's own (cheap) gap by this factor, at least this many outer iterations after
#: the last rank growth
_SHORT_RATIO = 10.0
_SHORT_WINDOW = 2


class DualOptimum:
    """The outer loop's second-order multipliers: :func:`dual_barrier`, run once per solve
    (the dual optimum does not depend on the iterate) where it fits
    (:func:`dual_barrier_fits`) and the first-order multipliers, refined, did not certify
    at ``_BARRIER_AFTER - 1`` passes of the refinement gate, or fell short of ``tol``
    there (:meth:`early`) (above ``_BARRIER_CHEAP_EDGES`` edges, once the subproblems
    have done as much work as the barrier is estimated to take, :func:`barrier_work`);
    from then on its multipliers replace the refinement (docs/tuning.md, "Moons: the
    dual optimum by a barrier method")."""

    def __init__(self, space: FactorSpace, pen: DistancePenalty, tol: float):
        self.space, self.pen, self.tol = space, pen, tol
        self.fits = dual_barrier_fits(space, pen)
        self.warm = warm_fits(space, pen, _BARRIER_EDGES)   # from the refined multipliers
        self.passes = 0
        self.result: DualBarrierResult | None = None
        #: above the cold cap: the factor and refined multipliers of the last pass
        self._refined: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.adopted = self.paired = False
        #: a solve from a previous solve's multipliers on the same graph (a sweep): its
        #: barrier counts as paid for (:meth:`paid_for`) from its first step on
        self.prepaid = False
        #: the deadline of the last run, for its continuation (:meth:`pair`)
        self._deadline = np.inf
        #: whether :meth:`pair` continued the run (once)
        self.resumed = False

    def rank_short(self, cheap_gap: float, gap: float, since_growth: int) -> bool:
        """Whether the iterate looks stationary for a factor of too low a rank: the dual
        optimum is known, the iterate's gap ``gap`` to it is above ``tol`` and
        ``_SHORT_RATIO`` times the cheap gap of the augmented Lagrangian's own multipliers
        (which agree with the iterate: the subproblem converged), ``_SHORT_WINDOW`` outer
        iterations or more after the last growth. The refinement's certificate attempt
        used to find the missing dimension there (its negative eigenvalue); the barrier's
        multipliers, being PSD, cannot, so the caller grows the rank along the negative
        eigenvalues of :math:`S` at the current multipliers instead."""
        return (self.result is not None and since_growth >= _SHORT_WINDOW
                and gap > self.tol and gap > _SHORT_RATIO * cheap_gap)

    def adopt(self) -> tuple[np.ndarray, np.ndarray] | None:
        r"""The barrier's multipliers for the augmented Lagrangian to continue from, once,
        when the barrier has converged; else ``None``. At the dual optimum
        :math:`y^\star` the subproblem's minimiser is a primal optimum (strong duality),
        which first-order updates at a capped penalty approach only by a creep of the
        multipliers (docs/tuning.md, "Moons: the dual optimum by a barrier method")."""
        if self.adopted or self.result is None or self.result.status != "converged":
            return None
        self.adopted = True
        return self.result.y.copy(), self.space.duals(None)

    def pair(self, W: np.ndarray, y: np.ndarray, nu: np.ndarray) -> BarrierPair | None:
        """Once, after a run that converged, or that stalled or reached its step limit with
        its verified gap within ``tol`` (:meth:`_pairable`): its smallest primal estimate as
        a factor of the fewest leading eigenpairs (from the rank of the iterate ``W``)
        within half of ``tol`` of that estimate's objective, with the run's multipliers, led
        by the augmented Lagrangian's ``(y, nu)`` (:func:`~.barrier_point.barrier_factor`);
        ``None`` otherwise. The pair proves the run's own gap whatever the iterate
        (docs/tuning.md, "The slow rows at n <= 600"). A converged run's point above ``tol``
        of the run's bound but within ``_RESUME_WITHIN`` of it continues the run first
        (:meth:`_resume`)."""
        res = self.result
        if self.paired or not self._pairable(res):
            return None
        self.paired = True
        nu0 = self.space.duals(None)
        got = self._point(res, W.shape[1])
        if got is not None and res.status == "converged" and (
                self.tol < relative_gap(got[1], res.bound) <= _RESUME_WITHIN * self.tol):
            res, got = self._resume(res, got, W.shape[1])
        return None if got is None else BarrierPair(got[0], res.y, nu0, res.bound, res.status,
                                                    res.iterations, [(y, nu)])

    def _pairable(self, res: DualBarrierResult | None) -> bool:
        """Whether the run ``res`` has a point to pair (:meth:`pair`): it converged, or it
        ended ``"stalled"`` or ``"max_iter"`` with the gap between its smallest primal
        estimate and its bound within ``_PAIR_UNCONVERGED`` times ``tol``, so that the
        factor (another half of ``tol`` from that estimate, :meth:`_point`) can prove
        ``tol`` (docs/tuning.md, "A stalled cold barrier within tol"). Every iterate of
        the run is strictly dual feasible (:math:`S(y)` factored, :math:`|y| < w`), so the
        bound of the last one is valid however the run ended; the certificate checks it
        again."""
        if res is None or res.primal is None:
            return False
        return res.status == "converged" or (
            res.status in ("stalled", "max_iter")
            and relative_gap(res.bound + res.gap, res.bound) <= _PAIR_UNCONVERGED * self.tol)

    def _point(self, res: DualBarrierResult, k0: int) -> tuple[np.ndarray, float] | None:
        """The run's smallest primal estimate as a factor from ``k0`` eigenpairs up, within
        half of ``tol`` of that estimate's objective (:func:`~.barrier_point.barrier_factor`)."""
        y_b, mu, dy, scale, *X = res.primal
        return barrier_factor(self.space, self.pen, y_b, mu, dy, scale, self.space.duals(None),
                              k0, 0.5 * self.tol * abs(res.bound), X=X[0] if X else None)

    def _resume(self, res: DualBarrierResult, got: tuple[np.ndarray, float],
                k0: int) -> tuple[DualBarrierResult, tuple[np.ndarray, float]]:
        """The converged run ``res``, whose point ``got`` lies above ``tol`` of its bound but
        within ``_RESUME_WITHIN`` of it, continued from its own multipliers (at the barrier
        weight of its verified gap over the barrier parameter) to ``_RESUME_GAP`` times
        ``tol``; the continuation and its point where that point's gap to its bound is the
        smaller, else ``res`` and ``got`` (docs/tuning.md, "A barrier point that misses tol by
        a little")."""
        self.resumed = True
        more = dual_barrier(self.space, self.pen, rel_gap=_RESUME_GAP * self.tol,
                            deadline=self._deadline,
                            start=(res.y, res.gap / _barrier_parameter(self.space, self.pen)))
        if more.status != "converged" or more.primal is None:
            return res, got
        again = self._point(more, k0)
        if again is None or relative_gap(again[1], more.bound) >= relative_gap(got[1], res.bound):
            return res, got
        self.result = DualBarrierResult(more.y, more.bound, more.gap, more.status,
                                        res.iterations + more.iterations,
                                        res.seconds + more.seconds, more.primal)
        return self.result, again

    @property
    def _usable(self) -> bool:
        """Whether the barrier has run to its end, converged or at its iteration or line
        search limit (its multipliers then replace the refinement); a run stopped by its
        deadline (or that found no strictly feasible point, or failed) leaves them to the
        refinement, whose shifted bound is better than an arbitrary interior point's."""
        return self.result is not None and self.result.status in (
            "converged", "max_iter", "stalled")

    @property
    def label(self) -> str:
        """The certificate note's prefix for the second candidate: the barrier's multipliers
        once they replace the refinement (:meth:`candidate`), else the refined ones."""
        return "barrier multipliers; " if self._usable else "refined multipliers; "

    def candidate(self, deadline: float, work: float = 0.0, *, final: bool = False,
                  refine: tuple[np.ndarray, Callable[[], tuple[np.ndarray, np.ndarray]]]
                  | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """``(y, nu)`` from the barrier, or ``None`` where the refinement is to run instead.
        ``work``: the subproblems' work so far (``_ALM.work``); ``final``: the last
        certificate of a stopped solve (no pass counted); ``refine``: ``(W, f)`` with ``f()``
        the refined multipliers at the factor ``W``, the start of the barrier above its cold
        cap (:mod:`~sdpembed.lowrank.barrier_start`; their ``(y, nu)`` are returned where
        it does not run to its end)."""
        if not self.fits:
            if self.warm and refine is not None and not final:
                return self._warm(deadline, *refine)
            return (self.result.y, self.space.duals(None)) if self._usable else None
        self.passes += 0 if final else 1
        if self.result is None and (final or self.passes >= _BARRIER_AFTER):
            self._cold(deadline, work, final)
        if not self._usable:
            return None     # (not run, or no strictly feasible point: the refinement)
        return self.result.y, self.space.duals(None)

    def _cold(self, deadline: float, work: float, final: bool = False) -> None:
        """The cold barrier run, where time and (above ``_BARRIER_CHEAP_EDGES`` edges) the
        subproblems' ``work`` allow it; kept unless it had no time."""
        if time.perf_counter() >= deadline:
            return
        self._deadline = deadline
        if (self.pen.t.size > _BARRIER_CHEAP_EDGES and not final
                and work < barrier_work(self.space.dim, self.pen.t.size)):
            return
        res = dual_barrier(self.space, self.pen, rel_gap=_BARRIER_GAP * self.tol,
                           deadline=deadline)
        # a run that could not finish in time is not kept: the refinement stands in,
        # and a later pass may try again
        self.result = None if res.status == "no time" else res

    def warm_due(self) -> bool:
        """Whether :meth:`early` is to make the warm run at the end of this step (above
        the cold cap, not run yet, the last pass's factor and refined multipliers kept at
        the pass before ``barrier_start._WARM_AFTER``): the caller's lift of a certificate
        that failed far from ``tol`` is then left out, the run's point being certified in
        the same step (docs/tuning.md, "The last rows over 10 s at n <= 600")."""
        return (self.warm and not self.fits and self.result is None
                and self._refined is not None
                and self.passes == barrier_start._WARM_AFTER - 1)

    def paid_for(self, work: float) -> bool:
        """Whether the cold run fits, has not run, and the subproblems' ``work`` so far
        exceeds its estimated cost (:func:`barrier_work`): it then runs at the end of the
        step (:meth:`early`, ``paid``) whatever the refinement gate, its point certified
        in that outer iteration (:meth:`pair`; docs/tuning.md, "The last rows over 10 s
        at n <= 600"). A solve started from a previous solve's multipliers (``prepaid``, a
        sweep) counts that solve's work: its run is paid for from its first step on
        (docs/tuning.md, "The warm barrier's page faults; a sweep's barrier paid for")."""
        return (self.fits and self.result is None
                and (self.prepaid or work >= barrier_work(self.space.dim, self.pen.t.size)))

    def gate(self, deadline: float, work: float, W: np.ndarray,
             refine: Callable[..., tuple[np.ndarray, np.ndarray] | None]
             ) -> tuple[tuple[np.ndarray, np.ndarray], bool]:
        """The refinement gate's multipliers ``(y, nu)`` and whether the cold barrier was
        tried at this pass: :meth:`candidate`'s; else, where the cold run is due
        (:meth:`cold_due`), the refinement's fit if it does not iterate
        (``refine(iterate=False)``), else :meth:`early`'s; else the full fit ``refine()``,
        so a bounded fit that would iterate runs only where the barrier gives nothing
        (docs/tuning.md, "The refinement's bounded fit left to after the cold barrier")."""
        got, tried = self.candidate(deadline, work, refine=(W, refine)), False
        if got is None and self.cold_due(work):
            got = refine(iterate=False)
            if got is None:
                got, tried = self.early(deadline, work), True
        return got or refine(), tried

    def cold_due(self, work: float) -> bool:
        """Whether :meth:`early` (not ``paid``) makes the cold run at the refinement gate's
        pass just counted by :meth:`candidate`, the subproblems' ``work`` so far allowing it
        (:meth:`_cold`): the refined multipliers are then kept only where they reach ``tol``
        or the run gives no usable multipliers."""
        return (self.fits and self.result is None and self.passes == _BARRIER_AFTER - 1
                and (self.pen.t.size <= _BARRIER_CHEAP_EDGES
                     or work >= barrier_work(self.space.dim, self.pen.t.size)))

    def early(self, deadline: float, work: float = 0.0,
              paid: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
        """The barrier's multipliers one pass of the refinement gate early: the cold run at
        the pass before ``_BARRIER_AFTER``, where the barrier fits and has not run; above
        the cold cap, the warm run (:meth:`_warm_run`) from the last pass's factor and
        refined multipliers at the pass before ``barrier_start._WARM_AFTER``; with ``paid``,
        the cold run also at any pass where :meth:`paid_for` holds; else ``None`` (also
        where the run's multipliers are not usable). The outer loop asks where the refined
        multipliers just taken did not close
        ``tol`` (docs/tuning.md, "usps300-tangent-k5, swiss400-dvu-k6 and ionosphere"), and
        again at the end of a step that did not certify, so that the point of a run made
        there (:meth:`pair`) is certified in the same outer iteration (docs/tuning.md, "The
        breast-cancer rows")."""
        if self.warm and not self.fits:
            if self.warm_due():
                W, y_ref, nu_ref = self._refined
                got = self._warm_run(deadline, W, y_ref, nu_ref)
                return got if self._usable else None
            return None
        if not self.fits or self.result is not None or (
                self.passes != _BARRIER_AFTER - 1 and not (paid and self.paid_for(work))):
            return None
        self._cold(deadline, work)
        return (self.result.y, self.space.duals(None)) if self._usable else None

    def _warm(self, deadline: float, W: np.ndarray,
              refine: Callable[[], tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`candidate` above the cold cap: once, at the ``_WARM_AFTER``-th pass of
        the refinement gate (:mod:`~.barrier_start`), the barrier from the refined
        multipliers (:func:`~.barrier_start.warm_start`)."""
        self.passes += 1
        if self.result is None and self.passes >= barrier_start._WARM_AFTER:
            return self._warm_run(deadline, W, *refine())
        if self._usable:
            return self.result.y, self.space.duals(None)
        y_ref, nu_ref = refine()
        self._refined = (W, y_ref, nu_ref)
        return y_ref, nu_ref

    def _warm_run(self, deadline: float, W: np.ndarray, y_ref: np.ndarray,
                  nu_ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The warm run from the refined multipliers ``y_ref`` at the factor ``W``, once:
        its multipliers where usable, else ``(y_ref, nu_ref)``. :meth:`early` runs it one
        pass early, from the last pass's, where that pass did not certify (docs/tuning.md,
        "The warm barrier on the primal-dual path")."""
        start = warm_start(self.space, self.pen, y_ref, W)
        if start is None or time.perf_counter() >= deadline:
            return y_ref, nu_ref
        self._deadline = deadline
        res = dual_barrier(self.space, self.pen, rel_gap=_BARRIER_GAP * self.tol,
                           deadline=deadline, start=start, start_factor=W)
        self.result = None if res.status == "no time" else res
        return (self.result.y, self.space.duals(None)) if self._usable else (y_ref, nu_ref)

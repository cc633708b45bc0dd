"""The outer loop of the augmented Lagrangian: multipliers, penalties, certificates, rank."""

from __future__ import annotations

import logging
import time
from functools import partial

import numpy as np

from ..solve_status import BOUND_TOLERANCE, bound_gap
from .alm import _ALM, extrapolated, tail_window
from .certificate import (
    _UNVERIFIED,
    BLOCK_STOPPED,
    FINAL_SKIPPED,
    OVERRUN_SHARE,
    Certificate,
    _best_certificate,
    _higher_bound,
    relative_gap,
    verify_certificate,
)
from .dual_barrier import DualOptimum
from .edge_price import start_at_prices
from .equality_barrier import EqualityOptimum
from .escape import escape_directions
from .farkas import RayTest, _infeasible_or_failed
from .lifted import _lifted_certificate
from .options import _FINAL_SHARE, LowRankOptions, loop_deadline
from .penalty import DistancePenalty, below_bound, objective_scale
from .point_bound import at_point, point_bound
from .repair import _RESTORE_MAX, refine_multipliers, restore_feasibility
from .result import _TABLE_HEAD, LowRankResult, _SolveState, _table_row
from .rigid import STOP_REASON, StalledEquality
from .shrink import _GN_RANK, _SHRINK_NEAR, _SHRINK_ROUNDS, contract_violated, shrink_cap
from .space import FactorSpace, _sv_ratio, _trim_rank
from .spacing import TrySpacing
from .stall import _LIFT_GAP, _LIFT_GAP_SPARSE, StallGrowth, _null_direction, _saturated
from .sweep import warm_multipliers

logger = logging.getLogger(__name__)


#: largest augmented-Lagrangian penalty, relative to the starting one (the penalty is
#: tripled while the residual stalls): lower caps leave the multipliers converging too
#: slowly, higher ones give subproblems Newton-CG cannot solve accurately; restoration
#: (:func:`restore_feasibility`) does the last of the primal work
_SIGMA_MAX = 81.0

#: the same cap for ``distances="interval"`` (DVU)
_SIGMA_MAX_INTERVAL = 27.0

#: the kink envelope's first penalty relative to the equality problem's 10/mean(D̄):
#: the DVU objective is a small difference of large terms, and a smaller penalty leaves
#: it more weight in the subproblems
_SIGMA_KINK = 0.1

#: the added rows' penalty on leaving the kink: where the kink's last point violates the
#: rows by more than ``_KINK_ROWS_FAR`` (relative, ``FactorSpace.K_violation``), it is
#: raised ``_KINK_ROWS_RAISE`` times for the Huber envelope. A short kink phase leaves the
#: rows' penalty low (it is tripled only on stalled kink iterations) while the rows are
#: far from feasible, and the first Huber subproblems then move the configuration without
#: moving the rows (docs/tuning.md, "The links row at seed 3: the rows' penalty at the
#: Huber start"; the line from "The added rows' far line at the kink exit")
_KINK_ROWS_FAR, _KINK_ROWS_RAISE = 0.1, 9.0

#: ``"interval"`` factors of at most this many entries, no added rows, get Newton-CG once a
#: subproblem took L-BFGS ``_LBFGS_HARD`` iterations (docs/tuning.md, "Small interval ...")
_NEWTON_ENTRIES, _LBFGS_HARD = 1000, 1000

#: L-BFGS iterations per subproblem where ``max_inner`` is ``None``: ``_MAX_INNER_KINK`` for
#: ``"interval"`` with n <= ``DenseLimits.eig`` from the kink envelope (past its exit only
#: with added rows), else ``_MAX_INNER``; a subproblem stopped there is not read as a stall
#: (docs/tuning.md, "Instances with n <= 600 ... eleventh round", "... sixteenth round")
_MAX_INNER, _MAX_INNER_KINK = 6000, 2000

#: the subproblem tolerance is tightened tenfold where the cheap gap, above ``tol``, has
#: not fallen below ``_TIGHTEN_RATIO`` times its value ``_TIGHTEN_WINDOW`` outer iterations
#: before (and no such tightening was made in between), and the last subproblem was
#: stopped by that tolerance in L-BFGS: the rule that ties the tolerance to the gap leaves
#: it put while the gap stalls, and inexact subproblems then creep. Newton-CG's points
#: are not what limits such a gap (docs/tuning.md, "The stalled-gap rule's condition")
_TIGHTEN_WINDOW = 10
_TIGHTEN_RATIO = 0.5

class _OuterLoop(StallGrowth, TrySpacing):
    r"""The augmented-Lagrangian outer loop of :func:`lowrank_solve` and its state.

    Each iteration (:meth:`step`) solves the subproblem at the current multipliers and
    penalty, updates the multipliers :math:`y = \nabla\psi(D)`, and, once the cheap gap
    :math:`(p + \varphi^*(y))/|p|` is small, attempts a certificate
    (:meth:`attempt_certificate`). Between iterations :meth:`schedule` raises the penalties
    and tightens the subproblem tolerance. Weak duality holds across iterations, so the
    loop keeps the lowest objective of any certifiable iterate (``best_primal``; on
    equality constraints the lowest objective plus :math:`\|y\|\|\bar D\|` times the
    relative residual, the first-order cost of that residual) and the highest bound of any
    attempt (``best_dual``), and stops once that pair proves ``tol`` with the bound not
    above the objective.
    """

    def __init__(self, space: FactorSpace, pen: DistancePenalty, alm: _ALM, opts: LowRankOptions,
                 state: _SolveState, t0: float, W: np.ndarray):
        self.space, self.pen, self.alm, self.opts, self.state, self.t0 = \
            space, pen, alm, opts, state, t0
        # one deadline for the solve; the iterations stop earlier, leaving the final
        # certificate its share. Past ``deadline`` only the last certificate and an equality
        # restoration are made (final_point).
        self.deadline = t0 + opts.time_limit
        self.loop_deadline = loop_deadline(t0, opts.time_limit)
        # the final refinement stops halfway into the final share (the certificate needs the rest)
        self.refine_deadline = t0 + (1.0 - 0.5 * _FINAL_SHARE) * opts.time_limit
        alm.deadline = self.loop_deadline
        self.stop_reason, self.cache = "max_outer", state.certificates  # LowRankResult's
        self.cache.deadline, self.skipped = self.deadline, []   # LowRankResult.skipped
        self.cache.slack = OVERRUN_SHARE * opts.time_limit
        self.dual = DualOptimum(space, pen, opts.tol)  # second-order multipliers
        self.eq_dual = EqualityOptimum(space, pen, opts.tol, opts.feas_tol)
        self.W = W
        self.y, self.nu = np.zeros(pen.t.shape[0]), np.zeros(space.q)
        self.g_prev, self.mom, self.mom_gap, self.lbfgs_hard = None, 0, np.inf, False
        if opts.warm_multipliers is not None:
            self.y, self.nu = warm_multipliers(space, pen, opts.warm_multipliers)
            self.dual.prepaid = True    # the previous solve's work pays for the barrier
        quad, _, _ = alm.objective_parts(W)
        # LowRankResult.interval_envelope: which augmented Lagrangian ran (None: not "interval")
        self.envelope = None if pen.mode != "interval" else ("kink" if alm.on_kink else "huber")
        self._start_penalty()
        self.obj_scale = max(abs(quad), 1e-12)
        self.sigma_h = self.sigma_h0 = 10.0 / self.obj_scale
        self.prev_h = np.inf
        # the added rows' penalties: the distance penalty's stiffness in units of each
        # row's size (a squared-distance row starts like an edge)
        self.rho = self.rho0 = None
        self.prev_k = self.k_viol = np.inf
        if space.K is not None:
            t_mean = float(np.mean(pen.t))
            base = self.sigma0 if pen.splitting else 10.0 / t_mean
            self.rho = self.rho0 = base * (t_mean / space.K_scale()) ** 2
        self.gtol, self.cheap_prev, self.tightened = 1e-3, np.inf, 0
        self.rnorm = self.infeas = np.inf  # the last iterate's
        self.ray = RayTest(opts.feas_tol)   # the loop's test for infeasibility
        self.status = "optimal_inaccurate"
        self.it = 0
        self.certificate = Certificate(None, None, "none", "not computed")
        self.best_primal: tuple | None = None  # (objective, factor, infeasibility)
        self.best_dual: Certificate | None = None  # the highest bound (it carries y, nu)
        self.history: list[dict] = []
        # LowRankResult.timings and .max_abs_multiplier: where the time went, max |y_e| per
        # outer iteration (kept out of ``history``, whose keys the fingerprints compare)
        self.timings = {"subproblems": 0.0, "certificates": 0.0, "multipliers": 0.0}
        self.max_abs_y: list[float] = []
        self.last_growth = 0  # outer iteration of the last rank growth
        self.lifts, self.next_try = [], 0   # (outer, lifted gap) of each lift; _space_tries
        self.stall_raise = False  # raise the penalty although the residual is below feas_tol
        self.max_inner = opts.max_inner if opts.max_inner is not None else (
            _MAX_INNER_KINK if alm.on_kink and space.dim <= space.limits.eig else _MAX_INNER)
        # how the last subproblem ended: "newton", "lbfgs" (L-BFGS stopped before its caps),
        # "cut" (L-BFGS stopped at max_inner or at its evaluation cap); None before the first
        self.last_inner: str | None = None
        self.shrink_steps = True  # "shrink": whether Gauss-Newton is still tried (_onto_shrink)
        self.rigid = StalledEquality(pen.mode, opts.tol, opts.feas_tol, self.eq_dual.stall_proof)

    def _lbfgs_end(self, res) -> str:
        return "cut" if res.nit >= self.max_inner or res.stop.endswith("maxfun") else "lbfgs"

    def _start_penalty(self) -> None:
        r"""The first penalty :math:`\sigma_0` of the current envelope and its cap."""
        pen, kind = self.pen, self.alm.kind
        if kind == "interval":  # Huber
            sigma = 10.0 * float(np.mean(pen.w)) / max(np.mean(pen.t), 1e-300)
        elif kind in ("equality", "shrink"):  # equality, shrink, or the kink of "interval"
            sigma = 10.0 / max(np.mean(pen.t), 1e-300)
            if pen.mode == "interval":
                sigma *= _SIGMA_KINK
        else:  # "quadratic": no splitting
            sigma = 1.0
        self.sigma = self.sigma0 = sigma
        self.sigma_cap = _SIGMA_MAX_INTERVAL if kind == "interval" else (
            shrink_cap(self.alm.gn_fits(_GN_RANK)) if kind == "shrink" else _SIGMA_MAX)
        self.prev_res = np.inf

    def _can_raise(self) -> bool:
        """Whether tripling the penalty keeps it within its cap (``sigma_cap`` times its
        start); otherwise it is at the cap."""
        return 3.0 * self.sigma <= (1 + 1e-9) * self.sigma_cap * self.sigma0

    def _extrapolate(self, g: np.ndarray, gap: float) -> np.ndarray:
        """Next multipliers: ``"interval"`` (in its box) and ``"equality"`` at the cap, ``g``
        :func:`extrapolated` (restarted below the cap and when the cheap gap ``gap`` rose);
        else ``g``."""
        g_prev, self.g_prev = self.g_prev, g
        rose, self.mom_gap = gap > self.mom_gap, gap
        if self.pen.mode not in ("interval", "equality") or g_prev is None \
                or self._can_raise() or rose:
            self.mom = 0
            return g
        self.mom += 1
        return extrapolated(g, g_prev, self.mom,
                            self.pen.w if self.pen.mode == "interval" else np.inf)

    def _leave_kink(self, g: np.ndarray, nu: np.ndarray, k_viol: float,
                    kv: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        r"""Switch ``interval_envelope="kink"`` to the Huber envelope once multipliers ``g``
        leave the box :math:`|y_e| \le w_e` (the equality problem's optimum is then not
        known to solve the interval one); returns ``g`` clipped to the box, the Huber
        multipliers the solve goes on from at the Huber envelope's first penalty, and the
        linear multipliers ``nu`` with the added rows on graph edges started at their price
        (:func:`~.edge_price.start_at_prices` at the rows' values ``kv``); with
        added rows the default subproblem cap becomes the Huber envelope's, ``_MAX_INNER``,
        and where the kink's point violates them by more than ``_KINK_ROWS_FAR``
        (``k_viol``) their penalty is raised ``_KINK_ROWS_RAISE`` times (within its cap);
        with added rows the stall rule's window restarts here (``left_kink_at``: the kink's
        cheap gaps are no measure of the Huber envelope's, docs/tuning.md, "The links row
        at seeds 0, 2 and 3: the stall window from the kink exit")."""
        pen = self.pen
        self.alm.leave_kink()
        if self.space.K is not None:
            self.left_kink_at = self.it
        if self.opts.max_inner is None and self.space.K is not None:
            self.max_inner = _MAX_INNER
        if self.space.K is not None and k_viol > _KINK_ROWS_FAR:
            self.rho = np.minimum(_KINK_ROWS_RAISE * self.rho, 1e6 * self.rho0)
        self.envelope = f"kink, then huber from outer iteration {self.it + 1}"
        self._start_penalty()
        return np.clip(g, -pen.w, pen.w), start_at_prices(self.space, pen, nu, kv, self.rho)

    # ------------------------------------------------------------------ iterations
    def run(self) -> None:
        """Outer iterations until certified, out of time or iterations, or diverging."""
        logger.info(_TABLE_HEAD)
        for it in range(1, self.opts.max_outer + 1):
            self.it = it
            entry, step = self.step()
            self.history.append(entry)
            logger.info(_table_row(entry, self.infeas))
            if self.status in ("optimal", "infeasible"):   # infeasible: the barrier's ray
                self.stop_reason = "certified" if self.status == "optimal" else "infeasible"
                break
            if self._late():
                self.stop_reason = "time_limit"
                break
            if self.ray.proves(self.space, self.y, self.nu, self.infeas, it):
                self.status = self.stop_reason = "infeasible"
                break
            if self.rigid.observe(entry, self.infeas, not self._can_raise()):
                self.stop_reason = STOP_REASON
                break
            self.schedule(**step)
            # divergence: the factor grows without bound -> unbounded
            if np.sum(self.W * self.W) > 1e12 * max(self.space.gp.target.sum(), 1.0):
                self.status = "unbounded"
                self.stop_reason = "diverged"
                break

    def _late(self, final: bool = False) -> bool:
        """Whether the outer loop's deadline (``final``: the solve's) has passed."""
        return time.perf_counter() >= (self.deadline if final else self.loop_deadline)

    def solve_subproblem(self):
        """Minimise the augmented Lagrangian over the factor (L-BFGS, or Newton–CG once the
        cheap gap is below 1e-2 or, small ``"interval"`` factor, no added rows, L-BFGS
        struggled); trims null columns. Returns the inner result and whether it trimmed."""
        opts, W = self.opts, self.W
        run = self.alm.subproblem(self.y, self.nu, self.sigma, self.sigma_h, self.rho)
        newton = opts.inner == "newton" or (opts.inner == "auto" and (self.cheap_prev < 1e-2 or (
            self.lbfgs_hard and W.size <= _NEWTON_ENTRIES and self.space.K is None)))
        # "shrink", full space, the first subproblem from zero multipliers: every edge is
        # stretched far past its bound, and the graph's Laplacian is the curvature (a
        # weighted-Laplacian preconditioner: docs/tuning.md, "Shrink-only MVU at n = 2,000")
        first = opts.inner == "auto" and self.pen.mode == "shrink" and self.space.Q is None \
            and self.it == 1 and not np.any(self.y)
        if opts.inner == "plbfgs" or first:
            # isotropic Gauss-Newton weights: 4 sigma z_e z_e^T ~ (2 sigma |z_e|^2 / k) I
            om = self.pen.curvature_weights(self.sigma) / W.shape[1]
            inner = self.space.preconditioner(om)
        else:
            inner = "newton" if newton else None
        gtol = self.gtol * self.obj_scale / np.sqrt(W.size)
        W, res = run(W, gtol, opts.max_newton if newton else self.max_inner, inner,
                     tail_window(self.space, self.cheap_prev, self.history))
        self.last_inner = "newton" if newton else self._lbfgs_end(res)
        if newton and self.pen.mode == "shrink" and opts.inner == "auto" \
                and res.nit >= opts.max_newton and res.gnorm > gtol:
            # "shrink": Newton-CG capped short of the tolerance; L-BFGS finishes (multipliers
            # taken there jump, zero on whole groups of edges, read by the stall rule as a
            # missing rank: docs/tuning.md, "Shrink-only MVU at n = 2,000")
            W, more = run(W, gtol, self.max_inner, None)
            self.last_inner = self._lbfgs_end(more)
            more.nit, more.stop = more.nit + res.nit, f"{res.stop}, then {more.stop}"
            res = more
        self.lbfgs_hard |= self.pen.mode == "interval" and not newton and res.nit >= _LBFGS_HARD
        trimmed = _trim_rank(W)
        self.W = W if trimmed is None else trimmed
        return res, trimmed is not None

    def step(self) -> tuple[dict, dict]:
        """One outer iteration. Returns its history entry and what :meth:`schedule` needs."""
        space, pen, opts = self.space, self.pen, self.opts
        t_sub = time.perf_counter()
        res, trimmed = self.solve_subproblem()
        self.timings["subproblems"] += time.perf_counter() - t_sub
        W = self.W
        g, nu_new, quad, D, h, kv = self.alm.multipliers(W, self.y, self.nu, self.sigma,
                                                         self.sigma_h, self.rho)
        r = pen.residual(D, g, self.y, self.sigma, self.alm.kind)
        rnorm = float(np.linalg.norm(r) / max(np.linalg.norm(pen.t), 1e-300))
        h_viol = space.snr_violation(h, quad)
        k_viol = space.K_violation(kv)
        left_kink = self.alm.on_kink and not pen.in_box(g)
        if left_kink:
            g, nu_new = self._leave_kink(g, nu_new, k_viol, kv)
            self.g_prev, self.mom, self.mom_gap = None, 0, np.inf
        self.y = g
        self.nu = nu_new
        self.max_abs_y.append(float(np.max(np.abs(g), initial=0.0)))
        p = quad + pen.objective(D)
        infeas = max(pen.violation(D), h_viol, k_viol)
        self.rnorm, self.infeas, self.k_viol = rnorm, infeas, k_viol
        lb_cheap = -pen.conjugate(self.y) - space.linear_offset(self.nu)
        cheap_gap = relative_gap(p, lb_cheap)
        self.cheap_prev = cheap_gap
        entry = {"outer": self.it, "rank": W.shape[1], "objective": p, "residual": rnorm,
                 "snr_violation": h_viol, "sigma": self.sigma, "lbfgs_iters": int(res.nit),
                 "inner_stop": res.stop, "cheap_gap": cheap_gap,
                 "seconds": time.perf_counter() - self.t0}
        if space.K is not None:
            entry["constraint_violation"] = k_viol
        if trimmed:
            entry["trimmed_rank"] = W.shape[1]
        if left_kink:
            entry["left_kink"] = True
        feas_target = max(opts.feas_tol, 1e-2 * opts.tol)
        converged_primal = infeas <= opts.feas_tol and (rnorm <= feas_target
                                                          or pen.mode != "equality")
        # the point the certificate is taken at: the iterate, or (equality) the iterate
        # moved onto the constraints when only its residual keeps it from certification,
        # or (interval) the iterate with its edges near the kink moved onto it
        W_c, p_c, infeas_c, certifiable = W, p, infeas, converged_primal
        gate_gap = cheap_gap
        if (not converged_primal and pen.mode == "equality" and rnorm <= _RESTORE_MAX
                and h_viol <= opts.feas_tol and cheap_gap <= 100 * opts.tol):
            restored = self._onto_constraints(W, quad, feas_target)
            if restored is not None:
                W_c, p_c, infeas_c = restored
                certifiable = True
                cheap_gap = relative_gap(p_c, lb_cheap)
                gate_gap = cheap_gap
                entry.update(restored_residual=infeas_c, restored_objective=p_c)
        elif pen.mode == "shrink" and not converged_primal and h_viol <= opts.feas_tol:
            # "shrink": an iterate violating D <= Dbar by more than feas_tol is certified at
            # a repaired point, exactly feasible there
            restored = self._onto_shrink(W, infeas, cheap_gap <= _SHRINK_NEAR * opts.tol)
            if restored is not None:
                W_c, p_c, infeas_c = restored
                if not certifiable:
                    certifiable = True
                    entry["restored_residual"] = infeas_c
                entry.update(restored_objective=p_c)
                cheap_gap = gate_gap = relative_gap(p_c, lb_cheap)
        elif pen.mode == "interval" and cheap_gap <= 100 * opts.tol and (
                certifiable or (space.K is not None and k_viol <= _RESTORE_MAX
                                and h_viol <= opts.feas_tol)):
            # an iterate that violates only added rows is moved onto them first
            restored = self._onto_kink(W, p, lower=certifiable)
            if restored is not None:
                W_c, p_c, infeas_c = restored
                entry.update(restored_objective=p_c)
                if not certifiable:
                    certifiable = True
                    cheap_gap = relative_gap(p_c, lb_cheap)
                    entry["restored_residual"] = infeas_c
                # the multipliers must close the gap to both points before they are tried:
                # the restored objective alone can fall just below their own bound by
                # coincidence, and the iterate's alone can match it while the restored
                # point is lower (either way a futile lift)
                gate_gap = max(cheap_gap, relative_gap(p_c, lb_cheap))
        # equality: compared by objective + |y| |t| residual, first order in the residual
        # (a lower objective alone may only be a less feasible point)
        slope = float(np.linalg.norm(self.y) * np.linalg.norm(pen.t)) \
            if pen.mode == "equality" else 0.0
        # a best point below the proven bound never ends the loop: one not below replaces it
        bound = getattr(self.best_dual, "bound", None)
        new_best = certifiable and (self.best_primal is None or p_c + slope * infeas_c
                                    < self.best_primal[0] + slope * self.best_primal[2] or (
            below_bound(space, *self.best_primal[:2], bound)
            and not below_bound(space, p_c, W_c, bound)))
        if new_best:
            self.best_primal = (p_c, W_c.copy(), infeas_c)
        y_ref, nu_ref, refined_gap = self.y, self.nu, np.inf
        spaced = self._spaced(t_sub)
        if spaced:
            entry["spaced"] = self.next_try     # the outer iteration of the next try
        # "interval": refined only at a new best point (the refinements that closed the
        # gap were all there). Not for "equality", whose restored points are not
        # comparable that way
        if certifiable and cheap_gap <= 100 * opts.tol and not spaced and (
                new_best or pen.mode != "interval"):
            # complementary slackness is fitted at the stationary iterate, not the restored one
            refine = partial(refine_multipliers, space, pen, W, self.y, self.nu,
                             deadline=self.deadline)
            t_dual = time.perf_counter()
            (y_ref, nu_ref), tried = self.dual.gate(self.deadline, self.alm.work, W, refine)
            refined_gap = relative_gap(p_c, -pen.conjugate(y_ref) - space.linear_offset(nu_ref))
            if refined_gap > opts.tol and not tried and (got := self.dual.early(
                    self.deadline, self.alm.work)) is not None:
                y_ref, nu_ref = got     # the refinement fell short: the barrier now
                refined_gap = relative_gap(p_c, -pen.conjugate(y_ref)
                                           - space.linear_offset(nu_ref))
            self.timings["multipliers"] += time.perf_counter() - t_dual
            entry["refined_cheap_gap"] = refined_gap
        if certifiable and min(gate_gap, refined_gap) <= opts.tol and not spaced:
            candidates = [(self.y, self.nu)] + (
                [(y_ref, nu_ref)] if refined_gap <= opts.tol else [])
            t_cert = time.perf_counter()
            self.attempt_certificate(entry, candidates, p, p_c, lb_cheap)
            self.timings["certificates"] += time.perf_counter() - t_cert
        elif not spaced and not self._late() and self.last_inner != "cut" and (
                self._stalled(cheap_gap)
                or self.dual.rank_short(cheap_gap, refined_gap, self.it - self.last_growth)):
            t_cert = time.perf_counter()
            grew = self._grow_on_stall(entry)
            self.timings["certificates"] += time.perf_counter() - t_cert
            # no missing dimension, the primal converged: the multipliers are what lags,
            # and they move by sigma_e r_e (docs/tuning.md, "LOWRANK robustness, dense graphs")
            self.stall_raise = not grew and converged_primal
        if self.status != "optimal" and (np.isfinite(refined_gap)
                                         or self.dual.paid_for(self.alm.work)):
            t_dual = time.perf_counter()     # the next pass's barrier, now (its pair below)
            self.dual.early(self.deadline, self.alm.work, paid=not np.isfinite(refined_gap))
            self.timings["multipliers"] += time.perf_counter() - t_dual
        if self.status != "optimal" and (pair := self.dual.pair(W, self.y, self.nu)) is not None:
            self._barrier_pair(entry, pair)     # the interval barrier's point, once
        elif self.status != "optimal" and self.eq_dual.wanted(
                self.sigma > self.sigma0 * (1 + 1e-9), not self._can_raise(), converged_primal,
                cheap_gap):
            self._barrier_pair(entry)
        return entry, {"h_viol": h_viol, "k_viol": k_viol, "cheap_gap": cheap_gap,
                       "converged_primal": converged_primal, "inner_iterations": res.nit}

    def _barrier_pair(self, entry: dict, res=None) -> None:
        """``"equality"``, the residual stalled (``EqualityOptimum.wanted``), or ``res`` (from
        ``DualOptimum.pair``): the barrier's primal point and multipliers, certified as a pair
        (the loop ends where they prove ``tol``); else its multipliers' infeasibility proof."""
        t_b = time.perf_counter()
        res = self.eq_dual.run(self.loop_deadline) if res is None else res
        if res is not None:
            W_b = res.points
            quad, D, h = self.alm.objective_parts(W_b)
            p_b, inf_b = quad + self.pen.objective(D), self._infeasibility(W_b, quad, D, h)
            entry["barrier"] = {"status": res.status, "iterations": res.iterations,
                                "objective": p_b, "infeasibility": inf_b}
            if inf_b <= self.opts.feas_tol:
                if self.best_primal is None or p_b < self.best_primal[0]:
                    self.best_primal = (p_b, W_b, inf_b)
                self.attempt_certificate(entry, [*getattr(res, "lead", ()), (res.y, res.nu)],
                                         p_b, p_b, res.bound)
        elif (ray := self.eq_dual.farkas()) is not None:   # reported: _classify_infeasible
            self.y, self.nu, self.best_dual, self.status = *ray, None, "infeasible"
        self.timings["certificates"] += time.perf_counter() - t_b

    def _onto_constraints(self, W, quad: float, feas_target: float):
        """``(W_r, p_r, r_r)``: ``"equality"`` iterate ``W`` moved onto its constraints
        (:func:`restore_feasibility`) when that reaches ``feas_target`` and keeps the SNR
        constraint within ``feas_tol`` of ``quad``, the iterate's quadratic term, and the
        added rows within ``feas_tol`` (the move may break them); else ``None``. ``r_r``:
        the larger of the distance rows' and the added rows' violations."""
        space, pen, opts = self.space, self.pen, self.opts
        W_r, r_r = restore_feasibility(space, pen, W, tol=0.1 * feas_target,
                                       deadline=self.deadline)
        quad_r, D_r, h_r = self.alm.objective_parts(W_r)
        k_r = self._rows_violation(W_r)
        if r_r <= feas_target and space.snr_violation(h_r, quad) <= opts.feas_tol \
                and k_r <= opts.feas_tol:
            return W_r, quad_r + pen.objective(D_r), max(r_r, k_r)
        return None

    def _infeasibility(self, W, quad: float, D: np.ndarray, h) -> float:
        """Relative infeasibility of the point ``W`` (its ``objective_parts`` ``quad, D, h``):
        the distance rows (:meth:`DistancePenalty.violation`), the SNR constraint and the
        added rows."""
        return max(self.pen.violation(D), self.space.snr_violation(h, quad),
                   self._rows_violation(W))

    def _rows_violation(self, W) -> float:
        """Relative violation of the added rows at ``W`` (0 without any)."""
        space = self.space
        return 0.0 if space.K is None else space.K_violation(space.K_values(W))

    def _onto_shrink(self, W, infeas: float, near: bool):
        r"""``(W_r, p_r, infeas_r)``: ``"shrink"`` iterate ``W`` scaled by the largest
        :math:`\alpha \le 1` with :math:`\alpha^2 D(W) \le \bar D` (centring and the SNR
        constraint are homogeneous and kept), when the added rows stay within
        ``feas_tol``; else ``None``. ``W`` itself when it is feasible (``infeas`` 0).
        When ``near`` (the gap is nearly closed), also the iterate with its violated edges
        contracted first (:func:`~.shrink.contract_violated`, full space) and the iterate moved
        onto its violated and active edges first (:func:`restore_feasibility`), each then
        scaled; the lowest objective is kept. Rounds that leave a violation above 1e-12
        end those moves for the rest of the solve."""
        space, pen = self.space, self.pen
        if infeas == 0.0:
            quad, D, _ = self.alm.objective_parts(W)
            return W, quad + pen.objective(D), 0.0
        starts = [W]
        if near and space.Q is None:
            starts.append(contract_violated(space, pen, W))
        if near and self.shrink_steps:
            # the violated and active edges moved onto D_e = Dbar_e first (the scaling
            # alone costs the largest violation on every edge); the steps can push slack
            # edges over their bound, which join the set in the next round
            V = W
            for _ in range(_SHRINK_ROUNDS):
                V = restore_feasibility(space, pen, V, tol=1e-12, deadline=self.deadline)[0]
                if pen.violation(self.alm.objective_parts(V)[1]) <= 1e-12 \
                        or self._late(final=True):
                    break
            else:
                # more rows on their bound than the factor has freedom (a low rank): the
                # steps cannot reach them, and are not tried again in this solve
                self.shrink_steps = False
            starts.append(V)
        best = None
        for V in starts:
            W_r = pen.shrink_scale(self.alm.objective_parts(V)[1]) * V
            quad_r, D_r, h_r = self.alm.objective_parts(W_r)
            infeas_r = self._infeasibility(W_r, quad_r, D_r, h_r)
            p_r = quad_r + pen.objective(D_r)
            if infeas_r <= self.opts.feas_tol and (best is None or p_r < best[1]):
                best = (W_r, p_r, infeas_r)
        return best

    def _onto_kink(self, W, p: float, lower: bool = True):
        """``(W_r, p_r, infeas_r)``: ``"interval"`` iterate ``W`` with the edges just off the
        kink moved onto it (their slack penalty is the cost) and the added rows held at
        their bounds, when that lowers the objective ``p`` (unless ``lower`` is false: the
        iterate violated added rows, so ``p`` bounds nothing) and keeps the SNR constraint
        and the added rows within ``feas_tol``; else ``None``."""
        space, pen = self.space, self.pen
        W_r, _ = restore_feasibility(space, pen, W, tol=1e-12, deadline=self.deadline)
        quad_r, D_r, h_r = self.alm.objective_parts(W_r)
        p_r = quad_r + pen.objective(D_r)
        infeas_r = self._infeasibility(W_r, quad_r, D_r, h_r)
        if (p_r < p or not lower) and infeas_r <= self.opts.feas_tol:
            return W_r, p_r, infeas_r
        return None

    def attempt_certificate(self, entry: dict, candidates: list, p: float, p_c: float,
                            lb_cheap: float) -> None:
        """Certify the candidates (and lift the best, see :func:`_lifted_certificate`); stop
        (status ``"optimal"``) once the best pair proves ``tol``, else grow the rank along the
        negative eigenvector where that eigenvalue keeps the gap open (where ``space.dim`` >
        ``DenseLimits.eig``, only from a saturated factor, :func:`~.stall._saturated`)."""
        space, pen, opts, cache = self.space, self.pen, self.opts, self.cache
        if self._best_understated(entry):
            return
        p_best = self.best_primal[0]
        certificate = _best_certificate(
            space, pen, self.W, candidates, opts, cache, target=p_best - opts.tol * abs(p_best),
            deadline=self.deadline, label=self.dual.label, lift_from=p_best)
        certificate = self._verified_if_closing(certificate, p_c)
        gap = relative_gap(p_c, certificate.bound)
        self.certificate = certificate
        # n > limits.eig: a Lanczos (unverified) gap unless it closed (then verified)
        entry.update({"lambda_min": certificate.lambda_min,
                      "certified_gap" if certificate.verified else "estimated_gap": gap})
        self.best_dual = _higher_bound(self.best_dual, certificate)
        t_lift = time.perf_counter()
        # far from tol (_LIFT_GAP; sparse pairs: _LIFT_GAP_SPARSE), lambda_min < 0 at full
        # rank or just grown (fresh): columns, not a lift
        # (n > limits.eig: only from a saturated factor, else the lift first)
        fresh = 0 < self.last_growth == self.it - 1
        lift_gap = _LIFT_GAP_SPARSE if self.space.dim > self.space.limits.eig else _LIFT_GAP
        ratio = _sv_ratio(self.W)       # one SVD for both tests; W is not changed below
        deficient, saturated = _null_direction(ratio), _saturated(space, ratio=ratio)
        grow_first = (gap is not None and gap > lift_gap * opts.tol and certificate.lambda_min
                      is not None and certificate.lambda_min < 0 and self.W.shape[1]
                      < opts.max_rank and (fresh or not deficient) and saturated)
        # nor far from tol where the warm barrier runs at this step's end (its point is
        # certified there; docs/tuning.md, "The last rows over 10 s at n <= 600")
        far = gap is not None and gap > _LIFT_GAP * opts.tol and self.dual.warm_due()
        lifted = None if grow_first or far else _lifted_certificate(
            space, pen, certificate, gap, None if self.best_dual is None
            else self.best_dual.bound, candidates, opts, cache, p_best, deadline=self.deadline)
        if lifted is not None:
            entry.update(lifted_gap=relative_gap(p_c, lifted.bound),
                         lift_seconds=time.perf_counter() - t_lift)
            self.best_dual = _higher_bound(self.best_dual, lifted)
            if space.dim > space.limits.eig:
                self._space_tries(relative_gap(p_best, lifted.bound))
        best = self.best_dual = self._verified_if_closing(self.best_dual, p_best)
        # the gap the report states: the rows relaxed by the point's violations (point_bound)
        combined = relative_gap(p_best, best and point_bound(space, best, self.best_primal[1])[0])
        if combined is not None and gap is not None and combined < gap:
            entry["combined_gap"] = combined
        # never a pair whose bound lies above its point's objective (solve_status refuses it,
        # in the same unit: the size of the objective's terms at the point): an equality
        # point too infeasible for its objective to bound anything; iterate on
        if combined is not None and combined <= opts.tol and bound_gap(
                p_best, best.bound, objective_scale(space.gp, space.points(self.best_primal[1]))
        ) >= -BOUND_TOLERANCE:
            self.status = "optimal"
            self.W = self.best_primal[1]
            self.certificate, self.y, self.nu = best, best.y, best.nu
            return
        # grow the rank only where the negative eigenvalue, not the multipliers,
        # is what keeps the gap open; from a rank-deficient factor too where no bound
        # exists (no coercive anchor): its near-zero columns sit at a saddle the
        # subproblems do not leave, and nothing else moves the multipliers into S >= 0
        # (docs/tuning.md, "110,572: a rank-deficient factor with no bound")
        loss = (lb_cheap - certificate.bound) / max(abs(p), 1e-300) \
            if certificate.bound is not None else np.inf
        if certificate.lambda_min is not None and certificate.lambda_min < 0 \
                and loss > 0.5 * opts.tol and self.W.shape[1] < opts.max_rank \
                and (not deficient or certificate.bound is None) and saturated \
                and not self._late():
            self._grow(escape_directions(self.space, self.cache, certificate,
                                         self.opts.max_rank - self.W.shape[1] - 1), entry)
        self.gtol = max(self.gtol * 0.1, 1e-9)

    def _best_understated(self, entry: dict) -> bool:
        """Whether the best point's infeasibility, measured here in full (distance rows, SNR
        constraint, added rows), exceeds what any path may record, ``max(feas_tol,
        1e-2 tol)``: a path that recorded it from part of its rows. Such a point is dropped
        (never certified, never reported) and ``entry["best_dropped"]`` says by how much."""
        W_b, stated = self.best_primal[1], self.best_primal[2]
        real = self._infeasibility(W_b, *self.alm.objective_parts(W_b))
        if real <= max(self.opts.feas_tol, 1e-2 * self.opts.tol):
            return False
        entry["best_dropped"] = {"stated": stated, "infeasibility": real}
        self.best_primal = None
        return True

    def _verified_if_closing(self, cert: Certificate | None, p: float) -> Certificate | None:
        """``cert``, verified first (:func:`verify_certificate`) if its bound is unverified
        (Lanczos, or for n > ``DenseLimits.eig`` a lifted dense eigenvalue) and would prove
        ``tol`` against ``p`` (as posed, or at the best point: ``point_bound``), i.e. end the
        solve; a failed estimate lets the solve go on, not end at ``optimal_inaccurate``."""
        if cert is None or cert.verified or cert.bound is None or min(relative_gap(
                p, b) for b in (cert.bound, point_bound(self.space, cert, self.best_primal[1])[0])
        ) > self.opts.tol:
            return cert
        return verify_certificate(self.space, self.pen, cert, eig_tol=self.opts.eig_tol,
                                  cache=self.cache)

    def schedule(self, *, h_viol: float, k_viol: float, cheap_gap: float,
                 converged_primal: bool, inner_iterations: int) -> None:
        """Penalties and subproblem tolerance for the next iteration (after :meth:`step`,
        whose residual is ``self.rnorm``)."""
        pen, opts, rnorm = self.pen, self.opts, self.rnorm
        if pen.splitting or self.space.H is not None:
            # raise the penalty while the split residual stalls above tolerance, up to
            # _SIGMA_MAX (_SIGMA_MAX_INTERVAL) times its start (a larger one only worsens
            # the subproblems' conditioning, and restore_feasibility does the last of the
            # primal work)
            raise_sigma = (rnorm > max(0.25 * self.prev_res, opts.feas_tol)
                           or self.stall_raise) and self._can_raise()
            self.stall_raise = False
            # the SNR penalty has its own schedule: its violation can stall while the
            # distance residual is fine
            raise_h = raise_sigma or (h_viol > max(0.25 * self.prev_h, opts.feas_tol)
                                      and self.sigma_h < 1e6 * self.sigma_h0)
            self.sigma *= 3.0 if raise_sigma else 1.0
            self.sigma_h *= 3.0 if raise_h else 1.0
            self.prev_res, self.prev_h = rnorm, h_viol
        if self.space.K is not None:
            # the added rows' penalties, on the same rule as the SNR one
            if k_viol > max(0.25 * self.prev_k, opts.feas_tol) \
                    and np.all(self.rho < 1e6 * self.rho0):
                self.rho = 3.0 * self.rho
            self.prev_k = k_viol
        if cheap_gap > opts.tol or not converged_primal:
            self.gtol = max(min(self.gtol, 0.1 * max(cheap_gap, rnorm)), 1e-10)
        w = _TIGHTEN_WINDOW
        if cheap_gap > opts.tol and len(self.history) > w and self.it - self.tightened >= w \
                and cheap_gap > _TIGHTEN_RATIO * self.history[-1 - w]["cheap_gap"] \
                and self.last_inner == "lbfgs":
            self.gtol, self.tightened = max(self.gtol * 0.1, 1e-12), self.it
        if inner_iterations == 0 and (not converged_primal or cheap_gap > opts.tol):
            # the subproblem was already "solved" at this tolerance: tighten it, or the
            # outer loop would repeat the same point
            self.gtol = max(self.gtol * 0.1, 1e-12)
        if not pen.splitting and self.space.H is None and not converged_primal:
            self.gtol = max(self.gtol * 0.1, 1e-10)
        self.y = self._extrapolate(self.y, cheap_gap)
        if (pair := self.dual.adopt()) is not None:  # the dual optimum: the ALM goes on from it
            (self.y, self.nu), self.g_prev, self.mom, self.mom_gap = pair, None, 0, np.inf

    # ------------------------------------------------------------------ the answer
    def final_point(self) -> tuple[np.ndarray, float]:
        """The reported factor (in the space's coordinates) and its objective; sets the
        reported certificate and multipliers.

        Certified: the best pair. Stopped by a limit: the best pair if any attempt gave a
        bound, else the best (or, in equality mode, the more feasible last) iterate with the
        last multipliers certified (every large solve reports a bound, however loose, or
        says why it has none). Past the solve's deadline the equality restoration and that
        one certificate are still made where it is dense (n <= ``limits.eig``: bounded), the
        refinement of the multipliers is not (``skipped`` names what was not made)."""
        space, pen, alm, opts = self.space, self.pen, self.alm, self.opts
        W, status, best_dual = self.W, self.status, self.best_dual
        p = alm.true_objective(W)
        if status == "optimal_inaccurate" and best_dual is None and pen.mode == "equality":
            # made even past the deadline (at most its max_steps Gauss-Newton steps), as
            # the certificate is: without it an equality iterate is never a point to report
            W_r, r_r = restore_feasibility(space, pen, W, tol=0.1 * opts.feas_tol)
            if r_r < _RESTORE_MAX and r_r < self.rnorm:
                W, p = W_r, alm.true_objective(W_r)
        if pen.mode == "shrink" and status != "optimal":
            W = pen.shrink_scale(alm.objective_parts(W)[1]) * W   # onto D <= Dbar
            p = alm.true_objective(W)
        if status == "optimal_inaccurate" and best_dual is None \
                and self.cache.final_late(space):
            # checked before the refinement too (_best_certificate checks after it, final):
            # no certificate, said so
            self.certificate = Certificate(None, None, "none", FINAL_SKIPPED, y=self.y, nu=self.nu)
            self.skipped.append("final certificate")
        elif status == "optimal_inaccurate" and best_dual is None:
            cert = _best_certificate(
                space, pen, W, [(self.y, self.nu), self.dual.candidate(
                    self.refine_deadline, final=True) or refine_multipliers(
                    space, pen, W, self.y, self.nu, deadline=self.refine_deadline)],
                opts, self.cache, target=p, deadline=self.deadline, label=self.dual.label,
                final=True)
            self.certificate, self.y, self.nu = cert, cert.y, cert.nu
            self.skipped += ["final certificate"] * cert.note.startswith(
                (FINAL_SKIPPED, BLOCK_STOPPED))
        if status != "optimal" and best_dual is not None:
            self.certificate, self.y, self.nu = best_dual, best_dual.y, best_dual.nu
        if status != "optimal" and self.best_primal is not None and (
                best_dual is not None or (status == "optimal_inaccurate"
                                          and self.best_primal[0] < p)):
            # the best primal point seen, also when the loop made no certificate attempt
            # (the iterates' objectives are not monotone); an equality-mode last iterate
            # that is more feasible is kept
            pb, Wb, infb = self.best_primal
            if not (pen.mode == "equality" and infb > self.infeas):
                W, p = Wb, pb
        return W, p

    def result(self) -> LowRankResult:
        """The :class:`LowRankResult`: final point, its infeasibility, and the reported
        certificate (its Lanczos :math:`\\lambda_{\\min}` verified once, for
        n > ``DenseLimits.eig``)."""
        space, pen, alm, opts, cache = self.space, self.pen, self.alm, self.opts, self.cache
        t_final = time.perf_counter()
        W, p = self.final_point()
        F = space.points(W)
        quad, D, h = alm.objective_parts(W)
        infeas = self._infeasibility(W, quad, D, h)
        status, certificate = self.status, self.certificate
        if status == "optimal_inaccurate" and pen.mode in ("equality", "shrink") \
                and infeas > 1e-2:
            status = _infeasible_or_failed(space, pen, self.y, self.nu, opts)
        # here and not in the outer loop: a sparse factorisation per try
        verify_seconds = None
        if certificate.check in _UNVERIFIED and certificate.bound is not None \
                and cache.late(cache.verify_estimate()):
            self.skipped.append("verification of the final certificate")
        elif certificate.check in _UNVERIFIED and certificate.bound is not None:
            t_v = time.perf_counter()
            certificate = verify_certificate(space, pen, certificate, eig_tol=opts.eig_tol,
                                             cache=cache)
            verify_seconds = time.perf_counter() - t_v
        self.timings["certificates"] += time.perf_counter() - t_final
        # the gap against the bound of the rows relaxed by the point's own violations
        certificate = at_point(space, certificate, W)
        gap = relative_gap(p, certificate.bound)
        bound = certificate.bound
        estimated_gap = estimated_bound = None
        if not certificate.verified:
            # an unverified (Lanczos) bound is an estimate, never reported as certified
            estimated_gap, estimated_bound = gap, bound
            gap = bound = None
            if status == "optimal" and certificate.bound is not None:
                status = "optimal_inaccurate"
        elif status == "optimal" and gap > opts.tol:
            # verification lowered the bound below the target (Lanczos missed an eigenvalue)
            status = "optimal_inaccurate"
        seconds = time.perf_counter() - self.t0
        timings = dict(self.timings)
        timings["other"] = max(seconds - sum(timings.values()), 0.0)
        return LowRankResult(
            factor=F, objective=p, bound=bound, certified_gap=gap, infeasibility=infeas,
            y=self.y, nu=self.nu, status=status, iterations=self.it,
            seconds=seconds, history=self.history, timings=timings,
            max_abs_multiplier=self.max_abs_y,
            certificate=certificate, function_evaluations=alm.nfev,
            interval_envelope=self.envelope, unverified=not certificate.verified,
            estimated_gap=estimated_gap, estimated_bound=estimated_bound,
            verify_seconds=verify_seconds,
            verify_factorisations=[
                {"mu": c.mu, "delta": c.delta, "bound": getattr(c, "bound", None),
                 "mode": getattr(c, "mode", "dense"), "factor_nnz": getattr(c, "factor_nnz", None),
                 "seconds": c.seconds, "verified": c.verified} for c in cache.verify_checks],
            reduced_solver=self.state.reduced_solver, warm_start=self.state.warm_start,
            stop_reason=self.stop_reason, skipped=self.skipped)

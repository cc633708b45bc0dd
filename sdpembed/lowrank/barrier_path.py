r"""One dual log-barrier path, shared by the three barriers on the multipliers.

Each of :func:`~.dual_barrier.dual_barrier` (``"interval"`` edges),
:func:`~.rows_barrier.rows_barrier` (``"interval"`` edges and added rows) and
:func:`~.equality_barrier.equality_barrier` (``"equality"`` edges, SNR and added rows)
solves a dual of the form

.. math::

    \max_x\ -c^Tx\quad\text{s.t.}\quad S(x) = \tilde C + \textstyle\sum_i x_iA_i
    \succeq 0 \text{ on } \mathbf 1^\perp,\qquad x \in \mathcal B,

where :math:`x` stacks the multipliers of the problem's rows and :math:`\mathcal B` is a
box of bounds on some of them (:math:`|y_e| \le w_e` on interval edges, :math:`z_k \ge 0`
on inequality rows and the SNR row, none on equality rows). With
:math:`\beta(x) = \sum_{\text{bounds}}\log(\text{distance to the bound})` and
:math:`\bar\nu` the order of :math:`S` on :math:`\mathbf 1^\perp` plus the number of
finite bounds, the barrier

.. math::

    f_\mu(x) = c^Tx - \mu\,(\log\det S(x) + \beta(x))

is self-concordant after division by :math:`\mu`, and :math:`-\log\det S - \beta` is a
barrier of parameter :math:`\bar\nu` (Nesterov & Nemirovskii 1994). :func:`barrier_path`
follows its central path: at each point a Newton direction :math:`d = -H^{-1}g/\mu`
(:math:`g = \nabla f_\mu`, :math:`\mu H = \nabla^2 f_\mu`; :func:`_newton_direction`)
with the Newton decrement :math:`\delta = \sqrt{-g^Td/\mu}`; a step
:math:`s = \min(1, 0.99\,\bar s)` (``_TO_BOUNDARY``; :math:`\bar s` the largest step
that keeps :math:`x` inside :math:`\mathcal B`), halved until :math:`S` stays positive
definite and :math:`f_\mu` falls by Armijo's share (:func:`_damped_step`); and at a
centred point (:math:`\delta <` ``_CENTRED``)

.. math::

    \mu \leftarrow \min\bigl(0.2\,\mu,\ \mathrm{gap}/\bar\nu\bigr)

(``_MU_FACTOR``; the central point for :math:`\mu` lies within :math:`\mu\bar\nu` of the
optimum, so a weight no larger than the verified gap over :math:`\bar\nu` aims below it),
or :math:`0.2\,\mu` while no gap is known. Every point of the path is strictly feasible,
so its dual value :math:`-c^Tx` is a lower bound; each step's dual-scaling estimate
:math:`X = \mu S^{-1}(S - \Delta S)S^{-1}` (Benson, Ye & Zhang 2000;
:math:`\Delta S = \sum_i d_iA_i`) is the variant's primal point, whose objective closes
the gap.

What differs between the variants is a :class:`BarrierProblem`: the multipliers and
their bounds (the factor of :math:`S`, :math:`f_\mu`, the Newton system, the step to the
bounds), the start (a strictly feasible ``x`` and its :math:`\mu`, found by the variant or
given by its caller), the stopping rule and the gap that sets :math:`\mu` (the variant's
primal estimates), an extra stop after a step (``"infeasible"``), the floor on
:math:`\mu`, the number of halvings, whether the first step is timed against the deadline
(``steps_expected``), and what is returned. The gates that decide when a variant runs
stay with the variants (:class:`~.dual_barrier.DualOptimum`,
:class:`~.equality_barrier.EqualityOptimum`, :func:`~.rows_barrier.solve_by_rows_barrier`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla

from .space import FactorSpace
from .spectrum import _dense_shifted

__all__ = ["BarrierProblem", "BarrierPath", "barrier_path"]


#: the barrier parameter's reduction once a point is centred, and the Newton decrement
#: below which it counts as centred
_MU_FACTOR = 0.2
_CENTRED = 0.5
#: a Newton step goes at most this share of the way to the box's boundary
_TO_BOUNDARY = 0.99


def _cholesky_ridged(H: np.ndarray):
    """``cho_factor`` of ``H``, with a ridge of 1e-14, then 1e-12 times its largest diagonal
    entry where rounding made it indefinite; ``None`` if that fails too."""
    for ridge in (0.0, 1e-14, 1e-12):
        try:
            return sla.cho_factor(H + ridge * float(np.max(np.diag(H))) * np.eye(H.shape[0])
                                  if ridge else H, check_finite=False)
        except sla.LinAlgError:
            continue
    return None


def _slack_cholesky(space: FactorSpace, y: np.ndarray, nu: np.ndarray, scale: float):
    """The lower Cholesky factor of S(y, nu) on 1-perp (plus 11^T/n times ``scale``) and
    its log det, or None where S(y, nu) is not positive definite."""
    M, _ = _dense_shifted(space, y, nu, scale)
    try:
        L = sla.cholesky(M, lower=True, check_finite=False, overwrite_a=True)
    except sla.LinAlgError:
        return None
    return L, 2.0 * float(np.sum(np.log(np.diag(L))))


def _newton_direction(H: np.ndarray, grad: np.ndarray, mu: float):
    """The Newton direction of :math:`f_\\mu` (Hessian :math:`\\mu H`, gradient ``grad``),
    its slope :math:`g^Td` and the Newton decrement :math:`\\sqrt{-g^Td/\\mu}`; ``None``
    where ``H`` is not positive definite, even with :func:`_cholesky_ridged`'s ridge."""
    cf = _cholesky_ridged(H)
    if cf is None:
        return None
    d = -sla.cho_solve(cf, grad, check_finite=False) / mu
    slope = float(grad @ d)
    return d, slope, float(np.sqrt(max(-slope, 0.0) / mu))


def _damped_step(x: np.ndarray, d: np.ndarray, step: float, slope: float, dec: float,
                 f_x: float, factor, f_at, halvings: int):
    """``(x + s d, factor(x + s d))`` for the first ``s`` of ``step``, ``step / 2``, ...
    (``halvings`` tries) where ``factor`` succeeds (the slack stays positive definite) and
    ``f_at(x_new, its factor)`` falls by the Armijo share ``1e-4 s slope`` below ``f_x``;
    ``None`` (stalled) if none does. Within the quadratic convergence region (decrement
    below 1/4) a full Newton step decreases :math:`f_\\mu` (self-concordance): there the
    test would only compare roundings, and positive definiteness alone is asked.

    Stalled too, before its last try, once a step no longer moves ``x`` in floating point
    (``x + s d == x``) at a point not centred (decrement at least ``_CENTRED``): Armijo's
    test holds there trivially (:math:`f_\\mu` unchanged, its share rounded away), and the
    caller, at the same point and :math:`\\mu`, would compute the same direction and the
    same null step until its step or time limit (docs/tuning.md, "The dual barrier's
    null steps"). A centred point's null step is taken: :math:`\\mu` falls after it."""
    for _ in range(halvings):
        x_new = x + step * d
        if dec >= _CENTRED and np.array_equal(x_new, x):
            return None
        fac = factor(x_new)
        if fac is not None and (dec < 0.25 or f_at(x_new, fac) <= f_x + 1e-4 * step * slope):
            return x_new, fac
        step *= 0.5
    return None


@dataclass(frozen=True)
class BarrierProblem:
    r"""What a variant gives :func:`barrier_path`: functions of the stacked multipliers
    ``x`` (a vector), of ``fac`` (what ``factor`` returned at ``x``) and of :math:`\mu`.

    ``factor(x)``: the factor of :math:`S(x)` the other functions read, ``None`` where
    :math:`S(x)` is not positive definite. ``value(x, fac, mu)``: :math:`f_\mu(x)`.
    ``newton_system(x, fac, mu)``: ``(H, grad, aux)``, the Hessian of :math:`f_\mu` over
    :math:`\mu`, its gradient, and whatever ``estimate`` reads of their parts.
    ``estimate(x, fac, mu, d, aux)``: records the primal estimate of the step ``d`` (the
    variant keeps the best) and says whether the stopping rule holds. ``to_boundary(x,
    d)``: the largest step along ``d`` inside the bounds (``inf`` if none binds).
    ``centred_gap(x)``: the verified gap a centred point's next :math:`\mu` is set from
    (``inf`` while none is known). ``nu_bar``: :math:`\bar\nu`. ``halvings``: the tries of
    :func:`_damped_step`. ``after_step(x)``: a status that ends the path at the new point,
    or ``None``. ``mu_floor``: a lower bound on :math:`\mu` after each reduction (``None``:
    none).
    """

    factor: Callable[[np.ndarray], Any]
    value: Callable[[np.ndarray, Any, float], float]
    newton_system: Callable[[np.ndarray, Any, float], tuple[np.ndarray, np.ndarray, Any]]
    estimate: Callable[[np.ndarray, Any, float, np.ndarray, Any], bool]
    to_boundary: Callable[[np.ndarray, np.ndarray], float]
    centred_gap: Callable[[np.ndarray], float]
    nu_bar: float
    halvings: int = 40
    after_step: Callable[[np.ndarray], str | None] | None = None
    mu_floor: float | None = None


@dataclass
class BarrierPath:
    """Where :func:`barrier_path` stopped: the last strictly feasible ``x``, its factor
    ``fac``, the ``status`` and the Newton steps taken."""

    x: np.ndarray
    fac: Any
    status: str   # "converged", "max_iter", "deadline", "no time", "stalled",
    #               "numerical failure", or the variant's ``after_step`` status
    iterations: int


def barrier_path(problem: BarrierProblem, x: np.ndarray, fac: Any, mu: float, *, t0: float,
                 deadline: float = np.inf, max_iter: int = 300,
                 steps_expected: float | None = None) -> BarrierPath:
    """The damped Newton path of ``problem`` from the strictly feasible start ``x``
    (``fac = problem.factor(x)``) with barrier weight ``mu``, as the module's docstring
    describes, for at most ``max_iter`` steps.

    ``deadline``: a :func:`time.perf_counter` value after which the last point is
    returned (``"deadline"``); ``t0`` the run's start (before its search for a start
    point). With ``steps_expected``, a run whose first step shows that that many steps
    would pass the deadline stops after it (``"no time"``: the caller's fallback runs
    instead).
    """
    status, it = "max_iter", 0
    while it < max_iter:
        if time.perf_counter() >= deadline:
            status = "deadline"
            break
        it += 1
        H, grad, aux = problem.newton_system(x, fac, mu)
        newton = _newton_direction(H, grad, mu)
        if newton is None:
            status = "numerical failure"
            break
        d, slope, dec = newton
        if problem.estimate(x, fac, mu, d, aux):
            status = "converged"
            break
        step = min(1.0, _TO_BOUNDARY * float(problem.to_boundary(x, d)))
        damped = _damped_step(x, d, step, slope, dec, problem.value(x, fac, mu),
                              problem.factor,
                              lambda x_new, fac_new, mu=mu: problem.value(x_new, fac_new, mu),
                              problem.halvings)
        if damped is None:
            status = "stalled"
            break
        x, fac = damped
        if problem.after_step is not None and (stop := problem.after_step(x)) is not None:
            status = stop
            break
        if steps_expected is not None and it == 1 \
                and (time.perf_counter() - t0) * steps_expected > deadline - t0:
            status = "no time"
            break
        if dec < _CENTRED:
            gap = problem.centred_gap(x)
            mu = min(_MU_FACTOR * mu, gap / problem.nu_bar) if np.isfinite(gap) \
                else _MU_FACTOR * mu
            if problem.mu_floor is not None:
                mu = max(mu, problem.mu_floor)
    return BarrierPath(x, fac, status, it)

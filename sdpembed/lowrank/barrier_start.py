r"""The interval dual barrier above its cold cap, started from the refined multipliers.

:func:`~sdpembed.lowrank.dual_barrier.dual_barrier` from its cold start :math:`(1-\epsilon)w`
takes 55-146 Newton steps, each an m x m Cholesky factorisation (m³/3 flops), so it runs
only up to ``_BARRIER_EDGES`` edges. Above that, the refined multipliers of the augmented
Lagrangian (:func:`~sdpembed.lowrank.repair.refine_multipliers`) are near the dual optimum
in value but not dual feasible (:math:`S` slightly indefinite). Moved towards :math:`w`,

.. math::

    y_0 = y_c + s\,(w - y_c),\qquad S(y_0) = (1 - s)\,S(y_c) + s\,S(w),

(:math:`y_c` the refined multipliers inside the box) they are strictly feasible for a small
:math:`s`, since :math:`S(w)` is the largest slack over the box and positive definite where
the barrier has an interior point at all; ``_SHIFT_MARGIN`` times the smallest such
:math:`s` found by bisection (Cholesky factorisations of the n x n slack) leaves room for
the first Newton steps. The barrier weight starts at the duality gap of the primal iterate
:math:`X = WW^T` over :math:`\nu = n - 1 + 2m` (the gap of the central point for
:math:`\mu` is :math:`\mu\nu`), so the path is followed from near its end
(docs/tuning.md, "breast-cancer-std-k8: the barrier started inside").
"""

from __future__ import annotations

import numpy as np

from .barrier_path import _slack_cholesky
from .penalty import DistancePenalty
from .space import FactorSpace
from .spectrum import _dense_shifted, _gershgorin

__all__ = ["warm_fits", "warm_start"]

#: most edges for which the barrier runs from the refined multipliers (above
#: ``dual_barrier._BARRIER_EDGES``): 4,500 edges are 3e10 flops a Newton step and 160 MB
#: an m x m array
_WARM_EDGES = 4500
#: the start's shift towards w, in multiples of the smallest that makes S positive definite
_SHIFT_MARGIN = 2.0
#: the pass of the refinement gate at which the barrier runs (as the cold start's
#: ``_BARRIER_AFTER``)
_WARM_AFTER = 2
#: the refined multipliers are first clipped to this share of the box
_INSIDE = 1.0 - 1e-3


def warm_fits(space: FactorSpace, pen: DistancePenalty, cold_edges: int) -> bool:
    """Whether the barrier runs from :func:`warm_start` only: an ``"interval"`` problem in the
    full space, without SNR or added rows, n <= ``DenseLimits.eig``, with more than
    ``cold_edges`` (the cold start's cap) and at most ``_WARM_EDGES`` edges."""
    return (pen.mode == "interval" and space.Q is None and space.H is None
            and space.K is None and space.dim <= space.limits.eig
            and cold_edges < pen.t.size <= _WARM_EDGES)


def warm_start(space: FactorSpace, pen: DistancePenalty, y_ref: np.ndarray,
               W: np.ndarray) -> tuple[np.ndarray, float] | None:
    r"""``(y0, mu0)`` for :func:`~sdpembed.lowrank.dual_barrier.dual_barrier`'s ``start``:
    the refined multipliers ``y_ref`` moved towards :math:`w` until :math:`S` is positive
    definite (module docstring), and the barrier weight :math:`(p - d(y_0))/\nu` with
    :math:`p` the objective of the factor ``W`` (every :math:`X \succeq 0` is primal
    feasible) and :math:`d(y_0) = -\bar D^Ty_0` its dual value. ``None`` where no shift
    short of :math:`w` itself gives a positive definite slack."""
    w, t = pen.w, pen.t
    n, m = space.dim, t.size
    nu0 = space.duals(None)
    scale = _gershgorin(space, w, nu0) + 1.0
    y_c = np.clip(y_ref, -_INSIDE * w, _INSIDE * w)

    def positive(y: np.ndarray) -> bool:
        return _slack_cholesky(space, y, nu0, scale) is not None

    def inside(s: float) -> bool:
        return positive(y_c + s * (w - y_c))

    lo, hi = 0.0, 1e-12
    while not inside(hi):
        lo, hi = hi, 4.0 * hi
        if hi >= 1.0:
            return None
    while lo > 0.0 and hi / lo > 1.05:            # geometric bisection to 5 %
        mid = float(np.sqrt(lo * hi))
        lo, hi = (lo, mid) if inside(mid) else (mid, hi)
    s = min(_SHIFT_MARGIN * hi, 0.5 * (1.0 + hi))
    y0 = y_c + s * (w - y_c)
    if not positive(y0):
        return None
    # p - d(y0) = tr(S(y0) X) + sum(w |r - t| - y0 (r - t)), X = W W^T on 1-perp
    M, _ = _dense_shifted(space, y0, nu0, 0.0)
    Wc = W - W.mean(axis=0)
    r = space.diffs(W) ** 2 @ np.ones(W.shape[1])
    gap = float(np.sum(Wc * (M @ Wc))) + float(np.sum(w * np.abs(r - t) - y0 * (r - t)))
    return y0, max(gap, 1e-300) / (n - 1 + 2 * m)

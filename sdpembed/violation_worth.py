"""What a conic point's constraint violations can buy, priced at its own multipliers.

For a convex program :math:`\\min f(x)` s.t. :math:`g_i(x) \\le 0` (an equality row a pair
of them) with optimal multipliers :math:`y^\\star`, every point :math:`x` of the cone has

.. math:: f(x) \\ge p^\\star - \\sum_i |y^\\star_i| \\, r_i(x),

:math:`r_i(x) \\ge 0` its violation of row :math:`i` (Lagrangian duality). So
:math:`W(x) = \\sum_i |y_i| r_i(x)` is how much objective the point's violations can buy,
each row in its own unit (its multiplier is the price of one unit of it): a point with
violations of 5e-10 of the trace on rows whose multipliers are large (no strictly
feasible point) or with small targets and large weights can owe a share of its objective
to them that no residual relative to its row's size shows. A conic backend returns its
multipliers with its point (cvxpy's ``dual_value`` of each constraint), so
:func:`violation_worth` prices the point at them, relative to the objective in its unit
(:func:`sdpembed.solve_status.bound_gap`'s: :math:`\\max(|p|, 10^{-3} s)`, :math:`s` the size
of the objective's terms at the point where the problem is a Gram SDP); the rule that
judges an ``optimal_inaccurate`` point by it is
:func:`sdpembed.solve_status.check_result`'s (rule 5,
:data:`~sdpembed.solve_status.VIOLATION_WORTH`); an ``optimal`` point only states it.

Only affine rows are priced (cvxpy's ``Zero``, ``NonNeg``, ``Equality`` and ``Inequality``
constraints, whose violation and multiplier have one entry per row); a cone constraint's
violation is a distance to the cone, not a row's (an interior-point iterate lies inside
its cones), and is left to the backend's residuals.
"""

from __future__ import annotations

from typing import Any

import cvxpy as cp
import numpy as np
from cvxpy.constraints import Equality, Inequality, NonNeg, Zero

from .report import _finite, objective_unit

__all__ = ["priced_violation", "repaired_objective", "repaired_worth", "violation_worth"]

_ROWS = (Zero, NonNeg, Equality, Inequality)


def priced_violation(problem: cp.Problem) -> float | None:
    """:math:`\\sum_i |y_i| r_i` over the affine rows of the cvxpy ``problem`` at the point
    and multipliers its last solve wrote (absolute); ``None`` where no row has a finite
    multiplier (0 where the problem has no affine row)."""
    total, priced, rows = 0.0, False, False
    for c in problem.constraints:
        if not isinstance(c, _ROWS):
            continue
        rows = True
        try:
            y, r = c.dual_value, c.violation()
        except (ValueError, TypeError, AttributeError):
            continue
        if y is None or r is None:
            continue
        y, r = np.asarray(y, dtype=float), np.asarray(r, dtype=float)
        if y.shape != r.shape or not (np.all(np.isfinite(y)) and np.all(np.isfinite(r))):
            continue
        priced = True
        total += float(np.sum(np.abs(y) * np.maximum(r, 0.0)))
    return total if priced or not rows else None


def _objective_scale(formulation) -> float | None:
    """The size of the objective's terms at the point written in a Gram formulation
    (:func:`sdpembed.lowrank.penalty.objective_scale` of its Gram matrix's factor);
    ``None`` where there is none to read."""
    from .lowrank.penalty import objective_scale

    try:
        gp = formulation.current_problem()
        G = np.asarray(formulation.value("gram"), dtype=float)
    except Exception:  # noqa: BLE001 - a floor is a courtesy: without it the measure is stricter
        return None
    if gp is None or G.ndim != 2 or not np.all(np.isfinite(G)):
        return None
    w, V = np.linalg.eigh(0.5 * (G + G.T))
    return _finite(objective_scale(gp, V * np.sqrt(np.maximum(w, 0.0))))


def violation_worth(formulation: Any, objective: float | None, *,
                    tolerance: float) -> float | None:
    """:func:`priced_violation` of ``formulation``'s cvxpy problem relative to
    :math:`\\max(|p|, 10^{-3} s)` (:data:`~sdpembed.report.OBJECTIVE_RESOLUTION` times the
    objective's terms' size :math:`s`, read only where the measure relative to :math:`|p|`
    alone exceeds ``tolerance``: the floor can only lower it). ``None`` without a finite
    objective or any priced row."""
    p = _finite(objective)
    if p is None:
        return None
    w = priced_violation(formulation.problem)
    if w is None:
        return None
    unit = abs(p)
    if w > tolerance * unit:
        s = _objective_scale(formulation)
        unit = objective_unit(p, s)
    return w / unit if unit > 0 else (0.0 if w == 0 else float("inf"))


def repaired_objective(formulation: Any) -> float | None:
    """The objective of the Gram point written in ``formulation`` moved onto its rows
    (:func:`~sdpembed.lowrank.row_worth.repaired_gram_objective`): an upper bound on the
    optimum. ``None`` where the formulation is no Gram problem on the points (or one on a
    reduced basis) or the point cannot be repaired."""
    from .lowrank.row_worth import repaired_gram_objective

    try:
        gp = formulation.current_problem()
        G = np.asarray(formulation.value("gram"), dtype=float)
    except Exception:  # noqa: BLE001 - no repair is the stricter verdict
        return None
    if gp is None or G.ndim != 2 or getattr(formulation, "reduced_basis", None) is not None:
        return None   # on a reduced basis a repaired point may leave the basis's span
    return _finite(repaired_gram_objective(gp, G))


def repaired_worth(formulation: Any, objective: float | None) -> float | None:
    """How far below the optimum the reported ``objective`` :math:`p` can lie, proven by
    :func:`repaired_objective` :math:`p_r \\ge p^\\star`: :math:`(p_r - p)` relative to
    :math:`\\max(|p|, 10^{-3} s)` (as :func:`violation_worth`), negative where the repaired
    point is below the report. ``None`` where the point cannot be repaired."""
    p = _finite(objective)
    if p is None:
        return None
    pr = repaired_objective(formulation)
    if pr is None:
        return None
    unit = objective_unit(p, _objective_scale(formulation))
    return (pr - p) / unit if unit > 0 else (0.0 if pr == p else float("inf"))

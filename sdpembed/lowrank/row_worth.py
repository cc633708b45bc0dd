"""What a Gram point's row violations can buy, and the point moved onto its rows.

Two measures of how far below the optimum a reported objective :math:`p` may lie, for
rule 5 of :mod:`sdpembed.solve_status` (docs/tuning.md, "Rule 5 after the repair"):

* :func:`row_price`: :math:`\\sum_i |y_i| r_i`, each hard row's violation :math:`r_i` at the
  factor priced at its multiplier (LOWRANK's own :math:`y` per edge for ``"equality"`` and
  ``"shrink"`` distances, :math:`\\nu` for the SNR constraint and the added rows). By
  Lagrangian duality :math:`f(x) \\ge p^\\star - \\sum_i |y^\\star_i| r_i(x)` for a point of the
  cone, so at multipliers near the optimal ones it estimates what the violations bought.
  The ``"interval"`` and ``"quadratic"`` penalties are no rows (their distances are free).
* :func:`repaired_gram_objective`: the objective at the point moved onto its rows, a
  feasible point, so :math:`p_r \\ge p^\\star` and :math:`p_r - p` *proves*
  :math:`p \\ge p^\\star - (p_r - p)` (a bound, not an estimate; it may be loose: a repair
  moves the point).
"""

from __future__ import annotations

import numpy as np

from ..formulations.gram_problem import GramProblem
from .penalty import DistancePenalty
from .space import FactorSpace

__all__ = ["row_price", "repaired_gram_objective", "centred_factors", "repaired_factor_worth"]


def row_price(gp: GramProblem, F: np.ndarray, y: np.ndarray | None,
              nu: np.ndarray | None) -> float | None:
    """:math:`\\sum_i |y_i| r_i` over the hard rows of the points problem ``gp`` at the
    factor ``F`` (n x k, the points), ``y`` one multiplier per edge and ``nu`` the linear
    multipliers (SNR first, then the added rows; :class:`FactorSpace`'s order). ``None``
    where a multiplier or the factor is missing or not finite."""
    if F is None or y is None:
        return None
    F, y = np.asarray(F, dtype=float), np.asarray(y, dtype=float)
    if F.ndim != 2 or F.shape[0] != gp.n or y.shape != (gp.edges.shape[0],):
        return None
    space = FactorSpace(gp)
    nu = np.zeros(space.q) if nu is None else np.atleast_1d(np.asarray(nu, dtype=float))
    if nu.shape != (space.q,) or not (np.all(np.isfinite(F)) and np.all(np.isfinite(y))
                                      and np.all(np.isfinite(nu))):
        return None
    r = gp.distances_of_factor(F) - gp.target
    total = 0.0
    if gp.distances == "equality":
        total += float(np.abs(y) @ np.abs(r))
    elif gp.distances == "shrink":
        total += float(np.abs(y) @ np.maximum(r, 0.0))
    if space.H is not None:
        total += abs(nu[0]) * max(0.0, float(np.sum(F * space.apply_H(F))))
    if space.K is not None:
        total += float(np.abs(nu[space.n_snr:]) @ space.K.residual(space.K_values(F)))
    return total


def centred_factors(G: np.ndarray) -> list[np.ndarray]:
    """Two centred factors :math:`V` (:math:`V^T\\mathbf 1 = 0`, :math:`VV^T \\succeq 0`) of
    the symmetric part of ``G`` restricted to the centred subspace
    (:math:`M = Q^TGQ`, :math:`Q` an orthonormal basis of :math:`\\mathbf 1^\\perp`; the
    distances :math:`G_{ii} + G_{jj} - 2G_{ij}` do not see the restriction): ``M`` with its
    negative eigenvalues dropped, and, where it has one, ``M`` shifted by
    :math:`\\mu = -\\lambda_{\\min}(M)` (every distance grows by :math:`2\\mu`)."""
    n = G.shape[0]
    Q = np.linalg.qr(np.eye(n)[:, :-1] - 1.0 / n, mode="reduced")[0]
    lam, U = np.linalg.eigh(Q.T @ (0.5 * (G + G.T)) @ Q)
    out = [Q @ (U * np.sqrt(np.maximum(lam, 0.0)))]
    if lam[0] < 0:
        out.append(Q @ (U * np.sqrt(lam - lam[0])))
    return out


def repaired_gram_objective(gp: GramProblem, G: np.ndarray) -> float | None:
    """The objective of the points problem ``gp`` at the Gram matrix ``G`` moved onto its
    rows: the smallest over :func:`centred_factors` of those at which every row holds, the
    distance penalty at its exact value (its slacks as small as its rows allow),
    ``"shrink"`` distances met by scaling the factor
    (:meth:`DistancePenalty.shrink_scale`), the SNR constraint and the added inequality
    rows as they are. An upper bound on the optimum up to the rounding of evaluating it.
    ``None`` where an equality row is to hold (equality distances, an added ``==`` row: no
    such move meets it exactly) or no factor meets every row."""
    G = np.asarray(G, dtype=float)
    if G.shape != (gp.n, gp.n) or gp.n < 2 or not np.all(np.isfinite(G)):
        return None
    space = FactorSpace(gp)
    if gp.distances == "equality" or (space.K is not None and np.any(space.K.equality)):
        return None
    pen = DistancePenalty(gp)
    best = None
    for V in centred_factors(G):
        if gp.distances == "shrink":
            V = V * pen.shrink_scale(gp.distances_of_factor(V))
        if space.H is not None and float(np.sum(V * space.apply_H(V))) > 0:
            continue
        if space.K is not None and np.any(space.K_values(V) - space.K.rhs > 0):
            continue
        value = float(np.sum(V * space.apply_C(V))) + pen.objective(gp.distances_of_factor(V))
        best = value if best is None else min(best, value)
    return best if best is not None and np.isfinite(best) else None


def repaired_factor_worth(gp: GramProblem, F: np.ndarray, objective: float,
                          unit: float) -> float | None:
    """How far below the optimum LOWRANK's reported ``objective`` :math:`p` at the factor
    ``F`` (the points, :math:`G = FF^T`) can lie, proven by :func:`repaired_gram_objective`
    :math:`p_r \\ge p^\\star`: :math:`(p_r - p) / \\mathrm{unit}` (``unit`` the objective's,
    :math:`\\max(|p|, 10^{-3} s)`). ``None`` where the point cannot be repaired (equality
    rows) or ``unit`` is not positive."""
    F = np.asarray(F, dtype=float)
    if F.ndim != 2 or F.shape[0] != gp.n or not unit > 0:
        return None
    pr = repaired_gram_objective(gp, F @ F.T)
    return None if pr is None else (pr - float(objective)) / unit

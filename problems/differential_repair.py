"""A reference's point repaired to feasibility, for the differential test's judge.

An interior-point reference stops at a point that violates its constraints slightly
(CLARABEL's ``AlmostSolved``: rows off by 1e-8 relative). Its objective is then not an
upper bound on the optimum: it may lie below a bound that LOWRANK *proves* (seed 100165:
CLARABEL -0.559310 against LOWRANK's bound -0.559228, checked in exact arithmetic). The
judge (:mod:`problems.differential`) asks, in that case, for the objective at the point
moved onto the constraints, :func:`repaired_objective`, which is an upper bound on the
optimum up to the rounding of evaluating it:

1. the symmetric part of the points' Gram matrix, its negative eigenvalues dropped and its
   factor's columns centred, is positive semidefinite and centred by construction;
2. ``"shrink"``: the factor scaled by :math:`\\alpha \\le 1`,
   :math:`\\alpha^2 = \\min_e \\bar D_e/D_e`, so that every :math:`D_e \\le \\bar D_e`;
3. where the SNR constraint :math:`\\langle H, G\\rangle \\le 0` or an added inequality row
   is still violated, the point is mixed with an *anchor* that satisfies them with room
   to spare (another backend's feasible point), :math:`G_t = (1-t)G + tG_A` with the
   smallest :math:`t` that satisfies every violated row (the rows are linear, so the
   mixture satisfies the anchor's rows in proportion), taken 1 % larger.

Nothing is repaired where an equality stays violated (equality distances, an added
``==`` row): no mixture satisfies it exactly. The function then returns ``None`` and the
judge keeps its verdict.
"""

from __future__ import annotations

import numpy as np

from sdpembed.lowrank.penalty import DistancePenalty
from sdpembed.lowrank.space import FactorSpace

__all__ = ["centred_factor", "repaired_objective"]

#: the mixing weight is taken this much larger than the smallest that satisfies the rows
_MIX_MARGIN = 1.01


def centred_factor(G: np.ndarray) -> np.ndarray:
    """A centred factor :math:`V` (:math:`V^T\\mathbf 1 = 0`) of the symmetric part of
    ``G`` with its negative eigenvalues dropped: :math:`VV^T` is PSD by construction."""
    G = np.asarray(G, dtype=float)
    lam, U = np.linalg.eigh(0.5 * (G + G.T))
    keep = lam > 0
    V = U[:, keep] * np.sqrt(lam[keep])
    if V.shape[1] == 0:
        V = np.zeros((G.shape[0], 1))
    return V - V.mean(axis=0)


def _rows(space: FactorSpace, V: np.ndarray) -> np.ndarray:
    """The inequality rows' values :math:`c \\le 0` at :math:`VV^T`: the SNR constraint's
    :math:`\\langle H, G\\rangle` first, then the added inequality rows' residuals
    :math:`\\langle A_k, G\\rangle - b_k`."""
    out = []
    if space.H is not None:
        out.append(float(np.sum(V * space.apply_H(V))))
    if space.K is not None:
        vals = space.K_values(V) - space.K.rhs
        out.extend(np.asarray(vals, dtype=float)[~np.asarray(space.K.equality, dtype=bool)])
    return np.asarray(out, dtype=float)


def repaired_objective(gp, G: np.ndarray, anchor: np.ndarray | None = None) -> float | None:
    """The objective of the points problem ``gp`` (a
    :class:`~sdpembed.formulations.gram_problem.GramProblem`, eliminated centroids) at the
    point ``G`` (the points' Gram matrix) repaired to feasibility as the module docstring
    says, with ``anchor`` (a Gram matrix of the same size, or ``None``) to mix with where
    an inequality row is violated; ``None`` where no repair makes the point feasible."""
    space = FactorSpace(gp)
    if gp.distances == "equality":
        return None
    if space.K is not None and np.any(space.K.equality):
        return None
    V = centred_factor(G)
    pen = DistancePenalty(gp)
    if gp.distances == "shrink":
        V = V * pen.shrink_scale(gp.distances_of_factor(V))
    c = _rows(space, V)
    if np.any(c > 0):
        if anchor is None:
            return None
        VA = centred_factor(anchor)
        if gp.distances == "shrink":
            VA = VA * pen.shrink_scale(gp.distances_of_factor(VA))
        cA = _rows(space, VA)
        bad = c > 0
        if np.any(cA[bad] >= 0):
            return None
        t = min(1.0, _MIX_MARGIN * float(np.max(c[bad] / (c[bad] - cA[bad]))))
        V = np.hstack([np.sqrt(1.0 - t) * V, np.sqrt(t) * VA])
        if np.any(_rows(space, V) > 0):
            return None
    D = gp.distances_of_factor(V)
    return float(np.sum(V * space.apply_C(V))) + pen.objective(D)

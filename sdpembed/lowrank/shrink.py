"""``distances="shrink"``: the contraction of violated edges, edge-disjoint sets at a time."""

from __future__ import annotations

import numpy as np

from .penalty import DistancePenalty
from .space import FactorSpace

__all__ = ["contract_violated"]

#: sweeps of :func:`contract_violated` over the violated edges
CONTRACT_SWEEPS = 30

#: rounds of :func:`~.repair.restore_feasibility` for a ``"shrink"`` iterate
#: (``outer._OuterLoop._onto_shrink``), each over the edges then violated or on their bound
_SHRINK_ROUNDS = 4

#: those rounds are tried once the iterate's cheap gap is within this factor of ``tol``
#: (before, the restored point cannot close the gap, and the rounds cost LSMR solves)
_SHRINK_NEAR = 2.0

#: the largest penalty of ``"shrink"``, relative to its start: its dual optimum is attained
#: and bounded, so the multipliers converge at the rate the penalty sets (docs/tuning.md,
#: "Shrink-only distances"); ``_SIGMA_MAX_SHRINK_GN`` where Newton-CG is preconditioned by
#: the whole Gauss-Newton matrix at rank ``_GN_RANK``, which keeps the subproblems at that
#: cap cheap (docs/tuning.md, "Shrink-only MVU at n = 2,000: a whole-graph Gauss–Newton
#: preconditioner")
_SIGMA_MAX_SHRINK, _SIGMA_MAX_SHRINK_GN, _GN_RANK = 2187.0, 19683.0, 3


def shrink_cap(gauss_newton: bool) -> float:
    """The penalty cap of ``"shrink"``, with or without the Gauss-Newton preconditioner."""
    return _SIGMA_MAX_SHRINK_GN if gauss_newton else _SIGMA_MAX_SHRINK


def _first_in_order(ends: np.ndarray, rank: np.ndarray, n: int) -> np.ndarray:
    """For each of ``n`` points, the smallest ``rank`` of an edge at it (``ends`` (2, q):
    the edges' endpoints; the largest integer where none)."""
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, ends.ravel(), np.concatenate([rank, rank]))
    return first


def contract_violated(space: FactorSpace, pen: DistancePenalty, W: np.ndarray,
                      sweeps: int = CONTRACT_SWEEPS) -> np.ndarray:
    r"""``"shrink"``, full space: the factor (rows are points) with each violated edge's
    endpoints moved towards their midpoint, :math:`v_i \leftarrow m + \beta(v_i - m)`,
    :math:`\beta = (\bar D_e/D_e)^{1/2}`, edge by edge in the order of their relative
    violation, for ``sweeps`` sweeps, columns re-centred. The edge then holds with equality,
    and the other edges at :math:`i` and :math:`j` move by at most
    :math:`(1-\beta)\|v_i - v_j\|/2`: little, relative to their length, where a short edge is
    violated (the worst case of the scaling, which costs its relative violation on the whole
    trace).

    A move changes only its two endpoints, so moves of edges without a common endpoint
    commute: each round makes, at once, the moves of the edges that come first in the order
    at both their endpoints among the edges still to move in this sweep. That is the
    edge-by-edge sweep, move for move, in a few vectorised rounds."""
    V = np.array(W, dtype=float)
    i_all, j_all = space.gp.edges.T
    n = V.shape[0]
    for _ in range(sweeps):
        Z = V[i_all] - V[j_all]
        D = np.einsum("ij,ij->i", Z, Z)
        bad = np.flatnonzero(D > pen.t)
        if bad.size == 0:
            break
        rest = bad[np.argsort(-D[bad] / pen.t[bad])]
        rank = np.arange(rest.size)
        while rest.size:
            a, b = i_all[rest], j_all[rest]
            first = _first_in_order(np.stack([a, b]), rank, n)
            now = (first[a] == rank) & (first[b] == rank)
            e, a, b = rest[now], a[now], b[now]
            d = V[a] - V[b]
            De = np.einsum("ij,ij->i", d, d)
            over = De > pen.t[e]
            e, a, b, De = e[over], a[over], b[over], De[over]
            beta = np.sqrt(pen.t[e] / De)[:, None]
            m = 0.5 * (V[a] + V[b])
            V[a] = m + beta * (V[a] - m)
            V[b] = m + beta * (V[b] - m)
            rest, rank = rest[~now], rank[~now]
    return V - V.mean(axis=0)

r"""A multilevel first factor: the problem solved on a coarsened graph, its factor extended.

Coarsening (as multilevel graph partitioners do): a greedy matching of the graph's edges,
shortest target first, merges each matched pair of points into one; a coarse point's
position is the common position of its members, :math:`G = PG_cP^T` with :math:`P`
(n x n_c) the 0/1 aggregation matrix. On such Gram matrices the problem is exactly a
smaller one: objective :math:`P^TCP` (its diagonal, low-rank and sparse parts each map
to the same form; the trace term becomes the diagonal :math:`\tau|A|`), every edge
between two aggregates kept with its own target (parallel edges stay parallel, so the
distance penalty is the fine one's), the edges inside an aggregate dropped (their distance
is zero there: a constant of the penalty), the SNR functionals mapped like the objective.
Centring is on :math:`\mathbf 1` of the coarse points: the objective and the distances are
translation invariant, so only the trace term's weights differ from the exact restriction.

The coarse problem's first augmented-Lagrangian subproblem (zero multipliers, the outer
loop's own first penalty and tolerance, ``coarse_gtol`` times looser) is solved from
its own multilevel start (recursively, down to ``min_points``); its factor is extended to
the fine points by :math:`P` and each merged pair is split along a random direction to
its edge's target length. The full solve then starts there; its certificate is the full
problem's, unchanged. Measurements: docs/tuning.md, "A multilevel first point".
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from ..formulations.gram import GramProblem
from ..formulations.matrices import DiagPlusLowRank

__all__ = ["coarsen", "multilevel_factor"]


def _matching(n: int, edges: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Aggregate index of every point: a greedy matching, shortest target first."""
    agg = np.full(n, -1, dtype=np.int64)
    c = 0
    for e in np.argsort(target, kind="stable"):
        i, j = int(edges[e, 0]), int(edges[e, 1])
        if i != j and agg[i] < 0 and agg[j] < 0:
            agg[i] = agg[j] = c
            c += 1
    single = agg < 0
    agg[single] = c + np.arange(int(single.sum()))
    return agg


def _congruence(M: DiagPlusLowRank | None, P: sp.csr_matrix, extra: np.ndarray | None = None
                ) -> DiagPlusLowRank | None:
    """:math:`P^TMP` of a diagonal-plus-low-rank (plus sparse) matrix, ``extra`` added to
    its diagonal."""
    if M is None:
        return None
    PT = P.T.tocsr()
    diag = PT @ M.diag
    S = None
    if M.sparse is not None:
        S = (PT @ M.sparse @ P).tocsr()
        diag = diag + S.diagonal()
        S.setdiag(0.0)
        S.eliminate_zeros()
        S = S if S.nnz else None
    if extra is not None:
        diag = diag + extra
    U = np.asarray(PT @ M.U) if M.U.shape[1] else np.zeros((P.shape[1], 0))
    return dataclasses.replace(M, diag=np.asarray(diag, dtype=float), U=U, sparse=S)


def coarsen(gp: GramProblem) -> tuple[GramProblem, np.ndarray]:
    """The problem on :math:`G = PG_cP^T` (module docstring) and the aggregate of every
    point (``P``'s column per row)."""
    n = gp.n
    agg = _matching(n, gp.edges, gp.target)
    nc = int(agg.max()) + 1
    P = sp.csr_matrix((np.ones(n), (np.arange(n), agg)), shape=(n, nc))
    ce = agg[gp.edges]
    keep = ce[:, 0] != ce[:, 1]
    sizes = np.bincount(agg, minlength=nc).astype(float)
    objective = _congruence(gp.objective, P, gp.trace_weight * sizes)
    coarse = dataclasses.replace(
        gp, n=nc, edges=ce[keep], target=np.asarray(gp.target)[keep], objective=objective,
        trace_weight=0.0, icv=_congruence(gp.icv, P), bcv=_congruence(gp.bcv, P),
        meta={})
    return coarse, agg


def multilevel_fits(gp: GramProblem, basis, min_points: int) -> bool:
    """Whether the multilevel start applies: full space, no added constraints, no ratio,
    centring eliminated, more than ``2 * min_points`` points."""
    return basis is None and gp.constraints is None and gp.ratio is None \
        and gp.centering is None and gp.n > 2 * min_points


def multilevel_factor(gp: GramProblem, k: int, opts, rng, *, min_points: int,
                      coarse_gtol: float, max_inner: int, limits, initial
                      ) -> tuple[np.ndarray, dict]:
    """The first factor (n x k) of ``gp`` from its coarsened problem, and a record
    (points per level, L-BFGS iterations per level); ``initial(space, k, rng)`` is the
    coarsest level's start."""
    from .alm import _ALM
    from .outer import _OuterLoop
    from .penalty import DistancePenalty
    from .result import _SolveState
    from .space import FactorSpace

    coarse, agg = coarsen(gp)
    space_c = FactorSpace(coarse, None, limits=limits)
    record = {"points": [coarse.n], "iterations": []}
    if coarse.n > 2 * min_points and coarse.n < gp.n:
        Wc, sub = multilevel_factor(coarse, k, opts, rng, min_points=min_points,
                                    coarse_gtol=coarse_gtol, max_inner=max_inner,
                                    limits=limits, initial=initial)
        Wc = space_c.project(Wc)
        record["points"] += sub["points"]
        record["iterations"] += sub["iterations"]
    else:
        Wc = initial(space_c, k, rng)
    pen_c = DistancePenalty(coarse)
    alm_c = _ALM(space_c, pen_c, opts)
    loop = _OuterLoop(space_c, pen_c, alm_c, opts, _SolveState(), 0.0, Wc)
    loop.deadline = loop.loop_deadline = alm_c.deadline = np.inf
    loop.gtol *= coarse_gtol
    loop.max_inner = min(loop.max_inner, max_inner)
    loop.it = 1
    res, _ = loop.solve_subproblem()
    record["iterations"].insert(0, int(res.nit))
    Wc = loop.W
    if Wc.shape[1] < k:
        Wc = np.c_[Wc, np.zeros((Wc.shape[0], k - Wc.shape[1]))]
    W = Wc[agg]
    # split every merged pair along a random direction to its edge's target length
    order = np.argsort(agg, kind="stable")
    counts = np.bincount(agg)
    firsts = np.r_[0, np.cumsum(counts)[:-1]]
    pairs = np.flatnonzero(counts == 2)
    a, b = order[firsts[pairs]], order[firsts[pairs] + 1]
    lookup = {}
    for e, (i, j) in enumerate(gp.edges):
        lookup.setdefault((min(i, j), max(i, j)), gp.target[e])
    t = np.array([lookup.get((min(i, j), max(i, j)), np.mean(gp.target))
                  for i, j in zip(a, b)])
    d = rng.standard_normal((pairs.size, W.shape[1]))
    d *= (0.5 * np.sqrt(t) / np.maximum(np.linalg.norm(d, axis=1), 1e-300))[:, None]
    W[a] += d
    W[b] -= d
    return W, record

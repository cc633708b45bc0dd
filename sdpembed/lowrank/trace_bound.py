r"""Bounds :math:`T \ge \mathrm{tr}\,G` on the feasible set of a Gram SDP, read from its rows.

A certificate whose multipliers :math:`(y, z)` leave :math:`\mu = \lambda_{\min}(S(y, z)) <
0` still bounds the optimum where every feasible :math:`G` has :math:`\mathrm{tr}\,G \le T`:
weak duality at a feasible :math:`G` gives :math:`p(G) \ge \langle S, G\rangle -
\varphi^*(y) - z^Tb \ge \mu T - \varphi^*(y) - z^Tb`. The bound must hold for *every*
feasible point of the problem the certificate speaks of, not only near the point: so only
hard rows give one, never a penalised one (``"interval"`` and ``"quadratic"`` distances,
the ratio term's slack), and only rows that bound the trace with the right sign.

Two sources, each valid on its own, so the least of them is (:func:`feasible_trace_bound`):

* the distance rows of ``"equality"`` (:math:`D_e(G) = \bar D_e`) and ``"shrink"``
  (:math:`D_e(G) \le \bar D_e`) on a connected graph: shortest paths
  (:func:`shortest_path_trace_bound`);
* the added rows (:func:`row_trace_bound`): a row :math:`\langle A_k, G\rangle \le b_k`
  or :math:`= b_k` with a diagonal :math:`A_k` whose entries are all at least :math:`c > 0`
  (``trace(G) <= tau`` among them), or an equality row whose entries are all at most
  :math:`-c < 0` (``-trace(G) == -tau``).

On a reduced basis (``space.Q``, orthonormal columns) a feasible :math:`Y` gives the
feasible :math:`G = QYQ^T` of the full problem with :math:`\mathrm{tr}\,Y = \mathrm{tr}\,G`,
so both bounds hold there too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from ..formulations.gram import GramProblem

if TYPE_CHECKING:
    from .space import FactorSpace

__all__ = ["feasible_trace_bound", "row_trace_bound", "shortest_path_trace_bound"]

#: relative margin on a quotient :math:`b_k/c` (its rounding, and the products it enters)
_QUOTIENT_MARGIN = 4.0 * np.finfo(float).eps

#: distance modes whose rows bound :math:`\mathrm{tr}\,G` by shortest paths
SHORTEST_PATH_MODES = ("equality", "shrink")


def shortest_path_trace_bound(gp: GramProblem) -> float:
    r""":math:`T = \min_r \sum_i \mathrm{sp}(r,i)^2 \ge \mathrm{tr}\,G` for every :math:`G`
    that meets :math:`D_e(G) \le \bar D_e` on every edge (``"equality"``, ``"shrink"``):
    :math:`\|v_i - v_r\| \le \mathrm{sp}(r, i)` by the triangle inequality along a shortest
    path of edge lengths :math:`\sqrt{\bar D_e}`, and the centred :math:`\mathrm{tr}\,G =
    \sum_i \|v_i - \bar v\|^2 \le \sum_i \|v_i - v_r\|^2` for any root :math:`r`."""
    n = gp.n
    i, j = gp.edges.T
    A = sp.csr_matrix((np.sqrt(gp.target), (i, j)), shape=(n, n))
    deg = np.bincount(gp.edges.ravel(), minlength=n)
    roots = np.unique(np.r_[np.argsort(deg)[-3:], 0])
    dist = dijkstra(A, directed=False, indices=roots)
    return float(np.min((dist**2).sum(axis=1)))


def row_trace_bound(space: FactorSpace, slack: np.ndarray | None = None) -> float:
    r""":math:`T \ge \mathrm{tr}\,G` for every point feasible for the added rows, read from
    the rows alone (``inf`` where none bounds it).

    A row :math:`\langle A_k, G\rangle \le b_k` (or :math:`= b_k`) whose :math:`A_k` is
    diagonal with every :math:`a_i \ge c > 0` (``trace(G) <= tau`` among them) gives, for
    :math:`G \succeq 0` (so :math:`G_{ii} \ge 0`), :math:`c\,\mathrm{tr}\,G \le \sum_i
    a_iG_{ii} \le b_k`, i.e. :math:`\mathrm{tr}\,G \le b_k/c`; an equality row holds with
    :math:`-A_k, -b_k` too, so one with every :math:`a_i \le -c < 0` gives
    :math:`-b_k/c`. A row :math:`\langle A_k, G\rangle \ge b_k` (stored as :math:`-A_k`,
    ``trace(G) >= tau``) bounds nothing. Rows that touch only some points, or are not
    diagonal, are not read (several rows together, e.g. a bound on every :math:`G_{ii}`,
    could bound it too). ``slack``: each row relaxed by :math:`s_k \ge 0`
    (:func:`~.point_bound.point_bound`: by a point's violations), the bound of the
    loosest right-hand side within it: :math:`b_k + s_k` for an inequality row,
    :math:`\pm b_k + s_k` in the orientation read for an equality row (its right-hand side
    anywhere in :math:`[b_k - s_k, b_k + s_k]`). Each quotient is rounded up by
    ``_QUOTIENT_MARGIN``."""
    K = space.K
    if K is None:
        return np.inf
    s = np.zeros(K.p) if slack is None else np.abs(np.asarray(slack, dtype=float))
    n, T = space.gp.n, np.inf
    off_diag = np.bincount(K.row, weights=(K.i != K.j).astype(float), minlength=K.p)
    for k in np.flatnonzero(off_diag == 0):
        t = K.row == k
        a = np.bincount(K.i[t], weights=K.value[t], minlength=n)
        if not np.all(np.isfinite(a)):
            continue
        bk = float(K.rhs[k])
        if K.equality[k] and float(np.max(a)) < 0:
            a, bk = -a, -bk
        bk += float(s[k])
        c = float(np.min(a))
        if c > 0 and bk >= 0:
            T = min(T, bk / c * (1.0 + _QUOTIENT_MARGIN))
    return T


def feasible_trace_bound(space: FactorSpace, slack: np.ndarray | None = None) -> tuple[float, str]:
    r"""The least :math:`T \ge \mathrm{tr}\,G` over the feasible set of the problem on
    ``space`` that its hard rows give, and where it comes from (``"shortest paths"``, ``"an
    added row"``; ``(inf, "")`` where none bounds it): :func:`shortest_path_trace_bound`
    for ``"equality"`` and ``"shrink"`` distances, :func:`row_trace_bound` (the rows
    relaxed by ``slack``) for the added rows. Each holds on every feasible point, so the
    least does."""
    T, source = np.inf, ""
    if space.gp.distances in SHORTEST_PATH_MODES:
        T, source = shortest_path_trace_bound(space.gp), "shortest paths"
    T_row = row_trace_bound(space, slack)
    if T_row < T:
        T, source = T_row, "an added row"
    return T, source

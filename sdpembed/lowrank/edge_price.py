r"""Added rows that are one distance edge's own row: their multipliers' closed-form start.

A user's inequality row :math:`\langle A_k, G\rangle \le b_k` whose coefficient matrix is
:math:`c\,A_e` for an edge :math:`e` of the distance term (:math:`A_e` the squared distance
:math:`G_{ii} + G_{jj} - 2G_{ij}` of the edge's points, :math:`c \ne 0`: a must-link row
on a graph edge, :math:`c = 1`, or a cannot-link one, :math:`c = -1`) and whose bound the
edge's target violates, :math:`c\,\bar D_e > b_k`, holds the edge away from its target.
With ``distances="interval"`` the edge's term is :math:`w_e|D_e - \bar D_e|`; at any
point that meets the row, :math:`D_e` is on the far side of :math:`\bar D_e` and the
term's slope is :math:`-\mathrm{sign}(c)\,w_e` (with :math:`w_e = \lambda/\bar D_e`), so
stationarity along :math:`A_e` reads :math:`-\mathrm{sign}(c)\,w_e + c\,z_k + f_e = 0`, with
:math:`f_e` the rest of the problem's pull on the pair. The row's multiplier at an optimum
is therefore :math:`z_k = (w_e + \mathrm{sign}(c) f_e)/|c|`, and :math:`w_e/|c|` (the
edge's *price*) exactly when the rest does not pull on the pair.

The augmented Lagrangian reaches it from below one outer iteration at a time: while
:math:`z_k + \rho_k(\langle A_k, G\rangle - b_k)` stays below the price, the subproblem
balances the row against the edge inside the quadratic part of the edge's Huber envelope,
the row stays violated, and the first-order update moves :math:`z_k` only to the edge's
current multiplier, each such outer a long Huber subproblem (docs/tuning.md, "Links seed
5 traced: must-link rows on graph edges, priced one per outer"). Starting :math:`z_k` at
the price (:func:`priced_rows`) skips that climb. Any :math:`z \ge 0` is a valid start of
the method (the multipliers of inequality rows need only be nonnegative; the update
corrects the :math:`f_e` part first-order), so the start changes the path, never the
problem. It is applied only to rows whose next update cannot reach the price by itself
(:math:`z_k + \rho_k\,\mathrm{viol}_k` below it, the penalty already the next
subproblem's): a row that the first Huber update prices anyway gains nothing from it, and
moving it changes the path (docs/tuning.md, "Must-link rows on graph edges started at
their price").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..formulations.constraints import AffineGramConstraints

if TYPE_CHECKING:
    from .penalty import DistancePenalty
    from .space import FactorSpace

__all__ = ["edge_rows", "priced_rows", "start_at_prices"]


def edge_rows(K: AffineGramConstraints, edges: np.ndarray,
              target: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The inequality rows of ``K`` that are :math:`c\,A_e \le b_k` for an edge ``e`` of
    ``edges`` (``(m, 2)`` point pairs) whose target violates the row,
    :math:`c\,\bar D_e > b_k`: ``(rows, edge, c)``, each of the rows' length."""
    empty = np.zeros(0, dtype=np.int64)
    if K.p == 0 or edges.shape[0] == 0:
        return empty, empty, np.zeros(0)
    _, rows_of, _ = K.row_points            # the distinct (row, point) pairs
    two = np.bincount(rows_of, minlength=K.p) == 2
    big = np.iinfo(np.int64).max
    a = np.full(K.p, big, dtype=np.int64)
    b = np.full(K.p, -1, dtype=np.int64)
    np.minimum.at(a, K.row, K.i.astype(np.int64))
    np.maximum.at(b, K.row, K.i.astype(np.int64))
    diag = K.i == K.j
    va = np.bincount(K.row, weights=np.where(diag & (K.i == a[K.row]), K.value, 0.0),
                     minlength=K.p)
    vb = np.bincount(K.row, weights=np.where(diag & (K.i == b[K.row]), K.value, 0.0),
                     minlength=K.p)
    vo = np.bincount(K.row, weights=np.where(diag, 0.0, K.value), minlength=K.p)
    # c A_e: c on both diagonal entries, -c on both off-diagonal ones (they sum to -2c)
    tol = 1e-12 * np.abs(va)
    shaped = two & ~K.equality & (va != 0.0) & (np.abs(vb - va) <= tol) \
        & (np.abs(vo + 2.0 * va) <= 2.0 * tol)
    cand = np.flatnonzero(shaped)
    if cand.size == 0:
        return empty, empty, np.zeros(0)
    n = np.int64(K.n)
    lo, hi = np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])
    keys = lo.astype(np.int64) * n + hi
    order = np.argsort(keys)
    want = a[cand] * n + b[cand]
    at = np.minimum(np.searchsorted(keys[order], want), keys.size - 1)
    found = keys[order][at] == want
    cand, edge = cand[found], order[at[found]]
    c = va[cand]
    conflict = c * target[edge] > K.rhs[cand]
    return cand[conflict], edge[conflict], c[conflict]


def priced_rows(z: np.ndarray, K: AffineGramConstraints, values: np.ndarray,
                rho: float | np.ndarray, rows: np.ndarray, edge: np.ndarray, c: np.ndarray,
                w: np.ndarray) -> np.ndarray:
    r"""The rows' multipliers ``z`` with each edge row (``rows``, ``edge``, ``c`` of
    :func:`edge_rows`) whose first-order reach :math:`z_k + \rho_k\max(0,
    \langle A_k, G\rangle - b_k)` (``values`` the rows' values at the point, ``rho`` the
    next subproblem's penalty) is below its price :math:`w_e/|c|` started at that price;
    a copy."""
    z = np.array(z, dtype=float)
    if rows.size == 0:
        return z
    rho_k = (np.asarray(rho, dtype=float) * np.ones(K.p))[rows]
    reach = z[rows] + rho_k * np.maximum(values[rows] - K.rhs[rows], 0.0)
    price = w[edge] / np.abs(c)
    low = reach < price
    z[rows[low]] = price[low]
    return z


def start_at_prices(space: FactorSpace, pen: DistancePenalty, nu: np.ndarray, values: np.ndarray,
                    rho: float | np.ndarray) -> np.ndarray:
    """The linear multipliers ``nu`` (of ``space``, a :class:`~.space.FactorSpace`) with the
    added rows' part through :func:`priced_rows` at the edges of ``pen`` (a
    :class:`~.penalty.DistancePenalty`, ``"interval"``); ``nu`` itself without added rows
    or another distance mode."""
    K = space.K
    if K is None or pen.mode != "interval":
        return nu
    rows, edge, c = edge_rows(K, np.asarray(space.gp.edges), pen.t)
    if rows.size == 0:
        return nu
    out = np.array(nu, dtype=float)
    out[space.n_snr:] = priced_rows(space.user_part(out), K, values, rho, rows, edge, c, pen.w)
    return out

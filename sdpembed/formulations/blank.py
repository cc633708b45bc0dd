r"""The blank centred Gram SDP a user completes with ``with_objective`` and ``with_constraints``."""

from __future__ import annotations

import dataclasses
from numbers import Integral

import numpy as np
import scipy.sparse as sp

from .._params import Range, declared
from ..backends import conic_alternatives
from ..exceptions import UnsupportedProblemError
from .gram import DiagPlusLowRank, GramFormulation, GramProblem, build_gram_formulation, gram_basis

__all__ = ["GRAM_SDP_PARAMETERS", "gram_sdp", "distance_rows_as_edges"]

#: declared constraints of the parameters of :func:`gram_sdp`, checked on every call
GRAM_SDP_PARAMETERS = {"n": [Range(Integral, 2, None, closed="left")],
                       "reduce_face": ["boolean"]}


@declared(GRAM_SDP_PARAMETERS)
def gram_sdp(n: int, *, reduce_face: bool = True) -> GramFormulation:
    r"""The blank centred Gram SDP over ``n`` points.

    .. math::

        \min_{G}\ 0 \quad\text{s.t.}\quad G \succeq 0,\qquad G\mathbf 1 = 0,

    (:math:`G\mathbf 1 = 0` is :math:`\mathbf 1^TG\mathbf 1 = 0` for :math:`G\succeq 0`).
    A user completes it with
    :meth:`~sdpembed.formulations.gram.GramFormulation.with_objective` (terms linear in
    ``G = f.expressions["gram"]``, minimised) and
    :meth:`~sdpembed.formulations.gram.GramFormulation.with_constraints` (affine
    (in)equalities on ``G``); every backend solves the result. ``"LOWRANK"`` takes the
    equality rows that fix a squared distance, :math:`G_{ii} + G_{jj} - 2G_{ij} =
    \bar D_{ij} > 0`, as its distance edges (:func:`distance_rows_as_edges`; they bound
    the problem on a connected graph) and every other row as an added constraint, so it
    needs at least one such row.

    Parameters
    ----------
    n : int
        Number of points, at least 2.
    reduce_face : bool
        Pose the problem on the face :math:`G = VYV^T`, :math:`V` an orthonormal basis
        of :math:`\mathbf 1^\perp` (Slater's condition holds there; see
        :func:`~sdpembed.formulations.dvu.dvu`).

    Returns
    -------
    GramFormulation

    Examples
    --------
    MVU with shrink-only distances, in user code:

    >>> f = gram_sdp(len(X))                                           # doctest: +SKIP
    >>> G = f.expressions["gram"]
    >>> i, j = graph.edges.T
    >>> f = f.with_objective(-cp.trace(G)).with_constraints(
    ...     [G[i, i] + G[j, j] - 2 * G[i, j] <= graph.sqdist])
    """
    n = int(n)
    gp = GramProblem(n=n, edges=np.zeros((0, 2), dtype=np.int64), target=np.zeros(0),
                     objective=DiagPlusLowRank.zeros(n), distances="equality",
                     meta={"blank": True})
    basis, size = gram_basis(gp, bool(reduce_face))
    statement = ["minimise   0  (complete with f.with_objective(...))",
                 "subject to G PSD (n x n), G 1 = 0  (add rows with f.with_constraints(...))"]
    return build_gram_formulation(
        gp, basis=basis, centered_basis=bool(reduce_face), method="gram_sdp",
        variant="blank" + ("/reduced-face" if reduce_face else ""), equations=None,
        basis_size=size, extra_meta={"reduce_face": bool(reduce_face), "basis_rank": None,
                                     "statement": statement})


def _distance_pair(A: sp.csr_matrix, n: int, k: int) -> tuple[int, int] | None:
    """``(a, b)`` when row ``k`` of ``A`` is :math:`G_{aa} + G_{bb} - 2G_{ab}`, else ``None``."""
    cols = A.indices[A.indptr[k]:A.indptr[k + 1]]
    vals = A.data[A.indptr[k]:A.indptr[k + 1]]
    i, j = cols % n, cols // n
    diag = i == j
    if diag.sum() != 2 or not np.all(vals[diag] == 1.0) or not np.all(vals[~diag] == -1.0):
        return None
    a, b = np.sort(i[diag])
    if not set(zip(i[~diag], j[~diag])) == {(a, b), (b, a)}:
        return None
    return int(a), int(b)


def distance_rows_as_edges(gp: GramProblem) -> GramProblem:
    r"""``gp`` (with no distance edges) with its added equality rows
    :math:`G_{ii} + G_{jj} - 2G_{ij} = \bar D_{ij}`, :math:`\bar D_{ij} > 0`, moved to
    distance edges (``distances="equality"``), or, when there is no such row, its rows
    :math:`G_{ii} + G_{jj} - 2G_{ij} \le \bar D_{ij}` (``distances="shrink"``); the
    other added rows stay. The same problem, in the form the low-rank solver's distance
    machinery reads.

    Raises
    ------
    UnsupportedProblemError
        When no such row exists (the low-rank solver needs distance edges).
    """
    K = gp.constraints
    if gp.edges.shape[0]:
        return gp
    none = UnsupportedProblemError(
        "solver='LOWRANK' needs at least one added row fixing or bounding a squared distance, "
        "G[i, i] + G[j, j] - 2 * G[i, j] == d (or <= d) with d > 0, on this blank Gram SDP "
        "(it bounds the problem and gives the solver its distance edges); solve it with "
        f"{conic_alternatives()} instead, or start from sdpembed.formulations.mvu(graph)")
    if K is None or K.p == 0:
        raise none
    A = sp.csr_matrix((K.value, (K.row, K.i * K.n + K.j)), shape=(K.p, K.n * K.n))
    nnz = np.diff(A.indptr)

    def rows(kind: np.ndarray) -> list[tuple[int, tuple[int, int]]]:
        """The distance rows among the rows of ``kind``, with their pairs."""
        found = ((k, _distance_pair(A, K.n, k))
                 for k in np.flatnonzero(kind & (nnz == 4) & (K.rhs > 0)))
        return [(k, pair) for k, pair in found if pair is not None]

    # the equality rows; without any, the <= rows (shrink-only distances)
    distance_rows = rows(K.equality)
    equality = bool(distance_rows)
    if not equality:
        distance_rows = rows(~K.equality)
    if not distance_rows:
        raise none
    moved = [k for k, _ in distance_rows]
    edges = [pair for _, pair in distance_rows]
    target = [K.rhs[k] for k in moved]
    keep = np.setdiff1d(np.arange(K.p), moved)
    sel = np.isin(K.row, keep)
    renumber = np.full(K.p, -1, dtype=np.int64)
    renumber[keep] = np.arange(keep.size)
    rest = dataclasses.replace(
        K, row=renumber[K.row[sel]], i=K.i[sel], j=K.j[sel], value=K.value[sel],
        rhs=K.rhs[keep], equality=K.equality[keep],
        labels=tuple(K.labels[k] for k in keep) if K.labels else ())
    return dataclasses.replace(gp, edges=np.asarray(edges, dtype=np.int64),
                               target=np.asarray(target, dtype=float),
                               distances="equality" if equality else "shrink",
                               constraints=rest if keep.size else None)

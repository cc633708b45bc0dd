"""The numpy description of a centred Gram-matrix SDP (:class:`GramProblem`), its
edge operator and the centring basis."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._params import NONNEGATIVE, POSITIVE_INT
from .._sklearn import StrOptions
from ..graphs import NeighborhoodGraph
from .matrices import DiagPlusLowRank

DISTANCE_MODES = ("interval", "equality", "quadratic", "shrink")


def rigidity_note(distances: str) -> str:
    """What equality distances mean where a solver found no strictly feasible point: on
    exact low-dimensional data a k-NN graph can be universally rigid, the data itself the
    only feasible point (docs/tuning.md, sixteenth round). Empty for other modes."""
    if distances != "equality":
        return ""
    return (" With equality distances on exact low-dimensional data (a k-NN graph rigid in "
            "the data's dimension) the data itself may be the only feasible point, and a "
            "near-feasible point's objective can be far from the optimum whatever the "
            "backend; distances='shrink' is strictly feasible and certifies.")


#: declared constraints of the parameters that :func:`~sdpembed.formulations.dvu` and
#: :func:`~sdpembed.formulations.mvu` share (their estimators read the same entries)
GRAM_PARAMETERS = {
    "graph": [NeighborhoodGraph],
    "distances": [StrOptions(set(DISTANCE_MODES))],
    "slack_weight": [NONNEGATIVE],
    "normalize": ["boolean"],
    "reduce_face": ["boolean"],
    "basis_rank": [POSITIVE_INT, None],
    "basis_graph": [NeighborhoodGraph, None],
}


@dataclass(frozen=True, eq=False)
class GramProblem:
    """Numpy description of a centred Gram-matrix SDP.

    .. math::

        \\min_{G \\succeq 0,\\; G\\mathbf 1 = 0}\\;
            \\langle C_{\\mathrm{obj}}, G\\rangle + \\tau\\,\\mathrm{tr}\\,G
            + \\text{distance penalty} + \\rho\\,\\xi

    with ``distances`` one of

    * ``"equality"``: :math:`D_e(G) = \\bar D_e` for every edge;
    * ``"interval"``: :math:`(1-\\epsilon_e)\\bar D_e \\le D_e(G) \\le (1+\\epsilon_e)\\bar D_e`,
      :math:`\\epsilon \\ge 0`, penalty :math:`\\lambda \\sum_e \\epsilon_e`;
    * ``"quadratic"``: penalty :math:`\\lambda\\sum_e (D_e + \\bar D_e - 2\\sqrt{D_e \\bar D_e})
      = \\lambda \\sum_e (d_e - \\bar d_e)^2`;
    * ``"shrink"``: :math:`D_e(G) \\le \\bar D_e` for every edge (shrink-only; :math:`G = 0`
      is strictly feasible, so the dual optimum is attained);

    and optionally ``snr`` (:math:`\\langle C_b, G\\rangle \\ge \\eta \\langle C_i, G\\rangle`)
    and ``ratio`` (:math:`\\langle C_i,G\\rangle^2 / \\langle C_b,G\\rangle \\le \\epsilon
    \\langle C_i, G\\rangle + \\xi`, :math:`\\xi\\ge 0`), where :math:`C_i`, :math:`C_b`
    are the in-class and between-class variance functionals (DVU only).
    ``trace_weight`` is signed: positive minimises the trace, negative maximises it.
    ``constraints``: affine constraints :math:`\\langle A_k, G\\rangle \\le b_k` or
    :math:`= b_k` added by the user on the points' Gram matrix
    (:class:`~sdpembed.formulations.constraints.AffineGramConstraints`), or ``None``.
    """

    n: int
    edges: np.ndarray
    target: np.ndarray
    objective: DiagPlusLowRank
    distances: str = "interval"
    slack_weight: float = 1.0
    trace_weight: float = 0.0
    icv: DiagPlusLowRank | None = None
    bcv: DiagPlusLowRank | None = None
    snr: float | None = None
    ratio: float | None = None
    ratio_weight: float = 1.0
    centering: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    constraints: Any = None

    def centering_vectors(self) -> np.ndarray:
        """Columns :math:`c` of the constraints :math:`c^T G c = 0` (default :math:`\\mathbf 1`)."""
        return np.ones((self.n, 1)) if self.centering is None else self.centering

    def edge_operator(self) -> sp.csr_matrix:
        return edge_operator(self.edges, self.n)

    def distances_of(self, G: np.ndarray) -> np.ndarray:
        i, j = self.edges.T
        return G[i, i] + G[j, j] - 2 * G[i, j]

    def distances_of_factor(self, V: np.ndarray) -> np.ndarray:
        """:math:`D_e(VV^T) = \\|v_i - v_j\\|^2` from a factor ``V`` (n x r)."""
        diff = V[self.edges[:, 0]] - V[self.edges[:, 1]]
        return (diff * diff).sum(axis=1)

    def full_objective(self) -> DiagPlusLowRank:
        """Objective matrix including the trace term: :math:`C_{\\mathrm{obj}} + \\tau I`."""
        return dataclasses.replace(self.objective,
                                   diag=self.objective.diag + self.trace_weight)


def edge_operator(edges: np.ndarray, n: int, basis: np.ndarray | None = None) -> sp.csr_matrix:
    """Sparse operator :math:`\\mathcal A` with :math:`(\\mathcal A\\,\\mathrm{vec}(Y))_e = D_e`.

    Without ``basis``, ``Y = G`` (n x n) and row ``e`` of :math:`\\mathcal A` is
    :math:`\\mathrm{vec}(a_e a_e^T)`, four non-zeros. With ``basis`` ``V``
    (n x r), :math:`G = V Y V^T` and row ``e`` is :math:`\\mathrm{vec}(w_e w_e^T)`
    with :math:`w_e = V^T a_e = v_i - v_j`: exact zeros of :math:`w_e` are kept
    out, so a basis whose rows differ sparsely gives a sparse operator.
    ``vec`` is column-major, matching ``cvxpy.vec``.
    """
    edges = np.asarray(edges, dtype=np.int64)
    m = edges.shape[0]
    if basis is None:
        i, j = edges.T
        rows = np.repeat(np.arange(m), 4)
        cols = np.c_[i + n * i, j + n * j, i + n * j, j + n * i].ravel()
        vals = np.tile([1.0, 1.0, -1.0, -1.0], m)
        return sp.csr_matrix((vals, (rows, cols)), shape=(m, n * n))
    V = np.asarray(basis, dtype=float)
    r = V.shape[1]
    W = sp.csr_matrix(V[edges[:, 0]] - V[edges[:, 1]])
    W.eliminate_zeros()
    nnz = np.diff(W.indptr)
    # all pairs (a, b) of non-zeros within each row: sum_e nnz_e^2 entries
    counts = nnz**2
    rows = np.repeat(np.arange(m), counts)
    starts = np.repeat(W.indptr[:-1], counts)
    k = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    width = np.repeat(nnz, counts)
    a = starts + k // np.maximum(width, 1)
    b = starts + k % np.maximum(width, 1)
    cols = W.indices[a] + r * W.indices[b]
    vals = W.data[a] * W.data[b]
    return sp.csr_matrix((vals, (rows, cols)), shape=(m, r * r))


def centering_basis(n: int, pivot: int | None = None) -> np.ndarray:
    """Orthonormal basis ``V`` (n x (n-1)) of :math:`\\mathbf 1^\\perp` by a Householder reflection.

    :math:`H = I - 2uu^T/u^Tu` with :math:`u = \\mathbf 1/\\sqrt n - e_p` maps
    :math:`e_p` to :math:`\\mathbf 1/\\sqrt n`; the other columns of :math:`H`
    are orthonormal and orthogonal to :math:`\\mathbf 1`. Rows :math:`i, j \\ne p`
    of ``V`` differ by :math:`e_i - e_j` exactly, so the edge operator stays
    sparse except on edges at the pivot node ``p`` (choose a low-degree node).
    """
    p = n - 1 if pivot is None else int(pivot)
    u = np.full(n, 1.0 / np.sqrt(n))
    u[p] -= 1.0
    H = np.eye(n) - (2.0 / (u @ u)) * np.outer(u, u)
    V = np.delete(H, p, axis=1)
    # exact structure: rows i != p are e_i - c u_i ubar with equal u_i, so
    # differences are exact unit vectors; clean rounding noise accordingly.
    V[np.abs(V) < 1e-15] = 0.0
    return V

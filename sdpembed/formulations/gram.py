"""Shared machinery of the Gram-matrix SDPs (DVU, MVU).

Both problems optimise over a centred Gram matrix :math:`G \\succeq 0`,
:math:`G\\mathbf 1 = 0`, of ``n`` embedded points with

* a linear objective :math:`\\langle C, G\\rangle` whose matrix is diagonal
  plus low rank (:class:`DiagPlusLowRank`),
* distance constraints on a sparse edge set: for edge :math:`e=(i,j)`,
  :math:`D_e(G) = G_{ii} + G_{jj} - 2G_{ij} = \\langle a_e a_e^T, G\\rangle`
  with :math:`a_e = e_i - e_j` (:func:`edge_operator`).

This module holds the numpy description of such a problem
(:class:`GramProblem`) and turns it into a cvxpy :class:`Formulation`
(:func:`build_gram_formulation`), optionally on a face or subspace
:math:`G = V Y V^T` (facial reduction of the centring constraint, or a
reduced basis for large n). The large-n solver reads the same
:class:`GramProblem` from ``formulation.meta["gram_problem"]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ..exceptions import InputError
from ._base import Formulation

__all__ = ["DiagPlusLowRank", "DenseSym", "GramProblem", "edge_operator", "centering_basis",
           "build_gram_formulation", "DISTANCE_MODES"]

DISTANCE_MODES = ("interval", "equality", "quadratic")


@dataclass(frozen=True)
class DiagPlusLowRank:
    """Symmetric matrix :math:`M = \\mathrm{diag}(d) + U\\,\\mathrm{diag}(s)\\,U^T`."""

    diag: np.ndarray
    U: np.ndarray
    s: np.ndarray

    @property
    def n(self) -> int:
        return self.diag.shape[0]

    def dense(self) -> np.ndarray:
        return np.diag(self.diag) + (self.U * self.s) @ self.U.T

    def matvec(self, X: np.ndarray) -> np.ndarray:
        """:math:`M X` for a vector or a matrix of columns, in O(n r) per column."""
        X = np.asarray(X)
        d = self.diag if X.ndim == 1 else self.diag[:, None]
        return d * X + self.U @ (self.s[:, None] * (self.U.T @ X) if X.ndim > 1
                                 else self.s * (self.U.T @ X))

    def inner(self, G: np.ndarray) -> float:
        """:math:`\\langle M, G\\rangle` for a dense symmetric ``G``."""
        return float(self.diag @ np.diag(G) + np.einsum("ir,ij,jr,r->", self.U, G, self.U, self.s))

    def inner_factor(self, V: np.ndarray) -> float:
        """:math:`\\langle M, VV^T\\rangle = \\mathrm{tr}(V^T M V)` without forming :math:`VV^T`."""
        UV = self.U.T @ V
        return float(self.diag @ (V * V).sum(axis=1) + (self.s[:, None] * UV * UV).sum())

    def congruence(self, V: np.ndarray) -> np.ndarray:
        """:math:`V^T M V` (dense r x r)."""
        UV = self.U.T @ V
        return (V.T * self.diag) @ V + (UV.T * self.s) @ UV

    def __add__(self, other: DiagPlusLowRank) -> DiagPlusLowRank:
        return DiagPlusLowRank(self.diag + other.diag, np.c_[self.U, other.U], np.r_[self.s, other.s])

    def scaled(self, a: float) -> DiagPlusLowRank:
        return DiagPlusLowRank(a * self.diag, self.U, a * self.s)

    @classmethod
    def zeros(cls, n: int) -> DiagPlusLowRank:
        return cls(np.zeros(n), np.zeros((n, 0)), np.zeros(0))


@dataclass(frozen=True)
class DenseSym:
    """A dense symmetric matrix with the :class:`DiagPlusLowRank` interface."""

    M: np.ndarray

    @property
    def n(self) -> int:
        return self.M.shape[0]

    def dense(self) -> np.ndarray:
        return self.M

    def matvec(self, X: np.ndarray) -> np.ndarray:
        return self.M @ X

    def inner(self, G: np.ndarray) -> float:
        return float(np.sum(self.M * G))

    def congruence(self, V: np.ndarray) -> np.ndarray:
        return V.T @ self.M @ V


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

    and optionally ``snr`` (:math:`\\langle C_b, G\\rangle \\ge \\eta \\langle C_i, G\\rangle`)
    and ``ratio`` (:math:`\\langle C_i,G\\rangle^2 / \\langle C_b,G\\rangle \\le \\epsilon
    \\langle C_i, G\\rangle + \\xi`, :math:`\\xi\\ge 0`), where :math:`C_i`, :math:`C_b`
    are the in-class and between-class variance functionals (DVU only).
    ``trace_weight`` is signed: positive minimises the trace, negative maximises it.
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
        return DiagPlusLowRank(self.objective.diag + self.trace_weight, self.objective.U,
                               self.objective.s)


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


def build_gram_formulation(gp: GramProblem, *, basis: np.ndarray | None = None,
                           centered_basis: bool = False, method: str, variant: str,
                           equations: str, extra_meta: dict | None = None) -> Formulation:
    """cvxpy problem of a :class:`GramProblem`, on :math:`G` or on :math:`G = VY V^T`.

    Parameters
    ----------
    basis : ndarray (n, r), optional
        ``None`` optimises over the full ``G`` with the constraint
        :math:`\\mathbf 1^T G \\mathbf 1 = 0`. Otherwise ``G = V Y V^T`` with
        ``Y ⪰ 0`` of size r. ``Y ⪰ 0`` implies ``G ⪰ 0``; if ``V`` has full
        column rank the map is injective.
    centered_basis : bool
        ``True`` when :math:`V^T \\mathbf 1 = 0`, so the centring constraint holds
        by construction and is left out (facial reduction: the face
        :math:`\\{G \\succeq 0 : G\\mathbf 1 = 0\\} = \\{VYV^T : Y \\succeq 0\\}` for
        ``V`` spanning :math:`\\mathbf 1^\\perp`; the reduced problem has a
        strictly feasible point, which restores Slater's condition).
    """
    n, m = gp.n, gp.edges.shape[0]
    if basis is None:
        Y = cp.Variable((n, n), PSD=True, name="G")
        r = n
        A = edge_operator(gp.edges, n)
        Cfull = gp.objective.dense()
        c_obj = Cfull.ravel(order="F")
        trace_vec = np.eye(n).ravel(order="F")
    else:
        V = np.asarray(basis, dtype=float)
        if V.ndim != 2 or V.shape[0] != n:
            raise InputError(f"basis must have shape ({n}, r); got {V.shape}")
        r = V.shape[1]
        Y = cp.Variable((r, r), PSD=True, name="Y")
        A = edge_operator(gp.edges, n, V)
        c_obj = gp.objective.congruence(V).ravel(order="F")
        trace_vec = (V.T @ V).ravel(order="F")
    vecY = cp.vec(Y, order="F")
    D = A @ vecY
    target = gp.target
    variables: dict[str, cp.Variable] = {Y.name(): Y}
    parameters: dict[str, cp.Parameter] = {}
    constraints = []
    objective = c_obj @ vecY
    if basis is None or not centered_basis:
        Cc = gp.centering_vectors() if basis is None else V.T @ gp.centering_vectors()
        center = np.stack([np.outer(c, c).ravel(order="F") for c in Cc.T])
        constraints.append(center @ vecY == 0)
    if gp.trace_weight != 0.0:
        tw = cp.Parameter(nonneg=True, name="trace_weight", value=abs(gp.trace_weight))
        parameters["trace_weight"] = tw
        objective = objective + np.sign(gp.trace_weight) * tw * (trace_vec @ vecY)
    if gp.distances == "equality":
        constraints.append(D == target)
    elif gp.distances == "interval":
        eps = cp.Variable(m, nonneg=True, name="eps")
        lam = cp.Parameter(nonneg=True, name="slack_weight", value=gp.slack_weight)
        variables["eps"], parameters["slack_weight"] = eps, lam
        constraints += [D >= target - cp.multiply(target, eps),
                        D <= target + cp.multiply(target, eps)]
        objective = objective + lam * cp.sum(eps)
    elif gp.distances == "quadratic":
        lam = cp.Parameter(nonneg=True, name="slack_weight", value=gp.slack_weight)
        parameters["slack_weight"] = lam
        penalty = cp.sum(D) + target.sum() - 2 * (np.sqrt(target) @ cp.sqrt(D))
        objective = objective + lam * penalty
    else:  # pragma: no cover - validated by the builders
        raise InputError(f"distances must be one of {DISTANCE_MODES}")
    if gp.snr is not None or gp.ratio is not None:
        ci = (gp.icv.dense() if basis is None else gp.icv.congruence(V)).ravel(order="F")
        cb = (gp.bcv.dense() if basis is None else gp.bcv.congruence(V)).ravel(order="F")
        icv, bcv = ci @ vecY, cb @ vecY
        if gp.snr is not None:
            eta = cp.Parameter(nonneg=True, name="snr", value=gp.snr)
            parameters["snr"] = eta
            constraints.append(bcv >= eta * icv)
        if gp.ratio is not None:
            xi = cp.Variable(nonneg=True, name="xi")
            ratio = cp.Parameter(nonneg=True, name="ratio", value=gp.ratio)
            rho = cp.Parameter(nonneg=True, name="ratio_weight", value=gp.ratio_weight)
            variables["xi"] = xi
            parameters["ratio"], parameters["ratio_weight"] = ratio, rho
            constraints.append(cp.quad_over_lin(icv, bcv) <= ratio * icv + xi)
            objective = objective + rho * xi
    problem = cp.Problem(cp.Minimize(objective), constraints)
    full = Y if basis is None else V @ Y @ V.T
    n_points = gp.meta.get("n_points", n)
    expressions = {"gram": full if n_points == n else full[:n_points, :n_points]}
    if n_points != n:
        expressions["gram_full"] = full
    meta = {"method": method, "variant": variant, "equations": equations, "gram_problem": gp,
            "basis": basis, "n": n, "n_edges": m, **(extra_meta or {})}
    return Formulation(problem, variables, parameters, meta, expressions)

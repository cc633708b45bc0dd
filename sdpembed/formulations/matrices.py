"""The structured symmetric matrices of the Gram SDPs' objectives and functionals:
diagonal plus sparse plus low rank (:class:`DiagPlusLowRank`), and dense
(:class:`DenseSym`), with the products the solvers need."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["DiagPlusLowRank", "DenseSym"]


@dataclass(frozen=True)
class DiagPlusLowRank:
    """Symmetric matrix :math:`M = \\mathrm{diag}(d) + S + U\\,\\mathrm{diag}(s)\\,U^T`.

    ``sparse`` (:math:`S`) is an optional symmetric sparse part with a zero diagonal
    (the diagonal lives in ``diag``), ``None`` for none: the objective terms a user adds
    with :meth:`GramFormulation.with_objective` (a graph Laplacian, a few entries).
    """

    diag: np.ndarray
    U: np.ndarray
    s: np.ndarray
    sparse: sp.csr_matrix | None = None

    @property
    def n(self) -> int:
        return self.diag.shape[0]

    def dense(self) -> np.ndarray:
        out = np.diag(self.diag) + (self.U * self.s) @ self.U.T
        if self.sparse is not None:
            out += self.sparse.toarray()
        return out

    def matvec(self, X: np.ndarray) -> np.ndarray:
        """:math:`M X` for a vector or a matrix of columns, in O(n r + nnz(S)) per column."""
        X = np.asarray(X)
        d = self.diag if X.ndim == 1 else self.diag[:, None]
        out = d * X
        if self.U.shape[1]:
            out += self.U @ (self.s[:, None] * (self.U.T @ X) if X.ndim > 1
                             else self.s * (self.U.T @ X))
        if self.sparse is not None:
            out += self.sparse @ X
        return out

    def inner(self, G: np.ndarray) -> float:
        """:math:`\\langle M, G\\rangle` for a dense symmetric ``G``."""
        out = float(self.diag @ np.diag(G) + np.einsum("ir,ij,jr,r->", self.U, G, self.U,
                                                       self.s))
        if self.sparse is not None:
            S = self.sparse.tocoo()
            out += float(S.data @ G[S.row, S.col])
        return out

    def inner_factor(self, V: np.ndarray) -> float:
        """:math:`\\langle M, VV^T\\rangle = \\mathrm{tr}(V^T M V)` without forming :math:`VV^T`."""
        UV = self.U.T @ V
        out = float(self.diag @ (V * V).sum(axis=1) + (self.s[:, None] * UV * UV).sum())
        if self.sparse is not None:
            out += float(np.sum(V * (self.sparse @ V)))
        return out

    def congruence(self, V: np.ndarray) -> np.ndarray:
        """:math:`V^T M V` (dense r x r)."""
        UV = self.U.T @ V
        out = (V.T * self.diag) @ V + (UV.T * self.s) @ UV
        if self.sparse is not None:
            out += V.T @ (self.sparse @ V)
        return out

    @property
    def sparse_row_sum(self) -> float:
        """:math:`\\max_i \\sum_j |S_{ij}|` (0 without a sparse part): a bound on
        :math:`\\|S\\|_2`."""
        if self.sparse is None or self.sparse.nnz == 0:
            return 0.0
        return float(np.max(np.asarray(abs(self.sparse).sum(axis=1)).ravel(), initial=0.0))

    def __add__(self, other: DiagPlusLowRank) -> DiagPlusLowRank:
        parts = [M.sparse for M in (self, other) if M.sparse is not None]
        sparse = None if not parts else sp.csr_matrix(sum(parts[1:], parts[0]))
        return DiagPlusLowRank(self.diag + other.diag, np.c_[self.U, other.U],
                               np.r_[self.s, other.s], sparse)

    def scaled(self, a: float) -> DiagPlusLowRank:
        return DiagPlusLowRank(a * self.diag, self.U, a * self.s,
                               None if self.sparse is None else sp.csr_matrix(a * self.sparse))

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

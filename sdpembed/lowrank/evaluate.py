"""The evaluation kernel of the subproblem in the full space: the same floating-point
operations as the plain evaluation, on buffers kept between evaluations."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..formulations.matrices import DiagPlusLowRank

__all__ = ["EvaluationKernel"]


class EvaluationKernel:
    r"""The centred factor, its objective product, its edges' differences and the distance
    term's gradient scatter for one factor shape (n x k, full space), each result equal to
    the bit to the plain evaluation (:meth:`FactorSpace.project`, ``space.apply_C``,
    :meth:`FactorSpace.diffs`, ``space.ET @ (g * Z)``): only the arrays differ.

    - :meth:`centre` writes :math:`W - \mathbf 1(\mathbf 1^TW/n)` into a kept buffer;
    - :meth:`objective` forms :math:`\tilde CW` of a :class:`DiagPlusLowRank` (diagonal,
      low-rank, sparse part, added in that order) in a kept buffer;
    - :meth:`differences` gathers :math:`z_e = w_i - w_j` into kept buffers
      (``np.take`` with ``out=`` and ``mode="clip"``: the indices are in range, and with
      the default ``mode="raise"`` numpy writes through a temporary);
    - :meth:`quadratic` is :math:`\sum_{ij} W_{ij}(\tilde CW)_{ij}`, the same pairwise sum
      over a C-ordered product array, in a kept buffer;
    - :meth:`scatter` is :math:`E^T\mathrm{diag}(g)Z` for the differences of the last
      :meth:`differences`, as one product with a copy of :math:`E^T` whose entries are
      refilled with :math:`\pm g_e`: each term :math:`(\pm g_e)z_{ea}` is the
      :math:`\pm 1\cdot(g_ez_{ea})` of scaling :math:`Z` first (a product by
      :math:`\pm 1` is exact; same products, same order of the sums), without the pass
      over the m x k array.

    The buffers are overwritten by the next call: what :meth:`centre`, :meth:`objective`
    and :meth:`differences` return is not to be kept; :meth:`scatter` returns a new array.

    Parameters
    ----------
    space : FactorSpace
        The full space (``space.Q is None``).
    k : int
        The factor's number of columns.
    """

    def __init__(self, space, k: int):
        self.space = space
        self.i, self.j = space._ends
        n, m = space.gp.n, self.i.size
        self.k = k
        self._W = np.empty((n, k))
        self._CW = np.empty((n, k))
        self._prod = np.empty((n, k))
        self._Z = np.empty((m, k))
        self._Y = np.empty((m, k))
        ET = sp.csr_matrix(space.ET, copy=True)
        self._ET = ET
        # ET's column indices are the edges: its values refilled by a gather of g
        self._edge_of = ET.indices.astype(np.intp)
        self._sign = np.array(ET.data, dtype=float)
        C = space.C
        self._C = C if isinstance(C, DiagPlusLowRank) else None
        if self._C is not None:
            self._diag = C.diag[:, None]
            self._low = np.empty((n, k)) if C.U.shape[1] else None

    def centre(self, X: np.ndarray) -> np.ndarray:
        """:meth:`FactorSpace.project` of ``X`` (n x k) in the kept buffer."""
        return np.subtract(X, (self.space._ones_n @ X)[None, :], out=self._W)

    def objective(self, W: np.ndarray) -> np.ndarray:
        r""":math:`\tilde CW` in the kept buffer (``space.apply_C`` where the objective is
        not diagonal plus low rank, a new array)."""
        C = self._C
        if C is None:
            return self.space.apply_C(W)
        out = np.multiply(self._diag, W, out=self._CW)
        if self._low is not None:
            out += np.matmul(C.U, C.s[:, None] * (C.U.T @ W), out=self._low)
        if C.sparse is not None:
            out += C.sparse @ W
        return out

    def quadratic(self, W: np.ndarray, CW: np.ndarray) -> float:
        r""":math:`\langle W, \tilde CW\rangle` as ``np.sum(W * CW)``."""
        return float(np.multiply(W, CW, out=self._prod).sum())

    def differences(self, W: np.ndarray) -> np.ndarray:
        r"""The edges' differences :math:`z_e = w_i - w_j` of ``W`` in the kept buffer."""
        Z, Y = self._Z, self._Y
        np.take(W, self.i, axis=0, out=Z, mode="clip")
        np.take(W, self.j, axis=0, out=Y, mode="clip")
        Z -= Y
        return Z

    def scatter(self, g: np.ndarray) -> np.ndarray:
        r""":math:`E^T\mathrm{diag}(g)Z` for the differences :math:`Z` of the last
        :meth:`differences` (a new n x k array)."""
        np.multiply(g[self._edge_of], self._sign, out=self._ET.data)
        return self._ET @ self._Z

r"""The barrier's m x m edge Gram matrices :math:`EAE^T` in buffers kept for a whole run.

A primal–dual step (:func:`~.pd_barrier.pd_path`) forms two m x m matrices,
:math:`EM^{-1}E^T` and :math:`EXE^T`, and factors their Hadamard product. Formed as
``E @ (E @ A).T`` each is a fresh array, and the factorisation copies its input into
Fortran order, a third: above the allocator's mapping threshold (32 MB, m > 2,000)
every one is new memory from the kernel, page by page (docs/tuning.md, "The warm
barrier's page faults; a sweep's barrier paid for"). :class:`EdgeGrams` forms them into
two buffers allocated once,
with the arithmetic of the sparse products (an incidence row :math:`e_i - e_j`, its
first entry ``+1``, the second ``-1``: :math:`(EAE^T)_{ef} = B_{f,i_e} - B_{f,j_e}` with
:math:`B = EA`), laid out so that the buffer's transpose is Fortran-ordered and LAPACK
factors it in place.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .barrier_path import _cholesky_ridged

__all__ = ["EdgeGrams"]

#: rows of :math:`EA` gathered at a time (a scratch of this many rows by m)
_CHUNK = 128


class EdgeGrams:
    """Two kept m x m buffers for :math:`EAE^T` (``E`` an m x n CSR incidence matrix).

    :meth:`form` returns the matrix as the transpose of a C-ordered buffer (a
    Fortran-ordered view, equal entry for entry to ``E @ (E @ A).T``); :meth:`cho_factor`
    factors such a view in place with :func:`~.barrier_path._cholesky_ridged`'s ridges.
    ``E`` of another form (not two entries per row, ``+1`` then ``-1``): the sparse
    products, into fresh arrays."""

    def __init__(self, E: sp.csr_matrix):
        self.E = E
        m = E.shape[0]
        Ec = E.tocsr()
        ok = (Ec.has_sorted_indices and Ec.nnz == 2 * m
              and np.array_equal(Ec.indptr, 2 * np.arange(m + 1))
              and np.all(Ec.data[0::2] == 1.0) and np.all(Ec.data[1::2] == -1.0))
        self.kept = bool(ok)
        if self.kept:
            self.first, self.second = Ec.indices[0::2].copy(), Ec.indices[1::2].copy()
            self._buf = [np.empty((m, m)), np.empty((m, m))]
            self._scratch = np.empty((min(_CHUNK, m), m))

    def form(self, A: np.ndarray, slot: int) -> np.ndarray:
        """:math:`EAE^T` for a dense symmetric n x n ``A`` into buffer ``slot`` (0 or 1),
        the previous content of that buffer lost."""
        if not self.kept:
            return np.asarray(self.E @ (self.E @ A).T)
        B = np.asarray(self.E @ A)                  # m x n, C-ordered
        G = self._buf[slot]                         # G[f, e] = B[f, i_e] - B[f, j_e]
        m = G.shape[0]
        for r0 in range(0, m, _CHUNK):
            r1 = min(r0 + _CHUNK, m)
            Bc, Gc, S = B[r0:r1], G[r0:r1], self._scratch[:r1 - r0]
            np.take(Bc, self.first, axis=1, out=Gc)
            np.take(Bc, self.second, axis=1, out=S)
            np.subtract(Gc, S, out=Gc)
        return G.T

    def cho_factor(
        self, form: Callable[[], np.ndarray]
    ) -> tuple[np.ndarray, bool] | None:
        """``cho_factor`` of ``form()`` (a matrix from :meth:`form`), with a ridge of
        1e-14, then 1e-12 times its largest diagonal entry where rounding made it
        indefinite, in the kept buffer (``form`` called again for each try: the failed
        factorisation overwrote it); ``None`` if that fails too. Without kept buffers:
        :func:`~.barrier_path._cholesky_ridged` of one ``form()``."""
        if not self.kept:
            return _cholesky_ridged(form())
        for ridge in (0.0, 1e-14, 1e-12):
            H = form()
            if ridge:
                H[np.diag_indices(H.shape[0])] += ridge * float(np.max(np.diag(H)))
            try:
                return sla.cho_factor(H, overwrite_a=True, check_finite=False)
            except sla.LinAlgError:
                continue
        return None

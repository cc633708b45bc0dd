r"""The low-rank part of a structured objective applied through its few distinct rows.

DVU's objective :math:`\tilde C = \mathrm{diag}(d) + U\,\mathrm{diag}(s)\,U^T` has ``U``
of 20 columns (class indicators and their centred copies) but only as many distinct rows
as there are classes, plus the zero row of every unlabelled point. Writing
:math:`U = P\bar U` with :math:`P` the :math:`n\times p` indicator of each row's pattern
(zero rows left out) and :math:`\bar U` the :math:`p\times r` distinct non-zero rows,

.. math::

    U\,\mathrm{diag}(s)\,U^TX = P\,\big(\bar U\,\mathrm{diag}(s)\,\bar U^T(P^TX)\big),

two sparse products with one non-zero per labelled row and two small dense ones: about
:math:`4\,n_\ell k + 2pr k` flops for :math:`k` columns instead of the :math:`4nrk` of the
two dense products (:math:`n_\ell` labelled rows). At :math:`n = 9{,}298`, :math:`k = 14`,
20 columns and 10 patterns, 0.12 ms against 0.49 ms per product (docs/tuning.md, "9,298:
where the time goes, and the objective's low-rank part by its distinct rows"). The sums
are taken in another order than the dense products', so the result differs from
:meth:`DiagPlusLowRank.matvec` in its last bits; :data:`PATTERN_MIN_N` keeps small
problems, where the dense products cost microseconds, on the plain products.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..formulations.gram import DiagPlusLowRank

__all__ = ["PATTERN_MIN_N", "RowPatternProduct", "apply_structured"]

#: below this many points the low-rank part is applied by the dense products (their cost
#: is microseconds there, and the small solves keep their recorded paths)
PATTERN_MIN_N = 2000


class RowPatternProduct:
    r""":math:`U\,\mathrm{diag}(s)\,U^TX` of a :class:`DiagPlusLowRank` through the distinct
    non-zero rows of ``U`` (module docstring). Build with :meth:`of`."""

    def __init__(self, Ubar: np.ndarray, s: np.ndarray, P: sp.csr_matrix):
        self.Ubar = Ubar                     # p x r, the distinct non-zero rows
        self.s = s
        self.P = P                           # n x p indicator
        self.PT = P.T.tocsr()                # p x n

    @classmethod
    def of(cls, M: DiagPlusLowRank, *, min_n: int = PATTERN_MIN_N) -> RowPatternProduct | None:
        """The product for ``M``'s low-rank part, or ``None`` where the dense products are
        as cheap: fewer than ``min_n`` points, no low-rank columns, or more distinct
        non-zero rows than an eighth of the points or than the columns (and for a matrix
        without a low-rank part, e.g. :class:`~sdpembed.formulations.matrices.DenseSym`)."""
        if not isinstance(M, DiagPlusLowRank):
            return None
        U = np.asarray(M.U)
        n, r = U.shape
        if r == 0 or n < min_n:
            return None
        nonzero = np.flatnonzero(np.any(U != 0.0, axis=1))
        if nonzero.size == 0:
            return None
        Ubar, inv = np.unique(U[nonzero], axis=0, return_inverse=True)
        p = Ubar.shape[0]
        if p > r or 8 * p > n:
            return None
        P = sp.csr_matrix((np.ones(nonzero.size), (nonzero, np.ravel(inv))), shape=(n, p))
        return cls(np.ascontiguousarray(Ubar), np.asarray(M.s, dtype=float), P)

    def apply(self, X: np.ndarray) -> np.ndarray:
        r""":math:`U\,\mathrm{diag}(s)\,U^TX` for a vector or an ``n x k`` array."""
        T = self.Ubar.T @ (self.PT @ X)
        T *= self.s if X.ndim == 1 else self.s[:, None]
        return self.P @ (self.Ubar @ T)


def apply_structured(M: DiagPlusLowRank, low: RowPatternProduct | None,
                     X: np.ndarray) -> np.ndarray:
    """:math:`MX` as :meth:`DiagPlusLowRank.matvec` computes it, the low-rank part through
    ``low`` where given."""
    if low is None:
        return M.matvec(X)
    X = np.asarray(X)
    out = (M.diag if X.ndim == 1 else M.diag[:, None]) * X
    out += low.apply(X)
    if M.sparse is not None:
        out += M.sparse @ X
    return out

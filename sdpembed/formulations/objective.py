r"""Linear objective terms on the Gram matrix: read from cvxpy into structured matrices.

A user adds a term to a Gram SDP's objective with
:meth:`~sdpembed.formulations.gram.GramFormulation.with_objective`, writing a scalar
cvxpy expression affine in the formulation's ``expressions["gram"]`` (:math:`G`).
The conic backends solve it as written; ``"LOWRANK"`` needs it as a matrix :math:`M`
with the term equal to :math:`\langle M, G\rangle` (its constant part must be zero):

.. math::

    M = \mathrm{diag}(d) + S + U\,\mathrm{diag}(s)\,U^T
    \quad (:class:`~sdpembed.formulations.gram.DiagPlusLowRank`),

a diagonal, a sparse symmetric part :math:`S` and a low-rank part given by factors,
so that :math:`MX` costs :math:`O(n r + \mathrm{nnz}(S))` per column and
:math:`M` is never formed. :func:`gram_objective_matrix` reads a sum of terms:

* ``cp.trace(C @ G)`` or ``cp.trace(G @ C)`` with a constant ``C``: a scipy sparse
  ``C`` gives :math:`S`; a product of constants ``A @ B`` with an inner dimension
  :math:`k < n` (e.g. ``cp.trace(Y @ Y.T @ G)`` with ``Y = cp.Constant(labels)``) gives
  the low-rank part :math:`\tfrac12(AB + B^TA^T) = \tfrac14[(A+B^T)(A+B^T)^T -
  (A-B^T)(A-B^T)^T]` (just :math:`AA^T` when ``B`` is :math:`A^T`); a dense numpy ``C``
  is kept diagonal or sparse when it is, and otherwise, up to
  :data:`DENSE_OBJECTIVE_LIMIT` points, by its eigendecomposition (eigenvalues below
  :math:`n\,\epsilon_{\mathrm{mach}}\,\|C\|_2` in magnitude, i.e. at the rounding of
  the decomposition itself, are left out);
* :func:`gram_inner` ``(G, U, s)``: :math:`\langle U\mathrm{diag}(s)U^T, G\rangle`
  stated by its factors (the documented helper for a low-rank coefficient);
* anything else affine in :math:`G` (entries, ``cp.trace(G)``, sums of entries,
  ``cp.sum(cp.multiply(C, G))``) through the affine reader of
  :mod:`sdpembed.formulations.constraints`, as one sparse row.

Sums, negation and scaling by constants combine terms. Since :math:`G` is symmetric,
:math:`\langle C, G\rangle = \langle (C + C^T)/2, G\rangle` and the symmetric part is
stored. What cannot be represented raises
:class:`~sdpembed.exceptions.UnsupportedProblemError`.
"""

from __future__ import annotations

from collections.abc import Sequence

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from cvxpy.atoms.affine.add_expr import AddExpression
from cvxpy.atoms.affine.binary_operators import DivExpression, MulExpression, multiply
from cvxpy.atoms.affine.reshape import reshape
from cvxpy.atoms.affine.sum import Sum
from cvxpy.atoms.affine.trace import Trace
from cvxpy.atoms.affine.transpose import transpose
from cvxpy.atoms.affine.unary_operators import NegExpression

from .._typing import ArrayLike
from ..backends import conic_alternatives
from ..exceptions import UnsupportedProblemError
from .constraints import _linear, _Refusal
from .matrices import DiagPlusLowRank

__all__ = ["gram_objective_matrix", "gram_inner", "DENSE_OBJECTIVE_LIMIT"]

#: the largest n for which a dense coefficient matrix is read (by an eigendecomposition)
DENSE_OBJECTIVE_LIMIT = 3000


class _GramInner(Sum):
    """``cp.sum(cp.multiply(G @ U, U * s))``, tagged with its factors for the reader."""


def gram_inner(G: cp.Expression, U: ArrayLike, s: ArrayLike | None = None) -> cp.Expression:
    r""":math:`\langle U\,\mathrm{diag}(s)\,U^T, G\rangle = \sum_k s_k u_k^TGu_k` as a
    cvxpy expression whose factors ``"LOWRANK"`` reads without forming the
    :math:`n\times n` matrix.

    Parameters
    ----------
    G : cvxpy Expression
        The formulation's ``expressions["gram"]`` (n x n).
    U : array_like (n, k)
        Factors.
    s : array_like (k,), optional
        Weights (default 1).

    Returns
    -------
    cvxpy Expression
        A scalar, affine in ``G``: pass it (or a multiple) to
        :meth:`~sdpembed.formulations.gram.GramFormulation.with_objective`.
    """
    from ..exceptions import InputError

    U = np.asarray(U, dtype=float)
    if U.ndim == 1:
        U = U[:, None]
    if U.ndim != 2 or U.shape[0] != G.shape[0]:
        raise InputError(f"gram_inner: U must have shape ({G.shape[0]}, k); got {U.shape}")
    s = np.ones(U.shape[1]) if s is None else np.asarray(s, dtype=float).ravel()
    if s.shape != (U.shape[1],):
        raise InputError(f"gram_inner: s must have shape ({U.shape[1]},); got {s.shape}")
    if not (np.all(np.isfinite(U)) and np.all(np.isfinite(s))):
        raise InputError("gram_inner: U and s must be finite")
    expr = _GramInner(cp.multiply(G @ U, U * s))
    expr._factors = (U, s)
    return expr


def _constant(expr) -> np.ndarray | sp.spmatrix:
    value = expr.value
    if value is None:
        raise _Refusal(f"{expr.name()} has no value (a parameter without a value)")
    return value


def _is_gram(expr, gram) -> bool:
    """``expr`` is ``gram`` or its transpose (equal, ``G`` being symmetric)."""
    return expr is gram or (isinstance(expr, transpose) and expr.args[0] is gram)


def _coefficient(expr, gram):
    r"""The constant ``C`` of a term :math:`\langle C, G\rangle` written as
    ``cp.trace(C @ G)``, ``cp.trace(G @ C)`` (which cvxpy states as ``sum(multiply(C,
    G.T))``) or ``cp.sum(cp.multiply(C, G))``; ``None`` for another form. The transposes
    do not matter: only the symmetric part of ``C`` is read."""
    if isinstance(expr, Trace) and isinstance(expr.args[0], MulExpression):
        A, B = expr.args[0].args
        if _is_gram(B, gram) and A.is_constant():
            return A
        if _is_gram(A, gram) and B.is_constant():
            return B
        return None
    if isinstance(expr, Sum) and expr.axis is None and isinstance(expr.args[0], multiply):
        A, B = expr.args[0].args
        if _is_gram(B, gram) and A.is_constant() and A.shape == B.shape:
            return A
        if _is_gram(A, gram) and B.is_constant() and A.shape == B.shape:
            return B
    return None


def _product_chain(expr) -> list | None:
    """The constant factors of a product ``A @ B @ ...`` (``None`` if not one)."""
    if isinstance(expr, MulExpression) and all(a.is_constant() for a in expr.args):
        left, right = (_product_chain(a) or [a] for a in expr.args)
        return left + right
    if isinstance(expr, transpose) and expr.args[0].ndim == 2:
        inner = _product_chain(expr.args[0])
        if inner is not None:                    # (A B)^T = B^T A^T
            return [c.T for c in reversed(inner)]
    return None


def _from_factors(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(U, s)`` with :math:`U\\mathrm{diag}(s)U^T = (AB + B^TA^T)/2`."""
    if A.shape == B.T.shape and np.array_equal(A, B.T):
        return A, np.ones(A.shape[1])
    P, M = A + B.T, A - B.T
    k = A.shape[1]
    return np.c_[P, M], np.r_[np.full(k, 0.25), np.full(k, -0.25)]


class _Terms:
    """Accumulates :math:`M` as diagonal, sparse and low-rank parts (each symmetric)."""

    def __init__(self, n: int, dense_limit: int):
        self.n, self.dense_limit = n, dense_limit
        self.diag = np.zeros(n)
        self.sparse: list[sp.spmatrix] = []
        self.U: list[np.ndarray] = []
        self.s: list[np.ndarray] = []

    def add_lowrank(self, U, s, scale: float):
        self.U.append(np.asarray(U, dtype=float))
        self.s.append(scale * np.asarray(s, dtype=float))

    def add_matrix(self, C, scale: float):
        """``scale * sym(C)`` for a constant ``n x n`` matrix ``C`` (sparse or dense)."""
        n = self.n
        if sp.issparse(C):
            C = sp.csr_matrix(C, dtype=float)
            self.sparse.append(scale * 0.5 * (C + C.T))
            return
        C = np.asarray(C, dtype=float)
        if C.shape != (n, n):
            raise _Refusal(f"the coefficient matrix has shape {C.shape}, not ({n}, {n})")
        off = C - np.diag(np.diag(C))
        nnz = np.count_nonzero(off)
        if nnz == 0:
            self.diag += scale * np.diag(C)
            return
        if nnz <= 0.05 * n * n:
            Cs = sp.csr_matrix(C)
            self.sparse.append(scale * 0.5 * (Cs + Cs.T))
            return
        if n > self.dense_limit:
            raise _Refusal(f"its coefficient matrix is dense and n = {n} is above the dense "
                           f"limit {self.dense_limit}; give it as factors (gram_inner(G, U, s) "
                           "or cp.trace(A @ B @ G) with constants A (n x k), B (k x n)) or as "
                           "a scipy sparse matrix")
        Cs = 0.5 * (C + C.T)
        w, V = np.linalg.eigh(Cs)
        keep = np.abs(w) > n * np.finfo(float).eps * max(float(np.max(np.abs(w))), 1e-300)
        self.add_lowrank(V[:, keep], w[keep], scale)

    def add_row(self, R: sp.spmatrix, scale: float):
        """A term read by the affine reader: a 1 x n^2 row on vec(G) (column-major)."""
        n = self.n
        R = sp.coo_matrix(R)
        A = sp.csr_matrix((R.data, (R.col % n, R.col // n)), shape=(n, n))
        self.sparse.append(scale * 0.5 * (A + A.T))

    def matrix(self) -> DiagPlusLowRank:
        n = self.n
        parts = [self.diag, *self.U, *self.s] + [S.data for S in self.sparse]
        if not all(np.all(np.isfinite(p)) for p in parts):
            raise _Refusal("a coefficient is NaN or infinite")
        diag = self.diag.copy()
        sparse = None
        if self.sparse:
            S = sp.csr_matrix(sum(self.sparse[1:], self.sparse[0]))
            diag += S.diagonal()
            S = sp.csr_matrix(S - sp.diags(S.diagonal()))
            S.eliminate_zeros()
            sparse = S if S.nnz else None
        U = np.concatenate(self.U, axis=1) if self.U else np.zeros((n, 0))
        s = np.concatenate(self.s) if self.s else np.zeros(0)
        return DiagPlusLowRank(diag, U, s, sparse)


def _read(expr, gram, n: int, scale: float, out: _Terms) -> None:
    """Add ``scale * expr`` to ``out``."""
    if isinstance(expr, reshape) and expr.args[0].size == 1:
        _read(expr.args[0], gram, n, scale, out)
        return
    if isinstance(expr, AddExpression):
        for a in expr.args:
            _read(a, gram, n, scale, out)
        return
    if isinstance(expr, NegExpression):
        _read(expr.args[0], gram, n, -scale, out)
        return
    if isinstance(expr, (multiply, MulExpression, DivExpression)) and expr.size == 1:
        a, b = expr.args
        if isinstance(expr, DivExpression):
            if b.is_constant() and not a.is_constant():
                _read(a, gram, n, scale / float(np.asarray(_constant(b)).ravel()[0]), out)
                return
        elif a.is_constant() and a.size == 1 and not b.is_constant():
            _read(b, gram, n, scale * float(np.asarray(_constant(a)).ravel()[0]), out)
            return
        elif b.is_constant() and b.size == 1 and not a.is_constant():
            _read(a, gram, n, scale * float(np.asarray(_constant(b)).ravel()[0]), out)
            return
    if isinstance(expr, _GramInner) and getattr(expr, "_factors", None) is not None \
            and expr.args[0].args[0].args[0] is gram:
        U, s = expr._factors
        out.add_lowrank(U, s, scale)
        return
    coefficient = _coefficient(expr, gram)
    if coefficient is not None:
        chain = _product_chain(coefficient)
        if chain is not None and len(chain) >= 2:
            values = [_constant(c) for c in chain]
            dims = [np.shape(v)[1] for v in values[:-1]]
            cut = int(np.argmin(dims))
            if dims[cut] < n:
                left = np.asarray(_dense_product(values[:cut + 1]), dtype=float)
                right = np.asarray(_dense_product(values[cut + 1:]), dtype=float)
                U, s = _from_factors(left, right)
                out.add_lowrank(U, s, scale)   # <C, G> = <sym(C), G>
                return
        out.add_matrix(_constant(coefficient), scale)
        return
    if expr.is_constant():
        value = np.asarray(_constant(expr), dtype=float)
        if np.any(value != 0):
            raise _Refusal("it has a constant part, which does not change the solution: "
                           "leave it out")
        return
    lin = _linear(expr, gram, n * n, n, {})
    if lin.c is not None and np.any(lin.c != 0):
        raise _Refusal("it has a constant part, which does not change the solution: "
                       "leave it out")
    if lin.R is None:
        raise _Refusal("it is the Gram matrix itself, not a scalar")
    out.add_row(lin.R, scale)


def _dense_product(values: list):
    out = values[0]
    for v in values[1:]:
        out = out @ v
    return out.toarray() if sp.issparse(out) else out


def gram_objective_matrix(terms: Sequence[cp.Expression], gram: cp.Expression, n: int, *,
                          dense_limit: int = DENSE_OBJECTIVE_LIMIT) -> DiagPlusLowRank:
    r"""The matrix :math:`M` with :math:`\sum_t \mathrm{term}_t = \langle M, G\rangle`.

    Parameters
    ----------
    terms : sequence of cvxpy Expressions
        Scalar, affine in ``gram`` (the formulation's ``expressions["gram"]``), with no
        constant part; parameters are read at their current values.
    gram : cvxpy Expression
        The Gram matrix expression, matched by identity.
    n : int
    dense_limit : int
        The largest ``n`` for which a dense coefficient matrix is accepted.

    Raises
    ------
    UnsupportedProblemError
        For a term that is not affine in ``gram`` alone, has a constant part, or has a
        dense coefficient above ``dense_limit`` (the message names it and the backends
        that solve it as written).
    """
    out = _Terms(n, dense_limit)
    for k, term in enumerate(terms):
        try:
            if not term.is_affine():
                raise _Refusal("it is not affine in G")
            _read(term, gram, n, 1.0, out)
        except _Refusal as why:
            text = str(term)
            text = text if len(text) <= 80 else text[:77] + "..."
            raise UnsupportedProblemError(
                f"objective term {k} ({text}) cannot be represented by LOWRANK: {why}. "
                "LOWRANK supports objective terms that are linear in f.expressions['gram'] "
                "(diagonal, sparse, low-rank by factors, dense up to n = "
                f"{dense_limit}); solve this formulation with {conic_alternatives()} "
                "instead.") from None
    try:
        return out.matrix()
    except _Refusal as why:
        raise UnsupportedProblemError(f"the objective terms cannot be represented by LOWRANK: "
                                      f"{why}; check the data behind them") from None

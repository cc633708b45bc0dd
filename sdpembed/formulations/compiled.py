r"""Added constraints and objective terms, restated on the internal variable for the conic backends.

A user writes constraints and objective terms on ``expressions["gram"]``, the points'
Gram matrix :math:`G`, which on a face or basis is itself a lift of the internal
variable: :math:`G = V_p X V_p^T` (:math:`V_p` the basis rows of the points), or an
index of :math:`X` itself. Left in the cvxpy problem as written, every indexed entry of
:math:`G` makes cvxpy canonicalise the whole lift (an :math:`n^2\times r^2` operator)
again, once per constraint. Here each added constraint and term is read once into
sparse rows on :math:`\mathrm{vec}(G)` (the affine reader of
:mod:`sdpembed.formulations.constraints`) and restated exactly on the variable:

.. math::

    \langle A_k, V_pXV_p^T\rangle = \langle V_p^TA_kV_p, X\rangle,
    \qquad \text{row } k \text{ of } M = \mathrm{vec}(V_p^TA_kV_p)^T,

and the added constraints become two: the inequality rows and the equality rows, each
one sparse operator applied to :math:`\mathrm{vec}(X)` (``NonNeg`` rows negated). After
a solve, each user constraint receives its part of the stacked dual value, so
``constraint.dual_value`` of the user's object holds its multipliers. :math:`V_p^TA_kV_p` is
formed as :math:`V_p[R]^T (A_kV_p)[R]` over the rows :math:`R` that :math:`A_k`
touches, so a squared distance on a basis whose rows differ sparsely (the Householder
basis of :math:`\mathbf 1^\perp`) keeps its exact zeros.

Left as written (exact, only slower to compile): a constraint or term with a
cvxpy Parameter (it must follow the parameter's value), one that is not affine in
:math:`G` alone, and the elementwise constraints on the whole of :math:`G`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from cvxpy.atoms.affine.add_expr import AddExpression
from cvxpy.atoms.affine.binary_operators import DivExpression, MulExpression, multiply
from cvxpy.atoms.affine.index import index
from cvxpy.atoms.affine.promote import Promote
from cvxpy.atoms.affine.reshape import reshape
from cvxpy.atoms.affine.unary_operators import NegExpression
from cvxpy.constraints import Equality, Inequality, NonNeg, NonPos, Zero
from cvxpy.expressions.constants import Constant

from ..exceptions import UnsupportedProblemError
from .constraints import _linear, _Refusal

__all__ = ["GramLift", "compiled_constraints", "compiled_objective"]


@dataclass(frozen=True, eq=False)
class GramLift:
    """The points' Gram matrix as a function of the internal variable ``X``.

    ``gram`` is the expression users write on; ``n_points`` its side; ``n_full`` the
    side of the lifted matrix (points, and centroids in the explicit DVU); ``basis``
    :math:`V` (``n_full x r``) with :math:`G_{full} = VXV^T`, or ``None`` for
    :math:`G_{full} = X`.
    """

    gram: cp.Expression
    n_points: int
    n_full: int
    basis: np.ndarray | None
    variable: cp.Variable

    @property
    def size(self) -> int:
        return int(self.variable.shape[0])

    def operator(self, R: sp.spmatrix) -> sp.csr_matrix:
        r"""Rows on :math:`\mathrm{vec}(G)` (``p x n_points^2``, column-major) restated on
        :math:`\mathrm{vec}(X)`: row k becomes :math:`\mathrm{vec}(V_p^TA_kV_p)`, summed as
        :math:`\sum_{i} V_{p,i}^T (A_kV_p)_i` over the rows i that :math:`A_k` touches
        (every term of an entry whose factors are exact zeros is an exact zero)."""
        C = sp.coo_matrix(R)
        p = C.shape[0]
        n, N = self.n_points, self.n_full
        if self.basis is None:
            cols = (C.col % n) + N * (C.col // n)
            return sp.csr_matrix((C.data, (C.row, cols)), shape=(p, N * N))
        V = np.asarray(self.basis[:n], dtype=float)
        r = V.shape[1]
        if C.nnz == 0:
            return sp.csr_matrix((p, r * r))
        k, i, j = C.row.astype(np.int64), C.col % n, C.col // n
        key, inv = np.unique(k * n + i, return_inverse=True)     # the (row k, point i) pairs
        AV = np.asarray(sp.csr_matrix((C.data, (inv, j)), shape=(key.size, n)) @ V)
        pair_k, pair_i = key // n, key % n
        rows, cols, vals = [], [], []
        chunk = max(1, _CHUNK // (r * r))
        starts = np.flatnonzero(np.r_[True, pair_k[1:] != pair_k[:-1]])
        bounds = np.r_[starts, key.size]
        g = 0
        while g < starts.size:                    # groups of rows k, at most chunk pairs each
            h = g + 1
            while h < starts.size and bounds[h + 1] - bounds[g] <= chunk:
                h += 1
            lo, hi = bounds[g], bounds[h]
            terms = V[pair_i[lo:hi]][:, :, None] * AV[lo:hi][:, None, :]
            blocks = np.add.reduceat(terms, starts[g:h] - lo, axis=0)   # (groups, r, r)
            gk, a, b = np.nonzero(blocks)
            rows.append(pair_k[starts[g:h]][gk])
            cols.append(a + r * b)
            vals.append(blocks[gk, a, b])
            g = h
        return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(p, r * r))

    def read(self, expr: cp.Expression) -> tuple | None:
        r"""``(k, cols, vals, c)``: triplets of ``R`` with ``vec(expr) = R vec(G) + c``
        (column-major; ``k`` the row, ``cols`` the flat index into :math:`G`), for ``expr``
        affine in :attr:`gram` without parameters; ``None`` when it is left as written."""
        if expr.parameters():
            return None
        n = self.n_points
        if expr.size == 1:
            fast = _entries(expr, self.gram, n)          # affine by construction
            if fast is not None:
                cols, vals, const = fast
                return (np.zeros(len(cols), dtype=np.int64), np.asarray(cols, dtype=np.int64),
                        np.asarray(vals, dtype=float), np.array([const]))
        if not expr.is_affine():
            return None
        try:
            lin = _linear(expr, self.gram, n * n, n, {})
        except _Refusal:
            return None
        if lin.R is None:          # the whole Gram matrix: restating it gains nothing
            return None
        R = sp.coo_matrix(lin.R)
        return (R.row.astype(np.int64), R.col.astype(np.int64), R.data.astype(float),
                lin.offset(R.shape[0]))


#: entries of the dense blocks formed at once by :meth:`GramLift.operator`
_CHUNK = 1 << 22


def _entries(expr, gram, n: int) -> tuple[list, list, float] | None:
    """A scalar sum of scaled entries of ``gram`` and constants, e.g. ``G[i, i] + G[j, j] -
    2 * G[i, j] - u``, as ``(flat indices, coefficients, constant)`` without sparse
    matrices; ``None`` for any other form (the affine reader then reads it)."""
    cols: list = []
    vals: list = []
    const = [0.0]

    def walk(e, scale: float) -> bool:
        if isinstance(e, index) and e.args[0] is gram and e.size == 1:
            i, j = (np.arange(dim)[key] for dim, key in zip(gram.shape, e.key))
            cols.append(int(np.ravel(i)[0]) + n * int(np.ravel(j)[0]))
            vals.append(scale)
            return True
        if isinstance(e, Constant) and e.size == 1:
            const[0] += scale * float(np.ravel(e.value)[0])
            return True
        if isinstance(e, AddExpression):
            return all(walk(a, scale) for a in e.args)
        if isinstance(e, NegExpression):
            return walk(e.args[0], -scale)
        if isinstance(e, (multiply, MulExpression)) and e.size == 1:
            a, b = e.args
            if isinstance(a, Constant) and a.size == 1:
                return walk(b, scale * float(np.ravel(a.value)[0]))
            if isinstance(b, Constant) and b.size == 1:
                return walk(a, scale * float(np.ravel(b.value)[0]))
            return False
        if isinstance(e, DivExpression) and isinstance(e.args[1], Constant) \
                and e.args[1].size == 1:
            return walk(e.args[0], scale / float(np.ravel(e.args[1].value)[0]))
        if isinstance(e, (reshape, Promote)) and e.args[0].size == 1:
            return walk(e.args[0], scale)
        return False

    if not walk(expr, 1.0):
        return None
    return cols, vals, const[0]


def _rows(constraint, lift: GramLift):
    """``(k, cols, vals, c, sign, equality)`` with the constraint read as
    ``sign * (R vec(G) + c) <= 0`` or ``== 0`` (:meth:`GramLift.read`; rows in its
    column-major order), or ``None`` when left as written."""
    if isinstance(constraint, (Inequality, Equality)):
        expr, sign = constraint.expr, 1.0
    elif isinstance(constraint, (NonPos, Zero)):
        expr, sign = constraint.args[0], 1.0
    elif isinstance(constraint, NonNeg):
        expr, sign = constraint.args[0], -1.0
    else:
        return None
    rows = lift.read(expr)
    if rows is None:
        return None
    return (*rows, sign, isinstance(constraint, (Equality, Zero)))


class _DualDispatch:
    """``save_dual_value`` of a stacked constraint: saves its own dual value, then hands each
    user constraint its part (a module-level class, so that the problem pickles)."""

    def __init__(self, stacked, parts: list):
        self.stacked, self.parts = stacked, parts

    def __call__(self, value) -> None:
        type(self.stacked).save_dual_value(self.stacked, value)
        flat = None if value is None else np.asarray(value, dtype=float).ravel(order="F")
        for user, lo, hi in self.parts:
            user.save_dual_value(None if flat is None
                                 else flat[lo:hi].reshape(user.shape, order="F"))


def _dispatch(stacked, parts: list) -> None:
    """Make ``stacked`` hand each part of its dual value to the user's constraint."""
    stacked.save_dual_value = _DualDispatch(stacked, parts)


def compiled_constraints(constraints: Sequence, lift: GramLift) -> list:
    """The added constraints as the cvxpy problem holds them: the readable ones stacked
    on one sparse operator per kind (:math:`\\le`, :math:`=`), whose dual value is handed
    back to each user's constraint after a solve, the others as written (see the module
    docstring)."""
    kept, groups = [], {False: [], True: []}
    for c in constraints:
        rows = _rows(c, lift)
        if rows is None:
            kept.append(c)
        else:
            groups[rows[5]].append((c, rows))
    out = []
    vecX = cp.vec(lift.variable, order="F")
    for equality, items in groups.items():
        if not items:
            continue
        offsets = np.cumsum([0] + [item[1][3].size for item in items])
        k = np.concatenate([rows[0] + off for (_, rows), off in zip(items, offsets)])
        cols = np.concatenate([rows[1] for _, rows in items])
        vals = np.concatenate([rows[4] * rows[2] for _, rows in items])
        n = lift.n_points
        M = lift.operator(sp.coo_matrix((vals, (k, cols)), shape=(int(offsets[-1]), n * n)))
        c = np.concatenate([rows[4] * rows[3] for _, rows in items])
        expr = M @ vecX + c if np.any(c != 0) else M @ vecX
        stacked = (expr == 0) if equality else (expr <= 0)
        parts = [(user, int(offsets[t]), int(offsets[t + 1]))
                 for t, (user, _) in enumerate(items)]
        _dispatch(stacked, parts)
        out.append(stacked)
    return out + kept


def compiled_objective(terms: Sequence[cp.Expression], lift: GramLift) -> cp.Expression:
    r"""The sum of the added objective terms, each linear term as
    :math:`\mathrm{vec}(V_p^TMV_p)^T\mathrm{vec}(X)` with :math:`M` read by
    :func:`~sdpembed.formulations.objective.gram_objective_matrix` (dense products and
    factors are never expanded entry by entry); the others as written."""
    from .objective import gram_objective_matrix

    total = 0
    n, N = lift.n_points, lift.n_full
    for term in terms:
        out = None
        if not term.parameters() and term.is_affine():
            try:
                M = gram_objective_matrix([term], lift.gram, n)
            except UnsupportedProblemError:
                M = None
            if M is not None:
                if lift.basis is None:
                    C = np.zeros((N, N))
                    C[:n, :n] = M.dense()
                else:
                    C = M.congruence(np.asarray(lift.basis[:n], dtype=float))
                out = C.ravel(order="F") @ cp.vec(lift.variable, order="F")
        total = total + (term if out is None else out)
    return total

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
from cvxpy.constraints import Equality, Inequality, NonNeg, NonPos, Zero

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
        :math:`\mathrm{vec}(X)`."""
        R = sp.csr_matrix(R)
        n, N = self.n_points, self.n_full
        if self.basis is None:
            C = R.tocoo()
            cols = (C.col % n) + N * (C.col // n)
            return sp.csr_matrix((C.data, (C.row, cols)), shape=(R.shape[0], N * N))
        V = np.asarray(self.basis[:n], dtype=float)
        r = V.shape[1]
        rows, cols, vals = [], [], []
        for k in range(R.shape[0]):
            lo, hi = R.indptr[k], R.indptr[k + 1]
            if lo == hi:
                continue
            idx, data = R.indices[lo:hi], R.data[lo:hi]
            i, j = idx % n, idx // n
            touched, inv = np.unique(i, return_inverse=True)
            A = sp.csr_matrix((data, (inv, j)), shape=(touched.size, n))
            Mk = V[touched].T @ np.asarray(A @ V)         # V^T A_k V over the touched rows
            a, b = np.nonzero(Mk)
            rows.append(np.full(a.size, k))
            cols.append(a + r * b)
            vals.append(Mk[a, b])
        if not rows:
            return sp.csr_matrix((R.shape[0], r * r))
        return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(R.shape[0], r * r))

    def rows(self, expr: cp.Expression) -> tuple[sp.csr_matrix, np.ndarray] | None:
        r"""``(M, c)`` with ``vec(expr) = M vec(X) + c`` (column-major), for ``expr`` affine
        in :attr:`gram` without parameters; ``None`` when it is left as written."""
        if expr.parameters() or not expr.is_affine():
            return None
        n = self.n_points
        try:
            lin = _linear(expr, self.gram, n * n, n, {})
        except _Refusal:
            return None
        if lin.R is None:          # the whole Gram matrix: restating it gains nothing
            return None
        M = self.operator(lin.R)
        return M, lin.offset(M.shape[0])


def _rows(constraint, lift: GramLift):
    """``(M, c, sign, equality)`` with the constraint read as ``sign * (M vec(X) + c) <= 0``
    or ``== 0`` (rows in its column-major order), or ``None`` when left as written."""
    if isinstance(constraint, (Inequality, Equality)):
        expr, sign = constraint.expr, 1.0
    elif isinstance(constraint, (NonPos, Zero)):
        expr, sign = constraint.args[0], 1.0
    elif isinstance(constraint, NonNeg):
        expr, sign = constraint.args[0], -1.0
    else:
        return None
    rows = lift.rows(expr)
    if rows is None:
        return None
    M, c = rows
    return M, c, sign, isinstance(constraint, (Equality, Zero))


def _dispatch(stacked, parts: list) -> None:
    """Make ``stacked`` hand each part of its dual value to the user's constraint."""
    save = stacked.save_dual_value

    def save_dual_value(value) -> None:
        save(value)
        flat = None if value is None else np.asarray(value, dtype=float).ravel(order="F")
        for user, lo, hi in parts:
            user.save_dual_value(None if flat is None
                                 else flat[lo:hi].reshape(user.shape, order="F"))

    stacked.save_dual_value = save_dual_value


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
            groups[rows[3]].append((c, rows))
    out = []
    vecX = cp.vec(lift.variable, order="F")
    for equality, items in groups.items():
        if not items:
            continue
        M = sp.vstack([sign * M for _, (M, _, sign, _) in items]).tocsr()
        c = np.concatenate([sign * c for _, (_, c, sign, _) in items])
        expr = M @ vecX + c if np.any(c != 0) else M @ vecX
        stacked = (expr == 0) if equality else (expr <= 0)
        parts, lo = [], 0
        for user, (Mk, *_) in items:
            hi = lo + Mk.shape[0]
            parts.append((user, lo, hi))
            lo = hi
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

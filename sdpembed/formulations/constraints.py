r"""Affine constraints on the Gram matrix: read from cvxpy, kept as sparse matrices.

A user adds constraints to a Gram SDP with
:meth:`~sdpembed.formulations.gram.GramFormulation.with_constraints`, writing
them in cvxpy on the formulation's ``expressions["gram"]`` (the :math:`n\times n`
Gram matrix :math:`G` of the points, whatever the internal variable). Every
backend that solves the cvxpy problem honours them as written. A backend that
reads the structured description instead (``"LOWRANK"``) needs them as data:

.. math::

    \langle A_k, G\rangle \le b_k \quad (k \in \mathcal I), \qquad
    \langle A_k, G\rangle = b_k \quad (k \in \mathcal E),

with each :math:`A_k` symmetric and sparse (a trace bound, a squared distance
:math:`G_{ii}+G_{jj}-2G_{ij}` between two points, a class-mean separation, a
fixed entry). :func:`affine_gram_constraints` reads them from the constraints'
expression trees: every node is an affine map of :math:`\mathrm{vec}(G)`
(column-major, as cvxpy flattens) composed of sparse matrices, so a constraint
that touches a few entries costs a few non-zeros, never an :math:`n^2 \times n^2`
operator. Since :math:`G` is symmetric, :math:`\langle A, G\rangle = \langle
(A + A^T)/2, G\rangle` and the symmetric part is stored.

What cannot be represented raises
:class:`~sdpembed.exceptions.UnsupportedProblemError` naming the constraint: a
constraint that is not affine in :math:`G` (a norm, a second-order or PSD cone),
one that involves another variable (the slacks, or the internal reduced
variable ``Y`` instead of ``expressions["gram"]``), an atom the reader does not
know, or a parameter without a value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from cvxpy.atoms.affine.add_expr import AddExpression
from cvxpy.atoms.affine.binary_operators import DivExpression, MulExpression, multiply
from cvxpy.atoms.affine.broadcast_to import broadcast_to
from cvxpy.atoms.affine.concatenate import Concatenate
from cvxpy.atoms.affine.diag import diag_mat, diag_vec
from cvxpy.atoms.affine.hstack import Hstack
from cvxpy.atoms.affine.index import index, special_index
from cvxpy.atoms.affine.promote import Promote
from cvxpy.atoms.affine.reshape import reshape
from cvxpy.atoms.affine.sum import Sum
from cvxpy.atoms.affine.trace import Trace
from cvxpy.atoms.affine.transpose import transpose
from cvxpy.atoms.affine.unary_operators import NegExpression
from cvxpy.atoms.affine.vstack import Vstack
from cvxpy.atoms.affine.wraps import Wrap
from cvxpy.constraints import Equality, Inequality, NonNeg, NonPos, Zero

from ..backends import conic_alternatives
from ..exceptions import InputError, UnsupportedProblemError

if TYPE_CHECKING:
    from ..formulation import Formulation

__all__ = ["AffineGramConstraints", "affine_gram_constraints", "check_added_constraints"]

#: the backends that solve the cvxpy problem as written (named in refusals)


@dataclass(frozen=True, eq=False)
class AffineGramConstraints:
    r"""Constraints :math:`\langle A_k, G\rangle \le b_k` or :math:`= b_k`, :math:`k < p`.

    :math:`A_k` is stored by its symmetric non-zeros: triplets
    ``(row[t], i[t], j[t], value[t])`` with both :math:`(i, j)` and :math:`(j, i)`
    present off the diagonal, so :math:`\langle A_k, G\rangle = \sum_{t:\,row_t = k}
    value_t\, G_{i_t j_t}`.

    Attributes
    ----------
    n : int
        Order of :math:`G`.
    row, i, j : ndarray of int
    value : ndarray of float
    rhs : ndarray (p,)
        :math:`b`.
    equality : ndarray of bool (p,)
        ``True`` for :math:`=`, ``False`` for :math:`\le`.
    labels : tuple of str
        Where each row came from (``"constraint 2, entry 5"``), for messages.
    """

    n: int
    row: np.ndarray
    i: np.ndarray
    j: np.ndarray
    value: np.ndarray
    rhs: np.ndarray
    equality: np.ndarray
    labels: tuple[str, ...] = ()

    @property
    def p(self) -> int:
        """Number of scalar constraints."""
        return int(self.rhs.shape[0])

    def values_of_factor(self, V: np.ndarray) -> np.ndarray:
        r""":math:`\langle A_k, VV^T\rangle` for every k, in O(nnz r)."""
        prods = np.einsum("ij,ij->i", V[self.i], V[self.j])
        return np.bincount(self.row, weights=self.value * prods, minlength=self.p)

    def values_of(self, G: np.ndarray) -> np.ndarray:
        r""":math:`\langle A_k, G\rangle` for a dense ``G``."""
        return np.bincount(self.row, weights=self.value * G[self.i, self.j], minlength=self.p)

    def residual(self, values: np.ndarray) -> np.ndarray:
        r"""Violation of each row: :math:`|v_k - b_k|` (equality), :math:`\max(0, v_k - b_k)`."""
        r = values - self.rhs
        return np.where(self.equality, np.abs(r), np.maximum(r, 0.0))

    @cached_property
    def _pattern(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""``(slot, indices, indptr)``: the CSR pattern of :math:`\sum_k z_kA_k`, shared by
        every ``z``, and the slot of each triplet in it (rows sharing an entry add up)."""
        lin = self.i.astype(np.int64) * self.n + self.j
        entries, slot = np.unique(lin, return_inverse=True)
        indptr = np.r_[0, np.cumsum(np.bincount(entries // self.n, minlength=self.n))]
        return slot.ravel(), entries % self.n, indptr

    @cached_property
    def row_points(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""``(slot, rows, points)``: the distinct pairs (row :math:`k`, point :math:`a`) of
        the triplets (the pattern of :math:`(A_kV)_a`, a row's triplets at one point summed)
        and the slot of each triplet among them; built once, as :attr:`_pattern`."""
        key, slot = np.unique(self.row.astype(np.int64) * self.n + self.i, return_inverse=True)
        return slot.ravel(), key // self.n, key % self.n

    def operator(self, z: np.ndarray) -> sp.csr_matrix:
        r""":math:`\sum_k z_k A_k` as a sparse symmetric :math:`n\times n` matrix.

        The pattern is built once (:attr:`_pattern`); each call only sums the triplets'
        values into it, since solvers ask for it at every function evaluation."""
        slot, indices, indptr = self._pattern
        data = np.bincount(slot, weights=self.value * z[self.row], minlength=indices.size)
        return sp.csr_matrix((data, indices, indptr), shape=(self.n, self.n))

    def congruence(self, Q: np.ndarray) -> np.ndarray:
        r""":math:`Q^TA_kQ` for every k, shape ``(p, r, r)`` (constraints on :math:`G = QYQ^T`)."""
        out = np.zeros((self.p, Q.shape[1], Q.shape[1]))
        np.add.at(out, self.row, self.value[:, None, None]
                  * (Q[self.i][:, :, None] * Q[self.j][:, None, :]))
        return out

    def scale(self) -> np.ndarray:
        r"""A size of each row, :math:`\max(|b_k|, \|A_k\|_1)`, for relative violations."""
        norm1 = np.bincount(self.row, weights=np.abs(self.value), minlength=self.p)
        return np.maximum(np.abs(self.rhs), norm1)


# --------------------------------------------------------------------------- reading
class _Refusal(Exception):
    """Why one constraint cannot be represented (becomes UnsupportedProblemError)."""


@dataclass
class _Lin:
    """An affine map :math:`x \\mapsto Rx + c` of :math:`x = \\mathrm{vec}(G)` (column-major);
    ``R is None`` is the identity and ``c is None`` zero (the Gram matrix itself), kept
    implicit so that selecting a few entries never forms an :math:`n^2` operator."""

    R: sp.csr_matrix | None
    c: np.ndarray | None

    def offset(self, size: int) -> np.ndarray:
        return np.zeros(size) if self.c is None else self.c


def _flat(value, shape) -> np.ndarray:
    return np.asarray(np.broadcast_to(np.asarray(value, dtype=float), shape)).ravel(order="F")


def _select(lin: _Lin, idx: np.ndarray, size_in: int) -> _Lin:
    """Rows ``idx`` (flat indices into the argument; ``-1``: a structural zero)."""
    idx = np.asarray(idx, dtype=np.int64).ravel()
    keep = idx >= 0
    S = sp.csr_matrix((np.ones(int(keep.sum())), (np.flatnonzero(keep), idx[keep])),
                      shape=(idx.size, size_in))
    return _apply(S, lin)


def _apply(S, lin: _Lin) -> _Lin:
    """``S @ lin`` for a sparse ``S``."""
    S = sp.csr_matrix(S)
    R = S if lin.R is None else S @ lin.R
    return _Lin(sp.csr_matrix(R), np.zeros(S.shape[0]) if lin.c is None else S @ lin.c)


def _add(a: _Lin, b: _Lin, N: int) -> _Lin:
    if a.R is None or b.R is None:
        eye = sp.identity(N, format="csr")
        Ra, Rb = (eye if a.R is None else a.R), (eye if b.R is None else b.R)
    else:
        Ra, Rb = a.R, b.R
    return _Lin(sp.csr_matrix(Ra + Rb), a.offset(Ra.shape[0]) + b.offset(Rb.shape[0]))


def _index_of(shape: tuple, key) -> np.ndarray:
    """Flat (column-major) indices selected by a basic ``index`` key, without forming
    the argument's full index array."""
    if len(shape) == 0:
        return np.zeros(1, dtype=np.int64)
    axes = [np.arange(dim)[k] for dim, k in zip(shape, key)]
    axes = [np.atleast_1d(a) for a in axes]
    if len(shape) == 1:
        return axes[0]
    rows, cols = axes[0], axes[1]
    return (rows[:, None] + shape[0] * cols[None, :]).ravel(order="F")


def _rearranged(atom, shapes) -> np.ndarray:
    """For an atom that only moves entries of its arguments: the (global, 0-based) argument
    entry behind each output entry (column-major), ``-1`` for a structural zero."""
    ids, offset = [], 1
    for shape in shapes:
        size = int(np.prod(shape, dtype=np.int64))
        ids.append(np.arange(offset, offset + size, dtype=float).reshape(shape, order="F"))
        offset += size
    out = np.asarray(atom.numeric(ids), dtype=float)
    return (np.broadcast_to(out, atom.shape).ravel(order="F")).astype(np.int64) - 1


def _linear(expr, gram, N: int, n: int, memo: dict) -> _Lin:
    """The affine map of ``expr`` in vec(``gram``)."""
    key = id(expr)
    if key in memo:
        return memo[key]
    size = int(np.prod(expr.shape, dtype=np.int64))
    if expr is gram:
        out = _Lin(None, None)
    elif expr.is_constant():
        value = expr.value
        if value is None:
            raise _Refusal(f"{expr.name()} has no value (a parameter without a value)")
        out = _Lin(sp.csr_matrix((size, N)), _flat(value, expr.shape))
    elif isinstance(expr, cp.Variable):
        raise _Refusal(f"it involves the variable {expr.name()!r}, not only "
                       "expressions['gram']")
    else:
        out = _atom(expr, gram, N, n, memo, size)
    memo[key] = out
    return out


def _atom(expr, gram, N: int, n: int, memo: dict, size: int) -> _Lin:
    args = expr.args

    def lin(k):
        return _linear(args[k], gram, N, n, memo)

    def arg_size(k):
        return int(np.prod(args[k].shape, dtype=np.int64))

    if isinstance(expr, Wrap):        # symmetric_wrap, psd_wrap, ...: the identity
        return lin(0)
    if isinstance(expr, AddExpression):
        out = lin(0)
        for k in range(1, len(args)):
            out = _add(out, lin(k), N)
        return out
    if isinstance(expr, NegExpression):
        return _apply(-sp.identity(arg_size(0), format="csr"), lin(0))
    if isinstance(expr, (multiply, DivExpression)):
        const = [k for k, a in enumerate(args) if a.is_constant()]
        if not const:
            raise _Refusal(f"{type(expr).__name__} of two non-constant terms is not affine")
        k = const[0]
        other = 1 - k
        d = _flat(args[k].value, expr.shape)
        if isinstance(expr, DivExpression):
            if k != 1:
                raise _Refusal("division by an expression of G is not affine")
            d = 1.0 / d
        a = lin(other)
        if args[other].shape != expr.shape:   # a scalar broadcast by the product
            a = _select(a, np.zeros(size, dtype=np.int64), arg_size(other))
        return _apply(sp.diags(d), a)
    if isinstance(expr, MulExpression):
        A, B = args
        if A.is_constant() and not B.is_constant():
            C = np.atleast_2d(np.asarray(A.value, dtype=float))
            if A.ndim == 1:
                C = C.reshape(1, -1)
            q = 1 if B.ndim == 1 else B.shape[1]
            return _apply(sp.kron(sp.identity(q), sp.csr_matrix(C)), lin(1))
        if B.is_constant() and not A.is_constant():
            C = np.asarray(B.value, dtype=float)
            C = C.reshape(-1, 1) if B.ndim == 1 else C
            p_ = 1 if A.ndim == 1 else A.shape[0]
            return _apply(sp.kron(sp.csr_matrix(C.T), sp.identity(p_)), lin(0))
        raise _Refusal("a product of two non-constant terms is not affine")
    if isinstance(expr, Trace):
        a, m = lin(0), args[0].shape[0]
        return _select_sum(a, [np.arange(m) * (m + 1)], arg_size(0))
    if isinstance(expr, Sum):
        shape = args[0].shape
        axis = expr.axis
        ids = np.arange(arg_size(0)).reshape(shape, order="F")
        groups = [ids.ravel()] if axis is None else _sum_groups(ids, axis)
        return _select_sum(lin(0), groups, arg_size(0))
    if isinstance(expr, special_index):
        sel = np.asarray(expr._select_mat, dtype=np.int64).ravel(order="F")
        return _select(lin(0), sel, arg_size(0))
    if isinstance(expr, index):
        return _select(lin(0), _index_of(args[0].shape, expr.key), arg_size(0))
    if isinstance(expr, diag_mat):
        m = args[0].shape[0]
        k = expr.k if hasattr(expr, "k") else 0
        rows = np.arange(max(0, -k), m - max(0, k))
        return _select(lin(0), rows + m * (rows + k), arg_size(0))
    if isinstance(expr, diag_vec):
        m = args[0].shape[0]
        k = getattr(expr, "k", 0)
        side = m + abs(k)
        idx = -np.ones(side * side, dtype=np.int64)
        rows = np.arange(m) + max(0, -k)
        idx[rows + side * (rows + k)] = np.arange(m)
        return _select(lin(0), idx, arg_size(0))
    if isinstance(expr, transpose) and args[0].ndim == 2 and expr.axes is None:
        p_, q = args[0].shape
        a_, b_ = np.meshgrid(np.arange(q), np.arange(p_), indexing="ij")
        # entry (a, b) of the q x p transpose is entry (b, a) of the argument
        return _select(lin(0), (b_ + p_ * a_).ravel(order="F"), arg_size(0))
    if isinstance(expr, (Promote, broadcast_to, reshape, transpose, Hstack, Vstack, Concatenate)):
        sel = _rearranged(expr, [a.shape for a in args])
        lins = [lin(k) for k in range(len(args))]
        total = sum(arg_size(k) for k in range(len(args)))
        stacked = lins[0] if len(lins) == 1 else _stack(lins, N)
        return _select(stacked, sel, total)
    raise _Refusal(f"the atom {type(expr).__name__} is not read by LOWRANK (affine atoms "
                   "read: +, -, *, /, @ by constants, indexing, sum, trace, diag, reshape, "
                   "transpose, stacking)")


def _sum_groups(ids: np.ndarray, axis: int) -> list[np.ndarray]:
    """Index groups of ``sum(..., axis)`` in the output's column-major order."""
    moved = np.moveaxis(ids, axis, 0)
    rest = moved.reshape(moved.shape[0], -1, order="F")
    return [rest[:, t] for t in range(rest.shape[1])]


def _select_sum(lin: _Lin, groups: list[np.ndarray], size_in: int) -> _Lin:
    rows = np.concatenate([np.full(g.size, t) for t, g in enumerate(groups)])
    cols = np.concatenate(groups)
    S = sp.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(len(groups), size_in))
    return _apply(S, lin)


def _stack(lins: list[_Lin], N: int) -> _Lin:
    Rs = [sp.identity(N, format="csr") if a.R is None else a.R for a in lins]
    return _Lin(sp.csr_matrix(sp.vstack(Rs)),
                np.concatenate([a.offset(R.shape[0]) for a, R in zip(lins, Rs)]))


def _sense(constraint) -> tuple:
    """``(expression e, sign, equality)`` with the constraint read as ``sign * e <= 0`` or
    ``e == 0``."""
    if isinstance(constraint, Inequality):
        return constraint.expr, 1.0, False
    if isinstance(constraint, NonPos):
        return constraint.args[0], 1.0, False
    if isinstance(constraint, NonNeg):
        return constraint.args[0], -1.0, False
    if isinstance(constraint, (Equality, Zero)):
        return constraint.expr if isinstance(constraint, Equality) else constraint.args[0], \
            1.0, True
    raise _Refusal(f"a {type(constraint).__name__} constraint is not an affine (in)equality")


def affine_gram_constraints(constraints: Sequence[cp.Constraint], gram: cp.Expression,
                            n: int, *, skip_unreadable: bool = False) -> AffineGramConstraints:
    r"""The constraints as :class:`AffineGramConstraints` on the :math:`n\times n` matrix ``gram``.

    Parameters
    ----------
    constraints : sequence of cvxpy constraints
        Written on ``gram`` (the formulation's ``expressions["gram"]``). Their
        parameters are read at their current values.
    gram : cvxpy Expression
        The Gram matrix expression, matched by identity in the expression trees.
    n : int

    skip_unreadable : bool, optional
        Leave out the constraints that cannot be represented instead of refusing them
        (to check the others; the conic backends solve them as written).

    Raises
    ------
    UnsupportedProblemError
        For a constraint that is not an affine (in)equality of ``gram`` alone
        (the message names it and the backends that solve it as written).
    InputError
        For rows that no backend should be handed (:func:`_check_rows`): a non-finite
        coefficient or bound; a row whose symmetric part is zero (``G[0, 1] - G[1, 0]``:
        :math:`G` is symmetric, so the row reads :math:`0 \le b`); equalities fixing the
        same combination of :math:`G` to different values.
    """
    N = n * n
    blocks, rhs, eq, labels = [], [], [], []
    for k, c in enumerate(constraints):
        try:
            expr, sign, equality = _sense(c)
            if not expr.is_affine():
                raise _Refusal("it is not affine in G")
            lin = _linear(expr, gram, N, n, {})
        except _Refusal as why:
            if skip_unreadable:
                continue
            raise UnsupportedProblemError(
                f"constraint {k} ({_short(c)}) cannot be represented by LOWRANK: {why}. "
                "LOWRANK supports equalities and inequalities that are affine in "
                "f.expressions['gram']; solve this formulation with "
                f"{conic_alternatives()} instead.") from None
        R = sp.identity(N, format="csr") if lin.R is None else lin.R
        R = sp.csr_matrix(sign * R)
        const = sign * lin.offset(R.shape[0])
        if not (np.all(np.isfinite(R.data)) and np.all(np.isfinite(const))):
            raise InputError(
                f"constraint {k} ({_short(c)}) has a coefficient or bound that is NaN or "
                "infinite; every number in an added constraint must be finite (drop a bound "
                "that should be infinite)")
        empty = np.diff(R.indptr) == 0
        if np.any(empty):
            r = int(np.flatnonzero(empty)[0])
            raise UnsupportedProblemError(
                f"constraint {k} ({_short(c)}), entry {r}, does not depend on the Gram "
                "matrix (a constant row); remove it or write it on f.expressions['gram']")
        blocks.append(R)
        rhs.append(-const)
        eq.append(np.full(R.shape[0], equality))
        labels += [f"constraint {k}, entry {r}" if R.shape[0] > 1 else f"constraint {k}"
                   for r in range(R.shape[0])]
    if not blocks:
        return AffineGramConstraints(n, *(np.zeros(0, dtype=np.int64),) * 3, np.zeros(0),
                                     np.zeros(0), np.zeros(0, dtype=bool), ())
    R = sp.vstack(blocks).tocoo()
    cols = R.col.astype(np.int64)
    i, j = cols % n, cols // n
    # symmetric part: (A + A^T)/2, duplicates summed
    S = sp.coo_matrix((np.r_[R.data, R.data] / 2.0,
                       (np.r_[R.row, R.row], np.r_[i + n * j, j + n * i])),
                      shape=R.shape).tocsr()
    S.sum_duplicates()
    # entries that cancel up to rounding (A_ij - A_ji) are zero, not noise
    size = np.asarray(abs(R).max(axis=1).todense()).ravel()
    S.data[np.abs(S.data) <= 1e-14 * size[np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))]] = 0
    S.eliminate_zeros()
    rhs_all = np.concatenate(rhs).astype(float)
    eq_all = np.concatenate(eq)
    _check_rows(S, rhs_all, eq_all, labels)
    S = S.tocoo()
    cols = S.col.astype(np.int64)
    return AffineGramConstraints(
        n=n, row=S.row.astype(np.int64), i=cols % n, j=cols // n, value=S.data.astype(float),
        rhs=rhs_all, equality=eq_all, labels=tuple(labels))


def _check_rows(S: sp.csr_matrix, rhs: np.ndarray, equality: np.ndarray,
                labels: list[str]) -> None:
    """Refuse, with :class:`InputError`, zero rows (a symmetric part of zero: a solver handed
    one reads ``0 <= b``) and equalities that fix the same combination of :math:`G` (up to
    a factor) to different values (infeasible). Rows repeating another exactly are kept:
    they do not change the feasible set, and a matrix constraint on a symmetric block
    (``G[:2, :2] == M``) states each off-diagonal row twice."""
    zero = np.flatnonzero(np.diff(S.indptr) == 0)
    if zero.size:
        k = int(zero[0])
        raise InputError(
            f"{labels[k]}: its left-hand side is zero on symmetric matrices (an antisymmetric "
            "combination such as G[i, j] - G[j, i]; G is symmetric), so the row reads "
            f"0 {'==' if equality[k] else '<='} {rhs[k]:g} and constrains nothing; remove it")
    seen: dict[tuple, int] = {}
    for k in range(S.shape[0]):
        lo, hi = S.indptr[k], S.indptr[k + 1]
        vals = S.data[lo:hi]
        scale = float(np.max(np.abs(vals)))
        if equality[k] and vals[0] < 0:
            scale = -scale       # an equality is the same row times -1
        key = (bool(equality[k]), S.indices[lo:hi].tobytes(),
               np.round(vals / scale, 12).tobytes())
        first = seen.setdefault(key, k)
        if first == k:
            continue
        b0, b1 = rhs[first] / _signed(S, first, equality), rhs[k] / scale
        if equality[k] and not np.isclose(b0, b1, rtol=1e-12, atol=1e-300):
            raise InputError(
                f"{labels[k]} and {labels[first]} fix the same combination of G to different "
                f"values ({b1:g} and {b0:g}, after scaling): the problem is infeasible; "
                "remove one")


def _signed(S: sp.csr_matrix, k: int, equality: np.ndarray) -> float:
    vals = S.data[S.indptr[k]:S.indptr[k + 1]]
    scale = float(np.max(np.abs(vals)))
    return -scale if equality[k] and vals[0] < 0 else scale


def check_added_constraints(formulation: Formulation) -> None:
    """Refuse, before any backend runs, the added constraints of a Gram formulation
    (:class:`~sdpembed.formulations.gram.GramFormulation`) that no
    backend should be handed: constraints on variables of another formulation (a conic
    backend would solve them as an unrelated problem, silently), non-finite numbers, and
    (for those affine in :math:`G`) zero rows and contradictory equalities
    (:func:`affine_gram_constraints`).

    Raises
    ------
    InputError
    """
    constraints = formulation.user_constraints
    own = {v.id for v in formulation.variables.values()}
    for k, c in enumerate(constraints):
        foreign = [v for v in c.variables() if v.id not in own]
        if foreign:
            raise InputError(
                f"constraint {k} ({_short(c)}) is written on the variable "
                f"{foreign[0].name()!r} of another formulation (expressions['gram'] of another "
                "f?); write it on this formulation's f.expressions['gram']")
        for const in c.constants():
            value = const.value
            if value is not None and not np.all(np.isfinite(
                    value.data if sp.issparse(value) else np.asarray(value, dtype=float))):
                raise InputError(
                    f"constraint {k} ({_short(c)}) holds a NaN or infinite number; every "
                    "number in an added constraint must be finite")
    if any(p.value is None for c in constraints for p in c.parameters()):
        return      # read at solve time, when every parameter has its value
    affine_gram_constraints(constraints, formulation.expressions["gram"],
                            formulation.n_points, skip_unreadable=True)


def _short(constraint) -> str:
    text = str(constraint)
    return text if len(text) <= 80 else text[:77] + "..."

r"""The dual slack matrix :math:`S(y,\nu)` without a dense :math:`n\times n` matrix.

A sparse factorisation of :math:`S` at a shift gives two things the certificate needs:
a *verified* lower bound on :math:`\lambda_{\min}(S)` on :math:`\mathbf 1^\perp`
(:func:`sparse_verify`), and the bottom eigenpairs by shift-invert Lanczos
(:func:`sparse_bottom`). Memory and time follow the fill of the factor, not
:math:`n^2`.

Structure
---------
On the full space (no reduced basis) the dual slack matrix of a Gram SDP is

.. math::

    S(y,\nu) = A - U\,\mathrm{diag}(|s|)\,U^T,\qquad
    A = \mathrm{diag}(d) + E^T\mathrm{diag}(y)E + \textstyle\sum_k z_kA_k,

with :math:`d`, :math:`U`, :math:`s` the diagonal and low-rank parts of
:math:`\tilde C + \nu_0 H` (the variance functionals of DVU have :math:`s < 0`),
:math:`E` the edge incidence matrix and :math:`A_k` the sparse rows added with
``with_constraints``. A positive low-rank part (none in DVU or MVU) is left out of the
factorisation: :math:`S` is then bounded below by the matrix factorised, so the
verified bound stays valid (only looser).

Coordinates of :math:`\mathbf 1^\perp`
--------------------------------------
``"full"``: :math:`\mathbb R^n` itself. :math:`\lambda_{\min}` over
:math:`\mathbb R^n` is at most the one over :math:`\mathbf 1^\perp`, so a proof of
:math:`S - \mu I \succ 0` on :math:`\mathbb R^n` proves the claim; it loses nothing when
:math:`\mathbf 1` is (nearly) an eigenvector of :math:`S` with eigenvalue above
:math:`\mu`, as for DVU (translation invariance: :math:`C\mathbf 1 = 0`, so
:math:`S\mathbf 1 = \tau\mathbf 1`). ``"tree"``: :math:`x = Tz` with :math:`T` the
:math:`n\times(n-1)` incidence matrix of a breadth-first spanning tree of the graph,
a sparse basis of :math:`\mathbf 1^\perp`, so that :math:`T^T(S-\mu I)T \succ 0` if and
only if :math:`S - \mu I \succ 0` on :math:`\mathbf 1^\perp` (MVU, whose
:math:`C = -I` is negative on :math:`\mathbf 1`).

Bordered matrix
---------------
With :math:`X = T^T(A-\mu I)T` (:math:`T = I` in ``"full"``),

.. math::

    N(\mu) = \begin{pmatrix} X & T^TU\\ U^TT & \mathrm{diag}(1/|s|)\end{pmatrix}
    \succ 0 \iff T^T(S - \mu I)T \succ 0,

since the diagonal block is positive definite and its Schur complement is
:math:`X - T^TU\mathrm{diag}(|s|)U^TT`. :math:`N` is sparse but for :math:`p` dense
border columns, and a fill-reducing symmetric ordering puts them last.

Verification, rounding included
-------------------------------
:math:`\hat M \approx N(\mu) - \delta I` is formed in floating point and factorised
symmetrically, without pivoting, after a fill-reducing symmetric permutation :math:`P`
(:data:`FACTORISATION`): by CHOLMOD's supernodal Cholesky (through the optional cvxopt),
:math:`P\hat MP^T = \hat L\hat L^T + \Delta`, which stops at a non-positive pivot; by
QDLDL's :math:`\hat L\hat D\hat L^T` with AMD (a dependency of cvxpy); or by SuperLU's LU
in symmetric mode (diagonal pivots), :math:`\hat L\hat U = P\hat MP^T + \Delta`. In each,
:math:`|\Delta| \le \gamma_c|\hat L||\hat D||\hat L^T|` (resp. :math:`\gamma_c|\hat L||\hat U|`;
Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., Thms 9.3 and 10.3, with
:math:`c` a few more than the largest number of non-zero terms of an inner product). For
LU write :math:`\hat D = \mathrm{diag}(\hat U)` and :math:`F = \hat U - \hat D\hat L^T` (zero
in exact arithmetic for a symmetric matrix; zero by construction for the symmetric
factorisations). Then

.. math::

    P(N - \delta I)P^T = \hat L\hat D\hat L^T + R,\qquad
    \|R\|_2 \le \|\hat M - (N-\delta I)\|_2 + \gamma_c\|\,|\hat L||\hat D||\hat L^T|\,\|_2
    + \|\,|\hat L||F|\,\|_2,

and if every pivot :math:`\hat d_k` is positive, :math:`\hat L\hat D\hat L^T \succeq 0`
exactly, so :math:`N \succeq (\delta - \|R\|_2) I`: the claim
:math:`\lambda_{\min}(S) > \mu` on :math:`\mathbf 1^\perp` is proved when the bound on
:math:`\|R\|_2` is below :math:`\delta`. One factorisation, at the estimate less a margin,
usually suffices (:func:`default_delta` sets :math:`\delta` above the bound it will meet):
no bisection. The bounds are a posteriori and rigorous:
the forming error entrywise by :math:`\gamma_t` times the sum of the absolute terms
(Gershgorin on that non-negative matrix), :math:`\|\,|\hat L||\hat D||\hat L^T|\,\|_2` by
the Collatz–Wielandt bound :math:`\max_i (Xv)_i/v_i` for a positive :math:`v` (a few
power steps), the other products by :math:`\sqrt{\|\cdot\|_1\|\cdot\|_\infty}`, each sum
of non-negative terms inflated by 1.001 (far above its own rounding). Nothing about
the factorisation's stability is assumed: an unstable one gives large bounds and fails.

Fill: the graphs' random long edges make them expanders, with no small separators, so
every ordering leaves a factor far denser than the graph (docs/tuning.md, "LOWRANK at
scale"); the supernodal Cholesky does those dense flops with BLAS-3.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import breadth_first_order

from .._arpack import eigsh
from ..exceptions import SolverError
from ..formulations.gram import DiagPlusLowRank
from .krylov_block import top_pairs
from .space import FactorSpace

__all__ = ["SlackParts", "SparseCheck", "sparse_verify", "sparse_bottom", "factor_at_shift",
           "full_coordinates", "default_delta", "FACTORISATION", "EigenStop",
           "CertificateLate", "EigensolveFailed", "FactorTimes"]

_U = 2.0 ** -53
#: inflation of every computed sum of non-negative terms in the error bounds (their own
#: relative rounding is below 1e-9 for any size the solver meets)
_UP = 1.001
#: power steps of the Collatz–Wielandt bound
_POWER_STEPS = 8


def _gamma(k: float) -> float:
    return k * _U / (1.0 - k * _U)


@dataclass
class SlackParts:
    r""":math:`S(y,\nu) = A - U\mathrm{diag}(|s|)U^T` on the full space: the sparse part
    ``A`` (CSC), the negative low-rank part ``U``, ``s_abs``, and what the rounding bounds
    need (``A_abs``: the same sums with absolute values of every term; ``terms``: the most
    terms in one entry; ``dropped``: a positive low-rank part was left out)."""

    A: sp.csc_matrix
    A_abs: sp.csc_matrix
    U: np.ndarray
    s_abs: np.ndarray
    terms: int
    dropped: bool

    @property
    def lowrank_norm(self) -> float:
        """:math:`\\sum_k |s_k|\\,\\|u_k\\|^2 \\ge \\|U\\mathrm{diag}(|s|)U^T\\|_2`."""
        return float(np.sum(self.s_abs * (self.U * self.U).sum(axis=0)))

    @property
    def norm_bound(self) -> float:
        r""":math:`\max_i \sum_j |A_{ij}|` + :attr:`lowrank_norm` :math:`\ge \|S\|_2`."""
        return float(np.asarray(self.A_abs.sum(axis=1)).max(initial=0.0)) + self.lowrank_norm

    @classmethod
    def of(cls, space: FactorSpace, y: np.ndarray, nu: float | np.ndarray | None) -> SlackParts:
        nu = space.duals(nu)
        C, H = space.C, space.H
        nu_h = float(nu[0]) if H is not None else 0.0
        parts = [C] + ([H.scaled(nu_h)] if H is not None and nu_h else [])
        for M in parts:
            if not isinstance(M, DiagPlusLowRank):
                raise TypeError(f"sparse slack needs DiagPlusLowRank terms, got {type(M)}")
        d = sum(M.diag for M in parts)
        d_abs = sum(np.abs(M.diag) for M in parts)
        U = np.concatenate([M.U for M in parts], axis=1)
        s = np.concatenate([M.s for M in parts])
        neg = s < 0
        dropped = bool(np.any(s > 0))
        B = space.B
        Ly = (B.T @ sp.diags(y) @ B).tocsc()
        Ly_abs = (abs(B).T @ sp.diags(np.abs(y)) @ abs(B)).tocsc()
        A = Ly + sp.diags(d)
        A_abs = Ly_abs + sp.diags(d_abs)
        deg = np.bincount(space.gp.edges.ravel(), minlength=space.dim)
        terms = int(deg.max(initial=0)) + 6
        if C.sparse is not None:
            A = A + C.sparse.tocsc()
            A_abs = A_abs + abs(C.sparse).tocsc()
            terms += 1
        if space.K is not None:
            z = space.user_part(nu)
            K = space.K
            A = A + K.operator(z).tocsc()
            A_abs = A_abs + sp.csr_matrix((np.abs(K.value * z[K.row]), (K.i, K.j)),
                                          shape=A.shape).tocsc()
            per_entry = np.unique(K.i * space.dim + K.j, return_counts=True)[1]
            terms += int(per_entry.max(initial=0))
        return cls(A.tocsc(), A_abs.tocsc(), U[:, neg], -s[neg], terms, dropped)


def _tree_basis(space: FactorSpace) -> sp.csc_matrix:
    """Incidence matrix (n x (n-1)) of a breadth-first spanning tree rooted at a node of
    largest degree: a sparse basis of 1-perp with short paths (a well-conditioned T^T T)."""
    n = space.dim
    i, j = space.gp.edges.T
    adj = sp.csr_matrix((np.ones(i.size), (i, j)), shape=(n, n))
    adj = adj + adj.T
    root = int(np.argmax(np.diff(adj.indptr)))
    order, pred = breadth_first_order(adj, root, directed=False, return_predecessors=True)
    if order.size != n:
        raise ValueError("the graph is not connected")
    child = order[1:]
    parent = pred[child]
    cols = np.arange(n - 1)
    return sp.csc_matrix((np.r_[np.ones(n - 1), -np.ones(n - 1)],
                          (np.r_[child, parent], np.r_[cols, cols])), shape=(n, n - 1))


@dataclass
class SparseCheck:
    """Outcome of :func:`sparse_verify` (one factorisation).

    ``verified``: :math:`\\lambda_{\\min}(S) > \\mu` on :math:`\\mathbf 1^\\perp` is proved;
    ``delta`` the shift of the factorised matrix and ``bound`` the bound on the rounding
    residual (verified needs ``bound < delta``); ``mode`` ``"full"`` or ``"tree"``;
    ``factor_nnz`` the non-zeros of the factor; ``reason`` why not verified.
    """

    verified: bool
    mu: float
    delta: float
    bound: float
    mode: str
    seconds: float
    factor_nnz: int = 0
    reason: str = ""


class _Bordered:
    """The bordered matrix :math:`\\hat M = N(\\mu) - \\delta I` and its LU factorisation."""

    def __init__(self, parts: SlackParts, mu: float, delta: float, T: sp.csc_matrix | None,
                 method: str | None = None):
        A, A_abs, U = parts.A, parts.A_abs, parts.U
        n = A.shape[0]
        p = U.shape[1]
        shift = mu + delta
        if T is None:
            X = A - shift * sp.identity(n, format="csc")
            X_abs = A_abs + abs(shift) * sp.identity(n, format="csc")
            W, W_abs, terms = U, np.abs(U), parts.terms + 1
        else:
            T_abs = abs(T)
            # T^T (A - mu I) T - delta I: every product of +-1 entries is exact
            X = (T.T @ (A - mu * sp.identity(n, format="csc")) @ T
                 - delta * sp.identity(T.shape[1], format="csc")).tocsc()
            X_abs = (T_abs.T @ (A_abs + abs(mu) * sp.identity(n, format="csc")) @ T_abs
                     + delta * sp.identity(T.shape[1], format="csc")).tocsc()
            W = np.asarray(T.T @ U)
            W_abs = np.asarray(T_abs.T @ np.abs(U))
            col = np.asarray(T_abs.sum(axis=0)).ravel().max(initial=1.0)
            terms = int(col * col * (parts.terms + 1)) + 2
        q = X.shape[0]
        # border columns scaled by powers of two beta_k (exact) so that the corner
        # beta^2/|s| matches the mean diagonal of X: the Schur complement is unchanged,
        # and the factor's entries, hence its rounding bound, stay at the scale of S
        xbar = max(float(np.mean(np.abs(X.diagonal()))), 1e-300)
        beta = 2.0 ** np.round(0.5 * np.log2(xbar * parts.s_abs))
        W, W_abs = W * beta, W_abs * beta
        inv = beta * beta / parts.s_abs
        corner = inv - delta
        self.M = sp.bmat([[X, sp.csc_matrix(W)], [sp.csc_matrix(W.T), sp.diags(corner)]],
                         format="csc")
        # forming error: gamma_t times the absolute sums (Gershgorin of that matrix); the
        # corner beta^2/|s| - delta carries two roundings; and ``s`` itself may carry one
        # (nu_0 times H's low-rank weights)
        row_abs = np.r_[np.asarray(X_abs.sum(axis=1)).ravel() + W_abs.sum(axis=1),
                        W_abs.sum(axis=0) + (inv + delta)]
        self.form_error = _UP * _gamma(terms) * float(row_abs.max(initial=0.0)) \
            + _UP * 2.0 * _U * float(np.max(inv + delta, initial=0.0)) \
            + _UP * 2.0 * _U * parts.lowrank_norm
        self.p = p
        self.size = q + p
        self.lu = None
        self.ldl = None
        self.reason = ""
        self.method = _method(method)
        self.chol = None
        if self.method == "ldl":
            self._factor_ldl()
            return
        if self.method == "cholmod":
            self._factor_cholmod()
            return
        try:
            self.lu = spla.splu(self.M, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                                options={"SymmetricMode": True})
        except RuntimeError as exc:  # exactly singular, or SuperLU out of memory
            if "memory" in str(exc).lower():
                raise MemoryError(str(exc)) from exc
            self.reason = f"factorisation failed: {exc}"
            return
        if not np.array_equal(self.lu.perm_r, self.lu.perm_c):
            self.reason = "the factorisation pivoted off the diagonal"

    def _factor_ldl(self) -> None:
        """:math:`P\\hat MP^T = \\hat L\\hat D\\hat L^T` by QDLDL (AMD ordering, no pivoting)."""
        import qdldl

        try:
            solver = qdldl.Solver(sp.triu(self.M, format="csc"), upper=True)
        except RuntimeError as exc:  # a zero pivot, or a structurally missing diagonal
            self.reason = f"LDL^T factorisation failed: {exc}"
            return
        except MemoryError:
            raise
        L, D, perm = solver.factors()
        self.ldl = (solver, sp.csc_matrix(L), np.asarray(D, dtype=float),
                    np.asarray(perm, dtype=np.int64))

    def _factor_cholmod(self) -> None:
        """:math:`P\\hat MP^T = \\hat L\\hat L^T` by CHOLMOD's supernodal Cholesky (through
        cvxopt; its fill-reducing ordering). A matrix that is not positive definite stops it
        at a non-positive pivot."""
        from cvxopt import cholmod, spmatrix

        low = sp.tril(self.M, format="coo")
        A = spmatrix(low.data, low.row.astype(np.int64), low.col.astype(np.int64),
                     (self.size, self.size))
        saved = dict(cholmod.options)
        cholmod.options["supernodal"] = 2      # always supernodal: L L^T, never L D L^T
        try:
            F = cholmod.symbolic(A, uplo="L")
            cholmod.numeric(A, F)
        except ArithmeticError:
            self.reason = "a non-positive pivot (Cholesky stopped)"
            return
        finally:
            cholmod.options.clear()
            cholmod.options.update(saved)
        self.chol = (F, A)

    def _cholmod_factor(self) -> sp.csc_matrix:
        """The computed factor :math:`\\hat L`, in CHOLMOD's own column storage (converting it
        ends the factorisation's use for solves: called last)."""
        from cvxopt import cholmod

        L = cholmod.getfactor(self.chol[0])
        colptr, rowind, values = L.CCS
        return sp.csc_matrix((np.array(values).ravel(), np.asarray(rowind).ravel(),
                              np.asarray(colptr).ravel()), shape=L.size)

    @property
    def factored(self) -> bool:
        return self.lu is not None or self.ldl is not None or self.chol is not None

    def solve(self, b: np.ndarray) -> np.ndarray:
        """:math:`\\hat M^{-1}b` (``b`` a vector or the columns of a matrix)."""
        if self.chol is not None:
            from cvxopt import cholmod, matrix

            x = matrix(np.asfortranarray(b.reshape(b.shape[0], -1), dtype=float))
            cholmod.solve(self.chol[0], x)
            return np.array(x).reshape(b.shape)
        if self.ldl is None:
            return self.lu.solve(b)
        solver = self.ldl[0]
        if b.ndim == 1:
            return solver.solve(b)
        return np.column_stack([solver.solve(np.ascontiguousarray(b[:, k]))
                                for k in range(b.shape[1])])

    def pivots(self) -> np.ndarray:
        if self.chol is not None:     # Cholesky completed: every pivot was positive
            return np.ones(self.size)
        return self.ldl[2] if self.ldl is not None else self.lu.U.diagonal()

    def residual_bound(self) -> float:
        """Bound on :math:`\\|R\\|_2` (module docstring) from the computed factors."""
        if self.chol is not None:
            L = self._cholmod_factor()
            if not np.all(L.diagonal() > 0):
                return np.inf
            self._nnz = int(L.nnz)
            np.abs(L.data, out=L.data)      # |L|, in place: the factor is this call's copy
            return self._symmetric_residual_bound(L, np.ones(self.size))
        if self.ldl is not None:
            _, Ls, d, _ = self.ldl
            return self._symmetric_residual_bound(
                abs(Ls) + sp.identity(Ls.shape[0], format="csc"), d)
        L = abs(self.lu.L).tocsr()
        Uf = self.lu.U.tocsr()
        d = Uf.diagonal()
        # F = U - D L^T (diagonal exactly 0), and a bound on the exact F entrywise
        DLt = sp.diags(d) @ self.lu.L.T.tocsr()
        F = (Uf - DLt).tocsr()
        F.data = np.abs(F.data)
        DLt_abs = abs(DLt)
        Fbar = F + 2.0 * _U * (F + DLt_abs)
        # an entry (i, j) of L U sums at most min(row count of L_i, column count of U_j)
        # products; only the p x p corner of border rows and columns (ordered last by the
        # fill-reducing permutation when dense) can reach the full length
        size = L.shape[0]
        border = np.zeros(size, dtype=bool)
        border[np.flatnonzero(self.lu.perm_c >= size - self.p)] = True
        rows_L = np.diff(L.indptr)
        c = int(rows_L[~border].max(initial=1)) + 1
        c_corner = int(rows_L.max(initial=1)) + 1
        # rho(|L| |D| |L|^T) by Collatz-Wielandt, after a few power steps from v = 1
        Lt = L.T.tocsr()
        dabs = np.abs(d)

        def X(v):
            return L @ (dabs * (Lt @ v))
        v = np.ones(L.shape[0])
        for _ in range(_POWER_STEPS):
            w = X(v)
            v = w / w.max() + 1e-300
        w = X(v)
        rho_ldl = _UP * float(np.max(w / v))
        # || |L| Fbar ||_2 <= sqrt(||.||_1 ||.||_inf)
        ones = np.ones(L.shape[0])
        rows = L @ (Fbar @ ones)
        cols = (ones @ L) @ Fbar
        lf = _UP * float(np.sqrt(max(rows.max(initial=0.0), 0.0) * max(cols.max(initial=0.0),
                                                                       0.0)))
        # the corner's own inner products are long: bound its block of |L||U| by its Frobenius
        # norm, with gamma of the full length
        corner = (L[border] @ abs(Uf)[:, border]).toarray() if border.any() else np.zeros(0)
        extra = _UP * (_gamma(c_corner) - _gamma(c)) * float(np.sqrt(np.sum(corner * corner)))
        return self.form_error + _gamma(c) * (rho_ldl + lf) * _UP + lf + max(extra, 0.0)

    def _symmetric_residual_bound(self, L: sp.spmatrix, d: np.ndarray) -> float:
        r"""Bound on :math:`\|R\|_2` for :math:`P\hat MP^T = \hat L\hat D\hat L^T + \Delta`
        (QDLDL: unit :math:`\hat L`, pivots :math:`\hat D`; CHOLMOD: :math:`\hat D = I`).

        Entry :math:`(i, j)` of :math:`\hat L\hat D\hat L^T` sums at most
        :math:`c_{ij} = \min(\ell_i, \ell_j)` products (:math:`\ell_i` the stored entries of
        row :math:`i` of the factor), and each computed entry of the factor comes from one
        such inner product, a division by a pivot (or a square root) and, for
        :math:`LDL^T`, one product with a pivot; so :math:`|\Delta_{ij}| \le
        \gamma_{c_{ij}+2}(|\hat L||\hat D||\hat L^T|)_{ij}` (Higham, *Accuracy and
        Stability*, Thms 9.3 and 10.3, for any order of the sums, blocked or supernodal).
        With :math:`B` the longest rows (the border's, at most :math:`2p + 8`) and
        :math:`c_0` the longest row outside :math:`B`, every entry with an index outside
        :math:`B` has :math:`c_{ij}\le c_0`, so
        :math:`\|\Delta\|_2 \le \gamma_{c_0+2}\,\rho(|\hat L||\hat D||\hat L^T|) +
        (\gamma_{c_{\max}+2} - \gamma_{c_0+2})\,\|(|\hat L||\hat D||\hat L^T|)_{BB}\|_F`.
        There is no :math:`F` term: the factorisation is symmetric by construction.
        ``L``: :math:`|\hat L|` (non-negative), CSC or CSR, used as stored: the products read
        it and its transpose's view, with no conversion of the factor."""
        size = L.shape[0]
        dabs = np.abs(d)
        # stored entries of each row (explicit zeros counted, as the factorisation may store)
        rows_L = np.diff(L.indptr) if L.format == "csr" \
            else np.bincount(L.indices, minlength=size)
        k = min(size - 1, 2 * self.p + 8)
        c0 = int(np.partition(rows_L, size - 1 - k)[size - 1 - k]) if size > 1 else 1
        long = rows_L > c0
        c_max = int(rows_L.max(initial=1))
        Lt = L.T                # a view in the other storage: products without conversion

        def X(v):
            return L @ (dabs * (Lt @ v))
        v = np.ones(size)
        for _ in range(_POWER_STEPS):
            w = X(v)
            v = w / w.max() + 1e-300
        w = X(v)
        rho = _UP * float(np.max(w / v))
        extra = 0.0
        if long.any():
            Lb = L[long]
            block = (Lb @ sp.diags(dabs) @ Lb.T).toarray()
            extra = _UP * (_gamma(c_max + 2) - _gamma(c0 + 2)) * float(
                np.sqrt(np.sum(block * block)))
        return self.form_error + _UP * _gamma(c0 + 2) * rho + max(extra, 0.0)

    def factor_nnz(self) -> int:
        """Non-zeros of the factors (``L`` and ``U``; for LDL^T ``L`` and the pivots)."""
        if self.chol is not None:
            return getattr(self, "_nnz", 0)
        if self.ldl is not None:
            return int(self.ldl[1].nnz + self.ldl[2].size)
        return int(self.lu.L.nnz + self.lu.U.nnz) if self.lu is not None else 0


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


#: the sparse factorisation of the bordered matrix: ``"cholmod"`` (CHOLMOD's supernodal
#: Cholesky, through the optional dependency cvxopt) where it imports, else ``"ldl"``
#: (QDLDL's LDL^T with AMD, a dependency of cvxpy), else ``"lu"`` (SuperLU, symmetric mode)
FACTORISATION = "cholmod" if _importable("cvxopt") else "ldl" if _importable("qdldl") else "lu"
_METHODS = ("cholmod", "ldl", "lu")


def _method(method: str | None) -> str:
    method = FACTORISATION if method is None else method
    if method not in _METHODS:
        raise ValueError(f"factorisation must be one of {_METHODS}, got {method!r}")
    return method


def default_delta(parts: SlackParts, mu: float, method: str | None = None) -> float:
    """The first shift :math:`\\delta` of :func:`sparse_verify` at ``mu``: above the rounding
    bound it will be checked against. SuperLU: 50 :math:`\\gamma_t` (t the terms of one entry
    of S) times a bound on :math:`\\|S - \\mu I\\|` (a second try doubles the bound it met).
    The symmetric factorisations' bound is :math:`\\gamma_{c+2}` times about that norm, c the
    longest row of their factor (up to the matrix size when the fill is dense, as for graphs
    with random long edges): 4 :math:`\\gamma_{m+2}` times it, m the bordered size, so that
    one factorisation suffices."""
    scale = max(parts.norm_bound + abs(mu), 1e-300)
    delta = 50.0 * _gamma(parts.terms) * scale
    if _method(method) != "lu":
        delta = max(delta, 4.0 * _gamma(parts.A.shape[0] + parts.U.shape[1] + 2) * scale)
    return delta


def full_coordinates(space: FactorSpace, parts: SlackParts, mu: float) -> bool:
    """Whether ``"full"`` coordinates lose nothing at the shift ``mu``: :math:`\\mathbf 1` is an
    eigenvector of :math:`S` (to rounding: residual below 1e-12 of a bound on :math:`\\|S\\|`)
    with its eigenvalue above :math:`\\mu` by a thousand residuals, so that the coupling
    costs the full-space bound at most a thousandth of a residual."""
    n = space.dim
    one = np.ones(n) / np.sqrt(n)
    S1 = parts.A @ one - parts.U @ (parts.s_abs * (parts.U.T @ one))
    rho = float(one @ S1)
    res = float(np.linalg.norm(S1 - rho * one))
    return bool(res <= 1e-12 * parts.norm_bound and rho - mu > 1e3 * res)


def sparse_verify(space: FactorSpace, y: np.ndarray, nu: float | np.ndarray | None, mu: float, *,
                  parts: SlackParts | None = None, delta: float | None = None,
                  mode: str | None = None, method: str | None = None) -> SparseCheck:
    """Prove :math:`\\lambda_{\\min}(S(y,\\nu)) > \\mu` on :math:`\\mathbf 1^\\perp` by one sparse
    factorisation (module docstring); a second with a larger shift ``delta`` if the first's
    rounding bound exceeds its own. Full space only. ``method``: ``"ldl"`` or ``"lu"``
    (default :data:`FACTORISATION`)."""
    t0 = time.perf_counter()
    parts = SlackParts.of(space, y, nu) if parts is None else parts
    if mode is None:
        mode = "full" if full_coordinates(space, parts, mu) else "tree"
    T = None if mode == "full" else _tree_basis(space)
    delta = default_delta(parts, mu, method) if delta is None else delta
    last = None
    for _ in range(2):
        fac = _Bordered(parts, mu, delta, T, method)
        if not fac.factored or fac.reason:
            return SparseCheck(False, mu, delta, np.inf, mode, time.perf_counter() - t0,
                               fac.factor_nnz(), fac.reason)
        piv = fac.pivots()
        if not np.all(piv > 0):
            return SparseCheck(False, mu, delta, np.inf, mode, time.perf_counter() - t0,
                               fac.factor_nnz(),
                               f"{int(np.sum(piv <= 0))} non-positive pivot(s)")
        bound = fac.residual_bound()
        last = SparseCheck(bound < delta, mu, delta, bound, mode, time.perf_counter() - t0,
                           fac.factor_nnz(),
                           "" if bound < delta else "rounding bound above the shift")
        if last.verified:
            return last
        delta = 2.0 * bound
    return last


def factor_at_shift(space: FactorSpace, y: np.ndarray, nu: float | np.ndarray | None, sigma: float,
                    *, parts: SlackParts | None = None, method: str | None = None
                    ) -> tuple[Callable[[np.ndarray], np.ndarray] | None, bool]:
    """``(solve, positive)``: :math:`b \\mapsto (S - \\sigma I)^{-1} b` on the full space by the
    bordered factorisation at ``sigma``, and whether its pivots are all positive (then
    :math:`\\sigma < \\lambda_{\\min}(S)` up to rounding; a count of negative pivots counts the
    eigenvalues below ``sigma``)."""
    parts = SlackParts.of(space, y, nu) if parts is None else parts
    fac = _Bordered(parts, sigma, 0.0, None, method)
    if not fac.factored or fac.reason:
        return None, False
    n, p = parts.A.shape[0], parts.U.shape[1]

    def solve(b):
        b = np.asarray(b, dtype=float)
        rhs = np.zeros((n + p,) + b.shape[1:])
        rhs[:n] = b
        return fac.solve(rhs)[:n]
    return solve, bool(np.all(fac.pivots() > 0))


class EigenStop(SolverError):
    """:func:`sparse_bottom` gives no eigenpairs: every caller handles it (no bound, lift,
    re-estimate or rank growth from them), none lets it reach the user of ``solve``."""


class CertificateLate(EigenStop):
    """A factorisation or solve block of :func:`sparse_bottom` that its ``late`` says must
    not start (the solve's time limit): no eigenpairs."""


class EigensolveFailed(EigenStop):
    """ARPACK failed inside :func:`sparse_bottom` (``ArpackError``, its
    ``ArpackNoConvergence`` among them; the original is the ``__cause__``), or no shift
    below the spectrum was found: no eigenpairs."""


@dataclass
class FactorTimes:
    """Wall seconds of the factorisations and solves of one :func:`sparse_bottom` call.

    Every factorisation there is of one sparsity pattern (the shift moves only the
    diagonal's values), the same ordering and fill, hence the same work: the last one
    measured is the estimate of the next; before any, ``first`` (the caller's, from a
    factorisation of the slack made earlier in the solve; ``None``: unknown). A solve
    likewise, from the last measured (unknown solves count as none)."""

    first: float | None = None
    factor: list = field(default_factory=list)
    solve: list = field(default_factory=list)

    def estimate(self, factorisations: int = 0, solves: int = 0) -> float | None:
        """Seconds of ``factorisations`` factorisations and ``solves`` solves (``None``:
        a factorisation wanted and none measured nor estimated)."""
        f = self.factor[-1] if self.factor else self.first
        if factorisations and f is None:
            return None
        return factorisations * (f or 0.0) + solves * (self.solve[-1] if self.solve else 0.0)


def _timed_factor(space, y, nu, sigma: float, parts: SlackParts, times: FactorTimes | None):
    """:func:`factor_at_shift` (looked up at call time: tests count it), its wall seconds
    appended to ``times``."""
    t0 = time.perf_counter()
    out = factor_at_shift(space, y, nu, sigma, parts=parts)
    if times is not None:
        times.factor.append(time.perf_counter() - t0)
    return out


#: halvings of a block's shift towards the spectrum (:func:`sparse_bottom`), where the
#: estimate below fails
_RAISE_STEPS = 3
#: a block's raised shift sits this far (relative) below the estimate of the smallest
#: eigenvalue from a short shift-invert Krylov run on the first factorisation
_NEAR_MARGIN = 0.1
#: Krylov steps of that estimate (one solve each)
_NEAR_STEPS = 24


def _centred_inverse(solve: Callable[[np.ndarray], np.ndarray], n: int) -> spla.LinearOperator:
    r""":math:`P(S - \sigma I)^{-1}P` on :math:`\mathbf 1^\perp` (``P`` the centring)."""
    def op(b):
        b = b.reshape(n, -1)
        b = b - b.mean(axis=0)
        x = solve(b)
        return (x - x.mean(axis=0)).reshape(b.shape)
    return spla.LinearOperator((n, n), matvec=op, matmat=op, dtype=float)


def _nearer_shift(space: FactorSpace, y, nu, parts: SlackParts, solve, sigma: float,
                  raise_to: float, times: FactorTimes | None = None,
                  late: Callable[[float | None], bool] | None = None
                  ) -> tuple[float, Callable | None]:
    r"""One factorisation at a shift just below an *estimate* of :math:`\lambda_{\min}`:
    the largest Ritz value :math:`\theta` of :math:`P(S - \sigma I)^{-1}P` on a short
    Krylov space (``_NEAR_STEPS`` solves with the factorisation at ``sigma``, from a random
    start, Rayleigh-Ritz) gives :math:`\sigma + 1/\theta`, at or above
    :math:`\lambda_{\min}` in exact arithmetic (a Ritz value of the inverse lies below its
    largest eigenvalue), and the shift goes ``_NEAR_MARGIN`` of it lower, not above
    ``raise_to``. Only Lanczos's path depends on it: ``(sigma, None)`` when the shift would
    not rise, the new factorisation has a non-positive pivot (the estimate lay above
    :math:`\lambda_{\min}` by more than the margin) or ``late`` says that neither the
    solves nor the factorisation (``times``' estimates) may start; else
    ``(new shift, its solve)``."""
    n = space.dim
    if late is not None and late(times.estimate(1, _NEAR_STEPS)):
        return sigma, None
    O = _centred_inverse(solve, n)
    m = min(_NEAR_STEPS, n - 2)
    Q, W = np.zeros((n, m)), np.zeros((n, m))
    q = np.random.default_rng(1).standard_normal(n)
    for j in range(m):
        for _ in range(2):                 # orthogonal to 1 and the basis, twice
            q = q - q.mean() - Q[:, :j] @ (Q[:, :j].T @ q)
        norm = np.linalg.norm(q)
        if not norm > 1e-12 * np.linalg.norm(W[:, max(j - 1, 0)]):
            m = j                          # an invariant subspace: its Ritz values are exact
            break
        Q[:, j] = q / norm
        t0 = time.perf_counter()
        W[:, j] = O.matvec(Q[:, j])
        if times is not None:
            times.solve.append(time.perf_counter() - t0)
        q = W[:, j]
    if m == 0:
        return sigma, None
    # Rayleigh-Ritz on the Krylov space: its largest Ritz value lies below theta_max
    H = Q[:, :m].T @ W[:, :m]
    theta = float(np.linalg.eigvalsh(0.5 * (H + H.T))[-1])
    if not theta > 0:
        return sigma, None
    est = sigma + 1.0 / theta
    nearer = min(est - _NEAR_MARGIN * abs(est), raise_to)
    if not nearer > sigma or late is not None and late(times.estimate(1)):
        return sigma, None
    solve_n, positive = _timed_factor(space, y, nu, nearer, parts, times)
    if solve_n is None or not positive:
        return sigma, None
    return nearer, solve_n


#: an unrestarted Lanczos run (:func:`~.krylov_block.top_pairs`) of at most this many
#: steps per wanted pair before ARPACK takes over
_LANCZOS_STEPS = 6
#: blocks of fewer pairs go to ARPACK directly: its restarts over 2k + 1 vectors are cheap
#: there, and the unrestarted run needed as many solves or more (docs/tuning.md, "9,298:
#: the candidate's block by one unrestarted Lanczos run")
_LANCZOS_MIN_PAIRS = 50


def sparse_bottom(space: FactorSpace, y: np.ndarray, nu: float | np.ndarray | None, k: int, *,
                  sigma: float,
                  tol: float = 1e-10, parts: SlackParts | None = None,
                  raise_to: float | None = None,
                  late: Callable[[float | None], bool] | None = None,
                  times: FactorTimes | None = None,
                  enough: Callable[[float], bool] | None = None
                  ) -> tuple[np.ndarray, np.ndarray, float]:
    r"""The ``k`` smallest eigenpairs :math:`(\Lambda, X)` of :math:`S` on :math:`\mathbf 1^\perp`
    by shift-invert Lanczos, :math:`P(S - \sigma I)^{-1}P` (for ``k >=
    _LANCZOS_MIN_PAIRS`` unrestarted, :func:`~.krylov_block.top_pairs`, up to
    ``_LANCZOS_STEPS`` steps per pair; else, or where it gives up, ``eigsh``), with Rayleigh
    quotients for the values; the shift is lowered (times 10) until the factorisation has
    only positive pivots, i.e. :math:`\sigma` lies below the spectrum. Returns
    ``(lam, X, sigma)`` with the shift used. Meant for ``"full"`` coordinates (the
    constant vector an eigenvector of :math:`S`). Given ``raise_to`` (< 0), a shift below
    the spectrum is then raised towards it, not above ``raise_to``: once to
    ``_NEAR_MARGIN`` below an estimate of :math:`\lambda_{\min}` from a short Krylov run
    on the first factorisation (:func:`_nearer_shift`: one more factorisation), else
    halved towards zero while the pivots stay positive, at most ``_RAISE_STEPS`` times.
    Lanczos on the inverse separates the block's last pair from the next by about
    :math:`(\lambda_{k+1} - \lambda_k)/(\lambda_k - \sigma)` relative to the spectrum's
    width, so a shift nearer :math:`\lambda_{\min}` needs fewer restarts where the
    bottom is crowded. The estimate only places the shift: the pairs are Lanczos's on
    whichever factorisation is used.

    ``late``: given the seconds a step is estimated to take (``None``: unknown), whether it
    must not start (the solve's time limit). Asked before every factorisation and before
    the Lanczos solves, with :class:`FactorTimes` estimates (``times``, filled in here:
    each later factorisation costs what the last one did, the Lanczos at least ``ncv``
    solves): a factorisation that only raises the shift is left out, one that is needed
    (the first, a lower shift, the solves) raises :class:`CertificateLate`. A failed
    ARPACK run, or no shift below the spectrum, raises :class:`EigensolveFailed`; both
    are :class:`EigenStop`, which every caller handles.

    ``enough``: given an estimate of :math:`\lambda_{\min}` (:math:`\sigma + 1/\theta`, the
    unrestarted run's largest Ritz value once its pair has converged), whether the smallest
    pair alone will do (a caller that may stop at it); if so only that pair is returned
    (``lam`` and ``X`` of one pair; ARPACK's blocks always return ``k``)."""
    parts = SlackParts.of(space, y, nu) if parts is None else parts
    n = space.dim
    times = FactorTimes() if times is None else times
    for _ in range(30):
        if late is not None and late(times.estimate(1)):
            raise CertificateLate("a factorisation of the slack would end past the time limit")
        solve, positive = _timed_factor(space, y, nu, sigma, parts, times)
        if solve is not None and positive:
            break
        sigma = 10.0 * sigma if sigma < 0 else -1e-12 - 10.0 * abs(sigma)
    else:
        raise EigensolveFailed("no shift below the spectrum found")
    steps = _RAISE_STEPS if raise_to is not None else 0
    if raise_to is not None:
        sigma_n, solve_n = _nearer_shift(space, y, nu, parts, solve, sigma, raise_to,
                                         times, late)
        if solve_n is not None:
            sigma, solve, steps = sigma_n, solve_n, 0
    for _ in range(steps):
        nearer = 0.5 * sigma
        if not nearer <= raise_to or late is not None and late(times.estimate(1)):
            break
        solve_n, positive = _timed_factor(space, y, nu, nearer, parts, times)
        if solve_n is None or not positive:
            break
        sigma, solve = nearer, solve_n
    O = _centred_inverse(solve, n)
    v0 = np.random.default_rng(0).standard_normal(n)
    v0 -= v0.mean()
    k = min(k, n - 2)
    ncv = min(n - 1, max(2 * k + 1, 20))
    if late is not None and late(times.estimate(0, ncv)):
        raise CertificateLate("the shift-invert solves would end past the time limit")
    try:
        early = None if enough is None else (lambda theta: enough(sigma + 1.0 / theta))
        pairs = None if k < _LANCZOS_MIN_PAIRS else top_pairs(
            O, n, k, v0=v0, tol=tol, max_steps=max(_LANCZOS_STEPS * k, ncv), early=early)
        nu_, X = eigsh(O, k=k, which="LA", v0=v0, ncv=ncv, tol=tol) if pairs is None else pairs
    except spla.ArpackError as exc:   # e.g. error 3, no shifts, on a small slack
        raise EigensolveFailed(f"shift-invert Lanczos failed ({exc})") from exc
    X = X - X.mean(axis=0)
    X, _ = np.linalg.qr(X)
    SX = space.apply_S(X, y, space.duals(nu))
    H = X.T @ SX
    lam, Z = np.linalg.eigh(0.5 * (H + H.T))
    return lam, X @ Z, sigma

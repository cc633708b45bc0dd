"""The space the factor lives in: all of :math:`\\mathbf 1^\\perp`, or a reduced basis."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..exceptions import InputError
from ..formulations.gram import DiagPlusLowRank, GramProblem
from .options import DenseLimits

__all__ = ["FactorSpace"]

_dgemm = sla.get_blas_funcs("gemm", dtype=np.float64)


def _product(M: DiagPlusLowRank, W: np.ndarray) -> np.ndarray:
    r""":math:`MW`; for an n x k array (k >= 2) and an :math:`M` without a sparse part,
    the low-rank product is added by the BLAS into the diagonal's (``dgemm`` with
    :math:`\beta = 1` on the transposed views): the same sums as ``M.matvec`` (each
    entry's diagonal term plus its low-rank dot product) without that product's n x k
    array and the pass that adds it. One column stays with ``M.matvec``, whose product
    is then a matrix-vector product that sums in another order."""
    if (W.ndim != 2 or W.shape[1] < 2 or W.dtype != np.float64 or M.sparse is not None
            or not M.U.shape[1] or M.U.dtype != np.float64 or not M.U.flags.c_contiguous):
        return M.matvec(W)
    out = np.multiply(M.diag[:, None], W, order="C")
    T = M.s[:, None] * (M.U.T @ W)
    # out^T <- T^T U^T + out^T on Fortran-ordered views: out is updated in place
    return _dgemm(1.0, T.T, M.U.T, beta=1.0, c=out.T, overwrite_c=True).T


#: bytes of the scratch of the block-Jacobi blocks' assembly, k x k blocks of as many
#: points as fit (docs/tuning.md, "The block-Jacobi blocks in a kept buffer")
_BLOCK_SCRATCH = 2 << 20
#: bytes of the m x k x k array up to which those blocks are the sparse product itself
_BLOCK_PRODUCT = 32 << 20
#: share of a chunk's points with an edge in a slot above which the slot runs over all of
#: them (zero weights past a point's degree) instead of gathering the blocks of those points
_BLOCK_DENSE = 0.6


class FactorSpace:
    r"""Where the factor lives: all of :math:`\mathbf 1^\perp` (``Q=None``) or ``range(Q)``.

    The Gram matrix is :math:`G = VV^T` with :math:`V = W` (full space, columns kept
    centred, :math:`V^T\mathbf 1 = 0`) or :math:`V = QW` (reduced basis, ``Q`` with
    orthonormal columns orthogonal to :math:`\mathbf 1`, :math:`W` of shape
    :math:`r\times k`). With :math:`B` the :math:`m\times n` edge incidence matrix
    (:math:`(BV)_e = v_i - v_j` for :math:`e = (i, j)`), ``E`` is :math:`B` or
    :math:`BQ`, so that the squared edge lengths are
    :math:`D_e(G) = \|(EW)_e\|^2 = \langle a_ea_e^T, G\rangle`. ``C`` is the objective
    matrix :math:`\tilde C = C + \tau I` (diagonal plus low rank) and ``H`` the SNR
    functional :math:`\eta\,\Sigma_{icv} - \Sigma_{bcv}` (eq. 10 of the DVU paper), or
    ``None``; on a basis their congruences :math:`Q^T\tilde CQ`, :math:`Q^THQ` are
    ``Cq``, ``Hq``. ``K`` holds the constraints added by the user,
    :math:`\langle A_k, G\rangle \le b_k` or :math:`= b_k`
    (:class:`~sdpembed.formulations.constraints.AffineGramConstraints`), or ``None``; on a
    basis ``Kq`` holds :math:`Q^TA_kQ`.

    The *linear multipliers* :math:`\nu` are one vector of length :attr:`q`: the SNR
    constraint's first (if any; :math:`\langle H, G\rangle \le 0`), then one per added
    row. The dual slack matrix of multipliers :math:`(y, \nu)` is
    :math:`S(y,\nu) = \tilde C + E^T\mathrm{diag}(y)E + \nu_0 H + \sum_k z_k A_k` on this
    space (:meth:`apply_S`; :math:`z` the added rows' part of :math:`\nu`), and the dual
    function is :math:`-\varphi^*(y) - z^Tb` (:meth:`linear_offset`) with :math:`z_k \ge 0`
    on inequality rows.

    Parameters
    ----------
    gp : GramProblem
        The eliminated-centroid problem.
    Q : ndarray (n, r) or None
        Reduced basis, or ``None`` for the full space.
    limits : DenseLimits, optional
        Up to which n the eigenvalue steps on this space are dense (default
        ``DenseLimits()``).
    objective : DiagPlusLowRank, optional
        :math:`\\tilde C` instead of ``gp.full_objective()`` (see :meth:`without_objective`).
    """

    def __init__(self, gp: GramProblem, Q: np.ndarray | None = None, *,
                 limits: DenseLimits | None = None, objective: DiagPlusLowRank | None = None):
        self.gp = gp
        self.Q = Q
        self.limits = DenseLimits() if limits is None else limits
        n, m = gp.n, gp.edges.shape[0]
        i, j = gp.edges.T
        B = sp.csr_matrix((np.r_[np.ones(m), -np.ones(m)], (np.r_[np.arange(m), np.arange(m)],
                                                           np.r_[i, j])), shape=(m, n))
        self.B = B
        self._ones_n = np.full(n, 1.0 / n)
        self.C = gp.full_objective() if objective is None else objective
        self.H = None
        if gp.snr is not None:
            self.H = gp.icv.scaled(gp.snr) + gp.bcv.scaled(-1.0)
        K = gp.constraints
        self.K = K if K is not None and K.p > 0 else None
        self.n_snr = int(self.H is not None)
        self.q = self.n_snr + (0 if self.K is None else self.K.p)
        if Q is None:
            self.dim = n
            self.E = B
            self.ET = B.T.tocsr()
        else:
            self.dim = Q.shape[1]
            self.E = np.asarray(B @ Q)
            self.ET = self.E.T
            self.Cq = self.C.congruence(Q)
            self.Hq = None if self.H is None else self.H.congruence(Q)
            self.Kq = None if self.K is None else self.K.congruence(Q)

    def without_objective(self) -> FactorSpace:
        r"""The same space and constraints with :math:`\tilde C = 0`, where
        :math:`S(y, \nu) = \mathcal A^Ty + \nu_0 H + \sum_k z_kA_k`: the operator of the
        Farkas test of infeasibility."""
        return FactorSpace(self.gp, self.Q, limits=self.limits,
                           objective=DiagPlusLowRank.zeros(self.gp.n))

    # factor -> point coordinates (n x k)
    def points(self, W: np.ndarray) -> np.ndarray:
        return W if self.Q is None else self.Q @ W

    def project(self, W: np.ndarray, *, inplace: bool = False) -> np.ndarray:
        """``W`` centred (full space; on a basis ``W`` itself); ``inplace`` overwrites a
        2-D ``W`` with the same numbers instead of returning a new array."""
        if self.Q is not None:
            return W
        if W.ndim != 2:
            return W - W.mean()
        # the column means by a BLAS product (ndarray.mean on n x k is slower)
        means = self._ones_n @ W
        if inplace:
            W -= means[None, :]
            return W
        return W - means[None, :]

    def diffs(self, W: np.ndarray) -> np.ndarray:
        """:math:`EW`: in the full space the rows' differences :math:`w_i - w_j` by two
        gathers, the second subtracted in place from the first (the same numbers as the
        incidence product, without its sparse loop; two m x k arrays, not three)."""
        if self.Q is None:
            i, j = self._ends
            Z = W.take(i, axis=0)
            Z -= W.take(j, axis=0)
            return Z
        return self.E @ W

    @cached_property
    def _ends(self) -> tuple[np.ndarray, np.ndarray]:
        """The edges' end points ``(i, j)`` as contiguous index arrays (full space)."""
        i, j = self.gp.edges.T
        return np.ascontiguousarray(i, dtype=np.intp), np.ascontiguousarray(j, dtype=np.intp)

    @cached_property
    def B_abs_T(self) -> sp.csr_matrix:
        """:math:`|B|^T` (n x m): sums over the edges at each point."""
        return abs(self.B).T.tocsr()

    def point_blocks(self, Z: np.ndarray, weight: np.ndarray) -> np.ndarray:
        r"""Each point's sum of its edges' weighted outer products (full space),

        .. math:: M_i = \sum_{e \ni i} \omega_e z_ez_e^T,

        for ``Z`` (m x k, the edges' difference vectors :math:`z_e`) and ``weight``
        (:math:`\omega`, length m), as an n x k x k array: the same numbers, bit for bit,
        as ``B_abs_T @ (weight[:, None] * einsum("ea,eb->eab", Z, Z).reshape(m, k * k))``
        (each edge's products :math:`\omega_e(z_{ea}z_{eb})` added at each point in the
        stored order of :attr:`B_abs_T`'s row, starting from zero), without that product's
        m x k x k array where it exceeds :data:`_BLOCK_PRODUCT` bytes (above the
        allocator's mapping threshold every call's array would be new memory from the
        kernel, page by page). The result is then a buffer kept for the next call at the
        same k: its previous content is lost."""
        A = self.B_abs_T
        n, k = self.gp.n, Z.shape[1]
        if Z.shape[0] * k * k * 8 <= _BLOCK_PRODUCT or not np.all(A.data == 1.0):
            outer = weight[:, None] * np.einsum("ea,eb->eab", Z, Z).reshape(-1, k * k)
            return np.asarray(A @ outer).reshape(n, k, k)
        kept = getattr(self, "_blocks", None)
        if kept is None or kept.shape != (n, k, k):
            self._blocks = None                 # the old buffer goes before the new one
            kept = self._blocks = np.empty((n, k, k))
        kept.fill(0.0)
        c = _block_chunk(n, k)
        zs, prod = np.empty((c, k)), np.empty((c, k, k))
        indptr, indices = A.indptr, A.indices
        deg = np.diff(indptr)
        for p0 in range(0, n, c):
            p1 = min(p0 + c, n)
            blk, start, dc = kept[p0:p1], indptr[p0:p1], deg[p0:p1]
            for s in range(int(dc.max(initial=0))):
                act = dc > s
                na = int(np.count_nonzero(act))
                # most points still have an edge in this slot: every point takes one, those
                # past their degree some edge at weight 0, whose (finite) products are zeros
                # that leave the block's bits as they are (a sum from +0 is never -0)
                whole = na >= _BLOCK_DENSE * (p1 - p0)
                if whole:
                    e = indices[np.where(act, start + s, 0)]
                    we = np.where(act, weight[e], 0.0)
                else:
                    e = indices[start[act] + s]
                    we = weight[e]
                z, t = zs[:e.size], prod[:e.size]
                np.take(Z, e, axis=0, out=z)
                np.multiply(z[:, :, None], z[:, None, :], out=t)
                t *= we[:, None, None]
                if whole:
                    blk += t
                else:
                    blk[act] += t
        return kept

    @staticmethod
    def invert_blocks(blocks: np.ndarray) -> np.ndarray:
        """``np.linalg.inv(blocks)`` (an n x k x k stack) in place, a chunk of points at a
        time (the same numbers: each block is inverted on its own); returns ``blocks``."""
        n, k = blocks.shape[:2]
        c = _block_chunk(n, k)
        for p0 in range(0, n, c):
            part = blocks[p0:p0 + c]
            part[...] = np.linalg.inv(part)
        return blocks

    @cached_property
    def objective_norm(self) -> float:
        """:math:`\\|\\tilde C\\|_F` on this space (one dense product with the identity, kept:
        the rounding allowance of every dense certificate needs it)."""
        return float(np.linalg.norm(self.apply_C(np.eye(self.dim))))

    @cached_property
    def E_single(self) -> tuple[sp.csr_matrix | np.ndarray, sp.csr_matrix | np.ndarray]:
        """``(E, E^T)`` in single precision, for the Hessian products of Newton–CG."""
        return self.E.astype(np.float32), self.ET.astype(np.float32)

    def apply_C(self, W: np.ndarray) -> np.ndarray:
        return _product(self.C, W) if self.Q is None else self.Cq @ W

    def apply_H(self, W: np.ndarray) -> np.ndarray:
        return _product(self.H, W) if self.Q is None else self.Hq @ W

    def snr_violation(self, h: float, quad: float) -> float:
        r""":math:`\max(0, h)/|q|`: the SNR constraint :math:`h = \langle H, G\rangle \le 0`
        violated relative to the objective's quadratic term :math:`q = \langle C, G\rangle`
        (0 without an SNR constraint)."""
        return max(0.0, h) / max(abs(quad), 1e-300) if self.H is not None else 0.0

    # ------------------------------------------------------------ linear constraints
    def duals(self, nu: float | np.ndarray | None) -> np.ndarray:
        """The linear multipliers as a vector of length :attr:`q` (a number is accepted for
        the SNR multiplier alone, and 0 or ``None`` when there are no such constraints)."""
        if nu is None or np.ndim(nu) == 0:
            value = 0.0 if nu is None else float(nu)
            if self.q == 0 and value == 0.0:
                return np.zeros(0)
            if self.q == 1:
                return np.array([value])
            raise InputError(f"the linear multipliers nu must be a vector of length {self.q} "
                             f"(SNR first, then the added constraints); got {nu!r}")
        nu = np.asarray(nu, dtype=float)
        if nu.shape != (self.q,):
            raise InputError(f"the linear multipliers nu must have shape ({self.q},); "
                             f"got {nu.shape}")
        return nu

    def user_part(self, nu: np.ndarray) -> np.ndarray | None:
        """The added rows' multipliers :math:`z` of ``nu`` (``None`` without added rows)."""
        return None if self.K is None else nu[self.n_snr:]

    def apply_K(self, W: np.ndarray, z: np.ndarray) -> np.ndarray:
        r""":math:`\sum_k z_kA_kW` on this space."""
        if self.Q is None:
            return self.K.operator(z) @ W
        return np.tensordot(z, self.Kq, axes=1) @ W

    def add_K(self, out: np.ndarray, W: np.ndarray, z: np.ndarray) -> np.ndarray:
        r"""``out`` plus :math:`\sum_k z_kA_kW`, in place (returns ``out``): the sums of
        :meth:`apply_K`, made in the full space on the rows' points alone (the other rows of
        the product are zero)."""
        if self.Q is not None:
            out += np.tensordot(z, self.Kq, axes=1) @ W
            return out
        points, slot, A = self._K_local
        A.data[:] = np.bincount(slot, weights=self.K.value * z[self.K.row],
                                minlength=A.data.size)
        out[points] += A @ W[points]
        return out

    @cached_property
    def _K_local(self) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix]:
        r"""``(points, slot, A)``: the points the added rows touch (sorted), the slot of each
        triplet in the CSR pattern of :math:`\sum_k z_kA_k` restricted to them, and that
        pattern as a matrix whose ``data`` :meth:`add_K` overwrites. The points are in
        order, so each row's entries are summed in :meth:`apply_K`'s order."""
        K = self.K
        points, local = np.unique(np.r_[K.i, K.j], return_inverse=True)
        m = points.size
        local = local.ravel()
        lin = local[:K.i.size].astype(np.int64) * m + local[K.i.size:]
        entries, slot = np.unique(lin, return_inverse=True)
        indptr = np.r_[0, np.cumsum(np.bincount(entries // m, minlength=m))]
        A = sp.csr_matrix((np.zeros(entries.size), entries % m, indptr), shape=(m, m))
        return points, slot.ravel(), A

    def K_values(self, W: np.ndarray) -> np.ndarray:
        r""":math:`\langle A_k, VV^T\rangle` for every added row, :math:`V` the points of ``W``."""
        if self.Q is None:
            return self.K.values_of_factor(W)
        return np.einsum("kab,ac,bc->k", self.Kq, W, W)

    def K_bilinear(self, W: np.ndarray, U: np.ndarray) -> np.ndarray:
        r""":math:`\langle A_k, VU_p^T\rangle` for every added row (:math:`A_k` symmetric;
        :math:`V`, :math:`U_p` the points of ``W`` and ``U``)."""
        if self.Q is None:
            K = self.K
            return np.bincount(K.row, weights=K.value * np.einsum("ij,ij->i", W[K.i], U[K.j]),
                               minlength=K.p)
        return np.einsum("kab,ac,bc->k", self.Kq, W, U)

    def K_scale(self) -> np.ndarray:
        r"""A size of each added row, :math:`s_k = \max(|b_k|,\ \|A_k\|_1\,\bar D/4)`
        (:math:`\bar D` the mean target distance: for a squared distance
        :math:`G_{ii}+G_{jj}-2G_{ij}` that is the typical value), against which violations
        are relative."""
        K = self.K
        norm1 = np.bincount(K.row, weights=np.abs(K.value), minlength=K.p)
        return np.maximum(np.abs(K.rhs), norm1 * float(np.mean(self.gp.target)) / 4.0)

    def K_violation(self, values: np.ndarray) -> float:
        """The largest relative violation of the added rows (0 without them)."""
        if self.K is None:
            return 0.0
        return float(np.max(self.K.residual(values) / self.K_scale(), initial=0.0))

    def linear_offset(self, nu: float | np.ndarray | None) -> float:
        r""":math:`z^Tb` of the dual function :math:`-\varphi^*(y) - z^Tb`; ``inf`` when a
        multiplier of an inequality row is negative (outside the dual domain)."""
        if self.K is None:
            return 0.0
        z = self.user_part(nu)
        if np.any(z[~self.K.equality] < 0):
            return np.inf
        return float(z @ self.K.rhs)

    def apply_S(self, W: np.ndarray, y: np.ndarray, nu: float | np.ndarray | None) -> np.ndarray:
        """:math:`S(y,\\nu)W` on this space."""
        out = self.apply_C(W) + self.ET @ (y[:, None] * (self.E @ W))
        if self.H is not None and nu[0]:
            out = out + nu[0] * self.apply_H(W)
        if self.K is not None:
            z = self.user_part(nu)
            if np.any(z):
                out = out + self.apply_K(W, z)
        return out

    def preconditioner(self, omega: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """Solver for :math:`M = E^T\\mathrm{diag}(\\omega)E + \\delta I` (weighted Laplacian).

        :math:`2M` approximates the Gauss–Newton curvature of the distance
        term; it is the graph-Laplacian conditioning that plain L-BFGS cannot
        cope with. Sparse LU (SuperLU) in the full space, Cholesky on a basis.
        """
        if self.Q is None:
            M = (self.ET @ sp.diags(omega) @ self.E).tocsc()
            delta = 1e-4 * float(M.diagonal().mean())
            lu = spla.splu((M + delta * sp.eye(self.dim)).tocsc(), permc_spec="MMD_AT_PLUS_A")
            return lu.solve
        M = (self.E.T * omega) @ self.E
        delta = 1e-4 * float(np.trace(M)) / self.dim + 1e-300
        cf = sla.cho_factor(M + delta * np.eye(self.dim))
        return lambda X: sla.cho_solve(cf, X)

    def dense_S(self, y: np.ndarray, nu: float | np.ndarray | None) -> np.ndarray:
        """:math:`Q^T S Q` (reduced basis only)."""
        S = self.Cq + (self.E.T * y) @ self.E
        if self.H is not None and nu[0]:
            S = S + nu[0] * self.Hq
        if self.K is not None:
            S = S + np.tensordot(self.user_part(nu), self.Kq, axes=1)
        return 0.5 * (S + S.T)


def _block_chunk(n: int, k: int) -> int:
    """Points per chunk of :meth:`FactorSpace.point_blocks` and
    :meth:`FactorSpace.invert_blocks`: as many k x k blocks as :data:`_BLOCK_SCRATCH` holds,
    at least 16 and at most n."""
    return max(1, min(n, max(16, _BLOCK_SCRATCH // (8 * k * k))))


#: a factor's smallest singular value at or below this share of its largest is a numerically
#: null direction (:func:`_rank_deficient`, :func:`_trim_rank`)
_NULL_RTOL = 1e-6


def _rank_deficient(W: np.ndarray, rtol: float = _NULL_RTOL) -> bool:
    r"""Whether the factor has a numerically null column direction,
    :math:`\sigma_{\min}(W) \le` ``rtol`` :math:`\sigma_{\max}(W)`.

    A rank-deficient second-order critical point of the factorised problem is
    a global optimum (Burer & Monteiro 2005), so a negative eigenvalue of
    :math:`S(y)` there comes from inexact multipliers and inner solves, not
    from a missing dimension: adding a column would only perturb a nearly
    converged point. The default ``rtol`` leaves DVU's small but genuine singular
    values (about 1e-4 of the largest and above) alone.
    """
    return _sv_ratio(W) <= rtol


def _sv_ratio(W: np.ndarray) -> float:
    r""":math:`\sigma_{\min}(W)/\sigma_{\max}(W)` (0 for a zero factor), from one thin SVD:
    what :func:`_rank_deficient` and the rank growth's saturation test
    (:func:`~.stall._saturated`) read."""
    s = np.linalg.svd(W, compute_uv=False)
    return float(s[-1] / s[0]) if s[0] > 0 else 0.0


def _trim_rank(W: np.ndarray, rtol: float = _NULL_RTOL, margin: int = 2) -> np.ndarray | None:
    r"""The factor without its numerically null directions, or ``None`` to keep it.

    With :math:`W = U\Sigma V^T`, returns :math:`U_k\Sigma_k`: the same :math:`WW^T` up
    to :math:`\sum_{i>k}\sigma_i^2 u_iu_i^T`, where :math:`k` counts the singular values
    above ``rtol`` :math:`\sigma_{\max}` plus ``margin``, so that the trimmed factor
    stays rank-deficient (and :func:`_rank_deficient` still refuses rank growth). It
    trims only when at least a quarter of the columns go. Every inner iteration
    costs in proportion to the rank, and null columns do not come back by themselves
    (their gradient :math:`2S(y)w` vanishes with :math:`w`).
    """
    U, s, _ = np.linalg.svd(W, full_matrices=False)
    k = int(np.sum(s > rtol * s[0])) + margin
    if k > 0.75 * W.shape[1]:
        return None
    return U[:, :k] * s[:k]

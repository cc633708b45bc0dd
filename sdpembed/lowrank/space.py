"""The space the factor lives in: all of :math:`\\mathbf 1^\\perp`, or a reduced basis."""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..formulations.gram import DiagPlusLowRank, GramProblem
from .options import DenseLimits

__all__ = ["FactorSpace"]


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
    ``Cq``, ``Hq``. The dual slack matrix of multipliers :math:`(y, \nu)` is
    :math:`S(y,\nu) = \tilde C + E^T\mathrm{diag}(y)E + \nu H` on this space
    (:meth:`apply_S`).

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

    def without_objective(self) -> FactorSpace:
        r"""The same space and constraints with :math:`\tilde C = 0`, where
        :math:`S(y, \nu) = \mathcal A^Ty + \nu H`: the operator of the Farkas test of
        infeasibility."""
        return FactorSpace(self.gp, self.Q, limits=self.limits,
                           objective=DiagPlusLowRank.zeros(self.gp.n))

    # factor -> point coordinates (n x k)
    def points(self, W: np.ndarray) -> np.ndarray:
        return W if self.Q is None else self.Q @ W

    def project(self, W: np.ndarray) -> np.ndarray:
        if self.Q is not None:
            return W
        # the column means by a BLAS product (5x faster than ndarray.mean on n x k)
        return W - (self._ones_n @ W)[None, :] if W.ndim == 2 else W - W.mean()

    def diffs(self, W: np.ndarray) -> np.ndarray:
        return self.E @ W

    @cached_property
    def E_single(self):
        """``(E, E^T)`` in single precision, for the Hessian products of Newton–CG."""
        return self.E.astype(np.float32), self.ET.astype(np.float32)

    def apply_C(self, W):
        return self.C.matvec(W) if self.Q is None else self.Cq @ W

    def apply_H(self, W):
        return self.H.matvec(W) if self.Q is None else self.Hq @ W

    def snr_violation(self, h: float, quad: float) -> float:
        r""":math:`\max(0, h)/|q|`: the SNR constraint :math:`h = \langle H, G\rangle \le 0`
        violated relative to the objective's quadratic term :math:`q = \langle C, G\rangle`
        (0 without an SNR constraint)."""
        return max(0.0, h) / max(abs(quad), 1e-300) if self.H is not None else 0.0

    def apply_S(self, W, y, nu):
        """:math:`S(y,\\nu)W` on this space."""
        out = self.apply_C(W) + self.ET @ (y[:, None] * (self.E @ W))
        if nu:
            out = out + nu * self.apply_H(W)
        return out

    def preconditioner(self, omega: np.ndarray):
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

    def dense_S(self, y, nu) -> np.ndarray:
        """:math:`Q^T S Q` (reduced basis only)."""
        S = self.Cq + (self.E.T * y) @ self.E
        if nu:
            S = S + nu * self.Hq
        return 0.5 * (S + S.T)

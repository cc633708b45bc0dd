"""The rank-one LMI linear program behind the lift of the multipliers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from ..exceptions import InputError
from .ipm_common import _cholesky, _step_lp, _step_psd

__all__ = ["LiftResult", "rank_one_lmi_lp"]


@dataclass
class LiftResult:
    """Outcome of :func:`rank_one_lmi_lp`: the step ``d``, its cost, and how the IPM ended."""

    d: np.ndarray
    cost: float
    status: str                 # "optimal", "max_iter" or "numerical_failure"
    iterations: int
    relative_gap: float


def rank_one_lmi_lp(A0: np.ndarray, B: np.ndarray, c: np.ndarray, lo: np.ndarray,
                    hi: np.ndarray, *, tol: float = 1e-9, max_iter: int = 80) -> LiftResult:
    """Solve :math:`\\min c^Td` s.t. :math:`A_0 + \\sum_e d_e b_eb_e^T\\succeq 0`,
    :math:`lo\\le d\\le hi` (``b_e = B[e]``, ``lo < hi`` finite).

    The dual-repair step of the large-n certificate (:func:`sdpembed.lowrank.lift_multipliers`):
    :math:`A_0` is :math:`\\Lambda - \\eta I` on the bottom eigenspace of the dual
    slack matrix, :math:`b_e` the edges' coordinates there, ``c`` their targets.
    An infeasible primal-dual path-following method with the HKM direction
    (Helmberg, Rendl, Vanderbei & Wolkowicz 1996; Kojima, Shindoh & Hara 1997) and
    Mehrotra's predictor-corrector (centring and second-order terms). With
    :math:`x = d - lo\\in[0, u]`, slack :math:`s = u - x`, the LMI's slack :math:`Z`
    and the multipliers :math:`X\\succeq 0`, :math:`\\lambda, z\\ge 0`, the rank-one
    data make the Schur complement an
    :math:`m\\times m` Hadamard product

    .. math::

        \\big((BZ^{-1}B^T)\\circ(BXB^T) + \\mathrm{diag}(\\lambda/x + z/s)\\big)\\,\\Delta x
        = \\text{rhs},

    built as two symmetric rank-K products (:math:`G_zG_z^T`, :math:`G_xG_x^T` with
    :math:`G_z = BL_Z^{-T}`, :math:`G_x = BL_X` from the Cholesky factors of :math:`Z`
    and :math:`X`), so an iteration costs :math:`O(m^2K + m^3)` for ``B`` of shape
    ``(m, K)`` (a general conic solver works in the :math:`K(K+1)/2`-dimensional svec space,
    :math:`O(K^6)`). The data are scaled to unit size first.
    Stops when the relative gap and the residuals are below ``tol``; the caller
    checks the LMI independently, so a loose stop costs accuracy, never validity.
    For the same reason a factorisation that fails (the Newton system, or :math:`X`
    or :math:`Z` losing definiteness to rounding), or a step to non-finite values,
    ends the iteration at the last iterate (inside the box) with status
    ``"numerical_failure"`` instead of raising.
    Mismatched shapes, or bounds that are not finite with ``lo < hi``, raise
    :class:`~sdpembed.exceptions.InputError`.
    """
    B = np.asarray(B, dtype=float)
    A0 = np.asarray(A0, dtype=float)
    lo, hi, c = (np.asarray(v, dtype=float) for v in (lo, hi, c))
    if B.ndim != 2 or A0.shape != (B.shape[1],) * 2 \
            or any(v.shape != (B.shape[0],) for v in (lo, hi, c)):
        raise InputError(f"rank_one_lmi_lp needs B of shape (m, K), A0 (K, K) and c, lo, hi "
                         f"of length m; got B {B.shape}, A0 {A0.shape}, c {c.shape}, "
                         f"lo {lo.shape}, hi {hi.shape}")
    m, K = B.shape
    u = hi - lo
    if np.any(~np.isfinite(u)) or np.any(u <= 0):
        raise InputError("rank_one_lmi_lp needs finite bounds with lo < hi")
    A0s = 0.5 * (A0 + A0.T) + (B.T * lo) @ B
    sa = max(float(np.abs(A0s).max()), float(np.max((B * B).sum(1) * u)), 1e-300)
    sc = max(float(np.abs(c).max()), 1e-300)
    A0s, Bs, cs = A0s / sa, B / np.sqrt(sa), c / sc
    pt = _LiftPoint(x=0.5 * u, s=0.5 * u, Z=np.eye(K), X=np.eye(K), lam=np.ones(m),
                    z=np.ones(m))
    n_c = K + 2 * m
    norms = (1.0 + np.linalg.norm(A0s), 1.0 + np.linalg.norm(cs), 1.0 + np.linalg.norm(u))
    status, rel_gap, nit = "max_iter", np.inf, 0
    while nit < max_iter:
        nit += 1
        try:
            step = _LiftNewton(pt, A0s, Bs, cs, u)
            mu = pt.complementarity() / n_c
            pobj, dobj = cs @ pt.x, -float(np.sum(A0s * pt.X)) - u @ pt.z
            rel_gap = abs(pobj - dobj) / (1.0 + abs(pobj) + abs(dobj))
            if rel_gap < tol and np.linalg.norm(step.Rp) < tol * norms[0] \
                    and np.linalg.norm(step.Rd) < tol * norms[1] \
                    and np.linalg.norm(step.Rs) < tol * norms[2]:
                status = "optimal"
                break
            aff, ap, ad = step.direction(0.0)
            sigma = min(1.0, max(0.0, pt.moved(aff, ap, ad).complementarity() / n_c / mu)) ** 3
            v, ap, ad = step.corrector(sigma * mu, aff)
            moved = pt.moved(v, min(1.0, 0.95 * ap), min(1.0, 0.95 * ad))
            if not np.all(np.isfinite(moved.x)):
                raise np.linalg.LinAlgError("non-finite step")
        except np.linalg.LinAlgError:
            # a factorisation failed (the Newton system, or X or Z lost definiteness
            # to rounding): keep the last iterate, which is inside the box
            status = "numerical_failure"
            break
        pt = moved
    x = pt.x
    d = lo + np.clip(x, 0.0, u)
    return LiftResult(d, float(c @ d), status, nit, float(rel_gap))


@dataclass
class _LiftPoint:
    """Iterate of :func:`rank_one_lmi_lp`: ``x, s, Z`` (the d side), ``X, lam, z`` (dual)."""

    x: np.ndarray
    s: np.ndarray
    Z: np.ndarray
    X: np.ndarray
    lam: np.ndarray
    z: np.ndarray

    def complementarity(self) -> float:
        return float(np.sum(self.X * self.Z)) + self.lam @ self.x + self.z @ self.s

    def moved(self, v: dict, ap: float, ad: float) -> _LiftPoint:
        Z, X = self.Z + ap * v["Z"], self.X + ad * v["X"]
        return _LiftPoint(x=self.x + ap * v["x"], s=self.s + ap * v["s"], Z=0.5 * (Z + Z.T),
                          X=0.5 * (X + X.T), lam=self.lam + ad * v["lam"],
                          z=self.z + ad * v["z"])


def _syrk(G: np.ndarray) -> np.ndarray:
    """The upper triangle of :math:`GG^T` (BLAS ``dsyrk``; the strict lower triangle is 0)."""
    return sla.blas.dsyrk(1.0, np.asfortranarray(G.T), trans=1, lower=0)


class _LiftNewton:
    """Residuals and the factorised Schur complement of :func:`rank_one_lmi_lp` at a point."""

    def __init__(self, pt: _LiftPoint, A0, B, c, u):
        self.pt, self.B = pt, B
        # Z = Lz Lz^T and X = Lx Lx^T: with Gz = B Lz^-T and Gx = B Lx the Schur
        # complement's factors are Gz Gz^T and Gx Gx^T, two symmetric rank-K updates
        # (one triangle each, all the Cholesky factorisation below reads)
        Lz, Lx = np.linalg.cholesky(pt.Z), np.linalg.cholesky(pt.X)
        Lzi = sla.solve_triangular(Lz, np.eye(Lz.shape[0]), lower=True, check_finite=False)
        self.Zi = Lzi.T @ Lzi
        Gz, Gx = B @ Lzi.T, B @ Lx
        self.qx = np.einsum("ij,ij->i", Gx, Gx)                 # b_e^T X b_e
        self.qz = np.einsum("ij,ij->i", Gz, Gz)                 # b_e^T Z^-1 b_e
        self.Rp = pt.Z - A0 - (B.T * pt.x) @ B
        self.Rs = pt.s + pt.x - u
        self.Rd = c - self.qx - pt.lam + pt.z
        M = _syrk(Gz)
        M *= _syrk(Gx)
        M[np.diag_indices(M.shape[0])] += pt.lam / pt.x + pt.z / pt.s
        self.cf, _ = _cholesky(M)
        # b_e^T Z^-1 Rp X b_e = Gz_e^T (Lz^-1 Rp Lx) Gx_e
        self.r = np.einsum("ij,ij->i", Gz @ (Lzi @ self.Rp @ Lx), Gx)

    def direction(self, smu: float) -> tuple[dict, float, float]:
        """HKM direction at centring target ``smu`` and the largest feasible step lengths."""
        return self.corrector(smu, None)

    def corrector(self, smu: float, aff: dict | None) -> tuple[dict, float, float]:
        """:meth:`direction` with Mehrotra's second-order terms of the affine direction
        ``aff`` (:math:`\\Delta Z\\Delta X`, :math:`\\Delta x\\Delta\\lambda`,
        :math:`\\Delta s\\Delta z`) on the right-hand side (none if ``aff`` is None)."""
        pt, B = self.pt, self.B
        x, s, lam, z = pt.x, pt.s, pt.lam, pt.z
        tl, tz = smu - lam * x, smu - z * s
        rhs = -self.Rd + (smu * self.qz - self.qx) + self.r - (z / s) * self.Rs
        if aff is not None:
            C = self.Zi @ aff["Z"] @ aff["X"]                   # Z^-1 dZ_a dX_a
            tl, tz = tl - aff["x"] * aff["lam"], tz - aff["s"] * aff["z"]
            rhs -= np.einsum("ij,ij->i", B @ C.T, B)            # b_e^T Z^-1 dZ_a dX_a b_e
        rhs += tl / x - tz / s
        dx = sla.cho_solve(self.cf, rhs, check_finite=False)
        dZ = (B.T * dx) @ B - self.Rp
        dX = smu * self.Zi - pt.X - self.Zi @ dZ @ pt.X
        if aff is not None:
            dX -= C
        ds = -self.Rs - dx
        v = {"x": dx, "Z": dZ, "X": 0.5 * (dX + dX.T), "s": ds,
             "lam": tl / x - (lam / x) * dx, "z": tz / s - (z / s) * ds}
        ap = min(1.0, _step_psd(pt.Z, dZ), _step_lp(x, dx), _step_lp(s, ds))
        ad = min(1.0, _step_psd(pt.X, v["X"]), _step_lp(lam, v["lam"]), _step_lp(z, v["z"]))
        return v, ap, ad

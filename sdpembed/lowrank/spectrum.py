"""The smallest eigenvalue of the dual slack matrix :math:`S(y,\\nu)`: dense, or Lanczos."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from threadpoolctl import threadpool_limits

from .._arpack import eigsh
from ..formulations.gram import DiagPlusLowRank, centering_basis
from .space import FactorSpace
from .sparse_slack import EigensolveFailed, sparse_bottom


@dataclass
class EigenEstimate:
    """Estimated lower bound on :math:`\\lambda_{\\min}` and the direction that attains it."""

    value: float          # Ritz value minus residual norm, combined over the deflated blocks
    vector: np.ndarray    # unit vector (space coordinates) of the smallest Ritz value
    ritz: float
    residual: float
    method: str = "lanczos"   # or "dense" (an eigendecomposition of the dense matrix)


def _gershgorin(space: FactorSpace, y, nu) -> float:
    """Upper bound on :math:`\\|S(y,\\nu)\\|_2` (row sums of the sparse part + low-rank norms)."""
    def lr_norm(M):
        return float(np.max(np.abs(M.diag)) + np.sum(np.abs(M.s) * (M.U**2).sum(0))
                     + M.sparse_row_sum)
    nu = space.duals(nu)
    deg = np.asarray(abs(space.B).T @ np.abs(y)).ravel()
    out = lr_norm(space.C) + 2.0 * float(np.max(deg, initial=0.0))
    if space.H is not None and nu[0]:
        out += nu[0] * lr_norm(space.H)
    if space.K is not None:
        out += _K_row_sum(space, space.user_part(nu))
    return out


def _K_row_sum(space: FactorSpace, z) -> float:
    r"""Largest absolute row sum of :math:`\sum_k z_kA_k` on the space (a Gershgorin bound
    on its norm; on a basis the Frobenius norm of the :math:`r\times r` matrix)."""
    if space.Q is not None:
        return float(np.linalg.norm(np.tensordot(z, space.Kq, axes=1)))
    K = space.K
    return float(np.max(np.bincount(K.i, weights=np.abs(K.value * z[K.row]),
                                    minlength=K.n), initial=0.0))


def _lambda_min(space: FactorSpace, y, nu, *, tol: float, deflate: np.ndarray | None = None,
                start: np.ndarray | None = None, ncv: int = 60) -> EigenEstimate:
    """Lower estimate of :math:`\\lambda_{\\min}(S(y,\\nu))` on :math:`\\mathbf 1^\\perp` (or on Q).

    Reduced basis: dense ``eigh`` of :math:`Q^TSQ` (exact). Full space:
    the current factor's range :math:`U` (orthonormal, ``deflate``) is split
    off, because at a solution :math:`SU\\approx 0` is a k-fold cluster at 0
    that stalls Lanczos. With :math:`\\lambda_{11} = \\lambda_{\\min}(U^TSU)`,
    :math:`\\lambda_{22}` the smallest eigenvalue on the complement of
    :math:`\\{\\mathbf 1, U\\}` (Lanczos, ``eigsh(which="SA")``, minus the residual
    norm) and :math:`\\epsilon = \\|(I-ZZ^T)SU\\|_2`, every unit :math:`x = a + b`
    has :math:`x^TSx \\ge \\lambda_{11}|a|^2 - 2\\epsilon|a||b| + \\lambda_{22}|b|^2`,
    so :math:`\\lambda_{\\min}(S)` is at least the smallest eigenvalue of
    :math:`\\begin{pmatrix}\\lambda_{11}&\\epsilon\\\\ \\epsilon&\\lambda_{22}\\end{pmatrix}`.
    Without ``deflate``, plain Lanczos on :math:`\\mathbf 1^\\perp`. Full-space values
    are estimates (Lanczos can miss the leftmost eigenvalue); the reported
    certificate verifies them (:func:`_verify_psd_shift`). ``start``: a starting
    vector for Lanczos (the previous call's eigenvector: the multipliers change
    little between calls); ``ncv`` its basis size.
    """
    nu = space.duals(nu)
    if space.Q is not None:
        w, U = sla.eigh(space.dense_S(y, nu), subset_by_index=[0, 0])
        return EigenEstimate(float(w[0]), U[:, 0], float(w[0]), 0.0, "dense")
    n = space.dim
    if n <= space.limits.eig:
        # small n: exact dense eigenvalues of S on 1-perp (Householder basis)
        Hb = centering_basis(n)
        SH = space.apply_S(Hb, y, nu)
        w, X = sla.eigh(0.5 * (Hb.T @ SH + SH.T @ Hb), subset_by_index=[0, 0])
        return EigenEstimate(float(w[0]), Hb @ X[:, 0], float(w[0]), 0.0, "dense")
    Z = np.ones((n, 1)) / np.sqrt(n)
    U = np.zeros((n, 0))
    if deflate is not None and deflate.shape[1] > 0:
        Qd, R = np.linalg.qr(np.c_[Z, deflate])
        keep = np.abs(np.diag(R)) > 1e-10 * max(np.abs(np.diag(R)).max(), 1e-300)
        keep[0] = True
        Z = Qd[:, keep]
        U = Z[:, 1:]
    c = _gershgorin(space, y, nu) + 1.0
    ritz, res, x = _lanczos_smallest(space, y, nu, Z, c, tol, start, ncv)
    lam22 = ritz - res
    if U.shape[1] == 0:
        return EigenEstimate(lam22, x, ritz, res)
    SU = space.apply_S(U, y, nu)
    SU = SU - SU.mean(axis=0)
    A11 = U.T @ SU
    lam11 = float(sla.eigvalsh(0.5 * (A11 + A11.T))[0])
    eps = float(np.linalg.norm(SU - Z @ (Z.T @ SU), 2))
    mid, half = 0.5 * (lam11 + lam22), 0.5 * (lam11 - lam22)
    return EigenEstimate(float(mid - np.hypot(half, eps)), x, ritz, res)


def _lanczos_smallest(space: FactorSpace, y, nu, Z: np.ndarray, c: float, tol: float,
                      start: np.ndarray | None = None, ncv: int = 60):
    """``(ritz, residual, vector)``: smallest eigenpair of :math:`S` on the complement of
    ``Z`` (orthonormal columns) by ``eigsh(which="SA")``; ``c`` a Gershgorin bound;
    ``start`` a starting vector (a random one if ``None`` or inside ``Z``); ``ncv`` the
    Lanczos basis size."""
    n = space.dim

    def proj(X):
        return X - Z @ (Z.T @ X)

    def mv(X):
        # P S P + c (I - P) + c I: the spectrum of interest moved to about c, so
        # ARPACK's relative tolerance acts as an absolute one (tol * c)
        X = X.reshape(n, -1)
        P = proj(X)
        return proj(space.apply_S(P, y, nu)) + c * (X - P) + c * X

    op = spla.LinearOperator((n, n), matvec=mv, matmat=mv, dtype=float)
    v0 = proj(np.random.default_rng(0).standard_normal((n, 1))).ravel()
    if start is not None:
        v1 = proj(np.reshape(start, (n, 1))).ravel()
        if np.linalg.norm(v1) > 1e-3 * np.linalg.norm(start):
            # a trace of the random vector keeps every eigendirection in the Krylov space
            v0 = v1 / np.linalg.norm(v1) + 1e-3 * v0 / np.linalg.norm(v0)
    w, X = eigsh(op, k=1, which="SA", tol=tol, v0=v0, ncv=min(n - 1, ncv),
                 maxiter=max(1000, 20 * n))
    x = X[:, 0]
    res = float(np.linalg.norm(mv(x).ravel() - w[0] * x))
    return float(w[0]) - c, res, x


def _dense_shifted(space: FactorSpace, y, nu, c: float) -> tuple[np.ndarray, dict]:
    """Dense :math:`M = PSP + (c/n)\\mathbf 1\\mathbf 1^T` (no shift), O(n^2 r), one n x n array.

    With :math:`S = \\mathrm{diag}(d) + U\\mathrm{diag}(s)U^T + L_y`
    (:math:`L_y = B^T\\mathrm{diag}(y)B`, :math:`L_y\\mathbf 1 = 0`),
    :math:`PSP = \\bar U\\mathrm{diag}(s)\\bar U^T + \\mathrm{diag}(d) - (d\\mathbf 1^T +
    \\mathbf 1d^T)/n + (\\mathbf 1^Td/n^2)\\mathbf 1\\mathbf 1^T + L_y`, :math:`\\bar U = U -
    \\mathbf 1 m^T` the column-centred U: P is never formed. Also returns the
    magnitudes the rounding-error bound of :func:`_verify_psd_shift` needs.
    """
    nu = space.duals(nu)
    C, H = space.C, space.H
    nu_h = nu[0] if H is not None else 0.0
    parts = [C] + ([H] if nu_h and H is not None else [])
    for M_ in parts:
        if not isinstance(M_, DiagPlusLowRank):
            raise TypeError(f"dense verification needs DiagPlusLowRank terms, got {type(M_)}")
    d = C.diag + (nu_h * H.diag if len(parts) > 1 else 0.0)
    U = np.c_[C.U, H.U] if len(parts) > 1 else C.U
    s = np.r_[C.s, nu_h * H.s] if len(parts) > 1 else C.s
    n = space.dim
    Ub = U - U.mean(axis=0)                      # centred columns (any centring is exact on 1-perp)
    M = np.empty((n, n))
    if Ub.shape[1]:
        np.matmul(Ub * s, Ub.T, out=M)
    else:
        M.fill(0.0)
    M -= (d / n)[:, None]
    M -= (d / n)[None, :]
    M += float(d.sum()) / n**2 + c / n
    M[np.diag_indices(n)] += d
    L = (space.ET @ sp.diags(y) @ space.E).tocoo()   # coo of a csr product: no duplicates
    M[L.row, L.col] += L.data
    deg_abs = np.asarray(abs(space.B).T @ np.abs(y)).ravel()
    edge_deg = np.bincount(space.gp.edges.ravel(), minlength=n)
    mags = {"lowrank": float(np.sum(np.abs(s) * (Ub * Ub).sum(axis=0))),
            "diag": float(np.max(np.abs(d), initial=0.0)),
            "laplacian": 2.0 * float(np.max(deg_abs, initial=0.0)),
            "terms": int(U.shape[1] + np.max(edge_deg, initial=0) + 16)}
    if C.sparse is not None:
        _add_centred_sparse(M, C.sparse, mags)
    if space.K is not None:     # K need not annihilate 1
        _add_centred_sparse(M, space.K.operator(space.user_part(nu)), mags)
    return M, mags


def _add_centred_sparse(M: np.ndarray, S: sp.spmatrix, mags: dict) -> None:
    r"""``M += P S P`` for a symmetric sparse :math:`S` (the added rows' :math:`K`, the
    objective's sparse part):
    :math:`PSP = S - (k\mathbf 1^T + \mathbf 1k^T)/n + (\mathbf 1^Tk/n^2)\mathbf 1\mathbf 1^T`,
    :math:`k = S\mathbf 1`; its entries add at most the nonzeros of a row of :math:`S` and
    three terms, whose magnitudes join ``mags``."""
    n = M.shape[0]
    Sc = sp.coo_matrix(S)
    Sc.sum_duplicates()
    kvec = np.asarray(Sc.sum(axis=1)).ravel()
    M -= (kvec / n)[:, None]
    M -= (kvec / n)[None, :]
    M += float(kvec.sum()) / n**2
    M[Sc.row, Sc.col] += Sc.data
    abs_rows = np.bincount(Sc.row, weights=np.abs(Sc.data), minlength=n)
    mags["laplacian"] += float(np.max(abs_rows, initial=0.0)) \
        + 2.0 * float(np.linalg.norm(kvec)) / np.sqrt(n) + abs(float(kvec.sum())) / n
    mags["terms"] += int(np.max(np.bincount(Sc.row, minlength=n), initial=0)) + 3


#: up to this dimension :func:`_dense_bottom` runs on one BLAS thread (docs/tuning.md,
#: "LOWRANK robustness, dense graphs")
_DENSE_BOTTOM_ONE_THREAD = 1000


def _dense_bottom(space: FactorSpace, y, nu, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest eigenpairs :math:`(\\Lambda, X)` of :math:`S(y,\\nu)` on
    :math:`\\mathbf 1^\\perp` (full space), by ``eigh`` of :func:`_dense_shifted`'s matrix
    with the constant direction moved above :math:`\\|S\\|` (:math:`c = 2g + 1`, g the
    Gershgorin bound): 8n² bytes, about 4n³/3 flops, on all usable cores above
    ``_DENSE_BOTTOM_ONE_THREAD`` points, on one below (a fraction of a second; threads that
    wait for busy cores cost many times that); the cost hardly depends on ``k``."""
    c = 2.0 * _gershgorin(space, y, nu) + 1.0
    M, _ = _dense_shifted(space, y, nu, c)
    threads = 1 if space.dim <= _DENSE_BOTTOM_ONE_THREAD else _verify_threads()
    with threadpool_limits(limits=threads, user_api="blas"):
        lam, X = sla.eigh(M, subset_by_index=[0, k - 1], overwrite_a=True,
                          check_finite=False)
    return lam, X


#: the shift below a known lower bound on lambda_min, relative to it (:func:`_bottom`)
_LOWER_MARGIN = 0.1

def _bottom(space: FactorSpace, y, nu, k: int, *, guess: float | None = None,
            lower: float | None = None,
            raise_shift: bool = True, late=None,
            times=None, enough=None) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest eigenpairs of :math:`S(y,\\nu)` on :math:`\\mathbf 1^\\perp` (full
    space): dense (:func:`_dense_bottom`) for n <= ``limits.eig``, else by shift-invert
    Lanczos on a sparse factorisation
    (:func:`~sdpembed.lowrank.sparse_slack.sparse_bottom`), shifted below ``guess`` (an
    estimate of :math:`\\lambda_{\\min}`, e.g. the last one; without one, a coarse Lanczos
    estimate, so that the first factorisation lies below the spectrum instead of a
    sequence of shifts lowered tenfold) or a small fraction of a bound on
    :math:`\\|S\\|` below zero; given ``lower``, a known lower bound on
    :math:`\\lambda_{\\min}` (e.g. that of an :math:`S` which has since only grown by a PSD
    term, Weyl's inequality), just below it instead (a shift nearer the bottom separates
    the bottom eigenvalues of the inverse better); a block (``k > 1``) then raises its
    shift towards the spectrum while the pivots stay positive, not above ``-floor``
    (``sparse_bottom(raise_to=...)``; ``raise_shift=False`` keeps the first shift).
    Values are Rayleigh quotients (unverified above ``limits.eig``). ``late``, ``times``:
    the time limit's test and the factorisations' seconds, as in ``sparse_bottom``
    (which raises ``CertificateLate``). A failed ARPACK run (the coarse estimate's or
    shift-invert's) raises ``EigensolveFailed``; both are ``EigenStop``. ``enough``: as
    in ``sparse_bottom`` (the smallest pair alone where it says so; dense: ignored)."""
    if space.dim <= space.limits.eig:
        return _dense_bottom(space, y, nu, k)
    scale = _gershgorin(space, y, nu)
    floor = 1e-9 * scale
    if lower is not None and np.isfinite(lower):
        sigma = min(lower, 0.0) - max(_LOWER_MARGIN * abs(lower), floor)
    elif guess is None or not np.isfinite(guess):
        # Ritz value minus residual: below lambda_min unless Lanczos missed it
        try:
            low = min(_lambda_min(space, y, nu, tol=1e-3).value, 0.0)
        except spla.ArpackError as exc:
            raise EigensolveFailed(f"Lanczos failed ({exc})") from exc
        sigma = low - max(0.1 * abs(low), floor)
    else:
        sigma = min(guess, 0.0) - max(abs(guess), floor)
    lam, X, _ = sparse_bottom(space, y, nu, k, sigma=sigma,
                              raise_to=-floor if k > 1 and raise_shift else None,
                              late=late, times=times, enough=enough)
    return lam, X


def _verify_threads() -> int:
    """BLAS threads for the final dense check (all usable cores, at most 8)."""
    import os

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))

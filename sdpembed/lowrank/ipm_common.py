"""Small dense SDP algebra shared by the interior-point methods (reduced IPM, lift LP).

svec coordinates of symmetric matrices and the step-length and Cholesky rules of a
primal-dual iteration; and the least-squares and least-norm solves the restorations share.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

__all__ = ["svec", "smat", "svec_outer_rows", "factor_from_gram", "least_squares",
           "least_norm"]


_SQRT2 = np.sqrt(2.0)


def _tri(r: int):
    i, j = np.triu_indices(r)
    scale = np.where(i == j, 1.0, _SQRT2)
    return i, j, scale


def svec(X: np.ndarray) -> np.ndarray:
    """:math:`\\mathrm{svec}(X)`: upper triangle, off-diagonal entries times :math:`\\sqrt2`.

    An isometry: :math:`\\mathrm{svec}(X)^T\\mathrm{svec}(Y) = \\langle X, Y\\rangle`.
    """
    i, j, s = _tri(X.shape[0])
    return X[i, j] * s


def smat(v: np.ndarray, r: int) -> np.ndarray:
    """Inverse of :func:`svec`."""
    i, j, s = _tri(r)
    X = np.zeros((r, r))
    X[i, j] = v / s
    X[j, i] = v / s
    return X


def svec_outer_rows(E: np.ndarray) -> np.ndarray:
    """The :math:`m\\times p` matrix with rows :math:`\\mathrm{svec}(q_eq_e^T)`, ``q_e = E[e]``.

    Column-major, built one row of the upper triangle (a block of contiguous
    columns) at a time.
    """
    m, r = E.shape
    out = np.empty((m, r * (r + 1) // 2), order="F")
    pos = 0
    for k in range(r):
        block = out[:, pos:pos + r - k]
        np.multiply(E[:, k:k + 1], E[:, k:], out=block)
        block[:, 1:] *= _SQRT2
        pos += r - k
    return out


def _skron(P: np.ndarray) -> np.ndarray:
    """Matrix of :math:`X\\mapsto PXP` (P symmetric) in svec coordinates (:math:`p\\times p`).

    Entry :math:`((i,j),(k,l))` is :math:`s_{ij}\\,t_{kl}\\,(P_{ik}P_{jl} + P_{il}P_{jk})`
    with :math:`s = 1, \\sqrt2` and :math:`t = 1/2, 1/\\sqrt2` on and off the diagonal.
    """
    i, j, s = _tri(P.shape[0])
    t = np.where(i == j, 0.5, 1.0 / _SQRT2)
    M = P[np.ix_(i, i)] * P[np.ix_(j, j)] + P[np.ix_(i, j)] * P[np.ix_(j, i)]
    return (s[:, None] * M) * t[None, :]


def factor_from_gram(Y: np.ndarray, rel_tol: float = 1e-12) -> np.ndarray:
    """:math:`W` with :math:`WW^T \\approx Y`: eigenvectors times square roots, negligible
    eigenvalues (below ``rel_tol`` times the largest) dropped."""
    lam, U = np.linalg.eigh(0.5 * (Y + Y.T))
    keep = lam > rel_tol * max(lam[-1], 1e-300)
    if not np.any(keep):
        keep[-1] = True
    return U[:, keep] * np.sqrt(np.maximum(lam[keep], 0.0))


def _step_psd(X, dX) -> float:
    """Largest :math:`\\alpha\\le 1` (``inf``-safe) with :math:`X + \\alpha\\,dX\\succeq 0`."""
    L = np.linalg.cholesky(X)
    M = sla.solve_triangular(L, sla.solve_triangular(L, dX, lower=True).T, lower=True)
    lmin = float(np.linalg.eigvalsh(0.5 * (M + M.T))[0])
    return np.inf if lmin >= 0 else -1.0 / lmin


def _step_lp(x, dx) -> float:
    neg = dx < 0
    return float(np.min(-x[neg] / dx[neg])) if np.any(neg) else np.inf


def _cholesky(M):
    """``(cho_factor, shift)``: Cholesky of M (its upper triangle), retried with growing
    diagonal shifts on failure."""
    shift = 0.0
    scale = float(np.max(np.abs(np.diag(M)))) or 1.0
    for _ in range(8):
        try:
            A = M if shift == 0.0 else M + shift * np.eye(M.shape[0])
            return sla.cho_factor(A, lower=False, check_finite=False), shift
        except np.linalg.LinAlgError:
            shift = 1e-14 * scale if shift == 0.0 else 100.0 * shift
    raise np.linalg.LinAlgError("normal-equations matrix is not positive definite")


def least_squares(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The least-norm least-squares solution of :math:`Ax \\approx b` (numpy's default
    cutoff). LAPACK's divide-and-conquer SVD (``gelsd``, numpy's driver) can fail to
    converge on finite, nearly rank-deficient matrices, such as the Gauss-Newton Jacobians
    of a restoration onto a face without a strictly feasible point; the QR-iteration SVD
    (``gelss``) solves the same problem with the same cutoff."""
    try:
        return np.linalg.lstsq(A, b, rcond=None)[0]
    except np.linalg.LinAlgError:
        cond = np.finfo(float).eps * max(A.shape)
        return sla.lstsq(A, b, cond=cond, lapack_driver="gelss")[0]


#: :func:`least_norm` solves systems of at most this many rows (a dense m x m Cholesky
#: factorisation, m³/3 flops; the dual barrier's edge limit), after a first LSMR run of at
#: most ``_LSMR_FIRST`` iterations (well-conditioned systems converge in tens)
_NORMAL_ROWS = 2000
_LSMR_FIRST = 200


def least_norm(J: sp.spmatrix, b: np.ndarray) -> np.ndarray | None:
    r"""The least-norm solution of a consistent system :math:`Jx = b` (``J`` sparse, at most
    ``_NORMAL_ROWS`` rows): LSMR (``atol = btol = 1e-6``) where it converges within
    ``_LSMR_FIRST`` iterations, else :math:`x = J^T(JJ^T + \delta I)^{-1}b` by one dense
    Cholesky factorisation of :math:`JJ^T` (:math:`\delta` is 1e-12 of its largest diagonal
    entry: rows that are dependent). ``None`` above ``_NORMAL_ROWS`` rows or where the
    factorisation fails: the caller's longer LSMR runs instead. On ill-conditioned
    Jacobians LSMR takes thousands of products, ten times the factorisation's cost where
    measured (docs/tuning.md, "restoration steps by the normal equations")."""
    if J.shape[0] > _NORMAL_ROWS:
        return None
    x, istop = spla.lsmr(J, b, atol=1e-6, btol=1e-6, maxiter=_LSMR_FIRST)[:2]
    if istop in (1, 2, 4, 5):       # converged (not: the iteration cap, conditioning)
        return x
    M = (J @ J.T).toarray()
    M[np.diag_indices_from(M)] += 1e-12 * float(np.max(np.diag(M), initial=0.0))
    try:
        cf = sla.cho_factor(M, check_finite=False, overwrite_a=True)
    except sla.LinAlgError:
        return None
    return np.asarray(J.T @ sla.cho_solve(cf, b, check_finite=False)).ravel()

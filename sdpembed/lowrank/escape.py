"""Rank growth: new factor columns along escape directions of the dual slack."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.sparse.linalg import LinearOperator, lsqr

from .alm import _ALM, _descent_length, _escape
from .space import FactorSpace

if TYPE_CHECKING:
    from .certificate import Certificate, CertificateCache

#: eigenpairs examined for more escape directions, and the share of the most negative
#: eigenvalue an eigenvalue must reach to give one (:func:`escape_directions`)
_ESCAPE_BLOCK = 16
_ESCAPE_RATIO = 0.1

#: the block of escape directions is added jointly (:func:`_block`) where its first
#: column is at least this share of the factor's root-mean-square column; below, one
#: column per direction, each at its own line search's size (:func:`_escape`)
_BLOCK_MIN = 1e-2
#: LSQR iterations for the existing columns' correction (:func:`_block`)
_LSQR_ITER = 100


def escape_directions(space: FactorSpace, cache: CertificateCache, certificate: Certificate,
                      room: int) -> list[np.ndarray]:
    r"""Eigenvectors of :math:`S` to grow the factor along: the certificate's, and with it
    every other eigenvector in the bottom ``_ESCAPE_BLOCK`` whose eigenvalue is within a
    factor ``_ESCAPE_RATIO`` of the most negative, at most ``room`` more.

    An optimum of higher rank than the factor (denser graphs give DVU optima of higher
    rank) shows as several negative eigenvalues of :math:`S` at once; one column per
    outer iteration would take as many iterations, each perturbing a nearly converged
    point. On a reduced basis (:math:`r\times r` problems) the certificate's vector
    alone."""
    vectors = [certificate.eig.vector]
    if room <= 0 or certificate.y is None or space.Q is not None:
        return vectors
    k = min(_ESCAPE_BLOCK, space.dim - 2)
    if k < 2:
        return vectors
    pairs = _bottom_pairs(space, cache, certificate, k)
    if pairs is None:        # a factorisation would end past the time limit
        return vectors
    lam, X = pairs
    more = [X[:, i] for i in range(1, k)
            if lam[i] < _ESCAPE_RATIO * certificate.lambda_min][:room]
    return vectors + more


def _bottom_pairs(space: FactorSpace, cache: CertificateCache, certificate: Certificate,
                  k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``k`` bottom eigenpairs of :math:`S` at the certificate's multipliers: those
    its own shift-invert block computed (``cache.eigenpairs``, interval problems above
    ``limits.eig``) when it kept them, else :func:`~sdpembed.lowrank.spectrum._bottom` under
    the solve's time limit (:meth:`~.certificate.CertificateCache.bottom`; ``None`` where a
    factorisation or the solves would end past it)."""
    nu = space.duals(certificate.nu)
    for y_c, nu_c, lam, X in cache.eigenpairs:
        if lam.size >= k and np.array_equal(y_c, certificate.y) and np.array_equal(nu_c, nu):
            return lam[:k], X[:, :k]
    return cache.bottom(space, certificate.y, certificate.nu, k, guess=certificate.lambda_min)


def grow(alm: _ALM, W: np.ndarray, vectors: list[np.ndarray], y: np.ndarray,
         nu: np.ndarray, sigma: float, sigma_h: float,
         rho: float | None = None) -> np.ndarray:
    """``W`` with one new column along each of ``vectors``: jointly with a correction of the
    existing columns (:func:`_block`; full space, no SNR or added rows) where that step is
    large enough to take effect, else one exact line search per column (:func:`_escape`)."""
    sp_ = alm.space
    out = None
    if vectors and sp_.Q is None and sp_.H is None and sp_.K is None:
        out = _block(alm, W, np.column_stack(vectors), y, sigma)
    if out is not None:
        return out
    for vec in vectors:
        W = _escape(alm, W, vec, y, nu, sigma, sigma_h, rho)
    return W


def _block(alm: _ALM, W: np.ndarray, V: np.ndarray, y, sigma) -> np.ndarray | None:
    r"""``[W + t\Delta,\ \sqrt t\,VC]`` at the first minimiser over ``t > 0`` of the
    augmented Lagrangian along that curve, or ``None`` where that minimiser puts the
    first new column below ``_BLOCK_MIN`` of the root-mean-square column (or no
    direction has :math:`\lambda_i < 0`).

    :math:`V` holds the directions (orthonormalised) with
    :math:`\lambda_i = v_i^TS(g)v_i < 0` at the envelope's gradient :math:`g` at ``W``,
    :math:`C = \mathrm{diag}(\sqrt{\lambda_i/\lambda_{\min}})`. Added alone, the block
    lengthens every edge by :math:`b_e = \|(VC)_i - (VC)_j\|^2 t`, which the penalty
    prices at :math:`\sigma` against a decrease of only :math:`|\lambda|t`: the exact
    line search then stops at a column of about a thousandth of the others, which the
    subproblem's iterations do not grow. :math:`\Delta` is the least-squares solution
    (LSQR, rows weighted by :math:`\sqrt{\psi''_e}`) of :math:`2z_e^T(\Delta_i -
    \Delta_j) = -b_e`: the existing columns take the lengthening back to first order,
    the distances change by :math:`t^2\|\Delta_i - \Delta_j\|^2` plus LSQR's residual,
    and the line search is left with the step the model supports. Along the curve the
    distances are quadratic in ``t``, the objective's quadratic part too; the minimiser
    is found by bisection on the derivative, as in :func:`_escape`."""
    sp_, pen = alm.space, alm.pen
    V, _ = np.linalg.qr(sp_.project(V))
    _, D, _ = alm.objective_parts(W)
    _, g = pen.envelope(D, y, sigma, alm.kind)
    lam = np.einsum("ij,ij->j", V, sp_.apply_S(V, g, None))
    if not np.any(lam < 0):
        return None
    rest = V[:, lam >= 0]
    V, lam = V[:, lam < 0], lam[lam < 0]
    B = V * np.sqrt(lam / lam.min())
    ZB = sp_.diffs(B)
    b = np.einsum("ij,ij->i", ZB, ZB)
    Z = sp_.diffs(W)
    n, r = W.shape
    wt = np.sqrt(pen.second_derivative(D, y, sigma, alm.kind))

    def mv(x):
        return wt * 2.0 * np.einsum("ij,ij->i", Z, sp_.diffs(x.reshape(n, r)))

    def rmv(u):
        return sp_.project(2.0 * (sp_.ET @ ((wt * u)[:, None] * Z))).ravel()

    A = LinearOperator((D.size, n * r), matvec=mv, rmatvec=rmv)
    Delta = sp_.project(lsqr(A, -wt * b, iter_lim=_LSQR_ITER, atol=1e-6, btol=1e-6)[0]
                        .reshape(n, r))
    ZD = sp_.diffs(Delta)
    ab = 2.0 * np.einsum("ij,ij->i", Z, ZD) + b
    c = np.einsum("ij,ij->i", ZD, ZD)
    q1 = 2.0 * float(np.sum(Delta * sp_.apply_C(W))) + float(np.sum(B * sp_.apply_C(B)))
    q2 = 2.0 * float(np.sum(Delta * sp_.apply_C(Delta)))

    def slope(t):
        _, gt = pen.envelope(D + t * ab + t * t * c, y, sigma, alm.kind)
        return float(gt @ (ab + 2.0 * t * c)) + q1 + q2 * t

    scale = max(np.sum(W * W), 1e-12) / max(r, 1)
    t_lo = _descent_length(slope, scale)
    if t_lo < _BLOCK_MIN ** 2 * scale:
        return None
    W = np.c_[W + t_lo * Delta, np.sqrt(t_lo) * B]
    for i in range(rest.shape[1]):   # directions without descent at g: the old way
        W = _escape(alm, W, rest[:, i], y, None, sigma, None)
    return W

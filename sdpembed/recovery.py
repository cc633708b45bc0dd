"""From a Gram matrix to coordinates: truncated eigendecomposition and spectrum."""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from ._checks import as_int
from ._typing import ArrayLike
from .exceptions import InputError

__all__ = ["embedding_from_gram", "embedding_from_factor", "spectrum", "spectrum_from_factor",
           "fix_signs"]


def _check_gram(G) -> np.ndarray:
    G = np.asarray(G, dtype=float)
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise InputError(f"a Gram matrix must be square; got shape {G.shape}")
    if not np.all(np.isfinite(G)):
        raise InputError("the Gram matrix contains NaN or infinite values (was the solve optimal?)")
    return 0.5 * (G + G.T)


def fix_signs(vectors: np.ndarray) -> np.ndarray:
    """Flip each column so that its entry of largest magnitude is positive (deterministic)."""
    if vectors.size == 0:
        return vectors
    idx = np.argmax(np.abs(vectors), axis=0)
    signs = np.sign(vectors[idx, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return vectors * signs


def embedding_from_gram(G: ArrayLike, n_components: int) -> np.ndarray:
    """Coordinates :math:`Z_d = U_d \\Lambda_d^{1/2}` from the top ``n_components`` eigenpairs.

    For :math:`G = U\\Lambda U^T` the rows of :math:`Z = U\\Lambda^{1/2}` are
    points whose Gram matrix is ``G``; keeping the top ``d`` eigenpairs is
    kernel PCA on the learned kernel, the best rank-d approximation in
    Frobenius norm. Small negative eigenvalues (solver round-off) are
    clipped to 0. Signs are fixed by :func:`fix_signs`.
    """
    G = _check_gram(G)
    n = G.shape[0]
    d = as_int(n_components, "n_components")
    if not 1 <= d <= n:
        raise InputError(f"n_components must be in [1, {n}]; got {n_components}")
    w, U = sla.eigh(G, subset_by_index=[n - d, n - 1])
    w, U = w[::-1], U[:, ::-1]
    return fix_signs(U) * np.sqrt(np.clip(w, 0.0, None))


def spectrum(G: ArrayLike) -> np.ndarray:
    """Eigenvalue fractions :math:`\\lambda_i / \\sum_j \\max(\\lambda_j, 0)`, descending.

    Shows how low-rank a solution is: the cumulative sum of the first d
    entries is the fraction of variance kept by a d-dimensional embedding.
    """
    w = sla.eigvalsh(_check_gram(G))[::-1]
    total = np.clip(w, 0.0, None).sum()
    return w / total if total > 0 else w


def embedding_from_factor(F: np.ndarray, n_components: int) -> np.ndarray:
    """Top-``n_components`` kernel-PCA coordinates of :math:`G = FF^T`, from the factor.

    With :math:`F = U\\Sigma W^T` (thin SVD), :math:`G = U\\Sigma^2U^T`, so the
    coordinates are :math:`U_d\\Sigma_d`, the same as
    :func:`sdpembed.recovery.embedding_from_gram` on ``F @ F.T`` (columns past
    the rank of ``F`` are zero). Signs fixed as there.
    """
    F = np.asarray(F, dtype=float)
    n = F.shape[0]
    d = as_int(n_components, "n_components")
    if not 1 <= d <= n:
        raise InputError(f"n_components must be in [1, {n}]; got {n_components}")
    U, s, _ = np.linalg.svd(F, full_matrices=False)
    Z = np.zeros((n, d))
    q = min(d, s.shape[0])
    Z[:, :q] = fix_signs(U[:, :q]) * s[:q]
    return Z


def spectrum_from_factor(F: np.ndarray) -> np.ndarray:
    """:func:`sdpembed.recovery.spectrum` of :math:`FF^T` (n values, descending) from the factor."""
    F = np.asarray(F, dtype=float)
    s2 = np.linalg.svd(F, compute_uv=False) ** 2
    out = np.zeros(F.shape[0])
    out[: s2.shape[0]] = s2
    total = out.sum()
    return out / total if total > 0 else out

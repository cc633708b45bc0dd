"""Operators of Discriminant Neighborhood Embedding (Zhang, Xue, Lu & Guo, ICML 2006).

Notation: the paper stores samples as columns, :math:`X = [x_1, \\dots, x_N]
\\in \\mathbb R^{D\\times N}`; here, as in scikit-learn, ``X`` has one sample per
row, so the paper's :math:`X(S-F)X^T` is ``X.T @ (S - F) @ X``.

* **Discriminant adjacency** (eq. 1). With :math:`\\mathrm{Neig}^I(i)` the
  ``k`` nearest neighbours of :math:`x_i` in its own class and
  :math:`\\mathrm{Neig}^E(i)` its ``k`` nearest neighbours in the other
  classes,

  .. math::

     F_{ij} = \\begin{cases}
        +1 & x_i \\in \\mathrm{Neig}^I(j) \\ \\text{or}\\ x_j \\in \\mathrm{Neig}^I(i)\\\\
        -1 & x_i \\in \\mathrm{Neig}^E(j) \\ \\text{or}\\ x_j \\in \\mathrm{Neig}^E(i)\\\\
        0  & \\text{otherwise.}
     \\end{cases}

  The two cases never collide (same class versus different class), so
  :math:`F` is symmetric by construction.

* **Criterion** (eqs. 4-6). Intra-class compactness minus extra-class
  separability,

  .. math::

     \\Phi(P) = \\sum_{ij} \\lVert P^T x_i - P^T x_j \\rVert^2 F_{ij}
              = 2\\,\\mathrm{tr}\\big(P^T X (S - F) X^T P\\big),
     \\qquad S = \\mathrm{diag}(F\\mathbf 1).

  :math:`S - F` is a *signed* Laplacian: its rows sum to zero (so the
  criterion is translation invariant and needs no centring) but it is
  indefinite, and so is :math:`X(S-F)X^T`.

* **Solution** (eqs. 8-10). Under :math:`P^TP = I` the minimiser is spanned
  by the eigenvectors of the smallest eigenvalues (Ky Fan); every negative
  eigenvalue lowers the criterion, so the paper keeps exactly those. By
  eq. (13) :math:`\\lambda_i = \\tfrac12\\Phi(P_i)`: intra-class minus
  extra-class spread along :math:`P_i`.

* **Energy rule** (eq. 14). Among the :math:`d` negative eigenvalues
  :math:`\\lambda_1 \\le \\dots \\le \\lambda_d < 0`, keep the smallest
  :math:`t` with :math:`\\sum_{i\\le t} |\\lambda_i| \\ge \\theta
  \\sum_{i\\le d} |\\lambda_i|` (the paper uses :math:`\\theta = 0.96`).
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors

from .._checks import as_int
from .._typing import ArrayLike, MatrixLike
from ..exceptions import InputError, LabelError

__all__ = ["discriminant_adjacency", "dne_matrix", "energy_dimension"]

logger = logging.getLogger(__name__)


def _knn_pairs(X_query, X_ref, idx_query, idx_ref, k, *, same_set: bool) -> np.ndarray:
    """Directed pairs (i, j): ``j`` among the ``k`` nearest ``X_ref`` points of ``i``.

    ``same_set=True`` means the query points are the reference points, and each
    point is excluded from its own neighbour list (scikit-learn's
    ``kneighbors()`` without arguments does this by index, so duplicated points
    still get each other as neighbours).
    """
    nn = NearestNeighbors(n_neighbors=k).fit(X_ref)
    ind = nn.kneighbors(None if same_set else X_query, return_distance=False)
    return np.c_[np.repeat(idx_query, k), idx_ref[ind.ravel()]]


def _symmetric_indicator(pairs: np.ndarray, n: int) -> sp.csr_matrix:
    """0/1 matrix with a one at (i, j) and (j, i) for every pair (the "or" of eq. 1)."""
    i, j = pairs.T
    M = sp.coo_matrix((np.ones(2 * len(i)), (np.r_[i, j], np.r_[j, i])), shape=(n, n)).tocsr()
    M.data[:] = 1.0  # duplicates were summed; the relation is boolean
    return M


def discriminant_adjacency(X: ArrayLike, y: ArrayLike, n_neighbors: int = 1) -> sp.csr_matrix:
    """Signed discriminant adjacency :math:`F` of DNE (Zhang et al. 2006, eq. 1).

    Parameters
    ----------
    X : ndarray, shape (n, p)
        Samples as rows.
    y : ndarray of int, shape (n,)
        Class indices ``0 .. c-1``; ``-1`` marks unlabeled points, which get no
        edges (their rows and columns of :math:`F` are zero).
    n_neighbors : int
        ``k``, the number of intra-class and of extra-class neighbours of
        each labeled point.

    Returns
    -------
    F : scipy.sparse.csr_matrix, shape (n, n)
        Symmetric, entries in {-1, 0, +1}, zero diagonal.

    Raises
    ------
    InputError
        ``n_neighbors`` below 1, or not smaller than the smallest labeled
        class, or larger than the number of points outside some class.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    n = X.shape[0]
    k = as_int(n_neighbors, "n_neighbors")
    if k < 1:
        raise InputError(f"n_neighbors must be >= 1; got {n_neighbors}")
    labeled = np.flatnonzero(y >= 0)
    classes, counts = np.unique(y[labeled], return_counts=True)
    if classes.size < 2:
        raise LabelError("DNE needs at least two labeled classes to form extra-class neighbours")
    if k >= counts.min():
        raise InputError(
            f"n_neighbors={k} needs at least {k + 1} labeled samples per class, but the "
            f"smallest class has {counts.min()}; lower n_neighbors"
        )
    if k > labeled.size - counts.max():
        raise InputError(
            f"n_neighbors={k} exceeds the {labeled.size - counts.max()} labeled samples outside "
            "the largest class; lower n_neighbors"
        )
    intra, extra = [], []
    for c in classes:  # a loop over classes, not over points
        own = labeled[y[labeled] == c]
        other = labeled[y[labeled] != c]
        intra.append(_knn_pairs(X[own], X[own], own, own, k, same_set=True))
        extra.append(_knn_pairs(X[own], X[other], own, other, k, same_set=False))
    F = _symmetric_indicator(np.vstack(intra), n) - _symmetric_indicator(np.vstack(extra), n)
    F.eliminate_zeros()
    logger.debug("DNE adjacency: %d labeled points, %d intra and %d extra edges", labeled.size,
                 (F.data > 0).sum() // 2, (F.data < 0).sum() // 2)
    return F.tocsr()


def dne_matrix(X: ArrayLike, F: MatrixLike) -> np.ndarray:
    """The DNE criterion matrix :math:`X(S-F)X^T` (eq. 6), shape (p, p).

    With samples as rows this is ``X.T @ (S - F) @ X`` where
    :math:`S = \\mathrm{diag}(F\\mathbf 1)`; the sparse signed Laplacian is
    applied without densifying. The result is symmetric and, in general,
    indefinite; :math:`\\Phi(P) = 2\\,\\mathrm{tr}(P^T X(S-F)X^T P)`.
    """
    X = np.asarray(X, dtype=float)
    F = sp.csr_matrix(F)
    if F.shape != (X.shape[0], X.shape[0]):
        raise InputError(f"F must have shape ({X.shape[0]}, {X.shape[0]}); got {F.shape}")
    signed_laplacian = sp.diags(np.asarray(F.sum(axis=1)).ravel()) - F
    A = X.T @ (signed_laplacian @ X)
    return 0.5 * (A + A.T)


def energy_dimension(eigenvalues: ArrayLike, energy: float = 0.96) -> int:
    """Number of leading negative eigenvalues that hold ``energy`` of their mass (eq. 14).

    With the negative eigenvalues sorted as :math:`\\lambda_1 \\le \\dots \\le
    \\lambda_d < 0`, return the smallest :math:`t` such that
    :math:`\\sum_{i=1}^t |\\lambda_i| \\ge \\theta \\sum_{i=1}^d |\\lambda_i|`.
    Returns 0 when no eigenvalue is negative.

    Parameters
    ----------
    eigenvalues : array-like
        Eigenvalues of :math:`X(S-F)X^T`, any order.
    energy : float in (0, 1]
        :math:`\\theta`.
    """
    energy = float(energy)
    if not 0.0 < energy <= 1.0:
        raise InputError(f"energy must lie in (0, 1]; got {energy}")
    lam = np.sort(np.asarray(eigenvalues, dtype=float))
    neg = -lam[lam < 0]
    if neg.size == 0:
        return 0
    cum = np.cumsum(neg)
    # a relative slack of 1e-12 keeps energy=1.0 from failing on rounding in cumsum
    return int(np.searchsorted(cum, energy * cum[-1] * (1 - 1e-12)) + 1)

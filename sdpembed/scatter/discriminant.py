r"""Scatter matrices, neighbourhood Laplacians and label operators of the discriminant methods.

Numpy/scipy only. Data are rows (scikit-learn's convention): ``X`` has shape
``(n_samples, n_features)``, so the papers' :math:`X L X^\top` (columns are
samples) is written :math:`X^\top L X` here. Labels are integer class
indices from :func:`sdpembed._labels.check_partial_labels`: ``0 .. c-1`` for
labelled points, ``-1`` for unlabeled ones; every scatter below uses the
labelled points only unless it says otherwise.

References
----------
C. Wang, S. Mahadevan, "Learning locality preserving discriminative
features" (Wang & Mahadevan a), and "Discriminative projections and label
projections" (Wang & Mahadevan b): matrices A, B, C of section 2.4 and the
continuous-label matrices of section 3.3.
X. He, P. Niyogi, "Locality preserving projections", NIPS 2003.
D. Cai, X. He, J. Han, "Semi-supervised discriminant analysis", ICCV 2007.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors

from .._checks import as_int
from .._typing import MatrixLike
from ..exceptions import InputError

__all__ = [
    "class_means",
    "between_class_scatter",
    "within_class_scatter",
    "total_scatter",
    "knn_affinity",
    "graph_laplacian",
    "laplacian_scatter",
    "discriminative_projection_matrices",
    "continuous_label_matrices",
]

logger = logging.getLogger(__name__)

WEIGHTS = ("heat", "binary")


def _sym(M: np.ndarray) -> np.ndarray:
    return 0.5 * (M + M.T)


def class_means(X: np.ndarray, y: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Class means ``(n_classes, p)`` and labelled counts ``(n_classes,)``; ``y == -1`` ignored."""
    lab = y >= 0
    counts = np.bincount(y[lab], minlength=n_classes).astype(float)
    sums = np.zeros((n_classes, X.shape[1]))
    np.add.at(sums, y[lab], X[lab])
    return sums / counts[:, None], counts


def between_class_scatter(X: np.ndarray, y: np.ndarray, n_classes: int) -> np.ndarray:
    r""":math:`S_b = \sum_k n_k (\mu_k - \mu)(\mu_k - \mu)^\top` over the labelled points.

    :math:`\mu` is the mean of the labelled points; rank :math:`\le c - 1`.
    """
    means, counts = class_means(X, y, n_classes)
    mu = counts @ means / counts.sum()
    Dm = (means - mu) * np.sqrt(counts)[:, None]
    return _sym(Dm.T @ Dm)


def within_class_scatter(X: np.ndarray, y: np.ndarray, n_classes: int) -> np.ndarray:
    r""":math:`S_w = \sum_k \sum_{y_i = k} (x_i - \mu_k)(x_i - \mu_k)^\top` (labelled points)."""
    means, _ = class_means(X, y, n_classes)
    lab = y >= 0
    R = X[lab] - means[y[lab]]
    return _sym(R.T @ R)


def total_scatter(X: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    r""":math:`S_t = \sum_i (x_i - \mu)(x_i - \mu)^\top` over the rows in ``mask`` (default all).

    For the labelled points :math:`S_t = S_b + S_w`.
    """
    Xs = X if mask is None else X[mask]
    R = Xs - Xs.mean(axis=0)
    return _sym(R.T @ R)


def knn_affinity(X: np.ndarray, n_neighbors: int = 5, *, weights: str = "heat",
                 sigma: float | None = None) -> sp.csr_matrix:
    r"""Symmetric k-nearest-neighbour affinity :math:`W` (scipy sparse, zero diagonal).

    :math:`W_{ij} > 0` iff :math:`x_j` is among the ``n_neighbors`` nearest
    neighbours of :math:`x_i` or vice versa. ``weights="heat"``:
    :math:`W_{ij} = \exp(-\|x_i - x_j\|^2 / (2\sigma^2))` with ``sigma``
    defaulting to the median neighbour distance (He & Niyogi's heat kernel);
    ``"binary"``: :math:`W_{ij} = 1` (Cai et al.'s SDA graph). Duplicate
    points are allowed (they get weight 1).
    """
    n = X.shape[0]
    k = as_int(n_neighbors, "n_neighbors")
    if k < 1 or k >= n:
        raise InputError(f"n_neighbors must lie in [1, n_samples - 1] = [1, {n - 1}]; got {k}")
    if weights not in WEIGHTS:
        raise InputError(f"weights must be one of {WEIGHTS}; got {weights!r}")
    dist, ind = NearestNeighbors(n_neighbors=k).fit(X).kneighbors()
    rows = np.repeat(np.arange(n), k)
    pattern = sp.coo_matrix((np.ones(n * k), (rows, ind.ravel())), shape=(n, n)).tocsr()
    i, j = (pattern + pattern.T).nonzero()  # union of both neighbour lists
    keep = i != j
    i, j = i[keep], j[keep]
    if weights == "binary":
        w = np.ones(i.size)
    else:
        if sigma is None:
            sigma = float(np.median(dist))
            if not sigma > 0:
                sigma = 1.0
        sigma = float(sigma)
        if not np.isfinite(sigma) or sigma <= 0:
            raise InputError(f"sigma must be positive; got {sigma}")
        sq = np.einsum("ij,ij->i", X[i] - X[j], X[i] - X[j])
        w = np.exp(-sq / (2.0 * sigma**2))
    W = sp.csr_matrix((w, (i, j)), shape=(n, n))
    return W.tocsr()


def graph_laplacian(W: MatrixLike) -> tuple[sp.csr_matrix, np.ndarray]:
    """Laplacian :math:`L = D - W` and degrees :math:`D_{ii} = \\sum_j W_{ij}`."""
    W = sp.csr_matrix(W)
    deg = np.asarray(W.sum(axis=1)).ravel()
    return (sp.diags(deg) - W).tocsr(), deg


def laplacian_scatter(X: np.ndarray, L: MatrixLike) -> np.ndarray:
    r""":math:`X^\top L X` (the papers' :math:`X L X^\top`), :math:`L` sparse or dense."""
    return _sym(X.T @ (L @ X))


def discriminative_projection_matrices(X: np.ndarray, y: np.ndarray, n_classes: int, L: MatrixLike,
                                       mu: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Matrices :math:`A, B, C` of discriminative projections (Wang & Mahadevan a, sec. 2.4).

    With :math:`\gamma = (f; g) \in \mathbb{R}^{(p + c) \times d}`, labelled points
    :math:`x_i` (:math:`i \le l`), one-hot labels :math:`y_i` and class indicators
    :math:`s_k`:

    .. math::

        \operatorname{tr}(\gamma^\top A \gamma)
            &= \sum_{i \le l} \|f^\top x_i - g^\top y_i\|^2,
        \quad A = \begin{pmatrix} X_l^\top X_l & -X_l^\top Y_l \\
                                   -Y_l^\top X_l & Y_l^\top Y_l \end{pmatrix},\\
        \operatorname{tr}(\gamma^\top B \gamma)
            &= \sum_{i \le l} \sum_{k=1}^c \|f^\top x_i - g^\top s_k\|^2,
        \quad B = \begin{pmatrix} c\, X_l^\top X_l & -X_l^\top 1_l 1_c^\top \\
                                   -1_c 1_l^\top X_l & l\, I_c \end{pmatrix},\\
        \operatorname{tr}(\gamma^\top C \gamma)
            &= \mu \sum_{i,j} W_{ij} \|f^\top x_i - f^\top x_j\|^2 / 2,
        \quad C = \begin{pmatrix} \mu X^\top L X & 0 \\ 0 & 0 \end{pmatrix},

    (rows of ``X`` are samples; :math:`Y_l` is the :math:`l \times c` one-hot
    matrix). The method solves :math:`(A + C)\gamma = \lambda (B + C)\gamma`
    for the :math:`d` smallest :math:`\lambda` (Theorem 1).

    Parameters
    ----------
    X : ndarray, shape (n, p)
    y : ndarray of int, shape (n,)
        Class indices, ``-1`` unlabeled.
    n_classes : int
    L : sparse or ndarray, shape (n, n)
        Graph Laplacian over all points (labelled and unlabeled).
    mu : float
        Weight of the topology term.
    """
    lab = y >= 0
    Xl = X[lab]
    l, p = Xl.shape
    c = as_int(n_classes, "n_classes", 1)
    Yl = np.zeros((l, c))
    Yl[np.arange(l), y[lab]] = 1.0
    XtX = Xl.T @ Xl
    XtY = Xl.T @ Yl
    A = np.block([[XtX, -XtY], [-XtY.T, Yl.T @ Yl]])
    xsum = Xl.sum(axis=0)
    B = np.block([[c * XtX, -np.outer(xsum, np.ones(c))],
                  [-np.outer(np.ones(c), xsum), l * np.eye(c)]])
    C = np.zeros((p + c, p + c))
    C[:p, :p] = mu * laplacian_scatter(X, L)
    return _sym(A), _sym(B), C


def continuous_label_matrices(X: np.ndarray, Y: np.ndarray, labeled: np.ndarray, L: MatrixLike,
                              degrees: np.ndarray, mu: float) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`Z \hat L Z^\top` and :math:`Z \hat D Z^\top` of discriminative projections over
    continuous labels (Wang & Mahadevan a, sec. 3.3, Theorem 2).

    With :math:`Z = \operatorname{diag}(X, Y)`,
    :math:`\hat L = \begin{pmatrix} U_1 + \mu L_X & -U_2 \\ -U_3 & U_4\end{pmatrix}`,
    :math:`\hat D = \operatorname{diag}(D_X, I_l)`:

    .. math::

        Z \hat L Z^\top = \begin{pmatrix} X_l^\top X_l + \mu X^\top L X & -X_l^\top Y_l \\
                                          -Y_l^\top X_l & Y_l^\top Y_l \end{pmatrix},\qquad
        Z \hat D Z^\top = \begin{pmatrix} X^\top D_X X & 0 \\ 0 & Y_l^\top Y_l \end{pmatrix},

    so :math:`\operatorname{tr}(\gamma^\top Z\hat L Z^\top\gamma) = \sum_{i \le l}
    \|f^\top x_i - g^\top y_i\|^2 + \mu \sum_{ij} W_{ij}\|f^\top x_i - f^\top x_j\|^2 / 2`.

    Parameters
    ----------
    X : ndarray, shape (n, p)
    Y : ndarray, shape (n, r)
        Real-valued label vectors; rows of unlabeled points are ignored.
    labeled : ndarray of bool, shape (n,)
    L : sparse or ndarray, shape (n, n)
        Graph Laplacian :math:`L_X`.
    degrees : ndarray, shape (n,)
        :math:`D_X` diagonal.
    mu : float
    """
    Xl, Yl = X[labeled], Y[labeled]
    XtY = Xl.T @ Yl
    YtY = Yl.T @ Yl
    top = Xl.T @ Xl + mu * laplacian_scatter(X, L)
    ZLZ = np.block([[top, -XtY], [-XtY.T, YtY]])
    p, r = X.shape[1], Y.shape[1]
    ZDZ = np.zeros((p + r, p + r))
    ZDZ[:p, :p] = X.T @ (degrees[:, None] * X)
    ZDZ[p:, p:] = YtY
    return _sym(ZLZ), _sym(ZDZ)

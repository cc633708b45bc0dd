"""Operators of Transductive Component Analysis (Liu, Tao & Liu, ICDM 2008).

Notation: the paper stores samples as columns (:math:`X \\in \\mathbb
R^{d\\times n}`, labeled block :math:`X_l \\in \\mathbb R^{d\\times l}`); here
``X`` has one sample per row, so the paper's :math:`X S X^T` is
``X.T @ S @ X``. ``X`` is assumed centred over *all* n points (Section 3.1).

**Smoothness regularizer** (eqs. 4-12). On a k-NN graph with heat-kernel
weights :math:`W_{ij} = \\exp(-\\lVert x_i - x_j\\rVert^2/\\sigma^2)` (eq. 4)
and Laplacian :math:`L = D - W`, eliminating the smooth embedding
:math:`f^* = (I + \\alpha L)^{-1} X^T a` from
:math:`\\lVert X^Ta - f\\rVert^2 + \\alpha f^T L f` (eqs. 6-8) leaves

.. math::

   \\mathcal S(a) = a^T X S X^T a,\\qquad
   S = (I + \\alpha L)^{-1}\\alpha L = I - (I + \\alpha L)^{-1}  \\quad (10)

(the two forms agree because :math:`L` and :math:`(I+\\alpha L)^{-1}`
commute). :math:`S \\succeq 0` with eigenvalues
:math:`\\alpha\\lambda/(1+\\alpha\\lambda) \\in [0, 1)` (Proposition 1).
:func:`smoothness_regularizer` forms :math:`X S X^T` through a sparse block
solve with :math:`I + \\alpha L` (LU factorisation or conjugate gradients),
never a dense n x n inverse.

**Margin regularizer** (eqs. 15-19). Over the l labeled points of c classes,
:math:`W^r_{ij} = 1/l_k` when :math:`i, j \\in C_k` and :math:`W^e_{ij} = 1/(l
- l_k)` when :math:`i \\in C_k, j \\notin C_k` (eq. 15; both have unit row sums,
:math:`W^r` is symmetric, :math:`W^e` is not), :math:`D^e =
\\mathrm{diag}(\\mathbf 1^T W^e)` (column sums). The pointwise margin (eq. 16)

.. math::

   m(i) = \\frac{1}{l_k(l-l_k)} \\sum_{j\\notin C_k}\\sum_{t\\in C_k}
          \\big[(y_i-y_j)^2 - (y_i-y_t)^2\\big]
        = \\sum_j (y_i-y_j)^2 (W^e_{ij} - W^r_{ij}),\\qquad y = X_l^T a,

averages to (eq. 17, re-derived: :math:`\\sum_{ij} y_i^2 W^e_{ij} = y^Ty`,
:math:`\\sum_{ij} y_j^2 W^e_{ij} = y^T D^e y`, :math:`\\sum_{ij}(y_i-y_j)^2
W^r_{ij} = 2y^T(I - W^r)y`)

.. math::

   \\bar m = \\tfrac1l y^T(I + D^e - W^e - W^{eT})y - \\tfrac2l y^T(I - W^r)y
           = \\tfrac2l\\, y^T D_l\\, y - \\tfrac1l\\, y^T M_l\\, y,

.. math::

   D_l = I + D^e,\\qquad M_l = 3I + D^e + W^e + W^{eT} - 2W^r. \\quad (18)

:math:`M_l \\succeq 0` because :math:`y^TM_ly = \\sum_{ij}(y_i+y_j)^2W^e_{ij} +
\\sum_{ij}(y_i-y_j)^2W^r_{ij}` (Proposition 2). Fixing :math:`a^TX_lD_lX_l^Ta =
1` turns :math:`\\max\\bar m` into :math:`\\min \\mathcal M(a) = a^TX_lM_lX_l^Ta`
(eq. 19).

**TCA** (eqs. 20-21): :math:`\\min_a \\mathcal S(a) + \\beta\\mathcal M(a)` s.t.
:math:`a^T X_l D_l X_l^T a = 1`, i.e. the smallest generalized eigenvectors of
:math:`(XSX^T + \\beta X_lM_lX_l^T)a = \\lambda X_lD_lX_l^Ta`.

**OTCA** (eqs. 22-27): see :func:`otca_basis`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from sklearn.neighbors import NearestNeighbors

from .._checks import as_int
from .._typing import ArrayLike, MatrixLike
from ..exceptions import InputError, LabelError, SolverFailedError
from ..graphs import NeighborhoodGraph

__all__ = [
    "tca_graph",
    "smoothness_regularizer",
    "SPLU_MAX_N",
    "smoothness_matrix",
    "margin_weights",
    "margin_matrices",
    "average_margin",
    "class_indicator",
    "TCAOperators",
    "tca_operators",
    "otca_basis",
]

logger = logging.getLogger(__name__)


# ----------------------------------------------------------------- smoothness
def tca_graph(X: ArrayLike, n_neighbors: int = 5, sigma: float | None = None) -> NeighborhoodGraph:
    """The unsupervised k-NN graph of eq. (4) with heat-kernel weights.

    :math:`W_{ij} = \\exp(-\\lVert x_i-x_j\\rVert^2/\\sigma^2)` if :math:`j \\in
    N(i)` or :math:`i \\in N(j)`, else 0, with :math:`N(i)` the ``n_neighbors``
    nearest neighbours of :math:`x_i` (note :math:`\\sigma^2`, not
    :math:`2\\sigma^2`, as in the paper). Duplicate points are allowed (weight 1).

    Parameters
    ----------
    X : ndarray, shape (n, p)
    n_neighbors : int
        k (the paper uses 5 on the UCI data and 6 on two-moons and faces).
    sigma : float, optional
        Kernel width; ``None`` uses the mean length of the graph's edges (the
        paper does not state its choice).
    """
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    k = as_int(n_neighbors, "n_neighbors")
    if not 1 <= k < n:
        raise InputError(f"n_neighbors must lie in [1, n_samples - 1] = [1, {n - 1}]; got {k}")
    ind = NearestNeighbors(n_neighbors=k).fit(X).kneighbors(return_distance=False)
    rows = np.repeat(np.arange(n), k)
    lo, hi = np.minimum(rows, ind.ravel()), np.maximum(rows, ind.ravel())
    # "j in N(i) or i in N(j)": deduplicate the undirected pairs through a sparse matrix
    sym = sp.csr_matrix((np.ones(lo.size), (lo, hi)), shape=(n, n)).tocoo()
    pairs = np.c_[sym.row, sym.col].astype(np.int64)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    sqdist = ((X[pairs[:, 0]] - X[pairs[:, 1]]) ** 2).sum(axis=1)
    if sigma is None:
        sigma = float(np.mean(np.sqrt(sqdist))) if sqdist.size else 1.0
        sigma = sigma if sigma > 0 else 1.0
    sigma = float(sigma)
    if not np.isfinite(sigma) or sigma <= 0:
        raise InputError(f"sigma must be positive; got {sigma}")
    return NeighborhoodGraph(n, pairs, sqdist, weights=np.exp(-sqdist / sigma**2))


#: Largest n for which :func:`smoothness_regularizer` factorises by default; above it the
#: block conjugate-gradient solver is used (sparse LU fill-in on k-NN graphs of
#: high-dimensional data grows quickly; ``docs/tuning.md``).
SPLU_MAX_N = 1000


def smoothness_regularizer(X: ArrayLike, laplacian: MatrixLike, alpha: float, *,
                           linear_solver: str = "auto", tol: float = 1e-12,
                           max_iter: int = 10_000) -> np.ndarray:
    """:math:`X S X^T` with :math:`S = (I+\\alpha L)^{-1}\\alpha L` (eq. 10), shape (p, p).

    Computed as :math:`\\alpha X^T L\\,Y` with :math:`Y = (I+\\alpha L)^{-1} X`,
    a block solve with the p columns of ``X`` against the sparse, symmetric
    positive definite :math:`I + \\alpha L`; no dense n x n matrix is formed.

    Parameters
    ----------
    X : ndarray, shape (n, p)
        Samples as rows (centred).
    laplacian : sparse or dense (n, n)
        Graph Laplacian :math:`L` (e.g. ``tca_graph(X).laplacian()``).
    alpha : float
        :math:`\\alpha > 0`.
    linear_solver : {"auto", "splu", "cg"}
        ``"splu"``: one sparse LU factorisation (exact; fast for small n or
        low-dimensional data). ``"cg"``: block conjugate gradients with Jacobi
        preconditioning, all p columns at once; :math:`I + \\alpha L` has
        eigenvalues in :math:`[1, 1 + \\alpha\\lambda_{\\max}(L)]`, so the
        iteration count grows like :math:`\\sqrt{\\alpha\\,\\max_i D_{ii}}`.
        ``"auto"``: ``"splu"`` up to :data:`SPLU_MAX_N` points, else ``"cg"``.
    tol : float
        Relative residual per column for ``"cg"``.
    max_iter : int
        Iteration limit for ``"cg"``.

    Raises
    ------
    SolverFailedError
        ``"cg"`` did not reach ``tol`` within ``max_iter`` iterations.
    """
    X = np.asarray(X, dtype=float)
    alpha = _positive(alpha, "alpha")
    L = sp.csr_matrix(laplacian, dtype=float)
    n = X.shape[0]
    if L.shape != (n, n):
        raise InputError(f"laplacian must have shape ({n}, {n}); got {L.shape}")
    if linear_solver not in ("auto", "splu", "cg"):
        raise InputError(f"linear_solver must be 'auto', 'splu' or 'cg'; got {linear_solver!r}")
    if linear_solver == "auto":
        linear_solver = "splu" if n <= SPLU_MAX_N else "cg"
    system = (sp.identity(n, format="csr") + alpha * L).tocsr()
    if linear_solver == "splu":
        Y = spla.splu(system.tocsc(), permc_spec="COLAMD").solve(X)
    else:
        Y = _block_pcg(system, X, tol=tol, max_iter=max_iter)
    A = alpha * (X.T @ (L @ Y))
    return 0.5 * (A + A.T)


def _block_pcg(M, B, *, tol: float, max_iter: int) -> np.ndarray:
    """Jacobi-preconditioned conjugate gradients for ``M Y = B``, columns in parallel."""
    dinv = 1.0 / M.diagonal()
    Y = B * dinv[:, None]
    R = B - M @ Y
    Z = R * dinv[:, None]
    P = Z.copy()
    rz = np.einsum("ij,ij->j", R, Z)
    target = tol * np.linalg.norm(B, axis=0)
    for it in range(max_iter):
        if np.all(np.linalg.norm(R, axis=0) <= target):
            logger.debug("block PCG converged in %d iterations", it)
            return Y
        MP = M @ P
        curv = np.einsum("ij,ij->j", P, MP)
        step = np.divide(rz, curv, out=np.zeros_like(rz), where=curv > 0)
        Y += P * step
        R -= MP * step
        Z = R * dinv[:, None]
        rz_new = np.einsum("ij,ij->j", R, Z)
        P = Z + P * np.divide(rz_new, rz, out=np.zeros_like(rz), where=rz > 0)
        rz = rz_new
    raise SolverFailedError(
        f"conjugate gradients on I + alpha L did not reach relative residual {tol:g} in "
        f"{max_iter} iterations; raise max_iter, lower alpha, or use linear_solver='splu'")


def smoothness_matrix(laplacian: MatrixLike, alpha: float) -> np.ndarray:
    """The dense n x n matrix :math:`S = I - (I+\\alpha L)^{-1}` (eq. 10).

    For small n only (teaching, tests); :func:`smoothness_regularizer` never
    forms it.
    """
    alpha = _positive(alpha, "alpha")
    L = laplacian.toarray() if sp.issparse(laplacian) else np.asarray(laplacian, dtype=float)
    n = L.shape[0]
    S = np.eye(n) - sla.solve(np.eye(n) + alpha * L, np.eye(n), assume_a="pos")
    return 0.5 * (S + S.T)


# --------------------------------------------------------------------- margin
def _class_sizes(y_l) -> tuple[np.ndarray, np.ndarray]:
    y_l = np.asarray(y_l)
    if y_l.ndim != 1 or y_l.size == 0 or np.any(y_l < 0):
        raise LabelError("margin matrices take the labels of the labeled points only (>= 0)")
    _, inv, counts = np.unique(y_l, return_inverse=True, return_counts=True)
    if counts.size < 2:
        raise LabelError("the margin regularizer needs at least two labeled classes")
    return inv, counts


def margin_weights(y_l: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Intra- and inter-class weights :math:`W^r, W^e` of eq. (15), shape (l, l).

    :math:`W^r_{ij} = 1/l_k` if :math:`i, j \\in C_k` (diagonal included);
    :math:`W^e_{ij} = 1/(l - l_k)` if :math:`i \\in C_k, j \\notin C_k`. Rows
    of both sum to one.
    """
    inv, counts = _class_sizes(y_l)
    l = inv.size
    same = inv[:, None] == inv[None, :]
    size = counts[inv][:, None]
    W_r = np.where(same, 1.0 / size, 0.0)
    W_e = np.where(same, 0.0, 1.0 / (l - size))
    return W_r, W_e


def margin_matrices(y_l: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """:math:`D_l = I + D^e` and :math:`M_l = 3I + D^e + W^e + W^{eT} - 2W^r` (eq. 18).

    :math:`D^e` is the diagonal of column sums of :math:`W^e`. See the module
    docstring for the derivation of eq. (17) from the pointwise margin (16).
    """
    W_r, W_e = margin_weights(y_l)
    l = W_r.shape[0]
    De = np.diag(W_e.sum(axis=0))
    D_l = np.eye(l) + De
    M_l = 3.0 * np.eye(l) + De + W_e + W_e.T - 2.0 * W_r
    return D_l, 0.5 * (M_l + M_l.T)


def average_margin(y_proj: ArrayLike, y_l: ArrayLike) -> float:
    """The average pointwise margin :math:`\\bar m` straight from its definition (eq. 16).

    ``y_proj`` holds the 1-D projections :math:`y_i = a^Tx_i` of the labeled
    points. Quadratic in l; meant for checking eq. (17).
    """
    y_proj = np.asarray(y_proj, dtype=float)
    inv, counts = _class_sizes(y_l)
    l = inv.size
    sq = (y_proj[:, None] - y_proj[None, :]) ** 2
    same = inv[:, None] == inv[None, :]
    lk = counts[inv]
    m = (np.where(same, 0.0, sq).sum(axis=1) / (l - lk)
         - np.where(same, sq, 0.0).sum(axis=1) / lk)
    return float(m.mean())


def class_indicator(y_l: ArrayLike, n_classes: int | None = None) -> np.ndarray:
    """Class indicator :math:`Y \\in \\{0,1\\}^{l\\times c}`, :math:`Y_{ik} = [i \\in C_k]`.

    OTCA's least-squares targets (Section 4).
    """
    y_l = np.asarray(y_l, dtype=int)
    c = int(y_l.max()) + 1 if n_classes is None else as_int(n_classes, "n_classes", 1)
    return (y_l[:, None] == np.arange(c)[None, :]).astype(float)


# ------------------------------------------------------------------ operators
@dataclass(frozen=True)
class TCAOperators:
    """The p x p matrices TCA and OTCA are built from (samples as rows, centred X).

    Attributes
    ----------
    smooth : ndarray (p, p)
        :math:`XSX^T` (eq. 12).
    margin : ndarray (p, p)
        :math:`X_lM_lX_l^T` (eq. 19).
    constraint : ndarray (p, p)
        :math:`X_lD_lX_l^T` (eq. 19/20, the right-hand side of eq. 21).
    labeled_gram : ndarray (p, p)
        :math:`X_lX_l^T` (OTCA's fitting term, eq. 26).
    labeled_targets : ndarray (p, c)
        :math:`X_lY` (OTCA's right-hand side, eq. 27).
    """

    smooth: np.ndarray
    margin: np.ndarray
    constraint: np.ndarray
    labeled_gram: np.ndarray
    labeled_targets: np.ndarray

    def pencil(self, beta: float) -> tuple[np.ndarray, np.ndarray]:
        """``(A, B)`` of eq. (21).

        :math:`A = XSX^T + \\beta X_lM_lX_l^T` and :math:`B = X_lD_lX_l^T`.
        """
        return self.smooth + float(beta) * self.margin, self.constraint

    def otca_system(self, beta: float, gamma: float) -> tuple[np.ndarray, np.ndarray]:
        """``(Q, R)`` of eq. (27) before restriction to the orthogonal complement.

        :math:`Q = XSX^T + \\beta X_lM_lX_l^T + \\gamma X_lX_l^T` and
        :math:`R = \\gamma X_l Y`, so that step k solves
        :math:`(E^TQE)\\,b = E^T R_{:,k}`.
        """
        beta, gamma = float(beta), float(gamma)
        return (self.smooth + beta * self.margin + gamma * self.labeled_gram,
                gamma * self.labeled_targets)


def tca_operators(X: ArrayLike, y: ArrayLike, *, alpha: float, n_neighbors: int = 5,
                  sigma: float | None = None,
                  graph: NeighborhoodGraph | None = None) -> TCAOperators:
    """All TCA/OTCA matrices from centred data and partial labels.

    Parameters
    ----------
    X : ndarray, shape (n, p)
        Centred samples as rows, in the coordinates the problem is solved in
        (after the optional PCA step 4).
    y : ndarray of int, shape (n,)
        Class indices ``0 .. c-1``, ``-1`` for unlabeled points.
    alpha : float
        Smoothness trade-off :math:`\\alpha` of eq. (6).
    n_neighbors, sigma
        Graph of eq. (4) built on ``X``, see :func:`tca_graph`.
    graph : NeighborhoodGraph, optional
        A weighted graph to use instead, e.g. built on the data before the PCA
        step, as in the paper's Table 1 (step 1 precedes step 4).
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=int)
    if graph is None:
        graph = tca_graph(X, n_neighbors=n_neighbors, sigma=sigma)
    elif graph.n_nodes != X.shape[0]:
        raise InputError(f"graph has {graph.n_nodes} nodes but X has {X.shape[0]} rows")
    smooth = smoothness_regularizer(X, graph.laplacian(), alpha)
    labeled = y >= 0
    X_l, y_l = X[labeled], y[labeled]
    D_l, M_l = margin_matrices(y_l)
    n_classes = int(y_l.max()) + 1
    sym = lambda M: 0.5 * (M + M.T)  # noqa: E731
    return TCAOperators(
        smooth=smooth,
        margin=sym(X_l.T @ M_l @ X_l),
        constraint=sym((X_l.T * np.diag(D_l)) @ X_l),
        labeled_gram=sym(X_l.T @ X_l),
        labeled_targets=X_l.T @ class_indicator(y_l, n_classes),
    )


# ----------------------------------------------------------------------- OTCA
def otca_basis(Q: ArrayLike, R: ArrayLike, n_components: int | None = None) -> np.ndarray:
    """OTCA's sequential orthogonal directions in closed form (eqs. 22-27).

    Step k (k = 1, ..., r <= c) looks for :math:`a_k = E_{k-1} b` orthogonal to
    :math:`a_1, \\dots, a_{k-1}` (eq. 23), where the columns of
    :math:`E_{k-1}` are the last :math:`d_1-k+1` columns :math:`Q_2` of the
    complete QR factorisation :math:`[a_1 \\cdots a_{k-1}] = [Q_1\\, Q_2]
    \\binom{R}{0}` (eq. 24; :math:`E_0 = I`). The scale constraint of eq. (20)
    is replaced by a least-squares fit of the class-k indicator :math:`Y_{\\cdot
    k}` (eq. 25):

    .. math::

       \\min_b\\ b^T\\big(ZSZ^T + \\beta Z_lM_lZ_l^T\\big)b
               + \\gamma\\lVert Z_l^Tb - Y_{\\cdot k}\\rVert^2,
       \\qquad Z = E_{k-1}^T X,\\ Z_l = E_{k-1}^T X_l \\quad (26)

    whose stationarity condition gives (eq. 27, with the factor
    :math:`\\gamma` on the right that the gradient produces)

    .. math::

       b^* = \\big(ZSZ^T + \\beta Z_lM_lZ_l^T + \\gamma Z_lZ_l^T\\big)^{-1}
             \\gamma Z_l Y_{\\cdot k} = (E^TQE)^{-1}E^TR_{:,k}.

    Parameters
    ----------
    Q : ndarray (p, p)
        :math:`XSX^T + \\beta X_lM_lX_l^T + \\gamma X_lX_l^T`, positive definite
        on every complement (see :meth:`TCAOperators.otca_system`).
    R : ndarray (p, c)
        :math:`\\gamma X_lY`.
    n_components : int, optional
        r, at most ``min(c, p)``; default c.

    Returns
    -------
    A : ndarray (p, r)
        Mutually orthogonal columns :math:`a_1, \\dots, a_r` (not normalised:
        the fit to the indicator fixes their scale).
    """
    Q = np.asarray(Q, dtype=float)
    R = np.asarray(R, dtype=float)
    p, c = R.shape
    r = c if n_components is None else as_int(n_components, "n_components")
    if not 1 <= r <= min(c, p):
        raise InputError(f"OTCA gives at most min(n_classes, n_features) = {min(c, p)} "
                         f"directions; got n_components={r}")
    A = np.zeros((p, r))
    for k in range(r):
        E = np.eye(p) if k == 0 else np.linalg.qr(A[:, :k], mode="complete")[0][:, k:]
        H = E.T @ Q @ E
        try:
            b = sla.solve(0.5 * (H + H.T), E.T @ R[:, k], assume_a="pos")
        except (sla.LinAlgError, ValueError) as exc:
            raise InputError(
                f"OTCA step {k + 1}: the restricted system (eq. 27) is not positive definite "
                f"({exc}); the data are rank deficient. Use the PCA step (pca=True) or a "
                "larger gamma."
            ) from exc
        A[:, k] = E @ b
        if not np.any(A[:, k]):
            logger.warning("OTCA step %d gave a zero direction (class %d indicator is "
                           "orthogonal to the remaining subspace)", k + 1, k)
    return A


def _positive(value, name: str) -> float:
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise InputError(f"{name} must be a positive number; got {value}")
    return value

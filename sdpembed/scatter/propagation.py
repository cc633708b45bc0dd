r"""Closed forms of two graph-based transductive classifiers: LGC and GFHF.

Numpy/scipy only. ``W`` is a symmetric, nonnegative affinity over all
:math:`n` points (labelled and unlabelled), sparse or dense, with zero
diagonal; ``Y`` is the :math:`n \times c` one-hot matrix of the labelled
points (zero rows for unlabelled ones); :math:`D = \operatorname{diag}(W\mathbf 1)`.

**Local and global consistency** (LGC; Zhou, Bousquet, Lal, Weston &
Schölkopf, NIPS 2004). With the normalised affinity
:math:`S = D^{-1/2} W D^{-1/2}`, the iteration
:math:`F_{t+1} = \alpha S F_t + (1 - \alpha) Y` converges for
:math:`0 < \alpha < 1` (the spectral radius of :math:`\alpha S` is
:math:`\alpha`) to

.. math::

    F^* = (1 - \alpha)(I - \alpha S)^{-1} Y,

the minimiser of
:math:`\tfrac12\sum_{ij} W_{ij}\lVert F_i/\sqrt{D_{ii}} - F_j/\sqrt{D_{jj}}\rVert^2
+ \mu \sum_i \lVert F_i - Y_i\rVert^2` with :math:`\alpha = 1/(1 + \mu)`;
point :math:`i` gets the class :math:`\arg\max_j F^*_{ij}`. :func:`lgc_scores`
solves the linear system once (sparse LU, or dense Cholesky: :math:`I - \alpha S`
is symmetric positive definite with eigenvalues in
:math:`[1 - \alpha, 1 + \alpha]`), instead of iterating.

**Gaussian fields and harmonic functions** (GFHF; Zhu, Ghahramani &
Lafferty, ICML 2003). The harmonic function equal to the labels on the
labelled points :math:`l` minimises
:math:`\tfrac12\sum_{ij} W_{ij}\lVert f_i - f_j\rVert^2` and satisfies
:math:`f_u = D_{uu}^{-1} W_{u\cdot} f` on the unlabelled points :math:`u`, i.e.

.. math::

    f_u = (D_{uu} - W_{uu})^{-1} W_{ul} f_l = -L_{uu}^{-1} L_{ul} f_l,
    \qquad L = D - W,

solved by :func:`harmonic_scores` as the absorption probabilities of the
random walk :math:`P = D^{-1}W` by Grassmann-Taksar-Heyman elimination, which
stays accurate when heat-kernel weights span hundreds of orders of magnitude
(:math:`L_{uu}` is symmetric positive definite when every connected component
of the graph holds a labelled point). Self-loops :math:`W_{ii}` cancel in
:math:`D_{uu} - W_{uu}`, so the solution does not depend on the diagonal. Optional *class mass
normalisation* (Zhu et al.'s way to use class prior knowledge): class :math:`k` of unlabelled point
:math:`i` is scored :math:`q_k f_{ik} / \sum_{u} f_{uk}` with :math:`q` the
class proportions of the labelled points.

Both closed forms need every connected component of the graph to contain a
labelled point (otherwise LGC gives its points :math:`F^*_i = 0`, no class,
and :math:`L_{uu}` is singular); :func:`check_components` raises
:class:`~sdpembed.exceptions.DisconnectedGraphError` before any solve.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import connected_components

from .._typing import MatrixLike
from ..exceptions import DisconnectedGraphError, InputError

__all__ = ["check_affinity", "check_components", "orphan_rows", "normalized_affinity",
           "lgc_scores", "harmonic_scores", "class_mass_normalization"]

logger = logging.getLogger(__name__)


def check_affinity(W: MatrixLike) -> np.ndarray | sp.csr_matrix:
    """Validate a symmetric nonnegative affinity; return it with a zero diagonal.

    The diagonal is set to zero (Zhou et al. define :math:`W_{ii} = 0`; the
    harmonic solution does not depend on it). Sparse input stays CSR, dense
    stays a float array.
    """
    if sp.issparse(W):
        W = sp.csr_matrix(W, dtype=float)
        data = W.data
        asym = abs(W - W.T).max() if W.nnz else 0.0
    else:
        W = np.array(W, dtype=float)
        data = W
        if W.ndim != 2:
            raise InputError(f"the affinity must be a square matrix; got shape {W.shape}")
        asym = np.abs(W - W.T).max() if W.size else 0.0
    if W.shape[0] != W.shape[1]:
        raise InputError(f"the affinity must be a square matrix; got shape {W.shape}")
    if not np.all(np.isfinite(data)):
        raise InputError("the affinity contains NaN or infinite entries")
    if data.size and data.min() < 0:
        raise InputError("the affinity must be nonnegative")
    scale = float(np.abs(data).max()) if data.size else 0.0
    if asym > 1e-12 * max(scale, 1.0):
        raise InputError(f"the affinity must be symmetric (max |W - W'| = {asym:.3g})")
    if sp.issparse(W):
        W = (0.5 * (W + W.T)).tocsr()
        W.setdiag(0.0)
        W.eliminate_zeros()
    else:
        W = 0.5 * (W + W.T)
        np.fill_diagonal(W, 0.0)
    return W


def orphan_rows(W: MatrixLike, labeled: np.ndarray) -> np.ndarray:
    """Rows lying in a connected component of the graph without a labelled point.

    Isolated points (zero degree) are components of their own.
    """
    _, comp = connected_components(sp.csr_matrix(W), directed=False)
    has_label = np.zeros(comp.max() + 1 if comp.size else 0, bool)
    has_label[comp[np.asarray(labeled, bool)]] = True
    return ~has_label[comp]


def check_components(W: MatrixLike, labeled: np.ndarray) -> None:
    """Raise :class:`DisconnectedGraphError` if a connected component has no labelled point.

    Isolated points (zero degree) are components of their own.
    """
    n_comp, comp = connected_components(sp.csr_matrix(W), directed=False)
    has_label = np.zeros(n_comp, bool)
    has_label[comp[labeled]] = True
    orphan = ~has_label[comp]
    if orphan.any():
        raise DisconnectedGraphError(
            f"{int(orphan.sum())} point(s) lie in {int((~has_label).sum())} connected "
            f"component(s) of the graph without a labelled point (the graph has {n_comp} "
            "components); their labels are undetermined. Connect the graph (more neighbours, "
            "a wider kernel: smaller gamma or larger sigma) or label a point in each component")


def _degrees(W) -> np.ndarray:
    return np.asarray(W.sum(axis=1)).ravel()


def normalized_affinity(W: MatrixLike) -> np.ndarray | sp.csr_matrix:
    r""":math:`S = D^{-1/2} W D^{-1/2}` (sparse in, sparse out); every degree must be positive."""
    deg = _degrees(W)
    if np.any(deg <= 0):
        raise DisconnectedGraphError(
            f"{int(np.sum(deg <= 0))} point(s) have no edge (zero degree); connect them "
            "(more neighbours or a wider kernel)")
    s = 1.0 / np.sqrt(deg)
    if sp.issparse(W):
        return (sp.diags(s) @ W @ sp.diags(s)).tocsr()
    return W * s[:, None] * s[None, :]


def _solve_spd(M, rhs: np.ndarray) -> np.ndarray:
    """Solve ``M X = rhs`` for symmetric positive definite ``M`` (sparse LU or dense Cholesky)."""
    if sp.issparse(M):
        return spla.splu(sp.csc_matrix(M)).solve(np.asarray(rhs, dtype=float))
    return sla.solve(M, rhs, assume_a="pos")


def lgc_scores(W: MatrixLike, Y: np.ndarray, alpha: float) -> np.ndarray:
    r""":math:`F^* = (1 - \alpha)(I - \alpha S)^{-1} Y` (module docstring), shape ``(n, c)``.

    Parameters
    ----------
    W : sparse or ndarray, shape (n, n)
        Affinity from :func:`check_affinity`.
    Y : ndarray, shape (n, c)
        One-hot labels, zero rows for unlabelled points.
    alpha : float
        :math:`0 < \alpha < 1`.
    """
    alpha = float(alpha)
    if not 0 < alpha < 1:
        raise InputError(f"alpha must lie in (0, 1); got {alpha}")
    S = normalized_affinity(W)
    n = S.shape[0]
    M = (sp.identity(n, format="csr") - alpha * S) if sp.issparse(S) else np.eye(n) - alpha * S
    return (1.0 - alpha) * _solve_spd(M, Y)


#: Largest number of unlabelled points solved by GTH elimination (a dense
#: ``n_u x (n_u + c)`` array); above it, a sparse LU of the row-scaled system.
GTH_MAX = 5000


def _absorption_gth(Wuu: np.ndarray, B: np.ndarray) -> np.ndarray:
    r"""Absorption probabilities by Grassmann-Taksar-Heyman state reduction.

    For the random walk on the weights ``[Wuu | B]`` (``B[i, k]``: weight from
    transient state :math:`i` into absorbing class :math:`k`), eliminates the
    transient states one at a time: removing state :math:`k` with remaining
    out-weight :math:`s_k = \sum_{j > k} A_{kj}` adds :math:`A_{ik}A_{kj}/s_k`
    to every remaining :math:`A_{ij}`; back-substitution gives
    :math:`f_k = \sum_{j>k} (A_{kj}/s_k) f_j`. Every pivot is a sum of
    nonnegative numbers and nothing is subtracted, so the result is accurate
    entry by entry even when the weights span hundreds of orders of magnitude
    (Grassmann, Taksar & Heyman, Oper. Res. 33, 1985; O'Cinneide, Numer. Math.
    65, 1993), where an LU factorisation of :math:`I - P_{uu}` is not: a cluster
    that the walk leaves with probability :math:`10^{-80}` makes it singular
    in double precision. Reverse Cuthill-McKee order keeps the fill-in in a
    band. Every transient state must reach an absorbing one.
    """
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    n, c = B.shape
    perm = reverse_cuthill_mckee(sp.csr_matrix(Wuu), symmetric_mode=True)
    A = np.concatenate([Wuu[np.ix_(perm, perm)], B[perm]], axis=1)
    s = np.empty(n)
    for k in range(n):
        out = A[k, k + 1:]
        s[k] = out.sum()
        if not s[k] > 0:  # pragma: no cover - excluded by check_components
            raise DisconnectedGraphError("an unlabelled point cannot reach a labelled one")
        rows = k + 1 + np.flatnonzero(A[k + 1:n, k])
        if rows.size:
            cols = k + 1 + np.flatnonzero(out)
            A[np.ix_(rows, cols)] += np.outer(A[rows, k], A[k, cols] / s[k])
    F = np.zeros((n, c))
    for k in range(n - 1, -1, -1):
        F[k] = (A[k, k + 1:n] @ F[k + 1:] + A[k, n:]) / s[k]
    out = np.empty_like(F)
    out[perm] = F
    return out


def harmonic_scores(W: MatrixLike, Y: np.ndarray, labeled: np.ndarray) -> np.ndarray:
    r"""Harmonic solution :math:`f_u = (D_{uu} - W_{uu})^{-1} W_{ul} Y_l`, labelled rows kept.

    Up to :data:`GTH_MAX` unlabelled points, by GTH elimination
    (:func:`_absorption_gth`: accurate whatever the spread of the weights);
    beyond, by a sparse LU of the row-scaled system
    :math:`(I - P_{uu}) f_u = P_{ul} Y_l`, :math:`P = D^{-1}W`, checked: a row
    that is not a probability vector to :math:`10^{-8}` raises
    :class:`~sdpembed.exceptions.InputError`.

    Parameters
    ----------
    W : sparse or ndarray, shape (n, n)
        Affinity from :func:`check_affinity`.
    Y : ndarray, shape (n, c)
    labeled : ndarray of bool, shape (n,)

    Returns
    -------
    ndarray, shape (n, c)
        Each unlabelled row is a probability vector (the absorption
        probabilities of the random walk with transition matrix :math:`D^{-1}W`).
    """
    labeled = np.asarray(labeled, bool)
    F = np.array(Y, dtype=float)
    u = np.flatnonzero(~labeled)
    if u.size == 0:
        return F
    lab = np.flatnonzero(labeled)
    deg = _degrees(W)
    if np.any(deg[u] <= 0):
        raise DisconnectedGraphError(
            f"{int(np.sum(deg[u] <= 0))} unlabelled point(s) have no edge (zero degree); "
            "connect them (more neighbours or a wider kernel)")
    W = sp.csr_matrix(W) if sp.issparse(W) else np.asarray(W, dtype=float)
    Wuu, Wul = (W[u][:, u], W[u][:, lab]) if sp.issparse(W) else \
        (W[np.ix_(u, u)], W[np.ix_(u, lab)])
    B = np.asarray(Wul @ F[lab])
    if u.size <= GTH_MAX:
        dense = Wuu.toarray() if sp.issparse(Wuu) else np.array(Wuu)
        F[u] = _absorption_gth(dense, B)
        return F
    inv = sp.diags(1.0 / deg[u])
    M = (sp.identity(u.size, format="csc") - inv @ sp.csr_matrix(Wuu)).tocsc()
    F[u] = spla.splu(M).solve(np.asarray(inv @ B))
    bad = (F[u].min(axis=1) < -1e-8) | (np.abs(F[u].sum(axis=1) - 1.0) > 1e-8)
    if bad.any():
        raise InputError(
            f"the harmonic system is numerically singular: {int(bad.sum())} row(s) are not "
            "probability vectors (edge weights spanning too many orders of magnitude); scale "
            "the features or widen the kernel (sigma)")
    return F


def class_mass_normalization(F: np.ndarray, labeled: np.ndarray, q: np.ndarray) -> np.ndarray:
    r"""Class mass normalisation: :math:`q_k F_{ik} / \sum_{u} F_{uk}` on the unlabelled rows.

    Labelled rows are returned unchanged; a class with zero mass on the
    unlabelled points keeps score 0.
    """
    F = np.array(F, dtype=float)
    u = ~np.asarray(labeled, bool)
    mass = F[u].sum(axis=0)
    scale = np.divide(np.asarray(q, float), mass, out=np.zeros_like(mass), where=mass > 0)
    F[u] = F[u] * scale[None, :]
    return F

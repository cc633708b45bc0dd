"""Out-of-sample extensions of the Gram-matrix embeddings (DVU, MVU).

DVU and MVU learn a Gram matrix :math:`G \\succeq 0` over the fitted points
only (Vernaza, Lee & Taskar, section 3.3: "it is necessary to embed the test
points at training time"; their conclusion names an out-of-sample extension as
future work). :math:`G` is not a kernel *function* of the inputs, so a new
point :math:`x` has no row of :math:`G`. This module places new points given
the fitted embedding :math:`Z \\in \\mathbb{R}^{n \\times d}` (the rows
:math:`z_i` of ``embedding_``, :math:`Z Z^\\top` the rank-d part of
:math:`G`) and, for each new point, its ``k`` nearest fitted points
:math:`N(x)` with squared distances :math:`\\delta_j = d(x, x_j)^2` in the
metric of the fit's graph (Euclidean, tangent, any metric).

Two methods:

``"nystrom"`` (:func:`nystrom_extension`)
    The Nyström formula of Bengio et al. (2004, "Out-of-sample extensions for
    LLE, Isomap, MDS, eigenmaps and spectral clustering", Proposition 1) with a
    data-dependent kernel that extends the learned one,

    .. math::

        \\tilde K(x, x_i) = \\sum_{j \\in N(x)} w_j(x)\\, G_{ji}, \\qquad
        w_j(x) = \\frac{\\delta_j^{-1}}{\\sum_{l \\in N(x)} \\delta_l^{-1}},

    i.e. the row of :math:`G` regressed on the neighbours with normalised
    inverse-distance (Shepard) weights. For :math:`G = U \\Lambda U^\\top`
    the Nyström coordinates are
    :math:`f_m(x) = \\lambda_m^{-1/2} \\sum_i u_{im} \\tilde K(x, x_i)
    = \\sum_j w_j(x) z_{jm}`. Equivalently it is Bengio et al.'s MDS
    extension :math:`\\tilde K(a, b) = -\\tfrac12(\\hat d^2(a, b) -
    \\bar{d}^2(a, \\cdot) - \\bar{d}^2(\\cdot, b) + \\bar{d}^2)` with the
    embedding's squared distances interpolated as
    :math:`\\hat d^2(x, x_i) = \\sum_j w_j(x) D^G_{ji}`
    (:math:`D^G_{ji} = G_{jj} + G_{ii} - 2G_{ji}`; :math:`G` is centred and
    :math:`\\sum_j w_j = 1`). Bengio et al. divide their data-dependent
    kernels by the kernel's mean at each point (symmetrically,
    :math:`K(a, b) / \\sqrt{S(a) S(b)}`); here the weights are divided by
    their sum at :math:`x`, the row normalisation of the Nadaraya–Watson
    estimator, because only weights summing to one keep the extension
    equivariant under translations (and rotations) of the fit.
    *Training points*: as :math:`\\delta_i \\to 0`, :math:`w(x) \\to e_i`
    (Shepard weights interpolate), so :math:`\\tilde K(x_i, \\cdot) =
    G_{i\\cdot}` and the formula returns :math:`z_i` exactly, which is the
    condition of Bengio et al.'s Proposition 1. Weights are positive: a new
    point lies in the convex hull of its neighbours' embeddings.

``"distances"`` (:func:`place_by_distances`)
    The fit's own SDP restricted to one new point. Appending a row
    :math:`g` and a diagonal entry :math:`\\tau` to the fixed Gram block,
    :math:`\\begin{bmatrix} ZZ^\\top & g \\\\ g^\\top & \\tau\\end{bmatrix}
    \\succeq 0` holds iff :math:`g = Zz` for some :math:`z \\in
    \\mathbb{R}^d` and :math:`\\tau \\ge \\lVert z\\rVert^2` (Schur
    complement), and the new point's squared distance to :math:`z_j` is then
    :math:`\\tau - 2z_j^\\top z + \\lVert z_j\\rVert^2 = \\lVert z - z_j
    \\rVert^2 + h^2` with :math:`h^2 = \\tau - \\lVert z\\rVert^2 \\ge 0`:
    the new point sits at :math:`(z, h)` in :math:`\\mathbb{R}^{d+1}`, a
    height :math:`h` off the fitted embedding. An unlabelled point enters
    the DVU objective only through the slack of its distance constraints
    (DVU's interval relaxation, eqs. 8-9:
    :math:`\\epsilon_j = |D_j - \\delta_j| / \\delta_j`), so the placement is
    the second-order cone program

    .. math::

        \\min_{z \\in \\mathbb{R}^d,\\ \\tau} \\ \\sum_{j \\in N(x)}
            \\frac{|\\tau - 2 z_j^\\top z + \\lVert z_j \\rVert^2 - \\delta_j|}
                 {\\delta_j}
        \\quad \\text{s.t.} \\quad \\tau \\ge \\lVert z \\rVert^2,

    the lifted (convex) form of :math:`\\min_z \\sum_j |\\lVert z - z_j
    \\rVert^2 - \\delta_j| / \\delta_j`. It depends on :math:`Z` only through
    distances, so a rotation or translation of the fit moves the placements
    with it. Its Lagrange dual is

    .. math::

        \\max_{y} \\ \\sum_j y_j (\\lVert z_j\\rVert^2 - \\delta_j)
            - \\frac{\\lVert \\sum_j y_j z_j \\rVert^2}{\\sum_j y_j}
        \\quad \\text{s.t.} \\quad |y_j| \\le \\delta_j^{-1},\\
        \\textstyle\\sum_j y_j \\ge 0

    (the quotient read as 0 when :math:`\\sum_j y_j = 0` and
    :math:`\\sum_j y_j z_j = 0`, and :math:`-\\infty` for other points with
    :math:`\\sum_j y_j = 0`; :math:`\\sum_j y_j` is the multiplier of :math:`\\tau \\ge
    \\lVert z\\rVert^2`). Where the optimum touches the embedding
    (:math:`h = 0`), :math:`z = \\sum_j y_j z_j / \\sum_j y_j` at a dual
    optimum: an affine combination of the neighbours' embeddings with weights
    from the optimal multipliers; where it lifts off (:math:`h > 0`), the
    multiplier vanishes and :math:`\\sum_j y_j = 0`,
    :math:`\\sum_j y_j z_j = 0`. All points are solved at once by a
    batched barrier method (Boyd & Vandenberghe, *Convex Optimization*,
    section 11.3: the slacks are minimised out in closed form, damped Newton
    steps on :math:`(z, \\tau)` from stacked small KKT systems); each point
    stops when a dual point built from its barrier multipliers certifies a
    duality gap below ``tol`` (the objective is a sum of relative violations,
    so ``tol`` is in those units).
    *Training points*: a neighbour at zero distance has infinite weight; the
    program's limit forces :math:`\\lVert z - z_i\\rVert^2 + h^2 = 0`, so
    the point lands exactly on :math:`z_i` (on the mean of several zero-distance
    neighbours' embeddings, the minimiser of the sum of their squared distances).

In both methods a neighbour with :math:`\\delta_j \\le 10^{-12} \\max_l
\\delta_l` counts as a duplicate of the new point (zero distance).

:func:`fitted_neighbors` finds :math:`N(x)` and :math:`\\delta` in the
metric of the fit (``"euclidean"`` and other scikit-learn metrics,
``"tangent"`` for images via :func:`sdpembed.tangent.tangent_kneighbors`,
``"precomputed"`` distances to the fitted points, or a callable).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._checks import as_int
from ._typing import ArrayLike
from .exceptions import InaccurateSolutionWarning, InputError, warn
from .graphs import check_data_matrix

__all__ = [
    "OUT_OF_SAMPLE_METHODS",
    "ZERO_DISTANCE_RTOL",
    "Placement",
    "fitted_neighbors",
    "nystrom_extension",
    "place_by_distances",
    "extend",
]

logger = logging.getLogger(__name__)

#: Names of the out-of-sample methods (the estimators' ``out_of_sample`` values).
OUT_OF_SAMPLE_METHODS = ("distances", "nystrom")

#: A neighbour whose squared distance is at most this fraction of the largest
#: among the point's neighbours is a duplicate of the point (zero distance).
ZERO_DISTANCE_RTOL = 1e-12

# Newton steps at one barrier parameter before the point is certified and t raised
# (centring at large t stalls at round-off).
_STAGE_STEPS = 50
# Stacked (m, k, p) differences are formed in chunks of about this many bytes.
_CHUNK_BYTES = 32 * 2**20


# ------------------------------------------------------------------ neighbours
def fitted_neighbors(X_new: ArrayLike, X_fit: ArrayLike, n_neighbors: int, *,
                     metric: str | Callable = "euclidean", exclude: ArrayLike | None = None,
                     **metric_params: Any) -> tuple[np.ndarray, np.ndarray]:
    """The ``n_neighbors`` nearest fitted points of each new point, in the fit's metric.

    Parameters
    ----------
    X_new : array-like, shape (m, p)
        New points; with ``metric="precomputed"`` their distances to the
        fitted points, shape (m, n_fit).
    X_fit : array-like, shape (n_fit, p)
        The fitted points (ignored, except for its row count, when
        ``metric="precomputed"``).
    n_neighbors : int
        k, at most ``n_fit`` (``n_fit - 1`` with ``exclude``).
    metric : str or callable
        ``"euclidean"`` or another scikit-learn metric name, ``"tangent"``
        (images; ``metric_params`` go to
        :func:`sdpembed.tangent.tangent_kneighbors`, default 50 Euclidean
        candidates re-ranked, as the fit's tangent graph),
        ``"precomputed"``, or a callable ``metric(a, b) -> float``.
    exclude : array-like of int, shape (m,), optional
        A fitted index per new point to leave out of its neighbours (``-1``:
        none), for leave-one-out placement of fitted points.
    **metric_params
        Passed to the metric.

    Returns
    -------
    sqdist : ndarray, shape (m, k)
        Squared distances, ascending (ties by index). Euclidean ones are
        recomputed from the differences, so duplicates get exactly zero.
    ind : ndarray of int, shape (m, k)
        Rows of ``X_fit``.
    """
    is_pre = isinstance(metric, str) and metric == "precomputed"
    X_new = check_data_matrix(X_new, name="X_new", min_samples=1)
    if is_pre:
        n_fit = int(np.asarray(X_fit).shape[0])
        if X_new.shape[1] != n_fit:
            raise InputError(f"precomputed X_new must hold distances to the {n_fit} fitted "
                             f"points (shape (m, {n_fit})); got {X_new.shape}")
        if np.any(X_new < 0):
            raise InputError("precomputed distances must be non-negative")
    else:
        X_fit = check_data_matrix(X_fit, name="X_fit", min_samples=1)
        n_fit = X_fit.shape[0]
        if X_new.shape[1] != X_fit.shape[1]:
            raise InputError(f"X_new has {X_new.shape[1]} features but the fitted points have "
                             f"{X_fit.shape[1]}")
    m = X_new.shape[0]
    if exclude is not None:
        exclude = np.asarray(exclude, dtype=np.int64).reshape(-1)
        if exclude.shape != (m,) or np.any(exclude >= n_fit) or np.any(exclude < -1):
            raise InputError(f"exclude must hold one index in [-1, {n_fit}) per new point")
        if not np.any(exclude >= 0):
            exclude = None
    pool = n_fit - (exclude is not None)
    k = as_int(n_neighbors, "n_neighbors")
    if not 1 <= k <= pool:
        raise InputError(f"n_neighbors={n_neighbors} must lie in [1, {pool}] for {n_fit} "
                         "fitted points")
    k_ask = k if exclude is None else min(k + 1, n_fit)

    if isinstance(metric, str) and metric == "tangent":
        sq, ind = _tangent_neighbors(X_new, X_fit, k_ask, dict(metric_params))
    elif is_pre or callable(metric):
        if is_pre:
            D = X_new
        else:
            from sklearn.metrics import pairwise_distances

            D = pairwise_distances(X_new, X_fit, metric=metric, **metric_params)
        ind = np.argpartition(D, k_ask - 1, axis=1)[:, :k_ask] if k_ask < n_fit else \
            np.broadcast_to(np.arange(n_fit), (m, n_fit)).copy()
        sq = np.take_along_axis(D, ind, axis=1) ** 2
    else:
        from sklearn.neighbors import NearestNeighbors

        nn = NearestNeighbors(n_neighbors=k_ask, metric=metric, algorithm="brute",
                              metric_params=metric_params or None)
        dist, ind = nn.fit(X_fit).kneighbors(X_new)
        sq = _exact_sqeuclidean(X_new, X_fit, ind) if metric == "euclidean" else dist**2
    sq, ind = np.asarray(sq, dtype=float), np.asarray(ind, dtype=np.int64)
    order = np.lexsort((ind, sq), axis=1)
    sq, ind = np.take_along_axis(sq, order, axis=1), np.take_along_axis(ind, order, axis=1)
    if exclude is not None:
        # drop the excluded index where present, else the farthest of the k + 1
        drop = ind == exclude[:, None]
        drop[~drop.any(axis=1), -1] = True
        sq = sq[~drop].reshape(m, k_ask - 1)[:, :k]
        ind = ind[~drop].reshape(m, k_ask - 1)[:, :k]
    return sq, ind


def _tangent_neighbors(X_new, X_fit, k, opts):
    """Tangent-distance neighbours, with exact zeros for duplicate images.

    With Euclidean candidates (the default, 50, as the fit's graph),
    :func:`sdpembed.tangent.tangent_kneighbors` computes each distance from the
    image difference, so duplicates get exactly zero. When every fitted image is
    a candidate it expands :math:`\\lVert a - b\\rVert^2` instead (round-off
    on duplicates), so the chosen pairs are recomputed by
    :func:`sdpembed.tangent.paired_tangent_distances`, as the fit's graph does.
    """
    from .tangent import deslant, paired_tangent_distances, tangent_kneighbors

    if opts.pop("deslant", False):
        shape = opts.get("shape", (16, 16))
        X_new, X_fit = deslant(X_new, shape), deslant(X_fit, shape)
    search = {key: opts.pop(key) for key in ("candidates", "n_jobs") if key in opts}
    sq, ind = tangent_kneighbors(X_new, X_fit, n_neighbors=k, **opts, **search)
    candidates = search.get("candidates", 50)
    if candidates is None or int(candidates) >= X_fit.shape[0]:
        sq = paired_tangent_distances(np.repeat(X_new, k, axis=0), X_fit[ind.ravel()],
                                      **opts).reshape(ind.shape)
    return sq, ind


def _exact_sqeuclidean(X_new, X_fit, ind) -> np.ndarray:
    """:math:`\\lVert x - x_j \\rVert^2` from the differences (exact zero for duplicates)."""
    m, k = ind.shape
    out = np.empty((m, k))
    step = max(1, _CHUNK_BYTES // (8 * k * X_new.shape[1]))
    for s in range(0, m, step):
        diff = X_new[s:s + step, None, :] - X_fit[ind[s:s + step]]
        out[s:s + step] = np.einsum("mkp,mkp->mk", diff, diff)
    return out


# ------------------------------------------------------------------ validation
def _check_inputs(embedding, ind, sqdist):
    Z = np.asarray(embedding, dtype=float)
    if Z.ndim != 2 or not np.all(np.isfinite(Z)):
        raise InputError("embedding must be a finite 2-D array (n_fit, d)")
    ind = np.asarray(ind)
    sq = np.asarray(sqdist, dtype=float)
    if ind.ndim != 2 or sq.shape != ind.shape or ind.shape[1] < 1:
        raise InputError(f"ind and sqdist must have the same shape (m, k), k >= 1; got "
                         f"{ind.shape} and {sq.shape}")
    if not np.issubdtype(ind.dtype, np.integer) or (ind.size and (ind.min() < 0
                                                                  or ind.max() >= Z.shape[0])):
        raise InputError(f"ind must hold integer rows of the embedding in [0, {Z.shape[0]})")
    if not np.all(np.isfinite(sq)) or np.any(sq < 0):
        raise InputError("sqdist must be finite and non-negative")
    return Z, ind.astype(np.int64), sq


def _duplicates(sq) -> np.ndarray:
    """Mask of neighbours at (numerically) zero distance, :data:`ZERO_DISTANCE_RTOL`."""
    return sq <= ZERO_DISTANCE_RTOL * sq.max(axis=1, keepdims=True)


def _duplicate_mean(Z, ind, zero) -> np.ndarray:
    """Mean embedding of the zero-distance neighbours of each row (rows with any)."""
    w = zero.astype(float)
    return np.einsum("mk,mkd->md", w / w.sum(axis=1, keepdims=True), Z[ind])


# ------------------------------------------------------------------ Nyström
def nystrom_extension(embedding: ArrayLike, ind: ArrayLike, sqdist: ArrayLike) -> np.ndarray:
    """Nyström extension of the learned kernel with normalised Shepard weights.

    :math:`f(x) = \\sum_{j \\in N(x)} w_j(x) z_j`, :math:`w_j \\propto
    \\delta_j^{-1}`, :math:`\\sum_j w_j = 1` (module docstring: this is
    :math:`\\Lambda^{-1/2} U^\\top \\tilde K(x, \\cdot)` for the
    data-dependent kernel :math:`\\tilde K(x, x_i) = \\sum_j w_j(x)
    G_{ji}`, Bengio et al. 2004). A point with zero-distance neighbours gets
    their mean embedding (the limit of the weights), so a fitted point is
    reproduced exactly.

    Parameters
    ----------
    embedding : ndarray, shape (n_fit, d)
        Fitted coordinates :math:`z_i`.
    ind, sqdist : ndarray, shape (m, k)
        Neighbours and squared distances (:func:`fitted_neighbors`).

    Returns
    -------
    ndarray, shape (m, d)
    """
    Z, ind, sq = _check_inputs(embedding, ind, sqdist)
    zero = _duplicates(sq)
    has_zero = zero.any(axis=1)
    inv = np.where(zero, 0.0, 1.0 / np.where(zero, 1.0, sq))
    w = np.where(has_zero[:, None], zero.astype(float), inv)
    w /= w.sum(axis=1, keepdims=True)
    return np.einsum("mk,mkd->md", w, Z[ind])


# ------------------------------------------------------- distance placement
@dataclass(frozen=True)
class Placement:
    """Result of :func:`place_by_distances`.

    Attributes
    ----------
    coords : ndarray, shape (m, d)
        :math:`z`, the placement in the fitted embedding's coordinates.
    lift : ndarray, shape (m,)
        :math:`h = (\\tau - \\lVert z \\rVert^2)^{1/2}`, the height off the
        fitted embedding at which the distances fit best.
    objective : ndarray, shape (m,)
        :math:`\\sum_j |\\lVert z - z_j\\rVert^2 + h^2 - \\delta_j| / \\delta_j`
        at the placement (0 for points with a duplicate neighbour).
    gap : ndarray, shape (m,)
        Certified duality gap: objective minus the dual bound (0 for
        duplicates); the objective is within ``gap`` of the optimum.
    iterations : int
        Newton steps taken (the batch's maximum).
    """

    coords: np.ndarray
    lift: np.ndarray
    objective: np.ndarray
    gap: np.ndarray
    iterations: int


def _psi(r, beta):
    """Slack minimised out of the barrier, its first and second derivatives in ``r``.

    :math:`\\psi(r) = \\min_{s > |r|} \\beta s - \\log(s^2 - r^2)`; with
    :math:`\\rho = \\sqrt{1 + \\beta^2 r^2}` the minimiser is
    :math:`s = (1 + \\rho)/\\beta`, and (up to a constant)
    :math:`\\psi = 1 + \\rho - \\log(1 + \\rho)`,
    :math:`\\psi' = \\beta^2 r / (1 + \\rho)`,
    :math:`\\psi'' = \\beta^2 / (\\rho (1 + \\rho))`.
    """
    rho = np.sqrt(1.0 + (beta * r) ** 2)
    return (1.0 + rho - np.log1p(rho), beta**2 * r / (1.0 + rho),
            beta**2 / (rho * (1.0 + rho)))


def _newton_step(B, g2, z, q, grad) -> np.ndarray:
    """Newton step :math:`-H^{-1}\\nabla F` of the barrier problem, via its KKT form.

    :math:`H = B^\\top \\mathrm{diag}(\\psi'') B + \\tfrac{2}{q}E +
    \\tfrac{1}{q^2} a a^\\top` with :math:`E = \\mathrm{diag}(1, \\dots, 1, 0)`
    and :math:`a = \\nabla q = (-2z, 1)`. Near the optimum :math:`\\psi''_j` grows
    like :math:`(t\\omega_j)^2` on neighbours whose distance is met exactly (and
    :math:`1/q^2` when the point touches the embedding), so :math:`H` becomes too
    ill-conditioned to factor; the equivalent augmented system

    .. math::

        \\begin{bmatrix} \\tfrac{2}{q}E & B^\\top & a \\\\
                        B & -\\mathrm{diag}(\\psi'')^{-1} & 0 \\\\
                        a^\\top & 0 & -q^2 \\end{bmatrix}
        \\begin{bmatrix} \\Delta \\\\ w \\\\ v \\end{bmatrix}
        = \\begin{bmatrix} -\\nabla F \\\\ 0 \\\\ 0 \\end{bmatrix}

    (eliminate :math:`w = \\mathrm{diag}(\\psi'') B\\Delta`,
    :math:`v = a^\\top\\Delta / q^2`) stays well-posed as those entries blow up
    (the usual remedy for barrier Hessians; Wright, *Primal-Dual Interior-Point
    Methods*, ch. 11).
    """
    r, k, d1 = B.shape
    n = d1 + k + 1
    K = np.zeros((r, n, n))
    diag = np.arange(d1 - 1)
    K[:, diag, diag] = (2.0 / q)[:, None]
    K[:, :d1, d1:d1 + k] = B.transpose(0, 2, 1)
    K[:, d1:d1 + k, :d1] = B
    kk = np.arange(d1, d1 + k)
    K[:, kk, kk] = -1.0 / g2
    a = np.concatenate([-2.0 * z, np.ones((r, 1))], axis=1)
    K[:, :d1, -1] = a
    K[:, -1, :d1] = a
    K[:, -1, -1] = -q**2
    rhs = np.zeros((r, n))
    rhs[:, :d1] = -grad
    return np.linalg.solve(K, rhs[..., None])[..., 0, ][:, :d1]


def _dual_bound(y, A, c, omega) -> np.ndarray:
    """Dual function :math:`\\sum_j y_j c_j - \\lVert\\sum_j y_j a_j\\rVert^2 / \\sum_j y_j`.

    A lower bound on the placement objective for every :math:`y` in the box
    :math:`|y_j| \\le \\omega_j` (weak duality; module docstring); ``y`` is clipped
    into the box first, and a sum :math:`\\le 0` (bound :math:`-\\infty` unless
    :math:`\\sum_j y_j a_j = 0` too) is first raised to a tiny positive value
    through the entries with room below their upper bound.
    """
    y = np.clip(y, -omega, omega)
    scale = np.abs(y).sum(axis=1) + np.finfo(float).tiny
    short = np.maximum(1e-12 * scale - y.sum(axis=1), 0.0)  # raise sum(y) to 1e-12 scale
    room = omega - y
    y = y + room * (short / np.maximum(room.sum(axis=1), np.finfo(float).tiny))[:, None]
    sy = y.sum(axis=1)
    by = np.einsum("rk,rkd->rd", y, A)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.einsum("rk,rk->r", y, c) - np.einsum("rd,rd->r", by, by) / sy
    return np.where(sy > 0, g, -np.inf)


def _crossover(y, A, z, lam, omega) -> np.ndarray:
    """A dual point from the barrier multipliers and the optimality conditions.

    At an optimum, :math:`y_j = \\pm\\omega_j` where the residual :math:`r_j \\ne 0`,
    and :math:`\\sum_j y_j = \\lambda`, :math:`\\sum_j y_j a_j = \\lambda z`
    (stationarity in :math:`\\tau` and :math:`z`, :math:`\\lambda` the multiplier
    of :math:`\\tau \\ge \\lVert z\\rVert^2`). Entries with
    :math:`|y_j| \\ge (1 - 10^{-4})\\omega_j` are set to the bound; the others get the
    least-norm correction that satisfies the stationarity equations with
    :math:`\\lambda = 1/(tq)`, the barrier's estimate. The barrier multipliers alone
    carry round-off of order :math:`t\\omega_j\\epsilon` that, once
    :math:`t\\omega_j` is large (a near neighbour), swamps :math:`\\sum_j y_j`.
    """
    at_bound = np.abs(y) >= (1.0 - 1e-4) * omega
    y = np.where(at_bound, np.sign(y) * omega, y)
    M = np.concatenate([A, np.ones(A.shape[:2] + (1,))], axis=2).transpose(0, 2, 1)  # (r, d+1, k)
    target = np.concatenate([lam[:, None] * z, lam[:, None]], axis=1)
    Mf = M * (~at_bound)[:, None, :]
    resid = target - np.einsum("rdk,rk->rd", M, y)
    return y + np.einsum("rkd,rd->rk", np.linalg.pinv(Mf), resid)


def place_by_distances(embedding: ArrayLike, ind: ArrayLike, sqdist: ArrayLike, *,
                       tol: float = 1e-6, max_newton: int = 400) -> Placement:
    """Place new points by the DVU slack SOCP with the fitted embedding fixed.

    Solves, for every new point independently and all at once,

    .. math::

        \\min_{z, \\tau} \\sum_{j \\in N(x)} \\omega_j
            |\\tau - 2 z_j^\\top z + \\lVert z_j\\rVert^2 - \\delta_j|
        \\quad \\text{s.t.} \\quad \\tau \\ge \\lVert z \\rVert^2,
        \\qquad \\omega_j = \\delta_j^{-1}

    (module docstring: the DVU SDP with the fitted Gram block fixed and one
    new unlabelled point). Each point is first centred at its nearest
    neighbour's embedding and scaled by its mean :math:`\\delta` (the problem
    is invariant under both). The barrier problem for parameter :math:`t`,

    .. math::

        \\min_{z, \\tau} \\sum_j \\psi(r_j; t\\omega_j) - \\log(\\tau - \\lVert z\\rVert^2),
        \\qquad r_j = \\tau - 2 z_j^\\top z + c_j,\\ c_j = \\lVert z_j\\rVert^2 - \\delta_j,

    (:math:`\\psi` the slack barrier :math:`\\min_s t\\omega_j s - \\log(s^2 -
    r_j^2)`, in closed form) is solved by damped Newton steps with
    backtracking, then :math:`t \\leftarrow 10t`. The multipliers
    :math:`y_j = \\psi'(r_j)/t` satisfy :math:`|y_j| < \\omega_j`, so the dual
    function of the module docstring at :math:`y` is a lower bound; a point
    stops once objective minus bound is at most ``tol`` (the barrier
    parameter is :math:`\\nu = 2k + 1`, so this takes :math:`t \\approx
    \\nu / \\mathrm{tol}`).

    Parameters
    ----------
    embedding : ndarray, shape (n_fit, d)
    ind, sqdist : ndarray, shape (m, k)
        Neighbours and squared distances (:func:`fitted_neighbors`).
    tol : float
        Certified gap, in units of the objective (a sum of relative
        violations of the squared distances).
    max_newton : int
        Newton steps in all; points not certified by then keep their last
        (feasible) placement and an :class:`InaccurateSolutionWarning` says how
        many.

    Returns
    -------
    Placement
    """
    Z, ind, sq = _check_inputs(embedding, ind, sqdist)
    if not np.isfinite(tol) or tol <= 0:
        raise InputError(f"tol must be a positive number; got {tol}")
    m, k = ind.shape
    d = Z.shape[1]
    coords = np.empty((m, d))
    lift = np.zeros(m)
    objective = np.zeros(m)
    gap = np.zeros(m)
    zero = _duplicates(sq)
    dup = zero.any(axis=1)
    if dup.any():
        coords[dup] = _duplicate_mean(Z, ind[dup], zero[dup])
    rows = np.flatnonzero(~dup)
    if rows.size == 0:
        return Placement(coords, lift, objective, gap, 0)

    A = Z[ind[rows]]  # (r, k, d)
    # centred at the nearest neighbour, the heaviest: its terms then carry no
    # cancellation (c_j = -delta_j, a_j = 0), which matters when delta_j is tiny
    center = A[np.arange(rows.size), np.argmin(sq[rows], axis=1)]
    scale = np.sqrt(sq[rows].mean(axis=1))
    A = (A - center[:, None, :]) / scale[:, None, None]
    delta = sq[rows] / scale[:, None] ** 2
    omega = 1.0 / delta
    c = np.einsum("rkd,rkd->rk", A, A) - delta
    B = np.concatenate([-2.0 * A, np.ones(A.shape[:2] + (1,))], axis=2)  # dr/du, (r, k, d+1)
    nu = 2 * k + 1

    n = rows.size
    u = np.zeros((n, d + 1))
    u[:, d] = 1.0  # z = 0, tau = 1: strictly feasible
    p0 = np.einsum("rk,rk->r", omega, np.abs(B[:, :, d] + c))  # objective at u
    t = nu / np.maximum(p0, 1e-3)
    active = np.ones(n, dtype=bool)
    stage = np.zeros(n, dtype=np.int64)  # Newton steps at the current t
    steps = 0
    cert = np.full(n, np.inf)
    prim = np.zeros(n)

    def barrier(uu, rr_idx, tt):
        z, tau = uu[:, :d], uu[:, d]
        q = tau - np.einsum("rd,rd->r", z, z)
        r = np.einsum("rkd,rd->rk", B[rr_idx], uu) + c[rr_idx]
        f = _psi(r, tt[:, None] * omega[rr_idx])[0].sum(axis=1)
        return np.where(q > 0, f - np.log(np.where(q > 0, q, 1.0)), np.inf)

    def certify(idx):
        z, tau = u[idx, :d], u[idx, d]
        r = np.einsum("rkd,rd->rk", B[idx], u[idx]) + c[idx]
        y = _psi(r, t[idx, None] * omega[idx])[1] / t[idx, None]
        lam = 1.0 / (t[idx] * (tau - np.einsum("rd,rd->r", z, z)))
        dual = np.maximum(_dual_bound(y, A[idx], c[idx], omega[idx]),
                          _dual_bound(_crossover(y, A[idx], z, lam, omega[idx]), A[idx], c[idx],
                                      omega[idx]))
        p = np.einsum("rk,rk->r", omega[idx], np.abs(r))
        return p, p - np.maximum(dual, 0.0)  # the objective is >= 0: 0 is a bound too

    while active.any() and steps < max_newton:
        idx = np.flatnonzero(active)
        # one damped Newton step on the barrier problem of every active point
        uu = u[idx]
        z, tau = uu[:, :d], uu[:, d]
        q = tau - np.einsum("rd,rd->r", z, z)
        r = np.einsum("rkd,rd->rk", B[idx], uu) + c[idx]
        _, g1, g2 = _psi(r, t[idx, None] * omega[idx])
        grad = np.einsum("rk,rkd->rd", g1, B[idx])
        grad[:, :d] += 2.0 * z / q[:, None]
        grad[:, d] -= 1.0 / q
        step = _newton_step(B[idx], g2, z, q, grad)
        dec = -np.einsum("rd,rd->r", grad, step)  # Newton decrement squared
        f0 = barrier(uu, idx, t[idx])
        alpha = np.ones(idx.size)
        todo = np.ones(idx.size, dtype=bool)
        for _ in range(60):
            f1 = barrier(uu[todo] + alpha[todo, None] * step[todo], idx[todo], t[idx[todo]])
            # Armijo, or the full step in the quadratic region of the (self-concordant)
            # barrier, where Armijo's test drowns in round-off at large t
            ok = (f1 <= f0[todo] - 0.25 * alpha[todo] * dec[todo]) \
                | ((dec[todo] <= 0.05) & (alpha[todo] == 1.0) & np.isfinite(f1))
            sub = np.flatnonzero(todo)
            todo[sub[ok]] = False
            alpha[sub[~ok]] *= 0.5
            if not todo.any():
                break
        alpha[todo] = 0.0
        u[idx] = uu + alpha[:, None] * step
        steps += 1
        stage[idx] += 1
        # centred (or stuck, or centring for _STAGE_STEPS steps): certify, then raise t
        centred = (dec <= 1e-10) | (alpha == 0.0) | (stage[idx] >= _STAGE_STEPS)
        if centred.any():
            cidx = idx[centred]
            p, gp = certify(cidx)
            prim[cidx], cert[cidx] = p, gp
            done = gp <= tol
            active[cidx[done]] = False
            # t far beyond nu/tol and still no certificate: round-off rules, give up
            active[cidx[~done & (t[cidx] * tol > 1e4 * nu)]] = False
            t[cidx[~done]] *= 10.0
            stage[cidx] = 0

    left = ~np.isfinite(cert) | (cert > tol)
    if left.any():
        p, gp = certify(np.flatnonzero(left))
        prim[left], cert[left] = p, gp
    bad = int(np.sum(cert > tol))
    if bad:
        warn(f"place_by_distances: {bad} of {n} points not certified to tol={tol:g} "
                      f"within {max_newton} Newton steps (largest gap {np.max(cert):.2e}); "
                      "their placements are feasible but may be suboptimal",
                      InaccurateSolutionWarning)
    zc, tau = u[:, :d], u[:, d]
    coords[rows] = zc * scale[:, None] + center
    lift[rows] = np.sqrt(np.maximum(tau - np.einsum("rd,rd->r", zc, zc), 0.0)) * scale
    objective[rows] = prim
    gap[rows] = cert
    logger.debug("place_by_distances: %d points (%d duplicates), %d Newton steps, max gap %.2e",
                 m, int(dup.sum()), steps, float(np.max(cert)))
    return Placement(coords, lift, objective, gap, steps)


def extend(embedding: ArrayLike, ind: ArrayLike, sqdist: ArrayLike, method: str = "distances",
           **options: Any) -> np.ndarray:
    """Coordinates of new points by ``method`` (:data:`OUT_OF_SAMPLE_METHODS`).

    ``"nystrom"``: :func:`nystrom_extension`; ``"distances"``:
    :func:`place_by_distances` (``options`` go to it) and its ``coords``.
    """
    if method == "nystrom":
        if options:
            raise InputError(f"nystrom takes no options; got {sorted(options)}")
        return nystrom_extension(embedding, ind, sqdist)
    if method == "distances":
        return place_by_distances(embedding, ind, sqdist, **options).coords
    raise InputError(f"out-of-sample method must be one of {OUT_OF_SAMPLE_METHODS}; "
                     f"got {method!r}")

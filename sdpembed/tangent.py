"""Tangent distance between images, deslanting and tangent-distance neighbour graphs.

The tangent distance of Simard, LeCun, Denker & Victorri ("Transformation
invariance in pattern recognition: tangent distance and tangent propagation",
*Neural Networks: Tricks of the Trade*, 1998) compares two images after
moving each of them, to first order, along a set of known transformations
(translations, rotation, scaling, hyperbolic deformations, line thickness).
For images :math:`a, b \\in \\mathbb{R}^p` with tangent matrices
:math:`T_a, T_b \\in \\mathbb{R}^{p \\times k}` (one column per
transformation) the squared two-sided tangent distance is the least-squares
problem

.. math::

    \\mathrm{TD}^2(a, b) = \\min_{\\alpha, \\beta \\in \\mathbb{R}^k}
        \\lVert a + T_a \\alpha - b - T_b \\beta \\rVert^2
        + \\lambda (\\lVert \\alpha \\rVert^2 + \\lVert \\beta \\rVert^2),

the one-sided distance fixes :math:`\\alpha = 0` (only the reference image
``b`` moves). :math:`\\lambda \\ge 0` (``regularization``) is Simard's
"spring" that keeps the two tangent planes from sliding along a shared
direction. Because :math:`\\alpha = \\beta = 0` is feasible,
:math:`0 \\le \\mathrm{TD}^2 \\le \\lVert a - b \\rVert^2`.

The DVU paper (Vernaza, Lee & Taskar, "Discriminative Variance Unfolding",
section 4) builds its USPS neighbourhood graph from two-sided tangent
distances between deslanted digits; :func:`tangent_knn_graph` does that and is
what ``sdpembed.graphs.knn_graph(..., metric="tangent")`` calls.

Computation
-----------
Every image gets a *whitened* tangent basis :math:`U = T W` with
:math:`W = (T^\\top T + \\lambda I)^{-1/2}`, so that
:math:`\\lVert T\\alpha \\rVert^2 + \\lambda \\lVert\\alpha\\rVert^2 =
\\lVert u \\rVert^2` for :math:`\\alpha = W u` (for :math:`\\lambda = 0`,
:math:`U` is an orthonormal basis of the tangent plane). With
:math:`d = a - b`, :math:`p = U_a^\\top d`, :math:`q = U_b^\\top d` and
:math:`C = U_a^\\top U_b` the problem becomes
:math:`\\min_{u,v} \\lVert d\\rVert^2 + 2p^\\top u - 2q^\\top v + \\lVert u\\rVert^2
+ \\lVert v\\rVert^2 - 2u^\\top C v`; eliminating :math:`u = Cv - p` leaves a
:math:`k \\times k` system with the Schur complement
:math:`S = I - C^\\top C \\succeq 0`:

.. math::

    \\mathrm{TD}^2_{\\text{two}} = \\lVert d \\rVert^2 - \\lVert p \\rVert^2
        - r^\\top S^{-1} r, \\quad r = q - C^\\top p, \\qquad
    \\mathrm{TD}^2_{\\text{one}} = \\lVert d \\rVert^2 - \\lVert q \\rVert^2 .

Per pair this costs one :math:`k \\times p \\times k` product and one
:math:`k \\times k` solve, done for many pairs at once on stacked arrays
(``numpy.matmul`` / ``numpy.linalg.solve``); all-pairs matrices use one large
matrix product per block of rows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from scipy import ndimage
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state

from .exceptions import InputError, LabelError
from .graphs import NeighborhoodGraph, _from_pairs, _random_partners

__all__ = [
    "TRANSFORMS",
    "image_tangents",
    "deslant",
    "tangent_distance",
    "paired_tangent_distances",
    "tangent_distances",
    "tangent_kneighbors",
    "tangent_knn_predict",
    "tangent_knn_graph",
]

logger = logging.getLogger(__name__)

#: The seven transformations of Simard et al.: horizontal and vertical
#: translation, rotation, scaling, the two hyperbolic deformations and line
#: thickness.
TRANSFORMS = (
    "x",
    "y",
    "rotation",
    "scaling",
    "axis_deformation",
    "diagonal_deformation",
    "thickness",
)

#: Default width (pixels) of the Gaussian that smooths images before their
#: gradients are taken; chosen on the USPS training set (see
#: ``problems/bench_tangent.py``).
DEFAULT_SIGMA = 1.0

# Relative floor on eigenvalues of T^T T (directions below it are dropped) and
# diagonal jitter on the Schur complement S (keeps identical planes solvable).
_EIG_RTOL = 1e-10
_SCHUR_JITTER = 1e-10
# Stacked arrays are processed in chunks of about this many bytes.
_CHUNK_BYTES = 64 * 2**20


# ---------------------------------------------------------------- validation
def _check_shape(shape) -> tuple[int, int]:
    try:
        h, w = (int(s) for s in shape)
    except (TypeError, ValueError) as exc:
        raise InputError(f"shape must be a pair (height, width) of integers; got {shape!r}") from exc
    if h < 3 or w < 3:
        raise InputError(f"images must be at least 3 x 3 pixels; got shape {(h, w)}")
    return h, w


def _check_images(images, shape, *, name="images", min_samples=1) -> np.ndarray:
    """Return ``images`` as a finite float64 array of shape (n, height * width).

    Accepts rows of flattened images, shape (n, h*w), or a stack (n, h, w).
    """
    h, w = _check_shape(shape)
    try:
        X = np.asarray(images, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a numeric array: {exc}") from exc
    if X.ndim == 3:
        if X.shape[1:] != (h, w):
            raise InputError(f"{name} is a stack of {X.shape[1]} x {X.shape[2]} images but "
                             f"shape={(h, w)}; pass shape={X.shape[1:]}")
        X = X.reshape(X.shape[0], h * w)
    if X.ndim != 2:
        raise InputError(f"{name} must be 2-D (n_images, height*width) or 3-D (n_images, "
                         f"height, width); got shape {X.shape}")
    if X.shape[1] != h * w:
        raise InputError(f"{name} has {X.shape[1]} pixels per image but shape={(h, w)} "
                         f"needs {h * w}; pass the right shape=(height, width)")
    if X.shape[0] < min_samples:
        raise InputError(f"{name} needs at least {min_samples} image(s); got {X.shape[0]}")
    if not np.all(np.isfinite(X)):
        bad = np.argwhere(~np.isfinite(X))[:5].tolist()
        raise InputError(f"{name} contains NaN or infinite pixels (first at image/pixel {bad}); "
                         "impute or drop those images")
    return X


def _check_single(image, shape, name) -> np.ndarray:
    h, w = _check_shape(shape)
    arr = np.asarray(image)
    if arr.ndim == 2 and arr.shape != (h, w) and arr.shape[0] != 1:
        raise InputError(f"{name} is a {arr.shape[0]} x {arr.shape[1]} image but shape={(h, w)}")
    if arr.ndim not in (1, 2) or arr.size != h * w:
        raise InputError(f"{name} must be one image with {h * w} pixels (shape={(h, w)}); "
                         f"got an array of shape {arr.shape}")
    return _check_images(arr.reshape(1, h * w), shape, name=name)


def _check_transforms(transforms) -> tuple[str, ...]:
    if isinstance(transforms, str):
        transforms = (transforms,)
    transforms = tuple(transforms)
    unknown = [t for t in transforms if t not in TRANSFORMS]
    if unknown:
        raise InputError(f"unknown transformation(s) {unknown}; choose from {TRANSFORMS}")
    if len(set(transforms)) != len(transforms):
        raise InputError(f"transforms must not repeat; got {transforms}")
    return transforms


def _check_nonneg(value, name) -> float:
    value = float(value)
    if not np.isfinite(value) or value < 0:
        raise InputError(f"{name} must be a finite number >= 0; got {value}")
    return value


def _check_sided(sided) -> str:
    if sided not in ("one", "two"):
        raise InputError(f"sided must be 'one' (tangent plane of the reference image) or "
                         f"'two' (both planes); got {sided!r}")
    return sided


# ------------------------------------------------------------------ tangents
def image_tangents(images, shape=(16, 16), transforms=TRANSFORMS, sigma=DEFAULT_SIGMA):
    """Tangent vectors of a batch of images, one per transformation.

    The image :math:`I` is smoothed with a Gaussian :math:`G_\\sigma`
    (zero background outside the frame) and each tangent is the derivative of
    the transformed smoothed image with respect to the transformation
    parameter at zero. For a transformation moving pixels with velocity field
    :math:`v(x, y)` the tangent is :math:`-\\nabla (G_\\sigma * I) \\cdot v`
    (Simard et al., 1998, section 3), with :math:`x` to the right,
    :math:`y` downwards, both measured in pixels from the image centre:

    ======================== ======================= ===================================
    transform                 velocity :math:`v`     tangent
    ======================== ======================= ===================================
    ``x`` (shift right)       :math:`(1, 0)`          :math:`-g_x`
    ``y`` (shift down)        :math:`(0, 1)`          :math:`-g_y`
    ``rotation``              :math:`(-y, x)`         :math:`y g_x - x g_y`
    ``scaling``               :math:`(x, y)`          :math:`-(x g_x + y g_y)`
    ``axis_deformation``      :math:`(x, -y)`         :math:`-(x g_x - y g_y)`
    ``diagonal_deformation``  :math:`(y, x)`          :math:`-(y g_x + x g_y)`
    ``thickness``             (line thickening)       :math:`g_x^2 + g_y^2`
    ======================== ======================= ===================================

    where :math:`(g_x, g_y) = \\nabla (G_\\sigma * I)`, computed with Gaussian
    derivative filters. Rotation is in radians (clockwise as displayed, since
    rows go down), translations in pixels, scaling and deformations are
    relative.

    Parameters
    ----------
    images : array-like, shape (n, height*width) or (n, height, width)
        Row-major images.
    shape : (int, int)
        ``(height, width)`` of one image.
    transforms : sequence of str
        A subset of :data:`TRANSFORMS`, in the order wanted.
    sigma : float
        Width in pixels of the smoothing Gaussian (> 0).

    Returns
    -------
    tangents : ndarray, shape (n, len(transforms), height*width)
    """
    h, w = _check_shape(shape)
    transforms = _check_transforms(transforms)
    X = _check_images(images, (h, w))
    sigma = _check_nonneg(sigma, "sigma")
    if sigma == 0:
        raise InputError("sigma must be positive (the gradients are Gaussian derivatives)")
    return _tangents(X, (h, w), transforms, sigma)


def _tangents(X, shape, transforms, sigma) -> np.ndarray:
    h, w = shape
    imgs = X.reshape(-1, h, w)
    kw = dict(sigma=sigma, axes=(1, 2), mode="constant", cval=0.0)
    gx = ndimage.gaussian_filter(imgs, order=(0, 1), **kw)
    gy = ndimage.gaussian_filter(imgs, order=(1, 0), **kw)
    y = (np.arange(h) - (h - 1) / 2.0)[:, None]
    x = (np.arange(w) - (w - 1) / 2.0)[None, :]
    formulas = {
        "x": lambda: -gx,
        "y": lambda: -gy,
        "rotation": lambda: y * gx - x * gy,
        "scaling": lambda: -(x * gx + y * gy),
        "axis_deformation": lambda: -(x * gx - y * gy),
        "diagonal_deformation": lambda: -(y * gx + x * gy),
        "thickness": lambda: gx**2 + gy**2,
    }
    T = np.stack([formulas[t]() for t in transforms], axis=1)
    return T.reshape(X.shape[0], len(transforms), h * w)


def _whiten(T, regularization) -> np.ndarray:
    """Rows of :math:`W^\\top T^\\top` with :math:`W = (T^\\top T + \\lambda I)^{-1/2}`.

    ``T`` has shape (n, k, p) (tangents as rows). Directions whose
    eigenvalue falls below ``_EIG_RTOL`` times the largest are dropped
    (zero rows), so blank images and degenerate tangents are harmless.
    """
    G = T @ T.transpose(0, 2, 1)
    evals, evecs = np.linalg.eigh(G)
    top = np.maximum(evals[:, -1:], np.finfo(float).tiny)
    keep = evals > _EIG_RTOL * top
    scale = np.where(keep, 1.0 / np.sqrt(np.where(keep, evals, 1.0) + regularization), 0.0)
    Wt = (evecs * scale[:, None, :]).transpose(0, 2, 1)  # (n, k, k), rows: scaled eigvecs
    return Wt @ T


@dataclass(frozen=True)
class _Prepared:
    """Images and whitened tangent bases ready for distance computations."""

    X: np.ndarray  # (n, p) images compared (deslanted if asked)
    U: np.ndarray  # (n, k, p) whitened tangent basis, rows


def _prepare(X, shape, transforms, sigma, regularization, deslanted=False) -> _Prepared:
    if deslanted:
        X = _deslant(X, shape)
    T = _tangents(X, shape, transforms, sigma)
    return _Prepared(X=X, U=_whiten(T, regularization))


# ------------------------------------------------------------------ deslant
def deslant(images, shape=(16, 16)):
    """Remove the slant of each image by a horizontal shear (moment normalisation).

    With pixel intensities :math:`I(x, y) \\ge 0` as weights (after
    subtracting each image's minimum), centroid :math:`(\\bar x, \\bar y)`
    and central moments :math:`\\mu_{11} = E[(x-\\bar x)(y-\\bar y)]`,
    :math:`\\mu_{02} = E[(y-\\bar y)^2]`, the slant is
    :math:`s = \\mu_{11} / \\mu_{02}` and the output is
    :math:`J(x, y) = I(x + s (y - \\bar y), y)` (linear interpolation along
    rows, background outside the frame), whose mixed moment is zero and
    whose centroid is unchanged. Ink sheared past the left or right edge is
    lost. The DVU paper deslants the USPS digits before computing tangent
    distances (section 4).

    Parameters
    ----------
    images : array-like, shape (n, height*width) or (n, height, width)
    shape : (int, int)

    Returns
    -------
    ndarray, shape (n, height*width), float64
    """
    h, w = _check_shape(shape)
    return _deslant(_check_images(images, (h, w)), (h, w))


def _deslant(X, shape) -> np.ndarray:
    h, w = shape
    imgs = X.reshape(-1, h, w)
    bg = imgs.min(axis=(1, 2), keepdims=True)
    wgt = imgs - bg
    mass = wgt.sum(axis=(1, 2), keepdims=True)
    safe = np.where(mass > 0, mass, 1.0)
    y = np.arange(h, dtype=float)[None, :, None]
    x = np.arange(w, dtype=float)[None, None, :]
    ybar = (wgt * y).sum(axis=(1, 2), keepdims=True) / safe
    xbar = (wgt * x).sum(axis=(1, 2), keepdims=True) / safe
    mu11 = (wgt * (x - xbar) * (y - ybar)).sum(axis=(1, 2), keepdims=True) / safe
    mu02 = (wgt * (y - ybar) ** 2).sum(axis=(1, 2), keepdims=True) / safe
    slant = np.where((mass > 0) & (mu02 > 0), mu11 / np.where(mu02 > 0, mu02, 1.0), 0.0)
    src = x + slant * (y - ybar)  # (n, h, w) source column of each output pixel
    x0 = np.floor(src).astype(np.intp)
    frac = src - x0

    def sample(col):
        inside = (col >= 0) & (col < w)
        vals = np.take_along_axis(wgt, np.clip(col, 0, w - 1), axis=2)
        return np.where(inside, vals, 0.0)

    out = (1.0 - frac) * sample(x0) + frac * sample(x0 + 1) + bg
    return out.reshape(X.shape[0], h * w)


# ------------------------------------------------------------- the distance
def _solve_td(C, p, q, dd, sided) -> np.ndarray:
    """Squared tangent distances from the per-pair quantities (see module docstring).

    ``C`` (N, k, k), ``p``, ``q`` (N, k), ``dd`` (N,). Results are clipped to
    ``[0, dd]``, the exact bounds, to remove round-off.
    """
    if sided == "one":
        td = dd - np.einsum("nk,nk->n", q, q)
    else:
        k = C.shape[-1]
        Ct = C.transpose(0, 2, 1)
        S = np.eye(k) * (1.0 + _SCHUR_JITTER) - Ct @ C
        r = q - np.einsum("nij,nj->ni", Ct, p)
        z = np.linalg.solve(S, r[..., None])[..., 0]
        td = dd - np.einsum("nk,nk->n", p, p) - np.einsum("nk,nk->n", r, z)
    return np.clip(td, 0.0, dd)


def _pair_td(A: _Prepared, B: _Prepared, i, j, sided) -> np.ndarray:
    """Tangent distances between ``A.X[i[e]]`` and ``B.X[j[e]]`` for each e, in chunks."""
    i = np.asarray(i, dtype=np.intp)
    j = np.asarray(j, dtype=np.intp)
    k, p = A.U.shape[1:]
    out = np.empty(i.size)
    step = max(1, _CHUNK_BYTES // (8 * (2 * k + 1) * p))
    for s in range(0, i.size, step):
        ii, jj = i[s:s + step], j[s:s + step]
        d = A.X[ii] - B.X[jj]
        dd = np.einsum("np,np->n", d, d)
        Ub = B.U[jj]
        q = Ub @ d[..., None]
        if sided == "one":
            out[s:s + step] = _solve_td(None, None, q[..., 0], dd, sided)
            continue
        Ua = A.U[ii]
        C = Ua @ Ub.transpose(0, 2, 1)
        pv = Ua @ d[..., None]
        out[s:s + step] = _solve_td(C, pv[..., 0], q[..., 0], dd, sided)
    return out


def _block_td(A: _Prepared, B: _Prepared, sided) -> np.ndarray:
    """All-pairs tangent distances, one large matrix product per block of rows of A."""
    nA, k, p = A.U.shape
    nB = B.U.shape[0]
    # Features [U; x] so that one product gives C, U_a b, U_b a and a.b.
    FA = np.concatenate([A.U, A.X[:, None, :]], axis=1)  # (nA, k+1, p)
    FB = np.concatenate([B.U, B.X[:, None, :]], axis=1).reshape(nB * (k + 1), p)
    sqA = np.einsum("np,np->n", A.X, A.X)
    sqB = np.einsum("np,np->n", B.X, B.X)
    sA = np.einsum("nkp,np->nk", A.U, A.X)  # U_a a
    sB = np.einsum("nkp,np->nk", B.U, B.X)  # U_b b
    out = np.empty((nA, nB))
    rows = max(1, _CHUNK_BYTES // (8 * (k + 1) ** 2 * nB))
    for s in range(0, nA, rows):
        e = min(nA, s + rows)
        M = (FA[s:e].reshape(-1, p) @ FB.T).reshape(e - s, k + 1, nB, k + 1)
        M = M.transpose(0, 2, 1, 3).reshape(-1, k + 1, k + 1)  # pair-major
        ab = M[:, k, k]
        dd = np.maximum((sqA[s:e, None] + sqB[None, :]).ravel() - 2.0 * ab, 0.0)
        q = (M[:, k, :k] - np.broadcast_to(sB, (e - s, nB, k)).reshape(-1, k))  # U_b (a - b)
        if sided == "one":
            td = _solve_td(None, None, q, dd, sided)
        else:
            pv = np.repeat(sA[s:e], nB, axis=0) - M[:, :k, k]  # U_a (a - b)
            td = _solve_td(np.ascontiguousarray(M[:, :k, :k]), pv, q, dd, sided)
        out[s:e] = td.reshape(e - s, nB)
    return out


def tangent_distance(a, b, *, shape=(16, 16), sided="two", transforms=TRANSFORMS,
                     sigma=DEFAULT_SIGMA, regularization=0.0) -> float:
    """Squared tangent distance between two images.

    .. math::

        \\mathrm{TD}^2(a, b) = \\min_{\\alpha, \\beta}
            \\lVert a + T_a\\alpha - b - T_b\\beta \\rVert^2
            + \\lambda(\\lVert\\alpha\\rVert^2 + \\lVert\\beta\\rVert^2)

    (Simard et al., 1998); with ``sided="one"`` only the reference image
    ``b`` moves (:math:`\\alpha = 0`).

    Parameters
    ----------
    a, b : array-like, shape (height*width,) or (height, width)
    shape : (int, int)
    sided : {"two", "one"}
    transforms : sequence of str
        Subset of :data:`TRANSFORMS`.
    sigma : float
        Smoothing (pixels) for the image gradients, see :func:`image_tangents`.
    regularization : float
        :math:`\\lambda \\ge 0`, penalty on the squared transformation
        coefficients (pixels, radians, relative scale).

    Returns
    -------
    float
        The squared distance, in ``[0, ||a - b||^2]``.
    """
    h, w = _check_shape(shape)
    a = _check_single(a, (h, w), "a")
    b = _check_single(b, (h, w), "b")
    prep = _settings(transforms, sigma, regularization, sided)
    A = _prepare(a, (h, w), prep.transforms, prep.sigma, prep.regularization)
    B = _prepare(b, (h, w), prep.transforms, prep.sigma, prep.regularization)
    return float(_pair_td(A, B, [0], [0], prep.sided)[0])


@dataclass(frozen=True)
class _Settings:
    transforms: tuple[str, ...]
    sigma: float
    regularization: float
    sided: str


def _settings(transforms, sigma, regularization, sided) -> _Settings:
    sigma = _check_nonneg(sigma, "sigma")
    if sigma == 0:
        raise InputError("sigma must be positive (the gradients are Gaussian derivatives)")
    return _Settings(_check_transforms(transforms), sigma,
                     _check_nonneg(regularization, "regularization"), _check_sided(sided))


def paired_tangent_distances(A, B, *, shape=(16, 16), sided="two", transforms=TRANSFORMS,
                             sigma=DEFAULT_SIGMA, regularization=0.0) -> np.ndarray:
    """Squared tangent distances between rows ``A[e]`` and ``B[e]`` (vectorized).

    Same definition and parameters as :func:`tangent_distance`; ``A`` and
    ``B`` hold the same number of images.

    Returns
    -------
    ndarray, shape (n,)
    """
    h, w = _check_shape(shape)
    A = _check_images(A, (h, w), name="A")
    B = _check_images(B, (h, w), name="B")
    if A.shape != B.shape:
        raise InputError(f"A and B must hold the same number of images; got {A.shape[0]} "
                         f"and {B.shape[0]} (use tangent_distances for all pairs)")
    st = _settings(transforms, sigma, regularization, sided)
    PA = _prepare(A, (h, w), st.transforms, st.sigma, st.regularization)
    PB = _prepare(B, (h, w), st.transforms, st.sigma, st.regularization)
    idx = np.arange(A.shape[0])
    return _pair_td(PA, PB, idx, idx, st.sided)


def tangent_distances(A, B=None, *, shape=(16, 16), sided="two", transforms=TRANSFORMS,
                      sigma=DEFAULT_SIGMA, regularization=0.0) -> np.ndarray:
    """Matrix of squared tangent distances between all images of ``A`` and ``B``.

    Entry ``[i, j]`` is :math:`\\mathrm{TD}^2(A_i, B_j)` as in
    :func:`tangent_distance` (``B`` is the reference for ``sided="one"``);
    ``B=None`` means ``B = A``. Computed by blocks of rows: one matrix product
    of the stacked features :math:`[U; x]` gives every
    :math:`C = U_a^\\top U_b`, :math:`U_a^\\top b`, :math:`U_b^\\top a` and
    :math:`a^\\top b`, then one batched :math:`k \\times k` solve per pair.
    :math:`\\lVert a - b\\rVert^2` comes from the expansion
    :math:`\\lVert a\\rVert^2 + \\lVert b\\rVert^2 - 2a^\\top b`, so
    near-duplicate pairs carry round-off of order
    :math:`10^{-15} \\lVert a \\rVert^2`; use
    :func:`paired_tangent_distances` where exact zeros matter.

    Returns
    -------
    ndarray, shape (n_A, n_B)
    """
    h, w = _check_shape(shape)
    A = _check_images(A, (h, w), name="A")
    st = _settings(transforms, sigma, regularization, sided)
    PA = _prepare(A, (h, w), st.transforms, st.sigma, st.regularization)
    if B is None:
        PB = PA
    else:
        PB = _prepare(_check_images(B, (h, w), name="B"), (h, w), st.transforms, st.sigma,
                      st.regularization)
    return _block_td(PA, PB, st.sided)


# -------------------------------------------------------- neighbour search
def _euclidean_candidates(Xq, Xr, n_candidates, exclude_self) -> np.ndarray:
    nn = NearestNeighbors(n_neighbors=n_candidates, algorithm="brute")
    nn.fit(Xr)
    if exclude_self:
        return nn.kneighbors(return_distance=False)
    return nn.kneighbors(Xq, return_distance=False)


def _kneighbors(Q: _Prepared, R: _Prepared, n_neighbors, candidates, sided, exclude_self):
    """Tangent-distance k nearest neighbours of each query among the references.

    Candidates are the ``candidates`` Euclidean nearest references (all of
    them when ``candidates`` is None); they are re-ranked by tangent
    distance. Returns ``(sqdist, ind)``, both (n_query, n_neighbors), sorted.
    """
    nq, nr = Q.X.shape[0], R.X.shape[0]
    pool = nr - 1 if exclude_self else nr
    if not 1 <= n_neighbors <= pool:
        raise InputError(f"n_neighbors={n_neighbors} must be in [1, {pool}] "
                         f"({nr} reference images{', excluding each point itself' if exclude_self else ''})")
    if candidates is None or int(candidates) >= pool:
        D = _block_td(Q, R, sided)
        if exclude_self:
            np.fill_diagonal(D, np.inf)
        cand = np.broadcast_to(np.arange(nr), (nq, nr))
    else:
        candidates = int(candidates)
        if candidates < n_neighbors:
            raise InputError(f"candidates={candidates} must be >= n_neighbors={n_neighbors}")
        cand = _euclidean_candidates(Q.X, R.X, candidates, exclude_self)
        qi = np.repeat(np.arange(nq), candidates)
        if exclude_self and sided == "two":
            # two-sided TD is symmetric: compute each unordered pair once
            lo, hi = np.minimum(qi, cand.ravel()), np.maximum(qi, cand.ravel())
            keys, inverse = np.unique(lo * nr + hi, return_inverse=True)
            D = _pair_td(Q, R, keys // nr, keys % nr, sided)[inverse.ravel()]
        else:
            D = _pair_td(Q, R, qi, cand.ravel(), sided)
        D = D.reshape(nq, candidates)
    # stable ordering by (distance, reference index)
    order = np.lexsort((cand, D), axis=1)[:, :n_neighbors]
    return np.take_along_axis(D, order, axis=1), np.take_along_axis(cand, order, axis=1)


def tangent_kneighbors(X, X_ref=None, *, n_neighbors=1, candidates=50, shape=(16, 16),
                       sided="two", transforms=TRANSFORMS, sigma=DEFAULT_SIGMA,
                       regularization=0.0, deslant=False):
    """Nearest neighbours by tangent distance, preselected by Euclidean distance.

    For each image of ``X`` the ``candidates`` nearest images of ``X_ref`` in
    Euclidean distance are re-ranked by :math:`\\mathrm{TD}^2` (the
    hierarchical search of Simard et al., 1998, section 4, with one filter
    level); ``candidates=None`` ranks all of ``X_ref`` (exact, slower).
    ``X_ref=None`` searches ``X`` itself, excluding each image.

    Parameters
    ----------
    X, X_ref : array-like, shape (n, height*width) or (n, height, width)
    n_neighbors : int
    candidates : int or None
    shape, sided, transforms, sigma, regularization
        As in :func:`tangent_distance`; ``X_ref`` is the reference side of a
        one-sided distance.
    deslant : bool
        Deslant both sets first (:func:`deslant`); the Euclidean preselection
        then also uses the deslanted images.

    Returns
    -------
    sqdist : ndarray, shape (n, n_neighbors)
        Squared tangent distances, ascending.
    indices : ndarray of int, shape (n, n_neighbors)
        Rows of ``X_ref`` (or ``X``).
    """
    h, w = _check_shape(shape)
    st = _settings(transforms, sigma, regularization, sided)
    X = _check_images(X, (h, w), name="X")
    Q = _prepare(X, (h, w), st.transforms, st.sigma, st.regularization, deslant)
    if X_ref is None:
        R, exclude = Q, True
    else:
        Xr = _check_images(X_ref, (h, w), name="X_ref")
        R, exclude = _prepare(Xr, (h, w), st.transforms, st.sigma, st.regularization,
                              deslant), False
    return _kneighbors(Q, R, int(n_neighbors), candidates, st.sided, exclude)


def _vote(labels, n_classes) -> np.ndarray:
    """Majority vote over neighbours sorted nearest first; ties go to the nearer class.

    Each neighbour of rank r (0-based) among k adds ``1 + (k - r) / (k + 1)**2``
    to its class: the bonus sums to less than 1, so it only breaks ties, in
    favour of the class whose members rank higher.
    """
    n, k = labels.shape
    bonus = 1.0 + (k - np.arange(k)) / (k + 1.0) ** 2
    votes = np.zeros((n, n_classes))
    np.add.at(votes, (np.repeat(np.arange(n), k), labels.ravel()), np.tile(bonus, n))
    return votes.argmax(axis=1)


def tangent_knn_predict(X_train, y_train, X_test, *, n_neighbors=1, candidates=50,
                        shape=(16, 16), sided="two", transforms=TRANSFORMS,
                        sigma=DEFAULT_SIGMA, regularization=0.0, deslant=False):
    """k-nearest-neighbour classification with the tangent distance.

    Majority vote among the ``n_neighbors`` training images nearest in
    tangent distance (found by :func:`tangent_kneighbors`); ties go to the
    class whose members rank nearer. Labels may be any values;
    the prediction has the dtype of ``y_train``.

    Returns
    -------
    ndarray, shape (n_test,)
    """
    y_train = np.asarray(y_train)
    n_train = np.shape(X_train)[0] if np.ndim(X_train) >= 2 else -1
    if y_train.ndim != 1 or y_train.shape[0] != n_train:
        raise LabelError(f"y_train must be 1-D with one label per training image ({n_train}); "
                         f"got shape {y_train.shape}")
    classes, y_idx = np.unique(y_train, return_inverse=True)
    _, ind = tangent_kneighbors(X_test, X_train, n_neighbors=n_neighbors, candidates=candidates,
                                shape=shape, sided=sided, transforms=transforms, sigma=sigma,
                                regularization=regularization, deslant=deslant)
    return classes[_vote(y_idx[ind], classes.size)]


# ----------------------------------------------------------------- the graph
def tangent_knn_graph(images, shape=(16, 16), n_neighbors=2, n_random=1, candidates=50,
                      random_state=None, *, transforms=TRANSFORMS, sigma=DEFAULT_SIGMA,
                      regularization=0.0, deslant=False) -> NeighborhoodGraph:
    """DVU neighbourhood graph of images under the two-sided tangent distance.

    Every image :math:`i` is joined to its ``n_neighbors`` nearest images in
    two-sided tangent distance (among its ``candidates`` Euclidean nearest,
    see :func:`tangent_kneighbors`) and to ``n_random`` images drawn
    uniformly at random (the long edges of DVU, Vernaza et al., section
    3.2.1). Edges are undirected and deduplicated (``i < j``); the target
    distance of edge :math:`(i, j)` is :math:`\\bar D_{ij} =
    \\mathrm{TD}^2(x_i, x_j)`. Also reached through
    ``sdpembed.graphs.knn_graph(images, metric="tangent", ...)``.

    Parameters
    ----------
    images : array-like, shape (n, height*width) or (n, height, width)
    shape : (int, int)
    n_neighbors, n_random : int
        DVU uses 2 and 1.
    candidates : int or None
        Euclidean candidates per image; None compares all pairs (O(n^2)).
    random_state : int, RandomState or None
        Draws the random long edges.
    transforms, sigma, regularization
        As in :func:`tangent_distance`.
    deslant : bool
        Deslant the images first (the DVU paper does, section 4).

    Returns
    -------
    NeighborhoodGraph

    Raises
    ------
    DuplicatePointsError
        Two joined images are identical (zero tangent distance).
    """
    h, w = _check_shape(shape)
    n_neighbors, n_random = int(n_neighbors), int(n_random)
    if n_neighbors < 0 or n_random < 0 or n_neighbors + n_random == 0:
        raise InputError("need n_neighbors >= 0, n_random >= 0 and at least one edge per point")
    X = _check_images(images, (h, w), min_samples=2)
    n = X.shape[0]
    if n_neighbors >= n:
        raise InputError(f"n_neighbors={n_neighbors} must be below n_samples={n}")
    rng = check_random_state(random_state)
    st = _settings(transforms, sigma, regularization, "two")
    P = _prepare(X, (h, w), st.transforms, st.sigma, st.regularization, deslant)
    pairs, dist = np.empty((0, 2), dtype=np.int64), np.empty(0)
    if n_neighbors:
        d_nn, ind = _kneighbors(P, P, n_neighbors, candidates, "two", exclude_self=True)
        pairs = np.c_[np.repeat(np.arange(n), n_neighbors), ind.ravel()]
        dist = d_nn.ravel()
    long_edges = _random_partners(n, n_random, rng)
    if long_edges.size:
        d_long = _pair_td(P, P, long_edges[:, 0], long_edges[:, 1], "two")
        pairs, dist = np.r_[pairs, long_edges], np.r_[dist, d_long]
    graph = _from_pairs(n, pairs, dist)
    graph.check_distinct()
    logger.debug("tangent_knn_graph: %d nodes, %d edges (candidates=%s)", n, graph.n_edges,
                 candidates)
    return graph

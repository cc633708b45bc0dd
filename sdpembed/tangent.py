"""Tangent distance between images, deslanting and tangent-distance neighbour graphs.

The tangent distance of Simard, LeCun, Denker & Victorri ("Transformation
invariance in pattern recognition: tangent distance and tangent propagation",
*Neural Networks: Tricks of the Trade*, 1998) compares two images after
moving each of them, to first order, along known transformations
(translations, rotation, scaling, hyperbolic deformations, line thickness).
For images :math:`a, b \\in \\mathbb{R}^p` with tangent matrices
:math:`T_a, T_b \\in \\mathbb{R}^{p \\times k}` (one column per
transformation) the squared two-sided tangent distance is the least-squares
problem

.. math::

    \\mathrm{TD}^2(a, b) = \\min_{\\alpha, \\beta \\in \\mathbb{R}^k}
        \\lVert a + T_a \\alpha - b - T_b \\beta \\rVert^2
        + \\lambda (\\lVert \\alpha \\rVert^2 + \\lVert \\beta \\rVert^2);

the one-sided distance fixes :math:`\\alpha = 0` (only the reference image
``b`` moves). :math:`\\lambda \\ge 0` (``regularization``) is Simard's
"spring" that keeps the two tangent planes from sliding along a shared
direction. Since :math:`\\alpha = \\beta = 0` is feasible,
:math:`0 \\le \\mathrm{TD}^2 \\le \\lVert a - b \\rVert^2`. The two-sided
distance is symmetric but is not a metric (no triangle inequality), which is
why the DVU paper relaxes its distance constraints (section 3.2).

The DVU paper (Vernaza, Lee & Taskar, "Discriminative Variance Unfolding",
section 4) builds its USPS neighbourhood graph from tangent distances between
deslanted digits; :func:`tangent_knn_graph` does that and is what
``sdpembed.graphs.knn_graph(..., metric="tangent")`` calls. It builds on the
graph core (:mod:`sdpembed.graphs.core`), which imports nothing of this module.

Computation
-----------
Each image gets a *whitened* tangent basis :math:`U = T W` with
:math:`W = (T^\\top T + \\lambda I)^{-1/2}`, so that
:math:`\\lVert T\\alpha \\rVert^2 + \\lambda \\lVert\\alpha\\rVert^2 =
\\lVert u \\rVert^2` for :math:`\\alpha = W u` (for :math:`\\lambda = 0`,
:math:`U` is an orthonormal basis of the tangent plane). With
:math:`d = a - b`, :math:`p = U_a^\\top d`, :math:`q = U_b^\\top d` and
:math:`C = U_a^\\top U_b` the problem becomes
:math:`\\min_{u,v} \\lVert d\\rVert^2 + 2p^\\top u - 2q^\\top v + \\lVert u\\rVert^2
+ \\lVert v\\rVert^2 - 2u^\\top C v`. Eliminating :math:`u = Cv - p` leaves a
:math:`k \\times k` system in the Schur complement
:math:`S = I - C^\\top C \\succeq 0`:

.. math::

    \\mathrm{TD}^2_{\\text{two}} = \\lVert d \\rVert^2 - \\lVert p \\rVert^2
        - r^\\top S^{-1} r, \\quad r = q - C^\\top p, \\qquad
    \\mathrm{TD}^2_{\\text{one}} = \\lVert d \\rVert^2 - \\lVert q \\rVert^2 .

Per pair this is one :math:`(k+1) \\times p \\times (k+1)` block of inner
products and one :math:`k \\times k` solve. Neighbour searches re-rank
Euclidean candidates with one matrix product per query image against its
stacked candidates; all-pairs matrices use one large product per block of
rows; the :math:`k \\times k` solves run stacked (``numpy.linalg.solve``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from joblib import effective_n_jobs
from scipy import ndimage
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from ._checks import as_int
from ._typing import ArrayLike, RandomStateLike
from .exceptions import InputError, LabelError
from .graphs.core import NeighborhoodGraph, check_edge_counts, random_partners

__all__ = [
    "TRANSFORMS",
    "DEFAULT_SIGMA",
    "DEFAULT_BLUR",
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

#: Default width (pixels) of the Gaussian derivative filters that give the
#: image gradients. With :data:`DEFAULT_BLUR` it minimised the leave-one-out
#: tangent-distance 1-NN error on the 7,291 USPS training digits over
#: sigma in {0.5, 0.75, 1} x blur in {0, 0.5, 0.75, 1} (``problems/bench_tangent.py``).
DEFAULT_SIGMA = 0.75
#: Default width (pixels) of the Gaussian applied to the images before
#: anything else (distances, tangents, candidate search); see above.
DEFAULT_BLUR = 0.5

# Relative floor on eigenvalues of T^T T (directions below it are dropped) and
# diagonal jitter on the Schur complement S (keeps coinciding planes solvable).
_EIG_RTOL = 1e-10
_SCHUR_JITTER = 1e-10
# Stacked intermediate arrays are processed in chunks of about this many bytes.
_CHUNK_BYTES = 16 * 2**20


# ---------------------------------------------------------------- validation
def _check_shape(shape) -> tuple[int, int]:
    try:
        h, w = (int(s) for s in shape)
    except (TypeError, ValueError) as exc:
        raise InputError(f"shape must be a pair (height, width) of integers; "
                         f"got {shape!r}") from exc
    if h < 3 or w < 3:
        raise InputError(f"images must be at least 3 x 3 pixels; got shape {(h, w)}")
    return h, w


def _check_images(images, shape, *, name="images", min_samples=1) -> np.ndarray:
    """Return ``images`` as a finite float64 array of shape (n, height * width).

    Accepts rows of flattened row-major images, shape (n, h*w), or a stack
    of shape (n, h, w).
    """
    h, w = shape
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
    """One image, flat (h*w,) or 2-D (h, w), as an array of shape (1, h*w)."""
    h, w = shape
    arr = np.asarray(image)
    if arr.shape not in ((h * w,), (h, w)):
        raise InputError(f"{name} must be one image of shape {(h, w)} or ({h * w},) "
                         f"(shape={(h, w)}); got an array of shape {arr.shape}")
    return _check_images(arr.reshape(1, h * w), shape, name=name)


def _check_transforms(transforms) -> tuple[str, ...]:
    if isinstance(transforms, str):
        transforms = (transforms,)
    transforms = tuple(transforms)
    unknown = [t for t in transforms if t not in TRANSFORMS]
    if unknown or not transforms:
        raise InputError(f"transforms must be a non-empty subset of {TRANSFORMS}; "
                         f"unknown: {unknown}")
    if len(set(transforms)) != len(transforms):
        raise InputError(f"transforms must not repeat; got {transforms}")
    return transforms


def _check_float(value, name, *, positive=False) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a number; got {value!r}") from exc
    if not np.isfinite(value) or value < 0 or (positive and value == 0):
        raise InputError(f"{name} must be a finite number {'>' if positive else '>='} 0; "
                         f"got {value}")
    return value


@dataclass(frozen=True)
class _Settings:
    """Validated settings of the distance (one object, passed down)."""

    shape: tuple[int, int]
    transforms: tuple[str, ...]
    sigma: float
    blur: float
    regularization: float
    sided: str


def _settings(shape, transforms, sigma, blur, regularization, sided="two") -> _Settings:
    if sided not in ("one", "two"):
        raise InputError(f"sided must be 'one' (tangent plane of the reference image only) "
                         f"or 'two' (both planes); got {sided!r}")
    return _Settings(
        shape=_check_shape(shape),
        transforms=_check_transforms(transforms),
        sigma=_check_float(sigma, "sigma", positive=True),
        blur=_check_float(blur, "blur"),
        regularization=_check_float(regularization, "regularization"),
        sided=sided,
    )


# ------------------------------------------------------------------ tangents
def image_tangents(images: ArrayLike, shape: tuple[int, int] = (16, 16),
                   transforms: Sequence[str] = TRANSFORMS,
                   sigma: float = DEFAULT_SIGMA) -> np.ndarray:
    """Tangent vectors of a batch of images, one per transformation.

    Each tangent is the derivative, at zero, of the Gaussian-smoothed image
    :math:`G_\\sigma * I` (zero background outside the frame) with respect
    to the transformation parameter. A transformation that moves pixels with
    velocity field :math:`v(x, y)` has tangent
    :math:`-\\nabla (G_\\sigma * I) \\cdot v` (Simard et al., 1998), with
    :math:`x` to the right and :math:`y` downwards, in pixels from the image
    centre, and :math:`(g_x, g_y) = \\nabla (G_\\sigma * I)` computed by
    Gaussian derivative filters:

    ========================  ==================  ================================
    transform                 velocity :math:`v`  tangent
    ========================  ==================  ================================
    ``x`` (shift right)       :math:`(1, 0)`      :math:`-g_x`
    ``y`` (shift down)        :math:`(0, 1)`      :math:`-g_y`
    ``rotation``              :math:`(-y, x)`     :math:`y g_x - x g_y`
    ``scaling``               :math:`(x, y)`      :math:`-(x g_x + y g_y)`
    ``axis_deformation``      :math:`(x, -y)`     :math:`-(x g_x - y g_y)`
    ``diagonal_deformation``  :math:`(y, x)`      :math:`-(y g_x + x g_y)`
    ``thickness``             line thickening     :math:`g_x^2 + g_y^2`
    ========================  ==================  ================================

    Translations are in pixels, rotation in radians (clockwise as displayed,
    since rows go down), scaling and deformations relative.

    Parameters
    ----------
    images : array-like, shape (n, height*width) or (n, height, width)
        Row-major images.
    shape : (int, int)
        ``(height, width)`` of one image.
    transforms : sequence of str
        A subset of :data:`TRANSFORMS`, in the order wanted.
    sigma : float
        Width in pixels of the Gaussian derivative filters (> 0).

    Returns
    -------
    tangents : ndarray, shape (n, len(transforms), height*width)
    """
    st = _settings(shape, transforms, sigma, 0.0, 0.0)
    return _tangents(_check_images(images, st.shape), st.shape, st.transforms, st.sigma)


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
    """Whitened tangents :math:`(TW)^\\top` with :math:`W = (T^\\top T + \\lambda I)^{-1/2}`.

    ``T`` has shape (n, k, p) (tangents as rows). Directions of
    :math:`T^\\top T` with eigenvalue below ``_EIG_RTOL`` times the largest
    are dropped (zero rows), so blank images and degenerate tangents are
    harmless.
    """
    G = T @ T.transpose(0, 2, 1)
    evals, evecs = np.linalg.eigh(G)
    top = np.maximum(evals[:, -1:], np.finfo(float).tiny)
    keep = evals > _EIG_RTOL * top
    scale = np.where(keep, 1.0 / np.sqrt(np.where(keep, evals, 1.0) + regularization), 0.0)
    return (evecs * scale[:, None, :]).transpose(0, 2, 1) @ T


@dataclass(frozen=True)
class _Prepared:
    """Images with their whitened tangent bases, stacked as ``F = [U; x]``.

    ``F`` has shape (n, k+1, p): rows ``0..k-1`` hold the whitened tangents
    of each image, row ``k`` the image (blurred and deslanted if asked). One
    matrix product of two such stacks gives every inner product a tangent
    distance needs.
    """

    F: np.ndarray

    @property
    def U(self) -> np.ndarray:
        return self.F[:, :-1]

    @property
    def X(self) -> np.ndarray:
        return self.F[:, -1]

    @property
    def n(self) -> int:
        return self.F.shape[0]


def _prepare(X, st: _Settings, deslanted=False) -> _Prepared:
    if deslanted:
        X = _deslant(X, st.shape)
    if st.blur > 0:
        X = ndimage.gaussian_filter(X.reshape(-1, *st.shape), st.blur, axes=(1, 2),
                                    mode="constant", cval=0.0).reshape(X.shape)
    U = _whiten(_tangents(X, st.shape, st.transforms, st.sigma), st.regularization)
    return _Prepared(F=np.concatenate([U, X[:, None, :]], axis=1))


# ------------------------------------------------------------------ deslant
def deslant(images: ArrayLike, shape: tuple[int, int] = (16, 16)) -> np.ndarray:
    """Remove the slant of each image by a horizontal shear (moment normalisation).

    With pixel intensities as weights (after subtracting each image's
    minimum), centroid :math:`(\\bar x, \\bar y)` and central moments
    :math:`\\mu_{11} = E[(x-\\bar x)(y-\\bar y)]`,
    :math:`\\mu_{02} = E[(y-\\bar y)^2]`, the slant is
    :math:`s = \\mu_{11} / \\mu_{02}` and the output is
    :math:`J(x, y) = I(x + s (y - \\bar y), y)` (linear interpolation along
    each row, the image minimum outside the frame): its mixed moment is zero
    up to interpolation error and its centroid is unchanged. Ink sheared past
    the left or right edge is lost. The DVU paper deslants the USPS digits
    before computing tangent distances (section 4).

    Parameters
    ----------
    images : array-like, shape (n, height*width) or (n, height, width)
    shape : (int, int)

    Returns
    -------
    ndarray, shape (n, height*width), float64
    """
    shape = _check_shape(shape)
    return _deslant(_check_images(images, shape), shape)


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
    slant = np.where(mu02 > 0, mu11 / np.where(mu02 > 0, mu02, 1.0), 0.0)
    src = x + slant * (y - ybar)  # (n, h, w): source column of each output pixel
    x0 = np.floor(src).astype(np.intp)
    frac = src - x0

    def sample(col):
        vals = np.take_along_axis(wgt, np.clip(col, 0, w - 1), axis=2)
        return np.where((col >= 0) & (col < w), vals, 0.0)

    out = (1.0 - frac) * sample(x0) + frac * sample(x0 + 1) + bg
    return out.reshape(X.shape[0], h * w)


# ------------------------------------------------------------- the distance
def _solve_td(C, p, q, dd, sided) -> np.ndarray:
    """Squared tangent distances from the per-pair quantities (module docstring).

    ``C`` (N, k, k), ``p``, ``q`` (N, k), ``dd`` (N,). Results are clipped to
    ``[0, dd]``, the exact bounds, which removes round-off.
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
    """:math:`\\mathrm{TD}^2` between ``A.X[i[e]]`` and ``B.X[j[e]]`` for every e."""
    i = np.asarray(i, dtype=np.intp)
    j = np.asarray(j, dtype=np.intp)
    k1, p = A.F.shape[1:]
    out = np.empty(i.size)
    step = max(1, _CHUNK_BYTES // (16 * k1 * p))
    with threadpool_limits(limits=1, user_api="blas"):
        for s in range(0, i.size, step):
            Fa, Fb = A.F[i[s:s + step]], B.F[j[s:s + step]]
            d = Fa[:, -1] - Fb[:, -1]
            pq = np.concatenate([Fa[:, :-1], Fb[:, :-1]], axis=1) @ d[..., None]
            p_, q_ = pq[:, : k1 - 1, 0], pq[:, k1 - 1:, 0]
            C = Fa[:, :-1] @ Fb[:, :-1].transpose(0, 2, 1) if sided == "two" else None
            out[s:s + step] = _solve_td(C, p_, q_, np.einsum("np,np->n", d, d), sided)
    return out


def _query_td(Q: _Prepared, R: _Prepared, cand, sided, n_jobs=None) -> np.ndarray:
    """:math:`\\mathrm{TD}^2` from each query ``Q.X[i]`` to its candidates ``R.X[cand[i]]``.

    One product per query, ``F_R[cand[i]] (c(k+1), p) @ F_Q[i]^T (p, k+1)``,
    gives :math:`C`, :math:`U_a^\\top b`, :math:`U_b^\\top a` for all its
    candidates; :math:`\\lVert a - b \\rVert^2` is computed from the
    difference itself, so identical images get exactly zero. Chunks of
    queries run on ``n_jobs`` threads with single-threaded BLAS.
    """
    nq, c = cand.shape
    k1, p = Q.F.shape[1:]
    k = k1 - 1
    sQ = np.einsum("nkp,np->nk", Q.U, Q.X)
    sR = np.einsum("nkp,np->nk", R.U, R.X)
    out = np.empty((nq, c))
    step = max(1, _CHUNK_BYTES // (8 * c * k1 * p))

    def work(s):
        e = min(nq, s + step)
        G = R.F[cand[s:e]]  # (m, c, k+1, p)
        M = (G.reshape(e - s, c * k1, p) @ Q.F[s:e].transpose(0, 2, 1)).reshape(e - s, c, k1, k1)
        # M[i, j, l, m] = F_R[cand[i, j], l] . F_Q[i, m]
        d = Q.X[s:e, None, :] - G[:, :, k]
        dd = np.einsum("ncp,ncp->nc", d, d).ravel()
        p_ = (sQ[s:e, None, :] - M[:, :, k, :k]).reshape(-1, k)  # U_a (a - b)
        q_ = (M[:, :, :k, k] - sR[cand[s:e]]).reshape(-1, k)  # U_b (a - b)
        C = M[:, :, :k, :k].transpose(0, 1, 3, 2).reshape(-1, k, k) if sided == "two" else None
        out[s:e] = _solve_td(C, p_, q_, dd, sided).reshape(e - s, c)

    starts = range(0, nq, step)
    with threadpool_limits(limits=1, user_api="blas"):
        workers = min(effective_n_jobs(n_jobs), len(starts))
        if workers <= 1:
            for s in starts:
                work(s)
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(work, starts))
    return out


def _block_td(A: _Prepared, B: _Prepared, sided) -> np.ndarray:
    """All-pairs :math:`\\mathrm{TD}^2`, one large matrix product per block of rows of A.

    :math:`\\lVert a - b\\rVert^2` comes from the expansion
    :math:`\\lVert a\\rVert^2 + \\lVert b\\rVert^2 - 2a^\\top b`, so entries
    carry round-off of order :math:`10^{-15}\\lVert a\\rVert^2`.
    """
    nA, k1, p = A.F.shape
    k, nB = k1 - 1, B.n
    FB = B.F.reshape(nB * k1, p)
    sqA, sqB = np.einsum("np,np->n", A.X, A.X), np.einsum("np,np->n", B.X, B.X)
    sA, sB = np.einsum("nkp,np->nk", A.U, A.X), np.einsum("nkp,np->nk", B.U, B.X)
    out = np.empty((nA, nB))
    rows = max(1, 4 * _CHUNK_BYTES // (8 * k1 * k1 * nB))
    for s in range(0, nA, rows):
        e = min(nA, s + rows)
        M = A.F[s:e].reshape(-1, p) @ FB.T  # BLAS on all cores
        with threadpool_limits(limits=1, user_api="blas"):
            M = M.reshape(e - s, k1, nB, k1).transpose(0, 2, 3, 1)  # [i, j, l(B), m(A)]
            dd = np.maximum(sqA[s:e, None] + sqB[None, :] - 2.0 * M[:, :, k, k], 0.0).ravel()
            p_ = (sA[s:e, None, :] - M[:, :, k, :k]).reshape(-1, k)
            q_ = (M[:, :, :k, k] - sB[None, :, :]).reshape(-1, k)
            C = M[:, :, :k, :k].transpose(0, 1, 3, 2).reshape(-1, k, k) if sided == "two" else None
            out[s:e] = _solve_td(C, p_, q_, dd, sided).reshape(e - s, nB)
    return out


def tangent_distance(a: ArrayLike, b: ArrayLike, *, shape: tuple[int, int] = (16, 16),
                     sided: str = "two", transforms: Sequence[str] = TRANSFORMS,
                     sigma: float = DEFAULT_SIGMA, blur: float = DEFAULT_BLUR,
                     regularization: float = 0.0) -> float:
    """Squared tangent distance between two images.

    .. math::

        \\mathrm{TD}^2(a, b) = \\min_{\\alpha, \\beta}
            \\lVert a + T_a\\alpha - b - T_b\\beta \\rVert^2
            + \\lambda(\\lVert\\alpha\\rVert^2 + \\lVert\\beta\\rVert^2)

    (Simard et al., 1998), computed on the blurred images
    :math:`G_{\\text{blur}} * a`, :math:`G_{\\text{blur}} * b`; with
    ``sided="one"`` only the reference image ``b`` moves
    (:math:`\\alpha = 0`). Blurring is a contraction, so
    :math:`0 \\le \\mathrm{TD}^2 \\le \\lVert a - b \\rVert^2` always.

    Parameters
    ----------
    a, b : array-like, shape (height*width,) or (height, width)
    shape : (int, int)
        ``(height, width)`` of the images.
    sided : {"two", "one"}
        Both tangent planes, or only that of ``b``.
    transforms : sequence of str
        Subset of :data:`TRANSFORMS`.
    sigma : float
        Gradient filter width in pixels (> 0), see :func:`image_tangents`.
    blur : float
        Width in pixels of a Gaussian applied to both images first (0: none).
    regularization : float
        :math:`\\lambda \\ge 0`, penalty on the squared transformation
        coefficients (pixels, radians, relative scale).

    Returns
    -------
    float
    """
    st = _settings(shape, transforms, sigma, blur, regularization, sided)
    A = _prepare(_check_single(a, st.shape, "a"), st)
    B = _prepare(_check_single(b, st.shape, "b"), st)
    return float(_pair_td(A, B, [0], [0], st.sided)[0])


def paired_tangent_distances(A: ArrayLike, B: ArrayLike, *, shape: tuple[int, int] = (16, 16),
                             sided: str = "two", transforms: Sequence[str] = TRANSFORMS,
                             sigma: float = DEFAULT_SIGMA, blur: float = DEFAULT_BLUR,
                             regularization: float = 0.0) -> np.ndarray:
    """Squared tangent distances between ``A[e]`` and ``B[e]`` for every row e.

    Same definition and parameters as :func:`tangent_distance`; ``A`` and
    ``B`` hold the same number of images. Vectorized over pairs.

    Returns
    -------
    ndarray, shape (n,)
    """
    st = _settings(shape, transforms, sigma, blur, regularization, sided)
    A = _check_images(A, st.shape, name="A")
    B = _check_images(B, st.shape, name="B")
    if A.shape != B.shape:
        raise InputError(f"A and B must hold the same number of images; got {A.shape[0]} "
                         f"and {B.shape[0]} (tangent_distances gives all pairs)")
    idx = np.arange(A.shape[0])
    return _pair_td(_prepare(A, st), _prepare(B, st), idx, idx, st.sided)


def tangent_distances(A: ArrayLike, B: ArrayLike | None = None, *,
                      shape: tuple[int, int] = (16, 16), sided: str = "two",
                      transforms: Sequence[str] = TRANSFORMS, sigma: float = DEFAULT_SIGMA,
                      blur: float = DEFAULT_BLUR, regularization: float = 0.0) -> np.ndarray:
    """Matrix of squared tangent distances between all images of ``A`` and ``B``.

    Entry ``[i, j]`` is :math:`\\mathrm{TD}^2(A_i, B_j)` as in
    :func:`tangent_distance` (``B`` is the reference of a one-sided
    distance); ``B=None`` means ``B = A``. One matrix product of the stacked
    features :math:`[U; x]` per block of rows gives every
    :math:`C = U_a^\\top U_b`, :math:`U_a^\\top b`, :math:`U_b^\\top a` and
    :math:`a^\\top b`, then all :math:`k \\times k` systems are solved
    stacked. :math:`\\lVert a - b\\rVert^2` is expanded as
    :math:`\\lVert a\\rVert^2 + \\lVert b\\rVert^2 - 2a^\\top b`, so entries
    carry round-off of order :math:`10^{-15} \\lVert a\\rVert^2` (the
    diagonal of ``tangent_distances(A)`` is not exactly zero); use
    :func:`paired_tangent_distances` where exact zeros matter.

    Returns
    -------
    ndarray, shape (n_A, n_B)
    """
    st = _settings(shape, transforms, sigma, blur, regularization, sided)
    PA = _prepare(_check_images(A, st.shape, name="A"), st)
    PB = PA if B is None else _prepare(_check_images(B, st.shape, name="B"), st)
    return _block_td(PA, PB, st.sided)


# -------------------------------------------------------- neighbour search
def _kneighbors(Q: _Prepared, R: _Prepared, n_neighbors, candidates, sided, exclude_self,
                n_jobs=None):
    """Tangent-distance nearest references of each query, sorted ascending.

    Candidates are the ``candidates`` Euclidean nearest references (all of
    them when None), re-ranked by :math:`\\mathrm{TD}^2`; ties are broken by
    reference index. Returns ``(sqdist, ind)``, both (n_query, n_neighbors).
    """
    nq, nr = Q.n, R.n
    pool = nr - 1 if exclude_self else nr
    if not 1 <= n_neighbors <= pool:
        note = " (an image is not its own neighbour)" if exclude_self else ""
        raise InputError(f"n_neighbors={n_neighbors} must lie in [1, {pool}] for {nr} "
                         f"reference images{note}")
    if candidates is None or int(candidates) >= pool:
        D = _block_td(Q, R, sided)
        if exclude_self:
            np.fill_diagonal(D, np.inf)
        cand = np.broadcast_to(np.arange(nr), (nq, nr))
    else:
        candidates = int(candidates)
        if candidates < n_neighbors:
            raise InputError(f"candidates={candidates} must be >= n_neighbors={n_neighbors}")
        nn = NearestNeighbors(n_neighbors=candidates, algorithm="brute", n_jobs=n_jobs)
        nn.fit(R.X)
        cand = nn.kneighbors(None if exclude_self else Q.X, return_distance=False)
        D = _query_td(Q, R, cand, sided, n_jobs)
    order = np.lexsort((cand, D), axis=1)[:, :n_neighbors]
    return np.take_along_axis(D, order, axis=1), np.take_along_axis(cand, order, axis=1)


def tangent_kneighbors(X: ArrayLike, X_ref: ArrayLike | None = None, *, n_neighbors: int = 1,
                       candidates: int | None = 50, shape: tuple[int, int] = (16, 16),
                       sided: str = "two", transforms: Sequence[str] = TRANSFORMS,
                       sigma: float = DEFAULT_SIGMA, blur: float = DEFAULT_BLUR,
                       regularization: float = 0.0, deslant: bool = False,
                       n_jobs: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Nearest neighbours in tangent distance, preselected by Euclidean distance.

    For each image of ``X``, the ``candidates`` images of ``X_ref`` nearest
    in Euclidean distance (after blurring and deslanting) are re-ranked by
    :math:`\\mathrm{TD}^2` (a one-level version of the hierarchical search
    of Simard et al., 1998); ``candidates=None`` ranks all of ``X_ref``
    (exact, :math:`O(n_X n_{ref})` distances). ``X_ref=None`` searches ``X``
    itself, excluding each image.

    Parameters
    ----------
    X, X_ref : array-like, shape (n, height*width) or (n, height, width)
    n_neighbors : int
    candidates : int or None
    shape, sided, transforms, sigma, blur, regularization
        As in :func:`tangent_distance`; ``X_ref`` is the reference (moving)
        side of a one-sided distance.
    deslant : bool
        Deslant both sets first (:func:`deslant`).
    n_jobs : int or None
        Threads for the candidate re-ranking (joblib convention: None is 1,
        -1 all cores).

    Returns
    -------
    sqdist : ndarray, shape (n, n_neighbors)
        Squared tangent distances, ascending (ties by index).
    indices : ndarray of int, shape (n, n_neighbors)
        Rows of ``X_ref`` (of ``X`` when ``X_ref`` is None).
    """
    st = _settings(shape, transforms, sigma, blur, regularization, sided)
    Q = _prepare(_check_images(X, st.shape, name="X"), st, deslant)
    k = as_int(n_neighbors, "n_neighbors")
    if X_ref is None:
        return _kneighbors(Q, Q, k, candidates, st.sided, True, n_jobs)
    R = _prepare(_check_images(X_ref, st.shape, name="X_ref"), st, deslant)
    return _kneighbors(Q, R, k, candidates, st.sided, False, n_jobs)


def _vote(labels, n_classes) -> np.ndarray:
    """Majority vote over neighbours sorted nearest first; ties go to the nearer class.

    A neighbour of rank r (0-based) among k adds ``1 + (k - r) / (k + 1)**2``
    to its class; the bonuses sum to less than 1, so they only break ties,
    in favour of the class whose members rank higher.
    """
    n, k = labels.shape
    bonus = 1.0 + (k - np.arange(k)) / (k + 1.0) ** 2
    votes = np.zeros((n, n_classes))
    np.add.at(votes, (np.repeat(np.arange(n), k), labels.ravel()), np.tile(bonus, n))
    return votes.argmax(axis=1)


def tangent_knn_predict(X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, *,
                        n_neighbors: int = 1, candidates: int | None = 50,
                        shape: tuple[int, int] = (16, 16), sided: str = "two",
                        transforms: Sequence[str] = TRANSFORMS, sigma: float = DEFAULT_SIGMA,
                        blur: float = DEFAULT_BLUR, regularization: float = 0.0,
                        deslant: bool = False, n_jobs: int | None = None) -> np.ndarray:
    """k-nearest-neighbour classification under the tangent distance.

    Majority vote among the ``n_neighbors`` training images nearest to each
    test image (:func:`tangent_kneighbors`, same parameters); ties go to the
    class whose members rank nearer. Labels may be of any type.

    Returns
    -------
    ndarray, shape (n_test,)
        Predicted labels, same dtype as ``y_train``.
    """
    y_train = np.asarray(y_train)
    n_train = len(X_train)
    if y_train.ndim != 1 or y_train.shape[0] != n_train:
        raise LabelError(f"y_train must be 1-D with one label per training image ({n_train}); "
                         f"got shape {y_train.shape}")
    classes, y_idx = np.unique(y_train, return_inverse=True)
    _, ind = tangent_kneighbors(X_test, X_train, n_neighbors=n_neighbors, candidates=candidates,
                                shape=shape, sided=sided, transforms=transforms, sigma=sigma,
                                blur=blur, regularization=regularization, deslant=deslant,
                                n_jobs=n_jobs)
    return classes[_vote(y_idx[ind], classes.size)]


# ----------------------------------------------------------------- the graph
def tangent_knn_graph(images: ArrayLike, shape: tuple[int, int] = (16, 16), n_neighbors: int = 2,
                      n_random: int = 1, candidates: int | None = 50,
                      random_state: RandomStateLike = None, *,
                      transforms: Sequence[str] = TRANSFORMS, sigma: float = DEFAULT_SIGMA,
                      blur: float = DEFAULT_BLUR, regularization: float = 0.0,
                      deslant: bool = False, n_jobs: int | None = None) -> NeighborhoodGraph:
    """DVU neighbourhood graph of images under the two-sided tangent distance.

    Every image :math:`i` is joined to its ``n_neighbors`` nearest images in
    two-sided tangent distance (re-ranked among its ``candidates`` Euclidean
    nearest, see :func:`tangent_kneighbors`) and to ``n_random`` images
    drawn uniformly at random, the long edges of DVU (Vernaza, Lee & Taskar,
    section 3.2.1) that keep the graph connected. Edges are undirected and
    deduplicated (``i < j``); the target distance of edge :math:`(i, j)` is
    :math:`\\bar D_{ij} = \\mathrm{TD}^2(x_i, x_j)`. The DVU paper builds
    this graph on deslanted USPS digits (section 4). Also reached through
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
        Draws the random long edges (same draw as ``knn_graph``).
    transforms, sigma, blur, regularization
        As in :func:`tangent_distance`.
    deslant : bool
        Deslant the images first (:func:`deslant`).
    n_jobs : int or None
        Threads for the re-ranking (None: 1, -1: all cores).

    Returns
    -------
    NeighborhoodGraph

    Raises
    ------
    InputError
        Bad images or parameters.
    DuplicatePointsError
        Two joined images are identical (zero tangent distance).
    """
    st = _settings(shape, transforms, sigma, blur, regularization, "two")
    n_neighbors, n_random = check_edge_counts(n_neighbors, n_random)
    X = _check_images(images, st.shape, min_samples=2)
    n = X.shape[0]
    if n_neighbors >= n:
        raise InputError(f"n_neighbors={n_neighbors} must be below n_samples={n}")
    rng = check_random_state(random_state)
    P = _prepare(X, st, deslant)
    pairs = np.empty((0, 2), dtype=np.int64)
    if n_neighbors:
        _, ind = _kneighbors(P, P, n_neighbors, candidates, "two", True, n_jobs)
        pairs = np.c_[np.repeat(np.arange(n), n_neighbors), ind.ravel()]
    pairs = np.r_[pairs, random_partners(n, n_random, rng)]
    pairs = np.unique(np.sort(pairs, axis=1), axis=0)
    # recompute each undirected edge once, from the image difference itself, so that
    # identical images get exactly zero whatever the search path
    graph = NeighborhoodGraph(n, pairs, _pair_td(P, P, pairs[:, 0], pairs[:, 1], "two"))
    graph.check_distinct()
    logger.debug("tangent_knn_graph: %d nodes, %d edges (candidates=%s)", n, graph.n_edges,
                 candidates)
    return graph

"""The loaders: downloaded, bundled and synthetic datasets as scikit-learn bunches."""

from __future__ import annotations

import functools
import inspect
import numbers
import os
import re
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.utils import Bunch, check_random_state

from .._typing import RandomStateLike
from ..exceptions import (
    InputError,
)
from .archive import _load_archive
from .registry import _INFO, _SKLEARN_NAMES, _UCI_NAMES, dataset_info

# --------------------------------------------------------------------------- loaders


def _descr(name: str) -> str:
    info = _INFO[name]
    text = (f"{info.description}. {info.n_samples} samples, {info.n_features} features, "
            f"{info.n_classes} classes.")
    if info.source is not None:
        text += f" Source: {info.source.url} (sha256 {info.source.sha256})."
    return text


def _finish(bunch: Bunch, return_X_y: bool):
    return (bunch.data, bunch.target) if return_X_y else bunch


#: Parameters shared by the loaders of downloadable archives (numpydoc, unindented).
_LOADER_PARAMETERS = """\
return_X_y : bool, default=False
    Return ``(data, target)`` instead of a Bunch.
data_home : path-like, optional
    See :func:`data_home`.
download_if_missing : bool, default=True
    Download and convert the source file when the archive is missing."""

_LOADER_PARAMETERS_LINE = re.compile(r"^([ \t]*)\{loader_parameters\}$", re.MULTILINE)


def _with_loader_parameters(loader: Callable) -> Callable:
    """Decorator: write :data:`_LOADER_PARAMETERS` into ``loader``'s docstring.

    The line ``{loader_parameters}`` of the docstring is replaced by the shared
    parameter descriptions at that line's indentation, so :func:`load_usps`,
    :func:`load_uci` and :func:`load_umist32` document ``return_X_y``,
    ``data_home`` and ``download_if_missing`` from one text.
    """
    if loader.__doc__:  # None under ``python -OO``
        loader.__doc__ = _LOADER_PARAMETERS_LINE.sub(
            lambda m: textwrap.indent(_LOADER_PARAMETERS, m.group(1)), loader.__doc__)
    return loader


@_with_loader_parameters
def load_usps(*, subset: str = "all", augment: Sequence[str] | None = None,
              return_X_y: bool = False, data_home: str | os.PathLike | None = None,
              download_if_missing: bool = True) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """USPS handwritten digits (Hastie, Tibshirani & Friedman's ``zip.train``/``zip.test``).

    9,298 grey-level 16x16 digits with pixel values in [0, 1] (the ESL values
    ``v`` in [-1, 1] rescaled as ``(v + 1) / 2``), 7,291 in the original
    training split followed by 2,007 in the test split. The DVU paper (Vernaza,
    Lee & Taskar, Table 1) uses 2,500 of them; Wang & Mahadevan use the
    training split.

    Parameters
    ----------
    subset : {"all", "train", "test"}, default="all"
        Which rows to return, in source order.
    augment : sequence of {"shift", "rotate", "scale"}, optional
        Virtual examples (Schölkopf, Burges & Vapnik 1996; DeCoste & Schölkopf 2002): each
        digit also transformed by the transformations the tangent distance is invariant
        to, with its label. ``"shift"``: one pixel left, right, up and down (4 copies);
        ``"rotate"``: by -5 and +5 degrees (2); ``"scale"``: by 0.95 and 1.05 about the
        centre (2). Copies follow the originals, one block per transformation, in the order
        given; ``original`` (n,) holds each row's source row. Bilinear interpolation,
        values clipped to [0, 1].
    {loader_parameters}

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float32 (n, 256), ``target`` int64 (n,), ``split`` (n,) of
        ``"train"``/``"test"``, ``images`` float32 (n, 16, 16) (a view of
        ``data``; ``images[i]`` shows the digit upright), ``image_shape``,
        ``target_names``, ``DESCR``, and with ``augment`` ``original`` and
        ``transform`` (n,) (``"none"`` for the source rows). Or ``(data, target)``.
    """
    if subset not in ("all", "train", "test"):
        raise InputError(f"subset must be 'all', 'train' or 'test'; got {subset!r}")
    augment = _check_augment(augment)
    z = _load_archive("usps", data_home, download_if_missing)
    rows = slice(None) if subset == "all" else z["split"] == subset
    X, y, split = z["X"][rows], z["y"][rows], z["split"][rows]
    shape = tuple(int(s) for s in z["image_shape"])
    bunch = Bunch(data=X, target=y, split=split, images=X.reshape(-1, *shape),
                  image_shape=shape, target_names=np.array([str(d) for d in range(10)]),
                  feature_names=np.array([f"pixel_{r}_{c}" for r in range(shape[0])
                                          for c in range(shape[1])]),
                  DESCR=_descr("usps"), name="usps")
    if augment:
        bunch = _augmented(bunch, augment)
    return _finish(bunch, return_X_y)


#: virtual-example transformations of :func:`load_usps` (``augment``): name -> parameters
AUGMENTATIONS = {"shift": [(0, -1), (0, 1), (-1, 0), (1, 0)], "rotate": [-5.0, 5.0],
                 "scale": [0.95, 1.05]}


def _check_augment(augment) -> tuple[str, ...]:
    if augment is None:
        return ()
    if isinstance(augment, str):
        augment = (augment,)
    augment = tuple(augment)
    bad = [a for a in augment if a not in AUGMENTATIONS]
    if bad or len(set(augment)) != len(augment):
        raise InputError(f"augment must name distinct transformations among "
                         f"{sorted(AUGMENTATIONS)}; got {list(augment)}")
    return augment


def _augmented(bunch: Bunch, augment: tuple[str, ...]) -> Bunch:
    """``bunch`` with the virtual examples of ``augment`` appended (see :func:`load_usps`)."""
    from scipy import ndimage

    images = np.asarray(bunch.images, dtype=np.float64)
    n, h, w = images.shape
    centre = np.array([(h - 1) / 2.0, (w - 1) / 2.0])
    blocks, names = [images], [np.full(n, "none")]
    for name in augment:
        for param in AUGMENTATIONS[name]:
            if name == "shift":
                out = ndimage.shift(images, (0, *param), order=1, mode="constant")
            elif name == "rotate":
                out = ndimage.rotate(images, param, axes=(2, 1), reshape=False, order=1,
                                     mode="constant")
            else:
                # zoom about the centre: output pixel p samples input centre + (p - centre)/s
                M = np.eye(2) / param
                offset = centre - M @ centre
                out = np.stack([ndimage.affine_transform(im, M, offset=offset, order=1,
                                                         mode="constant") for im in images])
            blocks.append(np.clip(out, 0.0, 1.0))
            names.append(np.full(n, f"{name} {param}"))
    k = len(blocks)
    imgs = np.concatenate(blocks).astype(np.float32)
    data = imgs.reshape(k * n, h * w)
    out = Bunch(**bunch)
    out.update(data=data, images=data.reshape(-1, h, w), target=np.tile(bunch.target, k),
               split=np.tile(bunch.split, k), original=np.tile(np.arange(n), k),
               transform=np.concatenate(names))
    return out


@_with_loader_parameters
def load_uci(name: str, *, return_X_y: bool = False, data_home: str | os.PathLike | None = None,
             download_if_missing: bool = True) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """One of the UCI sets sonar, ionosphere, car, mushroom.

    sonar and ionosphere have continuous attributes (used by the DNE paper);
    car (TCA, Table 4) and mushroom (Wang & Mahadevan) have categorical
    attributes, one-hot encoded: ``data[:, attribute_offsets[j]:attribute_offsets[j+1]]``
    are the columns of attribute ``j``, so every row has one 1 per attribute.

    Parameters
    ----------
    name : {"sonar", "ionosphere", "car", "mushroom"}
    {loader_parameters}

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64, ``target`` int64, ``target_names`` (original class
        strings, ``target_names[target[i]]``), ``feature_names``, ``DESCR`` and,
        for car and mushroom, ``data_raw`` (the attribute strings),
        ``attribute_names`` and ``attribute_offsets``. Or ``(data, target)``.
    """
    if name not in _UCI_NAMES:
        raise InputError(f"unknown UCI dataset {name!r}; choose one of {list(_UCI_NAMES)}")
    z = _load_archive(name, data_home, download_if_missing)
    X = z["X"]
    feature_names = z.get("feature_names", np.array([f"a{j}" for j in range(X.shape[1])]))
    bunch = Bunch(data=X, target=z["y"], target_names=z["classes"],
                  feature_names=feature_names, DESCR=_descr(name), name=name)
    if "X_raw" in z:
        bunch.update(data_raw=z["X_raw"], attribute_names=z["attribute_names"],
                     attribute_offsets=z["attribute_offsets"])
    return _finish(bunch, return_X_y)


@_with_loader_parameters
def load_umist32(*, return_X_y: bool = False, data_home: str | os.PathLike | None = None,
                 download_if_missing: bool = True) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """UMIST (Sheffield) faces, 575 images of 20 people, downsampled to 32x32.

    Grey levels are the integers of the source, stored as float32; pixels are
    row-major (``images[i]`` shows the face upright). The full-resolution
    112x92 set used by the TCA paper has no public copy; see the data README.

    Parameters
    ----------
    {loader_parameters}

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float32 (575, 1024), ``target`` int64 (subject 0..19),
        ``images`` (575, 32, 32), ``image_shape``, ``target_names``, ``DESCR``.
        Or ``(data, target)``.
    """
    z = _load_archive("umist32", data_home, download_if_missing)
    shape = tuple(int(s) for s in z["image_shape"])
    X = z["X"]
    bunch = Bunch(data=X, target=z["y"], images=X.reshape(-1, *shape), image_shape=shape,
                  target_names=np.array([f"subject_{k}" for k in range(20)]),
                  DESCR=_descr("umist32"), name="umist32")
    return _finish(bunch, return_X_y)


def load_sklearn(name: str, *, return_X_y: bool = False) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled iris, wine, breast_cancer or digits, with int64 targets.

    Parameters
    ----------
    name : {"iris", "wine", "breast_cancer", "digits"}
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64, ``target`` int64, ``target_names``, ``feature_names``,
        ``DESCR`` (scikit-learn's) and, for digits, ``images`` (n, 8, 8).
        Or ``(data, target)``.
    """
    import sklearn.datasets as skd

    loaders = {"iris": skd.load_iris, "wine": skd.load_wine,
               "breast_cancer": skd.load_breast_cancer, "digits": skd.load_digits}
    if name not in loaders:
        raise InputError(f"unknown bundled dataset {name!r}; choose one of {list(loaders)}")
    raw = loaders[name]()
    bunch = Bunch(data=np.asarray(raw.data, dtype=np.float64),
                  target=np.asarray(raw.target, dtype=np.int64),
                  target_names=np.asarray(raw.target_names).astype(str),
                  feature_names=np.asarray(raw.feature_names).astype(str),
                  DESCR=raw.DESCR, name=name)
    if "images" in raw:
        bunch.images = bunch.data.reshape(raw.images.shape)
    return _finish(bunch, return_X_y)


def make_two_moons_3d(n: int = 600, *, noise: float = 0.05,
                      random_state: RandomStateLike = None) -> tuple[np.ndarray, np.ndarray]:
    """Two moons lifted to 3-D, the toy problem of TCA (Liu, Tao & Liu, section 5.1).

    The 2-D moons :math:`(x, y)` are scikit-learn's ``make_moons`` (upper moon
    class 0, :math:`y \\in [0, 1]`; lower moon class 1, :math:`y \\in [-1/2, 1/2]`),
    with Gaussian noise of standard deviation ``noise`` added to both coordinates.
    The third coordinate is the paper's lifting function

    .. math:: z = \\frac{\\sin(\\pi y)}{(y^2 + 1)^2} + 0.3\\, y .

    The paper does not state the noise level; Table 3 uses 600 points, 2 of
    them labeled per class.

    Parameters
    ----------
    n : int, default=600
        Number of points (``n // 2`` in class 0, the rest in class 1).
    noise : float, default=0.05
        Standard deviation of the noise on :math:`(x, y)`, before lifting.
    random_state : int, RandomState instance or None
        Seed of the noise and of the shuffling of the points.

    Returns
    -------
    X : ndarray of shape (n, 3)
        Columns :math:`x, y, z`.
    y : ndarray of int64, shape (n,)
    """
    from sklearn.datasets import make_moons

    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 2:
        raise InputError(f"n must be an integer >= 2; got {n!r}")
    if not isinstance(noise, numbers.Real) or not np.isfinite(noise) or noise < 0:
        raise InputError(f"noise must be a finite number >= 0; got {noise!r}")
    X2, y = make_moons(n_samples=int(n), noise=float(noise) or None,
                       random_state=check_random_state(random_state))
    v = X2[:, 1]
    z = np.sin(np.pi * v) / (v ** 2 + 1.0) ** 2 + 0.3 * v
    return np.column_stack([X2, z]), y.astype(np.int64)


def _load_two_moons_3d(n: int = 600, *, noise: float = 0.05, random_state=None,
                       return_X_y: bool = False):
    X, y = make_two_moons_3d(n, noise=noise, random_state=random_state)
    bunch = Bunch(data=X, target=y, target_names=np.array(["upper", "lower"]),
                  feature_names=np.array(["x", "y", "z"]),
                  DESCR=_descr("two_moons_3d"), name="two_moons_3d")
    return _finish(bunch, return_X_y)


_LOADERS: dict[str, Callable[..., object]] = {
    "usps": load_usps,
    "umist32": load_umist32,
    "two_moons_3d": _load_two_moons_3d,
    **{name: functools.partial(load_uci, name) for name in _UCI_NAMES},
    **{name: functools.partial(load_sklearn, name) for name in _SKLEARN_NAMES},
}


def load_dataset(name: str, **kwargs: Any) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """Load any dataset of :func:`list_datasets` by name.

    Parameters
    ----------
    name : str
        A name from :func:`list_datasets`.
    **kwargs
        Passed to the specific loader (:func:`load_usps`, :func:`load_uci`,
        :func:`load_umist32`, :func:`load_sklearn`, or :func:`make_two_moons_3d`
        for ``"two_moons_3d"``); all accept ``return_X_y``.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        Always has ``data``, ``target`` and ``DESCR``.
    """
    dataset_info(name)  # uniform error for unknown names
    loader = _LOADERS[name]
    try:
        inspect.signature(loader).bind(**kwargs)
    except TypeError as exc:
        raise InputError(f"bad arguments for dataset {name!r}: {exc}") from exc
    return loader(**kwargs)

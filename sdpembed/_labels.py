"""Validation of (partially) labelled targets.

scikit-learn's semi-supervised convention: ``y[i] == -1`` marks an unlabeled
point. Every method that uses labels goes through :func:`check_partial_labels`
so that bad labels get the same clear :class:`~sdpembed.exceptions.LabelError`
before any matrix is formed.
"""

from __future__ import annotations

import numpy as np

from .exceptions import LabelError

__all__ = ["UNLABELED", "check_partial_labels", "label_indicator"]

#: Marker of an unlabeled point (scikit-learn's semi-supervised convention).
UNLABELED = -1


def _as_integer_labels(y: np.ndarray, allow_strings: bool):
    """Return (integer-or-object labels, is_string) or raise LabelError."""
    if y.dtype.kind == "b":
        return y.astype(np.int64), False
    if y.dtype.kind in "iu":
        return y.astype(np.int64), False
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            raise LabelError("y contains NaN or infinite values; mark unlabeled points with -1")
        if not np.all(y == np.round(y)):
            raise LabelError(
                "y has non-integer values; class labels must be integers with -1 for unlabeled "
                "points (for real-valued label vectors use labels='continuous' where the method "
                "supports it)")
        return y.astype(np.int64), False
    if y.dtype.kind in "USO":
        try:
            as_float = y.astype(float)
        except (TypeError, ValueError):
            as_float = None
        if as_float is not None and np.all(np.isfinite(as_float)) \
                and np.all(as_float == np.round(as_float)):
            return as_float.astype(np.int64), False  # numeric strings such as "3", "-1"
        if allow_strings:
            return y.astype(str), True
        raise LabelError(
            "y holds non-numeric labels (e.g. strings); encode them as integers first "
            "(sklearn.preprocessing.LabelEncoder) and mark unlabeled points with -1")
    raise LabelError(f"y must hold integer class labels; got dtype {y.dtype}")


def check_partial_labels(y, n_samples: int, *, min_classes: int = 2, min_per_class: int = 2,
                         allow_strings: bool = False):
    """Validate semi-supervised class labels.

    Parameters
    ----------
    y : array-like, shape (n_samples,)
        Integer class labels with ``-1`` for unlabeled points. Floats with
        integer values and numeric strings (``"3"``, ``"-1"``) are accepted.
        Other strings raise unless ``allow_strings=True`` (fully supervised
        methods), in which case every point is labelled.
    n_samples : int
        Number of rows of ``X``.
    min_classes : int, default 2
        Fewest distinct classes among the labelled points.
    min_per_class : int, default 2
        Fewest labelled points per class (a within-class scatter needs two).

    Returns
    -------
    y_int : ndarray of int, shape (n_samples,)
        Class indices ``0 .. n_classes - 1``, ``-1`` for unlabeled points.
    classes : ndarray, shape (n_classes,)
        The original label of each class index.
    labeled_mask : ndarray of bool, shape (n_samples,)

    Raises
    ------
    LabelError
        ``y`` missing, of the wrong shape, non-integer, with too few classes or
        a class with too few labelled points.
    """
    if y is None:
        raise LabelError("this method needs class labels y (use -1 for unlabeled points)")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise LabelError(f"y must be 1-D of length n_samples={n_samples}; got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise LabelError(f"y has {y.shape[0]} entries but X has {n_samples} samples")
    y, is_string = _as_integer_labels(y, allow_strings)
    labeled = np.ones(n_samples, bool) if is_string else (y != UNLABELED)
    classes, y_lab, counts = np.unique(y[labeled], return_inverse=True, return_counts=True)
    if classes.size < min_classes:
        found = "no labeled points" if classes.size == 0 else \
            f"only class {classes.tolist()} among the labeled points"
        raise LabelError(
            f"need at least {min_classes} classes with labeled points; found {found}. "
            "Label at least one point of another class (-1 marks unlabeled points)")
    small = classes[counts < min_per_class]
    if small.size:
        raise LabelError(
            f"every class needs at least {min_per_class} labeled points; class(es) "
            f"{small.tolist()} have {counts[counts < min_per_class].tolist()}. Label more "
            "points of those classes or drop them")
    y_int = np.full(n_samples, UNLABELED, dtype=np.int64)
    y_int[labeled] = y_lab
    return y_int, classes, labeled


def label_indicator(y_int, n_classes: int) -> np.ndarray:
    """One-hot matrix ``S`` (n_samples, n_classes); rows of unlabeled points are zero."""
    y_int = np.asarray(y_int)
    S = np.zeros((y_int.shape[0], n_classes))
    lab = y_int >= 0
    S[np.flatnonzero(lab), y_int[lab]] = 1.0
    return S

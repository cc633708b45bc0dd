"""Hiding labels for semi-supervised experiments (:func:`partial_labels`)."""

from __future__ import annotations

import logging
import numbers

import numpy as np
from sklearn.utils import check_random_state

from .._typing import ArrayLike, RandomStateLike
from ..exceptions import (
    InputError,
    LabelError,
)

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------- labels


def partial_labels(y: ArrayLike, fraction: float | int, *, per_class: bool = True,
                   min_per_class: int = 1, random_state: RandomStateLike = None) -> np.ndarray:
    """Hide labels at random: a copy of ``y`` with ``-1`` for unlabeled points.

    Parameters
    ----------
    y : array-like of int, shape (n,)
        Complete labels (no ``-1``).
    fraction : float in (0, 1] or int >= 1
        If float, the fraction of labels **kept**: per class,
        :math:`\\max(m, \\lfloor f\\, n_c + 1/2 \\rfloor)` of the :math:`n_c`
        points of class :math:`c` stay labeled (``per_class=True``), or
        :math:`\\lfloor f\\, n + 1/2 \\rfloor` overall (``per_class=False``).
        If int, the number of labels kept per class (``per_class=True``) or in
        total (``per_class=False``), as in scikit-learn's ``train_test_split``.
        For example TCA's "5 % labeled per class" is ``fraction=0.05`` and the
        DVU paper's "20 % of labels hidden" is ``fraction=0.8``.
    per_class : bool, default=True
        Stratify: draw the labeled points class by class.
    min_per_class : int, default=1
        Every class keeps at least this many labels (in both modes), so that
        every class is represented.
    random_state : int, RandomState instance or None
        Seed of the draw.

    Returns
    -------
    ndarray of int64, shape (n,)
        ``y`` with the hidden labels set to ``-1``.

    Raises
    ------
    LabelError
        ``y`` holds ``-1`` or non-integers, or a class has fewer than
        ``min_per_class`` points, or the requested count exceeds a class size.
    InputError
        ``fraction`` or ``min_per_class`` out of range.
    """
    y = _check_complete_labels(y)
    classes, y_idx, counts = np.unique(y, return_inverse=True, return_counts=True)
    if isinstance(min_per_class, bool) or not isinstance(min_per_class, numbers.Integral) \
            or min_per_class < 0:
        raise InputError(f"min_per_class must be an integer >= 0; got {min_per_class!r}")
    small = classes[counts < min_per_class]
    if small.size:
        raise LabelError(
            f"classes {small.tolist()} have fewer than min_per_class={min_per_class} points")
    rng = check_random_state(random_state)
    n = y.size
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real):
        raise InputError(f"fraction must be a float in (0, 1] or an int >= 1; got {fraction!r}")
    is_count = isinstance(fraction, numbers.Integral)
    if (is_count and fraction < 1) or (not is_count and not 0.0 < float(fraction) <= 1.0):
        raise InputError(f"fraction must be a float in (0, 1] or an int >= 1; got {fraction!r}")

    if per_class:
        keep = (np.full(classes.size, int(fraction)) if is_count
                else np.floor(float(fraction) * counts + 0.5).astype(np.int64))
        keep = np.maximum(keep, min_per_class)
        too_many = classes[keep > counts]
        if too_many.size:
            raise LabelError(
                f"cannot keep {int(fraction)} labels in classes {too_many.tolist()}: they have "
                f"only {counts[keep > counts].tolist()} points")
        # Random rank of each point within its class; keep the lowest `keep[c]` ranks.
        rank = _rank_within_class(y_idx, rng.permutation(n))
        labeled = rank < keep[y_idx]
    else:
        total = int(fraction) if is_count else int(np.floor(float(fraction) * n + 0.5))
        if total > n:
            raise LabelError(f"cannot keep {total} labels out of {n} points")
        rank = _rank_within_class(y_idx, rng.permutation(n))
        labeled = rank < min_per_class
        rest = np.flatnonzero(~labeled)
        extra = max(total - int(labeled.sum()), 0)
        labeled[rng.choice(rest, size=extra, replace=False)] = True
    out = y.copy()
    out[~labeled] = -1
    logger.debug("partial_labels: kept %d of %d labels", int(labeled.sum()), n)
    return out


def _rank_within_class(y_idx: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Rank of each point among its class when points are visited in ``order``."""
    visit = order[np.argsort(y_idx[order], kind="stable")]
    starts = np.concatenate([[0], np.cumsum(np.bincount(y_idx))[:-1]])
    rank = np.empty_like(y_idx)
    rank[visit] = np.arange(y_idx.size) - starts[y_idx[visit]]
    return rank


def _integer_labels(y: np.ndarray, name: str = "y", *, kinds: str = "iu") -> np.ndarray:
    """Class labels as int64: an integer array, or a float array of whole numbers.

    Parameters
    ----------
    y : ndarray
        Labels of any shape.
    name : str, default="y"
        How error messages call ``y``.
    kinds : str, default="iu"
        numpy dtype kinds taken as they are (add ``"b"`` to accept booleans).

    Raises
    ------
    LabelError
        ``y`` has another dtype, or floats that are not finite whole numbers.
    """
    if y.dtype.kind in kinds or (y.dtype.kind == "f" and np.all(np.isfinite(y))
                                 and np.all(y == np.round(y))):
        return y.astype(np.int64)
    raise LabelError(f"{name} must hold integer class labels; got dtype {y.dtype}")


def _check_complete_labels(y) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or y.size == 0:
        raise LabelError(f"y must be a non-empty 1-D array of labels; got shape {y.shape}")
    y = _integer_labels(y)
    if np.any(y < 0):
        raise LabelError("y must be complete (no -1 or negative labels); pass the true labels")
    return y

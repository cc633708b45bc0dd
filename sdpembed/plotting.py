"""Figures for embeddings, spectra, label prototypes and accuracy curves.

Every function draws on ``ax`` when given, otherwise on a new
:class:`matplotlib.figure.Figure` that is *not* registered with pyplot (no
global state, safe with the Agg backend and in worker processes), and returns
the :class:`~matplotlib.axes.Axes`. Nothing here calls ``plt.show``; save with
``ax.figure.savefig(path)`` or display ``ax.figure`` in a notebook.

Class colours come from the same palette everywhere (``tab10`` up to 10
classes, ``tab20`` up to 20), so class ``k`` has one colour in an embedding
and in its label prototype.
"""

from __future__ import annotations

import logging
import numbers
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from ._typing import ArrayLike
from .exceptions import InputError

__all__ = [
    "class_colors",
    "plot_embedding",
    "plot_spectrum",
    "plot_label_prototypes",
    "plot_accuracy_vs_dimension",
]

logger = logging.getLogger(__name__)

_UNLABELED_COLOR = "0.6"


def class_colors(n_classes: int) -> np.ndarray:
    """RGBA colours of classes ``0..n_classes-1`` (``tab10``, ``tab20``, else ``viridis``)."""
    from matplotlib import colormaps

    if n_classes <= 10:
        return colormaps["tab10"](np.arange(n_classes))
    if n_classes <= 20:
        return colormaps["tab20"](np.arange(n_classes))
    return colormaps["viridis"](np.linspace(0.0, 1.0, n_classes))


def _new_axes(projection: str | None = None, figsize=(5.0, 4.0)) -> Axes:
    fig = Figure(figsize=figsize, layout="constrained")
    return fig.add_subplot(projection=projection)


def _finite_1d(values, name: str) -> np.ndarray:
    try:
        a = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be numeric: {exc}") from exc
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)):
        raise InputError(f"{name} must be a non-empty finite 1-D array; got shape {a.shape}")
    return a


def _names(class_names, classes: np.ndarray) -> list[str]:
    if class_names is None:
        return [str(c) for c in classes]
    names = list(class_names)
    if len(names) <= int(classes.max()):
        raise InputError(
            f"class_names has {len(names)} entries but the labels go up to {classes.max()}")
    return [str(names[c]) for c in classes]


def plot_embedding(embedding: ArrayLike, y: ArrayLike, labeled_mask: ArrayLike | None = None, *,
                   ax: Axes | None = None, dims: int = 2, components: Sequence[int] | None = None,
                   class_names: Sequence[str] | None = None, s: float = 18.0, legend: bool = True,
                   title: str | None = None) -> Axes:
    """Scatter an embedding coloured by class, unlabeled points hollow.

    Every class gets one colour (:func:`class_colors`); points whose label was
    visible to the method (``labeled_mask``) are filled markers, the others
    hollow circles of the same colour. Points with ``y == -1`` (label unknown
    even for plotting) are grey hollow circles.

    Parameters
    ----------
    embedding : array-like of shape (n, d)
        Coordinates, ``d >= dims``.
    y : array-like of int, shape (n,)
        Class of every point (``-1`` for unknown).
    labeled_mask : array-like of bool, shape (n,), optional
        True for the labeled points. Default: every point with ``y != -1``.
    ax : matplotlib Axes, optional
        Where to draw; for ``dims=3`` it must be a 3-D Axes.
    dims : {2, 3}, default=2
    components : sequence of int, optional
        Which columns to plot; default the first ``dims``.
    class_names : sequence of str, optional
        ``class_names[k]`` labels class ``k`` in the legend.
    s : float, default=18
        Marker area.
    legend : bool, default=True
        One entry per class, plus "unlabeled" when some points are.
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes
        One ``PathCollection`` per (class, labeled/unlabeled) group present.
    """
    if dims not in (2, 3):
        raise InputError(f"dims must be 2 or 3; got {dims!r}")
    try:
        E = np.asarray(embedding, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"embedding must be numeric: {exc}") from exc
    cols = list(range(dims)) if components is None else [int(c) for c in components]
    if E.ndim != 2 or len(cols) != dims or max(cols) >= E.shape[1] or min(cols) < 0:
        raise InputError(
            f"embedding must be 2-D with the columns {cols} to plot {dims}-D; got shape "
            f"{E.shape}")
    y = np.asarray(y)
    if y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
        y = y.astype(np.int64)
    if y.shape != (E.shape[0],) or y.dtype.kind not in "iu":
        raise InputError(f"y must be integer labels of shape ({E.shape[0]},); got {y.shape}, "
                         f"dtype {y.dtype}")
    mask = y != -1 if labeled_mask is None else np.asarray(labeled_mask)
    if mask.dtype != bool or mask.shape != y.shape:
        raise InputError(f"labeled_mask must be boolean of shape {y.shape}")
    if ax is None:
        ax = _new_axes("3d" if dims == 3 else None)
    elif (ax.name == "3d") != (dims == 3):
        raise InputError(f"dims={dims} needs a {'3-D' if dims == 3 else '2-D'} Axes; got "
                         f"{ax.name!r}")

    known = y >= 0
    classes = np.unique(y[known])
    colors = class_colors(int(classes.max()) + 1 if classes.size else 0)
    names = _names(class_names, classes) if classes.size else []
    P = E[:, cols]

    def scatter(rows, **kw):
        ax.scatter(*P[rows].T, s=s, linewidths=0.8, **kw)

    for c in classes:
        filled = (y == c) & mask
        hollow = (y == c) & ~mask
        if filled.any():
            scatter(filled, facecolors=[colors[c]], edgecolors="k", marker="o")
        if hollow.any():
            scatter(hollow, facecolors="none", edgecolors=[colors[c]], marker="o")
    if (~known).any():
        scatter(~known, facecolors="none", edgecolors=_UNLABELED_COLOR, marker="o")

    axis_names = ["x", "y", "z"][:dims]
    for a, c in zip(axis_names, cols, strict=True):
        getattr(ax, f"set_{a}label")(f"component {c + 1}")
    if title:
        ax.set_title(title)
    if legend and classes.size:
        handles = [Line2D([], [], ls="", marker="o", color=colors[c], markeredgecolor="k",
                          label=name) for c, name in zip(classes, names, strict=True)]
        if (~mask).any():
            handles.append(Line2D([], [], ls="", marker="o", markerfacecolor="none",
                                  markeredgecolor="k", label="unlabeled (hollow)"))
        ax.legend(handles=handles, fontsize="small", loc="best")
    return ax


def _mark_index(values: np.ndarray, mark) -> int | None:
    """Number of leading components that ``mark`` selects."""
    if mark is None:
        return None
    if isinstance(mark, str):
        if mark != "negative":
            raise InputError(f"mark must be an int, a float in (0, 1) or 'negative'; got {mark!r}")
        return int(np.sum(values < 0))
    if isinstance(mark, bool) or not isinstance(mark, numbers.Real):
        raise InputError(f"mark must be an int, a float in (0, 1) or 'negative'; got {mark!r}")
    if isinstance(mark, numbers.Integral):
        if not 0 <= mark <= values.size:
            raise InputError(f"mark must be in [0, {values.size}]; got {mark}")
        return int(mark)
    if not 0.0 < mark < 1.0 or np.any(values < 0) or values.sum() <= 0:
        raise InputError("a fractional mark needs 0 < mark < 1 and non-negative eigenvalues")
    share = np.cumsum(values) / values.sum()
    return int(np.searchsorted(share, mark - 1e-12) + 1)


def plot_spectrum(eigenvalues: ArrayLike, *, ax: Axes | None = None, cumulative: bool = True,
                  mark: int | float | str | None = None, title: str | None = None) -> Axes:
    """Bar chart of an eigenvalue spectrum with its cumulative curve.

    Two uses in the papers:

    * **DVU rank** (Vernaza, Lee & Taskar): the eigenvalues of the learned
      Gram matrix, largest first, are non-negative; the cumulative curve is
      the captured share :math:`\\sum_{j \\le d} \\lambda_j / \\sum_j \\lambda_j`
      and ``mark=0.95`` marks the smallest :math:`d` that reaches 95 %.
    * **DNE dimension** (Zhang et al.): DNE keeps the eigenvectors with
      *negative* eigenvalues, smallest first; the cumulative curve is then the
      raw sum :math:`\\sum_{j \\le d} \\lambda_j`, whose minimum is reached
      exactly at the number of negative eigenvalues, which ``mark="negative"``
      marks.

    Parameters
    ----------
    eigenvalues : array-like of shape (m,)
        In the order to plot (component 1 first).
    ax : matplotlib Axes, optional
    cumulative : bool, default=True
        Draw the cumulative curve on a twin y-axis (share of the total when all
        eigenvalues are >= 0, raw cumulative sum otherwise).
    mark : int, float in (0, 1), "negative" or None
        Draw a vertical line after the first ``d`` components: ``d = mark``
        (int), the smallest ``d`` with captured share >= ``mark`` (float), or
        the number of negative eigenvalues (``"negative"``).
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes
        The bar axes; the cumulative curve is on ``ax.figure.axes[-1]``
        (a twin sharing the x-axis).
    """
    values = _finite_1d(eigenvalues, "eigenvalues")
    d = _mark_index(values, mark)
    if ax is None:
        ax = _new_axes()
    index = np.arange(1, values.size + 1)
    colors = np.where(values < 0, "tab:red", "tab:blue")
    ax.bar(index, values, color=colors, width=0.8, label="eigenvalue")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_xlabel("component")
    ax.set_ylabel("eigenvalue")
    if cumulative:
        twin = ax.twinx()
        if np.all(values >= 0) and values.sum() > 0:
            curve, ylabel = np.cumsum(values) / values.sum(), "cumulative share"
            twin.set_ylim(0.0, 1.05)
        else:
            curve, ylabel = np.cumsum(values), "cumulative sum"
        twin.plot(index, curve, color="tab:orange", marker=".", label=ylabel)
        twin.set_ylabel(ylabel)
    if d is not None:
        ax.axvline(d + 0.5, color="k", ls="--", lw=1.0)
        # a share says what d is: the smallest number of components that reaches it
        fractional = not isinstance(mark, (str, numbers.Integral))
        label = f"d = {d} ({float(mark):.0%} of total)" if fractional else f"d = {d}"
        ax.annotate(label, xy=(d + 0.5, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(3, -12), textcoords="offset points", fontsize="small")
    if title:
        ax.set_title(title)
    return ax


def plot_label_prototypes(prototypes: ArrayLike, *, ax: Axes | None = None,
                          class_names: Sequence[str] | None = None,
                          components: tuple[int, int] = (0, 1), title: str | None = None) -> Axes:
    """Label prototypes :math:`g^\\top s_k` in the embedding space, one per class.

    In Wang & Mahadevan's discriminative projections, the label map :math:`g`
    (:math:`c \\times d`) sends the one-hot label :math:`s_k` of class
    :math:`k` to the point :math:`g^\\top s_k` = row :math:`k` of :math:`g`;
    instances of class :math:`k` are pulled towards it. Their Figure 5 plots
    the prototypes on the first two columns of :math:`g`: similar digits get
    nearby prototypes when topology preservation (:math:`\\mu`) is strong.

    Parameters
    ----------
    prototypes : array-like of shape (c, d)
        Row ``k`` is the prototype of class ``k`` (e.g. the label map ``g``).
    ax : matplotlib Axes, optional
    class_names : sequence of str, optional
        Text written next to each prototype; default ``0..c-1``.
    components : pair of int, default=(0, 1)
        Columns to plot; with ``d == 1`` the prototypes are placed on a line.
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes
        One ``PathCollection`` and one text label per class.
    """
    try:
        G = np.asarray(prototypes, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"prototypes must be numeric: {exc}") from exc
    if G.ndim != 2 or G.shape[0] == 0 or not np.all(np.isfinite(G)):
        raise InputError(f"prototypes must be a finite (c, d) array; got shape {G.shape}")
    c = G.shape[0]
    names = _names(class_names, np.arange(c))
    if G.shape[1] == 1:
        P, labels = np.column_stack([G[:, 0], np.zeros(c)]), ("component 1", "")
    else:
        i, j = (int(k) for k in components)
        if not (0 <= i < G.shape[1] and 0 <= j < G.shape[1]):
            raise InputError(f"components {components} out of range for d = {G.shape[1]}")
        P, labels = G[:, [i, j]], (f"component {i + 1}", f"component {j + 1}")
    if ax is None:
        ax = _new_axes()
    colors = class_colors(c)
    for k in range(c):
        ax.scatter(P[k, 0], P[k, 1], s=60, color=colors[k], edgecolors="k", zorder=3)
        ax.annotate(names[k], P[k], xytext=(5, 5), textcoords="offset points")
    ax.axhline(0.0, color="0.8", lw=0.6, zorder=0)
    ax.axvline(0.0, color="0.8", lw=0.6, zorder=0)
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    if G.shape[1] == 1:
        ax.set_yticks([])
    ax.set_title(title if title else "label prototypes $g^T s_k$")
    return ax


def plot_accuracy_vs_dimension(dims: ArrayLike, acc: ArrayLike, *, ax: Axes | None = None,
                               label: str | None = None, std: ArrayLike | None = None,
                               ylabel: str = "accuracy", marker: str = "o") -> Axes:
    """Accuracy (or any score) against the embedding dimension, one line per call.

    Parameters
    ----------
    dims : array-like of int, shape (m,)
        Dimensions on the x-axis.
    acc : array-like of shape (m,) or (m, r)
        Score per dimension; with ``r`` repetitions per dimension the line is
        their mean and the band their standard deviation.
    ax : matplotlib Axes, optional
        Reuse it to compare methods on one plot.
    label : str, optional
        Legend entry of the line; the legend is (re)drawn when given.
    std : array-like of shape (m,), optional
        Half-width of a shaded band around the line (overrides the spread of
        repetitions).
    ylabel : str, default="accuracy"
    marker : str, default="o"

    Returns
    -------
    matplotlib.axes.Axes
        One ``Line2D`` per call, plus a ``PolyCollection`` band when a spread
        is known.
    """
    x = _finite_1d(dims, "dims")
    try:
        A = np.asarray(acc, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"acc must be numeric: {exc}") from exc
    if A.ndim not in (1, 2) or A.shape[0] != x.size or not np.all(np.isfinite(A)):
        raise InputError(f"acc must be finite of shape ({x.size},) or ({x.size}, r); got "
                         f"{A.shape}")
    mean = A if A.ndim == 1 else A.mean(axis=1)
    spread = None if A.ndim == 1 or A.shape[1] < 2 else A.std(axis=1, ddof=1)
    if std is not None:
        spread = _finite_1d(std, "std")
        if spread.shape != mean.shape:
            raise InputError(f"std must have shape {mean.shape}; got {spread.shape}")
    if ax is None:
        ax = _new_axes()
    order = np.argsort(x, kind="stable")
    (line,) = ax.plot(x[order], mean[order], marker=marker, label=label)
    if spread is not None:
        ax.fill_between(x[order], (mean - spread)[order], (mean + spread)[order],
                        color=line.get_color(), alpha=0.2, lw=0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("dimension")
    ax.set_ylabel(ylabel)
    if label is not None:
        ax.legend(fontsize="small")
    return ax

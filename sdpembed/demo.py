r"""The ``sdpembed demo``: DVU on scikit-learn's bundled handwritten digits.

All 1,797 of scikit-learn's 8 x 8 digits (:func:`sklearn.datasets.load_digits`,
ten classes, pixels scaled to [0, 1]) are embedded together, labelled and
unlabelled, by Discriminative Variance Unfolding (Vernaza, Lee & Taskar,
section 3.3): the Gram matrix :math:`G \succeq 0` of the embedding solves

.. math::

    \min_{G \succeq 0,\ \epsilon \ge 0}\ \sigma^2_{icv}(G) - \sigma^2_{bcv}(G)
    + \lambda \sum_{(i,j)\in E} \epsilon_{ij}
    \quad\text{s.t.}\quad
    (1-\epsilon_{ij})\bar D_{ij} \le G_{ii} + G_{jj} - 2G_{ij} \le (1+\epsilon_{ij})\bar D_{ij},
    \quad G\mathbf 1 = 0,

over a neighbourhood graph :math:`E` (nearest neighbours plus random long
edges). A fifth of the labels is hidden (:func:`sdpembed.datasets.partial_labels`
keeps 80 % per class). The SDP is solved by the toolkit's own large-n backend
``"LOWRANK"`` (:mod:`sdpembed.lowrank`), which needs no optional program and
proves its optimality by a duality certificate: ``certified_gap`` bounds the
relative distance of the objective from the optimum.

The hidden labels are then predicted by a 3-NN classifier and a linear
multiclass SVM (:mod:`sdpembed.evaluation`), once on the raw pixels and once on
the top ``n_components`` coordinates of the learned kernel, both trained on the
labelled points only. A figure shows the first two coordinates of the
embedding (hidden labels hollow) and the spectrum of :math:`G`.

This module sits above the estimators; :func:`run` is what ``sdpembed demo``
calls, and ``examples/dvu_digits.py`` calls it too.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from ._typing import RandomStateLike
from ._version import __version__
from .datasets import partial_labels
from .estimators.gram import DVU
from .evaluation import transductive_knn_accuracy, transductive_svm_accuracy
from .exceptions import InputError, OutputError

__all__ = ["run", "format_result", "load_demo_data"]

#: Graph of the demo: each digit's 2 nearest neighbours plus 1 random long edge
#: per digit, the graph the DVU paper suggests (Vernaza, Lee & Taskar, section 3.2.1).
N_NEIGHBORS = 2
N_RANDOM = 1
#: Weight :math:`\lambda` of the slack on the distance intervals.
SLACK_WEIGHT = 1.0
#: Certified relative duality gap at which ``LOWRANK`` stops.
TOL = 1e-3
#: Share of the trace above which an eigenvalue counts as visible in the figure's bars.
VISIBLE_SHARE = 0.01
#: Share of the trace that the figure's dashed line ``d`` marks.
MARK_SHARE = 0.95


def load_demo_data(n_samples: int | None = None, *,
                   random_state: RandomStateLike = 0) -> tuple[np.ndarray, np.ndarray]:
    """Digits scaled to [0, 1] and their labels; ``n_samples`` draws a class-stratified subset.

    Parameters
    ----------
    n_samples : int or None
        ``None`` keeps all 1,797 digits; otherwise a subset of this size with
        the class proportions of the whole (at least 20, so that every class
        keeps a labelled and a hidden point).
    random_state : int or None
        Seed of the subset.

    Returns
    -------
    X : ndarray of shape (n, 64)
    y : ndarray of int, shape (n,)
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    if n_samples is None or n_samples == len(y):
        return X, y
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) \
            or not 20 <= n_samples <= len(y):
        raise InputError(f"n_samples must be an integer in [20, {len(y)}] or None; "
                         f"got {n_samples!r}")
    X, _, y, _ = train_test_split(X, y, train_size=int(n_samples), stratify=y,
                                  random_state=random_state)
    return X, y


def run(solver: str = "LOWRANK", quiet: bool = True, plot: str | Path | None = None, *,
        n_samples: int | None = None, labeled_fraction: float = 0.8,
        n_neighbors: int = N_NEIGHBORS, n_random: int = N_RANDOM,
        slack_weight: float = SLACK_WEIGHT, n_components: int = 10,
        solver_options: dict | None = None, random_state: int = 0) -> dict:
    """Fit DVU on the digits, score the hidden labels, optionally save the figure.

    Parameters
    ----------
    solver : str, default="LOWRANK"
        Backend of the SDP. ``"LOWRANK"`` gets ``tol=TOL`` unless
        ``solver_options`` says otherwise; the interior-point backends form
        the full n x n problem and are only practical on a small ``n_samples``.
    quiet : bool, default=True
        If False, print :func:`format_result` of the result.
    plot : path or None
        Where to save the figure (embedding and spectrum side by side).
    n_samples : int or None
        A class-stratified subset of the digits (see :func:`load_demo_data`).
    labeled_fraction : float, default=0.8
        Fraction of the labels kept per class.
    n_neighbors, n_random, slack_weight, n_components :
        Passed to :class:`sdpembed.DVU`.
    solver_options : dict, optional
        Backend options (for ``"LOWRANK"``: :class:`sdpembed.lowrank.LowRankOptions`).
    random_state : int
        Seeds the subset, the hidden labels, the random edges and the SVM.

    Returns
    -------
    dict
        ``n``, ``hidden`` (count), ``n_edges``, the report's ``solver``,
        ``solver_version``, ``status``, ``objective``, ``certified_gap``
        (``None`` unless the backend certifies), ``gap`` (the backend's own),
        ``rank`` (the returned factor's numerical rank, ``LOWRANK`` only), ``solve_s``,
        ``wall_s`` (graph, solve and embedding), the accuracies ``knn3_raw``,
        ``knn3_dvu``, ``svm_raw``, ``svm_dvu``, ``spectrum`` (eigenvalue
        fractions, largest first), ``n_components`` and ``plot`` (the path, if
        written).
    """
    if plot is not None:
        plot = check_figure_path(plot)
    X, y = load_demo_data(n_samples, random_state=random_state)
    y_partial = partial_labels(y, labeled_fraction, random_state=random_state)
    labeled = y_partial != -1
    options = dict(solver_options or {})
    if solver.upper() == "LOWRANK":
        options.setdefault("tol", TOL)
    start = time.perf_counter()
    est = DVU(n_components=n_components, n_neighbors=n_neighbors, n_random=n_random,
              slack_weight=slack_weight, solver=solver, solver_options=options,
              validation_fraction=None,   # the demo scores the hidden labels itself
              random_state=random_state).fit(X, y_partial)
    wall = time.perf_counter() - start
    rep = est.solve_report_
    emb = est.embedding_
    result = {
        "n": int(len(y)), "hidden": int((~labeled).sum()), "n_edges": int(est.graph_.n_edges),
        "solver": rep.solver, "solver_version": rep.solver_version, "status": rep.status,
        "objective": rep.objective, "certified_gap": rep.certified_gap, "gap": rep.gap,
        "rank": rep.extra.get("rank"), "solve_s": rep.solve_seconds, "wall_s": wall,
        "n_components": n_components,
        "knn3_raw": transductive_knn_accuracy(X, y, labeled, 3),
        "knn3_dvu": transductive_knn_accuracy(emb, y, labeled, 3),
        "svm_raw": transductive_svm_accuracy(X, y, labeled, random_state=random_state),
        "svm_dvu": transductive_svm_accuracy(emb, y, labeled, random_state=random_state),
        "spectrum": np.asarray(est.spectrum_, dtype=float),
        "plot": None,
    }
    result["n_visible"] = int(np.sum(result["spectrum"] >= VISIBLE_SHARE))
    if plot is not None:
        result["plot"] = str(_save_figure(emb, y, labeled, result, plot))
    if not quiet:
        print(format_result(result))
    return result


def check_figure_path(path: str | Path) -> Path:
    """``path`` if a figure can be saved there, else :class:`~sdpembed.exceptions.OutputError`.

    Checked before the solve: a missing or read-only folder, a folder in the
    way or a format matplotlib cannot write would otherwise fail only after it.
    """
    from matplotlib.backend_bases import FigureCanvasBase

    path = Path(path)
    folder = path.parent
    formats = FigureCanvasBase.get_supported_filetypes()
    if path.is_dir():
        raise OutputError(f"cannot write the figure to {path}: it is a folder; name a file "
                          f"such as {path / 'sdpembed-demo.png'}")
    if path.suffix.lstrip(".").lower() not in formats:
        raise OutputError(f"cannot write the figure to {path}: name a file ending in one of "
                          f"{', '.join('.' + k for k in sorted(formats))}")
    if not folder.is_dir():
        raise OutputError(f"cannot write the figure to {path}: the folder {folder} does not "
                          "exist")
    if not os.access(folder, os.W_OK):
        raise OutputError(f"cannot write the figure to {path}: the folder {folder} is not "
                          "writable")
    return path


def _save_figure(emb, y, labeled, result: dict, path) -> Path:
    path = Path(path)
    _figure(emb, y, labeled, result).savefig(path, dpi=110)
    return path


def _figure(emb, y, labeled, result: dict):
    """The demo's figure: the embedding, the kernel's spectrum and a caption of their marks."""
    from matplotlib.figure import Figure

    from .plotting import plot_embedding, plot_spectrum

    fig = Figure(figsize=(11.0, 5.4), layout="constrained")
    ax_emb, ax_spec = fig.subplots(1, 2, width_ratios=(1.15, 1.0))
    plot_embedding(emb[:, :2], y, labeled_mask=labeled, ax=ax_emb, s=9.0,
                   title=f"DVU embedding of {result['n']:,} digits "
                         f"({result['hidden']} labels hidden: hollow)")
    legend = ax_emb.get_legend()
    ax_emb.legend(handles=legend.legend_handles, labels=[t.get_text() for t in legend.texts],
                  loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    spec = result["spectrum"]
    rank = result.get("rank")
    top = spec[:max(20, (rank or 0) + 2)]
    plot_spectrum(top, ax=ax_spec, mark=MARK_SHARE,
                  title=f"Spectrum of the learned kernel: the {top.size} largest\n"
                        "eigenvalues, as shares of its trace")
    ax_spec.set_ylabel("eigenvalue / trace")
    if rank is not None and rank < top.size:
        ax_spec.axvline(rank + 0.5, color="0.4", ls=":", lw=1.0)
        ax_spec.annotate(f"rank {rank}", xy=(rank + 0.5, 0.5), xycoords=("data", "axes fraction"),
                         xytext=(3, 0), textcoords="offset points", fontsize="small",
                         color="0.3")
    fig.supxlabel(_caption(result), fontsize="small", ha="center")
    return fig


def _caption(result: dict) -> str:
    """What the figure's marks mean, in the figure itself (two short lines)."""
    spec, d, k = result["spectrum"], result["n_components"], result["n_visible"]
    mark = int(np.searchsorted(np.cumsum(spec), MARK_SHARE - 1e-12) + 1)
    first = (f"Left: the first 2 of the {d} coordinates the classifiers use.  Right: dashed "
             f"line d = {mark}: the {mark} largest eigenvalues hold {MARK_SHARE:.0%} of the "
             "trace.")
    rank = result.get("rank")
    if rank is None:
        return f"{first}\n{k} eigenvalues exceed {VISIBLE_SHARE:.0%} of the trace."
    rest = float(spec[k:].sum())
    return (f"{first}\nDotted line: the solution has rank {rank} (the "
            f"{result['solver']} factor's numerical rank); {k} eigenvalues exceed "
            f"{VISIBLE_SHARE:.0%} of the trace, the other {rank - k} hold {rest:.2%} "
            "together, too little to see.")


def format_result(result: dict) -> str:
    """The demo's printed summary: solve, certificate and the accuracy table (markdown)."""
    hidden, n = result["hidden"], result["n"]
    lines = [f"sdpembed {__version__} demo: DVU on {n:,} of scikit-learn's 8x8 digits, "
             f"{hidden} labels hidden ({100 * (n - hidden) / n:.0f} % labelled)",
             f"graph: {result['n_edges']:,} edges (nearest neighbours + random long edges)",
             f"solver {result['solver']} {result['solver_version']}: {result['status']}, "
             f"objective {result['objective']:.6g}, solve {result['solve_s']:.1f} s"
             + (f", rank {result['rank']} ({result['n_visible']} eigenvalues above "
                f"{VISIBLE_SHARE:.0%} of the trace)" if result.get("rank") is not None else "")]
    if result["certified_gap"] is not None:
        lines.append(f"certified relative duality gap: {result['certified_gap']:.1e} "
                     "(the objective is provably this close to the SDP's optimum)")
    elif result["gap"] is not None:
        lines.append(f"duality gap reported by {result['solver']}: {result['gap']:.1e} "
                     "(not certified)")
    d = result["n_components"]
    lines += ["",
              f"| classifier, trained on the labelled digits, scored on the {hidden} hidden "
              f"| raw pixels (64-D) | DVU embedding ({d}-D) |",
              "|---|---|---|",
              f"| 3-NN | {result['knn3_raw']:.3f} | {result['knn3_dvu']:.3f} |",
              f"| linear SVM (Crammer-Singer) | {result['svm_raw']:.3f} "
              f"| {result['svm_dvu']:.3f} |",
              ""]
    spec = result["spectrum"]
    lines.append(f"share of the kernel's variance in the top 2 / {d} components: "
                 f"{spec[:2].sum():.2f} / {spec[:d].sum():.2f}")
    if result["plot"]:
        lines.append(f"figure (embedding and spectrum) written to {result['plot']}")
    return "\n".join(lines)

"""Figure kinds: each described once -- fields, the arrays it needs, its checks, its drawing.

A spec's ``[figures.<name>]`` table names a ``kind`` of :data:`FIGURE_KINDS`;
the figure is written to ``figures/<name>.png`` under the run's folder (the
name is a plain file name, checked when the spec is read). Figures of one
run's arrays (embedding, spectrum, label prototypes) ask the first matching
run of the grid to keep them (:attr:`FigureKind.keeps`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._checks import Boolean, Integer, ListOf, NoneOr, Number, OneOf, Table, Text, is_number
from .methods import METHODS
from .tables import REQUIRED, Field, did_you_mean, fail

if TYPE_CHECKING:  # annotations only
    from .results import ExperimentResult
    from .schema import FigureSpec, Spec

__all__ = ["FigureKind", "FIGURE_KINDS", "figure_selects", "make_figures"]


@dataclass(frozen=True)
class FigureKind:
    """One kind of figure.

    Attributes
    ----------
    name, doc : str
    fields : tuple of Field
        The kind's own fields (besides ``kind``, ``dataset``, ``fraction``).
    keeps : str or None
        Array the first matching run keeps for it (``"embedding"``,
        ``"spectrum"``, ``"prototypes"``), if any.
    check : callable
        ``(options, where, methods by label, metrics by name) -> None``;
        raises :class:`~sdpembed.exceptions.SpecError` naming the field.
    draw : callable
        ``(result, figure spec, plotting module) -> Axes or None``.
    """

    name: str
    doc: str
    fields: tuple
    keeps: str | None
    check: Callable
    draw: Callable


# --------------------------------------------------------------------------- checks


def _method_with_embedding(o, where, labels, metrics) -> None:
    if o["method"] not in labels:
        fail(f"{where}.method", f"unknown method label {o['method']!r}"
                                f"{did_you_mean(o['method'], labels)}; the spec's methods "
                                f"are {sorted(labels)}")
    if METHODS[labels[o["method"]].method].kind == "classifier":
        fail(f"{where}.method", f"{o['method']!r} has no embedding")


def _check_prototypes(o, where, labels, metrics) -> None:
    _method_with_embedding(o, where, labels, metrics)
    if labels[o["method"]].method != "DiscriminativeProjections":
        fail(f"{where}.method", "label prototypes need a DiscriminativeProjections method")


def _metric_of(o, where, metrics, scalar: bool):
    metric = metrics.get(o["metric"])
    if metric is None:
        fail(f"{where}.metric", f"unknown metric {o['metric']!r}"
                                f"{did_you_mean(o['metric'], metrics)}; the spec's metrics are "
                                f"{sorted(metrics)}")
    if metric.scalar != scalar:
        fail(f"{where}.metric", f"needs a {'scalar' if scalar else 'curve'} metric")
    return metric


def _check_curve(o, where, labels, metrics) -> None:
    _metric_of(o, where, metrics, scalar=False)
    bad = [m for m in o["methods"] or () if m not in labels]
    if bad:
        fail(f"{where}.methods", f"unknown method labels {bad}"
                                 f"{did_you_mean(bad[0], labels)}; the spec's methods are "
                                 f"{sorted(labels)}")


def _check_metric_vs_param(o, where, labels, metrics) -> None:
    _metric_of(o, where, metrics, scalar=True)
    if o["method"] not in labels:
        fail(f"{where}.method", f"unknown method label {o['method']!r}"
                                f"{did_you_mean(o['method'], labels)}; the spec's methods "
                                f"are {sorted(labels)}")
    swept = labels[o["method"]].swept
    if o["param"] not in swept:
        fail(f"{where}.param", f"{o['param']!r} is not swept by method {o['method']!r}"
                               f"{did_you_mean(o['param'], swept)} (swept: {swept})")


# --------------------------------------------------------------------------- drawing


def figure_selects(spec: Spec, fig: FigureSpec, dataset: str, fraction: float, method: str,
                   params: Mapping, want_method: str, want_params: Mapping | None) -> bool:
    """Whether a run (dataset, fraction, method label, params) is the one a figure shows."""
    ds = fig.dataset or spec.datasets[0].name
    fr = spec.labels.fractions[0] if fig.fraction is None else fig.fraction
    return (dataset == ds and fraction == fr and method == want_method
            and all(params.get(k) == v for k, v in (want_params or {}).items()))


def _artefact_for(result, fig, what: str):
    for r in result.rows:
        art = result.artefacts.get(r["index"], {})
        if what in art and figure_selects(result.spec, fig, r["dataset"], r["fraction"],
                                          r["method"], json.loads(r["all_params"]),
                                          fig.options["method"], fig.options.get("params")):
            return r, art
    raise KeyError(f"no successful run of {fig.options['method']!r} kept a {what}")


def _draw_embedding(result, fig, plotting):
    r, art = _artefact_for(result, fig, "embedding")
    dims = fig.options["dims"]
    Z = art["embedding"]
    if Z.shape[1] < dims:
        Z = np.column_stack([Z, np.zeros((Z.shape[0], dims - Z.shape[1]))])
    title = f"{r['method']} on {r['dataset']} (seed {r['seed']}; hollow: unlabeled)"
    return plotting.plot_embedding(Z, art["y"], art["labeled"], dims=dims, title=title)


def _draw_spectrum(result, fig, plotting):
    r, art = _artefact_for(result, fig, "spectrum")
    values = art["spectrum"]
    attribute = str(art["spectrum_attribute"])
    if attribute == "spectrum_":
        # eigenvalue shares of a Gram matrix: PSD, so negatives are solver round-off
        values = np.clip(values, 0.0, None)
    top = fig.options["top"]
    if top is not None:
        values = values[:int(top)]
    title = f"{r['method']}: {attribute.rstrip('_')} ({r['dataset']})"
    return plotting.plot_spectrum(values, mark=fig.options["mark"], title=title)


def _draw_prototypes(result, fig, plotting):
    r, art = _artefact_for(result, fig, "prototypes")
    return plotting.plot_label_prototypes(art["prototypes"],
                                          title=f"label prototypes, {r['method']}")


def _draw_curve(result, fig, plotting):
    from .results import params_text

    spec = result.spec
    metric = next(m for m in spec.metrics if m.name == fig.options["metric"])
    dataset = fig.dataset or spec.datasets[0].name
    fraction = spec.labels.fractions[0] if fig.fraction is None else fig.fraction
    ax = None
    K = np.arange(1, metric.options["max_k"] + 1)
    for (d, f, method, params, solver), rows in result.groups():
        if d != dataset or f != fraction or not spec.metric_applies(metric, spec.method(method)):
            continue
        if fig.options["methods"] is not None and method not in fig.options["methods"]:
            continue
        used = [r for r in rows if r["status"] in ("ok", "inaccurate")]
        if not used:
            continue
        A = np.array([[r[c] for r in used] for c in metric.columns()])
        label = " ".join(s for s in (method, params_text(params).replace("–", ""),
                                     solver or "") if s)
        ax = plotting.plot_accuracy_vs_dimension(K, A, ax=ax, label=label,
                                                 ylabel=metric.describe())
    if ax is not None:
        ax.set_xlabel("K")
        ax.set_title(f"{metric.name} on {dataset}")
    return ax


def _draw_metric_vs_param(result, fig, plotting):
    from .results import mean_std, params_text

    spec = result.spec
    o = fig.options
    metric = next(m for m in spec.metrics if m.name == o["metric"])
    dataset = fig.dataset or spec.datasets[0].name
    fraction = spec.labels.fractions[0] if fig.fraction is None else fig.fraction
    lines: dict[tuple, dict] = {}
    for r in result.rows:
        if r["dataset"] != dataset or r["fraction"] != fraction or r["method"] != o["method"] \
                or r["status"] not in ("ok", "inaccurate") or r.get(metric.name) is None:
            continue
        params = json.loads(r["params"])
        x = params.pop(o["param"])
        if not is_number(x):
            continue
        key = (json.dumps(params, sort_keys=True), r["solver"])
        lines.setdefault(key, {}).setdefault(float(x), []).append(r[metric.name])
    ax = None
    for (params, solver), points in sorted(lines.items(), key=lambda kv: (kv[0][0],
                                                                          str(kv[0][1]))):
        xs = sorted(points)
        A = [mean_std(points[x])[:2] for x in xs]
        label = " ".join(s for s in (params_text(params).replace("–", ""), solver or "") if s)
        ax = plotting.plot_accuracy_vs_dimension(xs, [a[0] for a in A], ax=ax,
                                                 label=label or None,
                                                 std=[a[1] if math.isfinite(a[1]) else 0.0
                                                      for a in A],
                                                 ylabel=metric.describe())
    if ax is None:
        return None
    if o["log"] and min(min(p) for p in lines.values()) > 0:
        ax.set_xscale("log")
    ax.set_xlabel(o["param"])
    ax.set_title(f"{o['method']}: {metric.name} against {o['param']} ({dataset})")
    for pv in spec.paper:
        if pv.method == o["method"] and pv.metric == metric.name \
                and pv.dataset in (None, dataset):
            ax.axhline(pv.value / 100, color="k", ls=":", lw=1)
            ax.annotate(f"paper {pv.value:g}", xy=(0.01, pv.value / 100),
                        xycoords=("axes fraction", "data"), fontsize="small", va="bottom")
            break
    return ax


# --------------------------------------------------------------------------- the kinds

_METHOD = Field("method", Text(nonempty=True), REQUIRED, "a method label")
_PARAMS = Field("params", Table(), None, "the run with these parameter values")

#: Figure kinds a spec may use (``kind = NAME``).
FIGURE_KINDS: dict[str, FigureKind] = {k.name: k for k in [
    FigureKind("embedding", "2-D or 3-D scatter of one run's embedding (hollow: unlabeled)",
               (_METHOD, Field("dims", Integer(2, 3), 2, "2 or 3"), _PARAMS),
               "embedding", _method_with_embedding, _draw_embedding),
    FigureKind("spectrum", "eigenvalues of one run (Gram spectrum, DNE's negative ones)",
               (_METHOD, Field("mark", NoneOr(OneOf(Number(), Text())), None,
                               "a share such as 0.95, or 'negative'"),
                _PARAMS, Field("top", NoneOr(Integer(1)), None, "show the first values only")),
               "spectrum", _method_with_embedding, _draw_spectrum),
    FigureKind("label_prototypes", "label prototypes of a DiscriminativeProjections run",
               (_METHOD, _PARAMS), "prototypes", _check_prototypes, _draw_prototypes),
    FigureKind("curve", "a curve metric (loo_curve, topology_curve) against K",
               (Field("metric", Text(nonempty=True), REQUIRED, "a curve metric"),
                Field("methods", NoneOr(ListOf(Text(nonempty=True))), None, "only these")),
               None, _check_curve, _draw_curve),
    FigureKind("metric_vs_param", "a scalar metric against a swept parameter",
               (Field("metric", Text(nonempty=True), REQUIRED, "a scalar metric"), _METHOD,
                Field("param", Text(nonempty=True), REQUIRED, "a parameter the method sweeps"),
                Field("log", Boolean(), True, "logarithmic x axis")),
               None, _check_metric_vs_param, _draw_metric_vs_param),
]}


def make_figures(result: ExperimentResult) -> dict:
    """Draw the spec's figures from a result; a figure that cannot be drawn is logged."""
    import logging

    from .. import plotting
    from ..exceptions import InputError

    logger = logging.getLogger(__name__)
    figures = {}
    for fig in result.spec.figures:
        try:
            ax = FIGURE_KINDS[fig.kind].draw(result, fig, plotting)
        except (InputError, KeyError, ValueError) as exc:
            logger.warning("figure %s not drawn: %s", fig.name, exc)
            continue
        if ax is not None:
            figures[fig.name] = ax.figure
    return figures

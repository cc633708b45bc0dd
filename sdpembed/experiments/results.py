"""The results of a grid: the tidy table, its CSV/JSON files and the markdown summary.

Row statuses: ``"ok"``; ``"inaccurate"`` (the solve stopped at a limit close
to the optimum: kept, its metrics used, its solve status and gap shown);
``"error"`` (the task failed: its type and message in ``error``, counted and
listed in the summary). Metric values are fractions in the tables and
percentages in the summary.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .schema import DatasetSpec, GraphSpec, Spec, thaw
from .store import clean_float, write_atomic

__all__ = ["ExperimentResult", "USED"]

#: Row statuses whose metrics enter the summary.
USED = ("ok", "inaccurate")

_FIXED = ["index", "spec", "dataset", "fraction", "protocol", "seed", "method", "estimator",
          "params", "solver", "solver_version", "status", "n_samples", "n_features",
          "n_labeled", "n_components", "objective", "solve_status", "gap", "certified_gap",
          "iterations", "compile_s", "solve_s", "prepare_s", "fit_s", "eval_s", "wall_s"]
_TAIL = ["all_params", "solver_options", "error", "error_stage", "warnings", "key"]


@dataclass
class ExperimentResult:
    """Rows of a finished grid, with what is needed to summarise and plot it."""

    spec: Spec
    rows: list
    artefacts: dict
    meta: dict
    figures: dict = field(default_factory=dict)
    #: figure name -> PNG file, for a result read back by
    #: :func:`~sdpembed.experiments.load_result`
    figure_files: dict = field(default_factory=dict)

    # ---------------------------------------------------------------- tables
    def columns(self) -> list[str]:
        """Column order of the tidy table (fixed fields, then metric columns)."""
        metrics = [c for m in self.spec.metrics for c in m.columns()]
        return _FIXED + metrics + _TAIL

    def csv_text(self) -> str:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=self.columns(), extrasaction="ignore",
                                lineterminator="\n")
        writer.writeheader()
        for row in self.rows:
            writer.writerow({k: _csv_value(row.get(k)) for k in self.columns()})
        return buf.getvalue()

    def json_text(self) -> str:
        doc = {"spec": thaw(self.spec.raw), "meta": self.meta,
               "rows": [{k: clean_float(r.get(k)) for k in self.columns()} for r in self.rows]}
        return json.dumps(doc, indent=1, default=str, allow_nan=False)

    def to_csv(self, path: str | Path) -> Path:
        path = Path(path)
        write_atomic(path, self.csv_text().encode())
        return path

    def to_json(self, path: str | Path) -> Path:
        path = Path(path)
        write_atomic(path, self.json_text().encode())
        return path

    def groups(self) -> list[tuple[tuple, list[dict]]]:
        """Rows grouped by (dataset, fraction, method, swept params, solver), in grid order."""
        out: dict[tuple, list] = {}
        for r in self.rows:
            key = (r["dataset"], r["fraction"], r["method"], r["params"], r["solver"])
            out.setdefault(key, []).append(r)
        return list(out.items())

    def counts(self) -> dict[str, int]:
        """Rows by status."""
        out = {"ok": 0, "inaccurate": 0, "error": 0}
        for r in self.rows:
            out[r["status"]] = out.get(r["status"], 0) + 1
        return out

    def summary(self) -> str:
        """Markdown: mean ± std (percent) per group, the paper's numbers beside ours."""
        return _summary_markdown(self)

    # ---------------------------------------------------------------- output
    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """Write ``results.csv``, ``results.json``, ``summary.md`` and figures into ``out_dir``.

        Each file is written atomically (temporary file, ``fsync``, rename).
        """
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"csv": self.to_csv(out / "results.csv"),
                 "json": self.to_json(out / "results.json")}
        if self.figures:
            (out / "figures").mkdir(exist_ok=True)
        for name, fig in self.figures.items():
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
            p = out / "figures" / f"{name}.png"
            write_atomic(p, buf.getvalue())
            paths[f"figure:{name}"] = p
        summary = self.summary()
        if self.figures:
            summary += "\n## Figures\n\n" + "\n".join(
                f"- {name}: `figures/{name}.png`" for name in self.figures) + "\n"
        write_atomic(out / "summary.md", summary.encode())
        paths["summary"] = out / "summary.md"
        return paths


def _csv_value(v):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return v


# --------------------------------------------------------------------------- summary


def mean_std(values: list) -> tuple[float, float, int]:
    v = np.array([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if v.size == 0:
        return math.nan, math.nan, 0
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else math.nan, int(v.size)


def pct(mean: float, std: float | None = None) -> str:
    if not math.isfinite(mean):
        return "–"
    if std is None or not math.isfinite(std):
        return f"{100 * mean:.2f}"
    return f"{100 * mean:.2f} ± {100 * std:.2f}"


def params_text(params_json: str) -> str:
    params = json.loads(params_json)
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "–"


def _paper_cell(spec: Spec, dataset, fraction, method, params_json, metric) -> str | None:
    params = json.loads(params_json)
    for pv in spec.paper:
        if pv.metric == metric and pv.matches(dataset, fraction, method, params):
            return f"{pv.value:.2f}" + (f" ± {pv.std:.2f}" if pv.std is not None else "")
    return None


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _runs_text(meta: dict) -> str:
    text = f"{_n(meta['runs'], 'run')}: {meta['ok']} ok"
    if meta.get("inaccurate"):
        text += f", {meta['inaccurate']} inaccurate (kept, see 'solve')"
    return text + f", {_n(meta['errors'], 'error')}"


def _summary_markdown(result: ExperimentResult) -> str:
    spec, meta = result.spec, result.meta
    scalar = [m for m in spec.metrics if m.scalar]
    curves = [m for m in spec.metrics if not m.scalar]
    with_paper = {pv.metric for pv in spec.paper}
    lines = [f"# {spec.name}", ""]
    if spec.description:
        lines += [spec.description, ""]
    ds_text = "; ".join(_dataset_text(d) for d in spec.datasets)
    lab = spec.labels
    lines += [
        f"- data: {ds_text}",
        f"- labels kept: {', '.join(str(f) for f in lab.fractions)} "
        f"({'per class' if lab.per_class else 'overall'}, at least {lab.min_per_class} per "
        f"class), protocol {lab.protocol}",
        f"- graph: {_graph_text(spec.graph)}",
        f"- seeds: {_seeds_text(meta['seeds'])}; {_runs_text(meta)}",
        f"- ran: {meta['execution']}; wall time {meta['wall_s']:.1f} s",
        "- solvers: " + (", ".join(f"{k} {v}" for k, v in meta["solvers"].items()) or "none"),
        "- metrics (percent, mean ± std over seeds): "
        + "; ".join(f"{m.name} = {m.describe()}" for m in spec.metrics),
    ]
    if spec.paper_source:
        lines.append(f"- paper: {spec.paper_source}")
    lines.append("")
    header = ["dataset", "labels", "method", "params", "solver", "dims", "runs used"]
    for m in scalar:
        header.append(m.name)
        if m.name in with_paper:
            header.append(f"{m.name} (paper)")
    header.append("fit s")
    # solve columns where SDP runs were made: an inaccurate solve is a result, so its
    # status and certified gap are shown beside it
    solved = any(r.get("solve_status") for r in result.rows)
    certified = any(r.get("certified_gap") is not None for r in result.rows)
    header += (["solve"] if solved else []) + (["certified gap"] if certified else [])
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (dataset, fraction, method, params, solver), rows in result.groups():
        used = [r for r in rows if r["status"] in USED]
        cells = [dataset, str(fraction), method, params_text(params), solver or "–",
                 _dims_text(used), f"{len(used)}/{len(rows)}"]
        for m in scalar:
            applies = spec.metric_applies(m, spec.method(method))
            cells.append(pct(*mean_std([r.get(m.name) for r in used])[:2]) if applies else "")
            if m.name in with_paper:
                cells.append(_paper_cell(spec, dataset, fraction, method, params, m.name) or "")
        fit = mean_std([r.get("fit_s") for r in used])[0]
        cells.append(f"{fit:.2f}" if math.isfinite(fit) else "–")
        if solved:
            cells.append(_statuses_text(used))
        if certified:
            cells.append(_gap_text(used))
        lines.append("| " + " | ".join(cells) + " |")
    for m in curves:
        cols = m.columns()
        lines += ["", f"## {m.name}: {m.describe()} (percent, mean over seeds)", "",
                  "| dataset | method | params | solver | " + " | ".join(
                      f"K={k}" for k in range(1, len(cols) + 1)) + " |",
                  "|" + "---|" * (4 + len(cols))]
        for (dataset, _fraction, method, params, solver), rows in result.groups():
            if not spec.metric_applies(m, spec.method(method)):
                continue
            used = [r for r in rows if r["status"] in USED]
            vals = [pct(mean_std([r.get(c) for r in used])[0]) for c in cols]
            lines.append(f"| {dataset} | {method} | {params_text(params)} | {solver or '–'} | "
                         + " | ".join(vals) + " |")
    failures = [r for r in result.rows if r["status"] == "error"]
    if failures:
        lines += ["", f"## Errors ({_n(len(failures), 'run')})", ""]
        seen: dict[tuple, int] = {}
        for r in failures:
            key = (r["method"], r["params"], r["solver"], r.get("error_stage", ""),
                   r["error"][:200])
            seen[key] = seen.get(key, 0) + 1
        for (method, params, solver, stage, _), n in seen.items():
            r = next(f for f in failures if (f["method"], f["params"], f["solver"],
                                             f.get("error_stage", "")) == (method, params,
                                                                           solver, stage))
            lines.append(f"- {method} {params_text(params)} {solver or ''} ({_n(n, 'run')}, while "
                         f"{_STAGES.get(stage, stage or 'running')}): {_one_line(r['error'])}")
    return "\n".join(lines) + "\n"


_STAGES = {"prepare": "preparing the data", "fit": "fitting", "evaluate": "evaluating"}


def _one_line(message: str) -> str:
    """The whole error message on one Markdown list line (its advice comes last)."""
    return " ".join(message.split())


def _statuses_text(rows: list) -> str:
    """Solve statuses of a cell's runs: ``optimal``, or counts such as ``optimal 1, ... 1``."""
    counts: dict[str, int] = {}
    for r in rows:
        if r.get("solve_status"):
            counts[r["solve_status"]] = counts.get(r["solve_status"], 0) + 1
    if len(counts) == 1 and sum(counts.values()) == len(rows):
        return next(iter(counts))
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "–"


def _gap_text(rows: list) -> str:
    """Largest certified relative gap of a cell's runs (``–`` where none was certified)."""
    gaps = [r["certified_gap"] for r in rows if r.get("certified_gap") is not None]
    if not gaps:
        return "–"
    text = f"{max(gaps):.1e}"
    return text if len(gaps) == len(rows) else f"{text} ({len(gaps)}/{len(rows)} certified)"


def _dims_text(rows: list) -> str:
    """Embedding dimension of the runs: one value, or the range (DNE's energy rule)."""
    dims = sorted({r["n_components"] for r in rows if r.get("n_components") is not None})
    if not dims:
        return "–"
    return str(dims[0]) if len(dims) == 1 else f"{dims[0]}–{dims[-1]}"


def _seeds_text(seeds: list) -> str:
    if len(seeds) > 3 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}..{seeds[-1]} ({len(seeds)} seeds)"
    return str(seeds)


def _dataset_text(d: DatasetSpec) -> str:
    parts = [d.name]
    if d.options:
        parts.append(", ".join(f"{k}={v}" for k, v in d.options.items()))
    if d.classes:
        parts.append(f"classes {list(d.classes)}")
    if d.n_samples:
        drawn = "drawn by each seed" if d.sample_seed == "seed" else f"sample_seed {d.sample_seed}"
        parts.append(f"{d.n_samples} samples (stratified, {drawn})")
    if d.deslant:
        parts.append("deslanted")
    if d.encoding != "onehot":
        parts.append(f"{d.encoding} coding")
    if d.scale != "none":
        parts.append(f"{d.scale} scaling")
    if d.pca:
        parts.append(f"PCA to {d.pca}")
    return " (".join([parts[0], ", ".join(parts[1:]) + ")"]) if len(parts) > 1 else parts[0]


def _graph_text(g: GraphSpec | None) -> str:
    if g is None:
        return "each method's own"
    text = f"{g.metric}, {g.n_neighbors} nearest + {g.n_random} random per point"
    if g.options:
        text += " (" + ", ".join(f"{k}={v}" for k, v in g.options.items()) + ")"
    return text

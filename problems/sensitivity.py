"""Protocol sensitivity of the eigen-method reproductions: how far each unstated choice moves.

The TCA, DNE and two-moons papers leave choices unstated that move the numbers
by more than the methods differ: feature scaling, car's encoding, TCA's number
of directions and their scale, DNE's scaling, which points of the two moons are
labeled. Each :class:`Choice` below takes a shipped spec
(``sdpembed/experiments/specs``), restricts it to the methods and datasets the
choice concerns, and runs it once per :class:`Setting` (the spec's own setting
among them, so every row of a table is computed the same way, on the same
seeds) with :func:`sdpembed.experiments.run_spec`, durably, into
``results/sensitivity/<choice>-<setting>/`` (``--resume`` is implied: a
finished folder is read, not re-run).

A setting changes fields of the spec's TOML (dotted paths such as
``dataset.scale``; a :class:`PerDataset` value runs each dataset separately with
its own value), or keeps the spec and selects seeds (``seeds_where``: the
two-moons draws on which raw 1-NN is at most 55 %, near chance as on the
paper's single draw, 48.15 %; on our moons no draw of 200 goes below 52 %).

Writes ``results/sensitivity/sensitivity.json`` (every mean, std and seed
count, read by :mod:`problems.reproduce` for its verdicts) and
``results/sensitivity/sensitivity.md`` (one table per choice and the largest
move of each method).

Run: ``.venv/bin/python -m problems.sensitivity [CHOICE ...] [--jobs 1] [--out results]``
(all choices: about 25 min on one core).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sdpembed.experiments import (
    OutputError,
    find_spec,
    load_result,
    parse_spec,
    run_spec,
    tomllib,
)
from sdpembed.experiments.results import USED, mean_std

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["Setting", "Choice", "PerDataset", "CHOICES", "run_choice", "finished", "main"]


class PerDataset(dict):
    """A setting's value that depends on the dataset (``{dataset: value}``)."""


@dataclass(frozen=True)
class Column:
    """One column of a choice's table: a method's metric."""

    label: str
    method: str
    metric: str


@dataclass(frozen=True)
class Setting:
    """One value of a protocol choice.

    ``changes`` maps dotted paths of the spec's TOML to values; ``seeds_where =
    (method, metric, at_most)`` keeps the seeds (per dataset and label
    fraction) on which that method's metric is at most ``at_most``.
    """

    label: str
    changes: Mapping = field(default_factory=dict)
    seeds_where: tuple | None = None
    default: bool = False  # the spec's own setting


@dataclass(frozen=True)
class Choice:
    key: str  # plain name: the results folders are <key>-<setting>
    title: str
    spec: str
    settings: tuple
    columns: tuple
    datasets: tuple | None = None
    seeds: int | None = None  # default: the spec's


def _cols(spec_metric: dict) -> tuple:
    return tuple(Column(label, method, metric) for label, method, metric in spec_metric)


TABLE4 = _cols([("1-NN", "1nn", "err1"), ("GFHF", "gfhf", "err"), ("LGC", "lgc", "err"),
                ("TCA", "tca", "err1"), ("OTCA", "otca", "err1")])
ORDINAL = Setting("ordinal codes (6 features)", default=True)
ONEHOT = Setting("one-hot (21 features)", {"dataset.car.encoding": "onehot"})
#: r = c for TCA on each dataset of Table 4
CLASSES = PerDataset(iris=3, wine=3, breast_cancer=2, car=4)

CHOICES = (
    Choice("scaling", "Feature scaling (TCA Table 4)", "tca_table4", (
        Setting("none", {"dataset.scale": "none"}),
        Setting("min-max to [0, 1]", default=True),
        Setting("z-score", {"dataset.scale": "standard"})), TABLE4),
    Choice("car_encoding", "Car encoding (TCA Table 4)", "tca_table4", (ORDINAL, ONEHOT),
           TABLE4, datasets=("car",)),
    Choice("car_oracle", "Car encoding: oracle reference (10 splits)", "tca_table4",
           (ORDINAL, ONEHOT),
           _cols([("oracle", "1nn", "oracle"), ("LDA, all labels", "1nn", "lda_all")]),
           datasets=("car",), seeds=10),
    Choice("tca_directions", "TCA: number of directions r and their scale (Table 4)",
           "tca_table4", (
               Setting("r = c - 1, unit norm", default=True),
               Setting("r = c - 1, u'X_l D_l X_l'u = 1",
                       {"methods.tca.normalize": "constraint"}),
               Setting("r = c, unit norm", {"methods.tca.n_components": CLASSES}),
               Setting("r = c, u'X_l D_l X_l'u = 1", {"methods.tca.n_components": CLASSES,
                                                      "methods.tca.normalize": "constraint"})),
           _cols([("TCA", "tca", "err1")])),
    Choice("dne_scaling", "Feature scaling (DNE, Figure 2)", "dne_uci", (
        Setting("none", default=True),
        Setting("z-score", {"dataset.scale": "standard"}),
        Setting("min-max to [0, 1]", {"dataset.scale": "minmax"})),
           _cols([("1-NN", "knn", "test"), ("DNE", "dne", "test")])),
    Choice("moons_labels", "Label placement (two moons, Table 3, 200 draws)", "tca_table3", (
        Setting("random draws", default=True),
        Setting("draws where raw 1-NN <= 55 %, near chance like the paper's (48.15 %)",
                seeds_where=("1nn", "acc1", 0.55))),
           _cols([("1-NN", "1nn", "acc1"), ("LPP", "lpp", "acc1"), ("LDA", "lda", "acc1"),
                  ("SDA", "sda", "acc1"), ("TCA", "tca", "acc1"), ("OTCA", "otca", "acc1"),
                  ("oracle", "1nn", "oracle")]), seeds=200),
)


# --------------------------------------------------------------------------- deriving specs


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:40]


def _set(table: dict, path: str, value) -> None:
    *parents, leaf = path.split(".")
    for key in parents:
        table = table.setdefault(key, {})
    table[leaf] = value


def derive(base: dict, choice: Choice, setting: Setting, dataset: str | None = None) -> dict:
    """The spec ``choice`` runs for ``setting`` (and one dataset, for per-dataset values)."""
    raw = copy.deepcopy(base)
    names = raw["dataset"]["name"]
    names = [names] if isinstance(names, str) else list(names)
    keep = [dataset] if dataset else [n for n in names if n in (choice.datasets or names)]
    raw["dataset"]["name"] = keep
    for n in names:
        if n not in keep:
            raw["dataset"].pop(n, None)
    methods = {c.method for c in choice.columns}
    raw["methods"] = {k: v for k, v in raw["methods"].items() if k in methods}
    metrics = {c.metric for c in choice.columns}
    raw["metrics"] = {k: v for k, v in raw["metrics"].items() if k in metrics}
    for key in ("paper", "figures", "name"):
        raw.pop(key, None)
    if choice.seeds is not None:
        raw["seeds"] = choice.seeds
    for path, value in setting.changes.items():
        _set(raw, path, value[dataset] if isinstance(value, PerDataset) else value)
    return raw


def _runs(base: dict, choice: Choice, setting: Setting) -> list[tuple[str, dict]]:
    """(folder name, spec) pairs of one setting: one, or one per dataset."""
    name = f"{choice.key}-{_slug(setting.label)}"
    if not any(isinstance(v, PerDataset) for v in setting.changes.values()):
        return [(name, derive(base, choice, setting))]
    names = base["dataset"]["name"]
    names = [names] if isinstance(names, str) else names
    return [(f"{name}-{d}", derive(base, choice, setting, d))
            for d in names if d in (choice.datasets or names)]


def finished(folder: Path, raw: dict) -> bool:
    """``folder`` holds every run of the spec whose TOML is ``raw`` (same spec, every row).

    Such a folder is read back, not resumed, so that its summary keeps the wall
    time and execution of the run that produced it.
    """
    try:
        doc = json.loads((folder / "results.json").read_text())
    except (OSError, ValueError):
        return False
    return (json.dumps(doc.get("spec"), sort_keys=True) == json.dumps(raw, sort_keys=True)
            and len(doc.get("rows", [])) == doc.get("meta", {}).get("runs", -1))


def _run(name: str, raw: dict, out: Path, jobs: int, cache: dict):
    """Run (or read back) one derived spec; identical specs run once: (folder, result)."""
    key = json.dumps(raw, sort_keys=True)
    if key in cache:
        return cache[key]
    spec = parse_spec(raw, name=name)
    folder = out / name
    t0 = time.perf_counter()
    if finished(folder, raw):  # read, not resumed: its summary keeps the run's timings
        cache[key] = (folder, load_result(folder))
        return cache[key]
    try:
        result = run_spec(spec, n_jobs=jobs, out_dir=folder, resume=True)
    except OutputError as exc:  # the folder holds an older version of this setting
        print(f"{name}: replacing older results ({exc})", flush=True)
        result = run_spec(spec, n_jobs=jobs, out_dir=folder, overwrite=True)
    print(f"{name}: {time.perf_counter() - t0:.1f} s, {result.meta['errors']} failed runs",
          flush=True)
    cache[key] = (folder, result)
    return cache[key]


# --------------------------------------------------------------------------- tables


def _values(rows: list, column: Column, seeds: set | None) -> list[float]:
    return [r[column.metric] for r in rows
            if r["method"] == column.method and r["status"] in USED
            and r.get(column.metric) is not None and (seeds is None or r["seed"] in seeds)]


def _selected_seeds(rows: list, rule: tuple | None) -> set | None:
    if rule is None:
        return None
    method, metric, at_most = rule
    return {r["seed"] for r in rows if r["method"] == method and r["status"] in USED
            and r.get(metric) is not None and r[metric] <= at_most + 1e-12}


def run_choice(choice: Choice, out: Path, jobs: int, cache: dict,
               max_seeds: int | None = None) -> dict:
    """Run every setting of a choice; its cells (dataset, fraction, setting -> statistics)."""
    base = tomllib.loads(find_spec(choice.spec).read_text())
    if max_seeds is not None:
        base["seeds"] = min(int(base.get("seeds", 1)), max_seeds)
        choice = dataclasses.replace(choice, seeds=None if choice.seeds is None
                                     else min(choice.seeds, max_seeds))
    cells, runs = [], []
    for setting in choice.settings:
        for name, raw in _runs(base, choice, setting):
            folder, result = _run(name, raw, out, jobs, cache)
            if all(r["folder"] != folder.name for r in runs):  # a shared run counts once
                sessions = json.loads((folder / "run.json").read_text()).get("sessions", [])
                runs.append({"folder": folder.name, "runs": result.meta["runs"],
                             "errors": result.meta["errors"],
                             "wall_s": sum(s.get("wall_s", 0.0) for s in sessions),
                             "run_s": sum(r.get("wall_s") or 0.0 for r in result.rows)})
            by_cell: dict[tuple, list] = {}
            for r in result.rows:
                by_cell.setdefault((r["dataset"], r["fraction"]), []).append(r)
            for (dataset, fraction), rows in by_cell.items():
                seeds = _selected_seeds(rows, setting.seeds_where)
                stats = {}
                for c in choice.columns:
                    mean, std, n = mean_std(_values(rows, c, seeds))
                    stats[c.label] = {"mean": _finite(mean), "std": _finite(std), "n": n}
                cells.append({"dataset": dataset, "fraction": fraction,
                              "setting": setting.label, "default": setting.default,
                              "seeds": len(seeds) if seeds is not None
                              else len({r["seed"] for r in rows}), "values": stats})
    return {"key": choice.key, "title": choice.title, "spec": choice.spec,
            "columns": [c.__dict__ for c in choice.columns],
            "settings": [{"label": s.label, "default": s.default,
                          "changes": {k: dict(v) if isinstance(v, PerDataset) else v
                                      for k, v in s.changes.items()},
                          "seeds_where": s.seeds_where} for s in choice.settings],
            "cells": cells, "runs": runs}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _pct(stat: dict) -> str:
    mean, std = stat["mean"], stat["std"]
    if mean is None:
        return "–"
    return f"{100 * mean:.2f}" + (f" ± {100 * std:.2f}" if std is not None else "")


def moves(choice: dict) -> list[dict]:
    """Per column: the largest spread (max - min of the means over settings) over cells."""
    out = []
    for col in choice["columns"]:
        best = None
        by_cell: dict[tuple, list] = {}
        for cell in choice["cells"]:
            mean = cell["values"][col["label"]]["mean"]
            if mean is not None:
                by_cell.setdefault((cell["dataset"], cell["fraction"]), []).append(mean)
        for (dataset, fraction), means in by_cell.items():
            spread = max(means) - min(means)
            if best is None or spread > best["move"]:
                best = {"column": col["label"], "move": spread, "dataset": dataset,
                        "fraction": fraction}
        if best is not None:
            out.append(best)
    return out


def markdown(doc: dict, heading: str = "##") -> str:
    """One table per choice (mean ± std in percent) and the largest move per method."""
    lines = []
    for ch in doc["choices"]:
        cols = [c["label"] for c in ch["columns"]]
        metrics = ", ".join(sorted({c["metric"] for c in ch["columns"]}))
        lines += [f"{heading} {ch['title']}", "",
                  f"Spec `{ch['spec']}` ({metrics}; percent, mean ± std over the seeds); "
                  "the spec's own setting is marked *.", "",
                  "| dataset | labels | setting | seeds | " + " | ".join(cols) + " |",
                  "|" + "---|" * (4 + len(cols))]
        for cell in ch["cells"]:
            mark = " *" if cell["default"] else ""
            lines.append(f"| {cell['dataset']} | {cell['fraction']} | {cell['setting']}{mark} "
                         f"| {cell['seeds']} | "
                         + " | ".join(_pct(cell["values"][c]) for c in cols) + " |")
        lines += ["", "Largest move between settings (percentage points): " + "; ".join(
            f"{m['column']} {100 * m['move']:.1f} ({m['dataset']})" for m in moves(ch)), ""]
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("choices", nargs="*", default=[c.key for c in CHOICES],
                        help=f"choices to run (default all: {[c.key for c in CHOICES]})")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default=str(ROOT / "results"))
    parser.add_argument("--seeds", type=int, default=None,
                        help="at most N seeds per choice (a quick check; default: all)")
    args = parser.parse_args(argv)
    unknown = set(args.choices) - {c.key for c in CHOICES}
    if unknown:
        parser.error(f"unknown choices {sorted(unknown)}")
    out = Path(args.out) / "sensitivity"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "sensitivity.json"
    previous = json.loads(path.read_text()) if path.exists() else {"choices": []}
    done = {c["key"]: c for c in previous["choices"]}
    cache: dict = {}
    for choice in CHOICES:
        if choice.key in args.choices:
            done[choice.key] = run_choice(choice, out, args.jobs, cache, args.seeds)
    doc = {"command": "python -m problems.sensitivity " + " ".join(args.choices)
           + f" --jobs {args.jobs}" + (f" --seeds {args.seeds}" if args.seeds else ""),
           "choices": [done[c.key] for c in CHOICES if c.key in done]}
    path.write_text(json.dumps(doc, indent=1, default=str))
    (out / "sensitivity.md").write_text("# Protocol sensitivity\n\n" + markdown(doc))
    print(f"wrote {path} and {out / 'sensitivity.md'}")
    return doc


if __name__ == "__main__":
    main()

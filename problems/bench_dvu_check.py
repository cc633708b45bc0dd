"""Score DVU's held-out check (``EmbeddingWorseThanInputWarning``) against the hidden labels.

Run::

    sdpembed run dvu_defaults --jobs 2 --out results
    .venv/bin/python -m problems.bench_dvu_check results/dvu_defaults [more folders]
        [--margin 0.03] [--alpha 0.1] [--grid] [--json FILE] [--tuning]

reads the runner's ``rows.jsonl`` of each folder. Every DVU row is paired with the
``raw`` row of the same dataset and seed (3-NN on the input features, the same hidden
labels): its *loss* is raw minus DVU accuracy on the hidden labels, in points. Each DVU
row keeps its held-out check whole (``validation``: every fold's counts), so the check's
rule — warn when the pooled held-out difference (embedding minus inputs) is at most
``-margin`` or the exact one-sided sign test on the rows the votes disagree on gives
``p < alpha`` — is scored for the first 1, 2, ... folds of one run:

* *recall*: the share of fits losing >= 5 points on which it warns (goal >= 90 %), and of
  those whose loss is also beyond the hidden set's own noise (>= 1.28 standard errors of
  the hidden-label difference, estimated from the rows' disagreement rate);
* *false alarms*: the share of the other fits (losing < 5 points) on which it warns
  (goal <= 10 %), and separately of the fits that do not lose at all.

``--grid`` prints the same for a grid of (margin, alpha): a calibration aid — rules chosen
on these rows are scored on the same rows, so their rates are optimistic.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.stats import binom

from problems.tuning import add_tuning_argument, command_line, write_section

#: a fit "loses" when its hidden-label 3-NN accuracy is this many points below the inputs'
LOSS_POINTS = 5.0


def load(folders: list[str]) -> list[dict]:
    """DVU rows with their raw partner: dicts of dataset, seed, params, loss, folds."""
    rows = []
    for folder in folders:
        for line in (Path(folder) / "rows.jsonl").read_text().splitlines():
            rec = json.loads(line)
            rows.append(rec.get("row", rec))
    raw = {(r["spec"], r["dataset"], r["seed"]): r["knn3"] for r in rows
           if r["method"] == "raw" and r["status"] == "ok"}
    out = []
    for r in rows:
        if r["estimator"] != "DVU" or r["status"] == "error" or not r.get("validation"):
            continue
        v = json.loads(r["validation"])
        partner = raw.get((r["spec"], r["dataset"], r["seed"]))
        if partner is None or "folds" not in v:
            continue
        folds = [f for f in v["folds"] if "held_out" in f]
        m = sum(f["held_out"] for f in folds)
        disagree = sum(f["input_only"] + f["embedding_only"] for f in folds) / max(m, 1)
        hidden = r["n_samples"] - r["n_labeled"]
        out.append({"spec": r["spec"], "dataset": r["dataset"], "seed": r["seed"],
                    "n": r["n_samples"], "method": r["method"], "params": r["params"],
                    "dvu": r["knn3"], "raw": partner,
                    "loss": 100.0 * (partner - r["knn3"]), "hidden": hidden,
                    # standard error of the hidden-label difference: per-row differences
                    # are -1, 0, 1, nonzero on a share `disagree` of the rows (the held-out
                    # rows' share stands in for the hidden rows', which are not kept)
                    "loss_se": 100.0 * float(np.sqrt(disagree / hidden)),
                    "folds": folds})
    return out


def decide(folds: list[dict], splits: int, margin: float, alpha: float) -> tuple[bool, dict]:
    """The check's rule on the first ``splits`` folds (as ``DVU._held_out_check``)."""
    use = folds[:splits]
    m = sum(f["held_out"] for f in use)
    b = sum(f["input_only"] for f in use)
    c = sum(f["embedding_only"] for f in use)
    p = float(binom.sf(b - 1, b + c, 0.5)) if b + c else 1.0
    diff = (c - b) / m if m else 0.0
    return bool(diff <= -margin or p < alpha), {"m": m, "diff": diff, "p": p}


def score(rows: list[dict], splits: int, margin: float, alpha: float) -> dict:
    losing = [r for r in rows if r["loss"] >= LOSS_POINTS]
    # losing beyond the hidden set's own noise: one-sided 10 % (1.28 standard errors)
    clear = [r for r in losing if r["loss"] >= 1.28 * r["loss_se"]]
    other = [r for r in rows if r["loss"] < LOSS_POINTS]
    winning = [r for r in rows if r["loss"] <= 0]
    usable = [r for r in rows if len(r["folds"]) >= splits]

    def rate(group):
        group = [r for r in group if r in usable]
        hits = [decide(r["folds"], splits, margin, alpha)[0] for r in group]
        return (sum(hits), len(hits))

    return {"splits": splits, "margin": margin, "alpha": alpha, "recall": rate(losing),
            "recall_clear": rate(clear),
            "false_alarm": rate(other), "false_alarm_not_losing": rate(winning)}


def _pct(pair):
    k, n = pair
    return f"{k}/{n} ({100.0 * k / n:.0f} %)" if n else "–"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--margin", type=float, default=0.03)
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--grid", action="store_true")
    ap.add_argument("--json")
    add_tuning_argument(ap)
    args = ap.parse_args(argv)
    rows = load(args.folders)
    out: list[str] = []
    say = out.append
    say(f"{len(rows)} DVU fits with a held-out check; losing >= {LOSS_POINTS:g} points: "
        f"{sum(r['loss'] >= LOSS_POINTS for r in rows)}; not losing at all: "
        f"{sum(r['loss'] <= 0 for r in rows)}. Check as in the code: the first 3 folds, "
        f"margin {args.margin:g}, alpha {args.alpha:g}. A fit's loss is measured on its "
        f"hidden labels only (median {int(np.median([r['hidden'] for r in rows]))}), whose "
        f"own standard error (column 'its s.e.', median "
        f"{np.median([r['loss_se'] for r in rows]):.1f} points) is of the size of the 5-point "
        "threshold: per-fit recall and false alarms are measured against a noisy truth.\n")
    say("| dataset | n | method | params | fits | raw | DVU | loss (points) | held-out diff, "
        "3 folds | warns |")
    say("|---|---|---|---|---|---|---|---|---|---|")
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["n"], r["method"], r["params"]), []).append(r)

    def sd(a):
        return float(np.std(a, ddof=1)) if len(a) > 1 else 0.0

    for key, group in sorted(groups.items()):
        raw = 100 * np.array([r["raw"] for r in group])
        dvu = 100 * np.array([r["dvu"] for r in group])
        decisions = [decide(r["folds"], 3, args.margin, args.alpha) for r in group]
        diffs = [100 * d["diff"] for _, d in decisions]
        say(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {len(group)} | "
            f"{raw.mean():.1f} ± {sd(raw):.1f} | {dvu.mean():.1f} ± {sd(dvu):.1f} | "
            f"{(raw - dvu).mean():+.1f} ± {sd(raw - dvu):.1f} | {np.mean(diffs):+.1f} | "
            f"{sum(w for w, _ in decisions)}/{len(group)} |")
    say("\n| dataset | n | method | params | seed | raw | DVU | loss (points) | its s.e. | "
        "held-out diff, 3 folds | p | warns |")
    say("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (r["dataset"], r["n"], r["method"], r["params"],
                                         r["seed"])):
        w, d = decide(r["folds"], 3, args.margin, args.alpha)
        say(f"| {r['dataset']} | {r['n']} | {r['method']} | {r['params']} | {r['seed']} | "
            f"{100 * r['raw']:.1f} | {100 * r['dvu']:.1f} | {r['loss']:+.1f} | "
            f"{r['loss_se']:.1f} | {100 * d['diff']:+.1f} (m={d['m']}) | {d['p']:.2g} | "
            f"{'yes' if w else 'no'} |")
    say("\n| folds | margin | alpha | warns on fits losing >= 5 | ... and beyond the hidden "
        "set's noise | warns on fits losing < 5 | warns on fits not losing |")
    say("|---|---|---|---|---|---|---|")
    margins = [0.0, 0.01, 0.02, 0.03, 0.05] if args.grid else [args.margin]
    alphas = [0.05, 0.1, 0.2] if args.grid else [args.alpha]
    results = []
    for splits in range(1, 6):
        for margin in margins:
            for alpha in alphas:
                s = score(rows, splits, margin, alpha)
                results.append(s)
                say(f"| {splits} | {margin:g} | {alpha:g} | {_pct(s['recall'])} | "
                    f"{_pct(s['recall_clear'])} | {_pct(s['false_alarm'])} | "
                    f"{_pct(s['false_alarm_not_losing'])} |")
    text = "\n".join(out) + "\n"
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "scores": results}, indent=1))
    if args.tuning:
        write_section("bench_dvu_check", "DVU's held-out check against the hidden labels",
                      text, command=command_line("problems.bench_dvu_check", argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

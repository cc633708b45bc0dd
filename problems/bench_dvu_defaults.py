"""Where DVU's defaults lose to 3-NN on the inputs: one factor at a time, one solve a setting.

Each (dataset, seed, setting) draws the rows and hidden labels exactly as the spec runner
does for ``dvu_defaults`` (stratified ``n`` rows by ``sample_seed = seed``, 80 % of the labels
kept per class with at least 2, ``random_state = seed`` for the graph's random partners),
fits ``DVU`` once with LOWRANK (tol 1e-4; time limit 120 s wall-clock, or
``$DVU_TIME_LIMIT``) and the held-out check off (``validation_fraction=None``: one solve; the
check does not change the program, only where the full fit's solve starts), and scores
3-NN on the hidden labels in the top ``d`` coordinates of the learned Gram matrix for every
``d`` of ``--dims`` ("all": every column of the factor), beside 3-NN on the inputs. A
setting is ``label:key=value,...`` of DVU parameters; ``scale=standard|minmax`` scales the
features DVU sees (the raw baseline is scored both unscaled and scaled); ``metric=tangent``
gets the dataset's image shape. One JSON line a fit goes to ``--out`` (resumed: lines
already there are skipped); ``--table`` pools files and prints, per setting, mean ± sd over
seeds, the loss against the inputs paired by seed, and whether it is within the spread
(at most the larger sd, as the reproductions' verdicts).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m problems.bench_dvu_defaults \\
        --datasets digits usps --n 200 --seeds 5 --jobs 2 --out /tmp/dvu.jsonl \\
        default nb3:n_neighbors=3 slack03:slack_weight=0.3 std:scale=standard
    python -m problems.bench_dvu_defaults --table /tmp/dvu.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from multiprocessing import Pool

import numpy as np

SCALED = {"wine", "breast_cancer", "ionosphere"}  # z-scored in dvu_defaults
DEDUP = {"ionosphere", "umist32"}
N_AT = {"wine": 178}
TIME_LIMIT = float(os.environ.get("DVU_TIME_LIMIT", 120))  # LOWRANK's (wall-clock) limit


def parse_setting(text: str) -> tuple[str, dict]:
    label, _, rest = text.partition(":")
    params: dict = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        for cast in (int, float):
            try:
                value = cast(value)
                break
            except ValueError:
                pass
        params[key] = value
    return label, params


def _data(name: str, n: int, seed: int, scale: str):
    from sdpembed.experiments.schema import DatasetSpec, LabelSpec
    from sdpembed.experiments.tasks import split

    ds = DatasetSpec(name=name, n_samples=N_AT.get(name, n), sample_seed=seed, scale=scale,
                     deduplicate=name in DEDUP)
    s = split(ds, LabelSpec((0.8,), True, 2), 0.8, seed)
    from sdpembed.experiments.tasks import load_data

    return s.X, load_data(ds).y, s.mask


def run_one(job: tuple) -> dict:
    name, n, seed, label, params, dims = job
    from sdpembed.estimators import DVU
    from sdpembed.evaluation import transductive_knn_accuracy as knn
    from sdpembed.recovery import embedding_from_factor

    params = dict(params)
    base_scale = "standard" if name in SCALED else "none"
    scale = params.pop("scale", base_scale)
    X0, y, mask = _data(name, n, seed, base_scale)
    X = X0 if scale == base_scale else _data(name, n, seed, scale)[0]
    if params.get("metric") == "tangent":
        from sdpembed.experiments.spec import IMAGE_SHAPES

        params["metric_params"] = {"shape": IMAGE_SHAPES[name]}
    row = {"dataset": name, "n": int(X.shape[0]), "seed": seed, "setting": label,
           "params": params, "scale": scale, "raw": 100 * knn(X0, y, mask, 3),
           "raw_scaled": 100 * knn(X, y, mask, 3)}
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        est = DVU(validation_fraction=None, solver="LOWRANK", random_state=seed,
                  solver_options={"tol": 1e-4, "time_limit": TIME_LIMIT},
                  **{"n_components": 10, **params})
        est.fit(X, np.where(mask, y, -1))
    except Exception as exc:  # noqa: BLE001 - recorded
        row["error"] = f"{type(exc).__name__}: {exc}"[:300]
        return row
    row["cpu_s"], row["wall_s"] = time.process_time() - c0, time.perf_counter() - t0
    rep = est.solve_report_
    row["status"] = str(rep.status)
    row["gap"] = rep.certified_gap if rep.certified_gap is not None else rep.gap
    F = est.gram_factor_
    row["rank"] = int(F.shape[1])
    row["knn"] = {}
    for d in dims:
        Z = F if d == "all" else embedding_from_factor(F, int(d))
        row["knn"][str(d)] = 100 * knn(Z, y, mask, 3)
    row["knn"]["fit"] = 100 * knn(est.embedding_, y, mask, 3)
    return row


def table(paths: list[str]) -> None:
    rows = [json.loads(line) for path in paths for line in open(path)]
    groups: dict = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["n"], r["setting"])].append(r)
    print("| dataset | n | setting | seeds | raw | " + " | ".join(
        f"3-NN d={d}" for d in next(r["knn"] for r in rows if "knn" in r)) +
        " | loss at fit d (paired) | within spread | CPU s a fit |")
    for (name, n, label), rs in sorted(groups.items()):
        ok = [r for r in rs if "knn" in r]
        if not ok:
            print(f"| {name} | {n} | {label} | 0/{len(rs)} | error: {rs[0]['error'][:60]} |")
            continue
        raw = np.array([r["raw"] for r in ok])
        cells = []
        for d in ok[0]["knn"]:
            a = np.array([r["knn"][d] for r in ok])
            cells.append(f"{a.mean():.1f} ± {a.std(ddof=1) if len(a) > 1 else 0:.1f}")
        fit = np.array([r["knn"]["fit"] for r in ok])
        loss = raw - fit
        cpu = np.mean([r["cpu_s"] for r in ok])
        sd = max(raw.std(ddof=1), fit.std(ddof=1)) if len(ok) > 1 else 0.0
        verdict = "yes" if loss.mean() <= sd else "no"
        print(f"| {name} | {n} | {label} | {len(ok)}/{len(rs)} | {raw.mean():.1f} ± "
              f"{raw.std(ddof=1) if len(raw) > 1 else 0:.1f} | " + " | ".join(cells) +
              f" | {loss.mean():.1f} ± {loss.std(ddof=1) if len(loss) > 1 else 0:.1f} | "
              f"{verdict} | {cpu:.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("settings", nargs="*")
    ap.add_argument("--datasets", nargs="+", default=["digits", "usps"])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--dims", default="2,5,10,20,all")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out")
    ap.add_argument("--table", nargs="+", help="JSON-lines files to tabulate (seeds pooled)")
    a = ap.parse_args()
    if a.table:
        table(a.table)
        return
    dims = [d if d == "all" else int(d) for d in a.dims.split(",")]
    done = set()
    if a.out and os.path.exists(a.out):
        for line in open(a.out):
            r = json.loads(line)
            done.add((r["dataset"], r["seed"], r["setting"]))
    jobs = [(name, a.n, seed, *parse_setting(s), dims)
            for s in a.settings for seed in range(a.first_seed, a.first_seed + a.seeds)
            for name in a.datasets if (name, seed, s.partition(":")[0]) not in done]
    with Pool(a.jobs) as pool, open(a.out, "a") as f:
        for row in pool.imap_unordered(run_one, jobs):
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(row["dataset"], row["seed"], row["setting"], row.get("knn", {}).get("fit"),
                  row.get("cpu_s"), row.get("error", ""), flush=True)


if __name__ == "__main__":
    main()

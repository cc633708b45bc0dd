"""DVU on 100, 200 and 400 USPS digits with every installed backend (core issue table).

Run: ``python -m problems.bench_core [--sizes 100 200 400] [--solvers ...] [--timeout 300]
[--tuning]``.

Each (n, backend) solve runs in its own process so that peak memory
(``ru_maxrss``) and a wall-clock limit apply to it alone. 80 % of the labels
are kept (stratified), the default DVU graph is used (2 nearest neighbours +
1 random partner, Euclidean), and the hidden 20 % are classified by 3-NN on
the top 10 DVU components and on raw pixels. Writes
``results/bench_core.{md,json}``; with ``--tuning`` also its section of
``docs/tuning.md`` (:mod:`problems.tuning`).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import time
from pathlib import Path

import numpy as np

from problems._proc import stop_child
from problems.tuning import add_tuning_argument, command_line, write_section

RESULTS = Path("results")


def _instance(n: int, seed: int = 0):
    from sklearn.model_selection import train_test_split

    from sdpembed.datasets import load_usps

    usps = load_usps()
    X, y = usps.data.astype(float), usps.target
    idx, _ = train_test_split(np.arange(len(y)), train_size=n, stratify=y, random_state=seed)
    X, y = X[idx], y[idx]
    _, hidden_idx = train_test_split(np.arange(n), test_size=0.2, stratify=y, random_state=seed)
    hidden = np.zeros(n, dtype=bool)
    hidden[hidden_idx] = True
    y_partial = np.where(hidden, -1, y)
    return X, y, y_partial, hidden


def _run_one(n: int, solver: str, queue) -> None:
    from sklearn.neighbors import KNeighborsClassifier

    from sdpembed import DVU

    row = {"n": n, "solver": solver}
    try:
        X, y, y_partial, hidden = _instance(n)
        t0 = time.perf_counter()
        est = DVU(n_components=10, solver=solver, random_state=0).fit(X, y_partial)
        row["wall_s"] = time.perf_counter() - t0
        rep = est.solve_report_
        row.update(status=rep.status, objective=rep.objective, compile_s=rep.compile_seconds,
                   solve_s=rep.solve_seconds, iterations=rep.iterations, gap=rep.gap,
                   version=rep.solver_version)
        row["knn3_dvu"] = float(np.mean(est.transduction_[hidden] == y[hidden]))
        row["knn3_raw"] = KNeighborsClassifier(3).fit(X[~hidden], y[~hidden]).score(
            X[hidden], y[hidden])
    except Exception as exc:  # noqa: BLE001 - recorded in the table
        row.update(status=f"error: {type(exc).__name__}: {str(exc)[:160]}")
    row["peak_mem_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put(row)


def run_case(n: int, solver: str, timeout: float, mem_limit_gb: float) -> dict:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(n, solver, queue, mem_limit_gb))
    t0 = time.perf_counter()
    proc.start()
    row = None
    while row is None and time.perf_counter() - t0 < timeout:
        try:
            row = queue.get(timeout=1.0)
        except Exception:  # noqa: BLE001 - queue.Empty: poll the child
            if not proc.is_alive() and queue.empty():
                row = {"n": n, "solver": solver,
                       "status": f"child died (exit code {proc.exitcode}; likely out of memory)"}
    if row is None:
        row = {"n": n, "solver": solver, "status": f"timeout after {timeout:.0f} s",
               "wall_s": time.perf_counter() - t0}
        stop_child(proc)
    proc.join(5)
    return row


def _child(n, solver, queue, mem_limit_gb):
    limit = int(mem_limit_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _run_one(n, solver, queue)


def _fmt(v, spec=".4g"):
    if v is None:
        return "-"
    return format(v, spec) if isinstance(v, float) else str(v)


def main(argv=None):
    from sdpembed.solvers import available_solvers

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 400])
    parser.add_argument("--solvers", nargs="+", default=None)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--mem-limit-gb", type=float, default=16.0)
    add_tuning_argument(parser)
    args = parser.parse_args(argv)
    solvers = args.solvers or [s for s in available_solvers() if s != "LOWRANK"]
    rows = []
    for n in args.sizes:
        for solver in solvers:
            row = run_case(n, solver, args.timeout, args.mem_limit_gb)
            print(json.dumps(row), flush=True)
            rows.append(row)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_core.json").write_text(json.dumps(rows, indent=2))
    lines = ["| n | backend | status | objective | compile s | solve s | peak MB | 3-NN DVU | "
             "3-NN raw |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['n']} | {r['solver']} | {r['status']} | "
                     f"{_fmt(r.get('objective'), '.6f')} "
                     f"| {_fmt(r.get('compile_s'), '.2f')} | {_fmt(r.get('solve_s'), '.2f')} | "
                     f"{_fmt(r.get('peak_mem_mb'), '.0f')} | {_fmt(r.get('knn3_dvu'), '.3f')} | "
                     f"{_fmt(r.get('knn3_raw'), '.3f')} |")
    (RESULTS / "bench_core.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if args.tuning:
        write_section("bench_core", "DVU on USPS with every installed backend",
                      "\n".join(lines) + "\n", command=command_line("problems.bench_core", argv))


if __name__ == "__main__":
    main()

"""Where ``solver="auto"`` switches Gram SDPs to LOWRANK: CLARABEL against LOWRANK at small n.

Run: ``python -m problems.bench_auto [--sizes 20 30 40 60 80] [--tuning]``.

The first n of scikit-learn's bundled digits (80 % labelled, seed 0), the
DVU graph (2 nearest neighbours + 1 random long edge, seed 0); DVU with
eliminated centroids and interval slack (``slack_weight`` 1) and MVU with
equality distances, each solved by CLARABEL and by LOWRANK (default
settings) in this process. The table gives the wall time of each
``solve`` call, both objectives, and the backend ``solver="auto"`` picks at
that n (:func:`sdpembed.solvers.choose_backend`, threshold
:data:`sdpembed.solvers.AUTO_LOWRANK_MIN_POINTS`). Writes
``results/bench_auto.{md,json}``; with ``--tuning`` also its section of
``docs/tuning.md``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

from problems.tuning import add_tuning_argument, command_line, write_section

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
BACKENDS = ("CLARABEL", "LOWRANK")


def run(sizes) -> list[dict]:
    from sklearn.datasets import load_digits

    from sdpembed import knn_graph, solve
    from sdpembed.datasets import partial_labels
    from sdpembed.formulations import dvu, mvu
    from sdpembed.solvers import choose_backend

    X, y = load_digits(return_X_y=True)
    rows = []
    for n in sizes:
        y_partial = partial_labels(y[:n], 0.8, random_state=0)
        graph = knn_graph(X[:n], n_neighbors=2, n_random=1, random_state=0)
        builders = {"dvu": lambda g=graph, yp=y_partial: dvu(g, yp, centroids="eliminated"),
                    "mvu": lambda g=graph: mvu(g)}
        row = {"n": n, "edges": graph.n_edges}
        for method, build in builders.items():
            row[f"{method}_auto"] = choose_backend(build())[0]
            for backend in BACKENDS:
                f = build()
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    report = solve(f, solver=backend)
                row[f"{method}_{backend}_s"] = time.perf_counter() - t
                row[f"{method}_{backend}_objective"] = report.objective
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def markdown(rows) -> str:
    lines = ["# solver=\"auto\": CLARABEL against LOWRANK on small Gram SDPs", "",
             "Wall time of one `solve` call (objective); `auto` is the backend "
             "`solver=\"auto\"` picks.", "",
             "| n | edges | DVU CLARABEL | DVU LOWRANK | DVU auto | MVU CLARABEL | "
             "MVU LOWRANK | MVU auto |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [str(r["n"]), str(r["edges"])]
        for method in ("dvu", "mvu"):
            for backend in BACKENDS:
                cells.append(f"{r[f'{method}_{backend}_s']:.2f} s "
                             f"({r[f'{method}_{backend}_objective']:.6g})")
            cells.append(r[f"{method}_auto"])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 30, 40, 60, 80])
    add_tuning_argument(parser)
    args = parser.parse_args(argv)
    rows = run(args.sizes)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_auto.json").write_text(json.dumps(rows, indent=1))
    md = markdown(rows)
    (RESULTS / "bench_auto.md").write_text(md)
    print(md)
    if args.tuning:
        write_section("bench_auto", "solver=\"auto\": the Gram-SDP crossover to LOWRANK", md,
                      command=command_line("problems.bench_auto", argv))


if __name__ == "__main__":
    main()

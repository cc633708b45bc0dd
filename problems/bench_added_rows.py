"""Conic compile time of a Gram SDP with rows added through ``with_constraints``.

Run ``python -m problems.bench_added_rows [--n 120] [--rows 0 1 100]``.

DVU (explicit and eliminated centroids, face reduction) on ``n`` scikit-learn digits;
for each count ``k`` in ``--rows``, ``k`` must-link rows
:math:`G_{ii} + G_{jj} - 2G_{ij} \\le u` written on ``f.expressions["gram"]`` are added
and the time of building the cvxpy problem and compiling it for CLARABEL
(``problem.get_problem_data``) is printed, with its ratio to the plain problem's
(``k = 0``). Timings on shared cores are noisy: ``--repeat`` takes the median.
"""

from __future__ import annotations

import argparse
import statistics
import time

import cvxpy as cp
import numpy as np

from sdpembed import knn_graph
from sdpembed.datasets import partial_labels
from sdpembed.demo import load_demo_data
from sdpembed.formulations import dvu


def compile_seconds(n: int, rows: int, seed: int = 0, centroids: str = "explicit") -> float:
    """Seconds to build and compile (CLARABEL) DVU on ``n`` digits with ``rows`` added rows."""
    X, y = load_demo_data(n, random_state=0)
    graph = knn_graph(X, n_neighbors=2, n_random=1, random_state=0)
    f = dvu(graph, partial_labels(y, 0.5, random_state=0), centroids=centroids)
    if rows:
        rng = np.random.default_rng(seed)
        G = f.expressions["gram"]
        pairs = [rng.choice(n, size=2, replace=False) for _ in range(rows)]
        f = f.with_constraints([G[i, i] + G[j, j] - 2 * G[i, j] <= 0.5 for i, j in pairs])
    t0 = time.perf_counter()
    f.problem.get_problem_data(cp.CLARABEL)
    return time.perf_counter() - t0


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=120)
    parser.add_argument("--rows", type=int, nargs="+", default=[0, 1, 100])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--centroids", nargs="+", default=["explicit", "eliminated"],
                        choices=["explicit", "eliminated"])
    args = parser.parse_args(argv)
    for centroids in args.centroids:
        base = None
        for k in args.rows:
            times = [compile_seconds(args.n, k, centroids=centroids)
                     for _ in range(args.repeat)]
            med = statistics.median(times)
            base = med if k == 0 else base
            ratio = f"  ({med / base:.2f}x the plain problem)" if base and k else ""
            print(f"{centroids:10s} n={args.n} rows={k:4d}: compile {med:7.2f} s (median of "
                  f"{args.repeat}: " + ", ".join(f"{t:.2f}" for t in times) + ")" + ratio,
                  flush=True)


if __name__ == "__main__":
    main()

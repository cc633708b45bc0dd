"""Published MVU variants as user code at scale: Colored MVU by ``"LOWRANK"`` on USPS.

Run ``python -m problems.bench_variants [--n 2500] [--time-limit 300]``.

Colored MVU (Song et al. 2007) on ``n`` USPS digits (the first ``n`` of a fixed
permutation, seed 0): :func:`sdpembed.formulations.gram_sdp`, MVU's distance
equalities on the DVU graph (2 nearest neighbours and 1 random long edge per
digit) written with ``with_constraints``, and the label alignment
:math:`-\\langle YY^T, G\\rangle` with ``with_objective``. Prints the status, the
objective, the certified relative gap and the wall time of the solve (shared
cores: noisy).
"""

from __future__ import annotations

import argparse
import time

import cvxpy as cp
import numpy as np

from sdpembed import knn_graph, solve
from sdpembed.datasets import load_usps
from sdpembed.formulations import gram_sdp


def colored_mvu(X, y, random_state=0):
    graph = knn_graph(X, n_neighbors=2, n_random=1, random_state=random_state)
    f = gram_sdp(graph.n_nodes)
    G = f.expressions["gram"]
    i, j = graph.edges.T
    target = graph.sqdist / graph.sqdist.mean()
    Y = cp.Constant(np.eye(int(y.max()) + 1)[y])
    return (f.with_constraints([G[i, i] + G[j, j] - 2 * G[i, j] == target])
             .with_objective(-cp.trace(Y @ Y.T @ G)))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2500)
    parser.add_argument("--time-limit", type=float, default=300.0)
    args = parser.parse_args(argv)
    X, y = load_usps(return_X_y=True)
    idx = np.random.default_rng(0).permutation(len(y))[:args.n]
    f = colored_mvu(X[idx], np.asarray(y[idx], dtype=int))
    t0 = time.perf_counter()
    rep = solve(f, solver="LOWRANK", time_limit=args.time_limit)
    seconds = time.perf_counter() - t0
    print(f"Colored MVU, n={args.n}: {rep.status}, objective {rep.objective:.8g}, certified "
          f"gap {rep.certified_gap}, rank {rep.extra.get('rank')}, {seconds:.1f} s")


if __name__ == "__main__":
    main()

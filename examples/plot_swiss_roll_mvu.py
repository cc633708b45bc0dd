r"""
Unrolling a Swiss roll with MVU, certified: shrink-only distances
=================================================================

Maximum Variance Unfolding (Weinberger & Saul) keeps the squared distances
:math:`\bar D_{ij}` of each point's nearest neighbours and spreads the points as far
apart as it can:

.. math::

    \max_{G\succeq 0,\ G\mathbf 1 = 0}\ \mathrm{tr}\,G \quad\text{s.t.}\quad
    D_{ij}(G) = G_{ii} + G_{jj} - 2G_{ij} = \bar D_{ij}\ \ ((i,j)\in\mathcal E).

On a Swiss roll (3-D data) with 6 neighbours, groups of 5 = 3 + 2 mutual
neighbours fix a rank-3 block of :math:`G`: no feasible :math:`G` is positive
definite on :math:`\mathbf 1^\perp`, Slater's condition fails, and the dual
optimum need not be attained. A first-order or low-rank solver then sees its
multipliers grow without bound and cannot prove its gap. Measured on such rolls of
60-400 points, it is worse than that: the whole 6-neighbour graph is (numerically)
universally rigid, so the data's own Gram matrix is the only feasible point, and an
unrolled "solution" of the equality problem is a point that violates its constraints
(docs/tuning.md, "Equality MVU on the manifold rows: the remaining degeneracy is
universal rigidity").

With shrink-only distances, ``distances="shrink"``,

.. math::

    D_{ij}(G) \le \bar D_{ij}\ \ ((i,j)\in\mathcal E),

:math:`G = 0` is strictly feasible, the dual optimum is attained with bounded
multipliers :math:`y \ge 0`, and ``LOWRANK`` certifies its solution: every
:math:`y \ge 0` with :math:`S(y) = -I + \sum_e y_e a_ea_e^\top \succeq 0` on
:math:`\mathbf 1^\perp` gives :math:`-\mathrm{tr}\,G \ge -y^\top\bar D` for every
feasible :math:`G` (Sun, Boyd, Xiao & Diaconis, SIAM Review 2006, show this problem
is the dual of the fastest mixing Markov process on the graph). Variance is still
maximised, so the roll unrolls into a rectangle: its first coordinate follows the
roll parameter :math:`t`.
"""

# %%
from __future__ import annotations

import time

import matplotlib.pyplot as plt
from scipy.stats import spearmanr
from sklearn.datasets import make_swiss_roll

from sdpembed import knn_graph, solve
from sdpembed.formulations import mvu
from sdpembed.recovery import embedding_from_factor


def run(solver="LOWRANK", n_samples=400, n_neighbors=6, random_state=1, quiet=True):
    """Shrink-only MVU of a Swiss roll of ``n_samples`` points by ``solver``.

    Returns a dict: ``report``, ``seconds``, ``X``, ``t`` (the roll parameter),
    ``embedding`` (top 2 coordinates) and ``spearman`` (|Spearman correlation| of the first
    coordinate with ``t``: 1 is a perfect unrolling).
    """
    X, t = make_swiss_roll(n_samples, random_state=random_state)
    graph = knn_graph(X, n_neighbors=n_neighbors, n_random=0)
    f = mvu(graph, distances="shrink")
    start = time.perf_counter()
    report = solve(f, solver=solver)
    seconds = time.perf_counter() - start
    Z = embedding_from_factor(f.factor, 2)
    rho = float(abs(spearmanr(Z[:, 0], t)[0]))
    if not quiet:
        gap = report.certified_gap
        print(f"n = {n_samples}, {graph.edges.shape[0]} edges: {report.status} in "
              f"{seconds:.1f} s" + (f", certified gap {gap:.1e}" if gap is not None else ""))
        print(f"|Spearman| of the first coordinate with the roll parameter: {rho:.4f}")
    return {"report": report, "seconds": seconds, "X": X, "t": t, "embedding": Z,
            "spearman": rho}


# %%
# Solve.
if __name__ == "__main__":
    result = run(quiet=False)

# %%
# The roll and its unrolling, both coloured by the roll parameter.
if __name__ == "__main__":
    fig = plt.figure(figsize=(10, 4))
    ax = fig.add_subplot(1, 2, 1, projection="3d")
    X, t, Z = result["X"], result["t"], result["embedding"]
    ax.scatter(X[:, 0], X[:, 1], X[:, 2], c=t, s=8, cmap="viridis")
    ax.set_title("Swiss roll")
    ax = fig.add_subplot(1, 2, 2)
    ax.scatter(Z[:, 0], Z[:, 1], c=t, s=8, cmap="viridis")
    ax.set_aspect("equal")
    ax.set_title(f"shrink-only MVU (|Spearman| {result['spearman']:.3f})")
    fig.tight_layout()

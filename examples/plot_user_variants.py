r"""
Published variants as user code: Colored MVU, shrink-only MVU, Minimum Volume Embedding
=======================================================================================

An SDP the toolkit has never seen is a few lines: start from the blank centred
Gram SDP :func:`sdpembed.formulations.gram_sdp` (:math:`G\succeq 0`,
:math:`G\mathbf 1 = 0`) or from a builder's formulation, add objective terms
with ``with_objective`` and rows with ``with_constraints``, both written in cvxpy
on ``G = f.expressions["gram"]``, and solve with any backend. Three published
variants of Maximum Variance Unfolding:

* **Colored MVU** (Song, Smola, Borgwardt & Gretton, NIPS 2007): the embedding
  aligned with side information, :math:`\max \langle K_y, G\rangle` with the
  label kernel :math:`K_y = YY^T` (:math:`Y` the one-hot labels), under MVU's
  distance equalities on the neighbourhood graph :math:`\mathcal E`:

  .. math::

      \max_{G\succeq 0,\ G\mathbf 1 = 0}\ \langle YY^T, G\rangle
      \quad\text{s.t.}\quad G_{ii} + G_{jj} - 2G_{ij} = \bar D_{ij}\ \ ((i,j)\in\mathcal E).

  Written ``-cp.trace(Yc @ Yc.T @ G)`` with ``Yc = cp.Constant(Y)`` (minimised),
  ``"LOWRANK"`` reads :math:`K_y` by its factor :math:`Y` and never forms it.

* **Shrink-only MVU**: distances may shrink but not grow,
  :math:`G_{ii} + G_{jj} - 2G_{ij} \le \bar D_{ij}`, with :math:`\max\mathrm{tr}\,G`
  (a connected graph still bounds the trace; Sun, Boyd, Xiao & Diaconis, SIAM Review
  2006, show it is the dual of the fastest mixing Markov process on the graph).
  ``"LOWRANK"`` reads rows :math:`G_{ii} + G_{jj} - 2G_{ij} \le \bar D_{ij}` as
  shrink-only distance edges, the same problem as
  ``sdpembed.formulations.mvu(graph, distances="shrink")``.

* **Minimum Volume Embedding** (Shaw & Jebara, AISTATS 2007):
  :func:`sdpembed.sequential.minimum_volume_embedding`, a sequence of
  linear-objective SDPs :math:`\max\langle 2V_dV_d^T - I, G\rangle` under MVU's
  constraints, :math:`V_d` the top eigenvectors of the previous solution.
"""

# %%
from __future__ import annotations

import cvxpy as cp
import matplotlib.pyplot as plt
import numpy as np

from sdpembed import knn_graph, solve
from sdpembed.demo import load_demo_data
from sdpembed.formulations import gram_sdp
from sdpembed.plotting import plot_embedding
from sdpembed.recovery import embedding_from_gram
from sdpembed.sequential import minimum_volume_embedding


def colored_mvu(graph, y):
    """Colored MVU in user code: the blank SDP, MVU's distance rows, the label alignment."""
    f = gram_sdp(graph.n_nodes)
    G = f.expressions["gram"]
    i, j = graph.edges.T
    Y = cp.Constant(np.eye(int(y.max()) + 1)[y])             # one-hot labels, n x c
    target = graph.sqdist / graph.sqdist.mean()
    return (f.with_constraints([G[i, i] + G[j, j] - 2 * G[i, j] == target])
             .with_objective(-cp.trace(Y @ Y.T @ G)))


def shrink_only_mvu(graph):
    """MVU whose distances may only shrink: rows <= and the trace maximised."""
    f = gram_sdp(graph.n_nodes)
    G = f.expressions["gram"]
    i, j = graph.edges.T
    target = graph.sqdist / graph.sqdist.mean()
    return (f.with_constraints([G[i, i] + G[j, j] - 2 * G[i, j] <= target])
             .with_objective(-cp.trace(G)))


def run(solver="CLARABEL", n_samples=40, shrink_solver=None, mve_steps=2, quiet=True):
    """The three variants on ``n_samples`` digits; returns their reports and Gram matrices
    (``shrink_solver``: the shrink-only variant's backend, ``solver`` by default)."""
    X, y = load_demo_data(n_samples, random_state=0)
    graph = knn_graph(X, n_neighbors=4, n_random=1, random_state=0)
    colored = colored_mvu(graph, y)
    rep_colored = solve(colored, solver=solver)
    shrink = shrink_only_mvu(graph)
    rep_shrink = solve(shrink, solver=shrink_solver or solver)
    mve = minimum_volume_embedding(graph, 2, solver=solver, max_iter=mve_steps)
    if not quiet:
        print(f"Colored MVU     {rep_colored.solver:8s} objective {rep_colored.objective: .6f}"
              + (f"  certified gap {rep_colored.certified_gap:.1e}"
                 if rep_colored.certified_gap is not None else ""))
        print(f"shrink-only MVU {rep_shrink.solver:8s} objective {rep_shrink.objective: .6f}"
              + (f"  certified gap {rep_shrink.certified_gap:.1e}"
                 if rep_shrink.certified_gap is not None else ""))
        print("MVE             " + f"{mve.reports[-1].solver:8s} spectral gap after each solve: "
              + ", ".join(f"{v:.4f}" for v in mve.history))
    return {"colored": rep_colored, "shrink": rep_shrink, "mve": mve, "y": y,
            "G_colored": colored.value("gram"), "G_shrink": shrink.value("gram"),
            "G_mve": mve.gram, "graph": graph}


# %%
# Solve the three variants.
if __name__ == "__main__":
    result = run(solver="LOWRANK", n_samples=60, mve_steps=3, quiet=False)

# %%
# The top two coordinates of each embedding, coloured by digit.
if __name__ == "__main__":
    fig, axes = plt.subplots(1, 3, figsize=(12, 4))
    labeled = np.ones(len(result["y"]), dtype=bool)
    for ax, key, title in zip(axes, ["G_colored", "G_shrink", "G_mve"],
                              ["Colored MVU", "shrink-only MVU", "MVE"]):
        Z = embedding_from_gram(result[key], 2)
        plot_embedding(Z, result["y"], labeled, ax=ax, legend=False, title=title, s=10)
    fig.tight_layout()

r"""
Must-link and cannot-link constraints through ``with_constraints``
==================================================================

A variant of one's own: DVU with pairwise side information. A *must-link*
pair should end up close, a *cannot-link* pair far apart. Both are affine
constraints on the Gram matrix :math:`G` of the points, written in cvxpy on
``f.expressions["gram"]``:

.. math::

    D_{ij}(G) = G_{ii} + G_{jj} - 2G_{ij} \le \delta_{\text{must}}
    \quad (i,j)\in\mathcal M, \qquad
    D_{ij}(G) \ge \delta_{\text{cannot}} \quad (i,j)\in\mathcal C .

:meth:`~sdpembed.formulations.gram.GramFormulation.with_constraints` returns
a new formulation (the original is unchanged) whose cvxpy problem is the
DVU problem plus these constraints; every backend that solves the cvxpy
problem honours them as written, and a backend that reads the structured
description (``"LOWRANK"``) either represents them exactly or refuses the
problem with :class:`~sdpembed.exceptions.UnsupportedProblemError`. The solve
below uses ``solver="auto"``, which picks a backend that accepts the
formulation, and the report says which and why.
"""

# %%
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from sdpembed import knn_graph, solve
from sdpembed.datasets import partial_labels
from sdpembed.demo import load_demo_data
from sdpembed.formulations import dvu
from sdpembed.plotting import plot_embedding
from sdpembed.recovery import embedding_from_gram


def pairs(y, n_pairs=4, random_state=0):
    """``n_pairs`` must-link pairs (same class) and cannot-link pairs (different classes)."""
    rng = np.random.default_rng(random_state)
    must, cannot = [], []
    while len(must) < n_pairs or len(cannot) < n_pairs:
        i, j = rng.choice(len(y), size=2, replace=False)
        if y[i] == y[j] and len(must) < n_pairs:
            must.append((int(i), int(j)))
        elif y[i] != y[j] and len(cannot) < n_pairs:
            cannot.append((int(i), int(j)))
    return must, cannot


def run(solver="auto", n_samples=60, n_pairs=4, quiet=True):
    """DVU with and without the pair constraints; returns the reports, distances and data."""
    X, y = load_demo_data(n_samples, random_state=0)
    y_partial = partial_labels(y, 0.5, random_state=0)
    graph = knn_graph(X, n_neighbors=2, n_random=1, random_state=0)
    f = dvu(graph, y_partial, centroids="eliminated", trace="min", trace_weight=1e-3)
    must, cannot = pairs(y, n_pairs)

    plain = solve(f, solver=solver)
    G0 = f.value("gram")

    def dist(G, i, j):                 # squared embedded distance, affine in G
        return G[i, i] + G[j, j] - 2 * G[i, j]

    D0 = np.array([dist(G0, i, j) for i, j in must + cannot])
    must_bound = 0.1 * float(np.median(D0))       # a tenth of the typical distance
    cannot_bound = 1.5 * float(np.max(D0))        # beyond every distance seen so far
    G = f.expressions["gram"]
    g = f.with_constraints([dist(G, i, j) <= must_bound for i, j in must]
                           + [dist(G, i, j) >= cannot_bound for i, j in cannot])
    constrained = solve(g, solver=solver)
    G1 = g.value("gram")
    D1 = np.array([dist(G1, i, j) for i, j in must + cannot])
    if not quiet:
        print(f"without pairs: {plain.solver:8s} objective {plain.objective: .5f}")
        print(f"with pairs:    {constrained.solver:8s} objective {constrained.objective: .5f}")
        print(f"  chosen because: {constrained.selection}")
        if constrained.certified_gap is not None:
            print(f"  certified gap {constrained.certified_gap:.1e} (of the constrained problem)")
        for (i, j), d0, d1, kind in zip(must + cannot, D0, D1,
                                        ["must"] * len(must) + ["cannot"] * len(cannot)):
            bound = must_bound if kind == "must" else cannot_bound
            sign = "<=" if kind == "must" else ">="
            print(f"  {kind:6s} ({i:2d},{j:2d}): D = {d0:6.3f} -> {d1:6.3f}  ({sign} {bound:.3f})")
    return {"plain": plain, "constrained": constrained, "formulation": g,
            "must": must, "cannot": cannot,
            "must_bound": must_bound, "cannot_bound": cannot_bound,
            "D_plain": D0, "D_constrained": D1, "G_plain": G0, "G_constrained": G1,
            "y": y, "y_partial": y_partial}


# %%
# Solve the plain problem and the constrained one. The constraints cost
# objective (the feasible set shrinks), and every pair now meets its bound.
if __name__ == "__main__":
    result = run(quiet=False)

# %%
# The two embeddings, with the must-link pairs joined by solid lines and the
# cannot-link pairs by dashed ones. Only the top two coordinates are drawn; the
# bounds hold for the distances in the whole embedding (the table above).
if __name__ == "__main__":
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    labeled = result["y_partial"] >= 0
    for ax, key, title in zip(axes, ["G_plain", "G_constrained"], ["DVU", "DVU + pairs"]):
        Z = embedding_from_gram(result[key], 2)
        plot_embedding(Z, result["y"], labeled, ax=ax, legend=False, title=title, s=12)
        for (i, j) in result["must"]:
            ax.plot(*Z[[i, j]].T, "k-", lw=1.5)
        for (i, j) in result["cannot"]:
            ax.plot(*Z[[i, j]].T, "k--", lw=0.8)
    fig.tight_layout()

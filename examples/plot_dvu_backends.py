r"""
DVU on digits with every installed backend
==========================================

One Discriminative Variance Unfolding problem (Vernaza, Lee & Taskar,
section 3.3) is built once and handed to every backend installed here:
the cvxpy conic solvers (SCS, Clarabel, CVXOPT, SDPA, MOSEK when licensed),
CSDP (the paper's solver, when the ``csdp`` program is on the path) and the
toolkit's own ``LOWRANK``. They all solve *the same* SDP,

.. math::

    \min_{G\succeq 0,\ \epsilon\ge 0}\ \sigma^2_{icv}(G)-\sigma^2_{bcv}(G)
    + \lambda\sum_{(i,j)\in\mathcal E}\epsilon_{ij} + \tau\,\operatorname{tr} G
    \quad\text{s.t.}\quad
    |G_{ii}+G_{jj}-2G_{ij}-\bar D_{ij}|\le\epsilon_{ij}\bar D_{ij},\quad G\mathbf 1=0,

so they must reach the same optimal value. The small trace term
(:math:`\tau = 10^{-3}`, ``trace="min"``) makes the optimal Gram matrix unique;
since it weighs little, near-optimal Gram matrices can still differ more than
the objective values do (the table below shows by how much).
"""

# %%
# The problem: 50 digits, a fifth of their labels hidden, the DVU graph of
# 2 nearest neighbours plus 1 random long edge per point.
from __future__ import annotations

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np

from sdpembed import available_solvers, knn_graph, solve
from sdpembed.datasets import partial_labels
from sdpembed.demo import load_demo_data
from sdpembed.formulations import dvu
from sdpembed.plotting import plot_embedding
from sdpembed.recovery import embedding_from_gram


def build(n_samples=50, random_state=0):
    """The DVU formulation of ``n_samples`` digits and its partial labels."""
    X, y = load_demo_data(n_samples, random_state=random_state)
    y_partial = partial_labels(y, 0.8, random_state=random_state)
    graph = knn_graph(X, n_neighbors=2, n_random=1, random_state=random_state)
    f = dvu(graph, y_partial, centroids="eliminated", distances="interval",
            slack_weight=1.0, trace="min", trace_weight=1e-3)
    return f, y, y_partial


def run(solver=None, n_samples=50, quiet=True):
    """Solve the same DVU with ``solver`` (a name or a list; default: every installed one).

    Returns a dict: ``reports`` (backend -> SolveReport), ``seconds`` (backend ->
    wall time), ``grams`` (backend -> Gram matrix), ``y``, ``y_partial``.
    """
    solvers = available_solvers() if solver is None else (
        [solver] if isinstance(solver, str) else list(solver))
    reports, seconds, grams = {}, {}, {}
    for name in solvers:
        f, y, y_partial = build(n_samples)     # a fresh formulation per backend
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reports[name] = solve(f, solver=name)
        seconds[name] = time.perf_counter() - start
        grams[name] = f.value("gram")
        if not quiet:
            r = reports[name]
            flagged = {w.category.__name__ for w in caught
                       if w.category.__name__ == "InaccurateSolutionWarning"}
            note = f"  ({', '.join(sorted(flagged))})" if flagged else ""
            print(f"{name:9s} {r.status:19s} objective {r.objective: .7f}  "
                  f"{seconds[name]:5.1f} s{note}")
    return {"reports": reports, "seconds": seconds, "grams": grams, "y": y,
            "y_partial": y_partial}


# %%
# Solve with every installed backend. ``available_solvers()`` lists them;
# a backend whose status is ``optimal_inaccurate`` warns
# (:class:`~sdpembed.exceptions.InaccurateSolutionWarning`) and is marked here.
if __name__ == "__main__":
    print("installed:", ", ".join(available_solvers()))
    result = run(quiet=False)

# %%
# The optimal values agree to the backends' accuracy, and so, more loosely,
# do the Gram matrices.
if __name__ == "__main__":
    objectives = {k: r.objective for k, r in result["reports"].items()}
    best = min(objectives.values())
    ref = result["grams"][min(result["grams"], key=objectives.get)]
    for name, value in objectives.items():
        dG = np.linalg.norm(result["grams"][name] - ref) / np.linalg.norm(ref)
        print(f"{name:9s} objective - best = {value - best:9.2e}   "
              f"|G - G_best| / |G_best| = {dG:8.1e}")

# %%
# The embedding (top two eigenvectors of :math:`G`, hollow markers: hidden labels)
# from each backend, and the wall time of each solve (compilation included).
if __name__ == "__main__":
    names = list(result["reports"])
    n_rows = (len(names) + 4) // 4
    fig, axes = plt.subplots(n_rows, 4, figsize=(12, 3 * n_rows), squeeze=False)
    axes = axes.ravel()
    for ax in axes[len(names) + 1:]:
        ax.set_visible(False)
    labeled = result["y_partial"] >= 0
    for ax, name in zip(axes, names):
        Z = embedding_from_gram(result["grams"][name], 2)
        Z = Z * np.sign(Z[np.argmax(np.abs(Z), axis=0), range(2)])  # fix the eigenvector signs
        plot_embedding(Z, result["y"], labeled, ax=ax, legend=False, title=name, s=10)
    bars = axes[len(names)]
    bars.barh(names, [result["seconds"][n] for n in names])
    bars.set_xlabel("seconds")
    bars.set_title("wall time")
    fig.tight_layout()

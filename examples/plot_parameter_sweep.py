r"""
A parameter sweep re-solved without rebuilding
==============================================

The weights of a formulation are cvxpy :class:`~cvxpy.expressions.constants.parameter.Parameter`\ s
(``f.parameters``): the problem is built once, and changing a value re-solves
the *same* problem object (cvxpy's DPP: the compiled problem is reused), with
any backend. Here the slack weight :math:`\lambda` of DVU,

.. math::

    \min_{G\succeq 0,\ \epsilon\ge 0}\ \sigma^2_{icv}(G)-\sigma^2_{bcv}(G)
    + \lambda\sum_{(i,j)\in\mathcal E}\epsilon_{ij}
    \quad\text{s.t.}\quad |D_{ij}(G)-\bar D_{ij}|\le\epsilon_{ij}\bar D_{ij},

trades the preservation of the graph's distances against class separation:
a small :math:`\lambda` lets edges stretch (total slack
:math:`\sum\epsilon_{ij}` grows) to pull the classes apart, a large one keeps
the local geometry. The sweep runs from just above the threshold
:math:`\lambda^*` below which the problem is unbounded
(:func:`~sdpembed.formulations.dvu.min_bounded_slack_weight`, see the next
example) up to :math:`10\lambda^*`.
"""

# %%
from __future__ import annotations

import time

import matplotlib.pyplot as plt
import numpy as np

from sdpembed import knn_graph, solve
from sdpembed.datasets import partial_labels
from sdpembed.demo import load_demo_data
from sdpembed.evaluation import transductive_knn_accuracy
from sdpembed.formulations import dvu
from sdpembed.formulations.dvu import min_bounded_slack_weight
from sdpembed.recovery import embedding_from_gram

#: slack weights of the sweep, in multiples of the threshold lambda*
RELATIVE_WEIGHTS = (1.05, 1.2, 1.5, 2.0, 3.0, 10.0)


def run(solver="SCS", n_samples=60, relative_weights=RELATIVE_WEIGHTS, quiet=True):
    r"""Solve DVU for each slack weight by changing ``f.parameters["slack_weight"]``.

    ``relative_weights`` are multiples of the threshold :math:`\lambda^*`. Returns
    a dict of arrays over the weights: ``weights``, ``objective``, ``slack`` (total
    relative slack), ``accuracy`` (3-NN on the hidden labels, 2-D embedding),
    ``seconds``; and ``build_seconds`` (building the formulation, once).
    """
    X, y = load_demo_data(n_samples, random_state=0)
    y_partial = partial_labels(y, 0.5, random_state=0)
    graph = knn_graph(X, n_neighbors=2, n_random=1, random_state=0)
    start = time.perf_counter()
    f = dvu(graph, y_partial, centroids="eliminated", trace="min", trace_weight=1e-3)
    build_seconds = time.perf_counter() - start
    threshold = min_bounded_slack_weight(f.meta["gram_problem"])
    weights = [r * threshold for r in relative_weights]
    if not quiet:
        print(f"threshold lambda* = {threshold:.4f}")
    edges, target = graph.edges, f.meta["gram_problem"].target
    out = {k: [] for k in ("objective", "slack", "accuracy", "seconds")}
    for lam in weights:
        f.parameters["slack_weight"].value = lam        # no rebuild
        start = time.perf_counter()
        report = solve(f, solver=solver)
        out["seconds"].append(time.perf_counter() - start)
        G = f.value("gram")
        D = G[edges[:, 0], edges[:, 0]] + G[edges[:, 1], edges[:, 1]] \
            - 2 * G[edges[:, 0], edges[:, 1]]
        out["objective"].append(report.objective)
        out["slack"].append(float(np.sum(np.abs(D - target) / target)))
        Z = embedding_from_gram(G, 2)
        out["accuracy"].append(transductive_knn_accuracy(Z, y, y_partial >= 0, n_neighbors=3))
        if not quiet:
            print(f"slack_weight {lam:6.3f}: objective {report.objective: .4f}  total slack "
                  f"{out['slack'][-1]:7.3f}  3-NN (2-D) {out['accuracy'][-1]:.3f}  "
                  f"{out['seconds'][-1]:.1f} s ({report.solver})")
    result = {k: np.asarray(v) for k, v in out.items()}
    result.update(weights=np.asarray(weights), build_seconds=build_seconds, threshold=threshold)
    return result


# %%
# The sweep: one formulation, six solves (SCS, a first-order backend, here).
if __name__ == "__main__":
    result = run(quiet=False)
    print(f"built once in {result['build_seconds']:.2f} s")

# %%
# As :math:`\lambda` grows the optimal slack falls and the objective rises
# (it is a concave function of :math:`\lambda`, a minimum of affine ones).
if __name__ == "__main__":
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    for ax, key, label in zip(axes, ["objective", "slack", "accuracy"],
                              ["optimal value", r"total slack $\sum\epsilon_{ij}$",
                               "3-NN accuracy, hidden labels (2-D)"]):
        ax.semilogx(result["weights"], result[key], "o-")
        ax.axvline(result["threshold"], color="0.6", ls=":", label=r"$\lambda^*$")
        ax.set_xlabel(r"slack_weight $\lambda$")
        ax.set_title(label)
    axes[0].legend()
    fig.tight_layout()

r"""
The slack-weight threshold and unboundedness
============================================

With soft distance constraints DVU can be *unbounded*. Scaling a feasible
Gram matrix :math:`G` by :math:`t\to\infty` multiplies the variance term
:math:`\langle C, G\rangle = \sigma^2_{icv}(G)-\sigma^2_{bcv}(G)` by
:math:`t`, while the slack each edge needs grows like
:math:`D_{ij}(tG)/\bar D_{ij}`. The objective therefore falls without bound
exactly when

.. math::

    \lambda < \lambda^* = \max_{v\perp\mathbf 1}
        \frac{-v^\top C v}{v^\top L_w v},

the top generalized eigenvalue of :math:`(-C, L_w)` on the centred
subspace, with :math:`L_w` the Laplacian of the graph weighted by
:math:`1/\bar D_{ij}`
(:func:`~sdpembed.formulations.dvu.min_bounded_slack_weight`). Below the
threshold every backend reports unboundedness, and
:func:`~sdpembed.solve` raises :class:`~sdpembed.exceptions.UnboundedError`
whose message names :math:`\lambda^*` and what to change. Above it the
optimal value is finite, and it approaches the threshold from above with a
steep rise in stretched edges.
"""

# %%
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from sdpembed import knn_graph, solve
from sdpembed.datasets import partial_labels
from sdpembed.demo import load_demo_data
from sdpembed.exceptions import UnboundedError
from sdpembed.formulations import dvu
from sdpembed.formulations.dvu import min_bounded_slack_weight

RELATIVE_WEIGHTS = (1.02, 1.05, 1.1, 1.25, 1.5, 2.0, 3.0)


def run(solver="CLARABEL", n_samples=60, relative_weights=RELATIVE_WEIGHTS, quiet=True):
    """The threshold, the error below it and the optimal values above it.

    Returns a dict: ``threshold``, ``message`` (of the :class:`UnboundedError`
    at half the threshold), ``weights`` and ``objective`` above it.
    """
    X, y = load_demo_data(n_samples, random_state=0)
    y_partial = partial_labels(y, 0.5, random_state=0)
    graph = knn_graph(X, n_neighbors=2, n_random=1, random_state=0)
    f = dvu(graph, y_partial, centroids="eliminated", distances="interval")
    threshold = min_bounded_slack_weight(f.meta["gram_problem"])
    if not quiet:
        print(f"lambda* = {threshold:.5f}")

    f.parameters["slack_weight"].value = 0.5 * threshold
    try:
        solve(f, solver=solver)
        message = None
    except UnboundedError as error:
        message = str(error)
    if not quiet:
        print(f"slack_weight = lambda*/2 -> UnboundedError:\n  {message}")

    weights, objective = [], []
    for r in relative_weights:
        f.parameters["slack_weight"].value = r * threshold
        report = solve(f, solver=solver)
        weights.append(r * threshold)
        objective.append(report.objective)
        if not quiet:
            print(f"slack_weight = {r:4.2f} lambda*: optimal value {report.objective: .4f}")
    return {"threshold": threshold, "message": message, "weights": np.asarray(weights),
            "objective": np.asarray(objective)}


# %%
# Below the threshold: the error says what to change.
if __name__ == "__main__":
    result = run(quiet=False)

# %%
# Above it the optimal value is finite and increasing in :math:`\lambda`;
# it drops steeply as :math:`\lambda \downarrow \lambda^*`.
if __name__ == "__main__":
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.plot(result["weights"] / result["threshold"], result["objective"], "o-")
    ax.axvline(1.0, color="0.5", ls=":")
    ax.axvspan(0.9, 1.0, color="0.9")
    ax.text(0.95, np.mean(result["objective"]), "unbounded", rotation=90, ha="center",
            va="center")
    ax.set_xlim(0.9, None)
    ax.set_xlabel(r"slack_weight / $\lambda^*$")
    ax.set_ylabel("optimal value")
    fig.tight_layout()

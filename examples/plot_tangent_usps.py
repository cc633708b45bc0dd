r"""
Tangent-distance graphs on USPS
===============================

The DVU paper (Vernaza, Lee & Taskar, section 4) builds its neighbourhood
graph on handwritten USPS digits under the *tangent distance* (Simard,
LeCun & Denker): the distance between two images is that between the
affine spaces spanned by small transformations of each (translations,
rotation, scaling, shear, thickness), linearised by their tangent vectors
:math:`T_x, T_y`,

.. math::

    \mathrm{TD}^2(x, y) = \min_{a, b}\ \lVert x + T_x a - y - T_y b\rVert^2 ,

so a digit shifted by a pixel stays close to itself. Neighbours are found
by re-ranking Euclidean candidates under this distance
(:func:`~sdpembed.tangent.tangent_knn_graph`), and the squared tangent
distances become DVU's target distances :math:`\bar D_{ij}`.

This example needs the USPS data (``$SDPEMBED_DATA/usps.npz``, or a
download). Without them it says so and stops.
"""

# %%
from __future__ import annotations

import time

import matplotlib.pyplot as plt
import numpy as np

from sdpembed import DVU, knn_graph, tangent_knn_graph
from sdpembed.datasets import load_usps, partial_labels
from sdpembed.evaluation import transductive_knn_accuracy
from sdpembed.exceptions import DatasetError
from sdpembed.plotting import plot_embedding
from sdpembed.tangent import tangent_kneighbors


def load(n_samples, random_state=0):
    """A class-stratified subset of USPS (pixels in [-1, 1]), or None when the data are absent."""
    from sklearn.model_selection import train_test_split

    try:
        X, y = load_usps(return_X_y=True, download_if_missing=False)
    except DatasetError as error:
        return None, str(error)
    idx, _ = train_test_split(np.arange(len(y)), train_size=n_samples, stratify=y,
                              random_state=random_state)
    return (X[idx].astype(float), y[idx]), None


def run(solver="LOWRANK", n_samples=400, quiet=True):
    """Euclidean against tangent distance: 1-NN accuracy and DVU on each graph.

    Returns None without the data; otherwise a dict with ``loo_1nn`` (leave-one-out
    1-NN accuracy per distance), ``dvu_3nn`` (3-NN accuracy on the hidden labels of
    the DVU embedding per graph), ``graph_seconds``, ``embeddings``, ``y``, ``y_partial``.
    """
    data, missing = load(n_samples)
    if data is None:
        if not quiet:
            print(f"USPS is not available here, nothing to show: {missing}")
        return None
    X, y = data
    y_partial = partial_labels(y, 0.8, random_state=0)
    labeled = y_partial >= 0

    # leave-one-out 1-NN: the nearest other image under each distance
    _, idx_td = tangent_kneighbors(X, n_neighbors=1)
    d2 = np.sum(X**2, 1)[:, None] + np.sum(X**2, 1)[None, :] - 2 * X @ X.T
    np.fill_diagonal(d2, np.inf)
    loo = {"euclidean": float(np.mean(y[np.argmin(d2, 1)] == y)),
           "tangent": float(np.mean(y[idx_td[:, 0]] == y))}

    graphs, seconds = {}, {}
    start = time.perf_counter()
    graphs["euclidean"] = knn_graph(X, n_neighbors=2, n_random=1, random_state=0)
    seconds["euclidean"] = time.perf_counter() - start
    start = time.perf_counter()
    graphs["tangent"] = tangent_knn_graph(X, n_neighbors=2, n_random=1, random_state=0)
    seconds["tangent"] = time.perf_counter() - start

    embeddings, acc = {}, {}
    for name, graph in graphs.items():
        est = DVU(n_components=10, graph=graph, solver=solver, random_state=0)
        embeddings[name] = est.fit(X, y_partial).embedding_
        acc[name] = transductive_knn_accuracy(embeddings[name], y, labeled, n_neighbors=3)
    if not quiet:
        for name in graphs:
            print(f"{name:9s}: leave-one-out 1-NN {loo[name]:.3f}; graph in "
                  f"{seconds[name]:5.2f} s; DVU (10-D) 3-NN on the hidden labels {acc[name]:.3f}")
    return {"loo_1nn": loo, "dvu_3nn": acc, "graph_seconds": seconds, "embeddings": embeddings,
            "y": y, "y_partial": y_partial}


# %%
if __name__ == "__main__":
    result = run(quiet=False)

# %%
# The first two DVU coordinates on each graph (hollow: hidden labels).
if __name__ == "__main__" and result is not None:
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    for ax, name in zip(axes, ["euclidean", "tangent"]):
        plot_embedding(result["embeddings"][name][:, :2], result["y"],
                       result["y_partial"] >= 0, ax=ax, legend=False, s=6,
                       title=f"DVU, {name} graph")
    fig.tight_layout()

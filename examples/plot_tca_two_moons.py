r"""
TCA on the 3-D two moons
========================

Transductive Component Analysis (Liu, Tao & Liu, ICDM 2008) learns a linear
projection :math:`U` from a handful of labels and all the unlabelled
points: smooth on a :math:`k`-NN graph over every point, with a large
average margin between the labelled classes,

.. math::

    \min_{U^\top X_lD_lX_l^\top U = I}\
    \operatorname{tr}\Big(U^\top\big(XSX^\top + \beta X_lM_lX_l^\top\big)U\Big),
    \qquad S = (I+\alpha L)^{-1}\alpha L ,

a generalized eigenproblem (eqs. 20–21) whose SDP relaxation is exact.
OTCA, its orthogonal variant, solves a sequence of convex quadratic
programs instead (eqs. 22–27). The paper's toy problem (Table 3): 600
points on two interleaved moons lifted to 3-D by
:math:`z = \sin(\pi y)(y^2+1)^{-2} + 0.3y`, only **two labels per class**,
every method reducing to 2-D; accuracy is that of 1-NN on the unlabelled
points with the four labelled ones as training set. The paper reports
78.4 % for TCA and 48.2 % for 1-NN on the raw data from one run whose noise
level and labelled points it does not give. The draws below do not reproduce
that gap: their raw 1-NN baseline is far higher and the spread over draws of
the four labels is large (``sdpembed run tca_table3`` repeats the table over
20 draws; see the reproductions report).
"""

# %%
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from sdpembed import LDA, LPP, OTCA, SDA, TCA
from sdpembed.datasets import make_two_moons_3d, partial_labels
from sdpembed.evaluation import transductive_knn_accuracy
from sdpembed.plotting import plot_embedding


def methods(solver):
    """The methods of the paper's table that the toolkit implements (its settings)."""
    return {
        "LPP": LPP(n_components=2, n_neighbors=6),
        "LDA": LDA(regularization=1e-3),
        "SDA": SDA(n_neighbors=6),
        "TCA": TCA(n_components=2, alpha=10.0, beta=6.0, n_neighbors=6, solver=solver),
        "OTCA": OTCA(n_components=2, alpha=4.0, beta=10.0, gamma=1e-3, n_neighbors=6,
                     solver=solver),
    }


def run(solver="CLARABEL", n_samples=600, seeds=(0, 1, 2, 3, 4), quiet=True):
    """1-NN accuracy of each method over draws of the 2 + 2 labels.

    Returns a dict: ``accuracy`` (method -> array over seeds, ``"1-NN"`` on
    the raw data included), ``embeddings`` (method -> embedding of the first
    seed), ``X``, ``y``, ``y_partial`` (first seed).
    """
    X, y = make_two_moons_3d(n_samples, noise=0.05, random_state=0)
    accuracy = {"1-NN (raw)": []}
    embeddings = {}
    for seed in seeds:
        y_partial = partial_labels(y, 2, random_state=seed, min_per_class=2)
        labeled = y_partial >= 0
        accuracy["1-NN (raw)"].append(transductive_knn_accuracy(X, y, labeled, n_neighbors=1))
        for name, est in methods(solver).items():
            Z = est.fit(X, y_partial).transform(X)
            accuracy.setdefault(name, []).append(
                transductive_knn_accuracy(Z, y, labeled, n_neighbors=1))
            if seed == seeds[0]:
                embeddings[name] = Z
        if seed == seeds[0]:
            y_partial_0 = y_partial
    accuracy = {k: np.asarray(v) for k, v in accuracy.items()}
    if not quiet:
        for name, acc in accuracy.items():
            print(f"{name:11s} 1-NN accuracy {100 * acc.mean():5.1f} % "
                  f"(± {100 * acc.std():4.1f} over {len(seeds)} draws of the labels)")
    return {"accuracy": accuracy, "embeddings": embeddings, "X": X, "y": y,
            "y_partial": y_partial_0}


# %%
if __name__ == "__main__":
    result = run(quiet=False)

# %%
# The data (large markers: the four labelled points) and the TCA and OTCA
# embeddings for the first draw of the labels.
if __name__ == "__main__":
    fig = plt.figure(figsize=(12, 3.8))
    ax = fig.add_subplot(1, 3, 1, projection="3d")
    X, y, labeled = result["X"], result["y"], result["y_partial"] >= 0
    ax.scatter(*X.T, c=np.where(y == 0, "tab:blue", "tab:orange"), s=4)
    ax.scatter(*X[labeled].T, c="k", s=60, marker="*")
    ax.set_title("3-D two moons")
    for i, name in enumerate(["TCA", "OTCA"]):
        axi = fig.add_subplot(1, 3, i + 2)
        Z = result["embeddings"][name]
        plot_embedding(Z[:, :2] if Z.shape[1] > 1 else np.c_[Z, np.zeros(len(Z))], y, labeled,
                       ax=axi, legend=False, s=6, title=name)
    fig.tight_layout()

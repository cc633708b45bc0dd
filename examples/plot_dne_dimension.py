r"""
DNE: the dimension chosen from the spectrum
===========================================

Discriminant Neighborhood Embedding (Zhang, Xue, Sun, Guo & Lu) builds a
signed neighbourhood graph: :math:`F_{ij} = +1` between a point and its
:math:`k` nearest neighbours within its class, :math:`-1` between a point
and its :math:`k` nearest neighbours in the other classes. With :math:`S`
the diagonal of row sums of :math:`F`, a projection :math:`P` changes the
"intra-class minus inter-class" neighbourhood energy by

.. math::

    \Phi(P) = \operatorname{tr}\big(P^\top X(S-F)X^\top P\big),
    \qquad \min_{P^\top P = I_d} \Phi(P) = \sum_{i\le d}\lambda_i\big(X(S-F)X^\top\big),

so every eigenvector of a *negative* eigenvalue lowers the energy and every
positive one raises it: the optimal dimension is the number of negative
eigenvalues (the paper's eq. 10). ``DNE(n_components=None)`` applies the
paper's energy rule: the fewest leading negative eigenvalues whose
magnitudes reach ``energy`` (96 %) of the total. The toolkit's SDP
(``method="sdp"``) is the Fantope relaxation, exact by Ky Fan's theorem.

Below: the spectrum of :math:`X(S-F)X^\top` on the standardised wine data,
the number of negative eigenvalues and the energy rule's choice, and the
1-NN accuracy (5-fold cross-validation) of the DNE projection by dimension.
"""

# %%
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_wine
from sklearn.model_selection import StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sdpembed import DNE
from sdpembed.plotting import plot_accuracy_vs_dimension, plot_spectrum


def run(solver="CLARABEL", method="eigen", n_splits=5, quiet=True):
    """The spectrum, the chosen dimension and the accuracy by dimension.

    Returns a dict: ``eigenvalues``, ``n_negative``, ``n_chosen``, ``dims``,
    ``accuracy`` (array, one row per dimension, one column per fold).
    """
    X, y = load_wine(return_X_y=True)
    Xs = StandardScaler().fit_transform(X)
    dne = DNE(n_components=None, method=method, solver=solver).fit(Xs, y)
    dims = np.arange(1, X.shape[1] + 1)
    folds = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=0)
    accuracy = np.zeros((len(dims), n_splits))
    for j, (train, test) in enumerate(folds.split(X, y)):
        for i, d in enumerate(dims):
            model = make_pipeline(StandardScaler(), DNE(n_components=int(d)),
                                  KNeighborsClassifier(n_neighbors=1))
            accuracy[i, j] = model.fit(X[train], y[train]).score(X[test], y[test])
    if not quiet:
        print(f"eigenvalues of X(S-F)X^T: {np.array2string(dne.eigenvalues_, precision=1)}")
        print(f"{dne.n_negative_} negative; the energy rule keeps {dne.n_components_}")
        best = dims[np.argmax(accuracy.mean(axis=1))]
        print(f"1-NN accuracy at the chosen dimension {accuracy[dne.n_components_ - 1].mean():.3f}"
              f"; best {accuracy.mean(axis=1).max():.3f} at d = {best}")
    return {"eigenvalues": dne.eigenvalues_, "n_negative": dne.n_negative_,
            "n_chosen": dne.n_components_, "dims": dims, "accuracy": accuracy}


# %%
if __name__ == "__main__":
    result = run(quiet=False)

# %%
# The spectrum (ascending) with the number of negative eigenvalues marked,
# and the accuracy by dimension with the energy rule's choice.
if __name__ == "__main__":
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    plot_spectrum(result["eigenvalues"], ax=axes[0], cumulative=False, mark="negative",
                  title=r"spectrum of $X(S-F)X^\top$")
    plot_accuracy_vs_dimension(result["dims"], result["accuracy"], ax=axes[1],
                               label="DNE + 1-NN", ylabel="5-fold accuracy")
    axes[1].axvline(result["n_chosen"], color="k", ls=":", label="energy rule")
    axes[1].axvline(result["n_negative"], color="tab:red", ls="--", label="negative eigenvalues")
    axes[1].legend()
    fig.tight_layout()

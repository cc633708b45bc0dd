r"""Semi-supervised discriminant analysis (Cai, He & Han, ICCV 2007) and its exact SDP.

Between-class and total scatter :math:`S_b, S_t` of the labelled points,
and the graph Laplacian :math:`L` of a k-nearest-neighbour graph over all
points (labelled and unlabeled; binary weights as in the paper):

.. math::

    \max_{P^\top (S_t + \alpha X^\top L X) P = I_d} \operatorname{tr}(P^\top S_b P)
    \qquad (S_b a = \lambda (S_t + \alpha X^\top L X) a,\ \text{largest } \lambda),

Cai et al. eq. (7) with the regulariser :math:`J(a) = a^\top X^\top L X a`
of eq. (6) (their factor 2 absorbed in :math:`\alpha`); their Tikhonov term
:math:`\beta I` is the ``regularization`` option. At most :math:`c - 1`
eigenvalues are nonzero. :func:`sda_formulation` takes the rank-revealing step
of :func:`sdpembed.relaxations.reduce_pencil` first (restriction to the
numerical range of :math:`B = S_t + \alpha X^\top L X`, which contains that of
:math:`S_b \preceq S_t`: every finite eigenpair unchanged).
"""

from __future__ import annotations

import numpy as np

from .._labels import check_partial_labels
from .._params import NONNEGATIVE, POSITIVE_INT, declared
from .._typing import ArrayLike
from ..exceptions import InputError
from ..graphs import check_data_matrix
from ..relaxations import RANK_TOL, Pencil, formulate_reduced
from ..scatter.discriminant import (
    between_class_scatter,
    graph_laplacian,
    knn_affinity,
    laplacian_scatter,
    total_scatter,
)
from ._base import Formulation
from .lpp import AFFINITY_PARAMETERS

__all__ = ["SDA_PARAMETERS", "sda_pencil", "sda_formulation"]

#: declared constraints of the parameters of :func:`sda_formulation`, checked on every call
#: and read by the estimator :class:`~sdpembed.estimators.SDA`
SDA_PARAMETERS = {"n_components": [POSITIVE_INT, None], "alpha": [NONNEGATIVE],
                  **AFFINITY_PARAMETERS}


@declared({"alpha": SDA_PARAMETERS["alpha"]})
def sda_pencil(X: np.ndarray, y: np.ndarray, n_classes: int, *, alpha: float = 0.1,
               n_neighbors: int = 5, weights: str = "binary",
               sigma: float | None = None) -> Pencil:
    """Pencil ``(S_b, S_t + alpha X'LX, "max", "ratio_trace")`` of SDA."""
    alpha = float(alpha)
    W = knn_affinity(X, n_neighbors, weights=weights, sigma=sigma)
    L, _ = graph_laplacian(W)
    Sb = between_class_scatter(X, y, n_classes)
    B = total_scatter(X, y >= 0) + alpha * laplacian_scatter(X, L)
    return Pencil(Sb, B, "max", "ratio_trace",
                  {"method": "sda", "variant": weights, "alpha": alpha,
                   "equations": ("Cai, He & Han 2007, eqs. (6)-(7)",)})


@declared(SDA_PARAMETERS)
def sda_formulation(X: ArrayLike, y: ArrayLike, n_components: int | None = None, *,
                    alpha: float = 0.1, n_neighbors: int = 5, weights: str = "binary",
                    sigma: float | None = None, regularization: float = 0.0,
                    rank_tol: float = RANK_TOL) -> Formulation:
    """Exact SDP of SDA after the rank-revealing step (module docstring).

    ``regularization`` is relative; the variables live in the reduced
    coordinates, ``P = meta["reduction_basis"] @ Q``.
    """
    X = check_data_matrix(X)
    y_int, classes, _ = check_partial_labels(y, X.shape[0])
    pencil = sda_pencil(X, y_int, classes.size, alpha=alpha, n_neighbors=n_neighbors,
                        weights=weights, sigma=sigma)
    limit = min(classes.size - 1, X.shape[1])
    d = limit if n_components is None else int(n_components)
    if not 1 <= d <= limit:
        raise InputError(f"n_components={d} must lie in [1, {limit}] (SDA gives at most "
                         "n_classes - 1 directions)")
    return formulate_reduced(pencil, d, regularization=regularization, rank_tol=rank_tol)

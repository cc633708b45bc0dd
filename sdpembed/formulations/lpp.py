r"""Locality preserving projections (He & Niyogi, NIPS 2003) and their exact SDP.

With the k-nearest-neighbour affinity :math:`W`, degrees :math:`D` and
Laplacian :math:`L = D - W` over all points,

.. math::

    \min_{P^\top X^\top D X P = I_d} \operatorname{tr}(P^\top X^\top L X P)
    \qquad (X^\top L X\, a = \lambda\, X^\top D X\, a,\ \text{smallest } \lambda),

(He & Niyogi, eqs. 1-2 of section 3, written with samples as rows). The
paper applies PCA first (its step 1), which centres the data and makes
:math:`X^\top D X` nonsingular. :func:`lpp_formulation` centres :math:`X` and
takes the rank-revealing step of :func:`sdpembed.relaxations.reduce_pencil`
(restriction to the numerical range of :math:`X_c^\top D X_c`, which contains
that of :math:`X_c^\top L X_c` since :math:`L \preceq 2D`): the PCA step with
a stated tolerance, every finite eigenpair unchanged.
"""

from __future__ import annotations

import numpy as np

from .._params import NONNEGATIVE, POSITIVE, POSITIVE_INT, RANK_TOL_RANGE, declared
from .._sklearn import StrOptions
from .._typing import ArrayLike
from ..graphs import check_data_matrix
from ..relaxations import RANK_TOL, Pencil, formulate_reduced
from ..scatter.discriminant import WEIGHTS, graph_laplacian, knn_affinity, laplacian_scatter
from ._base import Formulation

__all__ = ["AFFINITY_PARAMETERS", "LPP_PARAMETERS", "lpp_pencil", "lpp_formulation"]

#: declared constraints of the parameters that the builders of LPP, SDA and discriminative
#: projections share (the affinity graph, the ridge, the rank-revealing step); their
#: estimators read the same entries
AFFINITY_PARAMETERS = {
    "n_neighbors": [POSITIVE_INT],
    "weights": [StrOptions(set(WEIGHTS))],
    "sigma": [POSITIVE, None],
    "regularization": [NONNEGATIVE],
    "rank_tol": [RANK_TOL_RANGE],
}

#: declared constraints of the parameters of :func:`lpp_formulation`
LPP_PARAMETERS = {"n_components": [POSITIVE_INT], **AFFINITY_PARAMETERS}


def lpp_pencil(X: np.ndarray, *, n_neighbors: int = 5, weights: str = "heat",
               sigma: float | None = None) -> Pencil:
    """Pencil ``(X'LX, X'DX, "min", "ratio_trace")`` of LPP."""
    W = knn_affinity(X, n_neighbors, weights=weights, sigma=sigma)
    L, deg = graph_laplacian(W)
    XDX = X.T @ (deg[:, None] * X)
    return Pencil(laplacian_scatter(X, L), 0.5 * (XDX + XDX.T), "min", "ratio_trace",
                  {"method": "lpp", "variant": weights, "equations": ("He & Niyogi 2003, sec. 3",)})


@declared(LPP_PARAMETERS)
def lpp_formulation(X: ArrayLike, n_components: int = 2, *, n_neighbors: int = 5,
                    weights: str = "heat", sigma: float | None = None, regularization: float = 0.0,
                    rank_tol: float = RANK_TOL) -> Formulation:
    """Exact SDP of LPP on the centred data after the rank-revealing step (module docstring).

    ``regularization`` is relative; the variables live in the reduced
    coordinates, ``P = meta["reduction_basis"] @ Q``.
    """
    X = check_data_matrix(X)
    pencil = lpp_pencil(X - X.mean(axis=0), n_neighbors=n_neighbors, weights=weights,
                        sigma=sigma)
    return formulate_reduced(pencil, n_components, regularization=regularization,
                             rank_tol=rank_tol)

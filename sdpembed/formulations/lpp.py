r"""Locality preserving projections (He & Niyogi, NIPS 2003) and their exact SDP.

With the k-nearest-neighbour affinity :math:`W`, degrees :math:`D` and
Laplacian :math:`L = D - W` over all points,

.. math::

    \min_{P^\top X^\top D X P = I_d} \operatorname{tr}(P^\top X^\top L X P)
    \qquad (X^\top L X\, a = \lambda\, X^\top D X\, a,\ \text{smallest } \lambda),

(He & Niyogi, eqs. 1-2 of section 3, written with samples as rows). The
paper applies PCA first so that :math:`X^\top D X` is nonsingular; here a
singular :math:`X^\top D X` raises unless ``regularization`` is given.
"""

from __future__ import annotations

import numpy as np

from ..graphs import check_data_matrix
from ..relaxations import Pencil, absolute_regularization, formulate
from ..scatter.discriminant import graph_laplacian, knn_affinity, laplacian_scatter
from ._base import Formulation

__all__ = ["lpp_pencil", "lpp_formulation"]


def lpp_pencil(X: np.ndarray, *, n_neighbors: int = 5, weights: str = "heat",
               sigma: float | None = None) -> Pencil:
    """Pencil ``(X'LX, X'DX, "min", "ratio_trace")`` of LPP."""
    W = knn_affinity(X, n_neighbors, weights=weights, sigma=sigma)
    L, deg = graph_laplacian(W)
    XDX = X.T @ (deg[:, None] * X)
    return Pencil(laplacian_scatter(X, L), 0.5 * (XDX + XDX.T), "min", "ratio_trace",
                  {"method": "lpp", "variant": weights, "equations": ("He & Niyogi 2003, sec. 3",)})


def lpp_formulation(X, n_components: int = 2, *, n_neighbors: int = 5, weights: str = "heat",
                    sigma: float | None = None, regularization: float = 0.0) -> Formulation:
    """Exact SDP of LPP (see module docstring); ``regularization`` is relative."""
    X = check_data_matrix(X)
    pencil = lpp_pencil(X, n_neighbors=n_neighbors, weights=weights, sigma=sigma)
    reg = absolute_regularization(pencil.B, regularization)
    return formulate(pencil, n_components, regularization=reg)

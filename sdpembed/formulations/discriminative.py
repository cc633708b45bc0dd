r"""Discriminative projections (Wang & Mahadevan) as a generalized eigenproblem and its exact SDP.

An instance map :math:`f \in \mathbb{R}^{p \times d}` and a label map
:math:`g \in \mathbb{R}^{c \times d}` send instances and labels to the same
space. With :math:`\gamma = (f; g)` and the matrices :math:`A, B, C` of
:func:`sdpembed.scatter.discriminant.discriminative_projection_matrices`
(Wang & Mahadevan a, sec. 2.4, Theorem 1),

.. math::

    \min_{\gamma^\top (B + C) \gamma = I_d} \operatorname{tr}(\gamma^\top (A + C) \gamma)
    \qquad ((A + C) x = \lambda (B + C) x,\ d \text{ smallest } \lambda),

where :math:`\operatorname{tr}\gamma^\top A\gamma` pulls every labelled
instance to its label, :math:`\operatorname{tr}\gamma^\top B\gamma` sums the
distances to all labels, and :math:`C` (weight :math:`\mu`) preserves the
neighbourhood graph of all points. Default :math:`\mu = l / s`, :math:`l`
labelled points, :math:`s` the sum of the affinity entries (sec. 4).

Continuous labels (sec. 3.3, Theorem 2): :math:`Z \hat L Z^\top x = \lambda Z \hat D Z^\top x`
(:func:`~sdpembed.scatter.discriminant.continuous_label_matrices`), default
:math:`\mu = 0.1\, l / s`.

Both are ``ratio_trace`` pencils, so their SDP in :math:`Z = \gamma\gamma^\top`
(:func:`sdpembed.relaxations.ratio_trace`) is exact. Since :math:`A \preceq B`,
:math:`\ker(B + C) \subseteq \ker(A + C)`; the rank-revealing step of
:func:`sdpembed.relaxations.reduce_pencil` restricts the pencil to the
numerical range of :math:`B + C`, removing the directions :math:`(f; 0)` with
:math:`Xf = 0` and :math:`(f; a\mathbf 1)` with :math:`Xf = a\mathbf 1` (every
instance and label mapped to one point) on which Theorem 1's pencil is
singular; every finite eigenpair is unchanged.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._labels import check_partial_labels
from .._params import NONNEGATIVE, POSITIVE_INT, declared
from .._sklearn import StrOptions
from .._typing import ArrayLike, MatrixLike
from ..exceptions import InputError, LabelError
from ..graphs import check_data_matrix
from ..relaxations import RANK_TOL, Pencil, formulate_reduced
from ..scatter.discriminant import (
    continuous_label_matrices,
    discriminative_projection_matrices,
    graph_laplacian,
    knn_affinity,
)
from ._base import Formulation
from .lpp import AFFINITY_PARAMETERS

__all__ = ["DISCRIMINATIVE_PARAMETERS", "LABEL_KINDS", "resolve_mu", "check_continuous_labels",
           "discriminative_pencil", "continuous_discriminative_pencil",
           "discriminative_projections_formulation"]

#: Accepted ``labels`` values.
LABEL_KINDS = ("discrete", "continuous")

#: declared constraints of the parameters of :func:`discriminative_projections_formulation`,
#: checked on every call and read by the estimator
#: :class:`~sdpembed.estimators.DiscriminativeProjections`
DISCRIMINATIVE_PARAMETERS = {
    "n_components": [POSITIVE_INT],
    "labels": [StrOptions(set(LABEL_KINDS))],
    "mu": [StrOptions({"auto"}), NONNEGATIVE],
    **AFFINITY_PARAMETERS,
}

#: The papers: "Wang & Mahadevan a" in the equation references, and its companion.
DISCRIMINATIVE_PAPER = ("Wang & Mahadevan, Learning Locality-Preserving Discriminative Features "
                        "(a); Jointly Learning Data-Dependent Label and Locality-Preserving "
                        "Projections (IJCAI 2011)")

#: Default :math:`\mu` relative to :math:`l/s` (Wang & Mahadevan a, sec. 4).
MU_FACTOR = {"discrete": 1.0, "continuous": 0.1}


def resolve_mu(mu: float | str, n_labeled: int, W: MatrixLike, labels: str = "discrete") -> float:
    """:math:`\\mu`: a number, or ``"auto"`` = ``MU_FACTOR[labels] * l / sum(W)``."""
    if isinstance(mu, str):
        if mu != "auto":
            raise InputError(f"mu must be 'auto' or a number >= 0; got {mu!r}")
        s = float(W.sum())
        return MU_FACTOR[labels] * n_labeled / s if s > 0 else 0.0
    if isinstance(mu, bool) or not isinstance(mu, numbers.Real) or not np.isfinite(mu) or mu < 0:
        raise InputError(f"mu must be 'auto' or a finite number >= 0; got {mu!r}")
    return float(mu)


def check_continuous_labels(y: ArrayLike, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """Real-valued labels ``(n, r)`` with NaN rows for unlabeled points -> ``(Y, labeled)``."""
    if y is None:
        raise LabelError("labels='continuous' needs real-valued labels y (NaN for unlabeled)")
    try:
        Y = np.asarray(y, dtype=float)
    except (TypeError, ValueError) as exc:
        raise LabelError(f"labels='continuous' needs numeric y: {exc}") from exc
    if Y.ndim == 1:
        Y = Y[:, None]
    if Y.ndim != 2 or Y.shape[0] != n_samples:
        raise LabelError(f"y must have shape ({n_samples},) or ({n_samples}, r); got {Y.shape}")
    nan = np.isnan(Y)
    if np.any(nan.any(axis=1) & ~nan.all(axis=1)):
        raise LabelError("a row of y is partly NaN; mark an unlabeled point by a row of NaN")
    labeled = ~nan.all(axis=1)
    if not np.all(np.isfinite(Y[labeled])):
        raise LabelError("y contains infinite values")
    if labeled.sum() < 2 or np.ptp(Y[labeled], axis=0).max() == 0:
        raise LabelError("labels='continuous' needs at least two labeled points with "
                         "different label values")
    return np.where(labeled[:, None], Y, 0.0), labeled


def discriminative_pencil(X: np.ndarray, y: np.ndarray, n_classes: int, *, mu: float | str = "auto",
                          n_neighbors: int = 5, weights: str = "heat",
                          sigma: float | None = None) -> Pencil:
    """Pencil ``(A + C, B + C, "min", "ratio_trace")`` of discriminative projections."""
    W = knn_affinity(X, n_neighbors, weights=weights, sigma=sigma)
    L, _ = graph_laplacian(W)
    mu = resolve_mu(mu, int((y >= 0).sum()), W, "discrete")
    A, B, C = discriminative_projection_matrices(X, y, n_classes, L, mu)
    return Pencil(A + C, B + C, "min", "ratio_trace",
                  {"method": "discriminative_projections", "variant": "discrete", "mu": mu,
                   "paper": DISCRIMINATIVE_PAPER,
                   "equations": ("Wang & Mahadevan a, sec. 2.4, Theorem 1",)})


def continuous_discriminative_pencil(X: np.ndarray, Y: np.ndarray, labeled: np.ndarray, *,
                                     mu: float | str = "auto", n_neighbors: int = 5,
                                     weights: str = "heat", sigma: float | None = None) -> Pencil:
    """Pencil ``(Z L^ Z', Z D^ Z', "min", "ratio_trace")`` of the continuous-label variant."""
    W = knn_affinity(X, n_neighbors, weights=weights, sigma=sigma)
    L, deg = graph_laplacian(W)
    mu = resolve_mu(mu, int(labeled.sum()), W, "continuous")
    ZLZ, ZDZ = continuous_label_matrices(X, Y, labeled, L, deg, mu)
    return Pencil(ZLZ, ZDZ, "min", "ratio_trace",
                  {"method": "discriminative_projections", "variant": "continuous", "mu": mu,
                   "paper": DISCRIMINATIVE_PAPER,
                   "equations": ("Wang & Mahadevan a, sec. 3.3, Theorem 2",)})


@declared(DISCRIMINATIVE_PARAMETERS)
def discriminative_projections_formulation(X: ArrayLike, y: ArrayLike, n_components: int = 2, *,
        labels: str = "discrete", mu: float | str = "auto", n_neighbors: int = 5,
        weights: str = "heat", sigma: float | None = None, regularization: float = 0.0,
        rank_tol: float = RANK_TOL) -> Formulation:
    """Exact SDP of discriminative projections after the rank-revealing step (module docstring).

    The variable ``"Z"`` is :math:`\\gamma\\gamma^\\top` in the reduced
    coordinates (``gamma = meta["reduction_basis"] @ Q``), of size :math:`p + c`
    (discrete) or :math:`p + r` (continuous) when nothing is removed;
    ``regularization`` is relative.
    """
    X = check_data_matrix(X)
    if labels == "discrete":
        y_int, classes, _ = check_partial_labels(y, X.shape[0])
        pencil = discriminative_pencil(X, y_int, classes.size, mu=mu, n_neighbors=n_neighbors,
                                       weights=weights, sigma=sigma)
    else:
        Y, labeled = check_continuous_labels(y, X.shape[0])
        pencil = continuous_discriminative_pencil(X, Y, labeled, mu=mu, n_neighbors=n_neighbors,
                                                  weights=weights, sigma=sigma)
    n_components = int(n_components)
    if not 1 <= n_components <= X.shape[1]:
        raise InputError(f"n_components must lie in [1, n_features={X.shape[1]}]")
    return formulate_reduced(pencil, n_components, regularization=regularization,
                             rank_tol=rank_tol)

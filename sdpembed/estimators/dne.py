"""Discriminant Neighborhood Embedding as a scikit-learn transformer."""

from __future__ import annotations

import logging
from numbers import Real
from typing import Any

import numpy as np

from .._labels import check_partial_labels
from .._params import constraints_of
from .._sklearn import Interval
from ..exceptions import InputError
from ..formulations.dne import DNE_EQUATIONS, DNE_PAPER, dne_formulation, dne_pencil
from ..relaxations import RANK_TOL, Pencil
from ..scatter.dne import energy_dimension
from ._projection import ProjectionEstimator

__all__ = ["DNE"]

logger = logging.getLogger(__name__)


class DNE(ProjectionEstimator):
    """Discriminant Neighborhood Embedding (Zhang, Xue, Lu & Guo, ICML 2006).

    Learns an orthonormal projection :math:`P` that pulls each labeled point
    towards its ``n_neighbors`` nearest same-class neighbours and pushes it from
    its ``n_neighbors`` nearest other-class neighbours:

    .. math::

       \\min_{P^TP = I}\\ \\mathrm{tr}\\big(P^T X(S-F)X^T P\\big)   \\quad (8)

    with the signed adjacency :math:`F` of eq. (1) (+1 intra-class, -1
    extra-class neighbour pairs, symmetrised by "or") and :math:`S =
    \\mathrm{diag}(F\\mathbf 1)` (operators in :mod:`sdpembed.scatter.dne`).
    The solution is spanned by eigenvectors of the smallest eigenvalues
    (eq. 9). Eigenvalue :math:`\\lambda_i` is half the criterion along
    :math:`P_i` (eq. 13): intra-class minus extra-class spread, so only
    negative eigenvalues help classification (eq. 10).

    **Rank-revealing step.** The Fantope problem is restricted to the
    numerical range of :math:`|X(S-F)X^T|` (orthonormal basis; unit-diagonal
    scaling, eigenvalues :math:`> \\text{rank\\_tol}`): the directions removed
    have criterion 0 along them, among them every :math:`v` with :math:`Xv`
    constant (constant or collinear features, :math:`p \\ge n`). The
    eigenvectors of nonzero eigenvalues, hence the energy rule and every
    negative direction, are unchanged; an explicit ``n_components`` above
    ``n_negative_`` then takes positive eigenvalues instead of directions
    along which the data do not vary.

    Parameters
    ----------
    n_components : int or None, default None
        Target dimension. ``None`` applies the paper's energy rule (eq. 14):
        the fewest leading negative eigenvalues whose magnitudes sum to
        ``energy`` times the total magnitude of all negative eigenvalues. An
        explicit value keeps that many smallest eigenvalues (possibly positive
        ones, which the paper would discard).
    n_neighbors : int, default 1
        k, intra- and extra-class neighbours per labeled point (the paper uses 1).
    energy : float in (0, 1], default 0.96
        :math:`\\theta` of eq. (14) (0.96 in the paper's experiments).
    method : {"eigen", "sdp"}, default "eigen"
        ``"eigen"``: ``scipy.linalg.eigh``. ``"sdp"``: the Fantope SDP
        :math:`\\min \\langle X(S-F)X^T, Y\\rangle` s.t. :math:`0 \\preceq Y
        \\preceq I,\\ \\mathrm{tr}\\,Y = d`, exact by Ky Fan
        (:mod:`sdpembed.formulations.dne`).
    solver : str, default "auto"
        Backend for ``method="sdp"``; ``"auto"`` lets
        :func:`sdpembed.solvers.choose_backend` pick one that fits and records why
        in ``solve_report_.selection``.
    solver_options : dict or None
        Backend options (name the backend to pass them).
    rank_tol : float, default 1e-8
        Threshold of the rank-revealing step (above).

    Attributes
    ----------
    components_ : ndarray, shape (``n_components_``, n_features)
        Orthonormal projection directions :math:`P^T`, smallest eigenvalue first.
        ``transform(X) = X @ components_.T`` (eq. 11; no centring is needed:
        the criterion is translation invariant).
    eigenvalues_ : ndarray, shape (n_features,)
        The whole spectrum of :math:`X(S-F)X^T` in ascending order (closed
        form, whatever ``method``), for the paper's spectrum plots (Figs. 4-6)
        and the energy rule. The first ``n_components_`` belong to
        ``components_``.
    component_eigenvalues_ : ndarray, shape (``n_components_``,)
        Eigenvalues of the kept directions as found by the chosen ``method``
        (Ritz values of the recovered subspace on the SDP path).
    n_negative_ : int
        Number of negative eigenvalues (the paper's d).
    objective_ : float
        :math:`\\min \\mathrm{tr}(P^TX(S-F)X^TP)`, the sum of the kept
        eigenvalues (half of :math:`\\Phi(P)` in eq. 6).
    adjacency_ : scipy.sparse.csr_matrix, shape (n_samples, n_samples)
        The signed adjacency :math:`F` of the training points.
    classes_ : ndarray
        Original class labels.
    n_components_, pencil_kind_, solve_report_, formulation_, rank_gap_
        See :class:`~sdpembed.estimators.ProjectionEstimator`.

    Raises
    ------
    LabelError
        Fewer than two labeled classes, a class with a single labeled sample,
        non-numeric labels (encode them; -1 marks unlabeled points).
    InputError
        ``n_components`` above ``n_features``; ``n_neighbors`` not below the
        smallest class; no negative eigenvalue with ``n_components=None``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> dne = DNE().fit(X, y)
    >>> dne.n_components_ <= dne.n_negative_
    True
    """

    _parameter_constraints: dict = {
        **ProjectionEstimator._parameter_constraints,
        **constraints_of(dne_formulation, "n_neighbors", "rank_tol"),
        "energy": [Interval(Real, 0, 1, closed="right")],
    }

    def __init__(self, *, n_components: int | None = None, n_neighbors: int = 1,
                 energy: float = 0.96, method: str = "eigen", solver: str = "auto",
                 solver_options: dict[str, Any] | None = None, rank_tol: float = RANK_TOL) -> None:
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.energy = energy
        self.method = method
        self.solver = solver
        self.solver_options = solver_options
        self.rank_tol = rank_tol

    def _pencil(self, X: np.ndarray, y) -> Pencil:
        y_int, self.classes_, _ = check_partial_labels(y, X.shape[0])
        pencil = dne_pencil(X, y_int, n_neighbors=self.n_neighbors)
        self.adjacency_ = pencil.meta["adjacency"]
        self.eigenvalues_ = np.linalg.eigvalsh(pencil.A)
        self.n_negative_ = int(np.sum(self.eigenvalues_ < 0))
        return pencil

    def _default_n_components(self, pencil: Pencil, X: np.ndarray) -> int:
        t = energy_dimension(self.eigenvalues_, self.energy)
        if t == 0:
            raise InputError(
                "X(S-F)X^T has no negative eigenvalue: no direction brings same-class "
                "neighbours closer than other-class ones (Zhang et al., Fig. 1d), so the energy "
                "rule selects nothing. Pass n_components explicitly or change n_neighbors.")
        logger.info("DNE: %d negative eigenvalues, energy %.3g keeps %d", self.n_negative_,
                    self.energy, t)
        return t

    def _max_n_components(self, pencil: Pencil, X: np.ndarray) -> tuple[int, str]:
        return pencil.A.shape[0], "n_features"

    def _set_components(self, vectors: np.ndarray, values: np.ndarray) -> None:
        self.components_ = np.ascontiguousarray(vectors.T)
        self.component_eigenvalues_ = np.asarray(values, dtype=float)

    def _formulation_meta(self) -> dict:
        return {"method": "dne", "variant": "fantope", "equations": DNE_EQUATIONS,
                "paper": DNE_PAPER}

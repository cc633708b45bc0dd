"""Discriminant Neighborhood Embedding (Zhang et al., ICML 2006) as an exact Fantope SDP.

DNE minimises :math:`\\mathrm{tr}(P^T X(S-F)X^T P)` over orthonormal
:math:`P \\in \\mathbb R^{p\\times d}` (eqs. 6-8; operators in
:mod:`sdpembed.scatter.dne`). With :math:`Y = PP^T` this is

.. math::

   \\min_{Y\\in\\mathbb S^p}\\ \\langle X(S-F)X^T,\\ Y\\rangle
   \\quad\\text{s.t.}\\quad 0 \\preceq Y \\preceq I,\\ \\mathrm{tr}\\,Y = d,

exact by Ky Fan's theorem: the optimum is the sum of the d smallest
eigenvalues of the (indefinite) matrix :math:`X(S-F)X^T`, which is eq. (9);
the paper's eq. (10) is the special case d = number of negative eigenvalues.
:func:`dne_formulation` first restricts the problem to the numerical range of
:math:`|X(S-F)X^T|` (:func:`sdpembed.relaxations.reduce_pencil`, orthonormal
basis): the directions removed have criterion 0 (e.g. :math:`Xv` constant),
every eigenvector of nonzero eigenvalue is kept.
"""

from __future__ import annotations

import numpy as np

from .._params import POSITIVE_INT, RANK_TOL_RANGE, declared
from .._typing import ArrayLike
from ..relaxations import RANK_TOL, Pencil, formulate_reduced
from ..scatter.dne import discriminant_adjacency, dne_matrix
from ._base import Formulation

__all__ = ["dne_pencil", "dne_formulation", "DNE_EQUATIONS", "DNE_PAPER", "DNE_PARAMETERS"]

#: declared constraints of the parameters of :func:`dne_formulation`, checked on every call
#: and read by the estimator :class:`~sdpembed.estimators.DNE`
DNE_PARAMETERS = {"n_components": [POSITIVE_INT], "n_neighbors": [POSITIVE_INT],
                  "rank_tol": [RANK_TOL_RANGE]}

#: Paper equations the DNE formulation implements.
DNE_EQUATIONS = ("1", "5", "6", "8", "9", "10")
DNE_PAPER = ("Zhang, Xue, Sun, Guo & Lu, Optimal Dimensionality of Metric Space for "
             "Classification (ICML 2007)")


def dne_pencil(X: ArrayLike, y: ArrayLike, *, n_neighbors: int = 1) -> Pencil:
    """DNE's eigenproblem as a :class:`~sdpembed.relaxations.Pencil` (kind ``"trace"``, min).

    Parameters
    ----------
    X : ndarray, shape (n, p)
        Samples as rows.
    y : ndarray of int, shape (n,)
        Class indices, ``-1`` for unlabeled points (ignored by DNE).
    n_neighbors : int
        k of eq. (1).

    Returns
    -------
    Pencil
        ``A`` = :math:`X(S-F)X^T`; ``meta["adjacency"]`` holds :math:`F`.
    """
    X = np.asarray(X, dtype=float)
    F = discriminant_adjacency(X, y, n_neighbors=n_neighbors)
    A = dne_matrix(X, F)
    return Pencil(A, None, "min", "trace", {"adjacency": F, "n_neighbors": int(n_neighbors)})


@declared(DNE_PARAMETERS)
def dne_formulation(X: ArrayLike, y: ArrayLike, n_components: int, *, n_neighbors: int = 1,
                    rank_tol: float = RANK_TOL) -> Formulation:
    """Build DNE's Fantope SDP (see the module docstring).

    Parameters
    ----------
    X : ndarray, shape (n, p)
    y : ndarray of int, shape (n,)
        Class indices, ``-1`` unlabeled.
    n_components : int
        d, the rank of the projector.
    n_neighbors : int
        k of eq. (1).
    rank_tol : float
        Threshold of the rank-revealing step.

    Returns
    -------
    Formulation
        Variable ``"Y"`` (r x r, r the numerical rank of the cost); recover
        :math:`P` as ``meta["reduction_basis"] @ recover_basis(Y, d)``
        (:func:`sdpembed.relaxations.recover_basis`). ``meta["A"]`` is the
        full cost matrix :math:`X(S-F)X^T`.
    """
    pencil = dne_pencil(X, y, n_neighbors=n_neighbors)
    return formulate_reduced(pencil, n_components, rank_tol=rank_tol, meta={
        "method": "dne", "variant": "fantope", "equations": DNE_EQUATIONS, "paper": DNE_PAPER,
        "A": pencil.A})

r"""Linear discriminant analysis as a generalized eigenproblem and its exact SDP.

Fisher's criterion with labelled points only (``y == -1`` ignored):

.. math::

    \max_{P^\top S_w P = I_d} \operatorname{tr}(P^\top S_b P)
    \qquad (\text{ratio trace: } S_b p = \lambda S_w p),

or, with ``criterion="trace_ratio"``,
:math:`\max_{P^\top P = I} \operatorname{tr}(P^\top S_b P) / \operatorname{tr}(P^\top S_w P)`
(Wang et al., CVPR 2007). :math:`S_b` has rank at most :math:`c - 1`, so at
most :math:`c - 1` directions carry discriminant information. scikit-learn's
``LinearDiscriminantAnalysis(solver="eigen")`` solves the same pencil with
both matrices divided by :math:`n`, hence spans the same subspace.

:func:`lda_formulation` takes the rank-revealing step of
:func:`sdpembed.relaxations.reduce_pencil` first (restriction to the numerical
range of :math:`S_w`, the subspace of scikit-learn's ``svd`` solver), so it
works on singular scatter matrices (constant or collinear features, more
features than labelled points).
"""

from __future__ import annotations

import numpy as np

from .._labels import check_partial_labels
from .._params import NONNEGATIVE, POSITIVE_INT, RANK_TOL_RANGE, declared
from .._sklearn import StrOptions
from .._typing import ArrayLike
from ..exceptions import InputError
from ..graphs import check_data_matrix
from ..relaxations import RANK_TOL, Pencil, formulate_reduced
from ..scatter.discriminant import between_class_scatter, within_class_scatter
from ._base import Formulation

__all__ = ["CRITERIA", "LDA_PARAMETERS", "lda_pencil", "lda_formulation"]

#: Accepted ``criterion`` values.
CRITERIA = ("ratio_trace", "trace_ratio")

#: declared constraints of the parameters of :func:`lda_formulation`, checked on every call
#: and read by the estimator :class:`~sdpembed.estimators.LDA`
LDA_PARAMETERS = {
    "n_components": [POSITIVE_INT, None],
    "criterion": [StrOptions(set(CRITERIA))],
    "regularization": [NONNEGATIVE],
    "rank_tol": [RANK_TOL_RANGE],
}


@declared({"criterion": LDA_PARAMETERS["criterion"]})
def lda_pencil(X: np.ndarray, y: np.ndarray, n_classes: int, *,
               criterion: str = "ratio_trace") -> Pencil:
    """Pencil ``(S_b, S_w, "max", criterion)`` from validated ``X`` and class indices ``y``."""
    Sb = between_class_scatter(X, y, n_classes)
    Sw = within_class_scatter(X, y, n_classes)
    return Pencil(Sb, Sw, "max", criterion,
                  {"method": "lda", "variant": criterion,
                   "equations": ("Fisher 1936", "Wang et al. 2007 (trace ratio)")})


@declared(LDA_PARAMETERS)
def lda_formulation(X: ArrayLike, y: ArrayLike, n_components: int | None = None, *,
                    criterion: str = "ratio_trace", regularization: float = 0.0,
                    rank_tol: float = RANK_TOL) -> Formulation:
    """Exact SDP of LDA after the rank-revealing step (see module docstring).

    Parameters
    ----------
    X : array-like, shape (n, p)
    y : array-like, shape (n,)
        Class labels, ``-1`` for unlabeled points (ignored).
    n_components : int, optional
        Default ``min(c - 1, p)``.
    criterion : {"ratio_trace", "trace_ratio"}
    regularization : float
        Relative ridge on :math:`S_w` (:func:`~sdpembed.relaxations.absolute_regularization`).
    rank_tol : float
        Threshold of the rank-revealing step.

    Returns
    -------
    Formulation
        In the reduced coordinates: ``P = meta["reduction_basis"] @ Q``
        (:func:`sdpembed.relaxations.formulate_reduced`).
    """
    X = check_data_matrix(X)
    y_int, classes, _ = check_partial_labels(y, X.shape[0])
    pencil = lda_pencil(X, y_int, classes.size, criterion=criterion)
    limit = min(classes.size - 1, X.shape[1])
    d = limit if n_components is None else int(n_components)
    if not 1 <= d <= limit:
        raise InputError(f"n_components={d} must lie in [1, {limit}] (LDA gives at most "
                         "n_classes - 1 directions)")
    return formulate_reduced(pencil, d, regularization=regularization, rank_tol=rank_tol)

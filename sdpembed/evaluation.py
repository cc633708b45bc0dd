"""Evaluation of embeddings: transductive accuracy and neighbourhood curves.

Transductive accuracy trains a classifier on the labeled rows of an embedding
and scores it on the unlabeled rows of the same embedding (the protocol of
the DVU, TCA and DNE papers):

* :func:`transductive_knn_accuracy` -- k-nearest-neighbour vote (3-NN in DVU
  Table 1, 1-NN in TCA Tables 3-4);
* :func:`transductive_svm_accuracy` -- linear multiclass SVM of Crammer &
  Singer (DVU Table 1, "M-SVM");
* :func:`oracle_linear_knn` -- the 1-NN error that a linear map chosen with
  *every* label reaches (a reference for the projection methods' tables).

The neighbourhood curves of Wang & Mahadevan (section 5) look at the K
nearest neighbours of every point, K = 1..max_k, leaving the point itself out:

* :func:`loo_same_class_curve` -- fraction of points with at least one
  same-class point among their K nearest neighbours (how much discriminative
  information an embedding keeps);
* :func:`topology_preservation_curve` -- fraction of points whose nearest
  neighbour in the original space is among their K nearest neighbours in the
  embedding (how much of the manifold topology it keeps).
"""

from __future__ import annotations

import logging
import numbers
from dataclasses import dataclass, field

import numpy as np
from sklearn.neighbors import KNeighborsClassifier, NearestNeighbors
from sklearn.svm import LinearSVC

from ._typing import ArrayLike, RandomStateLike
from .datasets import _integer_labels
from .exceptions import InputError, LabelError
from .graphs import check_data_matrix

__all__ = [
    "transductive_knn_accuracy",
    "transductive_svm_accuracy",
    "OracleReference",
    "oracle_linear_knn",
    "loo_same_class_curve",
    "topology_preservation_curve",
    "neighbourhood_metrics",
]

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------- validation


def _check_labels(y, n: int, *, name: str = "y_true") -> np.ndarray:
    """Complete integer labels of length ``n`` (no ``-1``)."""
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise LabelError(f"{name} must be 1-D with one label per row ({n}); got shape {y.shape}")
    y = _integer_labels(y, name, kinds="iub")
    if np.any(y < 0):
        raise LabelError(
            f"{name} must hold the true label of every row (no -1); mark the training rows "
            "with labeled_mask instead")
    return y


def _check_mask(mask, n: int) -> np.ndarray:
    mask = np.asarray(mask)
    if mask.dtype != bool or mask.shape != (n,):
        raise InputError(
            f"labeled_mask must be a boolean array of shape ({n},), e.g. y_partial != -1; got "
            f"dtype {mask.dtype} and shape {mask.shape}")
    n_labeled = int(mask.sum())
    if n_labeled == 0 or n_labeled == n:
        raise InputError(
            f"labeled_mask must mark at least one labeled and one unlabeled row; it marks "
            f"{n_labeled} of {n} as labeled")
    return mask


def _check_embedding(embedding, *, metric: str, name: str = "embedding") -> np.ndarray:
    X = check_data_matrix(embedding, name=name)
    if metric == "precomputed":
        if X.shape[0] != X.shape[1] or np.any(X < 0):
            raise InputError(
                f"with metric='precomputed', {name} must be a square matrix of non-negative "
                f"distances; got shape {X.shape}")
    return X


def _check_max_k(max_k, n: int) -> int:
    if isinstance(max_k, bool) or not isinstance(max_k, numbers.Integral) or max_k < 1:
        raise InputError(f"max_k must be an integer >= 1; got {max_k!r}")
    if max_k > n - 1:
        raise InputError(
            f"max_k={max_k} needs at least {max_k + 1} points (each point's own row is left "
            f"out); got {n}")
    return int(max_k)


def _check_transductive(embedding, y_true, labeled_mask, metric: str):
    X = _check_embedding(embedding, metric=metric)
    y = _check_labels(y_true, X.shape[0])
    mask = _check_mask(labeled_mask, X.shape[0])
    return X, y, mask


# --------------------------------------------------------------------------- accuracy


def transductive_knn_accuracy(embedding: ArrayLike, y_true: ArrayLike, labeled_mask: ArrayLike,
                              n_neighbors: int = 3, *, metric: str = "euclidean") -> float:
    """k-NN accuracy on the unlabeled rows, with the labeled rows as training set.

    Each unlabeled row :math:`i` is assigned the majority label among its
    ``n_neighbors`` nearest labeled rows (ties go to the smallest label, as
    in scikit-learn's :class:`~sklearn.neighbors.KNeighborsClassifier`); the
    score is the fraction of unlabeled rows whose prediction equals
    ``y_true``.

    Parameters
    ----------
    embedding : array-like of shape (n, d), or (n, n) distances
        Coordinates of all points (labeled and unlabeled), or with
        ``metric="precomputed"`` a matrix of pairwise distances (e.g. tangent
        distances, DVU Table 1, last column).
    y_true : array-like of int, shape (n,)
        True label of every row (the unlabeled rows' labels are only used for
        scoring).
    labeled_mask : array-like of bool, shape (n,)
        True for the rows whose label the classifier may see.
    n_neighbors : int, default=3
        At most the number of labeled rows.
    metric : str, default="euclidean"
        Any metric of :class:`~sklearn.neighbors.KNeighborsClassifier`, or
        ``"precomputed"``.

    Returns
    -------
    float
        Accuracy in [0, 1].

    Raises
    ------
    InputError
        Bad shapes, NaN, a mask with no labeled or no unlabeled row,
        ``n_neighbors`` out of range.
    LabelError
        ``y_true`` is not a complete integer labelling.
    """
    X, y, mask = _check_transductive(embedding, y_true, labeled_mask, metric)
    n_labeled = int(mask.sum())
    if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, numbers.Integral) \
            or not 1 <= n_neighbors <= n_labeled:
        raise InputError(
            f"n_neighbors must be an integer in [1, {n_labeled}] (the number of labeled "
            f"rows); got {n_neighbors!r}")
    clf = KNeighborsClassifier(n_neighbors=int(n_neighbors), metric=metric)
    if metric == "precomputed":
        clf.fit(X[np.ix_(mask, mask)], y[mask])
        pred = clf.predict(X[np.ix_(~mask, mask)])
    else:
        clf.fit(X[mask], y[mask])
        pred = clf.predict(X[~mask])
    return float(np.mean(pred == y[~mask]))


def transductive_svm_accuracy(embedding: ArrayLike, y_true: ArrayLike, labeled_mask: ArrayLike,
                              C: float = 1.0, *, fit_intercept: bool = True, max_iter: int = 10_000,
                              tol: float = 1e-4, random_state: RandomStateLike = 0) -> float:
    """Linear multiclass SVM accuracy on the unlabeled rows (Crammer & Singer).

    Trains scikit-learn's ``LinearSVC(multi_class="crammer_singer")`` on the
    labeled rows :math:`\\mathcal{L}`, i.e. solves (Crammer & Singer 2001, the
    "M-SVM" of DVU Table 1)

    .. math::

        \\min_{W, \\xi}\\ \\tfrac12 \\|W\\|_F^2 + C \\sum_{i \\in \\mathcal{L}} \\xi_i
        \\quad \\text{s.t.}\\quad
        w_{y_i}^\\top x_i - w_r^\\top x_i \\ge 1 - \\delta_{y_i r} - \\xi_i
        \\quad \\forall i \\in \\mathcal{L},\\ r,

    predicts :math:`\\arg\\max_r w_r^\\top x` on the unlabeled rows, and
    returns the fraction predicted correctly. With ``fit_intercept=True`` a
    constant feature is appended (liblinear's regularised intercept).

    Parameters
    ----------
    embedding : array-like of shape (n, d)
        Coordinates of all points; the DVU paper uses the top 10 components.
    y_true : array-like of int, shape (n,)
        True label of every row.
    labeled_mask : array-like of bool, shape (n,)
        True for the training rows.
    C : float, default=1.0
        Slack weight, > 0.
    fit_intercept : bool, default=True
        Append a constant feature.
    max_iter, tol : int, float
        liblinear's iteration limit and stopping tolerance.
    random_state : int, RandomState instance or None, default=0
        Order of liblinear's coordinate descent.

    Returns
    -------
    float
        Accuracy in [0, 1].

    Raises
    ------
    InputError
        Bad shapes, NaN, an empty side of the mask, ``C <= 0``.
    LabelError
        Incomplete labels, or fewer than two classes among the labeled rows.
    """
    X, y, mask = _check_transductive(embedding, y_true, labeled_mask, "euclidean")
    if isinstance(C, bool) or not isinstance(C, numbers.Real) or not np.isfinite(C) or C <= 0:
        raise InputError(f"C must be a finite number > 0; got {C!r}")
    if np.unique(y[mask]).size < 2:
        raise LabelError("the labeled rows must hold at least two classes to train an SVM")
    clf = LinearSVC(C=float(C), multi_class="crammer_singer", fit_intercept=fit_intercept,
                    max_iter=max_iter, tol=tol, random_state=random_state)
    clf.fit(X[mask], y[mask])
    return float(np.mean(clf.predict(X[~mask]) == y[~mask]))


# --------------------------------------------------------------------------- oracle


@dataclass(frozen=True)
class OracleReference:
    """Result of :func:`oracle_linear_knn`.

    Attributes
    ----------
    error : float
        Smallest 1-NN error (fraction of unlabeled rows) over the maps tried.
    best : str
        Name of the map that reached it.
    errors : dict
        Error of every map tried, by name.
    components : ndarray, shape (r, d)
        The best map :math:`A` (the embedding is ``X @ components.T``).
    """

    error: float
    best: str
    errors: dict = field(default_factory=dict)
    components: np.ndarray | None = None


def _all_label_lda(X: np.ndarray, y: np.ndarray, ridge: float) -> np.ndarray:
    r"""Fisher's directions fitted with every label: the top :math:`c - 1` generalized
    eigenvectors of :math:`(S_b, S_w + \rho I)`, :math:`\rho` = ``ridge`` times the mean
    eigenvalue of :math:`S_w` (one-hot features make :math:`S_w` singular)."""
    import scipy.linalg as sla

    classes = np.unique(y)
    mu = X.mean(axis=0)
    Sw = np.zeros((X.shape[1], X.shape[1]))
    Sb = np.zeros_like(Sw)
    for c in classes:
        Xc = X[y == c]
        m = Xc.mean(axis=0)
        Sw += (Xc - m).T @ (Xc - m)
        Sb += Xc.shape[0] * np.outer(m - mu, m - mu)
    Sw += ridge * max(np.trace(Sw) / Sw.shape[0], np.finfo(float).tiny) * np.eye(Sw.shape[0])
    _, V = sla.eigh(Sb, Sw)
    return V[:, ::-1][:, :max(classes.size - 1, 1)].T


def _soft_nn_loss(a: np.ndarray, shape: tuple, U: np.ndarray, L: np.ndarray,
                  same: np.ndarray) -> tuple[float, np.ndarray]:
    r"""Soft 1-NN cross-entropy of the unlabeled rows against the labeled ones, and its gradient.

    :math:`f(A) = -\sum_u \log \frac{\sum_{l:\,y_l = y_u} e^{-d_{ul}}}{\sum_l e^{-d_{ul}}}`,
    :math:`d_{ul} = \lVert A(x_u - x_l)\rVert^2`; with
    :math:`G_{ul} = \partial f / \partial d_{ul} = q_{ul} - p_{ul}` (:math:`p`, :math:`q` the
    softmax over all and over same-class labeled rows),
    :math:`\nabla_A f = 2A\sum_{ul} G_{ul}(x_u - x_l)(x_u - x_l)^T`, formed as
    :math:`2A\,(U^T\mathrm{diag}(G\mathbf 1)U + L^T\mathrm{diag}(G^T\mathbf 1)L - U^TGL - L^TG^TU)`.
    """
    A = a.reshape(shape)
    PU, PL = U @ A.T, L @ A.T
    d = (PU**2).sum(1)[:, None] + (PL**2).sum(1)[None, :] - 2.0 * PU @ PL.T
    # both softmaxes shifted by their own row minimum (every row has a same-class labeled row)
    d_all = d - d.min(axis=1, keepdims=True)
    d_same = np.where(same, d, np.inf)
    shift = d_same.min(axis=1, keepdims=True)
    e_all, e_same = np.exp(-d_all), np.exp(-(d_same - shift))
    z, s = e_all.sum(axis=1, keepdims=True), e_same.sum(axis=1, keepdims=True)
    log_z = np.log(z) - d.min(axis=1, keepdims=True)
    log_s = np.log(s) - shift
    G = e_same / s - e_all / z
    UGL = U.T @ G @ L
    H = (U.T * G.sum(1)) @ U + (L.T * G.sum(0)) @ L - UGL - UGL.T
    return float(np.sum(log_z - log_s)), (2.0 * A @ H).ravel()


def oracle_linear_knn(X: ArrayLike, y_true: ArrayLike, labeled_mask: ArrayLike, *,
                      search: bool = True, scales: tuple = (1.0, 5.0, 20.0),
                      max_iter: int = 200, ridge: float = 1e-4) -> OracleReference:
    r"""1-NN error reached by a linear map chosen with every label: an *oracle reference*.

    The projection methods of the TCA paper (and any linear projection
    followed by 1-NN from the labeled rows) classify unlabeled row :math:`u`
    by its nearest labeled row under :math:`d_A(x, x') = \lVert A(x - x')\rVert`
    for one matrix :math:`A`. This function *uses the labels of every row*
    to choose :math:`A` among

    * ``"identity"``: :math:`A = I` (1-NN on the input features);
    * ``"lda"``: Fisher's :math:`c - 1` directions fitted with every label
      (:math:`S_w` with a relative ridge ``ridge``);
    * with ``search``: ``"search(<start>, <scale>)"``, a local minimiser (L-BFGS,
      ``max_iter`` iterations) of the soft 1-NN cross-entropy of the unlabeled
      rows against the labeled rows (:func:`_soft_nn_loss`; the NCA objective
      of Goldberger et al. with the labeled rows as the only neighbours),
      started from ``identity`` and from ``lda``, each rescaled so that the
      median distance of an unlabeled row to its nearest labeled row is each
      of ``scales`` (the searches stop once a map makes no error);

    and returns the smallest 1-NN error among them (hard 1-NN, scikit-learn's
    tie-breaking).

    What it is, precisely: for this split the returned error is *achieved*
    by a linear map, so the best linear projection + 1-NN errs at most this
    much; it is an **upper** bound on that optimum, not a lower bound. A
    method that sees only the labeled rows' labels can hardly be expected to
    beat it by much, which is what makes it a useful reference, but a table
    value below it is not proved impossible: the optimum over all :math:`A`
    is a combinatorial problem (a row is right iff, for some same-class
    labeled row, a set of inequalities linear in :math:`M = A^TA` holds) that
    the local search may not solve. The simplest certificate that a row is
    wrong for *every* :math:`A` is, for each same-class labeled row
    :math:`x_l`, an other-class labeled row :math:`x_m = x_u + t(x_l - x_u)`
    with :math:`0 \le t \le 1` (then :math:`d_A(x_u, x_m) = t\,d_A(x_u, x_l)`
    for every :math:`A`: at best a tie); the 5 %-label splits of the UCI sets
    essentially never offer one, so single rows give no useful rigorous lower
    bound. Nor is ``"lda"`` alone a lower bound: a map fitted with all labels
    for another criterion (Fisher's) is often far from the best map for 1-NN.

    The set of linear maps does not depend on feature scaling (a diagonal
    scaling is absorbed into :math:`A`), so in exact arithmetic neither does
    the optimum; the search's starting points do.

    Parameters
    ----------
    X : array-like of shape (n, d)
        The input features (after the table's preprocessing).
    y_true : array-like of int, shape (n,)
        True label of every row (all of them are used).
    labeled_mask : array-like of bool, shape (n,)
        The labeled rows: the 1-NN training set.
    search : bool, default=True
        Also run the local searches (``False``: identity and LDA only).
    scales : tuple of float, default (1, 5, 20)
        Softness of the searches' starting points.
    max_iter : int, default=200
        L-BFGS iterations per search.
    ridge : float, default=1e-4
        Relative ridge of LDA's within-class scatter.

    Returns
    -------
    OracleReference
    """
    from scipy.optimize import minimize

    X, y, mask = _check_transductive(X, y_true, labeled_mask, "euclidean")
    if np.unique(y[mask]).size < 2:
        raise LabelError("the labeled rows must hold at least two classes")
    Xc = X - X.mean(axis=0)
    U, L = Xc[~mask], Xc[mask]
    clf = KNeighborsClassifier(n_neighbors=1)

    def error(A: np.ndarray) -> float:
        pred = clf.fit(L @ A.T, y[mask]).predict(U @ A.T)
        return float(np.mean(pred != y[~mask]))

    maps = {"identity": np.eye(X.shape[1]), "lda": _all_label_lda(Xc, y, ridge)}
    errors = {name: error(A) for name, A in maps.items()}
    if search and min(errors.values()) > 0:  # nothing beats an error of 0
        same = y[~mask][:, None] == y[mask][None, :]
        for start in ("identity", "lda"):
            A0 = maps[start]
            dist = np.sqrt(np.maximum(
                ((U @ A0.T)**2).sum(1)[:, None] + ((L @ A0.T)**2).sum(1)[None, :]
                - 2.0 * (U @ A0.T) @ (L @ A0.T).T, 0.0))
            rho = float(np.median(dist.min(axis=1)))
            rho = rho if rho > 0 else 1.0
            for s in scales:
                res = minimize(_soft_nn_loss, (A0 * (s / rho)).ravel(), jac=True,
                               method="L-BFGS-B", args=(A0.shape, U, L, same),
                               options={"maxiter": max_iter})
                name = f"search({start}, {s:g})"
                maps[name] = res.x.reshape(A0.shape)
                errors[name] = error(maps[name])
                if errors[name] == 0:
                    break
            if min(errors.values()) == 0:
                break
    best = min(errors, key=errors.get)
    return OracleReference(errors[best], best, errors, maps[best])


# --------------------------------------------------------------------------- curves


def _neighbours(X: np.ndarray, k: int, metric: str) -> np.ndarray:
    """Indices of the ``k`` nearest other points of every point, nearest first."""
    nn = NearestNeighbors(n_neighbors=k, metric=metric).fit(X)
    return nn.kneighbors(return_distance=False)  # X=None: each point's own row is left out


def loo_same_class_curve(X: ArrayLike, y: ArrayLike, max_k: int = 10, *,
                         metric: str = "euclidean") -> np.ndarray:
    """Leave-one-out curve: fraction of points with a same-class point among K nearest.

    For :math:`K = 1, \\dots, \\text{max\\_k}`,

    .. math::

        c_K = \\frac1n \\sum_{i=1}^n \\mathbb 1\\bigl[\\exists\\, j \\in N_K(i):\\ y_j = y_i\\bigr],

    where :math:`N_K(i)` are the K nearest neighbours of :math:`x_i` among the
    other points (Wang & Mahadevan, section 5, Figures 3 and 7). :math:`c_1` is
    the leave-one-out 1-NN accuracy and :math:`c_K` is non-decreasing in K.
    Distance ties are broken by scikit-learn's neighbour search.

    Parameters
    ----------
    X : array-like of shape (n, d), or (n, n) distances
        The embedding (or the original data), or pairwise distances with
        ``metric="precomputed"``.
    y : array-like of int, shape (n,)
        Complete labels.
    max_k : int, default=10
        Largest K; at most ``n - 1``.
    metric : str, default="euclidean"
        Any metric of :class:`~sklearn.neighbors.NearestNeighbors`.

    Returns
    -------
    ndarray of shape (max_k,)
        ``curve[K - 1]`` is :math:`c_K`.
    """
    X = _check_embedding(X, metric=metric, name="X")
    y = _check_labels(y, X.shape[0], name="y")
    max_k = _check_max_k(max_k, X.shape[0])
    idx = _neighbours(X, max_k, metric)
    hit = np.logical_or.accumulate(y[idx] == y[:, None], axis=1)
    return hit.mean(axis=0)


def topology_preservation_curve(X_original: ArrayLike, X_embedded: ArrayLike, max_k: int = 10, *,
                                metric: str = "euclidean") -> np.ndarray:
    """Fraction of points whose original nearest neighbour is among their K nearest after embedding.

    For :math:`K = 1, \\dots, \\text{max\\_k}`,

    .. math::

        t_K = \\frac1n \\sum_{i=1}^n \\mathbb 1\\bigl[\\nu(i) \\in N^{Y}_K(i)\\bigr],

    where :math:`\\nu(i)` is the nearest other point of :math:`x_i` in the
    original space and :math:`N^{Y}_K(i)` are the K nearest other points of
    :math:`y_i` in the embedding (Wang & Mahadevan, section 5, Figure 6).
    :math:`t_K` is non-decreasing in K; an isometry gives :math:`t_K = 1`.
    Distance ties are broken by scikit-learn's neighbour search.

    Parameters
    ----------
    X_original : array-like of shape (n, p)
        Data in the original space.
    X_embedded : array-like of shape (n, d)
        The same points, embedded.
    max_k : int, default=10
        Largest K; at most ``n - 1``.
    metric : str, default="euclidean"
        Metric used in both spaces.

    Returns
    -------
    ndarray of shape (max_k,)
        ``curve[K - 1]`` is :math:`t_K`.
    """
    if metric == "precomputed":
        raise InputError("topology_preservation_curve needs coordinates in both spaces")
    A = check_data_matrix(X_original, name="X_original")
    B = check_data_matrix(X_embedded, name="X_embedded")
    if A.shape[0] != B.shape[0]:
        raise InputError(
            f"X_original and X_embedded must have the same rows; got {A.shape[0]} and "
            f"{B.shape[0]}")
    max_k = _check_max_k(max_k, A.shape[0])
    nearest = _neighbours(A, 1, metric)[:, 0]
    idx = _neighbours(B, max_k, metric)
    hit = np.logical_or.accumulate(idx == nearest[:, None], axis=1)
    return hit.mean(axis=0)


def neighbourhood_metrics(X_original: ArrayLike, X_embedded: ArrayLike, y: ArrayLike | None = None,
                          max_k: int = 10) -> dict:
    """Both neighbourhood curves and scikit-learn's trustworthiness, in one dict.

    Parameters
    ----------
    X_original : array-like of shape (n, p)
    X_embedded : array-like of shape (n, d)
    y : array-like of int, shape (n,), optional
        Complete labels; enables the same-class curves.
    max_k : int, default=10

    Returns
    -------
    dict
        ``"k"`` (1..max_k), ``"topology"`` (:func:`topology_preservation_curve`),
        ``"trustworthiness"`` (:func:`sklearn.manifold.trustworthiness` with
        ``n_neighbors=max_k``, when ``max_k < n / 2``) and, with ``y``,
        ``"same_class_original"`` and ``"same_class_embedded"``
        (:func:`loo_same_class_curve` in both spaces).
    """
    from sklearn.manifold import trustworthiness

    out = {"k": np.arange(1, max_k + 1),
           "topology": topology_preservation_curve(X_original, X_embedded, max_k)}
    A, B = np.asarray(X_original, dtype=float), np.asarray(X_embedded, dtype=float)
    if max_k < A.shape[0] / 2:
        out["trustworthiness"] = float(trustworthiness(A, B, n_neighbors=max_k))
    if y is not None:
        out["same_class_original"] = loo_same_class_curve(A, y, max_k)
        out["same_class_embedded"] = loo_same_class_curve(B, y, max_k)
    return out

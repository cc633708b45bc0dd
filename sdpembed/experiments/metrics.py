"""Metric kinds: each described once -- options, what it applies to, its words, its computation.

A spec's ``[metrics.<name>]`` table names a ``kind`` of :data:`METRIC_KINDS`
and sets that kind's options. Every metric trains on the labeled rows and
scores the others (transductive protocol), in the embedding of all rows;
values are fractions in the tables and percentages in the summary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .._checks import Boolean, Integer, Number, Text
from .methods import EMBEDDING_KINDS
from .tables import Field

__all__ = ["MetricKind", "METRIC_KINDS", "EvalContext"]

ROW_SETS = ("labeled", "unlabeled", "all")


@dataclass(frozen=True)
class EvalContext:
    """What a metric sees of one fitted run."""

    Z: np.ndarray | None  # embedding of all rows (None for classifier methods)
    X: np.ndarray  # the preprocessed input rows
    y: np.ndarray  # complete labels
    mask: np.ndarray  # labeled rows
    pred: np.ndarray | None  # a classifier's predictions on the unlabeled rows
    images: np.ndarray | None  # raw images (image datasets)
    image_shape: tuple | None


@dataclass(frozen=True)
class MetricKind:
    """One kind of metric.

    Attributes
    ----------
    name, doc : str
    options : tuple of Field
        The kind's options, with defaults (the spec schema of its table).
    scalar : bool
        One value per run (else a curve, one column per K).
    applies_to : callable
        ``options -> method kinds`` the metric is computed for by default.
    describe : callable
        ``options -> words`` for the summary.
    evaluate : callable
        ``(EvalContext, options) -> value`` (a fraction) or a sequence (a curve).
    images_field : callable
        ``options -> field name or None``: the option that makes the metric read
        raw images (image datasets only), if set so.
    """

    name: str
    doc: str
    options: tuple
    scalar: bool
    applies_to: Callable[[Mapping], tuple]
    describe: Callable[[Mapping], str]
    evaluate: Callable[[EvalContext, Mapping], Any]
    images_field: Callable[[Mapping], str | None] = lambda o: None

    def columns(self, name: str, options: Mapping) -> list[str]:
        if self.scalar:
            return [name]
        return [f"{name}@{k}" for k in range(1, options["max_k"] + 1)]


def _rows(which: str, mask: np.ndarray) -> np.ndarray:
    return {"labeled": mask, "unlabeled": ~mask, "all": np.ones_like(mask)}[which]


def _knn(ctx: EvalContext, o) -> float:
    from .. import evaluation as ev

    if o["distance"] == "tangent":
        from ..tangent import tangent_knn_predict

        m = ctx.mask
        p = tangent_knn_predict(ctx.images[m], ctx.y[m], ctx.images[~m], n_neighbors=o["k"],
                                candidates=o["candidates"], shape=ctx.image_shape)
        return float(np.mean(p == ctx.y[~m]))
    return ev.transductive_knn_accuracy(ctx.Z, ctx.y, ctx.mask, o["k"])


def _svm(ctx: EvalContext, o) -> float:
    from .. import evaluation as ev

    return ev.transductive_svm_accuracy(ctx.Z, ctx.y, ctx.mask, C=o["C"])


LSQ_SOLVES = ("lstsq", "normal_equations")


def linear_regression_accuracy(Z: np.ndarray, y: np.ndarray, mask: np.ndarray,
                               solve: str = "lstsq") -> float:
    r"""Least squares on one-hot targets of the labeled rows (with intercept), argmax.

    With :math:`A = [Z_l\ \mathbf 1]` and one-hot targets :math:`T`, the weights
    minimise :math:`\lVert AW - T\rVert_F`; an unlabeled row gets the class of its
    largest score. ``solve`` says how:

    * ``"lstsq"``: the minimum-norm solution (SVD, :func:`numpy.linalg.lstsq`),
      correct whatever the rank of :math:`A`;
    * ``"normal_equations"``: :math:`W = (A^TA)^{-1}A^TT` by an LU factorisation
      with partial pivoting and no rank check (LAPACK ``getrf``/``getrs``, what
      MATLAB's ``inv`` and backslash do with a square matrix). One-hot features
      make :math:`A^TA` singular (each attribute's columns sum to the
      intercept; values absent from the labeled rows give zero columns), and an
      exactly zero pivot gives infinite or NaN weights and scores; ``argmax``
      over NaN scores picks the first class, so such a classifier predicts one
      class for every row and scores that class's share. Kept to show what a
      naively solved classifier reports (Wang & Mahadevan's mushroom table).
    """
    classes = np.unique(y[mask])
    A = np.column_stack([Z[mask], np.ones(int(mask.sum()))])
    T = (y[mask][:, None] == classes[None, :]).astype(float)
    if solve == "lstsq":
        W, *_ = np.linalg.lstsq(A, T, rcond=None)
    elif solve == "normal_equations":
        import warnings

        import scipy.linalg as sla

        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", sla.LinAlgWarning)
            W = sla.lu_solve(sla.lu_factor(A.T @ A, check_finite=False), A.T @ T,
                             check_finite=False)
    else:
        raise ValueError(f"solve must be one of {LSQ_SOLVES}; got {solve!r}")
    with np.errstate(all="ignore"):
        scores = np.column_stack([Z[~mask], np.ones(int((~mask).sum()))]) @ W
    pred = classes[np.argmax(scores, axis=1)]
    return float(np.mean(pred == y[~mask]))


def _oracle_knn(ctx: EvalContext, o) -> float:
    from .. import evaluation as ev

    return 1.0 - ev.oracle_linear_knn(ctx.X, ctx.y, ctx.mask, search=o["search"]).error


def loo_knn_accuracy(Z: np.ndarray, y: np.ndarray, k: int) -> float:
    """Leave-one-out k-NN accuracy among the rows of ``Z``."""
    from sklearn.neighbors import NearestNeighbors

    ind = NearestNeighbors(n_neighbors=k).fit(Z).kneighbors(return_distance=False)
    classes, codes = np.unique(y, return_inverse=True)
    votes = np.zeros((y.size, classes.size))
    np.add.at(votes, (np.repeat(np.arange(y.size), k), codes[ind].ravel()), 1.0)
    return float(np.mean(votes.argmax(axis=1) == codes))


def _loo_knn(ctx: EvalContext, o) -> float:
    rows = _rows(o["rows"], ctx.mask)
    return loo_knn_accuracy(ctx.Z[rows], ctx.y[rows], o["k"])


def _loo_curve(ctx: EvalContext, o):
    from .. import evaluation as ev

    rows = _rows(o["rows"], ctx.mask)
    return ev.loo_same_class_curve(ctx.Z[rows], ctx.y[rows], o["max_k"])


def _topology_curve(ctx: EvalContext, o):
    from .. import evaluation as ev

    rows = _rows(o["rows"], ctx.mask)
    return ev.topology_preservation_curve(ctx.X[rows], ctx.Z[rows], o["max_k"])


_K = Field("k", Integer(1), 1, "neighbours")
_MAX_K = Field("max_k", Integer(1), 10, "the curve's largest K")


def _rows_field(default: str) -> Field:
    return Field("rows", Text(ROW_SETS), default, "rows scored")


#: Metric kinds a spec may use (``kind = NAME``).
METRIC_KINDS: dict[str, MetricKind] = {k.name: k for k in [
    MetricKind(
        "knn", "transductive k-NN accuracy (tangent: on the raw images)",
        (_K, Field("distance", Text(("euclidean", "tangent")), "euclidean",
                   "'tangent': two-sided tangent distance on the raw images"),
         Field("candidates", Integer(1), None, "tangent: Euclidean candidates ('none': all)",
               none=True)),
        True,
        applies_to=lambda o: ("raw",) if o["distance"] == "tangent" else EMBEDDING_KINDS,
        describe=lambda o: f"{o['k']}-NN accuracy" + (" (tangent distance, raw images)"
                                                       if o["distance"] == "tangent" else ""),
        evaluate=_knn, images_field=lambda o: "distance" if o["distance"] == "tangent" else None),
    MetricKind(
        "svm", "linear Crammer-Singer SVM accuracy (DVU Table 1, M-SVM)",
        (Field("C", Number(0, lo_open=True), 1.0, "SVM regularisation"),), True,
        applies_to=lambda o: EMBEDDING_KINDS,
        describe=lambda o: f"linear Crammer-Singer SVM accuracy (C={o['C']})", evaluate=_svm),
    MetricKind(
        "linear_regression", "least-squares classifier on one-hot targets (Wang & Mahadevan)",
        (Field("solve", Text(LSQ_SOLVES), "lstsq",
               "'lstsq' (minimum norm, correct) or 'normal_equations' (LU of A'A, no rank "
               "check: what a naive implementation reports)"),),
        True, applies_to=lambda o: EMBEDDING_KINDS,
        describe=lambda o: "linear-regression classifier accuracy" + (
            "" if o["solve"] == "lstsq" else " (normal equations solved without a rank check)"),
        evaluate=lambda ctx, o: linear_regression_accuracy(ctx.Z, ctx.y, ctx.mask, o["solve"])),
    MetricKind(
        "oracle_knn", "1-NN accuracy of a linear map chosen with every label (a reference, "
                      "sdpembed.evaluation.oracle_linear_knn), on the input features",
        (Field("search", Boolean(), True,
               "search the map (false: Fisher's directions fitted with every label only)"),),
        True, applies_to=lambda o: ("raw",),
        describe=lambda o: ("oracle 1-NN accuracy (best linear map found with every label)"
                            if o["search"] else
                            "1-NN accuracy after LDA fitted with every label"),
        evaluate=_oracle_knn),
    MetricKind(
        "loo_knn", "leave-one-out k-NN accuracy within the chosen rows",
        (_K, _rows_field("labeled")), True, applies_to=lambda o: EMBEDDING_KINDS,
        describe=lambda o: f"leave-one-out {o['k']}-NN accuracy on {o['rows']} rows",
        evaluate=_loo_knn),
    MetricKind(
        "accuracy", "accuracy of a classifier method's transduction on unlabeled rows",
        (), True, applies_to=lambda o: ("classifier",),
        describe=lambda o: "transductive accuracy",
        evaluate=lambda ctx, o: float(np.mean(ctx.pred == ctx.y[~ctx.mask]))),
    MetricKind(
        "loo_curve", "same class among the K nearest, K = 1..max_k (Wang & Mahadevan)",
        (_MAX_K, _rows_field("unlabeled")), False, applies_to=lambda o: EMBEDDING_KINDS,
        describe=lambda o: f"same class among K nearest ({o['rows']} rows)",
        evaluate=_loo_curve),
    MetricKind(
        "topology_curve", "original nearest neighbour among the K nearest, K = 1..max_k",
        (_MAX_K, _rows_field("unlabeled")), False, applies_to=lambda o: EMBEDDING_KINDS,
        describe=lambda o: f"original nearest neighbour among K nearest ({o['rows']} rows)",
        evaluate=_topology_curve),
]}


class MetricLike(Protocol):
    """What :func:`evaluate` reads of a spec's metric (:class:`~.schema.MetricSpec`)."""

    name: str
    kind: str
    options: Mapping[str, Any]
    error: bool

    def columns(self) -> list[str]: ...


def evaluate(metric: MetricLike, ctx: EvalContext) -> dict[str, float]:
    """Values of one metric (fractions); curves give one column per K."""
    kind = METRIC_KINDS[metric.kind]
    value = kind.evaluate(ctx, metric.options)
    if not kind.scalar:
        return dict(zip(metric.columns(), map(float, value), strict=True))
    value = float(value)
    return {metric.name: 1.0 - value if metric.error else value}

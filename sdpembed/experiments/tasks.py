"""One cell of the grid: prepare the data, fit the method, evaluate the metrics.

Protocol
--------
For each seed, :func:`sdpembed.datasets.partial_labels` keeps ``fraction``
of the labels (``random_state=seed``); the kept rows are the *labeled* rows,
the others the evaluation rows. With ``protocol = "transductive"`` every
method sees all rows, unlabeled ones with ``y = -1``; with ``"inductive"``
projection methods are fitted on the labeled rows only and then transform
all rows (DNE paper: train/test splits).

Every exception inside a task -- preparing the data, building the graph,
fitting, evaluating -- becomes the row's ``status = "error"`` with its type
and message (``error``) and where it happened (``error_stage``), as
scikit-learn's ``GridSearchCV(error_score=nan)`` records a failed fit: the
grid carries on. An ``optimal_inaccurate`` solve is ``status =
"inaccurate"``, or an error when it is far from optimal
(:func:`sdpembed.solve_status.check_result`); never ``"ok"``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import traceback
import warnings
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import datasets as _datasets
from ..exceptions import InputError, SpecError
from ..solve_status import check_result
from .methods import METHODS, MethodInfo
from .metrics import EvalContext, evaluate
from .schema import DatasetSpec, GraphSpec, LabelSpec, Spec, thaw
from .spec import IMAGE_SHAPES

if TYPE_CHECKING:  # annotations only
    from .grid import Task

__all__ = ["run_task", "load_data", "clear_caches"]

logger = logging.getLogger(__name__)


@dataclass
class Data:
    """Loaded, encoded, filtered, subsampled and deslanted data of a dataset block."""

    X: np.ndarray
    y: np.ndarray
    images: np.ndarray | None
    image_shape: tuple | None


class _Memo:
    """A small LRU memo that also remembers failures (a failing load is not retried per run)."""

    def __init__(self, fn: Callable, size: int = 4):
        self.fn, self.size = fn, size
        self.store: OrderedDict = OrderedDict()
        self.lock = threading.Lock()  # Dask workers may run tasks in threads

    def __call__(self, *args):
        with self.lock:
            entry = self.store.get(args)
            if entry is not None:
                self.store.move_to_end(args)
        if entry is None:
            try:
                entry = (True, self.fn(*args))
            except Exception as exc:  # noqa: BLE001 - remembered, re-raised below
                entry = (False, exc)
            with self.lock:
                self.store[args] = entry
                while len(self.store) > self.size:
                    self.store.popitem(last=False)
        ok, value = entry
        if ok:
            return value
        raise value

    def clear(self) -> None:
        with self.lock:
            self.store.clear()


# data sent by the runner (a Dask cluster gets the data loaded by the runner)
_PRELOADED: dict[DatasetSpec, Data] = {}


def _load(ds: DatasetSpec) -> Data:
    if ds in _PRELOADED:
        return _PRELOADED[ds]
    bunch = _datasets.load_dataset(ds.name, **thaw(ds.options))
    X, y = np.asarray(bunch.data, dtype=float), np.asarray(bunch.target)
    if ds.encoding == "ordinal":
        offsets = bunch.attribute_offsets
        X = np.column_stack([np.argmax(X[:, a:b], axis=1) + 1.0
                             for a, b in zip(offsets[:-1], offsets[1:], strict=True)])
    if ds.classes is not None:
        missing = sorted(set(ds.classes) - set(np.unique(y).tolist()))
        if missing:
            raise SpecError(f"dataset.classes: {ds.name} has no classes {missing} "
                            f"(it has {np.unique(y).tolist()})")
        keep = np.isin(y, ds.classes)
        X, y = X[keep], y[keep]
    if ds.deduplicate:
        X, y = _first_of_duplicates(X, y, ds.name)
    if ds.n_samples is not None and ds.n_samples != X.shape[0]:
        if ds.n_samples > X.shape[0]:
            raise SpecError(f"dataset.n_samples: {ds.name} has only {X.shape[0]} samples")
        from sklearn.model_selection import train_test_split

        idx, _ = train_test_split(np.arange(X.shape[0]), train_size=ds.n_samples,
                                  stratify=y, random_state=ds.sample_seed)
        idx = np.sort(idx)
        X, y = X[idx], y[idx]
    shape = IMAGE_SHAPES.get(ds.name)
    if shape is not None and ds.deslant:
        from ..tangent import deslant

        X = deslant(X, shape=shape).reshape(X.shape[0], -1).astype(float)
    return Data(X, y.astype(np.int64), X if shape is not None else None, shape)


load_data = _Memo(_load)


def _first_of_duplicates(X: np.ndarray, y: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``X`` without repeats (first occurrence, original order); a repeated row whose
    labels differ cannot be resolved by dropping and raises :class:`SpecError`."""
    _, first, inverse = np.unique(X, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    clash = np.flatnonzero(y != y[first][inverse])
    if clash.size:
        raise SpecError(f"dataset.deduplicate: {name} has identical rows with different "
                        f"labels (rows {clash[:5].tolist()} repeat earlier rows)")
    keep = np.sort(first)
    return X[keep], y[keep]


def _preprocess(X: np.ndarray, fit_rows: np.ndarray, ds: DatasetSpec) -> np.ndarray:
    """Scale then PCA, with statistics from ``fit_rows`` only."""
    F = X[fit_rows]
    if ds.scale == "standard":
        sd = F.std(axis=0)
        X = (X - F.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    elif ds.scale == "minmax":
        lo, span = F.min(axis=0), np.ptp(F, axis=0)
        X = (X - lo) / np.where(span > 0, span, 1.0)
    if ds.pca:
        from sklearn.decomposition import PCA

        if ds.pca > min(F.shape):
            raise InputError(f"dataset.pca={ds.pca} exceeds min(n_rows, n_features) = "
                             f"{min(F.shape)} of the fitting rows")
        X = PCA(n_components=ds.pca, svd_solver="full").fit(X[fit_rows]).transform(X)
    return X


@dataclass
class Split:
    X: np.ndarray  # preprocessed
    y_partial: np.ndarray
    mask: np.ndarray  # labeled rows


def _make_split(ds: DatasetSpec, labels: LabelSpec, fraction, seed: int) -> Split:
    """Labels kept for one seed and the preprocessed data (shared by a sweep)."""
    data = load_data(ds)
    y_partial = _datasets.partial_labels(data.y, fraction, per_class=labels.per_class,
                                         min_per_class=labels.min_per_class, random_state=seed)
    mask = y_partial != -1
    fit_rows = np.ones_like(mask) if labels.protocol == "transductive" else mask
    return Split(_preprocess(data.X, fit_rows, ds), y_partial, mask)


split = _Memo(_make_split)


def _make_graph(ds: DatasetSpec, labels: LabelSpec, fraction, seed: int, g: GraphSpec):
    """The spec's graph over all rows, random edges seeded by ``seed``."""
    from ..graphs import knn_graph

    if g.metric == "tangent":
        data = load_data(ds)
        return knn_graph(data.images, n_neighbors=g.n_neighbors, n_random=g.n_random,
                         metric="tangent", random_state=seed, shape=data.image_shape,
                         **thaw(g.options))
    X = split(ds, labels, fraction, seed).X
    return knn_graph(X, n_neighbors=g.n_neighbors, n_random=g.n_random, metric=g.metric,
                     random_state=seed)


graph = _Memo(_make_graph)


def clear_caches() -> None:
    """Forget cached data, splits and graphs (and data sent by a runner)."""
    for memo in (load_data, split, graph):
        memo.clear()
    _PRELOADED.clear()


def _fit(info: MethodInfo, est, X, y, y_partial, mask, protocol: str):
    """Fit one method; returns (embedding or None, predictions on unlabeled rows or None)."""
    if info.kind == "raw":
        return X, None
    if info.kind == "gram":
        est.fit(X, y_partial)
        return est.embedding_, None
    if info.kind == "classifier":
        est.fit(X, y_partial)
        return None, est.transduction_[~mask]
    if info.kind == "supervised" or protocol == "inductive":
        est.fit(X[mask], y[mask])
    else:
        est.fit(X, y_partial)
    return est.transform(X), None


def _solver_fields(est, solver: str | None) -> dict:
    from ..solvers import solver_version

    report = getattr(est, "solve_report_", None)
    if report is not None:
        return {"solver": report.solver, "solver_version": report.solver_version,
                "solver_options": json.dumps(report.options, sort_keys=True, default=str),
                "solve_status": report.status, "compile_s": report.compile_seconds,
                "solve_s": report.solve_seconds, "iterations": report.iterations,
                "objective": report.objective, "gap": report.gap,
                "certified_gap": report.certified_gap}
    if solver is None:
        return {"objective": getattr(est, "objective_", None)}
    return {"solver_version": solver_version(solver)}


def base_row(spec: Spec, task: Task) -> dict[str, Any]:
    """The fields of a row known before the task runs."""
    method = spec.method(task.method)
    return {
        "index": task.index, "key": task.key, "spec": spec.name, "dataset": task.dataset,
        "fraction": task.fraction, "protocol": spec.labels.protocol, "seed": task.seed,
        "method": task.method, "estimator": method.method,
        "params": json.dumps({k: thaw(task.params[k]) for k in method.swept}, sort_keys=True,
                             default=str),
        "all_params": json.dumps(thaw(task.params), sort_keys=True, default=str),
        "solver": task.solver, "solver_version": None, "solver_options": None,
        "status": "ok", "error": "", "error_stage": "", "warnings": "",
    }


def dataset_for_seed(ds: DatasetSpec, seed: int) -> DatasetSpec:
    """The dataset block of a run: with ``sample_seed = "seed"`` the run's seed draws the
    subsample (each seed its own digits), else the block as it is."""
    return replace(ds, sample_seed=int(seed)) if ds.sample_seed == "seed" else ds


def run_task(spec: Spec, task: Task, data: Data | None = None) -> tuple[dict, dict]:
    """Fit and evaluate one cell of the grid; never raises for a failure of the task itself.

    Parameters
    ----------
    spec : Spec
    task : Task
    data : Data, optional
        The dataset block's data, loaded by the runner (Dask workers get it
        this way instead of reading the data folder themselves).

    Returns
    -------
    row : dict
        One row of the results table; ``status`` is ``"ok"``, ``"inaccurate"``
        or ``"error"`` (then ``error`` holds ``"Type: message"`` and
        ``error_stage`` where it happened).
    artefacts : dict
        Arrays asked for by figures (``task.keep``): ``embedding``, ``y``,
        ``labeled``, ``spectrum``, ``prototypes``.
    """
    method = spec.method(task.method)
    info = METHODS[method.method]
    ds = dataset_for_seed(spec.dataset(task.dataset), task.seed)
    if data is not None:
        if len(_PRELOADED) >= 4:
            _PRELOADED.clear()
        _PRELOADED[ds] = data
    row = base_row(spec, task)
    artefacts: dict[str, Any] = {}
    stage = "prepare"
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            loaded = load_data(ds)
            cut = split(ds, spec.labels, task.fraction, task.seed)
            X, y, y_partial, mask = cut.X, loaded.y, cut.y_partial, cut.mask
            row.update(n_samples=int(X.shape[0]), n_features=int(X.shape[1]),
                       n_labeled=int(mask.sum()))
            params = dict(thaw(task.params))
            if info.factory is not None:
                names = info.param_names()
                if "random_state" in names and "random_state" not in params:
                    params["random_state"] = task.seed
                if task.solver is not None:
                    params["solver"] = task.solver
                    if "solver_options" in names and spec.solver_options.get(task.solver):
                        params["solver_options"] = thaw(spec.solver_options[task.solver])
                if params.get("metric") == "tangent" and "metric_params" in names \
                        and loaded.image_shape is not None:
                    # the tangent metric needs the images' shape, which the dataset knows
                    params["metric_params"] = {"shape": tuple(loaded.image_shape),
                                               **dict(params.get("metric_params") or {})}
                if "graph" in names and spec.graph is not None:
                    params["graph"] = graph(ds, spec.labels, task.fraction, task.seed,
                                            spec.graph)
            t1 = time.perf_counter()
            row["prepare_s"] = t1 - t0
            stage = "fit"
            est = info.build(params) if info.factory is not None else None
            Z, pred = _fit(info, est, X, y, y_partial, mask, spec.labels.protocol)
            t2 = time.perf_counter()
            row["fit_s"] = t2 - t1
            row.update(_solver_fields(est, task.solver) if est is not None else {})
            validation = getattr(est, "validation_", None)
            if validation is not None:
                # DVU's held-out check, kept whole so that its rule can be scored afterwards
                row["validation"] = json.dumps(validation, sort_keys=True, default=str)
            report = getattr(est, "solve_report_", None)
            if report is not None:
                # solve() applied the rule already; a report made elsewhere meets it here
                check_result(report.solver, report.status, report.objective, report,
                             what=method.method)
                if report.status == "optimal_inaccurate":
                    row["status"] = "inaccurate"
            if Z is not None:
                row["n_components"] = int(Z.shape[1])
            stage = "evaluate"
            ctx = EvalContext(Z, X, y, mask, pred, loaded.images, loaded.image_shape)
            for metric in spec.metrics:
                if spec.metric_applies(metric, method):
                    row.update(evaluate(metric, ctx))
            row["eval_s"] = time.perf_counter() - t2
            artefacts = _artefacts(task.keep, est, Z, y, mask)
        except Exception as exc:  # noqa: BLE001 - every failure of a task is its row's error
            row.update(status="error", error=f"{type(exc).__name__}: {exc}", error_stage=stage)
            logger.warning("run %d (%s %s, seed %d) failed while %s: %s: %s", task.index,
                           task.method, row["params"], task.seed,
                           {"prepare": "preparing", "fit": "fitting",
                            "evaluate": "evaluating"}[stage], type(exc).__name__, exc)
            logger.debug("run %d traceback:\n%s", task.index, traceback.format_exc())
    row["wall_s"] = time.perf_counter() - t0
    if caught:
        row["warnings"] = " | ".join(sorted({f"{w.category.__name__}: {w.message}"
                                             for w in caught}))[:500]
    return row, artefacts


def _artefacts(keep, est, Z, y, mask) -> dict:
    out: dict[str, Any] = {}
    if "embedding" in keep and Z is not None:
        out.update(embedding=np.asarray(Z), y=y, labeled=mask)
    if "spectrum" in keep and est is not None:
        for attr in ("spectrum_", "eigenvalues_", "explained_variance_"):
            if hasattr(est, attr):
                out["spectrum"] = np.asarray(getattr(est, attr), dtype=float)
                out["spectrum_attribute"] = attr
                break
    if "prototypes" in keep and hasattr(est, "label_prototypes"):
        out["prototypes"] = est.label_prototypes()
    return out

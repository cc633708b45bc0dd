"""Experiments from declarative TOML specs: the grid runner behind ``sdpembed run``.

A *spec* (a TOML file, ``problems/*.toml``) names a dataset, how many labels
are kept, the preprocessing, a neighbourhood graph, methods with their
parameters, solver backends, seeds and metrics. :func:`run_spec` expands the
grid

    dataset x label fraction x method x parameter sweep x solver x seed,

runs every cell (serially, in parallel with joblib, or on a Dask cluster
through joblib's Dask backend: one code path), and returns an
:class:`ExperimentResult` holding a tidy table (one row per run, with the
solver's name, version and options and the timings), which
:meth:`ExperimentResult.write` saves as CSV, JSON, a markdown summary (mean ±
std per method, solver and parameters, next to the paper's numbers when the
spec gives them) and the figures the spec asks for.

Protocol
--------
For each seed, :func:`sdpembed.datasets.partial_labels` keeps ``fraction``
of the labels (``random_state=seed``); the kept rows are the *labeled* rows,
the others are the evaluation rows. With ``protocol = "transductive"``
(default) every method sees all rows, unlabeled ones with ``y = -1``; with
``"inductive"`` projection methods are fitted on the labeled rows only and
then transform all rows (DNE paper: train/test splits). Every metric trains
on the labeled rows and scores the others, in the embedding of all rows.

Spec format
-----------
.. code-block:: toml

    name = "smoke"                    # default: the file name
    description = "one line"
    seeds = 3                         # 0, 1, 2; or a list such as [0, 5, 7]
    solvers = ["CLARABEL"]            # backends of the SDP methods (the grid's solver axis)

    [solver_options.LOWRANK]          # options of one backend, passed to solve() whenever a
    time_limit = 120                  # run uses it (LOWRANK: sdpembed.large.LowRankOptions;
    tol = 1e-4                        # CSDP: its param.csdp names; cvxpy backends: theirs)
    [solver_options.SCS]
    eps_abs = 1e-5

    [dataset]
    name = "iris"                     # or a list: one block of the grid per dataset
    options = {}                      # keyword arguments of the loader (e.g. subset = "train")
    n_samples = 120                   # random subsample (stratified, sample_seed), optional
    sample_seed = 0
    classes = [0, 1]                  # keep these classes only, optional
    deslant = false                   # image datasets (usps, umist32, digits)
    encoding = "onehot"               # car, mushroom: or "ordinal" (1-based codes)
    scale = "none"                    # "standard" or "minmax", fitted on the fitting rows
    pca = 0                           # PCA to this many dimensions first (0: none)
    # with name = ["wine", "car"]: [dataset.car] encoding = "ordinal" overrides for car only

    [labels]
    fraction = 0.2                    # float: kept fraction; int: kept count; or a list
    per_class = true
    min_per_class = 2
    protocol = "transductive"         # or "inductive"

    [graph]                           # for the methods that take a graph (DVU, MVU)
    metric = "euclidean"              # or "tangent" (images) or any scikit-learn metric
    n_neighbors = 2
    n_random = 1                      # tangent only: candidates, sigma, blur, ...

    [methods.raw]                     # the section name is the method's label
    estimator = "raw"                 # a name of METHODS
    [methods.dvu]
    estimator = "DVU"
    n_components = 2
    slack_weight = [0.1, 1.0, 10.0]   # a list is a sweep (cartesian product)
    snr = "none"                      # the string "none" is Python's None
    solvers = ["CLARABEL", "SCS"]     # optional: this method's own solver axis

    [metrics.knn3]
    kind = "knn"                      # see METRIC_KINDS
    k = 3
    [metrics.svm]
    kind = "svm"
    error = false                     # true: report 1 - accuracy

    [paper]
    source = "Vernaza, Lee & Taskar, Table 1"
    [[paper.values]]
    method = "dvu"                    # a method label
    metric = "knn3"                   # a metric name
    value = 97.7                      # in percent; std = ... optional
    # dataset = ..., fraction = ..., params = {n_components = 1}: optional filters

    [figures.embedding]
    kind = "embedding"                # see FIGURE_KINDS
    method = "dvu"

Metric values are fractions in the tables and percentages in the summary.
Every SDP run records its solve: ``solve_status`` (``"optimal"`` or
``"optimal_inaccurate"``: an inaccurate solve, such as a LOWRANK solve stopped
by its ``time_limit``, is a result, kept with its status and gap, not a
failure), the backend's ``gap`` and, for backends that certify their own
solution (LOWRANK), ``certified_gap``; the summary shows the statuses and the
largest certified gap of each cell.
Every error in a spec is a :class:`SpecError` whose message starts with the
dotted name of the field, e.g. ``methods.dvu.slack_weight``.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import inspect
import itertools
import json
import logging
import math
import numbers
import platform
import re
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from . import datasets as _datasets
from .exceptions import InputError, SdpEmbedError, SpecError  # SpecError re-exported

__all__ = [
    "SpecError",
    "METHODS",
    "METRIC_KINDS",
    "FIGURE_KINDS",
    "MethodInfo",
    "HeatKNNKernel",
    "Spec",
    "Task",
    "ExperimentResult",
    "load_spec",
    "parse_spec",
    "expand_grid",
    "run_task",
    "run_spec",
    "find_spec",
]

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------- methods


class HeatKNNKernel:
    """k-NN graph with heat-kernel weights as a scikit-learn kernel callable.

    ``kernel(X, X)`` is the weight matrix of the TCA paper's graph, eq. (4)
    (:func:`sdpembed.scatter.tca.tca_graph`): :math:`W_{ij} =
    \\exp(-\\lVert x_i - x_j\\rVert^2 / \\sigma^2)` when :math:`j` is among
    the ``n_neighbors`` nearest neighbours of :math:`i` or vice versa, else 0;
    :math:`\\sigma` defaults to the mean edge length. Passing it to
    :class:`~sklearn.semi_supervised.LabelPropagation` (GFHF, Zhu et al.) and
    :class:`~sklearn.semi_supervised.LabelSpreading` (LGC, Zhou et al.) runs
    them "on the same 5-NN graph" as TCA (Liu, Tao & Liu, section 5.2).
    ``kernel(X, Y)`` for other ``Y`` (prediction of new points) joins each row
    of ``X`` to its ``n_neighbors`` nearest rows of ``Y``.
    """

    def __init__(self, n_neighbors: int = 5, sigma: float | None = None):
        self.n_neighbors = n_neighbors
        self.sigma = sigma

    def __call__(self, X, Y) -> np.ndarray:
        from sklearn.neighbors import NearestNeighbors

        from .scatter.tca import tca_graph

        X, Y = np.asarray(X, dtype=float), np.asarray(Y, dtype=float)
        if X is Y or (X.shape == Y.shape and np.array_equal(X, Y)):
            graph = tca_graph(X, n_neighbors=self.n_neighbors, sigma=self.sigma)
            return graph.adjacency().toarray()
        dist, ind = NearestNeighbors(n_neighbors=self.n_neighbors).fit(Y).kneighbors(X)
        sigma = self.sigma or (float(dist.mean()) if dist.mean() > 0 else 1.0)
        W = np.zeros((X.shape[0], Y.shape[0]))
        np.put_along_axis(W, ind, np.exp(-dist**2 / sigma**2), axis=1)
        return W

    def __repr__(self) -> str:
        return f"HeatKNNKernel(n_neighbors={self.n_neighbors}, sigma={self.sigma})"


@dataclass(frozen=True)
class MethodInfo:
    """How the runner fits one kind of method.

    Attributes
    ----------
    factory : callable or None
        Estimator class (``None`` for ``"raw"``); a spec names it with
        ``estimator = NAME`` and sets its ``__init__`` arguments.
    kind : {"raw", "gram", "projection", "supervised", "classifier"}
        ``"raw"``: the embedding is the (preprocessed) input. ``"gram"``:
        transductive SDP embedding, ``fit(X, y_partial).embedding_`` (takes
        the spec's graph). ``"projection"``: ``fit`` then ``transform`` all
        rows (fitted on all rows with ``y = -1`` for unlabeled ones, or on the
        labeled rows only with the inductive protocol). ``"supervised"``:
        fitted on the labeled rows only, whatever the protocol (NCA).
        ``"classifier"``: semi-supervised classifier, ``fit(X,
        y_partial).transduction_`` (no embedding).
    description : str
    extra_params : tuple of str
        Spec parameters that are not ``__init__`` arguments of ``factory``
        (consumed by ``translate``).
    translate : callable, optional
        ``params -> params`` applied before construction.
    """

    factory: type | None
    kind: str
    description: str
    extra_params: tuple[str, ...] = ()
    translate: Callable[[dict], dict] | None = None

    def param_names(self) -> set[str]:
        """Parameters a spec may set."""
        if self.factory is None:
            return set(self.extra_params)
        names = set(inspect.signature(self.factory.__init__).parameters) - {"self"}
        return names | set(self.extra_params)

    def build(self, params: Mapping[str, Any]):
        params = dict(params)
        if self.translate is not None:
            params = self.translate(params)
        return self.factory(**params)


def _label_propagation_params(params: dict) -> dict:
    """``kernel = "heat_knn"`` -> :class:`HeatKNNKernel` (``n_neighbors``, ``sigma``)."""
    sigma = params.pop("sigma", None)
    if params.get("kernel") == "heat_knn":
        params["kernel"] = HeatKNNKernel(params.get("n_neighbors", 7), sigma)
    elif sigma is not None:
        raise InputError("sigma is used only with kernel = 'heat_knn'")
    return params


def _method_registry() -> dict[str, MethodInfo]:
    from sklearn.neighbors import NeighborhoodComponentsAnalysis
    from sklearn.semi_supervised import LabelPropagation, LabelSpreading

    from .estimators.classic import LDA, LPP, PCA, SDA
    from .estimators.discriminative import DiscriminativeProjections
    from .estimators.dne import DNE
    from .estimators.gram import DVU, MVU
    from .estimators.tca import OTCA, TCA

    lp = dict(extra_params=("sigma",), translate=_label_propagation_params)
    return {
        "raw": MethodInfo(None, "raw", "the input features themselves (baseline)"),
        "DVU": MethodInfo(DVU, "gram", "discriminative variance unfolding (Vernaza et al.)"),
        "MVU": MethodInfo(MVU, "gram", "maximum variance unfolding (Weinberger & Saul)"),
        "PCA": MethodInfo(PCA, "projection", "principal component analysis"),
        "LDA": MethodInfo(LDA, "projection", "linear discriminant analysis"),
        "LPP": MethodInfo(LPP, "projection", "locality preserving projections"),
        "SDA": MethodInfo(SDA, "projection", "semi-supervised discriminant analysis"),
        "DiscriminativeProjections": MethodInfo(
            DiscriminativeProjections, "projection",
            "discriminative projections with label maps (Wang & Mahadevan)"),
        "DNE": MethodInfo(DNE, "projection", "discriminant neighborhood embedding (Zhang et al.)"),
        "TCA": MethodInfo(TCA, "projection", "transductive component analysis (Liu et al.)"),
        "OTCA": MethodInfo(OTCA, "projection", "orthogonal TCA (Liu et al.)"),
        "NCA": MethodInfo(NeighborhoodComponentsAnalysis, "supervised",
                          "scikit-learn's neighbourhood components analysis"),
        "LabelPropagation": MethodInfo(LabelPropagation, "classifier",
                                       "scikit-learn's label propagation (GFHF)", **lp),
        "LabelSpreading": MethodInfo(LabelSpreading, "classifier",
                                     "scikit-learn's label spreading (LGC)", **lp),
    }


class _Registry(Mapping):
    """Lazy name -> :class:`MethodInfo` mapping (imports the estimators on first use)."""

    def __init__(self):
        self._data: dict[str, MethodInfo] | None = None

    def _load(self) -> dict[str, MethodInfo]:
        if self._data is None:
            self._data = _method_registry()
            self._data["GFHF"] = self._data["LabelPropagation"]
            self._data["LGC"] = self._data["LabelSpreading"]
        return self._data

    def __getitem__(self, key: str) -> MethodInfo:
        return self._load()[key]

    def __iter__(self):
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


#: Method names a spec may use (``estimator = NAME``) and how each is fitted.
METHODS: Mapping[str, MethodInfo] = _Registry()

#: Metric kinds, their options with defaults, and what they apply to.
METRIC_KINDS: dict[str, dict[str, Any]] = {
    "knn": {"options": {"k": 1, "distance": "euclidean", "candidates": None},
            "scalar": True, "doc": "transductive k-NN accuracy (tangent: on the raw images)"},
    "svm": {"options": {"C": 1.0}, "scalar": True,
            "doc": "linear Crammer-Singer SVM accuracy (DVU Table 1, M-SVM)"},
    "linear_regression": {"options": {}, "scalar": True,
                          "doc": "least-squares classifier on one-hot targets (Wang & Mahadevan)"},
    "loo_knn": {"options": {"k": 1, "rows": "labeled"}, "scalar": True,
                "doc": "leave-one-out k-NN accuracy within the chosen rows"},
    "accuracy": {"options": {}, "scalar": True,
                 "doc": "accuracy of a classifier method's transduction on unlabeled rows"},
    "loo_curve": {"options": {"max_k": 10, "rows": "unlabeled"}, "scalar": False,
                  "doc": "same class among the K nearest, K = 1..max_k (Wang & Mahadevan)"},
    "topology_curve": {"options": {"max_k": 10, "rows": "unlabeled"}, "scalar": False,
                       "doc": "original nearest neighbour among the K nearest, K = 1..max_k"},
}

#: Figure kinds and their fields with defaults (``...``: required).
FIGURE_KINDS: dict[str, dict[str, Any]] = {
    "embedding": {"method": ..., "dims": 2, "params": None},
    "spectrum": {"method": ..., "mark": None, "params": None, "top": None},
    "label_prototypes": {"method": ..., "params": None},
    "curve": {"metric": ..., "methods": None},
    "metric_vs_param": {"metric": ..., "method": ..., "param": ..., "log": True},
}

_IMAGE_SHAPES = {"usps": (16, 16), "umist32": (32, 32), "digits": (8, 8)}
_CATEGORICAL = ("car", "mushroom")
_ROW_SETS = ("labeled", "unlabeled", "all")

# --------------------------------------------------------------------------- spec


class _KeyedSpec:
    """Mixin of the spec dataclasses whose settings identify shared work (data, graph)."""

    def key(self) -> str:
        """The fields as canonical JSON (sorted keys, ``str`` for other values).

        Two blocks with the same settings have the same key, so the runner can
        cache what they produce.
        """
        return json.dumps(dataclasses.asdict(self), sort_keys=True, default=str)


@dataclass(frozen=True)
class DatasetSpec(_KeyedSpec):
    """One dataset block of a spec (``[dataset]`` with a single ``name``)."""

    name: str
    options: dict = field(default_factory=dict)
    n_samples: int | None = None
    sample_seed: int = 0
    classes: tuple | None = None
    deslant: bool = False
    encoding: str = "onehot"
    scale: str = "none"
    pca: int = 0


@dataclass(frozen=True)
class LabelSpec:
    fractions: tuple
    per_class: bool = True
    min_per_class: int = 1
    protocol: str = "transductive"


@dataclass(frozen=True)
class GraphSpec(_KeyedSpec):
    metric: str = "euclidean"
    n_neighbors: int = 2
    n_random: int = 1
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class MethodSpec:
    label: str
    method: str
    params: dict  # name -> value, or list of values (a sweep)
    solvers: tuple | None = None

    def combinations(self) -> list[dict]:
        """Every parameter setting of the sweep (cartesian product of the list values)."""
        names = sorted(self.params)
        axes = [self.params[k] if isinstance(self.params[k], list) else [self.params[k]]
                for k in names]
        return [dict(zip(names, values, strict=True)) for values in itertools.product(*axes)]

    @property
    def swept(self) -> list[str]:
        return sorted(k for k, v in self.params.items() if isinstance(v, list))


@dataclass(frozen=True)
class MetricSpec:
    name: str
    kind: str
    options: dict
    methods: tuple | None = None
    error: bool = False

    @property
    def scalar(self) -> bool:
        return METRIC_KINDS[self.kind]["scalar"]

    def columns(self) -> list[str]:
        if self.scalar:
            return [self.name]
        return [f"{self.name}@{k}" for k in range(1, self.options["max_k"] + 1)]


@dataclass(frozen=True)
class PaperValue:
    method: str
    metric: str
    value: float
    std: float | None = None
    dataset: str | None = None
    fraction: float | None = None
    params: dict | None = None

    def matches(self, dataset, fraction, method, params: dict) -> bool:
        if self.method != method:
            return False
        if self.dataset is not None and self.dataset != dataset:
            return False
        if self.fraction is not None and self.fraction != fraction:
            return False
        return all(params.get(k) == v for k, v in (self.params or {}).items())


@dataclass(frozen=True)
class FigureSpec:
    name: str
    kind: str
    options: dict
    dataset: str | None = None
    fraction: float | None = None


@dataclass(frozen=True)
class Spec:
    """A validated experiment spec (see the module docstring for the TOML format)."""

    name: str
    description: str
    datasets: tuple
    labels: LabelSpec
    graph: GraphSpec | None
    methods: tuple
    metrics: tuple
    solvers: tuple
    seeds: tuple
    paper_source: str = ""
    paper: tuple = ()
    figures: tuple = ()
    solver_options: dict = field(default_factory=dict)  # backend name -> options of solve()
    path: str | None = None
    raw: dict = field(default_factory=dict, compare=False, repr=False)

    def method(self, label: str) -> MethodSpec:
        return next(m for m in self.methods if m.label == label)

    def dataset(self, name: str) -> DatasetSpec:
        return next(d for d in self.datasets if d.name == name)

    def metric_applies(self, metric: MetricSpec, method: MethodSpec) -> bool:
        kind = METHODS[method.method].kind
        if metric.methods is not None:
            return method.label in metric.methods
        if metric.kind == "accuracy":
            return kind == "classifier"
        if metric.kind == "knn" and metric.options["distance"] == "tangent":
            return kind == "raw"
        return kind != "classifier"


_TOP_FIELDS = {"name", "description", "seeds", "solvers", "solver_options", "dataset", "labels",
               "graph", "methods", "metrics", "paper", "figures"}


def _type_name(value) -> str:
    return {bool: "boolean", int: "integer", float: "float", str: "string", list: "array",
            dict: "table"}.get(type(value), type(value).__name__)


def _fail(where: str, problem: str):
    raise SpecError(f"{where}: {problem}")


def _check_fields(table: Mapping, where: str, known: Iterable[str]) -> None:
    known = set(known)
    unknown = sorted(set(table) - known)
    if unknown:
        _fail(f"{where}.{unknown[0]}" if where else unknown[0],
              f"unknown field; known fields of {where or 'the spec'} are {sorted(known)}")


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def _get(table: Mapping, key: str, where: str, check: Callable[[Any], bool], what: str,
         default=...):
    if key not in table:
        if default is ...:
            _fail(f"{where}.{key}" if where else key, f"missing; expected {what}")
        return default
    value = table[key]
    if not check(value):
        _fail(f"{where}.{key}" if where else key,
              f"expected {what}; got {value!r} ({_type_name(value)})")
    return value


def _table(table: Mapping, key: str, where: str, required: bool = False) -> dict:
    return dict(_get(table, key, where, lambda v: isinstance(v, dict), "a table",
                     ... if required else {}))


def _none(value):
    """TOML has no null: the string ``"none"`` stands for ``None``."""
    if isinstance(value, str) and value == "none":
        return None
    if isinstance(value, dict):
        return {k: _none(v) for k, v in value.items()}
    return value


def load_spec(path: str | Path) -> Spec:
    """Read and validate a TOML spec.

    Raises
    ------
    SpecError
        Unreadable TOML or an invalid field (the message names it).
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise SpecError(f"cannot read spec {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path} is not valid TOML: {exc}") from exc
    return parse_spec(data, name=path.stem, path=str(path))


def parse_spec(data: Mapping, *, name: str | None = None, path: str | None = None) -> Spec:
    """Validate a spec given as a mapping (parsed TOML); see the module docstring.

    Nothing is loaded or fitted: dataset names and loader options, method
    names and parameters (through the estimators' own parameter validation),
    solver names, metric and figure fields are checked here.

    Raises
    ------
    SpecError
    """
    if not isinstance(data, Mapping):
        raise SpecError(f"a spec must be a table; got {_type_name(data)}")
    _check_fields(data, "", _TOP_FIELDS)
    spec_name = _get(data, "name", "", lambda v: isinstance(v, str) and v.strip() != "",
                     "a non-empty string", name or "experiment")
    description = _get(data, "description", "", lambda v: isinstance(v, str), "a string", "")
    seeds = _parse_seeds(data.get("seeds", 1))
    datasets = _parse_datasets(_table(data, "dataset", "", required=True))
    labels = _parse_labels(_table(data, "labels", ""))
    graph = _parse_graph(data["graph"], datasets) if "graph" in data else None
    methods = _parse_methods(_table(data, "methods", "", required=True))
    metrics = _parse_metrics(_table(data, "metrics", "", required=True), methods, datasets)
    solvers = _parse_solvers(data.get("solvers", ["CLARABEL"]), "solvers")
    solver_options = _parse_solver_options(_table(data, "solver_options", ""))
    methods = tuple(_check_method_solvers(m, solvers) for m in methods)
    if graph is not None and graph.metric == "tangent" and labels.protocol == "inductive":
        _fail("graph.metric", "a graph is built on all rows; use protocol = 'transductive'")
    paper_source, paper = _parse_paper(_table(data, "paper", ""), methods, metrics, datasets)
    figures = _parse_figures(_table(data, "figures", ""), methods, metrics, datasets)
    return Spec(name=spec_name, description=description, datasets=datasets, labels=labels,
                graph=graph, methods=methods, metrics=metrics, solvers=solvers, seeds=seeds,
                paper_source=paper_source, paper=paper, figures=figures,
                solver_options=solver_options, path=path, raw=dict(data))


def _parse_seeds(value) -> tuple:
    if _is_int(value):
        if value < 1:
            _fail("seeds", f"expected a positive integer or a list of integers; got {value}")
        return tuple(range(int(value)))
    if isinstance(value, list) and value and all(_is_int(v) and v >= 0 for v in value):
        if len(set(value)) != len(value):
            _fail("seeds", f"seeds must be distinct; got {value}")
        return tuple(int(v) for v in value)
    _fail("seeds", f"expected a positive integer or a non-empty list of integers >= 0; got "
                   f"{value!r} ({_type_name(value)})")


_DATASET_FIELDS = ("options", "n_samples", "sample_seed", "classes", "deslant", "encoding",
                   "scale", "pca")


def _parse_datasets(table: dict) -> tuple:
    """``[dataset]``; with several names, ``[dataset.<name>]`` overrides fields for one of them."""
    where = "dataset"
    names = _get(table, "name", where,
                 lambda v: isinstance(v, str) or (isinstance(v, list) and v
                                                  and all(isinstance(s, str) for s in v)),
                 "a dataset name or a list of names")
    names = [names] if isinstance(names, str) else names
    known = _datasets.list_datasets()
    for n in names:
        if n not in known:
            _fail(f"{where}.name", f"unknown dataset {n!r}; choose from {known}")
    if len(set(names)) != len(names):
        _fail(f"{where}.name", f"datasets must be distinct; got {names}")
    _check_fields(table, where, {"name", *_DATASET_FIELDS, *names})
    shared = {k: v for k, v in table.items() if k in _DATASET_FIELDS}
    out = []
    for n in names:
        override = table.get(n, {})
        if n in table and (not isinstance(override, dict) or "name" in override):
            _fail(f"{where}.{n}", "expected a table of fields overriding [dataset] for " + n)
        _check_fields(override, f"{where}.{n}", _DATASET_FIELDS)
        fields = {**shared, **override}
        out.append(_parse_one_dataset(n, fields, {k: f"{where}.{n}" if k in override else where
                                                  for k in _DATASET_FIELDS}))
    return tuple(out)


def _parse_one_dataset(n: str, table: dict, where: dict) -> DatasetSpec:
    def get(key, check, what, default):
        return _get(table, key, where[key], check, what, default)

    options = _none(get("options", lambda v: isinstance(v, dict), "a table", {}))
    n_samples = get("n_samples", lambda v: _is_int(v) and v >= 4, "an integer >= 4", None)
    sample_seed = get("sample_seed", lambda v: _is_int(v) and v >= 0, "an integer >= 0", 0)
    classes = get("classes",
                  lambda v: isinstance(v, list) and len(v) >= 2 and all(_is_int(c) for c in v),
                  "a list of at least two integer class indices", None)
    deslant = get("deslant", lambda v: isinstance(v, bool), "true or false", False)
    encoding = get("encoding", lambda v: v in ("onehot", "ordinal"), "'onehot' or 'ordinal'",
                   "onehot")
    scale = get("scale", lambda v: v in ("none", "standard", "minmax"),
                "'none', 'standard' or 'minmax'", "none")
    pca = get("pca", lambda v: _is_int(v) and v >= 0, "an integer >= 0", 0)
    loader = _datasets._LOADERS[n]
    try:
        inspect.signature(loader).bind(**options)
    except TypeError as exc:
        _fail(f"{where['options']}.options", f"bad loader arguments for {n!r}: {exc}")
    if "return_X_y" in options:
        _fail(f"{where['options']}.options.return_X_y", "set by the runner")
    if deslant and n not in _IMAGE_SHAPES:
        _fail(f"{where['deslant']}.deslant",
              f"{n!r} is not an image dataset ({sorted(_IMAGE_SHAPES)})")
    if encoding == "ordinal" and n not in _CATEGORICAL:
        _fail(f"{where['encoding']}.encoding",
              f"'ordinal' needs a categorical dataset {_CATEGORICAL}; {n!r} is not")
    return DatasetSpec(n, dict(options), n_samples, int(sample_seed),
                       None if classes is None else tuple(int(c) for c in classes),
                       deslant, encoding, scale, int(pca))


def _parse_labels(table: dict) -> LabelSpec:
    where = "labels"
    _check_fields(table, where, {"fraction", "per_class", "min_per_class", "protocol"})

    def ok(v):
        return (_is_int(v) and v >= 1) or (_is_number(v) and not _is_int(v) and 0 < v <= 1)

    fractions = _get(table, "fraction", where,
                     lambda v: ok(v) or (isinstance(v, list) and v and all(ok(f) for f in v)),
                     "a float in (0, 1], an integer count >= 1, or a list of them", 1.0)
    fractions = tuple(fractions) if isinstance(fractions, list) else (fractions,)
    per_class = _get(table, "per_class", where, lambda v: isinstance(v, bool), "true or false",
                     True)
    min_per_class = _get(table, "min_per_class", where, lambda v: _is_int(v) and v >= 0,
                         "an integer >= 0", 1)
    protocol = _get(table, "protocol", where, lambda v: v in ("transductive", "inductive"),
                    "'transductive' or 'inductive'", "transductive")
    return LabelSpec(fractions, per_class, int(min_per_class), protocol)


_TANGENT_OPTIONS = {"candidates", "sigma", "blur", "regularization", "transforms"}


def _parse_graph(table, datasets) -> GraphSpec:
    where = "graph"
    if not isinstance(table, dict):
        _fail(where, f"expected a table; got {_type_name(table)}")
    metric = _get(table, "metric", where, lambda v: isinstance(v, str), "a metric name",
                  "euclidean")
    _check_fields(table, where, {"metric", "n_neighbors", "n_random"}
                  | (_TANGENT_OPTIONS if metric == "tangent" else set()))
    n_neighbors = _get(table, "n_neighbors", where, lambda v: _is_int(v) and v >= 0,
                       "an integer >= 0", 2)
    n_random = _get(table, "n_random", where, lambda v: _is_int(v) and v >= 0,
                    "an integer >= 0", 1)
    if n_neighbors + n_random == 0:
        _fail(f"{where}.n_neighbors", "need at least one edge per point (n_neighbors + n_random)")
    options = {k: _none(v) for k, v in table.items() if k in _TANGENT_OPTIONS}
    if metric == "tangent":
        bad = [d.name for d in datasets if d.name not in _IMAGE_SHAPES]
        if bad:
            _fail(f"{where}.metric", f"'tangent' needs image datasets; {bad} are not")
        if any(d.pca or d.scale != "none" for d in datasets):
            logger.info("tangent graph: built on the (deslanted) images, before scale and PCA")
    elif metric != "precomputed":
        from sklearn.metrics.pairwise import distance_metrics
        from sklearn.neighbors import VALID_METRICS

        if metric not in set(distance_metrics()) | set(VALID_METRICS["brute"]):
            _fail(f"{where}.metric", f"unknown metric {metric!r}; use 'tangent' or a "
                                     "scikit-learn metric such as 'euclidean'")
    else:
        _fail(f"{where}.metric", "'precomputed' is not available in a spec")
    return GraphSpec(metric, int(n_neighbors), int(n_random), options)


_METHOD_RESERVED = {"estimator", "solvers"}
_RUNNER_PARAMS = {"graph": "set it in the [graph] table",
                  "solver": "list backends in 'solvers' (top level or per method)",
                  "solver_options": "give each backend's options in a [solver_options.<BACKEND>] "
                                    "table (e.g. [solver_options.LOWRANK] time_limit = 600)"}


def _parse_methods(table: dict) -> tuple:
    if not table:
        _fail("methods", "at least one method is needed")
    out = []
    for label, body in table.items():
        where = f"methods.{label}"
        if not isinstance(body, dict):
            _fail(where, f"expected a table; got {_type_name(body)}")
        name = _get(body, "estimator", where, lambda v: isinstance(v, str),
                    "a method name from sdpembed.experiments.METHODS")
        if name not in METHODS:
            _fail(f"{where}.estimator", f"unknown method {name!r}; choose from "
                                        f"{sorted(METHODS)}")
        info = METHODS[name]
        params = {k: _none(v) for k, v in body.items() if k not in _METHOD_RESERVED}
        allowed = info.param_names()
        for key, value in params.items():
            if key in _RUNNER_PARAMS and key in allowed:
                _fail(f"{where}.{key}", f"set by the runner: {_RUNNER_PARAMS[key]}")
            if key not in allowed:
                _fail(f"{where}.{key}", f"unknown parameter of {name}; known: "
                                        f"{sorted(allowed - set(_RUNNER_PARAMS))}")
            if isinstance(value, list):
                if not value:
                    _fail(f"{where}.{key}", "an empty list sweeps over nothing")
                params[key] = [_none(v) for v in value]
        solvers = None
        if "solvers" in body:
            solvers = _parse_solvers(body["solvers"], f"{where}.solvers")
            if "solver" not in allowed:
                _fail(f"{where}.solvers", f"{name} takes no solver")
        spec = MethodSpec(label, name, params, solvers)
        for combo in spec.combinations():
            _validate_params(info, combo, where)
        if solvers and not any(_uses_solver(spec, c) for c in spec.combinations()):
            _fail(f"{where}.solvers", f"{name} uses no solver with these parameters (set "
                                      "method = 'sdp' for its SDP path)")
        out.append(spec)
    return tuple(out)


def _validate_params(info: MethodInfo, params: dict, where: str) -> None:
    """Parameter validation of the estimator itself, with the field named on failure."""
    if info.factory is None:
        return
    sig = inspect.signature(info.factory.__init__).parameters
    for key, value in params.items():
        default = sig[key].default if key in sig else None
        if _is_number(default) and isinstance(value, str) and value not in ("auto",):
            _fail(f"{where}.{key}", f"expected a number; got {value!r} (string)")
        if isinstance(default, str) and isinstance(value, bool):
            _fail(f"{where}.{key}", f"expected a string such as {default!r}; got {value!r}")
    try:
        est = info.build(params)
        if getattr(est, "_parameter_constraints", None):
            est._validate_params()  # scikit-learn's declarative checks
        if hasattr(est, "_validate_params_common"):
            est._validate_params_common()
    except (InputError, TypeError, ValueError) as exc:
        # scikit-learn: "The 'alpha' parameter of LabelSpreading must be ..."
        m = re.search(r"The '(\w+)' parameter", str(exc))
        bad = m.group(1) if m else next(
            (k for k in params if f"{k} " in str(exc) or f"'{k}'" in str(exc)), None)
        _fail(f"{where}.{bad}" if bad else where, str(exc))


def _known_solvers() -> set[str]:
    from .solvers import _CUSTOM_BACKENDS, CVXPY_SDP_SOLVERS

    return set(CVXPY_SDP_SOLVERS) | {"CSDP"} | set(_CUSTOM_BACKENDS)


def _parse_solvers(value, where: str) -> tuple:
    value = [value] if isinstance(value, str) else value
    if not isinstance(value, list) or not value or not all(isinstance(s, str) for s in value):
        _fail(where, f"expected a solver name or a non-empty list of names; got {value!r}")
    names = [s.upper() for s in value]
    known = _known_solvers()
    for s in names:
        if s not in known:
            _fail(where, f"unknown solver {s!r}; known backends: {sorted(known)}")
    return tuple(dict.fromkeys(names))


def _parse_solver_options(table: dict) -> dict:
    """``[solver_options.<BACKEND>]`` tables: backend name (upper case) -> options of ``solve()``.

    Option names are checked where the toolkit knows them: LOWRANK against
    :class:`sdpembed.large.LowRankOptions` (names and values), CSDP against
    its ``param.csdp`` names and ``time_limit``. The cvxpy backends' own
    options (e.g. SCS ``eps_abs``) are passed on as given; cvxpy rejects an
    unknown one when the run solves.
    """
    out: dict[str, dict] = {}
    known = _known_solvers() if table else set()
    for key, body in table.items():
        name = key.upper()
        where = f"solver_options.{key}"
        if not isinstance(body, dict):
            _fail(where, f"expected a table of {key}'s options (e.g. [solver_options.{key}] "
                         f"time_limit = 600); got {_type_name(body)}")
        if name not in known:
            _fail(where, f"unknown solver {name!r}; known backends: {sorted(known)}")
        if name in out:
            _fail(where, f"options of {name} are given twice")
        options = {k: _none(v) for k, v in body.items()}
        for k, v in options.items():
            if isinstance(v, (dict, list)):
                _fail(f"{where}.{k}", f"expected a number, string or boolean; got "
                                      f"{_type_name(v)}")
        _check_backend_options(name, options, where)
        out[name] = options
    return out


def _check_backend_options(name: str, options: dict, where: str) -> None:
    """Option names (and, for LOWRANK, values) of one backend, with the field named."""
    if name == "LOWRANK":
        from .large import LowRankOptions

        fields = LowRankOptions.__dataclass_fields__
        _check_fields(options, where, fields)
        for key, value in options.items():
            ok, what = _lowrank_option_check(key, fields[key].default)
            if not ok(value):
                _fail(f"{where}.{key}", f"expected {what}; got {value!r} ({_type_name(value)})")
        try:
            LowRankOptions.from_options(options)
        except (InputError, TypeError, ValueError) as exc:
            bad = next((k for k in options if k in str(exc)), None)
            _fail(f"{where}.{bad}" if bad else where, str(exc))
    elif name == "CSDP":
        from ._csdp import _PARAM_NAMES

        _check_fields(options, where, {*_PARAM_NAMES, "time_limit"})


def _lowrank_choices() -> dict[str, tuple]:
    """Values of the LOWRANK options that are strings (sdpembed.large.LowRankOptions)."""
    from .large import INNER_SOLVERS, REDUCED_SOLVERS

    return {"inner": INNER_SOLVERS, "warm_start": ("basis", None),
            "reduced_solver": REDUCED_SOLVERS}


def _lowrank_option_check(key: str, default) -> tuple[Callable[[Any], bool], str]:
    """(check, description) of one LOWRANK option, from its default's type."""
    if key in _lowrank_choices():
        choices = _lowrank_choices()[key]
        return (lambda v: v in choices), "one of " + ", ".join(
            "'none'" if c is None else repr(c) for c in choices)
    if isinstance(default, float):
        return (lambda v: _is_number(v) and v > 0), "a number > 0"
    low = 0 if default == 0 else 1
    optional = default is None or key == "random_state"

    def check(v) -> bool:
        return (optional and v is None) or (_is_int(v) and v >= low)

    return check, f"an integer >= {low}" + (" or 'none'" if optional else "")


def _check_method_solvers(method: MethodSpec, solvers: tuple) -> MethodSpec:
    """Solvers of an SDP method must be usable here (checked only where one is used)."""
    from .solvers import INSTALL_HINTS, available_solvers

    if not any(_uses_solver(method, combo) for combo in method.combinations()):
        return method
    usable = set(available_solvers())
    where = f"methods.{method.label}.solvers" if method.solvers else "solvers"
    for s in method.solvers or solvers:
        if s not in usable:
            hint = INSTALL_HINTS.get(s, "")
            _fail(where, f"solver {s!r} is not usable here ({hint or 'not available'}); "
                         f"available: {sorted(usable)}")
    return method


def _uses_solver(method: MethodSpec, params: dict) -> bool:
    info = METHODS[method.method]
    if "solver" not in info.param_names():
        return False
    sig = inspect.signature(info.factory.__init__).parameters
    if "method" not in sig:
        return True
    return params.get("method", sig["method"].default) == "sdp"


def _parse_metrics(table: dict, methods: tuple, datasets: tuple) -> tuple:
    if not table:
        _fail("metrics", "at least one metric is needed")
    labels = {m.label: m for m in methods}
    out = []
    for name, body in table.items():
        where = f"metrics.{name}"
        if "@" in name:
            _fail(where, "metric names may not contain '@'")
        if not isinstance(body, dict):
            _fail(where, f"expected a table; got {_type_name(body)}")
        kind = _get(body, "kind", where, lambda v: isinstance(v, str), "a metric kind")
        if kind not in METRIC_KINDS:
            _fail(f"{where}.kind", f"unknown metric kind {kind!r}; choose from "
                                   f"{sorted(METRIC_KINDS)}")
        defaults = METRIC_KINDS[kind]["options"]
        scalar = METRIC_KINDS[kind]["scalar"]
        _check_fields(body, where, {"kind", "methods"} | set(defaults)
                      | ({"error"} if scalar else set()))
        opts = {k: _none(body.get(k, d)) for k, d in defaults.items()}
        _check_metric_options(kind, opts, where, datasets)
        error = _get(body, "error", where, lambda v: isinstance(v, bool), "true or false", False)
        only = _get(body, "methods", where,
                    lambda v: isinstance(v, list) and v and all(isinstance(s, str) for s in v),
                    "a non-empty list of method labels", None)
        metric = MetricSpec(name, kind, opts, None if only is None else tuple(only), error)
        for label in only or ():
            if label not in labels:
                _fail(f"{where}.methods", f"unknown method label {label!r}; the spec's "
                                          f"methods are {sorted(labels)}")
            mkind = METHODS[labels[label].method].kind
            wants = ("classifier" if kind == "accuracy"
                     else "raw" if kind == "knn" and opts["distance"] == "tangent" else None)
            if (wants and mkind != wants) or (not wants and mkind == "classifier"):
                _fail(f"{where}.methods", f"metric kind {kind!r} does not apply to {label!r} "
                                          f"({mkind} method)")
        out.append(metric)
    return tuple(out)


def _check_metric_options(kind: str, opts: dict, where: str, datasets: tuple) -> None:
    def need(key, ok, what):
        if not ok(opts[key]):
            _fail(f"{where}.{key}", f"expected {what}; got {opts[key]!r} "
                                    f"({_type_name(opts[key])})")

    if "k" in opts:
        need("k", lambda v: _is_int(v) and v >= 1, "an integer >= 1")
    if "max_k" in opts:
        need("max_k", lambda v: _is_int(v) and v >= 1, "an integer >= 1")
    if "rows" in opts:
        need("rows", lambda v: v in _ROW_SETS, f"one of {_ROW_SETS}")
    if "C" in opts:
        need("C", lambda v: _is_number(v) and v > 0, "a number > 0")
    if kind == "knn":
        need("distance", lambda v: v in ("euclidean", "tangent"), "'euclidean' or 'tangent'")
        need("candidates", lambda v: v is None or (_is_int(v) and v >= 1),
             "an integer >= 1 or 'none' (exact)")
        if opts["distance"] == "tangent":
            bad = [d.name for d in datasets if d.name not in _IMAGE_SHAPES]
            if bad:
                _fail(f"{where}.distance", f"'tangent' needs image datasets; {bad} are not")


def _parse_paper(table: dict, methods: tuple, metrics: tuple, datasets: tuple):
    where = "paper"
    _check_fields(table, where, {"source", "values"})
    source = _get(table, "source", where, lambda v: isinstance(v, str), "a string", "")
    values = _get(table, "values", where,
                  lambda v: isinstance(v, list) and all(isinstance(e, dict) for e in v),
                  "an array of tables ([[paper.values]])", [])
    labels = {m.label: m for m in methods}
    scalar = {m.name: m for m in metrics if m.scalar}
    names = {d.name for d in datasets}
    out = []
    for i, entry in enumerate(values):
        w = f"{where}.values[{i}]"
        _check_fields(entry, w, {"method", "metric", "value", "std", "dataset", "fraction",
                                 "params"})
        method = _get(entry, "method", w, lambda v: v in labels,
                      f"one of the spec's method labels {sorted(labels)}")
        metric = _get(entry, "metric", w, lambda v: v in scalar,
                      f"one of the spec's scalar metrics {sorted(scalar)}")
        value = _get(entry, "value", w, _is_number, "a number (percent)")
        std = _get(entry, "std", w, lambda v: _is_number(v) and v >= 0, "a number >= 0", None)
        dataset = _get(entry, "dataset", w, lambda v: v in names,
                       f"one of the spec's datasets {sorted(names)}", None)
        fraction = _get(entry, "fraction", w, _is_number, "a number", None)
        params = _none(_get(entry, "params", w, lambda v: isinstance(v, dict), "a table", None))
        for key in params or ():
            if key not in labels[method].params:
                _fail(f"{w}.params.{key}", f"not a parameter set for method {method!r}")
        out.append(PaperValue(method, metric, float(value), None if std is None else float(std),
                              dataset, fraction, params))
    return source, tuple(out)


def _parse_figures(table: dict, methods: tuple, metrics: tuple, datasets: tuple) -> tuple:
    labels = {m.label: m for m in methods}
    by_name = {m.name: m for m in metrics}
    names = {d.name for d in datasets}
    out = []
    for name, body in table.items():
        where = f"figures.{name}"
        if not isinstance(body, dict):
            _fail(where, f"expected a table; got {_type_name(body)}")
        kind = _get(body, "kind", where, lambda v: v in FIGURE_KINDS,
                    f"one of {sorted(FIGURE_KINDS)}")
        fields = FIGURE_KINDS[kind]
        _check_fields(body, where, {"kind", "dataset", "fraction"} | set(fields))
        opts = {}
        for key, default in fields.items():
            opts[key] = _none(_get(body, key, where, lambda v: True, "a value", default))
        dataset = _get(body, "dataset", where, lambda v: v in names,
                       f"one of the spec's datasets {sorted(names)}", None)
        fraction = _get(body, "fraction", where, _is_number, "a number", None)
        if "method" in fields and opts["method"] not in labels:
            _fail(f"{where}.method", f"unknown method label {opts['method']!r}; the spec's "
                                     f"methods are {sorted(labels)}")
        if kind in ("embedding", "spectrum", "label_prototypes"):
            mkind = METHODS[labels[opts["method"]].method].kind
            if mkind == "classifier":
                _fail(f"{where}.method", f"{opts['method']!r} has no embedding")
        if kind == "spectrum" and opts["top"] is not None \
                and not (_is_int(opts["top"]) and opts["top"] >= 1):
            _fail(f"{where}.top", f"expected an integer >= 1; got {opts['top']!r}")
        if kind == "embedding" and opts["dims"] not in (2, 3):
            _fail(f"{where}.dims", f"expected 2 or 3; got {opts['dims']!r}")
        if kind == "label_prototypes" \
                and labels[opts["method"]].method != "DiscriminativeProjections":
            _fail(f"{where}.method", "label prototypes need a DiscriminativeProjections method")
        if "metric" in fields:
            metric = by_name.get(opts["metric"])
            if metric is None:
                _fail(f"{where}.metric", f"unknown metric {opts['metric']!r}; the spec's "
                                         f"metrics are {sorted(by_name)}")
            if (kind == "curve") == metric.scalar:
                wanted = "curve" if kind == "curve" else "scalar"
                _fail(f"{where}.metric", f"{kind!r} needs a {wanted} metric")
        if kind == "metric_vs_param":
            if opts["param"] not in labels[opts["method"]].swept:
                _fail(f"{where}.param", f"{opts['param']!r} is not swept by method "
                                        f"{opts['method']!r} (swept: "
                                        f"{labels[opts['method']].swept})")
        if kind == "curve" and opts["methods"] is not None:
            bad = [m for m in opts["methods"] if m not in labels]
            if bad:
                _fail(f"{where}.methods", f"unknown method labels {bad}")
        for key in ("params",):
            if opts.get(key) is not None and not isinstance(opts[key], dict):
                _fail(f"{where}.{key}", "expected a table")
        out.append(FigureSpec(name, kind, opts, dataset, fraction))
    return tuple(out)


def find_spec(name_or_path: str | Path) -> Path:
    """Path of a spec: an existing file, else ``problems/<name>.toml`` (cwd, then the checkout).

    Raises
    ------
    SpecError
        No such file.
    """
    p = Path(name_or_path)
    if p.is_file():
        return p
    stem = p.name if p.suffix == ".toml" else f"{p.name}.toml"
    for root in (Path.cwd(), Path(__file__).resolve().parents[1]):
        candidate = root / "problems" / stem
        if candidate.is_file():
            return candidate
    raise SpecError(f"no spec {name_or_path!r}: not a file, and no problems/{stem} in the "
                    "current folder or the sdpembed checkout")


# --------------------------------------------------------------------------- grid


@dataclass(frozen=True)
class Task:
    """One cell of the grid: what :func:`run_task` fits and evaluates."""

    index: int
    dataset: str
    fraction: float
    seed: int
    method: str  # label
    params: dict
    solver: str | None
    keep: frozenset = frozenset()


def expand_grid(spec: Spec, *, solvers: Iterable[str] | None = None,
                seeds: Iterable[int] | None = None) -> list[Task]:
    """Every run of a spec, in a fixed order (dataset, fraction, method, params, solver, seed).

    Parameters
    ----------
    spec : Spec
    solvers : iterable of str, optional
        Replace the solver axis of every SDP method (e.g. the CLI's ``--solver``).
    seeds : iterable of int, optional
        Replace the spec's seeds.
    """
    if solvers is not None:
        solvers = _parse_solvers(list(solvers), "--solver")
        for m in spec.methods:
            _check_method_solvers(dataclasses.replace(m, solvers=solvers), solvers)
    seeds = spec.seeds if seeds is None else tuple(seeds)
    tasks = []
    for ds, fraction, method in itertools.product(spec.datasets, spec.labels.fractions,
                                                  spec.methods):
        for params in method.combinations():
            axis = (solvers or method.solvers or spec.solvers) \
                if _uses_solver(method, params) else (None,)
            for solver, seed in itertools.product(axis, seeds):
                tasks.append(Task(len(tasks), ds.name, fraction, int(seed), method.label,
                                  params, solver))
    return _mark_artefacts(spec, tasks)


def _mark_artefacts(spec: Spec, tasks: list[Task]) -> list[Task]:
    """Ask the first matching run of each embedding/spectrum figure to keep its arrays."""
    keep: dict[int, set] = {}
    for fig in spec.figures:
        what = {"embedding": "embedding", "spectrum": "spectrum",
                "label_prototypes": "prototypes"}.get(fig.kind)
        if what is None:
            continue
        for t in tasks:
            if _figure_selects(spec, fig, t, fig.options["method"], fig.options.get("params")):
                keep.setdefault(t.index, set()).add(what)
                break
    return [dataclasses.replace(t, keep=frozenset(keep.get(t.index, ()))) for t in tasks]


def _figure_selects(spec: Spec, fig: FigureSpec, t, method: str, params) -> bool:
    dataset = fig.dataset or spec.datasets[0].name
    fraction = spec.labels.fractions[0] if fig.fraction is None else fig.fraction
    return (t.dataset == dataset and t.fraction == fraction and t.method == method
            and all(t.params.get(k) == v for k, v in (params or {}).items()))


# --------------------------------------------------------------------------- one run


@dataclass
class _Data:
    X: np.ndarray
    y: np.ndarray
    images: np.ndarray | None
    image_shape: tuple | None


def _dataset_from_key(key: str) -> DatasetSpec:
    d = json.loads(key)
    d["classes"] = None if d["classes"] is None else tuple(d["classes"])
    return DatasetSpec(**d)


@functools.lru_cache(maxsize=4)
def _load_data(key: str) -> _Data:
    """Loaded, encoded, filtered, subsampled and deslanted data of a dataset block."""
    ds = _dataset_from_key(key)
    bunch = _datasets.load_dataset(ds.name, **ds.options)
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
    if ds.n_samples is not None and ds.n_samples != X.shape[0]:
        if ds.n_samples > X.shape[0]:
            raise SpecError(f"dataset.n_samples: {ds.name} has only {X.shape[0]} samples")
        from sklearn.model_selection import train_test_split

        idx, _ = train_test_split(np.arange(X.shape[0]), train_size=ds.n_samples,
                                  stratify=y, random_state=ds.sample_seed)
        idx = np.sort(idx)
        X, y = X[idx], y[idx]
    shape = _IMAGE_SHAPES.get(ds.name)
    if shape is not None and ds.deslant:
        from .tangent import deslant

        X = deslant(X, shape=shape).reshape(X.shape[0], -1).astype(float)
    return _Data(X, y.astype(np.int64), X if shape is not None else None, shape)


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
class _Split:
    X: np.ndarray  # preprocessed
    y_partial: np.ndarray
    mask: np.ndarray  # labeled rows


@functools.lru_cache(maxsize=4)
def _split(dataset_key: str, labels_key: str, fraction, seed: int) -> _Split:
    """Labels kept for one seed and the preprocessed data (cached: shared by a sweep)."""
    from .datasets import partial_labels

    data = _load_data(dataset_key)
    lab = json.loads(labels_key)
    y_partial = partial_labels(data.y, fraction, per_class=lab["per_class"],
                               min_per_class=lab["min_per_class"], random_state=seed)
    mask = y_partial != -1
    fit_rows = np.ones_like(mask) if lab["protocol"] == "transductive" else mask
    X = _preprocess(data.X, fit_rows, _dataset_from_key(dataset_key))
    return _Split(X, y_partial, mask)


@functools.lru_cache(maxsize=4)
def _graph(dataset_key: str, labels_key: str, fraction, seed: int, graph_key: str):
    """The spec's graph over all rows, random edges seeded by ``seed`` (cached)."""
    from .graphs import knn_graph

    g = json.loads(graph_key)
    if g["metric"] == "tangent":
        data = _load_data(dataset_key)
        return knn_graph(data.images, n_neighbors=g["n_neighbors"], n_random=g["n_random"],
                         metric="tangent", random_state=seed, shape=data.image_shape,
                         **g["options"])
    X = _split(dataset_key, labels_key, fraction, seed).X
    return knn_graph(X, n_neighbors=g["n_neighbors"], n_random=g["n_random"],
                     metric=g["metric"], random_state=seed)


def _linear_regression_accuracy(Z, y, mask) -> float:
    """Least squares on one-hot targets of the labeled rows (with intercept), argmax."""
    classes = np.unique(y[mask])
    A = np.column_stack([Z[mask], np.ones(int(mask.sum()))])
    T = (y[mask][:, None] == classes[None, :]).astype(float)
    W, *_ = np.linalg.lstsq(A, T, rcond=None)
    pred = classes[np.argmax(np.column_stack([Z[~mask], np.ones(int((~mask).sum()))]) @ W,
                             axis=1)]
    return float(np.mean(pred == y[~mask]))


def _loo_knn_accuracy(Z, y, k: int) -> float:
    from sklearn.neighbors import NearestNeighbors

    ind = NearestNeighbors(n_neighbors=k).fit(Z).kneighbors(return_distance=False)
    classes, codes = np.unique(y, return_inverse=True)
    votes = np.zeros((y.size, classes.size))
    np.add.at(votes, (np.repeat(np.arange(y.size), k), codes[ind].ravel()), 1.0)
    return float(np.mean(votes.argmax(axis=1) == codes))


def _rows(which: str, mask: np.ndarray) -> np.ndarray:
    return {"labeled": mask, "unlabeled": ~mask, "all": np.ones_like(mask)}[which]


def _evaluate(metric: MetricSpec, Z, X, y, mask, pred, data: _Data) -> dict[str, float]:
    """Values of one metric (fractions); curves give one column per K."""
    from . import evaluation as ev

    o = metric.options
    if metric.kind == "knn" and o["distance"] == "tangent":
        from .tangent import tangent_knn_predict

        p = tangent_knn_predict(data.images[mask], y[mask], data.images[~mask],
                                n_neighbors=o["k"], candidates=o["candidates"],
                                shape=data.image_shape)
        value = float(np.mean(p == y[~mask]))
    elif metric.kind == "knn":
        value = ev.transductive_knn_accuracy(Z, y, mask, o["k"])
    elif metric.kind == "svm":
        value = ev.transductive_svm_accuracy(Z, y, mask, C=o["C"])
    elif metric.kind == "linear_regression":
        value = _linear_regression_accuracy(Z, y, mask)
    elif metric.kind == "loo_knn":
        rows = _rows(o["rows"], mask)
        value = _loo_knn_accuracy(Z[rows], y[rows], o["k"])
    elif metric.kind == "accuracy":
        value = float(np.mean(pred == y[~mask]))
    else:
        rows = _rows(o["rows"], mask)
        curve = (ev.loo_same_class_curve(Z[rows], y[rows], o["max_k"])
                 if metric.kind == "loo_curve"
                 else ev.topology_preservation_curve(X[rows], Z[rows], o["max_k"]))
        return dict(zip(metric.columns(), map(float, curve), strict=True))
    return {metric.name: 1.0 - value if metric.error else value}


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
    from .solvers import solver_version

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


def run_task(spec: Spec, task: Task) -> tuple[dict, dict]:
    """Fit and evaluate one cell of the grid.

    Errors while fitting or evaluating -- typed errors of the toolkit
    (:class:`~sdpembed.exceptions.SdpEmbedError`, e.g. an unbounded DVU at a
    small ``slack_weight``) and numerical ``ValueError``/``LinAlgError`` from
    scikit-learn -- are recorded in the row (``status = "failed"``,
    ``error``). Errors while preparing the data, labels or graph concern every
    run and propagate, as do all other exceptions.

    Returns
    -------
    row : dict
        One row of the results table.
    artefacts : dict
        Arrays asked for by figures (``task.keep``): ``embedding``, ``y``,
        ``labeled``, ``spectrum``, ``prototypes``.
    """
    method = spec.method(task.method)
    info = METHODS[method.method]
    ds = spec.dataset(task.dataset)
    row: dict[str, Any] = {
        "index": task.index, "spec": spec.name, "dataset": task.dataset,
        "fraction": task.fraction, "protocol": spec.labels.protocol, "seed": task.seed,
        "method": task.method, "estimator": method.method,
        "params": json.dumps({k: task.params[k] for k in method.swept}, sort_keys=True,
                             default=str),
        "all_params": json.dumps(task.params, sort_keys=True, default=str),
        "solver": task.solver, "solver_version": None, "solver_options": None,
        "status": "ok", "error": "", "warnings": "",
    }
    artefacts: dict[str, Any] = {}
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # preparation errors (missing data, impossible label split, duplicate points in the
        # graph) concern every run: they propagate
        data = _load_data(ds.key())
        labels_key = json.dumps(dataclasses.asdict(spec.labels), sort_keys=True)
        split = _split(ds.key(), labels_key, task.fraction, task.seed)
        X, y, y_partial, mask = split.X, data.y, split.y_partial, split.mask
        row.update(n_samples=int(X.shape[0]), n_features=int(X.shape[1]),
                   n_labeled=int(mask.sum()))
        params = dict(task.params)
        if info.factory is not None:
            names = info.param_names()
            if "random_state" in names and "random_state" not in params:
                params["random_state"] = task.seed
            if task.solver is not None:
                params["solver"] = task.solver
                if "solver_options" in names and spec.solver_options.get(task.solver):
                    params["solver_options"] = dict(spec.solver_options[task.solver])
            if "graph" in names and spec.graph is not None:
                params["graph"] = _graph(ds.key(), labels_key, task.fraction, task.seed,
                                         spec.graph.key())
        t1 = time.perf_counter()
        row["prepare_s"] = t1 - t0
        try:
            est = info.build(params) if info.factory is not None else None
            Z, pred = _fit(info, est, X, y, y_partial, mask, spec.labels.protocol)
            t2 = time.perf_counter()
            row["fit_s"] = t2 - t1
            row.update(_solver_fields(est, task.solver) if est is not None else {})
            if Z is not None:
                row["n_components"] = int(Z.shape[1])
            for metric in spec.metrics:
                if spec.metric_applies(metric, method):
                    row.update(_evaluate(metric, Z, X, y, mask, pred, data))
            row["eval_s"] = time.perf_counter() - t2
            artefacts = _artefacts(task.keep, est, Z, y, mask)
        except (SdpEmbedError, ValueError, np.linalg.LinAlgError) as exc:
            row.update(status="failed", error=f"{type(exc).__name__}: {exc}")
            logger.warning("run %d (%s, %s, seed %d) failed: %s", task.index, task.method,
                           row["params"], task.seed, exc)
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


# --------------------------------------------------------------------------- runner


@dataclass
class ExperimentResult:
    """Rows of a finished grid, with what is needed to summarise and plot it."""

    spec: Spec
    rows: list
    artefacts: dict
    meta: dict
    figures: dict = field(default_factory=dict)

    # ---------------------------------------------------------------- tables
    def columns(self) -> list[str]:
        """Column order of the tidy table (fixed fields, then metric columns)."""
        fixed = ["index", "spec", "dataset", "fraction", "protocol", "seed", "method",
                 "estimator", "params", "solver", "solver_version", "status", "n_samples",
                 "n_features", "n_labeled", "n_components", "objective", "solve_status",
                 "gap", "certified_gap", "iterations", "compile_s", "solve_s", "prepare_s",
                 "fit_s", "eval_s", "wall_s"]
        metrics = [c for m in self.spec.metrics for c in m.columns()]
        tail = ["all_params", "solver_options", "error", "warnings"]
        return fixed + metrics + tail

    def to_csv(self, path: str | Path) -> Path:
        path = Path(path)
        with path.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=self.columns(), extrasaction="ignore")
            writer.writeheader()
            for row in self.rows:
                writer.writerow({k: _csv_value(row.get(k)) for k in self.columns()})
        return path

    def to_json(self, path: str | Path) -> Path:
        path = Path(path)
        doc = {"spec": self.spec.raw, "meta": self.meta,
               "rows": [{k: _json_value(r.get(k)) for k in self.columns()} for r in self.rows]}
        path.write_text(json.dumps(doc, indent=1, default=str, allow_nan=False))
        return path

    def groups(self) -> list[tuple[tuple, list[dict]]]:
        """Rows grouped by (dataset, fraction, method, swept params, solver), in grid order."""
        out: dict[tuple, list] = {}
        for r in self.rows:
            key = (r["dataset"], r["fraction"], r["method"], r["params"], r["solver"])
            out.setdefault(key, []).append(r)
        return list(out.items())

    def summary(self) -> str:
        """Markdown: mean ± std (percent) per group, the paper's numbers beside ours."""
        return _summary_markdown(self)

    # ---------------------------------------------------------------- output
    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """Write ``results.csv``, ``results.json``, ``summary.md`` and figures into ``out_dir``."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"csv": self.to_csv(out / "results.csv"),
                 "json": self.to_json(out / "results.json")}
        if self.figures:
            (out / "figures").mkdir(exist_ok=True)
        for name, fig in self.figures.items():
            p = out / "figures" / f"{name}.png"
            fig.savefig(p, dpi=120, bbox_inches="tight")
            paths[f"figure:{name}"] = p
        summary = self.summary()
        if self.figures:
            summary += "\n## Figures\n\n" + "\n".join(
                f"- {name}: `figures/{name}.png`" for name in self.figures) + "\n"
        (out / "summary.md").write_text(summary)
        paths["summary"] = out / "summary.md"
        return paths


def _csv_value(v):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return v


def _json_value(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, np.generic):
        return v.item()
    return v


def run_spec(spec: Spec | str | Path, *, solvers: Iterable[str] | None = None,
             seeds: Iterable[int] | None = None, n_jobs: int = 1, scheduler=None,
             out_dir: str | Path | None = None, progress: bool = True) -> ExperimentResult:
    """Run every cell of a spec's grid and collect the results.

    Parameters
    ----------
    spec : Spec or path
        A validated spec, or a TOML path (:func:`load_spec`).
    solvers : iterable of str, optional
        Replace the solver axis of the SDP methods.
    seeds : iterable of int, optional
        Replace the spec's seeds.
    n_jobs : int, default=1
        joblib workers (``-1``: all cores); 1 runs serially in this process.
    scheduler : str or dask.distributed.Client, optional
        Address of a Dask scheduler (``"tcp://host:8786"``) or a client: the
        runs go to the cluster through joblib's Dask backend (same code path
        as ``n_jobs``). The workers need sdpembed and the data
        (``SDPEMBED_DATA``) themselves.
    out_dir : path, optional
        Also :meth:`ExperimentResult.write` there.
    progress : bool, default=True
        tqdm progress bar over runs (on stderr).

    Returns
    -------
    ExperimentResult
    """
    if not isinstance(spec, Spec):
        spec = load_spec(spec)
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        raise InputError(f"n_jobs must be a non-zero integer; got {n_jobs!r}")
    tasks = expand_grid(spec, solvers=solvers, seeds=seeds)
    logger.info("%s: %d runs", spec.name, len(tasks))
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    t0 = time.perf_counter()
    pairs = _execute(spec, tasks, n_jobs=n_jobs, scheduler=scheduler, progress=progress)
    wall = time.perf_counter() - t0
    pairs.sort(key=lambda p: p[0]["index"])
    rows = [p[0] for p in pairs]
    artefacts = {p[0]["index"]: p[1] for p in pairs if p[1]}
    meta = _meta(spec, tasks, rows, started, wall, n_jobs, scheduler)
    result = ExperimentResult(spec, rows, artefacts, meta)
    result.figures = _make_figures(result)
    if out_dir is not None:
        result.write(out_dir)
    return result


def _execute(spec: Spec, tasks: list[Task], *, n_jobs: int, scheduler, progress: bool):
    """Run the tasks with joblib: in this process (``n_jobs=1``, the data and graph caches
    serve the whole grid), in worker processes, or on a Dask cluster (joblib's Dask backend)."""
    from joblib import Parallel, delayed, parallel_config
    from tqdm.auto import tqdm

    client, own = None, False
    if scheduler is not None:
        from dask.distributed import Client

        client, own = (scheduler, False) if isinstance(scheduler, Client) \
            else (Client(scheduler), True)
    config = ({"backend": "dask", "client": client, "wait_for_workers_timeout": 60}
              if client is not None else {})
    out = []
    try:
        with parallel_config(**config), \
                tqdm(total=len(tasks), desc=spec.name, unit="run", disable=not progress) as bar:
            runner = Parallel(n_jobs=-1 if client is not None else n_jobs,
                              return_as="generator_unordered")
            for pair in runner(delayed(run_task)(spec, t) for t in tasks):
                out.append(pair)
                bar.update()
    finally:
        if own:
            client.close()
    return out


def _meta(spec, tasks, rows, started, wall, n_jobs, scheduler) -> dict:
    import cvxpy
    import scipy
    import sklearn

    from ._version import __version__

    used = sorted({r["solver"] for r in rows if r.get("solver")})
    versions = {s: next((r["solver_version"] for r in rows
                         if r.get("solver") == s and r.get("solver_version")), None)
                for s in used}
    return {
        "spec": spec.name, "path": spec.path, "started": started, "wall_s": wall,
        "runs": len(tasks), "failed": sum(r["status"] != "ok" for r in rows),
        "n_jobs": n_jobs, "scheduler": None if scheduler is None else str(scheduler),
        "seeds": sorted({t.seed for t in tasks}), "solvers": versions,
        "versions": {"sdpembed": __version__, "python": platform.python_version(),
                     "numpy": np.__version__, "scipy": scipy.__version__,
                     "scikit-learn": sklearn.__version__, "cvxpy": cvxpy.__version__},
        "machine": {"platform": platform.platform(), "processor": platform.machine()},
    }


# --------------------------------------------------------------------------- summary


def _mean_std(values: list[float]) -> tuple[float, float, int]:
    v = np.array([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if v.size == 0:
        return math.nan, math.nan, 0
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else math.nan, int(v.size)


def _pct(mean: float, std: float | None = None) -> str:
    if not math.isfinite(mean):
        return "–"
    if std is None or not math.isfinite(std):
        return f"{100 * mean:.2f}"
    return f"{100 * mean:.2f} ± {100 * std:.2f}"


def _params_text(params_json: str) -> str:
    params = json.loads(params_json)
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "–"


def _paper_cell(spec: Spec, dataset, fraction, method, params_json, metric) -> str | None:
    params = json.loads(params_json)
    for pv in spec.paper:
        if pv.metric == metric and pv.matches(dataset, fraction, method, params):
            return f"{pv.value:.2f}" + (f" ± {pv.std:.2f}" if pv.std is not None else "")
    return None


def _summary_markdown(result: ExperimentResult) -> str:
    spec, meta = result.spec, result.meta
    scalar = [m for m in spec.metrics if m.scalar]
    curves = [m for m in spec.metrics if not m.scalar]
    with_paper = {pv.metric for pv in spec.paper}
    lines = [f"# {spec.name}", ""]
    if spec.description:
        lines += [spec.description, ""]
    ds_text = "; ".join(_dataset_text(d) for d in spec.datasets)
    lab = spec.labels
    lines += [
        f"- data: {ds_text}",
        f"- labels kept: {', '.join(str(f) for f in lab.fractions)} "
        f"({'per class' if lab.per_class else 'overall'}, at least {lab.min_per_class} per "
        f"class), protocol {lab.protocol}",
        f"- graph: {_graph_text(spec.graph)}",
        f"- seeds: {_seeds_text(meta['seeds'])}; {meta['runs']} runs, {meta['failed']} failed"
        f"{_inaccurate_text(result.rows)}; "
        f"wall time "
        f"{meta['wall_s']:.1f} s (n_jobs={meta['n_jobs']}"
        f"{', scheduler ' + meta['scheduler'] if meta['scheduler'] else ''})",
        "- solvers: " + (", ".join(f"{k} {v}" for k, v in meta["solvers"].items()) or "none"),
        "- metrics (percent, mean ± std over seeds): "
        + "; ".join(f"{m.name} = {_metric_text(m)}" for m in spec.metrics),
    ]
    if spec.paper_source:
        lines.append(f"- paper: {spec.paper_source}")
    lines.append("")
    header = ["dataset", "labels", "method", "params", "solver", "dims", "runs ok"]
    for m in scalar:
        header.append(m.name)
        if m.name in with_paper:
            header.append(f"{m.name} (paper)")
    header.append("fit s")
    # solve columns where SDP runs were made: a LOWRANK solve stopped by its time limit is a
    # result ("optimal_inaccurate"), so its status and certified gap are shown beside it
    solved = any(r.get("solve_status") for r in result.rows)
    certified = any(r.get("certified_gap") is not None for r in result.rows)
    header += (["solve"] if solved else []) + (["certified gap"] if certified else [])
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (dataset, fraction, method, params, solver), rows in result.groups():
        ok = [r for r in rows if r["status"] == "ok"]
        cells = [dataset, str(fraction), method, _params_text(params), solver or "–",
                 _dims_text(ok), f"{len(ok)}/{len(rows)}"]
        for m in scalar:
            applies = spec.metric_applies(m, spec.method(method))
            cells.append(_pct(*_mean_std([r.get(m.name) for r in ok])[:2]) if applies else "")
            if m.name in with_paper:
                cells.append(_paper_cell(spec, dataset, fraction, method, params, m.name) or "")
        fit = _mean_std([r.get("fit_s") for r in ok])[0]
        cells.append(f"{fit:.2f}" if math.isfinite(fit) else "–")
        if solved:
            cells.append(_statuses_text(ok))
        if certified:
            cells.append(_gap_text(ok))
        lines.append("| " + " | ".join(cells) + " |")
    for m in curves:
        cols = m.columns()
        lines += ["", f"## {m.name}: {_metric_text(m)} (percent, mean over seeds)", "",
                  "| dataset | method | params | solver | " + " | ".join(
                      f"K={k}" for k in range(1, len(cols) + 1)) + " |",
                  "|" + "---|" * (4 + len(cols))]
        for (dataset, _fraction, method, params, solver), rows in result.groups():
            if not spec.metric_applies(m, spec.method(method)):
                continue
            ok = [r for r in rows if r["status"] == "ok"]
            vals = [_pct(_mean_std([r.get(c) for r in ok])[0]) for c in cols]
            lines.append(f"| {dataset} | {method} | {_params_text(params)} | {solver or '–'} | "
                         + " | ".join(vals) + " |")
    failures = [r for r in result.rows if r["status"] != "ok"]
    if failures:
        lines += ["", "## Failed runs", ""]
        seen = set()
        for r in failures:
            key = (r["method"], r["params"], r["solver"], r["error"][:200])
            if key not in seen:
                seen.add(key)
                n = sum(1 for f in failures if (f["method"], f["params"], f["solver"],
                                                f["error"][:200]) == key)
                lines.append(f"- {r['method']} {_params_text(r['params'])} "
                             f"{r['solver'] or ''} ({n} runs): {r['error'][:300]}")
    return "\n".join(lines) + "\n"


def _inaccurate_text(rows: list) -> str:
    n = sum(r["status"] == "ok" and r.get("solve_status") == "optimal_inaccurate" for r in rows)
    return f", {n} solved to optimal_inaccurate (kept, see 'solve')" if n else ""


def _statuses_text(rows: list) -> str:
    """Solve statuses of a cell's runs: ``optimal``, or counts such as ``optimal 1, ... 1``."""
    counts: dict[str, int] = {}
    for r in rows:
        if r.get("solve_status"):
            counts[r["solve_status"]] = counts.get(r["solve_status"], 0) + 1
    if len(counts) == 1 and sum(counts.values()) == len(rows):
        return next(iter(counts))
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "–"


def _gap_text(rows: list) -> str:
    """Largest certified relative gap of a cell's runs (``–`` where none was certified)."""
    gaps = [r["certified_gap"] for r in rows if r.get("certified_gap") is not None]
    if not gaps:
        return "–"
    text = f"{max(gaps):.1e}"
    return text if len(gaps) == len(rows) else f"{text} ({len(gaps)}/{len(rows)} certified)"


def _dims_text(rows: list) -> str:
    """Embedding dimension of the runs: one value, or the range (DNE's energy rule)."""
    dims = sorted({r["n_components"] for r in rows if r.get("n_components") is not None})
    if not dims:
        return "–"
    return str(dims[0]) if len(dims) == 1 else f"{dims[0]}–{dims[-1]}"


def _seeds_text(seeds: list) -> str:
    if len(seeds) > 3 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}..{seeds[-1]} ({len(seeds)} seeds)"
    return str(seeds)


def _dataset_text(d: DatasetSpec) -> str:
    parts = [d.name]
    if d.options:
        parts.append(", ".join(f"{k}={v}" for k, v in d.options.items()))
    if d.classes:
        parts.append(f"classes {list(d.classes)}")
    if d.n_samples:
        parts.append(f"{d.n_samples} samples (stratified, sample_seed {d.sample_seed})")
    if d.deslant:
        parts.append("deslanted")
    if d.encoding != "onehot":
        parts.append(f"{d.encoding} coding")
    if d.scale != "none":
        parts.append(f"{d.scale} scaling")
    if d.pca:
        parts.append(f"PCA to {d.pca}")
    return " (".join([parts[0], ", ".join(parts[1:]) + ")"]) if len(parts) > 1 else parts[0]


def _graph_text(g: GraphSpec | None) -> str:
    if g is None:
        return "each method's own"
    text = f"{g.metric}, {g.n_neighbors} nearest + {g.n_random} random per point"
    if g.options:
        text += " (" + ", ".join(f"{k}={v}" for k, v in g.options.items()) + ")"
    return text


def _metric_text(m: MetricSpec) -> str:
    o = m.options
    text = {
        "knn": lambda: f"{o['k']}-NN accuracy" + (" (tangent distance, raw images)"
                                                   if o["distance"] == "tangent" else ""),
        "svm": lambda: f"linear Crammer-Singer SVM accuracy (C={o['C']})",
        "linear_regression": lambda: "linear-regression classifier accuracy",
        "loo_knn": lambda: f"leave-one-out {o['k']}-NN accuracy on {o['rows']} rows",
        "accuracy": lambda: "transductive accuracy",
        "loo_curve": lambda: f"same class among K nearest ({o['rows']} rows)",
        "topology_curve": lambda: f"original nearest neighbour among K nearest ({o['rows']} rows)",
    }[m.kind]()
    if m.error:
        text = text.replace("accuracy", "error")
    return text + (f" [{', '.join(m.methods)}]" if m.methods else "")


# --------------------------------------------------------------------------- figures


def _make_figures(result: ExperimentResult) -> dict:
    from . import plotting

    spec = result.spec
    figures = {}
    for fig in spec.figures:
        try:
            ax = _FIGURE_MAKERS[fig.kind](result, fig, plotting)
        except (InputError, KeyError, ValueError) as exc:
            logger.warning("figure %s not drawn: %s", fig.name, exc)
            continue
        if ax is not None:
            figures[fig.name] = ax.figure
    return figures


def _artefact_for(result: ExperimentResult, fig: FigureSpec, what: str):
    for r in result.rows:
        art = result.artefacts.get(r["index"], {})
        if what in art and _figure_selects(result.spec, fig, _RowTask(r), fig.options["method"],
                                           fig.options.get("params")):
            return r, art
    raise KeyError(f"no successful run of {fig.options['method']!r} kept a {what}")


@dataclass
class _RowTask:
    row: dict

    def __getattr__(self, name):
        r = self.__dict__["row"]
        return json.loads(r["all_params"]) if name == "params" else r[name]


def _fig_embedding(result, fig, plotting):
    r, art = _artefact_for(result, fig, "embedding")
    dims = fig.options["dims"]
    Z = art["embedding"]
    if Z.shape[1] < dims:
        Z = np.column_stack([Z, np.zeros((Z.shape[0], dims - Z.shape[1]))])
    title = f"{r['method']} on {r['dataset']} (seed {r['seed']}; hollow: unlabeled)"
    return plotting.plot_embedding(Z, art["y"], art["labeled"], dims=dims, title=title)


def _fig_spectrum(result, fig, plotting):
    r, art = _artefact_for(result, fig, "spectrum")
    values = art["spectrum"]
    if art["spectrum_attribute"] == "spectrum_":
        # eigenvalue shares of a Gram matrix: PSD, so negatives are solver round-off
        values = np.clip(values, 0.0, None)
    top = fig.options["top"]
    if top is not None:
        values = values[:int(top)]
    title = f"{r['method']}: {art['spectrum_attribute'].rstrip('_')} ({r['dataset']})"
    return plotting.plot_spectrum(values, mark=fig.options["mark"], title=title)


def _fig_prototypes(result, fig, plotting):
    r, art = _artefact_for(result, fig, "prototypes")
    return plotting.plot_label_prototypes(art["prototypes"],
                                          title=f"label prototypes, {r['method']}")


def _fig_curve(result, fig, plotting):
    spec = result.spec
    metric = next(m for m in spec.metrics if m.name == fig.options["metric"])
    dataset = fig.dataset or spec.datasets[0].name
    fraction = spec.labels.fractions[0] if fig.fraction is None else fig.fraction
    ax = None
    K = np.arange(1, metric.options["max_k"] + 1)
    for (d, f, method, params, solver), rows in result.groups():
        if d != dataset or f != fraction or not spec.metric_applies(metric, spec.method(method)):
            continue
        if fig.options["methods"] is not None and method not in fig.options["methods"]:
            continue
        ok = [r for r in rows if r["status"] == "ok"]
        if not ok:
            continue
        A = np.array([[r[c] for r in ok] for c in metric.columns()])
        label = " ".join(s for s in (method, _params_text(params).replace("–", ""),
                                     solver or "") if s)
        ax = plotting.plot_accuracy_vs_dimension(K, A, ax=ax, label=label,
                                                 ylabel=_metric_text(metric))
    if ax is not None:
        ax.set_xlabel("K")
        ax.set_title(f"{metric.name} on {dataset}")
    return ax


def _fig_metric_vs_param(result, fig, plotting):
    spec = result.spec
    o = fig.options
    metric = next(m for m in spec.metrics if m.name == o["metric"])
    dataset = fig.dataset or spec.datasets[0].name
    fraction = spec.labels.fractions[0] if fig.fraction is None else fig.fraction
    lines: dict[tuple, dict] = {}
    for r in result.rows:
        if r["dataset"] != dataset or r["fraction"] != fraction or r["method"] != o["method"] \
                or r["status"] != "ok" or r.get(metric.name) is None:
            continue
        params = json.loads(r["params"])
        x = params.pop(o["param"])
        if not _is_number(x):
            continue
        key = (json.dumps(params, sort_keys=True), r["solver"])
        lines.setdefault(key, {}).setdefault(float(x), []).append(r[metric.name])
    ax = None
    for (params, solver), points in sorted(lines.items()):
        xs = sorted(points)
        A = [_mean_std(points[x])[:2] for x in xs]
        label = " ".join(s for s in (_params_text(params).replace("–", ""), solver or "") if s)
        ax = plotting.plot_accuracy_vs_dimension(xs, [a[0] for a in A], ax=ax,
                                                 label=label or None,
                                                 std=[a[1] if math.isfinite(a[1]) else 0.0
                                                      for a in A],
                                                 ylabel=_metric_text(metric))
    if ax is None:
        return None
    if o["log"] and min(min(p) for p in lines.values()) > 0:
        ax.set_xscale("log")
    ax.set_xlabel(o["param"])
    ax.set_title(f"{o['method']}: {metric.name} against {o['param']} ({dataset})")
    for pv in spec.paper:
        if pv.method == o["method"] and pv.metric == metric.name \
                and pv.dataset in (None, dataset):
            ax.axhline(pv.value / 100, color="k", ls=":", lw=1)
            ax.annotate(f"paper {pv.value:g}", xy=(0.01, pv.value / 100),
                        xycoords=("axes fraction", "data"), fontsize="small", va="bottom")
            break
    return ax


_FIGURE_MAKERS = {
    "embedding": _fig_embedding,
    "spectrum": _fig_spectrum,
    "label_prototypes": _fig_prototypes,
    "curve": _fig_curve,
    "metric_vs_param": _fig_metric_vs_param,
}

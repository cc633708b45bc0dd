"""The spec schema, written once as data, and the frozen (hashable) spec objects.

Every table of a spec is described by a tuple of :class:`Field` (name, the
values accepted as a :class:`~sdpembed._checks.Check`, default, one line of
documentation; the vocabulary is :mod:`~sdpembed.experiments.tables`);
:func:`read_table` validates a table against it, fills the
defaults and writes every error from the same description, starting with the
dotted name of the field (``labels.fraction: expected ...; got ...``).
:func:`schema_reference` renders the same tables as text for the package
documentation, so the documentation cannot drift from the checks.

The parsed spec is made of frozen dataclasses whose mappings are
:class:`FrozenMap` and whose sequences are tuples: a spec, its datasets,
label settings and graph are hashable, so the runner caches data, splits and
graphs keyed by the objects themselves.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .._checks import Boolean, Integer, ListOf, Number, OneOf, PlainName, Table, Text
from .tables import (
    REQUIRED,
    Field,
    FrozenMap,
    check_known,
    fail,
    freeze,
    none_strings,
    read_table,
    thaw,
)

if TYPE_CHECKING:  # annotations only
    from .metrics import MetricKind

__all__ = ["REQUIRED", "Field", "FrozenMap", "freeze", "thaw", "none_strings", "read_table",
           "fail", "check_known", "schema_reference", "DatasetSpec", "LabelSpec", "GraphSpec",
           "MethodSpec", "MetricSpec", "PaperValue", "FigureSpec", "Spec"]

#: Largest number of seeds, and largest seed (numpy's RandomState takes seeds < 2**32).
MAX_SEEDS = 10_000
MAX_SEED = 2**32 - 1
#: Largest grid a spec may describe (runs).
MAX_RUNS = 1_000_000


# --------------------------------------------------------------------------- the schema

_SOLVERS = OneOf(Text(nonempty=True), ListOf(Text(nonempty=True)))
_FRACTION = OneOf(Integer(1), Number(0, 1, lo_open=True))  # a count, or a share

TOP_FIELDS = (
    Field("name", PlainName(), None,
          "name of the run; its results go to OUT/<name>/ (default: the file name)"),
    Field("description", Text(), "", "one line"),
    Field("seeds", OneOf(Integer(1, MAX_SEEDS),
                         ListOf(Integer(0, MAX_SEED), max_len=MAX_SEEDS, distinct=True)), 1,
          "number of seeds (0, 1, ...) or a list of seeds; each seed draws the kept labels"),
    Field("solvers", _SOLVERS, ("CLARABEL",), "backends of the SDP methods (the solver axis)"),
    Field("solver_options", Table(), {},
          "[solver_options.<BACKEND>]: options of solve() for that backend"),
    Field("dataset", Table(), REQUIRED, "the data (see [dataset])"),
    Field("labels", Table(), {}, "labels kept (see [labels])"),
    Field("graph", Table(), None, "the neighbourhood graph of the Gram methods"),
    Field("methods", Table(), REQUIRED, "[methods.<label>]: one table per method"),
    Field("metrics", Table(), REQUIRED, "[metrics.<name>]: one table per metric"),
    Field("paper", Table(), {}, "the paper's numbers, shown beside ours"),
    Field("figures", Table(), {}, "[figures.<name>]: one table per figure"),
)

DATASET_FIELDS = (
    Field("options", Table(), {},
          "keyword arguments of the loader (e.g. subset = 'train'); data_home only inside the "
          "data folder"),
    Field("n_samples", Integer(4), None, "random stratified subsample (sample_seed)", none=True),
    Field("sample_seed", OneOf(Integer(0, MAX_SEED), Text(("seed",))), 0,
          "seed of the subsample; 'seed': each run's seed draws the subsample as well as "
          "the kept labels"),
    Field("classes", ListOf(Integer(), min_len=2, distinct=True), None,
          "keep these classes only", none=True),
    Field("deslant", Boolean(), False, "deslant the images (usps, umist32, digits)"),
    Field("encoding", Text(("onehot", "ordinal")), "onehot",
          "car, mushroom: one-hot or 1-based ordinal codes"),
    Field("scale", Text(("none", "standard", "minmax")), "none",
          "scaling fitted on the fitting rows"),
    Field("pca", Integer(0), 0, "PCA to this many dimensions first (0: none)"),
    Field("deduplicate", Boolean(), False,
          "keep the first of identical rows (before subsampling); identical rows with "
          "different labels are an error"),
)
DATASET_NAME = Field("name", OneOf(Text(nonempty=True), ListOf(Text(nonempty=True),
                                                                  distinct=True)),
                     REQUIRED, "a dataset name, or a list ([dataset.<name>] overrides fields)")

LABEL_FIELDS = (
    Field("fraction", OneOf(_FRACTION, ListOf(_FRACTION, distinct=True)), 1.0,
          "a float in (0, 1]: share of labels kept; an integer: count kept; or a list"),
    Field("per_class", Boolean(), True, "keep the share in each class"),
    Field("min_per_class", Integer(0), 1, "at least this many labels per class"),
    Field("protocol", Text(("transductive", "inductive")), "transductive",
          "inductive: projections are fitted on the labeled rows only"),
)

#: tangent-distance options of [graph] (metric = "tangent"); absent ones keep the defaults
#: of sdpembed.tangent.tangent_knn_graph
TANGENT_FIELDS = (
    Field("candidates", Integer(1), None, "Euclidean candidates re-ranked ('none': all)",
          none=True),
    Field("sigma", Number(0), None, "tangent smoothing", none=True),
    Field("blur", Number(0), None, "blur of the images", none=True),
    Field("regularization", Number(0), None, "tangent regularisation", none=True),
    Field("transforms", ListOf(Text(nonempty=True)), None, "tangent transforms", none=True),
)
GRAPH_FIELDS = (
    Field("metric", Text(nonempty=True), "euclidean",
          "'tangent' (images) or a scikit-learn metric"),
    Field("n_neighbors", Integer(0), 2, "nearest neighbours per point"),
    Field("n_random", Integer(0), 1, "random long edges per point"),
)

METHOD_FIELDS = (
    Field("estimator", Text(nonempty=True), REQUIRED, "a name of METHODS"),
    Field("solvers", _SOLVERS, None, "this method's own solver axis"),
)

METRIC_FIELDS = (
    Field("kind", Text(nonempty=True), REQUIRED, "a kind of METRIC_KINDS"),
    Field("methods", ListOf(Text(nonempty=True)), None, "only these method labels"),
)
METRIC_ERROR = Field("error", Boolean(), False, "report 1 - accuracy (scalar metrics)")

PAPER_FIELDS = (
    Field("source", Text(), "", "the reference"),
    Field("values", ListOf(Table(), min_len=0), (), "[[paper.values]] entries"),
)
PAPER_VALUE_FIELDS = (
    Field("method", Text(nonempty=True), REQUIRED, "a method label"),
    Field("metric", Text(nonempty=True), REQUIRED, "a scalar metric name"),
    Field("value", Number(), REQUIRED, "in percent"),
    Field("std", Number(0), None, "in percent"),
    Field("dataset", Text(nonempty=True), None, "only for this dataset"),
    Field("fraction", Number(0, lo_open=True), None, "only for this label fraction"),
    Field("params", Table(), None, "only for these parameter values"),
)

FIGURE_FIELDS = (
    Field("kind", Text(nonempty=True), REQUIRED, "a kind of FIGURE_KINDS"),
    Field("dataset", Text(nonempty=True), None, "default: the first dataset"),
    Field("fraction", Number(0, lo_open=True), None, "default: the first label fraction"),
)


def schema_reference() -> str:
    """The schema as reStructuredText: one definition list per table."""
    def block(title: str, fields: Sequence[Field]) -> list[str]:
        lines = [title, "~" * len(title), ""]
        for f in fields:
            default = "required" if f.default is REQUIRED else repr(thaw(f.default))
            lines += [f"``{f.name}``", f"    {f.check.what}; default {default}. {f.doc}", ""]
        return lines

    parts = [*block("Top level", TOP_FIELDS), *block("[dataset]", (DATASET_NAME, *DATASET_FIELDS)),
             *block("[labels]", LABEL_FIELDS), *block("[graph]", GRAPH_FIELDS),
             *block("[graph] with metric = 'tangent'", TANGENT_FIELDS),
             *block("[methods.<label>]", METHOD_FIELDS),
             *block("[metrics.<name>]", (*METRIC_FIELDS, METRIC_ERROR)),
             *block("[paper]", PAPER_FIELDS), *block("[[paper.values]]", PAPER_VALUE_FIELDS),
             *block("[figures.<name>]", FIGURE_FIELDS)]
    return "\n".join(parts)


# --------------------------------------------------------------------------- spec objects


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset block of a spec (``[dataset]`` with a single ``name``)."""

    name: str
    options: FrozenMap = field(default_factory=FrozenMap)
    n_samples: int | None = None
    sample_seed: int | str = 0
    classes: tuple | None = None
    deslant: bool = False
    encoding: str = "onehot"
    scale: str = "none"
    pca: int = 0
    deduplicate: bool = False


@dataclass(frozen=True)
class LabelSpec:
    fractions: tuple
    per_class: bool = True
    min_per_class: int = 1
    protocol: str = "transductive"


@dataclass(frozen=True)
class GraphSpec:
    metric: str = "euclidean"
    n_neighbors: int = 2
    n_random: int = 1
    options: FrozenMap = field(default_factory=FrozenMap)


@dataclass(frozen=True)
class MethodSpec:
    """A method of the spec: its label, estimator name, parameters (tuples are sweeps)."""

    label: str
    method: str
    params: FrozenMap
    solvers: tuple | None = None

    def combinations(self) -> list[FrozenMap]:
        """Every parameter setting of the sweep (cartesian product of the tuple values)."""
        names = sorted(self.params)
        axes = [self.params[k] if isinstance(self.params[k], tuple) else (self.params[k],)
                for k in names]
        return [FrozenMap(zip(names, values, strict=True)) for values in itertools.product(*axes)]

    def n_combinations(self) -> int:
        n = 1
        for v in self.params.values():
            n *= len(v) if isinstance(v, tuple) else 1
        return n

    @property
    def swept(self) -> list[str]:
        return sorted(k for k, v in self.params.items() if isinstance(v, tuple))


@dataclass(frozen=True)
class MetricSpec:
    name: str
    kind: str
    options: FrozenMap
    methods: tuple | None = None
    error: bool = False

    @property
    def info(self) -> MetricKind:
        from .metrics import METRIC_KINDS

        return METRIC_KINDS[self.kind]

    @property
    def scalar(self) -> bool:
        return self.info.scalar

    def columns(self) -> list[str]:
        return self.info.columns(self.name, self.options)

    def describe(self) -> str:
        text = self.info.describe(self.options)
        if self.error:
            text = text.replace("accuracy", "error")
        return text + (f" [{', '.join(self.methods)}]" if self.methods else "")


@dataclass(frozen=True)
class PaperValue:
    method: str
    metric: str
    value: float
    std: float | None = None
    dataset: str | None = None
    fraction: float | None = None
    params: FrozenMap | None = None

    def matches(self, dataset: str, fraction: float, method: str, params: Mapping) -> bool:
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
    options: FrozenMap
    dataset: str | None = None
    fraction: float | None = None


@dataclass(frozen=True)
class Spec:
    """A validated experiment spec (see :mod:`sdpembed.experiments` for the TOML format).

    Hashable: every part is frozen, so the runner's caches key on the parts.
    ``raw`` is the parsed TOML (frozen), which identifies a run in its
    manifest and is written to ``results.json``.
    """

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
    solver_options: FrozenMap = field(default_factory=FrozenMap)  # backend -> options
    path: str | None = None
    raw: FrozenMap = field(default_factory=FrozenMap, compare=False, repr=False)

    def method(self, label: str) -> MethodSpec:
        return next(m for m in self.methods if m.label == label)

    def dataset(self, name: str) -> DatasetSpec:
        return next(d for d in self.datasets if d.name == name)

    def metric_applies(self, metric: MetricSpec, method: MethodSpec) -> bool:
        from .methods import METHODS

        if metric.methods is not None:
            return method.label in metric.methods
        return METHODS[method.method].kind in metric.info.applies_to(metric.options)

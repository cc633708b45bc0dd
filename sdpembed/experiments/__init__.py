"""Experiments from declarative TOML specs: the grid runner behind ``sdpembed run``.

A *spec* (a TOML file; the ones shipped with sdpembed are package data in
``sdpembed/experiments/specs/``, listed by :func:`list_specs`) names a
dataset, how many labels are kept, the preprocessing, a neighbourhood graph,
methods with their parameters, solver backends, seeds and metrics.
:func:`run_spec` expands the grid

    dataset x label fraction x method x parameter sweep x solver x seed,

runs every cell (serially, in joblib worker processes, or as futures on a
Dask cluster, which get the data from the runner), and returns an
:class:`ExperimentResult` holding a tidy table (one row per run, with the
solver's name, version and options and the timings), written as CSV, JSON, a
markdown summary (mean ± std per method, solver and parameters, next to the
paper's numbers when the spec gives them) and the figures the spec asks for.

Modules: :mod:`.schema` (the spec schema, written once as data, and the
frozen spec objects), :mod:`.spec` (reading and validating a spec),
:mod:`.methods`, :mod:`.metrics` and :mod:`.figures` (each kind described in
one place), :mod:`.grid`, :mod:`.tasks` (one run), :mod:`.store` (durable
results), :mod:`.runner`, :mod:`.results` (tables and summary).

Durable runs
------------
With an output folder every finished task is appended to ``rows.jsonl`` and
``fsync``'d before the next one is awaited; ``SIGINT``, ``SIGTERM``,
``SIGKILL`` or a crash keep every finished row, and ``resume=True``
(``sdpembed run --resume``) finishes the run with the same tables as an
uninterrupted one. A folder holding another run's results is refused unless
resumed or overwritten, and a lock names the run writing it. Every exception
inside a task becomes that row's ``status = "error"`` (type and message) and
the grid carries on; an ``optimal_inaccurate`` solve is ``"inaccurate"``
(or an error if far from optimal), never ``"ok"``.

Spec format
-----------
.. code-block:: toml

    name = "smoke"                    # default: the file name; a plain file name
    description = "one line"
    seeds = 3                         # 0, 1, 2; or a list such as [0, 5, 7]
    solvers = ["CLARABEL"]            # backends of the SDP methods (the grid's solver axis)

    [solver_options.LOWRANK]          # options of one backend, passed to solve() whenever a
    time_limit = 120                  # run uses it, checked by sdpembed.backend_options
    tol = 1e-4                        # (LOWRANK: by sdpembed.lowrank.LowRankOptions)
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

    [figures.embedding]               # written to figures/embedding.png: a plain file name
    kind = "embedding"                # see FIGURE_KINDS
    method = "dvu"

Every SDP run records its solve: ``solve_status``, the backend's ``gap``
and, for backends that certify their own solution (LOWRANK),
``certified_gap``; the summary shows the statuses and the largest certified
gap of each cell. Every error in a spec is a :class:`SpecError` whose message
starts with the dotted name of the field, e.g. ``methods.dvu.slack_weight``.

Field reference
---------------
Generated from :mod:`sdpembed.experiments.schema` (the checks themselves);
the kinds' own options are in :data:`METRIC_KINDS` and :data:`FIGURE_KINDS`.

"""

from __future__ import annotations

from ..exceptions import OutputError, SpecError  # re-exported
from .figures import FIGURE_KINDS, FigureKind
from .grid import Task, expand_grid
from .methods import METHODS, HeatKNNKernel, MethodInfo
from .metrics import METRIC_KINDS, MetricKind
from .results import ExperimentResult
from .runner import RunInterrupted, load_result, run_spec
from .schema import (
    DatasetSpec,
    FigureSpec,
    FrozenMap,
    GraphSpec,
    LabelSpec,
    MethodSpec,
    MetricSpec,
    PaperValue,
    Spec,
    schema_reference,
)
from .spec import find_spec, list_specs, load_spec, parse_spec, tomllib
from .tasks import clear_caches, run_task

__all__ = [
    "SpecError",
    "OutputError",
    "METHODS",
    "METRIC_KINDS",
    "FIGURE_KINDS",
    "MethodInfo",
    "MetricKind",
    "FigureKind",
    "HeatKNNKernel",
    "Spec",
    "DatasetSpec",
    "LabelSpec",
    "GraphSpec",
    "MethodSpec",
    "MetricSpec",
    "PaperValue",
    "FigureSpec",
    "FrozenMap",
    "Task",
    "ExperimentResult",
    "RunInterrupted",
    "load_spec",
    "parse_spec",
    "expand_grid",
    "run_task",
    "run_spec",
    "load_result",
    "find_spec",
    "list_specs",
    "clear_caches",
    "schema_reference",
    "tomllib",
]

if __doc__:  # None under python -OO
    __doc__ += schema_reference()

"""Reading a spec: TOML text -> a validated, frozen :class:`~.schema.Spec`.

Nothing is loaded or fitted here. Every field is checked against the schema
(:mod:`.schema`), method parameters by the estimators' own parameter
validation, backend options by :func:`sdpembed.backend_options.check_backend_options`
(LOWRANK's by :class:`sdpembed.lowrank.LowRankOptions`), and every error is a
:class:`~sdpembed.exceptions.SpecError` starting with the dotted name of the
field. Names that become files (the spec's ``name``, figure names) must be
plain file names, and nothing a spec says may write outside ``--out`` or the
data folder.
"""

from __future__ import annotations

import inspect
import logging
import os
import re
from collections.abc import Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from .. import datasets as _datasets
from .._checks import PlainName, is_number
from .._sklearn import StrOptions
from ..exceptions import InputError, SpecError
from .figures import FIGURE_KINDS
from .methods import METHODS, MethodInfo, uses_solver
from .metrics import METRIC_KINDS
from .schema import (
    DATASET_FIELDS,
    DATASET_NAME,
    FIGURE_FIELDS,
    GRAPH_FIELDS,
    LABEL_FIELDS,
    MAX_RUNS,
    METHOD_FIELDS,
    METRIC_ERROR,
    METRIC_FIELDS,
    PAPER_FIELDS,
    PAPER_VALUE_FIELDS,
    TANGENT_FIELDS,
    TOP_FIELDS,
    DatasetSpec,
    FigureSpec,
    FrozenMap,
    GraphSpec,
    LabelSpec,
    MethodSpec,
    MetricSpec,
    PaperValue,
    Spec,
    fail,
    freeze,
    none_strings,
    read_table,
    thaw,
)
from .tables import did_you_mean

__all__ = ["load_spec", "parse_spec", "find_spec", "list_specs", "SPECS_PACKAGE", "tomllib"]

logger = logging.getLogger(__name__)

#: Package whose ``specs/`` folder holds the specs shipped with sdpembed.
SPECS_PACKAGE = "sdpembed.experiments"
#: Largest spec file read (bytes).
MAX_SPEC_BYTES = 1 << 20

IMAGE_SHAPES = {"usps": (16, 16), "umist32": (32, 32), "digits": (8, 8)}
_CATEGORICAL = ("car", "mushroom")

#: Columns of every result row: a metric may not take one of these names.
ROW_COLUMNS = ("index", "key", "spec", "dataset", "fraction", "protocol", "seed", "method",
               "estimator", "params", "all_params", "solver", "solver_version",
               "solver_options", "status", "error", "error_stage", "warnings", "n_samples",
               "n_features", "n_labeled", "n_components", "objective", "solve_status", "gap",
               "certified_gap", "iterations", "compile_s", "solve_s", "prepare_s", "fit_s",
               "eval_s", "wall_s")


# --------------------------------------------------------------------------- files


def _shipped():
    return resources.files(SPECS_PACKAGE).joinpath("specs")


def list_specs() -> list[str]:
    """Names of the specs shipped with sdpembed (``sdpembed run NAME``)."""
    return sorted(p.name[:-5] for p in _shipped().iterdir() if p.name.endswith(".toml"))


def find_spec(name_or_path: str | os.PathLike) -> Path | Traversable:
    """A spec file: an existing path, else the spec of that name shipped with sdpembed.

    Shipped specs are package data (found through :mod:`importlib.resources`),
    so ``sdpembed run smoke`` works from any folder and from a wheel install.

    Returns
    -------
    pathlib.Path or importlib.resources.abc.Traversable

    Raises
    ------
    SpecError
        No such file and no such shipped spec.
    """
    p = Path(name_or_path)
    if p.is_file():
        return p
    stem = p.name[:-5] if p.name.endswith(".toml") else p.name
    if str(name_or_path) in (stem, f"{stem}.toml"):  # a bare name, not a path
        candidate = _shipped().joinpath(f"{stem}.toml")
        if candidate.is_file():
            return candidate
    raise SpecError(f"no spec {str(name_or_path)!r}{did_you_mean(stem, list_specs())}: not a "
                    f"file, and not one of the specs shipped with sdpembed "
                    f"({', '.join(list_specs())})")


def load_spec(path: str | os.PathLike | Traversable) -> Spec:
    """Read and validate a TOML spec (a path, or a shipped spec from :func:`find_spec`).

    Raises
    ------
    SpecError
        Unreadable, binary or too large a file, invalid TOML, or an invalid
        field (the message names it).
    """
    where = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"cannot read spec {where}: {exc}") from exc
    if len(data) > MAX_SPEC_BYTES:
        raise SpecError(f"{where} is {len(data):,} bytes; a spec is a short text file "
                        f"(at most {MAX_SPEC_BYTES:,} bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{where} is not a text file (invalid UTF-8 at byte {exc.start}); a "
                        "spec is a TOML text file") from None
    if "\x00" in text:
        raise SpecError(f"{where} is not a text file (it holds NUL bytes); a spec is a TOML "
                        "text file")
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{where} is not valid TOML: {exc}") from exc
    stem = path.name[:-5] if path.name.endswith(".toml") else path.name
    return parse_spec(parsed, name=stem, path=where)


# --------------------------------------------------------------------------- the spec


def parse_spec(data: Mapping, *, name: str | None = None, path: str | None = None) -> Spec:
    """Validate a spec given as a mapping (parsed TOML); see :mod:`sdpembed.experiments`.

    Raises
    ------
    SpecError
    """
    if not isinstance(data, Mapping):
        raise SpecError(f"a spec must be a table; got {type(data).__name__}")
    top = read_table(data, TOP_FIELDS, "")
    spec_name = top["name"]
    if spec_name is None:
        spec_name = name or "experiment"
        if not PlainName()(spec_name):
            fail("name", f"the file name {spec_name!r} is not a plain file name; set name = "
                         "'...' in the spec (it names the results folder)")
    seeds = top["seeds"]
    seeds = tuple(range(seeds)) if isinstance(seeds, int) else tuple(int(s) for s in seeds)
    datasets = _parse_datasets(top["dataset"])
    lab = read_table(top["labels"], LABEL_FIELDS, "labels")
    fractions = lab["fraction"] if isinstance(lab["fraction"], list) else [lab["fraction"]]
    labels = LabelSpec(tuple(fractions), lab["per_class"], int(lab["min_per_class"]),
                       lab["protocol"])
    graph = _parse_graph(top["graph"], datasets) if top["graph"] is not None else None
    methods = _parse_methods(top["methods"])
    metrics = _parse_metrics(top["metrics"], methods, datasets)
    solvers = _parse_solvers(top["solvers"], "solvers")
    solver_options = _parse_solver_options(top["solver_options"])
    methods = tuple(check_method_solvers(m, solvers) for m in methods)
    if graph is not None and graph.metric == "tangent" and labels.protocol == "inductive":
        fail("graph.metric", "a graph is built on all rows; use protocol = 'transductive'")
    paper_source, paper = _parse_paper(top["paper"], methods, metrics, datasets)
    figures = _parse_figures(top["figures"], methods, metrics, datasets)
    runs = len(seeds) * len(fractions) * len(datasets) * sum(
        m.n_combinations() * max(1, len(m.solvers or solvers)) for m in methods)
    if runs > MAX_RUNS:
        fail("seeds", f"the grid has {runs:,} runs (seeds x label fractions x datasets x "
                      f"method settings x solvers); at most {MAX_RUNS:,}")
    return Spec(name=spec_name, description=top["description"], datasets=datasets,
                labels=labels, graph=graph, methods=methods, metrics=metrics, solvers=solvers,
                seeds=seeds, paper_source=paper_source, paper=paper, figures=figures,
                solver_options=solver_options, path=path, raw=freeze(data))


def _parse_datasets(table: Mapping) -> tuple:
    """``[dataset]``; with several names, ``[dataset.<name>]`` overrides fields for one of them."""
    where = "dataset"
    if "name" not in table:
        fail(f"{where}.name", f"missing; expected {DATASET_NAME.check.what}")
    problem = DATASET_NAME.check.problem(table["name"])
    if problem:
        fail(f"{where}.name", problem)
    names = [table["name"]] if isinstance(table["name"], str) else list(table["name"])
    known = _datasets.list_datasets()
    for n in names:
        if n not in known:
            fail(f"{where}.name", f"unknown dataset {n!r}{did_you_mean(n, known)}; choose from "
                                 f"{known}")
    shared_given = read_table(table, (DATASET_NAME, *DATASET_FIELDS), where, extra=names)
    field_names = [f.name for f in DATASET_FIELDS]
    out = []
    for n in names:
        override = table.get(n, {})
        if not isinstance(override, Mapping) or "name" in override:
            fail(f"{where}.{n}", "expected a table of fields overriding [dataset] for " + n)
        own = read_table(override, DATASET_FIELDS, f"{where}.{n}")
        fields = {k: own[k] if k in override else shared_given[k] for k in field_names}
        origin = {k: f"{where}.{n}" if k in override else where for k in field_names}
        out.append(_one_dataset(n, fields, origin))
    return tuple(out)


def _one_dataset(n: str, f: dict, origin: dict) -> DatasetSpec:
    options = none_strings(dict(f["options"]))
    where = f"{origin['options']}.options"
    if "return_X_y" in options:
        fail(f"{where}.return_X_y", "set by the runner")
    if "data_home" in options:
        options["data_home"] = _data_home_inside(options["data_home"], f"{where}.data_home")
    loader = _datasets._LOADERS[n]
    try:
        inspect.signature(loader).bind(**options)
    except TypeError as exc:
        fail(where, f"bad loader arguments for {n!r}: {exc}")
    if f["deslant"] and n not in IMAGE_SHAPES:
        fail(f"{origin['deslant']}.deslant",
             f"{n!r} is not an image dataset ({sorted(IMAGE_SHAPES)})")
    if f["encoding"] == "ordinal" and n not in _CATEGORICAL:
        fail(f"{origin['encoding']}.encoding",
             f"'ordinal' needs a categorical dataset {_CATEGORICAL}; {n!r} is not")
    sample_seed = f["sample_seed"] if f["sample_seed"] == "seed" else int(f["sample_seed"])
    return DatasetSpec(n, freeze(options), f["n_samples"], sample_seed,
                       None if f["classes"] is None else tuple(int(c) for c in f["classes"]),
                       f["deslant"], f["encoding"], f["scale"], int(f["pca"]),
                       f["deduplicate"])


def _data_home_inside(value, where: str) -> str:
    """A spec's ``data_home`` must lie inside the data folder (loaders write archives there)."""
    if not isinstance(value, str) or not value.strip():
        fail(where, f"expected a folder name; got {value!r}")
    root = _datasets.data_home().expanduser().resolve()
    target = (root / Path(value).expanduser()).resolve()
    if target != root and root not in target.parents:
        fail(where, f"{value!r} is outside the data folder {root}: a spec may only name a "
                    f"folder inside it (set {_datasets.ENV_VAR} to use another data folder)")
    return str(target)


def _parse_graph(table: Mapping, datasets: tuple) -> GraphSpec:
    where = "graph"
    metric = table.get("metric", "euclidean") if isinstance(table, Mapping) else None
    tangent = metric == "tangent"
    g = read_table(table, (*GRAPH_FIELDS, *(TANGENT_FIELDS if tangent else ())), where)
    if g["n_neighbors"] + g["n_random"] == 0:
        fail(f"{where}.n_neighbors", "need at least one edge per point (n_neighbors + n_random)")
    options = {f.name: g[f.name] for f in TANGENT_FIELDS if tangent and f.name in table}
    if tangent:
        bad = [d.name for d in datasets if d.name not in IMAGE_SHAPES]
        if bad:
            fail(f"{where}.metric", f"'tangent' needs image datasets; {bad} are not")
        if any(d.pca or d.scale != "none" for d in datasets):
            logger.info("tangent graph: built on the (deslanted) images, before scale and PCA")
    elif metric == "precomputed":
        fail(f"{where}.metric", "'precomputed' is not available in a spec")
    else:
        from sklearn.metrics.pairwise import distance_metrics
        from sklearn.neighbors import VALID_METRICS

        known = set(distance_metrics()) | set(VALID_METRICS["brute"])
        if metric not in known:
            fail(f"{where}.metric", f"unknown metric {metric!r}"
                                    f"{did_you_mean(metric, sorted(known | {'tangent'}))}; use "
                                    "'tangent' or a scikit-learn metric such as 'euclidean'")
    return GraphSpec(metric, int(g["n_neighbors"]), int(g["n_random"]), freeze(options))


_RESERVED = {f.name for f in METHOD_FIELDS}
_RUNNER_PARAMS = {"graph": "set it in the [graph] table",
                  "solver": "list backends in 'solvers' (top level or per method)",
                  "solver_options": "give each backend's options in a [solver_options.<BACKEND>] "
                                    "table (e.g. [solver_options.LOWRANK] time_limit = 600)"}


def _parse_methods(table: Mapping) -> tuple:
    if not table:
        fail("methods", "at least one method is needed")
    out = []
    for label, body in table.items():
        where = f"methods.{label}"
        if not isinstance(body, Mapping):
            fail(where, f"expected a table; got {body!r}")
        base = read_table(body, METHOD_FIELDS, where, extra=set(body) - _RESERVED)
        name = base["estimator"]
        if name not in METHODS:
            fail(f"{where}.estimator", f"unknown method {name!r}{did_you_mean(name, METHODS)}; "
                                      f"choose from {sorted(METHODS)}")
        info = METHODS[name]
        allowed = info.param_names()
        params = {}
        for key, value in body.items():
            if key in _RESERVED:
                continue
            if key in _RUNNER_PARAMS and key in allowed:
                fail(f"{where}.{key}", f"set by the runner: {_RUNNER_PARAMS[key]}")
            if key not in allowed:
                known = sorted(allowed - set(_RUNNER_PARAMS))
                fail(f"{where}.{key}", f"unknown parameter of {name}{did_you_mean(key, known)}; "
                                       f"known: {known}")
            if isinstance(value, list):
                if not value:
                    fail(f"{where}.{key}", "an empty list sweeps over nothing")
                value = [none_strings(v) for v in value]
            params[key] = none_strings(value)
        solvers = None
        if base["solvers"] is not None:
            solvers = _parse_solvers(base["solvers"], f"{where}.solvers")
            if "solver" not in allowed:
                fail(f"{where}.solvers", f"{name} takes no solver")
        spec = MethodSpec(label, name, freeze(params), solvers)
        if spec.n_combinations() > MAX_RUNS:
            fail(where, f"the sweep has {spec.n_combinations():,} settings; at most "
                        f"{MAX_RUNS:,}")
        for combo in spec.combinations():
            _validate_params(info, combo, where)
        if solvers and not any(uses_solver(info, c) for c in spec.combinations()):
            fail(f"{where}.solvers", f"{name} uses no solver with these parameters (set "
                                     "method = 'sdp' for its SDP path)")
        out.append(spec)
    return tuple(out)


def _validate_params(info: MethodInfo, params: Mapping, where: str) -> None:
    """Parameter validation of the estimator itself, with the field named on failure."""
    if info.factory is None:
        return
    sig = inspect.signature(info.factory.__init__).parameters
    for key, value in params.items():
        default = sig[key].default if key in sig else None
        if is_number(default) and isinstance(value, str) and value not in ("auto",):
            fail(f"{where}.{key}", f"expected a number; got {value!r} (string)")
        if isinstance(default, str) and isinstance(value, bool):
            fail(f"{where}.{key}", f"expected a string such as {default!r}; got {value!r}")
    est = None
    try:
        # the estimator gets what the runner will give it: dicts and lists, not frozen maps
        est = info.build(thaw(dict(params)))
        if getattr(est, "_parameter_constraints", None):
            est._validate_params()  # scikit-learn's declarative checks
        if hasattr(est, "_validate_params_common"):
            est._validate_params_common()
    except (InputError, TypeError, ValueError) as exc:
        # scikit-learn: "The 'alpha' parameter of LabelSpreading must be ..."
        m = re.search(r"The '(\w+)' parameter", str(exc))
        bad = m.group(1) if m else next(
            (k for k in params if f"{k} " in str(exc) or f"'{k}'" in str(exc)), None)
        fail(f"{where}.{bad}" if bad else where, str(exc) + _closest_option(est, bad, params))


def _closest_option(est, key: str | None, params: Mapping) -> str:
    """`` (did you mean 'x'?)`` for a string parameter refused by the estimator's
    declared constraints, from the names its ``StrOptions`` accept; else ``""``."""
    value = params.get(key) if key else None
    if not isinstance(value, str):
        return ""
    options = [o for c in getattr(est, "_parameter_constraints", {}).get(key, ())
               if isinstance(c, StrOptions) for o in c.options]
    return did_you_mean(value, sorted(options))


def known_solvers() -> set[str]:
    from ..backends import CONIC_BACKENDS
    from ..solvers import TOOLKIT_BACKENDS

    return set(CONIC_BACKENDS) | set(TOOLKIT_BACKENDS)


def _parse_solvers(value, where: str) -> tuple:
    value = [value] if isinstance(value, str) else value
    if not isinstance(value, (list, tuple)) or not value \
            or not all(isinstance(s, str) for s in value):
        fail(where, f"expected a solver name or a non-empty list of names; got {value!r}")
    names = [s.upper() for s in value]
    known = known_solvers()
    for s in names:
        if s not in known:
            fail(where, f"unknown solver {s!r}{did_you_mean(s, known)}; known backends: "
                        f"{sorted(known)}")
    return tuple(dict.fromkeys(names))


def _lowrank_optional_fields() -> set[str]:
    """LOWRANK options that take ``None`` (written ``"none"`` in TOML)."""
    from ..lowrank.options import LowRankOptions

    return {k for k, f in LowRankOptions.__dataclass_fields__.items()
            if f.default is None or "None" in str(f.type)}


def _parse_solver_options(table: Mapping) -> FrozenMap:
    """``[solver_options.<BACKEND>]`` tables: backend (upper case) -> options of ``solve()``.

    Each table is checked by :func:`sdpembed.backend_options.check_backend_options`
    (option names, types and ranges of that backend; LOWRANK's by its own
    ``LowRankOptions``); options that would write files are refused.
    """
    from ..backend_options import check_backend_options

    out: dict[str, FrozenMap] = {}
    known = known_solvers() if table else set()
    for key, body in table.items():
        name = key.upper()
        where = f"solver_options.{key}"
        if not isinstance(body, Mapping):
            fail(where, f"expected a table of {key}'s options (e.g. [solver_options.{key}] "
                        f"time_limit = 600); got {body!r}")
        if name not in known:
            fail(where, f"unknown solver {name!r}{did_you_mean(name, known)}; known backends: "
                        f"{sorted(known)}")
        if name in out:
            fail(where, f"options of {name} are given twice")
        options = dict(body)
        if name == "LOWRANK":
            nullable = _lowrank_optional_fields()
            options = {k: None if k in nullable and v == "none" else v
                       for k, v in options.items()}
        try:
            check_backend_options(name, options, allow_files=False)
        except InputError as exc:
            m = re.search(r"option '([^']+)'", str(exc))
            fail(f"{where}.{m.group(1)}" if m else where, str(exc))
        out[name] = freeze(options)
    return FrozenMap(out)


def check_method_solvers(method: MethodSpec, solvers: tuple) -> MethodSpec:
    """Solvers of an SDP method must be usable here (checked only where one is used)."""
    from ..solvers import INSTALL_HINTS, available_solvers

    info = METHODS[method.method]
    if not any(uses_solver(info, combo) for combo in method.combinations()):
        return method
    usable = set(available_solvers())
    where = f"methods.{method.label}.solvers" if method.solvers else "solvers"
    for s in method.solvers or solvers:
        if s not in usable:
            hint = INSTALL_HINTS.get(s, "")
            fail(where, f"solver {s!r} is not usable here ({hint or 'not available'}); "
                        f"available: {sorted(usable)}")
    return method


def _parse_metrics(table: Mapping, methods: tuple, datasets: tuple) -> tuple:
    if not table:
        fail("metrics", "at least one metric is needed")
    labels = {m.label: m for m in methods}
    out = []
    for name, body in table.items():
        where = f"metrics.{name}"
        if "@" in name:
            fail(where, "metric names may not contain '@'")
        if name in ROW_COLUMNS:
            fail(where, f"{name!r} is a column of every result row; choose another name")
        if not isinstance(body, Mapping):
            fail(where, f"expected a table; got {body!r}")
        kind = body.get("kind")
        if kind not in METRIC_KINDS:
            if "kind" not in body:
                fail(f"{where}.kind", "missing; expected a metric kind")
            fail(f"{where}.kind", f"unknown metric kind {kind!r}"
                                  f"{did_you_mean(kind, METRIC_KINDS)}; choose from "
                                  f"{sorted(METRIC_KINDS)}")
        info = METRIC_KINDS[kind]
        values = read_table(body, (*METRIC_FIELDS, *info.options,
                                   *((METRIC_ERROR,) if info.scalar else ())), where)
        opts = FrozenMap({f.name: values[f.name] for f in info.options})
        image_field = info.images_field(opts)
        if image_field:
            bad = [d.name for d in datasets if d.name not in IMAGE_SHAPES]
            if bad:
                fail(f"{where}.{image_field}", f"'{opts[image_field]}' needs image datasets; "
                                               f"{bad} are not")
        only = values["methods"]
        metric = MetricSpec(name, kind, opts, None if only is None else tuple(only),
                            values.get("error", False))
        for label in only or ():
            if label not in labels:
                fail(f"{where}.methods", f"unknown method label {label!r}"
                                         f"{did_you_mean(label, labels)}; the spec's "
                                         f"methods are {sorted(labels)}")
            mkind = METHODS[labels[label].method].kind
            if mkind not in info.applies_to(opts):
                fail(f"{where}.methods", f"metric kind {kind!r} does not apply to {label!r} "
                                         f"({mkind} method)")
        out.append(metric)
    return tuple(out)


def _parse_paper(table: Mapping, methods: tuple, metrics: tuple, datasets: tuple):
    where = "paper"
    paper = read_table(table, PAPER_FIELDS, where)
    labels = {m.label: m for m in methods}
    scalar = {m.name for m in metrics if m.scalar}
    names = {d.name for d in datasets}
    out = []
    for i, entry in enumerate(paper["values"]):
        w = f"{where}.values[{i}]"
        v = read_table(entry, PAPER_VALUE_FIELDS, w)
        if v["method"] not in labels:
            fail(f"{w}.method", f"expected one of the spec's method labels {sorted(labels)}; "
                                f"got {v['method']!r}{did_you_mean(v['method'], labels)}")
        if v["metric"] not in scalar:
            fail(f"{w}.metric", f"expected one of the spec's scalar metrics {sorted(scalar)}; "
                                f"got {v['metric']!r}{did_you_mean(v['metric'], scalar)}")
        if v["dataset"] is not None and v["dataset"] not in names:
            fail(f"{w}.dataset", f"expected one of the spec's datasets {sorted(names)}; got "
                                 f"{v['dataset']!r}{did_you_mean(v['dataset'], names)}")
        params = none_strings(dict(v["params"])) if v["params"] is not None else None
        for key in params or ():
            if key not in labels[v["method"]].params:
                fail(f"{w}.params.{key}", f"not a parameter set for method {v['method']!r}")
        out.append(PaperValue(v["method"], v["metric"], float(v["value"]),
                              None if v["std"] is None else float(v["std"]), v["dataset"],
                              v["fraction"], None if params is None else freeze(params)))
    return paper["source"], tuple(out)


def _parse_figures(table: Mapping, methods: tuple, metrics: tuple, datasets: tuple) -> tuple:
    labels = {m.label: m for m in methods}
    by_name = {m.name: m for m in metrics}
    names = {d.name for d in datasets}
    out = []
    for name, body in table.items():
        where = f"figures.{name}"
        problem = PlainName().problem(name)
        if problem:
            fail(where, f"a figure's name becomes figures/<name>.png: {problem}")
        if not isinstance(body, Mapping):
            fail(where, f"expected a table; got {body!r}")
        kind = body.get("kind")
        if kind not in FIGURE_KINDS:
            fail(f"{where}.kind", f"expected one of {sorted(FIGURE_KINDS)}; got {kind!r}"
                                  f"{did_you_mean(kind, FIGURE_KINDS)}")
        info = FIGURE_KINDS[kind]
        v = read_table(body, (*FIGURE_FIELDS, *info.fields), where)
        if v["dataset"] is not None and v["dataset"] not in names:
            fail(f"{where}.dataset", f"expected one of the spec's datasets {sorted(names)}; "
                                     f"got {v['dataset']!r}{did_you_mean(v['dataset'], names)}")
        opts = {f.name: v[f.name] for f in info.fields}
        if opts.get("params") is not None:
            opts["params"] = none_strings(dict(opts["params"]))
        info.check(opts, where, labels, by_name)
        out.append(FigureSpec(name, kind, freeze(opts), v["dataset"], v["fraction"]))
    return tuple(out)

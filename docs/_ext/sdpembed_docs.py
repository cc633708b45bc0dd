"""Local Sphinx extension of the sdpembed documentation.

* writes the API reference pages (``docs/api/*.rst``, one page per module of
  :data:`PUBLIC` and :data:`INTERNALS`) when the build starts, so that a new module
  needs one line here;
* ``.. spec-schema::`` renders the experiment spec reference from the schema
  itself (:func:`sdpembed.experiments.schema_reference` and the tables of
  methods, metric kinds and figure kinds), so that the page cannot drift from
  the checks;
* markdown pages written for the package's reStructuredText docstrings
  (``docs/tuning.md`` quotes them) get their ``:math:`...``` roles as MyST
  ``{math}`` roles, so that their math renders.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive
from docutils.statemachine import StringList

#: The API reference, in two parts: what a user imports (:data:`PUBLIC`), then the
#: modules that implement it (:data:`INTERNALS`). Each part is a list of (section
#: title, one-line summary, modules). Each module gets one page documenting the members
#: it defines (re-exports are documented where they are defined and listed on the
#: package pages).
PUBLIC = [
    ("Package", "The names imported by ``import sdpembed``.", ["sdpembed"]),
    ("Estimators", "scikit-learn estimators.",
     ["sdpembed.estimators", "sdpembed.estimators.gram", "sdpembed.estimators.classic",
      "sdpembed.estimators.discriminative", "sdpembed.estimators.dne",
      "sdpembed.estimators.tca", "sdpembed.estimators.label_propagation"]),
    ("Formulations", "One builder per method, each returning a Formulation; open Gram SDPs.",
     ["sdpembed.formulation", "sdpembed.formulations", "sdpembed.formulations.gram",
      "sdpembed.formulations.blank", "sdpembed.formulations.objective",
      "sdpembed.formulations.constraints", "sdpembed.formulations.dvu",
      "sdpembed.formulations.mvu", "sdpembed.formulations.lda",
      "sdpembed.formulations.lpp", "sdpembed.formulations.sda", "sdpembed.formulations.dne",
      "sdpembed.formulations.discriminative", "sdpembed.formulations.tca"]),
    ("Solving", "One solve() for every backend, the backends' table, reports and errors.",
     ["sdpembed.solvers", "sdpembed.backends", "sdpembed.backends.table", "sdpembed.report",
      "sdpembed.solve_status", "sdpembed.backend_options", "sdpembed.exceptions",
      "sdpembed.sequential"]),
    ("LOWRANK: the large-n solver", "Its options, its result and its certificate.",
     ["sdpembed.lowrank", "sdpembed.lowrank.options", "sdpembed.lowrank.result"]),
    ("Relaxations", "Fantope, ratio-trace and trace-ratio SDPs and their closed forms.",
     ["sdpembed.relaxations", "sdpembed.relaxations.pencil", "sdpembed.relaxations.fantope",
      "sdpembed.relaxations.closed_form", "sdpembed.relaxations.reduction",
      "sdpembed.relaxations.formulate"]),
    ("Graphs and tangent distance", "Arrays to neighbourhood graphs with target distances.",
     ["sdpembed.graphs", "sdpembed.graphs.core", "sdpembed.graphs.knn", "sdpembed.tangent"]),
    ("Operators", "Numpy-only scatter matrices, Laplacians and label maps.",
     ["sdpembed.scatter", "sdpembed.scatter.discriminant", "sdpembed.scatter.dne",
      "sdpembed.scatter.tca", "sdpembed.scatter.propagation"]),
    ("Recovery and out-of-sample points", "Gram matrices and factors to coordinates and "
     "spectra; new points placed in a fitted embedding.",
     ["sdpembed.recovery", "sdpembed.outofsample"]),
    ("Data, evaluation and figures", "Loaders, transductive metrics and matplotlib figures.",
     ["sdpembed.datasets", "sdpembed.datasets.loaders", "sdpembed.datasets.labels",
      "sdpembed.datasets.registry", "sdpembed.evaluation", "sdpembed.plotting"]),
    ("Experiments", "Declarative specs and the grid runner behind ``sdpembed run``.",
     ["sdpembed.experiments", "sdpembed.experiments.schema", "sdpembed.experiments.spec",
      "sdpembed.experiments.results"]),
    ("Command line and demo", "``sdpembed demo | run | solvers | datasets``.",
     ["sdpembed.cli", "sdpembed.demo"]),
]

INTERNALS = [
    ("Gram SDP machinery", "The structured description, memory probe, parameters, reduced "
     "bases and the compiled rows behind the Gram formulations.",
     ["sdpembed.formulations.gram_problem", "sdpembed.formulations.memory",
      "sdpembed.formulations.gram_parameters", "sdpembed.formulations.reduced_basis",
      "sdpembed.formulations.matrices", "sdpembed.formulations.compiled",
      "sdpembed.formulations.describe"]),
    ("Backends", "The option tables and the cvxpy plug-ins the backend entries name.",
     ["sdpembed.backends.settings", "sdpembed.backends.interfaces"]),
    ("LOWRANK internals", "Low-rank augmented Lagrangian, certificate and repair.",
     ["sdpembed.lowrank.solve", "sdpembed.lowrank.backend", "sdpembed.lowrank.space",
      "sdpembed.lowrank.penalty", "sdpembed.lowrank.alm", "sdpembed.lowrank.inner",
      "sdpembed.lowrank.outer", "sdpembed.lowrank.spectrum", "sdpembed.lowrank.sparse_slack",
      "sdpembed.lowrank.verify", "sdpembed.lowrank.certificate", "sdpembed.lowrank.farkas",
      "sdpembed.lowrank.repair", "sdpembed.lowrank.reduced_ipm", "sdpembed.lowrank.lmi_lp",
      "sdpembed.lowrank.ipm_common", "sdpembed.large", "sdpembed.reduced"]),
    ("Dataset archives", "Downloading, checking and converting the source files.",
     ["sdpembed.datasets.archive", "sdpembed.datasets.convert"]),
    ("Experiment runner", "Grid, tasks, runner, store, tables and figures of ``sdpembed run``.",
     ["sdpembed.experiments.tables", "sdpembed.experiments.methods",
      "sdpembed.experiments.metrics", "sdpembed.experiments.figures",
      "sdpembed.experiments.grid", "sdpembed.experiments.tasks",
      "sdpembed.experiments.runner", "sdpembed.experiments.store"]),
]

#: every section, public first
API = PUBLIC + INTERNALS


def _defined_here(module) -> set[str]:
    """Names bound at the top level of ``module``'s own source (data as well as code)."""
    import ast
    import inspect

    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _summary(obj) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip().split("\n\n")[0]
    return " ".join(doc.split())


def _directive(obj) -> str:
    """The autodoc directive that documents ``obj``."""
    import inspect

    if inspect.isclass(obj):
        return "autoexception" if issubclass(obj, BaseException) else "autoclass"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return "autofunction"
    return "autodata"


def _module_page(name: str) -> str:
    import importlib

    module = importlib.import_module(name)
    title = f"``{name}``"
    lines = [title, "=" * len(title), "", f".. automodule:: {name}"]
    exported = getattr(module, "__all__", None)
    if exported is None:
        return "\n".join(lines) + "\n"
    here = _defined_here(module)
    local, foreign = [], []
    for attr in exported:
        obj = getattr(module, attr, None)
        home = getattr(obj, "__module__", None) if callable(obj) else None
        if attr in here and home in (None, name):
            local.append(attr)
        elif home is not None and hasattr(obj, "__qualname__") and home != name:
            foreign.append((f"{home}.{obj.__qualname__}", _summary(obj)))
        elif attr not in here and isinstance(obj, type(module)):
            foreign.append((obj.__name__, _summary(obj)))
    # the local members one directive each (autodoc's ``:members: a, b`` with an
    # ``__all__`` that also lists re-exports documented some re-exports instead)
    lines += ["   :no-members:", ""]
    for attr in local:
        lines += [f".. {_directive(getattr(module, attr))}:: {name}.{attr}", ""]
    if foreign:
        lines += [".. rubric:: Re-exported here", ""]
        for target, summary in foreign:
            role = "mod" if "." not in target or target == name else "obj"
            lines += [f"* :py:{role}:`~{target}`" + (f": {summary}" if summary else "")]
        lines.append("")
    return "\n".join(lines) + "\n"


def write_api_pages(app) -> None:
    """Write ``docs/api/index.rst`` and one page per module of :data:`API`."""
    out = Path(app.srcdir) / "api"
    out.mkdir(exist_ok=True)
    index = ["#############", "API reference", "#############", "",
             "Generated from the docstrings. Every object is documented on the page of the "
             "module that defines it; packages list what they re-export.", "",
             "Signatures use three type aliases: ``ArrayLike`` (NumPy's: anything "
             "``numpy.asarray`` accepts), ``MatrixLike`` (an ``ArrayLike`` or a SciPy sparse "
             "matrix or array) and ``RandomStateLike`` (an ``int`` seed, a "
             "``numpy.random.RandomState`` or ``None``, as scikit-learn's "
             "``check_random_state`` accepts).", ""]
    parts = [("What you import", "The names a user writes: estimators, builders, solve() "
              "and its backends, data and figures.", PUBLIC),
             ("Internals", "The modules that implement them, for those who extend the "
              "toolkit; their names may change between versions.", INTERNALS)]
    for part, intro, sections in parts:
        index += [part, "=" * len(part), "", intro, ""]
        for title, summary, modules in sections:
            index += [title, "-" * len(title), "", summary, "", ".. toctree::",
                      "   :maxdepth: 1", ""]
            index += [f"   {m}" for m in modules]
            index.append("")
            for m in modules:
                _write_if_changed(out / f"{m}.rst", _module_page(m))
    _write_if_changed(out / "index.rst", "\n".join(index) + "\n")


def _write_if_changed(path: Path, text: str) -> None:
    # rewriting an unchanged file would make every incremental build re-read it
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


# --------------------------------------------------------------------------- spec schema


class SpecSchema(Directive):
    """The spec reference, from :mod:`sdpembed.experiments.schema` and the kinds' tables."""

    has_content = False

    def run(self):
        from sdpembed.experiments import FIGURE_KINDS, METHODS, METRIC_KINDS
        from sdpembed.experiments.schema import REQUIRED, schema_reference, thaw

        def field_lines(fields):
            out = []
            for f in fields:
                default = "required" if f.default is REQUIRED else repr(thaw(f.default))
                out += [f"``{f.name}``", f"    {f.check.what}; default {default}. {f.doc}", ""]
            return out

        lines = _rubrics(schema_reference().split("\n"))
        lines += [".. rubric:: Methods (``estimator =``)", ""]
        for name in sorted(METHODS):
            info = METHODS[name]
            factory = (f":class:`~{info.factory.__module__}.{info.factory.__qualname__}`"
                       if info.factory is not None else "none")
            extra = (", extra parameters " + ", ".join(f"``{p}``" for p in info.extra_params)
                     if info.extra_params else "")
            lines += [f"``{name}``", f"    {info.description} (kind ``{info.kind}``, "
                      f"estimator {factory}{extra}).", ""]
        lines += [".. rubric:: Metric kinds (``kind =`` in ``[metrics.<name>]``)", ""]
        for name in sorted(METRIC_KINDS):
            kind = METRIC_KINDS[name]
            lines += [f"``{name}``", f"    {kind.doc}.", ""]
            if kind.options:
                lines += ["    Options:", ""]
                lines += ["    " + line if line else "" for line in field_lines(kind.options)]
        lines += [".. rubric:: Figure kinds (``kind =`` in ``[figures.<name>]``)", ""]
        for name in sorted(FIGURE_KINDS):
            kind = FIGURE_KINDS[name]
            lines += [f"``{name}``", f"    {kind.doc}.", ""]
            if kind.fields:
                lines += ["    Fields:", ""]
                lines += ["    " + line if line else "" for line in field_lines(kind.fields)]
        node = nodes.section()
        node.document = self.state.document
        self.state.nested_parse(StringList(lines, source="sdpembed.experiments.schema"),
                                self.content_offset, node)
        return node.children


def _rubrics(lines: list[str]) -> list[str]:
    """schema_reference()'s titles (underlined with ``~``) as rubrics, valid at any depth."""
    out: list[str] = []
    for line in lines:
        if line and set(line) == {"~"} and out:
            out[-1] = f".. rubric:: ``{out[-1]}``"
        else:
            out.append(line)
    return out


# --------------------------------------------------------------------------- markdown math

_RST_MATH = re.compile(r":math:`([^`]+)`")


def rst_math_in_markdown(app, docname, source) -> None:
    """``:math:`x``` (reStructuredText, quoted from docstrings) -> MyST ``{math}`x```."""
    path = app.env.doc2path(docname)
    if str(path).endswith(".md"):
        source[0] = _RST_MATH.sub(r"{math}`\1`", source[0])


def skip_metadata_requests(app, what, name, obj, skip, options):
    """scikit-learn's generated ``set_*_request`` methods are documented by scikit-learn."""
    if re.fullmatch(r"set_\w+_request", name):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", skip_metadata_requests)
    app.connect("builder-inited", write_api_pages)
    app.connect("source-read", rst_math_in_markdown)
    app.add_directive("spec-schema", SpecSchema)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

"""Import order of the package: one-way layering (docs/design.md, "Layers").

The import graph is read from the source (``ast``), every ``import`` statement
counted, those inside functions too (a deferred import still ties two modules),
so the test sees what a reader of the code sees and needs no import to succeed.
An edge ``a -> b`` means module ``a`` names module ``b``: ``from .graphs.core
import X`` is an edge to ``sdpembed.graphs.core``, ``from .graphs import X`` one
to the package ``sdpembed.graphs`` (its ``__init__``), ``from . import tangent``
one to ``sdpembed.tangent``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sdpembed"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    """Absolute name of ``from <level dots><target> import ...`` written in ``module``."""
    if level == 0:
        return target or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def import_graph() -> nx.DiGraph:
    """Directed graph of the imports among ``sdpembed`` modules."""
    modules = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node.level, node.module)
                # "from pkg import sub" names the submodule; "from pkg import obj" the package
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            for target in targets:
                while target and target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]   # "import a.b.c" of an attribute path
                if target in modules and target != name:
                    graph.add_edge(name, target)
    return graph


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_the_graph_is_read(graph):
    # guards the reader itself: known edges must be there, else the tests below prove nothing
    assert ("sdpembed.tangent", "sdpembed.graphs.core") in graph.edges
    assert ("sdpembed.graphs.knn", "sdpembed.tangent") in graph.edges          # deferred import
    assert ("sdpembed.estimators.gram", "sdpembed.graphs") in graph.edges
    assert ("sdpembed.experiments.metrics", "sdpembed.evaluation") in graph.edges
    assert graph.number_of_nodes() > 60 and graph.number_of_edges() > 150


def test_no_import_cycles(graph):
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not cycles, f"modules that import each other in a loop: {cycles}"


def test_no_module_imports_the_package_init(graph):
    offenders = sorted(m for m in graph.predecessors("sdpembed") if m != "sdpembed.__main__")
    assert not offenders, ("these modules import the package __init__ (which imports every "
                           f"estimator): {offenders}; import the leaf module instead "
                           "(e.g. sdpembed._version for __version__)")


def test_graph_core_below_tangent_below_builder(graph):
    # no graphs <-> tangent loop: the core imports nothing that reaches tangent
    assert not nx.has_path(graph, "sdpembed.graphs.core", "sdpembed.tangent")
    assert not nx.has_path(graph, "sdpembed.tangent", "sdpembed.graphs.knn")
    assert nx.has_path(graph, "sdpembed.graphs", "sdpembed.tangent")


#: the layers of docs/design.md, bottom to top; a module imports only its own layer or below.
#: ``sdpembed.large`` and ``sdpembed.reduced`` are former homes that re-export, so they
#: stand above what they re-export (LOWRANK and the recovery functions).
LAYERS = (
    ("sdpembed._version", "sdpembed._typing", "sdpembed._sklearn", "sdpembed.exceptions",
     "sdpembed._arpack",
     "sdpembed._params",
     "sdpembed._checks",
     "sdpembed.report",
     "sdpembed.formulation", "sdpembed._labels", "sdpembed._csdp", "sdpembed.backends",
     "sdpembed.solve_status"),
    ("sdpembed.graphs", "sdpembed.tangent", "sdpembed.scatter", "sdpembed.datasets"),
    ("sdpembed.relaxations", "sdpembed.formulations"),
    ("sdpembed.lowrank", "sdpembed.solvers", "sdpembed.backend_options",
     "sdpembed.violation_worth"),
    ("sdpembed.sequential", "sdpembed.recovery", "sdpembed.outofsample", "sdpembed.evaluation",
     "sdpembed.plotting"),
    ("sdpembed.estimators",),
    ("sdpembed.experiments", "sdpembed.demo", "sdpembed.cli", "sdpembed.__main__", "sdpembed",
     "sdpembed.large", "sdpembed.reduced"),
)


def _layer(module: str) -> int:
    best = None
    for k, layer in enumerate(LAYERS):
        for prefix in layer:
            # the package itself ("sdpembed") is its __init__ alone, not a prefix of all
            if module == prefix or (prefix != "sdpembed" and module.startswith(prefix + ".")):
                if best is None or len(prefix) > best[1]:
                    best = (k, len(prefix))
    if best is None:
        raise AssertionError(f"module {module} is on no layer of LAYERS: add it")
    return best[0]


def test_imports_run_down_the_layers(graph):
    upward = [(a, b) for a, b in graph.edges if _layer(b) > _layer(a)]
    assert not upward, f"imports of a module on a higher layer: {upward}"


def test_every_module_is_on_a_layer(graph):
    for module in graph.nodes:
        _layer(module)        # raises, naming the module, when LAYERS does not place it



#: the largest a module of the package may grow (issue 43: split by concept beyond it)
MAX_MODULE_LINES = 800


def test_every_module_is_at_most_800_lines():
    sizes = {name: len(path.read_text().splitlines()) for name, path in _modules().items()}
    assert min(sizes.values()) >= 0 and sizes["sdpembed.solvers"] > 100   # the count is read
    over = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not over, f"modules over {MAX_MODULE_LINES} lines (split them by concept): {over}"

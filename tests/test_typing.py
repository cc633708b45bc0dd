"""The public API is typed (PEP 561): ``py.typed`` ships and every public callable is annotated.

Public means: a module whose dotted path has no component starting with ``_``
(``__init__`` and ``__main__`` aside); in it, every top-level function and class whose
name does not start with ``_``; in a public class, every method whose name does not
start with ``_``, plus ``__init__`` and ``__call__``. Fully annotated means every
parameter but ``self`` / ``cls`` (``*args`` and ``**kwargs`` included) has an
annotation, and so does the return value (``__init__`` aside). The check reads the
source with :mod:`ast`, so it sees the signatures the API reference shows.
"""

from __future__ import annotations

import ast
from pathlib import Path

import sdpembed

PACKAGE = Path(sdpembed.__file__).resolve().parent


def _is_public_module(path: Path) -> bool:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return not any(p.startswith("_") and p not in ("__init__", "__main__") for p in parts)


def _fully_annotated(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    a = fn.args
    params = a.posonlyargs + a.args + a.kwonlyargs
    if params and params[0].arg in ("self", "cls"):
        params = params[1:]
    params += [p for p in (a.vararg, a.kwarg) if p is not None]
    annotated = all(p.annotation is not None for p in params)
    return annotated and (fn.name == "__init__" or fn.returns is not None)


def public_callables() -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, definition) of every public function and method of the package."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if not _is_public_module(path):
            continue
        module = ".".join(p for p in path.relative_to(PACKAGE.parent).with_suffix("").parts
                          if p != "__init__")
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, (*functions, ast.ClassDef)) or node.name.startswith("_"):
                continue
            if isinstance(node, functions):
                found.append((f"{module}.{node.name}", node))
                continue
            for sub in node.body:
                if isinstance(sub, functions) and (
                        not sub.name.startswith("_") or sub.name in ("__init__", "__call__")):
                    found.append((f"{module}.{node.name}.{sub.name}", sub))
    return found


def test_package_is_marked_typed():
    assert (PACKAGE / "py.typed").is_file()


def test_every_public_function_and_method_is_annotated():
    found = public_callables()
    assert len(found) > 300  # the walk reached the whole package
    missing = [name for name, fn in found if not _fully_annotated(fn)]
    assert not missing, f"{len(missing)} of {len(found)} not fully annotated: {missing}"

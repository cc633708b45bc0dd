"""scikit-learn's private API: used through sdpembed._sklearn only, on the pinned releases.

The estimators rely on scikit-learn's private parameter validation
(``sklearn.utils._param_validation``, ``sklearn.base._fit_context``). One module imports
them, so a release that moves them needs one change; ``pyproject.toml`` pins the range of
releases the suite is run on, and this test fails when the installed release is outside it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import sklearn
from packaging.requirements import Requirement
from packaging.version import Version

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "sdpembed"


def _private_sklearn_imports(path: Path) -> list[str]:
    """``module:name`` of every import of a private scikit-learn module or name in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == "sklearn":
            private_module = any(p.startswith("_") for p in node.module.split("."))
            for alias in node.names:
                if private_module or alias.name.startswith("_"):
                    found.append(f"{node.module}:{alias.name}")
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "sklearn"
                      and any(p.startswith("_") for p in a.name.split("."))]
    return found


def test_private_sklearn_names_are_imported_in_one_module():
    offenders = {str(p.relative_to(ROOT)): _private_sklearn_imports(p)
                 for p in sorted(PACKAGE.rglob("*.py")) if p.name != "_sklearn.py"}
    offenders = {k: v for k, v in offenders.items() if v}
    assert offenders == {}, f"import these through sdpembed._sklearn: {offenders}"
    # the reader sees them where they are (else the assertion above proves nothing)
    assert "sklearn.base:_fit_context" in _private_sklearn_imports(PACKAGE / "_sklearn.py")


def test_installed_scikit_learn_is_in_the_pinned_range():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    req = next(Requirement(d) for d in deps if re.match(r"scikit-learn\b", d))
    assert req.specifier.contains(Version(sklearn.__version__)), (
        f"scikit-learn {sklearn.__version__} is outside the tested range {req.specifier} "
        "(pyproject.toml): run the suite on it, then move the bound")
    assert any(s.operator == "<" for s in req.specifier)    # an upper bound is pinned

"""The README's Python code blocks run as written.

Each fenced ``python`` block of ``README.md`` is executed in a fresh namespace,
in a temporary working directory. The shell blocks (set-up, wheel install,
experiment runs) are run by ``.ci/run``.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from sdpembed.datasets import data_home, dataset_info
from sdpembed.solvers import solve

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _blocks() -> list[str]:
    return _BLOCK.findall(README.read_text(encoding="utf-8"))


def _usps_present() -> bool:
    return (data_home() / dataset_info("usps").filename).is_file()


#: The Quickstart leaves the backend to ``solve``'s and ``DVU``'s default. With
#: ``solver="auto"`` that picks LOWRANK on its 200 digits (seconds); until the default
#: is ``"auto"`` it is SCS, which takes minutes there, so the block then runs with the
#: slow tests.
_AUTO_DEFAULT = inspect.signature(solve).parameters["solver"].default == "auto"


def _marks(code: str) -> list:
    marks = []
    if "load_usps" in code:
        marks.append(pytest.mark.skipif(
            not _usps_present(), reason="the Quickstart reads USPS: no usps.npz in "
            "$SDPEMBED_DATA (set SDPEMBED_DATA to the folder that holds it)"))
        if not _AUTO_DEFAULT:
            marks.append(pytest.mark.slow)
    return marks


def test_readme_has_the_quickstart():
    blocks = _blocks()
    assert blocks, "no python block found in README.md"
    assert any("DVU(" in b and "solve(f" in b for b in blocks)


@pytest.mark.parametrize("code", [pytest.param(b, id=f"block{i}", marks=_marks(b))
                                  for i, b in enumerate(_blocks())])
def test_readme_python_block_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__readme__"}
    exec(compile(code, str(README), "exec"), namespace)  # noqa: S102
    if "est" in namespace and "report" in namespace:  # the Quickstart
        est, report = namespace["est"], namespace["report"]
        assert est.embedding_.shape == (200, 10)
        assert est.solve_report_.status == "optimal"
        # the last solve in the block is LOWRANK: its certificate is what the README shows
        assert report.solver == "LOWRANK" and report.certified_gap is not None
        assert namespace["G"].shape == (200, 200)

"""The README's Python code blocks run as written.

Each fenced ``python`` block of ``README.md`` is executed in a fresh namespace,
in a temporary working directory. The shell blocks (set-up, wheel install,
experiment runs) are run by ``.ci/run``.
"""

from __future__ import annotations

import inspect
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from sdpembed.datasets import data_home, dataset_info
from sdpembed.evaluation import transductive_knn_accuracy
from sdpembed.exceptions import EmbeddingWorseThanInputWarning
from sdpembed.solvers import solve

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _blocks() -> list[str]:
    return _BLOCK.findall(README.read_text(encoding="utf-8"))


def _usps_present() -> bool:
    return (data_home() / dataset_info("usps").filename).is_file()


#: The Quickstart leaves the backend to ``solve``'s and ``DVU``'s default. With
#: ``solver="auto"`` that picks LOWRANK on its 500 and 200 digits; until the default
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
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(code, str(README), "exec"), namespace)  # noqa: S102
    if "est" in namespace and "report" in namespace:  # the Quickstart
        est, report = namespace["est"], namespace["report"]
        assert est.embedding_.shape == (500, 10)
        assert est.solve_report_.status == "optimal"
        # what the README says of the fit: its held-out check is silent, and its
        # transduction beats 3-NN on the raw pixels on the hidden labels (0.96 against 0.83)
        assert not [w for w in caught if issubclass(w.category, EmbeddingWorseThanInputWarning)]
        assert est.validation_["warned"] is False
        X, y, hidden = namespace["X"], namespace["y"], namespace["hidden"]
        pixels = transductive_knn_accuracy(X, y, ~hidden, 3)
        assert np.mean(est.transduction_[hidden] == y[hidden]) > pixels + 0.05
        # the last solve in the block is LOWRANK: its certificate is what the README shows
        assert report.solver == "LOWRANK" and report.certified_gap is not None
        assert namespace["G"].shape == (200, 200)

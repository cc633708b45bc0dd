"""Tests of the ``sdpembed demo`` (``sdpembed.demo``) and of ``python -m sdpembed``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.neighbors import KNeighborsClassifier

from sdpembed.cli import main
from sdpembed.datasets import partial_labels
from sdpembed.demo import TOL, format_result, load_demo_data, run
from sdpembed.exceptions import InputError


def _table(text: str) -> dict[str, list[str]]:
    """Rows of the markdown table in ``text`` by first cell (header and rule dropped)."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("|")]
    return {r[0]: r[1:] for r in rows[2:]}


@pytest.fixture(scope="module")
def small():
    """The demo on a stratified 200-digit subset (LOWRANK), with its figure."""
    return run(n_samples=200, plot=None)


def test_subset_is_stratified_and_scaled():
    X, y = load_demo_data(200, random_state=0)
    X_all, y_all = load_digits(return_X_y=True)
    assert X.shape == (200, 64) and X.min() >= 0.0 and X.max() <= 1.0
    # train_test_split(stratify=...) keeps each class's share to within one digit
    share = np.bincount(y_all, minlength=10) * 200 / len(y_all)
    assert np.all(np.abs(np.bincount(y, minlength=10) - share) <= 1.0)
    # every row is a real digit, scaled by 1/16
    rows = {tuple(r) for r in (X_all / 16.0)}
    assert all(tuple(r) in rows for r in X)
    assert load_demo_data(None)[0].shape == (1797, 64)


@pytest.mark.parametrize("n", [19, 1798, 2.5, True])
def test_bad_subset_size_is_an_input_error(n):
    with pytest.raises(InputError, match="n_samples"):
        load_demo_data(n)


def test_demo_is_certified_and_scores_the_hidden_labels(small):
    assert small["n"] == 200 and small["solver"] == "LOWRANK" and small["status"] == "optimal"
    # the demo's claim: LOWRANK proves the objective within TOL of the optimum
    assert small["certified_gap"] is not None and 0.0 <= small["certified_gap"] <= TOL
    # the raw-pixel 3-NN score, recomputed here with scikit-learn alone
    X, y = load_demo_data(200, random_state=0)
    y_partial = partial_labels(y, 0.8, random_state=0)
    lab = y_partial != -1
    assert small["hidden"] == int((~lab).sum()) == 40
    raw = KNeighborsClassifier(3).fit(X[lab], y[lab]).score(X[~lab], y[~lab])
    assert small["knn3_raw"] == pytest.approx(raw, abs=1e-12)
    # the embedding separates the classes: far above the 0.1 of guessing among ten
    assert small["knn3_dvu"] >= 0.8 and small["svm_dvu"] >= 0.8
    # the spectrum is a distribution: fractions of the trace, largest first
    spec = small["spectrum"]
    assert spec.sum() == pytest.approx(1.0) and np.all(np.diff(spec) <= 1e-12)


def test_printed_summary_matches_the_result(small):
    text = format_result(small)
    rows = _table(text)
    assert rows["3-NN"] == [f"{small['knn3_raw']:.3f}", f"{small['knn3_dvu']:.3f}"]
    svm = rows["linear SVM (Crammer-Singer)"]
    assert svm == [f"{small['svm_raw']:.3f}", f"{small['svm_dvu']:.3f}"]
    gap = float(re.search(r"certified relative duality gap: ([0-9.e+-]+)", text).group(1))
    assert gap == pytest.approx(small["certified_gap"], rel=0.06)  # printed to 2 digits


def test_cli_demo_prints_the_table_and_writes_the_figure(capsys, tmp_path):
    plot = tmp_path / "demo.png"
    assert main(["demo", "--n-samples", "120", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    rows = _table(out)
    assert set(rows) == {"3-NN", "linear SVM (Crammer-Singer)"}
    assert "certified relative duality gap" in out and f"written to {plot}" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 20_000


def test_cli_demo_reports_bad_input_as_a_usage_error(capsys):
    assert main(["demo", "--n-samples", "5", "--plot", ""]) == 2
    assert "sdpembed demo: n_samples must be an integer in [20, 1797]" in capsys.readouterr().err


@pytest.mark.parametrize("where, message", [
    (lambda tmp: tmp / "missing" / "demo.png", "the folder {tmp}/missing does not exist"),
    (lambda tmp: tmp, "it is a folder; name a file such as {tmp}/sdpembed-demo.png"),
    (lambda tmp: tmp / "demo.xyz", "name a file ending in one of "),
    (lambda tmp: tmp / "ro" / "demo.png", "the folder {tmp}/ro is not writable"),
])
def test_cli_demo_checks_the_figure_path_before_solving(capsys, tmp_path, monkeypatch, where,
                                                        message):
    def never(*args, **kwargs):
        raise AssertionError("the demo solved before checking where its figure goes")

    monkeypatch.setattr("sdpembed.demo.DVU.fit", never)
    (tmp_path / "ro").mkdir()
    monkeypatch.setattr("sdpembed.demo.os.access", lambda p, mode: Path(p).name != "ro")
    path = where(tmp_path)
    assert main(["demo", "--n-samples", "30", "--plot", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sdpembed demo: cannot write the figure to {path}: "
                          f"{message.format(tmp=tmp_path)}")
    assert err.count("\n") == 1


def test_help_texts_are_printed_as_written(capsys):
    # argparse %-formats only argument help; a description prints "%%" as it stands
    for command in ([], ["demo"], ["run"], ["solvers"], ["datasets"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        out = capsys.readouterr().out
        assert out.startswith("usage: sdpembed") and "%%" not in out, command


def test_python_dash_m_runs_the_command_line():
    out = subprocess.run([sys.executable, "-m", "sdpembed", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert out.startswith("usage: sdpembed") and "demo" in out and "run" in out


@pytest.mark.slow
def test_full_demo_dvu_matches_or_beats_raw_pixels():
    """The demo's headline on all 1,797 digits: DVU's 10 coordinates classify the hidden
    labels at least as well as the 64 raw pixels, with a certified solve."""
    result = run()
    assert result["n"] == 1797 and result["certified_gap"] <= TOL
    assert result["knn3_dvu"] >= result["knn3_raw"]
    assert result["svm_dvu"] >= result["svm_raw"]


def test_figure_explains_its_marks_and_nothing_is_clipped(small):
    """The spectrum's dashed line (d, a share of the trace) and the rank are explained in
    the figure; titles and caption lie inside the canvas (the right title was cut off)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from sdpembed.demo import MARK_SHARE, VISIBLE_SHARE, _caption, _figure

    spec = small["spectrum"]
    assert small["n_visible"] == int(np.sum(spec >= VISIBLE_SHARE)) >= 2
    d = int(np.searchsorted(np.cumsum(spec), MARK_SHARE - 1e-12) + 1)
    caption = _caption(small)
    assert f"dashed line d = {d}" in caption and f"rank {small['rank']}" in caption
    assert f"{small['n_visible']} eigenvalues exceed 1% of the trace" in caption
    assert f"rank {small['rank']} ({small['n_visible']} eigenvalues above" in \
        format_result(small)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, small["n"])
    labeled = np.arange(small["n"]) >= small["hidden"]
    fig = _figure(rng.normal(size=(small["n"], 10)), y, labeled, small)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    box = fig.bbox
    texts = [ax.title for ax in fig.axes if ax.get_title()] + [fig._supxlabel]
    assert len(texts) == 3
    for t in texts:
        ext = t.get_window_extent(renderer)
        assert box.x0 - 1 <= ext.x0 and ext.x1 <= box.x1 + 1, t.get_text()
        assert box.y0 - 1 <= ext.y0 and ext.y1 <= box.y1 + 1, t.get_text()
    spectrum_ax = fig.axes[1]
    assert any(t.get_text() == f"d = {d} (95% of total)" for t in spectrum_ax.texts)
    assert any(t.get_text() == f"rank {small['rank']}" for t in spectrum_ax.texts)

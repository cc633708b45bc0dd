"""LOWRANK's inner solver: the progress lines a long subproblem prints with ``verbose``."""

from sklearn.datasets import load_digits

import sdpembed.lowrank.inner as inner
from sdpembed.formulations.mvu import mvu
from sdpembed.graphs import knn_graph
from sdpembed.solvers import solve


def _small_mvu():
    X, _ = load_digits(return_X_y=True)
    return mvu(knn_graph(X[:60], n_neighbors=4, n_random=0))


def test_subproblem_progress_lines_with_verbose(capsys, monkeypatch):
    # with the interval forced to zero every inner iteration prints a line; the lines sit
    # inside the outer table and name the method, the iteration, the augmented
    # Lagrangian's value and gradient norm, and the time spent
    monkeypatch.setattr(inner, "_PROGRESS_INTERVAL", 0.0)
    rep = solve(_small_mvu(), solver="LOWRANK", verbose=True)
    out = capsys.readouterr().out
    assert rep.status == "optimal"
    lines = [ln for ln in out.splitlines() if "in this subproblem" in ln]
    assert lines, out
    assert any("L-BFGS iteration" in ln for ln in lines)
    head = out.index(" outer | objective")
    assert all(out.index(ln) > head for ln in lines)
    for ln in lines:
        assert "AL " in ln and "|grad| " in ln
        method_it = ln.split("|")[1]
        assert int(method_it.split("iteration")[1].split(",")[0]) >= 1


def test_subproblem_progress_is_silent_without_verbose(capsys, monkeypatch):
    monkeypatch.setattr(inner, "_PROGRESS_INTERVAL", 0.0)
    solve(_small_mvu(), solver="LOWRANK")
    assert capsys.readouterr().out == ""

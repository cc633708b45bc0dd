"""LOWRANK's inner solver: the progress lines a long subproblem prints with ``verbose``."""

import numpy as np
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


def _quadratic(n=200, cond=1e4, seed=0):
    # f(x) = x^T A x / 2 with A's eigenvalues spread over [1, cond]: minimum 0 at x = 0
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    A = (Q * np.geomspace(1.0, cond, n)) @ Q.T
    return (lambda x: (0.5 * float(x @ A @ x), A @ x)), rng.standard_normal(n)


def test_lbfgs_tail_window_off_is_the_plain_path():
    fun, x0 = _quadratic()
    plain = inner._lbfgs(fun, x0, gtol=1e-5, maxiter=3000)
    off = inner._lbfgs(fun, x0, gtol=1e-5, maxiter=3000, window=(0, 0.0))
    assert plain.nit == off.nit and np.array_equal(plain.x, off.x)
    # stopped by the gradient test (max norm) near the minimum 0 at x = 0
    assert np.abs(fun(plain.x)[1]).max() <= 1e-5
    assert fun(plain.x)[0] <= 1e-12 * fun(x0)[0]


def test_lbfgs_tail_window_stops_on_a_small_decrease():
    # with window (k, delta) L-BFGS stops once k iterations lowered f by at most delta: on
    # a stiff quadratic (minimum 0 at x = 0) it stops in the tail, before the gradient test
    # ends the run without a window, at a point whose value is near the minimum
    fun, x0 = _quadratic()
    f0 = fun(x0)[0]
    plain = inner._lbfgs(fun, x0, gtol=1e-5, maxiter=5000)
    cut = inner._lbfgs(fun, x0, gtol=1e-5, maxiter=5000, window=(20, 1e-6 * f0))
    assert 20 < cut.nit < plain.nit
    assert 0.0 <= fun(cut.x)[0] <= 1e-3 * f0


def test_tail_window_is_off_without_added_rows():
    from sdpembed.lowrank.alm import tail_window

    class _NoRows:
        K = None
    history = [{"objective": -1.0, "left_kink": True}]
    assert tail_window(_NoRows(), 0.5, history) == (0, 0.0)

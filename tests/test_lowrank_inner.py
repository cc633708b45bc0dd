"""LOWRANK's inner solver: the progress lines a long subproblem prints with ``verbose``, and
why each inner solve stopped."""

import logging
import time

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


def _wrong_sign(fun):
    # the value of fun with its gradient negated: no step along -H g decreases it
    def f(x):
        val, grad = fun(x)
        return val, -grad
    return f


def _counted(fun):
    calls = [0]

    def f(x):
        calls[0] += 1
        return fun(x)
    return f, calls


def test_lbfgs_stop_names_the_test_that_ended_it():
    # each stop on the stiff quadratic (minimum 0 at x = 0), checked against what ended it
    fun, x0 = _quadratic()
    res = inner._lbfgs(fun, x0, gtol=1e-5, maxiter=3000)
    assert res.stop == "gtol" and np.abs(fun(res.x)[1]).max() <= 1e-5
    res = inner._lbfgs(fun, x0, gtol=1e-5, maxiter=50)
    assert res.stop == "maxiter" and res.nit == 50 and np.abs(fun(res.x)[1]).max() > 1e-5
    counted, calls = _counted(fun)
    res = inner._lbfgs(counted, x0, gtol=1e-5, maxiter=3000, maxfun=40)
    assert res.stop == "maxfun" and calls[0] >= 40 and res.nit < 40
    # no gradient test: the relative decrease reaches ftol first
    res = inner._lbfgs(fun, x0, gtol=0.0, maxiter=100_000)
    assert res.stop == "ftol" and res.nit < 100_000
    res = inner._lbfgs(fun, x0, gtol=1e-5, maxiter=3000, deadline=time.perf_counter() - 1.0)
    assert res.stop == "deadline" and res.nit == 0
    res = inner._lbfgs(fun, x0, gtol=1e-5, maxiter=5000, window=(20, 1e-6 * fun(x0)[0]))
    assert res.stop == "window"
    res = inner._lbfgs(_wrong_sign(fun), x0, gtol=1e-5, maxiter=3000)
    assert res.stop == "line_search" and res.nit == 1 and np.array_equal(res.x, x0)
    assert {"gtol", "maxiter", "maxfun", "ftol", "deadline", "window",
            "line_search"} <= set(inner.STOPS)


def test_newton_cg_stop_names_the_test_that_ended_it():
    fun, x0 = _quadratic(cond=1e2)

    def hess_at(x):
        return lambda v: fun(v)[1]       # the quadratic's A v
    res = inner._newton_cg(fun, hess_at, x0, gtol=1e-5, maxiter=100)
    assert res.stop == "gtol" and res.gnorm <= 1e-5
    res = inner._newton_cg(fun, hess_at, x0, gtol=1e-5, maxiter=1, max_cg=2)
    assert res.stop == "maxiter" and res.nit == 1 and res.gnorm > 1e-5
    res = inner._newton_cg(_wrong_sign(fun), hess_at, x0, gtol=1e-5, maxiter=10)
    assert res.stop == "line_search"


def test_history_and_table_name_the_subproblem_stop(caplog):
    # L-BFGS capped at 10 iterations: every subproblem of the small MVU is stopped by that
    # cap (it certifies at the third); with Newton-CG (50 steps) the subproblems that ran
    # 50 steps are stopped by its cap, the others by its gradient test
    caplog.set_level(logging.INFO, logger="sdpembed.lowrank")
    rep = solve(_small_mvu(), solver="LOWRANK", max_inner=10)
    history = rep.extra["history"]
    assert rep.status == "optimal"
    assert [h["inner_stop"] for h in history] == ["L-BFGS maxiter"] * len(history)
    assert all(h["lbfgs_iters"] == 10 for h in history)
    rows = [ln for ln in caplog.text.splitlines() if "|     10 L-BFGS maxiter" in ln]
    assert len(rows) == len(history)
    rep = solve(_small_mvu(), solver="LOWRANK", inner="newton")
    history = rep.extra["history"]
    assert {h["inner_stop"] for h in history if h["lbfgs_iters"] == 50} == {"Newton-CG maxiter"}
    assert history[-1]["lbfgs_iters"] < 50 and history[-1]["inner_stop"] == "Newton-CG gtol"


def test_a_subproblem_stopped_at_its_evaluation_cap_is_read_as_cut():
    # the outer loop reads an L-BFGS subproblem stopped at its iteration cap as "cut" (not
    # a stall: the stall rule and the tolerance tightening wait); one stopped at its
    # evaluation cap ``maxfun``, before the iteration cap, is as unfinished and is read the
    # same; one that met its gradient test is "lbfgs". The stops are real ones, named as the
    # subproblem's run names them
    from sdpembed.lowrank.outer import _OuterLoop

    loop = object.__new__(_OuterLoop)
    loop.max_inner = 50
    fun, x0 = _quadratic()
    counted, _ = _counted(fun)
    ran = {"maxfun": inner._lbfgs(counted, x0, gtol=1e-5, maxiter=3000, maxfun=40),
           "maxiter": inner._lbfgs(fun, x0, gtol=1e-5, maxiter=50),
           "gtol": inner._lbfgs(fun, x0, gtol=1e3, maxiter=3000)}
    for stop, res in ran.items():
        assert res.stop == stop
        res.stop = f"L-BFGS {res.stop}"
    assert ran["maxfun"].nit < loop.max_inner and ran["gtol"].nit < loop.max_inner
    assert {k: loop._lbfgs_end(r) for k, r in ran.items()} == {
        "maxfun": "cut", "maxiter": "cut", "gtol": "lbfgs"}

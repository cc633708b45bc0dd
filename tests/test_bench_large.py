"""The large-n benchmark runner's bookkeeping: ``--resume`` and the SCS ratios.

The solves themselves are replaced by a stub (the benchmark's numbers come from
running it, never from tests); what is tested is which rows run and what the
results file holds afterwards.
"""

import json

import numpy as np
import pytest

bench = pytest.importorskip("problems.bench_large")

SPEC = """
[data]
path = "usps.npz"
[graph]
n_neighbors = 2
n_random = 1
[solve]
slack_weight = 1.0
timeout = 5

[[run]]
method = "dvu"
n = 50
backends = ["LOWRANK", "SCS"]

[[run]]
method = "dvu"
n = 50
backends = ["LOWRANK"]
lowrank = { inner = "plbfgs" }
"""


@pytest.fixture
def runner(tmp_path, monkeypatch):
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "tiny.toml").write_text(SPEC)
    monkeypatch.setattr(bench, "_baseline_knn", lambda spec, n: 0.5)
    calls = []

    def fake_run(spec, run, backend, timeout):
        calls.append((backend, bench._variant(run, backend)))
        return {"method": run["method"], "n": run["n"], "backend": backend,
                "basis_rank": run.get("basis_rank"), "variant": bench._variant(run, backend),
                "status": "optimal", "objective": -1.0,
                "wall_s": 100.0 if backend == "SCS" else 4.0}

    monkeypatch.setattr(bench, "_run_one", fake_run)
    folders = ["--specs", str(tmp_path / "benchmarks"), "--results", str(tmp_path / "results")]
    return tmp_path / "results" / "tiny-t.json", calls, lambda argv: bench.main(argv + folders)


def test_resume_runs_only_the_missing_rows(runner):
    out, calls, main = runner
    main(["tiny", "--tag", "t"])
    assert calls == [("LOWRANK", ""), ("SCS", ""), ("LOWRANK", "inner=plbfgs")]
    rows = json.loads(out.read_text())["rows"]
    assert [r["ratio_to_scs"] for r in rows if r["backend"] == "LOWRANK"] == [25.0, 25.0]

    # interrupted after the SCS row: the last row is missing from the file
    data = json.loads(out.read_text())
    data["rows"] = data["rows"][:2]
    out.write_text(json.dumps(data))
    calls.clear()
    main(["tiny", "--tag", "t", "--resume"])
    assert calls == [("LOWRANK", "inner=plbfgs")]
    data = json.loads(out.read_text())
    assert len(data["rows"]) == 3
    assert "resumed" in data["meta"]["command"]
    # the resumed row's ratio uses the SCS row kept from the first run
    assert data["rows"][2]["ratio_to_scs"] == 25.0


def test_without_resume_the_file_starts_over(runner):
    out, calls, main = runner
    main(["tiny", "--tag", "t", "--only", "dvu:50", "--backend", "SCS"])
    main(["tiny", "--tag", "t", "--backend", "LOWRANK"])
    rows = json.loads(out.read_text())["rows"]
    assert [r["backend"] for r in rows] == ["LOWRANK", "LOWRANK"]
    assert all("ratio_to_scs" not in r for r in rows)


def test_render_reads_and_writes_the_tagged_files(runner):
    """--render --tag t rebuilds tiny-t.md from tiny-t.json (not the untagged files)."""
    out, calls, main = runner
    main(["tiny", "--tag", "t"])
    md = out.with_suffix(".md")
    md.unlink()
    calls.clear()
    main(["tiny", "--tag", "t", "--render"])
    assert calls == [] and md.is_file()
    assert md.read_text().startswith("# tiny-t:")
    assert not (out.parent / "tiny.md").exists()


def test_battery_rows_render_the_time_split_and_the_peers():
    rows = [{"method": "dvu", "n": 30, "backend": "LOWRANK", "name": "b", "variant": "b",
             "distances": "interval", "status": "optimal", "objective": -1.0,
             "certified_gap": 5e-5, "solve_cpu_s": 0.75, "wall_s": 2.0, "peak_mb": 100.0,
             "outer_iterations": 7,
             "rank": 6, "max_abs_multiplier": 3.5, "n_edges": 60,
             "time_split": {"subproblems": 1.5, "certificates": 0.25, "multipliers": 0.5,
                            "other": 0.25}},
            {"method": "dvu", "n": 30, "backend": "CSDP", "name": "b", "variant": "b",
             "status": "optimal", "objective": -1.0 - 1e-6, "wall_s": 40.0}]
    bench._finish(rows)
    assert rows[0]["ratio_to_csdp"] == 20.0
    md = bench._markdown(rows, "lowrank_battery", {"machine": "m", "date": "d",
                                                     "command": "c", "table": "battery"})
    line = next(ln for ln in md.splitlines() if ln.startswith("| b | dvu | 30 | 60 |"))
    assert ("| 5.00e-05 | 0.8 | 2.0 | 100 | 7 | 6 | 3.5 | 1.5 / 0.2 / 0.5 / 0.2 | 20.0, - | "
            "1.0e-06, - |") in line
    assert "| certified gap | CPU s | wall s | peak MB |" in md
    peer = next(ln for ln in md.splitlines() if "| CSDP |" in ln)
    assert "| - | 40.0 |" in peer  # no CPU seconds recorded: shown as missing
    assert all(ln.count("|") == md.splitlines()[6].count("|") for ln in md.splitlines()[6:])


def test_scale_rows_show_cpu_beside_wall_seconds():
    rows = [{"method": "dvu", "n": 50, "backend": "LOWRANK", "status": "optimal",
             "objective": -1.0, "certified_gap": 1e-5, "infeasibility": 0.0,
             "solve_cpu_s": 3.25, "wall_s": 9.0, "peak_mb": 150.0}]
    md = bench._markdown(rows, "s", {"machine": "m", "date": "d", "command": "c"})
    assert "| infeasibility | CPU s | wall s | peak MB |" in md
    assert "| 0.0e+00 | 3.2 | 9.0 | 150 |" in md


TINY = {"data": {"source": "blobs", "centers": 2, "seed": 0, "labeled_fraction": 0.8},
        "graph": {"n_neighbors": 2, "n_random": 1}, "solve": {"slack_weight": 1.0}}


def test_the_child_records_the_solves_cpu_seconds():
    """``solve_cpu_s`` is the solve's own CPU time (not the data, graph or evaluation),
    also for a solve that raised."""
    import queue

    q = queue.Queue()
    run = {"method": "dvu", "n": 30, "backends": ["LOWRANK"]}
    bench._child(TINY, run, "LOWRANK", q)
    rows = [q.get_nowait() for _ in range(q.qsize())]
    row = rows[-1]
    assert row["status"] == "optimal" and row["certified_gap"] <= 1e-4
    assert 0 < row["solve_cpu_s"] < row["cpu_s"]
    spec = {**TINY, "solve": {**TINY["solve"], "lowrank": {"tol": -1.0}}}
    bench._child(spec, run, "LOWRANK", q)
    bad = [q.get_nowait() for _ in range(q.qsize())][-1]
    assert bad["status"].split(":")[0].endswith("Error")
    assert bad["solve_cpu_s"] is not None and bad["solve_cpu_s"] >= 0
    assert bad["wall_s"] is not None


def test_battery_sources_load_seeded_subsets(monkeypatch):
    spec = {"data": {"seed": 0, "labeled_fraction": 0.8},
            "graph": {"n_neighbors": 2, "n_random": 1}}
    run = {"n": 50, "data": {"source": "sklearn:wine", "standardize": True}}
    X, y, y_obs, labeled, graph, t = bench._instance(spec, run, with_t=True)
    assert X.shape == (50, 13) and t is None and graph.n_nodes == 50
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    assert np.all(y_obs[labeled] == y[labeled]) and np.all(y_obs[~labeled] == -1)
    X2 = bench._instance(spec, run)[0]
    np.testing.assert_array_equal(X, X2)
    roll = {"n": 40, "data": {"source": "swiss_roll", "classes": 4}}
    X, y, _, _, _, t = bench._instance(spec, roll, with_t=True)
    assert X.shape == (40, 3) and t.shape == (40,) and set(np.unique(y)) == {0, 1, 2, 3}


def test_colored_mvu_row_adds_the_between_class_scatter():
    """The ``alignment`` hook (Colored MVU as user code): the objective at the solution is
    MVU's ``-tr G`` minus the labelled points' between-class scatter
    ``sum_c n_c |mean_c z|^2`` computed here from the Gram matrix, and LOWRANK reaches
    CLARABEL's optimum (1e-5 relative: both solve to about 1e-7)."""
    from sdpembed.solvers import solve

    spec = {"data": {"seed": 0, "labeled_fraction": 0.8},
            "graph": {"n_neighbors": 3, "n_random": 1}, "solve": {"slack_weight": 1.0}}
    run = {"method": "mvu", "n": 30, "alignment": 1.0,
           "data": {"source": "sklearn:digits"}}
    X, y, y_obs, labeled, graph = bench._instance(spec, run)
    f = bench._formulation(spec, run, X, y_obs, graph)
    rep = solve(f, solver="CLARABEL")
    G = f.value("gram")
    scatter = sum(G[np.ix_(y_obs == c, y_obs == c)].sum() / np.sum(y_obs == c)
                  for c in np.unique(y_obs[labeled]))
    assert scatter > 0.1 * np.trace(G)                      # the term is not negligible
    np.testing.assert_allclose(rep.objective, -np.trace(G) - scatter, rtol=1e-6)
    low = solve(bench._formulation(spec, run, X, y_obs, graph), solver="LOWRANK", tol=1e-7)
    assert low.certified_gap is not None and low.certified_gap <= 1e-6
    np.testing.assert_allclose(low.objective, rep.objective, rtol=1e-5)
    assert "label alignment 1" in bench._variant(run, "LOWRANK", spec)


def test_a_row_cut_during_its_evaluation_keeps_the_solve():
    """The child puts the solve's numbers before the 3-NN evaluation: a kill by the
    row's timeout (or a death) after the solve keeps them, marked; nothing back gives
    the bare row."""
    base = {"method": "dvu", "n": 50, "backend": "LOWRANK", "name": None,
            "basis_rank": None, "variant": ""}
    solved = {**base, "status": "optimal", "objective": -1.5, "certified_gap": 3e-5,
              "wall_s": 12.0, "evaluation": "not finished"}
    row = bench._collect([dict(solved)], base, True, 60, -9, 61.0)
    assert row["objective"] == -1.5 and row["certified_gap"] == 3e-5
    assert row["wall_s"] == 12.0  # the solve's own time, not the harness's
    assert row["status"] == "optimal; evaluation cut by the 60 s timeout"
    died = bench._collect([dict(solved)], base, False, 60, -9, 30.0)
    assert died["status"] == "optimal; evaluation process died (exit code -9)"
    whole = {**base, "status": "optimal", "objective": -1.5, "knn3_accuracy": 0.9}
    assert bench._collect([dict(solved), whole], base, False, 60, 0, 20.0) == whole
    assert bench._collect([], base, True, 60, -9, 61.0) == {
        **base, "status": "timeout after 60 s", "wall_s": 61.0}
    assert bench._collect([], base, False, 60, -9, 5.0)["status"] == (
        "process died (exit code -9; out of memory?)")


def _wait_for_sigterm(path):
    import signal
    import time
    from pathlib import Path

    def note(signum, frame):
        Path(path).write_text("terminated")
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, note)
    Path(path).write_text("ready")
    time.sleep(60)


def test_a_child_past_its_time_is_terminated_before_it_is_killed(tmp_path):
    """A timed-out row's child gets SIGTERM first, so a backend running ``csdp`` stops it
    and removes its folder (``_csdp._StopOnSigterm``); before, SIGKILL left ``csdp``
    running as an orphan beside the next rows (sixteenth round's peer run)."""
    import multiprocessing as mp
    import time

    from problems._proc import stop_child

    flag = tmp_path / "flag"
    proc = mp.get_context("spawn").Process(target=_wait_for_sigterm, args=(str(flag),))
    proc.start()
    deadline = time.monotonic() + 60
    while not flag.exists() and proc.is_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert flag.exists(), "the child did not start"
    stop_child(proc, grace=10.0)
    assert flag.read_text() == "terminated" and proc.exitcode == 0


def test_usage_counts_the_programs_a_child_ran():
    """``cpu_s`` counts the children the process waited for (``csdp`` does a CSDP solve's
    work in its own process): a busy child's CPU shows up in it."""
    import subprocess
    import sys

    from problems._proc import usage

    before = usage()["cpu_s"]
    subprocess.run([sys.executable, "-c", "s = 0\nfor i in range(3 * 10**7): s += i"],
                   check=True)
    assert usage()["cpu_s"] - before >= 0.5


def test_scale_rows_are_told_apart_and_the_snr_row_runs_alone(tmp_path, monkeypatch,
                                                              usps_path):
    """``lowrank_scale.toml``: no two rows share the key ``--resume`` and the table go by
    (a row sharing its key with another would be skipped as done); ``--only tan2500-snr8``
    runs that row alone: the tangent row's data, graph and slack with the SNR constraint,
    which its problem (built at 60 digits here) carries."""
    import tomllib

    spec = tomllib.loads((bench.HERE / "benchmarks" / "lowrank_scale.toml").read_text())
    keys = [(r["method"], r["n"], b, r.get("basis_rank"), bench._variant(r, b, spec))
            for r in spec["run"] for b in r["backends"]]
    assert len(set(keys)) == len(keys)
    calls = []
    monkeypatch.setattr(bench, "_baseline_knn", lambda spec, n: 0.5)
    monkeypatch.setattr(bench, "_run_one", lambda spec, run, backend, timeout: calls.append(
        run) or {"method": run["method"], "n": run["n"], "backend": backend,
                 "variant": bench._variant(run, backend, spec), "status": "optimal"})
    bench.main(["lowrank_scale", "--only", "tan2500-snr8", "--results", str(tmp_path)])
    assert len(calls) == 1
    row = calls[0]
    paper = next(r for r in spec["run"] if r["n"] == 2500 and not r.get("name")
                 and r.get("graph", {}).get("metric") == "tangent"
                 and "n_neighbors" not in r["graph"])
    assert {k: row[k] for k in ("method", "n", "slack_weight", "data", "graph")} == \
        {k: paper[k] for k in ("method", "n", "slack_weight", "data", "graph")}
    assert row["dvu"] == {"snr": 8.0} and "dvu" not in paper
    small = {**row, "n": 60}
    X, _, y_obs, _, graph = bench._instance(spec, small)
    gp = bench._formulation(spec, small, X, y_obs, graph).current_problem()
    assert gp.snr == 8.0 and gp.icv is not None and gp.bcv is not None

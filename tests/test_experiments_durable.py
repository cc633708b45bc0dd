"""Durable experiment runs: interruptions, resume, concurrent runs, bad outputs, failing tasks.

Each finished task must be on disk before the next starts, so a run killed by
SIGINT, SIGTERM or SIGKILL (in a subprocess, after a few tasks) keeps every
finished row; ``--resume`` runs the rest and must end with the same tables as
an uninterrupted run (compared column by column, timings excepted). The grid is
tiny (30 iris flowers, CLARABEL) so that each test takes seconds.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdpembed.cli import main
from sdpembed.exceptions import OutputError, SpecError
from sdpembed.experiments import (
    RunInterrupted,
    expand_grid,
    load_spec,
    parse_spec,
    run_spec,
    tasks,
    tomllib,
)
from sdpembed.experiments.store import ROWS

pytestmark = pytest.mark.skipif(os.name != "posix", reason="signals and flock are POSIX")

SPEC = """\
name = "durable"
seeds = 6
solvers = ["CLARABEL"]
[dataset]
name = "iris"
n_samples = 30
scale = "standard"
[labels]
fraction = 0.3
min_per_class = 2
[graph]
n_neighbors = 3
n_random = 1
[methods.raw]
estimator = "raw"
[methods.dvu]
estimator = "DVU"
n_components = 2
slack_weight = [1.0, 10.0]
validation_fraction = "none"  # what is tested is the run, not DVU's held-out check
[metrics.knn1]
kind = "knn"
k = 1
[figures.emb]
kind = "embedding"
method = "dvu"
"""
TOTAL = 18  # 6 seeds x (raw + 2 DVU settings): enough that a run cannot finish between
#            the third row and the signal, even on a loaded machine
TIMING = {"compile_s", "solve_s", "prepare_s", "fit_s", "eval_s", "wall_s"}


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("spec") / "durable.toml"
    path.write_text(SPEC)
    return path


@pytest.fixture(scope="module")
def reference(spec_file, tmp_path_factory):
    """The uninterrupted run: (its folder, results.csv rows)."""
    out = tmp_path_factory.mktemp("reference")
    assert main(["run", str(spec_file), "--out", str(out), "--no-progress"]) == 0
    return out / "durable", _csv(out / "durable" / "results.csv")


def _csv(path: Path) -> list[dict]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def _lines(folder: Path) -> list[dict]:
    path = folder / ROWS
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _same_tables(a: list[dict], b: list[dict]) -> None:
    """Same rows in the same order; every column equal but the timings (which differ between
    any two runs); the solver's objective and gap to 1e-9 relative (same solves, maybe
    another process)."""
    assert len(a) == len(b)
    for ra, rb in zip(a, b, strict=True):
        assert ra.keys() == rb.keys()
        for k in ra:
            if k in TIMING:
                continue
            if k in ("objective", "gap") and ra[k] and rb[k]:
                assert float(ra[k]) == pytest.approx(float(rb[k]), rel=1e-9), (ra["index"], k)
            else:
                assert ra[k] == rb[k], (ra["index"], k, ra[k], rb[k])


def _default_sigint() -> None:
    """In the child: SIGINT's default action, even when pytest runs in a background job
    (a shell starts those with SIGINT ignored, the child would inherit it, and the runner
    rightly keeps ignoring an ignored SIGINT)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(spec_file: Path, out: Path, *extra) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.Popen([sys.executable, "-m", "sdpembed.cli", "run", str(spec_file),
                             "--out", str(out), "--no-progress", *extra], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)


def _wait_for_rows(folder: Path, n: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    t0 = time.perf_counter()
    while len(_lines(folder)) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.perf_counter() - t0 < timeout, "the run wrote no rows"
        time.sleep(0.01)


# --------------------------------------------------------------------------- interruptions


# SIGKILL runs with the slow tests: a killed run's rows on disk, the refusal without
# --resume and the resumed tables equal to the reference's are also checked by SIGINT's
# and SIGTERM's cases and by test_a_line_cut_by_a_crash_is_dropped_on_resume (which kills
# with SIGKILL too, and resumes)
@pytest.mark.parametrize("sig, code", [
    (signal.SIGINT, 130), (signal.SIGTERM, 143),
    pytest.param(signal.SIGKILL, -signal.SIGKILL, marks=pytest.mark.slow)])
def test_killed_run_keeps_finished_rows_and_resume_gives_the_same_tables(
        spec_file, reference, tmp_path, sig, code):
    folder = tmp_path / "durable"
    proc = _start(spec_file, tmp_path)
    _wait_for_rows(folder, 3, proc)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    kept = _lines(folder)
    assert 3 <= len(kept) < TOTAL  # interrupted mid-grid, every finished row on disk
    grid = {t.key: t.index for t in expand_grid(load_spec(spec_file))}
    assert all(rec["key"] in grid and rec["row"]["status"] == "ok" for rec in kept)
    if sig != signal.SIGKILL:  # the run says what it kept and how to go on
        assert f"interrupted by {sig.name} after {len(kept)} of {TOTAL} runs" in err
        assert "--resume" in err and not (folder / ".lock").exists()
    assert not (folder / "results.csv").exists()  # final tables only for a complete grid
    # without --resume the folder is refused; with it, the rest is run
    assert main(["run", str(spec_file), "--out", str(tmp_path), "--no-progress"]) == 2
    assert main(["run", str(spec_file), "--out", str(tmp_path), "--no-progress",
                 "--resume"]) == 0
    lines = _lines(folder)
    assert len(lines) == TOTAL and len({r["key"] for r in lines}) == TOTAL  # none twice
    assert lines[:len(kept)] == kept  # the first session's rows untouched
    ref_folder, ref_rows = reference
    _same_tables(_csv(folder / "results.csv"), ref_rows)
    # the figure of the first DVU run, kept by whichever session ran it
    assert (folder / "figures" / "emb.png").stat().st_size > 1000
    summary = (folder / "summary.md").read_text()
    assert f"{len(kept)} of {TOTAL} runs were already on disk (resumed)" in summary

    def cells(text):  # the summary's cells, without the 'fit s' and 'solve' columns
        return [line.rsplit("|", 3)[0] for line in text.splitlines() if line.startswith("| iris")]

    assert cells(summary) == cells((ref_folder / "summary.md").read_text())


def test_a_line_cut_by_a_crash_is_dropped_on_resume(spec_file, reference, tmp_path):
    folder = tmp_path / "durable"
    proc = _start(spec_file, tmp_path)
    _wait_for_rows(folder, 2, proc)
    proc.kill()
    proc.communicate(timeout=60)
    kept = _lines(folder)
    with (folder / ROWS).open("a") as fh:  # what a crash in the middle of a write leaves
        fh.write('{"key": "{\\"dataset\\": \\"iris\\", "row": {"index": 5, "sta')
    assert main(["run", str(spec_file), "--out", str(tmp_path), "--no-progress",
                 "--resume"]) == 0
    lines = _lines(folder)  # every line parses again
    assert len(lines) == TOTAL and lines[:len(kept)] == kept
    _same_tables(_csv(folder / "results.csv"), reference[1])


def test_api_interruption_is_a_keyboard_interrupt_naming_what_was_kept(spec_file, tmp_path,
                                                                         monkeypatch):
    calls = []
    original = tasks.run_task

    def interrupted_after_four(spec, task, data=None):
        calls.append(task.index)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return original(spec, task, data)

    monkeypatch.setattr("sdpembed.experiments.runner.run_task", interrupted_after_four)
    with pytest.raises(RunInterrupted) as info:
        run_spec(spec_file, out_dir=tmp_path / "run", progress=False)
    assert isinstance(info.value, KeyboardInterrupt)
    assert (info.value.finished, info.value.total) == (4, TOTAL)
    assert len(_lines(tmp_path / "run")) == 4


# --------------------------------------------------------------------------- the folder


def test_two_runs_cannot_write_one_folder(spec_file, tmp_path, capsys):
    folder = tmp_path / "durable"
    first = _start(spec_file, tmp_path)
    _wait_for_rows(folder, 1, first)
    assert main(["run", str(spec_file), "--out", str(tmp_path), "--no-progress",
                 "--seeds", "1"]) == 2
    err = capsys.readouterr().err
    assert f"is being written by another run (process {first.pid} on" in err
    assert err.count("\n") == 1  # one line
    assert main(["run", str(spec_file), "--out", str(tmp_path), "--no-progress",
                 "--overwrite"]) == 2  # not even to overwrite it
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    lines = _lines(folder)
    assert len(lines) == TOTAL and len({r["key"] for r in lines}) == TOTAL
    assert len(_csv(folder / "results.csv")) == TOTAL


def test_another_runs_results_are_refused_unless_resumed_or_overwritten(tmp_path, capsys):
    d = tomllib.loads(SPEC)
    d.update(seeds=2, methods={"raw": {"estimator": "raw"}})
    del d["figures"]
    spec = parse_spec(d)
    run_spec(spec, out_dir=tmp_path, progress=False)
    with pytest.raises(OutputError, match="already holds 2 finished runs of spec 'durable'"):
        run_spec(spec, out_dir=tmp_path, progress=False)
    with pytest.raises(OutputError, match="different spec or grid \\(differs in: seeds\\)"):
        run_spec(spec, seeds=[0], out_dir=tmp_path, progress=False, resume=True)
    d["metrics"]["knn1"]["k"] = 3
    with pytest.raises(OutputError, match="differs in: the spec's contents"):
        run_spec(parse_spec(d), out_dir=tmp_path, progress=False, resume=True)
    # resuming a complete run runs nothing and writes the same tables again
    before = (tmp_path / "results.csv").read_text()
    again = run_spec(spec, out_dir=tmp_path, progress=False, resume=True)
    assert again.meta["resumed"] == 2 and (tmp_path / "results.csv").read_text() == before
    # overwrite: a later one-seed run replaces the two-seed one, as asked
    run_spec(spec, seeds=[0], out_dir=tmp_path, progress=False, overwrite=True)
    assert len(_lines(tmp_path)) == 1 and len(_csv(tmp_path / "results.csv")) == 1


def test_results_without_a_manifest_are_not_silently_replaced(tmp_path):
    (tmp_path / "results.csv").write_text("index\n0\n")  # an older run's table
    d = tomllib.loads(SPEC)
    d.update(seeds=1, methods={"raw": {"estimator": "raw"}})
    del d["figures"]
    with pytest.raises(OutputError, match="already holds results \\(results.csv\\)"):
        run_spec(parse_spec(d), out_dir=tmp_path, progress=False)
    with pytest.raises(OutputError, match="without a run manifest"):
        run_spec(parse_spec(d), out_dir=tmp_path, progress=False, resume=True)
    assert (tmp_path / "results.csv").read_text() == "index\n0\n"


@pytest.mark.parametrize("make_out", [
    pytest.param(lambda tmp: (tmp / "file").write_text("x") and tmp / "file", id="a-file"),
    pytest.param(lambda tmp: Path("/proc/sdpembed-out"), id="read-only"),
])
def test_unwritable_out_is_found_before_the_first_task(spec_file, tmp_path, make_out,
                                                       monkeypatch, capsys):
    def never(*args, **kwargs):
        raise AssertionError("a task ran")

    monkeypatch.setattr("sdpembed.experiments.runner.run_task", never)
    out = make_out(tmp_path)
    assert main(["run", str(spec_file), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sdpembed run: cannot write the results to {out / 'durable'}: ")
    assert err.count("\n") == 1


# --------------------------------------------------------------------------- failing tasks


def test_any_exception_in_a_task_is_its_row_and_the_grid_carries_on(spec_file, tmp_path,
                                                                     monkeypatch, capsys):
    original = tasks._fit

    def broken_for_slack_10(info, est, *args):
        if getattr(est, "slack_weight", None) == 10.0:
            raise TypeError("a bug in one method's fit")
        return original(info, est, *args)

    monkeypatch.setattr(tasks, "_fit", broken_for_slack_10)
    assert main(["run", str(spec_file), "--out", str(tmp_path), "--no-progress"]) == 1
    captured = capsys.readouterr()
    seeds = TOTAL // 3
    assert f"{seeds} of {TOTAL} runs failed" in captured.err
    rows = _csv(tmp_path / "durable" / "results.csv")
    failed = [r for r in rows if r["status"] == "error"]
    assert len(failed) == seeds and all(json.loads(r["params"]) == {"slack_weight": 10.0}
                                    for r in failed)
    assert all(r["error"] == "TypeError: a bug in one method's fit" and
               r["error_stage"] == "fit" and r["knn1"] == "" for r in failed)
    assert all(r["status"] == "ok" and 0 < float(r["knn1"]) <= 1 for r in rows
               if r not in failed)
    assert f"{TOTAL} runs: {TOTAL - seeds} ok, {seeds} errors" in captured.out
    assert f"## Errors ({seeds} runs)" in captured.out


def test_duplicate_points_fail_only_the_graph_methods(tmp_path):
    """Full iris has duplicate rows: the DVU graph fails, raw and LDA rows are kept."""
    d = {"name": "dup", "seeds": 1, "dataset": {"name": "iris"},
         "labels": {"fraction": 0.3}, "graph": {"n_neighbors": 2, "n_random": 1},
         "methods": {"raw": {"estimator": "raw"}, "lda": {"estimator": "LDA"},
                     "dvu": {"estimator": "DVU", "n_components": 2}},
         "metrics": {"knn1": {"kind": "knn"}}}
    result = run_spec(parse_spec(d), out_dir=tmp_path, progress=False)
    raw, lda, dvu = result.rows
    assert raw["status"] == lda["status"] == "ok"
    assert dvu["status"] == "error" and dvu["error"].startswith("DuplicatePointsError")
    assert dvu["error_stage"] == "prepare"
    assert len(_lines(tmp_path)) == 3


def test_inaccurate_solves_far_from_optimal_are_errors_not_ok(tmp_path):
    """SCS cut off at 20 iterations (objective 17 % from CLARABEL's optimum on this data) is
    an error row, and so are 2,000 iterations (0.2 % from it) and 8,000 (near it, kept as
    'inaccurate' before): a cut iterate is no result (SolverLimitError). A solve that stops
    at reduced accuracy on its own (CLARABEL asked for 1e-15: AlmostSolved) is kept as
    'inaccurate' -- and none is 'ok'."""
    d = tomllib.loads(SPEC)
    d.update(seeds=1, solvers=["SCS"])
    d["methods"] = {"dvu": {"estimator": "DVU", "n_components": 2, "slack_weight": 1.0}}
    del d["figures"]
    for max_iters in (20, 2000, 8000):
        row = run_spec(parse_spec({**d, "solver_options": {"SCS": {"max_iters": max_iters}}}),
                       progress=False).rows[0]
        assert row["status"] == "error" and "Raise the limit (max_iters" in row["error"]
        assert row["error"].startswith("SolverLimitError: SCS on dvu stopped at its iteration "
                                       "or time limit before converging")
    tight = {"tol_gap_abs": 1e-15, "tol_gap_rel": 1e-15, "tol_feas": 1e-15}
    near = run_spec(parse_spec({**d, "solvers": ["CLARABEL"],
                                "solver_options": {"CLARABEL": tight}}), progress=False).rows[0]
    assert near["solve_status"] == "optimal_inaccurate" and near["status"] == "inaccurate"
    assert 0 < near["knn1"] <= 1


def test_sdpa_stopped_far_from_optimal_is_an_error_row(tmp_path):
    """SDPA stopped by maxIteration at objective 20 (optimum -1.07): cvxpy calls it
    'optimal_inaccurate' and drops SDPA's relative gap of 2, so the row was kept as
    'inaccurate'; with the statistics kept the rule sees the gap and the row is an error."""
    pytest.importorskip("sdpap")
    d = tomllib.loads(SPEC)
    d.update(seeds=1, solvers=["SDPA"], solver_options={"SDPA": {"maxIteration": 8}})
    d["methods"] = {"dvu": {"estimator": "DVU", "n_components": 2, "slack_weight": 1.0}}
    del d["figures"]
    row = run_spec(parse_spec(d), out_dir=tmp_path, progress=False).rows[0]
    assert row["status"] == "error" and row["error_stage"] == "fit"
    assert row["error"].startswith("SolverLimitError: SDPA on dvu stopped at its iteration or "
                                   "time limit before converging")
    assert _lines(tmp_path)[0]["row"]["status"] == "error"  # on disk as it is


@pytest.mark.skipif(shutil.which("csdp") is None, reason="the csdp program is not installed")
@pytest.mark.parametrize("maxiter", [10, 14])
def test_csdp_iteration_limit_rows_are_errors_never_ok(tmp_path, monkeypatch, maxiter):
    """CSDP stopped by maxiter: at 10 iterations (relative gap 0.56) the row is an error, and
    at 14 (0.55 % from CLARABEL's optimum on this grid, kept as 'inaccurate' before) too: a
    cut iterate is no result."""
    monkeypatch.delenv("SDPEMBED_CSDP", raising=False)
    d = tomllib.loads(SPEC)
    d.update(seeds=1, solvers=["CSDP"], solver_options={"CSDP": {"maxiter": maxiter}})
    d["methods"] = {"dvu": {"estimator": "DVU", "n_components": 2, "slack_weight": 1.0}}
    del d["figures"]
    row = run_spec(parse_spec(d), out_dir=tmp_path, progress=False).rows[0]
    assert row["status"] == "error"
    assert row["error"].startswith("SolverLimitError: CSDP on dvu stopped at its iteration or "
                                   "time limit before converging (optimal_inaccurate")
    assert "Raise the limit (maxiter, time_limit)" in row["error"]
    assert _lines(tmp_path)[0]["row"]["status"] == "error"


# --------------------------------------------------------------------------- specs


def test_spec_objects_are_hashable_and_equal_for_equal_specs(spec_file):
    a, b = load_spec(spec_file), load_spec(spec_file)
    assert a == b and hash(a) == hash(b)
    assert hash(a.datasets[0]) == hash(b.datasets[0]) and hash(a.graph) == hash(b.graph)
    task = expand_grid(a)[3]
    assert hash(task) and task.key == expand_grid(b)[3].key


@pytest.mark.parametrize("content, message", [
    (b"\x7fELF\x02\x01\x01\x00\x00\x00\xd0\xc3", "is not a text file"),
    (b"name = 'x'\x00\n", "holds NUL bytes"),
    (b"x" * (1 << 20 + 1), "a spec is a short text file"),
])
def test_binary_or_huge_spec_files_are_spec_errors(tmp_path, content, message, capsys):
    path = tmp_path / "bad.toml"
    path.write_bytes(content)
    assert main(["run", str(path), "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def test_spec_file_name_that_is_not_a_plain_name_needs_a_name_field(tmp_path):
    path = tmp_path / "my spec.toml"
    path.write_text(SPEC.replace('name = "durable"\n', ""))
    with pytest.raises(Exception, match="the file name 'my spec' is not a plain file name"):
        load_spec(path)


def test_shipped_specs_are_found_from_any_folder(tmp_path, monkeypatch):
    from sdpembed.experiments import find_spec, list_specs

    monkeypatch.chdir(tmp_path)
    assert "smoke" in list_specs()
    assert load_spec(find_spec("smoke")).name == "smoke"
    assert load_spec(find_spec("smoke.toml")).name == "smoke"
    (tmp_path / "smoke.toml").write_text(SPEC)  # a file of that name wins
    assert load_spec(find_spec("smoke.toml")).name == "durable"


def test_lowrank_interval_envelope_kink_validates_and_runs(tmp_path):
    # the spec file as a user writes it; LowRankOptions alone checks the table
    text = (SPEC.replace("seeds = 6", "seeds = 1").replace('["CLARABEL"]', '["LOWRANK"]')
            .replace("slack_weight = [1.0, 10.0]", "slack_weight = 1.0")
            .replace("[methods.raw]\nestimator = \"raw\"\n", "")
            .split("[figures.emb]")[0])
    path = tmp_path / "kink.toml"
    path.write_text(text + '[solver_options.LOWRANK]\ninterval_envelope = "kink"\n'
                           "time_limit = 30\n")
    spec = load_spec(path)
    assert [m.label for m in spec.methods] == ["dvu"] and spec.solvers == ("LOWRANK",)
    assert spec.solver_options["LOWRANK"]["interval_envelope"] == "kink"
    row = run_spec(spec, progress=False).rows[0]
    assert row["status"] in ("ok", "inaccurate"), row["error"]
    assert json.loads(row["solver_options"])["interval_envelope"] == "kink"
    assert 0 < row["knn1"] <= 1
    path.write_text(text + '[solver_options.LOWRANK]\ninterval_envelope = "kinky"\n')
    with pytest.raises(SpecError, match="solver_options.LOWRANK.interval_envelope"):
        load_spec(path)


# --------------------------------------------------------------------------- Dask


def test_dask_workers_get_the_data_and_the_data_folder(spec_file, tmp_path, monkeypatch):
    """Worker processes started with another SDPEMBED_DATA get the runner's value, and the
    data loaded by the runner (no worker reads the data folder)."""
    distributed = pytest.importorskip("dask.distributed")
    monkeypatch.setenv("SDPEMBED_DATA", str(tmp_path / "empty"))
    with distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        shared = str(tmp_path / "data-here")
        monkeypatch.setenv("SDPEMBED_DATA", shared)
        d = tomllib.loads(SPEC)
        d.update(seeds=1, methods={"raw": {"estimator": "raw"}})
        del d["figures"]
        result = run_spec(parse_spec(d), scheduler=client, progress=False)
        env = client.run(lambda: os.environ.get("SDPEMBED_DATA"))
        sent = client.run(lambda: sorted(ds.name for ds in tasks._PRELOADED))
    assert list(env.values()) == [shared]
    assert list(sent.values()) == [["iris"]]
    assert result.rows[0]["status"] == "ok"
    text = result.meta["execution"]
    assert "1 workers" in text and "data loaded here and sent to the workers (iris)" in text
    assert f"SDPEMBED_DATA={shared} set on the workers" in text
    assert text in result.summary()


def test_summary_says_how_the_run_ran(spec_file):
    d = tomllib.loads(SPEC)
    d.update(seeds=1, methods={"raw": {"estimator": "raw"}})
    del d["figures"]
    serial = run_spec(parse_spec(d), progress=False)
    assert "- ran: serially in this process; wall time" in serial.summary()
    parallel = run_spec(parse_spec(d), n_jobs=2, progress=False)
    assert "- ran: 2 joblib worker processes (each loads the data from" in parallel.summary()
    buf = io.StringIO(parallel.csv_text())
    assert len(list(csv.DictReader(buf))) == 1

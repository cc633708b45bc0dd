"""The large-n benchmark runner's bookkeeping: ``--resume`` and the SCS ratios.

The solves themselves are replaced by a stub (the benchmark's numbers come from
running it, never from tests); what is tested is which rows run and what the
results file holds afterwards.
"""

import json

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

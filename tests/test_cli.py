"""Tests of the ``sdpembed`` command line (``sdpembed.cli.main``)."""

from __future__ import annotations

import csv
import re

import pytest

from sdpembed.cli import main
from sdpembed.datasets import dataset_info, list_datasets
from sdpembed.solvers import available_solvers, solver_version


def _table(text: str) -> list[list[str]]:
    """Rows of the markdown tables in ``text`` (header and separator lines dropped)."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("|")]
    return [r for r in rows if not set("".join(r)) <= set("-")]


def test_solvers_lists_installed_backends_with_versions(capsys):
    assert main(["solvers"]) == 0
    rows = _table(capsys.readouterr().out)
    assert rows[0] == ["backend", "version"]
    assert rows[1:] == [[name, solver_version(name)] for name in available_solvers()]
    assert ["CLARABEL", solver_version("CLARABEL")] in rows


def test_datasets_lists_every_dataset(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SDPEMBED_DATA", str(tmp_path))  # empty: nothing downloaded yet
    (tmp_path / "sonar.npz").write_bytes(b"")  # "here" only checks that the archive exists
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert f"data folder: {tmp_path}" in out
    rows = {r[0]: r for r in _table(out)[1:]}
    assert sorted(rows) == list_datasets()
    for name, row in rows.items():
        info = dataset_info(name)
        assert row[1] == info.kind
        assert row[2] == f"{info.n_samples} x {info.n_features}" and row[3] == str(info.n_classes)
    assert rows["sonar"][4] == "yes" and rows["usps"][4] == "downloaded on first use"
    assert rows["iris"][4] == "yes"


def test_run_smoke_writes_results_and_prints_the_summary(capsys, tmp_path):
    rc = main(["run", "smoke", "--out", str(tmp_path), "--seeds", "1", "--no-progress",
               "--solver", "CLARABEL"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.startswith("# smoke")
    assert f"results written to {tmp_path / 'smoke'}/" in out
    rows = _table(out)
    assert rows[0][:7] == ["dataset", "labels", "method", "params", "solver", "dims",
                           "runs used"]
    methods = [r[2] for r in rows[1:6]]
    assert methods == ["raw", "lda", "dvu", "dvu", "lgc"]
    assert all(r[6] == "1/1" for r in rows[1:6])
    with (tmp_path / "smoke" / "results.csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == 5 and {r["seed"] for r in table} == {"0"}
    # the summary's raw 1-NN cell is the CSV's value in percent
    raw = next(r for r in table if r["method"] == "raw")
    assert rows[1][7] == f"{100 * float(raw['knn1']):.2f}"
    assert (tmp_path / "smoke" / "summary.md").read_text().startswith("# smoke")
    assert (tmp_path / "smoke" / "figures" / "dvu_embedding.png").is_file()


@pytest.mark.parametrize("args, message", [
    (["run", "smoke", "--solver", "NOPE"], r"^sdpembed run: --solver: unknown solver 'NOPE'"),
    (["run", "no_such_spec"], r"^sdpembed run: no spec 'no_such_spec'"),
])
def test_run_errors_exit_2_with_a_message(capsys, tmp_path, args, message):
    assert main([*args, "--out", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err
    assert not (tmp_path / "smoke").exists()


def test_run_bad_spec_names_the_field(capsys, tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text('seeds = 1\n[dataset]\nname = "iris"\n[methods.m]\nestimator = "Foo"\n'
                    '[metrics.a]\nkind = "knn"\n')
    assert main(["run", str(spec), "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(
        "sdpembed run: methods.m.estimator: unknown method 'Foo'")


@pytest.mark.parametrize("args", [["run", "smoke", "--jobs", "0"],
                                  ["run", "smoke", "--seeds", "0"], ["run"], ["nothing"]])
def test_bad_arguments_are_usage_errors(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    assert "usage: sdpembed" in capsys.readouterr().err


# --------------------------------------------------------------------------- one-line errors


def test_demo_with_an_unknown_solver_is_one_line(capsys, tmp_path):
    rc = main(["demo", "--solver", "FOO", "--plot", str(tmp_path / "demo.png")])
    err = capsys.readouterr().err
    assert rc != 0 and "Traceback" not in err
    assert err.startswith("sdpembed demo: ") and "FOO" in err and err.count("\n") == 1


def test_unexpected_errors_are_one_line_unless_verbose(capsys, monkeypatch):
    from sdpembed import solvers

    def broken():
        raise RuntimeError("a bug somewhere")

    monkeypatch.setattr(solvers, "available_solvers", broken)
    assert main(["solvers"]) == 1
    err = capsys.readouterr().err
    assert err == ("sdpembed solvers: RuntimeError: a bug somewhere (run with -v for the "
                   "traceback)\n")
    assert main(["-v", "solvers"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.endswith("sdpembed solvers: RuntimeError: a bug somewhere\n")


def test_solvers_says_why_csdp_is_not_usable(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SDPEMBED_CSDP", str(tmp_path / "nonexistent"))
    assert main(["solvers"]) == 0
    out = capsys.readouterr().out
    assert "| CSDP |" not in out
    assert f"- CSDP: SDPEMBED_CSDP={tmp_path / 'nonexistent'} is not a file;" in out


def test_run_help_documents_resume_overwrite_and_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--resume" in out and "--overwrite" in out and "130/143" in out
    with pytest.raises(SystemExit) as info:
        main(["run", "smoke", "--resume", "--overwrite"])
    assert info.value.code == 2


@pytest.mark.parametrize("args", [["--help"], ["demo", "--help"], ["run", "--help"],
                                  ["solvers", "--help"], ["datasets", "--help"]])
def test_help_is_plain_text(args, capsys):
    # argparse prints text as written: no reStructuredText (``literal``, :role:`target`)
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: sdpembed")
    assert "`" not in out and not re.search(r":(class|func|mod|meth|attr):", out), out

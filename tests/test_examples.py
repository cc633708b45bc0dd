"""Every example in ``examples/`` (the documentation's gallery) through its ``run()``.

Each test calls an example's ``run(solver=..., quiet=True)`` on small settings and
checks what the example claims: backends agree on the optimal value, added
constraints hold, the objective is monotone in the swept weight, the error below the
slack threshold names it, the eigen and SDP paths agree. The full-size settings the
gallery uses are the slow tests; the gallery build itself runs them all again.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from sdpembed.solvers import available_solvers, solve

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name: str):
    """The module ``examples/<name>.py`` (imported, not run: plots are under ``__main__``)."""
    spec = importlib.util.spec_from_file_location(f"_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_example_has_run():
    """Each gallery script keeps a ``run(solver=..., quiet=True)`` for these tests."""
    import inspect

    scripts = sorted(p.stem for p in EXAMPLES.glob("*.py"))
    assert "plot_dvu_backends" in scripts
    for name in scripts:
        params = inspect.signature(load(name).run).parameters
        assert "solver" in params and "quiet" in params, name
        assert params["quiet"].default is True, name


def _agree(objectives: dict[str, float], rtol: float) -> None:
    best = min(objectives.values())
    for name, value in objectives.items():
        assert value - best <= rtol * max(1.0, abs(best)), (name, value, best)


def test_no_control_characters_in_the_sources():
    """A ``\\b`` written through a non-raw string becomes a backspace: in the gallery's
    reST it made ``\\bar`` an unknown macro that MathJax shows as an error (fast here; the
    slow site check finds it only after a build)."""
    root = EXAMPLES.parent
    control = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
    generated = {"_build", "auto_examples", "__pycache__"}
    found = []
    for folder in ("examples", "docs", "sdpembed", "problems", "tests"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in {".py", ".rst", ".md", ".toml", ".txt", ".css", ".js"} \
                    or generated & set(path.relative_to(root).parts):
                continue
            for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if control.search(line):
                    found.append(f"{path.relative_to(root)}:{k}: {line.strip()[:80]!r}")
    assert not found, found


def test_dvu_backends_agree_small():
    """The same DVU solved by CLARABEL, SCS and LOWRANK: one optimal value.

    Tolerance 1e-4 relative: SCS stops at eps 1e-6 (observed differences ~1e-6), the
    interior-point and certified LOWRANK values agree to ~1e-7.
    """
    solvers = [s for s in ("CLARABEL", "SCS", "LOWRANK") if s in available_solvers()]
    result = load("plot_dvu_backends").run(solver=solvers, n_samples=40)
    assert set(result["reports"]) == set(solvers)
    assert all(r.status in ("optimal", "optimal_inaccurate") for r in result["reports"].values())
    _agree({k: r.objective for k, r in result["reports"].items()}, 1e-4)


@pytest.mark.slow
def test_dvu_backends_agree_all_installed():
    """The gallery's setting: every installed backend, 50 digits."""
    result = load("plot_dvu_backends").run(solver=None)
    assert set(result["reports"]) == set(available_solvers())
    _agree({k: r.objective for k, r in result["reports"].items()}, 1e-4)


def test_must_link_constraints_hold():
    """Every must-link / cannot-link bound holds at the solution, whatever backend auto picks."""
    result = load("plot_must_link").run(solver="auto", n_samples=40, n_pairs=3)
    n_must = len(result["must"])
    D = result["D_constrained"]
    scale = max(result["cannot_bound"], 1.0)
    assert np.all(D[:n_must] <= result["must_bound"] + 1e-5 * scale)
    assert np.all(D[n_must:] >= result["cannot_bound"] - 1e-5 * scale)
    # a smaller feasible set cannot have a lower optimum
    plain, constrained = result["plain"].objective, result["constrained"].objective
    assert constrained >= plain - 1e-5 * max(1.0, abs(plain))
    # before, at least one pair violated its bound (else the example would show nothing)
    D0 = result["D_plain"]
    assert np.any(D0[:n_must] > result["must_bound"]) or np.any(
        D0[n_must:] < result["cannot_bound"])
    assert result["constrained"].selection
    # whichever backend auto chose, a conic backend solving the cvxpy problem as
    # written reaches the same optimum (1e-4 relative: both stop near 1e-7)
    other = "SCS" if result["constrained"].solver == "CLARABEL" else "CLARABEL"
    check = solve(result["formulation"], solver=other)
    assert check.objective == pytest.approx(constrained, rel=1e-4, abs=1e-6)


def test_parameter_sweep_is_monotone():
    """One formulation re-solved over slack weights: the optimum rises, the slack falls.

    Both monotonicities hold exactly for the true optima (the optimal value is a
    minimum of functions nondecreasing in lambda; the exchange argument on two
    optima gives the slack); the tolerance covers SCS's accuracy.
    """
    result = load("plot_parameter_sweep").run(solver="SCS", n_samples=40,
                                              relative_weights=(1.1, 1.5, 3.0))
    obj, slack = result["objective"], result["slack"]
    assert np.all(np.diff(obj) >= -1e-4 * np.max(np.abs(obj)))
    assert np.all(np.diff(slack) <= 1e-2 * max(1.0, slack[0]))
    assert np.allclose(result["weights"] / result["threshold"], (1.1, 1.5, 3.0))


def test_slack_threshold_message_and_values():
    """Below lambda* the solve raises UnboundedError naming lambda*; above it is finite."""
    result = load("plot_slack_threshold").run(solver="SCS", n_samples=40,
                                              relative_weights=(1.1, 2.0))
    assert result["message"] is not None
    match = re.search(r"bounded for slack_weight >= ([0-9.eE+-]+)", result["message"])
    assert match, result["message"]
    assert float(match.group(1)) == pytest.approx(result["threshold"], rel=1e-3)
    assert np.all(np.isfinite(result["objective"]))
    assert result["objective"][1] >= result["objective"][0] - 1e-5


def test_lowrank_certificate_small():
    """LOWRANK on 300 digits reaches its tolerance with a verified certificate."""
    result = load("plot_lowrank_certificate").run(n_samples=300, tol=1e-4)
    report = result["report"]
    assert report.status == "optimal"
    assert report.certified_gap is not None and report.certified_gap <= 1e-4
    assert report.extra["certificate_check"] in ("dense", "sparse")
    history = report.extra["history"]
    assert len(history) == report.extra["outer_iterations"]
    assert all({"outer", "rank", "residual", "cheap_gap"} <= set(h) for h in history)


def test_swiss_roll_mvu_small():
    """Shrink-only MVU of a 200-point Swiss roll (clique-degenerate as an equality problem):
    LOWRANK certifies it within 1e-4."""
    result = load("plot_swiss_roll_mvu").run(n_samples=200)
    report = result["report"]
    assert report.status == "optimal"
    assert report.certified_gap is not None and report.certified_gap <= 1e-4
    assert result["embedding"].shape == (200, 2)


@pytest.mark.slow
def test_swiss_roll_mvu_unrolls():
    """The gallery's settings: certified, and the first coordinate follows the roll
    parameter (|Spearman| >= 0.99, the unrolled rectangle)."""
    result = load("plot_swiss_roll_mvu").run()
    assert result["report"].certified_gap <= 1e-4
    assert result["spearman"] >= 0.99


@pytest.mark.slow
def test_lowrank_certificate_all_digits():
    """The gallery's setting: all 1,797 digits."""
    result = load("plot_lowrank_certificate").run()       # tol=1e-3
    assert result["report"].certified_gap <= 1e-3
    assert result["report"].extra["certificate_check"] in ("dense", "sparse")


def test_eigen_methods_tight():
    """Closed form and SDP agree for every eigen method: value, subspace, rank gap.

    Tolerances 1e-5 (relative value), 1e-3 rad (largest principal angle), 1e-5
    (rank gap) against CLARABEL's default accuracy 1e-8.
    """
    result = load("plot_eigen_methods").run(solver="CLARABEL")
    assert len(result) == 8
    for name, r in result.items():
        assert r["sdp"] == pytest.approx(r["eigen"], rel=1e-5, abs=1e-8), name
        assert r["rank_gap"] <= 1e-5, name
        assert r["angle"] <= 1e-3, name


def test_tangent_usps_without_data(tmp_path, monkeypatch):
    """Without USPS the example says so and returns None (the gallery builds anyway)."""
    monkeypatch.setenv("SDPEMBED_DATA", str(tmp_path))
    assert load("plot_tangent_usps").run(n_samples=100) is None


def test_tangent_usps(usps_path, monkeypatch):
    """With the data: leave-one-out accuracies and DVU accuracies are well formed.

    ``usps_path`` skips when the USPS archive is absent; the example reads
    ``SDPEMBED_DATA``, so it is pointed at the folder the archive was found in.
    """
    monkeypatch.setenv("SDPEMBED_DATA", str(usps_path.parent))
    # 100 images: each DVU fit is 6 LOWRANK solves (the held-out check's 5 and the fit);
    # leave-one-out 1-NN 0.95 (tangent) against 0.86 (Euclidean) here
    result = load("plot_tangent_usps").run(n_samples=100)
    assert result is not None
    for table in (result["loo_1nn"], result["dvu_3nn"]):
        assert set(table) == {"euclidean", "tangent"}
        assert all(0.0 <= v <= 1.0 for v in table.values())
    # tangent distance is invariant to small shifts and rotations: on USPS its
    # nearest neighbours are at least as often of the right class (0.96 vs 0.91 at n=400)
    assert result["loo_1nn"]["tangent"] >= result["loo_1nn"]["euclidean"] - 0.02


def test_tca_two_moons():
    """TCA, OTCA and the baselines on the 3-D two moons, one draw of the labels."""
    result = load("plot_tca_two_moons").run(n_samples=200, seeds=(0,))
    assert set(result["accuracy"]) == {"1-NN (raw)", "LPP", "LDA", "SDA", "TCA", "OTCA"}
    assert all(a.shape == (1,) and 0.0 <= a[0] <= 1.0 for a in result["accuracy"].values())
    assert result["embeddings"]["TCA"].shape == (200, 2)
    assert np.sum(result["y_partial"] >= 0) == 4


def test_dne_dimension():
    """The energy rule keeps at most as many directions as there are negative eigenvalues."""
    result = load("plot_dne_dimension").run(n_splits=2)
    ev = result["eigenvalues"]
    assert np.all(np.diff(ev) >= 0)
    assert result["n_negative"] == int(np.sum(ev < 0))
    assert 1 <= result["n_chosen"] <= result["n_negative"]
    assert result["accuracy"].shape == (len(ev), 2)

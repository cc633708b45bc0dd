import cvxpy as cp
import numpy as np
import pytest

from sdpembed import _csdp
from sdpembed.exceptions import (
    InfeasibleError,
    InputError,
    SolverFailedError,
    SolverMissingError,
    UnboundedError,
)
from sdpembed.formulations import Formulation
from sdpembed.solvers import SolveReport, available_solvers, register_backend, solve

SOLVERS = available_solvers()
CONIC = [s for s in SOLVERS if s in ("CLARABEL", "SCS", "CVXOPT", "SDPA", "CSDP", "MOSEK")]


def eigen_sdp(n=6, seed=0):
    """min <C, X> s.t. tr X = 1, X PSD: optimum lambda_min(C) (Rayleigh quotient)."""
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((n, n))
    C = C + C.T
    X = cp.Variable((n, n), PSD=True, name="X")
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(C, X))), [cp.trace(X) == 1])
    return Formulation(prob, {"X": X}, meta={"method": "test"}), C


@pytest.mark.parametrize("solver", CONIC)
def test_backends_reach_the_eigenvalue_optimum(solver):
    f, C = eigen_sdp()
    report = solve(f, solver=solver)
    lam_min = np.linalg.eigvalsh(C)[0]
    # interior-point backends converge to ~1e-8; SCS (first order) to its eps of 1e-6
    assert report.objective == pytest.approx(lam_min, rel=1e-5, abs=1e-5)
    X = f.variables["X"].value
    v = np.linalg.eigh(C)[1][:, 0]
    np.testing.assert_allclose(X, np.outer(v, v), atol=1e-3)
    assert isinstance(report, SolveReport)
    assert report.status == "optimal" and report.solver == solver
    assert report.solve_seconds >= 0 and report.compile_seconds >= 0
    assert report.solver_version


def test_clarabel_fills_gap_and_residuals_of_the_report():
    """Clarabel's own gap and residuals reach the report, and they are the numbers its
    stopping test used: below its tolerances (1e-8 by default, 1e-3 when loosened), and
    larger, with a larger objective error, when it stops earlier."""
    f, C = eigen_sdp()
    lam_min = np.linalg.eigvalsh(C)[0]
    tight = solve(f, solver="CLARABEL")
    loose = solve(f, solver="CLARABEL", tol_gap_rel=1e-3, tol_gap_abs=1e-3, tol_feas=1e-3)
    for report, tol in ((tight, 1e-8), (loose, 1e-3)):
        assert report.gap is not None and 0 <= report.gap <= tol
        assert report.primal_residual is not None and 0 <= report.primal_residual <= tol
        assert report.dual_residual is not None and 0 <= report.dual_residual <= tol
        assert report.iterations >= 1 and report.extra["message"] == "Solved"
    assert loose.iterations < tight.iterations
    assert loose.gap > tight.gap and loose.primal_residual > tight.primal_residual
    assert abs(loose.objective - lam_min) > abs(tight.objective - lam_min)


@pytest.mark.skipif("CSDP" not in SOLVERS, reason="csdp executable not installed")
def test_csdp_primal_and_dual_values_match_clarabel():
    rng = np.random.default_rng(0)
    n = 5
    C = rng.standard_normal((n, n))
    C = C + C.T
    X = cp.Variable((n, n), PSD=True, name="X")
    x = cp.Variable(2, name="x")
    e = cp.Variable(3, nonneg=True, name="e")
    M = cp.Variable((2, 2), symmetric=True, name="M")
    cons = [cp.trace(X) == 1, x >= -1, X[0, 1] >= 0.1, x[0] == -0.5, cp.sum(e) >= 0.3,
            M >> 0.1 * np.eye(2), cp.trace(M) <= 1]
    obj = (cp.sum(cp.multiply(C, X)) + cp.sum(x) + cp.sum(e) + M[0, 1]
           - cp.geo_mean(cp.hstack([X[0, 0] + 1, X[1, 1] + 2])))  # an SOC cone too
    f = Formulation(cp.Problem(cp.Minimize(obj), cons), {"X": X, "x": x, "e": e, "M": M})
    ref = solve(f, solver="CLARABEL")
    ref_vals = {k: v.value.copy() for k, v in f.variables.items()}
    ref_duals = [np.copy(c.dual_value) for c in cons]
    got = solve(f, solver="CSDP")
    assert got.objective == pytest.approx(ref.objective, rel=1e-6)
    for k, v in f.variables.items():
        np.testing.assert_allclose(v.value, ref_vals[k], atol=1e-5)
    for c, d in zip(cons, ref_duals):
        # duals are less accurate than primals at default tolerances: 1e-4 relative
        np.testing.assert_allclose(c.dual_value, d, rtol=1e-4, atol=1e-4)


def test_infeasible_and_unbounded_raise_typed_errors():
    x = cp.Variable(2, name="x")
    bad = Formulation(cp.Problem(cp.Minimize(cp.sum(x)), [x >= 1, x <= 0]), {"x": x},
                      meta={"method": "toy", "infeasible_hint": "drop a bound"})
    for s in ("CLARABEL", "SCS"):
        with pytest.raises(InfeasibleError, match="drop a bound"):
            solve(bad, solver=s)
    y = cp.Variable(2, name="y")
    unb = Formulation(cp.Problem(cp.Minimize(cp.sum(y)), [y <= 1]), {"y": y},
                      meta={"method": "toy", "unbounded_hint": lambda: "add a lower bound"})
    with pytest.raises(UnboundedError, match="add a lower bound"):
        solve(unb, solver="CLARABEL")


@pytest.mark.skipif("CSDP" not in SOLVERS, reason="csdp executable not installed")
def test_csdp_reports_infeasibility():
    X = cp.Variable((2, 2), PSD=True, name="X")
    f = Formulation(cp.Problem(cp.Minimize(cp.trace(X)), [X[0, 0] == -1]), {"X": X})
    with pytest.raises(InfeasibleError):
        solve(f, solver="CSDP")


def test_missing_and_unknown_solvers(monkeypatch):
    f, _ = eigen_sdp()
    with pytest.raises(InputError, match="unknown solver"):
        solve(f, solver="NOPE")
    monkeypatch.setattr(_csdp, "csdp_executable", lambda: None)
    with pytest.raises(SolverMissingError, match="apt-get install coinor-csdp"):
        solve(f, solver="CSDP")
    with pytest.raises(InputError, match="Formulation"):
        solve(object())


@pytest.fixture
def registered():
    """Backends a test registers, unregistered after it (the table outlives the test)."""
    from sdpembed.solvers import TOOLKIT_BACKENDS

    before = dict(TOOLKIT_BACKENDS)
    yield
    TOOLKIT_BACKENDS.clear()
    TOOLKIT_BACKENDS.update(before)


def test_fallback_only_when_asked_and_recorded(registered):
    f, C = eigen_sdp()

    def broken(formulation, verbose=False, **options):
        raise SolverFailedError("numerical trouble")

    register_backend("broken_test", broken)
    # one table: the registered backend is listed, versioned and dispatched to by name
    from sdpembed.solvers import TOOLKIT_BACKENDS, solver_version

    assert TOOLKIT_BACKENDS["BROKEN_TEST"].solve is broken
    assert "BROKEN_TEST" in available_solvers() and solver_version("broken_test") == "sdpembed"
    with pytest.raises(SolverFailedError):
        solve(f, solver="BROKEN_TEST")
    report = solve(f, solver="BROKEN_TEST", fallback=["CLARABEL"])
    assert report.solver == "CLARABEL"
    first = report.attempts[0]
    assert first["solver"] == "BROKEN_TEST" and "numerical" in first["error"]
    assert report.objective == pytest.approx(np.linalg.eigvalsh(C)[0], rel=1e-6)


def test_options_are_recorded_and_passed():
    f, _ = eigen_sdp()
    report = solve(f, solver="SCS", eps_abs=1e-7, max_iters=12345)
    assert report.options["eps_abs"] == 1e-7 and report.options["max_iters"] == 12345
    assert report.options["eps_rel"] == 1e-6  # toolkit default, recorded
    assert report.iterations is not None and report.iterations <= 12345


def test_solve_report_repr_is_one_short_line_and_summary_has_every_field():
    import numpy as np

    from sdpembed.report import SolveReport

    options = {f"option_{i}": i for i in range(20)}
    rep = SolveReport("optimal", -1.25, "LOWRANK", "sdpembed 0.1", options, 0.5, 2.0,
                      iterations=12, gap=1e-5, certified_gap=2e-5, primal_infeasibility=0.0,
                      attempts=[{"solver": "LOWRANK", "status": "optimal"}],
                      extra={"rank": 3, "history": np.zeros(4)}, selection="a Gram SDP")
    short = repr(rep)
    assert "\n" not in short and len(short) < 200 and "option_" not in short
    assert short == str(rep) and short.startswith("SolveReport(LOWRANK sdpembed 0.1: optimal")
    assert "objective=-1.25" in short and "certified_gap=2e-05" in short
    text = rep.summary()
    assert text.splitlines()[0] == short
    for i in range(20):
        assert f"option_{i} = {i}" in text
    for needle in ("selection", "a Gram SDP", "primal_infeasibility", "rank = 3",
                   "not shown: history", "'solver': 'LOWRANK'", "wall 2.500"):
        assert needle in text, needle
    bare = SolveReport("optimal", None, "SCS", "3", {}, 0.0, 0.0)
    assert "objective=-" in repr(bare) and "certified_gap" not in repr(bare)
    assert "(named by the caller)" in bare.summary()

"""A conic point whose violations buy its objective is no result (issue 40, rule 5).

Every point :math:`x` of the cone has :math:`f(x) \\ge p^\\star - \\sum_i |y^\\star_i| r_i(x)`,
so a point's row violations priced at the backend's own multipliers say how much of its
objective it may owe to them (:mod:`sdpembed.violation_worth`). The differential judge
convicted CLARABEL's ``AlmostSolved`` points (seeds 100165, 101286, 101352) and CSDP's
(101161) on that measure at the references' multipliers while ``solve`` returned them;
:func:`sdpembed.solve_status.check_result` now refuses an ``optimal_inaccurate`` point
priced above :data:`~sdpembed.solve_status.VIOLATION_WORTH` at its own. Each regression
compares with a tight solve or the recorded optimum.
"""

from __future__ import annotations

import dataclasses
import warnings

import cvxpy as cp
import numpy as np
import pytest

from sdpembed import solve
from sdpembed.exceptions import SolverFailedError
from sdpembed.formulation import Formulation
from sdpembed.report import SolveReport
from sdpembed.solve_status import VIOLATION_WORTH, check_result
from sdpembed.solvers import available_solvers
from sdpembed.violation_worth import priced_violation, repaired_objective, repaired_worth

CONIC = [b for b in ("CLARABEL", "SCS", "CSDP", "SDPA", "CVXOPT") if b in available_solvers()]


def _tiny() -> Formulation:
    """A 3x3 SDP with a distance row of target 1e-3 and weight 1e3 in the objective: its
    optimum lies on that row, whose multiplier is about 1e3."""
    X = cp.Variable((3, 3), PSD=True, name="X")
    d = X[0, 0] + X[1, 1] - 2 * X[0, 1]
    cons = [d <= 1e-3, cp.trace(X) <= 3, X[0, 0] >= 0.5]
    objective = cp.Minimize(-1e3 * d + X[2, 2] - X[0, 1])
    return Formulation(cp.Problem(objective, cons), {"X": X}, meta={"method": "tiny"})


def _quiet(f, solver, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return solve(f, solver, **options)


def _optimum() -> float:
    rep = solve(_tiny(), "CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert rep.status == "optimal"
    return rep.objective


def test_an_optimal_point_states_its_price_without_being_judged_by_it():
    # CLARABEL at tolerances 1e-2 says "optimal" at -2.5066, 0.28 % below the optimum
    # -2.4995: the distance row is off by about 7e-6 and its multiplier is 1e3. An
    # `optimal` point is not refused for its price (seed 383's healthy CLARABEL point is
    # priced at 0.95: multipliers without a strictly feasible point), but states it
    optimum = _optimum()
    f = _tiny()
    rep = _quiet(f, "CLARABEL", tol_feas=1e-2, tol_gap_rel=1e-2, tol_gap_abs=1e-2)
    assert rep.status == "optimal" and rep.objective < optimum - 1e-3 * abs(optimum)
    # what its violations can buy covers how far below the optimum it lies
    assert rep.extra["violation_worth"] * abs(rep.objective) >= optimum - rep.objective
    assert rep.extra["violation_worth"] == pytest.approx(3.4e-3, rel=0.1)


@pytest.mark.parametrize("solver", CONIC)
def test_healthy_points_of_every_conic_backend_pass(solver):
    optimum = _optimum()
    rep = _quiet(_tiny(), solver)
    assert rep.status in ("optimal", "optimal_inaccurate")
    assert abs(rep.objective - optimum) <= 1e-3 * abs(optimum)
    worth = rep.extra["violation_worth"]
    assert 0.0 <= worth <= VIOLATION_WORTH


def test_priced_violation_prices_each_row_at_its_multiplier():
    x = cp.Variable(2, name="x")
    prob = cp.Problem(cp.Minimize(3 * x[0] + x[1]), [x[0] >= 1, x[1] == 2, x <= 5])
    prob.solve(solver="CLARABEL")
    assert priced_violation(prob) == pytest.approx(0.0, abs=1e-7)
    x.value = np.array([1 - 1e-3, 2 + 2e-3])    # multipliers 3 and 1: 3e-3 + 2e-3
    assert priced_violation(prob) == pytest.approx(5e-3, rel=1e-5)
    x.value = np.array([5 + 1.0, 2.0])          # x <= 5 is inactive: its multiplier is 0
    assert priced_violation(prob) == pytest.approx(0.0, abs=1e-6)


def test_a_problem_without_multipliers_is_not_priced():
    x = cp.Variable(2, name="x")
    prob = cp.Problem(cp.Minimize(cp.sum(x)), [x >= 1])
    x.value = np.zeros(2)                      # never solved: no dual value
    assert priced_violation(prob) is None
    assert priced_violation(cp.Problem(cp.Minimize(cp.sum(x)))) == 0.0   # no row at all


def test_the_rule_reads_violation_worth_from_stats_and_reports():
    check_result("CLARABEL", "optimal_inaccurate", -1.0,
                 {"violation_worth": VIOLATION_WORTH / 2, "gap": 1e-6})
    with pytest.raises(SolverFailedError, match="can buy 2e-05 of its objective"):
        check_result("CLARABEL", "optimal_inaccurate", -1.0,
                     {"violation_worth": 2 * VIOLATION_WORTH, "gap": 1e-6})
    # an optimal point states its price and is not judged by it
    check_result("CLARABEL", "optimal", -1.0, {"violation_worth": 0.95})
    report = SolveReport(status="optimal_inaccurate", objective=-1.0, solver="CSDP",
                         solver_version="", options={}, compile_seconds=0.0,
                         solve_seconds=0.0, extra={"violation_worth": 2.8e-3})
    with pytest.raises(SolverFailedError, match="can buy 0.0028"):   # the runner's path
        check_result(report.solver, report.status, report.objective, report)
    check_result(report.solver, report.status, report.objective,
                 dataclasses.replace(report, extra={"violation_worth": 3.7e-6}))


def _seed(seed: int):
    from problems.differential import make_instance

    f, _ = make_instance(seed).build()
    return f


#: differential seeds whose conic points the judge convicted at the references' multipliers
#: (docs/tuning.md, "The judge per row; a fresh slice"), each with the point's own price
#: (this round's probe) and the optimum it is compared with
CONVICTED = [
    # seed, backend, its own price, the optimum (CSDP `optimal`, or the optimum's interval
    # top; 101161 has no settled optimum, no strictly feasible point: CLARABEL's objective)
    pytest.param(101352, "CLARABEL", 6.1e-4, -0.2869236, id="101352-CLARABEL"),
    pytest.param(101161, "CLARABEL", 1.2e-4, -0.9008780, id="101161-CLARABEL"),
    pytest.param(101161, "CSDP", 1.3e-4, -0.9008780, id="101161-CSDP"),
    pytest.param(101286, "CLARABEL", 4.4e-5, -0.6397369, id="101286-CLARABEL",
                 marks=pytest.mark.slow),
    pytest.param(100165, "CLARABEL", 1.0e-3, -0.558977, id="100165-CLARABEL",
                 marks=pytest.mark.slow),
]


@pytest.mark.parametrize("seed, solver, price, optimum", CONVICTED)
def test_convicted_reference_points_are_refused(seed, solver, price, optimum):
    if solver not in available_solvers():
        pytest.skip(f"{solver} is not installed")
    with pytest.raises(SolverFailedError, match="priced at its own multipliers") as err:
        _quiet(_seed(seed), solver)
    exc = err.value
    said = float(str(exc).split("can buy ")[1].split(" ")[0])
    # refused for its price (above the rule's line); the price itself is that of the
    # iterate the conic solver stops at, which the BLAS kernels' rounding moves: within a
    # factor 4 of the recorded one (measured on an AVX2 AMD Zen 3: 6.77e-4, 1.08e-4, 4.58e-4)
    assert said > VIOLATION_WORTH and price / 4 <= said <= 4 * price
    assert exc.point is not None
    # each lies below the optimum or within what its violations can buy of it
    assert exc.objective - optimum <= 0.01 * abs(optimum)


@pytest.mark.parametrize("seed", [101352, 101286])
def test_csdp_optimal_points_of_the_same_seeds_pass(seed):
    if "CSDP" not in available_solvers():
        pytest.skip("CSDP is not installed")
    rep = _quiet(_seed(seed), "CSDP")
    assert rep.status == "optimal" and rep.extra["violation_worth"] <= VIOLATION_WORTH


def test_a_refused_point_falls_back_as_asked():
    if "CSDP" not in available_solvers():
        pytest.skip("CSDP is not installed")
    rep = _quiet(_seed(101352), "CLARABEL", fallback=["CSDP"])
    assert rep.solver == "CSDP" and rep.status == "optimal"
    assert rep.objective == pytest.approx(-0.2869236, rel=1e-6)
    assert "priced at its own multipliers" in rep.attempts[0]["error"]


def test_the_estimator_gives_no_embedding_from_a_refused_point():
    from problems.differential import make_instance

    est, X, y = make_instance(101352).estimator(None)
    est.set_params(solver="CLARABEL", solver_options=None)
    with pytest.raises(SolverFailedError, match="priced at its own multipliers"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
    assert not hasattr(est, "embedding_")


def test_moons40_clarabel_refused_as_no_repair_proves_it_near_and_csdp_is_kept(moons_dvu):
    # CLARABEL's AlmostSolved point on moons_dvu(40, 0) reports -0.545966, 7e-6 above the
    # optimum, yet that is not its point's objective: its Gram matrix with the penalty at its
    # exact value costs 1.06e-4 more, moved onto its rows (PSD, centred) 4.6e-4 more, and
    # CSDP's multipliers price its violations at 6.1e-5. Nothing proves it near the optimum,
    # so rule 5 refuses it (its own price 2.81e-5); CSDP's point is kept, its repair proving
    # it within 1e-5 of the optimum (conftest.MOONS40_OPTIMUM)
    from conftest import MOONS40_OPTIMUM

    f = moons_dvu(40, 0)
    if "CLARABEL" in available_solvers():
        with pytest.raises(SolverFailedError, match="moved onto its rows it costs") as err:
            _quiet(f, "CLARABEL")
        said = float(str(err.value).split("it costs ")[1].split(" ")[0])
        # the cost of CLARABEL's last iterate moved onto its rows: 4.6e-4 where written,
        # 2.95e-4 on an AVX2 AMD Zen 3 (the BLAS kernels' rounding moves the iterate);
        # far above what tol could excuse either way
        assert 1e-4 <= said <= 1e-3
        assert 0 <= err.value.objective - MOONS40_OPTIMUM <= 2e-5 * abs(MOONS40_OPTIMUM)
        # the repaired point is feasible: its objective bounds the optimum from above
        assert repaired_objective(f) >= MOONS40_OPTIMUM
    if "CSDP" not in available_solvers():
        pytest.skip("CSDP is not installed")
    rep = _quiet(f, "CSDP")
    assert rep.extra["violation_worth"] <= VIOLATION_WORTH
    assert rep.objective == pytest.approx(MOONS40_OPTIMUM, rel=1e-9)
    proven = repaired_worth(f, rep.objective)
    assert (MOONS40_OPTIMUM - rep.objective) / abs(rep.objective) <= proven <= VIOLATION_WORTH

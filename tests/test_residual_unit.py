"""The residuals' unit, and what a conic solve cut by its limit states (issue 40).

A residual is a violation of the constraints, measured against the size of the
constraints' own terms at the point (SCS's ``eps_rel`` unit), not against the objective:
SCS's absolute residuals divided by max(1, |p|) let a cut point of differential seed
96078 (objective 132) pass. A conic iterate stopped by its limit is no result: its
solver's gap bounds nothing (CLARABEL's ``AlmostSolved`` points of seeds 96000, 96008 and
98016), so it is refused with :class:`~sdpembed.exceptions.SolverLimitError`, its report
on the error; the units are checked on that report as the rule judges a solve that
stopped at reduced accuracy on its own. Each regression compares with CLARABEL solved
to 1e-10 or a recorded optimum.
"""

from __future__ import annotations

import dataclasses
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from problems.differential import _check_point, draw_cuts, make_instance
from sdpembed import solve
from sdpembed.backends.interfaces import scs_stats, scs_term_sizes
from sdpembed.exceptions import SolverFailedError, SolverLimitError
from sdpembed.report import SolveReport
from sdpembed.solve_status import (
    FAR_FROM_OPTIMAL,
    NEAR_OPTIMAL,
    check_result,
    distance_from_optimal,
    gap_in_objective_unit,
)


def _optimum(seed: int) -> float:
    """CLARABEL's objective on differential seed ``seed`` at tolerances 1e-10."""
    f, _ = make_instance(seed).build()
    rep = solve(f, "CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert rep.status == "optimal"
    return rep.objective


def _uncut(report: SolveReport) -> SolveReport:
    """``report`` as if its solve had stopped at reduced accuracy on its own (not cut): what
    rule 4 of :mod:`sdpembed.solve_status` judges."""
    extra = {k: v for k, v in report.extra.items() if k != "stopped_by_limit"}
    return dataclasses.replace(report, extra=extra)


def _cut(f, solver: str, **options) -> SolverLimitError:
    """The :class:`SolverLimitError` of ``solve(f, solver, **options)``, checked to carry
    its last iterate's report and point."""
    with pytest.raises(SolverLimitError, match="stopped at its iteration or time limit "
                       "before converging") as err:
        solve(f, solver, **options)
    exc = err.value
    assert exc.report is not None and exc.report.extra["stopped_by_limit"]
    assert exc.report.gap is None and exc.point is not None
    assert exc.objective == exc.report.objective
    return exc


def test_scs_term_sizes_and_relative_stats_closed_form():
    A = sp.csc_matrix(np.array([[1.0, -2.0], [0.0, 3.0]]))
    b, c = np.array([1.0, -4.0]), np.array([0.5, -1.0])
    x, y, s = np.array([2.0, 1.0]), np.array([-1.0, 0.25]), np.array([0.5, -8.0])
    # Ax = (0, 3), A'y = (-1, 2.75), c'x = 0, b'y = -2; r = A'y + c = (-0.5, 1.75)
    assert scs_term_sizes(A, b, c, None, x, y, s) == {"primal": 8.0, "dual": 2.75, "gap": 2.0,
                                                      "dual_effect": 0.75}
    P = sp.csc_matrix(np.diag([2.0, 0.0]))    # Px = (4, 0), x'Px = 8, r = (3.5, 1.75)
    sizes = scs_term_sizes(A, b, c, P, x, y, s)
    assert sizes == {"primal": 8.0, "dual": 4.0, "gap": 8.0, "dual_effect": 8.75}
    info = {"res_pri": 0.08, "res_dual": 0.02, "gap": 0.04, "status": "solved (inaccurate)"}
    out = scs_stats({"info": info, "sdpembed_scale": sizes})
    assert out["primal_residual"] == pytest.approx(0.01)
    assert out["dual_residual"] == pytest.approx(0.005)
    # the gap is the objective's: solve() divides it by |p| (floor: 1e-3 times its terms)
    assert out.get("gap") is None and out["absolute_gap"] == 0.04 and out["gap_terms"] == 8.0
    assert out["dual_effect"] == 8.75
    assert out["absolute_primal_residual"] == 0.08 and out["message"] == info["status"]
    # without the sizes (no point returned) no relative number is claimed
    bare = scs_stats({"info": info})
    assert bare.get("primal_residual") is None and bare.get("gap") is None
    assert bare["absolute_gap"] == 0.04 and bare.get("gap_terms") is None


def test_scs_cut_point_of_96078_is_refused_in_its_terms_unit():
    """Seed 96078 (interval DVU, explicit centroids, SNR, 12 points, three added rows), SCS
    cut at ``max_iters`` 937: a point 0.14 % below the optimum violating its constraints,
    residual 5.6e-4 of its terms' size; divided by the objective 132 it read 4.3e-5, below
    NEAR_OPTIMAL["SCS"], and was returned."""
    optimum = _optimum(96078)
    assert optimum == pytest.approx(132.16696, rel=1e-6)
    f, _ = make_instance(96078).build()
    rep = _cut(f, "SCS", max_iters=937).report
    # in its terms' unit, were it not cut: refused for its primal residual, above
    # NEAR_OPTIMAL["SCS"] (1e-4), which the old unit, divided by |p| = 132, put below it.
    # The digits are those of a first-order iterate cut after 937 iterations, so they are
    # the platform's: 5.64e-4 where this was written, 6.09e-4 (absolute 6.09e-3 over
    # |p| = 131.9: 4.6e-5) on an AMD EPYC, AVX-512 OpenBLAS; the message is read for its
    # number, which must be the report's (3 significant digits: rel 1e-2)
    with pytest.raises(SolverFailedError, match=r"relative primal residual \d") as err:
        check_result("SCS", rep.status, rep.objective, _uncut(rep))
    stated = float(re.search(r"relative primal residual (\d[\d.]*(?:e[-+]\d+)?)",
                             str(err.value)).group(1))
    assert stated == pytest.approx(rep.primal_residual, rel=1e-2)
    assert stated > NEAR_OPTIMAL["SCS"]
    assert rep.extra["absolute_primal_residual"] / abs(rep.objective) < NEAR_OPTIMAL["SCS"]
    # the same iterate by cvxpy directly: truly off the constraints and the optimum
    g, _ = make_instance(96078).build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g.problem.solve(solver="SCS", max_iters=937, eps_abs=1e-6, eps_rel=1e-6)
    assert abs(g.problem.value - optimum) > 1e-3 * abs(optimum)
    assert _check_point(g, g.problem.value)["violation"] > 1e-3
    # converged SCS is kept, with residuals in the same unit, and agrees with CLARABEL
    h, _ = make_instance(96078).build()
    rep = solve(h, "SCS")
    assert rep.status == "optimal"
    assert abs(rep.objective - optimum) <= 1e-4 * abs(optimum)
    assert 0 <= rep.primal_residual <= 1e-5 and 0 <= rep.gap <= 1e-5
    assert rep.primal_residual <= rep.extra["absolute_primal_residual"]


@pytest.mark.parametrize("seed, max_iter", [(96000, 6), (96008, 10)])
def test_a_cut_conic_solve_is_refused_with_its_report(seed, max_iter):
    """CLARABEL stopped by ``max_iter`` (``AlmostSolved``): its gap (1e-5 to 2e-5) did not
    bound the point's error (0.38 %, 0.51 %); the point was returned, stating no gap. A cut
    iterate is refused now, its report (the solver's gap in ``solver_gap``) on the error."""
    optimum = _optimum(seed)
    f, _ = make_instance(seed).build()
    rep = _cut(f, "CLARABEL", max_iter=max_iter).report
    assert rep.status == "optimal_inaccurate" and rep.extra["message"] == "AlmostSolved"
    assert rep.iterations == max_iter
    solver_gap = rep.extra["solver_gap"]
    error = abs(rep.objective - optimum) / abs(optimum)
    assert 0 < solver_gap < 1e-4 and error > 3e-3 > 10 * solver_gap   # it bounds nothing
    assert distance_from_optimal("CLARABEL", rep.objective, rep) <= FAR_FROM_OPTIMAL


#: seed 98016's optimum (quadratic DVU, 27 points): CLARABEL ``optimal`` -1.0600650, CSDP
#: -1.0600653, LOWRANK ``optimal`` -1.0600654 with a certified gap of 1.5e-6
OPTIMUM_98016 = -1.0600650


def test_a_cut_clarabel_point_far_from_the_optimum_is_refused_98016():
    """Seed 98016 of the fourteenth round's truncation slice: CLARABEL cut at ``max_iter``
    10 returned a feasible point 1.19 % above the optimum (outside FAR_FROM_OPTIMAL) whose
    solver gap (3.6e-5) and residuals were small, as ``optimal_inaccurate`` with a warning.
    Refused now, the point and its numbers on the error; the same solve uncut agrees."""
    f, _ = make_instance(98016).build()
    exc = _cut(f, "CLARABEL", max_iter=10)
    rep = exc.report
    assert "solver's relative gap 3.6" in str(exc) and "max_iter" in str(exc)
    assert (rep.objective - OPTIMUM_98016) / abs(OPTIMUM_98016) > FAR_FROM_OPTIMAL
    assert 0 < rep.extra["solver_gap"] < 1e-4            # nothing it reports says so
    assert _check_point(f, rep.objective)["violation"] <= 1e-6       # a feasible point
    g, _ = make_instance(98016).build()
    full = solve(g, "CLARABEL")
    assert full.status == "optimal"
    assert abs(full.objective - OPTIMUM_98016) <= 1e-6 * abs(OPTIMUM_98016)


def test_the_solvers_gap_of_a_cut_solve_is_still_judged():
    """Moved to ``extra["solver_gap"]``, a large gap still refuses the solve, from a report
    (the runner's re-check) as from the statistics ``solve()`` judges."""
    report = SolveReport("optimal_inaccurate", -1.0, "CLARABEL", "x", {}, 0.0, 0.0,
                         primal_residual=1e-6, dual_residual=1e-6, extra={"solver_gap": 0.3})
    with pytest.raises(SolverFailedError, match="relative duality gap 0.3") as err:
        check_result("CLARABEL", "optimal_inaccurate", -1.0, report)
    assert err.value.gap == 0.3
    with pytest.raises(SolverFailedError, match="above 0.0001"):
        check_result("SCS", "optimal_inaccurate", -1.0,
                     {"solver_gap": 2 * NEAR_OPTIMAL["SCS"], "primal_residual": 0.0})
    check_result("CLARABEL", "optimal_inaccurate", -1.0, {"solver_gap": 1e-3})
    # cut by its limit: refused however small its numbers, the report on the error
    cut = dataclasses.replace(report, extra={"solver_gap": 1e-9, "stopped_by_limit": True})
    with pytest.raises(SolverLimitError, match=r"Raise the limit \(max_iter, time_limit\)") \
            as err:
        check_result("CLARABEL", "optimal_inaccurate", -1.0, cut)
    assert err.value.report is cut and err.value.gap == 1e-9
    with pytest.raises(SolverLimitError):
        check_result("SCS", "optimal_inaccurate", -1.0, {"stopped_by_limit": True})
    with pytest.raises(SolverLimitError, match=r"\(user_limit"):
        check_result("CVXOPT", "user_limit", 0.5, {"gap": 0.02})


def test_the_gap_is_the_objectives_not_its_terms():
    """Relative to its terms' size (SCS's max(|x'Px|, |c'x|, |b'y|)), a gap is hidden where
    the terms cancel: SCS cut at ``max_iters`` 301 on seed 97031 (DVU, 3 % from the
    optimum -0.8468999 recorded by CLARABEL and CSDP) read below NEAR_OPTIMAL. The gap is
    the objective's: relative to |p|, its terms' size only the floor."""
    assert gap_in_objective_unit(0.01, -0.5, 100.0) == pytest.approx(0.02)
    assert gap_in_objective_unit(1e-6, 1e-9, 10.0) == pytest.approx(1e-4)  # the floor
    assert gap_in_objective_unit(0.01, None, 1.0) is None
    f, _ = make_instance(97031).build()
    rep = _cut(f, "SCS", max_iters=301).report
    with pytest.raises(SolverFailedError, match=r"relative duality gap 0\.01\d"):
        check_result("SCS", rep.status, rep.objective, _uncut(rep))
    g, _ = make_instance(97031).build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g.problem.solve(solver="SCS", max_iters=301, eps_abs=1e-6, eps_rel=1e-6)
    assert abs(g.problem.value - OPTIMUM_97031) > 2e-2 * abs(OPTIMUM_97031)


#: seed 97031's optimum: CLARABEL ``optimal`` -0.8468998732, CSDP -0.8468998504
OPTIMUM_97031 = -0.84689987


def test_the_dual_residual_is_judged_by_its_effect_on_the_objective():
    """SCS cut at ``max_iters`` 1212 (seed 97039, interval DVU): its dual residual is 4.4e-5 of
    max(|A'y|, |c|) = 12.6, but moves the dual bound by |r'x| = 2.9e-3 of |p| = 0.85; the
    point lies 0.66 % below both interior-point references (CLARABEL -0.8477668, CSDP
    -0.8477923). Refused by that effect, in the objective's unit."""
    cut = draw_cuts(97039)["SCS"]
    f, _ = make_instance(97039).build()
    exc = _cut(f, "SCS", **cut)
    rep = exc.report
    with pytest.raises(SolverFailedError,
                       match=r"dual residual's effect on the objective 0\.00\d+"):
        check_result("SCS", rep.status, rep.objective, _uncut(rep))
    assert exc.objective < -0.8477923 * (1 + 5e-3)


@pytest.mark.parametrize("solver, options", [
    ("CLARABEL", {"max_iter": 10}), ("SCS", {"max_iters": 300}), ("SDPA", {"maxIteration": 12}),
    ("CVXOPT", {"maxiters": 5}), ("CSDP", {"maxiter": 12})])
def test_every_conic_backend_tells_a_cut_98016(solver, options):
    """Each conic backend stopped by its iteration limit on 98016 is refused with its
    iterate's report (CVXOPT's "unknown" at ``maxiters`` kept as ``user_limit`` with its
    statistics); the message names the option to raise. Uncut, CVXOPT's report now states
    its gap and agrees with the recorded optimum."""
    from sdpembed.solvers import available_solvers

    if solver not in available_solvers():
        pytest.skip(f"{solver} is not usable here")
    f, _ = make_instance(98016).build()
    exc = _cut(f, solver, **options)
    (option, limit), = options.items()
    assert exc.report.iterations == limit and option in str(exc)
    assert exc.report.status in ("optimal_inaccurate", "user_limit")
    if solver == "CVXOPT":
        assert exc.report.status == "user_limit" and exc.report.extra["solver_gap"] > 0
        g, _ = make_instance(98016).build()
        full = solve(g, "CVXOPT")
        assert full.status == "optimal" and 0 <= full.gap <= 1e-6
        assert abs(full.objective - OPTIMUM_98016) <= 1e-4 * abs(OPTIMUM_98016)

"""Backend options checked before solving, and the rule for inaccurate solves.

Every bad option is an ``InputError`` naming the backend and the option,
raised before the backend runs (cvxpy passes options through unchecked: a raw
``TypeError`` or ``OverflowError`` came out of the solver before). The
inaccurate-solve rule is checked against a second solver: a kept
``optimal_inaccurate`` SCS solve is within 1 % of CLARABEL's optimum, a refused
one is not.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from sdpembed.backend_options import BACKEND_SETTINGS, check_backend_options
from sdpembed.backends import ConicBackend, register_conic_backend, unregister_conic_backend
from sdpembed.exceptions import (
    InaccurateSolutionWarning,
    InputError,
    SolverFailedError,
    SolverLimitError,
)
from sdpembed.formulations.dvu import dvu
from sdpembed.graphs import knn_graph
from sdpembed.solve_status import (
    FAR_FROM_OPTIMAL,
    NEAR_OPTIMAL,
    check_inaccurate,
    distance_from_optimal,
    relative_gap,
)
from sdpembed.solvers import SolveReport, solve


def _iris_dvu():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    X, y = X[::5], y[::5].copy()
    y[1::2] = -1
    return dvu(knn_graph(X, n_neighbors=3, n_random=1, random_state=0), y, centroids="explicit",
               slack_weight=1.0)


@pytest.mark.parametrize("solver, options, message", [
    ("SCS", {"eps_abs": "abc"}, r"SCS option 'eps_abs': expected a number >= 0; got 'abc'"),
    ("SCS", {"max_iters": 0}, r"SCS option 'max_iters': expected an integer in \[1, "),
    ("SCS", {"alpha": 2.0}, r"SCS option 'alpha': expected a number in \(0, 2\)"),
    ("CLARABEL", {"foo": 1}, r"unknown CLARABEL option 'foo'; CLARABEL accepts: "),
    ("CLARABEL", {"max_iter": -1}, r"CLARABEL option 'max_iter': expected an integer in \[1, "),
    ("CLARABEL", {"max_iter": 2.0}, r"CLARABEL option 'max_iter'.*got 2.0 \(float\)"),
    ("CLARABEL", {"tol_gap_abs": float("nan")}, r"CLARABEL option 'tol_gap_abs'"),
    ("CLARABEL", {"max_itr": 5}, r"'max_itr' \(did you mean 'max_iter'\?\)"),
    ("CVXOPT", {"abstol": -1.0}, r"CVXOPT option 'abstol': expected a number > 0"),
    ("SDPA", {"maxIteration": 2.5}, r"SDPA option 'maxIteration': expected an integer >= 1"),
    ("LOWRANK", {"time_limit": "1h"}, r"LOWRANK option 'time_limit': expected a number"),
    ("LOWRANK", {"tol": 2.0}, r"LOWRANK option 'tol': .*\(0, 1\)"),
    ("LOWRANK", {"time_limt": 60}, r"unknown LOWRANK option 'time_limt' \(did you mean"),
    ("SCS", {"linear_solver": "qdldll"},
     r"SCS option 'linear_solver': .*got 'qdldll' \(string\) \(did you mean 'qdldl'\?\)"),
])
def test_bad_options_name_backend_and_option_before_solving(solver, options, message):
    f = _iris_dvu()
    with pytest.raises(InputError, match=message):
        solve(f, solver=solver, **options)
    assert f.problem.status is None  # nothing was solved


def test_good_options_reach_the_backend():
    rep = solve(_iris_dvu(), solver="CLARABEL", max_iter=100, tol_gap_rel=1e-7)
    assert rep.status == "optimal" and rep.options["max_iter"] == 100
    check_backend_options("SDPA", {"domainMethod": "none", "numThreads": 1})  # a string 'none'
    check_backend_options("LOWRANK", {"interval_envelope": "kink", "warm_start": None})
    check_backend_options("MY_PLUGIN", {"anything": object()})  # plug-ins check their own


def _fresh_and_cut_at_three():
    """A fresh formulation's CLARABEL solve, and another formulation whose solve was cut
    by ``max_iter=3`` (raising :class:`SolverFailedError`)."""
    fresh = solve(_iris_dvu(), solver="CLARABEL")
    f = _iris_dvu()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(SolverFailedError):
            solve(f, solver="CLARABEL", max_iter=3)
    return fresh, f


def test_a_cut_solve_leaves_no_option_to_the_next_one():
    """A limit given to one solve is not the next solve's: cvxpy warm-starts by default,
    and its CLARABEL interface then updates the cached solver with the new options over
    the old settings, so an untruncated solve after ``max_iter=3`` stopped at 3 iterations
    too (differential seeds 94002, 94006, 94007, ...). Both solves of one formulation give
    the fresh formulation's optimum in as many iterations."""
    fresh, f = _fresh_and_cut_at_three()
    again = solve(f, solver="CLARABEL")
    assert again.status == fresh.status == "optimal"
    assert again.iterations == fresh.iterations
    assert again.objective == pytest.approx(fresh.objective, rel=1e-9, abs=1e-12)


def test_a_warm_started_solve_keeps_no_option_of_the_previous_one():
    """With ``warm_start=True`` cvxpy reuses its cached Clarabel solver and used to start
    from that solver's settings: after a solve cut by ``max_iter=3`` a warm-started
    solve stopped at 3 iterations too. It now runs with Clarabel's defaults and the
    options given, reaching the fresh formulation's optimum."""
    fresh, f = _fresh_and_cut_at_three()
    again = solve(f, solver="CLARABEL", warm_start=True)
    assert again.status == fresh.status == "optimal"
    assert again.iterations > 3
    assert again.objective == pytest.approx(fresh.objective, rel=1e-7, abs=1e-10)


def test_file_writing_options_can_be_refused():
    check_backend_options("SCS", {"write_data_filename": "dump"})
    with pytest.raises(InputError, match="'write_data_filename' writes the file 'dump'"):
        check_backend_options("SCS", {"write_data_filename": "dump"}, allow_files=False)
    check_backend_options("SDPA", {"print": "no"}, allow_files=False)
    with pytest.raises(InputError, match="SDPA option 'print' writes"):
        check_backend_options("SDPA", {"print": "/tmp/log"}, allow_files=False)


def test_clarabel_table_is_clarabels_own_settings():
    """The table names exactly the fields of the installed ``clarabel.DefaultSettings``
    (less verbose, which solve() sets, and pardiso_iparm, an array), plus cvxpy's own."""
    clarabel = pytest.importorskip("clarabel")
    fields = {a for a in dir(clarabel.DefaultSettings()) if not a.startswith("_")}
    fields -= {"default", "verbose", "pardiso_iparm"}
    cvxpy_own = {"warm_start", "ignore_dpp", "enforce_dpp", "canon_backend", "accept_unknown"}
    assert set(BACKEND_SETTINGS["CLARABEL"]) - cvxpy_own == fields


def test_sdpa_table_is_sdpas_own_parameters():
    sdpap = pytest.importorskip("sdpap")
    params = set(sdpap.param())
    cvxpy_own = {"warm_start", "ignore_dpp", "enforce_dpp", "canon_backend"}
    assert set(BACKEND_SETTINGS["SDPA"]) - cvxpy_own == params


# --------------------------------------------------------------------------- inaccurate solves


def test_relative_gap_per_backend():
    # a registered backend whose numbers are absolute without their terms' size: / max(1, |p|)
    register_conic_backend(ConicBackend("ABSOLUTE_SCS", "SCS", {}, 1e-4, "pip install scs",
                                        absolute_residuals=True))
    try:
        assert relative_gap("ABSOLUTE_SCS", -4.0, {"gap": 0.1}) == pytest.approx(0.025)
        assert relative_gap("ABSOLUTE_SCS", 0.2, {"gap": 0.1}) == pytest.approx(0.1)
    finally:
        unregister_conic_backend("ABSOLUTE_SCS")
    # SCS's own are made relative to their terms' size by scs_stats: taken as they are
    assert relative_gap("SCS", -4.0, {"gap": 0.1}) == 0.1
    assert relative_gap("CLARABEL", -4.0, {"gap": 0.1}) == 0.1  # already relative
    assert relative_gap("SCS", 1.0, {"gap": None}) is None
    report = SolveReport("optimal_inaccurate", -1.0, "LOWRANK", "x", {}, 0.0, 0.0, gap=0.3,
                         certified_gap=0.3)
    with pytest.raises(SolverFailedError):  # certified or not, a gap of 0.3 is no result
        check_inaccurate("LOWRANK", "optimal_inaccurate", -1.0, report)
    with pytest.raises(SolverFailedError, match="relative duality gap 0.3"):
        check_inaccurate("LOWRANK", "optimal_inaccurate", -1.0, {"gap": 0.3})
    check_inaccurate("SCS", "optimal", 1.0, {"gap": 100.0})  # only inaccurate solves are judged
    # a small gap does not save an iterate that violates the constraints
    stats = {"gap": 1e-4, "primal_residual": 0.05, "dual_residual": 1e-3}
    assert distance_from_optimal("SCS", -2.0, stats) == pytest.approx(0.05)
    with pytest.raises(SolverFailedError, match="relative primal residual 0.05"):
        check_inaccurate("SCS", "optimal_inaccurate", -2.0, stats)


def test_scs_cut_off_is_an_error_far_from_the_optimum_or_near_it():
    optimum = solve(_iris_dvu(), solver="CLARABEL").objective
    with pytest.raises(SolverLimitError, match="SCS on dvu stopped at its iteration or time "
                       r"limit before converging .*Raise the limit \(max_iters, "
                       r"time_limit_secs\)"):
        solve(_iris_dvu(), solver="SCS", max_iters=20)
    far = _iris_dvu()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        far.problem.solve(solver="SCS", max_iters=20)  # the same solve, by cvxpy directly
    assert abs(far.problem.value - optimum) > FAR_FROM_OPTIMAL * abs(optimum)  # truly far
    # 1000 iterations: 0.7 % from the optimum with gap and residuals below 1e-2; an SCS
    # iterate's residuals do not bound its error: were it not cut, NEAR_OPTIMAL["SCS"]
    # would refuse it too
    with pytest.raises(SolverLimitError) as err:
        solve(_iris_dvu(), solver="SCS", max_iters=1000)
    mid = err.value.report
    assert distance_from_optimal("SCS", mid.objective, mid) > NEAR_OPTIMAL["SCS"]
    # 8000 iterations: near the optimum, and still cut, so no result (nothing it reports
    # bounds its error); its report is on the error
    with pytest.raises(SolverLimitError) as err:
        solve(_iris_dvu(), solver="SCS", max_iters=8000)
    near = err.value.report
    assert near.status == "optimal_inaccurate" and near.iterations == 8000
    assert near.extra["message"] == "solved (inaccurate - reached max_iters)"
    assert abs(near.objective - optimum) <= 1e-3 * abs(optimum)
    assert np.isfinite(near.objective)
    # converged SCS is a result
    full = solve(_iris_dvu(), solver="SCS")
    assert full.status == "optimal" and abs(full.objective - optimum) <= 1e-4 * abs(optimum)


def test_an_inaccurate_conic_solve_warns_once_at_the_callers_line():
    """cvxpy's own "Solution may be inaccurate" UserWarning pointed into
    ``sdpembed/solvers.py`` beside the toolkit's warning; only the toolkit's
    InaccurateSolutionWarning is emitted now, at this file's line. The source: CLARABEL
    asked for 1e-15 stops on its own at its reduced accuracy (AlmostSolved, not cut)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        near = solve(_iris_dvu(), solver="CLARABEL", tol_gap_abs=1e-15, tol_gap_rel=1e-15,
                     tol_feas=1e-15)
    assert near.status == "optimal_inaccurate" and not near.extra.get("stopped_by_limit")
    assert near.iterations < 200 and near.extra["message"] == "AlmostSolved"
    assert not [w for w in caught if "Solution may be inaccurate" in str(w.message)]
    ours = [w for w in caught if issubclass(w.category, InaccurateSolutionWarning)]
    assert len(ours) == 1 and ours[0].filename == __file__


def test_sdpa_cut_off_is_an_error_far_from_the_optimum_or_near_it():
    """SDPA stopped by maxIteration is 'optimal_inaccurate' to cvxpy, which drops SDPA's gap:
    at 8 iterations (objective 20 against CLARABEL's -1.07) it passed as a result. Its gap
    and feasibility errors now reach the report; at 16 iterations its point lies within
    FAR_FROM_OPTIMAL of the optimum and was kept with a warning. Both are cut iterates:
    refused, their reports on the error."""
    pytest.importorskip("sdpap")
    optimum = solve(_iris_dvu(), solver="CLARABEL").objective
    with pytest.raises(SolverLimitError,
                       match=r"SDPA on dvu stopped at its iteration or time limit before "
                             r"converging .*the solver's relative gap 2,.*maxIteration") as err:
        solve(_iris_dvu(), solver="SDPA", maxIteration=8)
    assert err.value.report.iterations == 8
    far = _iris_dvu()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        far.problem.solve(solver="SDPA", maxIteration=8)  # the same solve, by cvxpy directly
    assert far.problem.status == "optimal_inaccurate"
    assert abs(far.problem.value - optimum) > FAR_FROM_OPTIMAL * abs(optimum)  # truly far
    with pytest.raises(SolverLimitError) as err:
        solve(_iris_dvu(), solver="SDPA", maxIteration=16)
    near = err.value.report
    assert near.status == "optimal_inaccurate" and near.iterations == 16
    # its gap is the solver's number of an unconverged iterate: kept, never stated
    assert near.gap is None and near.extra["solver_gap"] is not None
    assert near.dual_residual is not None
    assert near.extra["message"].startswith("SDPA phase ")
    assert distance_from_optimal("SDPA", near.objective, near) <= FAR_FROM_OPTIMAL
    assert abs(near.objective - optimum) <= FAR_FROM_OPTIMAL * abs(optimum)


def test_sdpa_failure_message_names_the_backend_not_the_plug_in():
    pytest.importorskip("sdpap")
    with pytest.raises(SolverFailedError, match="SDPA failed on dvu: Solver 'SDPA' failed"):
        solve(_iris_dvu(), solver="SDPA", maxIteration=2)


@pytest.mark.parametrize("verbose", ["yes", 1, None])
def test_verbose_must_be_a_boolean(verbose):
    with pytest.raises(InputError, match="verbose must be True or False; got "):
        solve(_iris_dvu(), solver="SCS", verbose=verbose)

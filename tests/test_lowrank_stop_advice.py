"""A LOWRANK refusal's advice says what to change given why its loop stopped: the limit
that stopped it while it was still progressing, ``rank`` where its last outer iterations
cycled without progress (more time repeats the cycle), ``feas_tol`` where it stopped
certified (docs/tuning.md, "A rank-1 start cycling just above tol", "Noticed, left")."""

from types import SimpleNamespace

import numpy as np
import pytest
from conftest import digits_dvu

from sdpembed.exceptions import SolverFailedError
from sdpembed.lowrank import stall
from sdpembed.lowrank.backend import _PROGRESS_WINDOW, _no_progress, _stop_advice
from sdpembed.lowrank.options import DenseLimits, LowRankOptions
from sdpembed.lowrank.rigid import STOP_REASON
from sdpembed.report import SolveReport
from sdpembed.solve_status import check_result
from sdpembed.solvers import solve

#: a rank-1 factor's cheap gaps cycling just above tol (the instance below, before the
#: stall rule's growth): the last window's best is no better than the best before it
_CYCLE = [8e-2, 4e-2, 2e-3, 1.1e-4] + [1.4e-4, 1.5e-4, 1.9e-4, 2.4e-4] * 3


def _result(stop, gaps, rank=1, **entry):
    return SimpleNamespace(stop_reason=stop, iterations=len(gaps), factor=np.ones((40, rank)),
                           history=[{"cheap_gap": g, **entry} for g in gaps])


def test_no_progress_only_after_a_window_without_any_measure_falling():
    assert len(_CYCLE) > _PROGRESS_WINDOW
    assert _no_progress(_result("max_outer", _CYCLE).history) == (1.4e-4, 2.4e-4)
    # too few iterations to tell
    assert _no_progress(_result("max_outer", _CYCLE[:_PROGRESS_WINDOW]).history) is None
    # a cheap gap still falling: halved within the window
    falling = _CYCLE[:4] + [4e-5] * _PROGRESS_WINDOW
    assert _no_progress(_result("max_outer", falling).history) is None
    # a residual still falling counts too, and so does a rank growth within the window
    hist = _result("max_outer", _CYCLE).history
    for i, e in enumerate(hist):
        e["residual"] = 10.0 ** -i
    assert _no_progress(hist) is None
    hist = _result("max_outer", _CYCLE).history
    hist[-2]["grew_rank"] = 5
    assert _no_progress(hist) is None


def test_each_stop_advises_what_it_calls_for():
    opts = LowRankOptions(max_outer=16, time_limit=30.0)
    progressing = _CYCLE[:4] + [4e-5] * _PROGRESS_WINDOW
    said = _stop_advice(_result("max_outer", progressing), opts)
    assert "raise max_outer" in said and "time_limit" not in said
    said = _stop_advice(_result("time_limit", progressing), opts)
    assert "raise time_limit" in said and "max_outer" not in said
    # a cycle: more of either repeats it; the rank is what to raise
    for stop in ("max_outer", "time_limit"):
        said = _stop_advice(_result(stop, _CYCLE), opts)
        assert "made no progress" in said and "Raise rank" in said
        assert "raise max_outer" not in said and "raise time_limit" not in said
    said = _stop_advice(_result("max_outer", _CYCLE, rank=opts.max_rank), opts)
    assert "Raise max_rank" in said
    # certified: the limits are not what stopped it
    said = _stop_advice(_result("certified", _CYCLE[:3]), opts)
    assert "feas_tol" in said and "raise" not in said
    said = _stop_advice(_result(STOP_REASON, _CYCLE[:3]), opts)
    assert "does not make one" in said
    # a reduced basis's interior-point status: nothing said unless asked for the limits
    assert _stop_advice(_result("max_iter", _CYCLE[:3]), opts) == ""


def test_check_result_says_the_backends_stop_advice_in_place_of_the_limits():
    def report(**kw):
        base = dict(status="optimal_inaccurate", objective=-1.0, solver="LOWRANK",
                    solver_version="x", options={}, compile_seconds=0.0, solve_seconds=0.0,
                    extra={"stop_advice": "Raise rank."})
        return SolveReport(**{**base, **kw})

    for bad in [report(gap=1.3, certified_gap=1.3, bound=-5.0),        # far
                report(),                                               # no certificate
                report(gap=1e-5, certified_gap=1e-5, bound=-1.0,        # off the rows
                       primal_infeasibility=3.8e-4),
                report(gap=1e-5, certified_gap=1e-5, bound=-1.0,        # may be infeasible
                       primal_infeasibility=0.05),
                report(gap=1e-3, certified_gap=1e-3, bound=-0.99)]:     # below its bound
        with pytest.raises(SolverFailedError) as info:
            check_result("LOWRANK", bad.status, bad.objective, bad)
        assert "Raise rank." in str(info.value)
        assert "Raise the time or iteration limit" not in str(info.value)
    # without it: the limits' advice, as before
    plain = report(gap=1.3, certified_gap=1.3, bound=-5.0, extra={})
    with pytest.raises(SolverFailedError, match="Raise the time or iteration limit"):
        check_result("LOWRANK", plain.status, plain.objective, plain)


def test_a_cycling_stop_is_refused_with_the_rank_to_raise(monkeypatch):
    """The rank-1 start of tests/test_lowrank_stuck.py with the stall rule's growth switched
    off (the code before it): the cheap gap cycles from outer 9 on at an objective 51 times
    the optimum's size; the refusal at max_outer says the cycle, not "raise max_outer"."""
    monkeypatch.setattr(stall.StallGrowth, "_stuck", lambda self: False)
    f = digits_dvu(100, 8, slack_weight=0.1)
    with pytest.raises(SolverFailedError) as info:
        solve(f, solver="LOWRANK", tol=1e-4, rank=1, dense_limits=DenseLimits(eig=20),
              max_outer=30)
    said = str(info.value)
    assert "made no progress" in said and "Raise rank" in said
    assert "raise max_outer" not in said and "Raise the time" not in said
    # the refusal is right: its point is far above the optimum (CSDP -0.5599558)
    assert info.value.objective > 1.0 and info.value.bound < -0.5599558


#: scikit-learn's seed-42 MVU instance (docs/tuning.md, "scikit-learn's seed-42 MVU
#: instance: a face far below the cliques'"): its cheap gap creeps below tol (outers 37-200)
#: while the residual creeps just above feas_tol; neither is halved within a window
_BELOW = [3e-2, 4e-3, 6e-4, 1.1e-4] + [9.96e-5 - 1e-7 * i for i in range(_PROGRESS_WINDOW + 6)]
_CREEP = [1e-3, 2e-4, 5e-5, 1.0e-5] + [1.6e-6 - 1e-8 * i for i in range(_PROGRESS_WINDOW + 6)]


def _creeping(stop, residuals=_CREEP, gaps=_BELOW, rank=9):
    res = _result(stop, gaps, rank=rank)
    for e, r in zip(res.history, residuals, strict=True):
        e["residual"] = r
    return res


def test_an_equality_stall_below_tol_advises_shrink_not_rank_or_a_backend():
    opts = LowRankOptions()   # tol 1e-4, feas_tol 1e-6: neither ever reached together
    for stop in ("max_outer", "time_limit"):
        said = _stop_advice(_creeping(stop), opts, distances="equality")
        assert "distances='shrink'" in said and "no strictly feasible point" in said
        assert "Raise rank" not in said and "Raise max_rank" not in said
        assert "(CLARABEL, CSDP)" not in said and "raise max_outer" not in said
        assert "below tol = 0.0001" in said and f"({_CREEP[-1]:.2g})" in said
        assert "clique" not in said
    # where the face route solved on a clique face too, the advice names that face
    said = _stop_advice(_creeping("max_outer"), opts, distances="equality", cliques=14)
    assert "14 cliques of the graph expose," in said and "below the cliques'" in said
    said = _stop_advice(_creeping("max_outer"), opts, distances="equality", cliques=1)
    assert "1 clique of the graph exposes," in said
    assert "distances='shrink'" in said and "Raise rank" not in said
    # the generic call (no certificate at all) says the same on this class
    said = _stop_advice(_creeping("max_outer"), opts, generic=True, distances="equality")
    assert "distances='shrink'" in said and "Raise rank" not in said


def test_the_generic_advice_stays_outside_that_class():
    opts = LowRankOptions()
    # other distances: the same history keeps the rank advice (no "shrink" to offer)
    for mode in ("interval", "quadratic", "shrink", ""):
        said = _stop_advice(_creeping("max_outer"), opts, distances=mode)
        assert "Raise rank" in said and "distances='shrink'" not in said
    # a cheap gap above tol in the window: the factor's rank may be what is short
    above = [g * 2.0 for g in _BELOW]
    said = _stop_advice(_creeping("max_outer", gaps=above), opts, distances="equality")
    assert "Raise rank" in said and "distances='shrink'" not in said
    # the residual at the loop's feasibility target: the point is not kept off the rows
    said = _stop_advice(_creeping("max_outer", residuals=[1e-7] * len(_CREEP)), opts,
                        distances="equality")
    assert "Raise rank" in said and "distances='shrink'" not in said
    # still progressing (the residual halves within the window): raise the limit
    falling = _CREEP[:4] + [1e-5 * 0.7 ** i for i in range(_PROGRESS_WINDOW + 6)]
    said = _stop_advice(_creeping("max_outer", residuals=falling), opts, distances="equality")
    assert "raise max_outer" in said and "distances='shrink'" not in said
    # a certified stop keeps its own advice
    said = _stop_advice(_creeping("certified"), opts, distances="equality")
    assert "feas_tol" in said and "distances='shrink'" not in said

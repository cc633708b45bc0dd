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

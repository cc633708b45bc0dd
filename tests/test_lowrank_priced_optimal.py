"""LOWRANK's ``optimal`` points judged by what their violations buy (issue 40).

A LOWRANK point that converged to its tolerances (a user-loosened ``feas_tol``) may sit
off its rows by less than that tolerance and still lie below the optimum by far more than
its certified gap: the interval [bound, objective] it states then misses the optimum. Such
a point is reported ``optimal_inaccurate`` and rule 5 of :mod:`sdpembed.solve_status`
judges it (docs/tuning.md, "LOWRANK's optimal points priced; 1,000 fresh instances").
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from sdpembed import solve
from sdpembed.exceptions import SolverFailedError
from sdpembed.lowrank.backend import _formulation_problem, _priced_out, _solve_backend
from sdpembed.lowrank.row_worth import repaired_factor_worth
from sdpembed.solve_status import VIOLATION_WORTH

#: optimum of differential seed 101319 (equality DVU, 34 points; CLARABEL and CSDP optimal)
OPTIMUM_101319 = -0.6873679


def _seed(seed: int):
    from problems.differential import make_instance

    f, _ = make_instance(seed).build()
    return f


LOOSE = {"feas_tol": 5e-5, "max_outer": 4, "time_limit": 1e5}


def test_lowrank_optimal_point_whose_violations_buy_too_much_is_not_optimal():
    # 101319 with feas_tol 5e-5, max_outer 4: LOWRANK converges to its tolerances (certified
    # gap 5.4e-5, infeasibility 2.9e-5 within feas_tol) at -0.689756, 3.5e-3 *below* the
    # optimum, its violations priced at 1.85e-3 at its certificate's multipliers. main
    # reports it "optimal" and returns it without a warning.
    report = _solve_backend(_seed(101319), **LOOSE)
    assert report.status == "optimal_inaccurate"
    assert report.extra["violation_worth"] > 100 * VIOLATION_WORTH
    assert "converged to its tolerances" in report.extra["message"]
    assert "repaired_worth" not in report.extra        # equality distances: no repair
    assert report.objective < OPTIMUM_101319 - 1e-3 * abs(OPTIMUM_101319)
    assert report.bound <= OPTIMUM_101319              # the bound itself holds
    # ... so solve() refuses it, carrying the point, bound, gap, price and the advice
    with pytest.raises(SolverFailedError, match="price alone judges it") as err:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            solve(_seed(101319), "LOWRANK", **LOOSE)
    exc = err.value
    assert exc.violation_worth == pytest.approx(report.extra["violation_worth"])
    assert exc.point is not None and exc.bound == pytest.approx(report.bound)
    assert exc.gap == pytest.approx(report.gap)
    assert exc.objective == pytest.approx(report.objective)
    assert "lower feas_tol" in str(exc)


def test_a_priced_optimal_point_is_repaired_where_it_can_be():
    # 101315 (interval distances): LOWRANK's default point is feasible, so moved onto its
    # rows it costs nothing; _priced_out records that cost for a point priced above the limit
    f = _seed(101315)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = solve(f, "LOWRANK", time_limit=1e5)
    assert rep.status == "optimal" and rep.extra["violation_worth"] <= VIOLATION_WORTH
    gp, basis, _ = _formulation_problem(f)
    F, p = np.asarray(f.factor), rep.objective
    worth = repaired_factor_worth(gp, F, p, abs(p))
    assert worth is not None and abs(worth) <= VIOLATION_WORTH
    extra = {"objective_scale": rep.extra["objective_scale"], "advice": "lower feas_tol"}
    def fake(status="optimal", gap=1e-6):
        return SimpleNamespace(status=status, objective=p, factor=F, certified_gap=gap,
                               bound=p - gap * abs(p))

    assert _priced_out(gp, basis, fake(), 1e-3, extra, True)
    assert extra["repaired_worth"] == pytest.approx(worth, abs=1e-9)
    assert "moved onto its rows it costs" in extra["message"]
    # no eigendecomposition where dense ones are not allowed
    extra = {"objective_scale": rep.extra["objective_scale"], "advice": "lower feas_tol"}
    assert _priced_out(gp, basis, fake(), 1e-3, extra, False)
    assert "repaired_worth" not in extra and "no repair" in extra["message"]
    # a price within the certified gap keeps optimal: the optimum lies within that gap
    extra = {"objective_scale": rep.extra["objective_scale"], "advice": "lower feas_tol"}
    assert not _priced_out(gp, basis, fake(gap=2e-3), 1e-3, extra, True)
    assert "message" not in extra
    # an optimal_inaccurate point is repaired too, its status left alone
    extra = {"objective_scale": rep.extra["objective_scale"], "advice": "lower feas_tol"}
    assert not _priced_out(gp, basis, fake("optimal_inaccurate"), 1e-3, extra, True)
    assert "repaired_worth" in extra and "message" not in extra
    # equality distances: no repair
    gq, _, _ = _formulation_problem(_seed(101319))
    assert repaired_factor_worth(gq, np.ones((gq.n, 2)), -1.0, 1.0) is None


def test_priced_out_states_its_clause_only_for_an_optimal_point(monkeypatch):
    # the demotion's clause (priced_beyond) is formed only where it can demote: an
    # optimal_inaccurate point is judged by rule 5 without it (no repair here: a basis)
    import sdpembed.lowrank.backend as backend

    calls = []
    real = backend.priced_beyond

    def counted(worth, allowances):
        calls.append(worth)
        return real(worth, allowances)

    monkeypatch.setattr(backend, "priced_beyond", counted)
    def fake(status):
        return SimpleNamespace(status=status, objective=-1.0, factor=None, certified_gap=1e-6,
                               bound=-1.0 - 1e-6)

    extra = {"objective_scale": 1.0, "advice": "lower feas_tol"}
    assert not _priced_out(None, object(), fake("optimal_inaccurate"), 1e-3, extra, True)
    assert calls == [] and "message" not in extra
    assert _priced_out(None, object(), fake("optimal"), 1e-3, extra, True)
    assert calls == [1e-3] and "can buy 0.001" in extra["message"]
    assert "no repair" in extra["message"]

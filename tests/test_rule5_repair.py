"""Rule 5 after the repair, and LOWRANK's own points priced per row (issue 40).

A price :math:`\\sum_i |y_i| r_i` at a backend's own multipliers estimates what a point's
violations bought; the point moved onto its rows (:func:`sdpembed.violation_worth.
repaired_objective`) is feasible, so its objective :math:`p_r \\ge p^\\star` proves
:math:`p \\ge p^\\star - (p_r - p)`. Rule 5 refuses a priced ``optimal_inaccurate`` point
unless that proof keeps it within :data:`~sdpembed.solve_status.VIOLATION_WORTH`. LOWRANK
prices its hard rows (equality and shrink distances, the SNR constraint, added rows) at
its certificate's multipliers (:func:`sdpembed.lowrank.row_worth.row_price`).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from sdpembed import solve
from sdpembed.exceptions import SolverFailedError
from sdpembed.lowrank.backend import _formulation_problem
from sdpembed.lowrank.row_worth import repaired_gram_objective, row_price
from sdpembed.solve_status import VIOLATION_WORTH, check_result
from sdpembed.solvers import available_solvers
from sdpembed.violation_worth import repaired_objective

#: optima of differential seeds (CSDP's and CLARABEL's `optimal` objectives)
OPTIMUM_101352 = -0.2869236
OPTIMUM_101319 = -0.6873679


def _seed(seed: int):
    from problems.differential import make_instance

    f, _ = make_instance(seed).build()
    return f


def _quiet(f, solver, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return solve(f, solver, **options)


def test_a_priced_point_is_kept_only_where_its_repair_proves_it_near():
    over = {"violation_worth": 3 * VIOLATION_WORTH, "gap": 1e-6}
    with pytest.raises(SolverFailedError, match="priced at its own multipliers"):
        check_result("CLARABEL", "optimal_inaccurate", -1.0, over)
    check_result("CLARABEL", "optimal_inaccurate", -1.0, {**over, "repaired_worth": 2e-6})
    check_result("CLARABEL", "optimal_inaccurate", -1.0, {**over, "repaired_worth": -1e-4})
    with pytest.raises(SolverFailedError, match="moved onto its rows it costs 5e-05"):
        check_result("CLARABEL", "optimal_inaccurate", -1.0, {**over, "repaired_worth": 5e-5})


def test_the_repaired_point_bounds_the_optimum_from_above_and_equality_rows_are_not_repaired():
    if "CLARABEL" not in available_solvers():
        pytest.skip("CLARABEL is not installed")
    f = _seed(101352)                            # interval DVU: convicted CLARABEL point
    with pytest.raises(SolverFailedError, match="moved onto its rows it costs") as err:
        _quiet(f, "CLARABEL")
    p_r = repaired_objective(f)
    assert p_r is not None and p_r >= OPTIMUM_101352
    said = float(str(err.value).split("it costs ")[1].split(" ")[0])
    assert said == pytest.approx((p_r - err.value.objective) / abs(err.value.objective),
                                 rel=2e-3)
    g = _seed(101161)                            # equality distances: no repair
    with pytest.raises(SolverFailedError, match="priced at its own multipliers") as err:
        _quiet(g, "CLARABEL")
    assert "moved onto its rows" not in str(err.value) and repaired_objective(g) is None


def test_row_price_prices_only_hard_rows_at_their_multipliers():
    gp, _, _ = _formulation_problem(_seed(101319))          # equality distances
    assert gp.distances == "equality"
    rng = np.random.default_rng(0)
    F = rng.standard_normal((gp.n, 3))
    y = rng.standard_normal(gp.edges.shape[0])
    D = ((F[gp.edges[:, 0]] - F[gp.edges[:, 1]]) ** 2).sum(axis=1)
    assert row_price(gp, F, y, None) == pytest.approx(np.abs(y) @ np.abs(D - gp.target))
    assert row_price(gp, F, y[:-1], None) is None and row_price(gp, F, None, None) is None
    hp, _, _ = _formulation_problem(_seed(101352))          # interval: a penalty, no rows
    Fh = rng.standard_normal((hp.n, 3))
    assert row_price(hp, Fh, np.ones(hp.edges.shape[0]), None) == 0.0
    # an equality problem's point is not repaired (no move meets an equality exactly)
    assert repaired_gram_objective(gp, F @ F.T) is None


def test_lowrank_cut_with_a_loose_feas_tol_is_refused_for_its_price():
    # 101319 (equality DVU): LOWRANK cut at 3 outer iterations with feas_tol 8e-5 stops
    # 6.6e-5 off its rows, within that tolerance, objective -0.691324, 0.58 % *below* the
    # optimum with certified gap 2.9e-3; its own multipliers price the violations at 3.1e-3.
    # main returned it (optimal_inaccurate, a warning)
    with pytest.raises(SolverFailedError, match="priced at its own multipliers") as err:
        _quiet(_seed(101319), "LOWRANK", feas_tol=8e-5, max_outer=3, time_limit=1e5)
    exc = err.value
    said = float(str(exc).split("can buy ")[1].split(" ")[0])
    assert said > 100 * VIOLATION_WORTH and "lower feas_tol" in str(exc)
    assert exc.objective < OPTIMUM_101319 - 1e-3 * abs(OPTIMUM_101319)
    # solved to its default tolerances it is optimal, its rows priced at nearly nothing
    rep = _quiet(_seed(101319), "LOWRANK", time_limit=1e5)
    assert rep.status == "optimal" and rep.extra["violation_worth"] <= VIOLATION_WORTH
    assert rep.objective == pytest.approx(OPTIMUM_101319, rel=2e-5)

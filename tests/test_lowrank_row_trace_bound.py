"""A certificate without a coercive dual point takes its bound from an added row that bounds
tr G: quadratic DVU below its boundedness threshold, bounded only by ``trace(G) <= tau``
(docs/tuning.md, "Quadratic distances: a trace bound where S(y) is not PSD")."""

import cvxpy as cp
import numpy as np
import pytest

from problems.issue_claims import blobs30
from sdpembed.formulations.dvu import min_bounded_slack_weight
from sdpembed.lowrank.trace_bound import row_trace_bound


def certified_with_bounds(f, quiet_solve, made, slack):
    """LOWRANK's report on ``f`` and CLARABEL's optimum, after checking that LOWRANK
    certifies at that optimum (1e-4 relative, its tol) and that every certificate with
    :math:`\\lambda_{\\min} < 0` among ``made`` (there is one) has a bound, at most
    ``slack`` relative above the optimum (CLARABEL's own accuracy)."""
    optimum = quiet_solve(f, "CLARABEL").objective
    rep = quiet_solve(f, "LOWRANK")
    assert rep.status == "optimal", rep.status
    assert abs(rep.objective - optimum) <= 1e-4 * max(1.0, abs(optimum))
    negative = [c for c in made if c.lambda_min is not None and c.lambda_min < 0]
    assert negative
    for cert in negative:
        assert cert.bound is not None, cert.note
        assert cert.bound <= optimum + slack * max(1.0, abs(optimum)), cert.describe()
    return rep, optimum


@pytest.mark.parametrize("tau", [10.0, 100.0])
def test_a_trace_row_bounds_every_certificate_below_the_threshold(tau, quiet_solve,
        made_certificates):
    lam = min_bounded_slack_weight(blobs30(distances="quadratic").points_problem)
    f = blobs30(distances="quadratic", slack_weight=0.9 * lam)
    f = f.with_constraints([cp.trace(f.expressions["gram"]) <= tau])
    # the coercive point (nu = 0) is not dual feasible below the threshold: before the row's
    # trace bound, certificates with lambda_min < 0 there had no bound at all
    rep, optimum = certified_with_bounds(f, quiet_solve, made_certificates, 1e-6)
    assert rep.extra["lower_bound"] <= optimum + 1e-6 * max(1.0, abs(optimum))


def test_the_row_trace_bound_reads_diagonal_rows_only():
    from sdpembed.lowrank.space import FactorSpace

    f = blobs30(distances="quadratic")
    G = f.expressions["gram"]
    rows = [cp.trace(G) <= 7.0, 2 * G[0, 0] + cp.trace(G) <= 9.0, G[0, 1] <= 1.0]
    gp = f.with_constraints(rows).current_problem()
    # trace(G) <= 7 gives 7; 3 G00 + sum_(i>0) G_ii <= 9 gives 9 (c = 1); G01 bounds nothing
    assert row_trace_bound(FactorSpace(gp)) == pytest.approx(7.0)
    gp1 = f.with_constraints([G[0, 1] <= 1.0, G[0, 0] <= 1.0]).current_problem()
    assert row_trace_bound(FactorSpace(gp1)) == np.inf

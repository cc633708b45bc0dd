"""Added rows that bound a quadratic DVU below its threshold where no single diagonal row
bounds tr G: the shifted certificate towards a row anchor (y0 with the rows' multipliers);
and a point that meets its rows to a tolerance never lies below its reported bound
(docs/tuning.md, "A shifted certificate towards the rows' multipliers")."""

import cvxpy as cp
import numpy as np
import pytest

import sdpembed.lowrank.certificate as certificate
import sdpembed.lowrank.point_bound as point_bound
from problems.issue_claims import blobs30
from sdpembed.formulations.dvu import min_bounded_slack_weight
from sdpembed.lowrank.trace_bound import row_trace_bound
from tests.test_lowrank_row_trace_bound import certified_with_bounds


def _below_threshold(rows_of):
    lam = min_bounded_slack_weight(blobs30(distances="quadratic").points_problem)
    f = blobs30(distances="quadratic", slack_weight=0.9 * lam)
    return f.with_constraints(rows_of(f.expressions["gram"]))


def _pd_row(G):
    # positive definite, not diagonal: tr G + 0.3 (G_3,17 + G_17,3) <= 20
    return [cp.trace(G) + 0.3 * (G[3, 17] + G[17, 3]) <= 20.0]


def _half_traces(G):
    # two diagonal rows, neither bounding tr G alone, and an entry row
    n = G.shape[0]
    return [sum(G[k, k] for k in range(n // 2)) <= 8.0,
            sum(G[k, k] for k in range(n // 2, n)) <= 12.0, G[2, 9] >= -0.1]


def _must_links(G):
    # must-link rows on a path through every point: G_ii + G_jj - 2 G_ij <= 1
    n = G.shape[0]
    return [G[i, i] + G[i + 1, i + 1] - 2 * G[i, i + 1] <= 1.0 for i in range(n - 1)]


@pytest.mark.parametrize("rows_of", [_pd_row, _half_traces, _must_links],
                         ids=["pd-row", "half-traces", "must-links"])
def test_general_rows_bound_every_certificate_below_the_threshold(rows_of, quiet_solve,
        made_certificates):
    f = _below_threshold(rows_of)
    # S(y0, 0) is indefinite below the threshold and no row is a diagonal trace bound:
    # before the row anchor, certificates with lambda_min < 0 had no bound at all
    rep, optimum = certified_with_bounds(f, quiet_solve, made_certificates, 1e-7)
    assert rep.bound <= optimum + 1e-7 * max(1.0, abs(optimum))
    assert rep.bound <= rep.objective


@pytest.mark.parametrize("tau", [10.0, 100.0])
def test_a_point_on_its_rows_to_a_tolerance_lies_above_its_bound(tau, quiet_solve):
    # at trace(G) <= 10 the point exceeds the row by its tolerance and its objective lay
    # 4.2e-8 below the bound of the rows as posed: the gap is stated against the rows
    # relaxed by the point's violations
    f = _below_threshold(lambda G: [cp.trace(G) <= tau])
    optimum = quiet_solve(f, "CLARABEL").objective
    rep = quiet_solve(f, "LOWRANK")
    assert rep.status == "optimal"
    assert rep.bound <= rep.objective
    assert rep.extra["lower_bound"] == rep.bound
    assert rep.bound <= optimum + 1e-7 * max(1.0, abs(optimum))
    assert rep.certified_gap == pytest.approx(
        (rep.objective - rep.bound) / max(abs(rep.objective), abs(rep.bound)))


def test_the_point_bound_is_the_bound_less_the_priced_violations():
    from sdpembed.lowrank.space import FactorSpace

    f = blobs30(distances="quadratic")
    G = f.expressions["gram"]
    gp = f.with_constraints([cp.trace(G) <= 7.0, G[0, 1] == 0.5,
                             G[0, 0] <= 3.0]).current_problem()
    space = FactorSpace(gp)
    rng = np.random.default_rng(0)
    W = space.project(rng.standard_normal((gp.n, 3)))
    vals = space.K_values(W)
    # rows met exactly by the point: nothing to relax
    cert = certificate.Certificate(1.0, 0.5, "dual-feasible", y=np.zeros(1),
                                   nu=np.r_[np.zeros(space.n_snr), 2.0, -3.0, 5.0])
    space.K.rhs[:] = vals + np.array([0.0, 0.0, 1.0])   # the third row with slack 1
    assert point_bound.point_bound(space, cert, W) == (1.0, 0.0)
    # violations 0.5 (trace), |0.25| (equality), none (slack): 2 x 0.5 + 3 x 0.25
    space.K.rhs[:] = vals - np.array([0.5, -0.25, -1.0])
    bound, rho = point_bound.point_bound(space, cert, W)
    assert rho == pytest.approx(1.75)
    assert bound == pytest.approx(-0.75)
    # a trace-bound certificate (mu < 0, T from the trace row) falls by |mu| (T' - T) more
    T = row_trace_bound(space)
    tb = certificate.Certificate(1.0, -0.1, "trace-bound", y=np.zeros(1), nu=cert.nu,
                                 trace_bound=T)
    assert point_bound.point_bound(space, tb, W)[1] == pytest.approx(1.75 + 0.1 * 0.5)


def test_the_loop_stops_at_the_gap_it_reports(quiet_solve):
    # tr G + w (G_24,19 + G_19,24) <= tau at 0.9 lambda*: the point meets its row to
    # feas_tol and lies 1.26e-6 (relative) below the optimum as posed, within 2.4e-11 of
    # the bound of the rows relaxed by its violation. At tol = 1e-6 the loop measured its
    # gap against the rows as posed, ran its 200 outer iterations and ended
    # optimal_inaccurate with a reported gap of 2.4e-11; it stops where the report's gap
    # is within tol
    w, tau = 0.21024338098404868, 5.7437435987838095
    f = _below_threshold(lambda G: [cp.trace(G) + w * (G[24, 19] + G[19, 24]) <= tau])
    optimum = quiet_solve(f, "CLARABEL").objective
    rep = quiet_solve(f, "LOWRANK", tol=1e-6)
    assert optimum - rep.objective > 1e-6 * abs(optimum)   # below the optimum as posed
    assert rep.status == "optimal"
    assert rep.certified_gap <= 1e-6
    assert rep.bound <= rep.objective
    assert rep.bound <= optimum + 1e-7 * max(1.0, abs(optimum))

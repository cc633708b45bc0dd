"""The certificate's trace bound T >= tr G from the problem's own hard rows: the least of
the shortest paths' (equality and shrink distances) and an added row's (docs/tuning.md,
"The certificate's trace bound from an active trace row")."""

import cvxpy as cp
import numpy as np
import pytest

import sdpembed.lowrank.certificate as certificate
from problems.differential import make_instance
from problems.issue_claims import blobs30
from sdpembed.formulations.gram import DiagPlusLowRank, GramProblem
from sdpembed.lowrank.penalty import DistancePenalty
from sdpembed.lowrank.space import FactorSpace
from sdpembed.lowrank.trace_bound import (
    feasible_trace_bound,
    row_trace_bound,
    shortest_path_trace_bound,
)
from tests.test_lowrank_row_trace_bound import certified_with_bounds


def _path(distances: str = "equality") -> GramProblem:
    """Three points on a path with unit edges: the centred straight embedding (-1, 0, 1)
    is feasible with trace 2, and every feasible G has tr G <= 2 (root 1: 1 + 0 + 1)."""
    return GramProblem(n=3, edges=np.array([[0, 1], [1, 2]]), target=np.ones(2),
                       objective=DiagPlusLowRank.zeros(3), distances=distances)


def _with_rows(f, rows):
    return FactorSpace(f.with_constraints(rows).current_problem())


def test_shortest_paths_of_a_path_by_hand():
    assert shortest_path_trace_bound(_path()) == pytest.approx(2.0, rel=1e-15)
    assert feasible_trace_bound(FactorSpace(_path())) == (pytest.approx(2.0), "shortest paths")
    # penalised distances bound nothing: no rows, no bound
    assert feasible_trace_bound(FactorSpace(_path("quadratic")))[0] == np.inf


def test_the_least_of_the_rows_and_the_paths_with_the_right_sign():
    f = blobs30(distances="equality")
    G = f.expressions["gram"]
    T_sp = shortest_path_trace_bound(f.current_problem())
    tau = 0.5 * T_sp
    # trace(G) <= tau, written either way, or an equality with negative coefficients
    for rows in ([cp.trace(G) <= tau], [2 * cp.trace(G) <= 2 * tau], [-cp.trace(G) == -tau],
                 [cp.trace(G) <= 3 * T_sp, tau >= cp.trace(G)]):
        T, source = feasible_trace_bound(_with_rows(f, rows))
        assert source == "an added row"
        assert tau <= T <= tau * (1 + 1e-15)
    # trace(G) >= tau, a looser row, a row on some points only, a non-diagonal row: the paths
    for rows in ([cp.trace(G) >= tau], [cp.trace(G) <= 2 * T_sp], [G[0, 0] <= 1e-3],
                 [cp.sum(G[0, :4]) <= 1e-3]):
        assert feasible_trace_bound(_with_rows(f, rows)) == (T_sp, "shortest paths")
    # relaxed by a point's violation s (point_bound): the loosest right-hand side within
    # s, tau + s, whichever way the row is written
    for rows in ([cp.trace(G) <= tau], [-cp.trace(G) == -tau], [cp.trace(G) == tau]):
        T = row_trace_bound(_with_rows(f, rows), np.array([0.25]))
        assert T == pytest.approx(tau + 0.25, rel=1e-14) and T >= tau + 0.25
    # quadratic distances: the row alone
    q = blobs30(distances="quadratic")
    assert row_trace_bound(_with_rows(q, [cp.trace(q.expressions["gram"]) <= tau])) \
        == pytest.approx(tau, rel=1e-15)


def test_certificate_at_zero_multipliers_takes_the_trace_row(quiet_solve):
    """At y = 0, z = 0 (phi*(0) = 0 for equality distances) the certificate is
    lambda_min(C) T by hand; with an active trace row T is the row's bound, and the bound
    stays below CLARABEL's optimum of the problem with the row."""
    f = blobs30(distances="equality")
    g = f.with_constraints([cp.trace(f.expressions["gram"]) <= 38.0])
    gp = g.current_problem()
    space = FactorSpace(gp)
    # lambda_min of C on the centred space, by hand
    n = gp.n
    P = np.eye(n) - np.ones((n, n)) / n
    B = np.linalg.svd(P)[0][:, :n - 1]
    C = space.C.matvec(np.eye(n))
    mu = float(np.linalg.eigvalsh(B.T @ (0.5 * (C + C.T)) @ B)[0])
    assert mu < 0
    cert = certificate.certify(space, DistancePenalty(gp), np.zeros(gp.edges.shape[0]), None)
    assert cert.method == "trace-bound" and "(an added row)" in cert.note
    assert cert.trace_bound == pytest.approx(38.0, rel=1e-14)
    assert cert.bound == pytest.approx(mu * 38.0, rel=1e-9)
    assert cert.bound <= mu * 38.0 * (1 - 1e-15)       # rounding taken off, not added
    # the shortest paths' bound would be lower: the row helps
    assert shortest_path_trace_bound(gp) > 38.0
    optimum = quiet_solve(g, "CLARABEL").objective
    assert cert.bound <= optimum


@pytest.mark.parametrize("seed", [111882, 112600])
def test_differential_seeds_certified_by_the_trace_row(seed, quiet_solve, made_certificates):
    """111882 (equality DVU, ``trace(G) <= 20.1`` below the shortest paths' 45.5) and 112600
    (quadratic DVU with a coercive point, where the row's bound beats the shifted one): a
    certificate takes the row's bound, and every bound lies below CLARABEL's optimum."""
    f, _ = make_instance(seed).build()
    rep, optimum = certified_with_bounds(f, quiet_solve, made_certificates, 1e-7)
    rows = [c for c in made_certificates if "(an added row)" in c.note]
    assert rows, [c.describe() for c in made_certificates]
    assert rep.extra["lower_bound"] <= optimum + 1e-7 * max(1.0, abs(optimum))


@pytest.mark.slow
def test_112333_certified_by_its_active_trace_row(quiet_solve, made_certificates):
    """Equality DVU whose ``trace(G) <= 44.66`` is active at the optimum (the shortest
    paths give 100.4): the certificate that ends the solve is the row's."""
    f, _ = make_instance(112333).build()
    rep, optimum = certified_with_bounds(f, quiet_solve, made_certificates, 1e-7)
    assert "(an added row)" in rep.extra["certificate"]
    assert rep.extra["lower_bound"] <= optimum + 1e-7 * max(1.0, abs(optimum))

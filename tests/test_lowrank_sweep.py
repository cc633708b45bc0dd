"""Warm-started sweeps on one graph (sdpembed.solvers.solve_sweep).

Reference: the same problems solved cold. Each solve is certified to ``tol`` = 1e-5, so a
warm and a cold objective of one problem differ by at most the two gaps,
2e-5 max(1, |p|); the last slack weight makes slacks active (its objective moves), so the
warm start must follow a changed optimum, not just restate the previous one.
"""

import numpy as np
import pytest

from sdpembed.exceptions import InputError
from sdpembed.formulations import dvu
from sdpembed.solvers import solve, solve_sweep

LAMS = [0.1, 0.05, 0.02]
TOL = 1e-5


@pytest.fixture(scope="module")
def instance(partial_digits):
    X, y, graph, _ = partial_digits(80)
    return graph, y


def _formulations(instance):
    graph, y = instance
    return [dvu(graph, y, centroids="eliminated", slack_weight=lam) for lam in LAMS]


def test_a_warm_sweep_certifies_the_cold_optima(instance, no_paid_barrier):
    """A warm sweep (each solve from the previous factor and multipliers) certifies the cold
    optima in no more outer iterations. Without ``no_paid_barrier`` these 80-point solves
    certify at outer 1 cold (the barrier paid for by the first subproblem's work) and warm
    (paid for by the previous solve, the next test): the comparison here is of the loop
    the warm start is meant for."""
    cold = solve_sweep(_formulations(instance), warm=False, tol=TOL)
    fs = _formulations(instance)
    warm = solve_sweep(fs, tol=TOL)
    for c, w in zip(cold, warm):
        assert c.status == w.status == "optimal"
        assert c.certified_gap <= TOL and w.certified_gap <= TOL
        assert abs(c.objective - w.objective) <= 2 * TOL * max(1.0, abs(c.objective))
    # the objective moves along the sweep (slacks become active at the last weight)
    assert cold[-1].objective < cold[0].objective - 1e-2
    # the first solve is cold in both; the later ones start from the previous solution
    assert warm[0].iterations == cold[0].iterations
    assert sum(r.iterations for r in warm[1:]) <= sum(r.iterations for r in cold[1:])
    # each formulation holds its own solution
    assert all(f.factor is not None for f in fs)
    assert warm[-1].extra["multipliers"]["y"].shape == (instance[0].n_edges,)


def test_a_warm_sweep_takes_no_more_outer_iterations_with_the_paid_barrier(instance):
    """With the paid-for barrier (the default), each warm solve takes at most the cold
    solve's outer iterations: a warm solve counts its barrier as paid from its first step
    (``DualOptimum.prepaid``; docs/tuning.md, "The warm barrier's page faults; a sweep's
    barrier paid for"). Before, the last weight's warm solve took 3 outer iterations to the
    cold solve's 1 (its warm subproblems did too little work to pay for the barrier)."""
    cold = solve_sweep(_formulations(instance), warm=False, tol=TOL)
    warm = solve_sweep(_formulations(instance), tol=TOL)
    for c, w in zip(cold, warm):
        assert c.status == w.status == "optimal"
        assert w.certified_gap <= TOL
        assert abs(c.objective - w.objective) <= 2 * TOL * max(1.0, abs(c.objective))
        assert w.iterations <= c.iterations


def test_warm_multipliers_of_another_graph_are_refused(instance):
    graph, y = instance
    f = dvu(graph, y, centroids="eliminated")
    with pytest.raises(InputError, match="distance rows"):
        solve(f, solver="LOWRANK", warm_multipliers=(np.zeros(3), np.zeros(0)))
    with pytest.raises(InputError, match="warm_multipliers"):
        solve(f, solver="LOWRANK", warm_multipliers=np.zeros(3))
    with pytest.raises(InputError, match="warm_multipliers"):
        solve(f, solver="LOWRANK", warm_multipliers=(np.full(3, np.nan), np.zeros(0)))

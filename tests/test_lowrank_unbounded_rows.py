"""LOWRANK's unboundedness test with added rows: a verified ray that keeps them, and a point
that meets them (issue 40; docs/tuning.md, "The unboundedness test with added rows").

Every verdict is compared with CLARABEL's, or with a closed-form fact where CLARABEL's is
not a proof (its "unbounded" says only that an improving ray exists)."""

import cvxpy as cp
import numpy as np
import pytest

from problems.differential import make_instance
from sdpembed import solve
from sdpembed.exceptions import SolverFailedError, UnboundedError
from sdpembed.formulations.mvu import mvu
from sdpembed.graphs import NeighborhoodGraph
from sdpembed.lowrank.options import LowRankOptions
from sdpembed.lowrank.penalty import DistancePenalty
from sdpembed.lowrank.solve import _unbounded_at_slack_weight
from sdpembed.lowrank.space import FactorSpace


def _path(n):
    return NeighborhoodGraph(n, [[i, i + 1] for i in range(n - 1)], np.ones(n - 1))


def _proved_unbounded(f) -> bool:
    gp = f.current_problem()
    return _unbounded_at_slack_weight(FactorSpace(gp), DistancePenalty(gp),
                                      LowRankOptions()) is not None


def test_111386_is_unbounded_with_its_rows_as_clarabel_proves():
    """Seed 111,386 of the differential test (MVU interval, 18 points, two entry equalities
    and a row-sum bound): LOWRANK refused it as "may be infeasible" after its solve;
    CLARABEL proves it unbounded, and the rows admit a point, so it is."""
    f, words = make_instance(111386).build()
    assert words == ["entry(3,17)", "entry(8,13)", "rowsum(14,5)"]
    with pytest.raises(UnboundedError):
        solve(f, "CLARABEL")
    assert _proved_unbounded(f)
    with pytest.raises(UnboundedError, match="slack_weight"):
        solve(f, "LOWRANK")


ROWS = {
    "entry and row sum": lambda G: [G[0, 1] == 0.3, cp.sum(G[2, :4]) <= 0.5],
    "trace bound": lambda G: [cp.trace(G) <= 10],
    "ends' diagonal bounds": lambda G: [G[0, 0] <= 1, G[7, 7] <= 1],
    "ends' distance bound": lambda G: [G[0, 0] + G[7, 7] - 2 * G[0, 7] <= 4],
    "a point pinned": lambda G: [G[3, 3] == 0.0],
    "a pinned point's entry": lambda G: [G[0, 0] <= 1e-3, G[0, 1] == 0.3],
    # a trace row touches every point: the points' span is 1-perp, rank n - 1
    "trace floor, a diagonal bound": lambda G: [cp.trace(G) >= 5, G[3, 3] <= 1],
}


@pytest.mark.parametrize("distances", ["interval", "quadratic"])
@pytest.mark.parametrize("rows", list(ROWS))
def test_the_test_with_rows_agrees_with_clarabel(distances, rows):
    """Unbounded without its rows (slack_weight 0.3 on a path): proved unbounded with them
    exactly where CLARABEL says so (every row set here has a feasible point); where the
    rows bound it, LOWRANK's optimum is CLARABEL's."""
    f = mvu(_path(8), distances=distances, slack_weight=0.3, normalize=False)
    f = f.with_constraints(ROWS[rows](f.expressions["gram"]))
    try:
        reference = solve(f, "CLARABEL")
    except UnboundedError:
        reference = None
    assert _proved_unbounded(f) is (reference is None)
    if reference is None:
        with pytest.raises(UnboundedError):
            solve(f, "LOWRANK")
    else:
        assert solve(f, "LOWRANK").objective == pytest.approx(reference.objective, rel=1e-4)


@pytest.mark.parametrize("rows", [
    lambda G: [G[0, 0] == -1.0],                            # a negative diagonal entry
    lambda G: [G[0, 1] == 0.3, G[0, 0] + G[1, 1] <= 0.2],   # G00 + G11 >= 2|G01| = 0.6
])
def test_an_improving_ray_without_a_feasible_point_is_not_unboundedness(rows):
    """Rows that no PSD matrix meets (closed form in each case), on a problem with an
    improving ray: not proved unbounded, and LOWRANK, whose factor grows without bound,
    refuses with a typed error that says the problem may be infeasible, not
    ``UnboundedError`` (CLARABEL says ``UnboundedError`` on the second)."""
    f = mvu(_path(8), distances="interval", slack_weight=0.3, normalize=False)
    f = f.with_constraints(rows(f.expressions["gram"]))
    assert not _proved_unbounded(f)
    with pytest.raises(SolverFailedError, match="may be infeasible"):
        solve(f, "LOWRANK")

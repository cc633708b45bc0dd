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


def _tight(margin):
    """Path 8 below its threshold with ``G01 == 0.3`` and ``G00 + G11 <= 0.6 + margin``:
    every PSD ``G`` has ``G00 + G11 >= 2|G01| = 0.6``, so the rows admit a point exactly
    when ``margin >= 0``; the improving ray on points 2-7 keeps both rows."""
    f = mvu(_path(8), distances="interval", slack_weight=0.3, normalize=False)
    G = f.expressions["gram"]
    return f.with_constraints([G[0, 1] == 0.3, G[0, 0] + G[1, 1] <= 0.6 + margin])


@pytest.mark.parametrize("margin", [-1e-8, -1e-9])
def test_rows_infeasible_below_feas_tol_are_not_proved_unbounded(margin):
    """Infeasible by 1e-8 and 1e-9 (closed form), far less than ``feas_tol`` (1e-6): a
    point meets the rows within ``feas_tol``, but none meets them exactly, so the ray
    proves nothing; both causes are named. CLARABEL and CSDP say ``UnboundedError`` here
    (an improving ray only)."""
    f = _tight(margin)
    with pytest.raises(UnboundedError):
        solve(f, "CLARABEL")
    with pytest.raises(SolverFailedError, match="unbounded if it is feasible"):
        _proved_unbounded(f)
    with pytest.raises(SolverFailedError, match="may be infeasible"):
        solve(f, "LOWRANK")


@pytest.mark.parametrize("margin", [1e-7, 1e-9])
def test_rows_feasible_by_a_small_margin_are_proved_unbounded(margin):
    """Feasible by 1e-7 and 1e-9 (closed form): the point is verified to meet the rows
    exactly, and the problem is unbounded, as CLARABEL says."""
    f = _tight(margin)
    with pytest.raises(UnboundedError):
        solve(f, "CLARABEL")
    assert _proved_unbounded(f)


def _diverged_stop(f, monkeypatch):
    """``solve(f, "LOWRANK")`` with the ray test not made (``dense_limits.eig`` below n, as
    at large n), so that the outer loop's diverged stop answers; asserts that it does."""
    from sdpembed.lowrank import backend

    stops, refuse = [], backend._refuse_diverged_without_point

    def spy(gp, result, opts, formulation):
        stops.append(result.stop_reason)
        return refuse(gp, result, opts, formulation)

    monkeypatch.setattr(backend, "_refuse_diverged_without_point", spy)
    try:
        solve(f, "LOWRANK", dense_limits={"eig": 4})
    finally:
        assert stops == ["diverged"]


@pytest.mark.parametrize("margin", [-1e-8, -1e-9])
def test_the_diverged_stop_on_rows_infeasible_below_feas_tol(margin, monkeypatch):
    """The outer loop's diverged stop on rows infeasible by 1e-8 and 1e-9 (closed form,
    below ``feas_tol``): a point meets them within ``feas_tol`` only, so the growth proves
    nothing and both causes are named, not ``UnboundedError`` (which CLARABEL says: an
    improving ray only)."""
    with pytest.raises(SolverFailedError, match="may be infeasible by less than"):
        _diverged_stop(_tight(margin), monkeypatch)


@pytest.mark.parametrize("margin", [1e-7, 1e-9])
def test_the_diverged_stop_on_rows_feasible_by_a_small_margin(margin, monkeypatch):
    """Feasible by 1e-7 and 1e-9 (closed form): the point is verified exact, and the
    diverged stop says ``UnboundedError``, as CLARABEL does."""
    f = _tight(margin)
    with pytest.raises(UnboundedError):
        solve(f, "CLARABEL")
    with pytest.raises(UnboundedError):
        _diverged_stop(f, monkeypatch)


def test_a_rows_compression_read_on_its_points_is_the_dense_one():
    """Each row's compression onto 1-perp, read on the points it touches, has the
    eigenvalues and eigenvectors of the dense n x n compression (entry, row sum, distance
    bounds, diagonal rows, a trace row that touches every point)."""
    from sdpembed.formulations.gram import centering_basis
    from sdpembed.lowrank.solve import _row_compressions

    n = 12
    f = mvu(_path(n), distances="interval", slack_weight=0.3, normalize=False)
    G = f.expressions["gram"]
    f = f.with_constraints([G[0, 1] == 0.3, cp.sum(G[2, :4]) <= 0.5, G[3, 3] == 1.0,
                            G[4, 4] + G[5, 5] - 2 * G[4, 5] >= 0.5, cp.trace(G) <= 10,
                            G[6, 6] + G[7, 7] - 2 * G[6, 7] <= 0.2, 2 * G[8, 9] - G[8, 8] <= 1])
    K = FactorSpace(f.current_problem()).K
    Pc = centering_basis(n)
    for k, (pts, a, Z) in enumerate(_row_compressions(K)):
        z = np.zeros(K.p)
        z[k] = 1.0
        A = Pc.T @ (K.operator(z) @ Pc)
        dense = np.linalg.eigvalsh(0.5 * (A + A.T))
        dense = dense[np.abs(dense) > 1e-9]
        assert np.allclose(np.sort(a[np.abs(a) > 1e-9]), np.sort(dense), atol=1e-12)
        V = np.zeros((n, Z.shape[1]))
        V[pts] = Z
        V -= V.mean(axis=0)
        assert np.allclose(V.T @ V, np.eye(Z.shape[1]), atol=1e-10)
        PAP = Pc @ A @ Pc.T
        assert np.allclose(PAP @ V, V * a, atol=1e-10)

"""MVU: known optima on a path and a square, variants, errors."""

import numpy as np
import pytest

from sdpembed import solve
from sdpembed.exceptions import DisconnectedGraphError, UnboundedError
from sdpembed.formulations.mvu import mvu
from sdpembed.graphs import NeighborhoodGraph, knn_graph
from sdpembed.recovery import embedding_from_gram, spectrum
from sdpembed.solvers import available_solvers


def path_graph(n):
    i = np.arange(n - 1)
    return NeighborhoodGraph(n, np.c_[i, i + 1], np.ones(n - 1))


@pytest.mark.parametrize("reduce_face", [True, False])
def test_path_unfolds_to_a_straight_line(reduce_face):
    # A path with unit edges has maximal variance when straight: points at
    # t - mean(t), trace = sum (t - mean)^2, and G has rank one.
    n = 7
    f = mvu(path_graph(n), normalize=False, reduce_face=reduce_face)
    report = solve(f, solver="CLARABEL")
    t = np.arange(n) - (n - 1) / 2
    assert -report.objective == pytest.approx((t**2).sum(), rel=1e-6)
    G = f.value("gram")
    np.testing.assert_allclose(G, np.outer(t, t), atol=1e-4)
    assert spectrum(G)[0] > 1 - 1e-6
    z = embedding_from_gram(G, 1)[:, 0]
    np.testing.assert_allclose(np.abs(z), np.abs(t), atol=1e-3)


def test_four_cycle_optimum_is_two():
    # Unit 4-cycle: sum ||x_i||^2 = (4 + d13^2 + d24^2)/4 <= 2 by Euler's
    # quadrilateral theorem (p^2 + q^2 <= sum of squared sides), equality for any rhombus.
    g = NeighborhoodGraph(4, [[0, 1], [1, 2], [2, 3], [0, 3]], np.ones(4))
    for solver in [s for s in ("CLARABEL", "SCS", "CSDP") if s in available_solvers()]:
        value = -solve(mvu(g, normalize=False), solver=solver).objective
        assert value == pytest.approx(2.0, rel=1e-5)


def test_interval_mvu_small_slack_is_unbounded_and_large_slack_is_exact():
    g = path_graph(6)
    with pytest.raises(UnboundedError, match="slack_weight"):
        solve(mvu(g, distances="interval", slack_weight=0.01, normalize=False), solver="CLARABEL")
    exact = -solve(mvu(g, normalize=False), solver="CLARABEL").objective
    relaxed = -solve(mvu(g, distances="interval", slack_weight=100.0, normalize=False),
                     solver="CLARABEL").objective
    assert relaxed == pytest.approx(exact, rel=1e-5)


def test_disconnected_graph_raises_before_solving():
    g = NeighborhoodGraph(4, [[0, 1], [2, 3]], np.ones(2))
    with pytest.raises(DisconnectedGraphError):
        mvu(g)


def test_typed_description_of_mvu():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((15, 2))
    g = knn_graph(X, n_neighbors=3, n_random=1, random_state=0)
    f = mvu(g)
    assert f.classes is None and f.centroids is None and f.basis_rank is None
    assert f.n_points == 15 and f.points_problem is f.gram_problem
    assert f.distance_scale == pytest.approx(g.sqdist.mean()) and f.psd_size == 14


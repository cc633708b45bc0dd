"""Equality MVU whose rows the graph's own points tell rigid
(:mod:`sdpembed.lowrank.rigid_data`): the data's Gram matrix feasible and the framework
rigid in the data's dimension up to a few local flexes, so the stalled-equality rule fires
as soon as the penalty is at its cap. Before, ``knn_graph`` kept no points and the rule
waited out its six-iteration window (the 60-point Swiss roll: outer 16).

Outcomes only (no timing)."""

import dataclasses

import numpy as np
import pytest
import sklearn.datasets as skd

from sdpembed.exceptions import InputError, SolverFailedError
from sdpembed.formulations.mvu import mvu
from sdpembed.graphs import NeighborhoodGraph, knn_graph
from sdpembed.lowrank import lowrank_solve
from sdpembed.lowrank.backend import _formulation_problem, _refuse_stalled_equality
from sdpembed.lowrank.options import LowRankOptions
from sdpembed.lowrank.rigid import STOP_REASON, WINDOW
from sdpembed.lowrank.rigid_data import rigid_from_data


def _swiss(n=60, k=6, seed=0, n_random=0):
    X, _ = skd.make_swiss_roll(n, noise=0.0, random_state=seed)
    return X, knn_graph(X, n_neighbors=k, n_random=n_random, random_state=0)


def test_knn_graph_keeps_its_points_for_the_euclidean_metric_only():
    X, g = _swiss()
    assert g.points is not None and np.array_equal(g.points, X)
    assert knn_graph(X, n_neighbors=6, n_random=0, metric="manhattan").points is None
    with pytest.raises(InputError, match="points"):
        NeighborhoodGraph(3, np.array([[0, 1], [1, 2]]), np.ones(2), points=np.ones((2, 2)))


def test_the_data_tells_the_swiss_roll_rows_rigid():
    X, g = _swiss()
    found = rigid_from_data(mvu(g).current_problem())
    assert found is not None and found.dim == 3 and found.residual < 1e-12
    # the data's own trace, scaled as the targets (the sixteenth round's 181.5353)
    assert found.trace == pytest.approx(181.5353, abs=1e-4)


def test_the_data_check_is_inert_where_it_proves_nothing():
    X, g = _swiss()
    gp = mvu(g).current_problem()
    # not equality rows; no points; points the targets do not match
    assert rigid_from_data(dataclasses.replace(gp, distances="shrink")) is None
    assert rigid_from_data(mvu(NeighborhoodGraph(g.n_nodes, g.edges, g.sqdist))
                           .current_problem()) is None
    moved = dict(gp.meta, points=gp.meta["points"] * 1.001)
    assert rigid_from_data(dataclasses.replace(gp, meta=moved)) is None
    # too few edges to be rigid in R^3 (2 neighbours and a random partner: fewer than
    # 3n - 6); high-dimensional data (USPS-like)
    few = mvu(_swiss(k=2, n_random=1)[1]).current_problem()
    assert len(few.edges) < 3 * 60 - 6 and rigid_from_data(few) is None
    Y = np.random.default_rng(0).standard_normal((60, 20))
    assert rigid_from_data(mvu(knn_graph(Y, 5, n_random=0)).current_problem()) is None
    # a regular grid (ties, non-generic): flexes everywhere
    t = np.arange(5.0)
    grid = np.array(np.meshgrid(t, t, t)).reshape(3, -1).T
    assert rigid_from_data(mvu(knn_graph(grid, 6, n_random=0)).current_problem()) is None


def test_rows_told_rigid_stop_at_the_first_capped_iteration_and_are_refused():
    X, g = _swiss()
    f = mvu(g)
    gp, basis, _ = _formulation_problem(f)
    opts = LowRankOptions(max_outer=60)
    res = lowrank_solve(gp, basis=basis, options=opts)
    assert res.stop_reason == STOP_REASON
    assert res.iterations <= WINDOW + 1            # main: 16
    with pytest.raises(SolverFailedError, match="graph's own points") as err:
        _refuse_stalled_equality(gp, res, opts, f)
    assert "distances='shrink'" in str(err.value)

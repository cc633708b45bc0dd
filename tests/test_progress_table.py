"""The verbose progress table of LOWRANK names the objective of the point it reports: where
a row's certificate was taken at another point than the iterate (the iterate moved onto its
constraints or the kink, or the barrier's point), that point's objective is on the row, so
the objective of the returned point (or of the point a refusal carries) is always printed."""

import logging
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits

from sdpembed.exceptions import SolverFailedError
from sdpembed.formulations.dvu import dvu
from sdpembed.graphs import knn_graph
from sdpembed.lowrank.result import _table_row
from sdpembed.solvers import solve


@pytest.fixture(scope="module")
def digits16():
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(1)
    idx = np.concatenate([rng.choice(np.flatnonzero(y == c), 8, replace=False) for c in (0, 1)])
    return y[idx], knn_graph(X[idx], random_state=0)


def _row_base(**kw):
    return {"outer": 2, "objective": -1.0247827602, "rank": 14, "seconds": 1.6,
            "cheap_gap": 1.03e-2, **kw}


def test_row_names_the_restored_point_and_the_barrier_point():
    row = _table_row(_row_base(restored_objective=-1.0311630280), 0.0)
    assert "restored point -1.031163028e+00" in row
    assert "restored" not in _table_row(_row_base(restored_objective=-1.0247827602), 0.0)
    row = _table_row(_row_base(barrier={"objective": -0.4438098754, "status": "optimal"}), 0.0)
    assert "barrier point -4.438098754e-01" in row
    assert "point" not in _table_row(_row_base(), 0.0)


def _table(caplog, f, **options):
    caplog.set_level(logging.INFO, logger="sdpembed.lowrank")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            objective = solve(f, "LOWRANK", **options).objective
        except SolverFailedError as exc:
            objective = exc.objective
    return objective, caplog.text


def test_reported_objective_is_on_the_table(caplog, digits16):
    # certified at the first outer iteration at the barrier's point, not the iterate's
    y, g = digits16
    objective, text = _table(caplog, dvu(g, y, centroids="eliminated"))
    assert f"{objective:+.9e}" in text


def test_refused_point_objective_is_on_the_table(caplog, digits16, no_paid_barrier):
    y, g = digits16
    objective, text = _table(caplog, dvu(g, y, centroids="eliminated"), max_outer=2)
    assert objective is not None
    assert f"{objective:+.9e}" in text

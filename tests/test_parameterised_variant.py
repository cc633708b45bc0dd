"""A new parameterised variant is one builder function: DVU with a capped class spread.

The builder below is user code, not library code: it composes
:func:`sdpembed.formulations.dvu` with one row per class written on
``f.expressions["gram"]``, the class's in-class variance
:math:`\\sigma_k^2(G) = \\frac1{|\\mathcal K_k|}\\sum_{i\\in\\mathcal K_k} G_{ii} -
a_k^TGa_k \\ge s` (a floor on how far DVU may contract each class), with :math:`s` a
named cvxpy Parameter registered by ``with_constraints(..., parameters=...)``. Nothing
in ``sdpembed/lowrank`` knows the variant: LOWRANK reads the rows as added rows of its
open description, at the parameter's current value, and certifies the result.

Tolerance 1e-4 relative between LOWRANK (certified, relative gap <= 1e-5) and CLARABEL
(interior point), as in ``tests/test_user_variants.py``.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest

from sdpembed import knn_graph, solve
from sdpembed.datasets import partial_labels
from sdpembed.demo import load_demo_data
from sdpembed.exceptions import InputError
from sdpembed.formulations import dvu
from sdpembed.formulations.dvu import class_mean_weights

RTOL = 1e-4


def dvu_spread_floor(graph, y, *, spread_floor: float, **options):
    """DVU with :math:`\\sigma_k^2(G) \\ge s` for every class k (``s = spread_floor``)."""
    f = dvu(graph, y, **options)
    G = f.expressions["gram"]
    y = np.asarray(y)
    A = class_mean_weights(y, int(y.max()) + 1)
    s = cp.Parameter(nonneg=True, name="spread_floor", value=spread_floor)
    rows = [cp.sum(cp.diag(G)[y == k]) / np.sum(y == k) - A[:, k] @ G @ A[:, k] >= s
            for k in range(A.shape[1])]
    return f.with_constraints(rows, parameters={"spread_floor": s})


def _spreads(G, y):
    A = class_mean_weights(y, int(y.max()) + 1)
    return np.array([np.mean(np.diag(G)[y == k]) - A[:, k] @ G @ A[:, k]
                     for k in range(A.shape[1])])


def _solve(f, solver):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return solve(f, solver=solver)


@pytest.fixture(scope="module")
def digits():
    X, y = load_demo_data(30, random_state=0)
    y_obs = partial_labels(y, 0.6, random_state=0)
    return knn_graph(X, n_neighbors=3, n_random=1, random_state=0), y_obs


def test_the_variant_binds_and_lowrank_matches_clarabel_at_each_value(digits):
    graph, y = digits
    plain = dvu(graph, y)
    _solve(plain, "CLARABEL")
    free = _spreads(plain.value("gram"), y)
    f, ref = dvu_spread_floor(graph, y, spread_floor=0.0), dvu_spread_floor(graph, y,
                                                                            spread_floor=0.0)
    assert f.parameters["spread_floor"] is not None and "slack_weight" in f.parameters
    last = None
    for floor in (0.5 * free.min() + 0.5 * free.max(), 1.2 * free.max()):
        # the same formulations re-solved after the parameter changes (no rebuild)
        f.parameters["spread_floor"].value = floor
        ref.parameters["spread_floor"].value = floor
        r = _solve(ref, "CLARABEL")
        low = _solve(f, "LOWRANK")
        assert low.status == "optimal" and low.certified_gap <= 1e-5
        assert abs(low.objective - r.objective) <= RTOL * max(1.0, abs(r.objective))
        spreads = _spreads(f.value("gram"), y)
        assert spreads.min() >= floor * (1 - 1e-4)        # every class row holds
        assert np.isclose(spreads.min(), floor, rtol=1e-3)  # and one binds at the optimum
        if last is not None:
            assert low.objective > last + 1e-6   # a higher floor costs objective
        last = low.objective


def test_parameters_are_checked():
    graph = knn_graph(np.random.default_rng(0).normal(size=(10, 3)), n_neighbors=3,
                      n_random=1, random_state=0)
    y = np.array([0, 1] * 5)
    f = dvu(graph, y)
    G = f.expressions["gram"]
    s = cp.Parameter(nonneg=True, name="s", value=1.0)
    with pytest.raises(InputError, match="does not appear"):
        f.with_constraints([cp.trace(G) >= 1.0], parameters={"s": s})
    with pytest.raises(InputError, match="exists already"):
        f.with_constraints([cp.trace(G) >= s], parameters={"slack_weight": s})
    with pytest.raises(InputError, match="cvxpy Parameters"):
        f.with_objective(cp.trace(G), parameters={"s": 1.0})
    g = f.with_objective(s * cp.trace(G), parameters={"s": s})
    assert g.parameters["s"] is s and "s" not in f.parameters

"""The multilevel first factor (sdpembed.lowrank.multilevel, LowRankOptions.start).

References: the coarse problem against the fine one evaluated at :math:`G = PG_cP^T`
(exact up to rounding); the certified optimum from the multilevel start against the
random start's and CLARABEL's (each LOWRANK solve certified to ``tol`` = 1e-5, so two of
them differ by at most the two gaps).
"""

import numpy as np
import pytest
from sklearn.datasets import load_digits

import sdpembed.lowrank.solve as lowrank_solve_module
from sdpembed.exceptions import InputError
from sdpembed.formulations import dvu
from sdpembed.graphs import knn_graph
from sdpembed.lowrank.multilevel import coarsen
from sdpembed.lowrank.options import LowRankOptions
from sdpembed.solvers import solve

TOL = 1e-5


@pytest.fixture(scope="module")
def formulation():
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(1)
    idx = rng.permutation(y.size)[:120]
    X, y = X[idx].astype(float), y[idx].copy()
    y[rng.random(idx.size) > 0.7] = -1
    return dvu(knn_graph(X, n_neighbors=3, n_random=1, random_state=0), y,
               centroids="eliminated")


def test_the_coarse_problem_is_the_fine_one_on_merged_points():
    """Objective (trace term included), SNR functionals and every kept edge's distance of
    the coarse problem at a coarse factor equal the fine ones at the extended factor;
    edges inside an aggregate are the only ones dropped."""
    from sdpembed.formulations.gram import GramProblem
    from sdpembed.formulations.matrices import DiagPlusLowRank
    import scipy.sparse as sp
    rng = np.random.default_rng(0)
    n = 40
    edges = np.array([(i, (i + d) % n) for i in range(n) for d in (1, 3)])
    target = rng.uniform(0.5, 2.0, edges.shape[0])
    S = sp.random(n, n, density=0.1, random_state=1)
    S = (S + S.T).tocsr()
    S.setdiag(0.0)
    S.eliminate_zeros()
    C = DiagPlusLowRank(rng.standard_normal(n), rng.standard_normal((n, 3)),
                        rng.standard_normal(3), S)
    icv = DiagPlusLowRank(rng.random(n), rng.standard_normal((n, 2)), rng.random(2))
    gp = GramProblem(n=n, edges=edges, target=target, objective=C, trace_weight=0.3,
                     icv=icv, bcv=icv, snr=2.0)
    coarse, agg = coarsen(gp)
    assert coarse.n < n and coarse.n == agg.max() + 1
    Wc = rng.standard_normal((coarse.n, 4))
    W = Wc[agg]
    Gc, G = Wc @ Wc.T, W @ W.T
    assert np.isclose(coarse.full_objective().inner(Gc), gp.full_objective().inner(G),
                      rtol=1e-12)
    assert np.isclose(coarse.icv.inner(Gc), gp.icv.inner(G), rtol=1e-12)
    inside = agg[edges[:, 0]] == agg[edges[:, 1]]
    assert coarse.edges.shape[0] == int((~inside).sum())
    assert np.allclose(coarse.distances_of_factor(Wc), gp.distances_of_factor(W)[~inside])
    assert np.array_equal(coarse.target, target[~inside])
    assert np.all(gp.distances_of_factor(W)[inside] == 0.0)


def test_the_multilevel_start_certifies_the_cold_optimum(formulation, monkeypatch):
    """With the coarsest level lowered to 20 points the 120-point DVU starts from two
    coarse levels (the start is used: counted), and certifies the random start's optimum
    and CLARABEL's."""
    calls = []
    real = lowrank_solve_module.multilevel_factor

    def counted(*args, **kwargs):
        W, record = real(*args, **kwargs)
        calls.append(record)
        return W, record
    monkeypatch.setattr(lowrank_solve_module, "multilevel_factor", counted)
    monkeypatch.setattr(lowrank_solve_module, "MULTILEVEL_MIN_POINTS", 20)
    cold = solve(formulation, solver="LOWRANK", tol=TOL, start="random")
    assert not calls
    warm = solve(formulation, solver="LOWRANK", tol=TOL, start="multilevel")
    assert len(calls) == 1 and len(calls[0]["points"]) >= 2
    assert calls[0]["points"][0] < 120
    ref = solve(formulation, solver="CLARABEL")
    assert cold.status == warm.status == "optimal"
    assert cold.certified_gap <= TOL and warm.certified_gap <= TOL
    scale = max(1.0, abs(cold.objective))
    assert abs(cold.objective - warm.objective) <= 2 * TOL * scale
    assert abs(warm.objective - ref.objective) <= TOL * scale + 1e-6 * scale


def test_an_unknown_start_is_refused():
    with pytest.raises(InputError, match="start"):
        LowRankOptions(start="landmark")

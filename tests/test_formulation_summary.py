"""The teaching view ``Formulation.summary()``: math, sizes, papers, without building.

The cone sizes it states are checked against what cvxpy compiles for a conic
solver (``problem.get_problem_data(cvxpy.SCS)``: zero, nonnegative,
second-order and PSD cones), the real count a solver receives; for the Gram SDPs
they are computed from the description before the cvxpy problem exists.
"""

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import load_iris

from sdpembed import knn_graph
from sdpembed.formulation import cone_sizes
from sdpembed.formulations import dvu, lda, mvu
from sdpembed.formulations.describe import gram_cone_sizes
from sdpembed.relaxations import fantope_subproblem, fantope_trace


def compiled_cones(problem):
    dims = problem.get_problem_data(cp.SCS)[0]["dims"]
    return dims.zero, dims.nonneg, sorted(dims.soc), sorted(dims.psd)


def stated_cones(sizes):
    return sizes.zero, sizes.nonneg, sorted(sizes.soc), sorted(sizes.psd)


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 3))
    y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, -1, -1, 0])
    return X, y, knn_graph(X, random_state=0)


DVU_VARIANTS = {
    "eliminated": dict(centroids="eliminated"),
    "explicit": dict(centroids="explicit"),
    "explicit-unreduced": dict(centroids="explicit", reduce_face=False),
    "eliminated-unreduced-equality": dict(centroids="eliminated", reduce_face=False,
                                          distances="equality"),
    "quadratic": dict(centroids="eliminated", distances="quadratic"),
    "snr-ratio": dict(centroids="eliminated", snr=1.0, ratio=0.5),
    "trace-min": dict(centroids="eliminated", trace="min", trace_weight=1e-3),
    "basis": dict(centroids="eliminated", basis_rank=5),
}


@pytest.mark.parametrize("name", list(DVU_VARIANTS))
def test_dvu_summary_states_the_program_without_building_it(small, name):
    _, y, g = small
    f = dvu(g, y, **DVU_VARIANTS[name])
    text = f.summary()
    assert not f.is_built and not f.variables_built          # read from the description
    assert f.describe() == text
    assert text.startswith(f"dvu [{f.variant}]")
    assert "Vernaza, Lee & Taskar" in text and f"equations: {f.equations}" in text
    assert f"n = 12 points, m = {g.n_edges} edges, K = 3 classes, 10 labelled" in text
    assert "sigma2_icv(G) - sigma2_bcv(G)" in text
    for name_, par in f.parameters.items():
        assert f"{name_} (" in text and f"= {par.value:.6g}" in text
    # the stated cones are the ones cvxpy compiles for a conic solver
    stated = stated_cones(gram_cone_sizes(f))
    assert stated == compiled_cones(f.problem)
    assert "cvxpy        built" in f.summary()


def test_summary_reads_current_parameters_and_added_constraints(small):
    _, y, g = small
    f = dvu(g, y, centroids="eliminated")
    f.parameters["slack_weight"].value = 2.5
    G = f.expressions["gram"]
    h = f.with_constraints([G[0, 0] + G[1, 1] - 2 * G[0, 1] <= 0.1, G[2, 3] == 0,
                            cp.trace(G) <= 50, cp.norm(G[0, :]) <= 3])
    text = h.summary()
    assert not h.is_built
    assert "slack_weight (lambda) = 2.5" in text
    assert "added (with_constraints), 4 constraint(s):" in text
    assert "[0] G[0,0] - 2 G[0,1] + G[1,1] <= 0.1" in text
    assert "[1] G[2,3] = 0" in text
    assert "[2] <A, G> with 12 entries of the upper triangle <= 50" in text
    assert "[3] an inequality (1 row), not affine in G" in text
    assert "plus the cones cvxpy adds for" in text
    # the affine added constraints count exactly (the norm adds cones cvxpy chooses)
    k = f.with_constraints([G[0, 0] + G[1, 1] - 2 * G[0, 1] <= 0.1, G[2, 3] == 0])
    assert stated_cones(gram_cone_sizes(k)) == compiled_cones(k.problem)


@pytest.mark.parametrize("kw", [{}, {"reduce_face": False}, {"distances": "interval",
                                                              "slack_weight": 10.0}])
def test_mvu_summary(small, kw):
    _, _, g = small
    f = mvu(g, **kw)
    text = f.summary()
    assert not f.is_built
    assert text.startswith(f"mvu [{f.variant}]") and "Weinberger & Saul" in text
    assert "minimize     -tr G" in text and "equations: sec. 2" in text
    assert "K = " not in text
    assert stated_cones(gram_cone_sizes(f)) == compiled_cones(f.problem)


def test_summary_of_a_large_gram_sdp_builds_nothing():
    # 4,000 points: the dense problem would need ~9.6 GB (600 B per PSD entry); the
    # summary reads only the description
    rng = np.random.default_rng(1)
    X = rng.standard_normal((4000, 5))
    y = np.where(rng.random(4000) < 0.5, rng.integers(0, 3, 4000), -1)
    f = dvu(knn_graph(X, random_state=0), y, centroids="eliminated")
    text = f.summary()
    assert not f.is_built and not f.variables_built
    assert "PSD 3999 x 3999" in text and "n = 4000 points" in text


@pytest.mark.parametrize("criterion", ["ratio_trace", "trace_ratio"])
def test_eigen_relaxation_summary(criterion):
    X, y = load_iris(return_X_y=True)
    f = lda(X, y, criterion=criterion)
    text = f.summary()
    assert text.startswith(f"lda [{criterion}]") and "Fisher 1936" in text
    assert "target dimension d = 2" in text and "reduced coordinates: 4 of 4" in text
    assert "subject to" in text and "<B, " in text
    problem = f.problem
    assert stated_cones(cone_sizes(problem.constraints, problem.variables())) == \
        compiled_cones(problem)
    assert "PSD: 2 (4 x 4, 4 x 4)" in text


def test_fantope_summaries_state_their_math_and_parameters():
    A = np.diag([3.0, 1.0, 2.0])
    f = fantope_trace(A, 2, sense="max")
    text = f.summary()
    assert "maximize     <A, Y>  over Y in S^3" in text and "0 << Y << I,  tr Y = d" in text
    assert stated_cones(cone_sizes(f.problem.constraints, f.problem.variables())) == \
        compiled_cones(f.problem)
    g = fantope_subproblem(A, np.eye(3), 1)
    g.parameters["lam"].value = 0.5
    assert "parameters   lam = 0.5" in g.summary() and "Dinkelbach" in g.summary()

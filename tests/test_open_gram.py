"""Open Gram SDPs: ``with_objective``, the blank ``gram_sdp``, the objective reader, and the
added rows restated on the internal variable for the conic backends.

Backends are compared on small instances (n <= 40) at 1e-4 relative: the interior-point
values and the certified LOWRANK values agree far closer on these well-posed instances
(random long edges make the graphs rigid), 1e-4 leaves room for the certificate's
tolerance.
"""

from __future__ import annotations

import pickle
import warnings

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

from sdpembed import knn_graph, solve
from sdpembed.exceptions import InputError, UnsupportedProblemError
from sdpembed.formulations import dvu, gram_sdp, mvu
from sdpembed.formulations.gram import DiagPlusLowRank
from sdpembed.formulations.objective import gram_inner, gram_objective_matrix

RTOL = 1e-4


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


@pytest.fixture(scope="module")
def graph():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((24, 3))
    return knn_graph(X, n_neighbors=4, n_random=1, random_state=0)


def _solve(f, solver, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return solve(f, solver=solver, **kw)


# ----------------------------------------------------------------------------- the reader
def test_objective_reader_matches_the_dense_coefficient():
    """Every accepted form reads to the symmetric part of its coefficient matrix."""
    n = 7
    f = gram_sdp(n)
    G = f.expressions["gram"]
    rng = np.random.default_rng(1)
    C = rng.standard_normal((n, n))
    Y = rng.standard_normal((n, 2))
    L = sp.random(n, n, density=0.2, random_state=2, format="csr")
    U, s = rng.standard_normal((n, 3)), np.array([1.0, -2.0, 0.5])
    cases = [
        (cp.trace(C @ G), C),
        (cp.trace(G @ C), C),
        (cp.trace(cp.Constant(Y) @ cp.Constant(Y).T @ G), Y @ Y.T),
        (cp.trace(cp.Constant(Y) @ cp.Constant(U[:, :2].T) @ G), Y @ U[:, :2].T),
        (cp.trace(cp.Constant(L) @ G), L.toarray()),
        (gram_inner(G, U, s), (U * s) @ U.T),
        (cp.trace(G), np.eye(n)),
        (G[0, 1] - 3 * G[2, 2], np.array([[0, 1, 0], [0, 0, 0], [0, 0, -3]]) if False else None),
        (2 * cp.trace(G) - 0.5 * cp.sum(cp.multiply(C, G)), 2 * np.eye(n) - 0.5 * C),
        (-cp.trace(np.diag(np.arange(n, dtype=float)) @ G) / 4,
         -np.diag(np.arange(n, dtype=float)) / 4),
    ]
    E = np.zeros((n, n))
    E[0, 1], E[2, 2] = 1.0, -3.0
    cases[7] = (cases[7][0], E)
    for expr, M in cases:
        got = gram_objective_matrix([expr], G, n).dense()
        np.testing.assert_allclose(got, 0.5 * (M + M.T), atol=1e-12, err_msg=str(expr))
        # and the cvxpy value agrees on a symmetric G
        Gv = rng.standard_normal((n, n))
        Gv = Gv + Gv.T
        assert np.isclose(float(np.sum(got * Gv)), float(np.sum(M * Gv)))


def test_objective_reader_keeps_factors_and_sparsity():
    n = 50
    f = gram_sdp(n)
    G = f.expressions["gram"]
    Y = np.eye(3)[np.arange(n) % 3]
    M = gram_objective_matrix([cp.trace(cp.Constant(Y) @ cp.Constant(Y).T @ G)], G, n)
    assert M.U.shape == (n, 3) and M.sparse is None            # the factor, not n x n
    i = np.arange(n - 1)
    Lap = sp.csr_matrix((np.ones(n - 1), (i, i + 1)), shape=(n, n))
    Lap = sp.diags(np.asarray((Lap + Lap.T).sum(1)).ravel()) - (Lap + Lap.T)
    M = gram_objective_matrix([cp.trace(cp.Constant(Lap) @ G)], G, n)
    assert M.U.shape[1] == 0 and M.sparse.nnz == 2 * (n - 1)
    np.testing.assert_allclose(M.diag, Lap.diagonal())


def test_objective_reader_refusals():
    n = 6
    f = gram_sdp(n)
    G = f.expressions["gram"]
    C = np.random.default_rng(0).standard_normal((n, n))
    with pytest.raises(UnsupportedProblemError, match="dense limit"):
        gram_objective_matrix([cp.trace(C @ G)], G, n, dense_limit=5)
    with pytest.raises(UnsupportedProblemError, match="constant part"):
        gram_objective_matrix([cp.trace(G) + 1.0], G, n)
    with pytest.raises(UnsupportedProblemError, match="not affine"):
        gram_objective_matrix([cp.norm(G, "fro")], G, n)
    other = cp.Variable((n, n), symmetric=True)
    with pytest.raises(UnsupportedProblemError, match="variable"):
        gram_objective_matrix([cp.trace(other)], G, n)


def test_diag_plus_lowrank_sparse_part_is_consistent():
    rng = np.random.default_rng(3)
    n = 9
    S = sp.random(n, n, density=0.3, random_state=4, format="csr")
    S = S + S.T
    S = sp.csr_matrix(S - sp.diags(S.diagonal()))
    M = DiagPlusLowRank(rng.standard_normal(n), rng.standard_normal((n, 2)),
                        np.array([1.0, -1.0]), S)
    D = M.dense()
    X = rng.standard_normal((n, 3))
    Q = np.linalg.qr(rng.standard_normal((n, 4)))[0]
    np.testing.assert_allclose(M.matvec(X), D @ X, atol=1e-12)
    np.testing.assert_allclose(M.matvec(X[:, 0]), D @ X[:, 0], atol=1e-12)
    np.testing.assert_allclose(M.congruence(Q), Q.T @ D @ Q, atol=1e-12)
    assert np.isclose(M.inner(X @ X.T), np.sum(D * (X @ X.T)))
    assert np.isclose(M.inner_factor(X), np.sum(D * (X @ X.T)))
    np.testing.assert_allclose((M + M.scaled(-2.0)).dense(), -D, atol=1e-12)
    assert M.sparse_row_sum == pytest.approx(np.abs(S.toarray()).sum(1).max())


# ------------------------------------------------------------------------- with_objective
def test_with_objective_validation(graph):
    f = mvu(graph)
    G = f.expressions["gram"]
    with pytest.raises(InputError, match="scalar cvxpy expression"):
        f.with_objective(3.0)
    with pytest.raises(InputError, match="scalar"):
        f.with_objective(G[0])
    with pytest.raises(InputError, match="not convex"):
        f.with_objective(-cp.norm(G, "fro"))
    g = f.with_objective(cp.trace(G))
    assert f.user_objective == () and len(g.user_objective) == 1


def test_with_objective_every_backend_agrees(graph):
    """MVU plus a sparse Laplacian smoothness term and a low-rank label term (a penalty on
    the spread along the label directions: well posed for both backends, while
    maximising the alignment on top of MVU is degenerate enough that every backend
    stops inaccurate on this instance)."""
    f = mvu(graph)
    G = f.expressions["gram"]
    i, j = graph.edges.T
    n = graph.n_nodes
    A = sp.csr_matrix((np.ones(i.size), (i, j)), shape=(n, n))
    A = A + A.T
    Lap = sp.diags(np.asarray(A.sum(1)).ravel()) - A
    Y = cp.Constant(np.eye(3)[np.arange(n) % 3])
    g = f.with_objective(0.05 * cp.trace(cp.Constant(Lap) @ G)).with_objective(
        0.1 * cp.trace(Y @ Y.T @ G))
    ref = _solve(g, "CLARABEL")
    low = _solve(g, "LOWRANK")
    assert low.certified_gap is not None and low.certified_gap <= 1e-5
    assert _rel(low.objective, ref.objective) <= RTOL
    # the objective reported is the objective of the point returned
    Gv = g.value("gram")
    value = (-np.trace(Gv) + 0.05 * np.sum(Lap.toarray() * Gv)
             + 0.1 * np.sum(Y.value @ Y.value.T * Gv))
    assert value == pytest.approx(low.objective, rel=1e-8)
    # and differs from MVU's: the terms are honoured, not dropped
    assert _rel(_solve(f, "CLARABEL").objective, ref.objective) > 1e-3


def test_with_objective_on_explicit_centroid_dvu(graph):
    y = np.arange(graph.n_nodes) % 3
    y[::4] = -1
    f = dvu(graph, y, centroids="explicit")
    G = f.expressions["gram"]
    g = f.with_objective(1e-2 * cp.trace(G) + 0.3 * (G[0, 0] + G[1, 1] - 2 * G[0, 1]))
    ref, low = _solve(g, "CLARABEL"), _solve(g, "LOWRANK")
    assert _rel(low.objective, ref.objective) <= RTOL
    assert _rel(_solve(f, "CLARABEL").objective, ref.objective) > 1e-6


def test_lowrank_refuses_a_nonlinear_objective(graph):
    f = mvu(graph)
    G = f.expressions["gram"]
    g = f.with_objective(cp.norm(G, "fro"))
    with pytest.raises(UnsupportedProblemError, match="objective term 0"):
        solve(g, solver="LOWRANK")


def test_with_objective_pickles(graph):
    f = mvu(graph)
    G = f.expressions["gram"]
    g = f.with_objective(cp.trace(G[:3, :3]))
    h = pickle.loads(pickle.dumps(g))
    assert len(h.user_objective) == 1


# ---------------------------------------------------------------------------- gram_sdp
@pytest.mark.parametrize("bad", [1, 2.5, True, "3"])
def test_gram_sdp_validates_n(bad):
    with pytest.raises(InputError, match=r"'n' parameter of gram_sdp must be an int in the "
                       r"range \[2, inf\)"):
        gram_sdp(bad)


def test_gram_sdp_validates_reduce_face():
    with pytest.raises(InputError, match="reduce_face"):
        gram_sdp(5, reduce_face="yes")


def test_gram_sdp_blank_is_mvu(graph):
    """The blank SDP completed into MVU has MVU's optimum on every backend."""
    i, j = graph.edges.T
    target = graph.sqdist / graph.sqdist.mean()
    ref = _solve(mvu(graph), "CLARABEL").objective
    for reduce_face in (True, False):
        f = gram_sdp(graph.n_nodes, reduce_face=reduce_face)
        G = f.expressions["gram"]
        g = f.with_constraints([G[i, i] + G[j, j] - 2 * G[i, j] == target]).with_objective(
            -cp.trace(G))
        for solver in ("CLARABEL", "LOWRANK"):
            rep = _solve(g, solver)
            assert _rel(rep.objective, ref) <= RTOL, (reduce_face, solver, rep.objective, ref)


def test_gram_sdp_lowrank_needs_distance_rows(graph):
    """Rows <= on squared distances (and no equality ones) are read as shrink-only edges and
    solved to CLARABEL's optimum; a blank SDP without distance rows is refused."""
    f = gram_sdp(graph.n_nodes)
    G = f.expressions["gram"]
    i, j = graph.edges.T
    g = f.with_constraints([G[i, i] + G[j, j] - 2 * G[i, j] <= 1.0]).with_objective(
        -cp.trace(G))
    low = _solve(g, "LOWRANK")
    assert low.status == "optimal"
    assert _rel(low.objective, _solve(g, "CLARABEL").objective) <= RTOL
    with pytest.raises(UnsupportedProblemError, match="distance"):
        solve(f, solver="LOWRANK")


@pytest.mark.slow
def test_gram_sdp_lowrank_keeps_other_rows(graph):
    """Distance equalities become edges; a trace bound and a must-link row stay rows."""
    i, j = graph.edges.T
    target = graph.sqdist / graph.sqdist.mean()
    f = gram_sdp(graph.n_nodes)
    G = f.expressions["gram"]
    base = f.with_constraints([G[i, i] + G[j, j] - 2 * G[i, j] == target]).with_objective(
        -cp.trace(G))
    free = _solve(base, "CLARABEL").objective
    g = base.with_constraints([cp.trace(G) <= 0.99 * -free, G[0, 1] >= 0.0])
    ref, low = _solve(g, "CLARABEL"), _solve(g, "LOWRANK")
    assert _rel(low.objective, ref.objective) <= RTOL
    assert low.objective == pytest.approx(0.99 * free, rel=1e-4)


# ------------------------------------------------------- added rows on the internal variable
def test_restated_rows_are_the_written_problem():
    """Same optimum and the same multipliers on the user's constraint objects as the
    problem with the constraints left as written (a tiny instance, cheap to compile)."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((12, 2))
    graph = knn_graph(X, n_neighbors=3, n_random=1, random_state=0)
    f = dvu(graph, np.r_[np.zeros(6, int), np.ones(6, int)], centroids="eliminated",
            trace="min", trace_weight=1e-2)
    G = f.expressions["gram"]
    cons = [G[0, 0] + G[5, 5] - 2 * G[0, 5] <= 0.05,
            G[1, 1] + G[7, 7] - 2 * G[1, 7] >= 3.0,
            cp.NonNeg(G[2, 3] - 0.5),
            cp.hstack([G[4, 4], G[6, 6]]) <= 1.5,
            G[8, 9] == 0.1,
            cp.NonPos(G[2, 2] - 0.3)]
    g = f.with_constraints(cons)
    problem = g.problem
    assert len(problem.constraints) < len(f.problem.constraints) + len(cons)   # stacked
    rep = _solve(g, "CLARABEL")
    duals = [np.array(c.dual_value, dtype=float) for c in cons]
    written = cp.Problem(f.problem.objective, list(f.problem.constraints) + cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        written.solve(solver=cp.CLARABEL)
    assert _rel(rep.objective, written.value) <= 1e-6
    for c, d in zip(cons, duals):
        np.testing.assert_allclose(d, c.dual_value, rtol=1e-3, atol=1e-5)
    assert all(np.any(np.abs(d) > 1e-3) for d in duals)   # every kind is active here


def test_rows_with_parameters_follow_the_parameter(graph):
    f = mvu(graph)
    G = f.expressions["gram"]
    top = -_solve(f, "CLARABEL").objective           # the largest trace
    t = cp.Parameter(nonneg=True, name="t", value=0.99 * top)
    g = f.with_constraints([cp.trace(G) <= t])
    v1 = _solve(g, "CLARABEL").objective
    t.value = 0.98 * top
    v2 = _solve(g, "CLARABEL").objective
    assert v1 == pytest.approx(-0.99 * top, rel=1e-5)
    assert v2 == pytest.approx(-0.98 * top, rel=1e-5)


def test_summary_names_the_added_terms():
    f = gram_sdp(10)
    G = f.expressions["gram"]
    Y = cp.Constant(np.ones((10, 2)))
    g = f.with_objective(-cp.trace(G)).with_objective(cp.trace(Y @ Y.T @ G) + G[0, 1])
    g = g.with_objective(cp.norm(G, "fro"))
    text = g.summary()
    assert "minimize     f1(G) + f2(G) + f3(G)" in text
    assert "M1: diagonal" in text
    assert "M2: sparse (2 off-diagonal entries) + rank 2" in text
    assert "f3(G): not linear in G" in text
    assert "minimize     0" in f.summary()


def test_fast_scalar_reading_equals_the_affine_reader():
    """The scalar fast path of the restatement reads what the affine reader reads."""
    from sdpembed.formulations.compiled import _entries
    from sdpembed.formulations.constraints import _linear

    f = gram_sdp(9)
    G = f.expressions["gram"]
    for expr in [G[1, 1] + G[4, 4] - 2 * G[1, 4] - 0.5, -G[2, 3] / 4 + 1.5,
                 3 * (G[0, 0] - G[8, 8]), G[5, 6]]:
        cols, vals, const = _entries(expr, G, 9)
        lin = _linear(expr, G, 81, 9, {})
        dense = np.zeros(81)
        np.add.at(dense, cols, vals)
        np.testing.assert_allclose(dense, lin.R.toarray().ravel())
        assert const == pytest.approx(float(lin.offset(1)[0]))
    assert _entries(cp.trace(G), G, 9) is None


def test_restated_operator_is_exact_on_a_basis():
    """<A_k, V Y V^T> = row k of the operator times vec(Y), for a random symmetric Y."""
    from sdpembed.formulations.compiled import GramLift

    n = 11
    f = gram_sdp(n)
    G = f.expressions["gram"]
    V = f.basis()
    rng = np.random.default_rng(7)
    R = sp.random(5, n * n, density=0.05, random_state=8, format="csr")
    lift = GramLift(G, n, n, V, f.variables["Y"])
    M = lift.operator(R)
    Y = rng.standard_normal((n - 1, n - 1))
    Y = Y + Y.T
    Gv = V @ Y @ V.T
    np.testing.assert_allclose(M @ Y.ravel(order="F"), R @ Gv.ravel(order="F"), atol=1e-12)


def test_built_formulation_with_rows_pickles_and_solves(graph):
    f = mvu(graph)
    G = f.expressions["gram"]
    g = f.with_constraints([G[0, 0] + G[1, 1] - 2 * G[0, 1] <= 0.2])
    assert g.problem is not None                               # built
    h = pickle.loads(pickle.dumps(g))
    rep = _solve(h, "CLARABEL")
    assert rep.objective == pytest.approx(_solve(g, "CLARABEL").objective, rel=1e-6)
    assert h.user_constraints[0].dual_value is not None


def test_objective_reader_refuses_nan_coefficients():
    f = gram_sdp(5)
    G = f.expressions["gram"]
    C = np.eye(5)
    C[0, 1] = np.nan
    with pytest.raises(UnsupportedProblemError, match="NaN"):
        gram_objective_matrix([cp.trace(C @ G)], G, 5)

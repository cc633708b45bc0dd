"""Reading affine constraints on the Gram matrix (sdpembed.formulations.constraints).

Every expression is checked against cvxpy's own canonicalisation of the same
constraint (``canonInterface.get_problem_matrix``), symmetrised, to 1e-12: both
are exact sparse linear algebra on the same numbers.
"""

import cvxpy as cp
import cvxpy.lin_ops.lin_op as lo
import numpy as np
import pytest
from cvxpy.atoms.affine.wraps import symmetric_wrap
from cvxpy.cvxcore.python import canonInterface

from sdpembed.exceptions import InputError, UnsupportedProblemError
from sdpembed.formulations.constraints import affine_gram_constraints

N_ = 6


def _reference(constraint, G, n):
    """(A symmetrised dense rows, b, equality) from cvxpy's canonical form."""
    from cvxpy.constraints import Equality, Inequality, NonNeg, NonPos, Zero

    if isinstance(constraint, Inequality):
        expr, sign, eq = constraint.expr, 1.0, False
    elif isinstance(constraint, NonNeg):
        expr, sign, eq = constraint.args[0], -1.0, False
    elif isinstance(constraint, NonPos):
        expr, sign, eq = constraint.args[0], 1.0, False
    elif isinstance(constraint, Equality):
        expr, sign, eq = constraint.expr, 1.0, True
    else:
        assert isinstance(constraint, Zero)
        expr, sign, eq = constraint.args[0], 1.0, True
    T = canonInterface.get_problem_matrix([expr.canonical_form[0]], n * n, {G.id: 0},
                                          {lo.CONSTANT_ID: 1}, {lo.CONSTANT_ID: 0}, expr.size)
    A, b = canonInterface.get_matrix_from_tensor(T, np.array([1.0]), n * n, with_offset=True)
    A = sign * A.toarray()
    b = sign * np.atleast_1d(b)
    rows = []
    for a in A:
        M = a.reshape(n, n, order="F")
        rows.append(0.5 * (M + M.T))
    return np.array(rows), -b, eq


def _dense(con, k, n):
    M = np.zeros((n, n))
    sel = con.row == k
    np.add.at(M, (con.i[sel], con.j[sel]), con.value[sel])
    return M


def _cases(G, p):
    rng = np.random.default_rng(0)
    i, j = np.array([0, 1, 4]), np.array([2, 3, 5])
    C = rng.standard_normal((N_, N_))
    return [
        G[i, i] + G[j, j] - 2 * G[i, j] <= np.array([1.0, 2.0, 3.0]),   # must-link
        G[i, i] + G[j, j] - 2 * G[i, j] >= 0.5,                          # cannot-link
        cp.trace(G) <= 5,
        G[3, 4] == 0.1,
        cp.sum(G[0, :]) >= 1,
        cp.diag(G) >= 0,
        2 * G[1:3, 1:3] == np.eye(2),
        np.ones(N_) @ G @ np.ones(N_) == 0,
        cp.sum(cp.multiply(C, G)) <= 3,
        G.T[0, 1] / 2 <= 1,
        cp.sum(G, axis=0) <= p,
        cp.sum(G, axis=1) >= -p,
        C[:2] @ G[:, 1] <= 1,
        G[:, 2] @ C[:, :3] <= 0,
        cp.hstack([G[0, 1], G[2, 3]]) <= 1,
        cp.vstack([G[0, :2], G[1, :2]]) <= 1,
        cp.reshape(G[:2, :3], (3, 2), order="C") <= 1,
        cp.reshape(G[:2, :3], (3, 2), order="F") == 0,
        cp.NonNeg(G[0, 0] - 1),
        cp.NonPos(G[1, 1] - 4),
        cp.Zero(G[2, 2] - G[3, 3]),
        -(G[0, 0] + G[5, 5]) <= -1,
        cp.trace(C @ G) == 1,
        cp.diag(cp.diag(G))[1, 1] <= 2,
        cp.sum(G) / 4 == 0,
    ]


@pytest.mark.parametrize("k", range(25))
def test_matches_cvxpy_canonical_form(k):
    """A parameter is read at its value (the reference gets the value as a constant)."""
    G = cp.Variable((N_, N_), name="gram")
    con = _cases(G, cp.Parameter(nonneg=True, value=2.5))[k]
    got = affine_gram_constraints([con], G, N_)
    A_ref, b_ref, eq = _reference(_cases(G, 2.5)[k], G, N_)
    assert got.p == A_ref.shape[0]
    np.testing.assert_allclose(got.rhs, b_ref, atol=1e-12)
    assert np.all(got.equality == eq)
    for r in range(got.p):
        np.testing.assert_allclose(_dense(got, r, N_), A_ref[r], atol=1e-12)


def test_values_on_a_factor_and_on_a_reduced_expression():
    """The gram expression may be V Y V^T: the rows still evaluate <A_k, G> - b_k exactly
    as cvxpy evaluates the constraint expression."""
    rng = np.random.default_rng(1)
    n = 7
    V = np.linalg.qr(rng.standard_normal((n, n - 1)))[0]
    Y = cp.Variable((n - 1, n - 1), PSD=True)
    gram = symmetric_wrap(V @ Y @ V.T)   # as the builders write it (see _build_cvxpy)
    cons = [cp.trace(gram) <= 5, gram[0, 0] + gram[3, 3] - 2 * gram[0, 3] >= 0.2,
            gram[1:3, 4] == np.array([0.1, -0.2])]
    got = affine_gram_constraints(cons, gram, n)
    F = rng.standard_normal((n, 3))
    Gv = F @ F.T
    Y.value = V.T @ Gv @ V
    Gp = V @ Y.value @ V.T
    expected = np.concatenate([np.atleast_1d(c.expr.value) for c in cons])
    np.testing.assert_allclose(got.values_of(Gp) - got.rhs,
                               np.array([expected[0], expected[1], *expected[2:]]),
                               atol=1e-10)
    np.testing.assert_allclose(got.values_of_factor(V @ (V.T @ F)), got.values_of(Gp),
                               atol=1e-10)


def test_refusals_name_the_constraint():
    G = cp.Variable((N_, N_), name="gram")
    eps = cp.Variable(3, name="eps")
    Y = cp.Variable((N_, N_), name="Y")
    for con, what in [(cp.norm(G[0, :]) <= 1, "not affine"),
                      (G[0, 1] + eps[0] <= 1, "'eps'"),
                      (Y[0, 0] <= 1, "'Y'"),
                      (G >> 0, "PSD"),
                      (cp.cumsum(G[0, :]) <= 1, "cumsum"),
                      (G[0, 0] <= cp.Parameter(name="u"), "no value")]:
        with pytest.raises(UnsupportedProblemError, match=what) as info:
            affine_gram_constraints([G[0, 0] >= 0, con], G, N_)
        assert "constraint 1" in str(info.value)
        assert "CLARABEL" in str(info.value)
    with pytest.raises(InputError, match="does not depend"):
        affine_gram_constraints([cp.hstack([G[0, 0], cp.Constant(1.0)]) <= 2], G, N_)


def test_large_n_selection_is_sparse():
    """400 pairwise constraints at n = 3,000 touch 1,600 entries: no n^2 operator."""
    import tracemalloc

    n = 3000
    G = cp.Variable((n, n), name="gram")
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, n, 400), rng.integers(0, n, 400)
    cons = [G[i, i] + G[j, j] - 2 * G[i, j] <= 1.0, cp.trace(G) <= 5]
    tracemalloc.start()
    got = affine_gram_constraints(cons, G, n)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert got.p == 401
    assert got.value.size <= 4 * 400 + n
    assert peak < 50e6  # bytes: far below one n^2 float array (72 MB)


def test_operator_sums_rows_that_share_entries():
    # sum_k z_k A_k from the cached pattern equals the matrix summed entry by entry, also
    # where several rows touch the same entries (a pair bounded twice, a shared point)
    n = 6
    G = cp.Variable((n, n), symmetric=True)
    cons = [G[0, 0] + G[1, 1] - 2 * G[0, 1] <= 1.0, G[0, 0] + G[1, 1] - 2 * G[0, 1] >= 0.1,
            G[1, 1] + G[4, 4] - 2 * G[1, 4] <= 2.0, cp.trace(G) == 3.0, G[2, 5] >= -1.0]
    K = affine_gram_constraints(cons, G, n)
    rng = np.random.default_rng(0)
    for z in (rng.normal(size=K.p), np.zeros(K.p), np.eye(K.p)[1]):
        dense = np.zeros((n, n))
        np.add.at(dense, (K.i, K.j), K.value * z[K.row])
        M = K.operator(z)
        assert M.shape == (n, n) and M.has_canonical_format
        np.testing.assert_allclose(M.toarray(), dense, rtol=0, atol=1e-15)
        # and it is the operator whose inner product with G gives the rows' values
        V = rng.normal(size=(n, 3))
        assert np.sum(M.toarray() * (V @ V.T)) == pytest.approx(z @ K.values_of_factor(V))

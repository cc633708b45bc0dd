"""The explicit matrices of LOWRANK's repairs (sdpembed.lowrank.repair).

``refine_multipliers`` and ``restore_feasibility`` solve least-squares problems whose maps
were written matrix-free; they now build the matrix (dense when small, sparse otherwise) so
that each LSMR or trust-region step is one BLAS or sparse product. Reference: the
matrix-free operators, applied to random vectors. Both compute the same sums of products
in another order, so they agree to rounding, about 1e-15 times the entries' size; 1e-12
relative leaves room for the sums' length.
"""

import cvxpy as cp
import numpy as np
import pytest

import sdpembed.lowrank as lowrank
from sdpembed.formulations import dvu
from sdpembed.formulations.dvu import dvu_problem
from sdpembed.formulations.gram import laplacian_basis
from sdpembed.formulations.mvu import mvu_problem
from sdpembed.lowrank import repair

REL = 1e-12


@pytest.fixture(scope="module")
def data(partial_digits):
    return partial_digits(40, n_class=3)[:3]


def _problems(data):
    X, y, graph = data
    f = dvu(graph, y, centroids="eliminated")
    G = f.expressions["gram"]
    added = f.with_constraints([G[0, 0] + G[1, 1] - 2 * G[0, 1] <= 0.2, G[2, 3] == 0.1,
                                cp.trace(G) <= 50]).current_problem()
    return {"dvu": dvu_problem(graph, y), "dvu snr": dvu_problem(graph, y, snr=3.0),
            "dvu added rows": added, "mvu": mvu_problem(graph)}


CASES = ["dvu", "dvu snr", "dvu added rows", "mvu", "dvu on a basis"]


def _setup(data, case):
    """(space, W, Z, fe, HW, rows): a random centred factor, a random half of the edges."""
    problems = _problems(data)
    gp = problems["dvu" if case == "dvu on a basis" else case]
    Q = laplacian_basis(gp.edges, gp.n, 8) if case == "dvu on a basis" else None
    space = lowrank.FactorSpace(gp, Q)
    rng = np.random.default_rng(3)
    W = space.project(rng.standard_normal((space.dim, 4)))
    Z = space.diffs(W)
    fe = np.flatnonzero(rng.random(Z.shape[0]) < 0.5)
    HW = space.project(space.apply_H(W)) if space.H is not None else None
    rows = np.arange(space.K.p) if space.K is not None else None
    return space, W, Z, fe, HW, rows


def _close(a, b):
    a, b = np.ravel(a), np.ravel(b)
    assert np.linalg.norm(a - b) <= REL * max(np.linalg.norm(b), 1.0)


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_fit_matrix_is_the_matrix_free_map(data, case, dense, monkeypatch):
    if not dense:
        monkeypatch.setattr(repair, "_FIT_DENSE", 0)
    space, W, Z, fe, HW, rows = _setup(data, case)
    A = repair._explicit_fit_matrix(space, W, Z, fe, HW, rows)
    if not dense and case == "dvu on a basis":
        assert A is None        # a dense incidence block too large stays matrix-free
        return
    assert isinstance(A, np.ndarray) == dense
    op = repair._fit_operator(space, W, Z, fe, HW, rows)
    assert A.shape == op.shape
    rng = np.random.default_rng(5)
    x, r = rng.standard_normal(op.shape[1]), rng.standard_normal(op.shape[0])
    _close(A @ x, op.matvec(x))
    _close(A.T @ r, op.rmatvec(r))


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_restoration_jacobian_is_the_residual_derivative(data, case, dense, monkeypatch):
    """Against the residual's derivative 2<E_e V, E_e U> and 2<A_k V, U> on centred
    steps U, and against a central difference of the residual itself."""
    if not dense:
        monkeypatch.setattr(repair, "_FIT_DENSE", 0)
    space, W, Z, _, _, rows = _setup(data, case)
    J = repair._explicit_jacobian(space, space.E, Z, W, rows)
    if not dense and case == "dvu on a basis":
        assert J is None
        return
    assert isinstance(J, np.ndarray) == dense
    U = space.project(np.random.default_rng(7).standard_normal(W.shape))
    want = 2.0 * np.einsum("ij,ij->i", Z, space.diffs(U))
    if rows is not None:
        want = np.r_[want, 2.0 * space.K_bilinear(W, U)[rows]]
    _close(J @ np.ravel(U), want)

    def residual(V):
        Zv = space.diffs(V)
        c = np.einsum("ij,ij->i", Zv, Zv)
        return c if rows is None else np.r_[c, space.K_values(V)[rows]]

    h = 1e-6   # the residual is quadratic: the central difference is exact up to rounding
    diff = (residual(W + h * U) - residual(W - h * U)) / (2 * h)
    assert np.linalg.norm(J @ np.ravel(U) - diff) <= 1e-7 * np.linalg.norm(diff)


@pytest.mark.parametrize("case", ["dvu", "dvu added rows", "mvu"])
def test_refined_multipliers_are_the_same_with_either_map(data, case, monkeypatch):
    """End to end: refine_multipliers with the explicit matrix and matrix-free returns the
    same multipliers (both solve one bounded least-squares problem to tol 1e-12; their
    iterates differ in rounding only, 1e-8 of the multipliers' size is far above it and far
    below anything the certificate can see). At the augmented Lagrangian's low-rank point,
    where the loop fits them: the rows barrier (``lowrank.rows_barrier``, which certifies
    the small "dvu added rows" case by itself) returns an interior point of rank about n,
    where the fit has no unique solution and is not used."""
    from sdpembed.lowrank import solve as lowrank_solve_module

    monkeypatch.setattr(lowrank_solve_module, "rows_barrier_fits", lambda space, pen: False)
    gp = _problems(data)[case]
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(tol=1e-6))
    space, pen = lowrank.FactorSpace(gp, None), lowrank.DistancePenalty(gp)
    W = res.factor - res.factor.mean(axis=0)
    y1, nu1 = lowrank.refine_multipliers(space, pen, W, res.y, res.nu)
    monkeypatch.setattr(repair, "_explicit_fit_matrix", lambda *a: None)
    y2, nu2 = lowrank.refine_multipliers(space, pen, W, res.y, res.nu)
    scale = max(np.abs(y2).max(), 1.0)
    assert np.abs(y1 - y2).max() <= 1e-8 * scale
    assert np.abs(np.asarray(nu1) - np.asarray(nu2)).max(initial=0.0) <= 1e-8 * scale


def test_least_norm_is_the_minimum_norm_solution(monkeypatch):
    """``least_norm`` against LAPACK's least-norm least squares on a consistent,
    underdetermined sparse system with one dependent row: by its first LSMR run (its stop at
    ``atol = btol = 1e-6`` bounds the residual; the solution's error is that times the
    system's condition number: 1e-4 relative) and, without that run, by the normal
    equations (the ridge of 1e-12 moves the solution by about 1e-12 relative; 1e-8 leaves
    room for the squared condition number); ``None`` above its row limit."""
    import scipy.sparse as sp

    from sdpembed.lowrank import ipm_common
    rng = np.random.default_rng(5)
    J = sp.random(60, 200, density=0.05, random_state=rng, format="csr")
    J = sp.vstack([J, J[:1] + J[1:2]], format="csr")       # a dependent row
    b = J @ rng.standard_normal(200)                        # consistent
    ref = np.linalg.lstsq(J.toarray(), b, rcond=None)[0]
    x = ipm_common.least_norm(J, b)
    assert np.linalg.norm(x - ref) <= 1e-4 * np.linalg.norm(ref)
    monkeypatch.setattr(ipm_common, "_LSMR_FIRST", 0)
    x = ipm_common.least_norm(J, b)
    assert np.linalg.norm(x - ref) <= 1e-8 * np.linalg.norm(ref)
    monkeypatch.setattr(ipm_common, "_NORMAL_ROWS", 10)
    assert ipm_common.least_norm(J, b) is None


def test_restoration_by_normal_equations_matches_lsmr(data, monkeypatch):
    """``restore_feasibility`` with the sparse Jacobian: its steps by the normal equations
    (``least_norm`` without its first LSMR run) and by LSMR (``_NORMAL_ROWS = 0``) reach the
    same point. Reference: a
    factor moved 1e-3 off a known feasible one (the targets are its distances); both
    restorations end feasible to 1e-10 and at the same Gram matrix up to LSMR's 1e-6
    tolerance on each step."""
    from sdpembed.lowrank import ipm_common
    monkeypatch.setattr(repair, "_FIT_DENSE", 0)
    space = lowrank.FactorSpace(_problems(data)["mvu"])
    pen = lowrank.DistancePenalty(space.gp)
    rng = np.random.default_rng(7)
    W0 = space.project(rng.standard_normal((space.dim, 8)))
    Z0 = space.diffs(W0)
    pen.t = np.einsum("ij,ij->i", Z0, Z0)
    W = W0 + 1e-3 * space.project(rng.standard_normal(W0.shape))
    monkeypatch.setattr(ipm_common, "_LSMR_FIRST", 0)
    W_n, r_n = repair.restore_feasibility(space, pen, W, tol=1e-12)
    monkeypatch.setattr(ipm_common, "_NORMAL_ROWS", 0)
    W_l, r_l = repair.restore_feasibility(space, pen, W, tol=1e-12)
    assert r_n <= 1e-10 and r_l <= 1e-10
    G_n, G_l = W_n @ W_n.T, W_l @ W_l.T
    assert np.linalg.norm(G_n - G_l) <= 1e-6 * np.linalg.norm(G_l)

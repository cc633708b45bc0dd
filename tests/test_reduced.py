"""The reduced-basis interior-point method (sdpembed.lowrank.reduced_ipm) behind solver="LOWRANK".

Reference: CLARABEL on the same reduced cvxpy formulation (interior point,
about 1e-8 relative accuracy on these instances). Tolerances:

* objectives agree to ``AGREE = 1e-6`` relative: both are interior-point
  solutions of the same problem; measured differences are below 1e-7 (the
  IPM stops at a relative gap near 1e-8 to 1e-7 on these degenerate problems,
  CLARABEL at about 1e-8);
* the certified lower bound may exceed CLARABEL's optimum only by CLARABEL's
  own inaccuracy, ``BOUND_SLACK = 1e-6`` relative (a valid bound never
  exceeds the true optimum);
* the certified gap is at most ``TOL = 1e-6``, the tolerance asked for.
"""

from __future__ import annotations

import numpy as np
import pytest

from sdpembed.exceptions import InputError
from sdpembed.formulations.dvu import dvu
from sdpembed.formulations.mvu import mvu
from sdpembed.graphs import knn_graph
from sdpembed.lowrank import LowRankOptions
from sdpembed.lowrank.backend import _solve_backend
from sdpembed.lowrank.ipm_common import _skron, factor_from_gram, smat, svec, svec_outer_rows
from sdpembed.solvers import solve

TOL = 1e-6
AGREE = 1e-6
BOUND_SLACK = 1e-6


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    rng = np.random.default_rng(1)
    idx = np.flatnonzero(d.target < 4)[rng.permutation(int((d.target < 4).sum()))[:70]]
    X, y = d.data[idx].astype(float), d.target[idx]
    y_obs = y.copy()
    y_obs[rng.random(idx.size) > 0.8] = -1
    graph = knn_graph(X, n_neighbors=2, n_random=1, random_state=0)
    basis_graph = knn_graph(X, n_neighbors=6, n_random=0)
    return y_obs, graph, basis_graph


def _builder(case, digits, r):
    y_obs, graph, bg = digits
    if case == "dvu":
        return lambda: dvu(graph, y_obs, centroids="eliminated", basis_rank=r, basis_graph=bg)
    if case == "dvu_snr":
        return lambda: dvu(graph, y_obs, centroids="eliminated", basis_rank=r, basis_graph=bg,
                           snr=4.0)
    return lambda: mvu(graph, distances="interval", slack_weight=100.0, basis_rank=r,
                       basis_graph=bg)


@pytest.mark.parametrize("r", [5, 12])
@pytest.mark.parametrize("case", ["dvu", "dvu_snr", "mvu"])
def test_ipm_matches_clarabel_and_certifies(digits, case, r):
    build = _builder(case, digits, r)
    ref = solve(build(), solver="CLARABEL")
    rep = solve(build(), solver="LOWRANK", tol=TOL, reduced_solver="ipm")
    assert rep.status == "optimal"
    assert rep.extra["reduced_solver"]["solver"] == "ipm"
    assert abs(rep.objective - ref.objective) <= AGREE * abs(ref.objective)
    assert rep.extra["lower_bound"] <= ref.objective + BOUND_SLACK * abs(ref.objective)
    assert rep.certified_gap <= TOL


def test_auto_uses_the_ipm_on_interval_and_alm_otherwise(digits):
    rep = solve(_builder("dvu", digits, 5)(), solver="LOWRANK", tol=TOL)
    assert rep.extra["reduced_solver"]["solver"] == "ipm"
    y_obs, graph, bg = digits
    f = mvu(graph, distances="quadratic", slack_weight=100.0, basis_rank=5, basis_graph=bg)
    # the backend's own report (before solve()'s rule on results): which solver ran
    rep = _solve_backend(f, tol=1e-4)
    assert rep.extra["reduced_solver"] is None          # the augmented Lagrangian ran
    assert rep.bound is not None and rep.bound <= rep.objective


# the multipliers of three edges nearly orthogonal to the basis grow to 8e16 (no attained
# dual optimum there); the certificate raises them to -Y (DistancePenalty.certifiable), so
# the sum's rounding allowance stays small (docs/tuning.md, "Quadratic MVU on a basis")
def test_quadratic_mvu_on_a_basis_certifies(digits):
    y_obs, graph, bg = digits
    f = mvu(graph, distances="quadratic", slack_weight=100.0, basis_rank=5, basis_graph=bg)
    rep = solve(f, solver="LOWRANK", tol=1e-4)
    assert rep.status == "optimal" and rep.certified_gap <= 1e-4
    assert rep.bound <= rep.objective


def test_alm_still_works_on_a_basis(digits):
    build = _builder("dvu", digits, 5)
    ref = solve(build(), solver="CLARABEL")
    rep = solve(build(), solver="LOWRANK", tol=1e-5, reduced_solver="alm")
    assert rep.extra["reduced_solver"] is None
    # interval_envelope="auto" on a basis: the Huber envelope (a smooth basis cannot hold
    # the local distances, so the kink's equality problem is infeasible there)
    assert rep.extra["interval_envelope"] == "huber"
    assert rep.status == "optimal"
    # the augmented Lagrangian's own accuracy: certified gap 1e-5
    assert abs(rep.objective - ref.objective) <= 1e-4 * abs(ref.objective)


def test_reduced_solver_option_is_validated(digits):
    with pytest.raises(InputError, match="reduced_solver"):
        LowRankOptions(reduced_solver="newton")
    with pytest.raises(InputError, match="reduced_solver"):
        solve(_builder("dvu", digits, 5)(), solver="LOWRANK", reduced_solver="cg")
    y_obs, graph, bg = digits
    f = mvu(graph, distances="equality", basis_rank=5, basis_graph=bg)
    with pytest.raises(InputError, match="interval"):
        solve(f, solver="LOWRANK", reduced_solver="ipm")


def test_svec_algebra():
    rng = np.random.default_rng(0)
    r = 6
    X = rng.standard_normal((r, r))
    X = X + X.T
    P = rng.standard_normal((r, r))
    P = P @ P.T
    Yq = rng.standard_normal((r, r))
    Yq = Yq + Yq.T
    assert np.allclose(smat(svec(X), r), X)
    assert np.isclose(svec(X) @ svec(Yq), np.sum(X * Yq))              # isometry
    assert np.allclose(_skron(P) @ svec(X), svec(P @ X @ P))
    E = rng.standard_normal((4, r))
    assert np.allclose(svec_outer_rows(E) @ svec(X), np.einsum("ei,ij,ej->e", E, X, E))
    F = factor_from_gram(P)
    assert np.allclose(F @ F.T, P)


def test_rank_one_lmi_lp_matches_clarabel():
    """The dual-repair LP with one rank-one LMI against CLARABEL on a well-scaled copy.

    Instance: A0 diagonal with a third of its entries negative (size 1e-6, as on the
    bottom eigenspace of a near-optimal dual slack matrix), costs in [0.5, 2], boxes
    [0, hi] with hi up to 1e-5. CLARABEL solves the same problem with the LMI scaled by
    1e6 and d by 1e5 (its absolute tolerances need data of unit size). Both solutions
    must be feasible (the LMI to rounding, the box exactly) and their costs agree to
    1e-4 relative (CLARABEL reports "inaccurate" at 1e-8 on the largest instance).
    """
    import cvxpy as cp

    from sdpembed.lowrank.lmi_lp import rank_one_lmi_lp

    rng = np.random.default_rng(1)
    for K, m in ((5, 20), (20, 100), (30, 200)):
        lam = np.r_[-rng.uniform(1e-7, 1e-6, K // 3), rng.uniform(0.0, 1e-6, K - K // 3)]
        A0 = np.diag(lam)
        B = rng.standard_normal((m, K)) * rng.uniform(0.01, 1.0, (m, 1))
        c = rng.uniform(0.5, 2.0, m)
        lo, hi = np.zeros(m), rng.uniform(0.0, 1e-5, m)
        res = rank_one_lmi_lp(A0, B, c, lo, hi)
        assert res.status == "optimal"
        assert np.all(res.d >= lo) and np.all(res.d <= hi)
        assert np.linalg.eigvalsh(A0 + (B.T * res.d) @ B)[0] >= -1e-12 * np.abs(lam).max()
        d = cp.Variable(m)
        M = 1e6 * A0 + 1e1 * (B.T @ cp.diag(d) @ B)
        ref = cp.Problem(cp.Minimize(c @ d), [0.5 * (M + M.T) >> 0, d >= 0, d <= 1e5 * hi])
        ref.solve(solver="CLARABEL")
        assert res.cost == pytest.approx(1e-5 * ref.value, rel=1e-4)


@pytest.mark.parametrize("where", ["newton system", "step to the boundary"])
def test_rank_one_lmi_lp_stops_inside_the_box_when_newton_fails(monkeypatch, where):
    """A factorisation that fails in the third iteration (both happened in 2,500-point
    DVU lifts: the Newton system, and the Cholesky factor of X in the step length)
    ends the iteration at the last iterate instead of crashing the solve: the step is
    finite and inside the box, and the status says what happened."""
    import sdpembed.lowrank.lmi_lp as lmi_lp

    real, calls = lmi_lp._LiftNewton, []

    class Failing(real):
        def __init__(self, *args):
            calls.append(1)
            if where == "newton system" and len(calls) == 3:
                raise np.linalg.LinAlgError("normal-equations matrix is not positive definite")
            super().__init__(*args)

        def direction(self, target):
            if where == "step to the boundary" and len(calls) == 3:
                raise np.linalg.LinAlgError("Matrix is not positive definite")
            return super().direction(target)

    monkeypatch.setattr(lmi_lp, "_LiftNewton", Failing)
    rng = np.random.default_rng(2)
    K, m = 6, 30
    A0 = np.diag(np.r_[-np.ones(2), np.ones(K - 2)] * 1e-6)
    B = rng.standard_normal((m, K))
    lo, hi = np.zeros(m), np.full(m, 1e-5)
    res = lmi_lp.rank_one_lmi_lp(A0, B, np.ones(m), lo, hi)
    assert res.status == "numerical_failure" and res.iterations == 3
    assert np.all(np.isfinite(res.d)) and np.all(res.d >= lo) and np.all(res.d <= hi)
    assert res.cost == pytest.approx(float(res.d.sum()))


def test_rank_one_lmi_lp_rejects_open_boxes_and_mismatched_shapes():
    from sdpembed.lowrank.lmi_lp import rank_one_lmi_lp

    with pytest.raises(InputError, match="finite bounds"):
        rank_one_lmi_lp(np.eye(2), np.ones((3, 2)), np.ones(3), np.zeros(3), np.full(3, np.inf))
    with pytest.raises(InputError, match="shape"):
        rank_one_lmi_lp(np.eye(3), np.ones((3, 2)), np.ones(3), np.zeros(3), np.ones(3))


def _lift_point(rng, m: int, K: int):
    from sdpembed.lowrank.lmi_lp import _LiftPoint

    def spd():
        G = rng.standard_normal((K, K))
        return G @ G.T / K + 0.1 * np.eye(K)

    u = rng.uniform(0.5, 2.0, m)
    x = rng.uniform(0.1, 0.9, m) * u
    return _LiftPoint(x=x, s=u - x + 1e-3, Z=spd(), X=spd(), lam=rng.uniform(0.1, 2.0, m),
                      z=rng.uniform(0.1, 2.0, m)), u


def test_lift_newton_schur_complement_matches_the_dense_formula():
    """The Schur complement built from the Cholesky factors of Z and X (one triangle of
    two symmetric rank-K products) equals :math:`(BZ^{-1}B^T)\\circ(BXB^T) +
    \\mathrm{diag}(\\lambda/x + z/s)`, and the residual terms their closed forms, to 1e-10
    relative, on a random interior point."""
    from sdpembed.lowrank.lmi_lp import _LiftNewton

    rng = np.random.default_rng(3)
    m, K = 40, 7
    pt, u = _lift_point(rng, m, K)
    A0, B, c = np.diag(rng.standard_normal(K)), rng.standard_normal((m, K)), rng.uniform(size=m)
    step = _LiftNewton(pt, A0, B, c, u)
    Zi = np.linalg.inv(pt.Z)
    M = (B @ Zi @ B.T) * (B @ pt.X @ B.T) + np.diag(pt.lam / pt.x + pt.z / pt.s)
    U = np.triu(step.cf[0])
    assert not step.cf[1]                                   # upper factor: M = U^T U
    assert np.allclose(U.T @ U, M, rtol=1e-10, atol=1e-10 * np.abs(M).max())
    Rp = pt.Z - A0 - (B.T * pt.x) @ B
    assert np.allclose(step.Rp, Rp, rtol=1e-12, atol=1e-12)
    assert np.allclose(step.qx, np.einsum("ij,jk,ik->i", B, pt.X, B), rtol=1e-10)
    assert np.allclose(step.qz, np.einsum("ij,jk,ik->i", B, Zi, B), rtol=1e-10)
    assert np.allclose(step.r, np.einsum("ij,jk,ik->i", B, Zi @ Rp @ pt.X, B), rtol=1e-10,
                       atol=1e-12)
    assert np.allclose(step.Zi, Zi, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("with_affine", [False, True])
def test_lift_newton_corrector_solves_the_linearised_system(with_affine):
    """Mehrotra's corrector (and the plain direction) solves the Newton equations of the
    rank-one LMI LP: the primal and box rows exactly linearised, the dual row
    :math:`-b_e^T\\Delta X b_e - \\Delta\\lambda + \\Delta z = -R_d`, the complementarity
    rows with the affine direction's second-order terms
    (:math:`x\\Delta\\lambda + \\lambda\\Delta x = \\sigma\\mu - \\lambda x -
    \\Delta x_a\\Delta\\lambda_a`, likewise for s, z) and the HKM matrix row
    :math:`\\Delta X = \\mathrm{sym}(\\sigma\\mu Z^{-1} - X - Z^{-1}\\Delta Z X -
    Z^{-1}\\Delta Z_a\\Delta X_a)`; to 1e-9 relative."""
    from sdpembed.lowrank.lmi_lp import _LiftNewton

    rng = np.random.default_rng(4)
    m, K = 30, 6
    pt, u = _lift_point(rng, m, K)
    A0, B, c = np.diag(rng.standard_normal(K)), rng.standard_normal((m, K)), rng.uniform(size=m)
    step = _LiftNewton(pt, A0, B, c, u)
    aff, _, _ = step.direction(0.0)
    smu = 0.1 * (np.sum(pt.X * pt.Z) + pt.lam @ pt.x + pt.z @ pt.s) / (K + 2 * m)
    v, _, _ = step.corrector(smu, aff if with_affine else None)
    a = aff if with_affine else {k: np.zeros_like(w) for k, w in aff.items()}

    def close(lhs, rhs):
        assert np.allclose(lhs, rhs, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(rhs).max()))

    close(v["Z"] - (B.T * v["x"]) @ B, -step.Rp)
    close(v["s"] + v["x"], -step.Rs)
    close(-np.einsum("ij,jk,ik->i", B, v["X"], B) - v["lam"] + v["z"], -step.Rd)
    close(pt.x * v["lam"] + pt.lam * v["x"], smu - pt.lam * pt.x - a["x"] * a["lam"])
    close(pt.s * v["z"] + pt.z * v["s"], smu - pt.z * pt.s - a["s"] * a["z"])
    Zi = np.linalg.inv(pt.Z)
    dX = smu * Zi - pt.X - Zi @ v["Z"] @ pt.X - Zi @ a["Z"] @ a["X"]
    close(v["X"], 0.5 * (dX + dX.T))

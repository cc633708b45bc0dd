"""Equality distances whose cliques leave no strictly feasible point (sdpembed/lowrank/face.py).

Differential seed 383 (equality DVU, 19 points of 4-dimensional data, 79 edges): the
cliques {0, 2, 7, 13, 15, 17} and {0, 6, 7, 13, 15, 17} have 6 points in R^4, so their
targets fix Gram blocks of rank 4 < 5; every feasible G has GU = 0 for their two exposing
vectors, and the problem has no positive definite point. A point within 2.5e-8 of the
equalities could then lie 0.4 % below the optimum: LOWRANK reported ``optimal`` at
-0.4434143 (bound -0.4434567), CSDP ``optimal`` at -0.4420412, while the optimum, that
of the facially reduced problem (which has a strictly feasible point: max t with
Z - tI PSD is 1.3e-4), is -0.4416096 (CLARABEL -0.44160959131, CVXOPT -0.44160959568,
SCS at eps 1e-10 -0.44160957242 on it).
"""

from __future__ import annotations

import time
import warnings

import cvxpy as cp
import numpy as np
import pytest

from problems.differential import make_instance
from sdpembed.exceptions import InaccurateSolutionWarning, SolverFailedError
from sdpembed.lowrank.face import (
    ROUNDING_FLOOR,
    exposing_vectors,
    restoration_flops,
    restore_at_lower_rank,
    restore_on_face,
)
from sdpembed.report import objective_unit
from sdpembed.solvers import solve

#: the optimum of seed 383, solved on its face (module docstring; solvers agree to 1e-8)
FACE_OPTIMUM = -0.4416096



@pytest.fixture
def without_equality_barrier(monkeypatch):
    """The equality rows' dual barrier (:class:`~sdpembed.lowrank.equality_barrier.EqualityOptimum`)
    off: on 90882 it certifies the full problem before the restoration that test exercises
    is reached (what the default path returns there:
    ``test_the_equality_barrier_certifies_90882``)."""
    from sdpembed.lowrank.equality_barrier import EqualityOptimum

    monkeypatch.setattr(EqualityOptimum, "wanted", lambda self, *args, **kwargs: False)


def _seed383():
    f, _ = make_instance(383, (12, 40)).build()
    _ = f.problem
    return f


def _face_optimum(f, U) -> float:
    """CLARABEL on G = Q Z Q^T, Q an orthonormal basis of [1, U]'s complement, with the
    distance rows made independent (the cliques' rows are dependent on the face)."""
    gp = f.meta["gram_problem"]
    n = gp.n
    M = np.column_stack([np.ones(n) / np.sqrt(n), U])
    Q = np.linalg.svd(M, full_matrices=True)[0][:, M.shape[1]:]
    i, j = np.asarray(gp.edges).T
    EQ = Q[i] - Q[j]                                       # rows (e_i - e_j)^T Q
    rows = np.array([np.outer(a, a)[np.triu_indices(Q.shape[1])] *
                     np.where(np.eye(Q.shape[1])[np.triu_indices(Q.shape[1])] > 0, 1, 2)
                     for a in EQ])
    Uu, s, _ = np.linalg.svd(rows, full_matrices=False)
    keep = Uu[:, s > 1e-9 * s[0]]
    r = Q.shape[1]
    Z = cp.Variable((r, r), PSD=True)
    z = cp.hstack([Z[a, b] for a, b in zip(*np.triu_indices(r))])
    C = _objective_matrix(f)
    prob = cp.Problem(cp.Minimize(cp.trace(Q.T @ C @ Q @ Z)),
                      [keep.T @ (rows @ z) == keep.T @ np.asarray(gp.target, dtype=float)])
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return float(prob.value)


def _objective_matrix(f):
    """The symmetric C with objective <C, G> (the formulation's objective is linear in G)."""
    gp = f.meta["gram_problem"]
    C = gp.full_objective().dense()
    return (C + C.T) / 2


def _clarabel_gram(f) -> np.ndarray:
    """CLARABEL's Gram matrix on ``f``, returned or refused: the problem has no strictly
    feasible point, and on some platforms (an AVX2 AMD Zen 3) CLARABEL stops
    ``optimal_inaccurate`` at a point whose violations, priced at its multipliers, buy 0.89
    of its objective, so :func:`solve` refuses it as a result; where that point lies (on
    the face or not) is what the tests ask, and the refusal carries it."""
    try:
        solve(f, solver="CLARABEL")
    except SolverFailedError as err:
        assert err.point is not None
        return np.asarray(err.point)
    return f.value("gram")


def test_seed_383_cliques_expose_the_face_every_feasible_point_lies_in():
    f = _seed383()
    U, cliques = exposing_vectors(f.meta["gram_problem"])
    assert sorted(cliques) == [([0, 2, 7, 13, 15, 17], 4), ([0, 6, 7, 13, 15, 17], 4)]
    assert U.shape == (19, 2)
    np.testing.assert_allclose(U.T @ U, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(U.T @ np.ones(19), 0.0, atol=1e-12)
    # an interior-point method's point (relative interior of the optimal face) lies on it
    G = _clarabel_gram(f)
    assert np.abs(U.T @ G @ U).max() <= 1e-6 * np.trace(G)
    # the face's optimum, by facial reduction (independent of LOWRANK)
    assert _face_optimum(f, U) == pytest.approx(FACE_OPTIMUM, abs=1e-6)


def test_restore_on_face_returns_a_feasible_point_on_the_face():
    f = _seed383()
    gp = f.meta["gram_problem"]
    U, _ = exposing_vectors(gp)
    w, V = np.linalg.eigh(_clarabel_gram(f))
    F = V[:, -6:] * np.sqrt(np.maximum(w[-6:], 0.0))
    off = F + 0.05 * np.outer(U[:, 0], np.ones(6))          # 0.05 off the face
    R, infeas = restore_on_face(gp, off, U)
    assert np.abs(U.T @ R).max() <= 1e-12
    assert infeas <= 1e-12
    D = gp.distances_of_factor(R)
    np.testing.assert_allclose(D, gp.target, rtol=0, atol=1e-12 * np.abs(gp.target).max())


def test_lowrank_solves_seed_383_on_its_face_to_the_optimum():
    """Before: 'optimal' at -0.4434143 with bound -0.4434567, both below the optimum
    -0.4416096 (the point's residual 2.5e-8 bought 0.4 %); then, restored onto the face,
    'optimal_inaccurate' at -0.4396052 (0.45 % above the optimum) with that bound. Now the
    solve continues on the face from the restored point and its multipliers, lifted to the
    full space, give a bound of the original problem: 'optimal', the objective within
    1e-4 (tol) of the optimum, the bound below it (1e-7: the face optimum's accuracy), the
    point on the face and feasible to rounding."""
    f = _seed383()
    rep = solve(f, solver="LOWRANK", time_limit=600.0)
    assert rep.status == "optimal"
    assert rep.objective == pytest.approx(FACE_OPTIMUM, rel=1e-4)
    assert rep.bound <= FACE_OPTIMUM + 1e-7
    assert rep.objective >= FACE_OPTIMUM - 1e-7
    assert rep.primal_infeasibility <= 1e-12
    face = rep.extra["face"]
    assert face["restored"] and face["exposing_vectors"] == 2
    assert face["solve"]["ran"] and "lifted to the full space" in rep.extra["certificate"]
    U, _ = exposing_vectors(f.meta["gram_problem"])
    assert np.abs(U.T @ f.factor).max() <= 1e-12
    # the variables hold the reported point: cvxpy's objective is the reported one
    assert f.problem.objective.value == pytest.approx(rep.objective, rel=1e-9)


def test_the_lifted_face_certificate_holds_in_the_original_problem():
    """The bound from the face's multipliers is weak duality for the *original* problem at
    y' = y + t z: checked independently here in exact rational arithmetic (the doubles
    taken as the rationals they are) that S(y') - mu I is positive definite on the
    complement of 1 (the claim the block argument makes: every pivot of its LDL^T in the
    basis e_i - e_n positive) and that the bound is at most -y'^T Dbar + min(mu, 0) T; and
    that it lies below the optimum (1e-7: the face optimum's accuracy) and within 1e-4 of
    it."""
    from fractions import Fraction

    from sdpembed.lowrank.face import clique_null_vectors, face_basis, face_certificate
    from sdpembed.lowrank.options import LowRankOptions
    from sdpembed.lowrank.solve import lowrank_solve
    from sdpembed.lowrank.trace_bound import shortest_path_trace_bound

    f = _seed383()
    gp = f.meta["gram_problem"]
    U, _ = exposing_vectors(gp)
    Q = face_basis(U)
    sub = lowrank_solve(gp, basis=Q, options=LowRankOptions(reduced_solver="alm", tol=2.5e-5,
                                                            time_limit=600.0))
    cert = face_certificate(gp, Q, U, clique_null_vectors(gp), sub.y, sub.nu)
    assert cert is not None and cert.t > 0
    assert cert.bound <= FACE_OPTIMUM + 1e-7
    assert cert.bound == pytest.approx(FACE_OPTIMUM, rel=1e-4)
    n = gp.n
    # the objective matrix of the GramProblem (diagonal plus low rank), exactly
    Cd = gp.full_objective()
    C = [[Fraction(0)] * n for _ in range(n)]
    for a in range(n):
        C[a][a] += Fraction(float(Cd.diag[a]))
        for k in range(Cd.U.shape[1]):
            for b in range(n):
                C[a][b] += Fraction(float(Cd.s[k])) * Fraction(float(Cd.U[a, k])) \
                    * Fraction(float(Cd.U[b, k]))
    if Cd.sparse is not None:
        Sp = Cd.sparse.tocoo()
        for a, b, v in zip(Sp.row, Sp.col, Sp.data):
            C[a][b] += Fraction(float(v))
    t, mu = Fraction(cert.t), Fraction(cert.mu)
    w = [Fraction(float(y_e)) + t * Fraction(float(z_e)) for y_e, z_e in zip(cert.y, cert.z)]
    for (i, j), w_e in zip(np.asarray(gp.edges).tolist(), w):
        C[i][i] += w_e
        C[j][j] += w_e
        C[i][j] -= w_e
        C[j][i] -= w_e
    for a in range(n):
        C[a][a] -= mu
    # B^T (S - mu I) B with B = [e_i - e_n]: M_ab = S_ab - S_an - S_nb + S_nn
    M = [[C[a][b] - C[a][n - 1] - C[n - 1][b] + C[n - 1][n - 1] for b in range(n - 1)]
         for a in range(n - 1)]
    for k in range(n - 1):                                  # LDL^T, exact
        assert M[k][k] > 0
        for a in range(k + 1, n - 1):
            r = M[a][k] / M[k][k]
            for b in range(k + 1, n - 1):
                M[a][b] -= r * M[k][b]
    T = shortest_path_trace_bound(gp)
    dual = -sum(w_e * Fraction(float(d)) for w_e, d in zip(w, gp.target))
    assert Fraction(cert.bound) <= dual + min(mu, Fraction(0)) * Fraction(T) \
        + Fraction(1, 10**12)


def test_a_point_the_restoration_cannot_bring_onto_the_constraints_is_refused(monkeypatch):
    """Differential seed 81042 (equality MVU, 50 points, one exposing clique; on the
    clique face still no strictly feasible point): the restoration onto the face stalled
    at a residual 8.4e-6 and the point, reported 'optimal_inaccurate' at -95.97 with gap
    2.6e-3, lay 0.9 % below the references' -95.08 (CLARABEL, CSDP): outside its stated
    gap. A point restored onto an exposed face to no better than tol**2 is now refused.
    Simulated here on seed 383 by a restoration that stops at 1e-6 (at every rank: the
    retries at lower ranks, ``restore_at_lower_rank``, stall too)."""
    from sdpembed.exceptions import SolverFailedError
    from sdpembed.lowrank import backend, face, face_route

    real = backend.restore_on_face

    def stalled(gp, F, U, **kw):
        V, _ = real(gp, F, U, **kw)
        return V, 1e-6

    for module in (backend, face, face_route):
        monkeypatch.setattr(module, "restore_on_face", stalled)
    with pytest.raises(SolverFailedError, match="degenerate on the face") as err:
        solve(_seed383(), solver="LOWRANK", max_outer=10)
    assert err.value.point is not None and err.value.bound is not None
    # equality distances: the error names the strictly feasible alternative
    assert "distances='shrink'" in str(err.value)


@pytest.mark.parametrize("seed", [71038, 70117])
def test_added_rows_and_snr_are_restored_on_the_face_too(seed):
    """71038: 24 points, a 5-clique exposing a face, an added row G[15, 15] <= b; before,
    'optimal' at -2.2988797, below its own certified bound -2.2988738 (within the bound
    tolerance, through a residual of 7e-7). 70117: 13 points, SNR constraint, a 4-clique
    exposing a face. Now both points lie on the face, feasible to rounding, and above
    their bounds, which stay below CLARABEL's optimum (1e-6: CLARABEL's accuracy on a
    problem without a strictly feasible point)."""
    f, _ = make_instance(seed, (12, 60)).build()
    _ = f.problem
    gp = f.meta["gram_problem"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        rep = solve(f, solver="LOWRANK", time_limit=600.0)
        ref = solve(make_instance(seed, (12, 60)).build()[0], solver="CLARABEL")
    assert rep.extra["face"]["restored"]
    U, _ = exposing_vectors(gp)
    assert np.abs(U.T @ f.factor).max() <= 1e-10
    assert rep.primal_infeasibility <= 1e-9
    assert rep.objective >= rep.bound
    assert rep.bound <= ref.objective + 1e-6 * abs(ref.objective)
    assert rep.objective >= ref.objective - 1e-6 * abs(ref.objective)


def test_a_clique_whose_targets_no_points_realise_exposes_no_face():
    """Lengthening edge (0, 7), shared by both of seed 383's 6-cliques, threefold: their
    target Gram blocks get a negative eigenvalue (the problem is infeasible, which is the
    Farkas certificate's business), so neither clique is taken for a face."""
    import dataclasses

    gp = _seed383().meta["gram_problem"]
    edges = [tuple(sorted(e)) for e in np.asarray(gp.edges).tolist()]
    t = np.array(gp.target, dtype=float)
    t[edges.index((0, 7))] *= 9.0
    U, cliques = exposing_vectors(dataclasses.replace(gp, target=t))
    assert U is None and cliques == []


def test_a_face_too_large_to_orthonormalise_is_reported_and_not_called_optimal(monkeypatch):
    """Beyond ``DENSE_EXPOSING`` entries (5,000 Swiss-roll points with 8 neighbours have
    2,972 such cliques: a dense 5,000 x 3,440 SVD took 100 s) the cliques are reported
    without their vectors; the point, not restored onto the face, may lie below the
    optimum outside its stated interval, so it is not 'optimal' and ``extra["face"]``
    says why. Here the limit is lowered to seed 383's size (19 x 2 entries). The solve runs
    to its gap (within ``tol``: a point met to ``tol`` is still not called optimal); at
    ``max_outer=10`` it stopped after a 6,000-iteration capped subproblem whose end moved
    with the evaluation's rounding (the in-place product and centring of the thirty-first
    round), so whether it was refused for its gap or returned depended on the last digit."""
    from sdpembed.lowrank import face

    f = _seed383()
    monkeypatch.setattr(face, "DENSE_EXPOSING", 19 * 2 - 1)
    U, cliques = exposing_vectors(f.meta["gram_problem"])
    assert U is None and len(cliques) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        rep = solve(f, solver="LOWRANK", max_outer=30)
    assert rep.status == "optimal_inaccurate"
    assert rep.certified_gap <= 1e-4
    assert rep.extra["face"]["restored"] is False
    assert rep.extra["face"]["cliques"] == 2
    assert "too many to orthonormalise" in rep.extra["face"]["reason"]


def test_the_face_certificate_bisects_past_shifts_that_fail_the_exact_check(monkeypatch):
    """Differential seed 90598 (equality DVU, explicit centroids, SNR, an added row
    G[2, 2] <= b; 20 points, three 5-cliques exposing a face): the face solve certifies on
    the face, but the lifted certificate's candidate of the best bound (the smallest shift
    below lambda_min, t ~ 5e10) fails the exact check, and so did the next five by bound,
    all neighbouring small shifts: no bound, and the solve stayed 'optimal_inaccurate' with
    the full solve's bound (gap 4e-2). The candidates are now bisected towards larger
    shifts. Checked: a bound results after a failed first try, it lies below the objective
    of the face solve's point restored onto the constraints (feasible to 1e-12: an upper
    bound on the optimum), and within 1e-4 (tol) of it."""
    from sdpembed.lowrank import face
    from sdpembed.lowrank.face import clique_null_vectors, face_basis, face_certificate
    from sdpembed.lowrank.options import LowRankOptions
    from sdpembed.lowrank.solve import lowrank_solve
    from sdpembed.lowrank.space import FactorSpace

    f, _ = make_instance(90598, (12, 60)).build()
    gp = f.current_problem()
    nulls = clique_null_vectors(gp)
    U, cliques = exposing_vectors(gp, nulls)
    assert len(cliques) == 3
    Q = face_basis(U)
    sub = lowrank_solve(gp, basis=Q, options=LowRankOptions(reduced_solver="alm", tol=2.5e-5,
                                                            time_limit=600.0))
    tries = []
    real = face._exact_bound

    def counted(*args):
        out = real(*args)
        tries.append(out)
        return out

    monkeypatch.setattr(face, "_exact_bound", counted)
    cert = face_certificate(gp, Q, U, nulls, sub.y, sub.nu)
    assert cert is not None and tries[0] is None and len(tries) <= face._EXACT_TRIES
    checks = list(tries)
    # past its deadline no candidate is checked, and the report says so: no bound
    tries.clear()
    skipped: list[str] = []
    assert face_certificate(gp, Q, U, nulls, sub.y, sub.nu, deadline=0.0,
                            skipped=skipped) is None
    assert len(tries) == 0 and skipped == ["face certificate's exact checks after 0"]
    # a floor (a bound already held) above every candidate: no exact check, no bound; one
    # below every candidate: the same checks and the same bound as without it
    assert face_certificate(gp, Q, U, nulls, sub.y, sub.nu, floor=1e300) is None
    assert len(tries) == 0
    cert_low = face_certificate(gp, Q, U, nulls, sub.y, sub.nu, floor=-1e300)
    assert cert_low is not None and cert_low.bound == cert.bound and tries == checks
    V, infeas = restore_on_face(gp, sub.factor, U)
    assert infeas <= 1e-12
    p = float(np.sum(V * FactorSpace(gp).apply_C(V)))
    assert cert.bound <= p
    assert p - cert.bound <= 1e-4 * abs(p)


#: seed 90381's optimum, by facial reduction: CLARABEL ('optimal') on G = Q Z Q^T with the
#: distance rows made independent, as :func:`_face_optimum` does
FACE_OPTIMUM_90381 = -1.3792342


@pytest.mark.slow
def test_the_full_solve_leaves_the_face_solve_its_share_of_the_time_limit(monkeypatch):
    """Differential seed 90381 (equality DVU, explicit centroids, 26 points, two 5-cliques
    exposing a face): the full solve's multipliers grow without bound (no strictly
    feasible point), so it ran to the time limit and the face solve, which needs 20 % of
    it left, never ran: 'optimal_inaccurate', gap 4e-3 (refused at 2.4e-2 in the
    differential run under load). Where cliques expose a face the full solve now stops at
    half the limit and the face solve runs: the point within 1e-4 (tol) of the face
    optimum, feasible to rounding, its bound below the optimum (1e-7: the face optimum's
    accuracy) and within 1e-3 of it. (Whether the face solve's own certificate reaches
    tol / 4 in the time left varies: gaps 4.0e-5 and 1.2e-4 in two runs.)

    LOWRANK's ``time_limit`` is read on :func:`time.perf_counter` (wall time); here it reads
    the process's CPU time instead, so that the shares are the same at any machine load
    (at load 13 a 30 s wall limit left the face solve too little CPU: refused at 2.7e-2)."""
    monkeypatch.setattr(time, "perf_counter", time.process_time)
    f, _ = make_instance(90381, (12, 60)).build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        rep = solve(f, solver="LOWRANK", time_limit=30.0)
    assert rep.extra["face"]["solve"]["ran"]
    assert rep.objective == pytest.approx(FACE_OPTIMUM_90381, rel=1e-4)
    assert rep.bound <= FACE_OPTIMUM_90381 + 1e-7
    assert rep.certified_gap <= 1e-3
    assert rep.primal_infeasibility <= 1e-12


@pytest.mark.slow
def test_seed_90598_solves_without_a_library_runtime_warning():
    """Seed 90598 (20 points, equality DVU with SNR, on a face): the multiplier fits with
    the one-sided bound nu >= 0 are exact active-set solves (BVLS), so scipy's TRF line
    search never evaluates 0 * inf at the user's line; the solve stays certified within
    its tolerance and its bound stays below its objective."""
    f, _ = make_instance(90598).build()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        rep = solve(f, "LOWRANK")
    assert rep.status == "optimal"
    assert rep.certified_gap <= 1e-4 and rep.bound <= rep.objective


#: differential seeds 90940 (equality MVU, 29 points, one 5-clique of rank 3) and 90521
#: (equality DVU, eliminated centroids, a row-sum row, 32 points, two 5-cliques of rank
#: 3): CSDP's objectives (``optimal``); CLARABEL stops ``optimal_inaccurate`` on both
#: (-22.5742307, -0.6735903)
CSDP_90940 = -22.57420288904263
CSDP_90521 = -0.673589956412278


def _seed(seed):
    f, _ = make_instance(seed, (12, 60)).build()
    _ = f.problem
    return f


def test_a_face_the_cliques_do_not_expose_stalls_the_restoration_not_at_lower_rank():
    """Seed 90940: on the face its clique exposes, the problem still has no strictly
    feasible point (max t with Z - tI PSD on the face: -1.4e-8); facial reduction there
    finds a PSD stress of rank 24 on the 27-dimensional face: the framework is universally
    rigid in R^3 and its only feasible Gram matrix has rank 3. Gauss-Newton from an
    interior-point method's point (CLARABEL's, of full rank) stalls above tol**2 = 1e-8
    (the surplus columns shrink linearly); cut to rank 3 or 4 it converges to rounding, at
    CSDP's optimum (the one feasible point)."""
    f = _seed(90940)
    gp = f.meta["gram_problem"]
    U, _ = exposing_vectors(gp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        w, V = np.linalg.eigh(_clarabel_gram(f))
    F = V[:, w > 0] * np.sqrt(w[w > 0])
    _, infeas = restore_on_face(gp, F, U)
    assert infeas > 1e-8
    R, infeas, rank = restore_at_lower_rank(gp, F, U, ROUNDING_FLOOR, first=3)
    assert rank in (3, 4) and infeas <= 1e-13
    # the ranks after the first are bounded by their estimated flops (not by seconds,
    # which made the result depend on the load): a budget of none tries rank 3 alone,
    # one of rank 3's cost tries rank 4 too, and finds the same point
    m = np.asarray(gp.edges).shape[0]
    alone = restore_at_lower_rank(gp, F, U, ROUNDING_FLOOR, first=3, max_flops=0.0)
    assert alone is None or alone[2] == 3
    two = restore_at_lower_rank(gp, F, U, ROUNDING_FLOOR, first=3,
                                max_flops=restoration_flops(m, gp.n, 3))
    assert two[2] == rank and np.array_equal(two[0], R)
    assert np.abs(U.T @ R).max() <= 1e-12
    C = _objective_matrix(f)
    assert float(np.sum(R * (C @ R))) == pytest.approx(CSDP_90940, rel=1e-8)
    assert np.linalg.matrix_rank(R @ R.T, tol=1e-8 * np.trace(R @ R.T)) == 3


def _without_reduction(monkeypatch):
    """The clique route alone: facial reduction (sdpembed.lowrank.reduction) finds the
    whole face of seeds 90940 and 90521 and solves there first
    (tests/test_lowrank_reduction.py); these tests keep the route it leaves to cliques."""
    from sdpembed.lowrank import backend
    monkeypatch.setattr(backend, "reduce_face", lambda gp: None)


@pytest.mark.slow
def test_a_restoration_stalled_on_the_face_is_retried_at_lower_rank(monkeypatch):
    """Seed 90940. Before (``time_limit`` 20 and 60): ``SolverFailedError`` ("face
    restoration stalled": the point restored onto the clique face to 1.2e-8, above
    tol**2; its objective -22.5741911, within 5e-7 of CSDP's). Now the stalled point's
    factor, cut to a lower rank, restores to rounding: ``optimal``, feasible, at CSDP's
    objective (1e-8), above the certified bound (the full solve's, gap 2e-7), which lies
    below CSDP's objective."""
    _without_reduction(monkeypatch)
    f = _seed(90940)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        rep = solve(f, solver="LOWRANK", max_outer=200)
    assert rep.status == "optimal"
    assert rep.primal_infeasibility <= ROUNDING_FLOOR
    assert rep.objective == pytest.approx(CSDP_90940, rel=1e-8)
    assert rep.bound <= CSDP_90940 + 1e-9 * abs(CSDP_90940)
    assert rep.bound <= rep.objective and rep.certified_gap <= 1e-4
    assert rep.extra["face"]["lower_rank"]["rank"] in (3, 4)


def _solve_90521(max_outer):
    """Seed 90521's LOWRANK solve, its path fixed by ``max_outer`` (the default
    ``time_limit``, 3,600 s, a hang guard only): the report and the point problem."""
    f = _seed(90521)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        rep = solve(f, solver="LOWRANK", max_outer=max_outer)
    gp = f.meta["gram_problem"]
    # the reported relative infeasibility ||D - t|| / ||t|| is the point's own (rounding
    # allowance 1e-12 of the largest target on a point restored to rounding)
    D = gp.distances_of_factor(f.factor)
    resid = np.linalg.norm(D - gp.target) / np.linalg.norm(gp.target)
    assert resid <= max(1.01 * rep.primal_infeasibility, 1e-12 * np.abs(gp.target).max())
    # what status "optimal" promises: feasible to feas_tol, the certified bound below the
    # optimum (CSDP's), within tol of the objective
    assert rep.status == "optimal"
    assert rep.primal_infeasibility <= rep.options["feas_tol"]
    assert rep.bound <= CSDP_90521 + 1e-9 * abs(CSDP_90521)
    assert rep.certified_gap <= rep.options["tol"]
    return rep


@pytest.mark.slow
def test_seed_90521_certified_in_full_then_restored_at_lower_rank(monkeypatch):
    """Seed 90521 (before: ``SolverFailedError``, the point restored onto the clique face
    to 1.6e-8, its objective -0.6736936 *below* CSDP's -0.6735900). The full solve
    certifies (outer 19); its point, restored onto the face to 1.9e-8 (above tol**2), is
    solved on further there and restored at rank 3, feasible to rounding, at CSDP's
    objective (1e-8)."""
    _without_reduction(monkeypatch)
    rep = _solve_90521(200)
    assert rep.extra["stop_reason"] == "certified"
    assert rep.extra["face"]["lower_rank"]["rank"] == 3
    assert rep.primal_infeasibility <= ROUNDING_FLOOR
    assert rep.objective == pytest.approx(CSDP_90521, rel=1e-8)


@pytest.mark.slow
def test_seed_90521_cut_short_on_the_clique_route(monkeypatch):
    """Seed 90521 on the clique route (facial reduction off), the full solve stopped by
    ``max_outer=10`` (what a loaded machine's wall-clock limit did to the test that ran
    with ``time_limit=60``): the face solve, cut by the same ``max_outer``, still returns
    ``optimal`` only with what that promises. Feasible to ``feas_tol`` (1e-6), not to
    rounding (9.1e-9): its objective lies below CSDP's optimum (1.4e-6 relative) by no more
    than its violations buy at its own multipliers (``violation_worth``). (At
    ``max_outer=18`` the full solve now certifies before the cap, so it no longer tests
    this path.)"""
    _without_reduction(monkeypatch)
    rep = _solve_90521(10)
    assert rep.extra["stop_reason"] == "max_outer"
    assert rep.status == "optimal" and "face" in rep.extra
    assert ROUNDING_FLOOR < rep.primal_infeasibility <= 1e-6
    bought = rep.extra["violation_worth"] * objective_unit(rep.objective,
                                                           rep.extra["objective_scale"])
    assert abs(rep.objective - CSDP_90521) <= bought + 1e-8 * abs(CSDP_90521)


@pytest.mark.slow
def test_a_far_point_at_lower_rank_is_refused_naming_the_further_face():
    """Seed 91181 (equality DVU, 21 points, five 5-cliques of rank 3): on the clique face
    facial reduction finds a stress of rank 2 on 5 points (a sub-framework rigid in R^3),
    not the whole face, so the optimum has rank 5 and no lower rank restores near it. The
    point restored at rank 3 is feasible (objective -0.4055425), and its objective and the
    certified bound hold the optimum between them (CSDP -0.4157672 and CLARABEL -0.4089640,
    both inaccurate), but more than ``FAR_FROM_OPTIMAL`` apart, relative to the objective:
    refused, naming the further face and the backends that solve it (before: refused as a
    stalled restoration whose objective -0.4165 lay below its bound -0.4152, or as far from
    optimal, advising more time).

    Cut by ``max_outer=5`` with a time limit it does not reach, so that the bound does not
    depend on the machine's load: with ``time_limit=60`` the bound was -0.41629, -0.41455
    (returned ``optimal_inaccurate``: 9.0e-3 by the former absolute measure, 2.2e-2
    relative) and -0.41470 (above CSDP's inaccurate value, which therefore lies below the
    optimum) in three runs."""
    from sdpembed.exceptions import SolverFailedError
    from sdpembed.solve_status import FAR_FROM_OPTIMAL, bound_gap

    f = _seed(91181)
    gp = f.meta["gram_problem"]
    with pytest.raises(SolverFailedError, match="not even on the face") as err:
        solve(f, solver="LOWRANK", time_limit=600.0, max_outer=5)
    e = err.value
    D = gp.distances_of_factor(e.point)
    np.testing.assert_allclose(D, gp.target, rtol=0, atol=1e-12 * np.abs(gp.target).max())
    assert e.objective == pytest.approx(-0.4055425, rel=1e-6)
    assert bound_gap(e.objective, e.bound) > FAR_FROM_OPTIMAL
    assert e.bound <= -0.4157672 + 1e-6 and e.objective >= -0.4089640 - 1e-6


@pytest.mark.slow
def test_an_equality_point_below_its_own_bound_is_restored_onto_the_constraints(
        without_equality_barrier):
    """Seed 90882 (equality MVU with a trace and a row-sum row, 23 points, no clique face;
    class F: almost no interior): LOWRANK stopped at -24.079348 with residual 1.3e-6,
    below its own certified bound -24.078667, and was refused. The point restored onto the
    constraints by Gauss-Newton is feasible to rounding, and its objective and the bound
    now hold the optimum between them (CSDP -24.0728074, CLARABEL -24.0728093, both
    ``optimal``): a result, ``optimal_inaccurate`` where the gap exceeds tol."""
    f = _seed(90882)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        rep = solve(f, solver="LOWRANK", time_limit=600.0)
    assert rep.extra["restoration"]["restored"]
    assert rep.primal_infeasibility <= 1e-12
    assert rep.bound <= -24.0728074 <= rep.objective
    assert rep.certified_gap <= 1e-2



def test_the_equality_barrier_certifies_90882():
    """With the equality rows' dual barrier (docs/tuning.md, "99085 and 99192: the dual
    barrier for equality rows") 90882 ends ``optimal`` on the full problem: the point
    feasible to rounding, its objective and the bound holding CSDP's and CLARABEL's optimum
    (-24.0728074, -24.0728093) between them, the certified gap within tol (1e-4)."""
    f = _seed(90882)
    rep = solve(f, solver="LOWRANK", time_limit=600.0)
    assert rep.status == "optimal"
    assert rep.primal_infeasibility <= 1e-10
    assert rep.bound <= -24.0728093 and -24.0728074 <= rep.objective
    assert rep.certified_gap <= 1e-4


# slow: its default solve is test_lowrank_solves_seed_383_on_its_face_to_the_optimum's; the
# dense certificate's rounding allowance at 383's barrier pair (no "dual-feasible" inside
# the rounding, the gate's share above a tenth of tol) is checked without a solve by
# tests/test_lowrank_rounding.py::test_a_positive_eigenvalue_inside_the_rounding_certifies_
# nothing_at_tol; this one adds the end-to-end solve with the pair allowed
@pytest.mark.slow
def test_the_barrier_pair_is_not_used_where_its_multipliers_make_rounding_matter(monkeypatch):
    """Seed 383 has no strictly feasible point: the barrier's multipliers grow to about 1e8,
    so S(y) has norm about 1e9 and a dense eigh of it is exact only to about 1e-5, times the
    trace: above a tenth of tol (``rounding.rounding_allowance``). By default the pair is
    not used and the face solve answers (the test above). Allowed anyway, its pair used to
    certify 'dual-feasible' from an eigenvalue inside that rounding; now the dense
    certificate takes the rounding off its bound (``rounding.eigh_allowance``): the pair is
    certified at its honest gap, above tol, and the solve does not end on it: what it
    reports holds the optimum between its bound and its objective. (Which certificate then
    answers, the face solve's lifted one or the full problem's trace bound, depends on the
    platform's rounding: on an AVX-512 machine the face solve stops at ``max_outer`` with
    a weaker bound than the full problem's.)"""
    from sdpembed.lowrank import equality_barrier

    rep = solve(_seed383(), solver="LOWRANK", time_limit=600.0)
    assert "lifted to the full space" in rep.extra["certificate"]
    monkeypatch.setattr(equality_barrier, "_ROUNDING_SHARE", np.inf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        rep = solve(_seed383(), solver="LOWRANK", time_limit=600.0)
    paired = [e for e in rep.extra["history"] if "barrier" in e]
    assert len(paired) == 1 and paired[0]["certified_gap"] > 1e-4
    assert not rep.extra["certificate"].startswith("dual-feasible")
    assert rep.status in ("optimal", "optimal_inaccurate")
    assert rep.primal_infeasibility <= 1e-10
    # the recorded optimum to its 7 digits (module docstring): bound below, objective above
    assert rep.bound <= FACE_OPTIMUM + 1e-7 and FACE_OPTIMUM - 1e-7 <= rep.objective


def test_least_squares_falls_back_when_the_divide_and_conquer_svd_fails(monkeypatch):
    """LAPACK's ``gelsd`` (numpy's driver) failed to converge ("SVD did not converge in
    Linear Least Squares") on a finite 720 x 600 Gauss-Newton Jacobian of the restoration
    onto the face (equality MVU, Swiss roll of 200 points, 6 neighbours; the solve ended
    in an untyped-cause ``SolverFailedError`` asking to report it). The fallback solves
    the same problem with the QR-iteration SVD at numpy's cutoff: on a rank-deficient
    matrix it must return numpy's least-norm solution (to 1e-10, rounding of two SVDs)."""
    from sdpembed.lowrank.ipm_common import least_squares

    rng = np.random.default_rng(0)
    A = rng.standard_normal((40, 10)) @ rng.standard_normal((10, 30))   # rank 10
    b = rng.standard_normal(40)
    reference = np.linalg.lstsq(A, b, rcond=None)[0]

    def no_convergence(*args, **kwargs):
        raise np.linalg.LinAlgError("SVD did not converge in Linear Least Squares")

    monkeypatch.setattr(np.linalg, "lstsq", no_convergence)
    x = least_squares(A, b)
    assert np.linalg.norm(x - reference) <= 1e-10 * np.linalg.norm(reference)


@pytest.mark.parametrize("seed", [101138, 90882])
def test_a_restored_point_stays_centred(seed):
    """The restoration's least-norm steps on the added rows (row sums, a trace) move the
    points' mean: on main the point restored below its own bound for seed 101138 (equality
    MVU, two row sums and a trace row, infeasible) met the rows as an uncentred factor (mean
    1.2e-2) and violated them by 1.9e-3 once centred, and LOWRANK returned it ``optimal``
    (under load). The restoration now keeps G1 = 0: from a random centred factor, with and
    without exposing vectors, the factor it returns is centred and its residual is that of
    its centred Gram matrix."""
    from sdpembed.lowrank.face import restore_on_face
    from sdpembed.lowrank.space import FactorSpace

    f, _ = make_instance(seed).build()
    gp = f.current_problem()
    assert gp.constraints is not None and gp.constraints.p >= 2
    rng = np.random.default_rng(0)
    F = rng.standard_normal((gp.n, 6))
    F -= F.mean(axis=0)
    F *= np.sqrt(gp.target.mean() / gp.distances_of_factor(F).mean())
    space = FactorSpace(gp)
    V, infeas = restore_on_face(gp, F, np.zeros((gp.n, 0)), space=space)
    assert np.abs(V.sum(axis=0)).max() <= 1e-10 * np.abs(V).max() * gp.n
    k = space.K_values(V) - gp.constraints.rhs
    viol = np.where(gp.constraints.equality, np.abs(k), np.maximum(k, 0.0)) / space.K_scale()
    assert float(np.max(viol)) <= infeas + 1e-12

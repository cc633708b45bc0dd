"""LOWRANK's ``time_limit`` is one deadline for every phase of a solve.

The iterative repairs (multiplier refinement, restoration, the lift) take a ``deadline``
and do no work after it; a solve whose limit has passed makes one certificate of its last
multipliers and returns a typed outcome. Tested with deadlines already in the past or
passing at a counted step (deterministic), never with measured times.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from sklearn.datasets import load_digits

import sdpembed.lowrank as lowrank
import sdpembed.lowrank.repair as repair
from sdpembed import knn_graph, solve
from sdpembed.exceptions import SolverFailedError
from sdpembed.formulations import dvu
from sdpembed.formulations.dvu import dvu_problem
from sdpembed.formulations.gram import centering_basis
from sdpembed.solve_status import FAR_FROM_OPTIMAL, bound_gap


@pytest.fixture(scope="module")
def digits30():
    """30 digits (15 zeros, 15 ones) and their nearest-neighbour graph."""
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(3)
    idx = np.concatenate([rng.choice(np.flatnonzero(y == c), 15, replace=False)
                          for c in (0, 1)])
    return X[idx], y[idx], knn_graph(X[idx], random_state=0)


@pytest.fixture(scope="module")
def near_optimal(digits30):
    """An interval DVU problem, its certified LOWRANK solution, and its multipliers
    perturbed by 1e-3 (what the refinement and the lift repair)."""
    _, y, g = digits30
    gp = dvu_problem(g, y)
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(warm_start=None))
    assert res.status == "optimal"
    space, pen = lowrank.FactorSpace(gp, None), lowrank.DistancePenalty(gp)
    W = space.project(res.factor)
    noise = 1e-3 * np.random.default_rng(0).standard_normal(res.y.shape) * np.abs(res.y).max()
    y_noisy = np.clip(res.y + noise, -pen.w, pen.w)
    return gp, res, space, pen, W, y_noisy


def _forbid(monkeypatch, module, name):
    """Make ``module.name`` fail the test if it is called."""
    def fail(*args, **kwargs):
        raise AssertionError(f"{name} ran after the deadline")
    monkeypatch.setattr(module, name, fail)


def test_refine_multipliers_does_no_iteration_past_its_deadline(near_optimal, monkeypatch):
    _, res, space, pen, W, y_noisy = near_optimal
    # without a deadline the fit moves the multipliers (so the check below can fail)
    y_fit, _ = lowrank.refine_multipliers(space, pen, W, y_noisy, res.nu)
    assert np.abs(y_fit - y_noisy).max() > 0
    _forbid(monkeypatch, repair.sopt, "lsq_linear")
    y_out, nu_out = lowrank.refine_multipliers(space, pen, W, y_noisy, res.nu,
                                               deadline=time.perf_counter() - 1.0)
    assert y_out is y_noisy and np.array_equal(nu_out, space.duals(res.nu))


@pytest.mark.parametrize("form", ["matrix-free", "sparse"])
def test_refine_multipliers_abandons_a_fit_the_deadline_passes(near_optimal, monkeypatch,
                                                                form):
    """The deadline passes after an LSMR fit (matrix-free, or on the sparse explicit
    matrix) started (at the 6th check): the fit stops there and the input multipliers
    come back, not a half-fitted point."""
    _, res, space, pen, W, y_noisy = near_optimal
    explicit = repair._explicit_fit_matrix
    checks = []

    def past(deadline):
        checks.append(deadline)
        return len(checks) > 5

    monkeypatch.setattr(repair, "_past", past)
    monkeypatch.setattr(repair, "_explicit_fit_matrix", (lambda *args: None) if
                        form == "matrix-free" else (lambda *args: sp.csr_array(explicit(*args))))
    products = []
    wrap = repair._with_deadline

    def counting(op, deadline, every=None):
        inner = spla.LinearOperator(op.shape, dtype=float,
                                    matvec=lambda x: products.append(1) or op.matvec(x),
                                    rmatvec=lambda x: products.append(1) or op.rmatvec(x))
        return wrap(inner, deadline, every)

    monkeypatch.setattr(repair, "_with_deadline", counting)
    y_out, _ = lowrank.refine_multipliers(space, pen, W, y_noisy, res.nu, deadline=0.0)
    # the pre-check, then the operator's checks until one found it passed: every product
    # (matrix-free), or the first and every _DEADLINE_EVERY-th product (sparse)
    assert len(checks) == 6
    if form == "sparse":
        assert len(products) == 4 * repair._DEADLINE_EVERY
    assert y_out is y_noisy


def test_deadline_wrapper_reads_the_clock_every_few_products(monkeypatch):
    """``_with_deadline``: the wrapped products unchanged, the clock read at the first
    product and every ``every``-th after it, and the first product after a check that
    found the deadline passed raises."""
    A = sp.random_array((7, 5), density=0.5, random_state=0, format="csr")
    x, r = np.arange(5.0), np.arange(7.0)
    checks = []
    monkeypatch.setattr(repair, "_past", lambda d: checks.append(d) or len(checks) > 2)
    op = repair._with_deadline(spla.aslinearoperator(A), 1.0, every=4)
    for k in range(8):                 # products 0..7: checks at 0 and 4
        out = op.matvec(x) if k % 2 else op.rmatvec(r)
        assert np.allclose(out, A @ x if k % 2 else A.T @ r)
    assert checks == [1.0, 1.0]
    with pytest.raises(repair._DeadlinePassed):   # product 8: the third check, passed
        op.matvec(x)


def test_restore_feasibility_takes_no_step_past_its_deadline(digits30):
    _, y, g = digits30
    gp = dvu_problem(g, y, distances="equality")
    space, pen = lowrank.FactorSpace(gp, None), lowrank.DistancePenalty(gp)
    W = space.project(np.random.default_rng(1).standard_normal((gp.n, 4)))
    W_step, r_step = lowrank.restore_feasibility(space, pen, W, tol=1e-12)
    W_late, r_late = lowrank.restore_feasibility(space, pen, W, tol=1e-12,
                                                 deadline=time.perf_counter() - 1.0)
    assert r_step < r_late          # a step would have lowered the residual ...
    assert W_late is W               # ... but none was taken; the residual is W's own
    Z = space.diffs(W)
    assert r_late == pytest.approx(
        np.linalg.norm(np.einsum("ij,ij->i", Z, Z) - pen.t) / np.linalg.norm(pen.t))


def test_lift_past_its_deadline_returns_the_pair_it_computed(near_optimal):
    """One eigendecomposition, no lift round: the multipliers come back unchanged (clipped
    into the box) with the exact smallest eigenvalue of their own S."""
    gp, res, space, pen, _, y_noisy = near_optimal
    y_l, eig = lowrank.lift_multipliers(space, pen, y_noisy, res.nu,
                                        deadline=time.perf_counter() - 1.0)
    assert np.array_equal(y_l, y_noisy)
    Hb = centering_basis(gp.n)
    SH = space.apply_S(Hb, y_l, res.nu)
    lam = np.linalg.eigvalsh(0.5 * (Hb.T @ SH + SH.T @ Hb))[0]
    assert lam < 0 and eig.value == pytest.approx(lam, rel=1e-8)


def test_a_solve_past_its_limit_certifies_once_and_refines_nothing(digits30, monkeypatch):
    """With the limit already spent, the solve stops after one outer iteration
    (``stop_reason`` "time_limit"), runs no refinement, lift or restoration, and still
    reports a certificate of its last multipliers (or says why it has none)."""
    _, y, g = digits30
    gp = dvu_problem(g, y)
    _forbid(monkeypatch, repair.sopt, "lsq_linear")
    _forbid(monkeypatch, repair, "rank_one_lmi_lp")
    _forbid(monkeypatch, repair.spla, "lsmr")
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(time_limit=1e-9,
                                                                   warm_start=None))
    assert res.stop_reason == "time_limit" and res.iterations == 1
    assert res.status == "optimal_inaccurate" and res.skipped == []   # dense: bounded
    assert res.certificate is not None and res.certificate.method in (
        "dual-feasible", "shifted", "none")
    if res.bound is not None:
        assert res.bound <= res.objective


def test_a_solve_past_its_limit_is_a_typed_outcome(digits30, monkeypatch):
    """Through ``solve``: a result within its stated gap, or a typed SolverFailedError
    carrying the point (here the limit leaves a point far from optimal)."""
    _, y, g = digits30
    f = dvu(g, y, centroids="eliminated")
    _forbid(monkeypatch, repair.sopt, "lsq_linear")
    with pytest.raises(SolverFailedError) as info:
        solve(f, "LOWRANK", time_limit=1e-9, warm_start=None)
    exc = info.value
    assert exc.point is not None and exc.point.shape[0] == 30
    if exc.bound is not None:
        assert bound_gap(exc.objective, exc.bound) > FAR_FROM_OPTIMAL


def test_stop_reason_is_reported(digits30, no_paid_barrier):
    _, y, g = digits30
    f = dvu(g, y, centroids="eliminated")
    rep = solve(f, "LOWRANK", warm_start=None)
    assert rep.status == "optimal" and rep.extra["stop_reason"] == "certified"
    assert rep.extra["skipped"] == []
    gp = dvu_problem(g, y)
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(max_outer=1,
                                                                   warm_start=None))
    assert res.status != "optimal" and res.stop_reason == "max_outer"


def test_certificate_past_the_deadline_leaves_out_the_anchors(near_optimal):
    """Past its deadline ``_best_certificate`` certifies the first candidate only, without
    the shifted certificate's nearer anchors: the same bound as ``certify(anchors=False)``,
    never above the full certificate's (the anchors only raise it), and still below the
    solved optimum."""
    from sdpembed.lowrank.certificate import CertificateCache, _best_certificate

    _, res, space, pen, W, y_noisy = near_optimal
    opts = lowrank.LowRankOptions()
    full = lowrank.certify(space, pen, y_noisy, res.nu, factor=W)
    plain = lowrank.certify(space, pen, y_noisy, res.nu, factor=W, anchors=False)
    assert full.method == plain.method == "shifted"
    assert plain.bound < full.bound <= res.objective   # the anchors matter here
    late = _best_certificate(space, pen, W, [(y_noisy, res.nu), (res.y, res.nu)], opts,
                             CertificateCache(), target=res.objective,
                             deadline=time.perf_counter() - 1.0)
    assert late.y is y_noisy and late.bound == plain.bound


def test_a_solve_past_its_limit_makes_no_sparse_certificate_and_says_so(digits30,
                                                                         monkeypatch):
    """Above ``DenseLimits.eig`` the final certificate is a sparse eigenvalue computation
    and its verification a factorisation of the slack, neither bounded: past the limit
    neither runs, the result carries no bound (no certified gap) and ``skipped`` names the
    certificate. With time, the same problem is certified through those steps."""
    import sdpembed.lowrank.verify as verify
    from sdpembed.lowrank.options import DenseLimits

    _, y, g = digits30
    gp = dvu_problem(g, y)
    sparse = DenseLimits(eig=5)
    full = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(
        warm_start=None, dense_limits=sparse))
    assert full.status == "optimal" and full.skipped == [] and full.certificate.verified
    for module, name in [(lowrank.certificate, "_bottom"), (lowrank.certificate, "_lambda_min"),
                         (verify, "sparse_verify")]:
        _forbid(monkeypatch, module, name)
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(
        time_limit=1e-9, warm_start=None, dense_limits=sparse))
    assert res.stop_reason == "time_limit" and res.iterations == 1
    assert res.skipped == ["final certificate"]
    assert res.bound is None and res.certified_gap is None and res.estimated_gap is None
    assert res.certificate.method == "none" and "time limit" in res.certificate.note
    assert res.status == "optimal_inaccurate" and res.objective > full.objective


def test_verification_starts_no_factorisation_past_its_deadline(near_optimal, monkeypatch):
    """``_verified_lambda_min`` past its deadline: no factorisation, and the reason says
    the time limit (the certificate then stays an unverified estimate)."""
    import sdpembed.lowrank.verify as verify

    _, res, space, _, _, _ = near_optimal
    lam = float(lowrank.certify(space, lowrank.DistancePenalty(space.gp), res.y,
                                res.nu).lambda_min)
    mu, why, checks = verify._verified_lambda_min(space, res.y, res.nu, lam)
    assert mu is not None and len(checks) >= 1       # with time: verified
    for name in ("sparse_verify", "_verify_psd_shift"):
        _forbid(monkeypatch, verify, name)
    mu, why, checks = verify._verified_lambda_min(space, res.y, res.nu, lam,
                                                  deadline=time.perf_counter() - 1.0)
    assert mu is None and checks == [] and "time limit" in why


def test_cache_start_by_keeps_the_slack_of_an_estimated_step():
    """A step with no estimate may start until the deadline; one estimated to take
    ``s`` seconds until ``deadline + slack - s``, never after the deadline."""
    from sdpembed.lowrank.certificate import CertificateCache

    cache = CertificateCache(deadline=100.0, slack=0.5)
    assert cache.start_by(None) == 100.0
    assert cache.start_by(0.2) == 100.0            # within the slack
    assert cache.start_by(2.5) == pytest.approx(98.0)
    assert cache.block_estimate() is None and cache.verify_estimate() is None
    cache.eig_seconds = 1.0
    assert cache.block_estimate() == 1.0           # before any certificate: the Lanczos run
    cache.block_seconds += [0.3, 0.7]
    assert cache.block_estimate() == 0.7
    assert not CertificateCache().late(1e9)        # no time limit: never late


def test_a_final_certificate_estimated_past_the_deadline_is_not_started(near_optimal,
                                                                         monkeypatch):
    """Above ``DenseLimits.eig`` a final certificate whose estimate (the solve's earlier
    sparse certificates) ends past the deadline by more than the slack is not started: no
    bound, the note says so. With the deadline far enough, it is made and bounds the
    solved optimum."""
    from sdpembed.lowrank.certificate import FINAL_SKIPPED, CertificateCache, _best_certificate
    from sdpembed.lowrank.options import DenseLimits

    gp, res, _, pen, W, y_noisy = near_optimal
    space = lowrank.FactorSpace(gp, None, limits=DenseLimits(eig=5))
    opts = lowrank.LowRankOptions()
    cands = [(res.y, res.nu), (y_noisy, res.nu)]
    made = _best_certificate(space, pen, W, cands, opts, CertificateCache(), final=True)
    assert made.bound is not None and made.bound <= res.objective + 1e-9 * abs(res.objective)
    cache = CertificateCache(deadline=time.perf_counter() + 30.0, slack=1.0,
                             block_seconds=[60.0])
    _forbid(monkeypatch, lowrank.certificate, "_bottom")
    skipped = _best_certificate(space, pen, W, cands, opts, cache, final=True,
                                deadline=cache.deadline)
    assert skipped.bound is None and skipped.note == FINAL_SKIPPED and skipped.y is res.y


def test_a_lowrank_point_with_no_bound_and_no_estimate_is_refused(digits30):
    """A solve stopped by its limit whose final certificate was not made (no bound, no
    estimated gap) has nothing saying how far it is from the optimum: ``solve`` raises
    a typed error carrying the point instead of returning it (its relative
    infeasibility, 0, is not a distance from the optimum)."""
    from sdpembed.lowrank.options import DenseLimits

    _, y, g = digits30
    f = dvu(g, y, centroids="eliminated")
    with pytest.raises(SolverFailedError, match="without a certificate") as info:
        solve(f, "LOWRANK", time_limit=1e-9, warm_start=None,
              dense_limits=DenseLimits(eig=5))
    assert info.value.point is not None and info.value.bound is None

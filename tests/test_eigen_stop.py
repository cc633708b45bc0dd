"""A failed eigensolve inside ``sparse_bottom`` (scipy's ``ArpackError``) is a typed stop,
``EigensolveFailed``, sharing ``EigenStop`` with the time limit's ``CertificateLate``, and
every caller handles it honestly: no untyped error, no bound, lift, re-estimate or rank
growth claimed from eigenpairs that were not computed (issue 40; instance 105005 of the
differential met ARPACK's error 3 in a certificate's block).

ARPACK is made to fail by replacing ``sparse_slack.eigsh`` (the shift-invert run; the
coarse Lanczos estimates of :mod:`~sdpembed.lowrank.spectrum` are left alone). The
references are dense eigenvalues of the slack matrix and CLARABEL's optimum.
"""

import numpy as np
import pytest
import scipy.sparse.linalg as spla

import sdpembed.lowrank as lowrank
from sdpembed.exceptions import SdpEmbedError
from sdpembed.formulations import dvu
from sdpembed.formulations.dvu import dvu_problem
from sdpembed.formulations.gram import centering_basis
from sdpembed.lowrank import certificate as cmod
from sdpembed.lowrank import sparse_slack
from sdpembed.lowrank.escape import escape_directions
from sdpembed.lowrank.sparse_slack import CertificateLate, EigensolveFailed, EigenStop
from sdpembed.lowrank.verify import _sparse_verified_lambda_min


@pytest.fixture(scope="module")
def data(digits90):
    return digits90


@pytest.fixture()
def case(data):
    """A 90-point interval DVU above a lowered ``limits.eig`` (every bottom block by
    shift-invert) and multipliers whose slack has negative eigenvalues."""
    X, y, graph = data
    gp = dvu_problem(graph, y)
    space = lowrank.FactorSpace(gp, None, limits=lowrank.DenseLimits(eig=10))
    pen = lowrank.DistancePenalty(gp)
    yy = np.random.default_rng(1).uniform(-1, 1, pen.t.size) * pen.w
    assert cmod._block_certificate(space, pen)
    return space, pen, yy, 0.0


def _exact(space, y, nu):
    S = space.apply_S(np.eye(space.dim), y, space.duals(nu))
    H = centering_basis(space.dim)
    return np.linalg.eigvalsh(H.T @ S @ H)


def _arpack_fails(monkeypatch, after: int = 0) -> list:
    """``sparse_slack.eigsh`` raises ARPACK's error 3 from its ``after + 1``-th call on;
    returns the list of calls."""
    calls, real = [], sparse_slack.eigsh

    def eigsh(*args, **kw):
        calls.append(1)
        if len(calls) > after:
            raise spla.ArpackError(3)
        return real(*args, **kw)
    monkeypatch.setattr(sparse_slack, "eigsh", eigsh)
    return calls


def test_the_stops_are_typed():
    assert issubclass(EigensolveFailed, EigenStop) and issubclass(CertificateLate, EigenStop)
    assert issubclass(EigenStop, SdpEmbedError) and issubclass(EigenStop, RuntimeError)


def test_sparse_bottom_raises_a_typed_stop(case, monkeypatch):
    space, pen, y, nu = case
    _arpack_fails(monkeypatch)
    with pytest.raises(EigensolveFailed, match="ARPACK error 3") as info:
        sparse_slack.sparse_bottom(space, y, nu, 12, sigma=-10.0)
    assert isinstance(info.value.__cause__, spla.ArpackError)


def test_certify_claims_no_bound(case, monkeypatch):
    space, pen, y, nu = case
    _arpack_fails(monkeypatch)
    cert = cmod.certify(space, pen, y, nu, cache=cmod.CertificateCache(), block=12)
    assert cert.bound is None and "ARPACK error 3" in cert.note
    assert cmod.BLOCK_STOPPED not in cert.note      # a failure, not the time limit


def test_the_cache_block_gives_no_pairs_and_no_directions(case, monkeypatch):
    """``CertificateCache.bottom`` (the escape block, the stall growth): ``None``, and the
    escape directions are the certificate's own vector only (with ARPACK working: more)."""
    space, pen, y, nu = case
    cert = cmod.certify(space, pen, y, nu, block=4)
    assert cert.lambda_min < 0
    assert len(escape_directions(space, cmod.CertificateCache(), cert, room=20)) > 1
    calls = _arpack_fails(monkeypatch)
    assert cmod.CertificateCache().bottom(space, y, nu, 8) is None
    only = escape_directions(space, cmod.CertificateCache(), cert, room=20)
    assert len(calls) == 2 and len(only) == 1 and only[0] is cert.eig.vector


def test_the_stall_growth_does_not_grow(data, case, outer_loop, monkeypatch):
    X, y_lab, graph = data
    _, _, y, _ = case
    loop, _ = outer_loop(dvu(graph, y_lab, centroids="eliminated"),
                         lowrank.LowRankOptions(dense_limits=lowrank.DenseLimits(eig=10)))
    loop.y = y
    rank = loop.W.shape[1]
    calls = _arpack_fails(monkeypatch)
    entry = {}
    assert not loop._grow_on_stall(entry)
    assert calls and loop.W.shape[1] == rank and entry == {}


def test_a_lift_stops_at_the_last_known_eigenpair(case, monkeypatch):
    """``lift_multipliers``: a failed first block raises ``EigensolveFailed`` (typed); a
    failure in the second round returns the first round's multipliers with their own
    (exact) smallest eigenvalue, not a lifted point whose eigenvalue was never computed."""
    space, pen, y, nu = case
    _arpack_fails(monkeypatch)
    with pytest.raises(EigensolveFailed):
        lowrank.lift_multipliers(space, pen, y, nu, n_eig=12, min_block=8)
    monkeypatch.undo()
    calls = _arpack_fails(monkeypatch, after=1)
    y_l, eig = lowrank.lift_multipliers(space, pen, y, nu, n_eig=12, min_block=8)
    assert len(calls) == 2
    assert np.array_equal(y_l, np.clip(y, -pen.w, pen.w))
    w = _exact(space, y_l, nu)
    assert abs(eig.value - w[0]) <= 1e-8 * np.abs(w).max()


def test_the_verification_goes_lower_without_the_estimate(case, monkeypatch):
    """The sparse verification's re-estimate (an estimate above lambda_min shows as a
    non-positive pivot): without it the tries go lower; what it proves holds."""
    space, pen, y, nu = case
    w = _exact(space, y, nu)
    est = w[0] + 0.5 * abs(w[0])
    mu, why, _ = _sparse_verified_lambda_min(space, y, nu, est)
    assert mu is not None and mu <= w[0], why       # with the re-estimate: proved
    calls = _arpack_fails(monkeypatch)
    for steps in (2, 12):
        mu, why, checks = _sparse_verified_lambda_min(space, y, nu, est, max_steps=steps)
        assert calls, "the re-estimate was not tried"
        assert len(checks) == steps or mu is not None
        assert (mu is None and "non-positive pivot" in why) or mu <= w[0], (mu, why)


#: CLARABEL's optimum of the 90-point problem (``solve(f, "CLARABEL").objective``, 18 CPU s
#: on the 2-core machine, 2026-11-30)
_CLARABEL = -1.1514247848533083


@pytest.mark.parametrize("max_outer", [2, 4])
def test_a_solve_whose_eigensolves_fail_claims_no_false_bound(data, monkeypatch, max_outer):
    """End to end: every shift-invert ARPACK run fails. After 2 outer iterations no
    certificate exists and the solve says so with a typed ``SolverFailedError``; after 4
    the dual barrier's multipliers (no ARPACK) are certified, verified by a sparse
    factorisation, and their bound lies below CLARABEL's optimum. Never ARPACK's error."""
    from sdpembed.exceptions import SolverFailedError
    from sdpembed.solvers import solve

    X, y, graph = data
    f = dvu(graph, y, centroids="eliminated")
    calls = _arpack_fails(monkeypatch)
    try:
        rep = solve(f, "LOWRANK", max_outer=max_outer, dense_limits=lowrank.DenseLimits(eig=10))
    except SolverFailedError as exc:
        assert max_outer == 2 and "without a certificate" in str(exc)
        assert calls
        return
    assert max_outer == 4 and calls and rep.status == "optimal"
    assert "verified" in rep.extra["certificate"]
    assert rep.extra["lower_bound"] <= _CLARABEL + 1e-7 * abs(_CLARABEL) <= rep.objective + 1e-6


def test_a_solve_whose_lanczos_runs_fail_is_typed(data, monkeypatch):
    """Every Lanczos run of :mod:`~sdpembed.lowrank.spectrum` fails (ARPACK error 3), the
    shift-invert blocks work: the unboundedness test at the coercive point, the
    certificate's undeflated retry, ``mu0`` and the Farkas test each take it as "not
    proved" (on main the first let SciPy's ``ArpackError`` out of ``solve``); the solve
    ends in a typed error or a bound below CLARABEL's optimum."""
    from sdpembed.lowrank import spectrum
    from sdpembed.solvers import solve

    X, y, graph = data
    f = dvu(graph, y, centroids="eliminated")
    calls = []

    def eigsh(*args, **kw):
        calls.append(1)
        raise spla.ArpackError(3)
    monkeypatch.setattr(spectrum, "eigsh", eigsh)
    for max_outer in (2, 10):
        try:
            rep = solve(f, "LOWRANK", max_outer=max_outer,
                        dense_limits=lowrank.DenseLimits(eig=10))
        except SdpEmbedError:
            continue
        assert rep.extra["lower_bound"] <= _CLARABEL + 1e-7 * abs(_CLARABEL)
    assert calls

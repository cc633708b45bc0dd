"""The rounding allowance of a dense-``eigh`` certificate (``sdpembed.lowrank.rounding``;
docs/tuning.md, "A rounding allowance in every dense certificate").

A dense ``eigh`` of :math:`S(y,\\nu)` proves :math:`\\lambda_{\\min}(S) \\ge \\mu - \\delta` only,
:math:`\\delta` of the size of :math:`n\\,\\epsilon\\,\\|S\\|`: far below ``tol`` where the
multipliers are of the objective's size, of its size where they grow to 1e8 (an equality
problem without a strictly feasible point: seed 383, n 12-40, of the differential test)."""

import numpy as np
import pytest

from problems.differential import make_instance
from sdpembed.lowrank import certificate as certificate_module
from sdpembed.lowrank.backend import _formulation_problem
from sdpembed.lowrank.certificate import CHECK_DENSE, certify, relative_gap
from sdpembed.lowrank.equality_barrier import equality_barrier
from sdpembed.lowrank.penalty import DistancePenalty
from sdpembed.lowrank.rounding import eigh_allowance, rounding_allowance, sum_allowance
from sdpembed.lowrank.space import FactorSpace

TOL = 1e-4      # LOWRANK's default relative gap


def _problem(seed: int, high: int = 60):
    f, _ = make_instance(seed, (12, high)).build()
    gp, basis, _ = _formulation_problem(f)
    assert basis is None
    return FactorSpace(gp), DistancePenalty(gp)


def _without_allowance(monkeypatch):
    """The certificate as it was before the allowance (both allowances 0)."""
    monkeypatch.setattr(certificate_module, "eigh_allowance", lambda *args: 0.0)
    monkeypatch.setattr(certificate_module, "sum_allowance", lambda *args: 0.0)


def test_a_positive_eigenvalue_inside_the_rounding_certifies_nothing_at_tol(monkeypatch):
    """383's barrier pair (multipliers about 1e8, ||S|| about 1e9) moved by s = 2 % of the
    allowance over the graph's algebraic connectivity along every edge (S grows by s L, so
    its computed lambda_min is positive, above eigh's actual error yet inside the
    allowance): the plain dual value is within tol of the barrier's point, and the dense
    certificate used to certify it ``"dual-feasible"``; now its bound is lowered by the
    allowance times a trace bound and misses tol."""
    space, pen = _problem(383, 40)
    res = equality_barrier(space, pen, rel_gap=1e-5, feas_tol=1e-7)
    assert res.points is not None and np.abs(res.y).max() > 1e7
    delta = eigh_allowance(space, res.y, res.nu)
    L = (space.ET @ space.E).toarray()
    connectivity = np.linalg.eigvalsh(L)[1]
    y = res.y + 0.02 * delta / connectivity
    cert = certify(space, pen, y, res.nu, factor=res.points, eig_tol=1e-6)
    assert cert.check == CHECK_DENSE and cert.verified
    assert cert.rounding == pytest.approx(eigh_allowance(space, y, res.nu), rel=1e-12)
    assert 0.0 < cert.lambda_min < cert.rounding
    plain = -pen.conjugate(y) - space.linear_offset(space.duals(res.nu))
    assert relative_gap(res.objective, plain) <= TOL
    assert cert.method != "dual-feasible"
    assert relative_gap(res.objective, cert.bound) > TOL
    assert cert.bound < plain
    # the same pair without the allowance: the false "dual-feasible" of the last round
    _without_allowance(monkeypatch)
    old = certify(space, pen, y, res.nu, factor=res.points, eig_tol=1e-6)
    assert old.method == "dual-feasible" and old.bound == plain
    # the barrier's gate sees the same rounding at its point: above a tenth of tol
    assert rounding_allowance(space, pen, res.y, res.nu, res.points) > 0.1 * TOL * abs(
        res.objective)


@pytest.mark.parametrize("seed", [99085, 99192, 90882])
def test_an_ordinary_bound_moves_by_less_than_1e_10(seed, monkeypatch):
    """Barrier pairs of ordinary size (max |y| 48-2,200): the dense certificate stays
    ``"dual-feasible"``; its bound moves by the rounding of the dual value's sum only, less
    than 1e-10 relative, and never up."""
    space, pen = _problem(seed)
    res = equality_barrier(space, pen, rel_gap=1e-5, feas_tol=1e-8)
    new = certify(space, pen, res.y, res.nu, factor=res.points, eig_tol=1e-6)
    assert new.method == "dual-feasible" and new.lambda_min >= new.rounding > 0
    move = sum_allowance(pen, res.y)
    assert new.bound == pytest.approx(
        -pen.conjugate(res.y) - space.linear_offset(space.duals(res.nu)) - move, rel=1e-15)
    _without_allowance(monkeypatch)
    old = certify(space, pen, res.y, res.nu, factor=res.points, eig_tol=1e-6)
    assert old.method == "dual-feasible"
    assert new.bound <= old.bound
    assert old.bound - new.bound < 1e-10 * abs(old.bound)


def test_a_shifted_interval_bound_moves_by_less_than_1e_10(monkeypatch):
    """An interval instance whose certificate is shifted towards the coercive point (the
    eigenvalue negative): the allowance enters through the anchors' eigenvalues and the
    combination's; the bound moves by less than 1e-10 relative and never up."""
    from sdpembed import solve

    f, _ = make_instance(99132).build()
    rep = solve(f, solver="LOWRANK", max_outer=200)
    gp, _, _ = _formulation_problem(f)
    space, pen = FactorSpace(gp), DistancePenalty(gp)
    assert pen.mode == "interval"
    y = np.asarray(rep.extra["multipliers"]["y"], float)
    nu = rep.extra["multipliers"].get("nu")
    # a pair with lambda_min < 0: the multipliers moved off the optimum a little
    y = y * (1.0 - 1e-3)
    new = certify(space, pen, y, nu, eig_tol=1e-6)
    _without_allowance(monkeypatch)
    old = certify(space, pen, y, nu, eig_tol=1e-6)
    assert old.method == new.method == "shifted" and new.check == CHECK_DENSE
    assert new.bound <= old.bound
    assert old.bound - new.bound < 1e-10 * abs(old.bound)

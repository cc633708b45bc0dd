"""LOWRANK's lift where the best certificate is dual-feasible: a candidate whose own bound is
within ``tol`` and far closer than that certificate's (only indefinite) is lifted
(docs/tuning.md, "The lift from the best own bound when the best certificate is PSD")."""

import numpy as np
import pytest

import sdpembed.lowrank as lowrank
from sdpembed.formulations.dvu import dvu, dvu_problem
from sdpembed.formulations.gram import centering_basis
from sdpembed.lowrank.certificate import CertificateCache, relative_gap
from sdpembed.lowrank.lifted import _OWN_LIFT, _lifted_certificate
from sdpembed.solvers import solve
from tests.test_large import BOUND_SLACK, _perturbed_optimal_multipliers, _three_class_digits


@pytest.fixture(scope="module")
def case():
    """36 digits (DVU, interval): the tight optimum's multipliers perturbed by 1e-4 of their
    largest magnitude (S indefinite, own gap about 1.1e-4: ``noisy``) and CLARABEL's
    optimum."""
    _, _, y_obs, graph = _three_class_digits(36, seed=1)
    gp, res, space, pen, y_noisy = _perturbed_optimal_multipliers(dvu_problem(graph, y_obs))
    opt = solve(dvu(graph, y_obs, centroids="eliminated"), solver="CLARABEL").objective
    return gp, res, space, pen, y_noisy, opt


def _psd_certificate(space, pen, res, s):
    """Certificate at the optimum's multipliers moved a fraction ``s`` towards the coercive
    point w: dual-feasible, its gap growing with ``s``."""
    y = res.y + s * (pen.w - res.y)
    return lowrank.certify(space, pen, y, res.nu, factor=res.factor), y


def _lift(space, pen, res, cert, y_psd, y_noisy, tol):
    p = res.objective
    return _lifted_certificate(
        space, pen, cert, relative_gap(p, cert.bound), cert.bound,
        [(y_psd, res.nu), (y_noisy, res.nu)], lowrank.LowRankOptions(tol=tol),
        CertificateCache(), p)


def test_a_far_closer_own_bound_is_lifted_past_a_psd_certificate(case):
    """The dual-feasible certificate (gap about 8e-2) is the best; the perturbed
    multipliers' own gap (1.1e-4) is within tol = 2e-4 and far below it: the lift is made,
    its S is PSD (dense eigenvalues on 1-perp), its bound lies below CLARABEL's optimum and
    above the dual-feasible certificate's, within tol of the objective."""
    gp, res, space, pen, y_noisy, opt = case
    p = res.objective
    cert, y_psd = _psd_certificate(space, pen, res, 1e-3)
    own_gap = relative_gap(p, -pen.conjugate(y_noisy))
    assert cert.lambda_min >= 0 and own_gap <= 2e-4 < relative_gap(p, cert.bound) * _OWN_LIFT
    lifted = _lift(space, pen, res, cert, y_psd, y_noisy, tol=2e-4)
    assert lifted is not None and lifted.lambda_min >= 0
    Hb = centering_basis(gp.n)
    SH = space.apply_S(Hb, lifted.y, lifted.nu)
    assert np.linalg.eigvalsh(0.5 * (Hb.T @ SH + SH.T @ Hb))[0] >= 0
    assert cert.bound < lifted.bound <= opt + BOUND_SLACK * abs(opt)
    assert own_gap <= relative_gap(p, lifted.bound) <= 2e-4


def test_no_lift_past_a_psd_certificate_that_is_near_or_when_tol_is_out_of_reach(case):
    """No lift where the own bound's gap exceeds tol (the lift could only lower it), nor
    where the dual-feasible certificate's gap is within 1/_OWN_LIFT of it."""
    _, res, space, pen, y_noisy, _ = case
    p = res.objective
    own_gap = relative_gap(p, -pen.conjugate(y_noisy))
    far, y_far = _psd_certificate(space, pen, res, 1e-3)
    assert _lift(space, pen, res, far, y_far, y_noisy, tol=0.5 * own_gap) is None
    near, y_near = _psd_certificate(space, pen, res, 5e-6)
    gap_near = relative_gap(p, near.bound)
    assert near.lambda_min >= 0 and own_gap < gap_near < own_gap / _OWN_LIFT
    assert _lift(space, pen, res, near, y_near, y_noisy, tol=2e-4) is None

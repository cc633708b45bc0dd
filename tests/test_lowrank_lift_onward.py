"""LOWRANK's second lift above ``limits.eig``: onward from the first lift's multipliers,
raising only, instead of a two-way lift from the candidate again (docs/tuning.md, "9,298
seed 1: the failed first attempt and the rank doubling")."""

import numpy as np
import pytest

import sdpembed.lowrank as lowrank
import sdpembed.lowrank.lifted as lifted_mod
from sdpembed.formulations.dvu import dvu, dvu_problem
from sdpembed.formulations.gram import centering_basis
from sdpembed.lowrank.certificate import CertificateCache, relative_gap
from sdpembed.lowrank.options import DenseLimits
from sdpembed.solvers import solve
from tests.test_large import BOUND_SLACK, _perturbed_optimal_multipliers, _three_class_digits


@pytest.fixture(scope="module")
def case():
    """36 digits (DVU, interval): the tight optimum's multipliers perturbed by 1e-4 of their
    largest magnitude (S indefinite) and CLARABEL's optimum."""
    _, _, y_obs, graph = _three_class_digits(36, seed=1)
    gp, res, _, pen, y_noisy = _perturbed_optimal_multipliers(dvu_problem(graph, y_obs))
    opt = solve(dvu(graph, y_obs, centroids="eliminated"), solver="CLARABEL").objective
    return gp, res, pen, y_noisy, opt


def _lift_calls(monkeypatch, space, pen, res, y_noisy, tol):
    """``_lifted_certificate`` from the perturbed multipliers with every lift cut at one
    round (so that the first stops short of ``tol``), and the calls it made."""
    calls = []
    real = lifted_mod.lift_multipliers

    def one_round(*args, **kwargs):
        out = real(*args, **{**kwargs, "rounds": 1})
        calls.append((args, kwargs, out))
        return out

    monkeypatch.setattr(lifted_mod, "lift_multipliers", one_round)
    cache = CertificateCache()
    cert = lowrank.certify(space, pen, y_noisy, res.nu, factor=res.factor, cache=cache)
    assert cert.lambda_min < 0
    out = lifted_mod._lifted_certificate(
        space, pen, cert, relative_gap(res.objective, cert.bound), None, [(y_noisy, res.nu)],
        lowrank.LowRankOptions(tol=tol), cache, res.objective)
    return out, calls


def _psd(gp, space, y, nu) -> float:
    Hb = centering_basis(gp.n)
    SH = space.apply_S(Hb, y, nu)
    return float(np.linalg.eigvalsh(0.5 * (Hb.T @ SH + SH.T @ Hb))[0])


@pytest.mark.parametrize("sparse", [True, False])
def test_the_second_lift_goes_onward_above_the_dense_limit(case, monkeypatch, sparse):
    """With the first lift's gap between tol and _SECOND_LIFT tol, the second lift starts
    (sparse blocks: limits.eig = 20 < 36 points) from the first lift's multipliers, one way,
    its shift placed by the first's lambda_min, no lower than the first's bound; its bound
    is valid (below CLARABEL's optimum) and not below the first's. At the default limits
    (dense) it starts from the candidate again, both ways."""
    gp, res, pen, y_noisy, opt = case
    limits = DenseLimits(eig=20, block=8) if sparse else DenseLimits()
    space = lowrank.FactorSpace(gp, None, limits=limits)
    first, _ = _lift_calls(monkeypatch, space, pen, res, y_noisy, tol=1e-9)   # one lift
    g1 = relative_gap(res.objective, first.bound)
    out, calls = _lift_calls(monkeypatch, space, pen, res, y_noisy, tol=g1 / 1.2)
    assert len(calls) == 2
    (a1, k1, (y1, eig1)), (a2, k2, (y2, eig2)) = calls
    assert np.array_equal(a1[2], y_noisy) and not k1["both_ways"]
    if sparse:
        assert np.array_equal(a2[2], y1) and not k2["both_ways"]
        assert k2["eigenpairs"] is None and k2["guess"] == eig1.value < 0
        assert k2["floor"] == first.bound
        assert np.all(y2 >= y1)
        assert eig2.value == pytest.approx(_psd(gp, space, y2, res.nu), abs=1e-9)
    else:
        assert np.array_equal(a2[2], y_noisy) and k2["both_ways"]
    assert first.bound <= out.bound <= opt + BOUND_SLACK * abs(opt)

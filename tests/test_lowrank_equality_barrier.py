"""A primal-dual pair of small ``"equality"`` problems by a barrier method on the multipliers
(docs/tuning.md, "99085 and 99192: the dual barrier for equality rows").

Instances 99085 (equality DVU, explicit centroids, SNR, two row-sum rows, 41 points) and
99192 (equality DVU, eliminated centroids, 35 points) of the differential test are strictly
feasible by a relative margin of 3e-7 and 4e-7 only; their optima are CLARABEL's (CSDP
agreeing to 1e-7).
"""

import numpy as np
import pytest

from problems.differential import make_instance
from sdpembed.lowrank.backend import _formulation_problem
from sdpembed.lowrank.certificate import certify
from sdpembed.lowrank.equality_barrier import equality_barrier, equality_barrier_fits
from sdpembed.lowrank.penalty import DistancePenalty
from sdpembed.lowrank.space import FactorSpace

#: CLARABEL's optima (docs/tuning.md, "99085: equality distances barely strictly feasible")
OPTIMA = {99085: -0.1593364885, 99192: -0.4472676}


def _problem(seed: int):
    f, _ = make_instance(seed).build()
    gp, basis, _ = _formulation_problem(f)
    assert basis is None
    return FactorSpace(gp), DistancePenalty(gp)


@pytest.mark.parametrize("seed", sorted(OPTIMA))
def test_the_barrier_brackets_the_optimum_with_a_feasible_point(seed):
    space, pen = _problem(seed)
    assert equality_barrier_fits(space, pen)
    res = equality_barrier(space, pen, rel_gap=1e-5, feas_tol=1e-7)
    opt = OPTIMA[seed]
    assert res.status == "converged", res.status
    assert res.gap <= 1e-5 * abs(res.bound)
    # the point: centred, on the distance rows to 1e-7, its objective (recomputed from the
    # points) within 1e-4 of the optimum and not below it beyond the reference's tolerance
    V = res.points
    assert np.allclose(V.sum(axis=0), 0.0, atol=1e-10)
    i, j = space.gp.edges.T
    D = np.sum((V[i] - V[j]) ** 2, axis=1)
    assert np.linalg.norm(D - pen.t) <= 1e-7 * np.linalg.norm(pen.t)
    value = float(np.sum(V * space.apply_C(V)))
    assert value == pytest.approx(res.objective, rel=1e-9)
    assert abs(value - opt) <= 1e-4 * abs(opt)
    assert value >= opt - 1e-7 * abs(opt)
    if space.H is not None:         # the SNR row <H, G> <= 0
        assert float(np.sum(V * space.apply_H(V))) <= 0.0
    if space.K is not None:
        assert space.K_violation(space.K_values(V)) <= 1e-7
    # the multipliers: a verified bound (dense lambda_min), at most the optimum
    cert = certify(space, pen, res.y, res.nu, factor=V, eig_tol=1e-6)
    assert cert.verified and cert.bound <= opt + 1e-7 * abs(opt)
    assert abs(cert.bound - opt) <= 1e-4 * abs(opt)


def test_the_barrier_is_refused_outside_equality_rows():
    f, _ = make_instance(99101).build()        # equality DVU in the full space: fits
    gp, _, _ = _formulation_problem(f)
    assert equality_barrier_fits(FactorSpace(gp), DistancePenalty(gp))
    Q = np.linalg.qr(np.c_[np.ones(gp.n), np.eye(gp.n)[:, :5]])[0][:, 1:]
    assert not equality_barrier_fits(FactorSpace(gp, Q), DistancePenalty(gp))
    f, _ = make_instance(99132).build()        # interval DVU
    gp, _, _ = _formulation_problem(f)
    assert gp.distances != "equality"
    assert not equality_barrier_fits(FactorSpace(gp), DistancePenalty(gp))

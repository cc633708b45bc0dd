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


def _farkas_check(gp, y, nu):
    """``(lambda_min, value, size)`` of multipliers ``(y, nu)`` assembled here, apart from
    :mod:`sdpembed.lowrank.farkas`: :math:`S_0 = \\sum_e y_e a_ea_e^T + \\sum_k z_kA_k` entry
    by entry from the edges and the added rows' triplets, on a fresh orthonormal basis of
    :math:`\\mathbf 1^\\perp`, and the value :math:`y^T\\bar D + z^Tb`."""
    import scipy.linalg as sla
    assert gp.snr is None
    K, n = gp.constraints, gp.n
    S = np.zeros((n, n))
    for (i, j), w in zip(gp.edges, y):
        S[i, i] += w
        S[j, j] += w
        S[i, j] -= w
        S[j, i] -= w
    z = np.asarray(nu, float)
    for i, j, val, k in zip(K.i, K.j, K.value, K.row):
        S[i, j] += 0.5 * val * z[k]
        S[j, i] += 0.5 * val * z[k]
    P = sla.null_space(np.ones((1, n)))
    lam = float(np.linalg.eigvalsh(P.T @ S @ P)[0])
    value = float(y @ gp.target + z @ K.rhs)
    return lam, value, float(np.linalg.norm(S))


def test_an_infeasible_equality_problem_is_proved_by_the_barriers_ray_92097():
    """92097 (equality DVU, eliminated centroids, 48 points, a cannot-link and a row-sum row
    added): infeasible (CSDP and SDPA prove it; CLARABEL fails). The augmented Lagrangian
    stalls at a relative violation of 5e-3, below the loop's ray test (1e-2), and its last
    multipliers prove nothing; the barrier finds no primal point and its dual value grows
    along a Farkas ray. LOWRANK now stops there with ``InfeasibleError`` (before: refused at
    ``time_limit=60`` with ``SolverFailedError``). The ray is checked here apart from the
    solver's own check: S_0 positive definite on 1-perp and a negative value, both far above
    rounding, inequality multipliers non-negative."""
    from sdpembed import solve
    from sdpembed.exceptions import InfeasibleError
    from sdpembed.lowrank.equality_barrier import EqualityOptimum
    from sdpembed.lowrank.options import LowRankOptions
    from sdpembed.lowrank.solve import lowrank_solve

    f, _ = make_instance(92097).build()
    gp, basis, _ = _formulation_problem(f)
    assert basis is None and not gp.constraints.equality.any()
    # the barrier alone: no primal point, and its multipliers are the ray
    eq = EqualityOptimum(FactorSpace(gp), DistancePenalty(gp), tol=1e-4, feas_tol=1e-5)
    assert eq.fits and eq.run(deadline=np.inf) is None
    assert eq.result.points is None and eq.farkas() is not None
    res = lowrank_solve(gp, options=LowRankOptions(time_limit=600.0))
    assert res.status == "infeasible" and res.stop_reason == "infeasible", res.stop_reason
    scale = float(np.linalg.norm(np.r_[res.y, res.nu]))
    y, z = res.y / scale, res.nu / scale
    assert np.all(z >= 0)
    lam, value, size = _farkas_check(gp, y, z)
    eps = np.finfo(float).eps
    assert lam > 1e3 * gp.n * eps * size, (lam, size)
    assert value < -1e3 * eps * (np.abs(y) @ gp.target + np.abs(z) @ np.abs(gp.constraints.rhs))
    with pytest.raises(InfeasibleError, match="Farkas certificate"):
        solve(f, "LOWRANK", time_limit=600.0)

"""LOWRANK's Newton-CG preconditioner with the SNR row: the row's curvature on the blocks."""

import numpy as np
import pytest

from tests.test_lowrank_added_rows import point_blocks


@pytest.fixture(scope="module")
def snr_alm(partial_digits):
    """DVU with the SNR row on 40 digits, its space and ALM."""
    from sdpembed.formulations import dvu
    from sdpembed.lowrank import FactorSpace
    from sdpembed.lowrank.alm import _ALM
    from sdpembed.lowrank.options import LowRankOptions
    from sdpembed.lowrank.penalty import DistancePenalty

    X, y, graph, _ = partial_digits(40, n_class=3)
    gp = dvu(graph, y, centroids="eliminated", snr=4.0).current_problem()
    space = FactorSpace(gp, None)
    pen = DistancePenalty(gp)
    return space, pen, _ALM(space, pen, LowRankOptions())


def _low_rank_block(M, a: int) -> float:
    """Point ``a``'s diagonal entry of ``M``'s low-rank part :math:`U\\,\\mathrm{diag}(s)U^T`."""
    return float(np.sum(M.s * M.U[a] ** 2))


@pytest.mark.parametrize("nu_h", [0.0, 50.0])
def test_newton_preconditioner_blocks_include_the_snr_term(snr_alm, monkeypatch, nu_h):
    r"""The block-Jacobi preconditioner of Newton-CG is the inverse of the Hessian's diagonal
    r x r blocks less what it leaves out by design: the low-rank parts of the objective C
    and of the SNR matrix H (times the row's multiplier :math:`g_s`) and the SNR row's
    rank-one Gauss-Newton term :math:`2\sigma_h\,\mathrm{vec}(HW)\mathrm{vec}(HW)^T`. The
    SNR row's first-order term :math:`g_s\,\mathrm{diag}(H)` is on the blocks (without it
    the blocks missed curvature 1.8-5,700 times the objective's diagonal on the 2,500-digit
    SNR rows). Compared with the Hessian-vector product column by column, the centring
    projection off on both sides; 1e-5 relative (the distance term's products run in single
    precision). ``nu_h``: the row's multiplier, 0 or not; a random factor violates the row."""
    import sdpembed.lowrank.alm as alm_mod

    space, pen, alm = snr_alm
    assert space.H is not None and space.n_snr == 1
    captured = {}

    def fake_newton(fun, hess_at, x0, **kw):
        captured.update(hess_at=hess_at, precond_at=kw["precond_at"], x=x0)
        from sdpembed.lowrank.inner import _LBFGSResult
        return _LBFGSResult(x0, 0, 0.0)

    monkeypatch.setattr(alm_mod, "_newton_cg", fake_newton)
    monkeypatch.setattr(space, "project", lambda W, inplace=False: W)
    rng = np.random.default_rng(5)
    n, r = space.dim, 3
    W = 3.0 * rng.standard_normal((n, r))
    y = 0.01 * rng.standard_normal(pen.t.shape[0])
    nu = np.zeros(space.q)
    nu[0] = nu_h
    sigma_h = 1.0
    alm.subproblem(y, nu, 10.0, sigma_h)(W, 1e-8, 1, "newton")
    x = captured["x"]
    Wx = x.reshape(n, r)
    HW = space.apply_H(Wx)
    gs = max(0.0, nu_h + sigma_h * float(np.sum(Wx * HW)))
    assert gs > 0   # a random factor violates the SNR row: the row's term is on
    hv = captured["hess_at"](x)
    minv = captured["precond_at"](x)
    scale = max(float(np.abs(2.0 * gs * space.H.diag).max()), 1.0)
    for a in range(n):
        H_a, M_a = point_blocks(hv, minv, n, r, a)
        left_out = (2.0 * (_low_rank_block(space.C, a) + gs * _low_rank_block(space.H, a))
                    * np.eye(r) + 4.0 * sigma_h * np.outer(HW[a], HW[a]))
        np.testing.assert_allclose(M_a, H_a - left_out, rtol=1e-5,
                                   atol=1e-5 * max(np.abs(H_a).max(), scale))

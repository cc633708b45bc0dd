"""LOWRANK's rank growth on a stalled cheap gap, where the bottom eigenpairs are dense
(n <= ``limits.eig``): one column per eigenvalue of the dual slack below ``_STALL_SHARE``
times the most negative, in a block of ``_STALL_BLOCK`` (docs/tuning.md, "The stall growth
sized by the negative eigenvalues"); one singular-value ratio for both of the growth's
tests on the factor."""

import numpy as np
import pytest
from conftest import digits_dvu

from sdpembed.lowrank import stall
from sdpembed.lowrank.space import _rank_deficient


def _dense_slack_eigenvalues(space, y, nu):
    # S(y, nu) on the complement of the constant vector, column by column through the
    # space's own product, then numpy's eigvalsh: independent of the growth's eigensolver
    n = space.dim
    B = np.linalg.qr(np.c_[np.ones(n), np.eye(n)[:, : n - 1]])[0][:, 1:]
    SB = space.apply_S(B, y, nu)
    M = B.T @ SB
    return np.linalg.eigvalsh(0.5 * (M + M.T))


def test_stall_growth_adds_one_column_per_negative_eigenvalue_of_the_dense_slack(outer_loop):
    f = digits_dvu(60, 5)
    loop, _ = outer_loop(f, rank=3)
    space = loop.space
    assert space.dim <= space.limits.eig
    # multipliers 0.2 % of the way from zero to the coercive point: the slack keeps nine
    # negative eigenvalues of the objective's C, the last of them under a tenth of the first
    loop.y = 2e-3 * loop.pen.coercive_point()
    lam = _dense_slack_eigenvalues(space, loop.y, loop.nu)
    bottom = lam[: min(stall._STALL_BLOCK, space.dim - 2)]
    expected = int(np.sum(bottom < stall._STALL_SHARE * lam[0]))
    # the rule differs from the old tenth of lambda_min here, or the test could not fail
    assert expected > int(np.sum(bottom < 0.1 * lam[0])) >= 1
    r0, entry = loop.W.shape[1], {}
    assert loop._grow_on_stall(entry)
    assert loop.W.shape[1] == r0 + expected == entry["grew_rank"]
    assert entry["stall_lambda_min"] == pytest.approx(lam[0], rel=1e-8, abs=1e-12)


def test_one_singular_value_ratio_serves_both_tests():
    rng = np.random.default_rng(0)
    U, s, Vt = np.linalg.svd(rng.standard_normal((200, 6)), full_matrices=False)
    for smallest in (1e-9, 1e-6 * 0.5, 1e-5, 5e-4, 2e-3, 0.3):
        W = (U * np.r_[s[:5], smallest * s[0]]) @ Vt
        ratio = stall._sv_ratio(W)
        # closed form: the ratio the factor was built with
        assert ratio == pytest.approx(smallest, rel=1e-6)
        assert stall._null_direction(ratio) is _rank_deficient(W)
    assert stall._sv_ratio(np.zeros((10, 3))) == 0.0

"""LOWRANK's rank growth on a stalled cheap gap: one singular-value ratio of the factor for
both of the growth's tests on it (rank-deficient, saturated)."""

import numpy as np
import pytest

from sdpembed.lowrank import stall
from sdpembed.lowrank.space import _rank_deficient


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

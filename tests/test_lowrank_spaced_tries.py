"""Spaced certificate tries above ``DenseLimits.eig``: the rule that sets the next try from
the lifts' best gaps (``_OuterLoop._space_tries``), against its closed form."""

from types import SimpleNamespace

import numpy as np
import pytest

from sdpembed.lowrank.outer import _OuterLoop
from sdpembed.lowrank.spacing import _SPACE_CAP, _SPACE_MIN, _SPACE_SHARE

TOL = 1e-4


def _loop():
    return SimpleNamespace(opts=SimpleNamespace(tol=TOL), lifts=[], next_try=0, it=0)


def _lifts(loop, *pairs):
    for it, gap in pairs:
        loop.it = it
        _OuterLoop._space_tries(loop, gap)
    return loop.next_try


def test_the_first_lift_spaces_nothing():
    assert _lifts(_loop(), (17, 5e-3)) == 0


def test_the_wait_is_a_share_of_the_outers_the_rate_needs():
    # 1e-3 at outer 20, 5e-4 at outer 22: the gap halves every 2 outers, tol is
    # log2(5) halvings away, 2 log2(5) = 4.64 outers, half of them (int) ahead
    need = np.log(5e-4 / TOL) * 2 / np.log(2)
    assert _lifts(_loop(), (20, 1e-3), (22, 5e-4)) == 22 + int(_SPACE_SHARE * need) == 24


def test_the_wait_is_at_least_one_and_at_most_the_cap():
    fast = _lifts(_loop(), (10, 1e-1), (11, 3e-4))     # 300x in one outer: 0.2 outers
    slow = _lifts(_loop(), (30, 1.01e-3), (31, 1e-3))  # 1 % per outer: 230 outers
    assert (fast, slow) == (12, 31 + _SPACE_CAP)


def test_a_best_gap_that_did_not_fall_waits_the_cap():
    # a lift above the best gap keeps the best (the gap recorded is the best so far)
    loop = _loop()
    assert _lifts(loop, (40, 1e-3), (41, 2e-3)) == 41 + _SPACE_CAP
    assert loop.lifts == [(40, 1e-3), (41, 1e-3)]


@pytest.mark.parametrize("last", [_SPACE_MIN * TOL, 1.5e-4, 5e-5, -1e-6, None])
def test_no_wait_near_tol_or_without_a_gap(last):
    """Within ``_SPACE_MIN`` tol of closing (or no gap, or a bound above the point) every
    outer iteration tries again."""
    loop = _loop()
    assert _lifts(loop, (50, 1e-3), (52, last)) == 0


def test_a_later_pair_sets_a_fresh_window():
    loop = _loop()
    _lifts(loop, (20, 1e-3), (22, 5e-4))
    assert _lifts(loop, (24, 2.5e-4)) == 24 + int(_SPACE_SHARE * np.log(2.5) * 2 / np.log(2))
    # then within _SPACE_MIN tol: no new window (the last one ends where this lift was made)
    assert _lifts(loop, (25, 1.9e-4)) == 25

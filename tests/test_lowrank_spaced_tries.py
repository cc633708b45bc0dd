"""Spaced certificate tries above ``DenseLimits.eig``: the rule that sets the next try from
the lifts' best gaps (``_OuterLoop._space_tries``), against its closed form."""

from types import SimpleNamespace

import numpy as np
import pytest

from sdpembed.lowrank.outer import _OuterLoop
from sdpembed.lowrank.spacing import _FLOOR_FALL, _SPACE_CAP, _SPACE_MIN, _SPACE_SHARE

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


@pytest.mark.parametrize("last", [_SPACE_MIN * TOL, 5e-5, -1e-6, None])
def test_no_wait_at_tol_or_without_a_gap(last):
    """At ``_SPACE_MIN`` tol or below (a certified gap, or no gap, or a bound above the
    point) every outer iteration tries again."""
    loop = _loop()
    assert _lifts(loop, (50, 1e-3), (52, last)) == 0


def test_just_above_tol_the_wait_shrinks_to_one_outer():
    """Between tol and twice tol the same rule spaces the tries (usps2500-tangent-k8's
    tail, its best lifted gaps): 1.6 % in 4 outers, 14 % from tol, waits the cap; 1.5 % in
    one outer, 0.5 % from tol, reaches tol at the next outer at that rate, so it tries."""
    assert _SPACE_MIN == 1.0
    slow = np.log(1.14) * 4 / np.log(1.16 / 1.14)
    assert _SPACE_SHARE * slow > _SPACE_CAP
    assert _lifts(_loop(), (54, 1.16e-4), (58, 1.14e-4)) == 58 + _SPACE_CAP
    rate = np.log(1.02 / 1.005)
    assert int(_SPACE_SHARE * np.log(1.005) / rate) == 0 and 1.005 * np.exp(-rate) < 1
    assert _lifts(_loop(), (70, 1.02e-4), (71, 1.005e-4)) == 72


def test_after_a_slow_fall_the_next_try_waits_for_the_floor():
    """usps2500-tangent-k8's tail (best lifted gaps 1.0923e-4 at outer 62, 1.0591e-4 at
    66): the rate's own wait is 3 outers, but at 0.77 % a outer the best gap falls by
    ``_FLOOR_FALL`` only after 4; the rule takes the later one."""
    rate = np.log(1.0923 / 1.0591) / 4
    own = int(_SPACE_SHARE * np.log(1.0591) / rate)
    floor = int(np.ceil(_FLOOR_FALL / rate))
    assert (own, floor) == (3, 4)
    assert _lifts(_loop(), (62, 1.0923e-4), (66, 1.0591e-4)) == 66 + floor


def test_a_slow_fall_near_tol_waits_even_one_short_of_it():
    """1.01e-4 after 1.02e-4 one outer before: at that rate the next outer reaches
    1.0001e-4, not tol, so the floor's wait (ceil(0.03 / 0.98 %) = 4) holds."""
    rate = np.log(1.02 / 1.01)
    assert 1.01 * np.exp(-rate) > 1
    assert _lifts(_loop(), (70, 1.02e-4), (71, 1.01e-4)) == 71 + min(
        _SPACE_CAP, int(np.ceil(_FLOOR_FALL / rate)))


def test_a_fast_fall_is_not_held_by_the_floor():
    """car1000-onehot-k8 (lifts 4.94e-4 at outer 8, 2.18e-4 at 9): 56 % in one outer, the
    floor needs no wait; the rate's own (half of 0.95 outers) is one outer."""
    assert _lifts(_loop(), (8, 4.94e-4), (9, 2.18e-4)) == 10


def test_a_later_pair_sets_a_fresh_window():
    loop = _loop()
    _lifts(loop, (20, 1e-3), (22, 5e-4))
    assert _lifts(loop, (24, 2.5e-4)) == 24 + int(_SPACE_SHARE * np.log(2.5) * 2 / np.log(2))
    # then within tol: no new window (the last one ends where this lift was made)
    assert _lifts(loop, (25, 9e-5)) == 25

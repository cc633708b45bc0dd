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


@pytest.mark.parametrize("last", [_SPACE_MIN * TOL, 5e-5, -1e-6, None])
def test_no_wait_at_tol_or_without_a_gap(last):
    """At ``_SPACE_MIN`` tol or below (a certified gap, or no gap, or a bound above the
    point) every outer iteration tries again."""
    loop = _loop()
    assert _lifts(loop, (50, 1e-3), (52, last)) == 0


def test_just_above_tol_the_wait_shrinks_to_one_outer():
    """Between tol and twice tol the same rule spaces the tries (usps2500-tangent-k8's
    tail, its best lifted gaps): 1.6 % in 4 outers, 14 % from tol, waits the cap; 1 % in
    one outer, 1 % from tol, half of one outer, so the next outer tries."""
    assert _SPACE_MIN == 1.0
    slow = np.log(1.14) * 4 / np.log(1.16 / 1.14)
    assert _SPACE_SHARE * slow > _SPACE_CAP
    assert _lifts(_loop(), (54, 1.16e-4), (58, 1.14e-4)) == 58 + _SPACE_CAP
    near = np.log(1.01) / np.log(1.02 / 1.01)
    assert int(_SPACE_SHARE * near) == 0
    assert _lifts(_loop(), (70, 1.02e-4), (71, 1.01e-4)) == 72


def test_a_later_pair_sets_a_fresh_window():
    loop = _loop()
    _lifts(loop, (20, 1e-3), (22, 5e-4))
    assert _lifts(loop, (24, 2.5e-4)) == 24 + int(_SPACE_SHARE * np.log(2.5) * 2 / np.log(2))
    # then within tol: no new window (the last one ends where this lift was made)
    assert _lifts(loop, (25, 9e-5)) == 25

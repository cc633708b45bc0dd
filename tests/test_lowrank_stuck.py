"""LOWRANK grows the rank where the cheap gap cycles just above ``tol`` with no certificate
attempt: a factor of too low a rank, stationary far from the optimum, whose cheap gap
(a bound only where :math:`S(y) \\succeq 0`) says it is nearly done (docs/tuning.md, "A
rank-1 start cycling just above tol")."""

from types import SimpleNamespace

import numpy as np
from conftest import digits_dvu

from sdpembed.lowrank.options import DenseLimits
from sdpembed.lowrank.stall import _STALL_RATIO, _STUCK_WINDOW, StallGrowth
from sdpembed.solvers import solve

#: CSDP's objective on :func:`_digits_rank1` (CLARABEL: -0.559955364862148)
_CSDP = -0.5599557962553852


def _digits_rank1():
    # 100 scikit-learn digits, 8-NN + 1 random partner, slack weight 0.1: started at rank 1
    # above limits.eig its cheap gap cycles between 1.4e-4 and 2.4e-4 at objective 28.5
    return digits_dvu(100, 8, slack_weight=0.1)


def test_a_rank_1_start_above_limits_eig_grows_and_certifies():
    rep = solve(_digits_rank1(), solver="LOWRANK", tol=1e-4, rank=1,
                dense_limits=DenseLimits(eig=20))
    assert rep.status == "optimal" and rep.certified_gap <= 1e-4, rep.certified_gap
    assert rep.extra["rank"] > 1
    # the certified 1e-4 plus the reference's own tolerance
    assert abs(rep.objective - _CSDP) <= 2e-4 * abs(_CSDP)


def _loop(gaps, *, last_growth=0, attempts=(), tol=1e-4, eig=20):
    loop = StallGrowth()
    loop.history = [{"cheap_gap": g} for g in gaps]
    for i in attempts:
        loop.history[i]["lambda_min"] = -1.0
    loop.it, loop.last_growth, loop.k_viol = len(gaps) + 1, last_growth, 0.0
    loop.W = np.ones((40, 1))
    loop.space = SimpleNamespace(Q=None, dim=40, limits=DenseLimits(eig=eig))
    loop.opts = SimpleNamespace(tol=tol, max_rank=200, feas_tol=1e-6)
    return loop


def test_stalled_between_tol_and_the_floor_only_after_the_window_without_attempts():
    cycle = [1.4e-4, 1.5e-4, 1.9e-4, 2.4e-4]
    gaps = [8e-2, 4e-2, 2e-3, 1.1e-4] + cycle * 3
    assert len(gaps) - 4 >= _STUCK_WINDOW
    # above limits.eig the floor is 1e-2: the cycle is stuck, and only past the window
    assert _loop(gaps)._stalled(1.5e-4)
    assert not _loop(gaps[:4 + _STUCK_WINDOW - 1])._stalled(1.5e-4)
    # an attempt within the window, a growth within it, a gap at tol: not stuck
    assert not _loop(gaps, attempts=[-3])._stalled(1.5e-4)
    assert not _loop(gaps, last_growth=len(gaps) - _STUCK_WINDOW + 1)._stalled(1.5e-4)
    assert not _loop(gaps)._stalled(0.9e-4)
    # still falling: the window's best below _STALL_RATIO times the best before it
    falling = gaps[:4] + [1.1e-4 * _STALL_RATIO * 0.9] * _STUCK_WINDOW
    assert not _loop(falling)._stalled(1.5e-4)
    # n <= limits.eig: the same below its own floor (3 tol)
    assert _loop(gaps, eig=800)._stalled(1.5e-4)

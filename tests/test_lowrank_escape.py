"""LOWRANK rank growth: the escape block with a correction of the existing columns
(docs/tuning.md, "Escape columns the model supports: a block with the old columns'
correction (2026-11-29, thirteenth round)")."""

import numpy as np
from conftest import digits_dvu

from sdpembed.lowrank import escape
from sdpembed.lowrank.alm import _escape
from sdpembed.solvers import solve

#: CLARABEL's objective on :func:`_digits_dense` (default tolerances, about 1e-6 relative;
#: recorded here, 5.5 CPU s)
_CLARABEL = -0.7694864014773477


def _digits_dense():
    # 60 scikit-learn digits, 5-NN + 1 random partner, started at rank 3: its first
    # certificate attempt grows the factor along 16 escape directions
    return digits_dvu(60, 5)


def test_the_corrected_block_lowers_the_augmented_lagrangian_more_and_certifies(monkeypatch):
    calls = []
    block = escape._block

    def recorded(alm, W, V, y, sigma):
        out = block(alm, W, V, y, sigma)
        calls.append((alm, W, V, y, sigma, out))
        return out

    monkeypatch.setattr(escape, "_block", recorded)
    f = _digits_dense()
    rep = solve(f, solver="LOWRANK", tol=1e-4, rank=3)
    assert rep.status == "optimal" and rep.certified_gap <= 1e-4, rep.certified_gap
    # the certified 1e-4 plus CLARABEL's own tolerance
    assert abs(rep.objective - _CLARABEL) <= 2e-4 * abs(_CLARABEL)

    alm, W, V, y, sigma, out = calls[0]
    assert out is not None and out.shape[1] > W.shape[1]
    rms = np.sqrt(np.sum(W * W) / W.shape[1])
    # the first new column at the model's size, above the block's threshold
    assert np.linalg.norm(out[:, W.shape[1]]) >= escape._BLOCK_MIN * rms
    # the same directions one line search each: the augmented Lagrangian (at the growth's
    # multipliers and penalty) falls less than with the block and its correction
    seq = W
    for i in range(V.shape[1]):
        seq = _escape(alm, seq, V[:, i], y, None, sigma, None)

    def al(Wx):
        _, D, _ = alm.objective_parts(Wx)
        val, _ = alm.pen.envelope(D, y, sigma, alm.kind)
        return val + float(np.sum(Wx * alm.space.apply_C(Wx)))

    a0 = al(W)
    assert al(out) < al(seq) <= a0 + 1e-12 * abs(a0)

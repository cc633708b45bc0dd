"""LOWRANK escape columns: the exact line search along a negative eigenvector of S, and the
smallest column a growth starts at (docs/tuning.md, "A rank growth that takes effect").
"""

import numpy as np
from scipy.optimize import minimize_scalar

from problems.differential import make_instance
from sdpembed.lowrank.alm import _ESCAPE_FLOOR, _ESCAPE_GAP, _ESCAPE_MIN, _escape, escape_floor
from sdpembed.lowrank.options import LowRankOptions
from sdpembed.lowrank.spectrum import _dense_bottom


def _start(outer_loop):
    f, _ = make_instance(50024, (12, 60)).build()
    loop = outer_loop(f, LowRankOptions(), rank=3)[0]
    # the start factor shrunk until its edges are short of their targets, and S at the
    # envelope's gradient there: the slope of the augmented Lagrangian along v v^T is v^T S v
    loop.W = 0.1 * loop.W
    _, D, _ = loop.alm.objective_parts(loop.W)
    g = loop.pen.envelope(D, loop.y, loop.sigma, loop.alm.kind)[1]
    lam, X = _dense_bottom(loop.space, g, loop.nu, 1)
    assert lam[0] < 0
    return loop, lam[0], X[:, 0]


def _augmented_lagrangian(loop, W) -> float:
    """The subproblem's value at ``W``, recomputed from its parts (no SNR, no added rows)."""
    quad, D, _ = loop.alm.objective_parts(W)
    val, _ = loop.pen.envelope(D, loop.y, loop.sigma, loop.alm.kind)
    return quad + val


def test_escape_column_is_the_line_search_minimiser_above_its_floor(outer_loop):
    loop, _, v = _start(outer_loop)
    W = loop.W
    new = _escape(loop.alm, W, v, loop.y, loop.nu, loop.sigma, loop.sigma_h)
    assert new.shape == (W.shape[0], W.shape[1] + 1)
    np.testing.assert_array_equal(new[:, :-1], W)
    t = float(new[:, -1] @ new[:, -1])
    # the minimiser of the augmented Lagrangian along W + sqrt(t) v, by a bounded scalar search
    scale = float(np.sum(W * W)) / W.shape[1]
    ref = minimize_scalar(lambda s: _augmented_lagrangian(loop, np.c_[W, np.sqrt(s) * v]),
                          bounds=(0.0, 10.0 * scale), method="bounded",
                          options={"xatol": 1e-10 * scale})
    assert ref.x > _ESCAPE_MIN ** 2 * scale    # the line search, not the floor, decides here
    assert abs(t - ref.x) <= 1e-5 * ref.x
    # a floor above that minimiser lifts the column to it, along the same direction
    floor = 2.0 * np.sqrt(t / scale)
    big = _escape(loop.alm, W, v, loop.y, loop.nu, loop.sigma, loop.sigma_h, floor=floor)
    norm = np.linalg.norm(big[:, -1])
    assert abs(norm - floor * np.sqrt(scale)) <= 1e-12 * norm
    assert abs(abs(big[:, -1] @ v) / np.linalg.norm(v) - norm) <= 1e-12 * norm


def test_escape_floor_follows_what_the_eigenvalue_is_worth(outer_loop):
    loop, lam, _ = _start(outer_loop)
    W = loop.W
    worth = abs(lam) * float(np.sum(W * W)) / abs(loop.alm.true_objective(W))
    # lambda_min scaled to either side of _ESCAPE_GAP
    assert escape_floor(loop.alm, W, 2.0 * _ESCAPE_GAP / worth * lam) == _ESCAPE_FLOOR
    assert escape_floor(loop.alm, W, 0.5 * _ESCAPE_GAP / worth * lam) == _ESCAPE_MIN
    assert escape_floor(loop.alm, W, 0.0) == _ESCAPE_MIN

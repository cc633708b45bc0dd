"""LOWRANK: a subproblem capped at ``max_inner`` that only crept counts as a stalled gap
(``sdpembed/lowrank/creep.py``)."""

from types import SimpleNamespace

import numpy as np

import sdpembed.lowrank.inner as inner
from sdpembed.lowrank.creep import _CREEP, lbfgs_end


def _loop(*, n=2500, eig=800, mode="interval", it=3, last_growth=0, rank=18, max_rank=200,
          Q=None, K=None, tol=1e-4, max_inner=6000):
    space = SimpleNamespace(dim=n, limits=SimpleNamespace(eig=eig), Q=Q, K=K)
    return SimpleNamespace(space=space, pen=SimpleNamespace(mode=mode), it=it,
                           last_growth=last_growth, W=np.zeros((n, rank)),
                           opts=SimpleNamespace(tol=tol, max_rank=max_rank),
                           max_inner=max_inner)


def _res(nit, f_half, f):
    return inner._LBFGSResult(np.zeros(1), nit, 0.0, f, f_half)


def test_creep_below_and_above_the_threshold():
    loop = _loop()
    f = -1.1047
    small = 0.5 * _CREEP * 1e-4 * abs(f)       # the second half gained half the threshold
    large = 2.0 * _CREEP * 1e-4 * abs(f)
    assert lbfgs_end(loop, _res(6000, f + small, f)) == "crept"
    assert lbfgs_end(loop, _res(6000, f + large, f)) == "cut"
    # before the cap: L-BFGS ended on its own, whatever it gained
    assert lbfgs_end(loop, _res(5999, f + small, f)) == "lbfgs"
    # the half-way value not recorded (a Newton-CG result, a deadline): never crept
    assert lbfgs_end(loop, _res(6000, np.nan, f)) == "cut"


def test_creep_only_where_the_rule_was_measured():
    f, f_half = -1.0, -1.0 + 1e-7
    res = _res(6000, f_half, f)
    assert lbfgs_end(_loop(), res) == "crept"
    # dense certificate sizes, reduced basis, added rows, other distance modes: "cut"
    for loop in (_loop(n=800), _loop(Q=np.eye(3)), _loop(K=object()), _loop(mode="equality"),
                 _loop(mode="shrink")):
        assert lbfgs_end(loop, res) == "cut"
    # the first outer iteration, the new columns' first subproblem, at max_rank: "cut"
    for loop in (_loop(it=1), _loop(it=5, last_growth=4), _loop(rank=200)):
        assert lbfgs_end(loop, res) == "cut"
    assert lbfgs_end(_loop(it=6, last_growth=4), res) == "crept"


def test_lbfgs_records_the_half_way_value():
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.standard_normal((200, 200)))
    A = (Q * np.geomspace(1.0, 1e6, 200)) @ Q.T

    def fun(x):
        return 0.5 * float(x @ A @ x), A @ x

    x0 = rng.standard_normal(200)
    res = inner._lbfgs(fun, x0, gtol=0.0, maxiter=40)
    assert res.nit == 40
    assert res.f == fun(res.x)[0]
    # the value after 20 iterations, which a 20-iteration run ends at
    half = inner._lbfgs(fun, x0, gtol=0.0, maxiter=20)
    assert res.f_half == half.f
    assert res.f <= res.f_half <= fun(x0)[0]

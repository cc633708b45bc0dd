"""Newton-CG stops at the rounding floor instead of repeating one step to ``max_newton``.

Issue 40's differential seed 74009 (DVU, quadratic distances, 56 points, two added rows)
was refused at its 20 s limit although CLARABEL and CSDP solve it: near the optimum the
subproblem's tolerance lay below what its gradient can resolve in doubles, the Armijo
test accepted steps with :math:`f_{k+1} = f_k` (the decrease :math:`c_1 t\\,g^Td` is below
the spacing of doubles at :math:`f_k`), and Newton-CG repeated the same iteration, about
a hundred Hessian products each, until ``max_newton``. Outcomes and iteration counts only
(no timing); the reference objective is CSDP's.
"""

import numpy as np

import sdpembed.lowrank.alm as alm_mod
from problems.differential import make_instance
from sdpembed.lowrank.inner import _newton_cg
from sdpembed.solve_status import BOUND_TOLERANCE, bound_gap
from sdpembed.solvers import solve

#: CSDP's optimum of seed 74009 (status optimal; CLARABEL -0.19207753)
_CSDP_74009 = -0.19208121033959513


def test_newton_stops_when_a_step_changes_neither_value_nor_gradient():
    # f is flat to the last bit while its gradient (1e-7) is above gtol: the Armijo step
    # is accepted with f unchanged and |g| unchanged. Before: 50 identical iterations
    g = np.full(4, 1e-7)
    calls = []

    def fun(x):
        return 1.0, g.copy()

    def hess_at(x):
        def hv(p):
            calls.append(1)
            return p
        return hv

    res = _newton_cg(fun, hess_at, np.zeros(4), gtol=1e-12, maxiter=50)
    assert res.nit == 1
    assert len(calls) <= 2
    assert res.gnorm == np.linalg.norm(g)


def test_newton_still_converges_on_a_quadratic():
    A = np.diag([1.0, 10.0, 100.0])
    b = np.array([1.0, -2.0, 3.0])

    def fun(x):
        return 0.5 * x @ A @ x - b @ x, A @ x - b

    res = _newton_cg(fun, lambda x: (lambda p: A @ p), np.zeros(3), gtol=1e-12, maxiter=50)
    assert res.gnorm <= 1e-12
    np.testing.assert_allclose(res.x, np.linalg.solve(A, b), rtol=1e-12)


def test_seed_74009_certifies_without_a_newton_run_at_its_cap(monkeypatch):
    runs = []

    def counted(*args, **kw):
        res = alm_mod.__dict__["_newton_cg_orig"](*args, **kw)
        runs.append((res.nit, kw["maxiter"], res.gnorm, kw["gtol"]))
        return res

    monkeypatch.setitem(alm_mod.__dict__, "_newton_cg_orig", alm_mod._newton_cg)
    monkeypatch.setattr(alm_mod, "_newton_cg", counted)
    f, _ = make_instance(74009, (12, 60)).build()
    _ = f.problem   # built first, as the differential does
    rep = solve(f, solver="LOWRANK", max_outer=40)
    assert rep.status == "optimal"
    assert rep.certified_gap <= 1e-4
    # the point violates its rows by ~1e-7: the bound may exceed the objective only
    # within the stated tolerance, and (proven) not CSDP's optimum beyond CSDP's accuracy
    assert bound_gap(rep.objective, rep.bound) >= -BOUND_TOLERANCE
    assert rep.bound <= _CSDP_74009 + 1e-7 * abs(_CSDP_74009)
    assert abs(rep.objective - _CSDP_74009) <= 1e-4 * abs(_CSDP_74009)
    assert runs, "no Newton-CG subproblem ran"
    # before: two subproblems ran to max_newton = 50 at the floor, gradient stalled
    assert all(nit < maxiter or gnorm <= gtol for nit, maxiter, gnorm, gtol in runs), runs

"""The full-space evaluation kernel of LOWRANK's subproblem (``lowrank/evaluate.py``): the
value and gradient equal, to the bit, the plain evaluation written from the space's own
products (so the solver's paths and fingerprints do not move), the value equals the
augmented Lagrangian written densely, the gradient central differences."""

import numpy as np
import pytest


@pytest.fixture(scope="module")
def problem():
    """DVU with an SNR constraint on 40 digits, with a must-link, a cannot-link and an
    equality row added: every term of the full-space evaluation."""
    from sklearn.datasets import load_digits

    from sdpembed.formulations import dvu
    from sdpembed.graphs import knn_graph

    X, y = load_digits(n_class=3, return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.permutation(y.size)[:40]
    X, y = X[idx].astype(float), y[idx].copy()
    y[rng.random(idx.size) > 0.7] = -1
    f = dvu(knn_graph(X, n_neighbors=3, n_random=1, random_state=0), y, snr=4.0,
            centroids="eliminated")
    G = f.expressions["gram"]

    def sq(a, b):
        return G[a, a] + G[b, b] - 2 * G[a, b]
    return f.with_constraints([sq(0, 1) <= 0.1, sq(4, 5) >= 500.0,
                               G[6, 7] == 1.0]).current_problem()


def _captured(gp, kind, monkeypatch):
    """One ``subproblem(...)``'s ``run``, with L-BFGS replaced by a stub that keeps the
    ``fun`` of each run in a list, and the multipliers and penalties used."""
    import sdpembed.lowrank.alm as alm_mod
    from sdpembed.lowrank import FactorSpace
    from sdpembed.lowrank.inner import _LBFGSResult
    from sdpembed.lowrank.options import LowRankOptions
    from sdpembed.lowrank.penalty import DistancePenalty

    space = FactorSpace(gp, None)
    pen = DistancePenalty(gp)
    alm = alm_mod._ALM(space, pen, LowRankOptions())
    alm.kind = kind
    funs = []

    def stub(fun, x0, **kw):
        funs.append(fun)
        return _LBFGSResult(x0, 0, 0.0)

    monkeypatch.setattr(alm_mod, "_lbfgs", stub)
    rng = np.random.default_rng(1)
    y = 0.05 * rng.standard_normal(pen.t.size)
    nu = np.zeros(space.q)
    if space.H is not None:
        nu[0] = 0.3
    rho = None
    if space.K is not None:
        nu[space.n_snr:] = [0.5, 0.2, -0.3]
        rho = np.array([5.0, 5.0, 5.0])
    args = (y, nu, 2.0, 0.7, rho)
    return space, pen, args, alm.subproblem(*args), funs


def _plain(space, pen, args, kind, x, shape):
    """The evaluation as written before the kernel (and still on a reduced basis): fresh
    arrays, Z scaled by g, the factor 2 and the centring last."""
    y, nu, sigma, sigma_h, rho = args
    sp_ = space
    W = sp_.project(x.reshape(shape))
    CW = sp_.apply_C(W)
    Z = sp_.diffs(W)
    D = np.einsum("ij,ij->i", Z, Z)
    val, g = pen.envelope(D, y, sigma, kind)
    val += float(np.sum(W * CW))
    Z *= g[:, None]
    grad = sp_.ET @ Z
    grad += CW
    if sp_.H is not None:
        HW = sp_.apply_H(W)
        h = float(np.sum(W * HW))
        gs = max(0.0, nu[0] + sigma_h * h)
        val += (gs * gs - nu[0] * nu[0]) / (2 * sigma_h)
        grad = grad + gs * HW
    if sp_.K is not None:
        z = sp_.user_part(nu)
        c = sp_.K_values(W) - sp_.K.rhs
        gk = z + rho * c
        gk = np.where(sp_.K.equality, gk, np.maximum(gk, 0.0))
        val += float(np.sum((gk * gk - z * z) / (2.0 * rho)))
        grad = grad + sp_.apply_K(W, gk)
    grad *= 2.0
    return val, sp_.project(grad).ravel()


def _dense_value(space, pen, args, kind, W):
    """The augmented Lagrangian from its definition, with dense matrices: <C, G> + the
    envelope of the squared distances + the SNR and added rows' terms."""
    y, nu, sigma, sigma_h, rho = args
    G = W @ W.T
    i, j = space.gp.edges.T
    D = G[i, i] + G[j, j] - 2 * G[i, j]
    val = float(np.sum(space.C.dense() * G)) + pen.envelope(D, y, sigma, kind)[0]
    if space.H is not None:
        gs = max(0.0, nu[0] + sigma_h * float(np.sum(space.H.dense() * G)))
        val += (gs * gs - nu[0] ** 2) / (2 * sigma_h)
    if space.K is not None:
        z = space.user_part(nu)
        gk = z + rho * (space.K.values_of_factor(W) - space.K.rhs)
        gk = np.where(space.K.equality, gk, np.maximum(gk, 0.0))
        val += float(np.sum((gk * gk - z * z) / (2 * rho)))
    return val


@pytest.mark.parametrize("kind", ["equality", "interval"])
def test_the_kernel_is_the_plain_evaluation_to_the_bit(problem, kind, monkeypatch):
    """Ranks 3 then 5 in one subproblem (a new kernel for the new shape), several points
    each, every call after the first reusing the buffers: value and gradient equal the
    plain evaluation exactly, the gradient is a new array each time (L-BFGS keeps it), and
    the value equals the dense augmented Lagrangian."""
    space, pen, args, run, funs = _captured(problem, kind, monkeypatch)
    rng = np.random.default_rng(2)
    for k in (3, 5):
        run(space.project(rng.standard_normal((problem.n, k))), 1e-6, 10, None)
        fun = funs[-1]
        grads = []
        for _ in range(4):
            x = rng.standard_normal(problem.n * k)   # not centred: fun centres it
            val, grad = fun(x)
            want_val, want_grad = _plain(space, pen, args, kind, x, (problem.n, k))
            assert val == want_val
            np.testing.assert_array_equal(grad, want_grad)
            W = space.project(x.reshape(problem.n, k))
            dense = _dense_value(space, pen, args, kind, W)
            assert abs(val - dense) <= 1e-12 * max(1.0, abs(dense))
            grads.append((grad, grad.copy()))
        for grad, kept in grads:
            np.testing.assert_array_equal(grad, kept)


def test_the_kernels_gradient_is_the_values_derivative(problem, monkeypatch):
    """Directional derivatives against central differences (equality envelope, rank 4)."""
    space, pen, args, run, funs = _captured(problem, "equality", monkeypatch)
    rng = np.random.default_rng(3)
    k = 4
    run(space.project(rng.standard_normal((problem.n, k))), 1e-6, 10, None)
    fun = funs[-1]
    x = space.project(rng.standard_normal((problem.n, k))).ravel()
    _, grad = fun(x)
    grad = grad.copy()
    for _ in range(3):
        d = space.project(rng.standard_normal((problem.n, k))).ravel()
        h = 1e-6
        num = (fun(x + h * d)[0] - fun(x - h * d)[0]) / (2 * h)
        assert abs(num - grad @ d) <= 1e-6 * max(1.0, abs(num)), (num, grad @ d)


def test_the_kernel_on_a_plain_graph_without_snr_or_rows(monkeypatch):
    """DVU without SNR or added rows on two moons (the battery's and the scale rows'
    shape): value and gradient equal the plain evaluation exactly."""
    from sklearn.datasets import make_moons

    from sdpembed.formulations import dvu
    from sdpembed.graphs import knn_graph

    X, y = make_moons(60, noise=0.1, random_state=0)
    y = np.where(np.random.default_rng(0).random(60) < 0.8, y, -1)
    gp = dvu(knn_graph(X, n_neighbors=4, n_random=1, random_state=0), y,
             centroids="eliminated").current_problem()
    space, pen, args, run, funs = _captured(gp, "equality", monkeypatch)
    rng = np.random.default_rng(4)
    run(space.project(rng.standard_normal((gp.n, 6))), 1e-6, 10, None)
    for _ in range(3):
        x = rng.standard_normal(gp.n * 6)
        val, grad = funs[-1](x)
        want_val, want_grad = _plain(space, pen, args, "equality", x, (gp.n, 6))
        assert val == want_val
        np.testing.assert_array_equal(grad, want_grad)

"""The whole-graph Gauss-Newton preconditioner of Newton-CG (``lowrank/gn_precond.py``).

Its matrix is the subproblem's Hessian (checked against central finite differences of the
augmented Lagrangian's gradient, relative 1e-6); its inverse is symmetric and positive
definite on centred factors (1e-8 relative); and a shrink-only MVU solved with it in use
certifies within ``tol = 1e-4`` of CLARABEL's optimum.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_swiss_roll

import sdpembed.lowrank.alm as alm_module
from sdpembed import knn_graph, solve
from sdpembed.formulations import mvu
from sdpembed.lowrank import gn_precond
from sdpembed.lowrank.gn_precond import gn_matrix, gn_preconditioner
from sdpembed.lowrank.penalty import DistancePenalty
from sdpembed.lowrank.space import FactorSpace


@pytest.fixture(scope="module")
def roll_problem():
    X = make_swiss_roll(60, random_state=0)[0]
    f = mvu(knn_graph(X, n_neighbors=6, n_random=0), distances="shrink")
    gp = f.current_problem()
    return FactorSpace(gp, None), DistancePenalty(gp), X


def _point(space, pen, X, seed=0):
    """A factor near the data (edges both shorter and longer than their bound), random
    multipliers y >= 0 and a penalty at which some edges are active and some not."""
    rng = np.random.default_rng(seed)
    W = space.project(X * (1.0 + 0.2 * rng.standard_normal(X.shape)))
    Z = space.diffs(W)
    W *= np.sqrt(np.mean(pen.t) / np.mean(np.einsum("ij,ij->i", Z, Z)))  # the bounds' scale
    Z = space.diffs(W)
    D = np.einsum("ij,ij->i", Z, Z)
    y = rng.random(D.shape)
    sigma = 10.0 / float(np.mean(pen.t))
    return W, Z, D, y, sigma


def test_matrix_is_the_hessian(roll_problem):
    space, pen, X = roll_problem
    W, Z, D, y, sigma = _point(space, pen, X)
    n, k = W.shape

    def grad(V):
        Zv = space.diffs(V)
        _, g = pen.envelope(np.einsum("ij,ij->i", Zv, Zv), y, sigma, "shrink")
        return 2.0 * space.project(space.apply_C(V) + space.ET @ (g[:, None] * Zv))

    _, g = pen.envelope(D, y, sigma, "shrink")
    d2 = pen.second_derivative(D, y, sigma, "shrink")
    assert 0 < np.count_nonzero(d2) < d2.size  # both active and inactive edges
    M = gn_matrix(n, k, space._ends, Z, g, d2, space.C.diag)
    rng = np.random.default_rng(1)
    for _ in range(3):
        u = space.project(rng.standard_normal((n, k)))
        eps = 1e-7
        fd = (grad(W + eps * u) - grad(W - eps * u)) / (2 * eps)
        mu = 2.0 * space.project((M @ u.ravel()).reshape(n, k))
        assert np.linalg.norm(fd - mu) <= 1e-6 * np.linalg.norm(fd)


def test_inverse_is_symmetric_positive_definite_on_centred(roll_problem):
    space, pen, X = roll_problem
    W, Z, D, y, sigma = _point(space, pen, X, seed=2)
    n, k = W.shape
    _, g = pen.envelope(D, y, sigma, "shrink")
    d2 = pen.second_derivative(D, y, sigma, "shrink")
    apply = gn_preconditioner(n, k, space._ends, Z, g, d2, space.C.diag, space.project)
    assert apply is not None
    rng = np.random.default_rng(3)
    u, v = (space.project(rng.standard_normal((n, k))).ravel() for _ in range(2))
    Au, Av = apply(u), apply(v)
    assert abs(v @ Au - u @ Av) <= 1e-8 * np.linalg.norm(Au) * np.linalg.norm(v)
    assert u @ Au > 0 and v @ Av > 0
    assert abs(np.sum(Au.reshape(n, k), axis=0)).max() <= 1e-8 * np.abs(Au).max()


def _ring_with_partners(n: int, seed: int = 0):
    """A ring with second neighbours plus one random partner a point: an expander graph."""
    rng = np.random.default_rng(seed)
    i = np.r_[np.arange(n), np.arange(n), np.arange(n)]
    j = np.r_[(np.arange(n) + 1) % n, (np.arange(n) + 2) % n, rng.integers(0, n, n)]
    keep = i != j
    return i[keep], j[keep]


def test_fill_bound_holds_and_spares_the_factorisation_of_expanders(monkeypatch):
    # the envelope bound is at least SuperLU's fill (forced on a small expander and a roll)
    n = 400
    X = make_swiss_roll(n, random_state=0)[0]
    roll = knn_graph(X, n_neighbors=8, n_random=0)
    ends_roll = (roll.edges[:, 0], roll.edges[:, 1])
    for ends in (ends_roll, _ring_with_partners(n)):
        exact = gn_precond.scalar_fill(n, ends)
        monkeypatch.setattr(gn_precond, "_GN_MAX_FILL", 0)   # forces the bound
        bound = gn_precond.scalar_fill(n, ends)
        monkeypatch.undo()
        assert exact <= bound
    # an expander of 9,298 points: the bound alone decides, no LU (which fills 1e7)
    calls = []
    monkeypatch.setattr(gn_precond.spla, "splu", lambda *a, **k: calls.append(1))
    m = 9_298
    fill = gn_precond.scalar_fill(m, _ring_with_partners(m))
    assert not calls and not gn_precond.gn_fits(m, 3, fill)


@pytest.mark.slow
def test_shrink_mvu_with_it_matches_clarabel(returns_of):
    X = make_swiss_roll(80, random_state=1)[0]
    graph = knn_graph(X, n_neighbors=6, n_random=0)
    outs = returns_of(alm_module, "gn_preconditioner")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        low = solve(mvu(graph, distances="shrink"), solver="LOWRANK", tol=1e-4)
        ref = solve(mvu(graph, distances="shrink"), solver="CLARABEL")
    assert any(out is not None for out in outs)
    assert low.status == "optimal" and low.certified_gap <= 1e-4
    assert abs(low.objective - ref.objective) <= 2e-4 * abs(ref.objective)

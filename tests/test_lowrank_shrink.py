"""Shrink-only distances, ``distances="shrink"``: :math:`D_e(G) \\le \\bar D_e`.

LOWRANK's one-sided augmented Lagrangian, its certificate (multipliers :math:`y \\ge 0`) and
its feasibility repair, against CLARABEL (interior point) on small instances, and on the
clique-degenerate Swiss roll whose equality MVU has no strictly feasible point.

Tolerances: LOWRANK certifies a relative gap of ``tol = 1e-4`` by default, so its objective
is within 1e-4 relative of CLARABEL's (whose own gap is ~1e-8); the shrink point is
exactly feasible (rounding: 1e-9 relative).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_swiss_roll

from sdpembed import knn_graph, solve
from sdpembed.demo import load_demo_data
from sdpembed.estimators import MVU
from sdpembed.exceptions import InfeasibleError
from sdpembed.formulations import dvu, mvu
from sdpembed.formulations.gram import DISTANCE_MODES
from sdpembed.lowrank.penalty import DistancePenalty

RTOL = 1e-4


def _solve(f, solver, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return solve(f, solver=solver, **options)


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


@pytest.fixture(scope="module")
def roll():
    """A 40-point Swiss roll, 6 neighbours: cliques of 5 = d + 2 points in d = 3."""
    X, t = make_swiss_roll(40, random_state=0)
    return X, knn_graph(X, n_neighbors=6, n_random=0)


def test_mode_is_listed():
    assert "shrink" in DISTANCE_MODES


def test_envelope_gradient_and_conjugate():
    """The one-sided envelope's gradient is max(0, y + sigma_e r) (checked by finite
    differences) and y >= 0; the conjugate is y^T Dbar on y >= 0 and +inf elsewhere."""
    graph = knn_graph(np.random.default_rng(0).standard_normal((12, 3)), n_neighbors=3,
                      n_random=0)
    pen = DistancePenalty(mvu(graph, distances="shrink").current_problem())
    rng = np.random.default_rng(1)
    D = pen.t * (1 + 0.3 * rng.standard_normal(pen.t.size))
    y = np.abs(rng.standard_normal(pen.t.size))
    val, g = pen.envelope(D, y, 2.0)
    assert np.all(g >= 0)
    h = 1e-6
    for e in range(0, pen.t.size, 5):
        Dp = D.copy()
        Dp[e] += h
        Dm = D.copy()
        Dm[e] -= h
        fd = (pen.envelope(Dp, y, 2.0)[0] - pen.envelope(Dm, y, 2.0)[0]) / (2 * h)
        assert abs(fd - g[e]) <= 1e-5 * max(1.0, abs(g[e]))
    assert pen.conjugate(y) == pytest.approx(float(y @ pen.t))
    assert pen.conjugate(y - 2 * y.max()) == np.inf
    # a feasible D's violation is 0, and the scale puts any D onto D <= Dbar
    assert pen.violation(0.5 * pen.t) == 0.0
    a = pen.shrink_scale(D)
    assert np.all(a * a * D <= pen.t * (1 + 1e-12))


def test_clique_degenerate_mvu_certifies(roll):
    """Swiss roll MVU: LOWRANK certifies the shrink problem within 1e-4, equal to CLARABEL's
    optimum; the point satisfies every row; the bound holds for the equality problem too
    (y >= 0 is a dual point of both): it lies below the objective of the data's own Gram
    matrix, a feasible point of the equality problem."""
    X, graph = roll
    ref = _solve(mvu(graph, distances="shrink"), "CLARABEL")
    f = mvu(graph, distances="shrink")
    low = _solve(f, "LOWRANK")
    assert low.status == "optimal" and low.certified_gap <= RTOL
    assert _rel(low.objective, ref.objective) <= RTOL
    bound = low.extra["lower_bound"]
    assert bound <= ref.objective + 1e-7 * abs(ref.objective)
    gp = f.current_problem()
    D = gp.distances_of(f.value("gram"))
    assert np.all(D <= gp.target * (1 + 1e-9))
    Xc = X - X.mean(axis=0)
    data_objective = -np.sum(Xc * Xc) / gp.meta["distance_scale"]
    assert np.allclose(gp.distances_of(Xc @ Xc.T) / gp.meta["distance_scale"], gp.target)
    assert bound <= data_objective
    assert ref.objective <= data_objective


def test_dvu_shrink_matches_clarabel():
    """DVU with shrink-only distances (a connected graph bounds it): LOWRANK = CLARABEL."""
    X, y = load_demo_data(30, random_state=0)
    graph = knn_graph(X, n_neighbors=3, n_random=1, random_state=0)
    ref = _solve(dvu(graph, y, distances="shrink"), "CLARABEL")
    low = _solve(dvu(graph, y, distances="shrink"), "LOWRANK")
    assert low.status == "optimal" and low.certified_gap <= RTOL
    assert _rel(low.objective, ref.objective) <= RTOL


def test_estimator_accepts_shrink(roll):
    X, _ = roll
    est = MVU(n_neighbors=6, distances="shrink", solver="LOWRANK", n_components=2)
    Z = est.fit_transform(X)
    assert Z.shape == (40, 2)
    assert est.solve_report_.status == "optimal"


def test_infeasible_rows_give_farkas_certificate():
    """An added row asking an edge to stretch beyond its shrink-only bound: LOWRANK proves
    infeasibility with a verified Farkas certificate (y >= 0 on the edge), as CLARABEL does."""
    X, _ = make_swiss_roll(30, random_state=0)
    graph = knn_graph(X, n_neighbors=4, n_random=0)
    for solver in ("CLARABEL", "LOWRANK"):
        f = mvu(graph, distances="shrink")
        G = f.expressions["gram"]
        a, b = graph.edges[0]
        t = f.current_problem().target[0]
        g = f.with_constraints([G[a, a] + G[b, b] - 2 * G[a, b] >= 2 * t])
        with pytest.raises(InfeasibleError):
            _solve(g, solver)


def _contract_edge_by_edge(edges, t, W, sweeps):
    """The contraction of violated edges written as its definition: one edge at a time."""
    V = np.array(W, dtype=float)
    i_all, j_all = edges.T
    for _ in range(sweeps):
        Z = V[i_all] - V[j_all]
        D = np.einsum("ij,ij->i", Z, Z)
        bad = np.flatnonzero(D > t)
        if bad.size == 0:
            break
        for e in bad[np.argsort(-D[bad] / t[bad])]:
            a, b = i_all[e], j_all[e]
            d = V[a] - V[b]
            De = float(d @ d)
            if De <= t[e]:
                continue
            beta = np.sqrt(t[e] / De)
            m = 0.5 * (V[a] + V[b])
            V[a] = m + beta * (V[a] - m)
            V[b] = m + beta * (V[b] - m)
    return V - V.mean(axis=0)


@pytest.mark.parametrize("sweeps", [1, 3, 30])
def test_contraction_in_rounds_is_the_edge_by_edge_sweep(outer_loop, sweeps):
    """The vectorised contraction of violated edges (edge-disjoint rounds) makes the same
    moves as the sequential definition, to rounding (1e-12 relative), sweep by sweep, on a
    Swiss roll whose factor violates most rows; after 30 sweeps it violates far fewer.

    Each sweep is compared from the same start point. A sweep visits the edges violated at
    its start (``D > Dbar``), and an edge contracted in an earlier sweep sits at its bound
    to the last bit, so whether it is in that list is decided by rounding; if an earlier move
    of the sweep then stretches it, one version contracts it in this sweep, the other in the
    next. Two multi-sweep runs whose rounding differs by one ulp therefore part by the size
    of a move, not of rounding: on an AMD EPYC (AVX-512) OpenBLAS's ``ddot`` and numpy's
    ``einsum`` rounded one 3-term sum apart after sweep 2, edge (57, 130) was at
    ``D/Dbar - 1 = -1.1e-16`` in one run and ``+2.2e-16`` in the other, the sweep-3
    contraction of (27, 130) stretched it by 1.3%, and the points parted by 7.9e-4 (of 0.75)
    after 3 sweeps, 1e-16 again after 5. From a common start, the lists and their order are
    the same arrays, and an edge on which the two differ at its visit (``De`` within
    rounding of ``Dbar``) moves by rounding, so 1e-12 relative holds with a wide margin
    (observed: 1.1e-16)."""
    from sdpembed.lowrank.shrink import contract_violated

    X, _ = make_swiss_roll(150, random_state=2)
    f = mvu(knn_graph(X, n_neighbors=8, n_random=0), distances="shrink")
    loop, pen = outer_loop(f, rank=3)
    edges = loop.space.gp.edges
    rng = np.random.default_rng(3)
    W = loop.W * (1.0 + 0.5 * rng.random((loop.W.shape[0], 1)))
    Z = W[edges[:, 0]] - W[edges[:, 1]]
    W = W * np.sqrt(pen.t.mean() / np.einsum("ij,ij->i", Z, Z).mean())
    Z = W[edges[:, 0]] - W[edges[:, 1]]
    D0 = np.einsum("ij,ij->i", Z, Z)
    assert np.mean(D0 > pen.t) > 0.3

    def n_violated(V):
        Z = V[edges[:, 0]] - V[edges[:, 1]]
        return int(np.sum(np.einsum("ij,ij->i", Z, Z) > pen.t * (1 + 1e-9)))

    V = W
    for _ in range(sweeps):
        got = contract_violated(loop.space, pen, V, sweeps=1)
        want = _contract_edge_by_edge(edges, pen.t, V, 1)
        assert np.max(np.abs(got - want)) <= 1e-12 * np.max(np.abs(want))
        V = got
    one = contract_violated(loop.space, pen, W, sweeps=1)
    # ``sweeps`` sweeps in one call: fewer violated rows than the start, and, past one
    # sweep, than after one (30 -> 7 after 3 sweeps and -> 0 after 30, here)
    many = contract_violated(loop.space, pen, W, sweeps=sweeps)
    assert n_violated(many) < np.sum(D0 > pen.t)
    if sweeps > 1:
        assert n_violated(many) < n_violated(one)

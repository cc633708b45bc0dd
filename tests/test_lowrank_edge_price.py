"""Added rows on distance edges: which rows are an edge's own, their price, and the
multipliers started there when the kink envelope is left (``sdpembed.lowrank.edge_price``)."""

import numpy as np
import pytest

from sdpembed.formulations.constraints import AffineGramConstraints
from sdpembed.lowrank.edge_price import edge_rows, priced_rows


def _dvu_on_edges(partial_digits, n: int):
    """DVU on ``n`` digits (3 classes): ``(f, edges, targets, G, sq)`` with ``sq(a, b)`` the
    squared distance of points a and b written on the Gram expression ``G``."""
    from sdpembed.formulations import dvu

    X, y, graph, _ = partial_digits(n, n_class=3)
    f = dvu(graph, y, centroids="eliminated")
    gp0 = f.current_problem()
    G = f.expressions["gram"]

    def sq(a, b):
        return G[a, a] + G[b, b] - 2 * G[a, b]
    return f, np.asarray(gp0.edges), np.asarray(gp0.target), G, sq


@pytest.fixture(scope="module")
def edged(partial_digits):
    """DVU on 40 digits and rows written on its graph's edges: ``(f, gp, rows, e, pair)``."""
    f, E, t, G, sq = _dvu_on_edges(partial_digits, 40)
    edge_set = {tuple(sorted(map(int, p))) for p in E}
    pair = next((a, b) for a in range(40) for b in range(a + 1, 40) if (a, b) not in edge_set)
    e = [0, 1, 2, 3, 4, 5]
    rows = [
        sq(*E[e[0]]) <= 0.5 * t[e[0]],           # 0: must-link on an edge, target above: priced
        sq(*E[e[1]]) <= 2.0 * t[e[1]],           # 1: must-link on an edge, target within
        sq(*E[e[2]]) >= 2.0 * t[e[2]],           # 2: cannot-link on an edge, target below: priced
        sq(*pair) <= 0.1,                        # 3: a pair that is no edge
        sq(*E[e[3]]) == 0.5 * t[e[3]],           # 4: an equality on an edge: left alone
        2 * sq(*E[e[4]][::-1]) <= t[e[4]],       # 5: c = 2, points in the other order: priced
        sq(*E[e[5]]) + G[0, 0] <= t[e[5]],       # 6: the edge plus another entry: not its own
    ]
    return f.with_constraints(rows), t, e


def test_edge_rows_are_the_rows_an_edges_target_violates(edged):
    """Of seven rows, the three that are :math:`c\\,A_e \\le b` with :math:`c\\bar D_e > b`
    (a must-link row, a cannot-link row written ``>=``, a doubled row with its points the
    other way round) are found, with their edge and :math:`c`; a row within its edge's
    target, a pair that is no edge, an equality and a row with another entry are not."""
    f, t, e = edged
    gp = f.current_problem()
    rows, edge, c = edge_rows(gp.constraints, np.asarray(gp.edges), np.asarray(gp.target))
    assert rows.tolist() == [0, 2, 5]
    assert edge.tolist() == [e[0], e[2], e[4]]
    np.testing.assert_allclose(c, [1.0, -1.0, 2.0], rtol=1e-12)


def test_edge_rows_of_the_links_generator_are_its_graph_edges():
    """``dvu_scale``'s links rows on 300 digits (``_with_links``): the rows found are the
    must-link pairs that are graph edges with target above the bound, checked by a plain
    loop over the rows' points."""
    from tests.test_lowrank_added_rows import _links_problem

    gp = _links_problem(300, 40, seed=1).current_problem()
    K, E, t = gp.constraints, np.asarray(gp.edges), np.asarray(gp.target)
    rows, edge, c = edge_rows(K, E, t)
    index = {tuple(sorted(map(int, p))): q for q, p in enumerate(E)}
    want = []
    for k in range(K.p):
        pts = tuple(sorted(set(K.i[K.row == k].tolist())))
        q = index.get(pts)
        if q is not None and not K.equality[k]:
            sign = K.value[(K.row == k) & (K.i == K.j)][0]
            if sign * t[q] > K.rhs[k]:
                want.append((k, q))
    assert list(zip(rows.tolist(), edge.tolist())) == want
    assert np.all(np.abs(c) == 1.0)


def test_priced_rows_start_only_rows_their_update_cannot_price():
    """:math:`z_k` is set to :math:`w_e/|c|` where :math:`z_k + \\rho_k\\max(0, v_k - b_k)`
    is below it, and left where the update reaches it or the row is past it."""
    K = AffineGramConstraints(n=2, row=np.zeros(0, int), i=np.zeros(0, int),
                              j=np.zeros(0, int), value=np.zeros(0),
                              rhs=np.array([1.0, 1.0, 1.0, -3.0]), equality=np.zeros(4, bool))
    z = np.array([0.05, 0.5, 4.0, 0.1])
    values = np.array([1.02, 1.2, 1.5, -2.0])   # violations 0.02, 0.2, 0.5, 1.0
    w = np.array([3.0, 1.5, 2.0, 8.0])
    got = priced_rows(z, K, values, np.array([9.0, 9.0, 9.0, 2.0]),
                      np.arange(4), np.arange(4), np.array([1.0, 1.0, 1.0, -2.0]), w)
    # reach: 0.23 < 3 (priced), 2.3 >= 1.5 (left), 8.5 past 2 (left), 2.1 < 8/2 (priced)
    np.testing.assert_allclose(got, [3.0, 0.5, 4.0, 4.0], rtol=1e-15)
    assert z[0] == 0.05   # a copy


@pytest.mark.slow
def test_rows_on_edges_solved_to_the_conic_optimum(partial_digits, monkeypatch):
    """DVU on 60 digits with three must-link rows (0.3 times their edge's target) and two
    cannot-link rows (3 times) on graph edges, solved by LOWRANK's augmented Lagrangian from
    the kink envelope (the dense rows barrier kept out by ``dense_limits``): the exit starts
    the rows (recorded through :func:`priced_rows`; at least one moved to its price), the
    solve is certified at CLARABEL's optimum (1e-6 relative; the two agree to 1.3e-8), and
    every such edge ends at its slope :math:`y_e = -\\mathrm{sign}(c)w_e` (1e-6), the row
    holding it: the price is the edge's part of the row's multiplier."""
    from sdpembed import solve
    from sdpembed.lowrank import edge_price

    f, E, t, _, sq = _dvu_on_edges(partial_digits, 60)
    f = f.with_constraints([sq(*E[k]) <= 0.3 * t[k] for k in (0, 2, 4)]
                           + [sq(*E[k]) >= 3.0 * t[k] for k in (1, 3)])
    seen = []
    real = edge_price.priced_rows

    def spy(z, *args):
        out = real(z, *args)
        seen.append((np.array(z), out))
        return out
    monkeypatch.setattr(edge_price, "priced_rows", spy)
    rep = solve(f, "LOWRANK", tol=1e-4, interval_envelope="kink", blas_threads=1,
                dense_limits={"eig": 10})
    ref = solve(f, "CLARABEL")
    assert rep.status == "optimal" and ref.status == "optimal"
    assert abs(rep.objective - ref.objective) <= 1e-6 * abs(ref.objective)
    assert len(seen) == 1 and np.any(seen[0][1] != seen[0][0])
    gp = f.current_problem()
    rows, edge, c = edge_rows(gp.constraints, np.asarray(gp.edges), np.asarray(gp.target))
    assert rows.tolist() == [0, 1, 2, 3, 4]
    w = gp.slack_weight / np.asarray(gp.target)[edge]
    np.testing.assert_allclose(np.asarray(rep.extra["multipliers"]["y"])[edge], -np.sign(c) * w,
                               rtol=1e-6)

"""The lift's default edge count: in proportion to its round's block of eigenvectors."""

from __future__ import annotations

import numpy as np

import sdpembed.lowrank as lowrank
from sdpembed.formulations.dvu import dvu_problem
from sdpembed.formulations.gram import centering_basis
from sdpembed.graphs import knn_graph
from sdpembed.lowrank import repair


def _digits_problem(n: int):
    from sklearn.datasets import load_digits

    d = load_digits()
    X, y = d.data.astype(float), d.target
    rng = np.random.default_rng(2)
    idx = np.flatnonzero(y < 3)[rng.permutation(int((y < 3).sum()))[:n]]
    y_obs = y[idx].copy()
    y_obs[rng.random(idx.size) > 0.8] = -1
    return dvu_problem(knn_graph(X[idx], n_neighbors=3, n_random=1, random_state=0), y_obs)


def test_a_default_lift_round_takes_edges_in_proportion_to_its_block(monkeypatch):
    """200 digits, 3-NN + 1 (621 edges), the solve's multipliers perturbed by 1e-4 of their
    largest (S with small negative eigenvalues): each round of the default lift gives the
    LMI LP ceil(1000 K / 160) = 500 edges for its block of K = 80 eigenvectors (not all
    621), S comes out exactly PSD (dense eigenvalues on 1-perp), and the bound it loses
    from the multipliers' own is within 1 % of what the lift over every edge loses
    (measured: 2.4319e-4 against 2.4259e-4)."""
    gp = _digits_problem(200)
    res = lowrank.lowrank_solve(gp, options=lowrank.LowRankOptions(tol=1e-5))
    space, pen = lowrank.FactorSpace(gp, None), lowrank.DistancePenalty(gp)
    noise = 1e-4 * np.random.default_rng(0).standard_normal(res.y.shape) * np.abs(res.y).max()
    y_noisy = np.clip(res.y + noise, -pen.w, pen.w)
    assert gp.edges.shape[0] > 500
    shapes = []
    lp = repair.rank_one_lmi_lp

    def recorded(A0, B, *args, **kwargs):
        shapes.append((A0.shape[0], B.shape[0]))
        return lp(A0, B, *args, **kwargs)

    monkeypatch.setattr(repair, "rank_one_lmi_lp", recorded)
    own = -pen.conjugate(y_noisy)
    Hb = centering_basis(gp.n)
    losses = {}
    for n_edges in (None, gp.edges.shape[0]):
        shapes.clear()
        y_l, eig = lowrank.lift_multipliers(space, pen, y_noisy, res.nu, n_edges=n_edges)
        SH = space.apply_S(Hb, y_l, res.nu)
        lam = np.linalg.eigvalsh(0.5 * (Hb.T @ SH + SH.T @ Hb))[0]
        assert lam >= 0 and np.all(y_l >= y_noisy)
        assert shapes and all(rows == (-(-1000 * K // 160) if n_edges is None else n_edges)
                              for K, rows in shapes)
        losses[n_edges] = own + pen.conjugate(y_l)
    assert shapes[0][0] == 80 and losses[None] > 0
    assert losses[None] <= 1.01 * losses[gp.edges.shape[0]]

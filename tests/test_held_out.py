"""DVU's held-out check on the unlabelled rows (``sdpembed.estimators._held_out``): the
predictive of the loss there, its ceiling, and the decision with and without unlabelled rows."""

import warnings

import numpy as np
import pytest

from sdpembed import DVU, knn_graph
from sdpembed.estimators import _held_out
from sdpembed.estimators._held_out import WARN_PROBABILITY, unlabelled_loss


def _monte_carlo(b, c, disagree, d, h, draws=20000):
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.array([b, disagree - b - c, c]) + 0.5, size=draws)
    n = np.array([rng.multinomial(d, q) for q in p])
    return np.mean(n[:, 0] - n[:, 2] >= np.ceil(0.05 * h - 1e-9)), np.mean(n[:, 0] - n[:, 2]) / h


@pytest.mark.parametrize("b, c, disagree, d, h", [(15, 5, 25, 6, 40), (10, 10, 25, 8, 40),
                                                   (30, 5, 40, 20, 100), (2, 9, 14, 30, 500)])
def test_unlabelled_loss_is_the_dirichlet_multinomial_predictive(b, c, disagree, d, h):
    """p_loss and expected_loss against a Monte Carlo of the same model (20,000 draws:
    s.e. <= 0.004); the interval holds the expectation; the ceiling is d / h."""
    u = unlabelled_loss(b, c, disagree, d, h)
    p_mc, mean_mc = _monte_carlo(b, c, disagree, d, h)
    assert u["p_loss"] == pytest.approx(p_mc, abs=0.015)
    assert u["expected_loss"] == pytest.approx(mean_mc, abs=0.005)
    assert u["expected_loss"] == pytest.approx(d / h * (b - c) / (disagree + 1.5))
    lo, hi = u["loss_interval"]
    assert -d / h <= lo <= u["expected_loss"] <= hi <= d / h == u["loss_ceiling"]


def test_the_unlabelled_rows_bound_the_loss_whatever_the_held_out_rows_say():
    """A large held-out loss (40 rows right only on the inputs, none only on the embedding)
    cannot be a 5-point loss on 40 unlabelled rows where the votes differ on 0 or 1 row
    (5 points = 2 rows): probability 0, no warning. On 10 differing rows it is near certain."""
    for d in (0, 1):
        u = unlabelled_loss(40, 0, 45, d, 40)
        assert u["p_loss"] == 0.0 and u["loss_ceiling"] == d / 40
    u = unlabelled_loss(40, 0, 45, 10, 40)
    assert u["p_loss"] > 0.99 and u["expected_loss"] > 0.05
    # an even split of the differing rows: no loss expected, yet on 40 rows 2 of 6 differing
    # rows going the inputs' way is a 5-point loss (probability 0.27); with 10 differing
    # rows it is 0.32, the unlabelled rows' own noise: neither warns. A split that leans
    # the inputs' way (14 to 10 of 30) does: 0.48 on the same 10 rows
    even = unlabelled_loss(12, 12, 30, 6, 40)
    assert even["expected_loss"] == 0.0 and 0.2 < even["p_loss"] < WARN_PROBABILITY
    assert 0.3 < unlabelled_loss(12, 12, 30, 10, 40)["p_loss"] < WARN_PROBABILITY
    assert unlabelled_loss(14, 10, 30, 10, 40)["p_loss"] >= WARN_PROBABILITY
    with pytest.raises(ValueError, match="unlabelled rows"):
        unlabelled_loss(1, 1, 2, 0, 0)


def test_the_normal_approximation_agrees_with_the_exact_predictive(monkeypatch):
    """Beyond _EXACT_ROWS differing rows p_loss is the normal approximation: on 400 rows it
    agrees with the exact sum to 0.02 (a loss near the threshold, the worst case)."""
    exact = unlabelled_loss(20, 12, 40, 400, 1300)
    monkeypatch.setattr(_held_out, "_EXACT_ROWS", 100)
    approx = unlabelled_loss(20, 12, 40, 400, 1300)
    assert 0.2 < exact["p_loss"] < 0.8
    assert approx["p_loss"] == pytest.approx(exact["p_loss"], abs=0.02)
    assert approx["expected_loss"] == exact["expected_loss"]


def test_without_unlabelled_rows_the_check_decides_by_the_held_out_bound():
    """Every row labelled: nothing to transduce, so DVU warns by the held-out bound of the
    expected loss (new points), and says so."""
    from sklearn.datasets import load_digits

    from sdpembed.exceptions import EmbeddingWorseThanInputWarning

    X, y = load_digits(return_X_y=True)
    X, y = X[:80].astype(float), y[:80]
    graph = knn_graph(X, n_neighbors=0, n_random=3, random_state=0)   # random edges only
    with pytest.warns(EmbeddingWorseThanInputWarning, match="No row is unlabelled") as caught:
        est = DVU(graph=graph, validation_splits=2, random_state=0).fit(X, y)
    v = est.validation_
    assert v["warned"] and "p_loss" not in v and v["loss_bound"] >= 0.05
    assert f"as large as {100 * v['loss_bound']:.1f} points" in str(caught[0].message)


def test_the_check_is_quiet_when_the_votes_agree_on_the_unlabelled_rows():
    """Two well-separated blobs: the embedding's vote and the inputs' agree on every
    unlabelled row, so no loss is possible there (ceiling 0) and DVU does not warn."""
    from sdpembed.exceptions import EmbeddingWorseThanInputWarning

    rng = np.random.default_rng(1)
    y = np.repeat([0, 1], 30)
    X = np.array([[0.0, 0.0], [8.0, 0.0]])[y] + rng.normal(size=(60, 2))
    yp = y.copy()
    yp[rng.choice(60, 12, replace=False)] = -1
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbeddingWorseThanInputWarning)
        est = DVU(n_components=2, n_neighbors=4, solver="LOWRANK", random_state=0).fit(X, yp)
    v = est.validation_
    assert v["unlabelled"] == 12 and v["unlabelled_disagree"] == 0
    assert v["loss_ceiling"] == 0.0 and v["p_loss"] == 0.0 and not v["warned"]


def test_check_verdict_is_the_unlabelled_predictive_or_the_held_out_bound():
    """``check_verdict`` pools the folds' counts (skipped folds ignored): with unlabelled
    rows it is ``unlabelled_loss`` with ``warned`` at ``WARN_PROBABILITY``; without, the
    held-out bound; ``d`` is required with unlabelled rows."""
    folds = [{"held_out": 40, "input_only": 6, "embedding_only": 1, "votes_differ": 9},
             {"skipped": "SolverFailedError: ..."},
             {"held_out": 40, "input_only": 4, "embedding_only": 2, "votes_differ": 8}]
    v = _held_out.check_verdict(folds, 6, 40)
    u = unlabelled_loss(10, 3, 17, 6, 40)
    assert v["p_loss"] == u["p_loss"] and v["warned"] == (u["p_loss"] >= WARN_PROBABILITY)
    assert v["difference"] == pytest.approx((3 - 10) / 80)
    assert not _held_out.check_verdict(folds, 0, 40)["warned"]     # nothing can be lost
    assert _held_out.check_verdict(folds, 6, 40, probability=0.0)["warned"]
    bound = _held_out.check_verdict(folds)
    assert "p_loss" not in bound
    assert bound["warned"] == _held_out.held_out_verdict(10, 3, 80)["warned"]
    with pytest.raises(ValueError, match="need d"):
        _held_out.check_verdict(folds, None, 40)


def test_vote_cells_get_their_own_predictive_summed_exactly():
    """``unlabelled_loss_by_votes``: each vote cell's differing rows a Dirichlet-multinomial
    of its own held-out split plus ``prior_rows`` rows of the pooled split, the loss their
    sum. Against scipy's ``dirichlet_multinomial`` pmf enumerated over both cells' outcomes
    (a second computation of the same model): P(loss >= 2 rows of 40), the mean, the
    ceiling."""
    from itertools import product

    from scipy.stats import dirichlet_multinomial

    from sdpembed.estimators._held_out import unlabelled_loss_by_votes

    held = {"3/2": [9, 1, 1], "2/3": [2, 3, 7], "2/2": [4, 4, 4]}
    unl = {"3/2": 3, "2/3": 2}
    u = unlabelled_loss_by_votes(held, unl, 40, prior_rows=2.0)
    pooled = np.array([15, 8, 12]) + 0.5
    share = pooled / pooled.sum()
    dist = []
    for key, n in unl.items():
        a = np.asarray(held[key], float) + 2.0 * share
        outcomes = [(i, n - i - j, j) for i, j in product(range(n + 1), repeat=2) if i + j <= n]
        dist.append([(o[0] - o[2], dirichlet_multinomial.pmf(o, a, n)) for o in outcomes])
    p_loss = sum(p * q for (x, p), (y, q) in product(*dist) if x + y >= 2)
    mean = sum(p * q * (x + y) for (x, p), (y, q) in product(*dist))
    assert u["p_loss"] == pytest.approx(p_loss, rel=1e-10)
    assert u["expected_loss"] == pytest.approx(mean / 40, rel=1e-10)
    assert u["loss_ceiling"] == 5 / 40 and u["unlabelled_disagree"] == 5
    assert u["cells"] == {"2/3": {"unlabelled": 2, "held_out": [2, 3, 7]},
                          "3/2": {"unlabelled": 3, "held_out": [9, 1, 1]}}


def test_rows_whose_inputs_vote_is_sure_are_judged_by_their_own_cell():
    """Held-out rows that split evenly in all, but by how sure each vote is: every row the
    inputs' neighbours agreed on went the inputs' way, every other the embedding's. Three
    unlabelled rows of the first kind (40 rows: 5 points = 2 rows) are then a likely loss,
    which the pooled split (an even one) does not say; three of the second kind are not.
    ``check_verdict`` decides by the cells where the folds and the unlabelled rows have
    them, by the pooled split otherwise."""
    from sdpembed.estimators._held_out import check_verdict, unlabelled_loss_by_votes

    held = {"3/2": [10, 0, 0], "2/3": [0, 0, 10]}
    sure = unlabelled_loss_by_votes(held, {"3/2": 3}, 40)
    other = unlabelled_loss_by_votes(held, {"2/3": 3}, 40)
    pooled = unlabelled_loss(10, 10, 20, 3, 40)
    assert sure["p_loss"] > 0.7 > WARN_PROBABILITY > pooled["p_loss"] > other["p_loss"]
    folds = [{"held_out": 30, "input_only": 5, "embedding_only": 5, "votes_differ": 10,
              "differ_cells": {"3/2": [5, 0, 0], "2/3": [0, 0, 5]}}] * 2
    v = check_verdict(folds, 3, 40, cells={"3/2": 3})
    assert v["warned"] and v["p_loss"] == pytest.approx(sure["p_loss"])
    assert not check_verdict(folds, 3, 40)["warned"]          # no cells: the pooled split
    old = [{k: f[k] for k in f if k != "differ_cells"} for f in folds]
    assert check_verdict(old, 3, 40, cells={"3/2": 3})["p_loss"] == pooled["p_loss"]

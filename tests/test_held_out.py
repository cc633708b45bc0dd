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
    # rows going the inputs' way is a 5-point loss (probability 0.27: no warning); with 10
    # differing rows it is 0.32 (a warning: the unlabelled rows' own noise)
    even = unlabelled_loss(12, 12, 30, 6, 40)
    assert even["expected_loss"] == 0.0 and 0.2 < even["p_loss"] < WARN_PROBABILITY
    assert unlabelled_loss(12, 12, 30, 10, 40)["p_loss"] >= WARN_PROBABILITY
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

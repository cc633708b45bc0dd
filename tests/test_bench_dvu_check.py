"""problems/bench_dvu_check.py: the scoring of DVU's held-out check on hand-made fits whose
verdicts follow from ``held_out_verdict``'s closed form (no DVU fit runs here)."""

import pytest

bench = pytest.importorskip("problems.bench_dvu_check")


def _fit(seed, loss, b, c, *, n=1000, method="default", d=None, h=None):
    """A fit losing ``loss`` points on its hidden labels whose 5 folds pool to ``b`` rows
    right only on the inputs and ``c`` only on the embedding, of 800 held out (the votes
    differ on those rows only); ``d`` of its ``h`` unlabelled rows differ (``None``: a row
    recorded without them)."""
    folds = [{"held_out": 160, "input_only": b // 5 + (i < b % 5),
              "embedding_only": c // 5 + (i < c % 5)} for i in range(5)]
    for f in folds:
        f["votes_differ"] = f["input_only"] + f["embedding_only"]
    return {"spec": "s", "dataset": "d", "seed": seed, "n": n, "method": method,
            "params": "{}", "dvu": 0.9, "raw": 0.9, "loss": loss, "hidden": 200,
            "loss_se": 2.0, "folds": folds, "unlabelled": h, "unlabelled_disagree": d}


def test_the_code_rule_warns_exactly_where_its_bound_reaches_five_points():
    # 800 rows: 60 vs 10 is a 6.25-point estimated loss (warns), 30 vs 20 a 1.25-point one
    # whose bound (about 2.6 points) rules 5 out, 20 vs 30 a gain (never warns)
    rows = [_fit(0, 7.0, 60, 10), _fit(1, 6.0, 30, 20), _fit(2, 1.0, 60, 10),
            _fit(3, 0.0, 30, 20), _fit(4, -1.0, 20, 30)]
    s = bench.score(rows, 5, ("bound", 0.05, 0.1))
    assert s["recall"] == (1, 2)                    # fits 0 (warned) and 1 (missed)
    assert s["false_alarm"] == (1, 3)               # fit 2 warned; fits 3 and 4 not
    assert s["false_alarm_not_losing"] == (0, 2)
    sizes = bench.by_size(rows + [_fit(0, 9.0, 60, 10, n=300)], 5, ("bound", 0.05, 0.1))
    assert [(b["n"], b["fits"], b["recall"]) for b in sizes] == [(300, 1, (1, 1)),
                                                                 (1000, 5, (1, 2))]
    assert sizes[1]["hidden"] == 200 and sizes[1]["loss_se"] == 2.0


def test_a_rule_chosen_on_one_half_is_scored_on_the_other():
    # two settings, seeds 0-3: seeds 0 and 2 go to half A, 1 and 3 to half B
    rows = []
    for method in ("default", "neighbors"):
        rows += [_fit(0, 8.0, 45, 10, method=method), _fit(1, 8.0, 45, 10, method=method),
                 _fit(2, 0.0, 30, 20, method=method), _fit(3, 0.0, 30, 20, method=method)]
    out = bench.chosen_on_half(rows, 5)
    assert [h["chosen_on"] for h in out] == ["A", "B"]
    half_a = [r for r in rows if r["seed"] in (0, 2)]
    half_b = [r for r in rows if r["seed"] in (1, 3)]
    for h, own, other in ((out[0], half_a, half_b), (out[1], half_b, half_a)):
        assert h["on_own_half"] == bench.score(own, 5, h["rule"])
        assert h["on_other_half"] == bench.score(other, 5, h["rule"])
        # rows without the unlabelled rows' counts: the code's rule is the held-out bound
        code = bench.score(other, 5, bench.CODE_RULE)
        assert h["code_on_other_half"] == code
        bound = bench.score(other, 5, ("bound", 0.05, 0.1))
        assert {k: code[k] for k in code if k != "rule"} == \
            {k: bound[k] for k in bound if k != "rule"}
        # 45 vs 10 of 800 (a 4.4-point loss, bound 5.6 points) warns under the bound,
        # 30 vs 20 (1.25 points, bound 2.4) under none of the grid: rules that meet
        # the goal on each half exist, so the chosen one does
        assert h["on_own_half"]["recall"] == (2, 2)
        assert h["on_own_half"]["false_alarm"] == (0, 2)


def test_the_code_rule_is_the_estimators_on_the_unlabelled_rows():
    """With the unlabelled rows' counts the bench scores ``check_verdict``, the estimator's
    own decision: 60 vs 10 of 800 held out warns by the bound, but with no unlabelled row
    differing no loss is possible there (silent); with 40 of 200 differing, split 6 to 1
    for the inputs, a loss of 5 points is near certain (warns)."""
    from sdpembed.estimators._held_out import check_verdict

    quiet, loud = _fit(0, 1.0, 60, 10, d=0, h=200), _fit(1, 9.0, 60, 10, d=40, h=200)
    assert bench.decide(quiet, 5, ("bound", 0.05, 0.1))[0]
    w, v = bench.decide(quiet, 5, bench.CODE_RULE)
    assert not w and v["p_loss"] == 0.0
    w, v = bench.decide(loud, 5, bench.CODE_RULE)
    assert w and v["p_loss"] == check_verdict(loud["folds"], 40, 200)["p_loss"] > 0.9
    s = bench.score([quiet, loud], 5, bench.CODE_RULE)
    assert s["recall"] == (1, 1) and s["false_alarm"] == (0, 1)
    # the first 2 folds only: the verdict of those folds' counts
    assert bench.decide(loud, 2, bench.CODE_RULE)[1]["p_loss"] == pytest.approx(
        check_verdict(loud["folds"][:2], 40, 200)["p_loss"])


def test_the_binomial_interval_is_clopper_pearsons():
    """The exact two-sided 90 % interval of a rate: its closed forms at 0 and n of n, and
    scipy's exact interval elsewhere; it widens as the count falls."""
    from scipy.stats import binomtest

    assert bench.binomial_interval(0, 10) == (0.0, pytest.approx(1 - 0.05 ** 0.1))
    assert bench.binomial_interval(10, 10) == (pytest.approx(0.05 ** 0.1), 1.0)
    assert bench.binomial_interval(0, 0) == (0.0, 1.0)
    for k, n in ((7, 8), (1, 11), (19, 27), (3, 40)):
        ci = binomtest(k, n).proportion_ci(0.9, method="exact")
        assert bench.binomial_interval(k, n) == (pytest.approx(ci.low), pytest.approx(ci.high))
        assert ci.low < k / n < ci.high
    lo, hi = bench.binomial_interval(9, 10)
    lo2, hi2 = bench.binomial_interval(90, 100)
    assert lo < lo2 < 0.9 < hi2 < hi
    assert bench._pct((7, 8), True) == "7/8 (88 %; 53-99)"

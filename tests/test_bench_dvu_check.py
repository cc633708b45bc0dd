"""problems/bench_dvu_check.py: the scoring of DVU's held-out check on hand-made fits whose
verdicts follow from ``held_out_verdict``'s closed form (no DVU fit runs here)."""

import json

import numpy as np
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
    assert bench.format_rate((7, 8), True) == "7/8 (88 %; 53-99)"


def _record(dataset, seed, method, *, knn3, folds=None, skipped=None, status="ok",
            estimator="DVU", d=None, h=40):
    """One line of the runner's rows.jsonl: a raw row (``estimator="raw"``) or a DVU fit
    whose ``validation`` holds ``folds`` (a fold dict, or ``{"skipped": why}`` for a
    pre-fit that failed) and, when the check ran, its unlabelled rows' counts."""
    row = {"spec": "s", "dataset": dataset, "seed": seed, "method": method, "params": "{}",
           "estimator": estimator, "status": status, "knn3": knn3, "n_samples": 200,
           "n_labeled": 200 - h, "error": "" if status == "ok" else "SolverFailedError: gap"}
    if estimator == "DVU" and status != "error":
        v = {"folds": folds}
        if skipped:
            v["skipped"] = skipped
        else:
            v.update(unlabelled=h, unlabelled_disagree=d, warned=None)
        row["validation"] = json.dumps(v)
    return json.dumps({"row": row})


def _fold(b, c, m=32):
    return {"held_out": m, "input_only": b, "embedding_only": c, "votes_differ": b + c}


def _folder(tmp_path):
    """Four DVU fits of 200 rows (40 hidden labels) against raw 3-NN at 90 %: one losing
    10 points with all 5 folds (warns), one losing 10 points whose pre-fits 4 and 5
    failed, one not losing whose every pre-fit failed (the check did not run), one not
    losing with all 5 folds (silent); and one fit that failed outright."""
    fail = {"skipped": "SolverFailedError: LOWRANK stopped at its time limit"}
    loud = [_fold(6, 0)] * 5
    quiet = [_fold(1, 1)] * 5
    lines = [_record("d", seed, "raw", knn3=0.9, estimator="raw") for seed in range(5)]
    lines += [
        _record("d", 0, "default", knn3=0.8, folds=loud, d=8),
        _record("d", 1, "default", knn3=0.8, folds=loud[:3] + [fail, fail], d=8),
        _record("d", 2, "default", knn3=0.9, folds=[fail] * 5,
                skipped="every held-out fit failed: " + fail["skipped"]),
        _record("d", 3, "default", knn3=0.925, folds=quiet, d=2),
        _record("d", 4, "default", knn3=0.0, status="error"),
    ]
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "rows.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_fits_with_skipped_folds_are_counted_not_dropped(tmp_path):
    """The 5-fold rates leave out the fits with fewer folds and say how many; the
    as-decided rates count every fit, a check that did not run as silent."""
    folder = _folder(tmp_path)
    rows = bench.load([str(folder)])
    assert [(r["seed"], len(r["folds"]), r["folds_asked"]) for r in rows] == [
        (0, 5, 5), (1, 3, 5), (2, 0, 5), (3, 5, 5)]
    assert rows[1]["folds_failed"] == ["SolverFailedError: LOWRANK stopped at its time limit"] * 2
    assert rows[2]["check_skipped"].startswith("every held-out fit failed")
    assert [f["seed"] for f in bench.failed_fits([str(folder)])] == [4]
    s = bench.score(rows, 5, bench.CODE_RULE)
    assert s["recall"] == (1, 1) and s["false_alarm"] == (0, 1)
    assert s["left_out"] == (1, 1)                  # seed 1 (losing), seed 2 (not)
    assert bench.score(rows, 3, bench.CODE_RULE)["left_out"] == (0, 1)
    # as the estimator decided: seed 1 warns on its 3 folds, seed 2 is silent
    [a] = bench.as_decided(rows, bench.failed_fits([str(folder)]))
    assert a["recall"] == (2, 2) and a["false_alarm"] == (0, 2)
    assert (a["all_folds"], a["some_folds"], a["no_check"], a["failed"]) == (2, 1, 1, 1)
    assert a["recall_ci"] == bench.binomial_interval(2, 2)
    # the same fit losing: the check that did not run is a miss
    rows[2]["loss"] = 10.0
    [a] = bench.as_decided(rows)
    assert a["recall"] == (2, 3) and a["false_alarm"] == (0, 1)


def test_the_tables_say_how_many_fits_they_leave_out(tmp_path, capsys):
    folder = _folder(tmp_path)
    bench.main([str(folder), "--halves"])
    text = capsys.readouterr().out
    assert ("2 of the 4 fits have fewer than 5 folds whose pre-fit ran (1 none: the check did "
            "not run") in text
    assert "the failed pre-fits: 7 SolverFailedError" in text
    assert "1 DVU fit failed outright" in text and "seed 4 (SolverFailedError)" in text
    tables = [line for line in text.splitlines() if line.startswith("| ")]
    folds5 = next(t for t in tables if t.startswith("| 5 | P(loss"))
    assert folds5.endswith("| 1/1 (100 %) | 1/1 (100 %) | 0/1 (0 %) | 0/1 (0 %) | 1 / 1 |")
    assert next(t for t in tables if t.startswith("| 3 | P(loss")).endswith("| 0 / 1 |")
    assert next(t for t in tables if t.startswith("| 200 | 4 |")).endswith("| 1 / 1 |")
    decided = next(t for t in tables if t.startswith("| 200 | 40 |"))
    assert "| 4 (2 / 1 / 1); 1 failed outright | 2/2 (100 %; 22-100) |" in decided
    assert "3 of 5 folds ran" in text and "check did not run" in text


def test_the_goal_verdict_needs_the_whole_interval():
    ci = bench.binomial_interval
    assert bench.goal_verdict((19, 20), ci(19, 20), at_least=0.9) == \
        "rate meets it, interval does not"
    assert bench.goal_verdict((60, 60), ci(60, 60), at_least=0.9) == "met"
    assert bench.goal_verdict((7, 8), ci(7, 8), at_least=0.9) == "not met"
    assert bench.goal_verdict((0, 30), ci(0, 30), at_most=0.1) == "met"
    assert bench.goal_verdict((1, 11), ci(1, 11), at_most=0.1) == \
        "rate meets it, interval does not"
    assert bench.goal_verdict((4, 15), ci(4, 15), at_most=0.1) == "not met"
    assert bench.goal_verdict((0, 0), ci(0, 0), at_least=0.9) == "not met"


def test_the_split_ceiling_is_the_multinomial_tail_of_the_differing_rows():
    """A fit's loss probability at an exact split: with no row on neither, n+ of d rows
    is binomial, so a loss of 10 of 200 rows needs n+ >= (d + 10)/2; with a three-way
    split, scipy's multinomial pmf summed over the outcomes that lose. The ceiling's
    rates follow from those probabilities: two sure fits are told apart exactly, and a
    fit at P = 0.5 costs half a fit of recall or of false alarms."""
    from scipy.stats import binom, multinomial

    p = bench.loss_probability_at_split((30, 0, 10), 20, 200)
    assert p == pytest.approx(binom.sf(14, 20, 0.75), rel=1e-12)     # n+ >= 15
    split, d = np.array([5.0, 3.0, 2.0]), 12
    want = sum(multinomial.pmf([a, d - a - c, c], d, split / 10)
               for a in range(d + 1) for c in range(d + 1 - a) if a - c >= 3)
    assert bench.loss_probability_at_split(split, d, 60) == pytest.approx(want, rel=1e-10)
    assert bench.loss_probability_at_split((0, 5, 0), 30, 200) == 0.0
    assert bench.loss_probability_at_split((4, 0, 0), 9, 200) == 0.0   # 9 rows < 10
    assert bench.loss_probability_at_split((4, 0, 0), 10, 200) == pytest.approx(1.0)

    sure, none = _fit(0, 9.0, 40, 0, d=12, h=200), _fit(1, 0.0, 0, 40, d=12, h=200)
    c = bench.split_ceiling([sure, none])
    assert c["fits"] == 2 and c["expected_losing"] == pytest.approx(1.0)
    assert c["recall_at_10pct_false_alarms"][0] == pytest.approx(1.0)
    assert c["false_alarms_at_90pct_recall"][0] == pytest.approx(0.0)
    # an even split of 21 rows, 10 needed: P(n+ - n- >= 10) well below 1/2; warning
    # on it as well as on the sure fit adds its (1 - P) to the false alarms
    half = _fit(2, 0.0, 20, 20, d=21, h=200)
    ph = bench.loss_probability_at_split((20, 0, 20), 21, 200)
    assert ph == pytest.approx(binom.sf(15, 21, 0.5), rel=1e-12)       # n+ >= 16
    c = bench.split_ceiling([sure, none, half])
    assert c["recall_at_10pct_false_alarms"][0] == pytest.approx(1.0 / (1.0 + ph))
    assert c["false_alarms_at_90pct_recall"][0] == pytest.approx(
        0.0 if 1.0 / (1.0 + ph) >= 0.9 else (1 - ph) / (2 - ph))
    assert bench.split_ceiling([_fit(3, 1.0, 40, 0)])["fits"] == 0     # no unlabelled rows

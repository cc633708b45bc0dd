"""Score DVU's held-out check (``EmbeddingWorseThanInputWarning``) against the hidden labels.

Run::

    sdpembed run problems/benchmarks/dvu_check.toml --out results
    sdpembed run problems/benchmarks/dvu_check_300.toml --out results
    .venv/bin/python -m problems.bench_dvu_check results/dvu_check results/dvu_check_300
        [--splits 5] [--loss 0.05] [--alpha 0.1] [--grid] [--halves] [--json FILE]
        [--tuning [--tag NAME]]

    sdpembed run problems/benchmarks/dvu_check_1000.toml --jobs 2 --out results
    .venv/bin/python -m problems.bench_dvu_check results/dvu_check_1000 --grid --halves \
        --tuning --tag 1000

(``dvu_defaults`` folders work too) reads the runner's ``rows.jsonl`` of each folder. Every
DVU row is paired with the ``raw`` row of the same dataset and seed (3-NN on the input
features, the same hidden labels): its *loss* is raw minus DVU accuracy on the hidden
labels, in points. Each DVU row keeps its held-out check whole (``validation``: every
fold's counts, and the unlabelled rows' ``unlabelled`` / ``unlabelled_disagree``), so the
check's rule as the estimator applies it — with unlabelled rows, warn when a loss of 5
points or more on them has probability ``WARN_PROBABILITY`` or more; without, when the
held-out rows cannot rule out an expected loss of 5 points
(``sdpembed.estimators._held_out.check_verdict``) — is scored for the first 1, 2, ...
folds of one run:

* *recall*: the share of fits losing >= 5 points on which it warns (goal >= 90 %), and of
  those whose loss is also beyond the hidden set's own noise (>= 1.28 standard errors of
  the hidden-label difference, estimated from the rows' disagreement rate);
* *false alarms*: the share of the other fits (losing < 5 points) on which it warns
  (goal <= 10 %), and separately of the fits that do not lose at all.

The report opens with every fit as the estimator decided it (:func:`as_decided`: the rule
on every fold whose pre-fit ran; a fit whose check did not run counts as silent), the two
rates with their exact intervals beside the goal. The k-fold tables that follow score only
the fits with k folds whose pre-fit ran; their column 'left out' counts the others, and the
opening sentence says why folds are missing (failed pre-fits, checks that did not run; fits
that failed outright, :func:`failed_fits`, are in no table).

Then the per-setting agreement of the held-out estimate with the hidden-label loss, and a
ceiling (:func:`ceiling`): what any threshold on the held-out estimate can reach against
hidden labels as noisy as these; and :func:`split_ceiling`: what any rule on the loss on
the fits' own unlabelled rows can reach if it knew each fit's held-out split exactly (the
bound the code's rule is measured against). ``--grid`` also scores the previous rules (the held-out
bound; difference at most -3 points or sign test p < 0.1), other (loss, alpha) and the
code's form at other probabilities: a calibration aid — rules
chosen on these rows are scored on the same rows, so their rates are optimistic.
``--halves`` scores a rule honestly: the fits of every setting are dealt alternately (by
seed) into two halves, the grid's rule that best meets the goal on one half is scored on
the other, and the other way round (:func:`chosen_on_half`). ``--tag NAME`` writes the
section ``bench_dvu_check:NAME`` of docs/tuning.md instead of ``bench_dvu_check``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.stats import beta

from problems.tuning import add_tuning_argument, command_line, write_section
from sdpembed.estimators._held_out import (
    WARN_ALPHA,
    WARN_LOSS,
    WARN_PROBABILITY,
    check_verdict,
    held_out_verdict,
)

#: a fit "loses" when its hidden-label 3-NN accuracy is this many points below the inputs'
LOSS_POINTS = 5.0
#: the estimator's rule (:func:`sdpembed.estimators._held_out.check_verdict`)
CODE_RULE = ("code", WARN_LOSS, WARN_PROBABILITY)


def _records(folders: list[str]) -> list[dict]:
    rows = []
    for folder in folders:
        for line in (Path(folder) / "rows.jsonl").read_text().splitlines():
            rec = json.loads(line)
            rows.append(rec.get("row", rec))
    return rows


def failed_fits(folders: list[str]) -> list[dict]:
    """The DVU fits of the folders that failed outright (the runner's ``status`` "error":
    no embedding, so no loss to score): dataset, n, method, params, seed and the error."""
    return [{"dataset": r["dataset"], "n": r["n_samples"], "method": r["method"],
             "params": r["params"], "seed": r["seed"], "error": r.get("error", "")}
            for r in _records(folders) if r["estimator"] == "DVU" and r["status"] == "error"]


def load(folders: list[str]) -> list[dict]:
    """DVU rows with their raw partner: dicts of dataset, seed, params, loss, folds.

    ``folds`` are the folds whose pre-fit ran; ``folds_asked`` how many the fit asked for,
    ``folds_failed`` why the others did not run, ``check_skipped`` why the check did not
    run at all (every pre-fit failed; ``folds`` is then empty). Fits that failed outright
    are not here (:func:`failed_fits`)."""
    rows = _records(folders)
    raw = {(r["spec"], r["dataset"], r["seed"]): r["knn3"] for r in rows
           if r["method"] == "raw" and r["status"] == "ok"}
    out = []
    for r in rows:
        if r["estimator"] != "DVU" or r["status"] == "error" or not r.get("validation"):
            continue
        v = json.loads(r["validation"])
        partner = raw.get((r["spec"], r["dataset"], r["seed"]))
        if partner is None or "folds" not in v:
            continue
        folds = [f for f in v["folds"] if "held_out" in f]
        # why folds are missing: a failed pre-fit skips its fold, and when every one failed
        # the check did not run at all (``skipped``); the k-fold scores leave such fits out
        failed = [f["skipped"] for f in v["folds"] if "held_out" not in f]
        m = sum(f["held_out"] for f in folds)
        disagree = sum(f["input_only"] + f["embedding_only"] for f in folds) / max(m, 1)
        hidden = r["n_samples"] - r["n_labeled"]
        # the unlabelled rows' counts of the code's rule (rows recorded before it lack them)
        unl = v.get("unlabelled", 0 if hidden == 0 else None)
        out.append({"spec": r["spec"], "dataset": r["dataset"], "seed": r["seed"],
                    "n": r["n_samples"], "method": r["method"], "params": r["params"],
                    "dvu": r["knn3"], "raw": partner,
                    # rounded: accuracies are multiples of 1/hidden, and a loss of two
                    # labels in 40 must count as 5.0 points, not 4.999999
                    "loss": round(100.0 * (partner - r["knn3"]), 6), "hidden": hidden,
                    # standard error of the hidden-label difference: per-row differences
                    # are -1, 0, 1, nonzero on a share `disagree` of the rows (the held-out
                    # rows' share stands in for the hidden rows', which are not kept)
                    "loss_se": 100.0 * float(np.sqrt(disagree / hidden)),
                    "folds": folds, "folds_asked": len(v["folds"]), "folds_failed": failed,
                    "check_skipped": v.get("skipped"),
                    "unlabelled": unl, "recorded_warned": v.get("warned"),
                    "unlabelled_disagree": v.get("unlabelled_disagree"),
                    "unlabelled_cells": v.get("unlabelled_cells")})
    return out


def decide(row: dict, splits: int, rule: tuple) -> tuple[bool, dict]:
    """A rule on the first ``splits`` folds of a fit (a :func:`load` row).

    ``("code", loss, probability)`` is the estimator's
    (:func:`sdpembed.estimators._held_out.check_verdict`: with unlabelled rows, warn when
    a loss of ``loss`` or more on them has probability ``probability`` or more; without,
    the held-out bound); ``("cells", loss, probability)`` the same with each vote cell's
    differing rows split as that cell's held-out rows (``unlabelled_cells``, recorded from
    the twenty-eighth round on; the pooled split where a fit lacks them); a row recorded
    before the estimator kept its unlabelled rows' counts is judged by the bound
    (``p_loss`` NaN). ``("bound", loss, alpha)``: warn unless
    the held-out rows rule out an expected loss of ``loss`` at level ``alpha``
    (:func:`~sdpembed.estimators._held_out.held_out_verdict`; the rule before the
    twenty-fourth round); ``("sign", margin, alpha)`` the one before (warn when the pooled
    difference is at most ``-margin`` or the sign test gives ``p < alpha``)."""
    folds = row["folds"]
    use = folds[:splits]
    m = sum(f["held_out"] for f in use)
    b = sum(f["input_only"] for f in use)
    c = sum(f["embedding_only"] for f in use)
    kind, level, alpha = rule
    if kind in ("code", "cells") and row.get("unlabelled") is not None:
        v = check_verdict(use, row.get("unlabelled_disagree"), row["unlabelled"], loss=level,
                          probability=alpha,
                          cells=row.get("unlabelled_cells") if kind == "cells" else None)
        warned = v["warned"]
    elif kind == "sign":
        v = held_out_verdict(b, c, m)
        warned = bool(v["difference"] <= -level or v["p_value"] < alpha)
    else:
        v = held_out_verdict(b, c, m, loss=level, alpha=alpha if kind == "bound" else WARN_ALPHA)
        warned = v["warned"]
    return warned, {"m": m, "diff": v["difference"], "p": v["p_value"],
                    "se": v["standard_error"], "p_loss": v.get("p_loss", np.nan),
                    "bound": v["loss_bound"] if kind != "sign" else np.nan}


def rule_name(rule: tuple) -> str:
    kind, level, alpha = rule
    if kind == "code":
        return (f"P(loss >= {100 * level:g} on the unlabelled rows) >= {alpha:g} (the code's "
                "form; without unlabelled rows the held-out bound)")
    if kind == "cells":
        return (f"P(loss >= {100 * level:g} on the unlabelled rows) >= {alpha:g}, each vote "
                "cell split as its held-out rows (not adopted)")
    if kind == "bound":
        return f"loss >= {100 * level:g} not ruled out at {alpha:g}"
    return f"diff <= -{100 * level:g} or sign p < {alpha:g}"


def score(rows: list[dict], splits: int, rule: tuple) -> dict:
    """The rule on the first ``splits`` folds of every fit that has that many.

    A fit with fewer folds whose pre-fit ran (some failed, or the check did not run) is
    left out of every rate; ``left_out`` counts them, as ``(losing >= 5, others)``, so that
    a table of these rates can say how many fits its denominators miss."""
    losing = [r for r in rows if r["loss"] >= LOSS_POINTS]
    # losing beyond the hidden set's own noise: one-sided 10 % (1.28 standard errors)
    clear = [r for r in losing if r["loss"] >= 1.28 * r["loss_se"]]
    other = [r for r in rows if r["loss"] < LOSS_POINTS]
    winning = [r for r in rows if r["loss"] <= 0]

    def usable(r):
        return len(r["folds"]) >= splits

    def rate(group):
        hits = [decide(r, splits, rule)[0] for r in group if usable(r)]
        return (sum(hits), len(hits))

    return {"splits": splits, "rule": list(rule), "recall": rate(losing),
            "recall_clear": rate(clear),
            "false_alarm": rate(other), "false_alarm_not_losing": rate(winning),
            "left_out": (sum(not usable(r) for r in losing),
                         sum(not usable(r) for r in other))}


def as_decided(rows: list[dict], failed: list[dict] = (), *, by_size: bool = True
               ) -> list[dict]:
    """The goal's two rates with every fit counted, as the estimator decided it.

    Each fit is judged by the code's rule on every fold whose pre-fit ran, however many
    (the estimator's own decision); a fit whose check did not run at all (every pre-fit
    failed) raised no ``EmbeddingWorseThanInputWarning`` and counts as silent. Per number
    of rows ``n``, then all together (``n`` None): ``recall`` and ``false_alarm`` as
    ``(warned, fits)`` (``by_size=False``: all together only, ``n`` None), each with its
    exact two-sided 90 % interval (``recall_ci``,
    ``false_alarm_ci``), and how many fits had every fold (``all_folds``), some
    (``some_folds``), none (``no_check``), and failed outright (``failed``, from
    :func:`failed_fits`; not in the rates, they have no loss to score)."""
    out = []
    sizes = sorted({r["n"] for r in rows} | {f["n"] for f in failed})
    for n in (sizes if by_size else []) + ([None] if len(sizes) > 1 or not by_size else []):
        sub = [r for r in rows if n is None or r["n"] == n]
        warned = [decide(r, len(r["folds"]), CODE_RULE)[0] if r["folds"] else False
                  for r in sub]
        los = [w for r, w in zip(sub, warned) if r["loss"] >= LOSS_POINTS]
        oth = [w for r, w in zip(sub, warned) if r["loss"] < LOSS_POINTS]
        rec, fa = (sum(los), len(los)), (sum(oth), len(oth))
        out.append({"n": n, "fits": len(sub),
                    "hidden": float(np.median([r["hidden"] for r in sub])) if sub else np.nan,
                    "recall": rec, "recall_ci": binomial_interval(*rec),
                    "false_alarm": fa, "false_alarm_ci": binomial_interval(*fa),
                    "all_folds": sum(bool(r["folds"]) and len(r["folds"]) >= r.get(
                        "folds_asked", len(r["folds"])) for r in sub),
                    "some_folds": sum(0 < len(r["folds"]) < r.get("folds_asked", 0)
                                      for r in sub),
                    "no_check": sum(not r["folds"] for r in sub),
                    "failed": sum(n is None or f["n"] == n for f in failed)})
    return out


#: issue 42's goal for the check: warn on at least this share of the fits losing >= 5
#: points, and on at most ``GOAL_FALSE_ALARMS`` of the others
GOAL_RECALL, GOAL_FALSE_ALARMS = 0.9, 0.1


def goal_verdict(rate: tuple, interval: tuple, *, at_least: float | None = None,
                 at_most: float | None = None) -> str:
    """``"met"`` when the whole exact interval of the rate ``(k, n)`` meets the goal,
    ``"rate meets it, interval does not"`` when only the rate does (too few fits to show
    it), ``"not met"`` otherwise (and when there is no fit to count)."""
    k, n = rate
    if not n:
        return "not met"
    lo, hi = interval
    if at_least is not None:
        ok, shown = k / n >= at_least, lo >= at_least
    else:
        ok, shown = k / n <= at_most, hi <= at_most
    return "met" if shown else ("rate meets it, interval does not" if ok else "not met")


#: rules :func:`chosen_on_half` chooses among: the bound at losses of 3-5 points and levels
#: from 90 % to the point estimate (alpha 0.5: warn when the estimated loss reaches it)
HALF_RULES = ([("bound", loss, alpha) for loss in (0.03, 0.04, 0.05)
               for alpha in (0.1, 0.2, 0.3, 0.5)]
              + [(kind, WARN_LOSS, p) for kind in ("code", "cells")
                 for p in (0.2, 0.3, 0.4, 0.5)])


def _shortfall(s: dict) -> tuple:
    """How far a score is from the goal (recall >= 90 %, false alarms <= 10 %); smaller is
    better, ties broken by higher recall, then fewer false alarms."""
    (hit, los), (fa, oth) = s["recall"], s["false_alarm"]
    rec, far = hit / max(los, 1), fa / max(oth, 1)
    return (max(0.0, 0.9 - rec) + max(0.0, far - 0.1), -rec, far)


def chosen_on_half(rows: list[dict], splits: int, rules=HALF_RULES) -> list[dict]:
    """A rule chosen on half of the fits, scored on the other half (both ways round).

    The fits of every setting (dataset, n, graph) are sorted by seed and dealt alternately
    into halves A and B; on each half the rule of ``rules`` nearest the goal
    (:func:`_shortfall`) is chosen and then scored on the other half, beside the code's
    rule on that half."""
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["n"], r["method"], r["params"]), []).append(r)
    halves: tuple[list, list] = ([], [])
    for group in groups.values():
        for i, r in enumerate(sorted(group, key=lambda r: r["seed"])):
            halves[i % 2].append(r)
    out = []
    for name, fit_on, score_on in (("A", halves[0], halves[1]), ("B", halves[1], halves[0])):
        chosen = min(rules, key=lambda r_: _shortfall(score(fit_on, splits, r_)))
        out.append({"chosen_on": name, "rule": chosen,
                    "on_own_half": score(fit_on, splits, chosen),
                    "on_other_half": score(score_on, splits, chosen),
                    "code_on_other_half": score(score_on, splits, CODE_RULE)})
    return out


def by_size(rows: list[dict], splits: int, rule: tuple) -> list[dict]:
    """The rule's score for each number of rows ``n`` apart, with the median hidden-set
    size, its standard error and the check's (points), and how the check's estimate tracks
    each fit's hidden-label loss: their correlation across fits, the mean of loss minus
    estimate, and how many losses lie within the estimate's two-sided 90 % interval."""
    out = []
    for n in sorted({r["n"] for r in rows}):
        sub = [r for r in rows if r["n"] == n]
        # the estimate's agreement: fits whose check ran (a fit without folds has none)
        ran = [r for r in sub if r["folds"]]
        d = [decide(r, splits, rule)[1] for r in ran]
        est = np.array([-100.0 * x["diff"] for x in d])
        se_check = np.array([100.0 * x["se"] for x in d])
        loss = np.array([r["loss"] for r in ran])
        se_loss = np.array([r["loss_se"] for r in ran])
        # per fit: is its hidden-label loss within the two-sided 90 % interval of the
        # check's estimate, both errors counted? (about 90 % of fits if the estimate is
        # unbiased for the loss the hidden labels measure and the errors are as stated)
        z = (loss - est) / np.sqrt(se_check ** 2 + se_loss ** 2)
        out.append({"n": n, "fits": len(sub), "hidden": float(np.median([r["hidden"]
                                                                         for r in sub])),
                    "loss_se": float(np.median(se_loss)) if ran else np.nan,
                    "check_se": float(np.median(se_check)) if ran else np.nan,
                    "r": float(np.corrcoef(loss, est)[0, 1]) if len(ran) > 2 else np.nan,
                    "mean_gap": float(np.mean(loss - est)) if ran else np.nan,
                    "within_90": (int(np.sum(np.abs(z) <= 1.645)), len(ran)),
                    **score(sub, splits, rule)})
    return out


def ceiling(rows: list[dict], splits: int, *, draws: int = 200_000, seed: int = 0) -> dict:
    """What any rule on the held-out estimate can reach against the hidden-label truth.

    A Gaussian model of these rows: a fit's expected loss :math:`\\mu` (points) is
    :math:`N(\\bar\\mu, \\tau^2)`, with :math:`\\bar\\mu` and :math:`\\tau^2` from the
    held-out estimates (their variance less the check's own squared standard error); the
    check sees :math:`\\mu + N(0, s_c^2)`, the hidden labels :math:`\\mu + N(0, s_t^2)`
    (the medians of the rows' standard errors). Over thresholds on the check's estimate:
    the best recall on fits losing >= 5 points at <= 10 % false alarms on the others, and
    the fewest false alarms at >= 90 % recall. Even a check without noise (s_c = 0) is
    capped by the truth's noise, which the last two numbers show."""
    est, s_c = [], []
    for r in rows:
        if len(r["folds"]) < splits:
            continue
        _, d = decide(r, splits, ("bound", WARN_LOSS, WARN_ALPHA))
        est.append(-100.0 * d["diff"])
        s_c.append(100.0 * d["se"])
    s_t = float(np.median([r["loss_se"] for r in rows if r["folds"]]))
    s_c_med = float(np.median(s_c))
    mu_bar = float(np.mean(est))
    tau = float(np.sqrt(max(np.var(est, ddof=1) - s_c_med ** 2, 0.0)))
    rng = np.random.default_rng(seed)
    mu = rng.normal(mu_bar, tau, draws)
    truth = mu + rng.normal(0.0, s_t, draws) >= LOSS_POINTS
    out = {"mu_bar": mu_bar, "tau": tau, "s_c": s_c_med, "s_t": s_t}
    for name, sc in (("check", s_c_med), ("noiseless check", 0.0)):
        seen = mu + rng.normal(0.0, sc, draws)
        best_recall, least_fa = 0.0, 1.0
        for thr in np.linspace(-10, 15, 251):
            w = seen >= thr
            rec, fa = float(w[truth].mean()), float(w[~truth].mean())
            if fa <= 0.10:
                best_recall = max(best_recall, rec)
            if rec >= 0.90:
                least_fa = min(least_fa, fa)
        out[name] = {"recall_at_10pct_false_alarms": best_recall,
                     "false_alarms_at_90pct_recall": least_fa}
    return out


def loss_probability_at_split(split, d: int, h: int, loss: float = WARN_LOSS) -> float:
    """P(a loss of ``loss`` or more on a fit's ``h`` unlabelled rows) when its ``d``
    differing rows are a multinomial draw from ``split`` (the shares right only on the
    inputs, on neither, only on the embedding) taken as exact: the loss is
    :math:`(n_+ - n_-)/h`, each row adding +1, 0 or -1 with those shares (the counts
    ``validation_`` records, pooled over the folds, may be passed as they are)."""
    s = np.asarray(split, dtype=float)
    s = s / s.sum() if s.sum() > 0 else np.array([0.0, 1.0, 0.0])
    need = int(np.ceil(loss * h - 1e-9))
    p = np.ones(1)
    for _ in range(d):   # P(n+ - n- = j), j = -d ... d, one row at a time
        p = np.convolve(p, s[::-1])
    return float(p[max(need + d, 0):].sum())


def split_ceiling(rows: list[dict], loss: float = WARN_LOSS) -> dict:
    """What any statistic of the held-out split can reach on the unlabelled rows.

    For each fit with its unlabelled rows' counts, :math:`P_i` is
    :func:`loss_probability_at_split` of its pooled held-out split (as if exact, the limit
    of an infinite held-out set): a check that knew that split could do no better than
    warn when :math:`P_i \\ge t`, whose expected recall on fits losing ``loss`` or more is
    :math:`\\sum P_i w_i / \\sum P_i` and expected false alarms
    :math:`\\sum (1 - P_i) w_i / \\sum (1 - P_i)`. Returned: the fits, their expected
    number losing, the best expected recall at <= 10 % false alarms and the fewest
    expected false alarms at >= 90 % recall (each with its ``t``). (The unlabelled rows
    still split by chance: the ceiling is that chance, which no held-out count removes.)"""
    P = []
    for r in rows:
        if not r["folds"] or not r.get("unlabelled"):
            continue
        b = sum(f["input_only"] for f in r["folds"])
        c = sum(f["embedding_only"] for f in r["folds"])
        v = sum(f["votes_differ"] for f in r["folds"])
        P.append(loss_probability_at_split((b, v - b - c, c), r["unlabelled_disagree"],
                                           r["unlabelled"], loss))
    P = np.array(P)
    out = {"fits": len(P), "expected_losing": float(P.sum()),
           "recall_at_10pct_false_alarms": (np.nan, np.nan),
           "false_alarms_at_90pct_recall": (np.nan, np.nan)}
    if not len(P) or P.sum() == 0 or (1 - P).sum() == 0:
        return out
    curve = []
    for t in np.unique(np.r_[P, np.inf]):
        w = P >= t
        curve.append((float(t), float((P * w).sum() / P.sum()),
                      float(((1 - P) * w).sum() / (1 - P).sum())))
    rec = max((c for c in curve if c[2] <= GOAL_FALSE_ALARMS), key=lambda c: (c[1], -c[2]))
    fa = min((c for c in curve if c[1] >= GOAL_RECALL), key=lambda c: (c[2], -c[0]))
    out["recall_at_10pct_false_alarms"] = (rec[1], rec[0])
    out["false_alarms_at_90pct_recall"] = (fa[2], fa[0])
    return out


def binomial_interval(k: int, n: int, level: float = 0.9) -> tuple[float, float]:
    """The exact (Clopper-Pearson) two-sided ``level`` interval of a rate seen as ``k`` of
    ``n``: the rates under which ``k`` or fewer, and ``k`` or more, have probability at
    least ``(1 - level) / 2``; ``(0, 1)`` when ``n`` is 0."""
    if n == 0:
        return (0.0, 1.0)
    a = (1.0 - level) / 2.0
    lo = float(beta.ppf(a, k, n - k + 1)) if k > 0 else 0.0
    hi = float(beta.ppf(1.0 - a, k + 1, n - k)) if k < n else 1.0
    return (lo, hi)


def format_rate(pair, ci: bool = False) -> str:
    """``k/n (p %)`` of a rate ``(k, n)``, with its exact two-sided 90 % interval
    (:func:`binomial_interval`, percent) when ``ci``; a dash when ``n`` is 0."""
    k, n = pair
    if not n:
        return "–"
    if not ci:
        return f"{k}/{n} ({100.0 * k / n:.0f} %)"
    lo, hi = binomial_interval(k, n)
    return f"{k}/{n} ({100.0 * k / n:.0f} %; {100 * lo:.0f}-{100 * hi:.0f})"



def _left_out(s: dict) -> str:
    los, oth = s["left_out"]
    return f"{los} / {oth}" if los or oth else "0"


def _diff_cell(r: dict, d: dict, splits: int) -> str:
    """The per-fit table's held-out cell: the difference on the folds used, and how many
    of the folds asked for ran where not all did."""
    if not r["folds"]:
        return "check did not run"
    ran = len(r["folds"])
    asked = r.get("folds_asked", ran)
    return (f"{100 * d['diff']:+.1f} (m={d['m']}"
            + (f"; {ran} of {asked} folds ran" if ran < asked else "") + ")")


def _missing_text(rows: list[dict], failed: list[dict], splits: int) -> str:
    """A sentence on the fits the k-fold tables leave out, and why: folds whose pre-fit
    failed, checks that did not run, fits that failed outright."""
    short = [r for r in rows if len(r["folds"]) < splits]
    none = [r for r in short if not r["folds"]]
    text = (f"{len(short)} of the {len(rows)} fits have fewer than {splits} folds whose "
            f"pre-fit ran ({len(none)} none: the check did not run and the estimator raised "
            f"no EmbeddingWorseThanInputWarning; {len(short) - len(none)} some)"
            if short else f"Every fit has {splits} folds whose pre-fit ran")
    reasons: dict = {}
    for r in short:
        for why in r.get("folds_failed", []):
            key = why.split(":")[0]
            reasons[key] = reasons.get(key, 0) + 1
    if reasons:
        text += ("; the failed pre-fits: " + ", ".join(f"{n} {why}" for why, n in
                                                        sorted(reasons.items())))
    if short:
        text += (f". The {splits}-fold rates below leave them out (their column 'left out' "
                 "counts them); the first table counts every fit as the estimator decided it")
    text += "."
    if failed:
        text += (f" {len(failed)} DVU fit{'s' * (len(failed) > 1)} failed outright (no "
                 "embedding, no loss to score; in no table): " + "; ".join(
                     f"{f['dataset']} {f['n']} {f['method']} {f['params']} seed {f['seed']} "
                     f"({f['error'].split(':')[0]})" for f in failed) + ".")
    return text


def decided_table(entries: list[tuple[list[str], dict]], heads: list[str]) -> list[str]:
    """Markdown rows of :func:`as_decided` records: each entry's leading cells (``heads``
    name them), the fits by folds that ran, and the goal's two rates with their exact
    two-sided 90 % intervals, each beside its goal and whether it is met
    (:func:`goal_verdict`, in bold where not)."""
    lines = ["| " + " | ".join(heads) + " | fits (all folds / some / none) | warns on fits "
             f"losing >= 5 | goal >= {100 * GOAL_RECALL:.0f} % | warns on the others | "
             f"goal <= {100 * GOAL_FALSE_ALARMS:.0f} % |",
             "|" + "---|" * (len(heads) + 5)]
    for cells, a in entries:
        rec = goal_verdict(a["recall"], a["recall_ci"], at_least=GOAL_RECALL)
        fa = goal_verdict(a["false_alarm"], a["false_alarm_ci"], at_most=GOAL_FALSE_ALARMS)
        fits = (f"{a['fits']} ({a['all_folds']} / {a['some_folds']} / {a['no_check']})"
                + (f"; {a['failed']} failed outright" if a["failed"] else ""))
        lines.append("| " + " | ".join(cells) + f" | {fits} | {format_rate(a['recall'], True)}"
                     f" | {rec if rec == 'met' else f'**{rec}**'} | "
                     f"{format_rate(a['false_alarm'], True)} | "
                     f"{fa if fa == 'met' else f'**{fa}**'} |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--splits", type=int, default=5,
                    help="folds the per-fit tables use (the estimator's validation_splits)")
    ap.add_argument("--loss", type=float, default=WARN_LOSS)
    ap.add_argument("--alpha", type=float, default=WARN_ALPHA,
                    help="level of the held-out bound (--grid's 'bound' rules)")
    ap.add_argument("--probability", type=float, default=WARN_PROBABILITY,
                    help="the code's rule warns when P(loss >= --loss) reaches this")
    ap.add_argument("--grid", action="store_true")
    ap.add_argument("--halves", action="store_true",
                    help="choose a rule on half of the fits, score it on the other half")
    ap.add_argument("--json")
    add_tuning_argument(ap)
    ap.add_argument("--tag", help="with --tuning: write section bench_dvu_check:TAG")
    args = ap.parse_args(argv)
    rows = load(args.folders)
    failed = failed_fits(args.folders)
    rule = ("code", args.loss, args.probability)
    old = sum(r["unlabelled"] is None and bool(r["folds"]) for r in rows)
    # the estimator's own verdict (all its folds), recorded by the runner, against the rule
    # recomputed here
    kept = [r for r in rows if r["unlabelled"] is not None
            and r.get("recorded_warned") is not None]
    same = sum(decide(r, len(r["folds"]), CODE_RULE)[0] == r["recorded_warned"] for r in kept)
    k = args.splits
    out: list[str] = []
    say = out.append
    say(f"{len(rows)} DVU fits with a held-out check; losing >= {LOSS_POINTS:g} points: "
        f"{sum(r['loss'] >= LOSS_POINTS for r in rows)}; not losing at all: "
        f"{sum(r['loss'] <= 0 for r in rows)}. Check as in the code: the first {k} folds, "
        f"rule '{rule_name(rule)}'. A fit's loss is measured on its hidden labels only "
        f"(median {int(np.median([r['hidden'] for r in rows]))}), whose own standard error "
        f"(column 'its s.e.', median "
        f"{np.median([r['loss_se'] for r in rows if r['folds']]):.1f} points) "
        "is of the size of the 5-point threshold: per-fit recall and false alarms are "
        "measured against a noisy truth. " + _missing_text(rows, failed, k)
        + (f" {old} fits were recorded before the runner kept the unlabelled rows' counts: "
           "the code's rule is the held-out bound on them ('p_loss' blank)." if old else "")
        + (f" The code's rule recomputed here agrees with the fit's own recorded verdict on "
           f"{same} of {len(kept)} fits." if kept else "")
        + "\n")
    say("Every fit as the estimator decided it (the code's rule on every fold that ran; a "
        "fit whose check did not run counts as silent; rates with their exact two-sided 90 % "
        "binomial interval, percent; 'met' when the whole interval meets the goal):\n")
    out.extend(decided_table([([str(a["n"] or "all"), f"{a['hidden']:.0f}"], a)
                              for a in as_decided(rows, failed)],
                             ["rows", "hidden labels a fit"]))
    say("")
    say(f"| dataset | n | method | params | fits | raw | DVU | loss (points) | held-out diff, "
        f"{k} folds | warns |")
    say("|---|---|---|---|---|---|---|---|---|---|")
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["n"], r["method"], r["params"]), []).append(r)

    def sd(a):
        return float(np.std(a, ddof=1)) if len(a) > 1 else 0.0

    for key, group in sorted(groups.items()):
        raw = 100 * np.array([r["raw"] for r in group])
        dvu = 100 * np.array([r["dvu"] for r in group])
        decisions = [decide(r, k, rule) for r in group]
        # a fit whose check did not run has no held-out difference (not a zero one)
        diffs = [100 * d["diff"] for r, (_, d) in zip(group, decisions) if r["folds"]]
        say(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {len(group)} | "
            f"{raw.mean():.1f} ± {sd(raw):.1f} | {dvu.mean():.1f} ± {sd(dvu):.1f} | "
            f"{(raw - dvu).mean():+.1f} ± {sd(raw - dvu):.1f} | "
            f"{f'{np.mean(diffs):+.1f}' if diffs else '–'} | "
            f"{sum(w for w, _ in decisions)}/{len(group)} |")
    means = np.array([[np.mean([r["loss"] for r in g if r["folds"]]),
                       -100.0 * np.mean([decide(r, k, rule)[1]["diff"] for r in g
                                         if r["folds"]])]
                      for g in groups.values() if sum(bool(r["folds"]) for r in g) > 1])
    if len(means) > 2:
        per = sorted({len(g) for g in groups.values() if len(g) > 1})
        seeds = f"{per[0]}" if len(per) == 1 else f"{per[0]}-{per[-1]}"
        say(f"\nAcross these {len(means)} settings (dataset, n, graph; {seeds} seeds each) the "
            "mean "
            "hidden-label loss and the mean held-out loss estimate (minus the held-out diff) "
            f"correlate at r = {np.corrcoef(means.T)[0, 1]:.2f}, mean |difference| "
            f"{np.mean(np.abs(means[:, 0] - means[:, 1])):.1f} points.")
    say("\n| dataset | n | method | params | seed | raw | DVU | loss (points) | its s.e. | "
        f"held-out diff, {k} folds | loss bound | sign p | unlabelled rows differing | p_loss | "
        "warns |")
    say("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (r["dataset"], r["n"], r["method"], r["params"],
                                         r["seed"])):
        w, d = decide(r, k, rule)
        say(f"| {r['dataset']} | {r['n']} | {r['method']} | {r['params']} | {r['seed']} | "
            f"{100 * r['raw']:.1f} | {100 * r['dvu']:.1f} | {r['loss']:+.1f} | "
            + (f"{r['loss_se']:.1f} | {_diff_cell(r, d, k)} | {100 * d['bound']:.1f} | "
               f"{d['p']:.2g} | " if r["folds"] else "– | check did not run | – | – | ")
            + (f"{r['unlabelled_disagree']} of {r['unlabelled']} | {d['p_loss']:.2f}"
               if r["unlabelled"] else " | ")
            + f" | {'yes' if w else 'no'} |")
    say("\nEach rate below counts the fits with at least that many folds; the last column "
        "counts the fits it leaves out (fewer folds ran: losing >= 5 / losing < 5).\n")
    say("| folds | rule | warns on fits losing >= 5 | ... and beyond the hidden set's noise | "
        "warns on fits losing < 5 | warns on fits not losing | left out: fewer folds |")
    say("|---|---|---|---|---|---|---|")
    rules = [rule]
    if args.grid:
        rules = ([("sign", 0.03, 0.1)] + [("bound", loss, alpha) for loss in (0.03, 0.05)
                                          for alpha in (0.1, 0.2, 0.3)]
                 + [("code", WARN_LOSS, p) for p in (0.2, 0.3, 0.4, 0.5) if p != rule[2]]
                 + [("cells", WARN_LOSS, p) for p in (0.2, 0.3, 0.4, 0.5)] + [rule])
    results = []
    for r_ in rules:
        for splits in range(1, 6):
            s = score(rows, splits, r_)
            results.append(s)
            say(f"| {splits} | {rule_name(r_)} | {format_rate(s['recall'])} | "
                f"{format_rate(s['recall_clear'])} | {format_rate(s['false_alarm'])} | "
                f"{format_rate(s['false_alarm_not_losing'])} | {_left_out(s)} |")
    say(f"\nBy size ('{rule_name(rule)}', {k} folds; s.e. in points, medians; rates with "
        "their exact two-sided 90 % binomial interval, percent):\n")
    say("| rows | fits | hidden labels | their s.e. | check's s.e. | r (per fit) | loss minus "
        "estimate | loss in the estimate's 90 % interval | warns on fits losing >= 5 | "
        "... and beyond the hidden set's noise | warns on fits losing < 5 | warns on fits "
        f"not losing | left out: fewer than {k} folds |")
    say("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for b in by_size(rows, k, rule):
        say(f"| {b['n']} | {b['fits']} | {b['hidden']:.0f} | {b['loss_se']:.1f} | "
            f"{b['check_se']:.1f} | {b['r']:.2f} | {b['mean_gap']:+.1f} | "
            f"{format_rate(b['within_90'])} | {format_rate(b['recall'], True)} | "
            f"{format_rate(b['recall_clear'], True)} | {format_rate(b['false_alarm'], True)} | "
            f"{format_rate(b['false_alarm_not_losing'], True)} | {_left_out(b)} |")
    halves = chosen_on_half(rows, k) if args.halves else []
    if halves:
        say(f"\nA rule chosen on half of the fits ({k} folds; the fits of each setting dealt "
            "alternately by seed into halves A and B; the rule nearest the goal among "
            f"'{rule_name(HALF_RULES[0])}' ... '{rule_name(HALF_RULES[-1])}', "
            f"{len(HALF_RULES)} rules) and scored on the other half, beside the code's rule "
            "there (the other half's rates with their exact two-sided 90 % binomial "
            "interval, percent):\n")
        say("| chosen on | rule | its half: losing >= 5 | its half: losing < 5 | other half: "
            "losing >= 5 | other half: losing < 5 | code's rule, other half: losing >= 5 | "
            "code's rule, other half: losing < 5 |")
        say("|---|---|---|---|---|---|---|---|")
        for h in halves:
            say(f"| {h['chosen_on']} | {rule_name(h['rule'])} | "
                f"{format_rate(h['on_own_half']['recall'])} | "
                f"{format_rate(h['on_own_half']['false_alarm'])} | "
                f"{format_rate(h['on_other_half']['recall'], True)} | "
                f"{format_rate(h['on_other_half']['false_alarm'], True)} | "
                f"{format_rate(h['code_on_other_half']['recall'], True)} | "
                f"{format_rate(h['code_on_other_half']['false_alarm'], True)} |")
        say("\nLeft out of these rates (fewer than " + str(k) + " folds; losing >= 5 / "
            "losing < 5): " + "; ".join(f"half {h['chosen_on']} {_left_out(h['on_own_half'])}"
                                        for h in halves) + ".")
    c = ceiling(rows, k)
    say(f"\nCeiling (Gaussian model of these rows, {k} folds; problems/bench_dvu_check.py "
        f"`ceiling`): expected loss {c['mu_bar']:+.1f} ± {c['tau']:.1f} points across fits, "
        f"the check's standard error {c['s_c']:.1f}, the hidden labels' {c['s_t']:.1f}. Any "
        "threshold on the held-out estimate reaches at best "
        f"{100 * c['check']['recall_at_10pct_false_alarms']:.0f} % recall at <= 10 % false "
        f"alarms, or {100 * c['check']['false_alarms_at_90pct_recall']:.0f} % false alarms at "
        ">= 90 % recall; a check without any noise: "
        f"{100 * c['noiseless check']['recall_at_10pct_false_alarms']:.0f} % and "
        f"{100 * c['noiseless check']['false_alarms_at_90pct_recall']:.0f} %."
        + (f" ({sum(len(r['folds']) < k for r in rows)} fits with fewer than {k} folds left "
           "out.)" if any(len(r["folds"]) < k for r in rows) else ""))
    sc = split_ceiling(rows, args.loss)
    if sc["fits"] and not np.isnan(sc["recall_at_10pct_false_alarms"][0]):
        say(f"\nCeiling of any statistic of the held-out split (`split_ceiling`: each fit's "
            f"pooled split taken as exact, its differing unlabelled rows a draw from it; "
            f"{sc['fits']} fits, {sc['expected_losing']:.1f} expected to lose): at best "
            f"{100 * sc['recall_at_10pct_false_alarms'][0]:.0f} % recall at <= 10 % false "
            f"alarms, or {100 * sc['false_alarms_at_90pct_recall'][0]:.0f} % false alarms at "
            ">= 90 % recall.")
    text = "\n".join(out) + "\n"
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "failed": failed,
                                               "scores": results, "halves": halves,
                                               "ceiling": c, "split_ceiling": sc,
                                               "as_decided": as_decided(
                                                   rows, failed)}, indent=1))
    if args.tuning:
        key = "bench_dvu_check" + (f":{args.tag}" if args.tag else "")
        title = "DVU's held-out check against the hidden labels" + (
            f" ({args.tag})" if args.tag else "")
        write_section(key, title, text, command=command_line("problems.bench_dvu_check", argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

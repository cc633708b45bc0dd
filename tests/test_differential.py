"""The differential test (problems/differential.py) as part of the suite.

Random Gram SDP variants (DVU in every distance mode and centroid form, SNR, trace
terms, MVU, weights changed after building, random added constraints), solved by
LOWRANK and CLARABEL, a second reference (CSDP, else SDPA) deciding disagreements,
every returned point checked by cvxpy on the formulation's own problem. Nothing may be
reported untrue: no wrong point, no objective below its own certified bound, no
untyped exception, no result far from the references' optimum or where they prove
there is none, no proof of infeasibility for a problem a reference solves, and two
``optimal`` results agree to 1e-4 relative. LOWRANK runs under a small time limit
here, so it may stop with a typed error instead of a result: that is allowed, a
wrong answer is not. The full run: ``python -m problems.differential --n 1000``.

The truncation mode (``--truncate``) solves the same instances with each backend cut
short (a random LOWRANK ``time_limit``, ``max_outer`` or ``max_inner``, also through
``DVU(solver_options=...).fit``; SCS ``max_iters``; CLARABEL ``max_iter``), judged against
CLARABEL without a cut: a cut solve may refuse with a typed error, never report
something untrue.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from problems.differential import (
    CUTS,
    FEAS,
    TIME_LIMIT,
    _check_point,
    _judge,
    _needs_tight,
    _settles,
    draw_cuts,
    lowrank_clock,
    make_instance,
    run_instance,
    run_truncated,
    summarize,
)
from sdpembed import solve
from sdpembed.exceptions import SdpEmbedError, SolverFailedError

#: seed 99085's optimum (CLARABEL -0.1593364885, CSDP -0.1593364738; docs/tuning.md,
#: "99085: equality distances barely strictly feasible")
OPTIMUM_99085 = -0.15933649
#: seed 99192's (CLARABEL -0.4472676; the same section)
OPTIMUM_99192 = -0.4472676
#: seed 99467's optimum: CLARABEL at tol_gap_abs = tol_gap_rel = tol_feas = 1e-12
#: (-2.10996884e-4; at its defaults it stops at -2.0896e-4, CSDP at -2.1072e-4, SDPA at
#: -2.0993e-4; docs/tuning.md, "Fresh slices on main (seeds 99,300-99,499)")
OPTIMUM_99467 = -2.10996884e-4

UNTRUE = ("wrong_point", "bound_above_objective", "untyped", "far", "disagree",
          "false_infeasible", "outside_gap")


def _run(seeds, n_range, **limits):
    records = [run_instance(s, n_range, **limits) for s in seeds]
    total = summarize(records)
    bad = [(r["instance"], r["verdict"]) for r in records
           if any(r["verdict"].get(k) for k in UNTRUE)]
    return total, bad


def _result(objective, status="optimal_inaccurate", bound=None):
    return {"kind": "result", "status": status, "objective": objective, "bound": bound,
            "violation": 0.0, "objective_mismatch": 0.0, "solver": "LOWRANK"}


def test_judge_holds_an_inaccurate_result_to_its_stated_gap():
    ref = _result(-1.0, status="optimal")
    # the optimum -1 lies in [bound, objective] = [-1.004, -0.996]: within its stated gap
    inside = _judge(_result(-0.996, bound=-1.004), ref, None)
    assert inside["agree_within_gap"] == 1 and inside["outside_gap"] == 0
    # a nearly feasible point below the optimum, by less than its gap of 0.004
    below = _judge(_result(-1.002, bound=-1.006), ref, None)
    assert below["agree_within_gap"] == 1 and below["outside_gap"] == 0
    # a bound above the optimum (-0.999 > -1): the stated gap is untrue
    outside = _judge(_result(-0.996, bound=-0.999), ref, None)
    assert outside["outside_gap"] == 1 and outside["disagree"] == 1
    # a point farther below the optimum (0.01) than its gap (0.002)
    far_below = _judge(_result(-1.01, bound=-1.012), ref, None)
    assert far_below["outside_gap"] == 1 and far_below["disagree"] == 1
    # agreement within AGREE needs no bracket
    assert _judge(_result(-1.00001, bound=-1.00002), ref, None)["agree"] == 1


def test_judge_takes_an_optimal_reference_over_an_inaccurate_one():
    """Seed 60092 of the 1,000-instance run: CLARABEL stopped 'optimal_inaccurate' at
    0.0157115, 0.65 % above the optimum, while LOWRANK ('optimal', certified gap 1.1e-5)
    and CSDP ('optimal') agree at 0.0156093 to 6e-10. CSDP's optimal point decides: LOWRANK
    agrees, and nothing is counted against it. Were CSDP inaccurate too, CSDP's point would
    still decide, as LOWRANK's feasible objective lies 0.65 % below CLARABEL's
    (:mod:`problems.differential_reference`); without that witness CLARABEL's point would
    be the reference and the same LOWRANK result outside its gap."""
    low = _result(0.015609298737, status="optimal", bound=0.015609123091)
    clarabel = _result(0.015711528937)                    # optimal_inaccurate
    csdp = _result(0.015609308974, status="optimal")
    v = _judge(low, clarabel, csdp)
    assert v["agree"] == 1 and v["reference_inaccurate"] == 1
    assert v["disagree"] == v["outside_gap"] == v["far"] == 0
    v = _judge(low, clarabel, _result(0.015609308974))    # both references inaccurate
    assert v["agree"] == 1 and v["disagree"] == v["outside_gap"] == 0
    v = _judge(low, clarabel, _result(0.015609308974), witnesses=())
    assert v["agree"] == 0 and v["disagree"] == 1 and v["outside_gap"] == 1
    # an optimal CLARABEL stays the reference, whatever the second says
    v = _judge(low, _result(0.015609308974, status="optimal"), _result(0.0157))
    assert v["agree"] == 1 and v["reference_inaccurate"] == 0


def test_judge_counts_agreement_with_the_second_reference_where_clarabel_failed():
    """Seed 109240 (interval DVU, 33 points, an added row sum): CLARABEL refused
    (``SolverFailedError``, its point priced at 1.9e-5), CSDP 'optimal' -0.6131446, LOWRANK
    'optimal' -0.6131427 (certified gap 7.1e-6). The judge took CSDP's optimum but counted
    neither agreement nor disagreement: a LOWRANK result off CSDP's optimum by more than
    AGREE (and less than FAR) went uncounted where CLARABEL failed."""
    clarabel = {"kind": "error", "error": "SolverFailedError", "solver": "CLARABEL"}
    csdp = _result(-0.6131445941986436, status="optimal")
    v = _judge(_result(-0.6131427229841501, status="optimal", bound=-0.6131470979479449),
               clarabel, csdp)
    assert v["agree"] == 1 and v["reference_inaccurate"] == 0 and v["disagree"] == 0
    off = _judge(_result(-0.6125, status="optimal", bound=-0.61251), clarabel, csdp)
    assert off["agree"] == 0 and off["disagree"] == 1 and off["far"] == 0
    # no reference gives a result: nothing to agree with
    v = _judge(_result(-1.0598, status="optimal"), clarabel, {**clarabel, "solver": "CSDP"})
    assert v["agree"] == v["disagree"] == v["disagree_inaccurate"] == 0


def test_judge_takes_the_more_nearly_feasible_of_two_inaccurate_references():
    """Seed 50024 (37-point interval DVU): LOWRANK certified [-1.1128408, -1.1127133];
    CLARABEL stopped 'optimal_inaccurate' at -1.1131878 with violation 5.9e-8, CSDP at
    -1.1128280 with violation 1.6e-9 (SDPA: -1.1128166 at violation 0, SCS at eps 1e-10:
    -1.1129818 at 2.9e-8). The nearly feasible points lie inside LOWRANK's interval; the
    point that undercuts its bound buys it with a larger violation. The judge takes the
    more nearly feasible reference: no untruth, LOWRANK's inaccurate result within its
    stated gap of it."""
    low = _result(-1.1127132574, bound=-1.1128408466)
    clarabel = {**_result(-1.1131877945), "violation": 5.876e-8}
    csdp = {**_result(-1.1128280088), "violation": 1.59e-9}
    v = _judge(low, clarabel, csdp)
    assert v["outside_gap"] == v["disagree"] == v["far"] == 0
    assert v["agree_within_gap"] == 1
    # with the violations the other way round CLARABEL's point decides, and the same
    # LOWRANK bound lies above it: counted
    v = _judge(low, {**clarabel, "violation": 1e-10}, csdp)
    assert v["outside_gap"] == 1 and v["disagree"] == 1


def test_judge_takes_the_reference_nearer_optimality_by_its_own_gap():
    """Seed 383 (equality DVU, 19 points, no strictly feasible point): the facially reduced
    problem's optimum is -0.4416096 (tests/test_face.py). CLARABEL stopped
    'optimal_inaccurate' at -0.4416107 (violation 6.2e-10, gap 2.3e-8), CSDP at -0.4420412
    (violation 2.4e-10, real relative gap -9.1e-5: its objective below its dual one). By
    violation alone CSDP's point decided; by the larger of violation and gap CLARABEL's
    does. LOWRANK's report (optimal at -0.4434143 with bound -0.4434567) lies outside its
    stated gap either way; a report whose interval contains the optimum does not."""
    clarabel = {**_result(-0.4416106580, status="optimal_inaccurate"), "violation": 6.21e-10,
                "gap": 2.27e-8}
    csdp = {**_result(-0.4420412440, status="optimal_inaccurate"), "violation": 2.37e-10,
            "gap": -9.12e-5}
    low = {**_result(-0.4434142566, status="optimal", bound=-0.4434566674),
           "violation": 2.47e-8}
    v = _judge(low, clarabel, csdp)
    assert v["outside_gap"] == 1 and v["disagree"] == 1
    # the interval [bound, objective] of an honest report contains the optimum
    honest = _result(-0.4415, status="optimal_inaccurate", bound=-0.4434566674)
    v = _judge(honest, clarabel, csdp)
    assert v["outside_gap"] == v["disagree"] == v["far"] == 0
    assert v["agree_within_gap"] == 1
    # CLARABEL's objective, not CSDP's, is the optimum: a bound between the two (a true
    # one) is not counted as lying above the optimum
    tight = _result(-0.44155, status="optimal_inaccurate", bound=-0.4419)
    assert _judge(tight, clarabel, csdp)["outside_gap"] == 0
    assert _judge(tight, clarabel, {**csdp, "gap": 0.0})["outside_gap"] == 1


def test_judge_agreement_where_both_return_a_result():
    """Issue 40's "agree within 1e-4 relative wherever both return a result": two
    ``optimal`` results agree within ``AGREE`` relative to the objective (not to max(1,
    .)); an ``optimal_inaccurate`` one within its stated gap (``agree_within_gap``), or it
    disagrees; a certified result outside ``AGREE`` of a reference that is only
    ``optimal_inaccurate`` (and inside its own interval) is ``disagree_inaccurate``."""
    ref = _result(-0.2, status="optimal")
    # 8e-5 apart at 0.2: 4e-4 relative (before: 8e-5 "relative" to max(1, .), agreed)
    v = _judge(_result(-0.19992, status="optimal", bound=-0.19993), ref, None)
    assert v["agree"] == 0 and v["disagree"] == 1
    # near 0 the floor is the objective's scale (1e-3 of the terms' size, here 10)
    zero = {**_result(1e-7, status="optimal"), "scale": 10.0}
    v = _judge({**_result(-1e-7, status="optimal", bound=-2e-7), "scale": 10.0}, zero, None)
    assert v["agree"] == 1 and v["disagree"] == v["far"] == 0
    # an inaccurate result without a bound, 5e-3 off, stating an estimated gap of 1e-3:
    # its stated gap is untrue (before: 'disagree_inaccurate', not counted)
    est = {**_result(-0.199), "stated_gap": 1e-3}
    v = _judge(est, ref, None)
    assert v["disagree"] == 1 and v["agree_within_gap"] == v["disagree_inaccurate"] == 0
    # stating 1e-2, it holds the optimum: agrees within its gap
    v = _judge({**est, "stated_gap": 1e-2}, ref, None)
    assert v["agree_within_gap"] == 1 and v["disagree"] == 0
    # stating no gap at all, it holds nothing
    v = _judge(_result(-0.199), ref, None)
    assert v["disagree"] == 1
    # a cut conic iterate's gap bounds nothing: its inaccurate result states
    # FAR_FROM_OPTIMAL (seed 107's SCS cut, 2.7e-4 from CSDP's optimum with a relative gap
    # of 6.6e-5; 96000's CLARABEL cut at max_iter 6, AlmostSolved 0.38 % off, gap 2.2e-5)
    opt = {**_result(4.3164819, status="optimal"), "solver": "CLARABEL"}
    scs = {**_result(4.3153247), "stated_gap": 6.6e-5, "solver": "SCS"}
    assert _judge(scs, opt, None, references=False)["agree_within_gap"] == 1
    v = _judge({**scs, "objective": 4.2}, opt, None, references=False)
    assert v["far"] == v["disagree"] == 1
    opt = {**_result(-0.4653527, status="optimal"), "solver": "CLARABEL"}
    cut = {**_result(-0.4635654), "stated_gap": 2.2e-5, "solver": "CLARABEL"}
    assert _judge(cut, opt, None, references=False)["agree_within_gap"] == 1
    # LOWRANK's estimate is its own claim: 96000's stated 1e-3 does not hold 3.8e-3
    assert _judge({**cut, "solver": "LOWRANK"}, opt, None)["disagree"] == 1
    # an 'optimal' result without a bound (a cut subject of the truncation mode) 2e-3 from
    # a reference that is only 'optimal_inaccurate': neither is known to AGREE
    v = _judge({**_result(-0.2, status="optimal"), "stated_gap": 1e-8}, _result(-0.1996), None)
    assert v["disagree_inaccurate"] == 1 and v["disagree"] == v["outside_gap"] == 0
    # with a bound, the interval must hold the reference's point: LOWRANK's certified point
    # 2e-3 below it (by more than its gap) is counted, as before
    v = _judge(_result(-0.2, status="optimal", bound=-0.20001), _result(-0.1996), None)
    assert v["outside_gap"] == v["disagree"] == 1


def test_fast_slice_reports_nothing_untrue():
    """Twenty small instances, LOWRANK cut at 3 s and 30 outer iterations. The harness
    reads LOWRANK's ``time_limit`` on the process's CPU time (its default clock), so that
    the cut, and with it the number of instances that reach a result, does not depend on
    the machine's load: at load 28 each instance took 0.03-0.3 s of CPU but up to 4 s of
    wall clock, and a 3 s wall cut turned two of 17 agreements into typed errors. Cut by
    CPU time all 17 results agree with CLARABEL; the count is asserted near it, so a
    solver that stops reaching results on these instances fails here."""
    records = [run_instance(s, (12, 14), time_limit=3.0, max_outer=30)
               for s in range(100, 120)]
    total = summarize(records)
    bad = [(r["instance"], r["verdict"]) for r in records
           if any(r["verdict"].get(k) for k in UNTRUE)]
    assert bad == [], bad
    assert all(total.get(k, 0) == 0 for k in UNTRUE), total
    assert total["agree"] >= 15, total     # the comparison is not vacuous (17 agree)
    # every record states LOWRANK's limits and the clock they were read on
    assert all(r["limits"] == {"time_limit": 3.0, "max_outer": 30, "clock": "cpu"}
               for r in records)
    assert all("cpu_seconds" in r["LOWRANK"] for r in records if "LOWRANK" in r)


def test_lowrank_clock_reads_cpu_time_within_its_block_only():
    """``lowrank_clock("cpu")`` puts the process's CPU time where LOWRANK reads its clock,
    ``time.perf_counter``, for the block only (restored after an error too). ``"wall"``
    changes nothing; another name is refused before anything runs."""
    wall = time.perf_counter
    with lowrank_clock("cpu"):
        assert time.perf_counter is time.process_time
    assert time.perf_counter is wall
    with pytest.raises(RuntimeError), lowrank_clock("cpu"):
        raise RuntimeError("inside")
    assert time.perf_counter is wall
    with lowrank_clock("wall"):
        assert time.perf_counter is wall
    with pytest.raises(ValueError, match="clock"), lowrank_clock("gpu"):
        pass
    with pytest.raises(ValueError, match="clock"):
        run_instance(100, (12, 14), clock="gpu")



@pytest.mark.slow
def test_larger_slice_reports_nothing_untrue():
    total, bad = _run(range(200, 400), (12, 40), time_limit=30.0)
    assert bad == [], bad
    assert all(total.get(k, 0) == 0 for k in UNTRUE), total
    assert total["agree"] >= 50, total


# ----------------------------------------------------------------- truncation mode
#: the untruths of the truncation mode: those of the default mode, and a proof of
#: unboundedness where a reference solves
UNTRUE_CUT = UNTRUE + ("false_unbounded",)


def _run_truncated(seeds, n_range):
    records = [run_truncated(s, n_range) for s in seeds]
    total = summarize(records)
    bad = [(r["instance"], r["cuts"], r["verdicts"]) for r in records
           if any(r["verdict"].get(k) for k in UNTRUE_CUT)]
    return records, total, bad


def test_draw_cuts_is_deterministic_and_in_range():
    for seed in range(50):
        cuts = draw_cuts(seed)
        assert cuts == draw_cuts(seed)
        low = cuts["LOWRANK"]
        assert len(low) in (1, 2)      # the time limit, and at most one other cut
        assert CUTS["time_limit"][0] <= low["time_limit"] <= CUTS["time_limit"][1] \
            or low["time_limit"] == TIME_LIMIT
        for key in ("max_outer", "max_inner"):
            if key in low:
                assert CUTS[key][0] <= low[key] <= CUTS[key][1]
        assert CUTS["SCS:max_iters"][0] <= cuts["SCS"]["max_iters"] <= CUTS["SCS:max_iters"][1]
        lo, hi = CUTS["CLARABEL:max_iter"]
        assert lo <= cuts["CLARABEL"]["max_iter"] <= hi
        assert cuts["DVU.fit"] == low
    # the instance of a seed is the default mode's: the cuts draw from a stream of their own
    assert make_instance(7).description == make_instance(7).description


def test_truncated_fast_slice_reports_nothing_untrue():
    """Five seeds on 12-14 points, each solve cut short (draw_cuts): every counter 0;
    the refusals are typed. Among the cuts: LOWRANK ``max_outer`` 2 (an
    ``optimal_inaccurate`` result, through DVU.fit too), ``time_limit`` 1.2 s, ``max_outer``
    3 and 4 (refused), SCS cut off (``optimal_inaccurate``, checked by CSDP)."""
    records, total, bad = _run_truncated((102, 103, 106, 107, 109), (12, 14))
    assert bad == [], bad
    assert all(total.get(k, 0) == 0 for k in UNTRUE_CUT), total
    cut = [o for r in records for k, o in r.items() if k.startswith("cut:")]
    assert len(cut) >= 12 and all(o["kind"] in ("result", "error") for o in cut), total


@pytest.mark.slow
def test_truncated_larger_slice_reports_nothing_untrue():
    records, total, bad = _run_truncated(range(94000, 94040), (12, 60))
    assert bad == [], bad
    assert all(total.get(k, 0) == 0 for k in UNTRUE_CUT), total


def test_a_barely_strictly_feasible_equality_problem_is_refused_or_right_99085():
    """Equality DVU (explicit centroids, SNR, two row-sums, 41 points) whose distances
    leave a strictly feasible margin of 3e-7 relative (two near-flat 4-cliques): an
    infeasible iterate buys objective below the optimum, and LOWRANK creeps towards it.
    Cut at 4 s it must refuse with a typed error naming the violation, or return a
    feasible point at the recorded optimum; never the cheaper infeasible one."""
    f, _ = make_instance(99085).build()
    try:
        res = solve(f, "LOWRANK", time_limit=4.0)
    except SolverFailedError as exc:
        assert "violates the constraints" in str(exc) or "gap" in str(exc), str(exc)
        return
    assert abs(res.objective - OPTIMUM_99085) <= 1e-4 * abs(OPTIMUM_99085), res.objective
    assert _check_point(f, res.objective)["violation"] <= FEAS


@pytest.mark.parametrize("seed, optimum", [(99085, OPTIMUM_99085), (99192, OPTIMUM_99192)])
def test_a_barely_strictly_feasible_equality_problem_certifies(seed, optimum):
    """99085 and 99192 (equality DVU, strictly feasible by a relative margin of 3e-7 and
    4e-7): the dual barrier on equality rows ends the creep of the augmented Lagrangian with a
    certified pair (docs/tuning.md, "99085 and 99192: the dual barrier for equality rows").
    With time to finish, the result is ``optimal``: a feasible point within 1e-4 of the
    recorded optimum, its bound at most the optimum."""
    f, _ = make_instance(seed).build()
    assert f.problem is not None    # built first: the point is written into its variables
    res = solve(f, "LOWRANK", max_outer=20)
    assert res.status == "optimal", res.status
    assert abs(res.objective - optimum) <= 1e-4 * abs(optimum), res.objective
    assert res.bound <= optimum + 1e-6 * abs(optimum) and res.certified_gap <= 1e-4
    assert _check_point(f, res.objective)["violation"] <= FEAS


def test_a_near_zero_optimum_is_right_to_its_certified_gap_99467():
    """Quadratic DVU (explicit centroids, 44 points, three added rows) whose optimum is
    -2.1e-4 against terms of size 1.86: the references at their default tolerances stop
    up to 2e-6 above it. LOWRANK must return a feasible point (violation at most ``FEAS``)
    within 1e-8 absolute (5e-9 of the objective's scale) of the optimum recorded at
    tight tolerances, its certified bound not above that optimum (to 1e-9)."""
    f, _ = make_instance(99467).build()
    res = solve(f, "LOWRANK", max_outer=40)
    assert abs(res.objective - OPTIMUM_99467) <= 1e-8, res.objective
    assert res.bound is not None and res.bound <= OPTIMUM_99467 + 1e-9, res.bound
    assert _check_point(f, res.objective)["violation"] <= FEAS


# ------------------------------------------------- the tight re-solve (near-zero optima)
def _outcome_99467(solver, status, objective, **extra):
    return {"kind": "result", "solver": solver, "status": status, "objective": objective,
            "bound": None, "gap": None, "solver_gap": None, "violation": 0.0,
            "objective_mismatch": 0.0, "scale": 1.857, **extra}


#: 99467's outcomes (-m problems.differential, 2026-11-30): LOWRANK feasible (violation
#: 0) with a certified bound; CLARABEL and CSDP at their default tolerances 'optimal'
#: 2.0e-6 and 2.8e-7 above LOWRANK's feasible point; CLARABEL at 1e-12 'optimal_inaccurate'
#: 5.5e-10 above it (its solver gap 6e-15)
LOW_99467 = {**_outcome_99467("LOWRANK", "optimal", -2.1099701441e-4,
                              bound=-2.1101301536e-4, gap=7.58e-5),
             "objective_scale": 1.857}
CLARABEL_99467 = _outcome_99467("CLARABEL", "optimal", -2.0896494361e-4, gap=3.28e-9)
CSDP_99467 = _outcome_99467("CSDP", "optimal", -2.1071690520e-4, gap=-1.64e-8)
TIGHT_99467 = _outcome_99467("CLARABEL", "optimal_inaccurate", -2.1099646174e-4,
                             solver_gap=6.0e-15, tight=True)


def test_judge_a_tight_reference_settles_a_near_zero_optimum_99467():
    """Against the default-tolerance references LOWRANK's feasible point, below both, is
    counted ``outside_gap`` and ``disagree``; the judge then asks for a tight re-solve
    (``_needs_tight``), which settles the optimum: LOWRANK agrees, nothing untrue."""
    v = _judge(LOW_99467, CLARABEL_99467, CSDP_99467)
    assert v["outside_gap"] == 1 and v["disagree"] == 1
    assert _needs_tight(LOW_99467, v)
    v = _judge(LOW_99467, CLARABEL_99467, CSDP_99467, tight=TIGHT_99467)
    assert v["agree"] == 1 and v["tight_reference"] == 1
    assert all(v[k] == 0 for k in UNTRUE), v


def test_judge_a_tight_reference_still_counts_a_wrong_lowrank_answer():
    """The tight reference convicts as well as it acquits: LOWRANK's outcome perturbed
    (an objective 1e-6 below the optimum with its bound just under it; a bound above the
    optimum; an 'optimal' objective 1e-6 above it) is counted against it, and a point that
    violates a constraint asks for no re-solve and stays a wrong point."""
    tight = dict(refs=(CLARABEL_99467, CSDP_99467), tight=TIGHT_99467)

    def judge(low):
        return _judge(low, *tight["refs"], tight=tight["tight"])
    below = {**LOW_99467, "objective": -2.1199701e-4, "bound": -2.1200001e-4}
    v = judge(below)
    assert v["outside_gap"] == 1 and v["disagree"] == 1 and v["agree"] == 0
    above_bound = {**LOW_99467, "bound": -2.0e-4, "objective": -1.999e-4}
    v = judge(above_bound)
    assert v["outside_gap"] == 1 and v["disagree"] == 1
    # 'optimal' 2e-6 above the optimum (1e-6 of the scale): its interval holds the
    # optimum, but two 'optimal' results must agree (the settling tight reference counts
    # as 'optimal': its gap is within the default tolerance)
    high = {**LOW_99467, "objective": -2.0899701e-4}
    v = judge(high)
    assert v["outside_gap"] == 0 and v["disagree"] == 1 and v["agree"] == 0
    wrong = {**LOW_99467, "violation": 10 * FEAS}
    v = _judge(wrong, CLARABEL_99467, CSDP_99467)
    assert v["wrong_point"] == 1 and not _needs_tight(wrong, v)


def test_a_tight_reference_settles_only_a_converged_feasible_point():
    """A tight re-solve settles the optimum only as a feasible result stating a gap of at
    most TIGHT_GAP; else the default-tolerance references decide as before."""
    assert _settles(TIGHT_99467)
    loose = {**TIGHT_99467, "solver_gap": 1e-6}
    assert not _settles(loose) and not _settles({**TIGHT_99467, "violation": 10 * FEAS})
    assert not _settles({"kind": "error", "error": "SolverFailedError"}) and not _settles(None)
    v = _judge(LOW_99467, CLARABEL_99467, CSDP_99467, tight=loose)
    assert v["tight_reference"] == 0 and v["outside_gap"] == 1


@pytest.mark.slow
def test_run_instance_99467_settled_by_a_tight_reference():
    """The whole instance: LOWRANK's feasible point disagrees with the default-tolerance
    references, CLARABEL at 1e-12 settles the optimum, and the record says so."""
    rec = run_instance(99467, time_limit=3600.0, max_outer=40)
    assert rec["settled_by"] == "CLARABEL:tight", rec.get("tight")
    assert rec["verdict"]["agree"] == 1 and rec["verdict"]["tight_reference"] == 1
    assert all(rec["verdict"][k] == 0 for k in UNTRUE), rec["verdict"]


# ------------------------------------- a reference below a proven bound (100165)
def _outcome_100165(solver, objective, **extra):
    return {"kind": "result", "solver": solver, "status": "optimal_inaccurate",
            "objective": objective, "bound": None, "gap": None, "solver_gap": None,
            "violation": 0.0, "objective_mismatch": 0.0, "scale": 3.17, **extra}


#: 100165's outcomes (interval DVU, 51 points, SNR; docs/tuning.md, "100165 in exact
#: arithmetic; mild infeasibility; a fresh slice"): LOWRANK at max_outer 200, its bound
#: proved in exact arithmetic; CLARABEL below that bound (its point violates interval rows
#: whose targets are 4e-3 by 5e-6 absolute, 8e-8 of the trace, and has eigenvalues down
#: to -7.5e-7), -0.53696 once repaired to feasibility; CSDP inside LOWRANK's interval
LOW_100165 = _outcome_100165("LOWRANK", -0.556485668506398, bound=-0.5592280365507852,
                             objective_scale=3.1506)
CLARABEL_100165 = _outcome_100165("CLARABEL", -0.559310328368539, violation=8.16e-8,
                                  solver_gap=2.53e-6, repaired_objective=-0.5369578944)
CSDP_100165 = _outcome_100165("CSDP", -0.5590145212116046, violation=1.31e-9,
                              solver_gap=-1.79e-5, repaired_objective=-0.5588655819)


def test_judge_a_reference_below_a_proven_bound_contradicts_nothing_100165():
    """CLARABEL's objective lies 8.2e-5 below LOWRANK's certified bound, its point repaired
    to feasibility 0.022 above it: the judge sets it aside and judges LOWRANK against CSDP
    (inside LOWRANK's interval): agreement within the stated gap, nothing untrue. Without
    the repaired objectives (main's records) it counted ``outside_gap`` and ``disagree``."""
    bare = [{k: v for k, v in o.items() if k != "repaired_objective"}
            for o in (CLARABEL_100165, CSDP_100165)]
    v = _judge(LOW_100165, *bare)
    assert v["outside_gap"] == 1 and v["disagree"] == 1 and v["reference_repaired"] == 0
    v = _judge(LOW_100165, CLARABEL_100165, CSDP_100165)
    assert v["reference_repaired"] == 1 and v["agree_within_gap"] == 1
    assert all(v[k] == 0 for k in UNTRUE), v
    # CLARABEL alone: nothing is known to AGREE, nothing untrue
    v = _judge(LOW_100165, CLARABEL_100165, None)
    assert v["reference_repaired"] == 1 and v["disagree_inaccurate"] == 1
    assert all(v[k] == 0 for k in UNTRUE), v


def test_judge_a_feasible_point_below_the_bound_still_convicts_it():
    """Where the reference's point repaired to feasibility still lies below LOWRANK's
    bound, that bound is false: counted ``outside_gap``, the reference not set aside; nor
    is a reference whose objective lies above the bound."""
    clar = {**CLARABEL_100165, "repaired_objective": -0.5593}
    v = _judge(LOW_100165, clar, {**CSDP_100165, "repaired_objective": -0.5593})
    assert v["reference_repaired"] == 0 and v["outside_gap"] == 1 and v["disagree"] == 1
    v = _judge(LOW_100165, CSDP_100165, None)
    assert v["reference_repaired"] == 0 and v["agree_within_gap"] == 1


@pytest.mark.slow
def test_lowrank_bound_on_100165_holds_in_exact_arithmetic():
    """LOWRANK's certified bound on 100165 (max_outer 200: -0.5592280 where recorded,
    -0.5592278 and -0.5592254 on later paths) is a proof: its dual point (a "shifted"
    certificate's multipliers moved by alpha towards the box's corner y0 = w, alpha a
    little above the certificate's; a "dual-feasible" one's multipliers themselves) has,
    in rational arithmetic, |y_e| <= w_e, nu >= 0 and a slack matrix positive definite on
    1-perp, and a dual value within 1e-6 of the reported bound, above CLARABEL's
    objective: CLARABEL's point is infeasible. Its point and CSDP's, repaired to
    feasibility, lie above the bound (weak duality)."""
    import re
    from fractions import Fraction

    from problems.differential_repair import repaired_objective
    from sdpembed.lowrank.backend import _formulation_problem
    from sdpembed.lowrank.face import _exact_slack, _exactly_positive_definite
    from sdpembed.lowrank.options import LowRankOptions
    from sdpembed.lowrank.penalty import DistancePenalty
    from sdpembed.lowrank.solve import lowrank_solve
    from sdpembed.lowrank.space import FactorSpace

    f, _ = make_instance(100165).build()
    gp, basis, _ = _formulation_problem(f)
    res = lowrank_solve(gp, basis=basis, options=LowRankOptions(max_outer=200, time_limit=600))
    cert = res.certificate
    # the recorded bound is the judge tests' fixture; the path reaching it moves with the
    # inner solver's rounding and the machine (-0.5592278, 2.4e-7 above it, shifted;
    # -0.5592254, 2.7e-6 above it, dual-feasible), and what is proven below is the bound
    # this path reaches
    assert cert.method in ("shifted", "dual-feasible"), cert.method
    assert abs(res.bound - LOW_100165["bound"]) <= 1e-5
    space, pen = FactorSpace(gp), DistancePenalty(gp)
    y, nu = np.asarray(cert.y), space.duals(cert.nu)
    lam = Fraction(float(gp.slack_weight))
    if cert.method == "shifted":
        theta, s = (float(v) for v in re.search(r"theta=(\S+) towards y \+ (\S+) \(y0",
                                                cert.note).groups())
        alpha = 1.01 * theta * s      # the note's theta has three digits
    else:                             # the multipliers themselves: no shift
        alpha = 0.0
    for _ in range(4):
        ya = y + alpha * (pen.coercive_point() - y)
        nua = (1.0 - alpha) * nu
        w = [Fraction(float(a)) for a in ya]
        assert all(abs(a) <= lam / Fraction(float(t)) for a, t in zip(w, gp.target))
        assert all(v >= 0 for v in nua[:space.n_snr])
        if _exactly_positive_definite(_exact_slack(gp, space, w, nua), Fraction(0)):
            break
        alpha *= 2
    else:
        raise AssertionError("no shifted point near the certificate's is exactly PSD")
    proven = float(-sum((a * Fraction(float(t)) for a, t in zip(w, gp.target)), Fraction(0)))
    assert abs(proven - res.bound) <= 1e-6 and proven > CLARABEL_100165["objective"] + 5e-5
    _ = f.problem
    for name in ("CLARABEL", "CSDP"):
        try:
            solve(f, name)
        except SdpEmbedError:    # a reference that fails proves nothing here
            continue
        assert repaired_objective(gp, f.value("gram")) >= proven


# ------------------------------ no reference optimum: the one-sided judge (109046)
#: 109046's outcomes (interval DVU, 28 points, 3 classes; docs/tuning.md, "A fresh slice
#: 110,000-110,199; a one-sided judge for 109,046"): LOWRANK 'optimal' with its certified
#: bound; CLARABEL and CSDP refused (SolverFailedError: their points' violations priced
#: above the rule), their refused points repaired to feasibility above that bound
LOW_109046 = {**_result(-1.059801057353453, status="optimal", bound=-1.0598099296396257),
              "objective_scale": 3.5513}
CLARABEL_109046 = {"kind": "error", "error": "SolverFailedError", "solver": "CLARABEL",
                   "repaired_objective": -0.8275165914443154}
CSDP_109046 = {"kind": "error", "error": "SolverFailedError", "solver": "CSDP",
               "repaired_objective": -1.0595911572043921}


def test_judge_one_sided_where_every_reference_refused_109046():
    """No reference gives an optimum, so the judge counted nothing (an unjudged result).
    A refused reference's point repaired to feasibility is feasible: its objective bounds
    the optimum from above, and a LOWRANK bound above it, or an 'optimal' objective above
    it, is untrue. 109046's bound lies below both repaired points: judged one side,
    nothing untrue, and not counted as agreement."""
    v = _judge(LOW_109046, CLARABEL_109046, CSDP_109046)
    assert v["one_sided"] == 1 and v["unjudged"] == 0
    assert all(v[k] == 0 for k in UNTRUE) and v["agree"] == v["agree_within_gap"] == 0
    # a bound above a feasible point's objective is false
    v = _judge({**LOW_109046, "bound": -1.0594}, CLARABEL_109046, CSDP_109046)
    assert v["one_sided"] == 1 and v["outside_gap"] == v["disagree"] == 1 and v["far"] == 0
    # an 'optimal' objective 1e-3 above a feasible point's is not optimal to AGREE ...
    v = _judge({**LOW_109046, "objective": -1.0585, "bound": -1.0598}, CLARABEL_109046,
               CSDP_109046)
    assert v["disagree"] == 1 and v["outside_gap"] == v["far"] == 0
    # ... nor one 5 % above it to FAR; an inaccurate one whose stated gap reaches the
    # feasible point's objective is held to nothing more
    v = _judge({**LOW_109046, "objective": -1.0, "bound": -1.0596}, CLARABEL_109046,
               CSDP_109046)
    assert v["far"] == 1 and v["disagree"] == 1
    v = _judge({**LOW_109046, "status": "optimal_inaccurate", "objective": -1.0585,
                "bound": -1.0597}, CLARABEL_109046, CSDP_109046)
    assert v["one_sided"] == 1 and all(v[k] == 0 for k in UNTRUE)
    # no point repaired (equality rows, or no point): unjudged, as before
    bare = [{k: x for k, x in o.items() if k != "repaired_objective"}
            for o in (CLARABEL_109046, CSDP_109046)]
    v = _judge(LOW_109046, *bare)
    assert v["one_sided"] == 0 and v["unjudged"] == 1 and all(v[k] == 0 for k in UNTRUE)
    # a reference that proves infeasibility is judged as before (far), not one-sided
    v = _judge(LOW_109046, CLARABEL_109046, {"kind": "error", "error": "InfeasibleError",
                                             "solver": "CSDP"})
    assert v["one_sided"] == 0 and v["far"] == 1


@pytest.mark.slow
def test_run_instance_109046_judged_one_sided():
    """The whole instance: every reference refuses, each refused point is repaired onto
    the rows (the record states its objective), none lies below LOWRANK's certified
    bound, and the record is judged one side with nothing untrue."""
    rec = run_instance(109046)
    low = rec["LOWRANK"]
    assert low["kind"] == "result" and low["bound"] is not None
    fixed = [rec[n]["repaired_objective"] for n in ("CLARABEL", "CSDP", "SDPA")
             if n in rec and rec[n]["kind"] == "error"
             and rec[n].get("repaired_objective") is not None]
    assert fixed and all(u >= low["bound"] - 1e-4 * abs(u) for u in fixed), rec
    assert rec["verdict"]["one_sided"] == 1 and rec["verdict"]["unjudged"] == 0
    assert all(rec["verdict"][k] == 0 for k in UNTRUE), rec["verdict"]

"""The differential judge's choice of reference (problems.differential_reference).

Truncated seed 106844 (interval DVU, 29 points): LOWRANK cut at ``time_limit`` 0.76 s
returned ``optimal`` 0.1442623 at a point feasible to 2.6e-16 with a certified bound
0.1442609; CLARABEL (``optimal_inaccurate``) 0.1442987, CSDP (``optimal_inaccurate``)
0.1442610. The judge took CLARABEL's, 2.5e-4 above a feasible point's objective, for a gap
a hair smaller, and counted LOWRANK ``disagree`` and ``outside_gap``. The outcomes below
are the ones recorded by that run (the cut is a wall-clock limit, so a re-run need not
reproduce them).
"""

from __future__ import annotations

import copy

from problems.differential import FEAS, _judge, _optimum, _settled_by
from problems.differential_reference import contradicted

_LOW = {"solver": "LOWRANK", "kind": "result", "status": "optimal",
        "objective": 0.1442622858539981, "violation": 2.552279446866198e-16,
        "gap": 9.387843987668703e-06, "bound": 0.1442609315421652,
        "stated_gap": 9.387843987668703e-06, "objective_scale": 1.1728527824603794,
        "scale": 1.172852782460187, "objective_mismatch": 0.0, "worth": 5.8e-13}
_CLARABEL = {"solver": "CLARABEL", "kind": "result", "status": "optimal_inaccurate",
             "objective": 0.14429867634872293, "violation": 5.744089159693814e-10,
             "gap": None, "solver_gap": 1.474571975690342e-06, "bound": None,
             "scale": 1.1728098831438873, "objective_mismatch": 0.0, "worth": 2.26e-06}
_CSDP = {"solver": "CSDP", "kind": "result", "status": "optimal_inaccurate",
         "objective": 0.14426103076040991, "violation": 4.9561934793260105e-12,
         "gap": None, "solver_gap": -1.53e-06, "bound": None,
         "scale": 1.1728541044119427, "objective_mismatch": 0.0, "worth": 1.6e-08}


def _outcomes():
    return copy.deepcopy(_LOW), copy.deepcopy(_CLARABEL), copy.deepcopy(_CSDP)


def test_106844_the_reference_a_feasible_objective_contradicts_is_not_the_optimum():
    low, ref, second = _outcomes()
    # without a witness the judge prefers CLARABEL's (gap 1.47e-6 against 1.53e-6)
    assert _optimum(ref, second) is ref
    # LOWRANK's feasible objective lies 2.5e-4 below CLARABEL's: CSDP's is the optimum
    assert _optimum(ref, second, witnesses=(low,)) is second
    assert _settled_by(ref, second, None, (low,)) == "CSDP"
    v = _judge(low, ref, second)
    assert v["agree"] == 1 and v["disagree"] == 0 and v["outside_gap"] == 0
    assert v["wrong_point"] == v["far"] == v["bound_above_objective"] == 0
    # as the truncated mode judges a later subject (its references not counted again)
    v = _judge(ref, ref, second, references=False, witnesses=(low, ref))
    assert v["far"] == 0


def test_what_the_witness_rule_leaves_alone():
    low, ref, second = _outcomes()
    # an 'optimal' reference stays first, contradicted or not (status decides first)
    ref["status"] = "optimal"
    assert _optimum(ref, second, witnesses=(low,)) is ref
    ref["status"] = "optimal_inaccurate"
    # a witness that is no result, or not feasible to FEAS, contradicts nothing
    assert not contradicted(ref, [{"kind": "error"}], feas=FEAS, agree=1e-4, unit=0.0)
    infeasible = dict(low, violation=10 * FEAS)
    assert _optimum(ref, second, witnesses=(infeasible,)) is ref
    # a witness within AGREE of the reference contradicts nothing
    near = dict(low, objective=ref["objective"] * (1 - 0.5e-4))
    assert _optimum(ref, second, witnesses=(near,)) is ref
    # where both references are contradicted, the order by gap is kept
    below = dict(low, objective=0.14)
    assert _optimum(ref, second, witnesses=(below,)) is ref
    # a reference never witnesses against itself
    assert not contradicted(ref, [ref], feas=FEAS, agree=1e-4, unit=0.0)

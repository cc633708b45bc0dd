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
"""

from __future__ import annotations

import pytest

from problems.differential import run_instance, summarize

UNTRUE = ("wrong_point", "bound_above_objective", "untyped", "far", "disagree",
          "false_infeasible")


def _run(seeds, n_range, **limits):
    records = [run_instance(s, n_range, **limits) for s in seeds]
    total = summarize(records)
    bad = [(r["instance"], r["verdict"]) for r in records
           if any(r["verdict"].get(k) for k in UNTRUE)]
    return total, bad


def test_fast_slice_reports_nothing_untrue():
    total, bad = _run(range(100, 120), (12, 14), time_limit=3.0, max_outer=30)
    assert bad == [], bad
    assert all(total.get(k, 0) == 0 for k in UNTRUE), total
    assert total["agree"] >= 5, total      # the comparison is not vacuous


@pytest.mark.slow
def test_larger_slice_reports_nothing_untrue():
    total, bad = _run(range(200, 400), (12, 40), time_limit=30.0)
    assert bad == [], bad
    assert all(total.get(k, 0) == 0 for k in UNTRUE), total
    assert total["agree"] >= 50, total

"""DVU with ``slack_weight`` at its boundedness threshold (issue 40, item 6).

At :func:`~sdpembed.formulations.dvu.min_bounded_slack_weight` the objective is flat along
a stretch of the embedding: the optimal set is unbounded and no backend certifies a point
(LOWRANK's dual barrier used to search for an interior until its time limit; CLARABEL and
CSDP fail). LOWRANK now refuses it before any iteration, naming the threshold; just below it
the problem is unbounded, just above it LOWRANK certifies the optimum the conic backends
find where they answer.
"""
from __future__ import annotations

import re
import shutil

import cvxpy as cp
import pytest

from problems import issue_claims
from sdpembed import solve
from sdpembed.exceptions import UnboundedError, UnsupportedProblemError
from sdpembed.formulations.dvu import min_bounded_slack_weight


def _threshold(**kw) -> float:
    return min_bounded_slack_weight(issue_claims.blobs30(**kw).points_problem)


@pytest.mark.parametrize("kw", [{}, {"n": 60}, {"distances": "quadratic"}],
                         ids=["blobs30", "blobs60", "blobs30-quadratic"])
@pytest.mark.parametrize("factor", [1.0, 1.0 + 1e-10, 1.0 - 1e-10])
def test_at_the_threshold_refused_naming_it(kw, factor):
    n = kw.pop("n", 30)
    lam = _threshold(n=n, **kw)
    f = issue_claims.blobs30(n, slack_weight=lam * factor, **kw)
    # a time limit only so that a regression ends; the refusal comes before any iteration
    with pytest.raises(UnsupportedProblemError, match="min_bounded_slack_weight") as err:
        solve(f, "LOWRANK", time_limit=60.0)
    named = float(re.search(r"min_bounded_slack_weight = ([0-9.e+-]+)", str(err.value))[1])
    assert abs(named - lam) <= 1e-8 * lam   # the dense generalized eigenvalue's
    assert "Raise slack_weight" in str(err.value)


@pytest.mark.parametrize("factor", [1.0 - 1e-8, 1.0 - 1e-6, 1.0 - 1e-3])
def test_just_below_the_threshold_unbounded(factor):
    lam = _threshold()
    f = issue_claims.blobs30(slack_weight=lam * factor)
    with pytest.raises(UnboundedError, match="bounded for slack_weight >= "):
        solve(f, "LOWRANK", time_limit=60.0)
    if shutil.which("csdp") and factor == 1.0 - 1e-3:
        with pytest.raises(UnboundedError):
            solve(issue_claims.blobs30(slack_weight=lam * factor), "CSDP")


# the 60-point cases run with the slow tests: their 30-point twins make the same check (both
# sizes were refused before the fix) at a fraction of the cost
@pytest.mark.parametrize("kw", [
    {}, pytest.param({"n": 60}, marks=pytest.mark.slow), {"distances": "quadratic"},
    pytest.param({"n": 60, "distances": "quadratic"}, marks=pytest.mark.slow)],
    ids=["blobs30", "blobs60", "blobs30-quadratic", "blobs60-quadratic"])
def test_just_above_the_threshold_certified_at_the_conic_optimum(kw):
    """Quadratic DVU there was refused uncertified at max_outer, its point optimal from the
    first outer iteration: its coercive point (0.9 slack_weight) left S indefinite, so no
    shifted certificate existed (docs/tuning.md, "Quadratic DVU just above its threshold")."""
    kw = dict(kw)
    n = kw.pop("n", 30)
    lam = _threshold(n=n, **kw)
    f = issue_claims.blobs30(n, slack_weight=lam * (1 + 1e-2), **kw)
    rep = solve(f, "LOWRANK", time_limit=120.0)
    assert rep.status == "optimal" and rep.certified_gap <= 1e-4
    ref = solve(issue_claims.blobs30(n, slack_weight=lam * (1 + 1e-2), **kw),
                "CLARABEL").objective
    assert rep.bound <= ref + 1e-6 * abs(ref)
    assert abs(rep.objective - ref) <= 1e-4 * abs(ref)
    # closer still: certified, and below the optimum at the larger weight (the objective
    # grows with slack_weight)
    for factor in (1 + 1e-3, 1 + 1e-6):
        near = solve(issue_claims.blobs30(n, slack_weight=lam * factor, **kw), "LOWRANK",
                     time_limit=120.0)
        assert near.status == "optimal" and near.certified_gap <= 1e-4
        assert near.objective < rep.objective


def test_a_bounding_row_at_the_threshold_is_solved():
    """Added rows may bound the problem: no refusal then (trace(G) <= 10 at the threshold)."""
    lam = _threshold()
    f = issue_claims.blobs30(slack_weight=lam)
    h = f.with_constraints([cp.trace(f.expressions["gram"]) <= 10])
    ref = solve(h, "CLARABEL").objective
    rep = solve(h, "LOWRANK", time_limit=120.0)
    assert rep.status == "optimal" and abs(rep.objective - ref) <= 1e-4 * max(abs(ref), 1.0)

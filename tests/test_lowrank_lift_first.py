"""LOWRANK above ``limits.eig``: a failed certificate attempt lifts its multipliers before it
grows the rank wherever its gap is within ``_LIFT_GAP_SPARSE`` times ``tol`` (docs/tuning.md,
"The rank-growth decision at n = 2,500 (2026-11-29, fourteenth round)")."""

import pytest

from sdpembed.lowrank.options import DenseLimits
from sdpembed.lowrank.outer import _LIFT_GAP, _LIFT_GAP_SPARSE
from sdpembed.solvers import solve
from tests.test_lowrank_escape import _CLARABEL, _digits_dense


def _first_growth(rep) -> dict:
    return next(e for e in rep.extra["history"] if e.get("grew_rank"))


@pytest.mark.parametrize("tol, above, agree", [
    # 60 digits from rank 8 (the optimum's is higher), tol 1e-3: the attempt at rank 8 has
    # a gap of 0.16, between the two lines; no lift closes it (the certified 1e-3 plus
    # CLARABEL's own tolerance)
    (1e-3, _LIFT_GAP, 1.01e-3),
    # the same attempt at tol 4e-4: its gap, 0.16, is about 400 tol, above the old line
    # (300 tol: grown at once) and within _LIFT_GAP_SPARSE; the lift is tried first (the
    # links row at seed 3, docs/tuning.md "The links row at seeds 0 and 3")
    (4e-4, 300.0, 1e-3),
])
def test_a_rank_too_small_is_lifted_then_grown_and_certifies(tol, above, agree):
    f = _digits_dense()
    rep = solve(f, solver="LOWRANK", tol=tol, rank=8, dense_limits=DenseLimits(eig=20))
    assert rep.status == "optimal" and rep.certified_gap <= tol, rep.certified_gap
    assert abs(rep.objective - _CLARABEL) <= agree * abs(_CLARABEL)
    first = _first_growth(rep)
    assert first["rank"] == 8 and first["grew_rank"] > 8
    assert above * tol < first["estimated_gap"] <= _LIFT_GAP_SPARSE * tol
    assert first["lifted_gap"] > tol         # the lift tried, short of tol: then the growth

"""Issue 40's and 41's claims on the instances of ``problems/issue_claims.py`` that no other
test re-runs: the infeasible entry row ``G[0, 30] == 0`` (issue 40, item 2), the battery's
plain 30-point, 2-class DVU (issue 41) and its reproducer of item 1 without the
antisymmetric row, each against CLARABEL (and CSDP where it is installed)."""

import shutil

import cvxpy as cp
import numpy as np
import pytest

from problems import issue_claims
from sdpembed import solve
from sdpembed.exceptions import InfeasibleError, InputError


def test_an_entry_row_that_equality_distances_forbid_is_proved_infeasible():
    """Equality DVU on 40 blobs with ``G[0, 30] == 0``: LOWRANK returned an
    ``optimal_inaccurate`` point below its own certified bound; the conic backends prove
    infeasibility, and so does LOWRANK's Farkas certificate now."""
    f = issue_claims.blobs30(40, distances="equality")
    h = f.with_constraints([f.expressions["gram"][0, 30] == 0])
    with pytest.raises(InfeasibleError):
        solve(h, "CLARABEL")
    if shutil.which("csdp"):
        with pytest.raises(InfeasibleError):
            solve(h, "CSDP")
    with pytest.raises(InfeasibleError, match="Farkas certificate"):
        solve(h, "LOWRANK")
    # the same instance without the row is feasible: solved, and equal to CLARABEL's
    ok = issue_claims.blobs30(40, distances="equality")
    ref = solve(ok, "CLARABEL").objective
    rep = solve(issue_claims.blobs30(40, distances="equality"), "LOWRANK")
    assert rep.status == "optimal" and abs(rep.objective - ref) <= 2e-4 * abs(ref)


def test_the_plain_30_point_dvu_certifies_at_clarabels_optimum():
    """Issue 41: "a plain 30-point, 2-class DVU stops at max_outer = 200 with gap 5.7e-3"."""
    rep = solve(issue_claims.blobs30(), "LOWRANK")
    assert rep.status == "optimal" and rep.certified_gap <= 1e-4
    ref = solve(issue_claims.blobs30(), "CLARABEL").objective
    # the certified 1e-4 and CLARABEL's own accuracy (about 1e-6 relative)
    assert rep.bound <= ref + 1e-6 * abs(ref)
    assert abs(rep.objective - ref) <= 1e-4 * abs(ref) + 1e-6 * abs(ref)


def test_item_1_on_the_battery_blobs():
    """Item 1's reproducer on the battery's blobs: the antisymmetric row is refused before
    any work; without it, LOWRANK honours trace(G) <= 10 at CLARABEL's optimum."""
    f = issue_claims.blobs30()
    G = f.expressions["gram"]
    with pytest.raises(InputError, match="zero on symmetric matrices"):
        f.with_constraints([cp.trace(G) <= 10, G[0, 1] - G[1, 0] == 0])
    h = f.with_constraints([cp.trace(G) <= 10])
    ref = solve(h, "CLARABEL").objective
    rep = solve(h, "LOWRANK")
    assert np.trace(h.value("gram")) <= 10 * (1 + 1e-6)
    assert rep.status == "optimal" and abs(rep.objective - ref) <= 2e-4 * abs(ref)
    assert rep.bound <= rep.objective


def test_outcome_names_typed_and_untyped_errors():
    def untyped():
        raise ValueError("a bug")

    def typed():
        raise InputError("bad input")

    assert issue_claims.outcome(untyped).startswith("UNTYPED ValueError: a bug")
    assert issue_claims.outcome(typed).startswith("typed InputError: bad input")

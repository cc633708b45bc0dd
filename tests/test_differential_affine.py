"""The affine judge of the differential test (problems/differential_affine.py): the
optimum of an instance with equality rows bracketed by an exactly feasible point and a
dual bound, independent of LOWRANK; and how the judge uses it.

Checked against CLARABEL's optimum on instances it solves, the feasible point's rows and
eigenvalues evaluated directly on the points problem; and on seed 109252 (equality
distances, 17 points, no strictly feasible point: no reference solves it), the lower
side recorded there (docs/tuning.md, "Differential verdicts on CPU time; a judge for
equality rows")."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from problems import differential_affine as affine
from problems.differential import (
    AGREE,
    _bracket_outcome,
    _judge,
    make_instance,
    run_instance,
)
from sdpembed import solve

UNTRUE = ("wrong_point", "bound_above_objective", "untyped", "far", "disagree",
          "false_infeasible", "outside_gap")

#: 109252's lower side: the reduced problem's dual bound (CLARABEL's multipliers, S PSD
#: with smallest eigenvalue 7.2e-9: no trace bound needed), 2026-12-01
LOWER_109252 = -2.072524481496848


@pytest.mark.parametrize("seed", [110331, 110345, 110343])
def test_bracket_holds_clarabels_optimum_and_its_point_is_feasible(seed):
    """Equality MVU (14 points; 17 points with a trace row) and equality DVU (14 points):
    CLARABEL's point, projected onto the rows and mixed with the strictly feasible centre,
    is feasible (distances to their targets and the centring to 1e-12 relative, every
    eigenvalue >= 0), its objective ``U`` at least the dual bound ``L``, the bracket
    within 1e-5, and CLARABEL's 'optimal' objective inside it to 1e-6."""
    f, _ = make_instance(seed).build()
    assert f.problem is not None
    rep = solve(f, "CLARABEL")
    assert rep.status == "optimal"
    gp = f.current_problem()
    red = affine.reduced(gp)
    sol = affine.solve_reduced(red)
    lo = affine.lower(red, sol["nu"], sol["mu"], sol.get("y"))
    cen = affine.centre(red, 2 * float(np.trace(f.value("gram"))) + 1)
    assert cen is not None and cen["delta"] > 0
    up = affine.upper(red, np.array(f.value("gram")), cen)
    assert up["exact"] and up["objective"] is not None
    G = up["G"]
    assert np.max(np.abs(gp.distances_of(G) - gp.target) / gp.target) <= 1e-12
    assert np.max(np.abs(G.sum(axis=1))) <= 1e-12 * np.trace(G)
    assert np.linalg.eigvalsh(G)[1] >= 0    # the first is the centring's zero
    if red.M_in.shape[0]:
        assert np.all(red.M_in @ red.svec(red.of_gram(G)) <= red.b_in)
    L, U = lo["bound"], up["objective"]
    scale = max(abs(L), abs(U))
    assert L <= U and U - L <= 1e-5 * scale, (L, U)
    assert L - 1e-6 * scale <= rep.objective <= U + 1e-6 * scale, (L, rep.objective, U)


def test_109252_has_a_lower_side_and_no_strictly_feasible_point():
    """109252 (the instance no reference solves): the reduced problem's dual bound is
    LOWER_109252, from an S that is PSD (no trace bound used); no point has every
    eigenvalue positive (the most interior one's smallest is ~1e-10), so no exactly
    feasible point is built and no upper side is used; the approximately feasible ones
    are recorded as not exact."""
    f, _ = make_instance(109252).build()
    red = affine.reduced(f.current_problem())
    assert red.M_eq.shape[0] == 54 and red.linear and np.isfinite(red.trace_bound)
    sol = affine.solve_reduced(red)
    lo = affine.lower(red, sol["nu"], sol["mu"])
    assert lo["min_eig"] >= 0
    assert abs(lo["bound"] - LOWER_109252) <= 1e-7 * abs(LOWER_109252), lo
    assert affine.centre(red, 100.0) is None
    up = affine.upper(red, sol["G"], None)
    assert up.get("exact") is False and "G" not in up
    out = _bracket_outcome(f, {"reduced": sol["G"]})
    assert out["kind"] == "sides" and out["upper"] is None
    assert abs(out["lower"] - LOWER_109252) <= 1e-7 * abs(LOWER_109252)


def _low(objective, status="optimal_inaccurate", bound=None):
    return {"kind": "result", "status": status, "objective": objective, "bound": bound,
            "violation": 0.0, "objective_mismatch": 0.0, "solver": "LOWRANK"}


#: 109252's LOWRANK result (optimal_inaccurate, its certified bound 2.5e-3 below) and
#: the references' refusals (their points not repairable: equality rows)
LOW_109252 = _low(-2.0722042975239807, bound=-2.0773990316815465)
REFUSED = ({"kind": "error", "error": "SolverFailedError", "solver": "CLARABEL"},
           {"kind": "error", "error": "SolverFailedError", "solver": "CSDP"})
SIDES_109252 = {"solver": "bracket", "kind": "sides", "lower": LOWER_109252,
                "upper": None, "upper_exact": None}


def test_judge_by_the_lower_side_109252():
    """Without the bracket LOWRANK's result is unjudged; with the lower side it is judged
    one side, nothing untrue (its objective lies 1.5e-4 above the bound). An objective
    more than AGREE below the proven bound is one its violations bought: 'disagree' for an
    'optimal' result and for one whose stated gap does not reach the bound, 'far' beyond
    FAR; an inaccurate one whose gap reaches it is held to nothing more."""
    v = _judge(LOW_109252, *REFUSED)
    assert v["unjudged"] == 1
    v = _judge(LOW_109252, *REFUSED, bracket=SIDES_109252)
    assert v["one_sided"] == 1 and v["unjudged"] == 0 and v["bracketed"] == 0
    assert all(v[k] == 0 for k in UNTRUE) and v["agree"] == 0
    below = LOWER_109252 - 1e-3
    v = _judge(_low(below, status="optimal", bound=below - 1e-6), *REFUSED,
               bracket=SIDES_109252)
    assert v["disagree"] == 1 and v["far"] == 0
    v = _judge(_low(below, bound=below - 1e-2), *REFUSED, bracket=SIDES_109252)
    assert all(v[k] == 0 for k in UNTRUE)
    v = _judge(_low(below, bound=below - 1e-4), *REFUSED, bracket=SIDES_109252)
    assert v["disagree"] == 1
    v = _judge(_low(LOWER_109252 - 0.1, bound=-3.0), *REFUSED, bracket=SIDES_109252)
    assert v["far"] == 1


def test_judge_a_closed_bracket_is_the_optimum():
    """A bracket closed to BRACKET is the optimum where no reference gives one: LOWRANK
    within AGREE of it agrees ('bracketed'); an 'optimal' objective 1e-3 above it, or a
    bound above it, is untrue; an exact upper side alone bounds from above as a repaired
    point does. Where a reference gives an optimum, the bracket is not used."""
    U = -1.2
    closed = {"solver": "bracket", "kind": "result", "status": "optimal", "objective": U,
              "lower": U - 1e-7, "upper": U, "upper_exact": True, "violation": 0.0,
              "objective_mismatch": 0.0, "bound": None}
    v = _judge(_low(U + 1e-6, status="optimal", bound=U - 1e-6), *REFUSED, bracket=closed)
    assert v["agree"] == 1 and v["bracketed"] == 1 and all(v[k] == 0 for k in UNTRUE)
    v = _judge(_low(U * (1 - 1e-3), status="optimal", bound=U - 1e-6), *REFUSED,
               bracket=closed)
    assert v["disagree"] == 1
    v = _judge(_low(U * (1 - 2e-3), bound=U * (1 - 1e-3)), *REFUSED, bracket=closed)
    assert v["outside_gap"] == 1
    upper_only = {"solver": "bracket", "kind": "sides", "lower": None, "upper": U,
                  "upper_exact": True}
    v = _judge(_low(U * (1 - 1e-3), status="optimal", bound=U - 1e-3), *REFUSED,
               bracket=upper_only)
    assert v["one_sided"] == 1 and v["disagree"] == 1
    ref = {"kind": "result", "status": "optimal", "objective": U + 1e-6, "bound": None,
           "violation": 0.0, "objective_mismatch": 0.0, "solver": "CLARABEL"}
    v = _judge(_low(U + 1e-6, status="optimal", bound=U - 1e-6), ref, None, bracket=closed)
    assert v["bracketed"] == 0 and v["agree"] == 1
    assert AGREE > 1e-5    # the bracket (BRACKET 1e-5) decides to AGREE


@pytest.mark.slow
def test_run_instance_109252_judged_by_its_lower_side():
    """The whole instance: every reference refuses, the affine judge is asked, its lower
    side is recorded, and the record is judged one side with nothing untrue."""
    rec = run_instance(109252)
    assert rec["LOWRANK"]["kind"] == "result"
    assert rec["bracket"]["lower"] == pytest.approx(LOWER_109252, rel=1e-7)
    assert rec["verdict"]["one_sided"] == 1 and rec["verdict"]["unjudged"] == 0
    assert all(rec["verdict"][k] == 0 for k in UNTRUE), rec["verdict"]


def test_lower_at_bounds_the_optimum_of_the_moved_rows():
    """``lower_at`` of a point whose rows are off (CLARABEL's point on 110343, equality
    MVU with a trace row, plus a small PSD term: its distance rows moved) is at most the
    optimum of the problem with the rows moved to the point's values, solved by CLARABEL;
    at CLARABEL's own point it is the dual bound ``L`` to rounding."""
    f, _ = make_instance(110343).build()
    assert solve(f, "CLARABEL").status == "optimal"
    G = np.array(f.value("gram"))
    red = affine.reduced(f.current_problem())
    sol = affine.solve_reduced(red)
    lo = affine.lower(red, sol["nu"], sol["mu"])
    assert lo["min_eig"] >= 0
    at = affine.lower_at(red, G, sol["nu"], sol["mu"])
    assert at == pytest.approx(lo["bound"], rel=1e-6)
    V = np.random.default_rng(0).standard_normal((G.shape[0], 2))
    V -= V.mean(axis=0)
    moved = G + 1e-3 * np.trace(G) / G.shape[0] * (V @ V.T) / np.mean(np.sum(V * V, 1))
    bound = affine.lower_at(red, moved, sol["nu"], sol["mu"])
    r = red.M_eq @ red.svec(red.of_gram(moved)) - red.b_eq
    assert np.max(np.abs(r)) > 1e-4 * np.max(red.b_eq)
    red_moved = dataclasses.replace(red, b_eq=red.b_eq + r)
    opt = affine.solve_reduced(red_moved)
    assert opt["status"] == "optimal"
    assert bound <= opt["objective"] + 1e-7 * abs(opt["objective"]), (bound, opt["objective"])
    assert bound < at    # the rows moved to where the objective can go lower


def test_judge_a_conviction_by_unchecked_multipliers_overruled_110566():
    """110566 (equality DVU, 26 points, no strictly feasible point): LOWRANK 'optimal'
    -0.5073367, its rows off by 2.7e-8, priced at CSDP's multipliers (up to 1,574) at
    2.2e-4 of its objective (above FEAS: convicted) and at the reduced problem's
    multipliers checked dual feasible at 1.8e-5 (the smaller bound: not convicted). A
    validated price above FEAS still convicts."""
    low = _low(-0.5073366675156316, status="optimal", bound=-0.5073316391798425)
    low.update(worth=2.2315e-4)
    ref = {"kind": "error", "error": "SolverFailedError", "solver": "CLARABEL"}
    csdp = {"kind": "result", "status": "optimal", "objective": -0.5073316019307645,
            "bound": None, "violation": 1.6e-12, "objective_mismatch": 0.0,
            "solver": "CSDP", "worth": 2.8e-7}
    assert _judge(low, ref, csdp)["wrong_point"] == 1
    v = _judge({**low, "worth_validated": 1.77e-5}, ref, csdp)
    assert v["wrong_point"] == 0 and v["agree"] == 1 and all(v[k] == 0 for k in UNTRUE)
    assert _judge({**low, "worth_validated": 2e-4}, ref, csdp)["wrong_point"] == 1


@pytest.mark.slow
def test_run_instance_110566_priced_at_checked_multipliers():
    """The whole instance: LOWRANK's result, convicted at CSDP's multipliers alone, is
    priced at the reduced problem's checked ones below FEAS and agrees with CSDP."""
    rec = run_instance(110566)
    low = rec["LOWRANK"]
    assert low["kind"] == "result" and low["worth"] > 1e-4
    assert low["worth_validated"] < 1e-4
    assert rec["verdict"]["agree"] == 1
    assert all(rec["verdict"][k] == 0 for k in UNTRUE), rec["verdict"]


def test_trace_bound_of_a_path_is_attained_by_its_straight_embedding():
    """Three points on a path with unit squared distances: the shortest paths are 1, 1, 2,
    so tr G <= (1 + 1 + 4) / 3 = 2, which the centred straight line -1, 0, 1 attains;
    longer edges scale it."""
    edges = (np.array([0, 1]), np.array([1, 2]), 3)
    assert affine._trace_bound(edges, np.array([1.0, 1.0])) == pytest.approx(2.0, rel=1e-15)
    x = np.array([-1.0, 0.0, 1.0])
    assert np.trace(np.outer(x, x)) == pytest.approx(2.0)
    assert affine._trace_bound(edges, np.array([4.0, 4.0])) == pytest.approx(8.0)
    assert affine._trace_bound(edges, np.array([])) == np.inf


@pytest.mark.slow
def test_run_instance_112249_priced_with_the_moved_trace_bound():
    """112249 (equality DVU, 28 points, no strictly feasible point): LOWRANK 'optimal'
    -0.45129698, its rows off by 2.0e-8, 1.1e-7 (relative) below CSDP's optimum; priced
    at CSDP's multipliers at 2.1e-4 (convicted); CLARABEL's reduced solve ends with
    lambda_min(S) = -3e-9, so the checked price needs the moved rows' trace bound: 2.2e-6."""
    rec = run_instance(112249)
    low = rec["LOWRANK"]
    assert low["kind"] == "result" and low["worth"] > 1e-4
    assert low["worth_validated"] < 1e-5
    assert rec["verdict"]["agree"] == 1
    assert all(rec["verdict"][k] == 0 for k in UNTRUE), rec["verdict"]

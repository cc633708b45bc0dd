"""Equality MVU on a (numerically) universally rigid graph: the data itself the only
feasible point, no strictly feasible point, so LOWRANK's violation falls ever more
slowly and no certificate comes. The outer loop stops on the stalled-violation rule
(:mod:`sdpembed.lowrank.rigid`) within a budget that does not depend on ``time_limit``,
and every refusal of a point off the equality constraints names ``distances="shrink"``
(:func:`~sdpembed.formulations.gram_problem.rigidity_note`). Before, the loop ran to
``max_outer`` / ``time_limit`` (3,600 s by default) and ended with a generic message.

Outcomes only (no timing)."""

import dataclasses

import numpy as np
import pytest
import sklearn.datasets as skd

from sdpembed.exceptions import SolverFailedError
from sdpembed.formulations.mvu import mvu
from sdpembed.graphs import knn_graph
from sdpembed.lowrank import lowrank_solve
from sdpembed.lowrank.backend import _formulation_problem, _refuse_stalled_on_face
from sdpembed.lowrank.options import LowRankOptions
from sdpembed.lowrank.rigid import (
    PROVEN,
    STOP_REASON,
    WINDOW,
    WINDOW_PROVED,
    StalledEquality,
    proven_stall,
    refuse_stalled,
)
from sdpembed.solve_status import check_result
from sdpembed.solvers import solve


@pytest.fixture(scope="module")
def swiss60():
    """A 6-NN graph of 60 points of an exact Swiss roll: rigid in R^3 (docs/tuning.md,
    "Equality MVU on the manifold rows: the remaining degeneracy is universal rigidity")."""
    X, _ = skd.make_swiss_roll(60, noise=0.0, random_state=0)
    f = mvu(knn_graph(X, n_neighbors=6, n_random=0))
    gp, basis, _ = _formulation_problem(f)
    return f, gp, basis


def test_rigid_equality_stops_on_the_stall_rule_and_is_refused_with_the_note(swiss60):
    f, gp, basis = swiss60
    opts = LowRankOptions(max_outer=60)
    res = lowrank_solve(gp, basis=basis, options=opts)
    assert res.stop_reason == STOP_REASON, res.stop_reason
    assert res.status != "optimal" and res.iterations < 30
    assert res.infeasibility > 1e-5
    assert STOP_REASON in res.history[-1]
    with pytest.raises(SolverFailedError, match="distances='shrink'") as err:
        refuse_stalled(gp, res, opts, f)
    assert "outer iterations" in str(err.value) and err.value.point is not None
    assert "evidently" in str(err.value)
    # where the graph's cliques prove that no strictly feasible point exists, it says so
    from sdpembed.lowrank.face import clique_null_vectors

    cliques = len(clique_null_vectors(gp))
    assert cliques > 0
    with pytest.raises(SolverFailedError, match="distances='shrink'") as err:
        refuse_stalled(gp, res, opts, f, cliques)
    said = str(err.value)
    assert f"({cliques} cliques of the graph have targets" in said and "evidently" not in said


def test_the_rule_is_inert_off_equality_and_needs_a_whole_window():
    rule = StalledEquality("shrink", 1e-4, 1e-6)
    assert not any(rule.observe({"rank": 5, "cheap_gap": 1e-2}, 1e-3, True)
                   for _ in range(3 * WINDOW))
    rule = StalledEquality("equality", 1e-4, 1e-6)
    fired = [rule.observe({"rank": 5, "cheap_gap": 1e-2}, 1e-3, True)
             for _ in range(WINDOW + 1)]
    assert fired == [False] * WINDOW + [True]
    # a violation that halves over the window, a rank change or a penalty below its cap:
    # the solve is still moving
    for rows in ([(5, 1e-3 * 0.85 ** k, True) for k in range(WINDOW + 1)],
                 [(5 + (k == WINDOW), 1e-3, True) for k in range(WINDOW + 1)],
                 [(5, 1e-3, k != 2) for k in range(WINDOW + 1)]):
        rule = StalledEquality("equality", 1e-4, 1e-6)
        assert not any(rule.observe({"rank": r, "cheap_gap": 1e-2}, v, cap)
                       for r, v, cap in rows)
    # a cheap gap that closes (near tol, or halving) is not stalled
    rule = StalledEquality("equality", 1e-4, 1e-6)
    assert not any(rule.observe({"rank": 5, "cheap_gap": 1e-2 * 0.8 ** k}, 1e-3, True)
                   for k in range(WINDOW + 1))


def test_the_rule_fires_on_the_shorter_window_only_where_cliques_prove_no_interior():
    """Where the graph's cliques prove that no strictly feasible point exists, a stall over
    ``WINDOW_PROVED`` outer iterations suffices; without the proof (count 0, or none given)
    the rule waits for ``WINDOW``. The proof is asked once, and only when the shorter
    window has stalled."""
    asked = []

    def proof(count):
        return lambda: asked.append(count) or count

    stalled = {"rank": 5, "cheap_gap": 1e-2}
    rule = StalledEquality("equality", 1e-4, 1e-6, proof(4))
    history = [dict(stalled) for _ in range(WINDOW_PROVED + 1)]
    fired = [rule.observe(entry, 1e-3, True) for entry in history]
    assert fired == [False] * WINDOW_PROVED + [True] and asked == [4]
    assert rule.window == WINDOW_PROVED
    # the last entry carries the proof's count, read by the backend (no face solve)
    assert history[-1][PROVEN] == 4 and not any(PROVEN in e for e in history[:-1])
    result = dataclasses.make_dataclass("R", ["stop_reason", "history"])
    assert proven_stall(result(STOP_REASON, history)) == 4
    assert proven_stall(result("max_outer", history)) == 0
    for none in (proof(0), None):
        asked.clear()
        rule = StalledEquality("equality", 1e-4, 1e-6, none)
        history = [dict(stalled) for _ in range(WINDOW + 1)]
        fired = [rule.observe(entry, 1e-3, True) for entry in history]
        assert fired == [False] * WINDOW + [True] and rule.window == WINDOW
        assert asked == ([0] if none is not None else [])
        assert not any(PROVEN in e for e in history)
        assert proven_stall(result(STOP_REASON, history)) == 0
    # a violation that halves over the shorter window: still moving, the proof not asked
    asked.clear()
    rule = StalledEquality("equality", 1e-4, 1e-6, proof(4))
    assert not any(rule.observe(dict(stalled), 1e-3 * 0.7 ** k, True)
                   for k in range(WINDOW_PROVED + 1))
    assert asked == []


def test_the_shorter_window_is_proven_beyond_the_early_size_only(swiss60):
    """The loop's proof for the shorter window (``EqualityOptimum.stall_proof``): the clique
    count beyond the barrier's early size (the 210-point exact Swiss roll, order 209 > 200);
    0 within it, cliques or not (the 60-point roll: its clique face's own solve goes on from
    the loop's last point) and 0 without such cliques (the roll with 7 noisy coordinates).
    The 60-point roll's solve stops on the full window."""
    from sdpembed.lowrank.equality_barrier import EqualityOptimum
    from sdpembed.lowrank.face import clique_null_vectors

    X, _ = skd.make_swiss_roll(210, noise=0.0, random_state=0)
    gp, space, pen = _mvu_problem(X)
    assert EqualityOptimum(space, pen, 1e-4, 1e-6).stall_proof() \
        == _clique_blocks_of_rank(X, gp) >= 1
    wide = np.hstack([X, np.random.default_rng(0).normal(0.0, 0.05, (210, 7))])
    assert EqualityOptimum(*_mvu_problem(wide)[1:], 1e-4, 1e-6).stall_proof() == 0
    f, gp, basis = swiss60
    _, space, pen = _mvu_problem(skd.make_swiss_roll(60, noise=0.0, random_state=0)[0])
    optimum = EqualityOptimum(space, pen, 1e-4, 1e-6)
    assert optimum.stall_proof() == 0 and optimum.proof() == len(clique_null_vectors(gp)) > 0
    res = lowrank_solve(gp, basis=basis, options=LowRankOptions(max_outer=60))
    assert res.stop_reason == STOP_REASON
    assert res.history[-1][STOP_REASON].startswith(f"over the last {WINDOW} outer")


@pytest.mark.slow
def test_proven_rigid_equality_stops_on_the_shorter_window(monkeypatch):
    """The 210-point exact Swiss roll (beyond the early size; its cliques prove no strictly
    feasible point): the loop stops on the shorter window, with the iterates of a run
    without the proof up to that outer iteration (only the stop moves), still off the
    constraints, and the message says what the rule saw over that window."""
    from sdpembed.lowrank.equality_barrier import EqualityOptimum

    X, _ = skd.make_swiss_roll(210, noise=0.0, random_state=0)
    gp, basis, _ = _formulation_problem(mvu(knn_graph(X, n_neighbors=6, n_random=0)))
    opts = LowRankOptions(max_outer=60)
    res = lowrank_solve(gp, basis=basis, options=opts)
    monkeypatch.setattr(EqualityOptimum, "stall_proof", lambda self: 0)
    unproven = lowrank_solve(gp, basis=basis, options=opts)
    assert res.stop_reason == unproven.stop_reason == STOP_REASON
    assert res.iterations < unproven.iterations
    assert res.history[-1][STOP_REASON].startswith(
        f"over the last {WINDOW_PROVED} outer iterations")
    assert unproven.history[-1][STOP_REASON].startswith(f"over the last {WINDOW} outer")
    for mine, theirs in zip(res.history, unproven.history[:res.iterations]):
        assert (mine["rank"], mine["cheap_gap"]) == (theirs["rank"], theirs["cheap_gap"])
    assert res.infeasibility > 1e-5


def test_no_face_solve_after_the_proven_stall(swiss60, monkeypatch):
    """Where the loop stopped on the shorter window (cliques proved no strictly feasible
    point) and the point restored onto the clique face is still off the constraints by
    more than ``tol**2``, the face solve is not run (it stalls too and ends in the same
    refusal: docs/tuning.md, "Equality MVU refusals: no face solve after a proven stall");
    after the full window (no proof) it still runs."""
    import time

    import sdpembed.lowrank.face_route as face_route
    from sdpembed.lowrank.face import clique_null_vectors

    f, gp, basis = swiss60
    opts = LowRankOptions(max_outer=60)
    res = lowrank_solve(gp, basis=basis, options=opts)
    assert res.stop_reason == STOP_REASON and not proven_stall(res)
    nulls = clique_null_vectors(gp)
    ran = []
    monkeypatch.setattr(face_route, "_solve_on_face",
                        lambda gp, result, *a: ran.append(1) or result)
    proven = dataclasses.replace(res, history=res.history[:-1] + [
        {**res.history[-1], PROVEN: len(nulls)}])
    for result, face_solve in ((res, True), (proven, False)):
        ran.clear()
        extra = {}
        out = face_route._on_exposed_face(gp, result, opts, extra, nulls,
                                          time.perf_counter() + 3600.0)
        assert extra["face"]["restored"] and extra["face"]["infeasibility"] > opts.tol ** 2
        assert ran == ([1] if face_solve else [])
        assert face_solve or extra["face"]["solve"]["ran"] is False
    # and the refusal that follows is the face refusal, without advice of more time
    extra["face"]["cliques"] = len(nulls)
    with pytest.raises(SolverFailedError, match="no strictly feasible point") as err:
        _refuse_stalled_on_face(gp, out, opts, extra, f)
    assert "raise time_limit" not in str(err.value)


@pytest.mark.slow
def test_the_proven_stall_is_refused_through_solve_without_a_face_solve(monkeypatch):
    """The 210-point exact Swiss roll through ``solve()``: the loop stops on the shorter
    window, its point restored onto the clique face is refused as before, and no face
    solve runs."""
    import sdpembed.lowrank.face_route as face_route

    def no_face_solve(*a, **k):
        raise AssertionError("the face solve ran")

    monkeypatch.setattr(face_route, "_solve_on_face", no_face_solve)
    X, _ = skd.make_swiss_roll(210, noise=0.0, random_state=0)
    f = mvu(knn_graph(X, n_neighbors=6, n_random=0))
    with pytest.raises(SolverFailedError, match="restored onto that face still violates"):
        solve(f, solver="LOWRANK", tol=1e-4)


def test_generic_violation_refusal_carries_the_note_for_equality_only():
    stats = {"primal_infeasibility": 1e-3, "rigidity_note": "distances='shrink' certifies."}
    with pytest.raises(SolverFailedError, match="distances='shrink'"):
        check_result("LOWRANK", "optimal_inaccurate", -1.0, stats, what="mvu")
    with pytest.raises(SolverFailedError) as err:
        check_result("LOWRANK", "optimal_inaccurate", -1.0, {"primal_infeasibility": 1e-3},
                     what="mvu")
    assert "shrink" not in str(err.value)


def test_lowrank_reports_the_note_for_equality_distances_only():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(25, 5))
    for distances, noted in (("equality", True), ("interval", False)):
        f = mvu(knn_graph(X, n_neighbors=3, n_random=0), distances=distances,
                slack_weight=100.0)
        report = solve(f, solver="LOWRANK")
        assert report.status == "optimal"
        assert bool(report.extra["rigidity_note"]) is noted


def test_the_face_refusal_after_the_rule_does_not_advise_more_time(swiss60):
    """The refusal of a point restored onto an exposed face but still off the constraints
    advises a larger ``time_limit`` (LOWRANK then also solves on the face; where the face
    solve ran, what a longer limit gives instead) unless the loop stopped on the
    stalled-violation rule, where more time does not help."""
    f, gp, basis = swiss60
    opts = LowRankOptions(max_outer=60)
    res = lowrank_solve(gp, basis=basis, options=opts)
    assert res.stop_reason == STOP_REASON and res.infeasibility > opts.tol ** 2
    face = {"face": {"restored": True, "cliques": 1}}
    with pytest.raises(SolverFailedError) as stalled:
        _refuse_stalled_on_face(gp, res, opts, dict(face), f)
    other = dataclasses.replace(res, stop_reason="max_outer")
    with pytest.raises(SolverFailedError) as capped:
        _refuse_stalled_on_face(gp, other, opts, dict(face), f)
    assert "raise time_limit" not in str(stalled.value)
    assert "raise time_limit" in str(capped.value)
    assert "distances='shrink'" in str(stalled.value)
    # where the face solve already ran, the advice says what a longer limit buys instead
    ran = {"face": {"restored": True, "cliques": 1, "solve": {
        "ran": True, "iterations": 21, "stop_reason": "time_limit", "infeasibility": 9.6e-8}}}
    with pytest.raises(SolverFailedError) as after_face:
        _refuse_stalled_on_face(gp, other, opts, ran, f)
    assert "also solves on the face" in str(capped.value)
    said = str(after_face.value)
    assert "also solves on the face" not in said and "the face solve ran here" in said
    assert "21 outer iterations" in said and "gives the full solve" in said


def test_after_the_rule_the_face_restoration_tries_one_rank_whatever_the_time_limit(
        swiss60, monkeypatch):
    """After the stalled-violation rule the restorations at lower ranks on the exposed face
    get no budget beyond their first rank (on main their flops grew with ``time_limit``:
    about 580 s wall of the S-curve's 736 s at 3,600 s, docs/tuning.md); after another
    stop they keep the budget that grows with ``time_limit``."""
    import sdpembed.lowrank.face_route as face_route
    from sdpembed.lowrank.face import clique_null_vectors

    f, gp, basis = swiss60
    nulls = clique_null_vectors(gp)
    assert nulls
    seen = []
    monkeypatch.setattr(face_route, "restore_at_lower_rank",
                        lambda *a, max_flops=None, **k: seen.append(max_flops))
    factor = np.random.default_rng(0).standard_normal((gp.n, 6))
    for stop, limit in ((STOP_REASON, 60.0), (STOP_REASON, 3600.0), ("max_outer", 3600.0)):
        result = dataclasses.make_dataclass("R", ["stop_reason", "infeasibility", "factor"])(
            stop, 1e-3, factor)
        extra = {"face": {"restored": True}}
        face_route._lower_rank_on_face(gp, result, LowRankOptions(time_limit=limit), extra,
                                       nulls)
        assert extra["face"]["lower_rank"] == {"rank": None}
    assert seen[:2] == [0.0, 0.0] and seen[2] > 0.0


def test_the_inaccurate_warning_after_the_rule_gives_its_advice_not_more_time():
    """Differential seed 110,564 (MVU, equality rows, no strictly feasible point): LOWRANK
    returns ``optimal_inaccurate`` within its certified gap after the stalled-violation rule
    (every reference's objective lies inside its interval, docs/tuning.md, twenty-ninth
    round). The warning said "raise the time or iteration limits" while the report's
    ``stop_advice`` says more time does not help; it now gives that advice."""
    import warnings

    from problems.differential import make_instance
    from sdpembed.exceptions import InaccurateSolutionWarning

    f, _ = make_instance(110564).build()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = solve(f, solver="LOWRANK")
    assert report.status == "optimal_inaccurate"
    assert report.extra["stop_reason"] == STOP_REASON
    said = [str(w.message) for w in caught if w.category is InaccurateSolutionWarning]
    assert len(said) == 1
    assert report.extra["stop_advice"].rstrip(".") in said[0]
    assert "raise the time or iteration limits" not in said[0]


def _mvu_problem(X, k=6):
    from sdpembed.lowrank.penalty import DistancePenalty
    from sdpembed.lowrank.space import FactorSpace

    gp, basis, _ = _formulation_problem(mvu(knn_graph(X, n_neighbors=k, n_random=0)))
    assert basis is None
    return gp, FactorSpace(gp), DistancePenalty(gp)


def test_the_equality_barrier_stays_out_where_cliques_prove_no_interior_point():
    """Beyond the barrier's early size (here 210 points, order 209 > 200) a graph whose
    cliques' targets fix Gram blocks of rank 3 (exact 3-D data: every feasible G has null
    vectors besides 1) has no strictly feasible point; there the equality barrier's
    multipliers grow until rounding voids its pair, and at n = 400 its run was 56 of the
    75 CPU s of the refusal (docs/tuning.md). It is not run there. The same graph's
    points with 7 more coordinates of noise (cliques of full rank) keep it; so does the
    60-point Swiss roll (within the early size, its steps cheap)."""
    from sdpembed.lowrank.equality_barrier import EqualityOptimum
    from sdpembed.lowrank.face import clique_null_vectors

    def no_interior_cliques(gp):
        return len(clique_null_vectors(gp))

    X, _ = skd.make_swiss_roll(210, noise=0.0, random_state=0)
    gp, space, pen = _mvu_problem(X)
    nulls = _clique_blocks_of_rank(X, gp)
    assert nulls >= 1 and no_interior_cliques(gp) == nulls
    assert not EqualityOptimum(space, pen, 1e-4, 1e-6).fits
    wide = np.hstack([X, np.random.default_rng(0).normal(0.0, 0.05, (210, 7))])
    gp, space, pen = _mvu_problem(wide)
    assert no_interior_cliques(gp) == _clique_blocks_of_rank(wide, gp) == 0
    assert EqualityOptimum(space, pen, 1e-4, 1e-6).fits
    X, _ = skd.make_swiss_roll(60, noise=0.0, random_state=0)
    gp, space, pen = _mvu_problem(X)
    assert no_interior_cliques(gp) > 0 and EqualityOptimum(space, pen, 1e-4, 1e-6).fits


def _clique_blocks_of_rank(X, gp):
    """The maximal cliques of ``gp``'s graph (at least 3 points) on which the data's own
    centred points have rank below |K| - 1: counted from the data, not from the targets."""
    import networkx as nx

    graph = nx.Graph()
    graph.add_edges_from(map(tuple, np.asarray(gp.edges)))
    count = 0
    for K in nx.find_cliques(graph):
        if len(K) < 3:
            continue
        P = X[K] - X[K].mean(axis=0)
        s = np.linalg.svd(P, compute_uv=False)
        count += int(np.sum(s > 1e-6 * s[0]) < len(K) - 1)
    return count

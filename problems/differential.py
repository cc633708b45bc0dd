"""Differential test: random Gram SDP variants, LOWRANK against an interior-point reference.

Each instance is drawn from a seeded numpy generator: a point cloud (Gaussian class
blobs, 12 to 60 points), a k-nearest-neighbour graph with random long edges, a method
(DVU with every distance mode, both centroid forms, SNR and trace terms; MVU), weights
changed through ``f.parameters`` after building, and random constraints added with
``with_constraints`` (trace bounds, must-link and cannot-link distances, fixed
entries, row sums). LOWRANK and CLARABEL solve it; where they disagree (one returns a
result the other does not, or their objectives differ by more than ``AGREE``), a second
reference (CSDP, else SDPA) decides. Every returned point is checked independently:
its Gram matrix is written into the cvxpy problem, whose constraint violations and
objective are evaluated by cvxpy.

Every relative measure here is relative to the objective, as
:func:`sdpembed.solve_status.bound_gap` measures (an SDP's objective has no unit, so 1 is
no floor): :func:`_close` compares ``|a - b|`` with ``tol * max(|a|, |b|, unit)``, where
``unit`` is :data:`~sdpembed.solve_status.OBJECTIVE_RESOLUTION` times the largest size of
the objective's terms at the instance's returned points (:func:`_point_scale`), a floor
that matters only for objectives near 0. Counted (``summary``):

* ``wrong_point``: a result violating a row by more than ``FEAS`` of max(1, trace G), or
  whose objective is not its own, or the subject's (LOWRANK's) result whose violations
  buy more than ``FEAS`` of its objective at the references' multipliers (``worth``,
  :mod:`problems.differential_rows`; a reference's: ``reference_bought``) and at the
  affine judge's multipliers checked dual feasible where it has them
  (``worth_validated``, :func:`_validated_worth`; 110566);
* ``bound_above_objective``: a LOWRANK result whose reported bound exceeds its
  objective by more than :data:`sdpembed.solve_status.BOUND_TOLERANCE`
  (:func:`~sdpembed.solve_status.bound_gap` in the unit the report states);
* ``untyped``: an exception that is not an ``SdpEmbedError``;
* ``far``: a result more than ``FAR`` (relative) from the references' optimum, or a
  result where the references prove infeasibility or unboundedness;
* ``agree`` / ``agree_within_gap`` / ``disagree`` / ``disagree_inaccurate``: LOWRANK and
  the reference that gives the optimum returned results ("agree within 1e-4 wherever
  both return a result"; the second reference where CLARABEL failed: 109240).
  ``agree``: LOWRANK's objective within ``AGREE`` of the optimum. Otherwise an
  ``optimal_inaccurate`` result is held to its stated gap (:func:`_within_stated_gap`:
  the interval between its bound and its objective, or its relative gap where it has no
  bound): ``agree_within_gap`` where that holds the optimum, ``disagree`` where it does
  not (or states none). ``disagree`` also counts an ``optimal`` result more than
  ``AGREE`` from an ``optimal`` optimum, and every ``outside_gap``;
  ``disagree_inaccurate`` what is left: a result outside ``AGREE`` of an optimum that is
  itself only ``optimal_inaccurate``, its own interval not contradicted (nothing is known
  to ``AGREE``). The optimum is the references' feasible result, an ``optimal`` one
  before an ``optimal_inaccurate`` one and, of one status, one that no subject's feasible
  objective lies more than ``AGREE`` below, then the one nearest optimality by the larger
  of its constraint violation and its own relative gap
  (:mod:`problems.differential_reference`): CLARABEL's unless CLARABEL stopped
  ``optimal_inaccurate`` and the second reference solved to ``optimal``, or both stopped
  ``optimal_inaccurate`` and the second's point is the one preferred;
* ``reference_inaccurate``: LOWRANK agrees with that second reference where CLARABEL's
  ``optimal_inaccurate`` objective is more than ``AGREE`` from it (not an untruth of
  LOWRANK's; counted to show how often CLARABEL's stopped point decided nothing);
* ``outside_gap``: a LOWRANK result with a bound whose stated gap is untrue: its bound
  lies above the references' optimum, or its objective lies farther from the optimum
  than from its bound (each by more than ``AGREE``, relative). An approximately
  feasible point may sit below the optimum, by at most its gap;
* ``false_infeasible``: LOWRANK proved infeasible what a reference solved;
* ``tight_reference``: the optimum was settled by a reference re-solved at tight
  tolerances (below);
* ``reference_repaired``: the references' optimum lay below LOWRANK's certified bound but
  its point repaired to feasibility does not (:func:`_below_proven_bound`, 100165): set
  aside, the optimum taken from the other references;
* ``one_sided``: no reference gives an optimum nor proves there is none, and a
  reference's point (a refused one's too) repaired to feasibility bounds the optimum from
  above (:func:`_one_sided`, 109046): LOWRANK's result judged on that side only
  (``outside_gap``, ``disagree``, ``far`` where it contradicts the result; never
  agreement);
* ``bracketed``: where a LOWRANK result is left ``unjudged`` or ``one_sided`` by the
  references, the affine judge (:func:`_bracket_outcome`,
  :mod:`problems.differential_affine`; 109252) brackets the optimum between a dual bound
  and an exactly feasible point's objective, both independent of LOWRANK: a bracket
  within :data:`BRACKET` is the optimum (LOWRANK judged against it as against an
  ``optimal`` reference); otherwise each side judges alone (:func:`_sides`, counted
  ``one_sided``);
* ``unjudged``: a LOWRANK result counted in none of ``agree``, ``agree_within_gap``,
  ``disagree``, ``disagree_inaccurate`` and ``one_sided`` (no reference gives an optimum
  and no reference point could be repaired, or a reference proves infeasibility: then
  ``far``).

**The tight re-solve** (:func:`_tight_outcome`): where a LOWRANK result (or ``DVU.fit``'s)
is feasible (violation at most ``FEAS``) and would be counted ``outside_gap``,
``disagree`` or ``far`` against the references at their default tolerances, the
references' own stopping may be what differs: on an objective near 0 by cancellation
their default tolerances stop up to 1e-6 of the objective's scale away (99467), above
the judge's floor of 1e-7 of it. CLARABEL is then re-solved with its gap and feasibility
tolerances at 1e-12 (else CSDP with ``axtol``, ``atytol``, ``objtol`` 1e-12), and a
feasible result of it that states a gap of at most :data:`TIGHT_GAP` is the optimum,
before every default-tolerance reference; the instance is judged again against it and
the record says which reference settled it (``settled_by``). Where no tight re-solve
gives such a result, the first verdict stands.

Run ``python -m problems.differential --n 1000 --out diff.jsonl`` (a record a line).
LOWRANK's ``time_limit`` (``--time-limit``, :data:`TIME_LIMIT`) is read on the process's
CPU time by default (``--clock cpu``, :func:`lowrank_clock`), so that the verdicts do not
depend on the machine's load; ``--clock wall`` reads it on the wall clock, as LOWRANK
does by itself. The references are not cut. Each record states LOWRANK's limits and the
clock (``limits``; the truncation mode: ``cuts`` and ``clock``), and each outcome its
wall and CPU seconds.

**Truncation mode** (``--truncate``, :func:`run_truncated`): the same instances, each
solve cut short by a limit drawn per seed (:func:`draw_cuts`, recorded in the record's
``cuts``): LOWRANK by a ``time_limit`` of 0.05-5 s, a ``max_outer`` of 1-10 or a
``max_inner`` of 10-500; the same LOWRANK options as :class:`~sdpembed.DVU`'s
``solver_options`` (DVU instances without added constraints; its embedding must be
finite); SCS by ``max_iters`` 50-2,000; CLARABEL by ``max_iter`` 3-30. Each is judged by
the counts above against CLARABEL without a cut (and a second reference where a cut
solve's result or proof is not CLARABEL's): a cut solve may refuse with a typed error,
never report something untrue (``false_unbounded``: an ``UnboundedError`` where a
reference solves). A conic solve that used up its limit is refused
(``SolverLimitError``); one that converged within it is judged as any other.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any

import cvxpy as cp
import numpy as np

from problems import differential_affine as affine
from problems import differential_reference as reference
from problems import differential_rows as rows
from problems.differential_repair import repaired_objective
from sdpembed import knn_graph, solve
from sdpembed.estimators import DVU
from sdpembed.exceptions import SdpEmbedError, SolverFailedError
from sdpembed.formulations import dvu, mvu
from sdpembed.lowrank.penalty import objective_scale
from sdpembed.solve_status import (
    BOUND_TOLERANCE,
    FAR_FROM_OPTIMAL,
    OBJECTIVE_RESOLUTION,
    bound_gap,
    relative_gap,
    reported_objective_scale,
)
from sdpembed.solvers import available_solvers

#: relative agreement asked of two backends that both return a result
AGREE = 1e-4
#: relative distance from the optimum beyond which a result counts as far from optimal
FAR = 1e-2
#: constraint violation, relative to max(1, trace G), beyond which a returned point is wrong
FEAS = 1e-4
#: LOWRANK's time limit per instance (seconds, on :data:`CLOCK`)
TIME_LIMIT = 60.0
#: the clocks LOWRANK's ``time_limit`` may be read on (:func:`lowrank_clock`): ``"cpu"``,
#: the process's CPU time, so that a verdict does not depend on the machine's load;
#: ``"wall"``, the wall clock LOWRANK reads by itself
CLOCKS = ("cpu", "wall")
#: the harness's default clock
CLOCK = "cpu"
#: the tight re-solves (:func:`_tight_outcome`), in order: a backend and its options
TIGHT = (("CLARABEL", {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12,
                       "max_iter": 400}),
         ("CSDP", {"axtol": 1e-12, "atytol": 1e-12, "objtol": 1e-12}))
#: the widest relative bracket [lower, upper] of the affine judge (:func:`_bracket_outcome`)
#: taken as the optimum: the optimum known 10 times finer than ``AGREE``
BRACKET = 1e-5
#: the largest gap a tight re-solve's result may state to settle the optimum (CLARABEL's
#: default ``tol_gap_rel``: a point no less converged than a default-tolerance one)
TIGHT_GAP = 1e-8


@dataclass
class Instance:
    """One random variant: how to build it, and the words for it."""

    seed: int
    description: dict[str, Any]
    build: Any = field(repr=False)
    #: ``estimator(solver_options)``: an unfitted :class:`~sdpembed.DVU` and its ``(X, y)``
    #: whose ``fit`` solves the same problem as ``build`` (``None``: constraints were added)
    estimator: Any = field(default=None, repr=False)


def _data(rng, n: int, n_classes: int):
    dim = int(rng.integers(3, 12))
    centers = rng.standard_normal((n_classes, dim)) * float(rng.uniform(1.0, 4.0))
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    X = centers[y] + rng.standard_normal((n, dim))
    y_partial = y.copy()
    hide = rng.random(n) < float(rng.uniform(0.0, 0.6))
    for k in range(n_classes):   # keep two labels per class
        keep = np.flatnonzero(y == k)[:2]
        hide[keep] = False
    y_partial[hide] = -1
    return X, y_partial


def _added(rng, G, n: int, scale: float) -> tuple[list, list[str]]:
    """Random constraints on the Gram expression ``G`` (targets have mean ``scale``)."""
    cons, words = [], []
    for _ in range(int(rng.integers(1, 4))):
        kind = rng.choice(["trace_le", "trace_ge", "must", "cannot", "entry", "rowsum", "diag"])
        i, j = (int(v) for v in rng.choice(n, 2, replace=False))
        if kind == "trace_le":
            u = float(rng.uniform(0.05, 2.0)) * n * scale
            cons.append(cp.trace(G) <= u)
        elif kind == "trace_ge":
            u = float(rng.uniform(0.05, 1.0)) * n * scale
            cons.append(cp.trace(G) >= u)
        elif kind == "must":
            u = float(rng.uniform(0.01, 1.0)) * scale
            cons.append(G[i, i] + G[j, j] - 2 * G[i, j] <= u)
        elif kind == "cannot":
            u = float(rng.uniform(0.5, 4.0)) * scale
            cons.append(G[i, i] + G[j, j] - 2 * G[i, j] >= u)
        elif kind == "entry":
            cons.append(G[i, j] == float(rng.uniform(-0.5, 0.5)) * scale)
        elif kind == "rowsum":
            cons.append(cp.sum(G[i, :4]) <= float(rng.uniform(0.0, 1.0)) * scale)
        else:
            cons.append(G[i, i] <= float(rng.uniform(0.2, 3.0)) * scale)
        words.append(f"{kind}({i},{j})")
    return cons, words


def make_instance(seed: int, n_range: tuple[int, int] = (12, 60)) -> Instance:
    """The random variant of ``seed`` (deterministic)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(n_range[0], n_range[1] + 1))
    method = "mvu" if rng.random() < 0.2 else "dvu"
    n_classes = int(rng.integers(2, 5))
    X, y = _data(rng, n, n_classes)
    k = int(rng.integers(2, 5))
    n_random = int(rng.integers(1, 3))   # a k-NN graph of blobs alone is often disconnected
    graph_seed = int(rng.integers(0, 2**31))
    desc: dict[str, Any] = {"seed": seed, "n": n, "method": method, "k": k,
                            "n_random": n_random}
    if method == "dvu":
        opts: dict[str, Any] = {
            "distances": str(rng.choice(["interval", "equality", "quadratic"])),
            "centroids": str(rng.choice(["explicit", "eliminated"])),
            "slack_weight": float(np.exp(rng.uniform(np.log(0.3), np.log(20.0)))),
        }
        if rng.random() < 0.25:
            opts["snr"] = float(rng.uniform(0.1, 2.0))
        if opts["centroids"] == "eliminated" and rng.random() < 0.3:
            opts["trace"] = str(rng.choice(["min", "max"]))
            opts["trace_weight"] = float(10 ** rng.uniform(-3, -1))
    else:
        opts = {"distances": str(rng.choice(["equality", "interval", "quadratic"],
                                            p=[0.6, 0.2, 0.2])),
                "slack_weight": float(np.exp(rng.uniform(np.log(0.5), np.log(50.0))))}
    desc.update(opts)
    change = {}
    if rng.random() < 0.3:
        change["factor"] = float(np.exp(rng.uniform(-1.0, 1.0)))
    add = rng.random() < 0.5
    add_seed = int(rng.integers(0, 2**31))
    desc["parameter_change"] = change.get("factor")

    def build():
        graph = knn_graph(X, n_neighbors=k, n_random=n_random, random_state=graph_seed)
        f = dvu(graph, y, **opts) if method == "dvu" else mvu(graph, **opts)
        if change:
            for name in ("slack_weight", "trace_weight", "snr"):
                if name in f.parameters:
                    f.parameters[name].value = float(f.parameters[name].value) * change["factor"]
        words: list[str] = []
        if add:
            G = f.expressions["gram"]
            cons, words = _added(np.random.default_rng(add_seed), G, f.n_points, 1.0)
            f = f.with_constraints(cons)
        return f, words

    def estimator(solver_options):
        graph = knn_graph(X, n_neighbors=k, n_random=n_random, random_state=graph_seed)
        weights = {name: opts[name] * change.get("factor", 1.0)
                   for name in ("slack_weight", "trace_weight", "snr") if name in opts}
        est = DVU(graph=graph, n_components=2, validation_fraction=None, solver="LOWRANK",
                  solver_options=solver_options,
                  **{**{kk: v for kk, v in opts.items() if kk not in weights}, **weights})
        return est, X, y

    return Instance(seed, desc, build,
                    estimator if method == "dvu" and not add else None)


@contextlib.contextmanager
def lowrank_clock(clock: str = CLOCK):
    """Within the block, LOWRANK's ``time_limit`` is read on ``clock`` (:data:`CLOCKS`).

    LOWRANK reads every deadline and every step estimate as ``time.perf_counter()``, an
    attribute looked up at each call; ``"cpu"`` puts :func:`time.process_time` there for
    the block's duration (and back after it), so that a solve's cut depends on the work
    it did, not on the machine's load (seed 110221: 14 CPU s certify, 54 s of wall clock
    did not at a wall/CPU ratio near 3.5). Every reading of ``time.perf_counter`` in the
    process during the block is CPU time, the solve report's seconds included. The
    process's CPU time counts its threads (run with one BLAS thread) and not its child
    processes (CSDP's: it is never run within the block). ``"wall"``: nothing changes."""
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, not {clock!r}")
    if clock == "wall":
        yield
        return
    wall = time.perf_counter
    time.perf_counter = time.process_time
    try:
        yield
    finally:
        time.perf_counter = wall


#: what :func:`_guarded` returns where its call raised
_RAISED = object()


def _guarded(out: dict[str, Any], call):
    """``call()``'s value, its warnings silenced; where it raises, ``_RAISED``, with the
    error in ``out`` (``kind`` "error" for the toolkit's typed errors, else "untyped" with
    its trace: the test counts them)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return call()
    except SdpEmbedError as exc:
        out.update(kind="error", error=type(exc).__name__, message=str(exc)[:300])
    except Exception as exc:  # noqa: BLE001 - the test counts them
        out.update(kind="untyped", error=type(exc).__name__, message=str(exc)[:300],
                   trace=traceback.format_exc()[-1500:])
    return _RAISED


def _result(rep) -> dict[str, Any]:
    """A returned result's fields of a record: ``stated_gap`` is its gap made relative
    (:func:`~sdpembed.solve_status.relative_gap`; ``None`` for a conic solve stopped before
    converging, which states none: its solver's number is ``solver_gap``), ``bound_gap``
    the signed gap over its bound in the unit of its ``objective_scale`` (as
    :func:`~sdpembed.solve_status.check_result` measured it)."""
    scale = reported_objective_scale(rep)
    return {"kind": "result", "status": rep.status, "objective": rep.objective,
            "bound": rep.bound, "gap": rep.gap, "certified_gap": rep.certified_gap,
            "solver_gap": rep.extra.get("solver_gap"),
            "stated_gap": relative_gap(rep.solver, rep.objective, rep),
            "objective_scale": scale, "bound_gap": bound_gap(rep.objective, rep.bound, scale)}


def _outcome(f, solver: str, *, anchor: np.ndarray | None = None, clock: str = CLOCK,
             keep: dict[str, np.ndarray] | None = None, **options) -> dict[str, Any]:
    """Solve, and check the returned point independently; a reference's result also
    states ``repaired_objective``, its objective at its point repaired to feasibility
    (:func:`~problems.differential_repair.repaired_objective`, mixing with ``anchor``,
    LOWRANK's point, where needed; ``None`` where it cannot be repaired), and so does a
    reference's refusal (``SolverFailedError``) that carries its point (:func:`_one_sided`
    judges by it where no reference gives an optimum). LOWRANK reads its ``time_limit``
    on ``clock`` (:func:`lowrank_clock`; the other backends are given no time limit).
    ``seconds``: wall clock; ``cpu_seconds``: this process's CPU time (a backend's child
    process, CSDP's, not counted), each of the whole outcome, the check included.
    ``keep``: where given, the point (a result's or a refusal's Gram matrix of the
    points) is kept in it under the solver's name (for :func:`_bracket_outcome`)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out: dict[str, Any] = {"solver": solver}
    refused: dict[str, Any] = {}

    def call():
        try:
            with lowrank_clock(clock if solver == "LOWRANK" else "wall"):
                return solve(f, solver=solver, **options)
        except SolverFailedError as exc:
            refused["point"] = exc.point
            raise

    rep = _guarded(out, call)
    if rep is not _RAISED:
        out.update(_result(rep))
        state = rows.snapshot(f.problem)   # every row's violation, read once for both measures
        out.update(_check_point(f, rep.objective, state), rows=state)
        if keep is not None:
            keep[solver] = np.array(f.value("gram"), dtype=float)
        if solver != "LOWRANK":
            _repair(out, f, f.value("gram"), anchor)
    elif isinstance(refused.get("point"), np.ndarray):
        if keep is not None:
            keep[solver] = np.array(refused["point"], dtype=float)
        if solver != "LOWRANK":
            _repair(out, f, refused["point"], anchor)   # a refused point proves one side
    out["seconds"] = time.perf_counter() - t0
    out["cpu_seconds"] = time.process_time() - c0
    return out


def _repair(out: dict[str, Any], f, G, anchor: np.ndarray | None) -> None:
    """State in ``out`` the objective of the reference's point ``G`` (the points' Gram
    matrix) repaired to feasibility (``repaired_objective``; ``None`` with ``repair_error``
    where it cannot be repaired, or ``G`` is not one of ``f``'s points' Gram matrices)."""
    try:
        gp = f.current_problem()
        G = np.asarray(G, dtype=float)
        if G.shape != (gp.n, gp.n) or not np.all(np.isfinite(G)):
            raise ValueError(f"no Gram matrix of {gp.n} points: shape {G.shape}")
        out["repaired_objective"] = repaired_objective(gp, G, anchor)
    except (SdpEmbedError, ValueError, AttributeError, np.linalg.LinAlgError) as exc:
        out.update(repaired_objective=None, repair_error=repr(exc)[:200])


def _point(f, o: dict[str, Any]) -> np.ndarray | None:
    """The points' Gram matrix of ``f`` where outcome ``o`` (just solved) is a result."""
    return np.array(f.value("gram"), dtype=float) if o["kind"] == "result" else None


def _check_point(f, objective: float, state: rows.RowState | None = None) -> dict[str, Any]:
    """The returned point's largest relative constraint violation and objective mismatch,
    evaluated by cvxpy on the formulation's own problem (its rows' violations ``state``,
    :func:`problems.differential_rows.snapshot`, where already read)."""
    problem = f.problem
    G = f.value("gram")
    size = max(1.0, float(np.trace(G)))   # >= every |G_ij| of a PSD G
    worst = 0.0
    for v in (state or rows.snapshot(problem)).violations:
        if v is not None and v.size:
            worst = max(worst, float(np.max(v)) / size)
    value = problem.objective.value
    scale = _point_scale(f, G)
    unit = OBJECTIVE_RESOLUTION * (scale or 0.0)
    mismatch = None if value is None else abs(float(value) - objective) / max(
        abs(objective), unit, 1e-300)
    return {"violation": worst, "objective_mismatch": mismatch, "scale": scale}


def _point_scale(f, G: np.ndarray) -> float | None:
    """The size of the objective's terms at the Gram matrix ``G``
    (:func:`sdpembed.lowrank.penalty.objective_scale` of its factor), the unit of the
    relative measures here (``None`` where ``f`` has no Gram problem)."""
    try:
        gp = f.current_problem()
    except (AttributeError, SdpEmbedError):
        return None
    w, V = np.linalg.eigh(0.5 * (G + G.T))
    return objective_scale(gp, V * np.sqrt(np.maximum(w, 0.0)))


def _second_reference() -> str | None:
    have = available_solvers()
    return next((name for name in ("CSDP", "SDPA", "SCS") if name in have), None)


def _close(a: float, b: float, tol: float, unit: float = 0.0) -> bool:
    """``|a - b| <= tol * max(|a|, |b|, unit)``: relative, with the instance's floor
    ``unit`` (:func:`_unit`) for objectives near 0."""
    return abs(a - b) <= tol * max(abs(a), abs(b), unit)


def _unit(*outcomes) -> float:
    """The floor of the relative measures of an instance: ``OBJECTIVE_RESOLUTION`` times
    the largest objective scale of its results' points (as
    :func:`sdpembed.solve_status.bound_gap`'s, which is the reported point's)."""
    scales = [s for o in outcomes if o is not None and o.get("kind") == "result"
              for s in (o.get("scale"), o.get("objective_scale")) if s is not None]
    return OBJECTIVE_RESOLUTION * max(scales, default=0.0)


#: the subjects whose stated gaps are their own claims (:func:`_within_stated_gap`)
_OWN_GAPS = frozenset({"LOWRANK", "DVU.FIT"})


def _within_stated_gap(o: dict[str, Any], optimum: float, unit: float) -> bool:
    """Whether result ``o``'s stated gap holds ``optimum``, to ``AGREE``: with a bound, the
    bound lies below the optimum and the objective no farther from the optimum than from
    its bound (an approximately feasible point may sit below the optimum, by at most its
    gap); without one, ``|p - optimum|`` within its relative ``stated_gap``. A result that
    states no gap holds nothing. Only LOWRANK's gaps are its own claims (a certified bound,
    or its estimate); a conic backend's iterate stopped by a limit is neither primal nor
    dual feasible, so its gap bounds nothing (SCS's cut at 2.7e-4 from the optimum with a
    gap of 6.6e-5, CLARABEL's ``AlmostSolved`` after 6 iterations 0.38 % off with a gap of
    2.2e-5 and residuals of 5e-5): it states no more than the rule guarantees of a
    result, :data:`~sdpembed.solve_status.FAR_FROM_OPTIMAL`."""
    p = o["objective"]
    slack = AGREE * max(abs(optimum), abs(p), unit)
    if o.get("bound") is not None:
        return o["bound"] <= optimum + slack and abs(p - optimum) <= p - o["bound"] + slack
    gap = o.get("stated_gap")
    if str(o.get("solver", "")).upper() not in _OWN_GAPS:
        gap = max(gap or 0.0, FAR_FROM_OPTIMAL)
    return gap is not None and abs(p - optimum) <= gap * max(abs(p), abs(optimum)) + slack


def _build(inst: Instance, rec: dict[str, Any]):
    """``inst``'s formulation, its added rows' words in ``rec``; ``None`` where building
    raised, the error and the verdict (typed: refused at build; else untyped) in ``rec``."""
    try:
        f, words = inst.build()
    except SdpEmbedError as exc:
        rec["build"] = {"kind": "error", "error": type(exc).__name__, "message": str(exc)[:300]}
        rec["verdict"] = {"refused_at_build": True}
        return None
    except Exception as exc:  # noqa: BLE001
        rec["build"] = {"kind": "untyped", "error": type(exc).__name__, "message": str(exc)[:300]}
        rec["verdict"] = {"untyped": 1}
        return None
    rec["instance"]["added"] = words
    return f


def run_instance(seed: int, n_range: tuple[int, int] = (12, 60), *,
                 time_limit: float = TIME_LIMIT, max_outer: int | None = None,
                 clock: str = CLOCK) -> dict[str, Any]:
    """Build, solve with LOWRANK (``time_limit``, read on ``clock``, :func:`lowrank_clock`,
    and ``max_outer``: its limits) and CLARABEL (and a second reference on disagreement;
    no reference is cut), and judge (a reference re-solved at tight tolerances where a
    feasible LOWRANK result would be counted against the default ones:
    :func:`_tight_outcome`); one record, LOWRANK's limits and clock in ``limits``."""
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, not {clock!r}")
    inst = make_instance(seed, n_range)
    limits: dict[str, Any] = {"time_limit": time_limit}
    if max_outer is not None:
        limits["max_outer"] = max_outer
    rec: dict[str, Any] = {"instance": inst.description, "limits": {**limits, "clock": clock}}
    f = _build(inst, rec)
    if f is None:
        return rec
    _ = f.problem   # built first, so that every backend writes its point into the variables
    points: dict[str, np.ndarray] = {}
    low = _outcome(f, "LOWRANK", clock=clock, keep=points, **limits)
    anchor = _point(f, low)
    ref = _outcome(f, "CLARABEL", anchor=anchor, keep=points)
    rec["LOWRANK"], rec["CLARABEL"] = low, ref
    agree = (low["kind"] == ref["kind"] == "result"
             and _close(low["objective"], ref["objective"], AGREE, _unit(low, ref)))
    same_error = (low["kind"] == ref["kind"] == "error" and low["error"] == ref["error"]
                  and low["error"] in ("InfeasibleError", "UnboundedError"))
    second = None
    if not (agree or same_error):
        name = _second_reference()
        if name is not None:
            second = _outcome(f, name, anchor=anchor, keep=points)
            rec[name] = second
    best, unit = _optimum(ref, second, witnesses=(low,)), _unit(low, ref, second)
    rows.weigh((low,), (best, ref, second), unit)
    if rows.convicted(low, FEAS):
        _validated_worth(f, low, points.get("LOWRANK"), best, unit)
    rec["verdict"] = _judge(low, ref, second)
    tight = None
    if _needs_tight(low, rec["verdict"]):
        tight, rec["tight"] = _tight_outcome(f, anchor)
        if tight is not None:
            rows.weigh((tight,), (tight,), _unit(low, ref, second, tight))
            rec["verdict"] = _judge(low, ref, second, tight=tight)
    rec["settled_by"] = _settled_by(ref, second, tight, (low,))
    if _needs_bracket(rec["verdict"]):
        bracket = rec["bracket"] = _bracket_outcome(f, points)
        rec["verdict"] = _judge(low, ref, second, tight=tight, bracket=bracket)
        if rec["verdict"]["bracketed"]:
            rec["settled_by"] = "bracket"
    return rec


def _validated_worth(f, o: dict[str, Any], G: np.ndarray | None,
                     best: dict[str, Any] | None, unit: float) -> None:
    """Set ``worth_validated`` on result ``o`` (point ``G``) where the affine judge's
    multipliers are checked dual feasible: what its rows' violations can lower the
    optimum by, the optimum (``best``'s objective) less
    :func:`problems.differential_affine.lower_at` (a proven lower bound on the optimum of
    the problem whose rows the point meets), relative as ``worth``. ``worth`` prices the
    violations at a reference's multipliers, which are not checked and, without a
    strictly feasible point, are one of an unbounded set (110566: CSDP's up to 1,574
    price LOWRANK's row residuals of 2.7e-8 at 2.2e-4 of its objective; multipliers of
    the reduced problem with S PSD, up to 123, at 1.7e-5). Both bound the same
    quantity, so :func:`problems.differential_rows.convicted` takes the smaller. Left
    unset where there is no optimum, no point, or no such multipliers."""
    if best is None or G is None:
        return
    try:
        red = affine.reduced(f.current_problem())
    except (SdpEmbedError, AttributeError, ValueError):
        return
    if red is None:
        return
    sol = affine.solve_reduced(red)
    if not sol or sol.get("status") not in ("optimal", "optimal_inaccurate"):
        return
    bound = affine.lower_at(red, G, sol.get("nu"), sol.get("mu"), sol.get("y"))
    if bound is None:
        return
    o["worth_validated"] = max(0.0, best["objective"] - bound) / max(
        abs(o["objective"]), unit, 1e-300)


def _needs_bracket(verdict: dict[str, int]) -> bool:
    """Whether the affine judge is asked (:func:`_bracket_outcome`): a LOWRANK result
    that the references left unjudged or judged on one side only."""
    return bool(verdict.get("unjudged") or verdict.get("one_sided"))


def _bracket_outcome(f, points: dict[str, np.ndarray]) -> dict[str, Any]:
    """The affine judge (:mod:`problems.differential_affine`) on ``f``: the optimum
    bracketed by ``lower`` (a dual bound of the reduced problem solved by CLARABEL,
    linear objectives only) and ``upper`` (the least objective of ``points``, every
    solver's point, refused or not, and the reduced solve's, each projected onto the
    equality rows and mixed with a strictly feasible centre, so exactly feasible up to
    rounding). Where no strictly feasible centre exists, a point PSD only to ``eps`` is
    recorded (``uppers``, ``exact`` False) and used for nothing: on 109252 CSDP's point,
    rows exact and PSD to 1.6e-10 of its largest eigenvalue, lies 3.1e-5 (relative) below
    the proven ``lower``. Where both sides exist and ``upper - lower`` is at most
    :data:`BRACKET` (relative, with the floor of the points' objective scale), the
    outcome is a result, status ``optimal``, objective ``upper``; else ``kind``
    ``"sides"``: :func:`_judge` then uses each side that exists on its own
    (:func:`_sides`)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out: dict[str, Any] = {"solver": "bracket", "kind": "sides", "lower": None,
                           "upper": None, "upper_exact": None, "upper_from": None}
    try:
        gp = f.current_problem()
        red = affine.reduced(gp)
    except (SdpEmbedError, AttributeError, ValueError) as exc:
        red = None
        out["why"] = repr(exc)[:200]
    if red is not None:
        pts = dict(points)
        sol = affine.solve_reduced(red)
        if sol is not None:
            out["reduced"] = {k: sol.get(k) for k in ("status", "objective")}
            if sol.get("G") is not None:
                pts["reduced"] = sol["G"]
            lo = affine.lower(red, sol.get("nu"), sol.get("mu"), sol.get("y"))
            out.update(lower=lo["bound"], lower_min_eig=lo.get("min_eig"),
                       trace_bound=lo["trace_bound"])
        size = 2.0 * max([float(np.trace(G)) for G in pts.values()] + [1.0])
        cen = affine.centre(red, size)
        out["centre_delta"] = None if cen is None else cen["delta"]
        uppers = {}
        for name, G in pts.items():
            if G.shape != (gp.n, gp.n) or not np.all(np.isfinite(G)):
                continue
            u = affine.upper(red, G, cen)
            uppers[name] = {k: u.get(k) for k in ("objective", "exact", "t", "eps",
                                                  "min_eig", "residual", "why")}
        out["uppers"] = uppers
        exact = [(u["objective"], k) for k, u in uppers.items()
                 if u["objective"] is not None and u["exact"]]
        if exact:
            out.update(upper=min(exact)[0], upper_from=min(exact)[1], upper_exact=True)
        scales = [s for G in pts.values() for s in [_point_scale(f, G)] if s is not None]
        out["scale"] = max(scales, default=None)
        lo_, up_ = out["lower"], out["upper"]
        if lo_ is not None and up_ is not None:
            width = up_ - lo_
            floor = OBJECTIVE_RESOLUTION * (out["scale"] or 0.0)
            out["width"] = width / max(abs(lo_), abs(up_), floor, 1e-300)
            if width < -BRACKET * max(abs(lo_), abs(up_), floor):
                out["inconsistent"] = True    # a feasible point below a dual bound
            elif width <= BRACKET * max(abs(lo_), abs(up_), floor):
                out.update(kind="result", status="optimal", objective=up_,
                           violation=0.0, objective_mismatch=0.0, bound=None,
                           gap=out["width"])
    out["seconds"] = time.perf_counter() - t0
    out["cpu_seconds"] = time.process_time() - c0
    return out


#: the counts a tight re-solve may overrule (:func:`_needs_tight`)
_OVERRULED = ("outside_gap", "disagree", "far")


def _needs_tight(o: dict[str, Any], verdict: dict[str, int]) -> bool:
    """Whether the judge re-solves a reference at tight tolerances for outcome ``o``
    judged ``verdict``: ``o`` is a feasible result (violation at most ``FEAS``) counted
    ``outside_gap``, ``disagree`` or ``far``."""
    return (o["kind"] == "result" and o["violation"] <= FEAS
            and any(verdict.get(k) for k in _OVERRULED))


def _settles(o: dict[str, Any] | None) -> bool:
    """Whether a tight re-solve's outcome ``o`` settles the optimum: a feasible result
    (violation at most ``FEAS``) stating a gap (its report's, else its solver's: CLARABEL
    stopped ``optimal_inaccurate`` at 1e-12 reports only the latter) of at most
    :data:`TIGHT_GAP`."""
    if o is None or o["kind"] != "result" or o["violation"] > FEAS:
        return False
    gap = o.get("gap") if o.get("gap") is not None else o.get("solver_gap")
    return gap is not None and abs(gap) <= TIGHT_GAP


def _tight_outcome(f, anchor: np.ndarray | None = None
                   ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """Re-solve ``f`` at tight tolerances (:data:`TIGHT`, in order, until one settles):
    the settling outcome (``None`` where none does) and every attempt."""
    have = available_solvers()
    attempts = []
    for name, options in TIGHT:
        if name not in have:
            continue
        o = _outcome(f, name, anchor=anchor, **options)
        o.update(tight=True, options=options)
        attempts.append(o)
        if _settles(o):
            return o, attempts
    return None, attempts


def _optimum(ref, second, tight=None, witnesses=()) -> dict[str, Any] | None:
    """The references' outcome whose objective is the optimum (``None``: none gives
    one): a settling tight re-solve (:func:`_settles`) first; else, of the feasible
    results of ``ref`` and ``second``, an ``optimal`` one first, then one that no feasible
    objective of ``witnesses`` (the subjects) contradicts, then the one nearer optimality
    by the larger of its violation and its own relative gap
    (:func:`problems.differential_reference.optimum`, the reasons there)."""
    if _settles(tight):
        return tight
    return reference.optimum((ref, second), witnesses, feas=FEAS, agree=AGREE,
                             unit=_unit(ref, second, *witnesses))


def _optimal(o: dict[str, Any], tight: dict[str, Any] | None) -> bool:
    """Whether the judge holds reference ``o`` ``optimal``: its status, or ``o`` is a
    settling tight re-solve (its gap within :data:`TIGHT_GAP`, the default tolerance, even
    where CLARABEL stops short of 1e-12 as ``optimal_inaccurate``)."""
    return o["status"] == "optimal" or (o is tight and _settles(o))


def _settled_by(ref, second, tight=None, witnesses=()) -> str | None:
    """The name of the reference whose objective the judge took as the optimum
    (``"<backend>:tight"`` for a tight re-solve; ``None``: no reference gave one)."""
    best = _optimum(ref, second, tight, witnesses)
    if best is None:
        return None
    return f"{best['solver']}:tight" if best.get("tight") else best["solver"]


def _judge(low, ref, second, *, references: bool = True,
           tight: dict[str, Any] | None = None, witnesses=None,
           bracket: dict[str, Any] | None = None) -> dict[str, int]:
    """The counts of one instance (see the module docstring): ``low``'s outcome judged
    against the references ``ref`` (CLARABEL) and ``second``, and ``tight``, a re-solve at
    tight tolerances (:func:`_tight_outcome`) that, where it settles (:func:`_settles`),
    is the optimum. ``references=False``: the references' own untruths (untyped, wrong
    point, far) are not counted (they are, once, in the verdict of another subject of the
    same instance). ``witnesses``: the subjects whose feasible objectives may contradict a
    reference (:func:`_optimum`; default ``low``). ``bracket``: the affine judge's outcome
    (:func:`_bracket_outcome`), used only where no reference gives an optimum nor proves
    there is none: a closed bracket is the optimum (``bracketed``), else its sides are
    used one by one (:func:`_sides`)."""
    witnesses = (low,) if witnesses is None else witnesses
    v = {"wrong_point": 0, "bound_above_objective": 0, "untyped": 0, "far": 0, "agree": 0,
         "agree_within_gap": 0, "disagree": 0, "disagree_inaccurate": 0,
         "lowrank_result": 0, "lowrank_error": 0, "false_infeasible": 0,
         "false_unbounded": 0, "outside_gap": 0, "reference_bought": 0,
         "reference_inaccurate": 0, "tight_reference": 0, "reference_repaired": 0,
         "one_sided": 0, "bracketed": 0, "unjudged": 0}
    results = [o for o in ((low, ref, second) if references else (low,)) if o is not None]
    for o in results:
        if o["kind"] == "untyped":
            v["untyped"] += 1
        if o["kind"] == "result" and (o["violation"] > FEAS or (
                o["objective_mismatch"] is not None and o["objective_mismatch"] > FEAS)):
            v["wrong_point"] += 1
        elif rows.convicted(o, FEAS):
            v["wrong_point" if o is low else "reference_bought"] += 1
    unit = _unit(low, ref, second, tight)
    if low["kind"] == "result":
        v["lowrank_result"] = 1
        signed = bound_gap(low["objective"], low["bound"], low.get("objective_scale"))
        if signed is not None and signed < -BOUND_TOLERANCE:
            v["bound_above_objective"] = 1
    elif low["kind"] == "error":
        v["lowrank_error"] = 1
    # the optimum, where the references give one (_optimum)
    refs = [o for o in (ref, second) if o is not None]
    best = _optimum(ref, second, tight, witnesses)
    v["tight_reference"] = int(best is not None and best is tight)
    if _below_proven_bound(low, best, unit):   # infeasible: it contradicts nothing
        v["reference_repaired"] = 1
        ref_, second, tight = (None if o is best else o for o in (ref, second, tight))
        best = _optimum(ref_, second, tight, witnesses)
        v["tight_reference"] = int(best is not None and best is tight)
    proven = next((o["error"] for o in refs if o["kind"] == "error"
                   and o["error"] in ("InfeasibleError", "UnboundedError")), None)
    if (best is None and proven is None and bracket is not None
            and bracket.get("kind") == "result"):
        best = bracket
        v["bracketed"] = 1
    optimum = None if best is None else best["objective"]
    for o in (low, ref) if references else (low,):
        if o["kind"] != "result":
            continue
        if optimum is not None and not _close(o["objective"], optimum, FAR, unit):
            if not (o is ref and second is not None and second["kind"] == "result"
                    and _close(o["objective"], second["objective"], FAR, unit)):
                v["far"] += 1
        elif optimum is None and proven is not None and o is low:
            v["far"] += 1    # a result where a reference proves there is none
    if low["kind"] == "result" and optimum is not None and low["bound"] is not None:
        v["outside_gap"] = int(not _within_stated_gap(low, optimum, unit))
    if low["kind"] == "error" and low["error"] == "InfeasibleError" and optimum is not None:
        v["false_infeasible"] = 1
    if low["kind"] == "error" and low["error"] == "UnboundedError" and optimum is not None:
        v["false_unbounded"] = 1
    target = ref if best is None else best
    if low["kind"] == target["kind"] == "result":
        # against the optimum (CLARABEL's objective unless the second reference decided:
        # CLARABEL failed or stopped 'optimal_inaccurate', or a tight re-solve settled
        # it): two 'optimal' results agree within AGREE; an inaccurate one within its gap
        if best is None and v["reference_repaired"]:
            v["disagree_inaccurate"] = 1    # the only optimum's point was infeasible
        elif _close(low["objective"], target["objective"], AGREE, unit):
            v["agree"] = 1
            v["reference_inaccurate"] = int(target is not ref and ref["kind"] == "result"
                                            and not _close(ref["objective"], optimum, AGREE,
                                                           unit))
        elif v["outside_gap"] or (_optimal(target, tight) and (
                low["status"] == "optimal"
                or not _within_stated_gap(low, target["objective"], unit))):
            v["disagree"] = 1
        elif low["status"] == "optimal_inaccurate" and _within_stated_gap(
                low, target["objective"], unit):
            v["agree_within_gap"] = 1
        else:   # the reference only 'optimal_inaccurate': it decides nothing to AGREE
            v["disagree_inaccurate"] = 1
    elif low["kind"] == "result" and best is None and proven is None:
        _one_sided(v, low, refs, unit)
        if bracket is not None:
            _sides(v, low, bracket, unit)
    if low["kind"] == "result" and not any(
            v[k] for k in ("agree", "agree_within_gap", "disagree", "disagree_inaccurate",
                           "one_sided")):
        v["unjudged"] = 1
    return v


def _one_sided(v: dict[str, int], low: dict[str, Any], refs, unit: float) -> None:
    """Judge result ``low`` where no reference gives an optimum nor proves there is none
    (109046: every reference refused), on the one side a reference's point proves: its
    point repaired to feasibility (``repaired_objective``, a refused point's as well as a
    result's) is feasible, so its objective ``U`` is an upper bound on the optimum.
    Counted in ``v``: ``one_sided`` where some reference's point was repaired; against
    the least such ``U``, by more than ``AGREE`` (relative): a bound of ``low``'s above
    ``U`` is false (``outside_gap``, ``disagree``); an objective above ``U`` lies that far
    above the optimum (``disagree`` for an ``optimal`` result, or one whose stated gap
    does not reach ``U``; ``far`` beyond ``FAR``). Nothing proves the other side: a
    refused reference's dual objective is no bound (its dual iterate is not known to be
    feasible), so where ``U`` lies above ``low``'s objective nothing is counted against
    it, and nothing is counted as agreement."""
    fixed = [o["repaired_objective"] for o in refs
             if o.get("repaired_objective") is not None]
    if not fixed:
        return
    v["one_sided"] = 1
    upper, p = min(fixed), low["objective"]
    if low.get("bound") is not None \
            and low["bound"] > upper + AGREE * max(abs(upper), abs(p), unit):
        v["outside_gap"] = v["disagree"] = 1
    _past(v, low, upper, p - upper, unit)


def _past(v: dict[str, int], low: dict[str, Any], ref: float, excess: float,
          unit: float) -> None:
    """Count result ``low`` whose objective lies ``excess`` on the wrong side of a
    reference value ``ref`` (above an exactly feasible point's objective, or below a
    dual bound): beyond ``AGREE`` it is ``disagree`` for an ``optimal`` result or one
    whose stated gap (its bound, else its stated relative gap) does not cover it;
    beyond ``FAR`` it is also ``far``."""
    p = low["objective"]
    scale = max(abs(ref), abs(p), unit)
    slack = AGREE * scale
    if excess > slack:
        room = (p - low["bound"] if low.get("bound") is not None
                else (low.get("stated_gap") or 0.0) * max(abs(p), abs(ref)))
        if low["status"] == "optimal" or excess > room + slack:
            v["disagree"] = 1
    if excess > FAR * scale:
        v["far"] = 1


def _sides(v: dict[str, int], low: dict[str, Any], bracket: dict[str, Any],
           unit: float) -> None:
    """Judge result ``low`` by the affine judge's sides where they do not close
    (:func:`_bracket_outcome`): an exact ``upper`` side (a point exactly feasible up to
    rounding) as :func:`_one_sided` judges a repaired point; a ``lower`` side (a dual
    bound) from below: ``low``'s objective more than ``AGREE`` below it is an objective
    its point's violations bought, counted ``disagree`` for an ``optimal`` result or one
    whose stated gap does not reach the bound, ``far`` beyond ``FAR``. Counted
    ``one_sided`` where a side was used."""
    p = low["objective"]
    if bracket.get("upper") is not None and bracket.get("upper_exact"):
        _one_sided(v, low, [{"repaired_objective": bracket["upper"]}], unit)
    lower = bracket.get("lower")
    if lower is None:
        return
    v["one_sided"] = 1
    _past(v, low, lower, lower - p, unit)


def _below_proven_bound(low, best, unit: float) -> bool:
    """Whether ``best`` (the references' optimum) lies below LOWRANK's certified bound by
    more than ``AGREE`` (relative, as :func:`_within_stated_gap` measures) while its point,
    repaired to feasibility (``repaired_objective``), does not: its objective is that of
    an infeasible point and contradicts nothing (100165: CLARABEL's rows with targets of
    4e-3 off by 5e-6, 8e-8 of the trace). The judge then takes the optimum from the
    other references. Where the repaired objective stays below the bound, the bound is
    contradicted by a feasible point and the verdict counts it."""
    if best is None or low["kind"] != "result" or low.get("bound") is None:
        return False
    fixed = best.get("repaired_objective")
    slack = AGREE * max(abs(best["objective"]), abs(low["objective"]), unit)
    return (fixed is not None and best["objective"] < low["bound"] - slack
            and fixed >= low["bound"] - slack)


#: the truncation mode's cuts (``--truncate``), drawn per seed: LOWRANK's (one of
#: ``time_limit`` seconds, ``max_outer``, ``max_inner``; the other limits generous), also
#: given to :class:`~sdpembed.DVU` as ``solver_options`` (DVU instances without added
#: constraints), SCS's ``max_iters`` and CLARABEL's ``max_iter``
CUTS: dict[str, tuple[float, float]] = {
    "time_limit": (0.05, 5.0), "max_outer": (1, 10), "max_inner": (10, 500),
    "SCS:max_iters": (50, 2000), "CLARABEL:max_iter": (3, 30)}


def draw_cuts(seed: int) -> dict[str, dict[str, Any]]:
    """The cuts of ``seed`` (deterministic; a stream of its own, so that the instance of
    ``seed`` is the default mode's): ``{subject: options}``."""
    rng = np.random.default_rng([seed, 40])

    def loguniform(lo, hi):
        return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))

    kind = str(rng.choice(["time_limit", "max_outer", "max_inner"]))
    low: dict[str, Any] = {"time_limit": TIME_LIMIT}
    if kind == "time_limit":
        low["time_limit"] = round(loguniform(*CUTS["time_limit"]), 3)
    elif kind == "max_outer":
        low["max_outer"] = int(rng.integers(CUTS["max_outer"][0], CUTS["max_outer"][1] + 1))
    else:
        low["max_inner"] = int(round(loguniform(*CUTS["max_inner"])))
    scs = {"max_iters": int(round(loguniform(*CUTS["SCS:max_iters"])))}
    lo, hi = CUTS["CLARABEL:max_iter"]
    clarabel = {"max_iter": int(rng.integers(lo, hi + 1))}
    return {"LOWRANK": low, "SCS": scs, "CLARABEL": clarabel, "DVU.fit": low}


def _fit_outcome(estimator, X, y, clock: str = CLOCK) -> dict[str, Any]:
    """Fit the estimator (its LOWRANK ``time_limit`` read on ``clock``), and check its
    solve's point and embedding as :func:`_outcome`."""
    t0, c0 = time.perf_counter(), time.process_time()
    out: dict[str, Any] = {"solver": "DVU.fit"}

    def fit():
        with lowrank_clock(clock):
            return estimator.fit(X, y)
    if _guarded(out, fit) is not _RAISED:
        rep = estimator.solve_report_
        out.update(_result(rep))
        fm = estimator.formulation_
        if not fm.variables_built and getattr(fm, "factor", None) is not None:
            # the fit's formulation was built without its cvxpy problem: build it and write
            # the solve's factor into it as a solve on a built problem does
            from sdpembed.lowrank.backend import _formulation_problem, _write_solution
            _ = fm.problem
            gp, _basis, lifted = _formulation_problem(fm)
            _write_solution(fm, gp, fm.factor, lifted)
        out.update(_check_point(fm, rep.objective))
        if not np.all(np.isfinite(estimator.embedding_)):
            out["violation"] = np.inf     # a non-finite embedding is a wrong point
    out["seconds"] = time.perf_counter() - t0
    out["cpu_seconds"] = time.process_time() - c0
    return out


def run_truncated(seed: int, n_range: tuple[int, int] = (12, 60), *,
                  clock: str = CLOCK) -> dict[str, Any]:
    """The truncation mode's record of ``seed``: the instance of :func:`run_instance`,
    solved by each subject of :func:`draw_cuts` under its cut (``rec["cut:<subject>"]``;
    LOWRANK's and ``DVU.fit``'s ``time_limit`` read on ``clock``, ``rec["clock"]``)
    and by CLARABEL without a cut (the reference), a second reference where a subject's
    result or proof is not the reference's; each subject judged by :func:`_judge`
    (``rec["verdicts"]``), their sum in ``rec["verdict"]``; a tight re-solve as in
    :func:`run_instance` where a feasible LOWRANK or ``DVU.fit`` result would be counted
    against the default-tolerance references."""
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, not {clock!r}")
    inst = make_instance(seed, n_range)
    cuts = draw_cuts(seed)
    rec: dict[str, Any] = {"instance": inst.description, "cuts": cuts, "clock": clock}
    f = _build(inst, rec)
    if f is None:
        return rec
    _ = f.problem
    subjects: dict[str, dict[str, Any]] = {}
    anchor = None
    for name in ("LOWRANK", "SCS", "CLARABEL"):
        subjects[name] = _outcome(f, name, anchor=anchor, clock=clock, **cuts[name])
        if name == "LOWRANK":
            anchor = _point(f, subjects[name])
    if inst.estimator is not None:
        subjects["DVU.fit"] = _fit_outcome(*inst.estimator(dict(cuts["DVU.fit"])),
                                           clock=clock)
    ref = _outcome(f, "CLARABEL", anchor=anchor)   # last: every subject's point checked
    rec["CLARABEL"] = ref
    for name, o in subjects.items():
        rec[f"cut:{name}"] = o

    def settled(o):
        if o["kind"] == "result":
            return ref["kind"] == "result" and _close(o["objective"], ref["objective"], AGREE,
                                                      _unit(o, ref))
        if o["kind"] == "error" and o["error"] in ("InfeasibleError", "UnboundedError"):
            return ref["kind"] == "error" and ref["error"] == o["error"]
        return True    # a failure to solve says nothing the optimum could contradict

    second = None
    if not all(settled(o) for o in subjects.values()):
        name = _second_reference()
        if name is not None:
            second = _outcome(f, name, anchor=anchor)
            rec[name] = second
    ws = list(subjects.values())
    rows.weigh(ws, (_optimum(ref, second, witnesses=ws), ref, second), _unit(ref, second))
    verdicts = {name: _judge(o, ref, second, references=(k == 0), witnesses=ws)
                for k, (name, o) in enumerate(subjects.items())}
    tight = None
    if any(_needs_tight(subjects[name], verdicts[name])
           for name in ("LOWRANK", "DVU.fit") if name in subjects):
        tight, rec["tight"] = _tight_outcome(f, anchor)
        if tight is not None:
            verdicts = {name: _judge(o, ref, second, references=(k == 0), tight=tight,
                                     witnesses=ws)
                        for k, (name, o) in enumerate(subjects.items())}
    rec["settled_by"] = _settled_by(ref, second, tight, ws)
    rec["verdicts"] = verdicts
    total: dict[str, int] = {}
    for name, v in verdicts.items():
        for key, val in v.items():
            if key.startswith("lowrank_") and name != "LOWRANK":
                continue    # the other subjects' results and errors: summarize's cut:<name>
            total[key] = total.get(key, 0) + int(val)
    rec["verdict"] = total
    return rec


def summarize(records: list[dict]) -> dict[str, int]:
    """Totals of the verdicts, how often each backend's error type occurred, and which
    reference settled the optimum (``settled_by:<name>``)."""
    total: dict[str, int] = {"instances": len(records)}
    for r in records:
        for k, val in r["verdict"].items():
            total[k] = total.get(k, 0) + int(val)
        if r.get("settled_by") is not None:
            key = f"settled_by:{r['settled_by']}"
            total[key] = total.get(key, 0) + 1
        names = ["LOWRANK", "CLARABEL"] + [k for k in r if k.startswith("cut:")]
        for name in names:
            o = r.get(name)
            if o is None:
                continue
            key = f"{name}:{o['error']}" if o["kind"] != "result" else (
                f"{name}:result" if name.startswith("cut:") else None)
            if key is not None:
                total[key] = total.get(key, 0) + 1
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100, help="number of instances")
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--min-points", type=int, default=12)
    ap.add_argument("--max-points", type=int, default=60)
    ap.add_argument("--time-limit", type=float, default=TIME_LIMIT,
                    help="LOWRANK's time limit per instance (seconds, on --clock)")
    ap.add_argument("--clock", choices=CLOCKS, default=CLOCK,
                    help="the clock LOWRANK's time limits are read on: the process's CPU "
                         "time (default; a verdict then does not depend on the load) or "
                         "the wall clock")
    ap.add_argument("--max-outer", type=int, default=None, help="LOWRANK's max_outer")
    ap.add_argument("--truncate", action="store_true",
                    help="truncation mode: each solve cut short by a random limit drawn per "
                         "seed (draw_cuts), judged against CLARABEL without a cut")
    ap.add_argument("--out", default=None, help="JSON lines file (one record per instance)")
    args = ap.parse_args(argv)
    records = []
    sink = open(args.out, "a") if args.out else None
    try:
        for seed in range(args.start, args.start + args.n):
            if args.truncate:
                rec = run_truncated(seed, (args.min_points, args.max_points),
                                    clock=args.clock)
            else:
                rec = run_instance(seed, (args.min_points, args.max_points),
                                   time_limit=args.time_limit, max_outer=args.max_outer,
                                   clock=args.clock)
            records.append(rec)
            if sink:
                sink.write(json.dumps(rec, default=rows.jsonable) + "\n")
                sink.flush()
    finally:
        if sink:
            sink.close()
    print(json.dumps(summarize(records), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

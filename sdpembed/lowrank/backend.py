"""The ``"LOWRANK"`` backend of :func:`sdpembed.solve`: formulation in, report out."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import sys
import time
from typing import Any

import numpy as np

from ..backends import conic_alternatives
from ..exceptions import InfeasibleError, InputError, SolverFailedError, UnsupportedProblemError
from ..formulations.blank import distance_rows_as_edges
from ..formulations.dvu import explicit_centroid_factor
from ..formulations.gram import GramFormulation, GramProblem
from ..formulations.gram_problem import rigidity_note
from ..report import Backend, SolveReport, _finite, objective_unit
from ..solve_status import (
    FAR_FROM_OPTIMAL,
    VIOLATION_WORTH,
    bound_gap,
    priced_beyond,
)
from .face import (
    EXACT_CHECK,
    ROUNDING_FLOOR,
    clique_null_vectors,
    restore_at_lower_rank,
    restore_on_face,
)
from .face_route import _FULL_SHARE, _on_exposed_face, _restoration_flops, _with_point
from .farkas import farkas_certificate
from .ipm_common import least_squares
from .options import LowRankOptions
from .penalty import objective_scale
from .reduction import reduce_face, solve_on_reduced_face
from .rigid import STOP_REASON as RIGID_STOP
from .rigid import refuse_stalled
from .row_worth import repaired_factor_worth, row_price
from .solve import lowrank_solve, rows_point
from .space import FactorSpace
from .stall import _STALL_RATIO, _STUCK_WINDOW

BACKEND_NAME = "LOWRANK"

logger = logging.getLogger(__name__)


def _formulation_problem(formulation) -> tuple[GramProblem, np.ndarray | None, bool]:
    """(points' GramProblem at the current parameter values, with the added constraints;
    reduced basis or None; lifted explicit form?) of a formulation, or a refusal.

    LOWRANK solves the description, so it takes only the formulations whose cvxpy problem
    the description generates: those returned by the builders and by
    :meth:`~sdpembed.formulations.gram.GramFormulation.with_constraints`, unedited."""
    if not isinstance(formulation, GramFormulation):
        if isinstance(formulation.meta.get("gram_problem"), GramProblem):
            raise UnsupportedProblemError(
                "this Formulation carries a Gram SDP's description but is not one its builder "
                "returned (a cvxpy problem rebuilt around it?), so LOWRANK cannot know what "
                "its problem adds or changes. Add constraints on the Gram matrix with "
                "f.with_constraints([...]) on the builder's formulation, or solve this one with "
                f"a conic backend ({conic_alternatives()})")
        raise UnsupportedProblemError(
            f"solver='LOWRANK' solves the Gram SDPs (DVU, MVU) built by "
            f"sdpembed.formulations.dvu / mvu; this is a {formulation.method!r} formulation: "
            f"solve it with a conic backend ({conic_alternatives()})")
    formulation.check_unchanged()
    gp = formulation.current_problem()
    if gp.meta.get("blank"):
        gp = distance_rows_as_edges(gp)
    return gp, formulation.reduced_basis, formulation.centroids == "explicit"




def _reduced_face_first(gp: GramProblem, basis, nulls, opts: LowRankOptions,
                        deadline: float) -> tuple[Any, dict | None]:
    """Where equality rows within the exact check's size expose, by facial reduction
    (:func:`~sdpembed.lowrank.reduction.reduce_face`), more of the cone than their
    rank-deficient cliques do, the solve on that face first
    (:func:`~sdpembed.lowrank.reduction.solve_on_reduced_face`): ``(result, record)``, the
    result ``None`` where there is no such face or the solve on it does not certify (the
    full solve then runs as without it); ``record`` (``extra["facial_reduction"]``) says
    what was found and done, ``None`` where nothing was tried."""
    if basis is not None or gp.distances != "equality" \
            or gp.n > min(opts.dense_limits.eig, EXACT_CHECK):
        return None, None
    t0 = time.perf_counter()
    rf = reduce_face(gp)
    cliques = sum(N.shape[1] for _, _, N in nulls)
    record: dict[str, Any] = {"seconds": time.perf_counter() - t0}
    if rf is None or rf.U.shape[1] <= cliques:
        record["found"] = None if rf is None else "no more than the cliques expose"
        return None, record
    record.update(rf.describe(), cliques=cliques)
    solve_record: dict[str, Any] = {}
    record["solve"] = solve_record
    result = solve_on_reduced_face(gp, rf, opts, solve_record, deadline)
    record["seconds"] = time.perf_counter() - t0
    return result, record


def _write_solution(formulation, gp: GramProblem, F: np.ndarray, lifted: bool) -> bool:
    """Write the factor into the cvxpy variables when the problem is (or is cheaply) built."""
    formulation.set_factor(F)
    if not formulation.variables_built:
        return False
    variables = formulation.variables
    Ff = explicit_centroid_factor(gp, F) if lifted else F
    name = "G" if "G" in variables else "Y"
    var = variables[name]
    if name == "G":
        _assign_psd(var, Ff @ Ff.T)
    else:
        B = np.asarray(formulation.basis(), dtype=float)
        P = _coordinates(B, Ff)
        _assign_psd(var, P @ P.T)
    if "eps" in variables:
        D = gp.distances_of_factor(F)
        variables["eps"].value = np.abs(D - gp.target) / gp.target
    return True


def _coordinates(B: np.ndarray, F: np.ndarray) -> np.ndarray:
    r"""The least-squares coordinates :math:`P` of ``F`` in the basis ``B`` (:math:`F \approx
    BP`): :math:`B^TF` when ``B`` has orthonormal columns (the builders' bases do; checked
    on a random probe, :math:`\|B^TBx - x\| \le 10^{-10}\|x\|`, two products), else a
    dense least-squares solve (:math:`O(nk^2)`, the write-back's main cost at scale)."""
    x = np.random.default_rng(0).standard_normal(B.shape[1])
    if np.linalg.norm(B.T @ (B @ x) - x) <= 1e-10 * np.linalg.norm(x):
        return B.T @ F
    return least_squares(B, F)


def _assign_psd(var, value: np.ndarray) -> None:
    """``var.value = value`` for :math:`FF^T`, PSD by construction: cvxpy's eigenvalue check
    can see rounding of large entries as a negative eigenvalue, so the value is stored
    symmetrised without that check."""
    var.save_value(0.5 * (value + value.T))


@contextlib.contextmanager
def _progress_table(verbose: bool):
    """With ``verbose``, the outer loop's progress table goes to standard output while the
    solve runs (as the conic backends print theirs), through a handler on the
    ``sdpembed.lowrank`` logger that is removed afterwards."""
    if not verbose:
        yield
        return
    log = logging.getLogger(__package__)
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.setLevel(logging.INFO)
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


def _solve_backend(formulation, verbose: bool = False, **options) -> SolveReport:
    """``solve(formulation, solver="LOWRANK", **options)``; options: :class:`LowRankOptions`."""
    opts = LowRankOptions.from_options(options)
    deadline = time.perf_counter() + opts.time_limit
    gp, basis, lifted = _formulation_problem(formulation)
    # cliques found first: where they expose a face, the full solve leaves the face solve
    # its share of the time limit (its multipliers grow without bound there, so it would
    # run to the limit)
    nulls = clique_null_vectors(gp) if basis is None else []
    first = opts
    if nulls and gp.n <= min(opts.dense_limits.eig, EXACT_CHECK):
        first = dataclasses.replace(opts, time_limit=_FULL_SHARE * opts.time_limit)
    with _progress_table(verbose):
        reduced, face_record = _reduced_face_first(gp, basis, nulls, opts, deadline)
        if reduced is None:
            if face_record is not None and face_record.get("seconds"):
                first = dataclasses.replace(first, time_limit=max(
                    first.time_limit - face_record["seconds"], 0.0))
            result = lowrank_solve(gp, basis=basis, options=first)
        else:
            result = reduced
    cert = result.certificate
    extra: dict[str, Any] = {
        "rank": None,   # of the point returned: set once the face steps have chosen it
        "lower_bound": result.bound,
        "certificate": cert.describe() if cert is not None else "no certificate",
        "certificate_check": (cert.check if cert is not None and cert.bound is not None
                              else None),
        "outer_iterations": result.iterations,
        "stop_reason": result.stop_reason,
        # phases not made because the time limit had passed (the face step adds its own)
        "skipped": list(result.skipped),
        "function_evaluations": result.function_evaluations,
        "reduced_basis_rank": None if basis is None else basis.shape[1],
        "reduced_solver": result.reduced_solver,
        "interval_envelope": result.interval_envelope,
        "history": result.history,
        "time_split": result.timings,
        "max_abs_multiplier": max(result.max_abs_multiplier, default=None),
        # the reported certificate's multipliers: a warm start for a sweep's next solve
        "multipliers": (None if result.y is None else
                        {"y": np.asarray(result.y), "nu": np.asarray(result.nu)}),
    }
    if face_record is not None:
        extra["facial_reduction"] = face_record
    if reduced is not None:
        extra.update(certificate=face_record["solve"]["certificate"], certificate_check="exact",
                     lower_bound=result.bound)
    # what to change, by why the loop stopped (solve_status.check_result's refusals say it)
    advice = _stop_advice(result, opts, distances=gp.distances)
    if advice:
        extra["stop_advice"] = advice
    _refuse_diverged_without_point(gp, result, opts, formulation)
    _classify_infeasible(gp, basis, result, opts, formulation)
    if result.status in ("optimal", "optimal_inaccurate") and basis is None \
            and reduced is None:
        loop = result
        result = _on_exposed_face(gp, result, opts, extra, nulls, deadline)
        cliques = (extra.get("face") or {}).get("cliques")
        if advice and cliques:   # the advice names the face the route solved on too
            extra["stop_advice"] = _stop_advice(loop, opts, distances=gp.distances,
                                                cliques=cliques)
        _refuse_stalled_on_face(gp, result, opts, extra, formulation)
        result = _restored_below_bound(gp, result, opts, extra)
    refuse_stalled(gp, result, opts, formulation, len(nulls))
    extra["rank"] = result.rank
    # appended to solve_status.check_result's refusal of a point off the constraints
    extra["rigidity_note"] = rigidity_note(gp.distances).strip()
    priced_out = False   # an optimal point whose violations buy more than VIOLATION_WORTH
    if result.status != "unbounded" and result.factor is not None:
        # the unit of solve_status.bound_gap, at the point reported
        extra["objective_scale"] = objective_scale(gp, result.factor)
        if result.status in ("optimal", "optimal_inaccurate"):
            # its hard rows' violations priced at its own multipliers (solve_status, rule 5)
            worth = row_worth(gp, result, extra["objective_scale"])
            if worth is not None:
                extra["violation_worth"] = worth
            if worth is not None and worth > VIOLATION_WORTH:
                extra["advice"] = _priced_advice(result, opts)
                priced_out = _priced_out(gp, basis, result, worth, extra,
                                         gp.n <= opts.dense_limits.eig)
    if result.status == "unbounded":
        extra["message"] = f"LOWRANK detected the problem {result.status}"
        return SolveReport(status=result.status, objective=None, solver=BACKEND_NAME,
                           solver_version=_version(), options=dict(options),
                           compile_seconds=0.0, solve_seconds=result.seconds,
                           iterations=result.iterations, extra=extra)
    if result.unverified:
        extra["estimated_gap"] = result.estimated_gap
        extra["estimated_lower_bound"] = result.estimated_bound
    if result.verify_seconds is not None:
        extra["verify_seconds"] = result.verify_seconds
    if result.status != "optimal" and result.certified_gap is None:
        if result.estimated_gap is not None:
            extra["message"] = (f"gap {result.estimated_gap:.2g} estimated, not "
                                "certified (" + extra["certificate"] + ")")
        else:
            extra["message"] = ("stopped without a certificate (" + extra["certificate"]
                                + "). " + _stop_advice(
                                    result, opts, generic=True, distances=gp.distances))
    t1 = time.perf_counter()
    wrote = _write_solution(formulation, gp, result.factor, lifted)
    extra["wrote_variables"] = wrote
    if not wrote:
        extra["note"] = ("the cvxpy problem was never built (not needed): the solution is "
                         "formulation.factor, G = F F^T; formulation.value('gram') forms it")
    status = "optimal" if result.status == "optimal" and not priced_out else "optimal_inaccurate"
    return SolveReport(
        status=status, objective=float(result.objective), solver=BACKEND_NAME,
        solver_version=_version(), options={**opts.__dict__, "warm_start": str(opts.warm_start)
                                            if not isinstance(opts.warm_start, np.ndarray)
                                            else "array",
                                            "warm_multipliers": None
                                            if opts.warm_multipliers is None else "arrays"},
        compile_seconds=time.perf_counter() - t1,
        solve_seconds=result.seconds, iterations=result.iterations,
        gap=(result.certified_gap if result.certified_gap is not None
             else result.estimated_gap),
        certified_gap=result.certified_gap,
        bound=result.bound if result.certified_gap is not None else None,
        primal_infeasibility=result.infeasibility, extra=extra)


#: the outer iterations a stop looks back on to say whether the loop was still progressing
#: (:func:`_no_progress`; as many as the stall rule's window, :mod:`~sdpembed.lowrank.stall`)
_PROGRESS_WINDOW = _STUCK_WINDOW
#: the measures of progress in a history entry: one of them must fall below
#: ``_STALL_RATIO`` times its best before the window for the window to count as progress
_PROGRESS_KEYS = ("cheap_gap", "residual", "constraint_violation", "certified_gap",
                  "estimated_gap")
#: what a refusal proposes besides LOWRANK's own options
_CONIC = "or use an interior-point backend (CLARABEL, CSDP)"


def _no_progress(history: list[dict]) -> tuple[float, float] | None:
    r"""The lowest and highest cheap gap of the last ``_PROGRESS_WINDOW`` outer iterations
    where none of them made progress: no rank growth among them, and none of
    ``_PROGRESS_KEYS`` (cheap gap, residual, added rows' violation, certified or estimated
    gap) below ``_STALL_RATIO`` times its best before them. ``None`` where they did, or
    where the loop ran no more than the window (then nothing is known)."""
    if len(history) <= _PROGRESS_WINDOW:
        return None
    recent, before = history[-_PROGRESS_WINDOW:], history[:-_PROGRESS_WINDOW]
    if any("grew_rank" in e for e in recent):
        return None

    def best(entries, key):
        vals = [v for e in entries if (v := _finite(e.get(key))) is not None]
        return min(vals) if vals else None

    for key in _PROGRESS_KEYS:
        now, then = best(recent, key), best(before, key)
        if now is not None and (then is None or now < _STALL_RATIO * then):
            return None
    gaps = [v for e in recent if (v := _finite(e.get("cheap_gap"))) is not None]
    return (min(gaps), max(gaps)) if gaps else None


def _stalled_below_tol(result: Any, opts: LowRankOptions,
                       stuck: tuple[float, float] | None) -> tuple[float, float, float] | None:
    """The lowest and highest cheap gap of the last ``_PROGRESS_WINDOW`` outer iterations
    and the last residual, where those iterations made no progress (``stuck``,
    :func:`_no_progress` of ``result.history``), every cheap gap among them is at or below
    ``tol`` and the last residual is above the loop's feasibility target ``max(feas_tol,
    1e-2 tol)``: a bound already within ``tol`` at a point that does not reach the
    constraints, so never certified; else ``None``."""
    if stuck is None or not stuck[1] <= opts.tol:
        return None
    last = _finite(result.history[-1].get("residual"))
    if last is None or not last > max(opts.feas_tol, 1e-2 * opts.tol):
        return None
    return stuck[0], stuck[1], last


def _stop_advice(result: Any, opts: LowRankOptions, generic: bool = False,
                 distances: str = "", cliques: int | None = None) -> str:
    r"""What to change, given why the outer loop stopped (``result.stop_reason``): one or
    more sentences for :func:`sdpembed.solve_status.check_result`'s refusals
    (``extra["stop_advice"]``), or ``""`` where the stop says nothing (a reduced basis's
    interior-point method, no iteration). ``generic``: the limits' advice where the stop
    says nothing.

    * ``"time_limit"`` / ``"max_outer"`` while still progressing (or too few iterations to
      tell): raise that limit.
    * Either limit after ``_PROGRESS_WINDOW`` outer iterations without progress
      (:func:`_no_progress`: a factor of too low a rank cycles at a cheap gap that is a
      bound only where :math:`S(y) \succeq 0`): more of them repeat it; raise ``rank``
      (or ``max_rank`` where the factor is at it).
    * The same with ``distances == "equality"``, every cheap gap of that window at or
      below ``tol`` and the residual still above the loop's feasibility target
      (:func:`_stalled_below_tol`): the equality distances' feasible set is a degenerate
      face (no strictly feasible point; ``cliques``: the cliques whose face the route
      also solved on), which neither the rank nor an interior-point backend changes;
      ``distances="shrink"`` is strictly feasible and certifies.
    * ``"certified"``: the loop ended at a certified gap, so more time or iterations
      are not used; ``feas_tol`` is what moves the point.
    * The stalled-violation rule (:mod:`~sdpembed.lowrank.rigid`): no strictly feasible
      point, which more time does not make."""
    why = result.stop_reason
    its = f"{result.iterations} outer iteration{'s' if result.iterations != 1 else ''}"
    if why in ("time_limit", "max_outer"):
        where = (f"at its time limit (time_limit = {opts.time_limit:g} s, after {its})"
                 if why == "time_limit" else f"at max_outer = {opts.max_outer}")
        stuck = _no_progress(result.history)
        below = _stalled_below_tol(result, opts, stuck) if distances == "equality" else None
        if below is not None:
            face = (f" The face that {cliques} clique{'s' if cliques != 1 else ''} of the "
                    f"graph expose{'' if cliques != 1 else 's'}, solved on too, is degenerate "
                    "as well: the feasible set "
                    "lies on a face below the cliques'." if cliques else "")
            return (f"LOWRANK stopped {where} with its cheap gap below tol = {opts.tol:g} "
                    f"(between {below[0]:.2g} and {below[1]:.2g} over its last "
                    f"{_PROGRESS_WINDOW} outer iterations) while its residual stayed above "
                    f"feas_tol = {opts.feas_tol:g} ({below[2]:.2g}), falling by less than "
                    "half: the equality distances leave (numerically) no strictly feasible "
                    "point, a degenerate face where no finite multipliers certify the point: "
                    "more time, a higher rank or an interior-point backend do not change that."
                    f"{face} Use distances='shrink' (each distance at most its target: "
                    "strictly feasible, it certifies).")
        if stuck is None:
            still = (" while its gaps were still falling"
                     if len(result.history) > _PROGRESS_WINDOW else "")
            return (f"LOWRANK stopped {where}{still}: raise "
                    f"{'time_limit' if why == 'time_limit' else 'max_outer'}, {_CONIC}.")
        rank = result.factor.shape[1] if result.factor is not None else None
        at_max = rank is not None and rank >= opts.max_rank
        grow = (f"max_rank (the factor is at max_rank = {opts.max_rank})" if at_max
                else "rank (the factor's starting rank"
                + (f"; it ended at rank {rank})" if rank is not None else ")"))
        return (f"LOWRANK stopped {where}, and its last {_PROGRESS_WINDOW} outer iterations "
                f"made no progress (cheap gap between {stuck[0]:.2g} and {stuck[1]:.2g}, none "
                f"below {_STALL_RATIO:g} times the best before them; a cheap gap bounds "
                "nothing while S(y) is not PSD, as at a factor of too low a rank): more time "
                f"or iterations repeat them. Raise {grow}, {_CONIC}.")
    if why == "certified":
        return ("LOWRANK stopped at a certified gap, so more time or iterations are not used: "
                f"lower feas_tol (its violations then shrink before it stops), {_CONIC}.")
    if why == RIGID_STOP:
        return ("LOWRANK stopped on its stalled-violation rule: the equality distances leave "
                "no strictly feasible point, and more time (time_limit) does not make one; "
                "solve with a conic backend (CLARABEL, CSDP) and check its status.")
    return f"Raise time_limit/max_outer, {_CONIC}." if generic else ""


def _priced_advice(result: Any, opts: LowRankOptions) -> str:
    """What :func:`sdpembed.solve_status.check_result`'s rule-5 refusal proposes (after
    "Tighten the backend's tolerances or"): ``feas_tol``, and a limit only where one
    stopped the loop."""
    if result.stop_reason in ("time_limit", "max_outer") and _no_progress(result.history) is None:
        limit = "time_limit" if result.stop_reason == "time_limit" else "max_outer"
        return f"lower feas_tol or raise {limit}, {_CONIC}"
    return f"lower feas_tol, {_CONIC}"


def row_worth(gp: GramProblem, result: Any, scale: float | None) -> float | None:
    r""":func:`~sdpembed.lowrank.row_worth.row_price` of ``result``'s factor at its own
    multipliers relative to :math:`\max(|p|, 10^{-3} s)` (``scale`` :math:`s`, the unit of
    :func:`~sdpembed.solve_status.bound_gap`); ``None`` without multipliers."""
    w = row_price(gp, result.factor, result.y, result.nu)
    p = _finite(result.objective)
    if w is None or p is None:
        return None
    unit = objective_unit(p, scale)
    return w / unit if unit > 0 else (0.0 if w == 0 else float("inf"))


def _priced_out(gp: GramProblem, basis, result: Any, worth: float, extra: dict,
                dense: bool) -> bool:
    """For a point whose violations are priced at ``worth`` > :data:`VIOLATION_WORTH`: its
    repair's cost (``extra["repaired_worth"]``, :func:`repaired_factor_worth`, where
    ``dense`` allows its eigendecomposition; not on a reduced basis, nor where an equality
    row must hold: there the price alone judges it) and, where LOWRANK called it
    ``optimal`` and the price also exceeds its certified gap
    (:func:`~sdpembed.solve_status.priced_beyond`, the rule SCS shares), a message; True
    there (the point is then ``optimal_inaccurate``, judged by rule 5 of
    :mod:`sdpembed.solve_status`).

    A price within the certified gap :math:`g` keeps ``optimal``: at its multipliers the
    optimum lies in :math:`[\\ell, p + W] \\subset [p - g, p + g]`, within the gap it
    states (sign-aligned violations are priced at about the gap itself). A price above it
    says the interval [bound, objective] may miss the optimum by up to the price."""
    p = float(result.objective)
    scale = _finite(extra.get("objective_scale"))
    repaired = (None if basis is not None or result.factor is None or not dense
                else repaired_factor_worth(gp, result.factor, p, objective_unit(p, scale)))
    if repaired is not None:
        extra["repaired_worth"] = repaired
    if result.status != "optimal":
        return False
    gap = bound_gap(p, result.bound, scale) if result.certified_gap is not None else None
    said = priced_beyond(worth, {"its certified gap {}": gap})
    if said is None:
        return False
    extra["message"] = (f"converged to its tolerances (feas_tol), but {said}"
                        + (f"; moved onto its rows it costs {repaired:.3g} more"
                           if repaired is not None else "; no repair (an equality row)")
                        + ": " + extra["advice"])
    return True


def _restored_below_bound(gp: GramProblem, result, opts: LowRankOptions, extra: dict):
    r"""An equality problem's point that lies below its own certified bound, restored onto
    the constraints (Gauss-Newton, :func:`~sdpembed.lowrank.face.restore_on_face` without a
    face, then at lower ranks, :func:`~sdpembed.lowrank.face.restore_at_lower_rank`), where
    that brings it to rounding (:data:`~sdpembed.lowrank.face.ROUNDING_FLOOR`): a feasible
    point, whose objective cannot lie below a valid bound, replaces the infeasible one
    (which would be refused). Only where no
    clique exposes a face (that case is :func:`_on_exposed_face`'s); the equalities may
    still leave almost no interior (no strictly feasible point to working precision), where
    a residual within ``feas_tol`` can buy an objective below the optimum by about its
    square root. ``extra["restoration"]`` records what happened."""
    if (gp.distances != "equality" or "face" in extra or result.bound is None
            or result.certified_gap is None or not result.infeasibility > opts.tol ** 2):
        return result
    signed = bound_gap(result.objective, result.bound)
    if signed is None or signed >= 0.0:
        return result
    U = np.zeros((gp.n, 0))
    space = FactorSpace(gp)
    record: dict[str, Any] = {"objective_before": float(result.objective),
                              "infeasibility_before": float(result.infeasibility)}
    extra["restoration"] = record
    out = restore_on_face(gp, result.factor, U, space=space)
    if out is not None and out[1] > ROUNDING_FLOOR:
        out = restore_at_lower_rank(gp, result.factor, U, ROUNDING_FLOOR, space=space,
                                    max_flops=_restoration_flops(opts))
    if out is None or out[1] > ROUNDING_FLOOR:
        record["restored"] = False
        return result
    V, infeas = out[0], out[1]
    new = _with_point(result, V, infeas, opts, space)
    record.update(restored=True, rank=V.shape[1], infeasibility=infeas, objective=new.objective)
    logger.info("LOWRANK: the point lay below its own bound (residual %.2g); restored onto "
                "the constraints at rank %d: objective %.8g -> %.8g, residual %.2g",
                result.infeasibility, V.shape[1], result.objective, new.objective, infeas)
    return new


def _refuse_stalled_on_face(gp: GramProblem, result, opts: LowRankOptions, extra: dict,
                            formulation) -> None:
    r"""Raise :class:`SolverFailedError` where the point restored onto an exposed face is
    still off the constraints by more than ``tol**2`` (relative): Gauss-Newton stalled
    there, a sign that the constraints on the face are degenerate too (no strictly
    feasible point on the face either). Without a strictly feasible point a residual
    :math:`r` can buy an objective about :math:`\sqrt r` below the optimum (the module
    docstring of :mod:`~sdpembed.lowrank.face`), outside any gap the point and its bound
    state, so the point is a result only where :math:`\sqrt r` is within the accuracy asked,
    ``tol``. The error carries the point and the bound."""
    face = extra.get("face")
    lower = (face or {}).get("lower_rank") or {}
    signed = (bound_gap(result.objective, result.bound, objective_scale(gp, result.factor))
              if lower.get("rank") else None)
    if signed is not None and signed > FAR_FROM_OPTIMAL:
        raise SolverFailedError(
            f"LOWRANK on {formulation.method} ({formulation.variant or ''}): the distance "
            f"equalities leave no strictly feasible point, not even on the face that "
            f"{face['cliques']} clique(s) expose (a further face the cliques do not expose, "
            "e.g. a part of the graph rigid in the data's dimension); the restoration there "
            f"stalled at {lower['infeasibility_before']:.2g}, and the point restored at rank "
            f"{lower['rank']} is feasible (residual {lower['infeasibility']:.2g}) but its "
            f"objective {result.objective:.6g} lies {signed:.3g} (relative) above the "
            f"certified lower bound {result.bound:.6g}, above {FAR_FROM_OPTIMAL:g}: the "
            "optimum lies between the two, and the point is not a solution. More time does "
            "not remove the degeneracy: solve with a conic backend (CSDP, CLARABEL) and check "
            "its status." + rigidity_note(gp.distances), objective=float(result.objective),
            bound=result.bound, gap=result.certified_gap, point=result.factor)
    if not face or not face.get("restored") or not result.infeasibility > opts.tol ** 2:
        return
    # where the loop stopped on the stalled-violation rule (rigid.py) more time is no help
    more_time = ("" if result.stop_reason == RIGID_STOP else
                 ", or raise time_limit" + _more_time_on_face(
                     face.get("solve") or {}, gp.n <= min(opts.dense_limits.eig, EXACT_CHECK)))
    raise SolverFailedError(
        f"LOWRANK on {formulation.method} ({formulation.variant or ''}): the distance "
        f"equalities leave no strictly feasible point ({face['cliques']} clique(s) expose a "
        "face), and the point restored onto that face still violates the constraints by "
        f"{result.infeasibility:.2g} (relative), above tol**2 = {opts.tol ** 2:.2g}: the "
        "constraints are degenerate on the face too, and such a point's objective can lie "
        "below the optimum by about the square root of its violation, outside its stated "
        "gap. It is not a solution. Solve with a conic backend (CLARABEL, CSDP) and check "
        f"its status{more_time}." + rigidity_note(gp.distances),
        objective=float(result.objective), bound=result.bound, gap=result.certified_gap,
        point=result.factor)


def _more_time_on_face(solve: dict, shared: bool) -> str:
    """What a larger ``time_limit`` buys where the point restored onto an exposed face is
    refused: the face solve where it did not run; where it ran, a longer full solve (its
    share ``_FULL_SHARE`` of the limit where ``shared``), whose point may then restore
    within ``tol**2`` with no face solve, and a longer face solve."""
    if not solve.get("ran"):
        return " (LOWRANK then also solves on the face)"
    stalled = (f", its point restored to {solve['infeasibility']:.2g}"
               if solve.get("infeasibility") is not None else "")
    share = f" (it has {_FULL_SHARE:.0%} of the limit)" if shared else ""
    return (f": the face solve ran here ({solve.get('iterations')} outer iterations, stop "
            f"reason {solve.get('stop_reason')!r}{stalled}); a longer limit gives the full "
            f"solve{share} more time to end nearer the face, where its point may restore "
            "within tol**2 with no face solve, and the face solve more time too")




def _refuse_diverged_without_point(gp: GramProblem, result, opts: LowRankOptions,
                                   formulation) -> None:
    """Raise :class:`SolverFailedError` where the outer loop stopped because its factor grew
    without bound (``"unbounded"``, stop reason ``"diverged"``) but no point is verified to
    meet the added rows exactly (:func:`~sdpembed.lowrank.solve.rows_point`): the growth
    shows a direction along which the objective falls and the rows' homogeneous parts hold,
    which makes the problem unbounded only if it is feasible, and a point within
    ``feas_tol`` only does not exclude a problem infeasible by less than that."""
    if result.status != "unbounded" or result.stop_reason != "diverged" \
            or gp.constraints is None:
        return
    point = rows_point(gp, opts.feas_tol)
    if point == "exact":
        return
    found = {"near": "a point meets the added constraints within the feasibility tolerance "
                     f"{opts.feas_tol:g} but none was verified to meet them exactly",
             "none": "no point meets the added constraints within the feasibility "
                     f"tolerance {opts.feas_tol:g}"}.get(
        point, "no point was found that meets the added constraints")
    raise SolverFailedError(
        f"LOWRANK on {formulation.method} ({formulation.variant or ''}): the embedding grew "
        "without bound (the objective falls along a direction that keeps the added "
        f"constraints' homogeneous parts), but {found} (a small semidefinite program on the "
        "points they touch): the problem is unbounded only if it is feasible, and it may be "
        f"infeasible{' by less than that tolerance' if point == 'near' else ''}. Check that "
        "the added constraints can hold together with a conic backend "
        f"({conic_alternatives()}; an 'unbounded' verdict of theirs also means only that "
        "such a direction exists), or loosen them.")


def _classify_infeasible(gp: GramProblem, basis, result, opts: LowRankOptions,
                         formulation) -> None:
    """Raise :class:`InfeasibleError` when the solve ended at an infeasible point (or said
    ``"infeasible"``) and its multipliers give a verified Farkas certificate
    (:func:`~sdpembed.lowrank.farkas.farkas_certificate`); raise
    :class:`SolverFailedError` when LOWRANK's own test said infeasible but the proof does not
    verify. Otherwise return: the point is judged by :func:`sdpembed.solve_status.check_result`."""
    if result.status in ("optimal", "unbounded"):
        return
    below_bound = (result.bound is not None and np.isfinite(result.objective)
                   and result.objective < result.bound)
    if result.status != "infeasible" and not below_bound \
            and not result.infeasibility > max(opts.feas_tol, 1e-9):
        return
    cert = farkas_certificate(gp, basis, result.y, result.nu)
    where = f"LOWRANK on {formulation.method} ({formulation.variant or ''})"
    if cert is not None:
        hint = formulation.meta.get("infeasible_hint",
                                    "check that the constraints can hold together")
        raise InfeasibleError(f"{where}: the problem is infeasible, proved by a "
                              f"{cert.describe()}. {hint}")
    if result.status == "infeasible":
        raise SolverFailedError(
            f"{where} could not reach feasibility (relative infeasibility "
            f"{result.infeasibility:.3g}) and its multipliers suggest the problem is infeasible, "
            "but their Farkas certificate does not verify. The problem may be infeasible: "
            "CLARABEL, CSDP, SDPA or MOSEK prove infeasibility (solve(f, solver='CLARABEL'))."
            + rigidity_note(gp.distances),
            objective=result.objective, point=result.factor)


def _version() -> str:
    from .._version import __version__

    return f"sdpembed {__version__}"


def _refusal(formulation) -> str | None:
    """Why LOWRANK cannot solve ``formulation`` as posed (``None`` if it can); no solving."""
    try:
        gp, _, _ = _formulation_problem(formulation)
        if gp.ratio is not None:
            return "the ratio constraint (eq. 11) is not supported"
    except InputError as exc:
        return str(exc)
    return None


#: the entry of :data:`sdpembed.solvers.TOOLKIT_BACKENDS`
BACKEND = Backend(BACKEND_NAME, _solve_backend, version=_version, refusal=_refusal)

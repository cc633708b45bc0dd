"""LOWRANK's route onto the face that rank-deficient equality cliques expose
(:mod:`~sdpembed.lowrank.face`): the result's point restored onto it, at a lower rank where
the restoration stalls, and the solve continued on it where neither is certified; the
backend (:mod:`~sdpembed.lowrank.backend`) calls :func:`_on_exposed_face`."""

from __future__ import annotations

import dataclasses
import logging
import time

import numpy as np

from ..formulations.gram import GramProblem
from .certificate import relative_gap
from .face import (
    DENSE_JACOBIAN,
    ROUNDING_FLOOR,
    exposing_vectors,
    face_basis,
    face_certificate,
    restore_at_lower_rank,
    restore_on_face,
)
from .options import LowRankOptions
from .rigid import STOP_REASON as RIGID_STOP
from .rigid import proven_stall
from .solve import lowrank_solve
from .space import FactorSpace

logger = logging.getLogger(__name__)


def _on_exposed_face(gp: GramProblem, result, opts: LowRankOptions, extra: dict,
                     nulls: list[tuple[list[int], int, np.ndarray]], deadline: float):
    """The result moved onto the face that rank-deficient equality cliques expose
    (:mod:`~sdpembed.lowrank.face`), its objective and gap re-evaluated there; unchanged
    where no clique exposes one. Not restored where the restoration's Jacobian is too
    large to factor densely or the exposing vectors too many to orthonormalise densely:
    such a point may lie below the optimum by
    about the square root of its residual (no strictly feasible point), outside the
    interval its bound and objective state: it is reported ``optimal_inaccurate`` and
    ``extra["face"]`` says why. A restored point still off the constraints by more than
    ``tol**2`` is restored at a lower rank first (:func:`_lower_rank_on_face`); where that
    point's gap against the full solve's bound is within ``tol`` it is the result, with no
    face solve. After a stall the cliques proved
    (:func:`~sdpembed.lowrank.rigid.proven_stall`) the face solve is not run either (it
    stalls too): the point restored at a lower rank is the result. Otherwise (a gap that
    misses ``tol``, a point that stays off) the solve goes on on the face
    (:func:`_solve_on_face`) and its point is restored at a lower rank where it too stays
    off. ``nulls``: the cliques' null vectors
    (:func:`~sdpembed.lowrank.face.clique_null_vectors`, found once: the face solve's
    certificate needs them too); ``deadline``: the solve's end by its time limit (a
    :func:`time.perf_counter` time)."""
    U, cliques = exposing_vectors(gp, nulls)
    if not cliques:
        return result
    extra["face"] = {"cliques": len(cliques), "objective_before": float(result.objective)}
    if U is None:
        return _unrestored(result, extra, f"{len(cliques)} cliques expose a face whose "
                           "vectors are too many to orthonormalise densely")
    F = result.factor
    off = float(np.linalg.norm(U.T @ F) / max(np.linalg.norm(F), 1e-300))
    extra["face"].update(exposing_vectors=U.shape[1], off_face=off)
    space = FactorSpace(gp)
    restored = restore_on_face(gp, F, U, space=space)
    if restored is None:
        return _unrestored(result, extra, "the restoration's Jacobian would exceed "
                           f"{DENSE_JACOBIAN:,} entries")
    V, infeas = restored
    before, result = result.objective, _with_point(result, V, infeas, opts, space)
    extra["face"].update(restored=True, infeasibility=infeas, objective=result.objective)
    logger.info("LOWRANK: %d clique(s) expose a face; the point, %.2g off it, restored "
                "onto it: objective %.8g -> %.8g, infeasibility %.2g", len(cliques), off,
                before, result.objective, infeas)
    if result.status == "optimal" and infeas <= opts.tol ** 2:
        return result
    # a point feasible to rounding within tol of a valid bound needs no face solve (nor its
    # certificate's exact checks): the full solve's bound is a bound of the original problem
    lower = _lower_rank_on_face(gp, result, opts, extra, nulls)
    if lower is not result and lower.status == "optimal":     # restored to rounding
        extra["face"]["solve"] = {"ran": False, "reason": "certified at a lower rank"}
        return lower
    if infeas > opts.tol ** 2 and proven_stall(result):   # the face solve stalls too
        extra["face"]["solve"] = {"ran": False, "reason": "the loop's stall proven"}
        return lower
    tried = extra["face"].pop("lower_rank", None)
    solved = _solve_on_face(gp, result, U, nulls, opts, extra, space, deadline)
    if tried is None or solved.factor is not result.factor:
        return _lower_rank_on_face(gp, solved, opts, extra, nulls)
    # the same point as tried above: its restoration at a lower rank is not repeated, only
    # re-evaluated against the bound the face solve may have raised
    extra["face"]["lower_rank"] = tried
    if tried["rank"] is None:
        return solved
    return _with_point(solved, lower.factor, lower.infeasibility, opts, space)


#: the face solve's tolerance, relative to the solve's: the lift to the full space
#: (:func:`~sdpembed.lowrank.face.face_certificate`) and the restoration each cost a little
_FACE_TOL = 0.25

#: where cliques expose a face (up to ``EXACT_CHECK`` points, where the face solve can
#: certify), the full solve's share of the time limit; the face solve has the rest
_FULL_SHARE = 0.5

#: the face solve needs at least this many seconds, and this share, of the solve's time
#: limit left (its outer iterations are checked against the limit only between them)
_FACE_MIN_SECONDS = 1.0
_FACE_MIN_SHARE = 0.2

#: the share of the time left that the face solve leaves to its certificate's exact checks
#: (:func:`~sdpembed.lowrank.face.face_certificate`, about 0.02–0.8 s each up to 60 points)
_FACE_CHECK_SHARE = 0.2


def _solve_on_face(gp: GramProblem, result, U: np.ndarray,
                   nulls: list[tuple[list[int], int, np.ndarray]], opts: LowRankOptions,
                   extra: dict, space: FactorSpace, deadline: float):
    r"""Continue the solve on the face :math:`\{QZQ^T : Z \succeq 0\}` from the restored point
    (:func:`~sdpembed.lowrank.face.face_basis`; ``lowrank_solve(gp, basis=Q)``), where the
    restricted problem has a strictly feasible point (the cliques' faces were the reason
    it had none) and its multipliers converge; its point, restored onto the constraints,
    replaces the result's where it is lower, or where the result's was restored to no
    better than ``tol**2`` and this one further; its multipliers give a bound of the
    *original* problem by :func:`~sdpembed.lowrank.face.face_certificate` (the restricted
    problem's own bound would need the face to be exact). The higher of that bound and
    the result's is reported; ``optimal`` only where its gap is within ``tol`` and the
    point within ``feas_tol``. Runs only up to ``DenseLimits.eig`` points (dense blocks)
    and while ``_FACE_MIN_SECONDS`` and ``_FACE_MIN_SHARE`` of the time limit are left
    before ``deadline`` (the whole solve's, restoration included); it leaves
    ``_FACE_CHECK_SHARE`` of that time to the certificate's exact checks, which stop at
    ``deadline`` too; ``extra["face"]["solve"]`` records what happened."""
    left = deadline - time.perf_counter()
    if gp.n > opts.dense_limits.eig or left < max(_FACE_MIN_SECONDS,
                                                   _FACE_MIN_SHARE * opts.time_limit):
        extra["face"]["solve"] = {"ran": False, "reason": (
            f"n = {gp.n} > {opts.dense_limits.eig}" if gp.n > opts.dense_limits.eig
            else f"{left:.2g} s of the time limit left")}
        if gp.n <= opts.dense_limits.eig:
            extra["skipped"].append("face solve")
        return result
    t0 = time.perf_counter()
    Q = face_basis(U)
    sub = lowrank_solve(gp, basis=Q, options=dataclasses.replace(
        opts, warm_start=result.factor, reduced_solver="alm",
        time_limit=(1.0 - _FACE_CHECK_SHARE) * left,
        tol=opts.tol * _FACE_TOL,
        warm_multipliers=(None if result.y is None else (np.asarray(result.y),
                                                         np.asarray(result.nu)))))
    record = {"ran": True, "status": sub.status, "objective": float(sub.objective),
              "iterations": sub.iterations, "stop_reason": sub.stop_reason}
    extra["face"]["solve"] = record
    extra["skipped"] += [f"face solve's {what}" for what in sub.skipped]
    best = result
    if sub.status in ("optimal", "optimal_inaccurate") and np.isfinite(sub.objective):
        restored = restore_on_face(gp, sub.factor, U, space=space)
        if restored is not None:
            V, infeas = restored
            p = float(np.sum(V * space.apply_C(V)))
            record.update(objective_restored=p, infeasibility=infeas,
                          infeasibility_before=sub.infeasibility, face_bound=sub.bound)
            lower = infeas <= max(opts.feas_tol, result.infeasibility) and p < result.objective
            # a point restored to no better than tol**2 is refused (_refuse_stalled_on_face):
            # the face solve's point replaces it where it restores further
            nearer = result.infeasibility > opts.tol ** 2 and infeas < result.infeasibility
            if lower or nearer:
                best = dataclasses.replace(result, factor=V, objective=p, infeasibility=infeas)
        cert = face_certificate(gp, Q, U, nulls, sub.y, sub.nu, deadline=deadline,
                                skipped=extra["skipped"], floor=result.bound)
        if cert is not None:
            record.update(bound=cert.bound, certificate=cert.describe())
            if result.bound is None or cert.bound > result.bound:
                best = dataclasses.replace(best, bound=cert.bound)
                extra["certificate"] = cert.describe()
                extra["certificate_check"] = "exact"
                extra["lower_bound"] = cert.bound
    gap = relative_gap(best.objective, best.bound)
    status = ("optimal" if gap is not None and gap <= opts.tol
              and best.infeasibility <= opts.feas_tol else "optimal_inaccurate")
    record["seconds"] = time.perf_counter() - t0
    logger.info("LOWRANK: solved on the face: objective %.8g, bound %s, gap %s",
                best.objective, best.bound, gap)
    return dataclasses.replace(
        best, certified_gap=gap, status=status, seconds=result.seconds + record["seconds"],
        estimated_gap=(None if best.estimated_bound is None
                       else relative_gap(best.objective, best.estimated_bound)))


#: the share of the time limit the restorations at lower ranks may take, as an estimate
#: of their dense flops at ``_NOMINAL_FLOPS`` a second (the first rank is always tried):
#: estimated, not measured on the clock, so that the result does not depend on the load
_LOWER_RANK_SHARE = 0.05
_NOMINAL_FLOPS = 1e10


def _restoration_flops(opts: LowRankOptions) -> float:
    """The dense flops the restorations at lower ranks may spend: ``_LOWER_RANK_SHARE`` of
    ``time_limit`` at ``_NOMINAL_FLOPS`` a second (a count of work, not a clock reading)."""
    return _LOWER_RANK_SHARE * _NOMINAL_FLOPS * opts.time_limit


def _lower_rank_on_face(gp: GramProblem, result, opts: LowRankOptions, extra: dict,
                        nulls: list[tuple[list[int], int, np.ndarray]]):
    r"""Where the point restored onto an exposed face is still off the constraints by more
    than ``tol**2`` (Gauss-Newton stalled: the constraints are degenerate on the face too),
    the point restored from its factor cut to a lower rank
    (:func:`~sdpembed.lowrank.face.restore_at_lower_rank`, from the largest rank of a
    clique's block) replaces it where one restores to rounding
    (:data:`~sdpembed.lowrank.face.ROUNDING_FLOOR`); its objective and gap are re-evaluated
    against the result's bound. ``extra["face"]["lower_rank"]`` records
    what happened. Where the face solve stopped on the stalled-equality rule (rows rigid
    in the data's dimension) only that first rank is tried: the ranks above stall too, and
    their budget would grow with ``time_limit``."""
    face = extra.get("face")
    if not face or not face.get("restored") or not result.infeasibility > opts.tol ** 2:
        return result
    U, _ = exposing_vectors(gp, nulls)
    first = max((rank for _, rank, _ in nulls), default=1)
    out = restore_at_lower_rank(gp, result.factor, U, ROUNDING_FLOOR, first=first,
                                max_flops=(0.0 if result.stop_reason == RIGID_STOP
                                           else _restoration_flops(opts)))
    if out is None:
        face["lower_rank"] = {"rank": None}
        return result
    V, infeas, k = out
    new = _with_point(result, V, infeas, opts, FactorSpace(gp))
    face["lower_rank"] = {"rank": k, "infeasibility": infeas, "objective": new.objective,
                          "objective_before": float(result.objective),
                          "infeasibility_before": float(result.infeasibility)}
    logger.info("LOWRANK: the restoration on the face stalled at %.2g; at rank %d the point "
                "restores to %.2g, objective %.8g -> %.8g", result.infeasibility, k, infeas,
                result.objective, new.objective)
    return new


def _with_point(result, V: np.ndarray, infeas: float, opts: LowRankOptions,
                space: FactorSpace):
    """``result`` with the restored point ``V`` (residual ``infeas``) in place of its own,
    its objective and its gap against the result's bound re-evaluated (no gap where the
    result has no certified bound): ``optimal`` where the gap is at most ``tol`` and
    ``infeas`` at most ``feas_tol``."""
    p = float(np.sum(V * space.apply_C(V)))
    certified = result.certified_gap is not None and result.bound is not None
    gap = relative_gap(p, result.bound) if certified else None
    status = ("optimal" if gap is not None and gap <= opts.tol and infeas <= opts.feas_tol
              else "optimal_inaccurate")
    return dataclasses.replace(
        result, factor=V, objective=p, infeasibility=infeas, status=status,
        certified_gap=gap,
        estimated_gap=(None if result.estimated_bound is None
                       else relative_gap(p, result.estimated_bound)))



def _unrestored(result, extra: dict, why: str):
    """``result`` as ``optimal_inaccurate``, ``extra["face"]`` naming why it was not restored
    onto the face its cliques expose."""
    extra["face"].update(restored=False, reason=why)
    logger.info("LOWRANK: point not restored onto the exposed face: %s", why)
    if result.status != "optimal":
        return result
    return dataclasses.replace(result, status="optimal_inaccurate")



r"""Equality distances without a strictly feasible point beyond what cliques expose: one
step of facial reduction by an auxiliary semidefinite program.

With ``distances="equality"`` on data of low dimension a graph can be (numerically)
universally rigid without any rank-deficient clique (:mod:`~sdpembed.lowrank.face`): every
feasible Gram matrix then lies in a proper face of the PSD cone on :math:`\mathbf 1^\perp`,
often of the data's own dimension, and the augmented Lagrangian's multipliers grow without
bound while its infeasibility falls as about :math:`1/k`. Facial reduction (Borwein &
Wolkowicz, "Facial reduction for a cone-convex programming problem", J. Austral. Math.
Soc. 30, 1981; Krislock & Wolkowicz, SIAM J. Optim. 20, 2010) finds the face: by the
theorem of the alternative, the rows :math:`\langle a_ea_e^T, G\rangle = \bar D_e`,
:math:`G \succeq 0` on :math:`\mathbf 1^\perp` have no positive definite solution exactly
when some

.. math::

    W = \sum_e z_e a_ea_e^T \succeq 0,\quad W \ne 0,\quad z^T\bar D = 0

exists, and then :math:`\langle W, G\rangle = z^T\bar D = 0` gives :math:`GW = 0` for every
feasible :math:`G`: the feasible set lies in :math:`\{QRQ^T : R \succeq 0\}`, :math:`Q` a
basis of :math:`W`'s null space on :math:`\mathbf 1^\perp`.

:func:`reduce_face` finds :math:`z` by the auxiliary problem

.. math::

    \min_z\ \bar D^Tz \quad\text{s.t.}\quad P^T\Big(\sum_e z_ea_ea_e^T\Big)P \succeq 0,
    \quad -1 \le z \le 1

(:math:`P` an orthonormal basis of :math:`\mathbf 1^\perp`; :math:`z = \mathbf 1` is
strictly feasible on a connected graph), whose optimum is 0 where feasible points exist;
a path-following method (:func:`~sdpembed.lowrank.lmi_lp.rank_one_lmi_lp`) tends to the
relative interior of its optimal set, a :math:`W` of the largest rank. The exposed
directions are :math:`W`'s eigenvectors above the largest gap of its spectrum, taken only
where that gap is at least :data:`GAP_RATIO` (the exposed part of the spectrum separates
from rounding by many orders of magnitude on exact data) and :math:`\bar D^Tz` is zero to
:data:`COST_RTOL`.

The face is a computed guess, not a proof, and nothing rests on it: a point solved on it
is restored onto the constraints (a point of the original problem, to rounding), and the
bound comes from the face's multipliers lifted to the original dual with :math:`tz`
added and checked in exact arithmetic (:func:`~sdpembed.lowrank.face.face_certificate`,
whose cost of an inexact :math:`z^T\bar D` is :math:`t\,z^T\bar D`). A face computed too
small only fails to certify.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from ..formulations.gram import GramProblem
from .certificate import relative_gap
from .face import ROUNDING_FLOOR, face_certificate, restore_on_face
from .lmi_lp import rank_one_lmi_lp
from .options import LowRankOptions
from .result import LowRankResult
from .solve import lowrank_solve
from .space import FactorSpace

__all__ = ["ReducedFace", "reduce_face", "solve_on_reduced_face", "GAP_RATIO", "COST_RTOL"]

logger = logging.getLogger(__name__)

#: the exposed eigenvalues of :math:`W` must exceed the face's by this factor (the largest
#: ratio of consecutive eigenvalues): a smaller gap is a nearly degenerate problem, not a face
GAP_RATIO = 1e6

#: :math:`\bar D^Tz` relative to :math:`\|\bar D\|\,\|z\|` at most this
COST_RTOL = 1e-10

#: the auxiliary problem's stopping tolerance and iteration cap
_TOL = 1e-10
_MAX_ITER = 100


@dataclass
class ReducedFace:
    r"""The face :math:`\{QRQ^T : R \succeq 0\}` that :math:`W = \sum_e z_ea_ea_e^T`
    exposes (:func:`reduce_face`)."""

    U: np.ndarray            # n x q, orthonormal exposed directions, U^T 1 = 0
    Q: np.ndarray            # n x r, orthonormal basis of the face, [1/sqrt(n), U, Q] square
    z: np.ndarray            # the edges' coefficients of W
    ratio: float             # the spectral gap that separated U from Q
    cost: float              # D^T z / (|D| |z|)
    iterations: int
    factor: np.ndarray = field(repr=False, default=None)   # U sqrt(Lambda): W ~ factor factor^T

    def describe(self) -> dict:
        return {"exposed": int(self.U.shape[1]), "face_dimension": int(self.Q.shape[1]),
                "gap_ratio": float(self.ratio), "cost": float(self.cost),
                "iterations": int(self.iterations)}


def reduce_face(gp: GramProblem) -> ReducedFace | None:
    r"""The face of the PSD cone on :math:`\mathbf 1^\perp` that the equality rows'
    exposing matrix :math:`W` of largest rank exposes (module docstring), or ``None``
    (distances not equalities, no spectral gap of :data:`GAP_RATIO`, a cost above
    :data:`COST_RTOL`, or nothing exposed). Dense: :math:`O(m^3)` an iteration for
    :math:`m` edges; the caller bounds the size."""
    if gp.distances != "equality":
        return None
    n = gp.n
    edges = np.asarray(gp.edges)
    target = np.asarray(gp.target, dtype=float)
    m = edges.shape[0]
    if n < 3 or m == 0:
        return None
    # an orthonormal basis of 1-perp (the centring row is a face already)
    P = np.linalg.qr(np.full((n, 1), 1.0), mode="complete")[0][:, 1:]
    B = P[edges[:, 0]] - P[edges[:, 1]]                     # rows P^T a_e
    r = n - 1
    with threadpool_limits(limits=1, user_api="blas"):
        res = rank_one_lmi_lp(np.zeros((r, r)), B, target, -np.ones(m), np.ones(m),
                              tol=_TOL, max_iter=_MAX_ITER)
        z = res.d
        W = B.T @ (z[:, None] * B)
        ev, V = np.linalg.eigh(0.5 * (W + W.T))
    ev, V = ev[::-1], V[:, ::-1]
    if not ev[0] > 0:
        return None
    cost = float(target @ z) / max(float(np.linalg.norm(target) * np.linalg.norm(z)), 1e-300)
    if abs(cost) > COST_RTOL or ev[-1] < -GAP_RATIO ** -1 * ev[0]:
        return None
    floor = max(abs(float(ev[-1])), np.finfo(float).eps * float(ev[0]))
    ratios = ev[:-1] / np.maximum(ev[1:], floor)
    j = int(np.argmax(ratios))
    if not ratios[j] >= GAP_RATIO:
        return None
    q = j + 1
    U, Q = P @ V[:, :q], P @ V[:, q:]
    return ReducedFace(U=U, Q=Q, z=z, ratio=float(ratios[j]), cost=cost,
                       iterations=res.iterations, factor=U * np.sqrt(ev[:q]))


#: the face solve's tolerance, relative to the solve's (the lift and the restoration cost
#: a little), and its share of the time limit (the full solve has the rest where it fails)
_FACE_TOL = 0.25
_FACE_SHARE = 0.5


def solve_on_reduced_face(gp: GramProblem, rf: ReducedFace, opts: LowRankOptions,
                          record: dict, deadline: float) -> LowRankResult | None:
    r"""The solve on the face ``rf`` from the start (``lowrank_solve(gp, basis=rf.Q)``),
    where the restricted problem has a strictly feasible point; its point restored onto the
    constraints (on the face, :func:`~sdpembed.lowrank.face.restore_on_face`, or where that
    stops above :data:`~sdpembed.lowrank.face.ROUNDING_FLOOR`, the face being a computed
    one, in the whole space from the same factor; the nearer of the two) and its
    multipliers lifted to a bound of the *original* problem
    (:func:`~sdpembed.lowrank.face.face_certificate` with ``rf``'s exposing matrix, the
    multipliers of least norm and of least cross block, the higher bound taken). The result
    keeps the face solve's multipliers (bounded, where the lifted ones carry :math:`tz`
    with a large :math:`t`): they price its rows' violations
    (:func:`~sdpembed.lowrank.row_worth.row_price`) as the clique route's full-solve
    multipliers do. Returns the result, ``optimal``, only where the gap is within ``tol``
    and the point within ``feas_tol``; otherwise ``None`` (the caller solves as without the
    face) with ``record`` saying why. ``deadline``: a :func:`time.perf_counter` time."""
    t0 = time.perf_counter()
    sub = lowrank_solve(gp, basis=rf.Q, options=dataclasses.replace(
        opts, tol=opts.tol * _FACE_TOL, time_limit=_FACE_SHARE * opts.time_limit))
    record.update(status=sub.status, iterations=sub.iterations, stop_reason=sub.stop_reason)
    if sub.status not in ("optimal", "optimal_inaccurate") or not np.isfinite(sub.objective) \
            or sub.y is None:
        record["seconds"] = time.perf_counter() - t0
        return None
    space = FactorSpace(gp)
    best = None
    for U in (rf.U, np.zeros((gp.n, 0))):            # on the face; else in the whole space
        out = restore_on_face(gp, sub.factor, U, space=space)
        if out is not None and (best is None or out[1] < best[1]):
            best = out
        if best is not None and best[1] <= ROUNDING_FLOOR:
            break
    if best is None:
        record.update(reason="not restored", seconds=time.perf_counter() - t0)
        return None
    V, infeas = best
    p = float(np.sum(V * space.apply_C(V)))
    skipped: list[str] = []
    cert = None
    for cross in (False, True):
        c = face_certificate(gp, rf.Q, rf.U, [], sub.y, sub.nu, deadline=deadline,
                             skipped=skipped, exposer=(rf.z, rf.factor), cross=cross)
        if c is not None and (cert is None or c.bound > cert.bound):
            cert = c
    gap = None if cert is None else relative_gap(p, cert.bound)
    record.update(objective=p, infeasibility=infeas, gap=gap,
                  seconds=time.perf_counter() - t0)
    if gap is None or not (gap <= opts.tol and infeas <= opts.feas_tol):
        record["reason"] = "no bound" if gap is None else "not certified"
        return None
    logger.info("LOWRANK: solved on the face that facial reduction exposes (%d of %d "
                "directions): objective %.8g, bound %.8g, gap %.2g", rf.U.shape[1],
                gp.n - 1, p, cert.bound, gap)
    record["certificate"] = cert.describe()
    return dataclasses.replace(
        sub, factor=V, objective=p, infeasibility=infeas, bound=cert.bound,
        certified_gap=gap, status="optimal", estimated_gap=None, stop_reason="certified")

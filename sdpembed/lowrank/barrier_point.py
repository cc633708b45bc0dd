r"""The ``"interval"`` dual barrier's primal point, as a factor the outer loop can certify.

Every step of :func:`~sdpembed.lowrank.dual_barrier.dual_barrier` estimates a primal point,
:math:`X = \mu S^+` or the dual-scaling :math:`X = \mu S^+(S - \Delta S)S^+` (Benson, Ye &
Zhang 2000; :math:`S^+` the inverse of the slack on :math:`\mathbf 1^\perp`), and stops once
the smallest objective of these is within its ``rel_gap`` of its dual value. Every centred
:math:`X \succeq 0` is feasible for the ``"interval"`` problem (the distances are
penalised, not constrained), so that point and the barrier's multipliers are a primal-dual
pair whatever the augmented Lagrangian's iterate is. :func:`barrier_factor` rebuilds the
best estimate from the step that gave it (one n x n inverse) and returns it as a factor
:math:`F` with :math:`FF^T \approx X`: its leading eigenpairs, as few as keep the
objective within ``budget`` of the full point's (an interior point has full rank, the
optimum's rank is far lower; any truncation is still feasible), either as it is or with
the edges it moved off the kink of the penalty moved back onto it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from .barrier_path import _slack_cholesky
from .penalty import DistancePenalty
from .repair import restore_feasibility
from .space import FactorSpace

__all__ = ["BarrierPair", "barrier_factor", "objective_of"]


#: a truncation whose objective is within this share of the full point's (relative) has
#: its edges moved back onto the kink (:func:`~.repair.restore_feasibility`), those within
#: ``_RESTORE_KINK`` of it: the tail dropped shortens every edge, by more than the
#: iterates' kink tolerance (docs/tuning.md, "usps300-tangent-k5, swiss400-dvu-k6 and
#: ionosphere")
_RESTORE_FROM = 0.1
_RESTORE_KINK = 1e-3


#: :func:`barrier_factor` keeps the eigenpairs of the point above this multiple of its most
#: negative eigenvalue's size: the point is positive semidefinite, so that size is a lower
#: bound on the rebuild's rounding error, whose eigenpairs below it are noise that moves the
#: edges (docs/tuning.md, "The barrier's rebuilt point cut at its noise")
_NOISE_CUT = 2.0


def _noise_cut(lam: np.ndarray, n: int) -> float:
    r"""The eigenvalue below which :func:`barrier_factor` drops the point's eigenpairs:
    :math:`n\,\epsilon\,\lambda_{\max}` (rounding) or ``_NOISE_CUT`` times
    :math:`|\lambda_{\min}|` where the point, positive semidefinite as built, came out with
    a negative eigenvalue (its rebuild's error is at least that large), the larger."""
    return max(n * np.finfo(float).eps * max(float(lam.max()), 0.0),
               _NOISE_CUT * max(-float(lam.min()), 0.0))


def objective_of(space: FactorSpace, pen: DistancePenalty, F: np.ndarray) -> float:
    r"""The ``"interval"`` objective :math:`\langle \tilde C, FF^T\rangle + \sum_e
    w_e|D_e - \bar D_e|` of the centred points ``F`` (full space, no SNR or added rows)."""
    quad = float(np.sum(F * space.apply_C(F)))
    Z = space.diffs(F)
    return quad + pen.objective(np.einsum("ij,ij->i", Z, Z))


def _centred(A: np.ndarray) -> np.ndarray:
    """:math:`JAJ` with :math:`J = I - \\mathbf 1\\mathbf 1^T/n`."""
    A = A - A.mean(axis=0)[None, :]
    return A - A.mean(axis=1)[:, None]


def barrier_factor(space: FactorSpace, pen: DistancePenalty, y: np.ndarray, mu: float,
                   dy: np.ndarray | None, scale: float, nu0: np.ndarray, k0: int,
                   budget: float,
                   X: np.ndarray | None = None) -> tuple[np.ndarray, float] | None:
    r"""``(F, p)``: the barrier's primal estimate at multipliers ``y``, weight ``mu`` and
    (``dy`` not ``None``) Newton step ``dy`` (the dual-scaling point; else :math:`\mu S^+`),
    as its ``k`` leading eigenpairs, ``k`` the first of ``k0``, ``2 k0``, ... whose
    objective ``p`` is within ``budget`` of the full point's, as they are or moved back
    onto the kink (:func:`~.repair.restore_feasibility`, where they are within
    ``_RESTORE_FROM`` of it; at the end all eigenpairs
    above the rebuild's noise, :func:`_noise_cut`: the full point is these too); ``None``
    where the slack is not positive definite at ``y`` (rounding).
    ``scale``: the multiple of :math:`\mathbf 1\mathbf 1^T/n` added to the slack by
    :func:`~.barrier_path._slack_cholesky`. ``X``: the primal point itself (n x n, the
    primal–dual path's, :func:`~.pd_barrier.pd_path`; centred here) instead of the
    estimate rebuilt from ``y``, ``mu`` and ``dy``."""
    n = space.dim
    if X is not None:
        X = _centred(0.5 * (X + X.T))
    else:
        fac = _slack_cholesky(space, y, nu0, scale)
        if fac is None:
            return None
        Li = sla.solve_triangular(fac[0], np.eye(n), lower=True, check_finite=False)
        Sp = _centred(Li.T @ Li)            # S^+ on 1-perp
        X = Sp
        if dy is not None:
            ES = np.asarray(space.E @ Sp)   # m x n
            X = Sp - ES.T @ (dy[:, None] * ES)
        X = mu * 0.5 * (X + X.T)
    lam, U = np.linalg.eigh(X)
    order = np.argsort(lam)[::-1]
    lam, U = lam[order], U[:, order]
    pos = int(np.sum(lam > _noise_cut(lam, n)))
    if pos == 0:
        return None
    F_all = U[:, :pos] * np.sqrt(lam[:pos])
    p_all = objective_of(space, pen, F_all)
    k = max(1, min(k0, pos))
    while k < pos:
        F = space.project(F_all[:, :k])
        p = objective_of(space, pen, F)
        if p <= p_all + budget:
            return F, p
        if p - p_all <= _RESTORE_FROM * abs(p_all):
            # the dropped tail moved the edges on the kink off it: moved back
            F = restore_feasibility(space, pen, F, tol=1e-12, kink_tol=_RESTORE_KINK)[0]
            p = objective_of(space, pen, F)
            if p <= p_all + budget:
                return F, p
        k = min(2 * k, pos)
    return space.project(F_all), p_all


@dataclass
class BarrierPair:
    """The barrier's primal point ``points`` (centred, n x k) with its multipliers ``y``,
    ``nu`` and their dual value ``bound``, in the form the outer loop certifies
    (``_OuterLoop._barrier_pair``, as the equality barrier's), after the multipliers
    ``lead`` (the augmented Lagrangian's, the certificate's first candidate)."""

    points: np.ndarray
    y: np.ndarray
    nu: np.ndarray
    bound: float
    status: str
    iterations: int
    lead: list

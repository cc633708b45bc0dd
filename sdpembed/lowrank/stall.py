"""Rank growth where the outer loop's cheap gap stalls (:class:`StallGrowth`, a part of
:class:`~sdpembed.lowrank.outer._OuterLoop`) and the gaps that decide between growth and
a lift."""

from __future__ import annotations

import numpy as np

from .escape import _ESCAPE_BLOCK, _ESCAPE_RATIO, grow
from .space import _NULL_RTOL, FactorSpace, _sv_ratio

#: the lift of the multipliers is tried only once the unlifted certified gap is within
#: this factor of ``tol``, or when the factor is rank-deficient or at ``max_rank``; before,
#: a negative eigenvalue grows the rank (docs/tuning.md, "LOWRANK robustness")
_LIFT_GAP = 100.0
#: ... where the bottom eigenpairs are sparse (n > ``limits.eig``): up to this factor the
#: lift is tried before growing (docs/tuning.md, "The rank-growth decision at n = 2,500";
#: "The links row at seeds 0 and 3")
_LIFT_GAP_SPARSE = 500.0

#: rank growth on a stalled cheap gap (:meth:`StallGrowth._grow_on_stall`): outer iterations
#: between two growths, and the share of the best of the previous two cheap gaps the
#: current one must stay above to count as stalled
_STALL_WINDOW = 3
_STALL_RATIO = 0.5
#: ... and only above this cheap gap (where Newton-CG takes over and certificate attempts
#: with their own rank growth are near), except where the bottom eigenpairs are dense
#: (n <= ``DenseLimits.eig``): there down to ``_STALL_LOW`` times ``tol``, since between
#: that and the floor no attempt, hence no growth, comes while the gap stalls
#: (docs/tuning.md, "Moons and ionosphere")
_STALL_FLOOR = 1e-2
_STALL_LOW = 3.0
#: ... and, between ``tol`` and that floor, where no certificate attempt has come for this
#: many outer iterations (none since the last growth) and their best cheap gap stayed above
#: ``_STALL_RATIO`` times the best before them: a factor of too low a rank whose cheap gap
#: cycles just above ``tol`` (docs/tuning.md, "A rank-1 start cycling just above tol")
_STUCK_WINDOW = 10

#: where the bottom eigenpairs are sparse (n > ``DenseLimits.eig``), the rank grows (at a
#: certificate attempt, or on a stalled cheap gap) only from a saturated factor: its
#: smallest singular value above this share of its largest. Columns the subproblems leave
#: near zero are no missing dimension, and there a failed attempt's gap is mostly the
#: shifted bound's eigenvalue term, large for any negative eigenvalue (docs/tuning.md,
#: "Rank growth only from a saturated factor at n > limits.eig")
_SATURATED = 1e-3

#: where the bottom eigenpairs are dense (n <= ``DenseLimits.eig``: one ``eigh``, whose cost
#: hardly depends on how many pairs it returns) the stall growth reads this many bottom
#: eigenpairs and adds a column for every eigenvalue below ``_STALL_SHARE`` times the most
#: negative: the number of negative eigenvalues of the dual slack, short of those near
#: rounding, is the deficit (docs/tuning.md, "The stall growth sized by the negative
#: eigenvalues"); above, ``_ESCAPE_BLOCK`` pairs and ``_ESCAPE_RATIO``
_STALL_BLOCK = 64
_STALL_SHARE = 1e-3


def _null_direction(ratio: float) -> bool:
    """Whether a factor of singular-value ratio ``ratio`` (:func:`~.space._sv_ratio`) is
    rank-deficient: :func:`~.space._rank_deficient` from a ratio already computed."""
    return ratio <= _NULL_RTOL


def _saturated(space: FactorSpace, W: np.ndarray | None = None,
               ratio: float | None = None) -> bool:
    r"""Whether rank growth may start from ``W``: always where ``space.dim`` <=
    ``DenseLimits.eig``, else only if :math:`\sigma_{\min}(W) >` ``_SATURATED``
    :math:`\sigma_{\max}(W)` (``ratio``: that ratio, :func:`~.space._sv_ratio`, when already
    computed)."""
    if space.dim <= space.limits.eig:
        return True
    return (_sv_ratio(W) if ratio is None else ratio) > _SATURATED


class StallGrowth:
    """The outer loop's rank growth on a stalled cheap gap (:class:`~.outer._OuterLoop`
    inherits it; its attributes ``space``, ``opts``, ``W``, ``y``, ``nu``, ``it``,
    ``last_growth``, ``left_kink_at``, ``history``, ``k_viol``, ``cache``, ``alm``,
    ``sigma``, ``sigma_h``, ``rho``, ``lbfgs_hard`` and ``cheap_prev`` are the loop's)."""

    #: with added rows, the outer iteration that left the kink envelope (0: not left)
    left_kink_at = 0

    def _grow(self, vectors: list[np.ndarray], entry: dict) -> None:
        """Add one factor column along each of ``vectors`` (:func:`~.escape.grow`) and record it."""
        self.W = grow(self.alm, self.W, vectors, self.y, self.nu, self.sigma, self.sigma_h,
                      self.rho)
        entry["grew_rank"] = self.W.shape[1]
        self.last_growth, self.lbfgs_hard = self.it, False
        # the new columns are far from stationary: L-BFGS first (Newton-CG, capped at
        # max_newton steps, stalls there), Newton-CG again once the cheap gap is small
        self.cheap_prev = np.inf

    def _stalled(self, cheap_gap: float) -> bool:
        r"""Whether the cheap gap has stalled far from ``tol``: above ``_LIFT_GAP`` times
        ``tol`` and ``_STALL_FLOOR`` (where the bottom eigenpairs are dense, n <=
        ``DenseLimits.eig``: above ``_STALL_LOW`` times ``tol``), and above ``_STALL_RATIO``
        times the best of the two iterations before, at least ``_STALL_WINDOW`` outer
        iterations after the start, the last rank growth or (``left_kink_at``) the kink
        envelope's exit with added rows, whose gaps are not the Huber envelope's (full
        space only, below ``max_rank``), and never while added rows are violated beyond
        ``feas_tol``."""
        if self.space.Q is not None or self.W.shape[1] >= self.opts.max_rank \
                or self.it < max(self.last_growth, self.left_kink_at) + _STALL_WINDOW \
                or len(self.history) < 2:
            return False
        if self.k_viol > self.opts.feas_tol:
            # violated added rows stall the gap until their multipliers have grown (their
            # penalty's schedule), not for want of a dimension
            return False
        floor = _STALL_LOW * self.opts.tol if self.space.dim <= self.space.limits.eig \
            else max(_LIFT_GAP * self.opts.tol, _STALL_FLOOR)
        if not cheap_gap > floor:
            return cheap_gap > self.opts.tol and self._stuck()
        before = min(h["cheap_gap"] for h in self.history[-2:])
        return cheap_gap > _STALL_RATIO * before

    def _stuck(self) -> bool:
        """Whether the last ``_STUCK_WINDOW`` outer iterations, all after the last growth,
        made no certificate attempt and no cheap gap below ``_STALL_RATIO`` times the best
        of the iterations since the growth before them."""
        since = self.history[self.last_growth:]
        if len(since) <= _STUCK_WINDOW:
            return False
        recent, before = since[-_STUCK_WINDOW:], since[:-_STUCK_WINDOW]
        if any("lambda_min" in h for h in recent):
            return False
        return min(h["cheap_gap"] for h in recent) > \
            _STALL_RATIO * min(h["cheap_gap"] for h in before)

    def _grow_on_stall(self, entry: dict) -> bool:
        r"""Grow the rank along the negative eigenvectors of :math:`S(y,\nu)` at the current
        multipliers, when the cheap gap stalls (:meth:`_stalled`).

        A factor of lower rank than the optimum has no stationary point with multipliers
        that close the gap: the subproblems converge, the cheap gap stays put, and no
        certificate attempt, whose negative eigenvector would grow the rank, is ever made
        (docs/tuning.md, "LOWRANK robustness, dense graphs"). Not called after a subproblem
        L-BFGS left at ``max_inner``: its gap is that of an unfinished subproblem. The
        bottom eigenpairs at the current multipliers say whether and where: where
        ``space.dim`` <= ``DenseLimits.eig``, every eigenvalue of the bottom ``_STALL_BLOCK``
        below ``_STALL_SHARE`` times the most negative gives a column (the slack's negative
        eigenvalues short of rounding: the deficit at once, where a tenth of the most
        negative found two or three and the rank crept), above it every one of the bottom
        ``_ESCAPE_BLOCK`` below ``_ESCAPE_RATIO`` times it (:func:`~.escape.grow`), up to
        ``max_rank``. They are computed under the
        solve's time limit (:meth:`~.certificate.CertificateCache.bottom`): where a
        factorisation or the solves would end past it, the rank does not grow; nor, where
        ``space.dim`` > ``DenseLimits.eig``, from a factor that is not saturated
        (:func:`_saturated`). Returns whether the rank grew."""
        ratio = _sv_ratio(self.W)
        if _null_direction(ratio) or not _saturated(self.space, ratio=ratio):
            return False
        space = self.space
        dense = space.dim <= space.limits.eig
        k = min(_STALL_BLOCK if dense else _ESCAPE_BLOCK, space.dim - 2)
        share = _STALL_SHARE if dense else _ESCAPE_RATIO
        if k < 1:
            return False
        pairs = self.cache.bottom(space, self.y, self.nu, k)
        if pairs is None:          # a factorisation would end past the time limit
            return False
        lam, X = pairs
        room = self.opts.max_rank - self.W.shape[1]
        if not lam[0] < 0:
            return False
        self._grow([X[:, i] for i in range(lam.size) if lam[i] < share * lam[0]][:room], entry)
        entry["stall_lambda_min"] = float(lam[0])
        return True

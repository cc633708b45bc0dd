"""Certificate tries spaced by the lifts' trend above ``DenseLimits.eig``
(:class:`TrySpacing`, a part of :class:`~sdpembed.lowrank.outer._OuterLoop`)."""

from __future__ import annotations

import time

import numpy as np

#: n > ``DenseLimits.eig``: after two lifts, the best lifted gap still above ``_SPACE_MIN``
#: times ``tol`` (tol itself: the rule's own wait shrinks to one outer as the gap nears tol),
#: no try (refinement, certificate, lift, stall check) is made for
#: ``_SPACE_SHARE`` of the outer iterations the best gap's rate of fall between them needs
#: to reach ``tol`` (``_SPACE_CAP`` where it did not fall), at least one, at most
#: ``_SPACE_CAP``; never on the last outer iteration nor where the window would not fit
#: before the loop's deadline (docs/tuning.md, "usps2500-tangent-k8 on main, where its CPU
#: goes", "Spaced certificate tries at n > 800" and "Spaced tries down to tol")
_SPACE_MIN, _SPACE_SHARE, _SPACE_CAP = 1.0, 0.5, 4


class TrySpacing:
    """The outer loop's spacing of certificate tries (:class:`~.outer._OuterLoop` inherits
    it; its attributes ``it``, ``opts``, ``lifts``, ``next_try`` and ``loop_deadline`` are
    the loop's)."""

    def _spaced(self, t_sub: float) -> bool:
        """Whether this outer iteration makes no try: the lifts' trend cannot close yet,
        unless a limit would end the solve before the next one (the last outer iteration,
        or the window past the deadline at this outer iteration's cost since ``t_sub``)."""
        return self.it < min(self.next_try, self.opts.max_outer) and (
            self.loop_deadline - time.perf_counter()
            > (self.next_try - self.it + 1) * (time.perf_counter() - t_sub))

    def _space_tries(self, gap: float | None) -> None:
        """Record a lift's gap (the best so far); from the second on, the last above
        ``_SPACE_MIN`` tol, set ``next_try`` ``_SPACE_SHARE`` of the outer iterations the
        fall between the last two needs to reach ``tol`` ahead (between 1 and
        ``_SPACE_CAP``; ``_SPACE_CAP`` where it did not fall)."""
        if gap is None:
            return
        if self.lifts:
            gap = min(gap, self.lifts[-1][1])    # the best lifted gap so far
        self.lifts.append((self.it, gap))
        if len(self.lifts) < 2:
            return
        (o0, g0), (o1, g1) = self.lifts[-2:]
        tol = self.opts.tol
        if g1 > _SPACE_MIN * tol:
            wait = _SPACE_CAP if g1 >= g0 else int(
                _SPACE_SHARE * np.log(g1 / tol) * (o1 - o0) / np.log(g0 / g1))
            self.next_try = o1 + max(1, min(_SPACE_CAP, wait))

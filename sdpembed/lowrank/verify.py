"""A verified lower bound on the smallest eigenvalue of S, by sparse factorisations."""

from __future__ import annotations

import numpy as np

from .space import FactorSpace
from .sparse_slack import SlackParts, SparseCheck, full_coordinates, sparse_bottom, sparse_verify

__all__ = ["SparseCheck"]

_U = 2.0 ** -53          # unit roundoff of IEEE double

#: the first try sits this far (relative to a bound on ||S||) below the estimate: far above
#: the rounding bounds of the factorisation, far below what a certificate can lose
_FIRST_MARGIN = 1e-12


def _verified_lambda_min(space: FactorSpace, y, nu, mu_est: float, *, max_steps: int = 6
                         ) -> tuple[float | None, str, list[SparseCheck]]:
    """A verified lower bound on :math:`\\lambda_{\\min}(S)` (on 1-perp) near ``mu_est``.

    Tries :func:`~sdpembed.lowrank.sparse_slack.sparse_verify` just below the estimate
    (``_FIRST_MARGIN`` times a bound on :math:`\\|S\\|`). An estimate above the smallest
    eigenvalue (Lanczos can miss it) shows as a non-positive pivot: the estimate is then
    replaced by shift-invert's (:func:`~sdpembed.lowrank.sparse_slack.sparse_bottom`,
    where the constant vector is an eigenvector; elsewhere the tries go ever lower, factors
    of 100) and checked again below it. Returns ``(mu or None, reason, checks)``; ``None``
    when every try failed or the factorisation could not run (memory, terms that are not
    diagonal plus low rank).
    """
    try:
        parts = SlackParts.of(space, y, nu)
    except TypeError as exc:
        return None, str(exc), []
    scale = float(np.asarray(parts.A_abs.sum(axis=1)).max(initial=0.0)) + parts.lowrank_norm
    margin = max(_FIRST_MARGIN * scale, 1e-300)
    checks: list[SparseCheck] = []
    est, step, re_estimated = float(mu_est), margin, False
    try:
        for _ in range(max_steps):
            chk = sparse_verify(space, y, nu, est - step, parts=parts)
            checks.append(chk)
            if chk.verified:
                return chk.mu, "", checks
            if chk.bound != np.inf and "pivot" not in chk.reason:
                break  # the rounding bound, not the spectrum, failed: lower tries won't help
            if not re_estimated and full_coordinates(space, parts, est - step):
                lam, _, _ = sparse_bottom(space, y, nu, 1, sigma=min(est, 0.0) - abs(est)
                                          - margin, parts=parts)
                est, re_estimated = min(est, float(lam[0])), True
            else:
                step *= 100.0
    except MemoryError:
        return None, "not enough memory for the sparse factorisation", checks
    last = checks[-1]
    return None, (f"sparse factorisation failed at {len(checks)} shift(s) down to "
                  f"{last.mu:.3g} ({last.reason})"), checks

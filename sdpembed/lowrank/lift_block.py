"""A lift round's bottom eigenpairs from the previous round's block (warm Rayleigh-Ritz).

:func:`~sdpembed.lowrank.repair.lift_multipliers` above ``DenseLimits.eig`` needs, each
round, the bottom eigenpairs of :math:`S` on :math:`\\mathbf 1^\\perp`; a round changes
:math:`S` only by a few PSD rank-one terms, so the previous round's eigenvectors nearly
span the new bottom. :func:`warm_bottom` takes the Ritz pairs of :math:`S` on the block
Krylov space of :math:`P(S - \\sigma I)^{-1}P` started from them: one factorisation and
``steps`` times ``k`` solves, where shift-invert Lanczos from a random start needs several
restarts of ``2k + 1`` vectors on a crowded bottom.

Nothing here is a bound. Ritz values lie at or above the eigenvalues they approximate
(Courant-Fischer: the ``i``-th Ritz value is at least :math:`\\lambda_i`), and the lift's LP
on a Ritz basis is the LMI restricted to that subspace, a cutting plane like the one on
exact eigenvectors; the lifted multipliers are a candidate whose certificate is computed
and, before it ends a solve, verified by a factorisation at a shift
(:func:`~sdpembed.lowrank.verify._verified_lambda_min`), which uses the Ritz value only
to place the shift.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .space import FactorSpace
from .sparse_slack import (CertificateLate, FactorTimes, SlackParts, _centred_inverse,
                           _timed_factor)
from .spectrum import _gershgorin

#: block solves of the warm block (its Krylov depth): the space holds ``(1 + steps) k``
#: vectors
WARM_STEPS = 2
#: tries of a lower shift (times 10) where the factorisation at the first has a
#: non-positive pivot (the previous Ritz value lay above the new lambda_min)
_LOWER_TRIES = 3
#: relative eigenvalue of the basis' Gram matrix below which a direction is left out
_RANK_TOL = 1e-10


def _orthonormal_centred(Q: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the centred columns of ``Q``, directions below ``_RANK_TOL``
    (relative, of the Gram matrix's eigenvalues) left out: the blocks overlap once the
    previous vectors nearly span the new bottom, and a plain QR would complete them with
    directions of rounding, not orthogonal to the constant vector."""
    Q = Q - Q.mean(axis=0)
    d, V = np.linalg.eigh(Q.T @ Q)
    keep = d > _RANK_TOL * d[-1]
    Q = Q @ (V[:, keep] / np.sqrt(d[keep]))
    Q -= Q.mean(axis=0)
    return np.linalg.qr(Q)[0]


def warm_bottom(space: FactorSpace, y: np.ndarray, nu, X_prev: np.ndarray, lower: float, *,
                steps: int = WARM_STEPS,
                late: Callable[[float | None], bool] | None = None,
                times: FactorTimes | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    r"""The ``k`` (columns of ``X_prev``) smallest Ritz pairs of :math:`S(y,\nu)` on the
    block Krylov space :math:`\mathrm{span}\{X, OX, \dots, O^{\mathrm{steps}}X\}`,
    :math:`X` = ``X_prev``, :math:`O = P(S - \sigma I)^{-1}P` on :math:`\mathbf 1^\perp`,
    :math:`\sigma` below ``lower`` (an estimate from below of :math:`\lambda_{\min}`, e.g.
    the previous round's, Weyl) by :func:`~sdpembed.lowrank.spectrum._bottom`'s margin
    (tenfold lower, at most ``_LOWER_TRIES`` times, while the factorisation has a
    non-positive pivot). Returns ``(lam, X, res)``: Ritz values (ascending), orthonormal
    Ritz vectors, the residual norms :math:`\|SX_i - \lambda_iX_i\|`; ``None`` where no
    shift with positive pivots was found (the caller takes shift-invert Lanczos).
    ``late``, ``times`` as in :func:`~sdpembed.lowrank.sparse_slack.sparse_bottom`:
    :class:`CertificateLate` where a factorisation or the solves must not start."""
    n, k = X_prev.shape
    parts = SlackParts.of(space, y, nu)
    times = FactorTimes() if times is None else times
    floor = 1e-9 * _gershgorin(space, y, nu)
    sigma = min(lower, 0.0) - max(0.1 * abs(lower), floor)
    solve = None
    for _ in range(_LOWER_TRIES):
        if late is not None and late(times.estimate(1)):
            raise CertificateLate("a factorisation of the slack would end past the time limit")
        solve, positive = _timed_factor(space, y, nu, sigma, parts, times)
        if solve is not None and positive:
            break
        solve, sigma = None, 10.0 * sigma
    if solve is None:
        return None
    if late is not None and late(times.estimate(0, steps * k)):
        raise CertificateLate("the shift-invert solves would end past the time limit")
    O = _centred_inverse(solve, n)
    B = X_prev - X_prev.mean(axis=0)
    blocks = [B]
    for _ in range(steps):
        B, _ = np.linalg.qr(O.matmat(B))
        blocks.append(B)
    Q = _orthonormal_centred(np.column_stack(blocks))
    SQ = space.apply_S(Q, y, space.duals(nu))
    H = Q.T @ SQ
    lam, Z = np.linalg.eigh(0.5 * (H + H.T))
    lam, Z = lam[:k], Z[:, :k]
    X = Q @ Z
    res = np.linalg.norm(SQ @ Z - X * lam, axis=0)
    return lam, X, res

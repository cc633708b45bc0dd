r"""The bound a solve reports with its point: the certificate's bound for the problem
whose added rows are relaxed by the point's own violations (:func:`point_bound`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from .certificate import Certificate
from .space import FactorSpace
from .trace_bound import feasible_trace_bound


def point_bound(space: FactorSpace, cert: Certificate, W: np.ndarray) -> tuple[float | None, float]:
    r"""``cert``'s bound for the problem whose added rows are relaxed by the violations of the
    point ``W``, and the relaxation :math:`\rho \ge 0` it cost: ``(cert.bound - rho, rho)``
    (``rho`` 0 where the point meets every row, or there are none).

    The point of a solve meets its rows to a tolerance, not exactly, so its objective may lie
    below a bound that holds for the rows as posed; it lies on the feasible set of the rows
    relaxed to :math:`b'_k = \max(b_k, \langle A_k, G\rangle)` (inequality rows) and
    :math:`b'_k = \langle A_k, G\rangle` (equality rows), whose optimum the bound below
    bounds, and which is a lower bound on the optimum as posed too (a larger feasible set).
    Take the dual point :math:`(\bar y, \bar\nu)` behind ``cert.bound`` (``cert.dual_nu``):
    its dual function at :math:`b'` is :math:`-\varphi^*(\bar y) - \bar z^Tb' \ge
    \text{bound} - \sum_k |\bar z_k|\,|b'_k - b_k|` (weak duality as in
    :func:`_row_anchor_certificate`, with :math:`b'`). A ``"trace-bound"`` certificate
    (:math:`\lambda_{\min}(S) \ge \mu`, :math:`\mu < 0`) takes :math:`\mu T` with
    :math:`T \ge \mathrm{tr}\,G` on the feasible set: relaxed, the rows give
    :math:`T' \ge T` (:func:`~.trace_bound.feasible_trace_bound` with each row relaxed by its
    violation, either way for an equality row: the least of an added row's and, for
    ``"equality"`` and ``"shrink"``, the shortest paths', which the relaxation leaves as
    they are), and the bound falls by
    :math:`|\mu|(T' - T)` more. So :math:`\rho = \sum_k |\bar z_k|\,|b'_k - b_k| +
    |\mu|(T' - T)`, and the point's objective is at least ``cert.bound - rho`` (its
    rounding aside): the point is feasible for the relaxed problem and within its stated
    gap of that problem's optimum (docs/tuning.md, "A shifted certificate towards the rows'
    multipliers")."""
    if cert.bound is None or space.K is None:
        return cert.bound, 0.0
    K = space.K
    r = K.residual(space.K_values(W))
    if not np.any(r > 0):
        return cert.bound, 0.0
    nu_bar = space.duals(cert.nu if cert.dual_nu is None else cert.dual_nu)
    rho = float(np.abs(space.user_part(nu_bar)) @ r)
    if cert.trace_bound is not None and cert.lambda_min is not None:
        mu = cert.lambda_min - cert.rounding
        if mu < 0:
            rho += -mu * (feasible_trace_bound(space, r)[0] - cert.trace_bound)
    return cert.bound - rho, rho


def at_point(space: FactorSpace, cert: Certificate, W: np.ndarray) -> Certificate:
    """``cert`` with the bound of :func:`point_bound` at the point ``W`` (itself where the
    point meets its rows); its note states what the violations cost and the bound for the
    rows as posed. The bound a solve reports with its point."""
    lb, rho = point_bound(space, cert, W)
    if not rho > 0:
        return cert
    return dataclasses.replace(
        cert, bound=lb, note=(cert.note + "; " if cert.note else "")
        + f"less {rho:.3g} for the point's row violations (the rows relaxed by them; "
        f"{cert.bound:.10g} for the rows as posed)")

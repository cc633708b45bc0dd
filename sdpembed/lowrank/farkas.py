r"""A verified Farkas certificate of infeasibility from LOWRANK's multipliers.

The problem solved by LOWRANK is feasible only if some centred :math:`G \succeq 0`
(on a reduced basis :math:`G = QYQ^T`) satisfies the hard constraints: the edge
distances :math:`D_e(G) = \bar D_e` (``distances="equality"`` only; the other modes
penalise them), the SNR constraint :math:`\langle H, G\rangle \le 0` and the added rows
:math:`\langle A_k, G\rangle \le b_k` or :math:`= b_k`. Multipliers :math:`(y, \nu_0, z)`
with :math:`\nu_0 \ge 0`, :math:`z_k \ge 0` on inequality rows,

.. math::

    S_0 = \sum_e y_e a_ea_e^T + \nu_0 H + \sum_k z_kA_k \succ 0 \text{ on the space},
    \qquad y^T\bar D + z^Tb < 0,

prove it infeasible: for a feasible :math:`G`,
:math:`0 \le \langle S_0, G\rangle \le y^T\bar D + z^Tb < 0`. When LOWRANK cannot reach
feasibility its multipliers grow along such a ray; :func:`farkas_certificate` takes
their direction, moves the edge multipliers by a multiple of the all-ones vector
(:math:`\sum_e a_ea_e^T` is the graph Laplacian, positive definite on
:math:`\mathbf 1^\perp` for a connected graph) when that makes :math:`S_0` definite,
then, if still needed, raises the multipliers of the inequality rows whose :math:`A_k`
is diagonally dominant with a non-negative diagonal (PSD; e.g. :math:`\operatorname{tr}G
\le b`) by a common multiple when their sum is definite on the space, and
*verifies* both inequalities in floating point with rounding allowances: the smallest
computed eigenvalue of the dense :math:`S_0` must exceed :math:`8 n \epsilon \|\,|S_0|\,\|_F`
(backward stability of the symmetric eigensolver, and the rounding of forming
:math:`S_0`), and the value must be below minus its own rounding bound. Dense, so for
spaces up to :data:`MAX_DENSE` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse.linalg as spla

from ..formulations.gram import GramProblem, centering_basis
from .spectrum import _lambda_min

if TYPE_CHECKING:
    from .space import FactorSpace

__all__ = ["FarkasCertificate", "farkas_certificate", "MAX_DENSE", "stalled_ray_proves",
           "RayTest"]

#: largest dimension of the space for which the certificate is checked (dense eigh)
MAX_DENSE = 2500

_EPS = np.finfo(float).eps

#: the outer loop tries the certificate every this many outer iterations while its point
#: stays this far from feasible (relative), on spaces up to ``DenseLimits.eig``
RAY_EVERY, RAY_INFEAS = 10, 1e-2
#: below ``RAY_INFEAS`` (but above ``feas_tol``) the certificate is tried where the
#: infeasibility has stalled: it fell by less than this factor over ``RAY_EVERY`` iterations
RAY_STALL = 0.5


@dataclass
class FarkasCertificate:
    """A verified proof of infeasibility: multipliers, :math:`\\lambda_{\\min}(S_0)`, value."""

    y: np.ndarray
    nu: np.ndarray
    lambda_min: float
    value: float

    def describe(self) -> str:
        return (f"Farkas certificate from LOWRANK's multipliers: lambda_min(S_0) = "
                f"{self.lambda_min:.3g} > 0 and y'D + z'b = {self.value:.3g} < 0 (verified with "
                "rounding allowances)")


def _dense_parts(gp: GramProblem, Q: np.ndarray | None, y, nu0, z):
    """``(S_0, |S_0|)`` restricted to the space (both dense), for multipliers ``y, nu0, z``."""
    n = gp.n
    i, j = gp.edges.T
    V = centering_basis(n) if Q is None else Q

    def assemble(yv, nv, zv, absolute):
        M = np.zeros((n, n))
        f = np.abs if absolute else (lambda a: a)
        w = f(yv)
        np.add.at(M, (i, i), w)
        np.add.at(M, (j, j), w)
        np.add.at(M, (i, j), -w if not absolute else w)
        np.add.at(M, (j, i), -w if not absolute else w)
        if nv:
            H = gp.icv.scaled(gp.snr) + gp.bcv.scaled(-1.0)
            M += f(nv * H.dense())
        if zv is not None and np.any(zv):
            K = gp.constraints
            np.add.at(M, (K.i, K.j), f(K.value * zv[K.row]))
        return M

    S = assemble(y, nu0, z, False)
    S_abs = assemble(y, nu0, z, True)
    S = V.T @ S @ V
    S_abs = np.abs(V).T @ S_abs @ np.abs(V)
    return 0.5 * (S + S.T), S_abs


def _dominant_rows(K) -> np.ndarray:
    r"""Inequality rows whose :math:`A_k` is diagonally dominant with a non-negative
    diagonal, hence positive semidefinite (Gershgorin): raising their multipliers keeps
    :math:`z \ge 0` and adds a PSD term to :math:`S_0`. Repeated triplets of one entry
    count in absolute value apart (conservative)."""
    slot, rows, _ = K.row_points   # the (row k, point a) pairs: one row of A_k each
    on = K.i == K.j
    diag = np.bincount(slot, weights=np.where(on, K.value, 0.0), minlength=rows.size)
    off = np.bincount(slot, weights=np.where(on, 0.0, np.abs(K.value)), minlength=rows.size)
    ok = ~np.asarray(K.equality, dtype=bool)
    ok[rows[(diag < off) | (diag < 0)]] = False
    return ok


def _check(gp, Q, y, nu0, z):
    """``(lambda_min, margin, value, value_margin)`` of multipliers ``(y, nu0, z)``."""
    S, S_abs = _dense_parts(gp, Q, y, nu0, z)
    lam = float(np.linalg.eigvalsh(S)[0])
    margin = 8.0 * S.shape[0] * _EPS * float(np.linalg.norm(S_abs))
    value = float(y @ gp.target)
    size = float(np.abs(y) @ np.abs(gp.target))
    if z is not None:
        K = gp.constraints
        value += float(z @ K.rhs)
        size += float(np.abs(z) @ np.abs(K.rhs))
    return lam, margin, value, 4.0 * (len(y) + (0 if z is None else len(z)) + 1) * _EPS * size


def farkas_certificate(gp: GramProblem, Q: np.ndarray | None, y: np.ndarray,
                       nu: np.ndarray) -> FarkasCertificate | None:
    """A verified :class:`FarkasCertificate` along the direction of the multipliers
    ``(y, nu)`` (``nu``: SNR first, then the added rows), or ``None`` if they prove nothing
    or the space is larger than :data:`MAX_DENSE`."""
    dim = gp.n - 1 if Q is None else Q.shape[1]
    if dim > MAX_DENSE or dim < 1:
        return None
    y = np.asarray(y, dtype=float).copy()
    nu = np.atleast_1d(np.asarray(nu, dtype=float)).copy()
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(nu))):
        return None
    if gp.distances == "shrink":
        y = np.maximum(y, 0.0)  # D <= Dbar: the ray's y lies in the cone y >= 0
    elif gp.distances != "equality":
        y[:] = 0.0            # penalised distances: no ray in y (bounded domain)
    n_snr = int(gp.snr is not None)
    nu0 = max(float(nu[0]), 0.0) if n_snr else 0.0
    K = gp.constraints
    z = None
    if K is not None and K.p > 0:
        z = nu[n_snr:n_snr + K.p].copy()
        z[~K.equality] = np.maximum(z[~K.equality], 0.0)
    scale = float(np.linalg.norm(np.r_[y, nu0, z if z is not None else []]))
    if not scale > 0:
        return None
    y, nu0 = y / scale, nu0 / scale
    z = None if z is None else z / scale
    lam, margin, value, vmargin = _check(gp, Q, y, nu0, z)
    if lam <= margin and gp.distances == "equality":
        # y + c 1: adds c times the Laplacian, definite on the space for a connected graph
        ones = np.ones_like(y)
        lap, lap_margin, _, _ = _check(gp, Q, ones, 0.0, None)
        if lap > lap_margin:
            c = 2.0 * (margin - lam) / lap + 1e-12
            y = y + c
            lam, margin, value, vmargin = _check(gp, Q, y, nu0, z)
    if lam <= margin and z is not None:
        # z + c d on inequality rows whose A_k is PSD (e.g. trace <= b beside trace >= a,
        # whose multipliers cancel to S_0 = 0 up to rounding): adds c sum_k d_k A_k
        d = _dominant_rows(K).astype(float)
        if d.any():
            dl, dl_margin, _, _ = _check(gp, Q, np.zeros_like(y), 0.0, d)
            if dl > dl_margin:
                c = 2.0 * (margin - lam) / dl + 1e-12
                z = z + c * d
                lam, margin, value, vmargin = _check(gp, Q, y, nu0, z)
    if lam > margin and value < -vmargin:
        nu_out = np.r_[[nu0] if n_snr else [], [] if z is None else z]
        return FarkasCertificate(y=y, nu=nu_out, lambda_min=lam, value=value)
    return None


def stalled_ray_proves(space: FactorSpace, y: np.ndarray, nu: np.ndarray, infeas: float,
                       it: int) -> bool:
    r"""Whether the outer loop, at outer iteration ``it`` with relative infeasibility
    ``infeas`` and multipliers ``(y, nu)``, can stop: a verified
    :func:`farkas_certificate` proves the problem infeasible. Tried every
    :data:`RAY_EVERY` iterations while ``infeas`` exceeds :data:`RAY_INFEAS`, where the
    space is small enough for a dense check (``space.limits.eig``): an infeasible problem
    then ends in a few iterations, not at ``max_outer`` or the time limit."""
    if it % RAY_EVERY or not infeas > RAY_INFEAS:
        return False
    if space.dim > space.limits.eig:
        return False
    return farkas_certificate(space.gp, space.Q, y, nu) is not None


class RayTest:
    r"""The outer loop's test for infeasibility: :func:`stalled_ray_proves`, and also,
    every :data:`RAY_EVERY` iterations, where the relative infeasibility lies between
    ``feas_tol`` and :data:`RAY_INFEAS` but has *stalled* (it is at least
    :data:`RAY_STALL` times what it was :data:`RAY_EVERY` iterations before): a mildly
    infeasible problem (trace rows 0.8 % apart, violation 3.4e-3; docs/tuning.md, "100165
    in exact arithmetic; mild infeasibility; a fresh slice") then stops with a verified
    certificate in a few iterations, not at the time limit. The certificate is a proof
    (:func:`farkas_certificate` verifies it), so trying it more often cannot make a feasible
    problem infeasible; it costs a dense eigenvalue problem on the space per try."""

    def __init__(self, feas_tol: float):
        self.feas_tol = float(feas_tol)
        self.seen: dict[int, float] = {}

    def proves(self, space: FactorSpace, y: np.ndarray, nu: np.ndarray, infeas: float,
               it: int) -> bool:
        """Whether the loop at iteration ``it`` (infeasibility ``infeas``, multipliers
        ``(y, nu)``) can stop: the problem is proved infeasible."""
        self.seen[it] = infeas
        earlier = self.seen.pop(it - RAY_EVERY, None)
        if infeas > RAY_INFEAS:
            return stalled_ray_proves(space, y, nu, infeas, it)
        if it % RAY_EVERY or earlier is None or space.dim > space.limits.eig:
            return False
        if not (infeas > self.feas_tol and infeas >= RAY_STALL * earlier):
            return False
        return farkas_certificate(space.gp, space.Q, y, nu) is not None


def _infeasible_or_failed(space, pen, y, nu, opts) -> str:
    r"""Farkas test: :math:`\mathcal A^T\hat y + \sum_k\hat z_kA_k \succeq 0` and
    :math:`\hat y^T\bar D + \hat z^Tb < 0` (:math:`\hat z_k \ge 0` on inequality rows)."""
    nu = space.duals(nu)
    z = space.user_part(nu)
    norm = max(float(np.linalg.norm(y) if z is None else np.linalg.norm(np.r_[y, z])), 1e-300)
    yh = y / norm
    value = yh @ pen.t
    if z is not None:
        value = value + space.linear_offset(nu / norm)
    if not value < -1e-6 * np.linalg.norm(pen.t):
        return "optimal_inaccurate"
    try:
        eig = _lambda_min(space.without_objective(), yh, nu / norm, tol=opts.eig_tol)
    except spla.ArpackError:   # no eigenvalue, no proof
        return "optimal_inaccurate"
    return "infeasible" if eig.value >= -1e-8 else "optimal_inaccurate"

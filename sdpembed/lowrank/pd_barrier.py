r"""A primal–dual path for :func:`~.dual_barrier.dual_barrier`'s problem (HKM direction,
Mehrotra's predictor–corrector).

:func:`~.dual_barrier.dual_barrier` follows the central path of the dual barrier alone:
its Newton steps see the primal point only as :math:`\mu S^{-1}`, and between two
centred points they follow a bend of the path a bounded distance at a time
(docs/tuning.md, "The breast-cancer rows"). Here the primal variables are iterates of
their own. With :math:`M(y) = M_0 + E^T\mathrm{diag}(y)E` the slack as
:func:`~.barrier_path._slack_cholesky` factors it (:math:`PSP` plus ``scale`` times
:math:`\mathbf 1\mathbf 1^T/n`; positive definite exactly where :math:`S(y) \succeq 0` on
:math:`\mathbf 1^\perp` strictly), the pair of problems is

.. math::

    \min_{X \succeq 0,\ p, q \ge 0}\ \langle M_0, X\rangle + w^T(p + q)\quad
    \text{s.t.}\quad \mathrm{diag}(EXE^T) - p + q = \bar D, \qquad
    \max_y\ -\bar D^Ty\quad\text{s.t.}\quad M(y) \succeq 0,\ |y| \le w,

with :math:`p, q` paired with the box's slacks :math:`u = w - y`, :math:`l = w + y`.
Every iterate keeps :math:`M(y) \succ 0` and :math:`|y| < w` (its dual value is a lower
bound); the primal equality may be violated. The Newton system of the perturbed
complementarity :math:`XM = \sigma\mu I`, :math:`pu = ql = \sigma\mu` with the HKM
direction :math:`\Delta X = \sigma\mu M^{-1} - X - \mathrm{sym}(X\,\Delta M\,M^{-1})`
reduces to

.. math::

    \bigl((EXE^T)\circ(EM^{-1}E^T) + \mathrm{diag}(p/u + q/l)\bigr)\,\Delta y
    = -\bar D + \sigma\mu\bigl(\mathrm{diag}(EM^{-1}E^T) - 1/u + 1/l\bigr) - c,

the dual barrier's Newton system at weight :math:`\sigma\mu` with the primal–dual
scaling in place of :math:`\mu(EM^{-1}E^T)^{\circ 2}` (``c``: Mehrotra's second-order
correction, :math:`c_e = a_e^T\Delta X^a\Delta M^aM^{-1}a_e + (\Delta p^a_e/u_e +
\Delta q^a_e/l_e)\Delta y^a_e` from the predictor's step). One m x m Cholesky
factorisation a step, as there. Any :math:`X \succeq 0` is a primal point (the distances
are penalised), so each iterate's objective, :math:`\langle M_0, PXP\rangle + w^T|r -
\bar D|`, bounds the optimum from above: the smallest so far minus the dual value is the
verified gap the path stops on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .edge_gram import EdgeGrams
from .space import FactorSpace
from .spectrum import _dense_shifted

__all__ = ["PDPath", "pd_path"]

#: the share of the step to the boundary of the cones and boxes taken
_STEP_SHARE = 0.95
#: a warm path (``X0`` given), after its first step: the share ``a + b * min(s_p, s_d)``
#: of the previous step's lengths (SDPT3's adaptive share; docs/tuning.md, "The warm
#: barrier's step share")
_ADAPT_SHARE = (0.9, 0.09)
#: a path whose primal or dual step is below this share of the full step twice in a row
#: has stalled (rounding in the Newton system near the end, docs/tuning.md "The dual
#: barrier's step count"): the caller finishes with the dual barrier's own path
_STALL_STEP = 0.2
#: a cold path (no ``X0``) counts short steps only after this many steps: from the cold
#: start (the multipliers at 0.99 of the box's upper face) the second and third steps are
#: short where the distances spread over orders of magnitude (raw features), and the path
#: recovers from there; stopped at them, the dual path takes many times the steps
#: (docs/tuning.md, "Unscaled data: the cold barrier's first steps")
_STALL_AFTER = 4


@dataclass
class PDPath:
    """Where :func:`pd_path` stopped: the last strictly feasible ``y``, the status, the
    steps taken, the best primal value ``upper`` and its matrix ``X`` (n x n; its
    objective is that of its projection on :math:`\\mathbf 1^\\perp`), and the mean
    complementarity ``mu`` at the end."""

    y: np.ndarray
    status: str
    iterations: int
    upper: float
    X: np.ndarray | None
    mu: float


def _step_to_psd(Li: np.ndarray, D: np.ndarray) -> float:
    """The largest ``a`` with :math:`A + aD \\succeq 0` (``inf`` if every ``a``), ``Li``
    the inverse of the lower Cholesky factor of :math:`A`."""
    W = Li @ D @ Li.T
    lam = sla.eigh(0.5 * (W + W.T), eigvals_only=True, subset_by_index=[0, 0],
                   check_finite=False, driver="evr")[0]
    return np.inf if lam >= 0 else -1.0 / lam


def _step_to_box(v: np.ndarray, dv: np.ndarray) -> float:
    neg = dv < 0
    return float(np.min(-v[neg] / dv[neg])) if np.any(neg) else np.inf


def _schur(grams: EdgeGrams, X: np.ndarray, P: np.ndarray, box: np.ndarray) -> np.ndarray:
    r"""The Newton system's matrix :math:`(EXE^T)\circ P + \mathrm{diag}(box)` (``P`` =
    :math:`EM^{-1}E^T`), formed in ``grams``' second buffer."""
    H = grams.form(X, 1)
    H *= P                                         # (EXE^T)∘(EM^{-1}E^T), in place
    H[np.diag_indices(H.shape[0])] += box
    return H


def _hkm_direction(cf, space: FactorSpace, X: np.ndarray, Minv: np.ndarray, rhs: np.ndarray,
                   sigma_mu: float, corr_X: np.ndarray | None = None):
    """``(dy, dM, dX)``: the step of the multipliers from the Schur complement's factor
    ``cf`` and right-hand side ``rhs`` (the module's docstring), the slack's (sparse) and
    the HKM step of the primal matrix, :math:`\\sigma\\mu M^{-1} - X -
    \\mathrm{sym}(X\\,\\Delta M\\,M^{-1})`, less ``corr_X`` (the corrector's term)."""
    dy = -sla.cho_solve(cf, rhs, check_finite=False)
    dM = space.ET @ sp.diags(dy) @ space.E
    T = Minv @ np.asarray(dM @ X)          # M^{-1} dM X, the transpose of X dM M^{-1}
    dX = -X - 0.5 * (T + T.T)
    if sigma_mu:
        dX += sigma_mu * Minv
    if corr_X is not None:
        dX -= corr_X
    return dy, dM, 0.5 * (dX + dX.T)


def pd_path(space: FactorSpace, t: np.ndarray, w: np.ndarray, nu0: np.ndarray, scale: float,
            y: np.ndarray, mu: float, *, rel_gap: float, t0: float,
            deadline: float = np.inf, max_iter: int = 100,
            steps_expected: float | None = None, log: list | None = None,
            X0: np.ndarray | None = None) -> PDPath:
    """The primal–dual path from the strictly feasible ``y`` (:math:`M(y) \\succ 0`,
    :math:`|y| < w`) and the centred primal point of weight ``mu`` there (:math:`X =
    \\mu M^{-1}`, :math:`p = \\mu/u`, :math:`q = \\mu/l`), as the module's docstring
    describes, until the verified gap is within ``rel_gap`` of the dual value
    (``"converged"``), ``max_iter`` steps, the ``deadline`` (a :func:`time.perf_counter`
    value; with ``steps_expected``, ``"no time"`` after a first step that shows that many
    would pass it), a step that cannot be taken or two short ones in a row (below
    ``_STALL_STEP``; ``"stalled"``; a cold path's first ``_STALL_AFTER`` steps are not
    counted), or a Schur complement or primal matrix that rounding
    made indefinite (``"numerical failure"``). ``log``: a list that receives, per step,
    :math:`\\mu`, :math:`\\sigma`, the predictor's primal and dual steps to the boundary,
    the steps taken, the relative gap, which primal bound limited the step and the share
    of the step to the boundary taken (``_STEP_SHARE``). ``X0``: a positive definite
    primal matrix to start from instead of :math:`\\mu M^{-1}` (a warm start's iterate;
    ``p``, ``q`` as there); such a path takes, after its first step, the share
    ``_ADAPT_SHARE[0] + _ADAPT_SHARE[1] * min(s_p, s_d)`` of the previous step's lengths
    (SDPT3's adaptive share) instead."""
    n, m = space.dim, t.size
    E, ET = space.E, space.ET
    M0, _ = _dense_shifted(space, np.zeros(m), nu0, scale)

    def slack(yv):
        Mv = M0.copy()
        L = (ET @ sp.diags(yv) @ E).tocoo()
        Mv[L.row, L.col] += L.data
        try:
            return Mv, sla.cholesky(Mv, lower=True, check_finite=False)
        except sla.LinAlgError:
            return Mv, None

    def primal_value(X):
        rows = X.mean(axis=0)
        Xc = X - rows[:, None] - rows[None, :] + rows.mean()
        r = np.einsum("ij,ij->i", np.asarray(E @ Xc), Ed)
        return float(np.sum(M0 * Xc)) + float(w @ np.abs(r - t))

    Ed = E.toarray()
    grams = EdgeGrams(E)
    Mv, L = slack(y)
    Li = sla.solve_triangular(L, np.eye(n), lower=True, check_finite=False)
    Minv = Li.T @ Li
    X = mu * Minv if X0 is None else X0
    u, l = w - y, w + y
    # p and q make the start primal feasible: p - q = diag(EXE^T) - t, both > 0
    d = np.einsum("ij,ij->i", np.asarray(E @ X), Ed) - t
    p, q = np.maximum(d, 0.0) + mu / w, np.maximum(-d, 0.0) + mu / w
    best, bestX = np.inf, None
    status, it = "max_iter", 0
    N = n + 2 * m
    short = 0
    share = _STEP_SHARE
    while it < max_iter:
        if time.perf_counter() >= deadline:
            status = "deadline"
            break
        it += 1
        upper = primal_value(X)
        if upper < best:
            best, bestX = upper, X.copy()
        dual = -float(t @ y)
        if best - dual <= rel_gap * abs(dual):
            status = "converged"
            break
        mu = (float(np.sum(X * Mv)) + float(p @ u + q @ l)) / N
        P = grams.form(Minv, 0)
        cf = grams.cho_factor(partial(_schur, grams, X, P, p / u + q / l))
        if cf is None:
            status = "numerical failure"
            break
        try:
            LX = sla.cholesky(X, lower=True, check_finite=False)   # X > 0 along the path
        except sla.LinAlgError:
            status = "numerical failure"
            break
        LiX = sla.solve_triangular(LX, np.eye(n), lower=True, check_finite=False)

        # predictor
        dy_a, dM_a, dX_a = _hkm_direction(cf, space, X, Minv, t, 0.0)
        dp_a = -p + p * dy_a / u
        dq_a = -q - q * dy_a / l
        a_p = min(1.0, _step_to_psd(LiX, dX_a), _step_to_box(p, dp_a), _step_to_box(q, dq_a))
        dM_a_dense = dM_a.toarray()
        a_d = min(1.0, _step_to_psd(Li, dM_a_dense), _step_to_box(u, -dy_a),
                  _step_to_box(l, dy_a))
        Xa, Ma = X + a_p * dX_a, Mv + a_d * dM_a_dense
        mu_a = (float(np.sum(Xa * Ma)) + float((p + a_p * dp_a) @ (u - a_d * dy_a))
                + float((q + a_p * dq_a) @ (l + a_d * dy_a))) / N
        sigma = min(1.0, (mu_a / mu) ** 3)
        # corrector: the second-order terms of the predictor
        XV = dX_a @ np.asarray(dM_a @ Minv)        # dX_a dM_a M^{-1}, once
        corr_X = 0.5 * (XV + XV.T)                 # its symmetric part
        c = np.einsum("ij,ij->i", np.asarray(E @ XV), Ed) \
            + (dp_a / u + dq_a / l) * dy_a
        rhs = t - sigma * mu * (np.diag(P) - 1.0 / u + 1.0 / l) + c
        dy, dM, dX = _hkm_direction(cf, space, X, Minv, rhs, sigma * mu, corr_X)
        dp = (sigma * mu - p * u + p * dy + dp_a * dy_a) / u
        dq = (sigma * mu - q * l - q * dy - dq_a * dy_a) / l
        lims = (_step_to_psd(LiX, dX), _step_to_box(p, dp), _step_to_box(q, dq))
        s_p = min(1.0, share * min(lims))
        s_d = min(1.0, share * min(_step_to_psd(Li, dM.toarray()), _step_to_box(u, -dy),
                                   _step_to_box(l, dy)))
        y_new = y + s_d * dy
        Mn, Ln = slack(y_new)
        while Ln is None and s_d > 1e-12:          # rounding at the boundary
            s_d *= 0.5
            y_new = y + s_d * dy
            Mn, Ln = slack(y_new)
        if Ln is None:
            status = "stalled"
            break
        X = X + s_p * dX
        X = 0.5 * (X + X.T)
        p, q = p + s_p * dp, q + s_p * dq
        y, Mv, L = y_new, Mn, Ln
        u, l = w - y, w + y
        Li = sla.solve_triangular(L, np.eye(n), lower=True, check_finite=False)
        Minv = Li.T @ Li
        if log is not None:
            log.append((it, mu, sigma, a_p, a_d, s_p, s_d, (best - dual) / abs(dual),
                        int(np.argmin(lims)), share))
        if X0 is not None:
            share = _ADAPT_SHARE[0] + _ADAPT_SHARE[1] * min(s_p, s_d)
        counted = X0 is not None or it > _STALL_AFTER
        short = short + 1 if counted and min(s_p, s_d) < _STALL_STEP else 0
        if short >= 2:
            status = "stalled"
            break
        if steps_expected is not None and it == 1 \
                and (time.perf_counter() - t0) * steps_expected > deadline - t0:
            status = "no time"
            break
    mu = (float(np.sum(X * Mv)) + float(p @ u + q @ l)) / N
    return PDPath(y, status, it, best, bestX, mu)

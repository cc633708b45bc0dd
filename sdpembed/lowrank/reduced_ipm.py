"""Primal-dual interior-point method for the reduced-basis Gram SDP with interval distances.

On a reduced basis :math:`G = QYQ^T` (:func:`~sdpembed.formulations.gram.laplacian_basis`,
``r`` columns) the Gram SDPs with ``distances="interval"`` (DVU, MVU) become a
small SDP with many linear terms: with :math:`C = Q^T\\tilde C Q` (trace terms
folded in), :math:`q_e = Q_{i\\cdot} - Q_{j\\cdot}` for each edge
:math:`e = (i, j)`, :math:`w_e = \\lambda/\\bar D_e` and, optionally, the SNR
functional :math:`H = Q^T H_{\\rm snr} Q` (eq. 10 of the DVU paper),

.. math::

    \\min_{Y\\succeq 0}\\ \\langle C, Y\\rangle + \\sum_e w_e\\,|q_e^TYq_e - \\bar D_e|
    \\quad [\\text{s.t. } \\langle H, Y\\rangle \\le 0].

Standard form (primal, :math:`Y\\in\\mathbb S^r_+`, :math:`s^\\pm\\in\\mathbb R^m_+`,
:math:`s_h \\ge 0`)

.. math::

    \\min\\ \\langle C,Y\\rangle + w^T(s^+ + s^-)\\quad\\text{s.t.}\\quad
    \\mathcal A(Y) - s^+ + s^- = \\bar D,\\quad [\\langle H, Y\\rangle + s_h = 0],

with :math:`\\mathcal A(Y)_e = \\langle q_eq_e^T, Y\\rangle`, and its dual

.. math::

    \\max\\ \\bar D^T u\\quad\\text{s.t.}\\quad Z = C - \\mathcal A^T u - \\eta H \\succeq 0,
    \\quad z^\\pm = w \\pm u \\ge 0,\\quad z_h = -\\eta \\ge 0.

In the convention of :func:`sdpembed.lowrank.certify` the multipliers are
:math:`y = -u`, :math:`\\nu = -\\eta \\ge 0`, so that
:math:`Z = S(y,\\nu) = C + \\sum_e y_e q_eq_e^T + \\nu H`, :math:`|y|\\le w`, and
the dual objective is :math:`-\\bar D^Ty`.

Newton system
-------------
Mehrotra predictor–corrector with Nesterov–Todd scaling for the PSD block
(Todd, Toh & Tütüncü 1998): with :math:`Y = LL^T`, :math:`Z = RR^T`,
:math:`R^TL = U\\Lambda V^T` (SVD) and :math:`G = LV\\Lambda^{-1/2}`, the
scaling matrix :math:`W = GG^T` satisfies :math:`WZW = Y` and
:math:`G^{-1}YG^{-T} = G^TZG = \\Lambda`. The linearised complementarity
:math:`\\Lambda\\circ(\\Delta\\tilde Y + \\Delta\\tilde Z) = R_c` in the scaled
space (:math:`X\\circ Y = (XY+YX)/2`; :math:`R_c = \\sigma\\mu I - \\Lambda^2`
minus the corrector :math:`\\Delta\\tilde Y_a\\circ\\Delta\\tilde Z_a`) reads
:math:`\\Delta Y + W\\Delta ZW = K := G\\,\\mathcal L_\\Lambda^{-1}(R_c)\\,G^T`,
and for the linear pairs :math:`z\\Delta s + s\\Delta z = r_c`. Eliminating
:math:`\\Delta s^\\pm`, :math:`\\Delta z^\\pm` and the multipliers
:math:`\\Delta u = d\\odot(g - \\mathcal A\\Delta Y)`, with
:math:`d = (s^+/z^+ + s^-/z^-)^{-1}` and :math:`g` collecting the residuals,
leaves the normal equations in the :math:`p = r(r+1)/2` coordinates of
:math:`\\mathrm{svec}(\\Delta Y)`:

.. math::

    \\big(W^{-1}\\circledast W^{-1} + A^T\\mathrm{diag}(d)A\\ [+\\ d_h hh^T]\\big)
    \\,\\mathrm{svec}\\,\\Delta Y
    = A^T(d\\odot g) + \\mathrm{svec}(W^{-1}KW^{-1} - R_d)\\ [+\\ d_hg_h h],

:math:`A` the dense :math:`m\\times p` matrix of rows
:math:`\\mathrm{svec}(q_eq_e^T)` (formed once), :math:`h = \\mathrm{svec}\\,H`,
:math:`R_d` the dual residual. The matrix is symmetric positive definite;
forming :math:`A^T\\mathrm{diag}(d)A` (one ``dsyrk``, :math:`mp^2` flops) is
the cost of an iteration. It is factored by Cholesky, with a small diagonal
shift if that fails. The same factor serves predictor and corrector.

Termination: relative gap :math:`|p - d|/(1 + |p| + |d|)`, relative primal and
dual residuals all below ``tol``, or an iteration / time limit, or a step that
makes no progress (status ``"stalled"``). The caller certifies the result
independently (weak duality with an exact eigenvalue), so a loose stop costs
accuracy, never validity.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
from scipy.linalg import blas

from .alm import _ALM
from .certificate import _best_certificate, relative_gap
from .ipm_common import (
    _cholesky,
    _skron,
    _step_lp,
    _step_psd,
    factor_from_gram,
    smat,
    svec,
    svec_outer_rows,
)
from .options import LowRankOptions
from .penalty import DistancePenalty
from .result import LowRankResult, _SolveState
from .space import FactorSpace

__all__ = ["ReducedIPMResult", "interval_ipm"]

logger = logging.getLogger(__name__)


#: the stall test applies once max(relative gap, residuals) is below this
_END_GAME = 1e-5


# ----------------------------------------------------------------------- result
@dataclass
class ReducedIPMResult:
    """Outcome of :func:`interval_ipm` (multipliers in :func:`sdpembed.lowrank.certify`'s sign)."""

    Y: np.ndarray
    y: np.ndarray
    nu: float
    status: str                 # "optimal", "max_iter", "time_limit", "stalled", "numerical"
    iterations: int
    primal_objective: float
    dual_objective: float
    seconds: float
    history: list[dict] = field(default_factory=list)


@dataclass
class _Point:
    Y: np.ndarray
    Z: np.ndarray
    sp: np.ndarray
    sm: np.ndarray
    u: np.ndarray
    zp: np.ndarray
    zm: np.ndarray
    sh: float = 0.0
    eta: float = 0.0
    zh: float = 0.0


class _Problem:
    """The data of the standard form, with its linear maps."""

    def __init__(self, C, E, t, w, H):
        self.r = C.shape[0]
        self.C = 0.5 * (C + C.T)
        self.t = np.asarray(t, dtype=float)
        self.w = np.asarray(w, dtype=float)
        # m x p, column-major: the scaled copy of each iteration keeps that layout and goes
        # to dsyrk without a transposing copy
        self.A = svec_outer_rows(np.asarray(E, dtype=float))
        self.H = None if H is None else 0.5 * (H + H.T)
        self.h = None if H is None else svec(self.H)
        self.n_cone = self.r + 2 * self.t.size + (1 if H is not None else 0)
        self.norm_b = 1.0 + float(np.linalg.norm(self.t))
        self.norm_c = 1.0 + float(np.linalg.norm(self.C)) + float(np.linalg.norm(self.w))

    def op(self, Y):
        return self.A @ svec(Y)

    def adj(self, u):
        return smat(self.A.T @ u, self.r)


def _nt_scaling(Y, Z):
    """``(G, lam)``: :math:`W = GG^T`, :math:`G^{-1}YG^{-T} = G^TZG = \\mathrm{diag}(\\lambda)`."""
    L = np.linalg.cholesky(Y)
    R = np.linalg.cholesky(Z)
    U, lam, Vt = np.linalg.svd(R.T @ L)
    G = (L @ Vt.T) / np.sqrt(lam)
    return G, lam


def _lyap(lam, Rc):
    """Solve :math:`\\Lambda\\circ X = R_c`: :math:`X_{ij} = 2R_{ij}/(\\lambda_i+\\lambda_j)`."""
    return 2.0 * Rc / (lam[:, None] + lam[None, :])


def interval_ipm(C: np.ndarray, E: np.ndarray, t: np.ndarray, w: np.ndarray,
                 H: np.ndarray | None = None, *, tol: float = 1e-9, max_iter: int = 100,
                 time_limit: float = np.inf, stall_iterations: int = 4) -> ReducedIPMResult:
    """Solve the reduced interval SDP (module docstring) by a primal-dual interior-point method.

    Parameters
    ----------
    C : ndarray (r, r)
        Objective on the reduced space.
    E : ndarray (m, r)
        Edge difference vectors :math:`q_e` (rows).
    t : ndarray (m,)
        Target squared distances :math:`\\bar D_e > 0`.
    w : ndarray (m,)
        Weights :math:`w_e > 0` of :math:`|q_e^TYq_e - \\bar D_e|`.
    H : ndarray (r, r), optional
        SNR functional: adds :math:`\\langle H, Y\\rangle \\le 0`.
    tol : float
        Relative gap and relative residuals at which to stop.
    max_iter : int
    time_limit : float
        Seconds.
    stall_iterations : int
        Stop (status ``"stalled"``) after this many iterations without reducing
        :math:`\\max(\\text{gap}, \\text{residuals})` by 30 %; the best iterate is returned.
        On small digit instances the end game stalls near a relative gap of
        1e-8 (degenerate optimal faces), far below the accuracy a certificate
        needs.

    Returns
    -------
    ReducedIPMResult
        The best iterate seen: ``Y``, the multipliers ``y`` (:math:`|y|\\le w`) and
        ``nu`` (:math:`\\ge 0`) with
        :math:`S = C + \\sum_e y_eq_eq_e^T + \\nu H` and dual objective
        :math:`-\\bar D^Ty`, and the status.
    """
    t0 = time.perf_counter()
    pb = _Problem(C, E, t, w, H)
    x = _initial_point(pb)
    history: list[dict] = []
    status = "max_iter"
    it = 0
    best: tuple | None = None      # (merit, point, residuals) of the best iterate so far
    since_best = 0
    for it in range(1, max_iter + 1):
        res = _Residuals(pb, x)
        entry = res.summary(it, time.perf_counter() - t0)
        history.append(entry)
        merit = res.merit
        since_best = 0 if best is None or merit < 0.7 * best[0] or merit > _END_GAME \
            else since_best + 1
        if best is None or merit < best[0]:
            best = (merit, x, res)
        if merit <= tol:
            status = "optimal"
            break
        if time.perf_counter() - t0 > time_limit:
            status = "time_limit"
            break
        if since_best >= stall_iterations:
            # the end game lost accuracy (ill-conditioned Newton systems, lost centrality)
            status = "stalled"
            break
        try:
            newton = _Newton(pb, x, res)
        except np.linalg.LinAlgError:
            status = "numerical"
            break
        x, info = newton.step(relgap=res.relgap, first=it == 1)
        entry.update(info)
        logger.info("reduced IPM %d: %s", it, entry)
        if max(info["step_primal"], info["step_dual"]) < 1e-8:
            status = "stalled"
            break
    _, x, res = best
    return ReducedIPMResult(Y=x.Y, y=-x.u, nu=max(0.0, -x.eta), status=status, iterations=it,
                            primal_objective=res.pobj, dual_objective=res.dobj,
                            seconds=time.perf_counter() - t0, history=history)


class _Residuals:
    """Residuals, objectives and complementarity of a point."""

    def __init__(self, pb: _Problem, x: _Point):
        self.rp = pb.t - pb.A @ svec(x.Y) + x.sp - x.sm
        self.Rd = pb.C - pb.adj(x.u) - x.Z - (x.eta * pb.H if pb.H is not None else 0.0)
        self.rzp = pb.w + x.u - x.zp
        self.rzm = pb.w - x.u - x.zm
        self.rh = -(float(np.sum(pb.H * x.Y)) if pb.H is not None else 0.0) - x.sh
        self.rzh = -x.eta - x.zh
        self.pobj = float(np.sum(pb.C * x.Y) + pb.w @ (x.sp + x.sm))
        self.dobj = float(pb.t @ x.u)
        self.gap = float(np.sum(x.Y * x.Z) + x.sp @ x.zp + x.sm @ x.zm + x.sh * x.zh)
        self.mu = self.gap / pb.n_cone
        rp, rzp, rzm = self.rp, self.rzp, self.rzm
        self.pinf = float(np.sqrt(rp @ rp + self.rh**2)) / pb.norm_b
        self.dinf = float(np.sqrt(np.sum(self.Rd**2) + rzp @ rzp + rzm @ rzm
                                  + self.rzh**2)) / pb.norm_c
        self.relgap = abs(self.pobj - self.dobj) / (1.0 + abs(self.pobj) + abs(self.dobj))
        self.merit = max(self.relgap, self.pinf, self.dinf)

    def summary(self, it: int, seconds: float) -> dict:
        return {"iter": it, "pobj": self.pobj, "dobj": self.dobj, "relgap": self.relgap,
                "pinf": self.pinf, "dinf": self.dinf, "mu": self.mu, "seconds": seconds}


@dataclass
class _Direction:
    dY: np.ndarray
    dZ: np.ndarray
    dsp: np.ndarray
    dsm: np.ndarray
    du: np.ndarray
    dzp: np.ndarray
    dzm: np.ndarray
    dsh: float
    deta: float
    dzh: float


class _Newton:
    """The factored normal equations at a point (NT scaling) and its predictor–corrector step."""

    def __init__(self, pb: _Problem, x: _Point, res: _Residuals):
        self.pb, self.x, self.res = pb, x, res
        self.G, self.lam = _nt_scaling(x.Y, x.Z)
        self.Ginv = np.linalg.inv(self.G)
        self.Winv = self.Ginv.T @ self.Ginv
        self.d = 1.0 / (x.sp / x.zp + x.sm / x.zm)
        As = np.multiply(pb.A, np.sqrt(self.d)[:, None], order="F")
        M = blas.dsyrk(1.0, As, trans=1, lower=0)
        M = np.triu(M) + np.triu(M, 1).T
        M += _skron(self.Winv)
        self.dh = 0.0
        if pb.H is not None:
            self.dh = x.zh / x.sh
            M += self.dh * np.outer(pb.h, pb.h)
        self.cf, self.shift = _cholesky(M)

    def direction(self, Rc, cp, cm, ch) -> _Direction:
        """Newton direction for the complementarity right-hand sides (scaled PSD block, LP)."""
        pb, x, res, d, dh = self.pb, self.x, self.res, self.d, self.dh
        K = self.G @ _lyap(self.lam, Rc) @ self.G.T
        g = res.rp + (cp - x.sp * res.rzp) / x.zp - (cm - x.sm * res.rzm) / x.zm
        rhs = pb.A.T @ (d * g) + svec(self.Winv @ K @ self.Winv - res.Rd)
        gh = 0.0
        if pb.H is not None:
            gh = res.rh - (ch - x.sh * res.rzh) / x.zh
            rhs = rhs + dh * gh * pb.h
        dYv = sla.cho_solve(self.cf, rhs, check_finite=False)
        du = d * (g - pb.A @ dYv)
        deta = dh * (gh - pb.h @ dYv) if pb.H is not None else 0.0
        dZ = res.Rd - pb.adj(du) - (deta * pb.H if pb.H is not None else 0.0)
        dzp, dzm, dzh = res.rzp + du, res.rzm - du, res.rzh - deta
        return _Direction(
            dY=smat(dYv, pb.r), dZ=0.5 * (dZ + dZ.T), dsp=(cp - x.sp * dzp) / x.zp,
            dsm=(cm - x.sm * dzm) / x.zm, du=du, dzp=dzp, dzm=dzm,
            dsh=(ch - x.sh * dzh) / x.zh if pb.H is not None else 0.0, deta=deta, dzh=dzh)

    def max_steps(self, v: _Direction) -> tuple[float, float]:
        """Largest primal and dual steps that keep the cone constraints."""
        x = self.x
        ap = min(_step_psd(x.Y, v.dY), _step_lp(x.sp, v.dsp), _step_lp(x.sm, v.dsm))
        ad = min(_step_psd(x.Z, v.dZ), _step_lp(x.zp, v.dzp), _step_lp(x.zm, v.dzm))
        if self.pb.H is not None:
            ap = min(ap, _step_lp(np.array([x.sh]), np.array([v.dsh])))
            ad = min(ad, _step_lp(np.array([x.zh]), np.array([v.dzh])))
        return ap, ad

    def step(self, *, relgap: float, first: bool) -> tuple[_Point, dict]:
        """Mehrotra predictor–corrector step; returns the new point and step information."""
        x, mu, lam = self.x, self.res.mu, self.lam
        Lam2 = np.diag(lam * lam)
        aff = self.direction(-Lam2, -x.sp * x.zp, -x.sm * x.zm, -x.sh * x.zh)
        ap, ad = (min(1.0, a) for a in self.max_steps(aff))
        gap_aff = float(np.sum((x.Y + ap * aff.dY) * (x.Z + ad * aff.dZ))
                        + (x.sp + ap * aff.dsp) @ (x.zp + ad * aff.dzp)
                        + (x.sm + ap * aff.dsm) @ (x.zm + ad * aff.dzm)
                        + (x.sh + ap * aff.dsh) * (x.zh + ad * aff.dzh))
        sigma = min(1.0, max(0.0, gap_aff / max(self.res.gap, 1e-300))) ** 3
        # corrector: the second-order term in the scaled space
        dYs = self.Ginv @ aff.dY @ self.Ginv.T
        dZs = self.G.T @ aff.dZ @ self.G
        corr = 0.5 * (dYs @ dZs + dZs @ dYs)
        smu = sigma * mu
        v = self.direction(smu * np.eye(self.pb.r) - Lam2 - corr,
                           smu - x.sp * x.zp - aff.dsp * aff.dzp,
                           smu - x.sm * x.zm - aff.dsm * aff.dzm,
                           smu - x.sh * x.zh - aff.dsh * aff.dzh)
        ap, ad = self.max_steps(v)
        gamma = 0.9 if first else 0.9 + 0.09 * min(1.0, 1.0 - relgap)
        ap, ad = min(1.0, gamma * ap), min(1.0, gamma * ad)
        Y, Z = x.Y + ap * v.dY, x.Z + ad * v.dZ
        new = _Point(Y=0.5 * (Y + Y.T), Z=0.5 * (Z + Z.T), sp=x.sp + ap * v.dsp,
                     sm=x.sm + ap * v.dsm, u=x.u + ad * v.du, zp=x.zp + ad * v.dzp,
                     zm=x.zm + ad * v.dzm, sh=x.sh + ap * v.dsh, eta=x.eta + ad * v.deta,
                     zh=x.zh + ad * v.dzh)
        return new, {"step_primal": ap, "step_dual": ad, "sigma": sigma, "shift": self.shift}


def _initial_point(pb: _Problem) -> _Point:
    """Primal feasible for the distance rows (:math:`s^+ - s^- = \\mathcal A(Y_0) - \\bar D`),
    :math:`Y_0 = \\xi I` matched to the mean target, :math:`Z_0 = \\zeta I`, :math:`u = 0`."""
    r = pb.r
    qq = np.sum(pb.A[:, np.r_[[k * r - k * (k - 1) // 2 for k in range(r)]]], axis=1)  # |q_e|^2
    xi = float(np.mean(pb.t)) / max(float(np.mean(qq)), 1e-300)
    Y = xi * np.eye(r)
    zeta = max(1.0, float(np.linalg.norm(pb.C, 2)), float(np.max(pb.w)) * float(np.max(qq)))
    Z = zeta * np.eye(r)
    mu = xi * zeta
    res = xi * qq - pb.t
    floor = np.maximum(mu / pb.w, 1e-3 * pb.t)
    sp = np.maximum(res, 0.0) + floor
    sm = np.maximum(-res, 0.0) + floor
    u = np.zeros_like(pb.t)
    x = _Point(Y=Y, Z=Z, sp=sp, sm=sm, u=u, zp=pb.w.copy(), zm=pb.w.copy())
    if pb.H is not None:
        x.sh = max(-float(np.sum(pb.H * Y)), 0.0) + mu / zeta
        x.zh = zeta
        x.eta = -zeta
    return x


#: stopping tolerance (relative gap and residuals) of the reduced interior-point method
_IPM_TOL = 1e-9


def _reduced_ipm(space: FactorSpace, pen: DistancePenalty, alm: _ALM, opts: LowRankOptions,
                 t0: float, state: _SolveState, deadline: float = np.inf
                 ) -> LowRankResult | None:
    """Reduced interval problem by :func:`interval_ipm`, then certified.

    The factor is :math:`W = Y^{1/2}` (negligible eigenvalues dropped), the
    objective is the true one at :math:`F = QW` and the bound comes from
    :func:`certify` at the IPM's multipliers, exactly as for the augmented
    Lagrangian. Returns ``None`` (after recording why in
    ``state.reduced_solver``) when ``reduced_solver="auto"`` should fall
    back to the augmented Lagrangian. The interior-point iterations stop at ``deadline``
    (a :func:`time.perf_counter` value, the solve's loop deadline).
    """
    try:
        res = interval_ipm(space.Cq, space.E, pen.t, pen.w, space.Hq, tol=_IPM_TOL,
                           time_limit=max(deadline - time.perf_counter(), 0.0))
    except (np.linalg.LinAlgError, FloatingPointError, ValueError) as exc:
        if opts.reduced_solver == "ipm":
            raise
        logger.warning("reduced IPM failed (%s); falling back to the augmented Lagrangian", exc)
        state.reduced_solver = {"solver": "alm", "fallback_from": "ipm",
                                "reason": f"{type(exc).__name__}: {exc}"}
        return None
    W = factor_from_gram(res.Y, rel_tol=1e-10)
    p = alm.true_objective(W)
    certificate = _best_certificate(space, pen, W, [(res.y, res.nu)], opts,
                                    state.certificates)
    gap = relative_gap(p, certificate.bound)
    quad, _, h = alm.objective_parts(W)
    infeas = space.snr_violation(h, quad)
    ok = gap is not None and gap <= opts.tol and infeas <= opts.feas_tol
    record = {"solver": "ipm", "status": res.status, "iterations": res.iterations,
              "seconds": res.seconds, "primal_objective": res.primal_objective,
              "dual_objective": res.dual_objective, "certified_gap": gap}
    if not ok and opts.reduced_solver == "auto":
        logger.warning("reduced IPM stopped (%s) with certified gap %s > tol; falling back to "
                       "the augmented Lagrangian", res.status, gap)
        state.reduced_solver = {"solver": "alm", "fallback_from": record}
        return None
    return LowRankResult(
        factor=space.points(W), objective=p, bound=certificate.bound, certified_gap=gap,
        infeasibility=infeas, y=certificate.y, nu=certificate.nu,
        status="optimal" if ok else "optimal_inaccurate",
        iterations=res.iterations, seconds=time.perf_counter() - t0, history=res.history,
        certificate=certificate, function_evaluations=0, reduced_solver=record,
        warm_start=state.warm_start, stop_reason=res.status)

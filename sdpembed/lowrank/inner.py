"""Inner solvers of the augmented-Lagrangian subproblems: L-BFGS, Newton–CG, line searches."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

logger = logging.getLogger(__name__)

#: seconds between the progress lines of one subproblem (``verbose``: the ``sdpembed.lowrank``
#: logger at INFO), so that a long subproblem is not silent until its outer iteration ends
_PROGRESS_INTERVAL = 5.0


class _Progress:
    """A progress line every :data:`_PROGRESS_INTERVAL` seconds of one inner solve, when the
    ``sdpembed.lowrank`` logger shows INFO (``verbose``); otherwise one comparison per
    iteration."""

    def __init__(self, method: str):
        self.method = method
        self.on = logger.isEnabledFor(logging.INFO)
        self.t0 = time.perf_counter()
        self.due = self.t0 + _PROGRESS_INTERVAL

    def __call__(self, it: int, work: str, f: float, g: np.ndarray) -> None:
        if not self.on:
            return
        now = time.perf_counter()
        if now < self.due:
            return
        self.due = now + _PROGRESS_INTERVAL
        logger.info(f"   ... | {self.method} iteration {it:6d}, {work} | "
                    f"AL {f:+.9e} | |grad| {float(np.linalg.norm(g)):8.2e} | "
                    f"{now - self.t0:7.1f} s in this subproblem")


#: why an inner solve stopped (``_LBFGSResult.stop``; the ``inner_stop`` of a LOWRANK
#: history entry): its gradient test, its iteration cap, its evaluation cap (L-BFGS's
#: ``maxfun``), the relative decrease below ``ftol`` (L-BFGS), the tail window (L-BFGS), the
#: line search finding no acceptable step, no descent direction (L-BFGS, after a restart
#: from the gradient), an accepted step that lowered neither the value nor the gradient
#: (Newton-CG's rounding floor), or the deadline
STOPS = ("gtol", "maxiter", "maxfun", "ftol", "window", "line_search", "no_descent",
         "rounding_floor", "deadline")


@dataclass
class _LBFGSResult:
    x: np.ndarray
    nit: int
    gnorm: float
    #: one of :data:`STOPS` (Newton-CG that fell back to L-BFGS: both, ``"a, then b"``)
    stop: str = ""


def _loop_stop(it: int, maxiter: int, gnorm: float, gtol: float, nfev: int = 0,
               maxfun: float = np.inf) -> str:
    """Which of a loop's own conditions ended it (none broke out of it): the gradient test
    first, then the iteration cap, the evaluation cap, else the deadline."""
    if not gnorm > gtol:
        return "gtol"
    if it >= maxiter:
        return "maxiter"
    if nfev >= maxfun:
        return "maxfun"
    return "deadline"


def _armijo(fun, x, f, d, slope, *, c1=1e-4, max_halvings=40):
    r"""First step ``1, 1/2, 1/4, ...`` along ``d`` with sufficient decrease
    :math:`f(x+td)\le f(x) + c_1 t\,g^Td`; ``(x_new, f_new, g_new)`` or ``None``."""
    step = 1.0
    for _ in range(max_halvings):
        xn = x + step * d
        fn, gn = fun(xn)
        if fn <= f + c1 * step * slope:
            return xn, fn, gn
        step *= 0.5
    return None


def _newton_cg(fun, hess_at, x0: np.ndarray, *, gtol: float, maxiter: int,
               max_cg: int = 250, deadline: float = np.inf, precond_at=None) -> _LBFGSResult:
    r"""Truncated (inexact) Newton–CG with Armijo backtracking.

    Each iteration solves :math:`H d = -g` by conjugate gradients to the
    relative residual :math:`\eta_k = \min(1/2, \sqrt{\|g_k\|/\|g_0\|})` (the
    forcing sequence of Eisenstat & Walker, which gives superlinear local
    convergence), stopping early on non-positive curvature (the factorised
    problem is non-convex; the CG iterate so far, or :math:`-g` at the first
    CG step, is still a descent direction). ``hess_at(x)`` returns the
    Hessian-vector product at ``x`` (generalised Hessian for the Huber
    envelope). ``precond_at(x)``, if given, returns :math:`M^{-1}` for a symmetric positive
    definite :math:`M \approx H` (preconditioned CG: the same iteration in the
    :math:`M`-inner product, whose count follows the spectrum of :math:`M^{-1}H`); a
    non-positive curvature at the first step then falls back to :math:`-M^{-1}g`, still
    a descent direction. Memory is a few vectors, unlike Krylov trust-region solvers
    that keep their whole basis. Stops at ``gtol``, ``maxiter``, the ``deadline``, when
    no descent step is found, or when an accepted step lowers neither :math:`f` nor
    :math:`\|g\|` (the rounding floor: Armijo accepts :math:`f_{k+1} = f_k` once
    :math:`c_1 t\,g^Td` is below the spacing of doubles at :math:`f_k`); the result's
    ``stop`` names which (:data:`STOPS`).
    """
    x = x0.copy()
    f, g = fun(x)
    gn = g0 = float(np.linalg.norm(g))
    it = 0
    progress = _Progress("Newton-CG")
    ncg = 0
    stop = None
    while it < maxiter and gn > gtol and time.perf_counter() < deadline:
        it += 1
        hv = hess_at(x)
        Minv = precond_at(x) if precond_at is not None else None
        eta = min(0.5, np.sqrt(gn / max(g0, 1e-300)))
        d = np.zeros_like(x)
        r = -g
        z = r if Minv is None else Minv(r)
        p = z.copy()
        rz = float(r @ z)
        for j in range(max_cg):
            Hp = hv(p)
            ncg += 1
            pHp = float(p @ Hp)
            if pHp <= 1e-14 * float(p @ p) * max(abs(f), 1.0):
                if j == 0:
                    d = -g if Minv is None else z
                break
            alpha = rz / pHp
            d += alpha * p
            r -= alpha * Hp
            if np.sqrt(float(r @ r)) <= eta * gn:
                break
            z = r if Minv is None else Minv(r)
            rz_new = float(r @ z)
            p = z + (rz_new / rz) * p
            rz = rz_new
        slope = float(g @ d)
        if slope >= 0:
            d, slope = -g, -gn * gn
        found = _armijo(fun, x, f, d, slope)
        if found is None:
            stop = "line_search"
            break
        gn_new = float(np.linalg.norm(found[2]))
        if found[1] >= f and gn_new >= gn:
            # at the rounding floor: the accepted step lowered neither f nor |g|, and
            # every further iteration would repeat it
            stop = "rounding_floor"
            break
        x, f, g = found
        gn = gn_new
        progress(it, f"{ncg:6d} Hessian products", f, g)
    return _LBFGSResult(x, it, gn, stop or _loop_stop(it, maxiter, gn, gtol))


def _wolfe(fun, x, f, d, slope, step=1.0, *, c1=1e-4, c2=0.9, max_evals=40):
    r"""A step :math:`t` along ``d`` with the weak Wolfe conditions, by bracketing.

    :math:`f(x+td) \le f + c_1 t\,g^Td` (sufficient decrease) and
    :math:`g(x+td)^Td \ge c_2\,g^Td` (curvature, which makes :math:`s^Ty > 0`
    for the quasi-Newton update): halve towards the last acceptable step when
    the decrease fails, double while the curvature fails and no upper end is
    known, bisect otherwise (Lewis & Overton 2013). ``(x_new, f_new, g_new)``;
    ``None`` if no step gave sufficient decrease; the last point with
    sufficient decrease if the curvature condition was never met.
    """
    lo, hi = 0.0, np.inf
    best = None
    for _ in range(max_evals):
        xn = step * d
        xn += x
        fn, gn = fun(xn)
        if not fn <= f + c1 * step * slope:
            hi = step
        elif float(gn @ d) < c2 * slope:
            lo, best = step, (xn, fn, gn)
        else:
            return xn, fn, gn
        step = 0.5 * (lo + hi) if np.isfinite(hi) else 2.0 * lo
    return best


_trtri = sla.get_lapack_funcs("trtri", dtype=np.float64)


class _Pairs:
    r"""The L-BFGS memory in the compact form of Byrd, Nocedal & Schnabel (1994):
    :math:`H_k = \gamma M^{-1} + [S\ \gamma Z]\,K\,[S\ \gamma Z]^T` with :math:`Z = M^{-1}Y`,
    :math:`K = \begin{bmatrix} R^{-T}(D + \gamma Y^TZ)R^{-1} & -R^{-T} \\ -R^{-1} & 0
    \end{bmatrix}`, :math:`R` the upper triangle of :math:`S^TY` (pairs oldest first) and
    :math:`D` its diagonal: the matrix of the two-loop recursion, applied with two
    matrix-vector products over the stored pairs instead of :math:`4m` vector operations.

    The pairs are the rows of one ``(2 memory, N)`` single-precision array (``s`` and
    ``z`` of a slot side by side; slots ``0 .. used-1``, a ring once full): the products are
    memory-bound, and single precision halves the bytes read. The small matrices
    :math:`S^TY` and :math:`Y^TZ` (double) need, for each new pair, its products with the
    stored ones, :math:`[S\ Z]^Ty_k`; they are taken as :math:`[S\ Z]^Tg_{k+1} - [S\ Z]^Tg_k`
    from the products the directions compute anyway (``M`` symmetric:
    :math:`z_i^Ty = y_i^TM^{-1}y`), so each iteration reads the pairs twice."""

    def __init__(self, memory: int, N: int):
        self.memory = memory
        self.P = np.empty((2 * memory, N), dtype=np.float32)
        # oldest pair first: R[i, j] = s_i^T y_j (i <= j, zero below), YZ[i, j] = y_i^T z_j
        self.R = np.zeros((memory, memory))
        self.YZ = np.zeros((memory, memory))
        self.w = np.zeros(2 * memory)          # [S Z]^T g at the last direction's gradient
        ar = np.arange(memory)
        self.orders = [(ar + h) % memory for h in range(memory)]  # slots, oldest first
        self.rows_s = [2 * o for o in self.orders]   # their s rows, oldest first
        self.rows_z = [2 * o + 1 for o in self.orders]
        self.used = self.head = 0
        self.owed = False                      # the newest pair's products with the others

    def reset(self) -> None:
        self.used = self.head = 0
        self.owed = False

    def add(self, s: np.ndarray, z: np.ndarray, sy: float, yz: float) -> None:
        """Store the pair :math:`(s, z = M^{-1}y)` (``y = g_new - g`` with ``g`` the
        gradient of the last :meth:`direction`) in the oldest slot."""
        m, h = self.memory, self.head
        R, YZ = self.R, self.YZ
        if self.used == m:  # the oldest pair leaves
            R[:-1, :-1] = R[1:, 1:]
            YZ[:-1, :-1] = YZ[1:, 1:]
        else:
            self.used += 1
        j = self.used - 1
        R[j, :j] = 0.0
        R[j, j], YZ[j, j] = sy, yz
        self.P[2 * h] = s
        self.P[2 * h + 1] = z
        self.head = (h + 1) % m
        self.owed = True

    def direction(self, g: np.ndarray, Mg: np.ndarray, gamma: float) -> np.ndarray:
        r""":math:`-H_k g` (``Mg`` is :math:`M^{-1}g`)."""
        k, m = self.used, self.memory
        P = self.P[:2 * k]
        w = (P @ g.astype(np.float32)).astype(float)
        h = self.head if k == m else 0
        rs, rz = self.rows_s[h][:k], self.rows_z[h][:k]
        R, YZ = self.R[:k, :k], self.YZ[:k, :k]
        if self.owed:  # [S Z]^T y of the older pairs, y = g - g_prev
            v = w - self.w[:2 * k]
            R[:-1, -1] = v[rs[:-1]]
            YZ[:-1, -1] = YZ[-1, :-1] = v[rz[:-1]]
            self.owed = False
        self.w[:2 * k] = w
        Rinv, _ = _trtri(R)
        a, b = w[rs], w[rz]
        u = Rinv @ a
        p = Rinv.T @ (R.diagonal() * u + gamma * (YZ @ u - b))
        c = np.empty(2 * k, dtype=np.float32)
        c[rs], c[rz] = p, -gamma * u
        # -(gamma Mg + [S Z] c) in two passes over N (the same numbers as negating the
        # sum: rounding to nearest is symmetric)
        d = np.multiply(Mg, -gamma)
        d -= c @ P
        return d


def _norm(g: np.ndarray, order: float) -> float:
    """``np.linalg.norm(g, order)`` of a vector; the max-norm without the array of
    absolute values."""
    if order == np.inf:
        return max(float(g.max()), -float(g.min())) if g.size else 0.0
    return float(np.linalg.norm(g, order))


def _lbfgs(fun, x0: np.ndarray, *, gtol: float, maxiter: int, precond=None,
           memory: int = 20, ftol: float = 1e-15, maxfun: int | None = None,
           stop_norm: float = np.inf, deadline: float = np.inf,
           window: tuple[int, float] = (0, 0.0)) -> _LBFGSResult:
    r"""Limited-memory BFGS with a weak-Wolfe line search (:func:`_wolfe`), on flat arrays.

    The search direction is :math:`-H_k g_k`, the BFGS matrix of the
    last ``memory`` pairs :math:`(s_i, y_i)`, with initial inverse Hessian
    :math:`\gamma_k M^{-1}`, :math:`\gamma_k = s^Ty / y^TM^{-1}y` (``precond(g)``
    applies :math:`M^{-1}`; ``None`` is :math:`M = I`). Pairs with
    :math:`s^Ty \le 0` are skipped, which keeps :math:`H_k \succ 0`. Without a
    preconditioner the first trial step is :math:`1/\|g_0\|_2` long (as in L-BFGS-B);
    every other trial step starts at 1. Stops when
    :math:`\|g\|_{\text{stop\_norm}} \le` ``gtol``, when the relative decrease
    :math:`(f_k - f_{k+1})/\max(|f_k|, |f_{k+1}|, 1) \le` ``ftol`` (the tests of
    L-BFGS-B), after ``maxiter`` iterations or ``maxfun`` evaluations (default
    ``20 * maxiter + 100``), at the ``deadline`` (a :func:`time.perf_counter` value), or,
    with ``window = (k, delta)`` and ``k > 0``, once the last ``k`` iterations decreased
    :math:`f` by at most ``delta`` (an absolute test of the tail); the result's ``stop``
    names which (:data:`STOPS`).

    The pairs live in one single-precision array, applied in the compact form
    (:class:`_Pairs`: two matrix-vector products per direction); faster
    than :func:`scipy.optimize.minimize` with L-BFGS-B, whose bound handling the
    unconstrained subproblems never use.
    """
    x = np.array(x0, dtype=float)
    N = x.size
    nfev = [0]

    def evaluate(z):
        nfev[0] += 1
        return fun(z)

    f, g = evaluate(x)
    pairs = _Pairs(memory, N)
    gamma = 1.0
    maxfun = maxfun if maxfun is not None else 20 * maxiter + 100
    it = 0
    progress = _Progress("L-BFGS")
    M = precond if precond is not None else (lambda v: v)
    k_win, delta = window
    f_hist = np.full(max(k_win, 1), np.inf)  # f of the last k iterates, a ring
    stop = None
    while (it < maxiter and _norm(g, stop_norm) > gtol and nfev[0] < maxfun
           and time.perf_counter() < deadline):
        it += 1
        d = pairs.direction(g, M(g), gamma) if pairs.used else -np.array(M(g), dtype=float)
        slope = float(g @ d)
        if slope >= 0:  # not a descent direction: restart from the (preconditioned) gradient
            pairs.reset()
            d = -M(g)
            slope = float(g @ d)
            if slope >= 0:
                stop = "no_descent"
                break
        step = 1.0 if it > 1 or precond is not None else 1.0 / max(float(np.linalg.norm(d)),
                                                                     1e-300)
        found = _wolfe(evaluate, x, f, d, slope, step)
        if found is None:
            stop = "line_search"
            break
        xn, fn, gn_vec = found
        s_, y_ = xn - x, gn_vec - g
        sy, yy = float(s_ @ y_), float(y_ @ y_)
        if sy > 1e-16 * yy:
            z_ = y_ if precond is None else np.asarray(M(y_), dtype=float)
            yz = yy if precond is None else float(y_ @ z_)
            pairs.add(s_, z_, sy, yz)
            gamma = sy / yz
        decrease = (f - fn) / max(abs(f), abs(fn), 1.0)
        x, f, g = xn, fn, gn_vec
        if decrease <= ftol:
            stop = "ftol"
            break
        if k_win > 0:
            if it > k_win and f_hist[it % k_win] - f <= delta:
                stop = "window"
                break
            f_hist[it % k_win] = f
        progress(it, f"{nfev[0]:6d} evaluations", f, g)
    return _LBFGSResult(x, it, float(np.linalg.norm(g)), stop or _loop_stop(
        it, maxiter, _norm(g, stop_norm), gtol, nfev[0], maxfun))

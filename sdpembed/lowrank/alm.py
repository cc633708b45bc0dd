"""The augmented Lagrangian of the factorised Gram SDP and its subproblem."""

from __future__ import annotations

import numpy as np

from .gn_precond import _GN_MAX_DIM, gn_fits, gn_preconditioner, scalar_fill
from .inner import _lbfgs, _LBFGSResult, _newton_cg
from .options import LowRankOptions
from .penalty import DistancePenalty
from .space import FactorSpace


# ----------------------------------------------------------------------- the solver
class _ALM:
    """Augmented-Lagrangian Burer–Monteiro iterations on a :class:`FactorSpace`.

    ``kind`` is the penalty whose envelope the subproblems minimise: the distance
    mode, except for ``"interval"`` with ``interval_envelope="kink"`` (``"auto"`` in the
    full space), which starts on the envelope of the kink (``"equality"``) and moves to
    the Huber envelope (``"interval"``) for good at :meth:`leave_kink`.
    """

    def __init__(self, space: FactorSpace, pen: DistancePenalty, opts: LowRankOptions):
        self.space, self.pen, self.opts = space, pen, opts
        self.nfev = 0
        #: the work of the subproblems so far, in entries touched: (points + edges) x rank
        #: per evaluation or Hessian product (deterministic, unlike their seconds)
        self.work = 0
        self.deadline = np.inf
        self.kind = pen.mode
        # "shrink" (full space, objective a multiple of the identity as in MVU, so constants
        # decouple from centred factors; no SNR or added rows): Newton-CG preconditioned by
        # the whole Gauss-Newton matrix instead of block-Jacobi, where it fits
        # (docs/tuning.md, "Shrink-only MVU at n = 2,000: a whole-graph Gauss–Newton
        # preconditioner")
        C = space.C
        self.gn_newton = pen.mode == "shrink" and space.Q is None and space.H is None \
            and space.K is None and C.U.shape[1] == 0 and C.sparse is None \
            and float(np.ptp(C.diag)) <= 1e-12 * max(float(np.max(np.abs(C.diag))), 1e-300)
        self._fill: int | None = None
        if pen.mode == "interval":
            kink = opts.interval_envelope == "kink" or (
                opts.interval_envelope == "auto" and space.Q is None)
            self.kind = "equality" if kink else "interval"

    def gn_fits(self, k: int) -> bool:
        """Whether Newton-CG at rank ``k`` is preconditioned by the whole Gauss-Newton
        matrix (:mod:`.gn_precond`; the graph's fill is computed once)."""
        n = self.space.gp.n
        if not self.gn_newton or n * k > _GN_MAX_DIM:
            return False
        if self._fill is None:
            self._fill = scalar_fill(n, self.space._ends)
        return gn_fits(n, k, self._fill)

    @property
    def on_kink(self) -> bool:
        """Whether ``"interval"`` runs on the envelope of its kink."""
        return self.kind != self.pen.mode

    def leave_kink(self) -> None:
        """From now on, the Huber envelope of the ``"interval"`` penalty itself."""
        self.kind = "interval"

    def objective_parts(self, W):
        sp_ = self.space
        V = W
        CV = sp_.apply_C(V)
        quad = float(np.sum(V * CV))
        Z = sp_.diffs(V)
        D = np.einsum("ij,ij->i", Z, Z)
        h = float(np.sum(V * sp_.apply_H(V))) if sp_.H is not None else 0.0
        return quad, D, h

    def true_objective(self, W):
        quad, D, _ = self.objective_parts(W)
        return quad + self.pen.objective(D)

    def subproblem(self, y, nu, sigma, sigma_h, rho=None):
        r"""The subproblem's ``run(W0, gtol, maxiter, precond)`` at multipliers ``(y, nu)`` and
        penalties ``sigma`` (distances), ``sigma_h`` (SNR) and ``rho`` (one per added row);
        its result's ``stop`` names the inner solver and why it stopped (``"L-BFGS maxfun"``,
        ``"Newton-CG maxiter"``, ...: :data:`~.inner.STOPS`).

        An added row :math:`c_k = \langle A_k, VV^T\rangle - b_k` enters as
        :math:`(g_k^2 - z_k^2)/(2\rho_k)` with :math:`g_k = \max(0, z_k + \rho_kc_k)`
        (inequality) or :math:`z_k + \rho_kc_k` (equality), the classical augmented
        Lagrangian (Rockafellar 1973), whose gradient is :math:`2\sum_k g_kA_kV`."""
        sp_, pen = self.space, self.pen
        kind = self.kind
        shape = None
        nu = sp_.duals(nu)
        nu_h = nu[0] if sp_.H is not None else 0.0
        K = sp_.K
        if K is not None:
            z, eq = sp_.user_part(nu), K.equality

            def k_multipliers(W):
                c = sp_.K_values(W) - K.rhs
                g = z + rho * c
                return np.where(eq, g, np.maximum(g, 0.0))

        def fun(x):
            self.nfev += 1
            self.work += (shape[0] + pen.t.size) * shape[1]
            W = sp_.project(x.reshape(shape))
            CW = sp_.apply_C(W)
            Z = sp_.diffs(W)
            D = np.einsum("ij,ij->i", Z, Z)
            val, g = pen.envelope(D, y, sigma, kind)
            val += float(np.sum(W * CW))
            Z *= g[:, None]                   # Z is not needed after this: in place
            grad = sp_.ET @ Z
            grad += CW
            if sp_.H is not None:
                HW = sp_.apply_H(W)
                h = float(np.sum(W * HW))
                gs = max(0.0, nu_h + sigma_h * h)
                val += (gs * gs - nu_h * nu_h) / (2 * sigma_h)
                grad = grad + gs * HW
            if K is not None:
                gk = k_multipliers(W)
                val += float(np.sum((gk * gk - z * z) / (2.0 * rho)))
                sp_.add_K(grad, W, gk)
            grad *= 2.0
            return val, sp_.project(grad, inplace=True).ravel()

        def hess_at(x):
            """Hessian-vector product at ``x``; the point's quantities are computed once."""
            W = sp_.project(x.reshape(shape))
            Z = sp_.diffs(W)
            D = np.einsum("ij,ij->i", Z, Z)
            _, g = pen.envelope(D, y, sigma, kind)
            d2 = pen.second_derivative(D, y, sigma, kind)
            if sp_.H is not None:
                HW = sp_.apply_H(W)
                gs = max(0.0, nu_h + sigma_h * float(np.sum(W * HW)))
            if K is not None:
                gk = k_multipliers(W)
                # curvature of the added rows: rho_k where the row is active
                curv = np.where(eq | (gk > 0), rho, 0.0)

            # the distance term's products, the bulk of the work of a Newton-CG step, run
            # in single precision: they are memory-bound, and the relative error (about
            # 1e-7) is far below CG's tolerance
            E32, ET32 = sp_.E_single
            Z32 = Z.astype(np.float32)
            d2x2 = (2.0 * d2).astype(np.float32)
            gcol = g.astype(np.float32)[:, None]

            def hv(u):
                # in-place, one temporary per product
                self.work += (shape[0] + pen.t.size) * shape[1]
                U = u.reshape(shape)
                ZU = E32 @ U.astype(np.float32)
                dg = np.einsum("ij,ij->i", Z32, ZU)
                dg *= d2x2
                ZU *= gcol
                ZU += dg[:, None] * Z32
                out = np.asarray(ET32 @ ZU, dtype=float)
                out += sp_.apply_C(U)
                if sp_.H is not None:
                    out += gs * sp_.apply_H(U)
                    if gs > 0:
                        out += sigma_h * 2.0 * float(np.sum(HW * U)) * HW
                if K is not None:
                    sp_.add_K(out, U, gk)
                    sp_.add_K(out, W, curv * 2.0 * sp_.K_bilinear(W, U))
                out = sp_.project(out)
                out *= 2.0
                return out.ravel()
            return hv

        def edge_terms(x):
            """The centred factor at ``x``, its edges' difference vectors, and the edges'
            first and second derivatives of the penalty there."""
            W = sp_.project(x.reshape(shape))
            Z = sp_.diffs(W)
            D = np.einsum("ij,ij->i", Z, Z)
            _, g = pen.envelope(D, y, sigma, kind)
            return W, Z, g, pen.second_derivative(D, y, sigma, kind)

        def block_jacobi(W, Z, g, d2):
            r"""Block-Jacobi preconditioner at ``W``: the inverse of the Hessian's k x k
            diagonal block of each point,

            .. math::

                M_i = 2\max\big(c_{ii} + \textstyle\sum_{e\ni i} g_e,\ \epsilon\big) I_k
                + 4\sum_{e\ni i}\psi_e''\, z_ez_e^T,

            with :math:`g = \nabla\psi(D)`, :math:`z_e` the edge's difference vector and
            :math:`\epsilon` a thousandth of the mean of the first term (so every block is
            positive definite). The Gauss–Newton term of an edge is stiff only along
            :math:`z_e`, the direction that changes its length: the blocks hold that
            anisotropy, which an isotropic (Laplacian) preconditioner cannot, and leave the
            soft directions to the objective's scale. Full space only (on a reduced basis
            the coordinates are not points).
            Added rows :math:`\langle A_k, G\rangle` enter the same way
            (:func:`_rows_blocks`): their multipliers :math:`g_k` on the diagonal and
            their Gauss-Newton term where they are active; the SNR row's term
            :math:`g_s\langle H, G\rangle` (:math:`g_s = \max(0, \nu_h + \sigma_h\langle
            H, WW^T\rangle)`) by :math:`2g_s` times the diagonal of :math:`H`, which the
            objective's diagonal alone leaves out where :math:`g_s` is large."""
            n_, k_ = shape
            i_, j_ = sp_.gp.edges.T
            deg_g = np.bincount(i_, weights=g, minlength=n_) + np.bincount(j_, weights=g,
                                                                          minlength=n_)
            diag = 2.0 * (sp_.C.diag + deg_g)
            blocks = sp_.point_blocks(Z, 4.0 * d2)   # kept: the previous apply's is lost
            if K is not None:
                diag += 2.0 * _rows_blocks(K, W, k_multipliers(W), rho, blocks)
            if sp_.H is not None:
                gs = max(0.0, nu_h + sigma_h * float(np.sum(W * sp_.apply_H(W))))
                if gs > 0:
                    diag += 2.0 * gs * sp_.H.diag
            floor = 1e-3 * max(float(np.mean(np.abs(diag))), 1e-300)
            blocks[:, np.arange(k_), np.arange(k_)] += np.maximum(diag, floor)[:, None]
            inv = sp_.invert_blocks(blocks)

            def apply(r):
                R = r.reshape(shape)
                out = np.einsum("nab,nb->na", inv, R)
                return sp_.project(out).ravel()
            return apply

        def precond_at(x):
            """Block-Jacobi (:func:`block_jacobi`) at ``x``."""
            return block_jacobi(*edge_terms(x))

        def gn_at(x):
            """The whole-graph Gauss-Newton preconditioner at ``x`` (:mod:`.gn_precond`);
            block-Jacobi where it does not fit or cannot be factorised (the edge terms
            computed once for either)."""
            W, Z, g, d2 = edge_terms(x)
            if self.gn_fits(shape[1]):
                apply = gn_preconditioner(shape[0], shape[1], sp_._ends, Z, g, d2,
                                          sp_.C.diag, sp_.project)
                if apply is not None:
                    return apply
            return block_jacobi(W, Z, g, d2)

        def run(W0, gtol, maxiter, precond, window=(0, 0.0)):
            nonlocal shape
            shape = W0.shape
            deadline = self.deadline

            def pc(G):
                return sp_.project(precond(sp_.project(G.reshape(shape)))).ravel()
            if precond == "newton":
                res = _newton_cg(fun, hess_at, W0.ravel(), gtol=gtol, maxiter=maxiter,
                                 deadline=deadline,
                                 precond_at=None if sp_.Q is not None else (
                                     gn_at if self.gn_newton else precond_at))
                res.stop = f"Newton-CG {res.stop}"
                if res.gnorm > gtol and res.nit < maxiter:  # no descent found: L-BFGS
                    r = _lbfgs(fun, res.x, gtol=gtol, maxiter=20 * maxiter, deadline=deadline)
                    res = _LBFGSResult(r.x, res.nit + r.nit, r.gnorm,
                                       f"{res.stop}, then L-BFGS {r.stop}")
            elif precond is None:
                res = _lbfgs(fun, W0.ravel(), gtol=gtol, maxiter=maxiter, maxfun=2 * maxiter,
                             deadline=deadline, window=window)
                res.stop = f"L-BFGS {res.stop}"
            else:
                res = _lbfgs(fun, W0.ravel(), gtol=gtol, maxiter=maxiter, precond=pc,
                             memory=10, stop_norm=2, ftol=0.0, deadline=deadline)
                res.stop = f"preconditioned L-BFGS {res.stop}"
            return sp_.project(res.x.reshape(shape)), res
        return run

    def multipliers(self, W, y, nu, sigma, sigma_h, rho=None):
        """The multiplier update at the subproblem's solution ``W``: ``(y, nu, quad, D, h,
        kv)`` with ``kv`` the added rows' values (``None`` without them)."""
        sp_ = self.space
        nu = sp_.duals(nu)
        quad, D, h = self.objective_parts(W)
        _, g = self.pen.envelope(D, y, sigma, self.kind)
        nu_new = nu.copy()
        if sp_.H is not None:
            nu_new[0] = max(0.0, nu[0] + sigma_h * h)
        kv = None
        if sp_.K is not None:
            kv = sp_.K_values(W)
            gk = sp_.user_part(nu) + rho * (kv - sp_.K.rhs)
            nu_new[sp_.n_snr:] = np.where(sp_.K.equality, gk, np.maximum(gk, 0.0))
        return g, nu_new, quad, D, h, kv


def _rows_blocks(K, W: np.ndarray, gk: np.ndarray, rho: np.ndarray,
                 blocks: np.ndarray) -> np.ndarray:
    r"""The added rows' part of the block-Jacobi preconditioner of Newton-CG (full space).

    Point :math:`a`'s block of the Hessian of
    :math:`\sum_k (g_k^2 - z_k^2)/(2\rho_k)` is
    :math:`2\sum_k g_k(A_k)_{aa} I + 4\sum_k \rho_k' b_{ka}b_{ka}^T` with
    :math:`b_{ka} = (A_kV)_a` and :math:`\rho_k' = \rho_k` where row :math:`k` is active
    (equality, or :math:`g_k > 0`), else 0: a squared distance row is an edge. Adds the
    second term to ``blocks`` (n x r x r) in place and returns the first term's scalar
    per point, :math:`\sum_k g_k(A_k)_{aa}`, which the caller doubles like the edges' degrees."""
    n_, k_ = W.shape
    curv = np.where(K.equality | (gk > 0), rho * np.ones(K.p), 0.0)
    on_diag = K.i == K.j
    diag = np.bincount(K.i[on_diag], weights=K.value[on_diag] * gk[K.row[on_diag]],
                       minlength=n_)
    # b_{ka}: the triplets of row k at point a, summed (their pattern is built once per K)
    slot, rows, points = K.row_points
    b = np.zeros((rows.size, k_))
    np.add.at(b, slot, K.value[:, None] * W[K.j])
    np.add.at(blocks, points, (4.0 * curv[rows])[:, None, None] * b[:, :, None] * b[:, None, :])
    return diag


# the L-BFGS tail with added rows, in the first subproblem after the kink envelope was
# left: stop once the last _TAIL_ITERS iterations lowered the augmented Lagrangian by at
# most _TAIL_SHARE of the outer loop's need, the last cheap gap times |objective|
# (docs/tuning.md, "Added rows at n = 2,500: the subproblem's tail")
_TAIL_ITERS, _TAIL_SHARE = 100, 1e-5


def tail_window(space: FactorSpace, cheap_gap: float, history: list) -> tuple[int, float]:
    """``_lbfgs``'s ``window`` for the next subproblem: ``(0, 0.0)`` (off) without added rows
    or other than right after the outer iteration that left the kink envelope."""
    if space.K is None or not history or not history[-1].get("left_kink") \
            or not np.isfinite(cheap_gap):
        return 0, 0.0
    return _TAIL_ITERS, _TAIL_SHARE * cheap_gap * abs(float(history[-1]["objective"]))


def extrapolated(g: np.ndarray, g_prev: np.ndarray, j: int, w: np.ndarray) -> np.ndarray:
    r"""Multipliers ``g`` extrapolated along the last update,
    :math:`\hat y = g + \beta_j(g - g_{\rm prev})`, :math:`\beta_j = (j-1)/(j+2)`, clipped
    to the box :math:`|y_e| \le w_e` (``w = inf``: equality constraints, no box).

    The multiplier update is a proximal step on the dual (Rockafellar 1976) whose length
    the penalty sets. Where the dual optimum is far (a degenerate face: the kink's equality
    problem, multipliers growing towards the box; equality constraints whose linearisation
    is nearly singular at the optimum) the steps at the capped penalty creep
    along one direction; Nesterov's extrapolation of the proximal point method (Güler 1992)
    lengthens them without stiffening the subproblems. ``j`` counts the extrapolated steps
    since the last restart (O'Donoghue & Candès 2015: restart when the gap rises). Every
    multiplier is only a candidate: the certificate checks it.
    """
    beta = (j - 1) / (j + 2)
    return np.clip(g + beta * (g - g_prev), -w, w)


def _escape(alm: _ALM, W, vec, y, nu, sigma, sigma_h, rho=None):
    r"""Append ``alpha * vec`` as a new column, ``alpha`` by exact line search on the AL.

    With :math:`t = \alpha^2` the augmented Lagrangian along the new column,
    :math:`\phi(t) = L(W) + t\,v^T\tilde Cv + \sum_e[\psi_e(D_e + t\delta_e) - \psi_e(D_e)]
    (+\ \text{SNR and added rows' terms})`, :math:`\delta_e = (v_i-v_j)^2`, is convex in ``t``
    (a convex function of an affine map), and :math:`\phi'(0) = v^TS v` at the
    current multipliers, negative along an escape direction. Its minimiser is
    found by bisection on the monotone :math:`\phi'`, so a tiny negative
    eigenvalue gives a small column instead of a jump that undoes the
    progress of earlier iterations.
    """
    sp_, pen = alm.space, alm.pen
    nu = sp_.duals(nu)
    vec = vec / np.linalg.norm(vec)
    _, D, h = alm.objective_parts(W)
    dv = sp_.diffs(vec[:, None])[:, 0] ** 2
    cv = float(vec @ sp_.apply_C(vec[:, None])[:, 0])
    hv = float(vec @ sp_.apply_H(vec[:, None])[:, 0]) if sp_.H is not None else 0.0
    if sp_.K is not None:
        z, eq = sp_.user_part(nu), sp_.K.equality
        kc = sp_.K_values(W) - sp_.K.rhs
        ka = sp_.K_values(vec[:, None])        # v^T A_k v: how the new column moves row k

    def slope(t):
        _, g = pen.envelope(D + t * dv, y, sigma, alm.kind)
        out = cv + float(g @ dv)
        if sp_.H is not None:
            out += max(0.0, nu[0] + sigma_h * (h + t * hv)) * hv
        if sp_.K is not None:
            gk = z + rho * (kc + t * ka)
            out += float(np.where(eq, gk, np.maximum(gk, 0.0)) @ ka)
        return out

    scale = max(np.sum(W * W), 1e-12) / max(W.shape[1], 1)
    t = _descent_length(slope, scale)
    return np.c_[W, np.sqrt(max(t, 1e-6 * scale)) * vec]


def _descent_length(slope, scale: float) -> float:
    r"""The step :math:`t \ge 0` where ``slope`` (the derivative along a ray) turns
    non-negative: 0 where it is not negative at 0, else bracketed from ``1e-6 * scale`` by
    factors of 4 up to ``1e3 * scale`` and bisected 60 times (the bracket's lower end)."""
    t_lo, t_hi = 0.0, 1e-6 * scale
    if slope(0.0) < 0:
        while slope(t_hi) < 0 and t_hi < 1e3 * scale:
            t_lo, t_hi = t_hi, 4.0 * t_hi
        for _ in range(60):
            mid = 0.5 * (t_lo + t_hi)
            if slope(mid) < 0:
                t_lo = mid
            else:
                t_hi = mid
    return t_lo

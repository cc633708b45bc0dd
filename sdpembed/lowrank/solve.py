"""Solve a :class:`~sdpembed.formulations.gram.GramProblem` by the low-rank method."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse.linalg as spla
from threadpoolctl import threadpool_limits

from ..backends import conic_alternatives
from ..exceptions import InputError, UnsupportedProblemError
from ..formulations.gram import GramProblem, laplacian_basis
from .alm import _ALM
from .certificate import CertificateCache
from .options import LowRankOptions, loop_deadline
from .outer import _OuterLoop
from .penalty import DistancePenalty
from .reduced_ipm import _reduced_ipm
from .result import LowRankResult, _SolveState
from .rows_barrier import rows_barrier_fits, solve_by_rows_barrier
from .space import FactorSpace
from .spectrum import _lambda_min


def _initial_factor(space: FactorSpace, k: int, rng) -> np.ndarray:
    W = rng.standard_normal((space.dim, k))
    W = space.project(W)
    # scale so that the mean edge length matches the targets
    Z = space.diffs(W)
    D = np.einsum("ij,ij->i", Z, Z)
    return W * np.sqrt(space.gp.target.mean() / max(D.mean(), 1e-300))


def lowrank_solve(gp: GramProblem, *, basis: np.ndarray | None = None,
                  options: LowRankOptions | None = None) -> LowRankResult:
    """Solve a :class:`GramProblem` by the low-rank augmented Lagrangian, with a certificate.

    Parameters
    ----------
    gp : GramProblem
        Eliminated-centroid form (``centering`` must be ``None``).
    basis : ndarray (n, r), optional
        Orthonormal, orthogonal to :math:`\\mathbf 1`: solve on :math:`G = QYQ^T`.
    options : LowRankOptions

    Returns
    -------
    LowRankResult
        ``status`` is ``"optimal"`` (certified gap ≤ ``tol``), ``"optimal_inaccurate"``
        (stopped by a limit with a larger or unavailable certified gap, or a gap
        only estimated by Lanczos: ``estimated_gap``, see the module
        docstring),
        ``"unbounded"`` or ``"infeasible"``.
    """
    opts = options or LowRankOptions()
    # the work is many small BLAS calls (n x k matrices): threads only add
    # synchronisation
    with threadpool_limits(limits=opts.blas_threads, user_api="blas"):
        return _lowrank_solve(gp, basis, opts)


#: DVU's first rank per unit of the graph's average degree :math:`2m/n` (the optimum's rank
#: grows with the density; docs/tuning.md, "Instances with n ≤ 600: where the time goes;
#: the first rank follows the graph's density")
_RANK_PER_DEGREE = 2.0


def _initial_rank(gp: GramProblem) -> int:
    r"""Default rank of the first factor (before any rank increase).

    With class structure (DVU): ``n_classes + 4``, or ``_RANK_PER_DEGREE`` times the
    graph's average degree :math:`2m/n` where that is larger (denser graphs have DVU
    optima of higher rank, and a rank grown later costs near-capped subproblems while
    its new columns grow from small). Without it (MVU): a third of
    the Barvinok–Pataki rank :math:`r_{BP}`, the largest :math:`r` with
    :math:`r(r+1)/2 \le m` (``m`` distance constraints; some optimal solution
    has rank at most :math:`r_{BP}`), and at least 16. Growing the rank one
    escape direction at a time is slow, so starting above the solution's rank
    is what pays for MVU; for DVU on sparse graphs both larger and smaller starts were
    slower (``docs/tuning.md``).
    """
    m = gp.edges.shape[0]
    if gp.icv is not None and hasattr(gp.icv, "U"):
        return max(gp.icv.U.shape[1] + 4, int(_RANK_PER_DEGREE * 2.0 * m / gp.n))
    r_bp = int((np.sqrt(8.0 * m + 1.0) - 1.0) // 2)
    return max(16, -(-r_bp // 3))


def _lowrank_solve(gp: GramProblem, basis, opts: LowRankOptions) -> LowRankResult:
    """:func:`lowrank_solve` under its BLAS thread limit: checks, the boundedness test,
    the reduced interior-point method on a basis, else the augmented Lagrangian."""
    if gp.centering is not None:
        raise InputError("lowrank_solve takes the eliminated-centroid GramProblem")
    if gp.ratio is not None:
        raise UnsupportedProblemError(
            "solver='LOWRANK' does not support the ratio constraint (eq. 11); use a conic "
            f"backend ({conic_alternatives()}) or drop ratio=")
    t0 = time.perf_counter()
    space = FactorSpace(gp, basis, limits=opts.dense_limits)
    pen = DistancePenalty(gp)
    alm = _ALM(space, pen, opts)
    state = _SolveState()
    unbounded = _unbounded_at_slack_weight(space, pen, opts, state.certificates)
    if unbounded is not None:
        return LowRankResult(np.zeros((gp.n, 1)), -np.inf, None, None, 0.0, unbounded[0], 0.0,
                             "unbounded", 0, time.perf_counter() - t0,
                             lambda_min_at_slack_weight=unbounded[1])
    if basis is not None and space.K is not None and opts.reduced_solver == "ipm":
        raise UnsupportedProblemError(
            "reduced_solver='ipm' does not take constraints added with with_constraints; "
            "use reduced_solver='alm' (or 'auto', which does)")
    if basis is not None and opts.reduced_solver != "alm" and space.K is None:
        if pen.mode == "interval":
            done = _reduced_ipm(space, pen, alm, opts, t0, state,
                                deadline=loop_deadline(t0, opts.time_limit))
            if done is not None:
                return done
        elif opts.reduced_solver == "ipm":
            raise InputError(f"reduced_solver='ipm' solves distances='interval' only; got "
                             f"{pen.mode!r}: use reduced_solver='alm' (or 'auto')")
    if basis is None and rows_barrier_fits(space, pen):
        # small "interval" problem with added rows: the barrier's pair, where it certifies
        done = solve_by_rows_barrier(space, pen, alm, opts, t0, state,
                                     deadline=loop_deadline(t0, opts.time_limit))
        if done is not None:
            return done
    W = _starting_factor(space, opts, state)
    loop = _OuterLoop(space, pen, alm, opts, state, t0, W)
    loop.run()
    return loop.result()


def _unbounded_at_slack_weight(space: FactorSpace, pen: DistancePenalty, opts: LowRankOptions,
                               cache: CertificateCache | None = None):
    r"""``(y0, lambda_min)`` when the relaxed problem is unbounded below, else ``None``.

    ``"interval"`` and ``"quadratic"`` without SNR are bounded exactly when
    :math:`S(y_0) \succeq 0` at the coercive point (``y0 = w``, resp.
    :math:`\lambda`; cf. :func:`~sdpembed.formulations.dvu.min_bounded_slack_weight`).
    Added constraints may bound it otherwise, so with them the test is not made.
    ``"interval"``: its :math:`\lambda_{\min}` at :math:`y_0` is the certificates'
    ``cache.mu0`` (the same computation), and its seconds ``cache.eig_seconds``.
    """
    if pen.mode not in ("interval", "quadratic") or space.gp.snr is not None \
            or space.K is not None:
        return None
    y0 = pen.w if pen.mode == "interval" else np.full_like(pen.t, pen.lam)
    t0 = time.perf_counter()
    try:
        eig = _lambda_min(space, y0, 0.0, tol=opts.eig_tol)
    except spla.ArpackError:   # ArpackNoConvergence among them: unboundedness not proved
        return None
    if cache is not None and pen.mode == "interval":
        cache.mu0, cache.eig_seconds = eig.value, time.perf_counter() - t0
    if eig.ritz + eig.residual < -1e-9 * max(1.0, abs(eig.ritz)) \
            or _below_threshold(space, pen, y0, eig):
        return y0, eig.ritz
    return None


#: relative distance of ``slack_weight`` from its boundedness threshold below which LOWRANK
#: refuses the problem: its dual barrier finds no interior there (docs/tuning.md, "slack_weight
#: at the boundedness threshold")
THRESHOLD_BAND = 5e-9


def _below_threshold(space: FactorSpace, pen: DistancePenalty, y0: np.ndarray, eig) -> bool:
    r"""Whether ``slack_weight`` is below its boundedness threshold by more than
    ``THRESHOLD_BAND`` (relative); an ``UnsupportedProblemError`` naming the threshold when
    it is within that band of it.

    With :math:`x` the unit eigenvector of :math:`\lambda_{\min}(S(y_0))`, the slope of the
    objective along the stretch :math:`t\,xx^T` is :math:`x^TS(y_0)x`, and raising
    ``slack_weight`` by the fraction :math:`\delta` raises it by :math:`\delta q` with
    :math:`q = \sum_e y_{0,e} D_e(xx^T)`. So :math:`\hat\delta = \lambda_{\min}/q` is, to first
    order, the relative distance of ``slack_weight`` above the threshold
    :math:`\lambda^* = \lambda/(1+\hat\delta)` (``min_bounded_slack_weight``). Within
    ``THRESHOLD_BAND`` of it (an eigenvalue whose residual is above that decides nothing) the
    objective is flat along the stretch, the optimal set is unbounded or nearly so and the
    dual feasible set has (almost) no interior: no certificate is reached, by LOWRANK or the
    interior-point backends. Below the band the problem is unbounded (the absolute test
    before this one misses :math:`\lambda_{\min}` above -1e-9).
    """
    x = np.asarray(eig.vector, dtype=float).reshape(-1)
    q = float(y0 @ np.asarray(space.E @ x).reshape(-1) ** 2)
    if not np.isfinite(q) or q <= 0.0 or eig.residual > THRESHOLD_BAND * q:
        return False
    delta = eig.ritz / q
    if abs(delta) > THRESHOLD_BAND:
        return delta < 0.0
    lam = pen.lam
    star = lam / (1.0 + delta)
    why = ("the objective is flat along a stretch of the embedding, so the optimal set is "
           "unbounded (or nearly so)" if pen.mode == "interval" else
           "the penalty's linear part no longer rises along a stretch of the embedding, so the "
           "optimum lies arbitrarily far out (or is unbounded)")
    raise UnsupportedProblemError(
        f"slack_weight = {lam:.9g} is at the threshold below which the problem is unbounded "
        f"(min_bounded_slack_weight = {star:.9g}; relative distance {delta:+.1e}, within "
        f"{THRESHOLD_BAND:.0e}): there {why}, and no backend certifies a solution "
        "(CLARABEL and CSDP fail there too). Raise slack_weight a little above it (e.g. "
        f"slack_weight = {1.001 * star:.6g}), or add a trace term (trace='min', trace_weight "
        "> 0), or use distances='equality'.")


def _starting_factor(space: FactorSpace, opts: LowRankOptions, state: _SolveState
                     ) -> np.ndarray:
    """The first factor: ``warm_start`` (a factor, or the reduced-basis solution), else random;
    padded with small random columns up to the initial rank."""
    gp, basis = space.gp, space.Q
    rng = np.random.default_rng(opts.random_state)
    k0 = max(1, min(opts.rank or _initial_rank(gp), space.dim - (1 if basis is None else 0)))
    W = None
    warm = opts.warm_start
    if isinstance(warm, np.ndarray):
        W = np.asarray(warm, dtype=float)
        if W.ndim != 2 or W.shape[0] != gp.n:
            raise InputError(f"warm_start factor must have shape ({gp.n}, k)")
        if basis is not None:
            W = basis.T @ W
        W = space.project(W)
    elif warm == "basis" and basis is None and gp.n > 4 * opts.warm_basis_rank:
        Q = laplacian_basis(gp.edges, gp.n, opts.warm_basis_rank)
        sub = lowrank_solve(gp, basis=Q, options=LowRankOptions(
            tol=max(opts.tol, 1e-3), feas_tol=max(opts.feas_tol, 1e-4), warm_start=None,
            max_outer=50, random_state=opts.random_state, time_limit=opts.time_limit / 10,
            dense_limits=opts.dense_limits))
        if sub.status.startswith("optimal"):
            W = space.project(sub.factor)
            state.warm_start = {"seconds": sub.seconds, "objective": sub.objective}
    if W is None:
        return _initial_factor(space, k0, rng)
    if W.shape[1] < k0:
        W = np.c_[W, 1e-3 * np.sqrt(np.mean(W * W)) * space.project(
            rng.standard_normal((space.dim, k0 - W.shape[1])))]
    return W

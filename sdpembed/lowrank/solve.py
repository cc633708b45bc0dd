"""Solve a :class:`~sdpembed.formulations.gram.GramProblem` by the low-rank method."""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse.linalg as spla
from threadpoolctl import threadpool_limits

from ..backends import conic_alternatives
from ..exceptions import InputError, SolverFailedError, UnsupportedProblemError
from ..formulations.gram import GramProblem, centering_basis, laplacian_basis
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
    Added constraints may bound it otherwise: with them the test is
    :func:`_unbounded_with_rows` (a verified ray that keeps them). ``"interval"``: its
    :math:`\lambda_{\min}` at :math:`y_0` is the certificates' ``cache.mu0`` (the same
    computation), and its seconds ``cache.eig_seconds``.
    """
    if pen.mode not in ("interval", "quadratic") or space.gp.snr is not None:
        return None
    if space.K is not None and (space.Q is not None or space.gp.n > space.limits.eig):
        return None   # no dense test of a ray (_unbounded_with_rows)
    y0 = pen.w if pen.mode == "interval" else np.full_like(pen.t, pen.lam)
    t0 = time.perf_counter()
    try:
        eig = _lambda_min(space, y0, 0.0 if space.K is None else np.zeros(space.q),
                          tol=opts.eig_tol)
    except spla.ArpackError:   # ArpackNoConvergence among them: unboundedness not proved
        return None
    if space.K is not None:
        # bounded without the rows is bounded with them; else a ray that keeps them
        if not eig.ritz + eig.residual < -RAY_MARGIN * max(1.0, abs(eig.ritz)):
            return None
        rate = _unbounded_with_rows(space, pen, opts)
        return None if rate is None else (y0, eig.ritz)
    if cache is not None and pen.mode == "interval":
        cache.mu0, cache.eig_seconds = eig.value, time.perf_counter() - t0
    if eig.ritz + eig.residual < -1e-9 * max(1.0, abs(eig.ritz)) \
            or _below_threshold(space, pen, y0, eig):
        return y0, eig.ritz
    return None


#: the ray of :func:`_unbounded_with_rows` must lower the objective by at least this much
#: (relative to :math:`\|S(y_0)\|_F`) per unit of its trace, keep each inequality row's
#: homogeneous part below zero by this much (relative to the row's norm), and be positive
#: definite on its subspace by twice the correction that makes its equality rows exact:
#: margins far above the rounding of the dense products that check them
RAY_MARGIN = 1e-7
#: the most eigenvectors of :math:`S(y_0)`, and points touched by the rows, that the
#: subspace of :func:`_unbounded_with_rows` takes (its two semidefinite programs are of
#: order up to twice this)
RAY_DIM = 40
_EPS = float(np.finfo(float).eps)


def _unbounded_with_rows(space: FactorSpace, pen: DistancePenalty,
                         opts: LowRankOptions) -> float | None:
    r"""The slope of a ray that proves the problem with its added rows unbounded below, else
    ``None`` (not proved: the solve decides).

    Along a ray :math:`G_0 + sX` (:math:`X \succeq 0`, centred) the objective falls by
    :math:`\langle S(y_0), X\rangle` per unit of :math:`s` in the limit (the penalty grows
    like :math:`y_0^TD(X)`, :math:`D(X) \ge 0`). A proof of unboundedness is then a
    *feasible* :math:`G_0` and a ray :math:`X` in the recession cone of the added rows,
    :math:`\langle A_k, X\rangle = 0` on equality rows and :math:`\le 0` on inequality
    rows, with :math:`\langle S(y_0), X\rangle < 0`.

    The ray is sought as :math:`X = UMU^T` on a small subspace :math:`U` of
    :math:`\mathbf 1^\perp`: the :data:`RAY_DIM` lowest eigenvectors of :math:`S(y_0)` (a
    ray that keeps the rows may need some of the positive ones) and the centred unit
    vectors of the points the rows touch, cut to the null space of the semidefinite rows
    (:func:`_off_semidefinite_rows`); :math:`M` by two small semidefinite programs
    (CLARABEL through cvxpy): the most negative :math:`\langle S, X\rangle` at unit trace,
    then, at half that slope, the :math:`M` farthest inside the cone. The ray is then
    *verified* (:func:`_ray_on`): its equality rows' residuals :math:`r` are removed by a
    correction :math:`N` in the span of the rows' compressions, :math:`\|N\|_F \le \|r\| /
    \sigma_{\min}`, and the proof holds where :math:`\lambda_{\min}(M)` exceeds twice that
    bound and the slope and the inequality rows keep their signs with :data:`RAY_MARGIN`
    to spare after it. The point :math:`G_0` is sought on the touched points alone
    (:func:`_touched_basis`) and must be verified to meet the rows exactly
    (:func:`_exact_point_on`): a point within ``feas_tol`` only does not exclude a problem
    infeasible by less than that, and there it raises :class:`SolverFailedError` naming
    both causes. Made on the full space up to ``DenseLimits.eig`` points (a dense
    :math:`S`), where the row-free test finds :math:`\lambda_{\min}(S(y_0)) < 0`; the
    slope is per unit of the ray's trace.
    """
    gp, K = space.gp, space.K
    n = gp.n
    if space.Q is not None or n > space.limits.eig:
        return None
    Ptouch, _ = _touched_basis(K, n)
    y0 = pen.w if pen.mode == "interval" else np.full_like(pen.t, pen.lam)
    Pc = centering_basis(n)
    S = Pc.T @ space.apply_S(Pc, y0, np.zeros(space.q))
    S = 0.5 * (S + S.T)
    lam, V = np.linalg.eigh(S)
    scale = max(float(np.linalg.norm(S)), 1e-300)
    if not lam[0] < -RAY_MARGIN * scale:
        return None
    neg = min(RAY_DIM, lam.size)   # the ray may need a little of the positive eigenvectors
    U, sv, _ = np.linalg.svd(np.c_[Pc @ V[:, :neg], Ptouch], full_matrices=False)
    U = U[:, sv > 1e-8 * sv[0]]
    U, flat = _off_semidefinite_rows(U, K)
    if not U.shape[1]:
        return None
    with warnings.catch_warnings():   # cvxpy's "inaccurate": both are verified below
        warnings.simplefilter("ignore")
        # the point first: its programs are of order at most RAY_DIM, the ray's up to twice
        # that, and without a point (many touched points: a partial span) no ray is needed
        point = _feasible_on(Ptouch, space, opts.feas_tol)
        if point is None:
            return None
        rate = _ray_on(U, space.apply_S(U, y0, np.zeros(space.q)), K, scale, flat)
    if rate is None:
        return None
    if point == "near":
        raise SolverFailedError(
            "LOWRANK: the objective falls without bound along a verified direction that "
            "keeps the added constraints' homogeneous parts, and a point meets the added "
            f"constraints within the feasibility tolerance {opts.feas_tol:g} but none was "
            "verified to meet them exactly: the problem is unbounded if it is feasible, and "
            "it may be infeasible by less than that tolerance. Check that the added "
            f"constraints can hold together with a conic backend ({conic_alternatives()}), "
            "or loosen them")
    return rate if point == "exact" else None


def _touched_basis(K, n: int) -> tuple[np.ndarray, bool]:
    r"""An orthonormal basis of the centred unit vectors of the points the added rows
    touch, and whether it is all of them: every centred :math:`G` has the rows' values of
    its compression onto that span, so the rows have a feasible point there if they have
    one at all. Above :data:`RAY_DIM` points (a trace row touches every point) the points
    of the rows that touch at most that many, filled up to it with the first others: a
    point found there is still feasible, but not finding one proves nothing."""
    touched = np.unique(K.i)
    complete = touched.size <= RAY_DIM
    if not complete:
        per_row = np.bincount(K.row, minlength=K.p)
        small = per_row[K.row] <= 2 * RAY_DIM
        touched = np.unique(K.i[small])[:RAY_DIM]
        rest = np.setdiff1d(np.arange(n), touched)[:RAY_DIM - touched.size]
        touched = np.r_[touched, rest]
    # all n points touched span only 1-perp (rank n - 1): an SVD, not a QR, drops the rest
    U, sv, _ = np.linalg.svd(np.eye(n)[:, touched] - 1.0 / n, full_matrices=False)
    return U[:, sv > 1e-8 * sv[0]], complete


def rows_point(gp: GramProblem, feas_tol: float) -> str | None:
    r"""Whether the added rows of ``gp`` (distances penalised: ``"interval"``,
    ``"quadratic"``) admit a centred :math:`G \succeq 0`, by the small semidefinite
    programs of :func:`_feasible_on` on the points they touch (:func:`_touched_basis`):
    ``"exact"`` where a point is verified to meet them exactly (no rows: :math:`G = 0`),
    ``"near"`` where one meets them within ``feas_tol`` only (the problem may be infeasible
    by less than that), ``"none"`` where none meets them within ``feas_tol`` on all the
    touched points (evidently infeasible; not a proof), and ``None`` where the touched
    points are too many for the span to decide and none was found on it."""
    space = FactorSpace(gp)
    if space.K is None:
        return "exact"
    basis, complete = _touched_basis(space.K, gp.n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        point = _feasible_on(basis, space, feas_tol)
    return point if point is not None else ("none" if complete else None)


def _off_semidefinite_rows(U: np.ndarray, K, only: np.ndarray | None = None
                           ) -> tuple[np.ndarray, np.ndarray]:
    r"""``U`` cut to the null space of every inequality row whose :math:`A_k` is positive
    semidefinite on :math:`\mathbf 1^\perp` (a diagonal entry's or a squared distance's
    upper bound, a trace bound) and every equality row whose :math:`A_k` is semidefinite
    (a diagonal entry fixed), and the mask of those rows. On a ray :math:`X \succeq 0`
    such a row's :math:`\langle A_k, X\rangle \le 0` (resp. :math:`= 0`) holds only as
    :math:`A_kX = 0`, which no margin can keep: on the cut subspace it holds by
    construction (to rounding) and the row leaves the search (the cut only proposes:
    :func:`_ray_on` checks those rows on the ray).

    A row touching :math:`m` points is read on them alone (:func:`_row_compression`), in
    :math:`O(m^3 + nm)`: its compression onto :math:`\mathbf 1^\perp` has the spectrum of
    an :math:`m \times m` matrix. ``only``: a mask of the rows it may cut (all by default)."""
    flat = np.zeros(K.p, dtype=bool)
    ranges = []
    for k, (pts, a, Z) in enumerate(_row_compressions(K)):
        if only is not None and not only[k]:
            continue
        big = 1e-12 * max(float(np.abs(a).max(initial=0.0)), 1e-300)
        if a.size and (a[0] >= -big or (K.equality[k] and a[-1] <= big)):
            flat[k] = True
            keep = Z[:, np.abs(a) > big]
            block = np.zeros((K.n, keep.shape[1]))
            block[pts] = keep
            ranges.append(block - block.mean(axis=0))   # P E W: centred
    if ranges:
        C = np.concatenate(ranges, axis=1).T @ U
        _, sc, vt = np.linalg.svd(C, full_matrices=True)
        rank = int(np.sum(sc > 1e-10 * max(float(sc.max(initial=0.0)), 1e-300)))
        U = U @ vt[rank:].T
    return U, flat


def _row_compressions(K):
    r"""For each row :math:`k`, ``(points, a, Z)``: the points :math:`T` it touches, the
    eigenvalues ``a`` of its compression :math:`PA_kP` onto :math:`\mathbf 1^\perp`
    (:math:`P = I - \mathbf 1\mathbf 1^T/n`) other than its structural zeros, and
    coefficients ``Z`` (``|T|`` rows) whose centred columns :math:`PE_TZ` are the matching
    orthonormal eigenvectors. With :math:`E_T` the unit vectors of :math:`T`,
    :math:`PA_kP = PE_T A_{TT} E_T^TP` and :math:`H = E_T^TPE_T = I - \mathbf 1\mathbf 1^T/n`
    (order :math:`|T|`) = :math:`VhV^T`: then :math:`Q = PE_TVh^{-1/2}` is orthonormal and
    :math:`PA_kP = Q\,C\,Q^T`, :math:`C = h^{1/2}V^TA_{TT}Vh^{1/2}`."""
    order = np.argsort(K.row, kind="stable")
    cuts = np.searchsorted(K.row[order], np.arange(K.p + 1))
    for k in range(K.p):
        t = order[cuts[k]:cuts[k + 1]]
        pts, inv = np.unique(np.r_[K.i[t], K.j[t]], return_inverse=True)
        m = pts.size
        A = np.zeros((m, m))
        np.add.at(A, (inv[:t.size], inv[t.size:]), K.value[t])
        A = 0.5 * (A + A.T)
        h, V = np.linalg.eigh(np.eye(m) - 1.0 / K.n)
        keep = h > 1e-12
        R = V[:, keep] * np.sqrt(h[keep])
        a, Z = np.linalg.eigh(R.T @ A @ R)
        yield pts, a, V[:, keep] @ (Z / np.sqrt(h[keep])[:, None])


def _ray_on(U: np.ndarray, SU: np.ndarray, K, scale: float, flat: np.ndarray
            ) -> float | None:
    """The verified slope of a ray :math:`UMU^T` (see :func:`_unbounded_with_rows`), or
    ``None``; the rows of ``flat`` (:func:`_off_semidefinite_rows`), and those whose
    compression onto ``U`` is negligible, vanish on ``U`` and are checked to rounding
    only."""
    import cvxpy as cp

    r = U.shape[1]
    Su = U.T @ SU
    Su = 0.5 * (Su + Su.T)
    B = K.congruence(U)
    B = 0.5 * (B + B.transpose(0, 2, 1))
    eq = np.asarray(K.equality, dtype=bool)
    rows_full = np.bincount(K.row, weights=K.value ** 2, minlength=K.p) ** 0.5
    # rows that vanish on U (a cut row's consequences: an entry of a point held still)
    norms = np.linalg.norm(B, axis=(1, 2))
    flat = flat | (norms <= 1e-12 * rows_full)
    M = cp.Variable((r, r), PSD=True)
    # every row at once, <B_k, M> = vec(B_k) . vec(M) (B_k and M symmetric): one sparse
    # product for cvxpy to compile, not one matrix product per row
    e, i = eq & ~flat, ~eq & ~flat
    vec, Be, Bi = cp.vec(M), B[e].reshape(-1, r * r), B[i].reshape(-1, r * r)
    slope_of = Su.reshape(-1) @ vec
    rows = [cp.trace(M) == 1]
    rows += [Be @ vec == 0] if e.any() else []
    try:
        slope = cp.Problem(cp.Minimize(slope_of),
                           rows + ([Bi @ vec <= 0] if i.any() else [])).solve(solver="CLARABEL")
        if slope is None or not slope < -2.0 * RAY_MARGIN * scale:
            return None
        s = cp.Variable()
        inner = rows + [M - s * np.eye(r) >> 0, slope_of <= slope / 2]
        inner += [Bi @ vec <= -s * norms[i]] if i.any() else []
        cp.Problem(cp.Maximize(s), inner).solve(solver="CLARABEL")
    except (cp.error.SolverError, ValueError):
        return None
    if M.value is None:
        return None
    Mv = 0.5 * (M.value + M.value.T)
    # the equality rows' residuals, removed by N = sum_k c_k B_k (least norm):
    # ||N||_F <= ||res|| / sigma_min of the map N -> (<B_k, N>)_k on their span
    fix = eq & ~flat
    res = np.einsum("kab,ab->k", B[fix], Mv)
    if fix.any():
        Bq = B[fix].reshape(int(fix.sum()), -1)
        sig = np.linalg.svd(Bq, compute_uv=False)
        if sig.size == 0 or not sig[-1] > 1e-8 * max(sig[0], 1e-300):
            return None
        bound = float(np.linalg.norm(res)) / float(sig[-1])
    else:
        bound = 0.0
    mu = float(np.linalg.eigvalsh(Mv)[0])
    tr = float(np.trace(Mv))
    value = float(np.sum(Su * Mv))
    le = ~eq & ~flat
    ok = (mu > 2.0 * bound + RAY_MARGIN * tr
          and value + np.linalg.norm(Su) * bound < -RAY_MARGIN * scale * tr
          and np.all(np.einsum("kab,ab->k", B[le], Mv) + norms[le] * bound
                     < -RAY_MARGIN * norms[le] * tr)
          and np.all(np.abs(np.einsum("kab,ab->k", B[flat], Mv)) + norms[flat] * bound
                     <= 64 * U.shape[0] * _EPS * rows_full[flat] * tr))
    return value / tr if ok else None


def _feasible_on(U: np.ndarray, space: FactorSpace, feas_tol: float) -> str | None:
    r"""Whether a point :math:`G_0 = UMU^T \succeq 0` meets the added rows: ``"exact"``
    where one is verified to meet them exactly (:func:`_exact_point_on`), ``"near"`` where
    one meets them within ``feas_tol`` only (the relative violation a result's point may
    have), else ``None``. Found by small semidefinite programs (CLARABEL through cvxpy),
    checked in numpy."""
    import cvxpy as cp

    K = space.K
    B = K.congruence(U)
    B = 0.5 * (B + B.transpose(0, 2, 1))
    r = U.shape[1]
    M = cp.Variable((r, r), PSD=True)
    eq = np.asarray(K.equality, dtype=bool)
    vec, Bq = cp.vec(M), B.reshape(-1, r * r)   # <B_k, M>, as in _ray_on
    rows = [Bq[eq] @ vec == K.rhs[eq]] if eq.any() else []
    rows += [Bq[~eq] @ vec <= K.rhs[~eq]] if (~eq).any() else []
    try:
        cp.Problem(cp.Minimize(cp.trace(M)), rows).solve(solver="CLARABEL")
    except (cp.error.SolverError, ValueError):
        return None
    if M.value is None:
        return None
    lam, V = np.linalg.eigh(0.5 * (M.value + M.value.T))
    W = U @ (V * np.sqrt(np.clip(lam, 0.0, None)))
    if not space.K_violation(space.K_values(W)) <= feas_tol:
        return None
    return "exact" if _exact_point_on(U, K, float(np.sum(np.clip(lam, 0.0, None)))) \
        else "near"


def _exact_point_on(U: np.ndarray, K, trace: float) -> bool:
    r"""Whether a point :math:`U(M + N)U^T` that meets the added rows exactly is verified:
    :math:`M` strictly inside the cone and the inequality rows (the most central point of
    trace at most ``2 trace + 1``, by CLARABEL), cut first to the null space of the
    semidefinite rows with a zero right-hand side (a point held still: no interior
    otherwise); :math:`N` the least-norm correction of the equality rows' residuals
    :math:`r`, :math:`\|N\|_F \le \|r\| / \sigma_{\min}`. Verified where
    :math:`\lambda_{\min}(M) > 2\|N\|_F` and every inequality row keeps its bound after
    :math:`N`, with rounding to spare; the cut rows vanish on :math:`U` to rounding. A
    problem infeasible by less than ``feas_tol`` has no such point. Where every right-hand
    side allows it, :math:`G = 0` is that point."""
    import cvxpy as cp

    eq = np.asarray(K.equality, dtype=bool)
    if np.all(K.rhs[eq] == 0.0) and np.all(K.rhs[~eq] >= 0.0):
        return True   # G = 0 meets every row exactly
    zero = np.asarray(K.rhs == 0.0)
    U, flat = _off_semidefinite_rows(U, K, only=zero)
    r = U.shape[1]
    if not r:
        return False
    B = K.congruence(U)
    B = 0.5 * (B + B.transpose(0, 2, 1))
    rows_full = np.bincount(K.row, weights=K.value ** 2, minlength=K.p) ** 0.5
    norms = np.linalg.norm(B, axis=(1, 2))
    flat = flat | ((norms <= 1e-12 * rows_full) & zero)
    e, i = eq & ~flat, ~eq & ~flat
    M, s = cp.Variable((r, r), PSD=True), cp.Variable()
    vec, Bq = cp.vec(M), B.reshape(-1, r * r)
    rows = [M - s * np.eye(r) >> 0, cp.trace(M) <= 2.0 * trace + 1.0]
    rows += [Bq[e] @ vec == K.rhs[e]] if e.any() else []
    rows += [Bq[i] @ vec <= K.rhs[i] - s * norms[i]] if i.any() else []
    try:
        cp.Problem(cp.Maximize(s), rows).solve(solver="CLARABEL")
    except (cp.error.SolverError, ValueError):
        return False
    if M.value is None:
        return False
    Mv = 0.5 * (M.value + M.value.T)
    values = np.einsum("kab,ab->k", B, Mv)
    if e.any():
        sig = np.linalg.svd(Bq[e], compute_uv=False)
        if not sig[-1] > 1e-8 * max(sig[0], 1e-300):
            return False
        bound = float(np.linalg.norm(values[e] - K.rhs[e])) / float(sig[-1])
    else:
        bound = 0.0
    tr = float(np.trace(Mv))
    rnd = 64 * U.shape[0] * _EPS
    return bool(float(np.linalg.eigvalsh(Mv)[0]) > 2.0 * bound + rnd * tr
                and np.all(values[i] + norms[i] * bound
                           <= K.rhs[i] - rnd * (np.abs(K.rhs[i]) + norms[i] * tr))
                and np.all(np.abs(values[flat]) + norms[flat] * bound
                           <= rnd * rows_full[flat] * tr))


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

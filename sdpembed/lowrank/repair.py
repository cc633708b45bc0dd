"""Dual and primal repairs near the optimum: refined multipliers, the lift, restoration."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import numpy as np
import scipy.optimize as sopt
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..exceptions import InputError
from .certificate import _shift_theta
from .ipm_common import least_norm, least_squares
from .lmi_lp import rank_one_lmi_lp
from .options import _require_int, _require_kink_tol
from .penalty import DistancePenalty
from .space import FactorSpace
from .sparse_slack import EigenStop, FactorTimes
from .spectrum import EigenEstimate, _bottom, _gershgorin

logger = logging.getLogger(__name__)


class _DeadlinePassed(Exception):
    """Raised inside an iterative repair when its ``deadline`` passes (caught there)."""


def _past(deadline: float) -> bool:
    """Whether the :func:`time.perf_counter` value ``deadline`` has passed."""
    return time.perf_counter() >= deadline


#: a least-squares fit on an explicit sparse matrix reads the clock once per this many
#: products (one product of the n = 2,500 fit takes tens of microseconds, so the deadline
#: is overrun by at most milliseconds)
_DEADLINE_EVERY = 16


#: an edge with :math:`|D_e - \bar D_e| \le` this times :math:`\bar D_e` is on the kink of the
#: ``"interval"`` penalty (:func:`refine_multipliers`, :func:`restore_feasibility`)
_KINK_TOL = 1e-4

#: :func:`refine_multipliers`' bounded fit stops after this many TRF iterations (BVLS, an
#: exact active-set solve, keeps its 200). Most fits end at TRF's first test (the
#: unbounded least-squares solution lies in the box: no iteration); one that does not can
#: run on with its residual at rounding (a fit done in 10 iterations run to 200), or move
#: the gap little at 0.3 s an iteration, where the barrier then certifies (docs/tuning.md,
#: "The multiplier refinement's fit capped")
_FIT_MAX_ITER = 20


def refine_multipliers(space: FactorSpace, pen: DistancePenalty, W: np.ndarray, y: np.ndarray,
                       nu: float | np.ndarray | None, *, kink_tol: float = _KINK_TOL,
                       deadline: float = np.inf,
                       iterate: bool = True) -> tuple[np.ndarray, np.ndarray] | None:
    """Multipliers that best satisfy complementary slackness :math:`S(y,\\nu)V = 0`, V fixed.

    The augmented-Lagrangian multipliers carry the error of every inexact
    subproblem, and the certificate loses :math:`|\\lambda_{\\min}(S)|` times a
    trace bound. Given the factor, the dual point that fits it best solves
    the bounded linear least-squares problem

    .. math::

        \\min_{y,\\ \\nu}\\ \\|P(\\tilde C V + \\textstyle\\sum_e y_e a_e a_e^TV
            + \\nu_0 HV + \\sum_k z_kA_kV)\\|_F \\quad\\text{s.t.}\\quad
            y\\in\\mathrm{dom}\\,\\varphi^*,\\ \\nu_0 \\ge 0,

    with, for ``"interval"``, :math:`y_e = w_e\\,\\mathrm{sign}(D_e-\\bar D_e)` fixed on
    edges off the kink (:math:`|D_e - \\bar D_e| > ` ``kink_tol`` :math:`\\bar D_e`,
    where :math:`\\varphi` is differentiable) and :math:`|y_e|\\le w_e` on the
    others, which makes the duality gap :math:`\\sum_e (w_e|D_e-\\bar D_e| - y_e(D_e-\\bar D_e))`
    vanish off the kink. ``"equality"`` leaves every :math:`y_e` free; ``"shrink"`` fixes
    :math:`y_e = 0` on slack edges (:math:`D_e < (1 - ` ``kink_tol`` :math:`)\\bar D_e`)
    and fits the others freely, then clips them to :math:`y_e \\ge 0`. An added inequality
    row :math:`\\langle A_k, G\\rangle \\le b_k` gets :math:`z_k \\ge 0`, and :math:`z_k = 0`
    where it is inactive (slack above ``kink_tol`` times its size and a zero multiplier
    given: complementary slackness asks for zero there); equality rows are free. Solved by
    :func:`scipy.optimize.lsq_linear` (TRF with LSMR, matrix-free; BVLS, see
    :func:`_fit_method`, for a dense matrix with a one-sided bound), TRF for at most
    ``_FIT_MAX_ITER`` iterations. The result is only a
    candidate: :func:`certify` checks it like any other dual point. Returns
    ``(y, nu)``; ``"quadratic"`` (no linear conjugate) returns its input. A ``kink_tol``
    that is not a finite number >= 0 raises :class:`~sdpembed.exceptions.InputError`.
    ``deadline`` (a :func:`time.perf_counter` value): the fit is not started after it, and
    a matrix-free one still running when it passes is abandoned; either way ``(y, nu)``
    come back unchanged (a candidate the certificate has already seen). ``iterate=False``:
    where the bounded fit would iterate (the unbounded least-squares solution, its first
    step, lies outside the box) it is not run and ``None`` comes back; elsewhere the result
    is the same as with ``iterate=True`` (the caller runs the barrier first where that
    fit, slow and short of ``tol``, would be replaced by it: docs/tuning.md, "The
    refinement's bounded fit left to after the cold barrier").
    """
    nu = space.duals(nu)
    if pen.mode == "quadratic":
        return y, nu
    _require_kink_tol("refine_multipliers", kink_tol)
    if _past(deadline):
        return y, nu
    Z = space.diffs(W)
    m, k = Z.shape
    res = np.einsum("ij,ij->i", Z, Z) - pen.t
    if pen.mode == "interval":
        # fixed at w_e sign(r_e): edges off the kink whose given multiplier is at that bound
        # (the Huber envelope's linear pieces); one inside the box there has not settled
        # which side it is on, and fixing it would give its whole weight to the fit
        at_bound = (np.sign(y) == np.sign(res)) & (np.abs(y) >= pen.w * (1.0 - 1e-9))
        free = (np.abs(res) <= kink_tol * pen.t) | ~at_bound
        y_fix = np.where(free, 0.0, pen.w * np.sign(res))
        lo, hi = -pen.w[free], pen.w[free]
    elif pen.mode == "shrink":
        # y_e >= 0 on the active edges, 0 on the slack ones (complementary slackness)
        # (fitted without bounds, then clipped to y >= 0: a bounded fit costs a
        # trust-region solve of many LSMR runs, and the certificate checks the point anyway)
        free = res >= -kink_tol * pen.t
        y_fix = np.zeros(m)
        lo, hi = np.full(int(free.sum()), -np.inf), np.full(int(free.sum()), np.inf)
    else:
        free = np.ones(m, dtype=bool)
        y_fix = np.zeros(m)
        lo, hi = np.full(m, -np.inf), np.full(m, np.inf)
    fe = np.flatnonzero(free)
    HW = space.project(space.apply_H(W)) if space.H is not None else None
    b = -space.project(space.apply_C(W) + space.ET @ (y_fix[:, None] * Z))
    n_var = fe.size + (HW is not None)
    K = space.K
    if K is not None:
        # the added rows that may carry a multiplier: equalities, inequalities within
        # kink_tol of their bound, and those the given multipliers hold active
        slack = K.rhs - space.K_values(W)
        rows = np.flatnonzero(K.equality | (slack <= kink_tol * space.K_scale())
                              | (space.user_part(nu) > 0))
        n_var += rows.size

    rows = rows if K is not None else None
    op = _explicit_fit_matrix(space, W, Z, fe, HW, rows)
    if op is None:
        op = _fit_operator(space, W, Z, fe, HW, rows, deadline)
    matvec = op.dot
    if sp.issparse(op) and np.isfinite(deadline):
        # the same products (LSMR either way), the deadline checked every _DEADLINE_EVERY
        op = _with_deadline(spla.aslinearoperator(op), deadline)
    x0 = y[fe]
    if HW is not None:
        lo, hi = np.r_[lo, 0.0], np.r_[hi, np.inf]
        x0 = np.r_[x0, nu[0]]
    if K is not None:
        eq = K.equality[rows]
        lo, hi = np.r_[lo, np.where(eq, -np.inf, 0.0)], np.r_[hi, np.full(rows.size, np.inf)]
        x0 = np.r_[x0, space.user_part(nu)[rows]]
    # solve for the correction from the current multipliers (clipped into the box)
    x0 = np.clip(x0, lo, hi)
    try:
        method = _fit_method(op, lo, hi)
        rhs, lb, ub = np.ravel(b) - matvec(x0), lo - x0, hi - x0
        if iterate:
            dx = sopt.lsq_linear(op, rhs, bounds=(lb, ub), method=method, tol=_FIT_TOL,
                                 max_iter=_FIT_MAX_ITER if method == "trf" else 200).x
        else:
            dx = _unbounded_fit(op, rhs)
            if not np.all((dx >= lb) & (dx <= ub)):
                return None
    except _DeadlinePassed:
        return y, nu
    except (ValueError, np.linalg.LinAlgError):  # pragma: no cover - numerical failure
        return y, nu
    x = np.clip(x0 + dx, lo, hi)
    y_new = y_fix.copy()
    y_new[fe] = x[: fe.size] if pen.mode != "shrink" else np.maximum(x[: fe.size], 0.0)
    nu_new = nu.copy()
    if HW is not None:
        nu_new[0] = float(x[fe.size])
    if K is not None:
        z = np.zeros(K.p)
        z[rows] = x[n_var - rows.size:]
        nu_new[space.n_snr:] = z
    return y_new, nu_new


#: :func:`refine_multipliers`' ``lsq_linear`` tolerance
_FIT_TOL = 1e-12


def _unbounded_fit(op, rhs: np.ndarray) -> np.ndarray:
    """The unbounded least-squares solution that ``scipy.optimize.lsq_linear`` computes
    first (and returns where it lies in the bounds: status 3, no iteration), by the same
    calls: ``numpy.linalg.lstsq`` for a dense matrix, else LSMR at ``lsq_linear``'s first
    tolerance (1e-2 ``_FIT_TOL``), a sparse matrix as the ``csr_array`` it makes of it."""
    if isinstance(op, np.ndarray):
        return np.linalg.lstsq(np.atleast_2d(op), rhs, rcond=-1)[0]
    A = sp.csr_array(op) if sp.issparse(op) else op
    return spla.lsmr(A, rhs, atol=1e-2 * _FIT_TOL, btol=1e-2 * _FIT_TOL)[0]


def _fit_method(op, lo: np.ndarray, hi: np.ndarray) -> str:
    """``lsq_linear``'s method for :func:`refine_multipliers`: ``"bvls"`` (an exact
    active-set solve) for a dense matrix with a one-sided bound (:math:`\\nu_0 \\ge 0`, an
    inequality row's :math:`z_k \\ge 0`), else ``"trf"``. TRF's reflected step along a
    direction bounded on no side has an infinite step bound, for which scipy's line search
    evaluates ``0 * inf`` (a ``RuntimeWarning`` at the caller's line); BVLS has no such step
    and needs the explicit matrix, which the matrix-free and sparse fits do not have."""
    one_sided = np.isfinite(lo) != np.isfinite(hi)
    return "bvls" if isinstance(op, np.ndarray) and bool(one_sided.any()) else "trf"


def _with_deadline(op: spla.LinearOperator, deadline: float,
                   every: int | None = None) -> spla.LinearOperator:
    """``op`` whose products raise ``_DeadlinePassed`` once ``deadline`` has passed, the clock
    read at the first product and then at every ``every``-th (default
    :data:`_DEADLINE_EVERY`): the products themselves stay the wrapped matrix's."""
    every = _DEADLINE_EVERY if every is None else every
    count = [0]

    def check():
        due = count[0] % every == 0
        count[0] += 1
        if due and _past(deadline):
            raise _DeadlinePassed

    def matvec(x):
        check()
        return op.matvec(x)

    def rmatvec(x):
        check()
        return op.rmatvec(x)

    return spla.LinearOperator(op.shape, matvec=matvec, rmatvec=rmatvec, dtype=float)


def _fit_operator(space: FactorSpace, W: np.ndarray, Z: np.ndarray, fe: np.ndarray,
                  HW: np.ndarray | None, rows: np.ndarray | None,
                  deadline: float = np.inf) -> spla.LinearOperator:
    """:func:`refine_multipliers`' map (see :func:`_explicit_fit_matrix`) matrix-free; its
    products raise ``_DeadlinePassed`` once ``deadline`` has passed."""
    m = Z.shape[0]
    K = space.K if rows is not None else None
    n_var = fe.size + (HW is not None) + (rows.size if K is not None else 0)

    def matvec(x):
        if _past(deadline):
            raise _DeadlinePassed
        x = np.ravel(x)
        ye = np.zeros(m)
        ye[fe] = x[: fe.size]
        out = space.ET @ (ye[:, None] * Z)
        if HW is not None:
            out = out + x[fe.size] * HW
        if K is not None and rows.size:
            z = np.zeros(K.p)
            z[rows] = x[n_var - rows.size:]
            out = out + space.project(space.apply_K(W, z))
        return np.ravel(out)

    def rmatvec(r):
        R = np.reshape(r, W.shape)
        out = np.einsum("ij,ij->i", Z[fe], (space.E @ R)[fe])
        if HW is not None:
            out = np.r_[out, np.sum(HW * R)]
        if K is not None and rows.size:
            # <A_k W, P R> = <A_k, (P R) W^T> (symmetric A_k), over its non-zeros
            PR = space.project(R)
            if space.Q is None:
                grads = np.bincount(K.row, weights=K.value * np.einsum(
                    "ij,ij->i", PR[K.i], W[K.j]), minlength=K.p)
            else:
                grads = np.einsum("kab,ac,bc->k", space.Kq, PR, W)
            out = np.r_[out, grads[rows]]
        return out

    return spla.LinearOperator((W.size, n_var), matvec=matvec, rmatvec=rmatvec, dtype=float)


#: :func:`refine_multipliers` fits with the explicit matrix of its linear map when its
#: dense columns (``nu`` and the added rows) hold at most this many entries, and as a dense
#: array (an exact least-squares step per iteration instead of an LSMR run, which
#: ill-conditioned fits need) when the whole matrix has at most ``_FIT_DENSE`` entries and
#: a factorisation of it (entries times its smaller side) at most ``_FIT_DENSE_FLOPS``
#: flops (up to 200 of them per fit); :func:`restore_feasibility`'s Jacobian is dense up
#: to ``_FIT_DENSE`` entries (one factorisation per Gauss-Newton step)
_FIT_DENSE_COLUMNS = 4_000_000
_FIT_DENSE = 2_000_000
_FIT_DENSE_FLOPS = 50_000_000


def _dense_fits(rows: int, cols: int) -> bool:
    return rows * cols <= _FIT_DENSE and rows * cols * min(rows, cols) <= _FIT_DENSE_FLOPS


def _edge_triplets(E, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""``(edge, entry, value)`` of the entries of :math:`\mathrm{vec}(E_e^TZ_e)` for each
    edge :math:`e` (row-major ``vec`` of an n x k factor; ``E`` sparse incidence rows)."""
    k = Z.shape[1]
    coo = E.tocoo()
    return (np.repeat(coo.row, k), (coo.col[:, None] * k + np.arange(k)).ravel(),
            (coo.data[:, None] * Z[coo.row]).ravel())


def _row_columns(space: FactorSpace, W: np.ndarray, rows: np.ndarray) -> list[np.ndarray]:
    r""":math:`\mathrm{vec}(PA_kW)` for each added row :math:`k` in ``rows``."""
    unit = np.zeros(space.K.p)
    out = []
    for r in rows:
        unit[r] = 1.0
        out.append(np.ravel(space.project(space.apply_K(W, unit))))
        unit[r] = 0.0
    return out


def _explicit_fit_matrix(space: FactorSpace, W: np.ndarray, Z: np.ndarray, fe: np.ndarray,
                         HW: np.ndarray | None, rows: np.ndarray | None):
    r"""The matrix of :func:`refine_multipliers`' map :math:`x \mapsto \mathrm{vec}(\sum_e
    x_e a_e a_e^TV + x_\nu P HV + \sum_k x_k P A_kV)`, with columns in the order of its
    unknowns (the edges ``fe``, then :math:`\nu_0` when ``HW`` is given, then the added
    ``rows``): a dense array when it is small, else a sparse one; ``None`` when its dense
    columns would exceed ``_FIT_DENSE_COLUMNS`` entries (the caller keeps the matrix-free
    operator). Edge column :math:`e`: :math:`\mathrm{vec}(E_e^T Z_e)`, :math:`E_e` the
    edge's row of the incidence matrix and :math:`Z_e = E_eV` (row-major ``vec``)."""
    extra = []
    if HW is not None:
        extra.append(np.ravel(HW))
    if rows is not None and rows.size:
        if (rows.size + len(extra)) * W.size > _FIT_DENSE_COLUMNS:
            return None
        extra += _row_columns(space, W, rows)
    Zf = Z[fe]
    n_var = fe.size + len(extra)
    E = space.E[fe]
    if sp.issparse(E):
        cols, idx, data = _edge_triplets(E, Zf)
        if _dense_fits(W.size, n_var):
            A = np.zeros((W.size, n_var))
            np.add.at(A, (idx, cols), data)
        else:
            A = sp.csc_matrix((data, (idx, cols)), shape=(W.size, fe.size))
            if extra:
                A = sp.hstack([A, sp.csc_matrix(np.column_stack(extra))], format="csc")
            return A
    else:
        if not _dense_fits(W.size, n_var):
            return None
        A = np.zeros((W.size, n_var))
        A[:, : fe.size] = (np.asarray(E)[:, :, None] * Zf[:, None, :]).reshape(fe.size, -1).T
    if extra:
        A[:, fe.size:] = np.column_stack(extra)
    return A


def _explicit_jacobian(space: FactorSpace, E, Z: np.ndarray, V: np.ndarray,
                       rows: np.ndarray | None):
    r"""The Jacobian of :func:`restore_feasibility`'s residual at the factor ``V`` as a
    matrix: edge row :math:`e` is :math:`2\,\mathrm{vec}(E_e^TZ_e)` (``E`` the edges'
    incidence rows, ``Z = E V``), added row :math:`k` is :math:`2\,\mathrm{vec}(PA_kV)`
    (on centred steps the same map as the matrix-free operator). Dense when it has at
    most ``_FIT_DENSE`` entries, sparse otherwise, ``None`` when its added rows alone
    would exceed ``_FIT_DENSE_COLUMNS`` entries."""
    m_e = Z.shape[0]
    extra = []
    if rows is not None and rows.size:
        if rows.size * V.size > _FIT_DENSE_COLUMNS:
            return None
        extra += [2.0 * c for c in _row_columns(space, V, rows)]
    n_rows = m_e + len(extra)
    if sp.issparse(E):
        r_idx, c_idx, data = _edge_triplets(E, Z)
        data = 2.0 * data
        if n_rows * V.size > _FIT_DENSE:
            J = sp.csr_matrix((data, (r_idx, c_idx)), shape=(m_e, V.size))
            return sp.vstack([J, sp.csr_matrix(np.vstack(extra))], format="csr") \
                if extra else J
        J = np.zeros((n_rows, V.size))
        np.add.at(J, (r_idx, c_idx), data)
    else:
        if n_rows * V.size > _FIT_DENSE:
            return None
        J = np.zeros((n_rows, V.size))
        J[:m_e] = 2.0 * (np.asarray(E)[:, :, None] * Z[:, None, :]).reshape(m_e, -1)
    if extra:
        J[m_e:] = np.vstack(extra)
    return J


#: the lift's eigenvalue target relative to a Gershgorin bound on ||S||: the bottom block
#: holds S's near-zero eigenvalues on the factor's range (S V = 0 at the optimum), and
#: raising them to the target costs bound. The lifted point is only a candidate: its
#: certificate is computed and verified like any other.
_LIFT_MARGIN = 1e-10

#: the edges a lift round raises by default: ``_LIFT_EDGES`` for a block of
#: ``_LIFT_BLOCK`` eigenvectors (the largest default ``min_block``), in proportion below it.
#: The LMI LP factors an (edges x edges) Schur complement at each of its 15-40 interior
#: steps; with 1,000 edges against an 80-vector block that factorisation was most of a
#: lift's time, and 500 edges certified every row 1,000 did, at lifted gaps 0-16 % larger
#: (docs/tuning.md, "The lift's edges in proportion to its block")
_LIFT_EDGES, _LIFT_BLOCK = 1000, 160


def _shifted_bound(pen: DistancePenalty, y: np.ndarray, mu: float, mu0: float,
                   offset: float = 0.0) -> float:
    r"""The shifted bound :math:`-\varphi^*((1-\theta)y + \theta y_0) - (1-\theta)z^Tb` from
    multipliers with :math:`\lambda_{\min}(S) = \mu \le 0` (``offset`` :math:`= z^Tb` of the
    added constraints), :math:`\theta` of :func:`_shift_theta` without :func:`certify`'s
    rounding margin (``-inf`` without a coercive :math:`\mu_0 > 0`): a stopping test, not a
    certificate."""
    if not mu0 > 0:
        return -np.inf
    theta = _shift_theta(mu, mu0)
    return -pen.conjugate((1 - theta) * y + theta * pen.coercive_point()) \
        - (1 - theta) * offset


def lift_multipliers(space: FactorSpace, pen: DistancePenalty, y: np.ndarray, nu: float, *,
                     floor: float | None = None, n_eig: int | None = None,
                     n_edges: int | None = None, n_lowered: int = 250, rounds: int = 6,
                     min_block: int | None = None,
                     eigenpairs: tuple[np.ndarray, np.ndarray] | None = None,
                     guess: float | None = None,
                     target: float | None = None, mu0: float | None = None,
                     deadline: float = np.inf,
                     near_shifts: bool = True,
                     both_ways: bool = False,
                     late: Callable[[float | None], bool] | None = None,
                     times: FactorTimes | None = None) -> tuple[np.ndarray, EigenEstimate]:
    r"""Raise the multipliers of a few edges until :math:`S(y,\nu)\succeq 0` (``"interval"``).

    Adding :math:`\delta_e\ge 0` to :math:`y_e` adds the PSD term
    :math:`\delta_ea_ea_e^T` to :math:`S` and costs :math:`\delta_e\bar D_e` in the
    bound :math:`-\bar D^Ty`. Near the optimum :math:`S(y)` has a few small negative
    eigenvalues whose eigenvectors sit on few points, so lifting them costs far less
    than moving all of :math:`y` towards the coercive point (the ``"shifted"``
    certificate, which loses about :math:`|\lambda_{\min}|\,\|w-y\|_{\bar D}/\mu_0`).
    Each round (a cutting plane on the dual SDP, cf. Helmberg & Rendl's spectral
    bundle method) takes the bottom eigenpairs :math:`(\Lambda, X)` of :math:`S` on
    :math:`\mathbf 1^\perp` (dense; the negative ones and 16 more, at least
    ``min_block`` and at most ``n_eig``, default ``DenseLimits.block``: a small block
    lets the coupling with the rest recreate negative eigenvalues, whose later rounds
    cost more than lifting them together; the default ``min_block=None`` is
    :math:`\min(160, \max(80, \lfloor n/15\rfloor))`, smaller for small n, where it
    lifts as far in less time), the ``n_edges`` edges with room
    (:math:`y_e < w_e`) that reach the negative eigenvectors best per unit of
    :math:`\bar D_e` (default ``None``: :math:`\lceil 1000\,K/160\rceil`, at most 1,000, for
    a round's block of :math:`K` eigenvectors), and solves

    .. math::

        \min_\delta\ \bar D^T\delta\quad\text{s.t.}\quad \Lambda - \eta I
        + \textstyle\sum_e \delta_e (X^Ta_e)(X^Ta_e)^T\succeq 0,\quad
        0\le\delta\le w - y

    (:func:`~sdpembed.lowrank.lmi_lp.rank_one_lmi_lp`, :math:`\eta` = ``_LIFT_MARGIN`` times a
    Gershgorin bound on :math:`\|S\|`).
    Coupling with the eigenspace left out can leave new, smaller negative
    eigenvalues; the next round takes those. Stops when :math:`\lambda_{\min}\ge 0`,
    after ``rounds`` rounds, once the bound falls below ``floor`` (a lift that
    cannot pay off), or, given ``target`` and ``mu0`` (:math:`\mu_0 > 0`, the
    :math:`\lambda_{\min}` at the coercive point :math:`y_0 = w`), once the shifted
    bound :math:`-\varphi^*((1-\theta)y + \theta y_0)`,
    :math:`\theta = -\lambda_{\min}/(\mu_0 - \lambda_{\min})`, reaches ``target``:
    the rest of the way to a PSD :math:`S` is not worth its rounds at large n (the
    certificate is computed afterwards as for any other dual point), or once ``deadline``
    (a :func:`time.perf_counter` value) has passed (after the first round's eigenpairs:
    the pair returned always belongs to the multipliers returned). Above
    ``DenseLimits.eig`` a round after the first shifts its shift-invert block just below
    the previous round's :math:`\lambda_{\min}` (a lower bound: the lift only adds PSD
    terms, Weyl) and every block raises its shift towards the spectrum while the pivots
    stay positive; ``near_shifts=False`` keeps each block's first shift instead (the
    same eigenpairs to Lanczos accuracy, by a longer path). ``y`` is first
    clipped into the box :math:`|y_e|\le w_e` (the domain of :math:`\varphi^*`; the
    solve's candidates already lie in it) and the caller's array is not modified.
    ``eigenpairs``: the bottom ``(Λ, X)`` of :math:`S(y,\nu)` on :math:`\mathbf 1^\perp`
    (at least ``n_eig`` of them, or n - 1), already computed for this ``y``
    (:func:`certify` keeps them), used for the first round instead of a new
    eigendecomposition. ``guess``: without ``eigenpairs``, an estimate of
    :math:`\lambda_{\min}` at ``y`` (e.g. a previous lift's last one) below which the first
    round's shift-invert block is shifted (``spectrum._bottom``'s ``guess``; without it, a
    coarse Lanczos run places the shift). Returns the new multipliers and
    the dense smallest eigenpair of their :math:`S` (:class:`EigenEstimate`).
    ``both_ways``: each round also lets up to ``n_lowered`` edges with room below
    (:math:`y_e > -w_e`) fall, :math:`\delta_e \le 0`, gaining :math:`|\delta_e|\bar D_e`
    of bound; with :math:`a_e = Xb_e + c_e`, :math:`-a_ea_e^T \succeq -2Xb_eb_e^TX^T -
    2c_ec_e^T`, so a lowered edge enters the LP with :math:`\sqrt2 b_e` and falls at most
    so far that the :math:`2|\delta_e|\|c_e\|^2` together stay within half the smallest
    eigenvalue outside the block (split evenly: fewer lowered edges each fall further,
    and the LP's m x m Schur complement has ``n_edges + n_lowered`` rows, not twice
    ``n_edges``; docs/tuning.md, "Unscaled data: the cold barrier's first steps").
    The result is only a candidate: the certificate treats
    it like any other dual point (and verifies it for n > ``DenseLimits.eig``).
    ``late``, ``times``: the time limit's test and the factorisations' seconds of each
    round's shift-invert block (``sparse_bottom``'s); where a round after the first must
    stop before its block, or its eigensolve fails, the previous round's multipliers and
    eigenpair are returned; where the first must, ``CertificateLate`` is raised (a failed
    first eigensolve: ``EigensolveFailed``; both ``EigenStop``).

    ``InputError`` (before any eigendecomposition) outside ``"interval"`` in the full
    space, for n above the dense limit, for ``y`` of the wrong shape, for ``target``
    without ``mu0``, and unless
    ``n_eig``, ``n_edges``, ``min_block`` (unless ``None``), ``n_lowered`` are positive
    integers and
    ``rounds`` >= 0.
    """
    if pen.mode != "interval" or space.Q is not None:
        raise InputError("lift_multipliers works on distances='interval' in the full space")
    n = space.dim
    if n > space.limits.lift:
        raise InputError(f"lift_multipliers runs up to n = {space.limits.lift} "
                         f"(DenseLimits.lift); got n = {n}")
    if n_eig is None:
        n_eig = space.limits.block
    y = np.asarray(y, dtype=float)
    if y.shape != pen.t.shape:
        raise InputError(f"lift_multipliers needs one multiplier per edge: y of shape "
                         f"{pen.t.shape}, got {y.shape}")
    if min_block is None:
        min_block = min(160, max(80, n // 15))
    for name, value, low in (("n_eig", n_eig, 1), ("n_lowered", n_lowered, 1),
                             ("rounds", rounds, 0), ("min_block", min_block, 1),
                             *((("n_edges", n_edges, 1),) if n_edges is not None else ())):
        _require_int("lift_multipliers", name, value, low)
    if target is not None and mu0 is None:
        raise InputError("lift_multipliers: target needs mu0, lambda_min of S at the "
                         "coercive point y0 = w (a value <= 0 means none: target unused)")
    # shift-invert (n > DenseLimits.eig) finds at most n - 2 of the n - 1 eigenpairs on 1-perp
    k_all = min(n_eig, n - 1 if n <= space.limits.eig else n - 2)
    if eigenpairs is not None and (len(eigenpairs[0]) < k_all
                                   or np.shape(eigenpairs[1]) != (n, len(eigenpairs[0]))
                                   or np.any(np.abs(y) > pen.w)):
        raise InputError(f"lift_multipliers: eigenpairs must hold at least {k_all} "
                         f"eigenpairs (values, n x k vectors) of S at y, and y must lie "
                         "in the box |y| <= w")
    y = np.clip(y, -pen.w, pen.w)
    nu = space.duals(nu)
    off = space.linear_offset(nu)
    eta = _LIFT_MARGIN * _gershgorin(space, y, nu)
    lowered, before = False, None

    def stops(lam0: float) -> bool:
        # the round's stopping test but the clock: it needs lambda_min alone
        return bool(lam0 >= 0 or r == rounds
                    or (floor is not None and -pen.conjugate(y) - off < floor)
                    or (target is not None and _shifted_bound(pen, y, lam0, mu0, off) >= target))

    for r in range(rounds + 1):
        if r == 0 and eigenpairs is not None:
            lam, X = eigenpairs[0][:k_all], eigenpairs[1][:, :k_all]
        else:
            # the lift only added PSD terms: the last lambda_min is a lower bound (Weyl);
            # not after a round that lowered multipliers
            weyl = r > 0 and near_shifts and not lowered
            args = dict(guess=guess if r == 0 else float(lam[0]),
                        lower=float(lam[0]) if weyl else None,
                        raise_shift=near_shifts, late=late, times=times)
            try:
                # a block that would end the lift needs only its smallest pair
                # (sparse_bottom's enough: the unrestarted run stops there)
                lam, X = _bottom(space, y, nu, k_all, enough=stops, **args)
                if lam.size < k_all and not (stops(float(lam[0])) or _past(deadline)):
                    lam, X = _bottom(space, y, nu, k_all, **args)   # the whole block after all
            except EigenStop:   # late, or a failed eigensolve
                if before is None:
                    raise
                return before   # the last multipliers whose eigenpair is known
        eig = EigenEstimate(float(lam[0]), X[:, 0], float(lam[0]), 0.0,
                            "dense" if n <= space.limits.eig else "shift-invert")
        if stops(float(lam[0])) or _past(deadline):
            break
        before = (y.copy(), eig)
        neg = lam < 0
        K = min(k_all, max(int(neg.sum()) + 16, min_block))
        Bm = space.E @ X[:, :K]
        room = pen.w - y
        score = np.where(room > 1e-12 * pen.w, (Bm[:, neg[:K]] ** 2).sum(axis=1) / pen.t, 0.0)
        n_sel = n_edges if n_edges is not None else min(
            _LIFT_EDGES, -(-_LIFT_EDGES * K // _LIFT_BLOCK))
        sel = np.argsort(-score)[:n_sel]
        sel = sel[score[sel] > 0]
        if sel.size == 0:
            break
        down, down_room = (_lowering(space, pen, y, Bm, lam, K, k_all, n_lowered) if both_ways
                           else (np.zeros(0, dtype=int), np.zeros(0)))
        lowered = lowered or down.size > 0
        if down.size:
            # a lowered edge enters the block twice over (the complement holds the rest:
            # (Xb + c)(Xb + c)^T <= 2 Xbb^TX^T + 2cc^T); its bound is its share of half
            # the complement's smallest eigenvalue
            lo_dn = -np.minimum(y[down] + pen.w[down], down_room)
            keep = lo_dn < 0
            down, lo_dn = down[keep], lo_dn[keep]
        res = rank_one_lmi_lp(np.diag(lam[:K] - eta),
                              np.r_[Bm[sel], np.sqrt(2.0) * Bm[down]],
                              np.r_[pen.t[sel], pen.t[down]],
                              np.r_[np.zeros(sel.size), lo_dn if down.size else []],
                              np.r_[room[sel], np.zeros(down.size)])
        y[sel] = np.minimum(y[sel] + res.d[:sel.size], pen.w[sel])
        if down.size:
            np.add.at(y, down, res.d[sel.size:])
            y[down] = np.maximum(y[down], -pen.w[down])
        logger.debug("lift round %d: lambda_min %.3g, %d negative, block %d, %d edges, "
                     "cost %.3g, %s after %d iterations", r + 1, lam[0], int(neg.sum()), K,
                     sel.size, res.cost, res.status, res.iterations)
    return y, eig


def _outside_block(space: FactorSpace, Bm: np.ndarray, edges: np.ndarray, K: int) -> np.ndarray:
    """:math:`\\|a_e - XX^Ta_e\\|^2` of ``edges``: the part of each edge vector outside the
    block of the ``K`` bottom eigenvectors (``Bm`` = :math:`EX`)."""
    E = space.E[edges]
    a2 = np.asarray(E.multiply(E).sum(axis=1)).ravel() if sp.issparse(E) \
        else np.einsum("ij,ij->i", E, E)
    return np.maximum(a2 - (Bm[edges, :K] ** 2).sum(axis=1), 0.0)


def _lowering(space: FactorSpace, pen: DistancePenalty, y: np.ndarray, Bm: np.ndarray,
              lam: np.ndarray, K: int, k_all: int, n_edges: int
              ) -> tuple[np.ndarray, np.ndarray]:
    r"""Edges whose multiplier a two-sided lift round may lower, sorted, and how far each
    may fall. The edges: room below (:math:`y_e > -w_e`), the complement of the block
    positive, the ``n_edges`` with the most bound gained per unit of curvature lost
    outside the block (:math:`\bar D_e / \|a_e - XX^Ta_e\|^2`). How far: so that twice
    the lowered terms outside the block stay within half the complement's smallest
    eigenvalue (split evenly)."""
    lam_out = float(lam[K] if K < k_all else lam[k_all - 1])
    room = y + pen.w
    cand = np.flatnonzero(room > 1e-12 * pen.w)
    if not lam_out > 0 or cand.size == 0:
        return np.zeros(0, dtype=int), np.zeros(0)
    c2 = _outside_block(space, Bm, cand, K)
    score = pen.t[cand] / np.maximum(c2, 1e-300)
    pick = np.argsort(-score)[:n_edges]
    pick = pick[np.argsort(cand[pick])]
    return cand[pick], 0.25 * lam_out / (pick.size * np.maximum(c2[pick], 1e-300))


#: largest relative residual from which :func:`restore_feasibility` is tried
_RESTORE_MAX = 1e-3


def restore_feasibility(space: FactorSpace, pen: DistancePenalty, W: np.ndarray, *, tol: float,
                        max_steps: int = 5, kink_tol: float = _KINK_TOL,
                        deadline: float = np.inf) -> tuple[np.ndarray, float]:
    r"""Move a factor onto the distance equalities by Gauss–Newton steps.

    For ``"equality"`` the augmented-Lagrangian iterate violates
    :math:`D_e(W) = \|E_eW\|^2 = \bar D_e` by its residual :math:`c(W) = D(W) - \bar D`,
    and its objective is no upper bound on :math:`p^*`. Each step takes the
    least-norm correction of the linearised constraints,

    .. math::

        \Delta = \arg\min\ \{\|\Delta\|_F : c(W) + J\Delta = 0\},\qquad
        J\Delta = 2\,\big(\langle E_eW, E_e\Delta\rangle\big)_e,

    solved matrix-free by LSMR (:math:`J^T\lambda = 2E^T\mathrm{diag}(\lambda)EW` keeps
    the columns centred). The constraints are quadratic, so from a small residual
    the steps converge quadratically and move the objective by about
    :math:`y^Tc(W)`: the restored point is feasible to ``tol``, so its objective
    bounds :math:`p^*` from above up to that residual (the certificate's other
    side). Stops at ``tol`` (relative,
    :math:`\|c\|/\|\bar D\|`), after ``max_steps``, or when a step does not reduce
    the residual, or once ``deadline`` (a :func:`time.perf_counter` value) has passed
    (a matrix-free step under way is abandoned). Returns the best factor found and its relative
    residual.

    Constraints added by the user that are held at their bound (equalities, and
    inequalities violated or within ``kink_tol`` of their size of the bound) join the
    system as rows :math:`\langle A_k, VV^T\rangle = b_k`, and the residual reported is
    then the larger of the distance residual and their largest relative violation.

    For ``"interval"`` every factor is feasible, but the penalty
    :math:`\lambda\sum_e|D_e-\bar D_e|/\bar D_e` is not differentiable at
    :math:`D_e = \bar D_e`, where the optimum keeps most edges; the augmented
    Lagrangian leaves them a little off it, and a few edges at 1e-5 relative cost as
    much as the gap wanted. So the edges on the kink
    (:math:`|D_e-\bar D_e|\le` ``kink_tol`` :math:`\bar D_e`, the set of
    :func:`refine_multipliers`) are moved onto it, the others left free; the
    residual is taken over those edges. For ``"shrink"`` the same, with the violated
    edges (:math:`D_e > \bar D_e`) joining those on the bound.

    Where the step is not an exact dense least-squares solve, LSMR solves the system with
    each distance row divided by :math:`\sqrt{\bar D_e}`,
    which leaves the solutions of a consistent system unchanged and gives every row the norm
    :math:`2\|E_eW\|/\sqrt{\bar D_e}\approx 2\sqrt2`: target lengths that spread over
    orders of magnitude (raw features) otherwise leave LSMR at its iteration cap.

    ``InputError`` for ``"quadratic"`` (no equalities, no kink), a factor of the
    wrong shape, or a ``kink_tol`` that is not a finite number >= 0.
    """
    if pen.mode not in ("equality", "interval", "shrink"):
        raise InputError(f"restore_feasibility moves a factor onto distances='equality' "
                         f"constraints or the kink of distances='interval'; got "
                         f"distances={pen.mode!r}, whose penalty is smooth")
    _require_kink_tol("restore_feasibility", kink_tol)
    W = np.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[0] != space.dim:
        raise InputError(f"restore_feasibility needs a factor of shape ({space.dim}, k); "
                         f"got {W.shape}")
    E, ET, t = space.E, space.ET, pen.t
    if pen.mode in ("interval", "shrink"):
        Z = space.diffs(W)
        r0 = np.einsum("ij,ij->i", Z, Z) - t
        near = np.abs(r0) <= kink_tol * t
        on = np.flatnonzero(near | (r0 > 0) if pen.mode == "shrink" else near)
        if on.size == 0 and space.K is None:
            return W, 0.0
        E, ET, t = E[on], ET[:, on], t[on]     # the edges on the kink, sliced once
    t_norm = max(float(np.linalg.norm(t)), 1e-300)
    K = space.K
    if K is not None:
        # the added rows held at their bound: equalities, and inequalities that are
        # violated or within kink_tol of their bound
        k_scale = space.K_scale()
        rows = np.flatnonzero(K.equality
                              | (space.K_values(W) >= K.rhs - kink_tol * k_scale))
        sel = np.isin(K.row, rows)
        ki, kj, kv = K.i[sel], K.j[sel], K.value[sel]
        kr = np.searchsorted(rows, K.row[sel])

    def resid(V):
        Z = E @ V
        c = np.einsum("ij,ij->i", Z, Z) - t
        if K is not None:
            c = np.r_[c, space.K_values(V)[rows] - K.rhs[rows]]
        return Z, c

    def measure(c):
        r = float(np.linalg.norm(c[:t.size])) / t_norm
        if K is not None:
            r = max(r, float(np.max(np.abs(c[t.size:]) / k_scale[rows], initial=0.0)))
        return r

    def jacobian(Z, V):
        # J u = 2 <E_e V, E_e U>_e and J^T lam = 2 E^T diag(lam) E V, at E V = Z; an added
        # row's part is 2 <A_k V, U> and 2 P (sum_k lam_k A_k) V (P keeps columns centred)
        m_e = Z.shape[0]

        def matvec(u):
            if _past(deadline):
                raise _DeadlinePassed
            U = u.reshape(V.shape)
            out = 2.0 * row_scale * np.einsum("ij,ij->i", Z, E @ U)
            if K is not None:
                out = np.r_[out, 2.0 * _rows_inner(U)]
            return out

        def rmatvec(lam):
            lam = np.ravel(lam)
            out = 2.0 * (ET @ ((row_scale * lam[:m_e])[:, None] * Z))
            if K is not None and rows.size:
                z = np.zeros(K.p)
                z[rows] = lam[m_e:]
                out = out + 2.0 * space.project(space.apply_K(V, z))
            return np.ravel(out)

        def _rows_inner(U):
            if space.Q is None:
                return np.bincount(kr, weights=kv * np.einsum("ij,ij->i", V[ki], U[kj]),
                                   minlength=rows.size)
            return np.einsum("kab,ac,bc->k", space.Kq[rows], V, U)

        n_rows = m_e + (0 if K is None else rows.size)
        return spla.LinearOperator((n_rows, V.size), dtype=float, matvec=matvec,
                                   rmatvec=rmatvec)

    # each distance row divided by sqrt(t_e): the same solutions, rows of equal norm
    row_scale = 1.0 / np.sqrt(np.maximum(t, 1e-300))
    Z, c = resid(W)
    best = (W, measure(c))
    for _ in range(max_steps):
        if best[1] <= tol or _past(deadline):
            break
        J = _explicit_jacobian(space, E, Z, W, rows if K is not None else None)
        if isinstance(J, np.ndarray):    # small: the exact least-norm step
            step = least_squares(J, -c)
        else:
            # least_norm, else LSMR, on the equilibrated rows (the operator scales itself)
            rhs = np.r_[c[:t.size] * row_scale, c[t.size:]]
            if J is not None:
                J = sp.diags(np.r_[row_scale, np.ones(c.size - t.size)]) @ J
            step = None if J is None else least_norm(J, -rhs)
            try:
                step = step if step is not None else spla.lsmr(J if J is not None else jacobian(
                    Z, W), -rhs, atol=1e-6, btol=1e-6, maxiter=2000)[0]
            except _DeadlinePassed:
                break
        W_new = W + step.reshape(W.shape)
        Z_new, c_new = resid(W_new)
        r_new = measure(c_new)
        if r_new >= best[1]:
            break
        W, Z, c = W_new, Z_new, c_new
        best = (W, r_new)
    return best

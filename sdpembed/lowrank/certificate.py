"""Weak-duality certificates: a lower bound on the optimum from dual variables."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse.linalg as spla
from threadpoolctl import threadpool_limits

from .penalty import DistancePenalty
from .rounding import eigh_allowance, sum_allowance
from .space import FactorSpace
from .sparse_slack import CertificateLate, EigensolveFailed, EigenStop, FactorTimes
from .spectrum import EigenEstimate, _bottom, _gershgorin, _lambda_min, _verify_threads
from .trace_bound import feasible_trace_bound, row_trace_bound
from .verify import _U, SparseCheck, _verified_lambda_min

#: note prefix of a certificate taken at lifted multipliers
_LIFTED = "lifted multipliers; "


# ----------------------------------------------------------------------- certificate
#: how :math:`\lambda_{\min}` of a certificate was obtained (``Certificate.check``)
CHECK_DENSE = "dense"
CHECK_SPARSE = "sparse"
CHECK_CHOLESKY = "cholesky"
CHECK_LANCZOS = "lanczos (unverified)"
CHECK_SHIFT_INVERT = "shift-invert (unverified)"
#: the checks that still need :func:`verify_certificate` (n > ``DenseLimits.eig``)
_UNVERIFIED = (CHECK_LANCZOS, CHECK_SHIFT_INVERT)


@dataclass
class Certificate:
    """A lower bound on the optimum from dual variables (see the module docstring).

    ``check`` says how :math:`\\mu\\le\\lambda_{\\min}(S)` was obtained:
    ``"dense"`` (dense ``eigh``: n <= ``DenseLimits.eig`` or a reduced basis),
    ``"sparse"`` (verified: a sparse factorisation of the shifted matrix, rounding
    included, :func:`~sdpembed.lowrank.sparse_slack.sparse_verify`), ``"cholesky"``
    (verified: a dense Cholesky factorisation, where the sparse proof would be imprecise,
    :func:`~sdpembed.lowrank.verify._verify_psd_shift`),
    ``"lanczos (unverified)"`` (a Lanczos Ritz value minus its residual norm: a lower
    bound only if Lanczos found the leftmost eigenvalue, which it may miss) or
    ``"shift-invert (unverified)"`` (a Rayleigh quotient from shift-invert Lanczos for
    n > ``DenseLimits.eig``: interval certificates and lifts, verified like Lanczos
    values before they are reported). Only the first three make ``bound`` a certified
    lower bound (:attr:`verified`).
    """

    bound: float | None
    lambda_min: float | None
    method: str
    note: str = ""
    eig: EigenEstimate | None = None
    check: str = CHECK_LANCZOS
    check_note: str = ""
    y: np.ndarray | None = field(default=None, repr=False)
    nu: float = 0.0
    #: ``"dense"``: the allowance :math:`\\delta` (:func:`~.rounding.eigh_allowance`) below
    #: ``lambda_min`` (the computed value) that the bound takes for rounding
    rounding: float = 0.0
    #: the multipliers :math:`\bar\nu` of the dual point whose dual function ``bound`` is
    #: (``"shifted"``: the combination with the anchor's); ``None``: ``nu``
    dual_nu: np.ndarray | None = field(default=None, repr=False)
    #: ``"trace-bound"``: the :math:`T \ge \mathrm{tr}\,G` the bound takes (``mu T``)
    trace_bound: float | None = None

    @property
    def verified(self) -> bool:
        """Whether ``bound`` is a certified lower bound (λ_min dense or verified)."""
        return self.bound is not None and self.check in (CHECK_DENSE, CHECK_SPARSE, CHECK_CHOLESKY)

    def describe(self) -> str:
        if self.bound is None:
            return f"no certificate: {self.note}"
        head = (f"{self.method}: lambda_min(S) >= {self.lambda_min:.3g}"
                + (f"; {self.note}" if self.note else ""))
        if self.check == CHECK_DENSE:
            how = (f"lambda_min by dense eigh, less its rounding allowance {self.rounding:.2g} "
                   "in the bound")
        elif self.check == CHECK_CHOLESKY:
            how = ("lambda_min verified by a dense Cholesky factorisation at a shift (rounding "
                   "included)")
        elif self.check == CHECK_SPARSE:
            how = ("lambda_min verified by a sparse factorisation at a shift (rounding "
                   "included)")
        elif self.check == CHECK_SHIFT_INVERT:
            how = ("lambda_min by shift-invert Lanczos, UNVERIFIED (no factorisation check "
                   "below it)")
        else:
            res = f" {self.eig.residual:.2g}" if self.eig is not None else ""
            how = (f"lambda_min by Lanczos minus its residual norm{res}, UNVERIFIED "
                   "(Lanczos may miss the leftmost eigenvalue)")
        return head + "; " + how + (f" [{self.check_note}]" if self.check_note else "")


#: a certificate step estimated from this solve's own (:meth:`CertificateCache.start_by`)
#: starts only if it would end at most this share of ``time_limit`` past the deadline
OVERRUN_SHARE = 0.05
#: the note of a final certificate not made for the time limit
FINAL_SKIPPED = "final certificate skipped: the time limit"
#: the note of a shift-invert certificate stopped before a factorisation or its solves
#: that would end past the time limit (``sparse_bottom``'s ``late``)
BLOCK_STOPPED = "certificate stopped: the time limit"
#: factorisations of a block certificate at the least (the first shift, the nearer one):
#: its estimate where a factorisation of the slack, but no block, has been measured
_BLOCK_FACTORISATIONS = 2


@dataclass
class CertificateCache:
    """What the certificates of one solve share (pass one to :func:`certify` to reuse it).

    Attributes
    ----------
    lanczos_start : ndarray or None
        The last Lanczos eigenvector: the next call starts there (the multipliers change
        little between calls).
    eigenpairs : list of (y, nu, eigenvalues, eigenvectors)
        The bottom eigenpairs of the last two interval certificates (n > ``DenseLimits.eig``;
        ``limits.block`` of them where a lift may start, else ``_CANDIDATE_BLOCK``), which
        the lift reuses for its first round.
    lambda_guess : float or None
        The last :math:`\\lambda_{\\min}` estimate, below which the next shift-invert starts.
    verify_checks : list of SparseCheck or PSDCheck
        Every factorisation of the verifications (sparse or dense).
    curvature : float or None
        The largest :math:`c` with :math:`C \\preceq -cI` (``"equality"``, computed once).
    trace_bound : float or None
        :math:`T \\ge \\mathrm{tr}\\,G` on the feasible set (``"equality"``, ``"shrink"``:
        the least of the shortest paths' and the added rows',
        :func:`~.trace_bound.feasible_trace_bound`).
    trace_source : str
        Where ``trace_bound`` comes from (``"shortest paths"``, ``"an added row"``).
    mu0 : float or None
        :math:`\\lambda_{\\min}` of :math:`S` at the coercive point :math:`y_0`.
    row_trace_bound : float or None
        :math:`T \\ge \\mathrm{tr}\\,G` from an added row (``inf``: none;
        :func:`~.trace_bound.row_trace_bound`).
    mu0_verified : (float or None, str) or None
        ``mu0`` verified by a sparse factorisation, or ``None`` and the reason.
    mu0_allowance : float or None
        The rounding allowance of ``mu0`` where it is a dense ``eigh`` value
        (:func:`~.rounding.eigh_allowance`).
    deadline : float
        The solve's end by its time limit (a :func:`time.perf_counter` value): no
        verifying factorisation starts after it (:func:`_verified_lambda_min`), nor one
        that its estimate (:meth:`start_by`) says would end more than ``slack`` past it.
    slack : float
        Seconds past ``deadline`` a step estimated from this solve's own may end by.
    block_seconds : list of float
        Seconds of each shift-invert certificate of this solve (eigenpairs and the bound,
        without its verification): the estimate of the next one.
    eig_seconds : float or None
        Seconds of the boundedness test's :math:`\\lambda_{\\min}` at :math:`y_0` (one
        Lanczos run on the whole space): the estimate of a certificate before any is made.
    factor_seconds : list of float
        Seconds of each factorisation of the slack in the shift-invert blocks (one
        sparsity pattern in full coordinates: the same work at every shift and point).
    """

    lanczos_start: np.ndarray | None = None
    eigenpairs: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=list)
    lambda_guess: float | None = None
    verify_checks: list = field(default_factory=list)
    curvature: float | None = None
    trace_bound: float | None = None
    trace_source: str = ""
    mu0: float | None = None
    row_trace_bound: float | None = None
    mu0_verified: tuple[float | None, str] | None = None
    mu0_allowance: float | None = None
    deadline: float = np.inf
    slack: float = 0.0
    block_seconds: list = field(default_factory=list)
    eig_seconds: float | None = None
    factor_seconds: list = field(default_factory=list)

    def start_by(self, seconds: float | None) -> float:
        """The latest :func:`time.perf_counter` value at which a step estimated to take
        ``seconds`` may start: ``deadline``, earlier by what the step would end past
        ``deadline + slack``; ``deadline`` itself where there is no estimate (``None``)."""
        if seconds is None:
            return self.deadline
        return min(self.deadline, self.deadline + self.slack - seconds)

    def late(self, seconds: float | None) -> bool:
        """Whether a step estimated to take ``seconds`` (``None``: unknown) must not start."""
        return time.perf_counter() >= self.start_by(seconds)

    def block_estimate(self) -> float | None:
        """The longest shift-invert certificate of this solve so far, else the larger of the
        boundedness test's Lanczos run and ``_BLOCK_FACTORISATIONS`` times the longest
        factorisation of the slack made (:meth:`factor_estimate`; ``None``: none of them)."""
        if self.block_seconds:
            return max(self.block_seconds)
        f = self.factor_estimate()
        if f is None:
            return self.eig_seconds
        return max(self.eig_seconds or 0.0, _BLOCK_FACTORISATIONS * f)

    def factor_estimate(self) -> float | None:
        """The longest sparse factorisation of the slack of this solve so far (a block's or
        a verification's; ``None``: none made)."""
        return max(self.factor_seconds + [c.seconds for c in self.verify_checks
                                          if isinstance(c, SparseCheck)], default=None)

    def final_late(self, space: FactorSpace) -> bool:
        """Whether a final certificate must not start: a sparse one (n > ``limits.eig``,
        not bounded: a factorisation of the slack) that :meth:`block_estimate` says would
        end past ``deadline + slack``."""
        return space.dim > space.limits.eig and self.late(self.block_estimate())

    def bottom(self, space: FactorSpace, y: np.ndarray, nu: float | np.ndarray | None, k: int,
               **kwargs: object) -> tuple[np.ndarray, np.ndarray] | None:
        """:func:`~sdpembed.lowrank.spectrum._bottom` (``kwargs`` passed on) under the solve's
        time limit, as :func:`certify`'s block: :meth:`late` asked before each factorisation
        and the solves (estimated from :meth:`factor_estimate`), every factorisation's
        seconds kept in ``factor_seconds``; ``None`` where a needed step would end past the
        limit (``CertificateLate``) or the eigensolve failed (``EigensolveFailed``)."""
        times = FactorTimes(first=self.factor_estimate())
        try:
            return _bottom(space, y, nu, k, late=self.late, times=times, **kwargs)
        except EigenStop:     # late, or a failed eigensolve: no pairs
            return None
        finally:
            self.factor_seconds.extend(times.factor)

    def verify_estimate(self) -> float | None:
        """The longest verifying factorisation of this solve so far, else the longest of the
        blocks' (the same pattern in full coordinates; ``None``: none made)."""
        return max((c.seconds for c in self.verify_checks),
                   default=max(self.factor_seconds, default=None))


def _objective_curvature(space: FactorSpace) -> float:
    r"""The largest :math:`c` with :math:`C \preceq -cI` on the space (``<= 0``: none known).

    Full space: :math:`C = \mathrm{diag}(d) + U\,\mathrm{diag}(s)\,U^T` restricted to
    :math:`\mathbf 1^\perp`; with every :math:`s_i\le 0`, :math:`c = -\max_i d_i` is
    valid (a lower bound on the exact value; exact for MVU's :math:`C = -I`).
    Otherwise 0 (the exact value would need an eigenvalue of :math:`C`). On a
    basis, :math:`c = -\lambda_{\max}(Q^TCQ)` (dense, :math:`r\times r`).
    """
    if space.Q is not None:
        return -float(np.linalg.eigvalsh(0.5 * (space.Cq + space.Cq.T))[-1])
    C = space.C
    if C.s.size and np.any(C.s > 0):
        return 0.0
    if C.sparse is not None and C.sparse.nnz:
        # Gershgorin: lambda_max(diag(d) + S) <= max_i d_i + sum_j |S_ij|
        rows = np.asarray(abs(C.sparse).sum(axis=1)).ravel()
        return -float(np.max(C.diag + rows))
    return -float(np.max(C.diag))


def _eig_check(space: FactorSpace, eig: EigenEstimate) -> str:
    """The :class:`Certificate` ``check`` of an eigenvalue before any verification."""
    if eig.method == "shift-invert":
        return CHECK_SHIFT_INVERT
    if eig.method != "dense":
        return CHECK_LANCZOS
    return CHECK_DENSE


def _block_certificate(space: FactorSpace, pen: DistancePenalty) -> bool:
    """Whether :func:`certify` takes :math:`\\lambda_{\\min}` from the bottom block of
    eigenpairs by shift-invert (:func:`~sdpembed.lowrank.spectrum._bottom`) instead of
    Lanczos: ``"interval"`` in the full space with n > ``limits.eig``, where a certificate
    that misses ``tol`` is followed by a lift that needs the same eigenpairs. Plain Lanczos
    is slow exactly there, near the optimum: it must resolve :math:`\\lambda_{\\min}` below
    the cluster of near-zero eigenvalues on the factor's range, which shift-invert
    separates."""
    return pen.mode == "interval" and space.Q is None and space.dim > space.limits.eig


def certify(space: FactorSpace, pen: DistancePenalty, y: np.ndarray, nu: float | np.ndarray | None,
            *, factor: np.ndarray | None = None, eig_tol: float = 1e-6,
            cache: CertificateCache | None = None, verify: bool = False,
            target: float | None = None, anchors: bool = True,
            block: int | None = None) -> Certificate:
    """Lower bound on the optimum (of the problem on ``space``) from multipliers ``(y, nu)``.

    ``factor`` (the current :math:`V`) is only used to deflate the Lanczos
    iteration (see :func:`_lambda_min`); the bound does not depend on it.
    ``"interval"`` in the full space with n > ``limits.eig`` takes the bottom eigenpairs
    by shift-invert instead (:func:`_block_certificate`) and keeps them in
    ``cache.eigenpairs`` for :func:`_lifted_certificate`.
    ``verify``: where :math:`\\lambda_{\\min}` is unverified (n > ``limits.eig``),
    verify it (and the coercive point's) by :func:`_verified_lambda_min` (a sparse
    factorisation per try), meant for certificates that would end the solve. ``target``: the
    bound wanted; where the deflated Lanczos bound (see :func:`_lambda_min`) falls short
    of it, Lanczos is run again on all of :math:`\\mathbf 1^\\perp` at ``eig_tol / 100``
    and the better certificate kept. The split bound is loose when :math:`S` does not
    yet nearly annihilate the factor's range; the undeflated run is slower (it must
    resolve lambda_min just below the cluster of the factor's near-zero eigenvalues),
    hence only on demand. ``anchors=False`` leaves out the shifted certificate's nearer
    anchors (three more eigenvalue computations; a solve past its deadline). ``block``: the
    eigenpairs of the shift-invert block (default ``limits.block``, what a lift from these
    multipliers needs; :math:`\\lambda_{\\min}` and the escape directions need only
    ``_CANDIDATE_BLOCK``); the bound does not depend on it. A block asks ``cache.late``
    before each factorisation and its solves (``sparse_bottom``'s ``late``); one that must
    stop gives a certificate without a bound, its note ``BLOCK_STOPPED``.
    """
    cache = CertificateCache() if cache is None else cache
    nu = space.duals(nu)
    y = pen.certifiable(np.asarray(y, dtype=float))   # "quadratic": y >= -Y (its docstring)
    if not np.isfinite(pen.conjugate(y) + space.linear_offset(nu)):
        return Certificate(None, None, "none", "multipliers outside the domain of phi*",
                           y=y, nu=nu)
    if _block_certificate(space, pen):
        t0, n_checks = time.perf_counter(), len(cache.verify_checks)
        k = space.limits.block if block is None else block
        times = FactorTimes(first=cache.factor_estimate())
        try:
            lam, X = _bottom(space, y, nu, max(1, min(k, space.dim - 2)),
                             guess=cache.lambda_guess, late=cache.late, times=times)
        except CertificateLate as exc:
            return Certificate(None, None, "none", f"{BLOCK_STOPPED} ({exc})", y=y, nu=nu)
        except EigensolveFailed as exc:   # e.g. ARPACK error 3, no shifts, on a small slack
            return Certificate(None, None, "none", str(exc), y=y, nu=nu)
        finally:
            cache.factor_seconds.extend(times.factor)
        cache.lambda_guess = float(lam[0])
        # the last two candidates' eigenpairs (8 n x k bytes each) for the lift
        cache.eigenpairs[:] = cache.eigenpairs[-1:] + [(np.array(y, dtype=float), nu.copy(),
                                                        lam, X)]
        eig = EigenEstimate(float(lam[0]), X[:, 0], float(lam[0]), 0.0, "shift-invert")
        cert = _certificate_from_eig(space, pen, y, nu, eig, cache, eig_tol, verify, anchors)
        cache.block_seconds.append(time.perf_counter() - t0 - sum(
            c.seconds for c in cache.verify_checks[n_checks:]))
        return cert
    try:
        eig = _lambda_min(space, y, nu, tol=eig_tol, deflate=factor,
                          start=cache.lanczos_start)
    except spla.ArpackError as exc:   # ArpackNoConvergence among them
        return Certificate(None, None, "none", f"Lanczos failed ({exc})", y=y, nu=nu)
    lanczos = eig.method == "lanczos"
    if lanczos:
        cache.lanczos_start = eig.vector
    cert = _certificate_from_eig(space, pen, y, nu, eig, cache, eig_tol, verify, anchors)
    if not (lanczos and factor is not None and target is not None and eig.value < 0
            and (cert.bound is None or cert.bound < target)):
        return cert
    try:
        # ncv 30: long restarts are wasted on the cluster at 0
        eig_f = _lambda_min(space, y, nu, tol=0.01 * eig_tol, start=eig.vector, ncv=30)
    except spla.ArpackError:   # ArpackNoConvergence among them: the first certificate
        return cert
    if eig_f.value <= eig.value:
        return cert
    cache.lanczos_start = eig_f.vector
    return _certificate_from_eig(space, pen, y, nu, eig_f, cache, eig_tol, verify, anchors)


def verify_certificate(space: FactorSpace, pen: DistancePenalty, cert: Certificate, *,
                       eig_tol: float = 1e-6, cache: CertificateCache | None = None) -> Certificate:
    """``cert`` with its Lanczos :math:`\\lambda_{\\min}` verified (or marked unverified).

    Dense and already verified certificates, and those without a bound, are
    returned as they are. Otherwise the Lanczos value is checked by
    :func:`_verified_lambda_min` (lowered if needed) and the bound recomputed
    from the verified value; if nothing can be verified the certificate keeps
    the Lanczos bound with ``check == "lanczos (unverified)"`` and the reason.
    """
    if cert.bound is None or cert.check not in _UNVERIFIED or cert.eig is None \
            or cert.y is None:
        return cert
    cache = CertificateCache() if cache is None else cache
    out = _certificate_from_eig(space, pen, cert.y, space.duals(cert.nu), cert.eig, cache,
                                eig_tol, True)
    for prefix in ("refined multipliers; ", "barrier multipliers; ", _LIFTED):
        if cert.note.startswith(prefix):
            out.note = prefix + out.note
    return out


def _certificate_from_eig(space, pen, y, nu, eig: EigenEstimate, cache: CertificateCache,
                          eig_tol, verify, anchors: bool = True) -> Certificate:
    """The certificate of multipliers ``(y, nu)`` whose :math:`\\lambda_{\\min}(S)` estimate is
    ``eig``: the dual function :math:`-\\varphi^*(y) - z^Tb` where :math:`S \\succeq 0`, else a
    shift towards the coercive point (or, for ``"equality"``, a scaling or a trace bound;
    the trace bound of an added row, :func:`_row_trace_certificate`, where it is higher or
    there is no coercive point).

    Rounding: a dense ``eigh`` value :math:`\\mu` (``"dense"``) proves only
    :math:`\\lambda_{\\min}(S)\\ge\\mu-\\delta`, :math:`\\delta` =
    :func:`~.rounding.eigh_allowance` (the verified checks include their rounding), and every
    dual value is lowered by the rounding of its sum (:func:`~.rounding.sum_allowance`). Where
    :math:`\\mu\\ge 0` but :math:`\\mu-\\delta<0` the bound is that of the negative
    value (scaled, trace bound or shifted), which costs about :math:`\\delta` times a trace.
    ``lambda_min`` reports the computed :math:`\\mu` and ``rounding`` :math:`\\delta`."""
    phi = pen.conjugate(y)
    off = space.linear_offset(nu)      # z^T b of the added constraints (0 without them)
    check, check_note = _eig_check(space, eig), ""
    mu = eig.value
    if verify and check in _UNVERIFIED:
        with threadpool_limits(limits=_verify_threads()):
            # any mu >= 0 gives the same bound (below): proving 0 is enough
            mu_v, why, checks = _verified_lambda_min(
                space, y, nu, mu, cache.start_by(cache.verify_estimate()), enough=0.0)
        cache.verify_checks.extend(checks)
        if mu_v is not None:
            source = "Lanczos" if eig.method == "lanczos" else "shift-invert"
            last = checks[-1]
            if isinstance(last, SparseCheck):
                check = CHECK_SPARSE
                how = (f"rounding bound {last.bound:.2g} below the shift {last.delta:.2g}, "
                       f"{last.mode} coordinates")
            else:
                check = CHECK_CHOLESKY
                how = f"dense, rounding allowance {last.delta:.2g}"
            check_note = (f"{source} estimate {eig.value:.6g}, verified {mu_v:.6g} "
                          f"({how}, {len(checks)} factorisation(s), "
                          f"{sum(c.seconds for c in checks):.3g} s)")
            mu = mu_v
        else:
            check_note = why
    mu_est = mu
    delta = eigh_allowance(space, y, nu) if check == CHECK_DENSE else 0.0
    mu = mu_est - delta                # lambda_min(S) >= mu (dense: up to eigh's rounding)
    if mu >= 0:
        return Certificate(-phi - off - sum_allowance(pen, y), mu_est, "dual-feasible",
                           eig=eig, check=check, check_note=check_note, y=y, nu=nu,
                           rounding=delta)
    # "shrink": the scaling keeps y >= 0, and D <= Dbar bounds tr G by the same shortest paths
    if pen.mode in ("equality", "shrink"):
        if cache.curvature is None:
            cache.curvature = _objective_curvature(space)
        c = cache.curvature
        best = None
        if c > 0:
            # C <= -c I: S(s y, s nu) >= (s (mu - eps) + (s - 1) c) I = 0 at s = c / (c + mu - eps)
            eps = 8.0 * _U * (abs(mu) + c + _gershgorin(space, y, nu))
            if c + mu - eps > 0:
                scale = c / (c + mu - eps)
                best = Certificate(-pen.conjugate(scale * y) - scale * off
                                   - sum_allowance(pen, scale * y), mu_est, "scaled",
                                   f"(y, nu) scaled by {scale:.8g} (C <= -{c:.6g} I)", eig=eig,
                                   check=check, check_note=check_note, y=y, nu=nu,
                                   rounding=delta, dual_nu=scale * nu)
        # the least trace bound of the hard rows (shortest paths, an added row), on a
        # reduced basis too: its feasible points are feasible points of the full problem
        if cache.trace_bound is None:
            cache.trace_bound, cache.trace_source = feasible_trace_bound(space)
        T = cache.trace_bound
        lb_T = -phi + mu * T - off - sum_allowance(pen, y)
        if best is None or lb_T > best.bound:
            best = Certificate(lb_T, mu_est, "trace-bound",
                               f"tr G <= {T:.6g} ({cache.trace_source or 'none'})", eig=eig,
                               check=check, check_note=check_note, y=y, nu=nu,
                               rounding=delta, trace_bound=T if np.isfinite(T) else None)
        return best
    nu0 = np.zeros(space.q)
    if cache.mu0 is None:
        cache.mu0 = coercive_lambda_min(space, pen, eig_tol)
    y0 = pen.coercive_point()
    mu0 = cache.mu0
    if check in (CHECK_SPARSE, CHECK_CHOLESKY) and np.isfinite(mu0) and mu0 > 0:
        # the combination's lambda_min rests on mu0 as well: verify it too (once)
        mu0_v, why0 = cache.mu0_verified or (None, "")
        if cache.mu0_verified is None:
            with threadpool_limits(limits=_verify_threads()):
                mu0_v, why0, checks0 = _verified_lambda_min(
                    space, y0, nu0, mu0, cache.start_by(cache.verify_estimate()))
            cache.verify_checks.extend(checks0)
            if mu0_v is not None or not cache.late(cache.verify_estimate()):
                cache.mu0_verified = (mu0_v, why0)   # kept unless stopped by the deadline
        if mu0_v is None:
            check = _eig_check(space, eig)
            check_note += f"; lambda_min at y0 unverified: {why0}"
        else:
            mu0 = mu0_v
            check_note += f"; lambda_min at y0 verified {mu0_v:.6g}"
    if check == CHECK_DENSE and np.isfinite(mu0):
        if cache.mu0_allowance is None:
            cache.mu0_allowance = eigh_allowance(space, y0, nu0)
        mu0 = mu0 - cache.mu0_allowance
    if mu0 <= 0:
        best = None
        if space.K is not None:
            # the added rows' multipliers may make S PSD at y0 where nu0 = 0 does not
            best = _row_anchor_certificate(space, pen, y, nu, mu, eig, cache, eig_tol, check,
                                           check_note, anchors)
            if best is not None:
                best.lambda_min, best.rounding = mu_est, delta
        best = _higher_bound(best, _row_trace_certificate(
            space, pen, y, nu, mu, mu_est, eig, cache, check, check_note, delta))
        if best is not None:
            return best
        return Certificate(None, mu_est, "none",
                           f"no coercive dual point (lambda_min at y0 = {mu0:.3g})", eig=eig,
                           check=check, y=y, nu=nu)
    # (1 - theta) mu + theta mu0 = eps > 0: a margin of a few roundings (|y| g u) so the
    # rounded combination of the multipliers keeps lambda_min >= 0; the point is
    # (1 - theta) (y, nu) + theta (y0, 0), whose dual function has (1 - theta) z^T b
    eps = 8.0 * _U * (abs(mu) + mu0 + _gershgorin(space, y, nu))
    theta = _shift_theta(mu, mu0, eps)
    bound = -pen.conjugate((1 - theta) * y + theta * y0) - (1 - theta) * off \
        - sum_allowance(pen, (1 - theta) * y + theta * y0)
    note = f"theta={theta:.3g} towards y0 (lambda_min there {mu0:.3g})"
    share = 1 - theta          # the point's nu is share * nu
    if check == CHECK_DENSE and anchors:
        # nearer anchors y_s = y + s (y0 - y): lambda_min(S(y_s)) often exceeds the
        # concave interpolation s mu0 (the Laplacian L(y0 - y) >= 0 lifts the near-null
        # directions of S(y)), so the shift costs less; exact eigenvalues only
        for s_ in _SHIFT_ANCHORS:
            ys, nus = y + s_ * (y0 - y), (1 - s_) * nu
            mus = _anchor_lambda_min(space, ys, nus, eig_tol)
            if mus <= 0:
                continue
            th = _shift_theta(mu, mus, eps)
            b = -pen.conjugate((1 - th) * y + th * ys) - ((1 - th) + th * (1 - s_)) * off \
                - sum_allowance(pen, (1 - th) * y + th * ys)
            if b > bound:
                bound, share = b, (1 - th) + th * (1 - s_)
                note = (f"theta={th:.3g} towards y + {s_:g} (y0 - y) "
                        f"(lambda_min there {mus:.3g})")
    shifted = Certificate(bound, mu_est, "shifted", note, eig=eig, check=check,
                          check_note=check_note, y=y, nu=nu, rounding=delta,
                          dual_nu=share * nu)
    # an added row's trace bound where it is higher (an active trace row)
    return _higher_bound(shifted, _row_trace_certificate(
        space, pen, y, nu, mu, mu_est, eig, cache, check, check_note, delta))


def _row_trace_certificate(space: FactorSpace, pen: DistancePenalty, y: np.ndarray,
                           nu: np.ndarray, mu: float, mu_est: float, eig: EigenEstimate,
                           cache: CertificateCache, check: str, check_note: str,
                           delta: float) -> Certificate | None:
    r"""The ``"trace-bound"`` certificate of ``(y, nu)`` (:math:`\lambda_{\min}(S) \ge \mu`,
    :math:`\mu < 0`, ``mu_est`` the computed value) from the added rows' bound
    :math:`T \ge \mathrm{tr}\,G` on every feasible point (:func:`row_trace_bound`, kept in
    ``cache.row_trace_bound``): :math:`-\varphi^*(y) - z^Tb + \mu T`, the bound of
    ``"equality"`` (weak duality at a feasible :math:`G`); ``None`` where no row bounds
    :math:`\mathrm{tr}\,G`."""
    if space.K is None:
        return None
    if cache.row_trace_bound is None:
        cache.row_trace_bound = row_trace_bound(space)
    T = cache.row_trace_bound
    if not np.isfinite(T):
        return None
    lb_T = -pen.conjugate(y) + mu * T - space.linear_offset(nu) - sum_allowance(pen, y)
    return Certificate(lb_T, mu_est, "trace-bound", f"tr G <= {T:.6g} (an added row)",
                       eig=eig, check=check, check_note=check_note, y=y, nu=nu,
                       rounding=delta, trace_bound=T)


def _anchor_lambda_min(space: FactorSpace, y: np.ndarray, nu, eig_tol: float) -> float:
    """:math:`\\lambda_{\\min}(S(y, \\nu))` of a nearer anchor (dense eigenvalues) less
    ``eigh``'s rounding allowance where it is positive; the computed value where it is not
    (then no anchor: the caller skips it)."""
    mu = _lambda_min(space, y, nu, tol=eig_tol).value
    return mu - eigh_allowance(space, y, nu) if mu > 0 else mu


#: scales s of the row anchor (y0, s z) tried in turn (:func:`_row_anchor_certificate`)
_ROW_ANCHOR_SCALES = (1.0, 4.0, 16.0, 64.0, 256.0)


def _row_anchor_certificate(space: FactorSpace, pen: DistancePenalty, y: np.ndarray,
                            nu: np.ndarray, mu: float, eig: EigenEstimate,
                            cache: CertificateCache, eig_tol: float, check: str,
                            check_note: str, anchors: bool) -> Certificate | None:
    r"""The shifted certificate of ``(y, nu)`` (:math:`\lambda_{\min}(S(y, \nu)) \ge \mu`,
    :math:`\mu < 0`) towards a row anchor :math:`(y_0, \nu_a)`, where the coercive point
    :math:`(y_0, 0)` is not dual feasible; ``None`` where no anchor is found.

    The anchor keeps :math:`y_0` = ``pen.coercive_point()`` and takes the added rows'
    multipliers along the current ones: :math:`\nu_a = (0, s z)`, :math:`z` the added rows'
    part of ``nu`` (the SNR part 0), the first :math:`s` of ``_ROW_ANCHOR_SCALES`` with
    :math:`\mu_a = \lambda_{\min}(S(y_0, \nu_a)) > 0` (less ``eigh``'s rounding allowance;
    verified by a factorisation where ``check`` is). Rows that bound the problem where
    :math:`y_0` alone does not (below a quadratic DVU's threshold: ``trace(G) <= tau``,
    must-link rows on a spanning tree, a positive definite row) put :math:`\sum_k z_kA_k`
    on the directions where :math:`S(y_0, 0)` is negative.

    Soundness. With :math:`\theta` = :func:`_shift_theta` (:math:`\mu`, :math:`\mu_a`,
    :math:`\epsilon`), the point :math:`(\bar y, \bar\nu) = (1 - \theta)(y, \nu) +
    \theta(y_0, \nu_a)` has :math:`\lambda_{\min}(S(\bar y, \bar\nu)) \ge (1 - \theta)\mu +
    \theta\mu_a \ge \epsilon \ge 0` (:math:`S` is affine in :math:`(y, \nu)`, so
    :math:`\lambda_{\min}` is concave); :math:`\bar y` is in the domain of the convex
    :math:`\varphi^*` (``y`` and :math:`y_0` are), and :math:`\bar z = (1 - \theta + \theta
    s) z \ge 0` on inequality rows (:math:`z` is, :math:`s \ge 0`; the SNR multiplier is
    scaled by :math:`1 - \theta \ge 0`). For every feasible :math:`G \succeq 0`,
    Fenchel–Young gives :math:`p(G) \ge \langle C, G\rangle + \bar y^TD(G) -
    \varphi^*(\bar y) = \langle S(\bar y, \bar\nu), G\rangle - \bar\nu_0\langle H,
    G\rangle - \sum_k \bar z_k\langle A_k, G\rangle - \varphi^*(\bar y) \ge
    -\varphi^*(\bar y) - \bar z^Tb`, since :math:`\langle S, G\rangle \ge 0`, the SNR row
    :math:`\langle H, G\rangle \le 0` has :math:`\bar\nu_0 \ge 0` and :math:`\bar
    z_k(\langle A_k, G\rangle - b_k) \le 0` on every row (0 on equality rows): the bound
    :math:`-\varphi^*(\bar y) - \bar z^Tb`, less the rounding of its sum. The nearer
    anchors :math:`(y, \nu) + s'((y_0, \nu_a) - (y, \nu))` (``_SHIFT_ANCHORS``, dense
    eigenvalues only) are the same argument with another anchor (docs/tuning.md, "A
    shifted certificate towards the rows' multipliers")."""
    z = space.user_part(nu)
    if z is None or not np.any(z) or not np.isfinite(space.linear_offset(nu)):
        return None
    y0 = pen.coercive_point()
    dense = check == CHECK_DENSE
    nu_a, mu_a = np.zeros(space.q), -np.inf
    try:
        for s in _ROW_ANCHOR_SCALES:
            nu_a = np.zeros(space.q)
            nu_a[space.n_snr:] = s * z
            mu_a = _lambda_min(space, y0, nu_a, tol=eig_tol).value
            if dense and mu_a > 0:
                mu_a -= eigh_allowance(space, y0, nu_a)
            if mu_a > 0:
                break
    except spla.ArpackError:   # ArpackNoConvergence among them: no anchor
        return None
    if not mu_a > 0:
        return None
    how = f"row anchor: y0 with {s:g} x the rows' multipliers"
    if check in (CHECK_SPARSE, CHECK_CHOLESKY):
        with threadpool_limits(limits=_verify_threads()):
            mu_v, why, checks = _verified_lambda_min(
                space, y0, nu_a, mu_a, cache.start_by(cache.verify_estimate()))
        cache.verify_checks.extend(checks)
        if mu_v is None or not mu_v > 0:
            check = _eig_check(space, eig)
            check_note += f"; lambda_min at the row anchor unverified: {why}"
        else:
            mu_a = mu_v
            check_note += f"; lambda_min at the row anchor verified {mu_v:.6g}"
    eps = 8.0 * _U * (abs(mu) + mu_a + max(_gershgorin(space, y, nu),
                                          _gershgorin(space, y0, nu_a)))

    def shifted(y_a, nu_a_, mu_a_):
        th = _shift_theta(mu, mu_a_, eps)
        yc, nuc = (1 - th) * y + th * y_a, (1 - th) * nu + th * nu_a_
        return -pen.conjugate(yc) - space.linear_offset(nuc) - sum_allowance(pen, yc), th, nuc

    bound, theta, nu_bar = shifted(y0, nu_a, mu_a)
    note = f"theta={theta:.3g} towards the {how} (lambda_min there {mu_a:.3g})"
    if dense and anchors:
        for s_ in _SHIFT_ANCHORS:
            ys, nus = y + s_ * (y0 - y), nu + s_ * (nu_a - nu)
            mus = _anchor_lambda_min(space, ys, nus, eig_tol)
            if mus <= 0:
                continue
            b, th, nuc = shifted(ys, nus, mus)
            if b > bound:
                bound, nu_bar = b, nuc
                note = (f"theta={th:.3g} towards (y, nu) + {s_:g} (anchor - (y, nu)), the "
                        f"{how} (lambda_min there {mus:.3g})")
    return Certificate(bound, mu, "shifted", note, eig=eig, check=check, check_note=check_note,
                       y=y, nu=nu, dual_nu=nu_bar)


def coercive_lambda_min(space: FactorSpace, pen: DistancePenalty, eig_tol: float) -> float:
    r""":math:`\mu_0 = \lambda_{\min}(S(y_0))` at the coercive point :math:`y_0` =
    ``pen.coercive_point()`` (``-inf`` where Lanczos fails), after moving it, for
    ``"quadratic"``, nearer to :math:`\lambda` where :math:`\mu_0 \le 0`.

    ``"quadratic"``: :math:`\varphi^*` is finite for :math:`y < \lambda` and :math:`S(y)`
    grows with :math:`y`; the problem is bounded exactly when :math:`\mu_1 =
    \lambda_{\min}(S(\lambda\mathbf 1)) \ge 0` (the solve's boundedness test). Just
    above the threshold :math:`\mu_1` is small and :math:`S((1 - \epsilon)\lambda)` at the
    first :math:`\epsilon` = 0.1 is indefinite: without a coercive anchor no shifted
    certificate exists and the solve could never certify (docs/tuning.md, "Quadratic DVU
    just above its threshold"). :math:`f(s) = \lambda_{\min}(S(s\lambda\mathbf 1))` is
    concave in :math:`s` (:math:`S` is affine in :math:`y`), so it lies above its secant
    :math:`\ell` through :math:`s_a = 1 - \epsilon` and :math:`1`; with slope :math:`k =
    (\mu_1 - f(s_a))/\epsilon`, the new share :math:`\epsilon' = \mu_1 / (2k)` gives
    :math:`f(1 - \epsilon') \ge \mu_1/2`, and maximises :math:`\epsilon'\,\ell(1 -
    \epsilon')`: the shifted bound's loss grows like :math:`1/\epsilon'` (through
    :math:`\varphi^*(y_0)`) over :math:`\mu_0`."""
    nu0 = np.zeros(space.q)
    try:
        mu0 = _lambda_min(space, pen.coercive_point(), nu0, tol=eig_tol).value
        if pen.mode != "quadratic" or mu0 > 0:
            return mu0
        mu1 = _lambda_min(space, np.full_like(pen.t, pen.lam), nu0, tol=eig_tol).value
        if not mu1 > 0:
            return mu0
        share = pen.coercive_share
        pen.coercive_share = share * mu1 / (2.0 * (mu1 - mu0))
        return _lambda_min(space, pen.coercive_point(), nu0, tol=eig_tol).value
    except spla.ArpackError:   # ArpackNoConvergence among them: no coercive anchor
        return -np.inf


def _shift_theta(mu: float, mu_anchor: float, eps: float = 0.0) -> float:
    r""":math:`\theta = \min(1, (\epsilon - \mu)/(\mu_a - \mu))`: the step from multipliers
    with :math:`\lambda_{\min}(S) = \mu < 0` towards an anchor with :math:`\lambda_{\min} =
    \mu_a > 0` after which, by concavity of :math:`\lambda_{\min}`, it is at least
    :math:`\epsilon` (the shifted certificate's rounding margin)."""
    return min(1.0, (eps - mu) / (mu_anchor - mu))


#: anchors s of the shifted certificate besides y0 itself (dense eigenvalues only)
_SHIFT_ANCHORS = (1e-2, 1e-4, 1e-6)


def relative_gap(p: float | None, lb: float | None) -> float | None:
    """The relative gap :math:`|p - \\ell| / \\max(|p|, |\\ell|)` of an objective ``p`` and a lower
    bound ``lb``, as LOWRANK reports it (``certified_gap``); at most 2.

    ``p`` may fall below a valid bound only through the infeasibility of an
    equality-constrained factor, reported separately. ``None`` if either is ``None``;
    ``inf`` for a non-finite bound (multipliers outside the domain of :math:`\\varphi^*`)."""
    if lb is None or p is None:
        return None
    if not np.isfinite(lb):
        return np.inf
    return abs(p - lb) / max(abs(p), abs(lb), 1e-300)


#: eigenpairs of a candidate's shift-invert block (n > ``DenseLimits.eig``, ``"interval"``)
#: unless a lift starts from it: :math:`\lambda_{\min}` and the escape directions
#: (``escape._ESCAPE_BLOCK``) need no more
_CANDIDATE_BLOCK = 16


def _lift_start(space: FactorSpace, pen: DistancePenalty, candidates: list,
                p_best: float) -> int:
    r"""The candidate :func:`~sdpembed.lowrank.lifted._lifted_certificate` lifts: the highest
    :math:`\min(\beta, 2p_{\mathrm{best}} - \beta)`, :math:`\beta = -\varphi^*(y) - z^Tb` its
    own bound (a candidate above ``p_best`` loses at least the excess in the lift); no
    eigenvalue needed."""
    own = [-pen.conjugate(y_) - space.linear_offset(nu_) for y_, nu_ in candidates]
    return int(np.argmax([min(b, 2.0 * p_best - b) for b in own]))


def _best_certificate(space, pen, W, candidates, opts, cache, target=None,
                      deadline=np.inf, label="refined multipliers; ",
                      lift_from: float | None = None, final: bool = False):
    r"""The certificate with the highest bound over candidate dual points (it carries its
    ``y`` and ``nu``; ``target``: the bound wanted, see :func:`certify`; ``label``: the
    note's prefix for a candidate after the first, naming where it came from). Past
    ``deadline`` (a :func:`time.perf_counter` value) only the first candidate is
    certified, without the ``target`` re-run and the shifted certificate's nearer
    anchors: one certificate is always made, except, ``final``, one that
    :meth:`CertificateCache.final_late` says must not start: then a certificate without a
    bound whose note is ``FINAL_SKIPPED``.

    Where :math:`\lambda_{\min}` comes from a shift-invert block (:func:`_block_certificate`)
    a candidate's block holds ``_CANDIDATE_BLOCK`` eigenpairs, except, given ``lift_from``
    (the best objective, where a lift may follow: ``n <= limits.lift``), the candidate a
    lift would start from (:func:`_lift_start`, if inside the box :math:`|y|\le w`), which
    gets the lift's ``limits.block``. The bounds are those of full blocks; the solves a
    fraction."""
    full = None
    if lift_from is not None and _block_certificate(space, pen) \
            and space.dim <= space.limits.lift:
        full = _lift_start(space, pen, candidates, lift_from)
        if np.any(np.abs(candidates[full][0]) > pen.w):
            full = None    # the lift clips y into the box first: other eigenpairs
    best = None
    for k, (y, nu) in enumerate(candidates):
        if k == 0 and final and cache.final_late(space):
            return Certificate(None, None, "none", FINAL_SKIPPED, y=y, nu=nu)
        late = time.perf_counter() >= deadline
        if k > 0 and (late or _block_certificate(space, pen)
                      and cache.late(cache.block_estimate())):
            break
        cert = certify(space, pen, y, nu, factor=W, eig_tol=opts.eig_tol, cache=cache,
                       target=None if late else target, anchors=not late,
                       block=None if k == full else _CANDIDATE_BLOCK)
        if k > 0:
            cert.note = label + cert.note
        if best is None or (cert.bound is not None
                            and (best.bound is None or cert.bound > best.bound)):
            best = cert
        if target is not None and best.bound is not None and best.bound >= target:
            break  # good enough: the other candidates would only cost eigenvalue solves
    return best


def _higher_bound(best: Certificate | None, cert: Certificate | None) -> Certificate | None:
    """``cert`` if its bound exceeds ``best``'s (or ``best`` is ``None``), else ``best``
    (``cert`` ``None``: ``best``)."""
    if cert is not None and cert.bound is not None and (best is None or cert.bound > best.bound):
        return cert
    return best

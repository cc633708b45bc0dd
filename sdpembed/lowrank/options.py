"""Settings of the LOWRANK solver: :class:`LowRankOptions` and the value checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..exceptions import InputError

__all__ = ["LowRankOptions", "DenseLimits", "INNER_SOLVERS", "REDUCED_SOLVERS",
           "INTERVAL_ENVELOPES"]


def _require_int(where: str, name: str, value, low: int) -> None:
    """``InputError`` unless ``value`` is an integer (not a bool) of at least ``low``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        kind = "a positive integer" if low == 1 else f"an integer >= {low}"
        raise InputError(f"{where} {name} must be {kind}; got {value!r}")


def _require_kink_tol(where: str, kink_tol) -> None:
    """``InputError`` unless ``kink_tol`` (relative to the target distance) is finite, >= 0."""
    number = (isinstance(kink_tol, (int, float, np.integer, np.floating))
              and not isinstance(kink_tol, bool))
    if not (number and np.isfinite(kink_tol) and kink_tol >= 0):
        raise InputError(f"{where} kink_tol must be a finite number >= 0 (relative to the "
                         f"target distance); got {kink_tol!r}")


@dataclass(frozen=True)
class DenseLimits:
    """Up to which n the eigenvalue steps of the certificate form dense n x n matrices.

    Dense steps are exact (up to rounding) and, at small n, the cheapest; they cost 8n²
    bytes and O(n³) flops. Above ``eig`` no dense n x n matrix is formed: eigenvalues come
    from Lanczos or from shift-invert Lanczos on a sparse factorisation of the dual slack
    matrix, and the reported certificate is verified by a sparse factorisation
    (:mod:`sdpembed.lowrank.sparse_slack`), whose memory follows the fill of the factor.

    Parameters
    ----------
    eig : int
        :math:`\\lambda_{\\min}(S)` on :math:`\\mathbf 1^\\perp` by a dense ``eigh``
        (exact: the certificate's check is ``"dense"``) for n <= ``eig``; above, an
        estimate (Lanczos, or for ``distances="interval"`` in the full space the bottom
        ``block`` eigenpairs by shift-invert, kept for the lift) verified by a sparse
        factorisation before it is reported (check ``"sparse"``).
    lift : int
        Largest n for which :func:`~sdpembed.lowrank.lift_multipliers` runs.
    verify : int
        Where the sparse proof needs a basis of :math:`\\mathbf 1^\\perp` (the constant
        vector is not an eigenvector of :math:`S` above the bound: MVU, added rows), the
        verification is a dense Cholesky factorisation up to this n (memory permitting),
        more precise there; the sparse proof above it.
    verify_fallback : int
        Largest n for which a failed dense verification falls back to a dense ``eigvalsh``.
    block : int
        Bottom eigenpairs per interval certificate and per lift round (at most).
    """

    eig: int = 800
    lift: int = 100_000
    verify: int = 20_000
    verify_fallback: int = 5_000
    block: int = 200

    def __post_init__(self) -> None:
        for name in ("eig", "lift", "verify", "verify_fallback", "block"):
            _require_int("LOWRANK dense_limits", name, getattr(self, name), 1)


@dataclass(frozen=True)
class LowRankOptions:
    r"""Settings of :func:`lowrank_solve` (all keyword options of ``solve(..., solver="LOWRANK")``).

    Parameters
    ----------
    tol : float
        Target certified relative gap; the solve stops once the certificate
        proves it (and, for ``"equality"``, the relative infeasibility is
        below ``feas_tol``).
    feas_tol : float
        Relative infeasibility :math:`\|D - \bar D\|/\|\bar D\|` accepted (equality
        mode; :math:`\|(D - \bar D)_+\|/\|\bar D\|` for shrink) and the SNR constraint's
        relative violation.
    rank : int or None
        Initial rank of the factor; default ``n_classes + 4`` or twice the graph's
        average degree, whichever is larger, for DVU, a third of the Barvinok–Pataki
        rank (at least 16) for MVU, at most ``n - 1`` (grown as needed, see
        :func:`_initial_rank`; trimmed when a quarter of its columns become numerically
        null, see :func:`sdpembed.lowrank.space._trim_rank`). A rank grown late costs
        subproblems near their iteration cap: where a solve of a similar problem ended at a
        much higher rank (the progress table's last rank: ``report.extra["rank"]`` is the
        returned point's, a barrier's where one was returned), start there
        (on dense graphs of thousands of points the default can be short by half;
        ``docs/tuning.md``, "The dense 2,500 rows").
    max_rank : int
        Largest rank the factor may grow to.
    warm_start : {None, "basis"} or ndarray
        ``None`` (default): a random factor scaled to the target distances;
        ``"basis"``: first solve the problem on a reduced Laplacian basis of
        ``warm_basis_rank`` vectors of the problem's own graph and start from
        its solution; an (n, k) array: start from that factor. ``None`` is the
        default because the reduced optima can be far from the full one (a smooth
        basis cannot hold the local distances; ``docs/tuning.md``).
    warm_multipliers : tuple of ndarray, optional
        ``(y, nu)``: the multipliers of a solve of a problem on the same graph (its
        ``SolveReport.extra["multipliers"]``, or ``LowRankResult.y, .nu``), which the
        augmented Lagrangian starts from instead of zero (``distances="interval"``: ``y``
        clipped to the new box :math:`|y_e|\\le w_e`). With ``warm_start`` set to that
        solve's factor the first subproblem starts near the new optimum (a sweep of slack
        weights or SNR values: :func:`sdpembed.solvers.solve_sweep`). Sizes are checked
        against the problem.
    max_outer, max_inner, max_newton : int
        Augmented-Lagrangian iterations; L-BFGS iterations per subproblem;
        truncated Newton–CG iterations per subproblem. ``max_inner=None`` (default):
        2,000 for ``distances="interval"`` on the kink envelope with n <=
        ``dense_limits.eig``, where shorter subproblems and more multiplier updates win,
        else 6,000 (at large n a multiplier update after a cut-off subproblem helps
        little, and the penalty it raises stiffens the next one). A subproblem cut off
        there never counts as a stalled gap (no rank growth on it).
    inner : {"auto", "lbfgs", "plbfgs", "newton"}
        Subproblem solver: ``"auto"`` uses L-BFGS until the duality gap is
        below 1e-2, then truncated Newton–CG with exact (generalized)
        Hessian-vector products, which reaches the accuracy a certificate
        needs where L-BFGS stalls (for ``distances="interval"`` with a factor of at most
        1,000 entries and no added rows, also once a subproblem took 1,000 L-BFGS
        iterations); ``"plbfgs"``:
        L-BFGS whose
        initial inverse Hessian is a sparse-LU solve with the weighted graph Laplacian
        :math:`\sum_e \omega_e a_ea_e^T`, :math:`\omega_e = 2\sigma\bar D_e/k` (the
        isotropic part of the Gauss–Newton curvature of the distance term).
    time_limit : float
        Seconds; when the limit is hit the best pair so far (see "Certificate":
        the lowest-objective feasible iterate and the highest bound) is returned
        with status ``"optimal_inaccurate"`` and its gap (if no iterate was
        certified, the last one's multipliers are; ``certified_gap`` is ``None``
        only when no certificate can be computed, with the reason). The same holds
        when ``max_outer`` ends the solve. One deadline for every phase: the outer
        loop and its subproblems stop at 0.9 ``time_limit``, the repairs (refined
        multipliers, restoration, the lift) at ``time_limit``; past it only the dense
        certificate of the last multipliers (n <= ``DenseLimits.eig``) and an equality
        iterate's restoration (a few Gauss-Newton steps) are made. Above
        ``DenseLimits.eig`` no certificate or verifying factorisation starts past
        ``time_limit`` (one started before it finishes): the result then has no
        certified gap. ``report.extra["stop_reason"]`` says what ended the loop and
        ``report.extra["skipped"]`` what was not made for the limit.
    eig_tol : float
        Relative tolerance of the Lanczos eigensolver.
    random_state : int or None
        Seeds the initial factor.
    blas_threads : int
        BLAS threads while solving (the work is many small products). The dense
        eigendecompositions for n <= ``DenseLimits.eig`` use all usable cores, at most 8.
    reduced_solver : {"auto", "ipm", "alm"}
        Solver on a reduced basis. ``"auto"`` (default): the primal-dual
        interior-point method of :mod:`sdpembed.lowrank.reduced_ipm` for
        ``distances="interval"`` (with or without the SNR constraint), falling
        back to the augmented Lagrangian (recorded in
        ``LowRankResult.reduced_solver``) if it fails or its certified gap exceeds
        ``tol``; the augmented Lagrangian for ``"equality"`` and
        ``"quadratic"``. ``"ipm"``: the interior-point method only (an
        ``InputError`` for other distance modes; no fallback). ``"alm"``: the
        augmented Lagrangian. Ignored without a basis.
    interval_envelope : {"auto", "kink", "huber"}
        The augmented Lagrangian of ``distances="interval"``. ``"huber"``: the
        envelope of the penalty :math:`w_e|D_e - \bar D_e|` itself (a Huber
        function of :math:`D`, multipliers clipped to :math:`|y_e| \le w_e`).
        ``"kink"``: the envelope of the penalty's kink :math:`D = \bar D`, i.e. the
        augmented Lagrangian of the ``"equality"`` problem, while its multipliers
        stay in the box :math:`|y_e| \le w_e`: an equality optimum with multipliers
        in the box is an interval optimum (they are a subgradient of the penalty at
        :math:`D = \bar D`), and the certificate is the interval one throughout. The
        first iterate whose multipliers leave the box switches the solve to
        ``"huber"`` (``LowRankResult.interval_envelope`` says where). ``"auto"`` (default):
        ``"kink"`` in the full space, ``"huber"`` on a reduced basis, whose smooth
        vectors cannot hold the local distances.
    dense_limits : DenseLimits or dict
        Up to which n the certificate's eigenvalue steps are dense (:class:`DenseLimits`;
        a dict of its fields is accepted).
    """

    tol: float = 1e-4
    feas_tol: float = 1e-6
    rank: int | None = None
    max_rank: int = 200
    warm_start: Any = None
    warm_basis_rank: int = 30
    warm_multipliers: Any = None
    max_outer: int = 200
    max_inner: int | None = None
    max_newton: int = 50
    inner: str = "auto"
    time_limit: float = 3600.0
    eig_tol: float = 1e-6
    random_state: int | None = 0
    blas_threads: int = 1
    reduced_solver: str = "auto"
    interval_envelope: str = "auto"
    dense_limits: DenseLimits = DenseLimits()

    @classmethod
    def from_options(cls, options: dict) -> LowRankOptions:
        """Options from ``solve(..., solver="LOWRANK", **options)``; unknown names rejected."""
        known = set(cls.__dataclass_fields__)
        unknown = set(options) - known
        if unknown:
            raise InputError(f"unknown LOWRANK option(s) {sorted(unknown)}; known: {sorted(known)}")
        return cls(**options)

    def __post_init__(self) -> None:
        # one home for the value checks: solve(..., solver="LOWRANK") and direct
        # lowrank_solve(options=LowRankOptions(...)) calls both come through here
        if isinstance(self.dense_limits, dict):
            unknown = set(self.dense_limits) - set(DenseLimits.__dataclass_fields__)
            if unknown:
                raise InputError(f"unknown LOWRANK dense_limits field(s) {sorted(unknown)}; "
                                 f"known: {sorted(DenseLimits.__dataclass_fields__)}")
            object.__setattr__(self, "dense_limits", DenseLimits(**self.dense_limits))
        if not isinstance(self.dense_limits, DenseLimits):
            raise InputError("LOWRANK dense_limits must be a DenseLimits or a dict of its "
                             f"fields; got {self.dense_limits!r}")
        if not (0 < self.tol < 1) or not (0 < self.feas_tol < 1):
            raise InputError("LOWRANK tol and feas_tol must lie in (0, 1)")
        if self.rank is not None:
            _require_int("LOWRANK", "rank", self.rank, 1)
        for name in ("max_rank", "max_outer", "max_inner", "max_newton", "warm_basis_rank",
                     "blas_threads"):
            if name != "max_inner" or self.max_inner is not None:
                _require_int("LOWRANK", name, getattr(self, name), 1)
        if not (self.eig_tol > 0):
            raise InputError("LOWRANK eig_tol must be positive")
        if self.inner not in INNER_SOLVERS:
            raise InputError(f"LOWRANK inner must be one of {INNER_SOLVERS}; got {self.inner!r}")
        if not (self.warm_start is None or isinstance(self.warm_start, np.ndarray)
                or self.warm_start == "basis"):
            raise InputError("LOWRANK warm_start must be 'basis', None or an (n, k) factor")
        if isinstance(self.warm_start, np.ndarray) and not (
                self.warm_start.ndim == 2 and np.all(np.isfinite(self.warm_start))
                and np.any(self.warm_start)):
            # a zero factor is a stationary point of the factored problem: it never moves
            raise InputError("LOWRANK warm_start must be an (n, k) factor of finite numbers, "
                             "not all zero")
        if self.warm_multipliers is not None:
            wm = self.warm_multipliers
            if not (isinstance(wm, (tuple, list)) and len(wm) == 2 and all(
                    np.ndim(a) == 1 and np.all(np.isfinite(np.asarray(a, dtype=float)))
                    for a in wm)):
                raise InputError("LOWRANK warm_multipliers must be a pair (y, nu) of 1-d "
                                 "arrays of finite numbers")
        if not (self.time_limit > 0):
            raise InputError("LOWRANK time_limit must be positive (seconds)")
        if self.reduced_solver not in REDUCED_SOLVERS:
            raise InputError(f"LOWRANK reduced_solver must be one of {REDUCED_SOLVERS}; "
                             f"got {self.reduced_solver!r}")
        if self.interval_envelope not in INTERVAL_ENVELOPES:
            raise InputError(f"LOWRANK interval_envelope must be one of {INTERVAL_ENVELOPES}; "
                             f"got {self.interval_envelope!r}")


#: subproblem solvers of :class:`LowRankOptions` ``inner``
INNER_SOLVERS = ("auto", "lbfgs", "plbfgs", "newton")

#: solvers on a reduced basis, :class:`LowRankOptions` ``reduced_solver``
REDUCED_SOLVERS = ("auto", "ipm", "alm")

#: augmented Lagrangians of ``distances="interval"``, :class:`LowRankOptions`
#: ``interval_envelope``
INTERVAL_ENVELOPES = ("auto", "kink", "huber")


#: share of ``time_limit`` kept for the final certificate: the outer loop stops at
#: ``(1 - _FINAL_SHARE) * time_limit``, the step under way and the final certificate have
#: until ``time_limit`` (the final refinement half of that share); one certificate of the
#: last multipliers, without optional anchors, is made even after it
_FINAL_SHARE = 0.1


def loop_deadline(t0: float, time_limit: float) -> float:
    """The :func:`time.perf_counter` value at which the outer loop and its subproblems stop
    (the final certificate has the rest of ``time_limit``, see ``_FINAL_SHARE``)."""
    return t0 + (1.0 - _FINAL_SHARE) * time_limit

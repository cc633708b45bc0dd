"""The outcome of a LOWRANK solve, and the state its stages share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .certificate import Certificate, CertificateCache
from .space import _NULL_RTOL

__all__ = ["LowRankResult"]


#: the progress table of ``solve(..., solver="LOWRANK", verbose=True)`` (logged at INFO)
_TABLE_HEAD = (" outer | objective        | infeas.  | cheap gap | certified | rank | "
               "seconds | inner iterations, stop\n" + "-" * 99)


def _table_row(entry: dict, infeas: float) -> str:
    """One line of the progress table: the outer iteration's objective, infeasibility, cheap
    and certified gaps (an estimate in parentheses when unverified), rank, time, and the
    subproblem's inner iterations with why its inner solve stopped (``inner_stop``); where
    the iterate was moved onto its constraints (or, ``"interval"``, the kink) to be
    certified, that point's objective after the time, and the barrier's point's where one
    was made (the certified gap is that of the point certified last)."""
    def gap(v):
        return "    -    " if v is None or not np.isfinite(v) else f"{v:9.2e}"
    cert = entry.get("certified_gap", entry.get("combined_gap"))
    estimate = entry.get("estimated_gap")
    cell = gap(cert) if "estimated_gap" not in entry else (
        "(   -   )" if estimate is None or not np.isfinite(estimate) else f"({estimate:.1e})")
    row = (f"{entry['outer']:6d} | {entry['objective']:+.9e} | {infeas:8.1e} | "
           f"{gap(entry.get('cheap_gap'))} | {cell:>9s} | {entry['rank']:4d} | "
           f"{entry['seconds']:7.1f}")
    if "inner_stop" in entry:
        row += f" | {entry.get('lbfgs_iters', 0):6d} {entry['inner_stop']}"
    # the point certified (and kept as the best) where the iterate was moved onto its
    # constraints or the kink: the certified or estimated gap is that point's
    restored = entry.get("restored_objective")
    if restored is not None and restored != entry["objective"]:
        row += f" | restored point {restored:+.9e}"
    # the interval or equality barrier's point, certified as a pair with its multipliers
    barrier = entry.get("barrier")
    if isinstance(barrier, dict) and barrier.get("objective") is not None:
        row += f" | barrier point {barrier['objective']:+.9e}"
    return row


@dataclass
class LowRankResult:
    """Outcome of :func:`~sdpembed.lowrank.lowrank_solve`.

    Attributes
    ----------
    factor : ndarray (n, k)
        Point coordinates, :math:`G = FF^T`.
    objective : float
        The objective at ``factor`` (for ``"equality"``, a factor within
        ``infeasibility`` of the constraints).
    bound, certified_gap : float or None
        The certified lower bound and relative gap; ``None`` when no certificate could be
        computed or its :math:`\\lambda_{\\min}` could not be verified (then see
        ``estimated_gap``).
    infeasibility : float
        The largest of the relative distance residual (``"equality"``), the SNR violation
        and the added constraints' relative violation.
    y, nu : ndarray, ndarray
        The multipliers of the reported certificate: one per edge, and the linear
        multipliers (the SNR constraint's first, then one per added constraint).
    status : str
        ``"optimal"``, ``"optimal_inaccurate"``, ``"unbounded"`` or ``"infeasible"``.
    iterations : int
        Outer iterations (interior-point iterations on a reduced basis).
    seconds : float
    history : list of dict
        One entry per outer iteration (objective, residual, gaps, inner iterations, rank);
        ``inner_stop`` says which inner solver ran the subproblem and why it stopped:
        ``"gtol"`` (its gradient test), ``"maxiter"`` (its iteration cap), ``"maxfun"``
        (L-BFGS's evaluation cap), ``"ftol"``, ``"window"`` (the tail window), ``"line_search"``,
        ``"no_descent"``, ``"rounding_floor"`` or ``"deadline"``, e.g. ``"L-BFGS maxfun"``.
    certificate : Certificate or None
        The reported certificate (how :math:`\\lambda_{\\min}` was obtained, in words).
    function_evaluations : int or None
        Evaluations of the augmented Lagrangian (``None``: none ran).
    interval_envelope : str or None
        Which augmented Lagrangian ran for ``"interval"`` (``None`` otherwise).
    unverified : bool
        The certificate's :math:`\\lambda_{\\min}` could not be verified: ``bound`` and
        ``certified_gap`` are ``None`` and the numbers are ``estimated_bound`` and
        ``estimated_gap``.
    estimated_gap, estimated_bound : float or None
    verify_seconds : float or None
        Time of the final verification by sparse factorisation, where one ran.
    verify_factorisations : list of dict
        Every factorisation of the verifications (the shift ``mu`` tried, the matrix's own
        shift ``delta``, the rounding ``bound``, coordinates ``mode``, the factor's
        non-zeros, seconds, outcome).
    reduced_solver : dict or None
        On a reduced basis: the interior-point method's record, or why it fell back; for a
        small ``"interval"`` problem with added rows, the record of
        :func:`~sdpembed.lowrank.rows_barrier.rows_barrier` (``"solver": "rows_barrier"``),
        whether its pair was reported or the augmented Lagrangian went on.
    warm_start : dict or None
        The reduced-basis warm start's time and objective (``warm_start="basis"``).
    lambda_min_at_slack_weight : float or None
        ``"unbounded"``: :math:`\\lambda_{\\min}(S)` at the coercive point.
    timings : dict
        Seconds of the augmented Lagrangian's solve: ``"subproblems"`` (the inner solves),
        ``"certificates"`` (certificate attempts with their lifts, verifications and rank
        escapes, and the final certificate), ``"multipliers"`` (the dual points offered to
        the certificate: the refined multipliers and the interval dual barrier) and
        ``"other"`` (multiplier updates, restoration, set-up). Empty where the outer loop
        did not run.
    max_abs_multiplier : list of float
        :math:`\\max_e |y_e|` after each outer iteration (multipliers growing without
        bound mark a dual optimum that is not attained).
    stop_reason : str or None
        Why the outer loop stopped: ``"certified"`` (the gap reached ``tol``),
        ``"time_limit"``, ``"max_outer"``, ``"diverged"`` (the factor grew without
        bound) or ``"infeasible"`` (a verified Farkas certificate from the
        multipliers); on a reduced basis the interior-point method's status; ``None``
        where no iteration ran (the boundedness test).
    skipped : list of str
        The phases not made because the time limit had passed (the final certificate, its
        verification; :func:`~sdpembed.lowrank.lowrank_solve`'s caller adds its own).
    """

    factor: np.ndarray
    objective: float
    bound: float | None
    certified_gap: float | None
    infeasibility: float
    y: np.ndarray
    nu: np.ndarray
    status: str
    iterations: int
    seconds: float
    history: list[dict] = field(default_factory=list)
    certificate: Certificate | None = None
    function_evaluations: int | None = None
    interval_envelope: str | None = None
    unverified: bool = False
    estimated_gap: float | None = None
    estimated_bound: float | None = None
    verify_seconds: float | None = None
    verify_factorisations: list[dict] = field(default_factory=list)
    reduced_solver: dict[str, Any] | None = None
    warm_start: dict[str, float] | None = None
    lambda_min_at_slack_weight: float | None = None
    timings: dict[str, float] = field(default_factory=dict)
    max_abs_multiplier: list[float] = field(default_factory=list)
    stop_reason: str | None = None
    skipped: list[str] = field(default_factory=list)

    @property
    def rank(self) -> int | None:
        """The rank of the point returned, ``factor``: its singular values above
        ``_NULL_RTOL`` times the largest (:func:`~.space._rank_deficient`'s null
        directions left out; a trimmed factor keeps two such columns, and a barrier
        point's tail of tiny eigenvalues lies above it); ``None`` without a factor."""
        if self.factor is None:
            return None
        s = np.linalg.svd(np.asarray(self.factor, dtype=float), compute_uv=False)
        return int(np.sum(s > _NULL_RTOL * s[0])) if s.size and s[0] > 0 else 0


@dataclass
class _SolveState:
    """What the stages of one solve share: the certificates' cache and what happened
    before the outer loop (reduced warm start, reduced interior-point method)."""

    certificates: CertificateCache = field(default_factory=CertificateCache)
    warm_start: dict[str, float] | None = None
    reduced_solver: dict[str, Any] | None = None

"""A verified lower bound on the smallest eigenvalue of S: sparse or dense factorisations."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from ..exceptions import InputError
from ..formulations import gram
from .space import FactorSpace
from .sparse_slack import (
    CertificateLate,
    SlackParts,
    SparseCheck,
    default_delta,
    full_coordinates,
    sparse_bottom,
    sparse_verify,
)
from .spectrum import _dense_bottom, _dense_shifted, _gershgorin

# ----------------------------------------------------------------------- verified lambda_min
_U = 2.0 ** -53          # unit roundoff of IEEE double
_ETA = 2.0 ** -1074      # smallest positive (subnormal) double


def _gamma(k: int) -> float:
    """:math:`\\gamma_k = ku/(1-ku)` (Higham, Accuracy and Stability, §3.1)."""
    return k * _U / (1.0 - k * _U)


@dataclass
class PSDCheck:
    """Outcome of :func:`_verify_psd_shift`.

    ``verified``: the claim :math:`\\lambda_{\\min}(S)\\ge` ``mu`` on
    :math:`\\mathbf 1^\\perp` is proved; ``delta`` the rounding allowance (the
    matrix factorised is shifted by ``mu + delta``); ``info`` LAPACK ``dpotrf``'s
    info code (0 = success, k > 0: leading minor k not positive definite, -1: not
    run, see ``reason``).
    """

    verified: bool
    mu: float
    delta: float
    info: int
    seconds: float
    reason: str = ""


def _verify_psd_shift(space: FactorSpace, y, nu, mu: float) -> PSDCheck:
    """Prove :math:`\\lambda_{\\min}(S(y,\\nu))\\ge\\mu` on :math:`\\mathbf 1^\\perp` by Cholesky.

    Forms :math:`\\hat M \\approx PSP + (c/n)\\mathbf 1\\mathbf 1^T - (\\mu+\\delta) I`
    densely (:func:`_dense_shifted`; on :math:`\\mathbf 1^\\perp` it is
    :math:`S - (\\mu+\\delta)I`, on :math:`\\mathbf 1` it is :math:`c - \\mu - \\delta > 0`)
    and factorises it with LAPACK ``dpotrf``; success (``info == 0``) proves the
    claim, including rounding errors:

    * Cholesky (Demmel 1989, "On floating point errors in Cholesky", LAPACK
      Working Note 14; Higham, *Accuracy and Stability of Numerical Algorithms*,
      2nd ed., Thm 10.3): if the floating-point Cholesky of a symmetric
      :math:`A` runs to completion, :math:`\\hat R^T\\hat R = A + \\Delta A` with
      :math:`|\\Delta A|\\le\\gamma_{n+1}|\\hat R^T||\\hat R|`; since
      :math:`\\|\\hat r_i\\|^2\\le a_{ii}/(1-\\gamma_{n+1})` this gives
      :math:`\\|\\Delta A\\|_2\\le\\alpha\\,\\mathrm{tr}A`, :math:`\\alpha =
      \\gamma_{n+1}/(1-\\gamma_{n+1})`, so :math:`\\lambda_{\\min}(A)\\ge -\\alpha\\,\\mathrm{tr}A`
      (the sufficient condition of Rump 2006, "Verification of positive
      definiteness", BIT 46, Thm 2.3/Cor. 2.4, whose underflow term
      :math:`3(2n+\\max a_{ii})\\eta` is added too). The bound holds for any
      order of the inner products (blocked LAPACK, FMA), not for Strassen-type
      products. It is :math:`\\approx n u\\,\\mathrm{tr}A`, i.e. :math:`n` times the
      often-quoted :math:`(n+1)u\\max a_{ii}`, which is not a rigorous bound on
      :math:`\\lambda_{\\min}`.
    * Forming :math:`\\hat M`: each entry is a sum of at most ``K`` = r + max
      degree + 16 rounded terms, so :math:`|\\hat M - M|\\le\\gamma_K N` entrywise,
      :math:`N` the same sum in absolute values, and :math:`\\|N\\|_2\\le
      \\sum_k|s_k|\\|\\bar u_k\\|^2 + 4\\max|d| + 2\\max_i\\sum_{e\\ni i}|y_e| + c + |\\mu+\\delta|`
      (rank-one norms and Gershgorin on the non-negative parts). The centring
      :math:`\\bar U = U - \\mathbf 1m^T` is exact on :math:`\\mathbf 1^\\perp` for any
      computed m; its own rounding (relative u per entry) costs at most
      :math:`3u\\sum_k|s_k|\\|\\bar u_k\\|^2`.

    Hence :math:`\\delta = \\alpha\\,\\mathrm{tr}\\hat M + 2\\gamma_K\\|N\\|_2
    + 3u\\sum_k|s_k|\\|\\bar u_k\\|^2 + 3(2n+\\max\\hat m_{ii})\\eta` (the trace
    taken at shift μ, an upper bound of the one at μ + δ, summed exactly by
    ``math.fsum`` and rounded up). Everything
    else (y, ν, the data) is taken as the floating-point numbers they are.
    Failure proves nothing about S beyond "not verified at μ"; but if
    :math:`\\lambda_{\\min}(S) < \\mu` the factorisation must fail.

    Cost: one dense n x n array (8 n² bytes) and n³/3 flops (BLAS threads as set
    by the caller). Raises ``TypeError`` for objective terms that are not
    :class:`~sdpembed.formulations.gram.DiagPlusLowRank`.
    """
    import math

    t0 = time.perf_counter()
    n = space.dim
    if space.Q is not None:
        raise InputError("_verify_psd_shift works on the full space (no reduced basis)")
    mu = float(mu)
    c = 2.0 * max(_gershgorin(space, y, nu), abs(mu), 1e-300) + 1.0
    M, mags = _dense_shifted(space, y, nu, c)
    alpha = _gamma(n + 1) / (1.0 - _gamma(n + 1))
    diag = M[np.diag_indices(n)]
    trace_mu = math.fsum(diag) - n * mu
    trace_mu = max(trace_mu, 0.0) * (1.0 + 4.0 * _U) + n * _ETA
    gK = _gamma(mags["terms"])
    base = 2.0 * gK * (mags["lowrank"] + 4.0 * mags["diag"] + mags["laplacian"] + c) \
        + 3.0 * _U * mags["lowrank"] + 3.0 * (2 * n + float(diag.max()) + abs(mu)) * _ETA
    # delta enters its own |mu + delta| term: solve delta = a + b (|mu| + delta)
    b = 2.0 * gK
    delta = (alpha * trace_mu + base + b * abs(mu)) / (1.0 - b)
    delta *= 1.0 + 1e-6                             # round the allowance up
    shift = mu + delta
    if not (c - shift > 0):
        return PSDCheck(False, mu, delta, -1, time.perf_counter() - t0,
                         "shift above the centring constant")
    M[np.diag_indices(n)] -= shift
    # a posteriori: the diagonal actually factorised is within the trace used for delta
    if math.fsum(M[np.diag_indices(n)]) > trace_mu:
        return PSDCheck(False, mu, delta, -1, time.perf_counter() - t0,
                         "trace bound violated (rounding)")
    if np.any(M[np.diag_indices(n)] <= 0):
        return PSDCheck(False, mu, delta, 1 + int(np.argmax(M[np.diag_indices(n)] <= 0)),
                         time.perf_counter() - t0, "non-positive diagonal")
    # M is symmetric: its transpose is the Fortran-ordered same matrix, factorised in place
    _, info = sla.lapack.dpotrf(M.T, lower=1, clean=0, overwrite_a=1)
    del M
    ok = int(info) == 0
    return PSDCheck(ok, mu, delta, int(info), time.perf_counter() - t0,
                     "" if ok else f"dpotrf info {int(info)} (not positive definite)")


#: the first try sits this far (relative to a bound on ||S||) below the estimate: far above
#: the rounding bounds of the factorisation, far below what a certificate can lose
_FIRST_MARGIN = 1e-12


def _sparse_verified_lambda_min(space: FactorSpace, y, nu, mu_est: float, *, max_steps: int = 6,
                                parts: SlackParts | None = None, deadline: float = np.inf
                                ) -> tuple[float | None, str, list[SparseCheck]]:
    """A verified lower bound on :math:`\\lambda_{\\min}(S)` (on 1-perp) near ``mu_est``.

    Tries :func:`~sdpembed.lowrank.sparse_slack.sparse_verify` just below the estimate
    (``_FIRST_MARGIN`` times a bound on :math:`\\|S\\|`, or twice the shift
    :func:`~sdpembed.lowrank.sparse_slack.default_delta` the proof adds, whichever is
    larger): one factorisation when the estimate is good. An estimate above the smallest
    eigenvalue (Lanczos can miss it) shows as a non-positive pivot: the estimate is then
    replaced by shift-invert's (:func:`~sdpembed.lowrank.sparse_slack.sparse_bottom`,
    where the constant vector is an eigenvector; elsewhere the tries go ever lower, factors
    of 100) and checked again below it. Returns ``(mu or None, reason, checks)``; ``None``
    when every try failed or the factorisation could not run (memory, terms that are not
    diagonal plus low rank). ``parts``: :class:`SlackParts` of ``(y, nu)`` if already built.
    No try starts once ``deadline`` (a :func:`time.perf_counter` value) has passed.
    """
    if parts is None:
        try:
            parts = SlackParts.of(space, y, nu)
        except TypeError as exc:
            return None, str(exc), []
    # the first try must sit below the estimate by more than the shift its proof adds
    margin = max(_FIRST_MARGIN * parts.norm_bound, 2.0 * default_delta(parts, mu_est), 1e-300)
    checks: list[SparseCheck] = []
    est, step, re_estimated = float(mu_est), margin, False
    try:
        for _ in range(max_steps):
            if _past(deadline):
                return None, _late_reason(checks), checks
            chk = sparse_verify(space, y, nu, est - step, parts=parts)
            checks.append(chk)
            if chk.verified:
                return chk.mu, "", checks
            if chk.bound != np.inf and "pivot" not in chk.reason:
                break  # the rounding bound, not the spectrum, failed: lower tries won't help
            if not re_estimated and full_coordinates(space, parts, est - step):
                lam, _, _ = sparse_bottom(space, y, nu, 1, sigma=min(est, 0.0) - abs(est)
                                          - margin, parts=parts,
                                          late=lambda _seconds: _past(deadline))
                est, re_estimated = min(est, float(lam[0])), True
            else:
                step *= 100.0
    except MemoryError:
        return None, "not enough memory for the sparse factorisation", checks
    except CertificateLate:
        return None, _late_reason(checks), checks
    last = checks[-1]
    return None, (f"sparse factorisation failed at {len(checks)} shift(s) down to "
                  f"{last.mu:.3g} ({last.reason})"), checks


def _dense_verified_lambda_min(space: FactorSpace, y, nu, mu_est: float, *, max_steps: int = 4,
                               deadline: float = np.inf
                               ) -> tuple[float | None, str, list[PSDCheck]]:
    """A verified lower bound on :math:`\\lambda_{\\min}(S)` (on 1-perp) near ``mu_est``.

    Tries :func:`_verify_psd_shift` at the Lanczos estimate ``mu_est``, then
    four rounding allowances below it (an accurate Ritz value whose residual is
    below the allowance); if that fails too (Lanczos missed the leftmost
    eigenvalue), then for n <= ``space.limits.verify_fallback`` a dense
    eigendecomposition (:func:`_dense_bottom`, one eigenpair) gives a new estimate, checked again
    below it by a few times the rounding allowance; for larger n the estimate is
    lowered geometrically (``max_steps`` tries, factors 100). Returns
    ``(mu or None, reason, checks)``; ``None`` when nothing could be verified
    (too large, not enough memory, unsupported terms, every try failed). No try after the
    first starts once ``deadline`` has passed.
    """

    n = space.dim
    need = 8 * n * n * 1.25
    if n > space.limits.verify:
        return None, f"n = {n} > {space.limits.verify} (dense check skipped)", []
    if need > gram.available_memory():  # looked up here: tests patch it
        return None, f"not enough memory for the dense check ({need / 2**30:.1f} GiB)", []
    checks: list[PSDCheck] = []
    try:
        chk = _verify_psd_shift(space, y, nu, mu_est)
    except TypeError as exc:
        return None, str(exc), []
    checks.append(chk)
    if chk.verified:
        return chk.mu, "", checks
    if chk.info == -1:
        return None, chk.reason, checks
    if _past(deadline):
        return None, _late_reason(checks), checks
    # an accurate Lanczos value (residual below the rounding allowance) sits within
    # delta of lambda_min: a step of a few allowances down usually verifies
    chk = _verify_psd_shift(space, y, nu, mu_est - 4.0 * chk.delta)
    checks.append(chk)
    if chk.verified:
        return chk.mu, "", checks
    g = _gershgorin(space, y, nu)
    if n <= space.limits.verify_fallback:
        lam = float(_dense_bottom(space, y, nu, 1)[0][0])
        # eigh is backward stable: its error is ~ n u ||M||; step below it by more
        c = 2.0 * max(g, abs(mu_est), 1e-300) + 1.0
        margin = 4.0 * chk.delta + 64 * n * _U * c
        tries = [lam - margin * 10.0**k for k in range(max(1, max_steps - 2))]
    else:
        step = max(4.0 * chk.delta, 1e-3 * abs(mu_est), 1e-12 * g)
        tries = [mu_est - step * 100.0**k for k in range(max_steps)]
    for mu in tries:
        if _past(deadline):
            return None, _late_reason(checks), checks
        chk = _verify_psd_shift(space, y, nu, mu)
        checks.append(chk)
        if chk.verified:
            return chk.mu, "", checks
    return None, f"Cholesky failed at {len(checks)} shifts down to {tries[-1]:.3g}", checks


def _past(deadline: float) -> bool:
    """Whether the :func:`time.perf_counter` value ``deadline`` has passed."""
    return time.perf_counter() >= deadline


def _late_reason(checks: list) -> str:
    """Why a verification stopped at its deadline, after ``checks``."""
    return (f"verification stopped by the time limit after {len(checks)} factorisation(s)"
            if checks else "verification skipped: the time limit had passed (or a "
            "factorisation would end past it)")


def _verified_lambda_min(space: FactorSpace, y, nu, mu_est: float, deadline: float = np.inf,
                         enough: float | None = None) -> tuple[float | None, str, list]:
    """A verified lower bound on :math:`\\lambda_{\\min}(S)` (on 1-perp) near ``mu_est``.

    Where the constant vector is an eigenvector of :math:`S` above the estimate (DVU:
    translation invariance), a sparse factorisation in full coordinates
    (:func:`_sparse_verified_lambda_min`): no dense matrix, and rounding bounds far below
    the dense ones. Elsewhere (MVU's :math:`C = -I`, added rows that move the constant
    vector) the sparse proof needs a basis of :math:`\\mathbf 1^\\perp`, whose conditioning
    costs precision; up to ``limits.verify`` points a dense Cholesky factorisation of
    :math:`PSP + (c/n)\\mathbf 1\\mathbf 1^T` is used instead
    (:func:`_dense_verified_lambda_min`), above it the sparse proof on a tree basis. With
    CHOLMOD (supernodal, :data:`~sdpembed.lowrank.sparse_slack.FACTORISATION`) the tree
    basis is tried first, once, just below the estimate: a success there is as tight as
    the dense proof and far cheaper; otherwise the dense proof follows.

    ``enough``: a value the caller gains nothing from exceeding (the certificate's bound is
    the same for every :math:`\\mu\\ge 0`: it passes 0). Where the tree basis fails just
    below an estimate above ``enough`` (its rounding, amplified by the basis'
    conditioning, can exceed the margin when the estimate is a small positive value, as
    with added rows that keep :math:`\\mathbf 1` an eigenvector at 0 below a positive
    bottom on :math:`\\mathbf 1^\\perp`), a second tree-basis proof at ``enough`` itself
    comes before the dense one. It is the same proof
    (:func:`~sdpembed.lowrank.sparse_slack.sparse_verify`, rounding included, on a basis
    of :math:`\\mathbf 1^\\perp`), only at a lower shift: a success proves
    :math:`\\lambda_{\\min}(S)>` ``enough`` on :math:`\\mathbf 1^\\perp` whatever the
    estimate, and if :math:`\\lambda_{\\min}(S) <` ``enough`` it must fail.
    No factorisation starts once ``deadline`` (a :func:`time.perf_counter` value) has
    passed. Returns ``(mu or None, reason, checks)``.
    """
    from . import sparse_slack

    try:
        parts = SlackParts.of(space, y, nu)
    except TypeError as exc:
        return None, str(exc), []
    if full_coordinates(space, parts, float(mu_est) - _FIRST_MARGIN * parts.norm_bound) \
            or space.dim > space.limits.verify:
        return _sparse_verified_lambda_min(space, y, nu, mu_est, parts=parts,
                                           deadline=deadline)
    tried: list = []
    if sparse_slack.FACTORISATION == "cholmod":
        mu, _, tried = _sparse_verified_lambda_min(space, y, nu, mu_est, max_steps=1,
                                                   parts=parts, deadline=deadline)
        if mu is not None:
            return mu, "", tried
        if enough is not None and float(mu_est) > enough and tried \
                and "pivot" in tried[-1].reason and not _past(deadline):
            try:
                chk = sparse_verify(space, y, nu, float(enough), parts=parts, mode="tree")
            except MemoryError:
                chk = None
            if chk is not None:
                tried.append(chk)
                if chk.verified:
                    return chk.mu, "", tried
    if _past(deadline):
        return None, _late_reason(tried), tried
    mu, why, checks = _dense_verified_lambda_min(space, y, nu, mu_est, deadline=deadline)
    return mu, why, tried + checks

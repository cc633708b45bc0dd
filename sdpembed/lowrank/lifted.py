"""The lifted certificate: :func:`~.repair.lift_multipliers` at the most promising candidate."""

from __future__ import annotations

import numpy as np

from .certificate import _LIFTED, CertificateCache, _certificate_from_eig, _lift_start, relative_gap
from .repair import _past, lift_multipliers
from .sparse_slack import EigenStop, FactorTimes

#: the second lift is made only where the first one's certified gap is at most this factor
#: times ``tol``: two-sided (``both_ways``, n <= ``DenseLimits.eig``) it lowered that gap by
#: 1-26 % where measured, never by the third a larger factor needs, at two to three times
#: the first lift's time (docs/tuning.md, "Instances with n <= 600, fifteenth round")
_SECOND_LIFT = 1.5

#: where the best certificate is dual-feasible (its :math:`\lambda_{\min} \ge 0`), a lift
#: is still made from the candidate of the closest own bound when that own bound's gap is at
#: most ``tol`` and at most this fraction of the certificate's gap (the lift can only lower
#: it, so it must start below ``tol`` and well above the certificate's bound to pay)
#: (docs/tuning.md, "The lift from the best own bound when the best certificate is PSD")
_OWN_LIFT = 0.1


def _lifted_certificate(space, pen, certificate, gap, best_bound, candidates, opts,
                        cache: CertificateCache, p_best, deadline: float = np.inf):
    r"""Certificate at :func:`lift_multipliers` of the most promising candidate.

    Tried (``"interval"``, full space, n <= ``DenseLimits.lift``) when the certificate
    misses ``tol`` and a candidate's own bound :math:`\beta = -\varphi^*(y)` (which
    lifting can only lower) is above ``best_bound``, the best bound so far, so that the
    lift can improve it: where :math:`\lambda_{\min} < 0`, or, where the certificate is
    dual-feasible (:math:`\lambda_{\min} \ge 0`), when :math:`\beta`'s gap against
    ``p_best`` is at most ``tol`` and at most ``_OWN_LIFT`` times the certificate's (a
    candidate of a far closer own bound, only indefinite). ``None`` where it is not
    tried. A candidate whose :math:`\beta` exceeds the best objective ``p_best`` must
    lose at least :math:`\beta - p_{\mathrm{best}}` in the lift, so candidates are
    ranked by :math:`\min(\beta,\ 2p_{\mathrm{best}} - \beta)`, not by :math:`\beta`.
    The lift stops once the
    shifted bound proves half of ``tol`` against ``p_best`` (its ``target``), or at
    ``deadline``; none is started after it, and no factorisation of a round's block that
    ``cache.late`` says would end past the time limit (:func:`~.certificate.certify`'s
    rule). When its certificate misses ``tol`` against
    ``p_best`` by at most ``_SECOND_LIFT`` times ``tol``, a second lift is made: for n <=
    ``DenseLimits.eig`` from the same candidate, also lowering multipliers (``both_ways``);
    above, where each round is a shift-invert block, onward from the first lift's
    multipliers, raising only (more rounds of the same lift: there the lowered edges
    bought nothing and the restart paid the first lift's rounds again, docs/tuning.md,
    "9,298 seed 1: the failed first attempt"). The higher bound of the two is returned.
    """
    if (_past(deadline) or pen.mode != "interval" or space.Q is not None
            or space.dim > space.limits.lift or (gap is not None and gap <= opts.tol)
            or certificate.lambda_min is None):
        return None
    k = _lift_start(space, pen, candidates, p_best)
    y_s, nu_s = candidates[k]
    own = -pen.conjugate(y_s) - space.linear_offset(nu_s)
    if best_bound is not None and not own > best_bound:
        return None
    if certificate.lambda_min >= 0:
        # dual-feasible: lift only a candidate whose own bound could prove tol and is far
        # closer than the certificate's
        own_gap, cert_gap = relative_gap(p_best, own), relative_gap(p_best, certificate.bound)
        if own_gap is None or cert_gap is None or not (
                own_gap <= opts.tol and own_gap <= _OWN_LIFT * cert_gap):
            return None
    k_all = min(space.limits.block, space.dim - 2)
    pairs = next(((lam, X) for y_c, nu_c, lam, X in cache.eigenpairs
                  if np.array_equal(nu_c, space.duals(nu_s)) and np.array_equal(y_c, y_s)
                  and lam.size >= k_all), None)
    if pairs is not None and np.any(np.abs(y_s) > pen.w):
        pairs = None  # the lift clips y into the box first: other eigenpairs
    cert, sparse = None, space.dim > space.limits.eig
    y_l = eig = None
    for second in (False, True):
        # the second lift only where the first came within _SECOND_LIFT times tol
        if cert is not None and (_past(deadline) or (cert.bound is not None and not (
                opts.tol < relative_gap(p_best, cert.bound) <= _SECOND_LIFT * opts.tol))):
            break
        # sparse: onward from the first lift's multipliers (its last lambda_min places the
        # first block's shift), raising only, and only while their own bound stays above the
        # first lift's certificate; dense: from the candidate, both ways
        onward = second and sparse and y_l is not None
        if onward and not eig.value < 0:
            break       # S already PSD at the first lift's multipliers: raising only costs
        floor = max((b for b in (best_bound, cert and cert.bound) if b is not None),
                    default=None) if onward else best_bound
        # stop lifting once the shift proves half the gap tolerance (a margin for the check)
        times = FactorTimes(first=cache.factor_estimate())
        try:
            y_l, eig = lift_multipliers(space, pen, y_l if onward else y_s, nu_s,
                                        floor=floor,
                                        eigenpairs=None if onward else pairs,
                                        guess=eig.value if onward else None,
                                        target=p_best - 0.5 * opts.tol * abs(p_best),
                                        mu0=-np.inf if cache.mu0 is None else cache.mu0,
                                        deadline=deadline, both_ways=second and not onward,
                                        late=cache.late, times=times)
        except EigenStop:     # its first block would end past the time limit, or failed
            break
        finally:
            cache.factor_seconds.extend(times.factor)
        lifted = _certificate_from_eig(space, pen, y_l, nu_s, eig, cache, opts.eig_tol, False)
        lifted.note = _LIFTED + lifted.note
        if cert is None or (lifted.bound is not None and (
                cert.bound is None or lifted.bound > cert.bound)):
            cert = lifted
    return cert

r"""The subproblem tolerance's floor at what the subproblems reach.

The outer loop tightens its relative subproblem tolerance ``gtol`` tenfold at every
certificate attempt and on a stalled gap (:meth:`~.outer._OuterLoop.schedule`), down to
1e-9 to 1e-12. A subproblem that stops at its iteration cap (L-BFGS at ``max_inner``,
Newton-CG at ``max_newton``) with the gradient norm

.. math::  g_{\rm reach} = \|\nabla_W L_\sigma(W; y)\| > \mathrm{gtol}\cdot u,
           \qquad u = s/\sqrt{N}

(``s`` the objective's scale, ``N`` the factor's entries: ``u`` is the absolute size of a
relative ``gtol`` of 1) has shown what it reaches; a tolerance below it makes every later
subproblem run to its cap. Once a certificate attempt has been made in the solve (the
point is optimal to ``tol`` in the cheap gap: what is left is the certificate), the
subproblems run at the relative tolerance

.. math::  \max\big(\mathrm{gtol},\ \tfrac12\,g_{\rm reach}/u\big),

:math:`g_{\rm reach}` the last capped subproblem's. A subproblem that then takes no
iteration drops the floor (the tenfold tightenings resume; the point would otherwise
repeat). docs/tuning.md, "Rank growth on tiny negative eigenvalues; a floor on the
subproblem tolerance (2026-11-30, twentieth round)".
"""

from __future__ import annotations

#: the floor as a share of the gradient norm the last capped subproblem reached
_FLOOR_SHARE = 0.5


class ToleranceFloor:
    r"""The floor :math:`\tfrac12 g_{\rm reach}/u` of the relative subproblem tolerance
    (module docstring): set by :meth:`observe` after each subproblem, applied by
    :meth:`apply`."""

    def __init__(self):
        self.value = 0.0

    def observe(self, res, gtol_abs: float, capped: bool, unit: float, attempted: bool) -> None:
        """After a subproblem with result ``res`` (its ``nit`` and ``gnorm``) run at the
        absolute tolerance ``gtol_abs``: ``capped`` whether it stopped at its iteration cap,
        ``unit`` the absolute size of a relative ``gtol`` of 1, ``attempted`` whether a
        certificate attempt has been made in this solve."""
        if res.nit == 0:
            self.value = 0.0
        elif capped and attempted and res.gnorm > gtol_abs:
            self.value = _FLOOR_SHARE * res.gnorm / unit

    def apply(self, gtol: float) -> float:
        """The relative tolerance ``gtol`` raised to the floor."""
        return max(gtol, self.value)

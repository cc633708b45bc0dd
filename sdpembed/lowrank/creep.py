r"""How an L-BFGS subproblem of the outer loop ended, and when a capped one only crept.

A factor of lower rank than the optimum makes the augmented Lagrangian's subproblem a
plateau around a saddle: at n = 2,500 with 5 or 8 neighbours (rank 18 and 27, the optimum
near 37 and 55) L-BFGS runs to its ``max_inner`` cap subproblem after subproblem while
the objective barely moves, and a capped subproblem never counts as a stalled gap
(``_OuterLoop._stalled``), so the first rank growth waits for the first certificate
attempt, after three or four capped subproblems (docs/tuning.md, "The 2,500-point
density rows").

A capped subproblem *crept* when its second half lowered the augmented Lagrangian
:math:`L` by at most ``_CREEP`` times ``tol`` relative to it:

.. math::  L_{k/2} - L_k \le \text{_CREEP}\cdot\text{tol}\cdot\max(|L_k|, 1),

:math:`k` = ``max_inner``: twice the iterations would not gain what the certificate's
tolerance asks for. The outer loop then treats it as a stalled gap (the bottom
eigenpairs of :math:`S` at the current multipliers decide whether and where to grow,
``_OuterLoop._grow_on_stall``). Only on the sparse path (``n > DenseLimits.eig``), for
``distances="interval"`` (either envelope) on the full space without added rows, from
the second outer iteration on and not right after a growth (the new columns' first
subproblem).
"""

from __future__ import annotations

import numpy as np

#: a capped subproblem whose second half gained at most this times ``tol`` (relative to
#: the augmented Lagrangian) crept (:func:`lbfgs_end`)
_CREEP = 1.0


def lbfgs_end(loop, res) -> str:
    """How L-BFGS ended for the outer loop ``loop`` (an ``_OuterLoop``): ``"lbfgs"`` (before
    its cap), ``"crept"`` (at its cap, see the module's text) or ``"cut"`` (at its cap)."""
    if res.nit < loop.max_inner:
        return "lbfgs"
    space = loop.space
    eligible = (space.dim > space.limits.eig and space.Q is None and space.K is None
                and loop.pen.mode == "interval"
                and loop.it >= 2 and loop.it > loop.last_growth + 1
                and loop.W.shape[1] < loop.opts.max_rank)
    f, f_half = getattr(res, "f", np.nan), getattr(res, "f_half", np.nan)
    if eligible and np.isfinite(f) and np.isfinite(f_half) \
            and f_half - f <= _CREEP * loop.opts.tol * max(abs(f), 1.0):
        return "crept"
    return "cut"

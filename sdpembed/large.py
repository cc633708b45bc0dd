"""Large-n path for the Gram SDPs (DVU, MVU): low-rank solver, dual certificate, reduced basis.

Registers the backend ``"LOWRANK"``, so ``solve(formulation, solver="LOWRANK")``
works like any other backend. It reads the numpy description
:class:`~sdpembed.formulations.gram.GramProblem` stored in
``formulation.meta["gram_problem"]`` and never touches the cvxpy problem data.
The iterations form no dense n x n matrix, so it runs on all 9,298 USPS digits; only
the certificate's final Cholesky check (n <= 20,000, memory permitting) and, for
interval problems with n <= 10,000, the certificate's eigenvalues and the lifting of
the multipliers do.

Method
------
The centred Gram SDP

.. math::

    p^* = \\min_{G\\succeq 0,\\ G\\mathbf 1 = 0}\\ \\langle \\tilde C, G\\rangle
        + \\varphi(\\mathcal A G) \\quad [+\\ \\langle H, G\\rangle \\le 0 \\text{ (SNR, eq. 10)}],

with :math:`\\tilde C = C + \\tau I` (diagonal plus low rank),
:math:`(\\mathcal A G)_e = D_e(G) = \\langle a_e a_e^T, G\\rangle` and the distance
term :math:`\\varphi` of the ``distances`` mode

* ``"equality"``: :math:`\\varphi = \\iota_{\\{\\bar D\\}}` (indicator);
* ``"interval"``: :math:`\\varphi(D) = \\sum_e w_e |D_e - \\bar D_e|`,
  :math:`w_e = \\lambda/\\bar D_e` (the slacks of (8)-(9) eliminated in closed
  form: :math:`\\epsilon_e = |D_e-\\bar D_e|/\\bar D_e` at the optimum);
* ``"quadratic"``: :math:`\\varphi(D) = \\lambda\\sum_e (\\sqrt{D_e} - \\sqrt{\\bar D_e})^2`,

is solved over a factor :math:`G = VV^T`, :math:`V\\in\\mathbb R^{n\\times k}`
with centred columns (Burer & Monteiro 2003). The distance term is handled by
an augmented Lagrangian on the split :math:`z = \\mathcal A G`; minimising over
:math:`z` in closed form leaves a C¹ function of :math:`V` (a Huber function
for ``"interval"``, a quadratic for ``"equality"``), minimised by L-BFGS.
The multipliers are :math:`y = \\nabla\\psi(D)`, which keeps them in the domain
of :math:`\\varphi^*` (e.g. :math:`|y_e|\\le w_e`). ``"quadratic"`` is smooth in
:math:`V` and needs no splitting. The rank grows along the eigenvector of
the most negative eigenvalue of the dual slack matrix while that eigenvalue
is negative (an escape direction from a spurious stationary point).
Subproblems are solved by L-BFGS, then, once the duality gap is below 1e-2, by
a truncated Newton–CG method with exact (generalized) Hessian-vector
products.

For ``"interval"`` in the full space the default envelope is not the Huber
function but that of the penalty's kink, :math:`\\varphi = \\iota_{\\{\\bar D\\}}`
(the ``"equality"`` problem's augmented Lagrangian), kept while its multipliers stay
in the box :math:`|y_e|\\le w_e` (``interval_envelope="kink"``): a KKT point of the
equality problem whose multipliers lie in the box is one of the interval problem,
since the box is :math:`\\partial\\varphi(\\bar D)`, and the bound is the interval one
throughout. On USPS DVU the optimum keeps every edge on the kink, with
:math:`\\max_e|y_e|/w_e` of 0.007 at n = 500 and 0.0017 at n = 2,500, so the box is
never approached. The quadratic envelope keeps its curvature :math:`\\sigma` on every
edge, where the Huber function has none once :math:`|\\sigma r_e| \\ge w_e`; measured
(one BLAS thread): 8 outer iterations instead of 11 at n = 500. The first iterate whose
multipliers leave the box (an optimum with stretched edges, or a reduced basis, where
the equality problem is infeasible) switches the rest of the solve to the Huber
envelope, from the multipliers clipped to the box.

Why not column generation: the restricted problem on :math:`G = BMB^T`, with
:math:`B` spanning the factor and the bottom eigenvectors of :math:`S(y)`, is a
small convex SDP that :func:`sdpembed.reduced.interval_ipm` solves in 1-7 s at
n = 2,500 (r = 30-46), so alternating it with pricing by :math:`S` is the obvious
rival. Measured on 2,500 USPS digits (DVU, optimum between -1.11274 and -1.11268):
unstabilised, from the augmented-Lagrangian state after 100 s (objective -1.0963),
15 rounds (56 s) reached -1.1093 and tailed off, and the restricted multipliers
are useless in the full space (:math:`\\lambda_{\\min}(S)` between -165 and -850
over two such runs); with the multipliers kept in a box
:math:`|y - y_c| \\le \\theta w` and the cuts accumulated, from the state after
170 s (objective -1.11174), the primal reached -1.11234 in 17 s, but
:math:`\\lambda_{\\min}(S)` stayed below -0.06 even at :math:`\\theta = 4\\cdot 10^{-4}`,
so no round gave a bound. The dual feasible set is too thin for a step in
:math:`y`; the augmented Lagrangian keeps its multipliers.

Optimal faces and the trace tie-break: the DVU optimum is often not unique
(over the optimal face the trace of G varies; interior-point backends return
a high-rank point of the face, of numerical rank near n). A low-rank factor
reaches the same optimal value at a low-rank point of that face, so objective
values agree with the conic backends while Gram matrices may differ. For a
well-defined low-rank solution add a small trace term (``trace="min"``,
``trace_weight`` ~ 1e-3), which selects the minimum-trace optimal points and
which this solver supports like any other variant.

Certificate (weak duality)
--------------------------
For any :math:`y` and :math:`\\nu\\ge 0` let
:math:`S(y,\\nu) = \\tilde C + \\sum_e y_e a_e a_e^T + \\nu H` (diagonal + low rank +
a sparse weighted Laplacian) and :math:`\\mu(y,\\nu) = \\lambda_{\\min}(Q^T S Q)`,
:math:`Q` an orthonormal basis of :math:`\\mathbf 1^\\perp`. For every feasible
:math:`G`, by Fenchel–Young :math:`\\varphi(D)\\ge y^T D - \\varphi^*(y)` and
:math:`\\nu\\langle H,G\\rangle\\le 0`, so

.. math::

    \\text{objective}(G) \\ \\ge\\ \\langle S(y,\\nu), G\\rangle - \\varphi^*(y)
    \\ \\ge\\ \\min(\\mu, 0)\\,\\mathrm{tr}\\,G - \\varphi^*(y).

with :math:`\\varphi^*(y) = y^T\\bar D` (equality; interval with
:math:`|y_e|\\le w_e`) and :math:`\\varphi^*(y) = \\sum_e \\lambda\\bar D_e y_e/(\\lambda - y_e)`
(quadratic, :math:`y_e<\\lambda`). If :math:`\\mu\\ge 0` the bound is
:math:`-\\varphi^*(y)`. If :math:`\\mu < 0` the multipliers are moved towards a
*coercive* point :math:`y_0` with :math:`\\mu_0 = \\mu(y_0, 0) > 0` (``interval``:
:math:`y_0 = w`; ``quadratic``: :math:`y_0 = 0.9\\lambda`), using concavity of
:math:`\\lambda_{\\min}`: with :math:`\\theta = -\\mu/(\\mu_0-\\mu)` the point
:math:`(1-\\theta)(y,\\nu)+\\theta(y_0,0)` has :math:`\\mu\\ge0` and gives the bound
:math:`-\\varphi^*((1-\\theta)y+\\theta y_0)`. Where :math:`\\lambda_{\\min}` is exact
(dense), the nearer anchors :math:`y_s = y + s(y_0 - y)`, :math:`s \\in` ``_SHIFT_ANCHORS``,
are tried too and the highest bound kept: :math:`S(y_s) = (1-s)S(y) + sS(y_0)` often has
:math:`\\lambda_{\\min}` well above :math:`s\\mu_0`, so the shift costs less (measured on
500 USPS digits, DVU: the loss :math:`\\theta\\,\\bar D^T(y_s - y)` fell from 7.4e-5 at
:math:`s=1` to 4.4e-5 at :math:`s=10^{-5}`). For ``equality`` the trace of any
feasible point is bounded by :math:`T = \\sum_i \\mathrm{sp}(r,i)^2` (``sp`` the
shortest-path length over :math:`\\sqrt{\\bar D}`; the centroid minimises the sum of
squared distances), giving :math:`-\\varphi^*(y) + \\min(\\mu,0)\\,T`. Where the
objective is negative definite, :math:`C \\preceq -cI` with :math:`c > 0` (MVU:
:math:`C = -I`, :math:`c = 1`), scaling is better: :math:`S(sy, s\\nu) = sS(y,\\nu) + (1-s)C
\\succeq (s\\mu + (s-1)c)I = 0` for :math:`s = c/(c+\\mu)`, so the bound is
:math:`-\\varphi^*(sy)`, a relative loss of about :math:`|\\mu|/c` instead of
:math:`|\\mu|T/|p|` (``"scaled"``; the higher of the two bounds is kept). Measured on
USPS MVU: :math:`T/|p|` is 4.3 at n = 500 and 6.6 at n = 2,500. On a reduced
basis, where no trace bound is known, the scaled bound is the only one.

Two dual points are tried and the higher bound is kept: the augmented-Lagrangian
multipliers, and their *refinement* (:func:`refine_multipliers`), the point of
:math:`\\mathrm{dom}\\,\\varphi^*` that best satisfies complementary slackness
:math:`S(y,\\nu)V = 0` for the final factor (a bounded linear least-squares
problem). Near the optimum the refinement removes most of the error the
inexact subproblems leave in the multipliers: measured on 500 USPS digits
(DVU), :math:`\\lambda_{\\min}(S)` went from :math:`-3.2\\cdot10^{-7}` to
:math:`-3.0\\cdot10^{-8}` and the certified gap from :math:`6.5\\cdot10^{-4}` to
:math:`1.2\\cdot10^{-4}` at the same factor. The certificate is as exact as
:math:`\\lambda_{\\min}`: the objective here is a small difference of large terms
(about -1 against a trace near 700), so a gap of 1e-4 needs
:math:`|\\lambda_{\\min}|\\lesssim 10^{-7}`.

For ``"interval"`` in the full space (n <= 10,000) a third candidate is tried when the
others miss ``tol`` only because :math:`\\lambda_{\\min} < 0`: :func:`lift_multipliers`
raises the multipliers of a few edges until :math:`S` is PSD, a cutting-plane
repair on the bottom eigenspace of :math:`S` whose every step is a small SDP
(:func:`sdpembed.reduced.rank_one_lmi_lp`). It costs far less than the shift
towards :math:`y_0`, because the negative eigenvectors sit on few points: measured on
USPS DVU, n = 500, first certificate attempt (outer iteration 18): shifted 1.2e-3,
lifted 7.9e-5 (certified in 14 s instead of 33 s); n = 2,500: 3.3e-2 against 1.7e-4.

``certified_gap = (objective - bound) / max(|objective|, |bound|)``. Weak duality
holds across iterations, so the solve pairs the lowest objective of any feasible
(or feasibility-restored) iterate with the highest bound of any iteration, and stops
once that pair closes the gap; the returned factor and multipliers are that pair.
The iterates' objectives are not monotone: measured on 500 USPS digits (DVU), the
per-iteration certified gaps hovered at 1.1-1.5e-4 for 20 outer iterations while the
best pair reached 9.7e-5 at outer iteration 39 instead of 52 (32 s instead of 46 s).
How :math:`\\mu` was obtained is ``report.extra["certificate_check"]``, and
``report.extra["certificate"]`` says it in words:

* ``"dense"``: n <= 800 (``_DENSE_EIG_MAX``) or a reduced basis: dense
  ``eigh`` of S on :math:`\\mathbf 1^\\perp`, exact up to rounding.
* ``"cholesky"``: n > 800. During the solve :math:`\\mu` comes from Lanczos
  (:func:`scipy.sparse.linalg.eigsh`, deflated, minus its residual norm), which
  can miss the leftmost eigenvalue, or for ``"interval"`` up to n = 10,000 from a
  dense ``eigh`` whose eigenpairs the lift reuses (at the end of a solve Lanczos must
  resolve :math:`\\lambda_{\\min}` below a cluster of near-zero eigenvalues: 1.4-21 s
  at n = 2,500, against 0.7 s). The *reported* certificate is therefore
  verified once at the end (:func:`_verify_psd_shift`): a dense Cholesky
  factorisation of :math:`PSP + (c/n)\\mathbf 1\\mathbf 1^T - (\\mu+\\delta)I`, with
  :math:`\\delta` a rigorous bound on the rounding errors of forming and factorising
  it (Demmel 1989; Rump 2006), proves :math:`\\lambda_{\\min}(S)\\ge\\mu`; if it fails
  at the Lanczos value, lower values are tried (:func:`_verified_lambda_min`)
  and the bound is recomputed from the verified one (for ``"shifted"`` the
  coercive point's :math:`\\mu_0` is verified too). Cost 8n² bytes and n³/3
  flops: measured 0.15-0.25 s and 48 MiB at n = 2,500, 11.8 s and 664 MiB at
  n = 9,298 (USPS DVU instances, 2 BLAS threads, shared 2-core machine).
* ``"lanczos (unverified)"`` (``"eigh (unverified)"``): the check could not run
  (n > 20,000, not enough memory) or failed at every shift tried. The bound is then
  only an estimate: ``certified_gap`` and ``extra["lower_bound"]`` are ``None``, the
  number goes to ``extra["estimated_gap"]`` / ``extra["estimated_lower_bound"]``
  and the status is ``"optimal_inaccurate"``. Nothing unverified is called
  certified. (The outer loop's history records unverified gaps as
  ``estimated_gap``.)

The rest of the bound (:math:`\\varphi^*`, the objective) is ordinary floating
point. For ``"equality"`` the objective is evaluated at the factor, which
violates the constraints by ``primal_infeasibility``; for ``"interval"`` and
``"quadratic"`` the factor is exactly feasible. An equality-mode iterate whose
multipliers already close the gap but whose residual is still above
``feas_tol`` (at most 1e-3) is first moved onto the constraints by
Gauss–Newton steps (:func:`restore_feasibility`) and certified there, so
the solve does not wait for the augmented Lagrangian to drive the residual
down (measured on USPS MVU, n = 500: certified at outer iteration 9 instead
of 11, 8.4 s instead of 12 s). An ``"interval"`` iterate is feasible, but the
augmented Lagrangian leaves edges just off the kink :math:`D_e = \bar D_e` of
the penalty, where the optimum keeps them, and their slack costs 2e-4 to 1.3e-3
of the objective at the iterates where a 2,500-digit solve attempts a certificate
(about 1e-4 at the best of them); so it is certified with those edges moved
onto the kink by the same steps, and its multipliers are tried only when they
close the gap to both points. When no certificate can be
computed, ``certified_gap`` is ``None`` and ``report.extra["certificate"]``
says why.

Reduced basis
-------------
With ``formulation.meta["basis_rank"] = r`` the formulation optimises over
:math:`G = QYQ^T` (Weinberger, Sha, Zhu & Saul 2007), ``Q`` the bottom
non-constant Laplacian eigenvectors (:func:`laplacian_basis`). The solver
then works with :math:`V = QW`; the same certificate holds on that subspace
(:math:`\\mu = \\lambda_{\\min}(Q^TSQ)`, dense, exact) and bounds the *reduced*
problem. For ``distances="interval"`` on a basis (with or without SNR) the
reduced problem is solved instead by the primal-dual interior-point method of
:mod:`sdpembed.reduced` (``reduced_solver="auto"``, the default): :math:`Y`
is :math:`r\\times r`, the normal equations live in :math:`r(r+1)/2`
unknowns whatever the number of edges, and the multipliers are certified
by :func:`certify` like the augmented Lagrangian's; on failure it falls back
to the augmented Lagrangian.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.optimize as sopt
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import dijkstra
from threadpoolctl import threadpool_limits

from .exceptions import InputError, UnsupportedProblemError
from .formulations.gram import DiagPlusLowRank, GramFormulation, GramProblem, laplacian_basis
from .recovery import embedding_from_factor, spectrum_from_factor  # noqa: F401 (re-export)
from .solvers import SolveReport, register_backend

__all__ = ["LowRankOptions", "LowRankResult", "lowrank_solve", "certify", "verify_certificate",
           "refine_multipliers", "lift_multipliers", "restore_feasibility",
           "laplacian_basis", "embedding_from_factor", "spectrum_from_factor", "BACKEND_NAME",
           "INNER_SOLVERS", "REDUCED_SOLVERS", "INTERVAL_ENVELOPES"]

logger = logging.getLogger(__name__)

BACKEND_NAME = "LOWRANK"


# ----------------------------------------------------------------------- options
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
class LowRankOptions:
    """Settings of :func:`lowrank_solve` (all keyword options of ``solve(..., solver="LOWRANK")``).

    Parameters
    ----------
    tol : float
        Target certified relative gap; the solve stops once the certificate
        proves it (and, for ``"equality"``, the relative infeasibility is
        below ``feas_tol``).
    feas_tol : float
        Relative infeasibility :math:`\\|D - \\bar D\\|/\\|\\bar D\\|` accepted (equality
        mode) and the SNR constraint's relative violation.
    rank : int or None
        Initial rank of the factor; default ``n_classes + 4`` for DVU, a third
        of the Barvinok–Pataki rank (at least 16) for MVU, at most ``n - 1``
        (grown as needed, see :func:`_initial_rank`; trimmed when a quarter of
        its columns become numerically null, see :func:`_trim_rank`).
    max_rank : int
        Largest rank the factor may grow to.
    warm_start : {None, "basis"} or ndarray
        ``None`` (default): a random factor scaled to the target distances;
        ``"basis"``: first solve the problem on a reduced Laplacian basis of
        ``warm_basis_rank`` vectors of the problem's own graph and start from
        its solution; an (n, k) array: start from that factor. Measured on
        USPS (DVU, 2-NN + 1 random edge graph), the reduced optima are far from
        the full one (objective 716 at n = 500 and 5,067 at n = 2,500 against
        about -1.04: a smooth basis cannot hold the local distances), and with
        the SNR constraint the basis start stalled the solver (objective 997,
        no progress) where the random start certified 7e-3 in 34 s; hence the
        default.
    max_outer, max_inner, max_newton : int
        Augmented-Lagrangian iterations; L-BFGS iterations per subproblem;
        truncated Newton–CG iterations per subproblem. A multiplier update after a
        subproblem cut off by ``max_inner`` helps little, and the penalty it raises
        stiffens the next one: on all 9,298 USPS digits (DVU, ``tol=1e-3``, 540 s, one
        thread, two solves side by side) with 2,000 every subproblem hit the cap, the
        penalty rose to 27 times its start and the gap was 0.17 at the end; with 6,000
        the first three subproblems took 6,000, 6,000 and 5,489 iterations, the penalty
        never rose, later subproblems took tens to hundreds, and the solve certified
        7.6e-4 in 495 s (1.0e-3 in 360 s with the dense certificate of
        ``_LIFT_MAX_N``). DVU n = 2,500 (seed 0): 52 s against 62 s; MVU n = 2,500 and
        9,298: the same iterates (no subproblem reaches 2,000).
    inner : {"auto", "lbfgs", "plbfgs", "newton"}
        Subproblem solver: ``"auto"`` uses L-BFGS until the duality gap is
        below 1e-2, then truncated Newton–CG with exact (generalized)
        Hessian-vector products, which reaches the accuracy a certificate
        needs where L-BFGS stalls; ``"plbfgs"``: L-BFGS whose initial inverse
        Hessian is a sparse-LU solve with the weighted graph Laplacian
        :math:`\\sum_e \\omega_e a_ea_e^T`, :math:`\\omega_e = 2\\sigma\\bar D_e/k` (the
        isotropic part of the Gauss–Newton curvature of the distance term).
    time_limit : float
        Seconds; when the limit is hit the best pair so far (see "Certificate":
        the lowest-objective feasible iterate and the highest bound) is returned
        with status ``"optimal_inaccurate"`` and its gap (if no iterate was
        certified, the last one's multipliers are; ``certified_gap`` is ``None``
        only when no certificate can be computed, with the reason). The same holds
        when ``max_outer`` ends the solve. The limit is checked
        inside the subproblem solves; a lift of the multipliers under way
        (:func:`lift_multipliers`, 2.5-4.4 s on USPS DVU n = 2,500), the final
        certificate, and for n > 800 its dense Cholesky verification, come on top.
    eig_tol : float
        Relative tolerance of the Lanczos eigensolver.
    random_state : int or None
        Seeds the initial factor.
    blas_threads : int
        BLAS threads while solving (the work is many small products). The dense
        n x n steps (interval certificates and lifts for 800 < n <= 10,000, the final
        Cholesky check) use all usable cores, at most 8.
    reduced_solver : {"auto", "ipm", "alm"}
        Solver on a reduced basis. ``"auto"`` (default): the primal-dual
        interior-point method of :mod:`sdpembed.reduced` for
        ``distances="interval"`` (with or without the SNR constraint), falling
        back to the augmented Lagrangian (recorded in
        ``info["reduced_solver"]``) if it fails or its certified gap exceeds
        ``tol``; the augmented Lagrangian for ``"equality"`` and
        ``"quadratic"``. ``"ipm"``: the interior-point method only (an
        ``InputError`` for other distance modes; no fallback). ``"alm"``: the
        augmented Lagrangian. Ignored without a basis.
    interval_envelope : {"auto", "kink", "huber"}
        The augmented Lagrangian of ``distances="interval"``. ``"huber"``: the
        envelope of the penalty :math:`w_e|D_e - \bar D_e|` itself (a Huber
        function of :math:`D`, multipliers clipped to :math:`|y_e| \\le w_e`).
        ``"kink"``: the envelope of the penalty's kink :math:`D = \bar D`, i.e. the
        augmented Lagrangian of the ``"equality"`` problem, while its multipliers
        stay in the box :math:`|y_e| \\le w_e`: an equality optimum with multipliers
        in the box is an interval optimum (they are a subgradient of the penalty at
        :math:`D = \bar D`), and the certificate is the interval one throughout. The
        first iterate whose multipliers leave the box switches the solve to
        ``"huber"`` (``info["interval_envelope"]`` says where). ``"auto"`` (default):
        ``"kink"`` in the full space, ``"huber"`` on a reduced basis, whose smooth
        vectors cannot hold the local distances. Measured on USPS DVU (80 %
        labelled, 2-NN + 1 random edge graph), where the optimum keeps every edge on
        the kink with :math:`\\max_e |y_e|/w_e` of 0.007 (n = 500) and 0.0017
        (n = 2,500): see :data:`INTERVAL_ENVELOPES`.
    """

    tol: float = 1e-4
    feas_tol: float = 1e-6
    rank: int | None = None
    max_rank: int = 200
    warm_start: Any = None
    warm_basis_rank: int = 30
    max_outer: int = 200
    max_inner: int = 6000
    max_newton: int = 50
    inner: str = "auto"
    time_limit: float = 3600.0
    eig_tol: float = 1e-6
    random_state: int | None = 0
    blas_threads: int = 1
    reduced_solver: str = "auto"
    interval_envelope: str = "auto"

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
        if not (0 < self.tol < 1) or not (0 < self.feas_tol < 1):
            raise InputError("LOWRANK tol and feas_tol must lie in (0, 1)")
        if self.rank is not None and self.rank < 1:
            raise InputError("LOWRANK rank must be a positive integer")
        for name in ("max_rank", "max_outer", "max_inner", "max_newton", "warm_basis_rank",
                     "blas_threads"):
            _require_int("LOWRANK", name, getattr(self, name), 1)
        if not (self.eig_tol > 0):
            raise InputError("LOWRANK eig_tol must be positive")
        if self.inner not in INNER_SOLVERS:
            raise InputError(f"LOWRANK inner must be one of {INNER_SOLVERS}; got {self.inner!r}")
        if not (self.warm_start is None or isinstance(self.warm_start, np.ndarray)
                or self.warm_start == "basis"):
            raise InputError("LOWRANK warm_start must be 'basis', None or an (n, k) factor")
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
#: ``interval_envelope``. Measured on USPS DVU (one BLAS thread, tol = 1e-4): n = 500,
#: certified in 4.4 s with "kink" against 10.9 s with "huber" (standalone); n = 2,500,
#: seeds 0-3, two solves side by side: 62, 59, 63, 54 s, certified gaps 4e-7 to 4e-6,
#: against 147, 216, 202, 225 s with "huber" (gaps 5.5e-5 to 8.0e-5). The kink envelope
#: with the equality problem's penalty (``_SIGMA_KINK`` = 1) and a lift margin of 1e-8
#: took 108, 90, 81, 136 s.
INTERVAL_ENVELOPES = ("auto", "kink", "huber")


# ----------------------------------------------------------------------- space
class _Space:
    """Where the factor lives: all of :math:`\\mathbf 1^\\perp` (``Q=None``) or ``range(Q)``.

    ``E`` maps a factor ``W`` to the edge differences (``m x k``); ``C``, ``H``
    are the objective and SNR functionals on that space.
    """

    def __init__(self, gp: GramProblem, Q: np.ndarray | None):
        self.gp = gp
        self.Q = Q
        n, m = gp.n, gp.edges.shape[0]
        i, j = gp.edges.T
        B = sp.csr_matrix((np.r_[np.ones(m), -np.ones(m)], (np.r_[np.arange(m), np.arange(m)],
                                                           np.r_[i, j])), shape=(m, n))
        self.B = B
        self._ones_n = np.full(n, 1.0 / n)
        self.C = gp.full_objective()
        self.H = None
        if gp.snr is not None:
            self.H = gp.icv.scaled(gp.snr) + gp.bcv.scaled(-1.0)
        if Q is None:
            self.dim = n
            self.E = B
            self.ET = B.T.tocsr()
        else:
            self.dim = Q.shape[1]
            self.E = np.asarray(B @ Q)
            self.ET = self.E.T
            self.Cq = self.C.congruence(Q)
            self.Hq = None if self.H is None else self.H.congruence(Q)

    # factor -> point coordinates (n x k)
    def points(self, W: np.ndarray) -> np.ndarray:
        return W if self.Q is None else self.Q @ W

    def project(self, W: np.ndarray) -> np.ndarray:
        if self.Q is not None:
            return W
        # the column means by a BLAS product (5x faster than ndarray.mean on n x k)
        return W - (self._ones_n @ W)[None, :] if W.ndim == 2 else W - W.mean()

    def diffs(self, W: np.ndarray) -> np.ndarray:
        return self.E @ W

    @cached_property
    def E_single(self):
        """``(E, E^T)`` in single precision, for the Hessian products of Newton–CG."""
        return self.E.astype(np.float32), self.ET.astype(np.float32)

    def apply_C(self, W):
        return self.C.matvec(W) if self.Q is None else self.Cq @ W

    def apply_H(self, W):
        return self.H.matvec(W) if self.Q is None else self.Hq @ W

    def snr_violation(self, h: float, quad: float) -> float:
        r""":math:`\max(0, h)/|q|`: the SNR constraint :math:`h = \langle H, G\rangle \le 0`
        violated relative to the objective's quadratic term :math:`q = \langle C, G\rangle`
        (0 without an SNR constraint)."""
        return max(0.0, h) / max(abs(quad), 1e-300) if self.H is not None else 0.0

    def apply_S(self, W, y, nu):
        """:math:`S(y,\\nu)W` on this space."""
        out = self.apply_C(W) + self.ET @ (y[:, None] * (self.E @ W))
        if nu:
            out = out + nu * self.apply_H(W)
        return out

    def preconditioner(self, omega: np.ndarray):
        """Solver for :math:`M = E^T\\mathrm{diag}(\\omega)E + \\delta I` (weighted Laplacian).

        :math:`2M` approximates the Gauss–Newton curvature of the distance
        term; it is the graph-Laplacian conditioning that plain L-BFGS cannot
        cope with. Sparse LU (SuperLU) in the full space, Cholesky on a basis.
        """
        if self.Q is None:
            M = (self.ET @ sp.diags(omega) @ self.E).tocsc()
            delta = 1e-4 * float(M.diagonal().mean())
            lu = spla.splu((M + delta * sp.eye(self.dim)).tocsc(), permc_spec="MMD_AT_PLUS_A")
            return lu.solve
        M = (self.E.T * omega) @ self.E
        delta = 1e-4 * float(np.trace(M)) / self.dim + 1e-300
        cf = sla.cho_factor(M + delta * np.eye(self.dim))
        return lambda X: sla.cho_solve(cf, X)

    def dense_S(self, y, nu) -> np.ndarray:
        """:math:`Q^T S Q` (reduced basis only)."""
        S = self.Cq + (self.E.T * y) @ self.E
        if nu:
            S = S + nu * self.Hq
        return 0.5 * (S + S.T)


# ----------------------------------------------------------------------- distance terms
class _Penalty:
    """The distance term :math:`\\varphi` and its augmented-Lagrangian envelope."""

    def __init__(self, gp: GramProblem):
        self.mode = gp.distances
        self.t = np.asarray(gp.target, dtype=float)
        self.lam = float(gp.slack_weight)
        self.w = self.lam / self.t if self.mode == "interval" else None
        self.s = np.sqrt(self.t)
        self.splitting = self.mode in ("equality", "interval")
        self.split = self.mode  # the envelope the augmented Lagrangian minimises

    def objective(self, D: np.ndarray) -> float:
        """:math:`\\varphi(D)` (equality: 0; the residual is reported separately)."""
        if self.mode == "interval":
            return float(self.w @ np.abs(D - self.t))
        if self.mode == "quadratic":
            return float(self.lam * np.sum((np.sqrt(np.maximum(D, 0.0)) - self.s) ** 2))
        return 0.0

    def envelope(self, D, y, sigma):
        """Value and gradient (w.r.t. D) of the AL envelope :math:`\\psi_{y,\\sigma}(D)`."""
        if self.split == "equality":
            r = D - self.t
            return float(y @ r + 0.5 * sigma * (r @ r)), y + sigma * r
        if self.split == "interval":
            # Huber in r = D + y/sigma - t with g = clip(sigma r, -w, w): sigma r^2/2
            # where |g| < w, w|r| - w^2/(2 sigma) elsewhere; both equal g r - g^2/(2 sigma),
            # so the value is three dot products (0.28 -> 0.22 ms at m = 6,367)
            r = D + y / sigma - self.t
            g = np.clip(sigma * r, -self.w, self.w)
            return float(g @ r - (g @ g + y @ y) / (2 * sigma)), g
        d = np.sqrt(np.maximum(D, 1e-300))
        val = self.lam * np.sum((d - self.s) ** 2)
        return float(val), self.lam * (1.0 - self.s / d)

    def second_derivative(self, D, y, sigma) -> np.ndarray:
        """:math:`\\psi''(D)` of the envelope (generalized, for semismooth Newton)."""
        if self.split == "equality":
            return np.full_like(D, sigma)
        if self.split == "interval":
            r = D + y / sigma - self.t
            return np.where(np.abs(r) < self.w / sigma, sigma, 0.0)
        d = np.sqrt(np.maximum(D, 1e-300))
        return self.lam * self.s / (2.0 * d**3)

    def curvature_weights(self, sigma) -> np.ndarray:
        """Preconditioner edge weights :math:`\\omega_e \\approx 2\\psi_e''(\\bar D_e)\\bar D_e`."""
        if self.mode == "quadratic":
            return np.full_like(self.t, self.lam)
        return 2.0 * sigma * self.t

    def residual(self, D, y_new, y_old, sigma) -> np.ndarray:
        """Split residual :math:`D - z`; for ``equality`` that is :math:`D - \\bar D`."""
        if self.split == "equality":
            return D - self.t
        return (y_new - y_old) / sigma

    def conjugate(self, y) -> float:
        """:math:`\\varphi^*(y)` (``inf`` outside its domain)."""
        if self.mode == "equality":
            return float(y @ self.t)
        if self.mode == "interval":
            if not self.in_box(y):
                return np.inf
            return float(y @ self.t)
        if np.any(y >= self.lam):
            return np.inf
        return float(np.sum(self.lam * self.t * y / (self.lam - y)))

    def in_box(self, y) -> bool:
        """Whether ``y`` lies in the box :math:`|y_e| \\le w_e` (``"interval"``: the domain of
        :math:`\\varphi^*`), up to a relative rounding allowance of 1e-12."""
        return not np.any(np.abs(y) > self.w * (1 + 1e-12))

    def coercive_point(self) -> np.ndarray | None:
        """A dual point :math:`y_0 \\in \\mathrm{dom}\\,\\varphi^*` with the largest slack."""
        if self.mode == "interval":
            return self.w.copy()
        if self.mode == "quadratic":
            return np.full_like(self.t, 0.9 * self.lam)
        return None


# ----------------------------------------------------------------------- eigenvalues
#: below this size the certificate uses dense eigenvalues (exact, cheap)
_DENSE_EIG_MAX = 800


@dataclass
class _Eig:
    """Estimated lower bound on :math:`\\lambda_{\\min}` and the direction that attains it."""

    value: float          # Ritz value minus residual norm, combined over the deflated blocks
    vector: np.ndarray    # unit vector (space coordinates) of the smallest Ritz value
    ritz: float
    residual: float
    method: str = "lanczos"   # or "dense" (an eigendecomposition of the dense matrix)


def _gershgorin(space: _Space, y, nu) -> float:
    """Upper bound on :math:`\\|S(y,\\nu)\\|_2` (row sums of the sparse part + low-rank norms)."""
    def lr_norm(M):
        return float(np.max(np.abs(M.diag)) + np.sum(np.abs(M.s) * (M.U**2).sum(0)))
    deg = np.asarray(abs(space.B).T @ np.abs(y)).ravel()
    out = lr_norm(space.C) + 2.0 * float(np.max(deg, initial=0.0))
    if nu:
        out += nu * lr_norm(space.H)
    return out


def _lambda_min(space: _Space, y, nu, *, tol: float, deflate: np.ndarray | None = None,
                start: np.ndarray | None = None, ncv: int = 60) -> _Eig:
    """Lower estimate of :math:`\\lambda_{\\min}(S(y,\\nu))` on :math:`\\mathbf 1^\\perp` (or on Q).

    Reduced basis: dense ``eigh`` of :math:`Q^TSQ` (exact). Full space:
    the current factor's range :math:`U` (orthonormal, ``deflate``) is split
    off, because at a solution :math:`SU\\approx 0` is a k-fold cluster at 0
    that stalls Lanczos. With :math:`\\lambda_{11} = \\lambda_{\\min}(U^TSU)`,
    :math:`\\lambda_{22}` the smallest eigenvalue on the complement of
    :math:`\\{\\mathbf 1, U\\}` (Lanczos, ``eigsh(which="SA")``, minus the residual
    norm) and :math:`\\epsilon = \\|(I-ZZ^T)SU\\|_2`, every unit :math:`x = a + b`
    has :math:`x^TSx \\ge \\lambda_{11}|a|^2 - 2\\epsilon|a||b| + \\lambda_{22}|b|^2`,
    so :math:`\\lambda_{\\min}(S)` is at least the smallest eigenvalue of
    :math:`\\begin{pmatrix}\\lambda_{11}&\\epsilon\\\\ \\epsilon&\\lambda_{22}\\end{pmatrix}`.
    Without ``deflate``, plain Lanczos on :math:`\\mathbf 1^\\perp`. Full-space values
    are estimates (Lanczos can miss the leftmost eigenvalue); the reported
    certificate verifies them (:func:`_verify_psd_shift`). ``start``: a starting
    vector for Lanczos (the previous call's eigenvector: the multipliers change
    little between calls); ``ncv`` its basis size.
    """
    if space.Q is not None:
        w, U = sla.eigh(space.dense_S(y, nu), subset_by_index=[0, 0])
        return _Eig(float(w[0]), U[:, 0], float(w[0]), 0.0, "dense")
    n = space.dim
    if n <= _DENSE_EIG_MAX:
        # small n: exact dense eigenvalues of S on 1-perp (Householder basis)
        from .formulations.gram import centering_basis

        Hb = centering_basis(n)
        SH = space.apply_S(Hb, y, nu)
        w, X = sla.eigh(0.5 * (Hb.T @ SH + SH.T @ Hb), subset_by_index=[0, 0])
        return _Eig(float(w[0]), Hb @ X[:, 0], float(w[0]), 0.0, "dense")
    Z = np.ones((n, 1)) / np.sqrt(n)
    U = np.zeros((n, 0))
    if deflate is not None and deflate.shape[1] > 0:
        Qd, R = np.linalg.qr(np.c_[Z, deflate])
        keep = np.abs(np.diag(R)) > 1e-10 * max(np.abs(np.diag(R)).max(), 1e-300)
        keep[0] = True
        Z = Qd[:, keep]
        U = Z[:, 1:]
    c = _gershgorin(space, y, nu) + 1.0
    ritz, res, x = _lanczos_smallest(space, y, nu, Z, c, tol, start, ncv)
    lam22 = ritz - res
    if U.shape[1] == 0:
        return _Eig(lam22, x, ritz, res)
    SU = space.apply_S(U, y, nu)
    SU = SU - SU.mean(axis=0)
    A11 = U.T @ SU
    lam11 = float(sla.eigvalsh(0.5 * (A11 + A11.T))[0])
    eps = float(np.linalg.norm(SU - Z @ (Z.T @ SU), 2))
    mid, half = 0.5 * (lam11 + lam22), 0.5 * (lam11 - lam22)
    return _Eig(float(mid - np.hypot(half, eps)), x, ritz, res)


def _lanczos_smallest(space: _Space, y, nu, Z: np.ndarray, c: float, tol: float,
                      start: np.ndarray | None = None, ncv: int = 60):
    """``(ritz, residual, vector)``: smallest eigenpair of :math:`S` on the complement of
    ``Z`` (orthonormal columns) by ``eigsh(which="SA")``; ``c`` a Gershgorin bound;
    ``start`` a starting vector (a random one if ``None`` or inside ``Z``); ``ncv`` the
    Lanczos basis size."""
    n = space.dim

    def proj(X):
        return X - Z @ (Z.T @ X)

    def mv(X):
        # P S P + c (I - P) + c I: the spectrum of interest moved to about c, so
        # ARPACK's relative tolerance acts as an absolute one (tol * c)
        X = X.reshape(n, -1)
        P = proj(X)
        return proj(space.apply_S(P, y, nu)) + c * (X - P) + c * X

    op = spla.LinearOperator((n, n), matvec=mv, matmat=mv, dtype=float)
    v0 = proj(np.random.default_rng(0).standard_normal((n, 1))).ravel()
    if start is not None:
        v1 = proj(np.reshape(start, (n, 1))).ravel()
        if np.linalg.norm(v1) > 1e-3 * np.linalg.norm(start):
            # a trace of the random vector keeps every eigendirection in the Krylov space
            v0 = v1 / np.linalg.norm(v1) + 1e-3 * v0 / np.linalg.norm(v0)
    w, X = spla.eigsh(op, k=1, which="SA", tol=tol, v0=v0, ncv=min(n - 1, ncv),
                      maxiter=max(1000, 20 * n))
    x = X[:, 0]
    res = float(np.linalg.norm(mv(x).ravel() - w[0] * x))
    return float(w[0]) - c, res, x


# ----------------------------------------------------------------------- verified lambda_min
#: largest n for which the final certificate's lambda_min is verified by a dense
#: Cholesky factorisation (8 n^2 bytes: 3.2 GB at 20,000; also limited by free memory)
_VERIFY_MAX_N = 20_000
#: largest n for which a failed verification falls back to a dense eigvalsh (4/3 n^3 flops)
_VERIFY_DENSE_FALLBACK_MAX = 5_000
_U = 2.0 ** -53          # unit roundoff of IEEE double
_ETA = 2.0 ** -1074      # smallest positive (subnormal) double


def _gamma(k: int) -> float:
    """:math:`\\gamma_k = ku/(1-ku)` (Higham, Accuracy and Stability, §3.1)."""
    return k * _U / (1.0 - k * _U)


@dataclass
class _PSDCheck:
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


def _dense_shifted(space: _Space, y, nu, c: float) -> tuple[np.ndarray, dict]:
    """Dense :math:`M = PSP + (c/n)\\mathbf 1\\mathbf 1^T` (no shift), O(n^2 r), one n x n array.

    With :math:`S = \\mathrm{diag}(d) + U\\mathrm{diag}(s)U^T + L_y`
    (:math:`L_y = B^T\\mathrm{diag}(y)B`, :math:`L_y\\mathbf 1 = 0`),
    :math:`PSP = \\bar U\\mathrm{diag}(s)\\bar U^T + \\mathrm{diag}(d) - (d\\mathbf 1^T +
    \\mathbf 1d^T)/n + (\\mathbf 1^Td/n^2)\\mathbf 1\\mathbf 1^T + L_y`, :math:`\\bar U = U -
    \\mathbf 1 m^T` the column-centred U: P is never formed. Also returns the
    magnitudes the rounding-error bound of :func:`_verify_psd_shift` needs.
    """
    C, H = space.C, space.H
    parts = [C] + ([H] if nu and H is not None else [])
    for M_ in parts:
        if not isinstance(M_, DiagPlusLowRank):
            raise TypeError(f"dense verification needs DiagPlusLowRank terms, got {type(M_)}")
    d = C.diag + (nu * H.diag if len(parts) > 1 else 0.0)
    U = np.c_[C.U, H.U] if len(parts) > 1 else C.U
    s = np.r_[C.s, nu * H.s] if len(parts) > 1 else C.s
    n = space.dim
    Ub = U - U.mean(axis=0)                      # centred columns (any centring is exact on 1-perp)
    M = np.empty((n, n))
    if Ub.shape[1]:
        np.matmul(Ub * s, Ub.T, out=M)
    else:
        M.fill(0.0)
    M -= (d / n)[:, None]
    M -= (d / n)[None, :]
    M += float(d.sum()) / n**2 + c / n
    M[np.diag_indices(n)] += d
    L = (space.ET @ sp.diags(y) @ space.E).tocoo()   # coo of a csr product: no duplicates
    M[L.row, L.col] += L.data
    deg_abs = np.asarray(abs(space.B).T @ np.abs(y)).ravel()
    edge_deg = np.bincount(space.gp.edges.ravel(), minlength=n)
    mags = {"lowrank": float(np.sum(np.abs(s) * (Ub * Ub).sum(axis=0))),
            "diag": float(np.max(np.abs(d), initial=0.0)),
            "laplacian": 2.0 * float(np.max(deg_abs, initial=0.0)),
            "terms": int(U.shape[1] + np.max(edge_deg, initial=0) + 16)}
    return M, mags


def _dense_bottom(space: _Space, y, nu, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest eigenpairs :math:`(\\Lambda, X)` of :math:`S(y,\\nu)` on
    :math:`\\mathbf 1^\\perp` (full space), by ``eigh`` of :func:`_dense_shifted`'s matrix
    with the constant direction moved above :math:`\\|S\\|` (:math:`c = 2g + 1`, g the
    Gershgorin bound): 8n² bytes, about 4n³/3 flops, on all usable cores (the solve's
    other work runs on ``blas_threads``). Measured at n = 2,500: 0.7 s on 2 threads,
    1.2 s on one; n = 5,000: 4.5 s and 8 s; n = 9,298: about 39 s on 2 threads (a lift
    round); the block size hardly matters (k = 1 and 200 within 10 %)."""
    c = 2.0 * _gershgorin(space, y, nu) + 1.0
    M, _ = _dense_shifted(space, y, nu, c)
    with threadpool_limits(limits=_verify_threads(), user_api="blas"):
        lam, X = sla.eigh(M, subset_by_index=[0, k - 1], overwrite_a=True,
                          check_finite=False)
    return lam, X


def _verify_psd_shift(space: _Space, y, nu, mu: float) -> _PSDCheck:
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
        return _PSDCheck(False, mu, delta, -1, time.perf_counter() - t0,
                         "shift above the centring constant")
    M[np.diag_indices(n)] -= shift
    # a posteriori: the diagonal actually factorised is within the trace used for delta
    if math.fsum(M[np.diag_indices(n)]) > trace_mu:
        return _PSDCheck(False, mu, delta, -1, time.perf_counter() - t0,
                         "trace bound violated (rounding)")
    if np.any(M[np.diag_indices(n)] <= 0):
        return _PSDCheck(False, mu, delta, 1 + int(np.argmax(M[np.diag_indices(n)] <= 0)),
                         time.perf_counter() - t0, "non-positive diagonal")
    # M is symmetric: its transpose is the Fortran-ordered same matrix, factorised in place
    _, info = sla.lapack.dpotrf(M.T, lower=1, clean=0, overwrite_a=1)
    del M
    ok = int(info) == 0
    return _PSDCheck(ok, mu, delta, int(info), time.perf_counter() - t0,
                     "" if ok else f"dpotrf info {int(info)} (not positive definite)")


def _verified_lambda_min(space: _Space, y, nu, mu_est: float, *, max_steps: int = 4
                         ) -> tuple[float | None, str, list[_PSDCheck]]:
    """A verified lower bound on :math:`\\lambda_{\\min}(S)` (on 1-perp) near ``mu_est``.

    Tries :func:`_verify_psd_shift` at the Lanczos estimate ``mu_est``, then
    four rounding allowances below it (an accurate Ritz value whose residual is
    below the allowance); if that fails too (Lanczos missed the leftmost
    eigenvalue), then for n <= ``_VERIFY_DENSE_FALLBACK_MAX`` a dense
    eigendecomposition (:func:`_dense_bottom`, one eigenpair) gives a new estimate, checked again
    below it by a few times the rounding allowance; for larger n the estimate is
    lowered geometrically (``max_steps`` tries, factors 100). Returns
    ``(mu or None, reason, checks)``; ``None`` when nothing could be verified
    (too large, not enough memory, unsupported terms, every try failed).
    """
    from .formulations.gram import available_memory

    n = space.dim
    need = 8 * n * n * 1.25
    if n > _VERIFY_MAX_N:
        return None, f"n = {n} > {_VERIFY_MAX_N} (dense check skipped)", []
    if need > available_memory():
        return None, f"not enough memory for the dense check ({need / 2**30:.1f} GiB)", []
    checks: list[_PSDCheck] = []
    try:
        chk = _verify_psd_shift(space, y, nu, mu_est)
    except TypeError as exc:
        return None, str(exc), []
    checks.append(chk)
    if chk.verified:
        return chk.mu, "", checks
    if chk.info == -1:
        return None, chk.reason, checks
    # an accurate Lanczos value (residual below the rounding allowance) sits within
    # delta of lambda_min: a step of a few allowances down usually verifies
    chk = _verify_psd_shift(space, y, nu, mu_est - 4.0 * chk.delta)
    checks.append(chk)
    if chk.verified:
        return chk.mu, "", checks
    g = _gershgorin(space, y, nu)
    if n <= _VERIFY_DENSE_FALLBACK_MAX:
        lam = float(_dense_bottom(space, y, nu, 1)[0][0])
        # eigh is backward stable: its error is ~ n u ||M||; step below it by more
        c = 2.0 * max(g, abs(mu_est), 1e-300) + 1.0
        margin = 4.0 * chk.delta + 64 * n * _U * c
        tries = [lam - margin * 10.0**k for k in range(max(1, max_steps - 2))]
    else:
        step = max(4.0 * chk.delta, 1e-3 * abs(mu_est), 1e-12 * g)
        tries = [mu_est - step * 100.0**k for k in range(max_steps)]
    for mu in tries:
        chk = _verify_psd_shift(space, y, nu, mu)
        checks.append(chk)
        if chk.verified:
            return chk.mu, "", checks
    return None, f"Cholesky failed at {len(checks)} shifts down to {tries[-1]:.3g}", checks


# ----------------------------------------------------------------------- certificate
#: how :math:`\lambda_{\min}` of a certificate was obtained (``Certificate.check``)
CHECK_DENSE = "dense"
CHECK_CHOLESKY = "cholesky"
CHECK_LANCZOS = "lanczos (unverified)"
CHECK_EIGH = "eigh (unverified)"
#: the checks that still need :func:`verify_certificate` (n > ``_DENSE_EIG_MAX``)
_UNVERIFIED = (CHECK_LANCZOS, CHECK_EIGH)


@dataclass
class Certificate:
    """A lower bound on the optimum from dual variables (see the module docstring).

    ``check`` says how :math:`\\mu\\le\\lambda_{\\min}(S)` was obtained:
    ``"dense"`` (dense ``eigh``: n <= ``_DENSE_EIG_MAX`` or a reduced basis),
    ``"cholesky"`` (verified: a Cholesky factorisation of the shifted matrix,
    rounding included, :func:`_verify_psd_shift`), ``"lanczos (unverified)"``
    (a Lanczos Ritz value minus its residual norm: a lower bound only if Lanczos
    found the leftmost eigenvalue, which it may miss) or ``"eigh (unverified)"``
    (dense ``eigh`` for n > ``_DENSE_EIG_MAX``: interval certificates and lifts up
    to ``_LIFT_MAX_N``, verified like Lanczos values before they are reported).
    Only the first two make ``bound`` a certified lower bound (:attr:`verified`).
    """

    bound: float | None
    lambda_min: float | None
    method: str
    note: str = ""
    eig: _Eig | None = None
    check: str = CHECK_LANCZOS
    check_note: str = ""
    y: np.ndarray | None = field(default=None, repr=False)
    nu: float = 0.0

    @property
    def verified(self) -> bool:
        """Whether ``bound`` is a certified lower bound (λ_min dense or verified)."""
        return self.bound is not None and self.check in (CHECK_DENSE, CHECK_CHOLESKY)

    def describe(self) -> str:
        if self.bound is None:
            return f"no certificate: {self.note}"
        head = (f"{self.method}: lambda_min(S) >= {self.lambda_min:.3g}"
                + (f"; {self.note}" if self.note else ""))
        if self.check == CHECK_DENSE:
            how = "lambda_min by dense eigh (exact up to rounding)"
        elif self.check == CHECK_CHOLESKY:
            how = "lambda_min verified by a Cholesky factorisation at a shift (rounding included)"
        elif self.check == CHECK_EIGH:
            how = "lambda_min by dense eigh, UNVERIFIED (no Cholesky check at a shift)"
        else:
            res = f" {self.eig.residual:.2g}" if self.eig is not None else ""
            how = (f"lambda_min by Lanczos minus its residual norm{res}, UNVERIFIED "
                   "(Lanczos may miss the leftmost eigenvalue)")
        return head + "; " + how + (f" [{self.check_note}]" if self.check_note else "")


def _trace_bound_equality(gp: GramProblem) -> float:
    """:math:`T = \\min_r \\sum_i \\mathrm{sp}(r,i)^2 \\ge \\mathrm{tr}\\,G` for feasible G."""
    n = gp.n
    i, j = gp.edges.T
    A = sp.csr_matrix((np.sqrt(gp.target), (i, j)), shape=(n, n))
    deg = np.bincount(gp.edges.ravel(), minlength=n)
    roots = np.unique(np.r_[np.argsort(deg)[-3:], 0])
    dist = dijkstra(A, directed=False, indices=roots)
    return float(np.min((dist**2).sum(axis=1)))


def _objective_curvature(space: _Space) -> float:
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
    return -float(np.max(C.diag))


def _eig_check(space: _Space, eig: _Eig) -> str:
    """The :class:`Certificate` ``check`` of an eigenvalue before any verification."""
    if eig.method != "dense":
        return CHECK_LANCZOS
    return CHECK_DENSE if space.Q is not None or space.dim <= _DENSE_EIG_MAX else CHECK_EIGH


def _dense_interval_certificate(space: _Space, pen: _Penalty) -> bool:
    """Whether :func:`certify` takes :math:`\\lambda_{\\min}` from :func:`_dense_bottom`
    instead of Lanczos: ``"interval"`` in the full space with ``_DENSE_EIG_MAX`` < n <=
    ``_LIFT_MAX_N``, where a certificate that misses ``tol`` is followed by a lift that
    needs the same eigenpairs. Lanczos is slow exactly there, near the optimum: it must
    resolve :math:`\\lambda_{\\min}` below the cluster of near-zero eigenvalues on the
    factor's range; measured on USPS DVU n = 2,500 at the (only) certificate attempts of
    seeds 1 and 2, standalone: 21.1 + 3.8 s and 1.4 + 8.1 s for the two candidates (the
    undeflated runs, see :func:`certify`), against 0.7 s per dense eigendecomposition
    on 2 threads, whose eigenpairs the lift then reuses."""
    return pen.mode == "interval" and space.Q is None \
        and _DENSE_EIG_MAX < space.dim <= _LIFT_MAX_N


def certify(space: _Space, pen: _Penalty, y, nu, *, factor=None, eig_tol=1e-6,
            cache=None, verify: bool = False, target: float | None = None) -> Certificate:
    """Lower bound on the optimum (of the problem on ``space``) from multipliers ``(y, nu)``.

    ``factor`` (the current :math:`V`) is only used to deflate the Lanczos
    iteration (see :func:`_lambda_min`); the bound does not depend on it.
    ``"interval"`` in the full space with ``_DENSE_EIG_MAX`` < n <= ``_LIFT_MAX_N``
    takes the bottom eigenpairs densely instead (:func:`_dense_interval_certificate`)
    and keeps them in ``cache["eigenpairs"]`` for :func:`_lifted_certificate`.
    ``verify``: where :math:`\\lambda_{\\min}` is unverified (n > ``_DENSE_EIG_MAX``),
    verify it (and the coercive point's) by :func:`_verified_lambda_min`; costly
    (dense n x n Cholesky), meant for the final certificate only. ``target``: the
    bound wanted; where the deflated Lanczos bound (see :func:`_lambda_min`) falls short
    of it, Lanczos is run again on all of :math:`\\mathbf 1^\\perp` at ``eig_tol / 100``
    and the better certificate kept. The split bound is loose when :math:`S` does not
    yet nearly annihilate the factor's range; measured on USPS MVU (n = 2,500, two outer
    iterations before certification): split -1.5e-2, undeflated -7.90e-4, dense
    -7.88e-4. The undeflated run is slower (0.6-2 s there against 0.1 s: it must resolve
    lambda_min just below the cluster of the factor's near-zero eigenvalues), hence only
    on demand.
    """
    cache = {} if cache is None else cache
    phi = pen.conjugate(y)
    if not np.isfinite(phi):
        return Certificate(None, None, "none", "multipliers outside the domain of phi*",
                           y=y, nu=nu)
    if _dense_interval_certificate(space, pen):
        lam, X = _dense_bottom(space, y, nu, min(_LIFT_N_EIG, space.dim - 1))
        # the last two candidates' eigenpairs (8 n x 200 bytes each) for the lift
        kept = cache.setdefault("eigenpairs", [])
        kept[:] = kept[-1:] + [(np.array(y, dtype=float), nu, lam, X)]
        eig = _Eig(float(lam[0]), X[:, 0], float(lam[0]), 0.0, "dense")
        return _certificate_from_eig(space, pen, y, nu, eig, cache, eig_tol, verify)
    try:
        eig = _lambda_min(space, y, nu, tol=eig_tol, deflate=factor,
                          start=cache.get("lanczos_start"))
    except spla.ArpackNoConvergence:
        return Certificate(None, None, "none", "Lanczos did not converge", y=y, nu=nu)
    lanczos = eig.method == "lanczos"
    if lanczos:
        cache["lanczos_start"] = eig.vector
    cert = _certificate_from_eig(space, pen, y, nu, eig, cache, eig_tol, verify)
    if not (lanczos and factor is not None and target is not None and eig.value < 0
            and (cert.bound is None or cert.bound < target)):
        return cert
    try:
        # ncv 30: the same n = 2,500 state took 0.6 s against 2.2 s with 60, and the
        # whole solve 93 s against 148 s (long restarts are wasted on the cluster at 0)
        eig_f = _lambda_min(space, y, nu, tol=0.01 * eig_tol, start=eig.vector, ncv=30)
    except spla.ArpackNoConvergence:
        return cert
    if eig_f.value <= eig.value:
        return cert
    cache["lanczos_start"] = eig_f.vector
    return _certificate_from_eig(space, pen, y, nu, eig_f, cache, eig_tol, verify)


def verify_certificate(space: _Space, pen: _Penalty, cert: Certificate, *, eig_tol=1e-6,
                       cache=None) -> Certificate:
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
    cache = {} if cache is None else cache
    out = _certificate_from_eig(space, pen, cert.y, cert.nu, cert.eig, cache, eig_tol, True)
    for prefix in ("refined multipliers; ", _LIFTED):
        if cert.note.startswith(prefix):
            out.note = prefix + out.note
    return out


def _certificate_from_eig(space, pen, y, nu, eig: _Eig, cache, eig_tol, verify) -> Certificate:
    phi = pen.conjugate(y)
    check, check_note = _eig_check(space, eig), ""
    mu = eig.value
    if verify and check in _UNVERIFIED:
        with threadpool_limits(limits=cache.get("verify_threads")):
            mu_v, why, checks = _verified_lambda_min(space, y, nu, mu)
        cache.setdefault("verify_checks", []).extend(checks)
        if mu_v is not None:
            check = CHECK_CHOLESKY
            source = "Lanczos" if eig.method == "lanczos" else "eigh"
            check_note = (f"{source} estimate {eig.value:.6g}, verified {mu_v:.6g} "
                          f"(rounding allowance {checks[-1].delta:.2g}, "
                          f"{len(checks)} factorisation(s), "
                          f"{sum(c.seconds for c in checks):.3g} s)")
            mu = mu_v
        else:
            check_note = why
    if mu >= 0:
        return Certificate(-phi, mu, "dual-feasible", eig=eig, check=check,
                           check_note=check_note, y=y, nu=nu)
    if pen.mode == "equality":
        if "curvature" not in cache:
            cache["curvature"] = _objective_curvature(space)
        c = cache["curvature"]
        best = None
        if c > 0:
            # C <= -c I: S(s y, s nu) >= (s (mu - eps) + (s - 1) c) I = 0 at s = c / (c + mu - eps)
            eps = 8.0 * _U * (abs(mu) + c + _gershgorin(space, y, nu))
            if c + mu - eps > 0:
                scale = c / (c + mu - eps)
                best = Certificate(-pen.conjugate(scale * y), mu, "scaled",
                                   f"(y, nu) scaled by {scale:.8g} (C <= -{c:.6g} I)", eig=eig,
                                   check=check, check_note=check_note, y=y, nu=nu)
        if space.Q is None:
            if "trace_bound" not in cache:
                cache["trace_bound"] = _trace_bound_equality(space.gp)
            T = cache["trace_bound"]
            if best is None or -phi + mu * T > best.bound:
                best = Certificate(-phi + mu * T, mu, "trace-bound",
                                   f"tr G <= {T:.6g} (shortest paths)", eig=eig, check=check,
                                   check_note=check_note, y=y, nu=nu)
        if best is None:
            return Certificate(None, mu, "none", "dual slack not PSD on the reduced basis "
                               "and the objective not negative definite there", eig=eig,
                               check=check, y=y, nu=nu)
        return best
    y0 = pen.coercive_point()
    if "mu0" not in cache:
        try:
            cache["mu0"] = _lambda_min(space, y0, 0.0, tol=eig_tol).value
        except spla.ArpackNoConvergence:
            cache["mu0"] = -np.inf
    mu0 = cache["mu0"]
    if check == CHECK_CHOLESKY and np.isfinite(mu0) and mu0 > 0:
        # the combination's lambda_min rests on mu0 as well: verify it too (once)
        if "mu0_verified" not in cache:
            with threadpool_limits(limits=cache.get("verify_threads")):
                mu0_v, why0, checks0 = _verified_lambda_min(space, y0, 0.0, mu0)
            cache.setdefault("verify_checks", []).extend(checks0)
            cache["mu0_verified"] = (mu0_v, why0)
        mu0_v, why0 = cache["mu0_verified"]
        if mu0_v is None:
            check = _eig_check(space, eig)
            check_note += f"; lambda_min at y0 unverified: {why0}"
        else:
            mu0 = mu0_v
            check_note += f"; lambda_min at y0 verified {mu0_v:.6g}"
    if mu0 <= 0:
        return Certificate(None, mu, "none",
                           f"no coercive dual point (lambda_min at y0 = {mu0:.3g})", eig=eig,
                           check=check, y=y, nu=nu)
    # (1 - theta) mu + theta mu0 = eps > 0: a margin of a few roundings (|y| g u) so the
    # rounded combination of the multipliers keeps lambda_min >= 0
    eps = 8.0 * _U * (abs(mu) + mu0 + _gershgorin(space, y, nu))
    theta = _shift_theta(mu, mu0, eps)
    bound = -pen.conjugate((1 - theta) * y + theta * y0)
    note = f"theta={theta:.3g} towards y0 (lambda_min there {mu0:.3g})"
    if check == CHECK_DENSE:
        # nearer anchors y_s = y + s (y0 - y): lambda_min(S(y_s)) often exceeds the
        # concave interpolation s mu0 (the Laplacian L(y0 - y) >= 0 lifts the near-null
        # directions of S(y)), so the shift costs less; exact eigenvalues only
        for s_ in _SHIFT_ANCHORS:
            ys, nus = y + s_ * (y0 - y), (1 - s_) * nu
            mus = _lambda_min(space, ys, nus, tol=eig_tol).value
            if mus <= 0:
                continue
            th = _shift_theta(mu, mus, eps)
            b = -pen.conjugate((1 - th) * y + th * ys)
            if b > bound:
                bound = b
                note = (f"theta={th:.3g} towards y + {s_:g} (y0 - y) "
                        f"(lambda_min there {mus:.3g})")
    return Certificate(bound, mu, "shifted", note, eig=eig, check=check,
                       check_note=check_note, y=y, nu=nu)


def _shift_theta(mu: float, mu_anchor: float, eps: float = 0.0) -> float:
    r""":math:`\theta = \min(1, (\epsilon - \mu)/(\mu_a - \mu))`: the step from multipliers
    with :math:`\lambda_{\min}(S) = \mu < 0` towards an anchor with :math:`\lambda_{\min} =
    \mu_a > 0` after which, by concavity of :math:`\lambda_{\min}`, it is at least
    :math:`\epsilon` (the shifted certificate's rounding margin)."""
    return min(1.0, (eps - mu) / (mu_anchor - mu))


#: anchors s of the shifted certificate besides y0 itself (dense eigenvalues only)
_SHIFT_ANCHORS = (1e-2, 1e-4, 1e-6)


#: an edge with :math:`|D_e - \bar D_e| \le` this times :math:`\bar D_e` is on the kink of the
#: ``"interval"`` penalty (:func:`refine_multipliers`, :func:`restore_feasibility`)
_KINK_TOL = 1e-4


def refine_multipliers(space: _Space, pen: _Penalty, W: np.ndarray, y: np.ndarray, nu: float,
                       *, kink_tol: float = _KINK_TOL) -> tuple[np.ndarray, float]:
    """Multipliers that best satisfy complementary slackness :math:`S(y,\\nu)V = 0`, V fixed.

    The augmented-Lagrangian multipliers carry the error of every inexact
    subproblem, and the certificate loses :math:`|\\lambda_{\\min}(S)|` times a
    trace bound. Given the factor, the dual point that fits it best solves
    the bounded linear least-squares problem

    .. math::

        \\min_{y,\\ \\nu\\ge 0}\\ \\|P(\\tilde C V + \\textstyle\\sum_e y_e a_e a_e^TV
            + \\nu HV)\\|_F \\quad\\text{s.t.}\\quad y\\in\\mathrm{dom}\\,\\varphi^*,

    with, for ``"interval"``, :math:`y_e = w_e\\,\\mathrm{sign}(D_e-\\bar D_e)` fixed on
    edges off the kink (:math:`|D_e - \\bar D_e| > ` ``kink_tol`` :math:`\\bar D_e`,
    where :math:`\\varphi` is differentiable) and :math:`|y_e|\\le w_e` on the
    others, which makes the duality gap :math:`\\sum_e (w_e|D_e-\\bar D_e| - y_e(D_e-\\bar D_e))`
    vanish off the kink. ``"equality"`` leaves every :math:`y_e` free. Solved by
    :func:`scipy.optimize.lsq_linear` (LSMR, matrix-free). The result is only a
    candidate: :func:`certify` checks it like any other dual point. Returns
    ``(y, nu)``; ``"quadratic"`` (no linear conjugate) returns its input. A ``kink_tol``
    that is not a finite number >= 0 raises :class:`~sdpembed.exceptions.InputError`.
    """
    if pen.mode == "quadratic":
        return y, nu
    _require_kink_tol("refine_multipliers", kink_tol)
    Z = space.diffs(W)
    m, k = Z.shape
    res = np.einsum("ij,ij->i", Z, Z) - pen.t
    if pen.mode == "interval":
        free = np.abs(res) <= kink_tol * pen.t
        y_fix = np.where(free, 0.0, pen.w * np.sign(res))
        lo, hi = -pen.w[free], pen.w[free]
    else:
        free = np.ones(m, dtype=bool)
        y_fix = np.zeros(m)
        lo, hi = np.full(m, -np.inf), np.full(m, np.inf)
    fe = np.flatnonzero(free)
    HW = space.project(space.apply_H(W)) if space.H is not None else None
    b = -space.project(space.apply_C(W) + space.ET @ (y_fix[:, None] * Z))
    n_var = fe.size + (HW is not None)

    def matvec(x):
        x = np.ravel(x)
        ye = np.zeros(m)
        ye[fe] = x[: fe.size]
        out = space.ET @ (ye[:, None] * Z)
        if HW is not None:
            out = out + x[-1] * HW
        return np.ravel(out)

    def rmatvec(r):
        R = np.reshape(r, W.shape)
        out = np.einsum("ij,ij->i", Z[fe], (space.E @ R)[fe])
        if HW is not None:
            out = np.r_[out, np.sum(HW * R)]
        return out

    op = spla.LinearOperator((W.size, n_var), matvec=matvec, rmatvec=rmatvec, dtype=float)
    if HW is not None:
        lo, hi = np.r_[lo, 0.0], np.r_[hi, np.inf]
    # solve for the correction from the current multipliers (clipped into the box)
    x0 = np.clip(np.r_[y[fe], nu] if HW is not None else y[fe], lo, hi)
    try:
        sol = sopt.lsq_linear(op, np.ravel(b) - matvec(x0), bounds=(lo - x0, hi - x0),
                              method="trf", tol=1e-12, max_iter=200)
    except (ValueError, np.linalg.LinAlgError):  # pragma: no cover - numerical failure
        return y, nu
    x = np.clip(x0 + sol.x, lo, hi)
    y_new = y_fix.copy()
    y_new[fe] = x[: fe.size]
    return y_new, (float(x[-1]) if HW is not None else nu)


#: largest n for which :func:`lift_multipliers` runs (dense bottom eigenpairs: 8n² bytes,
#: about 4n³/3 flops per round, :func:`_dense_bottom`). Measured on all 9,298 USPS digits
#: (DVU, 2 threads): 39 s per round, peak memory 1.6 GB; there Lanczos had put
#: lambda_min at -4.6e-9 where the dense value was -2.3e-8, and the Cholesky check of the
#: final certificate could only verify -2.7e-7 (certified gap 8.5e-3 instead of 1e-5)
_LIFT_MAX_N = 10_000

#: bottom eigenpairs per lift round (at most; :func:`lift_multipliers`'s ``n_eig``)
_LIFT_N_EIG = 200

#: the lift's eigenvalue target relative to a Gershgorin bound on ||S||. The bottom block
#: holds S's near-zero eigenvalues on the factor's range (S V = 0 at the optimum), and
#: raising them to the target costs bound: measured on a USPS DVU n = 2,500 state with
#: lambda_min(S) = -6e-8 (||S|| bound 0.097), lifted gaps 1.4e-4 with 1e-8, 3.1e-7 with
#: 1e-10, 2.9e-7 with 1e-12, each verified by Cholesky. The lifted point is only a
#: candidate: its certificate is computed and verified like any other.
_LIFT_MARGIN = 1e-10

#: note prefix of a certificate taken at lifted multipliers
_LIFTED = "lifted multipliers; "


def _shifted_bound(pen: _Penalty, y: np.ndarray, mu: float, mu0: float) -> float:
    r"""The shifted bound :math:`-\varphi^*((1-\theta)y + \theta y_0)` from multipliers with
    :math:`\lambda_{\min}(S) = \mu \le 0`, :math:`\theta` of :func:`_shift_theta` without
    :func:`certify`'s rounding margin (``-inf`` without a coercive :math:`\mu_0 > 0`): a
    stopping test, not a certificate."""
    if not mu0 > 0:
        return -np.inf
    theta = _shift_theta(mu, mu0)
    return -pen.conjugate((1 - theta) * y + theta * pen.coercive_point())


def lift_multipliers(space: _Space, pen: _Penalty, y: np.ndarray, nu: float, *,
                     floor: float | None = None, n_eig: int = _LIFT_N_EIG,
                     n_edges: int = 1000, rounds: int = 6, min_block: int | None = None,
                     eigenpairs: tuple[np.ndarray, np.ndarray] | None = None,
                     target: float | None = None, mu0: float | None = None
                     ) -> tuple[np.ndarray, _Eig]:
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
    ``min_block`` and at most ``n_eig``: a small block lets the coupling with the rest
    recreate negative eigenvalues, whose later rounds cost more than lifting them
    together; measured 6 rounds with at least 24 against 4 with at least 80, and on
    two states of 2,500-digit DVU solves at their first certificate attempt, lift
    costs of 1.7e-4 and 7.3e-4 relative with at least 80, 1.4e-4 and 5.8e-4 with at
    least 160 (10 s each), and 1.35e-4 and 5.7e-4 with at least 240 (10 and 14 s);
    the default ``None`` is :math:`\min(160, \max(80, \lfloor n/15\rfloor))`, because
    at n = 500 the smaller block lifted as far in less time, DVU seeds 0-2 solving in
    11.1/8.7/15.4 s against 13.8/9.4/18.6 s, and at n = 1,000 the two were even,
    39/53/68 s against 40/54/62 s), the ``n_edges`` edges with room
    (:math:`y_e < w_e`) that reach the negative eigenvectors best per unit of
    :math:`\bar D_e`, and solves

    .. math::

        \min_\delta\ \bar D^T\delta\quad\text{s.t.}\quad \Lambda - \eta I
        + \textstyle\sum_e \delta_e (X^Ta_e)(X^Ta_e)^T\succeq 0,\quad
        0\le\delta\le w - y

    (:func:`sdpembed.reduced.rank_one_lmi_lp`, :math:`\eta` = ``_LIFT_MARGIN`` times a
    Gershgorin bound on :math:`\|S\|`).
    Coupling with the eigenspace left out can leave new, smaller negative
    eigenvalues; the next round takes those. Stops when :math:`\lambda_{\min}\ge 0`,
    after ``rounds`` rounds, once the bound falls below ``floor`` (a lift that
    cannot pay off), or, given ``target`` and ``mu0`` (:math:`\mu_0 > 0`, the
    :math:`\lambda_{\min}` at the coercive point :math:`y_0 = w`), once the shifted
    bound :math:`-\varphi^*((1-\theta)y + \theta y_0)`,
    :math:`\theta = -\lambda_{\min}/(\mu_0 - \lambda_{\min})`, reaches ``target``:
    the rest of the way to a PSD :math:`S` is not worth its rounds (on all 9,298 USPS
    digits, DVU, 39 s each: :math:`\lambda_{\min}` -2.3e-8, then -1.3e-9 and
    -4.3e-10 after one and two rounds; the certificate is computed afterwards as for
    any other dual point). ``y`` is first clipped into the box :math:`|y_e|\le w_e` (the
    domain of :math:`\varphi^*`; the solve's candidates already lie in it) and the
    caller's array is not modified. ``eigenpairs``: the bottom ``(Λ, X)`` of
    :math:`S(y,\\nu)` on :math:`\\mathbf 1^\\perp` (at least ``n_eig`` of them, or
    n - 1), already computed for this ``y`` (:func:`certify` keeps them), used for the
    first round instead of a new eigendecomposition. Returns the new multipliers and
    the dense smallest eigenpair of their :math:`S` (:class:`_Eig`). The result is only
    a candidate: the certificate treats it like any other dual point (and verifies it for n > 800).

    Measured on 2,500 USPS digits (DVU, the state after 240 s, cheap gap 5.6e-5):
    :math:`S(y)` had 62 negative eigenvalues, the smallest -3.0e-6; four rounds
    (1,000 edges, 10.6 s on one thread) made it PSD at a cost of 5.6e-5 relative in
    the bound (certified gap 1.1e-4), where the shift towards :math:`y_0` gave 3e-2.
    With 300 edges the same lift cost 1.5e-4; with 2,000 no less than with 1,000.

    ``InputError`` (before any eigendecomposition) outside ``"interval"`` in the full
    space, for n above the dense limit, for ``y`` of the wrong shape, for ``target``
    without ``mu0``, and unless
    ``n_eig``, ``n_edges``, ``min_block`` (unless ``None``) are positive integers and
    ``rounds`` >= 0.
    """
    from .reduced import rank_one_lmi_lp

    if pen.mode != "interval" or space.Q is not None:
        raise InputError("lift_multipliers works on distances='interval' in the full space")
    n = space.dim
    if n > _LIFT_MAX_N:
        raise InputError(f"lift_multipliers needs dense eigenpairs: n = {n} > {_LIFT_MAX_N}")
    y = np.asarray(y, dtype=float)
    if y.shape != pen.t.shape:
        raise InputError(f"lift_multipliers needs one multiplier per edge: y of shape "
                         f"{pen.t.shape}, got {y.shape}")
    if min_block is None:
        min_block = min(160, max(80, n // 15))
    for name, value, low in (("n_eig", n_eig, 1), ("n_edges", n_edges, 1),
                             ("rounds", rounds, 0), ("min_block", min_block, 1)):
        _require_int("lift_multipliers", name, value, low)
    if target is not None and mu0 is None:
        raise InputError("lift_multipliers: target needs mu0, lambda_min of S at the "
                         "coercive point y0 = w (a value <= 0 means none: target unused)")
    k_all = min(n_eig, n - 1)
    if eigenpairs is not None and (len(eigenpairs[0]) < k_all
                                   or np.shape(eigenpairs[1]) != (n, len(eigenpairs[0]))
                                   or np.any(np.abs(y) > pen.w)):
        raise InputError(f"lift_multipliers: eigenpairs must hold at least {k_all} "
                         f"eigenpairs (values, n x k vectors) of S at y, and y must lie "
                         "in the box |y| <= w")
    y = np.clip(y, -pen.w, pen.w)
    eta = _LIFT_MARGIN * _gershgorin(space, y, nu)
    for r in range(rounds + 1):
        if r == 0 and eigenpairs is not None:
            lam, X = eigenpairs[0][:k_all], eigenpairs[1][:, :k_all]
        else:
            lam, X = _dense_bottom(space, y, nu, k_all)
        eig = _Eig(float(lam[0]), X[:, 0], float(lam[0]), 0.0, "dense")
        if lam[0] >= 0 or r == rounds or (floor is not None and -pen.conjugate(y) < floor) \
                or (target is not None and _shifted_bound(pen, y, lam[0], mu0) >= target):
            break
        neg = lam < 0
        K = min(k_all, max(int(neg.sum()) + 16, min_block))
        Bm = space.E @ X[:, :K]
        room = pen.w - y
        score = np.where(room > 1e-12 * pen.w, (Bm[:, neg[:K]] ** 2).sum(axis=1) / pen.t, 0.0)
        sel = np.argsort(-score)[:n_edges]
        sel = sel[score[sel] > 0]
        if sel.size == 0:
            break
        res = rank_one_lmi_lp(np.diag(lam[:K] - eta), Bm[sel], pen.t[sel],
                              np.zeros(sel.size), room[sel])
        y[sel] = np.minimum(y[sel] + res.d, pen.w[sel])
        logger.debug("lift round %d: lambda_min %.3g, %d negative, block %d, %d edges, "
                     "cost %.3g, %s after %d iterations", r + 1, lam[0], int(neg.sum()), K,
                     sel.size, res.cost, res.status, res.iterations)
    return y, eig


#: largest relative residual from which :func:`restore_feasibility` is tried
_RESTORE_MAX = 1e-3

#: largest augmented-Lagrangian penalty, relative to the starting one. The penalty is
#: tripled while the residual stalls. Measured on USPS MVU n = 2,500 (seconds to a
#: certified 1e-4, by the largest penalty reached): 27 -> 94 s (the multipliers
#: converge too slowly), 81 -> 70 s, 243 -> 74 s, 2187 (the earlier cap 1e3) -> 96 s
#: (Newton-CG cannot solve the stiffer subproblems accurately: lambda_min(S) stalls
#: at -9e-5). With feasibility restoration before certifying, the ALM no longer has to
#: drive the residual down alone.
_SIGMA_MAX = 81.0

#: the same cap for ``distances="interval"`` (DVU). Measured on USPS DVU n = 2,500
#: (certified gap after 240 s, standalone runs; seeds 0 and 1): 27 -> 1.1e-4 and 7.3e-4
#: (1.5e-4 for seed 0 in an earlier run), 81 -> 1.7e-4 and 2.1e-3; 9 never reached a
#: certificate attempt (2.9e-2). At n = 500 (seeds 0-4) the penalty stays within 27 times
#: its start, so those solves are unchanged.
_SIGMA_MAX_INTERVAL = 27.0

#: the kink envelope's first penalty relative to the equality problem's 10/mean(D̄).
#: The DVU objective is small (about -1 on USPS, against a trace near 700), so a
#: smaller penalty leaves it more weight in the subproblems. Measured on USPS DVU
#: n = 2,500, seeds 0-3, two solves side by side: with 0.1 the primal was within 1e-4
#: of its final value at 42-52 s (67-80 s with 1), Newton-CG started at 11-12 s
#: (35-58 s) and the refined multipliers had lambda_min(S) of -7e-9 to -8e-8 (-2e-6 to
#: -4e-6), which the lift turns into certified gaps of 4e-7 to 3e-6 (with
#: ``_LIFT_MARGIN``).
_SIGMA_KINK = 0.1


def restore_feasibility(space: _Space, pen: _Penalty, W: np.ndarray, *, tol: float,
                        max_steps: int = 5, kink_tol: float = _KINK_TOL
                        ) -> tuple[np.ndarray, float]:
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
    the residual. Returns the best factor found and its relative residual.

    For ``"interval"`` every factor is feasible, but the penalty
    :math:`\lambda\sum_e|D_e-\bar D_e|/\bar D_e` is not differentiable at
    :math:`D_e = \bar D_e`, where the optimum keeps most edges; the augmented
    Lagrangian leaves them a little off it, and a few edges at 1e-5 relative cost as
    much as the gap wanted. So the edges on the kink
    (:math:`|D_e-\bar D_e|\le` ``kink_tol`` :math:`\bar D_e`, the set of
    :func:`refine_multipliers`) are moved onto it, the others left free; the
    residual is taken over those edges. Measured on USPS DVU, n = 2,500 (the best
    factors of two 240 s solves): all 6,367 edges were on the kink (median
    :math:`|D_e-\bar D_e|/\bar D_e` 3e-10, 20 above 1e-6), the objective fell by
    1.1e-4 and 9.0e-5 relative, and refinement plus lift then certified 3.6e-5 and
    1.3e-5 instead of 1.4e-4 and 1.0e-4.

    ``InputError`` for ``"quadratic"`` (no equalities, no kink), a factor of the
    wrong shape, or a ``kink_tol`` that is not a finite number >= 0.
    """
    if pen.mode not in ("equality", "interval"):
        raise InputError(f"restore_feasibility moves a factor onto distances='equality' "
                         f"constraints or the kink of distances='interval'; got "
                         f"distances={pen.mode!r}, whose penalty is smooth")
    _require_kink_tol("restore_feasibility", kink_tol)
    W = np.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[0] != space.dim:
        raise InputError(f"restore_feasibility needs a factor of shape ({space.dim}, k); "
                         f"got {W.shape}")
    E, ET, t = space.E, space.ET, pen.t
    if pen.mode == "interval":
        Z = space.diffs(W)
        on = np.flatnonzero(np.abs(np.einsum("ij,ij->i", Z, Z) - t) <= kink_tol * t)
        if on.size == 0:
            return W, 0.0
        E, ET, t = E[on], ET[:, on], t[on]     # the edges on the kink, sliced once
    t_norm = max(float(np.linalg.norm(t)), 1e-300)

    def resid(V):
        Z = E @ V
        return Z, np.einsum("ij,ij->i", Z, Z) - t

    def jacobian(Z):
        # J u = 2 <E_e W, E_e U>_e and J^T lam = 2 E^T diag(lam) E W, at E W = Z
        return spla.LinearOperator(
            (Z.shape[0], W.size), dtype=float,
            matvec=lambda u: 2.0 * np.einsum("ij,ij->i", Z, E @ u.reshape(W.shape)),
            rmatvec=lambda lam: np.ravel(2.0 * (ET @ (np.ravel(lam)[:, None] * Z))))

    Z, c = resid(W)
    best = (W, float(np.linalg.norm(c)) / t_norm)
    for _ in range(max_steps):
        if best[1] <= tol:
            break
        step = spla.lsmr(jacobian(Z), -c, atol=1e-6, btol=1e-6, maxiter=2000)[0]
        W_new = W + step.reshape(W.shape)
        Z_new, c_new = resid(W_new)
        r_new = float(np.linalg.norm(c_new)) / t_norm
        if r_new >= best[1]:
            break
        W, Z, c = W_new, Z_new, c_new
        best = (W, r_new)
    return best


# ----------------------------------------------------------------------- result
@dataclass
class LowRankResult:
    """Outcome of :func:`lowrank_solve`."""

    factor: np.ndarray                      # (n, k) point coordinates, G = F F^T
    objective: float
    bound: float | None
    certified_gap: float | None
    infeasibility: float
    y: np.ndarray
    nu: float
    status: str
    iterations: int
    seconds: float
    history: list[dict] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


def _rel_gap(p, lb):
    """:math:`|p - \\ell| / \\max(|p|, |\\ell|)` (``p`` may fall below a valid bound only through
    the infeasibility of an equality-constrained factor, reported separately); ``inf`` for a
    non-finite bound (multipliers outside the domain of :math:`\\varphi^*`)."""
    if lb is None or p is None:
        return None
    if not np.isfinite(lb):
        return np.inf
    return abs(p - lb) / max(abs(p), abs(lb), 1e-300)


# ----------------------------------------------------------------------- the solver
class _ALM:
    """Augmented-Lagrangian Burer–Monteiro iterations on a :class:`_Space`."""

    def __init__(self, space: _Space, pen: _Penalty, opts: LowRankOptions):
        self.space, self.pen, self.opts = space, pen, opts
        self.nfev = 0
        self.deadline = np.inf

    def objective_parts(self, W):
        sp_ = self.space
        V = W
        CV = sp_.apply_C(V)
        quad = float(np.sum(V * CV))
        Z = sp_.diffs(V)
        D = np.einsum("ij,ij->i", Z, Z)
        h = float(np.sum(V * sp_.apply_H(V))) if sp_.H is not None else 0.0
        return quad, D, h

    def true_objective(self, W):
        quad, D, _ = self.objective_parts(W)
        return quad + self.pen.objective(D)

    def subproblem(self, y, nu, sigma, sigma_h):
        sp_, pen = self.space, self.pen
        shape = None

        def fun(x):
            self.nfev += 1
            W = sp_.project(x.reshape(shape))
            CW = sp_.apply_C(W)
            Z = sp_.diffs(W)
            D = np.einsum("ij,ij->i", Z, Z)
            val, g = pen.envelope(D, y, sigma)
            val += float(np.sum(W * CW))
            grad = CW + sp_.ET @ (g[:, None] * Z)
            if sp_.H is not None:
                HW = sp_.apply_H(W)
                h = float(np.sum(W * HW))
                gs = max(0.0, nu + sigma_h * h)
                val += (gs * gs - nu * nu) / (2 * sigma_h)
                grad = grad + gs * HW
            grad = sp_.project(2.0 * grad)
            return val, grad.ravel()

        def hess_at(x):
            """Hessian-vector product at ``x``; the point's quantities are computed once."""
            W = sp_.project(x.reshape(shape))
            Z = sp_.diffs(W)
            D = np.einsum("ij,ij->i", Z, Z)
            _, g = pen.envelope(D, y, sigma)
            d2 = pen.second_derivative(D, y, sigma)
            if sp_.H is not None:
                HW = sp_.apply_H(W)
                gs = max(0.0, nu + sigma_h * float(np.sum(W * HW)))

            # the distance term's products, the bulk of the work of a Newton-CG step, run
            # in single precision: they are memory-bound (USPS MVU n = 2,500, rank 28:
            # 0.91 -> 0.57 ms per product, relative error 1e-7, far below CG's tolerance)
            E32, ET32 = sp_.E_single
            Z32 = Z.astype(np.float32)
            d2x2 = (2.0 * d2).astype(np.float32)
            gcol = g.astype(np.float32)[:, None]

            def hv(u):
                # in-place, one temporary per product
                U = u.reshape(shape)
                ZU = E32 @ U.astype(np.float32)
                dg = np.einsum("ij,ij->i", Z32, ZU)
                dg *= d2x2
                ZU *= gcol
                ZU += dg[:, None] * Z32
                out = np.asarray(ET32 @ ZU, dtype=float)
                out += sp_.apply_C(U)
                if sp_.H is not None:
                    out += gs * sp_.apply_H(U)
                    if gs > 0:
                        out += sigma_h * 2.0 * float(np.sum(HW * U)) * HW
                out = sp_.project(out)
                out *= 2.0
                return out.ravel()
            return hv

        def run(W0, gtol, maxiter, precond):
            nonlocal shape
            shape = W0.shape
            deadline = self.deadline

            def pc(G):
                return sp_.project(precond(sp_.project(G.reshape(shape)))).ravel()
            if precond == "newton":
                res = _newton_cg(fun, hess_at, W0.ravel(), gtol=gtol, maxiter=maxiter,
                                 deadline=deadline)
                if res.gnorm > gtol and res.nit < maxiter:  # no descent found: L-BFGS
                    r = _lbfgs(fun, res.x, gtol=gtol, maxiter=20 * maxiter, deadline=deadline)
                    res = _LBFGSResult(r.x, res.nit + r.nit, r.gnorm)
            elif precond is None:
                res = _lbfgs(fun, W0.ravel(), gtol=gtol, maxiter=maxiter, maxfun=2 * maxiter,
                             deadline=deadline)
            else:
                res = _lbfgs(fun, W0.ravel(), gtol=gtol, maxiter=maxiter, precond=pc,
                             memory=10, stop_norm=2, ftol=0.0, deadline=deadline)
            return sp_.project(res.x.reshape(shape)), res
        return run

    def multipliers(self, W, y, nu, sigma, sigma_h):
        quad, D, h = self.objective_parts(W)
        _, g = self.pen.envelope(D, y, sigma)
        gs = max(0.0, nu + sigma_h * h) if self.space.H is not None else 0.0
        return g, gs, quad, D, h


@dataclass
class _LBFGSResult:
    x: np.ndarray
    nit: int
    gnorm: float


def _armijo(fun, x, f, d, slope, *, c1=1e-4, max_halvings=40):
    r"""First step ``1, 1/2, 1/4, ...`` along ``d`` with sufficient decrease
    :math:`f(x+td)\le f(x) + c_1 t\,g^Td`; ``(x_new, f_new, g_new)`` or ``None``."""
    step = 1.0
    for _ in range(max_halvings):
        xn = x + step * d
        fn, gn = fun(xn)
        if fn <= f + c1 * step * slope:
            return xn, fn, gn
        step *= 0.5
    return None


def _newton_cg(fun, hess_at, x0: np.ndarray, *, gtol: float, maxiter: int,
               max_cg: int = 250, deadline: float = np.inf) -> _LBFGSResult:
    r"""Truncated (inexact) Newton–CG with Armijo backtracking.

    Each iteration solves :math:`H d = -g` by conjugate gradients to the
    relative residual :math:`\eta_k = \min(1/2, \sqrt{\|g_k\|/\|g_0\|})` (the
    forcing sequence of Eisenstat & Walker, which gives superlinear local
    convergence), stopping early on non-positive curvature (the factorised
    problem is non-convex; the CG iterate so far, or :math:`-g` at the first
    CG step, is still a descent direction). ``hess_at(x)`` returns the
    Hessian-vector product at ``x`` (generalised Hessian for the Huber
    envelope). Memory is a few vectors, unlike Krylov trust-region solvers
    that keep their whole basis.
    """
    x = x0.copy()
    f, g = fun(x)
    gn = g0 = float(np.linalg.norm(g))
    it = 0
    while it < maxiter and gn > gtol and time.perf_counter() < deadline:
        it += 1
        hv = hess_at(x)
        eta = min(0.5, np.sqrt(gn / max(g0, 1e-300)))
        d = np.zeros_like(x)
        r = -g
        p = r.copy()
        rr = gn * gn
        for j in range(max_cg):
            Hp = hv(p)
            pHp = float(p @ Hp)
            if pHp <= 1e-14 * float(p @ p) * max(abs(f), 1.0):
                if j == 0:
                    d = -g
                break
            alpha = rr / pHp
            d += alpha * p
            r -= alpha * Hp
            rr_new = float(r @ r)
            if np.sqrt(rr_new) <= eta * gn:
                break
            p = r + (rr_new / rr) * p
            rr = rr_new
        slope = float(g @ d)
        if slope >= 0:
            d, slope = -g, -gn * gn
        found = _armijo(fun, x, f, d, slope)
        if found is None:
            break
        x, f, g = found
        gn = float(np.linalg.norm(g))
    return _LBFGSResult(x, it, gn)


def _wolfe(fun, x, f, d, slope, step=1.0, *, c1=1e-4, c2=0.9, max_evals=40):
    r"""A step :math:`t` along ``d`` with the weak Wolfe conditions, by bracketing.

    :math:`f(x+td) \le f + c_1 t\,g^Td` (sufficient decrease) and
    :math:`g(x+td)^Td \ge c_2\,g^Td` (curvature, which makes :math:`s^Ty > 0`
    for the quasi-Newton update): halve towards the last acceptable step when
    the decrease fails, double while the curvature fails and no upper end is
    known, bisect otherwise (Lewis & Overton 2013). ``(x_new, f_new, g_new)``;
    ``None`` if no step gave sufficient decrease; the last point with
    sufficient decrease if the curvature condition was never met.
    """
    lo, hi = 0.0, np.inf
    best = None
    for _ in range(max_evals):
        xn = x + step * d
        fn, gn = fun(xn)
        if not fn <= f + c1 * step * slope:
            hi = step
        elif float(gn @ d) < c2 * slope:
            lo, best = step, (xn, fn, gn)
        else:
            return xn, fn, gn
        step = 0.5 * (lo + hi) if np.isfinite(hi) else 2.0 * lo
    return best


_saxpy = sla.blas.saxpy  # y <- a x + y in place (float32): the two-loop recursion


def _two_loop(g, S, Y, rho, alpha, head: int, used: int, gamma: float, M) -> np.ndarray:
    r"""The L-BFGS direction :math:`-H_k g` by the two-loop recursion over the ``used``
    newest pairs of the ring buffers ``S``, ``Y`` (``float32``; ``head`` is the next slot),
    with :math:`H_k^0 = \gamma M^{-1}`. The recursion runs in single precision (the
    preconditioner and the result in double): it is memory-bound, and halving the bytes
    read halves its time (0.92 -> 0.50 ms per iteration at N = 35,000, ``memory=20``, one
    thread), for a direction within about 2e-7 of the double-precision one."""
    memory = S.shape[0]
    q = g.astype(np.float32)
    order = [(head - 1 - i) % memory for i in range(used)]  # newest first
    for i in order:
        alpha[i] = rho[i] * float(S[i] @ q)
        q = _saxpy(Y[i], q, a=-alpha[i])
    d = (gamma * np.asarray(M(np.asarray(q, dtype=float)), dtype=float)).astype(np.float32)
    for i in reversed(order):
        b = rho[i] * float(Y[i] @ d)
        d = _saxpy(S[i], d, a=alpha[i] - b)
    return -np.asarray(d, dtype=float)


def _lbfgs(fun, x0: np.ndarray, *, gtol: float, maxiter: int, precond=None,
           memory: int = 20, ftol: float = 1e-15, maxfun: int | None = None,
           stop_norm: float = np.inf, deadline: float = np.inf) -> _LBFGSResult:
    r"""Limited-memory BFGS with a weak-Wolfe line search (:func:`_wolfe`), on flat arrays.

    The search direction is :math:`-H_k g_k` by the two-loop recursion over the
    last ``memory`` pairs :math:`(s_i, y_i)`, with initial inverse Hessian
    :math:`\gamma_k M^{-1}`, :math:`\gamma_k = s^Ty / y^TM^{-1}y` (``precond(g)``
    applies :math:`M^{-1}`; ``None`` is :math:`M = I`). Pairs with
    :math:`s^Ty \le 0` are skipped, which keeps :math:`H_k \succ 0`. Without a
    preconditioner the first trial step is :math:`1/\|g_0\|_2` long (as in L-BFGS-B);
    every other trial step starts at 1. Stops when
    :math:`\|g\|_{\text{stop\_norm}} \le` ``gtol``, when the relative decrease
    :math:`(f_k - f_{k+1})/\max(|f_k|, |f_{k+1}|, 1) \le` ``ftol`` (the tests of
    L-BFGS-B), after ``maxiter`` iterations or ``maxfun`` evaluations (default
    ``20 * maxiter + 100``), or at the ``deadline`` (a :func:`time.perf_counter` value).

    The pairs live in two ``(memory, N)`` single-precision arrays (:func:`_two_loop`)
    and every vector operation is one BLAS call (``sdot``, in-place ``saxpy``). With
    double-precision pairs (``ddot``, ``daxpy``) it measured, at N = 95,000 and
    ``memory=20`` on a diagonal quadratic (single thread), 4.1 ms per iteration
    against 10.8 ms for :func:`scipy.optimize.minimize` with L-BFGS-B, whose
    bound handling the unconstrained subproblems never use. On USPS MVU
    n = 2,500 the L-BFGS phase (outer iterations 1-5) fell from 25 s to 10 s.
    ``memory=10`` halves the two-loop work but did not pay on USPS DVU: n = 500,
    seeds 0-2, 16.6/20.6/23.0 s against 14.2/28.7/27.3 s; n = 2,500, seeds 0-1,
    certified gap after 240 s 1.2e-3/7.6e-4 against 1.1e-4/7.3e-4.
    """
    x = np.array(x0, dtype=float)
    N = x.size
    nfev = [0]

    def evaluate(z):
        nfev[0] += 1
        return fun(z)

    f, g = evaluate(x)
    S = np.empty((memory, N), dtype=np.float32)
    Y = np.empty((memory, N), dtype=np.float32)
    rho = np.empty(memory)
    used, head = 0, 0          # pairs stored; slot of the next pair
    gamma = 1.0
    maxfun = maxfun if maxfun is not None else 20 * maxiter + 100
    it = 0
    alpha = np.empty(memory)
    M = precond if precond is not None else (lambda v: v)
    while (it < maxiter and np.linalg.norm(g, stop_norm) > gtol and nfev[0] < maxfun
           and time.perf_counter() < deadline):
        it += 1
        d = _two_loop(g, S, Y, rho, alpha, head, used, gamma, M) if used \
            else -np.array(M(g), dtype=float)
        slope = float(g @ d)
        if slope >= 0:  # not a descent direction: restart from the (preconditioned) gradient
            used = 0
            d = -M(g)
            slope = float(g @ d)
            if slope >= 0:
                break
        step = 1.0 if it > 1 or precond is not None else 1.0 / max(float(np.linalg.norm(d)),
                                                                     1e-300)
        found = _wolfe(evaluate, x, f, d, slope, step)
        if found is None:
            break
        xn, fn, gn_vec = found
        s_, y_ = xn - x, gn_vec - g
        sy = float(s_ @ y_)
        if sy > 1e-16 * float(y_ @ y_):
            S[head], Y[head], rho[head] = s_, y_, 1.0 / sy
            head = (head + 1) % memory
            used = min(used + 1, memory)
            gamma = sy / float(y_ @ M(y_))
        decrease = (f - fn) / max(abs(f), abs(fn), 1.0)
        x, f, g = xn, fn, gn_vec
        if decrease <= ftol:
            break
    return _LBFGSResult(x, it, float(np.linalg.norm(g)))


def _rank_deficient(W: np.ndarray, rtol: float = 1e-6) -> bool:
    r"""Whether the factor has a numerically null column direction,
    :math:`\sigma_{\min}(W) \le` ``rtol`` :math:`\sigma_{\max}(W)`.

    A rank-deficient second-order critical point of the factorised problem is
    a global optimum (Burer & Monteiro 2005), so a negative eigenvalue of
    :math:`S(y)` there comes from inexact multipliers and inner solves, not
    from a missing dimension: adding a column would only perturb a nearly
    converged point (measured on 2,500 USPS digits, MVU: when the first rank
    increase came, 15 of the factor's 38 singular values were at rounding level,
    1e-16 of the largest, and each increase sent the estimated gap from 1.1e-4
    to between 0.04 and 0.96). The default ``rtol`` leaves DVU's small but
    genuine singular values (4e-4 of the largest at n = 500) alone.
    """
    s = np.linalg.svd(W, compute_uv=False)
    return bool(s[-1] <= rtol * s[0])


def _trim_rank(W: np.ndarray, rtol: float = 1e-6, margin: int = 2) -> np.ndarray | None:
    r"""The factor without its numerically null directions, or ``None`` to keep it.

    With :math:`W = U\Sigma V^T`, returns :math:`U_k\Sigma_k`: the same :math:`WW^T` up
    to :math:`\sum_{i>k}\sigma_i^2 u_iu_i^T`, where :math:`k` counts the singular values
    above ``rtol`` :math:`\sigma_{\max}` plus ``margin``, so that the trimmed factor
    stays rank-deficient (and :func:`_rank_deficient` still refuses rank growth). It
    trims only when at least a quarter of the columns go. Every inner iteration
    costs in proportion to the rank, and null columns do not come back by themselves
    (their gradient :math:`2S(y)w` vanishes with :math:`w`). Measured on USPS MVU
    (tol 1e-4): at n = 2,500 the default start (rank 38) was trimmed to 28 at outer
    iteration 4, and the certificate came at 92 s instead of 147 s; at n = 9,298
    the start (rank 73) kept 39 columns below 1e-6 of the largest, and each Newton
    outer iteration took 140-150 s against about 70 s at rank 36.
    """
    U, s, _ = np.linalg.svd(W, full_matrices=False)
    k = int(np.sum(s > rtol * s[0])) + margin
    if k > 0.75 * W.shape[1]:
        return None
    return U[:, :k] * s[:k]


def _initial_factor(space: _Space, k: int, rng) -> np.ndarray:
    W = rng.standard_normal((space.dim, k))
    W = space.project(W)
    # scale so that the mean edge length matches the targets
    Z = space.diffs(W)
    D = np.einsum("ij,ij->i", Z, Z)
    return W * np.sqrt(space.gp.target.mean() / max(D.mean(), 1e-300))


def _escape(alm: _ALM, W, vec, y, nu, sigma, sigma_h):
    r"""Append ``alpha * vec`` as a new column, ``alpha`` by exact line search on the AL.

    With :math:`t = \alpha^2` the augmented Lagrangian along the new column,
    :math:`\phi(t) = L(W) + t\,v^T\tilde Cv + \sum_e[\psi_e(D_e + t\delta_e) - \psi_e(D_e)]
    (+\ \text{SNR term})`, :math:`\delta_e = (v_i-v_j)^2`, is convex in ``t``
    (a convex function of an affine map), and :math:`\phi'(0) = v^TS v` at the
    current multipliers, negative along an escape direction. Its minimiser is
    found by bisection on the monotone :math:`\phi'`, so a tiny negative
    eigenvalue gives a small column instead of a jump that undoes the
    progress of earlier iterations.
    """
    sp_, pen = alm.space, alm.pen
    vec = vec / np.linalg.norm(vec)
    _, D, h = alm.objective_parts(W)
    dv = sp_.diffs(vec[:, None])[:, 0] ** 2
    cv = float(vec @ sp_.apply_C(vec[:, None])[:, 0])
    hv = float(vec @ sp_.apply_H(vec[:, None])[:, 0]) if sp_.H is not None else 0.0

    def slope(t):
        _, g = pen.envelope(D + t * dv, y, sigma)
        out = cv + float(g @ dv)
        if sp_.H is not None:
            out += max(0.0, nu + sigma_h * (h + t * hv)) * hv
        return out

    scale = max(np.sum(W * W), 1e-12) / max(W.shape[1], 1)
    t_lo, t_hi = 0.0, 1e-6 * scale
    if slope(0.0) < 0:
        while slope(t_hi) < 0 and t_hi < 1e3 * scale:
            t_lo, t_hi = t_hi, 4.0 * t_hi
        for _ in range(60):
            mid = 0.5 * (t_lo + t_hi)
            if slope(mid) < 0:
                t_lo = mid
            else:
                t_hi = mid
    return np.c_[W, np.sqrt(max(t_lo, 1e-6 * scale)) * vec]


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
        only estimated by Lanczos: ``info["estimated_gap"]``, see the module
        docstring),
        ``"unbounded"`` or ``"infeasible"``.
    """
    opts = options or LowRankOptions()
    # the work is many small BLAS calls (n x k matrices): threads only add
    # synchronisation (measured 70x slower L-BFGS steps on a loaded 2-core machine)
    with threadpool_limits(limits=opts.blas_threads, user_api="blas"):
        return _lowrank_solve(gp, basis, opts)


def _initial_rank(gp: GramProblem) -> int:
    r"""Default rank of the first factor (before any rank increase).

    With class structure (DVU): ``n_classes + 4``. Without it (MVU): a third of
    the Barvinok–Pataki rank :math:`r_{BP}`, the largest :math:`r` with
    :math:`r(r+1)/2 \le m` (``m`` distance constraints; some optimal solution
    has rank at most :math:`r_{BP}`), and at least 16. Growing the rank one
    escape direction at a time is slow, so starting above the solution's rank
    is what pays. Measured on USPS MVU (tol 1e-4, one thread): n = 500
    (r_BP = 49) certified in 91 s from rank 8, 10-14 s from ranks 14-24 (the
    optimum has rank 13); n = 2,500 (r_BP = 111): gap 0.375 after 240 s from
    rank 8, 0.058 from 16, 8.9e-4 from 32 (the factor grew to 42). For DVU
    larger starts were slower (n = 500: 34 s from 14, 45 s from 20, 80 s from 24),
    and so were smaller ones: n = 2,500, seed 0, certified gap after 240 s of
    1.1e-4 from rank 14, 1.5e-2 from 11, 0.78 from 24 (the solution's factor has
    9 large singular values and 5 near 5 % of the largest).
    """
    if gp.icv is not None and hasattr(gp.icv, "U"):
        return gp.icv.U.shape[1] + 4
    m = gp.edges.shape[0]
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
            f"backend ({_CONIC}) or drop ratio=")
    t0 = time.perf_counter()
    space = _Space(gp, basis)
    pen = _Penalty(gp)
    alm = _ALM(space, pen, opts)
    alm.deadline = t0 + opts.time_limit
    cache: dict[str, Any] = {}
    unbounded = _unbounded_at_slack_weight(space, pen, opts)
    if unbounded is not None:
        return LowRankResult(np.zeros((gp.n, 1)), -np.inf, None, None, 0.0, unbounded[0], 0.0,
                             "unbounded", 0, time.perf_counter() - t0,
                             info={"lambda_min_at_slack_weight": unbounded[1]})
    if basis is not None and opts.reduced_solver != "alm":
        if pen.mode == "interval":
            done = _reduced_ipm(space, pen, alm, opts, t0, cache)
            if done is not None:
                return done
        elif opts.reduced_solver == "ipm":
            raise InputError(f"reduced_solver='ipm' solves distances='interval' only; got "
                             f"{pen.mode!r}: use reduced_solver='alm' (or 'auto')")
    W = _starting_factor(space, opts, cache)
    loop = _OuterLoop(space, pen, alm, opts, cache, t0, W)
    loop.run()
    return loop.result()


def _unbounded_at_slack_weight(space: _Space, pen: _Penalty, opts: LowRankOptions):
    r"""``(y0, lambda_min)`` when the relaxed problem is unbounded below, else ``None``.

    ``"interval"`` and ``"quadratic"`` without SNR are bounded exactly when
    :math:`S(y_0) \succeq 0` at the coercive point (``y0 = w``, resp.
    :math:`\lambda`; cf. :func:`~sdpembed.formulations.dvu.min_bounded_slack_weight`).
    """
    if pen.mode not in ("interval", "quadratic") or space.gp.snr is not None:
        return None
    y0 = pen.w if pen.mode == "interval" else np.full_like(pen.t, pen.lam)
    eig = _lambda_min(space, y0, 0.0, tol=opts.eig_tol)
    if eig.ritz + eig.residual < -1e-9 * max(1.0, abs(eig.ritz)):
        return y0, eig.ritz
    return None


def _starting_factor(space: _Space, opts: LowRankOptions, cache: dict) -> np.ndarray:
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
            max_outer=50, random_state=opts.random_state, time_limit=opts.time_limit / 10))
        if sub.status.startswith("optimal"):
            W = space.project(sub.factor)
            cache["warm"] = {"seconds": sub.seconds, "objective": sub.objective}
    if W is None:
        return _initial_factor(space, k0, rng)
    if W.shape[1] < k0:
        W = np.c_[W, 1e-3 * np.sqrt(np.mean(W * W)) * space.project(
            rng.standard_normal((space.dim, k0 - W.shape[1])))]
    return W


class _OuterLoop:
    r"""The augmented-Lagrangian outer loop of :func:`lowrank_solve` and its state.

    Each iteration (:meth:`step`) solves the subproblem at the current
    multipliers and penalty, updates the multipliers
    :math:`y = \nabla\psi(D)`, and, once the cheap gap
    :math:`(p + \varphi^*(y))/|p|` is small, attempts a certificate
    (:meth:`attempt_certificate`). Between iterations :meth:`schedule` raises
    the penalties and tightens the subproblem tolerance. Weak duality holds
    across iterations, so the loop keeps the lowest objective of any
    certifiable iterate (``best_primal``) and the highest bound of any attempt
    (``best_dual``), and stops once that pair proves ``tol``.
    """

    def __init__(self, space: _Space, pen: _Penalty, alm: _ALM, opts: LowRankOptions,
                 cache: dict, t0: float, W: np.ndarray):
        self.space, self.pen, self.alm, self.opts, self.cache, self.t0 = \
            space, pen, alm, opts, cache, t0
        self.W = W
        self.y = np.zeros(pen.t.shape[0])
        self.nu = 0.0
        quad, _, _ = alm.objective_parts(W)
        if pen.mode == "interval":
            kink = opts.interval_envelope == "kink" or (
                opts.interval_envelope == "auto" and space.Q is None)
            pen.split = "equality" if kink else "interval"
        # info["interval_envelope"]: which augmented Lagrangian ran (None: not "interval")
        self.envelope = None if pen.mode != "interval" else (
            "kink" if pen.split != pen.mode else "huber")
        self._start_penalty()
        self.obj_scale = max(abs(quad), 1e-12)
        self.sigma_h = self.sigma_h0 = 10.0 / self.obj_scale
        self.prev_h = np.inf
        self.gtol = 1e-3
        self.cheap_prev = np.inf
        self.rnorm = self.infeas = np.inf  # the last iterate's
        self.status = "optimal_inaccurate"
        self.it = 0
        self.certificate = Certificate(None, None, "none", "not computed")
        self.best_primal: tuple | None = None  # (objective, factor, infeasibility)
        self.best_dual: Certificate | None = None  # the highest bound (it carries y, nu)
        self.history: list[dict] = []

    def _start_penalty(self) -> None:
        r"""The first penalty :math:`\sigma_0` of the current envelope and its cap."""
        pen = self.pen
        if pen.split == "interval":  # Huber
            sigma = 10.0 * float(np.mean(pen.w)) / max(np.mean(pen.t), 1e-300)
        elif pen.split == "equality":  # equality, or the kink of "interval"
            sigma = 10.0 / max(np.mean(pen.t), 1e-300)
            if pen.mode == "interval":
                sigma *= _SIGMA_KINK
        else:  # "quadratic": no splitting
            sigma = 1.0
        self.sigma = self.sigma0 = sigma
        self.sigma_cap = _SIGMA_MAX_INTERVAL if pen.split == "interval" else _SIGMA_MAX
        self.prev_res = np.inf

    def _leave_kink(self, g: np.ndarray) -> np.ndarray:
        r"""Switch ``interval_envelope="kink"`` to the Huber envelope once multipliers ``g``
        leave the box :math:`|y_e| \le w_e` (the equality problem's optimum is then not
        known to solve the interval one); returns ``g`` clipped to the box, the Huber
        multipliers the solve goes on from at the Huber envelope's first penalty."""
        pen = self.pen
        pen.split = "interval"
        self.envelope = f"kink, then huber from outer iteration {self.it + 1}"
        self._start_penalty()
        return np.clip(g, -pen.w, pen.w)

    # ------------------------------------------------------------------ iterations
    def run(self) -> None:
        """Outer iterations until certified, out of time or iterations, or diverging."""
        for it in range(1, self.opts.max_outer + 1):
            self.it = it
            entry, step = self.step()
            self.history.append(entry)
            if self.status == "optimal":
                break
            logger.info("LOWRANK outer %d: %s", self.it, entry)
            if time.perf_counter() - self.t0 > self.opts.time_limit:
                break
            self.schedule(**step)
            # divergence: the factor grows without bound -> unbounded
            if np.sum(self.W * self.W) > 1e12 * max(self.space.gp.target.sum(), 1.0):
                self.status = "unbounded"
                break

    def solve_subproblem(self):
        """Minimise the augmented Lagrangian over the factor (L-BFGS, or Newton–CG once the
        cheap gap is below 1e-2); trims numerically null columns. Returns the inner result
        and whether the rank was trimmed."""
        opts, W = self.opts, self.W
        run = self.alm.subproblem(self.y, self.nu, self.sigma, self.sigma_h)
        newton = opts.inner == "newton" or (opts.inner == "auto" and self.cheap_prev < 1e-2)
        if opts.inner == "plbfgs":
            # isotropic Gauss-Newton weights: 4 sigma z_e z_e^T ~ (2 sigma |z_e|^2 / k) I
            om = self.pen.curvature_weights(self.sigma) / W.shape[1]
            inner = self.space.preconditioner(om)
        else:
            inner = "newton" if newton else None
        W, res = run(W, self.gtol * self.obj_scale / np.sqrt(W.size),
                     opts.max_newton if newton else opts.max_inner, inner)
        trimmed = _trim_rank(W)
        self.W = W if trimmed is None else trimmed
        return res, trimmed is not None

    def step(self) -> tuple[dict, dict]:
        """One outer iteration. Returns its history entry and what :meth:`schedule` needs."""
        space, pen, opts = self.space, self.pen, self.opts
        res, trimmed = self.solve_subproblem()
        W = self.W
        g, gs, quad, D, h = self.alm.multipliers(W, self.y, self.nu, self.sigma, self.sigma_h)
        r = pen.residual(D, g, self.y, self.sigma)
        rnorm = float(np.linalg.norm(r) / max(np.linalg.norm(pen.t), 1e-300))
        h_viol = space.snr_violation(h, quad)
        left_kink = pen.split != pen.mode and not pen.in_box(g)
        if left_kink:
            g = self._leave_kink(g)
        self.y = g
        if space.H is not None:
            self.nu = gs
        p = quad + pen.objective(D)
        infeas = max(rnorm if pen.mode == "equality" else 0.0, h_viol)
        self.rnorm, self.infeas = rnorm, infeas
        lb_cheap = -pen.conjugate(self.y)
        cheap_gap = _rel_gap(p, lb_cheap)
        self.cheap_prev = cheap_gap
        entry = {"outer": self.it, "rank": W.shape[1], "objective": p, "residual": rnorm,
                 "snr_violation": h_viol, "sigma": self.sigma, "lbfgs_iters": int(res.nit),
                 "cheap_gap": cheap_gap, "seconds": time.perf_counter() - self.t0}
        if trimmed:
            entry["trimmed_rank"] = W.shape[1]
        if left_kink:
            entry["left_kink"] = True
        feas_target = max(opts.feas_tol, 1e-2 * opts.tol)
        converged_primal = infeas <= opts.feas_tol and (rnorm <= feas_target
                                                          or pen.mode != "equality")
        # the point the certificate is taken at: the iterate, or (equality) the iterate
        # moved onto the constraints when only its residual keeps it from certification,
        # or (interval) the iterate with its edges near the kink moved onto it
        W_c, p_c, infeas_c, certifiable = W, p, infeas, converged_primal
        gate_gap = cheap_gap
        if (not converged_primal and pen.mode == "equality" and rnorm <= _RESTORE_MAX
                and h_viol <= opts.feas_tol and cheap_gap <= 100 * opts.tol):
            restored = self._onto_constraints(W, quad, feas_target)
            if restored is not None:
                W_c, p_c, infeas_c = restored
                certifiable = True
                cheap_gap = _rel_gap(p_c, lb_cheap)
                gate_gap = cheap_gap
                entry.update(restored_residual=infeas_c, restored_objective=p_c)
        elif certifiable and pen.mode == "interval" and cheap_gap <= 100 * opts.tol:
            restored = self._onto_kink(W, p)
            if restored is not None:
                W_c, p_c, infeas_c = restored
                entry.update(restored_objective=p_c)
                # the multipliers must close the gap to both points before they are tried:
                # the restored objective alone can fall just below their own bound by
                # coincidence (DVU n = 500: a futile lift, 5 s of 22 s), and the iterate's
                # alone can match it while the restored point is 1e-3 lower (DVU n = 300,
                # trace="min": a futile lift and two more outer iterations)
                gate_gap = max(cheap_gap, _rel_gap(p_c, lb_cheap))
        new_best = certifiable and (self.best_primal is None or p_c < self.best_primal[0])
        if new_best:
            self.best_primal = (p_c, W_c.copy(), infeas_c)
        y_ref, nu_ref, refined_gap = self.y, self.nu, np.inf
        # "interval": refined only at a new best point. On USPS DVU n = 2,500 (15 solves,
        # 167 refinements) every refinement that closed the gap was at one, and those at
        # other points (0.7-1.4 s each) all gave a refined gap near 1. Not for
        # "equality", whose restored points are not comparable that way (DVU n = 400: a
        # refinement at a point no better than an earlier one certified it two outer
        # iterations sooner)
        if certifiable and cheap_gap <= 100 * opts.tol and (new_best or pen.mode != "interval"):
            # complementary slackness is fitted at the stationary iterate, not the restored one
            y_ref, nu_ref = refine_multipliers(space, pen, W, self.y, self.nu)
            refined_gap = _rel_gap(p_c, -pen.conjugate(y_ref))
            entry["refined_cheap_gap"] = refined_gap
        if certifiable and min(gate_gap, refined_gap) <= opts.tol:
            candidates = [(self.y, self.nu)] + (
                [(y_ref, nu_ref)] if refined_gap <= opts.tol else [])
            self.attempt_certificate(entry, candidates, p, p_c, lb_cheap)
        return entry, {"h_viol": h_viol, "cheap_gap": cheap_gap,
                       "converged_primal": converged_primal, "inner_iterations": res.nit}

    def _onto_constraints(self, W, quad: float, feas_target: float):
        """``(W_r, p_r, r_r)``: ``"equality"`` iterate ``W`` moved onto its constraints
        (:func:`restore_feasibility`) when that reaches ``feas_target`` and keeps the SNR
        constraint within ``feas_tol`` of ``quad``, the iterate's quadratic term; else ``None``."""
        space, pen, opts = self.space, self.pen, self.opts
        W_r, r_r = restore_feasibility(space, pen, W, tol=0.1 * feas_target)
        quad_r, D_r, h_r = self.alm.objective_parts(W_r)
        if r_r <= feas_target and space.snr_violation(h_r, quad) <= opts.feas_tol:
            return W_r, quad_r + pen.objective(D_r), r_r
        return None

    def _onto_kink(self, W, p: float):
        """``(W_r, p_r, infeas_r)``: ``"interval"`` iterate ``W`` with the edges just off the
        kink moved onto it (their slack penalty is the cost), when that lowers the objective
        ``p`` and keeps the SNR constraint within ``feas_tol``; else ``None``."""
        space, pen = self.space, self.pen
        W_r, _ = restore_feasibility(space, pen, W, tol=1e-12)
        quad_r, D_r, h_r = self.alm.objective_parts(W_r)
        p_r = quad_r + pen.objective(D_r)
        infeas_r = space.snr_violation(h_r, quad_r)
        if p_r < p and infeas_r <= self.opts.feas_tol:
            return W_r, p_r, infeas_r
        return None

    def attempt_certificate(self, entry: dict, candidates: list, p: float, p_c: float,
                            lb_cheap: float) -> None:
        """Certify the candidates (and lift the best, see :func:`_lifted_certificate`); stop
        (status ``"optimal"``) once the best pair proves ``tol``, else grow the rank along the
        negative eigenvector where that eigenvalue keeps the gap open."""
        space, pen, opts, cache = self.space, self.pen, self.opts, self.cache
        p_best = self.best_primal[0]
        certificate = _best_certificate(
            space, pen, self.W, candidates, opts, cache, target=p_best - opts.tol * abs(p_best))
        certificate = self._verified_if_closing(certificate, p_c)
        gap = _rel_gap(p_c, certificate.bound)
        self.certificate = certificate
        # n > _DENSE_EIG_MAX: a Lanczos (unverified) gap unless it closed (then verified)
        entry.update({"lambda_min": certificate.lambda_min,
                      "certified_gap" if certificate.verified else "estimated_gap": gap})
        self.best_dual = _higher_bound(self.best_dual, certificate)
        t_lift = time.perf_counter()
        lifted = _lifted_certificate(space, pen, certificate, gap,
                                     None if self.best_dual is None else self.best_dual.bound,
                                     candidates, opts, cache, p_best)
        if lifted is not None:
            entry.update(lifted_gap=_rel_gap(p_c, lifted.bound),
                         lift_seconds=time.perf_counter() - t_lift)
            self.best_dual = _higher_bound(self.best_dual, lifted)
        best = self.best_dual = self._verified_if_closing(self.best_dual, p_best)
        combined = _rel_gap(p_best, best.bound) if best is not None else None
        if combined is not None and gap is not None and combined < gap:
            entry["combined_gap"] = combined
        if combined is not None and combined <= opts.tol:
            self.status = "optimal"
            self.W = self.best_primal[1]
            self.certificate, self.y, self.nu = best, best.y, best.nu
            return
        # grow the rank only where the negative eigenvalue, not the multipliers,
        # is what keeps the gap open
        loss = (lb_cheap - certificate.bound) / max(abs(p), 1e-300) \
            if certificate.bound is not None else np.inf
        if certificate.lambda_min is not None and certificate.lambda_min < 0 \
                and loss > 0.5 * opts.tol and self.W.shape[1] < opts.max_rank \
                and not _rank_deficient(self.W):
            self.W = _escape(self.alm, self.W, certificate.eig.vector, self.y, self.nu,
                             self.sigma, self.sigma_h)
            entry["grew_rank"] = self.W.shape[1]
        self.gtol = max(self.gtol * 0.1, 1e-9)

    def _verified_if_closing(self, cert: Certificate | None, p: float) -> Certificate | None:
        """``cert``, verified first (:func:`verify_certificate`) if its bound is unverified
        (Lanczos, or for n > ``_DENSE_EIG_MAX`` a lifted dense eigenvalue) and would prove
        ``tol`` against the objective ``p``, i.e. end the solve. Lanczos can miss the
        leftmost eigenvalue by more than the gap allows (USPS DVU n = 2,500: estimated
        8.5e-5, verified 2.2e-4); checked here (a dense Cholesky, 0.2 s at n = 2,500), a
        failed estimate lets the solve go on (a lift, more iterations) instead of ending
        it at ``optimal_inaccurate``."""
        if cert is None or cert.verified or cert.bound is None \
                or _rel_gap(p, cert.bound) > self.opts.tol:
            return cert
        return verify_certificate(self.space, self.pen, cert, eig_tol=self.opts.eig_tol,
                                  cache=self.cache)

    def schedule(self, *, h_viol: float, cheap_gap: float, converged_primal: bool,
                 inner_iterations: int) -> None:
        """Penalties and subproblem tolerance for the next iteration (after :meth:`step`,
        whose residual is ``self.rnorm``)."""
        pen, opts, rnorm = self.pen, self.opts, self.rnorm
        if pen.splitting or self.space.H is not None:
            # raise the penalty while the split residual stalls above tolerance, up to
            # _SIGMA_MAX (_SIGMA_MAX_INTERVAL) times its start (a larger one only worsens
            # the subproblems' conditioning, and restore_feasibility does the last of the
            # primal work)
            raise_sigma = rnorm > max(0.25 * self.prev_res, opts.feas_tol) \
                and 3.0 * self.sigma <= (1 + 1e-9) * self.sigma_cap * self.sigma0
            # the SNR penalty has its own schedule: its violation can stall while the
            # distance residual is fine
            raise_h = raise_sigma or (h_viol > max(0.25 * self.prev_h, opts.feas_tol)
                                      and self.sigma_h < 1e6 * self.sigma_h0)
            self.sigma *= 3.0 if raise_sigma else 1.0
            self.sigma_h *= 3.0 if raise_h else 1.0
            self.prev_res, self.prev_h = rnorm, h_viol
        if cheap_gap > opts.tol or not converged_primal:
            self.gtol = max(min(self.gtol, 0.1 * max(cheap_gap, rnorm)), 1e-10)
        if inner_iterations == 0 and (not converged_primal or cheap_gap > opts.tol):
            # the subproblem was already "solved" at this tolerance: tighten it, or the
            # outer loop would repeat the same point
            self.gtol = max(self.gtol * 0.1, 1e-12)
        if not pen.splitting and self.space.H is None and not converged_primal:
            self.gtol = max(self.gtol * 0.1, 1e-10)

    # ------------------------------------------------------------------ the answer
    def final_point(self) -> tuple[np.ndarray, float]:
        """The reported factor (in the space's coordinates) and its objective; sets the
        reported certificate and multipliers.

        Certified: the best pair. Stopped by a limit: the best pair if any attempt gave a
        bound, else the best (or, in equality mode, the more feasible last) iterate with the
        last multipliers certified (every large solve reports a bound, however loose, or
        says why it has none)."""
        space, pen, alm, opts = self.space, self.pen, self.alm, self.opts
        W, status, best_dual = self.W, self.status, self.best_dual
        p = alm.true_objective(W)
        if status == "optimal_inaccurate" and best_dual is None and pen.mode == "equality":
            W_r, r_r = restore_feasibility(space, pen, W, tol=0.1 * opts.feas_tol)
            if r_r < _RESTORE_MAX and r_r < self.rnorm:
                W, p = W_r, alm.true_objective(W_r)
        if status == "optimal_inaccurate" and best_dual is None:
            cert = _best_certificate(
                space, pen, W, [(self.y, self.nu),
                                refine_multipliers(space, pen, W, self.y, self.nu)],
                opts, self.cache, target=p)
            self.certificate, self.y, self.nu = cert, cert.y, cert.nu
        if status != "optimal" and best_dual is not None:
            self.certificate, self.y, self.nu = best_dual, best_dual.y, best_dual.nu
        if status != "optimal" and self.best_primal is not None and (
                best_dual is not None or (status == "optimal_inaccurate"
                                          and self.best_primal[0] < p)):
            # the best primal point seen, also when the loop made no certificate attempt
            # (the iterates' objectives are not monotone); an equality-mode last iterate
            # that is more feasible is kept
            pb, Wb, infb = self.best_primal
            if not (pen.mode == "equality" and infb > self.infeas):
                W, p = Wb, pb
        return W, p

    def result(self) -> LowRankResult:
        """The :class:`LowRankResult`: final point, its infeasibility, and the reported
        certificate (its Lanczos :math:`\\lambda_{\\min}` verified once, for n > 800)."""
        space, pen, alm, opts, cache = self.space, self.pen, self.alm, self.opts, self.cache
        W, p = self.final_point()
        F = space.points(W)
        quad, D, h = alm.objective_parts(W)
        infeas = float(np.linalg.norm(D - pen.t) / np.linalg.norm(pen.t)) \
            if pen.mode == "equality" else 0.0
        infeas = max(infeas, space.snr_violation(h, quad))
        status, certificate = self.status, self.certificate
        if status == "optimal_inaccurate" and pen.mode == "equality" and infeas > 1e-2:
            status = _infeasible_or_failed(space, pen, self.y, self.nu, opts)
        # here and not in the outer loop: a dense n x n Cholesky
        info: dict[str, Any] = {}
        if self.envelope is not None:
            info["interval_envelope"] = self.envelope
        if certificate.check in _UNVERIFIED and certificate.bound is not None:
            t_v = time.perf_counter()
            cache["verify_threads"] = _verify_threads()
            certificate = verify_certificate(space, pen, certificate, eig_tol=opts.eig_tol,
                                             cache=cache)
            info["verify_seconds"] = time.perf_counter() - t_v
        gap = _rel_gap(p, certificate.bound)
        bound = certificate.bound
        if not certificate.verified:
            # an unverified (Lanczos) bound is an estimate, never reported as certified
            info.update(estimated_gap=gap, estimated_bound=bound)
            gap = bound = None
            if status == "optimal" and certificate.bound is not None:
                status = "optimal_inaccurate"
        elif status == "optimal" and gap > opts.tol:
            # verification lowered the bound below the target (Lanczos missed an eigenvalue)
            status = "optimal_inaccurate"
        checks = cache.pop("verify_checks", [])
        cache.pop("verify_threads", None)
        cache.pop("lanczos_start", None)
        cache.pop("eigenpairs", None)
        if checks:
            info["verify_factorisations"] = [
                {"mu": c.mu, "delta": c.delta, "info": c.info, "seconds": c.seconds,
                 "verified": c.verified} for c in checks]
        return LowRankResult(
            factor=F, objective=p, bound=bound, certified_gap=gap, infeasibility=infeas,
            y=self.y, nu=self.nu, status=status, iterations=self.it,
            seconds=time.perf_counter() - self.t0, history=self.history,
            info={"certificate": certificate, "rank": F.shape[1],
                  "function_evaluations": alm.nfev, **info, **cache})


def _verify_threads() -> int:
    """BLAS threads for the final dense check (all usable cores, at most 8)."""
    import os

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


#: stopping tolerance (relative gap and residuals) of the reduced interior-point method
_IPM_TOL = 1e-9


def _reduced_ipm(space: _Space, pen: _Penalty, alm: _ALM, opts: LowRankOptions, t0: float,
                 cache: dict) -> LowRankResult | None:
    """Reduced interval problem by :func:`sdpembed.reduced.interval_ipm`, then certified.

    The factor is :math:`W = Y^{1/2}` (negligible eigenvalues dropped), the
    objective is the true one at :math:`F = QW` and the bound comes from
    :func:`certify` at the IPM's multipliers, exactly as for the augmented
    Lagrangian. Returns ``None`` (after recording why in
    ``cache["reduced_solver"]``) when ``reduced_solver="auto"`` should fall
    back to the augmented Lagrangian.
    """
    from .reduced import factor_from_gram, interval_ipm

    try:
        res = interval_ipm(space.Cq, space.E, pen.t, pen.w, space.Hq, tol=_IPM_TOL,
                           time_limit=opts.time_limit)
    except (np.linalg.LinAlgError, FloatingPointError, ValueError) as exc:
        if opts.reduced_solver == "ipm":
            raise
        logger.warning("reduced IPM failed (%s); falling back to the augmented Lagrangian", exc)
        cache["reduced_solver"] = {"solver": "alm", "fallback_from": "ipm",
                                   "reason": f"{type(exc).__name__}: {exc}"}
        return None
    W = factor_from_gram(res.Y, rel_tol=1e-10)
    p = alm.true_objective(W)
    certificate = _best_certificate(space, pen, W, [(res.y, res.nu)], opts, cache)
    gap = _rel_gap(p, certificate.bound)
    quad, _, h = alm.objective_parts(W)
    infeas = space.snr_violation(h, quad)
    ok = gap is not None and gap <= opts.tol and infeas <= opts.feas_tol
    record = {"solver": "ipm", "status": res.status, "iterations": res.iterations,
              "seconds": res.seconds, "primal_objective": res.primal_objective,
              "dual_objective": res.dual_objective, "certified_gap": gap}
    if not ok and opts.reduced_solver == "auto":
        logger.warning("reduced IPM stopped (%s) with certified gap %s > tol; falling back to "
                       "the augmented Lagrangian", res.status, gap)
        cache["reduced_solver"] = {"solver": "alm", "fallback_from": record}
        return None
    return LowRankResult(
        factor=space.points(W), objective=p, bound=certificate.bound, certified_gap=gap,
        infeasibility=infeas, y=certificate.y, nu=certificate.nu,
        status="optimal" if ok else "optimal_inaccurate",
        iterations=res.iterations, seconds=time.perf_counter() - t0, history=res.history,
        info={"certificate": certificate, "rank": W.shape[1], "function_evaluations": 0,
              "reduced_solver": record, **cache})


def _best_certificate(space, pen, W, candidates, opts, cache, target=None):
    """The certificate with the highest bound over candidate dual points (it carries its
    ``y`` and ``nu``; ``target``: the bound wanted, see :func:`certify`)."""
    best = None
    for k, (y, nu) in enumerate(candidates):
        cert = certify(space, pen, y, nu, factor=W, eig_tol=opts.eig_tol, cache=cache,
                       target=target)
        if k > 0:
            cert.note = "refined multipliers; " + cert.note
        if best is None or (cert.bound is not None
                            and (best.bound is None or cert.bound > best.bound)):
            best = cert
        if target is not None and best.bound is not None and best.bound >= target:
            break  # good enough: the other candidates would only cost eigenvalue solves
    return best


def _higher_bound(best: Certificate | None, cert: Certificate) -> Certificate | None:
    """``cert`` if its bound exceeds ``best``'s (or ``best`` is ``None``), else ``best``."""
    if cert.bound is not None and (best is None or cert.bound > best.bound):
        return cert
    return best


def _lifted_certificate(space, pen, certificate, gap, best_bound, candidates, opts, cache,
                        p_best):
    r"""Certificate at :func:`lift_multipliers` of the most promising candidate.

    Tried (``"interval"``, full space, n <= ``_LIFT_MAX_N``) when the certificate
    misses ``tol`` because :math:`\lambda_{\min} < 0` and a candidate's own bound
    :math:`\beta = -\varphi^*(y)` (which lifting can only lower) is above ``best_bound``,
    the best bound so far, so that the lift can improve it. ``None`` where it is not
    tried. A candidate whose :math:`\beta` exceeds the best objective ``p_best`` must
    lose at least :math:`\beta - p_{\mathrm{best}}` in the lift, so candidates are
    ranked by :math:`\min(\beta,\ 2p_{\mathrm{best}} - \beta)`, not by :math:`\beta`.
    Measured on USPS DVU, n = 2,500 (seed 0, first attempt at 129 s): the augmented
    Lagrangian's multipliers had :math:`\beta` 8e-4 above ``p_best`` and the refined
    ones 1.5e-5 below; lifting the former certified 5.5e-3. The lift stops once the
    shifted bound proves half of ``tol`` against ``p_best`` (its ``target``).
    """
    if (pen.mode != "interval" or space.Q is not None or space.dim > _LIFT_MAX_N
            or (gap is not None and gap <= opts.tol) or certificate.lambda_min is None
            or certificate.lambda_min >= 0):
        return None
    own = [-pen.conjugate(y_) for y_, _ in candidates]
    k = int(np.argmax([min(b, 2.0 * p_best - b) for b in own]))
    if best_bound is not None and not own[k] > best_bound:
        return None
    y_s, nu_s = candidates[k]
    pairs = next(((lam, X) for y_c, nu_c, lam, X in cache.get("eigenpairs", ())
                  if nu_c == nu_s and np.array_equal(y_c, y_s)), None)
    if pairs is not None and np.any(np.abs(y_s) > pen.w):
        pairs = None  # the lift clips y into the box first: other eigenpairs
    # stop lifting once the shift proves half the gap tolerance (a margin for the check)
    y_l, eig = lift_multipliers(space, pen, y_s, nu_s, floor=best_bound, eigenpairs=pairs,
                                target=p_best - 0.5 * opts.tol * abs(p_best),
                                mu0=cache.get("mu0", -np.inf))
    cert = _certificate_from_eig(space, pen, y_l, nu_s, eig, cache, opts.eig_tol, False)
    cert.note = _LIFTED + cert.note
    return cert


def _infeasible_or_failed(space, pen, y, nu, opts) -> str:
    """Farkas test: :math:`\\mathcal A^T\\hat y \\succeq 0` and :math:`\\hat y^T\\bar D<0`."""
    yh = y / max(np.linalg.norm(y), 1e-300)
    if yh @ pen.t >= -1e-6 * np.linalg.norm(pen.t):
        return "optimal_inaccurate"
    zero = DiagPlusLowRank.zeros(space.gp.n)
    farkas = _Space.__new__(_Space)
    farkas.__dict__.update(space.__dict__)
    farkas.C = zero
    if space.Q is not None:
        farkas.Cq = np.zeros_like(space.Cq)
    eig = _lambda_min(farkas, yh, nu / max(np.linalg.norm(y), 1e-300), tol=opts.eig_tol)
    return "infeasible" if eig.value >= -1e-8 else "optimal_inaccurate"


# ----------------------------------------------------------------------- backend
def _formulation_problem(formulation) -> tuple[GramProblem, np.ndarray | None, bool]:
    """(points' GramProblem at the current parameter values, with the added constraints;
    reduced basis or None; lifted explicit form?) of a formulation, or a refusal.

    LOWRANK solves the description, so it takes only the formulations whose cvxpy problem
    the description generates: those returned by the builders and by
    :meth:`~sdpembed.formulations.gram.GramFormulation.with_constraints`, unedited."""
    if not isinstance(formulation, GramFormulation):
        if isinstance(formulation.meta.get("gram_problem"), GramProblem):
            raise UnsupportedProblemError(
                "this Formulation carries a Gram SDP's description but is not one its builder "
                "returned (a cvxpy problem rebuilt around it?), so LOWRANK cannot know what "
                "its problem adds or changes. Add constraints on the Gram matrix with "
                "f.with_constraints([...]) on the builder's formulation, or solve this one with "
                f"a conic backend ({_CONIC})")
        raise UnsupportedProblemError(
            f"solver='LOWRANK' solves the Gram SDPs (DVU, MVU) built by "
            f"sdpembed.formulations.dvu / mvu; this is a {formulation.method!r} formulation: "
            f"solve it with a conic backend ({_CONIC})")
    formulation.check_unchanged()
    gp = formulation.current_problem()
    if gp.constraints is not None and gp.constraints.p:
        raise UnsupportedProblemError(
            "LOWRANK does not support constraints added with with_constraints yet; solve "
            f"this formulation with a conic backend ({_CONIC})")
    return gp, formulation.reduced_basis, "eliminated_problem" in formulation.meta


_CONIC = "SCS, CLARABEL, CVXOPT, SDPA, MOSEK or CSDP"


def _write_solution(formulation, gp: GramProblem, F: np.ndarray, lifted: bool) -> bool:
    """Write the factor into the cvxpy variables when the problem is (or is cheaply) built."""
    formulation.set_factor(F)
    if not formulation.variables_built:
        return False
    variables = formulation.variables
    meta = formulation.meta
    if lifted:
        lp = meta["gram_problem"]
        y = gp.meta["y"]
        K = len(gp.meta["classes"])
        counts = np.bincount(y[y >= 0], minlength=K).astype(float)
        A = np.zeros((gp.n, K))
        idx = np.flatnonzero(y >= 0)
        A[idx, y[idx]] = 1.0 / counts[y[idx]]
        cent = F.T @ A                              # centroids (k x K)
        Ff = np.r_[F, cent.T, cent.mean(axis=1)[None, :]]
        assert Ff.shape[0] == lp.n
    else:
        Ff = F
    name = "G" if "G" in variables else "Y"
    var = variables[name]
    if name == "G":
        var.value = Ff @ Ff.T
    else:
        B = np.asarray(formulation.basis(), dtype=float)
        P = np.linalg.lstsq(B, Ff, rcond=None)[0] if B.shape[1] < B.shape[0] else B.T @ Ff
        var.value = P @ P.T
    if "eps" in variables:
        D = gp.distances_of_factor(F)
        variables["eps"].value = np.abs(D - gp.target) / gp.target
    return True


def _solve_backend(formulation, verbose: bool = False, **options) -> SolveReport:
    """``solve(formulation, solver="LOWRANK", **options)``; options: :class:`LowRankOptions`."""
    opts = LowRankOptions.from_options(options)
    gp, basis, lifted = _formulation_problem(formulation)
    if verbose:
        logging.getLogger(__name__).setLevel(logging.INFO)
    result = lowrank_solve(gp, basis=basis, options=opts)
    cert: Certificate = result.info.get("certificate")
    extra: dict[str, Any] = {
        "rank": result.factor.shape[1],
        "lower_bound": result.bound,
        "certificate": cert.describe() if cert is not None else "no certificate",
        "certificate_check": (cert.check if cert is not None and cert.bound is not None
                              else None),
        "outer_iterations": result.iterations,
        "function_evaluations": result.info.get("function_evaluations"),
        "reduced_basis_rank": None if basis is None else basis.shape[1],
        "reduced_solver": result.info.get("reduced_solver"),
        "interval_envelope": result.info.get("interval_envelope"),
        "history": result.history,
    }
    if result.status in ("unbounded", "infeasible"):
        extra["message"] = f"LOWRANK detected the problem {result.status}"
        return SolveReport(status=result.status, objective=None, solver=BACKEND_NAME,
                           solver_version=_version(), options=dict(options),
                           compile_seconds=0.0, solve_seconds=result.seconds,
                           iterations=result.iterations, extra=extra)
    if "estimated_gap" in result.info:
        extra["estimated_gap"] = result.info["estimated_gap"]
        extra["estimated_lower_bound"] = result.info["estimated_bound"]
    if "verify_seconds" in result.info:
        extra["verify_seconds"] = result.info["verify_seconds"]
    if result.status != "optimal" and result.certified_gap is None:
        if result.info.get("estimated_gap") is not None:
            extra["message"] = (f"gap {result.info['estimated_gap']:.2g} estimated, not "
                                "certified (" + extra["certificate"] + ")")
        else:
            extra["message"] = ("stopped without a certificate (" + extra["certificate"]
                                + "); raise time_limit/max_outer")
    t1 = time.perf_counter()
    wrote = _write_solution(formulation, gp, result.factor, lifted)
    extra["wrote_variables"] = wrote
    if not wrote:
        extra["note"] = ("the cvxpy problem was never built (not needed): the solution is "
                         "formulation.factor, G = F F^T; formulation.value('gram') forms it")
    status = "optimal" if result.status == "optimal" else "optimal_inaccurate"
    return SolveReport(
        status=status, objective=float(result.objective), solver=BACKEND_NAME,
        solver_version=_version(), options={**opts.__dict__, "warm_start": str(opts.warm_start)
                                            if not isinstance(opts.warm_start, np.ndarray)
                                            else "array"},
        compile_seconds=time.perf_counter() - t1,
        solve_seconds=result.seconds, iterations=result.iterations,
        gap=(result.certified_gap if result.certified_gap is not None
             else result.info.get("estimated_gap")),
        certified_gap=result.certified_gap,
        primal_infeasibility=result.infeasibility, extra=extra)


def _version() -> str:
    from ._version import __version__

    return f"sdpembed {__version__}"


def _refusal(formulation) -> str | None:
    """Why LOWRANK cannot solve ``formulation`` as posed (``None`` if it can); no solving."""
    try:
        gp, _, _ = _formulation_problem(formulation)
        if gp.ratio is not None:
            return "the ratio constraint (eq. 11) is not supported"
    except InputError as exc:
        return str(exc)
    return None


register_backend(BACKEND_NAME, _solve_backend, version=_version, refusal=_refusal)

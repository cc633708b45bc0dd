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

* ``"dense"``: n <= 800 (``DenseLimits.eig``) or a reduced basis: dense
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

from .backend import BACKEND_NAME
from .certificate import (
    CHECK_CHOLESKY,
    CHECK_DENSE,
    CHECK_EIGH,
    CHECK_LANCZOS,
    Certificate,
    CertificateCache,
    certify,
    verify_certificate,
)
from .options import (
    INNER_SOLVERS,
    INTERVAL_ENVELOPES,
    REDUCED_SOLVERS,
    DenseLimits,
    LowRankOptions,
)
from .penalty import DistancePenalty
from .repair import lift_multipliers, refine_multipliers, restore_feasibility
from .result import LowRankResult
from .solve import lowrank_solve
from .space import FactorSpace
from .spectrum import EigenEstimate

__all__ = ["LowRankOptions", "DenseLimits", "LowRankResult", "lowrank_solve", "FactorSpace",
           "DistancePenalty", "EigenEstimate", "Certificate", "CertificateCache", "certify",
           "verify_certificate", "refine_multipliers", "lift_multipliers", "restore_feasibility",
           "BACKEND_NAME", "INNER_SOLVERS", "REDUCED_SOLVERS", "INTERVAL_ENVELOPES",
           "CHECK_DENSE", "CHECK_CHOLESKY", "CHECK_LANCZOS", "CHECK_EIGH"]

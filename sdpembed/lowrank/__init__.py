"""Large-n path for the Gram SDPs (DVU, MVU): low-rank solver, dual certificate, reduced basis.

The backend ``"LOWRANK"`` of :func:`sdpembed.solve` (:mod:`sdpembed.lowrank.backend`). It
reads the numpy description :class:`~sdpembed.formulations.gram.GramProblem` of the
formulation and never touches the cvxpy problem data. No dense n x n matrix is formed
above ``DenseLimits.eig`` (800): the certificate's eigenvalues come from Lanczos or from
shift-invert on a sparse factorisation of the dual slack matrix, and are verified by a
sparse factorisation (:mod:`~sdpembed.lowrank.sparse_slack`). Measurements behind the
settings are in ``docs/tuning.md``.

Modules: :mod:`~sdpembed.lowrank.options` (settings), :mod:`~sdpembed.lowrank.space`
(:class:`FactorSpace`), :mod:`~sdpembed.lowrank.penalty` (:class:`DistancePenalty`),
:mod:`~sdpembed.lowrank.spectrum` (dense, Lanczos and shift-invert eigenvalues),
:mod:`~sdpembed.lowrank.sparse_slack` (the slack matrix factorised sparsely),
:mod:`~sdpembed.lowrank.verify` (a verified :math:`\\lambda_{\\min}`),
:mod:`~sdpembed.lowrank.certificate`,
:mod:`~sdpembed.lowrank.repair` (refined and lifted multipliers, restoration),
:mod:`~sdpembed.lowrank.inner` (L-BFGS, Newton–CG), :mod:`~sdpembed.lowrank.alm`,
:mod:`~sdpembed.lowrank.outer`, :mod:`~sdpembed.lowrank.reduced_ipm` (+
:mod:`~sdpembed.lowrank.lmi_lp`, :mod:`~sdpembed.lowrank.ipm_common`),
:mod:`~sdpembed.lowrank.solve`, :mod:`~sdpembed.lowrank.backend`,
:mod:`~sdpembed.lowrank.sweep` (a sweep's warm multipliers; the sweep itself is
:func:`sdpembed.solvers.solve_sweep`).

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
* ``"shrink"``: :math:`\\varphi = \\iota_{\\{D\\le\\bar D\\}}` (shrink-only distances;
  :math:`G = 0` is strictly feasible, so the dual optimum is attained, unlike that of
  ``"equality"`` on clique-degenerate graphs),

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
throughout. The quadratic envelope keeps its curvature :math:`\\sigma` on every edge,
where the Huber function has none once :math:`|\\sigma r_e| \\ge w_e`. The first iterate
whose multipliers leave the box (an optimum with stretched edges, or a reduced basis,
where the equality problem is infeasible) switches the rest of the solve to the Huber
envelope, from the multipliers clipped to the box.

Column generation (the restricted problem on :math:`G = BMB^T`, :math:`B` spanning the
factor and the bottom eigenvectors of :math:`S(y)`, solved by
:func:`~sdpembed.lowrank.reduced_ipm.interval_ipm`, priced by :math:`S`) is not used: its
restricted multipliers are far from dual feasible in the full space, and the dual
feasible set is too thin for a step in :math:`y` (``docs/tuning.md``).

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
:math:`|y_e|\\le w_e`; shrink with :math:`y \\ge 0`) and
:math:`\\varphi^*(y) = \\sum_e \\lambda\\bar D_e y_e/(\\lambda - y_e)`
(quadratic, :math:`y_e<\\lambda`). If :math:`\\mu\\ge 0` the bound is
:math:`-\\varphi^*(y)`. If :math:`\\mu < 0` the multipliers are moved towards a
*coercive* point :math:`y_0` with :math:`\\mu_0 = \\mu(y_0, 0) > 0` (``interval``:
:math:`y_0 = w`; ``quadratic``: :math:`y_0 = 0.9\\lambda`), using concavity of
:math:`\\lambda_{\\min}`: with :math:`\\theta = -\\mu/(\\mu_0-\\mu)` the point
:math:`(1-\\theta)(y,\\nu)+\\theta(y_0,0)` has :math:`\\mu\\ge0` and gives the bound
:math:`-\\varphi^*((1-\\theta)y+\\theta y_0)`. Where :math:`\\lambda_{\\min}` is exact
(dense), the nearer anchors :math:`y_s = y + s(y_0 - y)`, :math:`s \\in` ``_SHIFT_ANCHORS``,
are tried too and the highest bound kept: :math:`S(y_s) = (1-s)S(y) + sS(y_0)` often has
:math:`\\lambda_{\\min}` well above :math:`s\\mu_0`, so the shift costs less. For
``equality`` and ``shrink`` the trace of any feasible point is bounded by
:math:`T = \\sum_i \\mathrm{sp}(r,i)^2` (``sp`` the shortest-path length over
:math:`\\sqrt{\\bar D}`; the centroid minimises the sum of squared distances), giving
:math:`-\\varphi^*(y) + \\min(\\mu,0)\\,T`. Where the objective is negative definite,
:math:`C \\preceq -cI` with :math:`c > 0` (MVU: :math:`C = -I`, :math:`c = 1`), scaling is
better: :math:`S(sy, s\\nu) = sS(y,\\nu) + (1-s)C \\succeq (s\\mu + (s-1)c)I = 0` for
:math:`s = c/(c+\\mu)`, so the bound is :math:`-\\varphi^*(sy)`, a relative loss of about
:math:`|\\mu|/c` instead of :math:`|\\mu|T/|p|` (``"scaled"``; the higher of the two
bounds is kept). On a reduced basis :math:`G = QYQ^T` both hold as they are
(:math:`\\mu = \\lambda_{\\min}(Q^TSQ)`, :math:`\\mathrm{tr}\\,Y = \\mathrm{tr}\\,G`, and every
feasible point of the reduced problem is one of the full problem, so :math:`T` bounds its
trace too).

Two dual points are tried and the higher bound is kept: the augmented-Lagrangian
multipliers, and their *refinement* (:func:`refine_multipliers`), the point of
:math:`\\mathrm{dom}\\,\\varphi^*` that best satisfies complementary slackness
:math:`S(y,\\nu)V = 0` for the final factor (a bounded linear least-squares
problem), which removes most of the error the inexact subproblems leave in the
multipliers. The certificate is as exact as :math:`\\lambda_{\\min}`: the objective is
a small difference of large terms (an objective of order one against a trace that grows
with n), and :math:`\\min(\\mu,0)\\,\\mathrm{tr}\\,G` enters the bound: a gap of 1e-4 at a
trace near :math:`10^3` needs :math:`|\\lambda_{\\min}|\\lesssim 10^{-7}`.

For ``"interval"`` in the full space (n <= ``DenseLimits.lift``) a third candidate is
tried when the others miss ``tol`` only because :math:`\\lambda_{\\min} < 0`:
:func:`lift_multipliers` raises the multipliers of a few edges until :math:`S` is PSD, a
cutting-plane repair on the bottom eigenspace of :math:`S` whose every step is a small
SDP (:func:`~sdpembed.lowrank.lmi_lp.rank_one_lmi_lp`). It costs far less than the
shift towards :math:`y_0`, because the negative eigenvectors sit on few points.

``certified_gap = (objective - bound) / max(|objective|, |bound|)``. Weak duality
holds across iterations, so the solve pairs the lowest objective of any feasible
(or feasibility-restored) iterate with the highest bound of any iteration, and stops
once that pair closes the gap (the iterates' objectives are not monotone); the
returned factor and multipliers are that pair. How :math:`\\mu` was obtained is
``report.extra["certificate_check"]``, and ``report.extra["certificate"]`` says it in
words:

* ``"dense"``: n <= ``DenseLimits.eig`` or a reduced basis: dense ``eigh`` of S on
  :math:`\\mathbf 1^\\perp`, exact up to rounding; the bound takes that rounding off
  (:math:`\\lambda_{\\min} \\ge \\mu - \\delta`, :math:`\\delta` =
  :func:`~sdpembed.lowrank.rounding.eigh_allowance`, of the size of
  :math:`n\\epsilon\\|S\\|`, and the dual value's sum its own rounding).
* ``"sparse"``: larger n. During the solve :math:`\\mu` comes from Lanczos
  (:func:`scipy.sparse.linalg.eigsh`, deflated, minus its residual norm), which
  can miss the leftmost eigenvalue, or for ``"interval"`` from the bottom eigenpairs by
  shift-invert Lanczos on a sparse factorisation of :math:`S - \\sigma I`, which the lift
  reuses (:func:`~sdpembed.lowrank.sparse_slack.sparse_bottom`). A certificate that would
  end the solve, and the *reported* one, is therefore verified
  (:func:`~sdpembed.lowrank.sparse_slack.sparse_verify`): a sparse factorisation of
  :math:`S - \\mu I` bordered by its low-rank part (no dense n x n matrix; the memory of
  the factor's fill), with rigorous a-posteriori bounds on the rounding errors of forming
  and factorising it (Higham, Thm 9.3), proves :math:`\\lambda_{\\min}(S) > \\mu`; if it
  fails at the estimate, shift-invert re-estimates and lower values are tried
  (:func:`~sdpembed.lowrank.verify._verified_lambda_min`) and the bound is recomputed
  from the verified one (for ``"shifted"`` the coercive point's :math:`\\mu_0` is
  verified too).
* ``"exact"``: equality distances whose cliques expose a face (no strictly feasible
  point), solved on further on the face: the face's multipliers lifted to the full space
  (:func:`~sdpembed.lowrank.face.face_certificate`), :math:`S - \\mu I` checked positive
  definite in exact rational arithmetic.
* ``"lanczos (unverified)"`` (``"shift-invert (unverified)"``): the check could not run
  (not enough memory for the factorisation) or failed at every shift tried. The
  bound is then only an estimate: ``certified_gap`` and ``extra["lower_bound"]`` are
  ``None``, the number goes to ``extra["estimated_gap"]`` /
  ``extra["estimated_lower_bound"]`` and the status is ``"optimal_inaccurate"``.
  Nothing unverified is called certified. (The outer loop's history records
  unverified gaps as ``estimated_gap``.)

The rest of the bound (:math:`\\varphi^*`, the objective) is ordinary floating
point. For ``"equality"`` the objective is evaluated at the factor, which
violates the constraints by ``primal_infeasibility``; for ``"interval"`` and
``"quadratic"`` the factor is exactly feasible. A ``"shrink"`` iterate that violates
:math:`D\\le\\bar D` by more than ``feas_tol`` is certified at a repaired point, exactly
feasible: Gauss–Newton steps onto its violated and active edges, then a scaling
:math:`\\alpha V`, :math:`\\alpha^2 = \\min_e \\bar D_e/D_e`. An equality-mode iterate whose
multipliers already close the gap but whose residual is still above
``feas_tol`` (at most 1e-3) is first moved onto the constraints by
Gauss–Newton steps (:func:`restore_feasibility`) and certified there, so
the solve does not wait for the augmented Lagrangian to drive the residual
down. An ``"interval"`` iterate is feasible, but the augmented Lagrangian leaves
edges just off the kink :math:`D_e = \\bar D_e` of the penalty, where the optimum keeps
them, and their slack costs more than the gap wanted; so it is certified with those
edges moved onto the kink by the same steps, and its multipliers are tried only when
they close the gap to both points. When no certificate can be computed,
``certified_gap`` is ``None`` and ``report.extra["certificate"]`` says why.

Reduced basis
-------------
With ``basis_rank = r`` the formulation optimises over
:math:`G = QYQ^T` (Weinberger, Sha, Zhu & Saul 2007), ``Q`` the bottom
non-constant Laplacian eigenvectors (:func:`~sdpembed.formulations.gram.laplacian_basis`).
The solver then works with :math:`V = QW`; the same certificate holds on that subspace
(:math:`\\mu = \\lambda_{\\min}(Q^TSQ)`, dense, exact) and bounds the *reduced*
problem. For ``distances="interval"`` on a basis (with or without SNR) the
reduced problem is solved instead by the primal-dual interior-point method of
:mod:`sdpembed.lowrank.reduced_ipm` (``reduced_solver="auto"``, the default): :math:`Y`
is :math:`r\\times r`, the normal equations live in :math:`r(r+1)/2`
unknowns whatever the number of edges, and the multipliers are certified
by :func:`certify` like the augmented Lagrangian's; on failure it falls back
to the augmented Lagrangian.
"""

from .backend import BACKEND_NAME
from .certificate import (
    CHECK_CHOLESKY,
    CHECK_DENSE,
    CHECK_LANCZOS,
    CHECK_SHIFT_INVERT,
    CHECK_SPARSE,
    Certificate,
    CertificateCache,
    certify,
    relative_gap,
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
           "verify_certificate", "relative_gap", "refine_multipliers", "lift_multipliers",
           "restore_feasibility",
           "BACKEND_NAME", "INNER_SOLVERS", "REDUCED_SOLVERS", "INTERVAL_ENVELOPES",
           "CHECK_DENSE", "CHECK_SPARSE", "CHECK_CHOLESKY", "CHECK_LANCZOS", "CHECK_SHIFT_INVERT"]

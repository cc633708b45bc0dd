r"""The teaching view of a Gram SDP (DVU, MVU), read from its description.

:func:`gram_summary` writes what :meth:`GramFormulation.summary
<sdpembed.formulations.gram.GramFormulation.summary>` returns: the program in
plain-text math, the data sizes, the current parameter values, the constraints
added with ``with_constraints`` (read as :math:`\langle A, G\rangle \le b` where
they are affine in :math:`G`) and the cones a conic solver would receive. It
reads the :class:`~sdpembed.formulations.gram.GramProblem` and never builds the
cvxpy problem, so it costs nothing at any n. Notation: :math:`D_e(G) = G_{ii} +
G_{jj} - 2G_{ij}` for edge :math:`e = (i, j)`, :math:`\bar D_e` its target,
``>>`` the semidefinite order (as in cvxpy).
"""

from __future__ import annotations

import numpy as np
from cvxpy.atoms.affine.affine_atom import AffAtom

from ..exceptions import UnsupportedProblemError
from ..formulation import ConeSizes, Formulation, cone_sizes, shape_text
from .constraints import affine_gram_constraints

__all__ = ["gram_summary", "gram_cone_sizes"]

#: the symbols of the Gram SDPs' parameters in the statement
SYMBOLS = {"slack_weight": "lambda", "trace_weight": "tau", "snr": "eta", "ratio": "epsilon",
           "ratio_weight": "rho"}

#: at most this many rows of added constraints are written out
MAX_CONSTRAINT_ROWS = 8


def gram_cone_sizes(form: Formulation) -> ConeSizes:
    """The cones of the cvxpy problem ``form`` builds (or built), from its description.

    Equal to what cvxpy compiles for the conic solvers: the PSD variable; the
    centring rows unless the basis satisfies them; per edge one equality
    (``"equality"``), two inequality rows and a nonnegative slack (``"interval"``),
    one inequality row (``"shrink"``),
    or a 3-dimensional second-order cone for :math:`\\sqrt{D_e}` (``"quadratic"``);
    one row for ``snr``; for ``ratio`` the rotated cone of ``quad_over_lin`` (a
    3-dimensional second-order cone and its nonnegative denominator) and the
    nonnegative :math:`\\xi`; then the added constraints.
    """
    gp = form.gram_problem
    m = gp.edges.shape[0]
    out = ConeSizes(psd=[form.psd_size])
    if not form.centered_basis:
        out.zero += gp.centering_vectors().shape[1]
    if gp.distances == "equality":
        out.zero += m
    elif gp.distances == "interval":
        out.nonneg += 3 * m
    elif gp.distances == "shrink":
        out.nonneg += m
    else:
        out.soc += [3] * m
    if gp.snr is not None:
        out.nonneg += 1
    if gp.ratio is not None:
        out.nonneg += 2
        out.soc.append(3)
    return out + cone_sizes(form.user_constraints)


def _objective_text(form, gp) -> str:
    if form.method == "dvu":
        text = "sigma2_icv(G) - sigma2_bcv(G)"
    elif form.method == "mvu":
        text = "-tr G"
    elif form.method == "gram_sdp":
        text = "0"
    else:
        text = "<C, G>"
    if gp.trace_weight != 0.0:
        text += (" + " if form.trace_sign > 0 else " - ") + "tau tr G"
    if gp.distances == "interval":
        text += " + lambda sum_e eps_e"
    elif gp.distances == "quadratic":
        text += " + lambda sum_e (sqrt(D_e(G)) - sqrt(Dbar_e))^2"
    if gp.ratio is not None:
        text += " + rho xi"
    terms = getattr(form, "user_objective", ())
    if terms:
        added = " + ".join(f"f{k + 1}(G)" for k in range(len(terms)))
        text = added if text == "0" else text + " + " + added
    return text


def _objective_lines(form) -> list[str]:
    """The terms added with ``with_objective``: the structure of each one's matrix
    :math:`M` (:math:`f_k(G) = \\langle M, G\\rangle`) as ``LOWRANK`` reads it."""
    from .objective import gram_objective_matrix

    terms = getattr(form, "user_objective", ())
    lines = []
    for k, term in enumerate(terms):
        try:
            M = gram_objective_matrix([term], form.expressions["gram"], form.n_points)
        except UnsupportedProblemError:
            lines.append(f"f{k + 1}(G): not linear in G (conic backends only)")
            continue
        parts = []
        if np.any(M.diag):
            parts.append("diagonal")
        if M.sparse is not None:
            parts.append(f"sparse ({M.sparse.nnz} off-diagonal entries)")
        if M.U.shape[1]:
            parts.append(f"rank {M.U.shape[1]}")
        lines.append(f"f{k + 1}(G) = <M{k + 1}, G>,  M{k + 1}: "
                     + (" + ".join(parts) or "zero"))
    return lines


def _variable_lines(form, gp, lifted: bool) -> list[str]:
    N, r = gp.n, form.psd_size
    M = "X" if lifted else "G"
    lines = []
    if lifted:
        K = N - form.n_points - 1
        lines.append(f"X in S^{N} over the {form.n_points} points, the {K} class centroids and "
                     "their mean; G = X[:n, :n]")
    if form.basis_rank is not None:
        lines.append(f"G = Q Y Q^T,  Y in S^{r},  Y >> 0;  Q ({N} x {r}): bottom Laplacian "
                     "eigenvectors of the basis graph (a restriction: its optimum bounds the "
                     "full one from above)")
    elif form.reduce_face:
        lines.append(f"{M} = V Y V^T,  Y in S^{r},  Y >> 0;  V ({N} x {r}): orthonormal basis "
                     "of the complement of the centring vectors (facial reduction)")
    else:
        lines.append(f"{M} >> 0")
    return lines


def _constraint_lines(form, gp, lifted: bool) -> list[str]:
    M = "X" if lifted else "G"
    m = gp.edges.shape[0]
    lines = []
    if not form.centered_basis:
        if lifted:
            c = gp.centering_vectors().shape[1]
            lines.append(f"c^T X c = 0 for the {c} centring vectors: each centroid the mean of "
                         "its labelled points, the last row their mean, the points centred")
        else:
            lines.append("1^T G 1 = 0   (centred)")
    else:
        V = "Q" if form.basis_rank is not None else "V"
        lines.append(f"(the centring holds by construction: {V}^T c = 0, so {M} c = 0)")
    if gp.distances == "equality" and m:
        lines.append(f"D_e(G) = Dbar_e   for the {m} edges e")
    elif gp.distances == "shrink" and m:
        lines.append(f"D_e(G) <= Dbar_e   for the {m} edges e")
    elif gp.distances == "interval":
        lines.append(f"(1 - eps_e) Dbar_e <= D_e(G) <= (1 + eps_e) Dbar_e,  eps_e >= 0   for "
                     f"the {m} edges e")
    if gp.snr is not None:
        lines.append("sigma2_bcv(G) >= eta sigma2_icv(G)")
    if gp.ratio is not None:
        lines.append("sigma2_icv(G)^2 / sigma2_bcv(G) <= epsilon sigma2_icv(G) + xi,  xi >= 0")
    return lines


def _kind(c) -> str:
    from cvxpy.constraints import PSD, SOC, Equality, Inequality, NonNeg, NonPos, Zero

    if isinstance(c, (Equality, Zero)):
        return "an equality"
    if isinstance(c, (Inequality, NonNeg, NonPos)):
        return "an inequality"
    if isinstance(c, PSD):
        return "a PSD constraint"
    if isinstance(c, SOC):
        return "a second-order cone"
    return f"a {type(c).__name__} constraint"


def _constraints_text(form, gp) -> str:
    """The constraints by kind and count, as the cvxpy problem has them."""
    m, parts = gp.edges.shape[0], []
    if not form.centered_basis:
        c = gp.centering_vectors().shape[1]
        parts.append(f"centring: {c} equality row{'s' if c != 1 else ''}")
    if gp.distances == "equality":
        if m:
            parts.append(f"distances: {m} equality rows")
    elif gp.distances == "interval":
        parts.append(f"distances: {2 * m} inequality rows (two per edge)")
    elif gp.distances == "shrink":
        if m:
            parts.append(f"distances: {m} inequality rows")
    else:
        parts.append(f"distances: none (a penalty: {m} second-order cones)")
    if gp.snr is not None:
        parts.append("snr: 1 inequality row")
    if gp.ratio is not None:
        parts.append("ratio: 1 rotated second-order cone")
    if form.user_constraints:
        parts.append(f"added: {len(form.user_constraints)}")
    return "; ".join(parts)


def _term(coef: float, i: int, j: int) -> str:
    entry = f"G[{i},{j}]"
    if coef == 1.0:
        return entry
    if coef == -1.0:
        return "-" + entry
    return f"{coef:.4g} {entry}"


def _affine_row_text(A, k: int) -> str:
    """Row k of :class:`AffineGramConstraints` as ``G[0,0] + G[1,1] - 2 G[0,1] <= 0.1``."""
    sel = A.row == k
    i, j, v = A.i[sel], A.j[sel], A.value[sel]
    upper = i <= j
    terms = [_term(float(c) * (1.0 if a == b else 2.0), int(a), int(b))
             for a, b, c in zip(i[upper], j[upper], v[upper])]
    lhs = " + ".join(terms).replace("+ -", "- ") if len(terms) <= 6 else \
        f"<A, G> with {len(terms)} entries of the upper triangle"
    return f"{lhs} {'=' if A.equality[k] else '<='} {A.rhs[k] + 0.0:.6g}"


def _added_lines(form) -> list[str]:
    cons = form.user_constraints
    if not cons:
        return []
    lines = [f"added (with_constraints), {len(cons)} constraint(s):"]
    shown = 0
    for k, c in enumerate(cons):
        rows = int(np.prod(c.shape)) if hasattr(c, "shape") else 1
        try:
            A = affine_gram_constraints([c], form.expressions["gram"], form.n_points)
        except UnsupportedProblemError:
            lines.append(f"  [{k}] {_kind(c)} ({rows} row{'s' if rows != 1 else ''}), not "
                         "affine in G")
            continue
        for r in range(A.p):
            if shown >= MAX_CONSTRAINT_ROWS:
                break
            lines.append(f"  [{k}] {_affine_row_text(A, r)}")
            shown += 1
    if shown >= MAX_CONSTRAINT_ROWS:
        lines.append(f"  (first {MAX_CONSTRAINT_ROWS} rows shown)")
    return lines


def gram_summary(form: Formulation) -> str:
    """The teaching view of a :class:`~sdpembed.formulations.gram.GramFormulation` (module
    docstring); builds nothing."""
    gp, pts = form.gram_problem, form.points_problem
    lifted = pts is not gp
    lines = form._headline()
    facts = f"n = {form.n_points} points, m = {form.n_edges} edges"
    if form.classes is not None:
        y = pts.meta.get("y")
        labelled = "" if y is None else f", {int(np.sum(y >= 0))} labelled"
        facts += f", K = {len(form.classes)} classes{labelled}"
    if form.distance_scale != 1.0:
        facts += f"; target distances Dbar_e divided by {form.distance_scale:.6g} (normalize)"
    lines += ["", facts, "",
              f"  minimize     {_objective_text(form, gp)}",
              *[f"  over         {line}" if k == 0 else f"               {line}"
                for k, line in enumerate(_variable_lines(form, gp, lifted))],
              *[f"  subject to   {line}" if k == 0 else f"               {line}"
                for k, line in enumerate(_constraint_lines(form, gp, lifted))]]
    added = _added_lines(form)
    if added:
        lines += [f"               {line}" for line in added]
    objective = _objective_lines(form)
    if objective:
        lines += ["", "added (with_objective):"] + [f"  {line}" for line in objective]
    lines += ["", "with D_e(G) = G_ii + G_jj - 2 G_ij, Dbar_e the target squared distance of "
              "edge e = (i, j)"]
    on_basis = form.reduce_face or form.basis_rank is not None
    variables = [f"{'Y' if on_basis else 'G'}: {shape_text((form.psd_size,) * 2)} PSD"]
    if gp.distances == "interval":
        variables.append(f"eps: {gp.edges.shape[0]} nonneg")
    if gp.ratio is not None:
        variables.append("xi: scalar nonneg")
    lines += ["", "variables    " + "; ".join(variables)]
    params = [f"{name} ({SYMBOLS.get(name, name)}) = {p.value:.6g}" if p.value is not None
              else f"{name} ({SYMBOLS.get(name, name)}) = unset"
              for name, p in form.parameters.items()]
    lines.append("parameters   " + ("; ".join(params) or "none"))
    lines.append("constraints  " + _constraints_text(form, gp))
    lines.append("cones        " + gram_cone_sizes(form).text())
    atoms = sorted({a.__name__ for c in form.user_constraints for a in c.atoms()
                    if not issubclass(a, AffAtom)})
    if atoms:
        lines.append("             plus the cones cvxpy adds for " + ", ".join(atoms)
                     + " (added constraints)")
    state = "built" if form.is_built else \
        "not built (sizes from the description; reading f.problem builds it)"
    lines.append(f"cvxpy        {state}")
    if form.factor is not None:
        lines.append(f"solution     factor F of rank {form.factor.shape[1]} (G = F F^T, LOWRANK)")
    return "\n".join(lines)

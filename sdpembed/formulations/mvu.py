"""Maximum Variance Unfolding (Weinberger & Saul): the unsupervised case of DVU."""

from __future__ import annotations

import numpy as np

from .._params import declared
from ..graphs import NeighborhoodGraph
from ._base import Formulation
from .gram import DiagPlusLowRank, GramProblem, build_gram_formulation, gram_basis
from .gram_problem import GRAM_PARAMETERS

__all__ = ["MVU_PAPER", "MVU_PARAMETERS", "mvu", "mvu_problem"]

#: declared constraints of the parameters of :func:`mvu`, checked on every call and read
#: by the estimators :class:`~sdpembed.estimators.MVU` and :class:`~sdpembed.estimators.DVU`
MVU_PARAMETERS = dict(GRAM_PARAMETERS)

#: the papers of MVU (recorded in ``meta["paper"]``)
MVU_PAPER = ("Weinberger & Saul, Learning a kernel matrix for nonlinear dimensionality "
             "reduction (ICML 2004); Unsupervised learning of image manifolds by semidefinite "
             "programming (IJCV 2006)")


@declared({k: MVU_PARAMETERS[k] for k in ("graph", "distances", "slack_weight", "normalize")})
def mvu_problem(graph: NeighborhoodGraph, *, distances: str = "equality", slack_weight: float = 1.0,
                normalize: bool = True) -> GramProblem:
    """Numpy description of MVU; see :func:`mvu`."""
    graph.check_distinct().check_connected()
    scale = float(graph.sqdist.mean()) if normalize else 1.0
    n = graph.n_nodes
    objective = DiagPlusLowRank(-np.ones(n), np.zeros((n, 0)), np.zeros(0))
    return GramProblem(n=n, edges=graph.edges, target=graph.sqdist / scale, objective=objective,
                       distances=distances, slack_weight=float(slack_weight),
                       meta={"distance_scale": scale})


@declared(MVU_PARAMETERS)
def mvu(graph: NeighborhoodGraph, *, distances: str = "equality", slack_weight: float = 1.0,
        normalize: bool = True, reduce_face: bool = True, basis_rank: int | None = None,
        basis_graph: NeighborhoodGraph | None = None) -> Formulation:
    """Build the MVU semidefinite program (DVU paper, section 2).

    .. math::

        \\max_{G\\succeq 0}\\ \\mathrm{tr}\\,G \\quad\\text{s.t.}\\quad
        G_{ii} + G_{jj} - 2G_{ij} = \\bar D_{ij}\\ \\ ((i,j)\\in\\mathcal E),\\qquad
        \\textstyle\\sum_{ij} G_{ij} = 0,

    posed as the minimisation of :math:`-\\mathrm{tr}\\,G`. ``distances`` and
    ``slack_weight`` relax the equalities as in :func:`sdpembed.formulations.dvu`
    (with ``"interval"`` the problem is bounded only for ``slack_weight`` large
    enough). A connected graph bounds every pairwise distance, hence the trace.

    ``distances="shrink"`` keeps :math:`G_{ii} + G_{jj} - 2G_{ij} \\le \\bar D_{ij}`
    (distances may shrink, not grow). :math:`G = 0` is strictly feasible, so the dual
    optimum is attained with bounded multipliers :math:`y \\ge 0`, which the equality
    problem lacks when cliques of :math:`d + 2` neighbours in :math:`d` dimensions
    fix rank-:math:`d` blocks (no positive definite feasible point). Its optimum is at
    least the equality one (a larger feasible set); where it keeps every distance (all
    rows active), it is the equality optimum too, and its dual point certifies it: for
    :math:`y \\ge 0` with :math:`S(y) = -I + \\sum_e y_e a_ea_e^T \\succeq 0` on
    :math:`\\mathbf 1^\\perp`,
    :math:`-\\mathrm{tr}\\,G \\ge -y^T\\bar D` for every :math:`G` of either problem.

    With equality distances on a graph rigid in the data's dimension (a k-NN graph of
    exact low-dimensional data, e.g. 6 neighbours on a Swiss roll or an S-curve in
    :math:`\\mathbb R^3`) the framework can be universally rigid: the data's own centred
    Gram matrix (scaled as the targets are) is then the only feasible point, there is no
    unrolled embedding to find, and a point that violates the equalities by a tiny
    residual can still have a much larger trace (docs/tuning.md, "Equality MVU on the
    manifold rows: the remaining degeneracy is universal rigidity"). LOWRANK refuses such
    points; ``distances="shrink"`` gives the unrolling MVU is known for (strictly
    feasible, certified).

    ``reduce_face`` optimises over :math:`G = VYV^T` with ``V`` an orthonormal
    basis of :math:`\\mathbf 1^\\perp` (see :func:`dvu`). ``basis_rank`` and
    ``basis_graph`` restrict to a reduced Laplacian basis as in :func:`dvu`
    (for MVU the problem graph's own basis is the classic choice of Weinberger
    et al.). The cvxpy problem is built on first use (see
    :class:`~sdpembed.formulations.gram.GramFormulation`).
    """
    gp = mvu_problem(graph, distances=distances, slack_weight=slack_weight, normalize=normalize)
    basis, size = gram_basis(gp, reduce_face, basis_rank, basis_graph)
    hint = ("with relaxed distances, growing the embedding raises the trace faster than the "
            "slack penalty grows: raise slack_weight or use distances='equality'.")
    return build_gram_formulation(
        gp, basis=basis, centered_basis=reduce_face or basis_rank is not None, method="mvu",
        variant=distances + ("/reduced-face" if reduce_face else "")
        + (f"/basis-{int(basis_rank)}" if basis_rank is not None else ""), equations="sec. 2",
        basis_size=size,
        extra_meta={"distance_scale": gp.meta["distance_scale"], "unbounded_hint": hint,
                    "paper": MVU_PAPER,
                    "reduce_face": reduce_face, "basis_rank": basis_rank})

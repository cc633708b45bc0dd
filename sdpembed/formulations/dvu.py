"""Discriminative Variance Unfolding (Vernaza, Lee & Taskar) as a cvxpy SDP."""

from __future__ import annotations

import functools

import numpy as np
import scipy.linalg as sla

from .._labels import check_partial_labels
from .._params import NONNEGATIVE, declared
from .._sklearn import StrOptions
from .._typing import ArrayLike
from ..exceptions import InputError
from ..graphs import NeighborhoodGraph
from ._base import Formulation
from .gram import (
    DenseSym,
    DiagPlusLowRank,
    GramProblem,
    build_gram_formulation,
    centering_basis,
    gram_basis,
    gram_parameters,
    with_parameter_values,
)
from .gram_problem import GRAM_PARAMETERS

#: the paper of DVU (recorded in ``meta["paper"]``)
DVU_PAPER = ("Vernaza, Lee & Taskar, Learning a kernel for discriminative, low-dimensional "
             "embedding of partially labeled data (Discriminative Variance Unfolding)")

#: declared constraints of the parameters of :func:`dvu`, checked on every call and read
#: by the estimator :class:`~sdpembed.estimators.DVU` (one declaration for both)
DVU_PARAMETERS = {
    **GRAM_PARAMETERS,
    "centroids": [StrOptions({"explicit", "eliminated"})],
    "trace": [StrOptions({"min", "max"}), None],
    "trace_weight": [NONNEGATIVE],
    "snr": [NONNEGATIVE, None],
    "ratio": [NONNEGATIVE, None],
    "ratio_weight": [NONNEGATIVE],
}

__all__ = ["DVU_PAPER", "DVU_PARAMETERS", "dvu", "dvu_problem", "variance_functionals",
           "min_bounded_slack_weight", "class_mean_weights", "centroid_lifting",
           "explicit_centroid_factor"]


def class_mean_weights(y_int: np.ndarray, n_classes: int) -> np.ndarray:
    """Columns :math:`a_k = \\mathbf 1_{\\mathcal K_k}/|\\mathcal K_k|` (n x K): class means.

    :math:`Z a_k` is the centroid of class :math:`k` of points :math:`Z` (p x n);
    unlabelled points (``y == -1``) have zero weight.
    """
    n = y_int.shape[0]
    A = np.zeros((n, n_classes))
    labeled = y_int >= 0
    counts = np.bincount(y_int[labeled], minlength=n_classes).astype(float)
    A[np.flatnonzero(labeled), y_int[labeled]] = 1.0 / counts[y_int[labeled]]
    return A


def variance_functionals(y_int: np.ndarray,
                         n_classes: int) -> tuple[DiagPlusLowRank, DiagPlusLowRank]:
    """In-class and between-class variances as linear functionals of ``G``.

    With :math:`a_k = \\mathbf 1_{\\mathcal K_k}/|\\mathcal K_k|` (class-mean
    weights) and :math:`b = \\frac1K \\sum_k a_k` (mean of centroids), the
    centroids are :math:`m_k = Z a_k`, :math:`\\mu = Z b` and (eqs. 3–5)

    .. math::

        \\sigma^2_{icv}(G) &= \\frac1K\\sum_k \\Big(\\frac{1}{|\\mathcal K_k|}
            \\sum_{i\\in\\mathcal K_k} G_{ii} - a_k^T G a_k\\Big)
            = \\Big\\langle \\mathrm{diag}(w) - \\frac1K\\sum_k a_k a_k^T,\\; G\\Big\\rangle,\\\\
        \\sigma^2_{bcv}(G) &= \\frac1K\\sum_k (a_k - b)^T G (a_k - b),

    with :math:`w_i = 1/(K|\\mathcal K_{k(i)}|)` on labelled points, 0 on
    unlabelled ones: unlabelled points never enter the objective.
    """
    n = y_int.shape[0]
    K = n_classes
    A = class_mean_weights(y_int, K)
    labeled = y_int >= 0
    counts = np.bincount(y_int[labeled], minlength=K).astype(float)
    b = A.mean(axis=1)
    w = np.zeros(n)
    w[labeled] = 1.0 / (K * counts[y_int[labeled]])
    icv = DiagPlusLowRank(w, A, np.full(K, -1.0 / K))
    bcv = DiagPlusLowRank(np.zeros(n), A - b[:, None], np.full(K, 1.0 / K))
    return icv, bcv


def _check_trace(trace, trace_weight) -> None:
    """The one rule between two parameters: a trace term needs both its sense and weight."""
    if trace is not None and trace_weight == 0:
        raise InputError(f"trace={trace!r} needs trace_weight > 0")
    if trace is None and trace_weight != 0:
        raise InputError("trace_weight > 0 needs trace='min' or trace='max'")


def _prepare_graph(graph, n: int, normalize: bool):
    if graph.n_nodes != n:
        raise InputError(f"graph has {graph.n_nodes} nodes but y has {n} entries")
    graph.check_distinct().check_connected()
    scale = float(graph.sqdist.mean()) if normalize else 1.0
    return graph.sqdist / scale, scale


@declared({k: v for k, v in DVU_PARAMETERS.items()
           if k not in ("centroids", "reduce_face", "basis_rank", "basis_graph")})
def dvu_problem(graph: NeighborhoodGraph, y: ArrayLike, *, distances: str = "interval",
                slack_weight: float = 1.0, trace: str | None = None, trace_weight: float = 0.0,
                snr: float | None = None, ratio: float | None = None, ratio_weight: float = 1.0,
                normalize: bool = True) -> GramProblem:
    """Validated numpy description of the (centroid-eliminated) DVU problem.

    See :func:`dvu` for the mathematics. Used by :func:`dvu` and by the
    large-n solver, which never forms an n x n matrix.
    """
    _check_trace(trace, trace_weight)
    y_int, classes, labeled = check_partial_labels(y, graph.n_nodes, min_classes=2,
                                                   min_per_class=2)
    target, scale = _prepare_graph(graph, y_int.shape[0], normalize)
    icv, bcv = variance_functionals(y_int, len(classes))
    tw = {None: 0.0, "min": trace_weight, "max": -trace_weight}[trace]
    return GramProblem(
        n=graph.n_nodes, edges=graph.edges, target=target, objective=icv + bcv.scaled(-1.0),
        distances=distances, slack_weight=float(slack_weight), trace_weight=float(tw),
        icv=icv, bcv=bcv, snr=snr, ratio=ratio, ratio_weight=float(ratio_weight),
        meta={"classes": classes, "labeled_mask": labeled, "y": y_int, "distance_scale": scale},
    )


def min_bounded_slack_weight(gp: GramProblem) -> float:
    """Smallest ``slack_weight`` for which the interval/quadratic DVU is bounded below.

    Scaling a feasible ``G`` by :math:`t\\to\\infty` changes the objective by
    :math:`t(\\langle C, G\\rangle + \\lambda \\sum_e D_e(G)/\\bar D_e)` (interval
    slack grows like :math:`D_e/\\bar D_e`; for the quadratic penalty like
    :math:`D_e`), so the problem is unbounded exactly when
    :math:`\\lambda < \\lambda^* = \\max_{v\\perp\\mathbf 1} \\frac{-v^T C v}{v^T L_w v}`,
    the top generalized eigenvalue with :math:`L_w` the Laplacian with edge
    weights :math:`1/\\bar D_e` (interval) or 1 (quadratic). Dense, O(n^3).
    """
    from ..graphs import NeighborhoodGraph as _G

    w = 1.0 / gp.target if gp.distances == "interval" else np.ones_like(gp.target)
    L = _G(gp.n, gp.edges, gp.target).laplacian(w).toarray()
    V = centering_basis(gp.n)
    C = gp.full_objective().congruence(V)
    top = sla.eigh(-C, V.T @ L @ V, eigvals_only=True, subset_by_index=[gp.n - 2, gp.n - 2])
    return max(float(top[0]), 0.0)


class _UnboundedHint:
    """Message for an unbounded DVU solve, naming the threshold on ``slack_weight``.

    A picklable callable, evaluated only when a solve is unbounded (the
    threshold costs a dense generalized eigenproblem), at the *current* values of
    the formulation's parameters. Added constraints only shrink the feasible set,
    so the threshold stays sufficient with them.
    """

    def __init__(self, gp: GramProblem, parameters: dict, trace_sign: float):
        self.gp, self.parameters, self.trace_sign = gp, parameters, trace_sign

    def __call__(self) -> str:
        gp = with_parameter_values(self.gp, self.parameters, self.trace_sign)
        base = ("stretching the embedding lowers sigma2_icv - sigma2_bcv faster than the slack "
                "penalty grows. ")
        if gp.distances in ("equality", "shrink"):
            return "check that the graph is connected (every pairwise distance is then bounded)."
        if gp.n <= 3000:
            lam = min_bounded_slack_weight(gp)
            return (base + f"It is bounded for slack_weight >= {lam:.4g} (got "
                    f"{gp.slack_weight:.4g}): raise slack_weight above that, or add a trace term "
                    "(trace='min', trace_weight > 0), or use distances='equality'.")
        return base + (f"Raise slack_weight (got {gp.slack_weight:.4g}), or add a trace term "
                       "(trace='min', trace_weight > 0), or use distances='equality'.")


def _explicit_problem(gp: GramProblem, n_classes: int) -> GramProblem:
    """The paper's lifted problem over ``n + K + 1`` rows (points, centroids, mean of centroids).

    Rows ``n .. n+K-1`` hold the class centroids :math:`\\hat x_k`, row ``n+K``
    the mean of centroids :math:`x_\\mu`. The centring vectors are
    :math:`c_k = (a_k, -e_k, 0)` (:math:`\\hat x_k` is the mean of class k),
    :math:`c_\\mu = (0, \\mathbf 1/K, -1)` (:math:`x_\\mu` is the mean of centroids)
    and :math:`(\\mathbf 1_n, 0, 0)` (the data points are centred). Objective
    (eqs. 3–5): :math:`\\sigma_k^2 = \\frac1{|\\mathcal K_k|}\\sum_{i\\in\\mathcal K_k}
    X_{ii} + X_{\\hat k\\hat k} - 2X_{i\\hat k}`, :math:`\\sigma^2_{bcv} = \\frac1K
    \\sum_k X_{\\hat k\\hat k} + X_{\\mu\\mu} - 2X_{\\hat k\\mu}`.
    """
    n, K = gp.n, n_classes
    N = n + K + 1
    y = gp.meta["y"]
    labeled = y >= 0
    counts = np.bincount(y[labeled], minlength=K).astype(float)
    Ci = np.zeros((N, N))
    Cb = np.zeros((N, N))
    idx = np.flatnonzero(labeled)
    kk = n + y[idx]
    wi = 1.0 / (K * counts[y[idx]])
    Ci[idx, idx] += wi
    np.add.at(Ci, (kk, kk), wi)
    np.add.at(Ci, (idx, kk), -wi)
    np.add.at(Ci, (kk, idx), -wi)
    mu = n + K
    ks = n + np.arange(K)
    Cb[ks, ks] += 1.0 / K
    Cb[mu, mu] += 1.0
    Cb[ks, mu] -= 1.0 / K
    Cb[mu, ks] -= 1.0 / K
    cent = np.zeros((N, K + 2))
    cent[idx, y[idx]] = 1.0 / counts[y[idx]]
    cent[ks, np.arange(K)] = -1.0
    cent[ks, K] = 1.0 / K
    cent[mu, K] = -1.0
    cent[:n, K + 1] = 1.0
    return GramProblem(
        n=N, edges=gp.edges, target=gp.target, objective=DenseSym(Ci - Cb),
        distances=gp.distances, slack_weight=gp.slack_weight, trace_weight=0.0,
        icv=DenseSym(Ci), bcv=DenseSym(Cb), snr=gp.snr, ratio=gp.ratio,
        ratio_weight=gp.ratio_weight, centering=cent,
        meta={**gp.meta, "n_points": n},
    )


def centroid_lifting(y_int: np.ndarray, n_classes: int) -> np.ndarray:
    """The lifting :math:`L` ((n + K + 1) x n) of the explicit-centroid DVU, :math:`X = LGL^T`.

    .. math::

        L = \\begin{pmatrix} I_n \\\\ A^T \\\\ b^T \\end{pmatrix},\\qquad
        A = (a_1, \\dots, a_K),\\quad b = \\tfrac1K \\textstyle\\sum_k a_k

    (:func:`class_mean_weights`). It maps the eliminated problem onto the
    lifted one of :func:`_explicit_problem` and back, a bijection of the
    feasible sets that keeps the objective:

    * :math:`X = LGL^T` satisfies the centring constraints: with
      :math:`c_k = (a_k, -e_k, 0)`, :math:`L^T c_k = a_k - a_k = 0`; with
      :math:`c_\\mu = (0, \\mathbf 1/K, -1)`, :math:`L^T c_\\mu = b - b = 0`;
      and :math:`(\\mathbf 1_n, 0, 0)^T X (\\mathbf 1_n, 0, 0) = \\mathbf 1^T G\\mathbf 1`.
      Its points block is :math:`G`, so the distance constraints are the same.
    * Its inverse is :math:`X \\mapsto X_{1:n,1:n}`: for a feasible
      :math:`X = WW^T \\succeq 0`, :math:`c^TXc = 0` forces :math:`W^Tc = 0`,
      i.e. the centroid rows of :math:`W` are the class means of its point rows
      and the last row their mean, :math:`W = L\\,W_{1:n}`.
    * :math:`\\langle C_{\\mathrm{lift}}, LGL^T\\rangle = \\langle L^TC_{\\mathrm{lift}}L, G\\rangle
      = \\sigma^2_{icv}(G) - \\sigma^2_{bcv}(G)`, the eliminated objective
      (:func:`variance_functionals`).

    Dense; for a factor use :func:`explicit_centroid_factor`.
    """
    A = class_mean_weights(y_int, n_classes)
    return np.r_[np.eye(y_int.shape[0]), A.T, A.mean(axis=1)[None, :]]


def explicit_centroid_factor(gp: GramProblem, F: np.ndarray) -> np.ndarray:
    """The inverse of the centroid elimination on a factor: :math:`LF` for :math:`G = FF^T`.

    ``gp`` is the eliminated problem (:func:`dvu_problem`, which records the
    labels); ``F`` (n x r) a factor of its solution. Returns the factor of the
    lifted solution :math:`X = LGL^T` (:func:`centroid_lifting`): the n point
    rows, then the K class centroids (the class means of the labelled point
    rows) and the mean of the centroids, without forming :math:`L`.
    """
    F = np.asarray(F, dtype=float)
    y_int = gp.meta["y"]
    if F.ndim != 2 or F.shape[0] != y_int.shape[0]:
        raise InputError(f"F must have shape ({y_int.shape[0]}, r); got {F.shape}")
    centroids = class_mean_weights(y_int, len(gp.meta["classes"])).T @ F
    return np.r_[F, centroids, centroids.mean(axis=0)[None, :]]


@declared(DVU_PARAMETERS)
def dvu(graph: NeighborhoodGraph, y: ArrayLike, *, centroids: str = "eliminated",
        distances: str = "interval", slack_weight: float = 1.0, trace: str | None = None,
        trace_weight: float = 0.0, snr: float | None = None, ratio: float | None = None,
        ratio_weight: float = 1.0, normalize: bool = True, reduce_face: bool = True,
        basis_rank: int | None = None, basis_graph: NeighborhoodGraph | None = None) -> Formulation:
    """Build the DVU semidefinite program (Vernaza, Lee & Taskar, section 3.3).

    .. math::

        \\min_{G\\succeq 0,\\;\\epsilon\\ge 0}\\quad
            & \\sigma^2_{icv}(G) - \\sigma^2_{bcv}(G)
              + \\lambda\\sum_{(i,j)\\in\\mathcal E}\\epsilon_{ij}
            \\qquad\\text{(6)}\\\\
        \\text{s.t.}\\quad & (1-\\epsilon_{ij})\\bar D_{ij} \\le G_{ii}+G_{jj}-2G_{ij}
            \\le (1+\\epsilon_{ij})\\bar D_{ij} \\qquad\\text{(8), (9)}\\\\
        & \\mathrm{tr}(c_k c_k^T X) = 0,\\; k\\in\\mathcal K\\cup\\{\\mu\\},\\quad
          \\mathrm{tr}(\\mathbf 1\\mathbf 1^T X) = 0

    Unlabelled points (``y == -1``) enter only through the distance constraints.

    The optimum is generally not unique: objective and constraints are linear in
    :math:`G`, so the optimal set is a face of the feasible set, and backends that
    reach the same optimal value can return different points of it (an
    interior-point method converges to the relative interior of that face, a
    point of highest rank; ``"LOWRANK"`` to a low-rank one), with different
    embeddings and k-NN accuracies. To select one, add the trace tie-break
    ``trace="min", trace_weight=1e-3`` (with the default ``centroids="eliminated"``): the term
    :math:`\\tau\\,\\mathrm{tr}\\,G` makes the program prefer, among solutions of
    (nearly) equal objective, the one of least trace, at a cost of that term in the
    optimal value.

    Parameters
    ----------
    graph : NeighborhoodGraph
        Edges and squared target distances :math:`\\bar D_{ij}`; must be
        connected (else the problem is unbounded) with no zero distance.
    y : array of int, shape (n,)
        Class labels, ``-1`` for unlabelled points.
    centroids : {"eliminated", "explicit"}, default "eliminated"
        As in the estimator :class:`~sdpembed.estimators.DVU`.
        ``"explicit"``: the paper's Gram matrix :math:`X` over the n points,
        the K class centroids and the mean of centroids, tied to the points
        by the centring constraints (see :func:`_explicit_problem`; the map
        between the two forms is :func:`centroid_lifting`).
        ``"eliminated"``: the same problem on the n x n matrix alone, the
        centroids written as averages :math:`m_k = Z a_k` (see
        :func:`variance_functionals`); identical optimum, smaller matrix.
    distances : {"interval", "equality", "quadratic", "shrink"}
        Slack intervals (8)–(9) with penalty ``slack_weight * sum(eps)``; hard
        equalities (7); the penalty :math:`\\lambda \\sum (D + \\bar D - 2\\sqrt{D\\bar D})`
        of section 3.5, which equals :math:`\\lambda\\sum(d-\\bar d)^2`; or shrink-only
        distances :math:`D_e(G) \\le \\bar D_e` (always strictly feasible, :math:`G = 0`).
    slack_weight : float
        :math:`\\lambda`. Below a threshold (``min_bounded_slack_weight``) the
        interval and quadratic forms are unbounded: stretching the embedding
        gains more than the slack costs. Solving raises ``UnboundedError``
        naming the threshold.
    trace, trace_weight : {None, "min", "max"}, float
        Add :math:`\\pm\\tau\\,\\mathrm{tr}\\,G` (section 3.4.1).
    snr : float, optional
        Constraint :math:`\\sigma^2_{bcv} \\ge \\eta\\,\\sigma^2_{icv}` (10).
    ratio, ratio_weight : float, optional
        Constraint
        :math:`(\\sigma^2_{icv})^2/\\sigma^2_{bcv} \\le \\epsilon\\,\\sigma^2_{icv} + \\xi`,
        :math:`\\xi\\ge0`, with :math:`\\rho\\xi` added to the objective (11);
        a rotated second-order cone (``quad_over_lin``).
    normalize : bool
        Divide target distances by their mean (recorded as
        ``meta["distance_scale"]``); solutions are then in those units.
    reduce_face : bool
        Facial reduction. The centring constraints :math:`c^T X c = 0` with
        :math:`X\\succeq0` force :math:`Xc = 0`: every feasible :math:`X` lies on
        a proper face of the PSD cone, so no feasible point is strictly
        positive definite (Slater fails) and interior-point solvers can stall.
        With ``V`` an orthonormal basis of the orthogonal complement of the
        centring vectors, :math:`\\{X\\succeq 0: Xc = 0\\ \\forall c\\} =
        \\{VYV^T: Y\\succeq 0\\}`, so optimising over ``Y`` (size n - 1) is the
        same problem with the constraints holding by construction. For
        ``"eliminated"`` ``V`` is a Householder basis whose rows differ by unit
        vectors, which keeps the edge operator sparse.

    basis_rank : int, optional
        Reduced basis (Weinberger, Sha, Zhu & Saul 2007): optimise over
        :math:`G = QYQ^T` with ``Q`` the ``basis_rank`` bottom non-constant
        eigenvectors of the Laplacian of ``basis_graph``
        (:func:`~sdpembed.formulations.gram.laplacian_basis`), ``Y`` of size
        ``basis_rank``. A restriction, so its optimum is an upper bound on the
        full one. Needs ``centroids="eliminated"``.
    basis_graph : NeighborhoodGraph, optional
        Graph whose Laplacian gives the basis; default the DVU graph itself,
        whose random long edges make a poor basis (``docs/tuning.md``): pass
        ``knn_graph(X, n_neighbors=8, n_random=0)`` when the data are at hand
        (the estimator does).

    Returns
    -------
    Formulation
        A :class:`~sdpembed.formulations.gram.GramFormulation`: the cvxpy
        problem is built on first use (``solver="LOWRANK"`` never builds it).
        ``expressions["gram"]`` is the n x n Gram matrix of the points;
        ``parameters`` hold the weights (re-solve without rebuilding).
    """
    _check_trace(trace, trace_weight)
    if centroids == "explicit" and trace is not None:
        # the trace of the lifted matrix would include centroid rows; keep the
        # trace term on the points only by using the eliminated form
        raise InputError("trace terms are defined on the point Gram matrix: use "
                         "centroids='eliminated' with trace=...")
    gp = dvu_problem(graph, y, distances=distances, slack_weight=slack_weight, trace=trace,
                     trace_weight=trace_weight, snr=snr, ratio=ratio, ratio_weight=ratio_weight,
                     normalize=normalize)
    variant = f"{centroids}/{distances}" + (f"/trace-{trace}" if trace else "") + \
        ("/snr" if snr is not None else "") + ("/ratio" if ratio is not None else "") + \
        ("/reduced-face" if reduce_face else "")
    equations = "(3)-(9)" + (", (10)" if snr is not None else "") + \
        (", (11)" if ratio is not None else "") + (", sec. 3.5" if distances == "quadratic" else "")
    parameters = gram_parameters(gp)
    trace_sign = float(np.sign(gp.trace_weight)) or 1.0
    meta = {"distance_scale": gp.meta["distance_scale"], "classes": gp.meta["classes"],
            "paper": DVU_PAPER,
            "unbounded_hint": _UnboundedHint(gp, parameters, trace_sign),
            "centroids": centroids, "reduce_face": reduce_face, "trace_sign": trace_sign}
    if centroids == "explicit":
        if basis_rank is not None or basis_graph is not None:
            raise InputError("basis_rank needs centroids='eliminated' (the reduced basis is a "
                             "basis of the points' Gram matrix)")
        lifted = _explicit_problem(gp, len(gp.meta["classes"]))
        basis = functools.partial(sla.null_space, lifted.centering_vectors().T) \
            if reduce_face else None
        size = lifted.n - lifted.centering_vectors().shape[1] if reduce_face else lifted.n
        return build_gram_formulation(lifted, basis=basis, centered_basis=reduce_face,
                                      method="dvu", variant=variant, equations=equations,
                                      basis_size=size, parameters=parameters,
                                      extra_meta={**meta, "eliminated_problem": gp,
                                                  "basis_rank": None})
    basis, size = gram_basis(gp, reduce_face, basis_rank, basis_graph)
    if basis_rank is not None:
        variant += f"/basis-{int(basis_rank)}"
    return build_gram_formulation(gp, basis=basis, centered_basis=reduce_face or basis_rank
                                  is not None, method="dvu", variant=variant,
                                  equations=equations, basis_size=size, parameters=parameters,
                                  extra_meta={**meta, "basis_rank": basis_rank})

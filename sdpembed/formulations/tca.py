"""Transductive Component Analysis and its orthogonal variant (Liu, Tao & Liu, ICDM 2008).

Operators (and the re-derivation of eqs. 10, 17, 18, 27) are in
:mod:`sdpembed.scatter.tca`. Samples are rows; ``X`` is centred over all
points and already reduced by the optional PCA step 4.

**TCA** (eqs. 20-21) is a generalized eigenproblem. With
:math:`A = XSX^T + \\beta X_lM_lX_l^T` and :math:`B = X_lD_lX_l^T \\succ 0`,

.. math::

   \\min_{U^T B U = I_r} \\mathrm{tr}(U^TAU)
   \\;=\\; \\min_{Z\\in\\mathbb S^p} \\langle A, Z\\rangle
   \\quad\\text{s.t.}\\quad 0 \\preceq B^{1/2}ZB^{1/2} \\preceq I,\\
   \\langle B, Z\\rangle = r,

exact (the congruence :math:`W = B^{1/2}ZB^{1/2}` maps the feasible set onto
the Fantope; Ky Fan). The paper's one-vector problem (20) is the case r = 1;
its multi-vector solution "eigenvectors of the r lowest eigenvalues of (21)" is
this problem's optimum, :math:`\\sum_{i\\le r}\\lambda_i(A, B)`.

**OTCA** (eqs. 22-27) has no eigenproblem: step k solves the convex quadratic
program (25) over directions orthogonal to the previous ones,

.. math::

   \\min_{a}\\ a^T\\big(XSX^T + \\beta X_lM_lX_l^T\\big)a
            + \\gamma\\lVert X_l^Ta - Y_{\\cdot k}\\rVert^2
   \\quad\\text{s.t.}\\quad a_j^Ta = 0,\\ j < k,

which the paper solves in closed form through a QR basis of the orthogonal
complement, :math:`a = E_{k-1}b` (eqs. 23-27;
:func:`sdpembed.scatter.tca.otca_basis`). :func:`otca_step_formulation` states
the same step as a cvxpy problem with the orthogonality as linear equality
constraints (no QR), so a conic solver gives an independent check.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from .._params import NONNEGATIVE, POSITIVE, POSITIVE_INT, RANK_TOL_RANGE, declared
from .._typing import ArrayLike
from ..exceptions import InputError
from ..graphs import NeighborhoodGraph
from ..relaxations import RANK_TOL, Pencil, formulate_reduced
from ..scatter.tca import TCAOperators, tca_operators
from ._base import Formulation

__all__ = ["TCA_PARAMETERS", "OTCA_STEP_PARAMETERS", "tca_pencil", "tca_formulation",
           "otca_step_formulation", "otca_objective", "TCA_EQUATIONS", "OTCA_EQUATIONS",
           "TCA_PAPER"]

#: Paper equations implemented by TCA and OTCA.
TCA_EQUATIONS = ("4", "10", "12", "15", "17", "18", "19", "20", "21")
OTCA_EQUATIONS = ("22", "23", "24", "25", "26", "27")
TCA_PAPER = "Liu, Tao & Liu, Transductive Component Analysis (ICDM 2008)"

#: declared constraints of the parameters of :func:`tca_formulation`, checked on every call
#: and read by the estimators :class:`~sdpembed.estimators.TCA` and
#: :class:`~sdpembed.estimators.OTCA`
TCA_PARAMETERS = {
    "n_components": [POSITIVE_INT],
    "alpha": [POSITIVE],
    "beta": [NONNEGATIVE],
    "n_neighbors": [POSITIVE_INT],
    "sigma": [POSITIVE, None],
    "graph": [NeighborhoodGraph, None],
    "regularization": [NONNEGATIVE],
    "rank_tol": [RANK_TOL_RANGE],
}

#: declared constraints of the parameters of :func:`otca_step_formulation`, checked on
#: every call and read by the estimator :class:`~sdpembed.estimators.OTCA`
OTCA_STEP_PARAMETERS = {
    "operators": [TCAOperators],
    "beta": TCA_PARAMETERS["beta"],
    "gamma": [POSITIVE],
    "n_components": TCA_PARAMETERS["n_components"],
}


@declared({"beta": TCA_PARAMETERS["beta"]})
def tca_pencil(operators: TCAOperators, *, beta: float) -> Pencil:
    """TCA's generalized eigenproblem (21) as a :class:`~sdpembed.relaxations.Pencil`.

    ``A`` = :math:`XSX^T + \\beta X_lM_lX_l^T`, ``B`` = :math:`X_lD_lX_l^T`,
    sense ``"min"``, kind ``"ratio_trace"``.
    """
    beta = float(beta)
    A, B = operators.pencil(beta)
    return Pencil(A, B, "min", "ratio_trace", {"beta": beta})


@declared(TCA_PARAMETERS)
def tca_formulation(X: ArrayLike, y: ArrayLike, n_components: int, *, alpha: float, beta: float,
                    n_neighbors: int = 5, sigma: float | None = None,
                    graph: NeighborhoodGraph | None = None, regularization: float = 0.0,
                    rank_tol: float = RANK_TOL) -> Formulation:
    """Build TCA's exact ratio-trace SDP (module docstring) from centred data.

    The rank-revealing step of :func:`sdpembed.relaxations.reduce_pencil`
    comes first: the common null space of :math:`A` and :math:`B` is
    removed and, without ``regularization``, the kernel of :math:`B` is
    eliminated exactly by the Schur complement (its generalized eigenvalues
    are :math:`+\\infty`), so a singular :math:`B` (more dimensions than
    labeled points) gives the finite eigenpairs of eq. (21).

    Parameters
    ----------
    X : ndarray, shape (n, p)
        Centred samples as rows (after the optional PCA step).
    y : ndarray of int, shape (n,)
        Class indices ``0 .. c-1``; ``-1`` unlabeled.
    n_components : int
        r.
    alpha, beta : float
        Smoothness (eq. 6) and margin (eq. 20) trade-offs.
    n_neighbors, sigma
        Unsupervised graph of eq. (4), built on ``X``.
    graph : NeighborhoodGraph, optional
        Weighted graph to use instead (the estimator builds it on the data
        before the PCA step, as the paper's Table 1 orders the steps).
    regularization : float
        Use :math:`B + rI`, :math:`r` absolute (never applied unless asked for).
    rank_tol : float
        Threshold of the rank-revealing step.

    Returns
    -------
    Formulation
        Variable ``"Z"`` in the reduced coordinates; ``meta["B"]`` for
        ``U = meta["reduction_basis"] @ recover_basis(Z, r, B=meta["B"])``.
    """
    ops = tca_operators(X, y, alpha=alpha, n_neighbors=n_neighbors, sigma=sigma, graph=graph)
    return formulate_reduced(tca_pencil(ops, beta=beta), n_components,
                             regularization=regularization, relative=False, rank_tol=rank_tol,
                             meta={"method": "tca", "variant": "ratio_trace",
                                   "equations": TCA_EQUATIONS, "paper": TCA_PAPER,
                                   "alpha": float(alpha)})


def _psd_factor(M: np.ndarray) -> np.ndarray:
    """``F`` with ``F.T @ F = M`` for a symmetric PSD ``M`` (negative round-off clipped)."""
    w, V = np.linalg.eigh(0.5 * (M + M.T))
    keep = w > max(w[-1], 0.0) * 1e-14
    return np.sqrt(w[keep])[:, None] * V[:, keep].T


@declared(OTCA_STEP_PARAMETERS)
def otca_step_formulation(operators: TCAOperators, *, beta: float, gamma: float,
                          n_components: int) -> Formulation:
    """One step of OTCA (eq. 25 under eq. 22) as a DPP cvxpy problem, re-solved per step.

    Expanding the squared fit of eq. (25), step k minimises
    :math:`a^TQa - 2\\gamma (X_lY_{\\cdot k})^Ta + \\gamma\\lVert Y_{\\cdot k}\\rVert^2`
    with :math:`Q = XSX^T + \\beta X_lM_lX_l^T + \\gamma X_lX_l^T`, over
    :math:`a` orthogonal to :math:`a_1, \\dots, a_{k-1}`. The constant is
    dropped and the problem is posed in the scaled variable
    :math:`\\hat a = (q/\\tau_k)\\,a`, with :math:`q = \\lambda_{\\max}(Q)`
    and :math:`\\tau_k = \\lVert\\gamma X_lY_{\\cdot k}\\rVert`:

    .. math::

       \\min_{\\hat a}\\ \\lVert F\\hat a\\rVert^2 - 2\\,t^T\\hat a
       \\quad\\text{s.t.}\\quad C\\hat a = 0,
       \\qquad F^TF = Q/q,

    the original objective divided by :math:`\\tau_k^2/q`, so that a conic solver
    sees unit-scale data whatever the scale of ``X`` and ``gamma`` (with
    :math:`\\gamma = 10^{-3}` the unscaled optimal value is tiny against an
    interior-point method's absolute tolerances). Parameters set per step:
    ``"target"`` :math:`t = \\gamma X_lY_{\\cdot k}/\\tau_k` (unit norm) and
    ``"previous"`` :math:`C`, whose first k-1 rows are the unit vectors
    :math:`a_j^T/\\lVert a_j\\rVert` and the rest zero. The equality
    constraints describe exactly the span of the paper's :math:`E_{k-1}`
    (eq. 24), so the optimum is the closed form (27):
    :math:`a_k = (\\tau_k/q)\\,\\hat a^*`. :func:`sdpembed.sequential.otca_sequence`
    runs the steps.

    Parameters
    ----------
    operators : TCAOperators
    beta, gamma : float
    n_components : int
        Number of steps r; ``"previous"`` has ``max(r - 1, 1)`` rows.

    Returns
    -------
    Formulation
        Variable ``"a_hat"`` (p,), parameters ``"target"`` and ``"previous"``;
        ``meta["Q"]``, ``meta["R"]`` (the unscaled :math:`Q` and
        :math:`\\gamma X_lY`) and ``meta["q"]``.
    """
    beta, gamma = float(beta), float(gamma)
    Q, R = operators.otca_system(beta, gamma)
    p = Q.shape[0]
    q = float(np.linalg.eigvalsh(Q)[-1])
    if not q > 0:
        raise InputError("OTCA: the quadratic form of eq. (26) is zero; check the data")
    F = _psd_factor(Q / q)
    a_hat = cp.Variable(p, name="a_hat")
    target = cp.Parameter(p, name="target")
    r = int(n_components)
    previous = cp.Parameter((max(r - 1, 1), p), name="previous")
    objective = cp.Minimize(cp.sum_squares(F @ a_hat) - 2 * (target @ a_hat))
    problem = cp.Problem(objective, [previous @ a_hat == 0])
    return Formulation(problem, {"a_hat": a_hat}, {"target": target, "previous": previous},
                       meta={"method": "otca", "variant": "sequential-qp",
                             "equations": OTCA_EQUATIONS, "paper": TCA_PAPER,
                             "statement": (
                                 "minimize     ||F a||^2 - 2 target^T a  over a in R^p"
                                 "   (F^T F = Q / q)",
                                 "subject to   previous a = 0   (one step of the OTCA "
                                 "sequence: eq. 25 under eq. 22)"),
                             "beta": beta, "gamma": gamma,
                             "Q": Q, "R": R, "q": q})


def otca_objective(Q: ArrayLike, R: ArrayLike, A: ArrayLike, gamma: float,
                   class_sizes: ArrayLike) -> np.ndarray:
    """Value of eq. (25) for each column :math:`a_k` of ``A``.

    :math:`a_k^TQa_k - 2R_{:,k}^Ta_k + \\gamma l_k` equals
    :math:`\\mathcal S(a_k) + \\beta\\mathcal M(a_k) + \\gamma\\lVert X_l^Ta_k -
    Y_{\\cdot k}\\rVert^2` since :math:`\\lVert Y_{\\cdot k}\\rVert^2 = l_k`.
    """
    A = np.asarray(A, dtype=float)
    r = A.shape[1]
    quad = np.einsum("ik,ij,jk->k", A, Q, A)
    return quad - 2 * np.einsum("ik,ik->k", R[:, :r], A) + float(gamma) * np.asarray(
        class_sizes, dtype=float)[:r]

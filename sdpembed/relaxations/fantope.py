"""The exact SDPs of the three problem families over the Fantope."""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from .._typing import ArrayLike
from ..formulation import Formulation
from .pencil import _check_d, _check_pencil, _check_sense, _check_symmetric, _inner, _objective


# --------------------------------------------------------------------- Fantope
def fantope_constraints(Y: cp.Expression, d: int) -> list:
    r"""Constraints of the Fantope.

    :math:`\mathcal{F}_d = \{0 \preceq Y \preceq I,\ \operatorname{tr} Y = d\}`.

    :math:`\mathcal{F}_d` is the convex hull of the rank-:math:`d` orthogonal
    projectors :math:`\{P P^\top : P^\top P = I_d\}` (Overton & Womersley 1992).

    Parameters
    ----------
    Y : cvxpy expression, shape (p, p)
        Symmetric matrix variable or affine expression.
    d : int
        Target dimension, ``1 <= d <= p``.
    """
    p = Y.shape[0]
    d = _check_d(d, p)
    return [Y >> 0, np.eye(p) - Y >> 0, cp.trace(Y) == d]


def fantope_trace(A: ArrayLike, d: int, *, sense: str = "min") -> Formulation:
    r"""Trace optimisation over orthonormal bases as an exact Fantope SDP.

    .. math::

        \min_{P^\top P = I_d} \operatorname{tr}(P^\top A P)
        \;=\; \min_{Y \in \mathbb{S}^p} \langle A, Y\rangle
        \quad\text{s.t.}\quad 0 \preceq Y \preceq I,\ \operatorname{tr} Y = d .

    Exact by Ky Fan's theorem: the optimum is :math:`\sum_{i \le d} \lambda_i(A)`
    (ascending eigenvalues; the :math:`d` largest for ``sense="max"``), attained
    at :math:`Y = P P^\top` with :math:`P` the matching eigenvectors, unique
    when :math:`\lambda_d < \lambda_{d+1}`.

    Parameters
    ----------
    A : array-like, shape (p, p)
        Symmetric cost matrix.
    d : int
        Target dimension.
    sense : {"min", "max"}

    Returns
    -------
    Formulation
        Variable ``"Y"``; recover ``P`` with :func:`recover_basis`.
    """
    _check_sense(sense)
    A = _check_symmetric(A, "A")
    p = A.shape[0]
    d = _check_d(d, p)
    Y = cp.Variable((p, p), symmetric=True, name="Y")
    problem = cp.Problem(_objective(sense, _inner(A, Y)), fantope_constraints(Y, d))
    return Formulation(problem, {"Y": Y}, meta={
        "method": "fantope_trace", "variant": sense, "equations": ("Ky Fan 1949",),
        "kind": "trace", "d": d, "sense": sense, "statement": (
            f"{sense}imize     <A, Y>  over Y in S^{p}",
            "subject to   0 << Y << I,  tr Y = d   (the Fantope; exact by Ky Fan)")})


# ----------------------------------------------------------------- ratio trace
def ratio_trace(A: ArrayLike, B: ArrayLike, d: int, *, sense: str = "min",
                regularization: float = 0.0) -> Formulation:
    r"""Generalized eigenproblem :math:`A p = \lambda B p` as an exact SDP in :math:`Z = P P^\top`.

    .. math::

        \min_{P^\top B P = I_d} \operatorname{tr}(P^\top A P)
        \;=\; \min_{Z \in \mathbb{S}^p} \langle A, Z\rangle
        \quad\text{s.t.}\quad 0 \preceq B^{1/2} Z B^{1/2} \preceq I,\
        \langle B, Z\rangle = d .

    Tightness: with :math:`B \succ 0` the map :math:`W = B^{1/2} Z B^{1/2}` is
    a bijection of :math:`\mathbb{S}^p` that turns the feasible set into the
    Fantope :math:`\mathcal{F}_d` and the objective into
    :math:`\langle B^{-1/2} A B^{-1/2}, W\rangle`, so by Ky Fan the optimum is
    the sum of the :math:`d` smallest (``sense="max"``: largest) generalized
    eigenvalues of :math:`(A, B)`, attained at :math:`Z = P P^\top` with
    :math:`P` the :math:`B`-orthonormal generalized eigenvectors.

    The upper bound is imposed in the equivalent congruent form
    :math:`Z \preceq B^{-1}` (multiply :math:`B^{1/2} Z B^{1/2} \preceq I` by
    :math:`B^{-1/2}` on both sides), which keeps the constraint operator the
    identity instead of the dense :math:`p^2 \times p^2` map
    :math:`B^{1/2} \otimes B^{1/2}`.

    Parameters
    ----------
    A, B : array-like, shape (p, p)
        Symmetric, ``B`` positive definite.
    d : int
        Target dimension.
    sense : {"min", "max"}
    regularization : float, default 0
        Use :math:`B + r I`. Never applied unless asked for.

    Returns
    -------
    Formulation
        Variable ``"Z"``; ``meta["B"]`` holds the (regularised) ``B`` for
        ``recover_basis(Z, d, B=meta["B"])``.

    Raises
    ------
    SingularMatrixError
        ``B`` is singular and ``regularization`` is 0.
    """
    _check_sense(sense)
    A, B, d = _check_pencil(A, B, d, regularization)
    p = A.shape[0]
    B_inv = np.linalg.inv(B)
    B_inv = 0.5 * (B_inv + B_inv.T)
    Z = cp.Variable((p, p), symmetric=True, name="Z")
    constraints = [Z >> 0, B_inv - Z >> 0, _inner(B, Z) == d]
    problem = cp.Problem(_objective(sense, _inner(A, Z)), constraints)
    return Formulation(problem, {"Z": Z}, meta={
        "method": "ratio_trace", "variant": sense, "equations": ("Ky Fan 1949",),
        "kind": "ratio_trace", "d": d, "sense": sense, "B": B,
        "regularization": float(regularization), "statement": (
            f"{sense}imize     <A, Z>  over Z in S^{p}",
            "subject to   0 << Z << B^-1,  <B, Z> = d   (exact for B >> 0: "
            "B^1/2 Z B^1/2 is a Fantope point)")})


# ----------------------------------------------------------------- trace ratio
def trace_ratio(A: ArrayLike, B: ArrayLike, d: int, *, sense: str = "max",
                regularization: float = 0.0) -> Formulation:
    r"""Trace-ratio problem as one SDP through the Charnes–Cooper transformation.

    The Fantope relaxation of
    :math:`\max_{P^\top P = I_d} \operatorname{tr}(P^\top A P) / \operatorname{tr}(P^\top B P)`
    is :math:`\max_{Y \in \mathcal{F}_d} \langle A, Y\rangle / \langle B, Y\rangle`.
    With :math:`t = 1 / \langle B, Y\rangle` and :math:`\tilde Y = t Y` it becomes
    the SDP

    .. math::

        \max_{\tilde Y, t} \ \langle A, \tilde Y\rangle
        \quad\text{s.t.}\quad \langle B, \tilde Y\rangle = 1,\
        0 \preceq \tilde Y \preceq t I,\ \operatorname{tr} \tilde Y = d\, t,\ t \ge 0,

    whose optimum equals the trace-ratio optimum :math:`\lambda^*`, with
    :math:`Y = \tilde Y / t` (expression ``"Y_fantope"``).

    Tightness: a linear-fractional function with positive denominator is
    quasi-linear, so its maximum over the compact convex Fantope is attained
    at an extreme point, i.e. at a rank-:math:`d` projector :math:`P P^\top`;
    the relaxation therefore has the same optimum as the non-convex problem,
    and the Charnes–Cooper map is a bijection between the two feasible sets
    (Charnes & Cooper 1962). The denominator is positive on the Fantope iff the
    sum of the :math:`d` smallest eigenvalues of :math:`B` is positive.

    Parameters
    ----------
    A, B : array-like, shape (p, p)
        Symmetric; ``B`` positive semidefinite with positive sum of its
        ``d`` smallest eigenvalues.
    d : int
    sense : {"max", "min"}
    regularization : float, default 0
        Use :math:`B + r I`.

    Returns
    -------
    Formulation
        Variables ``"Y"`` (:math:`\tilde Y`) and ``"t"``; expression ``"Y_fantope"``.
    """
    _check_sense(sense)
    A, B, d = _check_pencil(A, B, d, regularization, need_definite=False)
    p = A.shape[0]
    Y = cp.Variable((p, p), symmetric=True, name="Y")
    t = cp.Variable(nonneg=True, name="t")
    constraints = [_inner(B, Y) == 1, Y >> 0, t * np.eye(p) - Y >> 0, cp.trace(Y) == d * t]
    problem = cp.Problem(_objective(sense, _inner(A, Y)), constraints)
    return Formulation(problem, {"Y": Y, "t": t}, meta={
        "method": "trace_ratio", "variant": f"charnes-cooper/{sense}",
        "equations": ("Charnes & Cooper 1962",), "kind": "trace_ratio", "d": d,
        "sense": sense, "B": B, "regularization": float(regularization), "statement": (
            f"{sense}imize     <A, Y>  over Y in S^{p}, t >= 0",
            "subject to   <B, Y> = 1,  0 << Y << t I,  tr Y = d t",
            f"             (Charnes-Cooper form of {sense} <A, W> / <B, W> over the Fantope, "
            "W = Y / t)")},
        expressions={"Y_fantope": Y / t})


def fantope_subproblem(A: ArrayLike, B: ArrayLike, d: int, *, sense: str = "max",
                       regularization: float = 0.0) -> Formulation:
    r"""Dinkelbach's subproblem :math:`\max_{Y \in \mathcal{F}_d} \langle A - \lambda B, Y\rangle`.

    Exact by Ky Fan for every fixed :math:`\lambda` (its optimum
    :math:`F(\lambda)` is the sum of the :math:`d` extreme eigenvalues of
    :math:`A - \lambda B`). Built once with :math:`\lambda` the
    ``cp.Parameter`` ``"lam"`` (DPP), so :func:`sdpembed.sequential.dinkelbach`
    re-solves it without recompiling.

    Parameters
    ----------
    A, B : array-like, shape (p, p)
        As for :func:`trace_ratio`.
    d : int
    sense : {"max", "min"}
    regularization : float
        Use :math:`B + r I`.

    Returns
    -------
    Formulation
        Variable ``"Y"``, parameter ``"lam"``; ``meta["A"]``, ``meta["B"]`` the
        validated (symmetrised, regularised) matrices.
    """
    _check_sense(sense)
    A, B, d = _check_pencil(A, B, d, regularization, need_definite=False)
    p = A.shape[0]
    Y = cp.Variable((p, p), symmetric=True, name="Y")
    lam = cp.Parameter(name="lam")
    expr = _inner(A, Y) - lam * _inner(B, Y)
    problem = cp.Problem(_objective(sense, expr), fantope_constraints(Y, d))
    assert problem.is_dpp()
    return Formulation(problem, {"Y": Y}, {"lam": lam}, meta={
        "method": "trace_ratio", "variant": f"dinkelbach/{sense}",
        "equations": ("Dinkelbach 1967",), "kind": "trace_ratio", "d": d, "sense": sense,
        "A": A, "B": B, "regularization": float(regularization), "statement": (
            f"{sense}imize     <A, Y> - lam <B, Y>  over Y in S^{p}",
            "subject to   0 << Y << I,  tr Y = d   (Dinkelbach's subproblem at lam)")})

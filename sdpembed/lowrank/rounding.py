"""Rounding allowances of a certificate whose :math:`\\lambda_{\\min}(S)` comes from a dense
``eigh`` (``CHECK_DENSE``): what the computed eigenvalue and dual value may be off by.

A dense ``eigh`` is backward stable: its eigenvalues are those of :math:`S + E` with
:math:`\\|E\\|_2` a modest multiple of :math:`n\\,\\epsilon\\,\\|S\\|`, and forming :math:`S`
itself adds rounding of the same size. Where the multipliers are of the objective's size that
is far below any ``tol``; where they grow to 1e7-1e9 (an equality problem without a
strictly feasible point, docs/tuning.md, "The barrier's pair where its multipliers are
large") it reaches ``tol``. A dense certificate therefore takes :math:`\\lambda_{\\min}(S)
\\ge \\mu - \\delta`, :math:`\\delta` = :func:`eigh_allowance`, instead of the computed
:math:`\\mu`, and lowers its dual value by the rounding of its sum (:func:`sum_allowance`);
the verified checks (sparse factorisation, dense Cholesky) include the first already.
"""

from __future__ import annotations

import numpy as np

from .penalty import DistancePenalty
from .space import FactorSpace

__all__ = ["eigh_allowance", "sum_allowance", "rounding_allowance"]


def eigh_allowance(space: FactorSpace, y: np.ndarray, nu: float | np.ndarray | None) -> float:
    """:math:`\\delta`: ``4 n eps`` times a bound on :math:`\\|S(y,\\nu)\\|_2`,
    :math:`\\|C\\|_F + \\sum_e |y_e|\\,\\|b_e\\|^2 + \\|S(0,\\nu) - C\\|_F`
    (:func:`_edge_part`): the backward error of ``eigh`` and of forming :math:`S`, so
    :math:`\\lambda_{\\min}(S) \\ge \\mu - \\delta` for the computed :math:`\\mu`."""
    n, eps = space.dim, np.finfo(float).eps
    size = space.objective_norm + _edge_part(space, y) + _rows_part(space, nu)
    return 4.0 * n * eps * size


def _rows_part(space: FactorSpace, nu: float | np.ndarray | None) -> float:
    """:math:`\\|S(0,\\nu) - C\\|_F = \\|\\nu_0H + \\sum_k z_kA_k\\|_F` (the SNR functional and
    the added rows; 0 without them or where their multipliers are 0)."""
    nu = space.duals(nu)
    eye, lin = np.eye(space.dim), None
    if space.H is not None and nu[0]:
        lin = nu[0] * space.apply_H(eye)
    if space.K is not None:
        z = space.user_part(nu)
        if np.any(z):
            lin = space.apply_K(eye, z) if lin is None else lin + space.apply_K(eye, z)
    return 0.0 if lin is None else float(np.linalg.norm(lin))


def _edge_part(space: FactorSpace, y: np.ndarray) -> float:
    r"""A bound on :math:`\|\sum_e y_e b_eb_e^T\|_2`, :math:`\sum_e |y_e|\,\|b_e\|^2`, with
    :math:`b_e` the edge's row of ``space.E``: :math:`2\|y\|_1` in the full space (the rows
    :math:`e_i - e_j`); on a basis :math:`b_e = Q^Ta_e`, whose norm can be far below
    :math:`\sqrt 2` (an edge nearly orthogonal to the basis carries a large multiplier that
    adds little to :math:`S`)."""
    if space.Q is None:
        return 2.0 * float(np.abs(y).sum())
    return float(np.abs(y) @ np.einsum("ij,ij->i", space.E, space.E))


def sum_allowance(pen: DistancePenalty, y: np.ndarray) -> float:
    """The rounding of the dual value's sum: ``eps`` times its number of terms times their
    size, :math:`|y|^T|\\bar d|`."""
    return np.finfo(float).eps * y.size * float(np.abs(y) @ np.abs(pen.t))


def rounding_allowance(space: FactorSpace, pen: DistancePenalty, y: np.ndarray,
                       nu: np.ndarray, W: np.ndarray) -> float:
    """The size of the rounding in a dense certificate of ``(y, nu)`` at the point ``W``:
    :func:`eigh_allowance` times the point's trace plus :func:`sum_allowance` (what the
    equality barrier's pair may lose at its own point, before it is certified)."""
    return eigh_allowance(space, y, nu) * float(np.sum(W * W)) + sum_allowance(pen, y)

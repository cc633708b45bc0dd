"""A :class:`~sdpembed.relaxations.Pencil` to its exact SDP, with or without the
rank-revealing step."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..exceptions import InputError
from ..formulation import Formulation
from .fantope import fantope_trace, ratio_trace, trace_ratio
from .pencil import RANK_TOL, Pencil, _check_kind, absolute_regularization
from .reduction import reduce_pencil


def formulate(pencil: Pencil, d: int, *, regularization: float = 0.0,
              meta: dict[str, Any] | None = None) -> Formulation:
    """Build the exact SDP of a :class:`Pencil` (dispatch on ``pencil.kind``).

    ``"trace"`` -> :func:`fantope_trace`, ``"ratio_trace"`` -> :func:`ratio_trace`,
    ``"trace_ratio"`` -> :func:`trace_ratio` (Charnes–Cooper). ``meta`` (and
    ``pencil.meta``) are merged over the relaxation's own meta, so method
    builders can record their name and the paper's equation numbers.
    """
    A, B, sense, kind = pencil[:4]
    _check_kind(kind)
    if kind == "trace":
        form = fantope_trace(A, d, sense=sense)
    elif kind == "ratio_trace":
        form = ratio_trace(A, B, d, sense=sense, regularization=regularization)
    else:
        form = trace_ratio(A, B, d, sense=sense, regularization=regularization)
    merged = {**form.meta, "relaxation": form.meta["method"], **(pencil.meta or {}),
              **(meta or {})}
    return Formulation(form.problem, form.variables, form.parameters, merged, form.expressions)


def formulate_reduced(pencil: Pencil, d: int, *, regularization: float = 0.0,
                      relative: bool = True, rank_tol: float = RANK_TOL,
                      meta: dict[str, Any] | None = None) -> Formulation:
    r"""The exact SDP of a pencil after the rank-revealing step (:func:`reduce_pencil`).

    Builds :func:`formulate` on :math:`(T^\top A T, T^\top B T)`; the variables
    live in the reduced coordinates, and a basis :math:`Q` recovered from the
    solution maps back as :math:`P = T Q` with :math:`T` =
    ``meta["reduction_basis"]`` (the identity when nothing was removed).

    Parameters
    ----------
    pencil : Pencil
    d : int
        Target dimension, at most the reduced size.
    regularization : float, default 0
        Ridge on the reduced :math:`B`; relative
        (:func:`absolute_regularization` of the reduced :math:`B`) unless
        ``relative=False``. A positive value makes the reduction remove only
        the null directions.
    relative : bool, default True
    rank_tol : float, default :data:`RANK_TOL`
    meta : dict, optional
        Merged into the formulation's ``meta``.

    Returns
    -------
    Formulation
        ``meta`` also holds ``"reduction_basis"`` (:math:`T`), ``"n_null"`` and
        ``"n_infinite"``.
    """
    red = reduce_pencil(pencil, rank_tol=rank_tol, regularized=float(regularization) > 0)
    reg = absolute_regularization(red.pencil.B, regularization) if relative \
        else float(regularization)
    if isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > red.rank:
        raise InputError(f"d={d} exceeds the {red.rank} informative direction(s) left by the "
                         f"rank-revealing step (rank_tol={rank_tol:g})")
    return formulate(red.pencil, d, regularization=reg, meta={
        **(meta or {}), "reduction_basis": red.basis, "n_null": red.n_null,
        "n_infinite": red.n_infinite})

"""Sweeps: one graph, several problems (slack weights, SNR values), each solve started
from the previous one's factor and multipliers (:func:`sdpembed.solvers.solve_sweep`); here
the multipliers' side, checked against the problem."""

from __future__ import annotations

import numpy as np

from ..exceptions import InputError
from .penalty import DistancePenalty
from .space import FactorSpace

__all__ = ["warm_multipliers"]


def warm_multipliers(space: FactorSpace, pen: DistancePenalty,
                     pair: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The starting multipliers ``(y, nu)`` of :class:`LowRankOptions` ``warm_multipliers``,
    checked against the problem (one ``y`` per edge, one ``nu`` per linear constraint) and,
    for ``distances="interval"``, clipped to its box :math:`|y_e|\\le w_e` (the domain of the
    penalty's conjugate: a slack weight lower than the previous one shrinks the box)."""
    y = np.array(pair[0], dtype=float)
    nu = np.array(pair[1], dtype=float)
    if y.shape != (pen.t.shape[0],):
        raise InputError(f"LOWRANK warm_multipliers: y has {y.size} entries, the problem "
                         f"{pen.t.shape[0]} distance rows (a solve on another graph?)")
    if nu.shape != (space.q,):
        raise InputError(f"LOWRANK warm_multipliers: nu has {nu.size} entries, the problem "
                         f"{space.q} linear constraints")
    if pen.mode == "interval":
        y = np.clip(y, -pen.w, pen.w)
    return y, nu

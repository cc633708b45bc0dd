"""Sweeps: one graph, several problems (slack weights, SNR values), each solve started
from the previous one's factor and multipliers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..exceptions import InputError
from .penalty import DistancePenalty
from .space import FactorSpace

__all__ = ["solve_sweep", "warm_multipliers"]


def warm_multipliers(space: FactorSpace, pen: DistancePenalty, pair) -> tuple[np.ndarray,
                                                                              np.ndarray]:
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


def solve_sweep(formulations: Iterable, *, warm: bool = True, **options: Any) -> list:
    r"""Solve a sequence of formulations on one graph by LOWRANK, each from the last.

    Parameters
    ----------
    formulations : iterable of Formulation
        Problems on the same points and graph, differing in what a sweep changes (e.g.
        ``dvu(graph, y, slack_weight=lam)`` for several ``lam``, or ``snr=`` values).
    warm : bool
        Start each solve after the first from the previous solve's factor
        (``warm_start``) and multipliers (``warm_multipliers``); ``False`` solves each
        cold (the reference a warm sweep is compared with).
    **options
        LOWRANK options (:class:`~sdpembed.lowrank.LowRankOptions`) for every solve;
        ``warm_start`` and ``warm_multipliers``, if given, apply to the first only.

    Returns
    -------
    list of SolveReport
        One per formulation, in order, as :func:`sdpembed.solve` returns them; each
        formulation holds its own solution. A warm start changes where a solve begins,
        not what it certifies: every report's gap is certified as in a cold solve.

    Raises
    ------
    SdpEmbedError
        As :func:`sdpembed.solve` (the sweep stops at the first failed solve).
    """
    from ..solvers import solve

    reports = []
    first = {k: options.pop(k) for k in ("warm_start", "warm_multipliers") if k in options}
    prev = None
    for k, f in enumerate(formulations):
        kw = dict(options)
        if k == 0:
            kw.update(first)
        elif warm and prev is not None:
            factor, multipliers = prev
            if factor is not None and np.any(factor):
                kw["warm_start"] = factor
            if multipliers is not None:
                kw["warm_multipliers"] = multipliers
        rep = solve(f, solver="LOWRANK", **kw)
        reports.append(rep)
        m = rep.extra.get("multipliers")
        prev = (getattr(f, "factor", None),
                None if m is None else (m["y"], m["nu"]))
    return reports

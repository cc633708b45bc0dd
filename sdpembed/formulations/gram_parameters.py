"""The weights of a Gram SDP kept as cvxpy Parameters, and their values read back."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import cvxpy as cp

from ..exceptions import InputError
from .gram_problem import GramProblem

#: the weights of a Gram SDP kept as cvxpy Parameters (re-solved without rebuilding)
PARAMETER_FIELDS = ("slack_weight", "trace_weight", "snr", "ratio", "ratio_weight")


def gram_parameters(gp: GramProblem) -> dict[str, cp.Parameter]:
    """The cvxpy Parameters of a :class:`GramProblem`'s weights, at the problem's values:
    ``slack_weight`` (interval, quadratic), ``trace_weight`` (with a trace term; its sign
    is the builder's), ``snr``, ``ratio`` and ``ratio_weight`` (when those constraints
    are present)."""
    params: dict[str, cp.Parameter] = {}

    def par(name, value):
        params[name] = cp.Parameter(nonneg=True, name=name, value=float(value))

    if gp.trace_weight != 0.0:
        par("trace_weight", abs(gp.trace_weight))
    if gp.distances in ("interval", "quadratic"):
        par("slack_weight", gp.slack_weight)
    if gp.snr is not None:
        par("snr", gp.snr)
    if gp.ratio is not None:
        par("ratio", gp.ratio)
        par("ratio_weight", gp.ratio_weight)
    return params


def with_parameter_values(gp: GramProblem, parameters: Mapping[str, cp.Parameter],
                          trace_sign: float = 1.0) -> GramProblem:
    """``gp`` with its weights replaced by the current values of ``parameters``
    (``trace_weight`` times ``trace_sign``: +1 minimises the trace, -1 maximises it)."""
    values = {}
    for name, par in parameters.items():
        if name not in PARAMETER_FIELDS:
            continue
        if par.value is None:
            raise InputError(f"parameter {name!r} has no value; set "
                             f"f.parameters[{name!r}].value before solving")
        values[name] = float(par.value)
    if "trace_weight" in values:
        values["trace_weight"] *= trace_sign
    return dataclasses.replace(gp, **values)

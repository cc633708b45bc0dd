"""The :class:`Formulation` contract shared by every problem builder (a leaf module: the
builders in :mod:`sdpembed.formulations` and :mod:`sdpembed.relaxations` import it)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import cvxpy as cp

__all__ = ["Formulation"]


def _frozen(d: Mapping | None) -> Mapping:
    return MappingProxyType(dict(d or {}))


@dataclass(frozen=True)
class Formulation:
    """A convex program built by one of the toolkit's builders.

    Attributes
    ----------
    problem : cvxpy.Problem
        The problem, ready for :func:`sdpembed.solve` or ``problem.solve``.
    variables : Mapping[str, cvxpy.Variable]
        Decision variables by name (each has ``name=`` set to the same key).
    parameters : Mapping[str, cvxpy.Parameter]
        Parameters that can be changed and re-solved without rebuilding
        (the problem is DPP). Empty when nothing is meant to be re-solved.
    meta : Mapping[str, Any]
        ``method``, ``variant``, ``equations`` (the paper's equation numbers)
        and method-specific data (e.g. the distance scale).
    expressions : Mapping[str, cvxpy.Expression]
        Derived quantities worth reading after a solve, e.g. ``"gram"``, the
        n x n Gram matrix when the variable is a reduced matrix ``Y`` with
        ``G = V Y V^T``. Their ``.value`` is computed with numpy on demand.
    """

    problem: cp.Problem
    variables: Mapping[str, cp.Variable]
    parameters: Mapping[str, cp.Parameter] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)
    expressions: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        for attr in ("variables", "parameters", "meta", "expressions"):
            object.__setattr__(self, attr, _frozen(getattr(self, attr)))
        for name, var in self.variables.items():
            if var.name() != name:
                raise ValueError(f"variable {var.name()!r} is stored under key {name!r}")
        for name, par in self.parameters.items():
            if par.name() != name:
                raise ValueError(f"parameter {par.name()!r} is stored under key {name!r}")

    def __reduce__(self):
        """Pickle support: mapping proxies become dicts and the problem's solver caches
        (compiled solver objects that cannot be pickled) are left out of the copy."""
        problem = copy.copy(self.problem)
        problem._solver_cache = {}
        problem._solver_stats = None
        if hasattr(problem, "_cache"):
            problem._cache = type(problem._cache)()
        return (type(self), (problem, dict(self.variables), dict(self.parameters),
                             dict(self.meta), dict(self.expressions)))

    @property
    def method(self) -> str:
        """The method's name (``meta["method"]``), e.g. ``"dvu"``, ``"lda"``."""
        return self.meta.get("method", "unknown")

    @property
    def variant(self) -> str | None:
        """The builder's variant (``meta["variant"]``), e.g. ``"eliminated/interval"``."""
        return self.meta.get("variant")

    @property
    def equations(self) -> str | tuple | None:
        """The paper's equation numbers the formulation implements (``meta["equations"]``)."""
        return self.meta.get("equations")

    def value(self, name: str):
        """Value of a variable, parameter or expression after a solve."""
        for table in (self.expressions, self.variables, self.parameters):
            if name in table:
                return table[name].value
        raise KeyError(
            f"{name!r} is not a variable, parameter or expression of this formulation; "
            f"known: {sorted({*self.variables, *self.parameters, *self.expressions})}"
        )

    def __repr__(self) -> str:  # pragma: no cover - cosmetic
        sizes = {k: v.shape for k, v in self.variables.items()}
        return f"Formulation(method={self.method!r}, variant={self.variant!r}, variables={sizes})"

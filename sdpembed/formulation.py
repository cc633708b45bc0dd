"""The :class:`Formulation` contract shared by every problem builder (a leaf module: the
builders in :mod:`sdpembed.formulations` and :mod:`sdpembed.relaxations` import it), and
:class:`ConeSizes`, the cones a conic solver receives, counted for its teaching view
(:meth:`Formulation.summary`)."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from math import prod
from types import MappingProxyType
from typing import Any

import cvxpy as cp

__all__ = ["Formulation", "ConeSizes", "cone_sizes"]


def _frozen(d: Mapping | None) -> Mapping:
    return MappingProxyType(dict(d or {}))


def shape_text(shape: tuple) -> str:
    """``"scalar"``, ``"23"`` or ``"4 x 4"``."""
    return "scalar" if len(shape) == 0 else " x ".join(str(int(k)) for k in shape)


@dataclass
class ConeSizes:
    r"""The cones of a conic program as a conic solver receives them.

    A conic solver sees :math:`\min c^Tx` s.t. :math:`b - Ax \in \mathcal K`, with
    :math:`\mathcal K` a product of a zero cone (equality rows), a nonnegative
    orthant (inequality rows, nonnegative variables), second-order cones and
    PSD cones; their sizes are what the solver's work grows with (an
    interior-point method factors a dense block of :math:`(s(s+1)/2)^2` entries
    per PSD cone of side :math:`s`).

    Attributes
    ----------
    zero : int
        Equality rows.
    nonneg : int
        Inequality rows and entries of nonnegative variables.
    soc : list of int
        Dimension of each second-order cone.
    psd : list of int
        Side of each PSD cone.
    other : dict of str to int
        Any other constraint kind (exponential, power cones), by count.
    """

    zero: int = 0
    nonneg: int = 0
    soc: list = field(default_factory=list)
    psd: list = field(default_factory=list)
    other: dict = field(default_factory=dict)

    def __add__(self, other: ConeSizes) -> ConeSizes:
        kinds = dict(self.other)
        for k, v in other.other.items():
            kinds[k] = kinds.get(k, 0) + v
        return ConeSizes(self.zero + other.zero, self.nonneg + other.nonneg,
                         self.soc + other.soc, self.psd + other.psd, kinds)

    def text(self) -> str:
        """One line: ``PSD 11 x 11; zero 0; nonnegative 69; second-order none``."""
        def cones(sizes, square):
            if not sizes:
                return "none"
            counts: dict[int, int] = {}
            for s in sizes:
                counts[s] = counts.get(s, 0) + 1
            return ", ".join((f"{k} of " if k > 1 else "")
                             + (f"{s} x {s}" if square else f"dim {s}")
                             for s, k in sorted(counts.items(), reverse=True))
        parts = [f"PSD {cones(self.psd, True)}", f"zero {self.zero}",
                 f"nonnegative {self.nonneg}", f"second-order {cones(self.soc, False)}"]
        parts += [f"{k} {v}" for k, v in sorted(self.other.items())]
        return "; ".join(parts)


def cone_sizes(constraints: Iterable[cp.Constraint] = (),
               variables: Iterable[cp.Variable] = ()) -> ConeSizes:
    """:class:`ConeSizes` of cvxpy ``constraints`` and the sign/PSD attributes of ``variables``.

    Counted at the modelling level, without compiling: exact for problems whose
    constraints are affine in the variables (every SDP of the toolkit); cones that
    cvxpy adds for non-affine atoms (``sqrt``, ``quad_over_lin``, ``sum_squares``)
    are not included (see :func:`nonaffine_atoms`).
    """
    from cvxpy.constraints import PSD, SOC, Equality, Inequality, NonNeg, NonPos, Zero

    out = ConeSizes()
    for c in constraints:
        if isinstance(c, (Equality, Zero)):
            out.zero += int(c.size)
        elif isinstance(c, (Inequality, NonNeg, NonPos)):
            out.nonneg += int(c.size)
        elif isinstance(c, PSD):
            out.psd.append(int(c.args[0].shape[0]))
        elif isinstance(c, SOC):
            out.soc += [int(k) for k in c.cone_sizes()]
        else:
            name = type(c).__name__
            out.other[name] = out.other.get(name, 0) + 1
    for v in variables:
        attrs = v.attributes
        if attrs.get("PSD") or attrs.get("NSD"):
            out.psd.append(int(v.shape[0]))
        elif any(attrs.get(a) for a in ("nonneg", "pos", "nonpos", "neg")):
            out.nonneg += int(prod(v.shape))
    return out


def nonaffine_atoms(problem: cp.Problem) -> list[str]:
    """Names of the non-affine atoms of ``problem`` (cvxpy adds cones for them when compiling)."""
    from cvxpy.atoms.affine.affine_atom import AffAtom

    return sorted({a.__name__ for a in problem.atoms() if not issubclass(a, AffAtom)})


def _value_text(value) -> str:
    if value is None:
        return "unset"
    try:
        return f"{float(value):.6g}"
    except (TypeError, ValueError):
        return "array " + shape_text(getattr(value, "shape", ()))


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

    def summary(self) -> str:
        """The program in plain-text math, with its sizes: a teaching view.

        The headline names the method, its variant, the paper and the equation
        numbers it implements (``meta["equations"]``); then the program as the
        builder states it (``meta["statement"]``), its variables, parameters
        (current values), constraints by kind and the cones a conic solver receives
        (:class:`ConeSizes`). cvxpy's own ``str(problem)`` prints every
        coefficient; this prints the structure. See also
        :meth:`~sdpembed.formulations.gram.GramFormulation.summary`, which reads
        the description of a Gram SDP without building its cvxpy problem.
        """
        lines = self._headline()
        statement = self.meta.get("statement")
        if statement:
            lines += [""] + [f"  {line}" for line in statement]
        facts = self._facts()
        if facts:
            lines += ["", *facts]
        problem = self.problem
        variables = problem.variables()
        lines += ["", "variables    " + ("; ".join(
            f"{v.name()}: {shape_text(v.shape)}" + _attributes_text(v) for v in variables)
            or "none")]
        lines.append(_parameters_line(self.parameters))
        lines.append("constraints  " + _constraints_text(problem.constraints))
        lines.append("cones        " + cone_sizes(problem.constraints, variables).text())
        atoms = nonaffine_atoms(problem)
        if atoms:
            lines.append("             plus the cones cvxpy adds for " + ", ".join(atoms))
        return "\n".join(lines)

    def describe(self) -> str:
        """Alias of :meth:`summary`."""
        return self.summary()

    def _headline(self) -> list[str]:
        head = self.method + (f" [{self.variant}]" if self.variant else "")
        relaxation = self.meta.get("relaxation")
        if relaxation and relaxation not in (self.method, self.variant):
            head += f", relaxation {relaxation}"
        lines = [head]
        if self.meta.get("paper"):
            lines.append(f"paper: {self.meta['paper']}")
        equations = self.equations
        if equations:
            eqs = equations if isinstance(equations, str) else ", ".join(map(str, equations))
            lines.append(f"equations: {eqs}")
        return lines

    def _facts(self) -> list[str]:
        """Sizes of the data the builder recorded (target dimension, reduced coordinates)."""
        meta, facts = self.meta, []
        if "d" in meta:
            facts.append(f"target dimension d = {meta['d']}")
        basis = meta.get("reduction_basis")
        if basis is not None and getattr(basis, "ndim", 0) == 2:
            facts.append(f"reduced coordinates: {basis.shape[1]} of {basis.shape[0]} dimensions "
                         f"({meta.get('n_null', 0)} common null, {meta.get('n_infinite', 0)} "
                         "infinite directions removed); P = T Q with T = meta['reduction_basis']")
        return facts

    def value(self, name: str) -> Any:
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


def _attributes_text(v) -> str:
    attrs = [a for a in ("PSD", "NSD", "symmetric", "nonneg", "nonpos", "pos", "neg")
             if v.attributes.get(a)]
    return (" " + ", ".join(attrs)) if attrs else ""


def _parameters_line(parameters: Mapping) -> str:
    return "parameters   " + ("; ".join(f"{k} = {_value_text(p.value)}"
                                         for k, p in parameters.items()) or "none")


def _constraints_text(constraints) -> str:
    """Constraints by kind: ``PSD: 2 (4 x 4, 4 x 4); equality: 1 (1 row)``."""
    from cvxpy.constraints import PSD, SOC, Equality, Inequality, NonNeg, NonPos, Zero

    kinds: dict[str, list] = {}
    for c in constraints:
        if isinstance(c, (Equality, Zero)):
            kinds.setdefault("equality", []).append(int(c.size))
        elif isinstance(c, (Inequality, NonNeg, NonPos)):
            kinds.setdefault("inequality", []).append(int(c.size))
        elif isinstance(c, PSD):
            kinds.setdefault("PSD", []).append(shape_text(c.args[0].shape))
        elif isinstance(c, SOC):
            kinds.setdefault("second-order", []).append(len(c.cone_sizes()))
        else:
            kinds.setdefault(type(c).__name__, []).append(1)
    parts = []
    for kind, sizes in kinds.items():
        if kind in ("equality", "inequality"):
            rows = sum(sizes)
            parts.append(f"{kind}: {len(sizes)} ({rows} row{'s' if rows != 1 else ''})")
        elif kind == "PSD":
            parts.append(f"PSD: {len(sizes)} ({', '.join(sizes)})")
        elif kind == "second-order":
            parts.append(f"second-order: {len(sizes)} ({sum(sizes)} cones)")
        else:
            parts.append(f"{kind}: {len(sizes)}")
    return "; ".join(parts) or "none"


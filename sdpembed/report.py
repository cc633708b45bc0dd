"""What a backend is and what a solve reports: :class:`SolveReport`, :class:`Backend`.

A leaf of the solve layer: backends (the toolkit's own, e.g. :mod:`sdpembed.lowrank`)
return a :class:`SolveReport` without importing :mod:`sdpembed.solvers`, which
dispatches to them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["SolveReport", "Backend", "bound_gap", "OBJECTIVE_RESOLUTION", "objective_unit"]

#: The share of the objective's size (its terms' magnitudes summed at the point) below
#: which an objective counts as zero in :func:`bound_gap` (the rule:
#: :mod:`sdpembed.solve_status`): a point feasible to ``FEASIBILITY_TOLERANCE`` (1e-5) has
#: an objective known to about that share of its terms' size, so a statement to
#: ``FAR_FROM_OPTIMAL`` (1e-2, relative) needs an objective of at least their ratio of it.
OBJECTIVE_RESOLUTION = 1e-3


def _finite(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def objective_unit(objective: float, scale: float | None) -> float:
    r""":math:`\max(|p|, u)`, :math:`u` = :data:`OBJECTIVE_RESOLUTION` times ``scale``, the
    size of the objective's terms at the point (no floor without one): the unit in which a
    price, a repair's cost or an absolute gap is made relative to the objective
    :math:`p` (that of :func:`bound_gap` where objective and bound agree)."""
    return max(abs(objective), OBJECTIVE_RESOLUTION * abs(_finite(scale) or 0.0))


def bound_gap(objective: float | None, bound: float | None,
              scale: float | None = None) -> float | None:
    r"""Signed relative gap :math:`(p - \ell) / \max(\min(|p|, |\ell|),\ u)` of an objective
    :math:`p` over a lower bound :math:`\ell` (``None`` if either is unknown), with the floor
    :math:`u` = :data:`OBJECTIVE_RESOLUTION` times ``scale``, the size of the objective's
    terms at the point (LOWRANK's ``extra["objective_scale"]``); without a scale there is
    no floor (:math:`u = 0`: the pure relative measure, the strictest).

    Negative when the bound lies above the objective; unlike
    :math:`|p - \ell| / \max(|p|, |\ell|)` it does not saturate at 2. Where the sign of
    :math:`p` and :math:`\ell` agree, :math:`\min(|p|, |\ell|) \le |p^\star|`, so a gap
    :math:`g` bounds the objective's relative error :math:`|p - p^\star| / |p^\star|` by
    :math:`g`; where the optimum is within the floor of 0 it bounds its error by :math:`gu`.
    A zero denominator (both 0, no scale) gives 0 where :math:`p = \ell`, else
    :math:`\pm\infty`.
    """
    p, lb, unit = _finite(objective), _finite(bound), _finite(scale)
    if p is None or lb is None:
        return None
    denominator = max(min(abs(p), abs(lb)), OBJECTIVE_RESOLUTION * abs(unit or 0.0))
    if denominator == 0.0:
        return 0.0 if p == lb else math.copysign(math.inf, p - lb)
    return (p - lb) / denominator


@dataclass(repr=False)
class SolveReport:
    """What a solve did and how well.

    ``objective`` is the optimal value of the formulation's objective as posed.
    ``gap`` and the residuals are the backend's own numbers (relative where the
    backend reports relative numbers; SCS's residuals relative to the size of their
    terms, its gap to the objective: :mod:`sdpembed.solve_status`).
    A conic backend's ``optimal_inaccurate`` solve states no ``gap``: its iterate is
    neither primal nor dual feasible, so the solver's number
    (``extra["solver_gap"]``) bounds nothing. ``certified_gap`` is set only by
    backends that compute a duality certificate themselves (the large-n solver)
    and is ``None`` otherwise: an uncertified gap is never reported as certified.
    ``bound`` is the proven lower bound on the optimum behind ``certified_gap``
    (``None`` without one); :attr:`bound_gap` is the signed relative gap of the
    objective over it, which does not saturate (see :mod:`sdpembed.solve_status`).
    ``selection`` says why ``solver="auto"`` chose the backend (``None`` when the caller
    named it).
    """

    status: str
    objective: float | None
    solver: str
    solver_version: str
    options: dict[str, Any]
    compile_seconds: float
    solve_seconds: float
    iterations: int | None = None
    primal_residual: float | None = None
    dual_residual: float | None = None
    gap: float | None = None
    certified_gap: float | None = None
    primal_infeasibility: float | None = None
    bound: float | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    selection: str | None = None

    @property
    def bound_gap(self) -> float | None:
        """:func:`bound_gap` of ``objective`` over ``bound``, its floor from the backend's
        ``extra["objective_scale"]`` (none without one)."""
        return bound_gap(self.objective, self.bound, self.extra.get("objective_scale"))

    @property
    def wall_seconds(self) -> float:
        return self.compile_seconds + self.solve_seconds

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["extra"] = {k: v for k, v in d["extra"].items()
                      if isinstance(v, (int, float, str, bool, type(None)))}
        return d

    def __repr__(self) -> str:
        """One line: backend, status, objective, times, iterations and gaps.

        The options, the attempts and the backend's extra numbers are in :meth:`summary`.
        """
        parts = [f"{self.solver} {self.solver_version}: {self.status}",
                 f"objective={_fmt(self.objective)}",
                 f"compile={self.compile_seconds:.2f}s", f"solve={self.solve_seconds:.2f}s",
                 f"iterations={_fmt(self.iterations)}", f"gap={_fmt(self.gap)}"]
        if self.certified_gap is not None:
            parts.append(f"certified_gap={_fmt(self.certified_gap)}")
        return f"SolveReport({', '.join(parts)})"

    __str__ = __repr__

    def summary(self) -> str:
        """Every field of the report, one a line: the short form, then the residuals and
        gaps, why ``solver="auto"`` chose the backend, the effective options, the attempts
        (fallbacks) and the backend's extra numbers."""
        def row(label: str, value: str) -> str:
            return f"  {label:<22}{value}"

        lines = [repr(self),
                 row("status", self.status),
                 row("objective", _fmt(self.objective, 12)),
                 row("solver", f"{self.solver} {self.solver_version}"),
                 row("selection", self.selection or "- (named by the caller)"),
                 row("seconds", f"compile {self.compile_seconds:.3f}, solve "
                                f"{self.solve_seconds:.3f}, wall {self.wall_seconds:.3f}"),
                 row("iterations", _fmt(self.iterations))]
        lines += [row(name, _fmt(getattr(self, name), 4))
                  for name in ("primal_residual", "dual_residual", "gap", "certified_gap",
                               "primal_infeasibility")]
        lines.append(row("options", "" if self.options else "-"))
        lines += [f"    {k} = {v!r}" for k, v in sorted(self.options.items())]
        lines.append(row("attempts", "" if self.attempts else "-"))
        lines += [f"    {a}" for a in self.attempts]
        scalars = {k: v for k, v in self.extra.items()
                   if isinstance(v, (int, float, str, bool, type(None)))}
        lines.append(row("extra", "" if self.extra else "-"))
        lines += [f"    {k} = {_fmt(v, 6)}" for k, v in scalars.items()]
        arrays = [k for k in self.extra if k not in scalars]
        if arrays:
            lines.append(f"    (not shown: {', '.join(arrays)})")
        return "\n".join(line.rstrip() for line in lines)


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def _always() -> bool:
    return True


def _accepts_all(formulation: Any) -> str | None:
    return None


@dataclass(frozen=True)
class Backend:
    """A backend that :func:`sdpembed.solve` dispatches to by ``name``.

    ``solve(formulation, verbose=..., **options) -> SolveReport`` writes the solution
    into the formulation's variables (or its factor) and raises the typed errors of
    :mod:`sdpembed.exceptions`; ``version()`` names the implementation; ``available()``
    says whether it can run here; ``refusal(formulation)`` says why it cannot solve a
    formulation exactly as posed (``None`` if it can), without solving it.
    """

    name: str
    solve: Callable[..., SolveReport]
    version: Callable[[], str]
    available: Callable[[], bool] = _always
    refusal: Callable[[Any], str | None] = _accepts_all

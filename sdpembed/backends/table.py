"""The conic backends, one declarative entry each.

Every cvxpy conic backend the toolkit runs (``"SCS"``, ``"CLARABEL"``, ``"CVXOPT"``,
``"SDPA"``, ``"MOSEK"``, and ``"CSDP"`` through its own plug-in) is one
:class:`ConicBackend` in :data:`CONIC_BACKENDS`. The solve layer
(:mod:`sdpembed.solvers`), the option checks (:mod:`sdpembed.backend_options`), the
rule that judges a result (:mod:`sdpembed.solve_status`), the size guard of the
eigenproblem relaxations and the tests all read the entry; none names a conic backend
in code. Adding a backend is :func:`register_conic_backend` with one entry::

    register_conic_backend(ConicBackend(
        name="MYSOLVER", cvxpy_name="MYSOLVER", settings={...}, test_tolerance=1e-5,
        install_hint="pip install mysolver"))

The toolkit's own backends (LOWRANK, and those of
:func:`sdpembed.solvers.register_backend`) solve a formulation themselves and are not
entries here.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import cvxpy as cp

from .. import _csdp
from ..exceptions import InputError
from . import settings as _settings
from .interfaces import (
    _CLARABEL_WITH_STATS,
    _CVXOPT_WITH_STATS,
    _SCS_WITH_SCALE,
    _SDPA_WITH_STATS,
    clarabel_stats,
    csdp_stats,
    generic_stats,
    mosek_licensed,
    scs_stats,
    sdpa_stats,
)
from .settings import Setting

__all__ = ["ConicBackend", "CONIC_BACKENDS", "register_conic_backend",
           "unregister_conic_backend", "conic_backend", "conic_backend_names",
           "backend_options_for", "CLARABEL_BYTES_PER_BLOCK_ENTRY", "EntryView"]


@dataclass(frozen=True)
class ConicBackend:
    """One conic backend: everything the toolkit needs to know to run and judge it.

    Attributes
    ----------
    name : str
        The name users pass as ``solve(..., solver=name)`` (upper case).
    cvxpy_name : str
        The solver's name in cvxpy (``cp.installed_solvers()``); it is installed when
        cvxpy lists it, unless ``usable`` says otherwise.
    settings : mapping of str to Setting
        The options it accepts, checked before any solve
        (:func:`sdpembed.backend_options.check_backend_options`).
    test_tolerance : float
        Relative distance from a recorded optimum within which its ``optimal`` solves
        pass ``tests/test_reference.py``.
    install_hint : str
        How to install it (shown when it is missing).
    interface : object, optional
        The cvxpy solver instance to run instead of ``cvxpy_name`` (a plug-in that
        keeps the statistics cvxpy drops); one instance, so that cvxpy's cache of a
        compiled parametric problem is reused across re-solves.
    package : str, optional
        The distribution whose version is reported (default ``name.lower()``).
    version : callable, optional
        Returns its version, instead of ``package``'s.
    usable : callable, optional
        Returns ``None`` when it can run here, else why not (e.g. ``"not
        installed"``); default: whether cvxpy lists ``cvxpy_name``.
    defaults : mapping
        Options applied unless the caller overrides them (recorded in the report).
    stats : callable
        Turns the solver's own statistics (cvxpy's ``extra_stats``, a dict) into
        ``primal_residual``, ``dual_residual``, ``gap`` and ``message``.
    interior_point : bool
        An interior-point method: memory grows like the fourth power of a PSD cone's
        side, so cones above :data:`~sdpembed.relaxations.MAX_INTERIOR_POINT_DIM` are
        refused, and its infeasibility certificate is a proof.
    absolute_residuals : bool
        Its ``stats`` reader reports absolute gap and residuals without the size of their
        terms (a registered backend whose unit is unknown): they are divided by
        :math:`\\max(1, |p|)` when judged, the only unit known there. The built-in entries
        report relative numbers (SCS's in the unit of its own terms at the point,
        :func:`~sdpembed.backends.interfaces.scs_stats`).
    near_optimal : float, optional
        The stricter limit its ``optimal_inaccurate`` solves are held to, for a backend
        whose gap and residuals do not bound the objective's error.
    memory_bytes : callable, optional
        Bytes it needs for PSD cones of the given sides (its memory model); ``None``
        where the build-time check of the Gram formulations covers it.
    auto_priority : int, optional
        Its place in ``solver="auto"``'s order (lower first); ``None``: never chosen.
    time_limit_option, tolerance_options
        The option that limits its time in seconds, and those that set its stopping
        tolerances (:func:`backend_options_for`). Verbosity is cvxpy's ``verbose=``
        for every entry.
    inaccurate_advice : str, optional
        What to do after an ``optimal_inaccurate`` solve.
    limits : callable, optional
        The iteration and time limits (``None`` where none) a solve with the given options
        runs under, the solver's defaults included: an ``optimal_inaccurate`` solve that
        used them up was cut (:func:`sdpembed.solvers.solve` refuses it, see
        :mod:`sdpembed.solve_status`).
    limit_options : str
        The options that raise those limits, for the messages.
    stated_accuracy : callable, optional
        The absolute accuracy of the objective that its stopping tolerances state for a
        solve with the given options, at a point whose objective's terms have the given
        size (SCS: its gap test, ``eps_abs + eps_rel`` times that size). An ``optimal``
        point whose rows' violations, priced at its own multipliers, buy more of its
        objective than that (in the objective's unit) and more than
        :data:`~sdpembed.solve_status.VIOLATION_WORTH` did not reach what its tolerances
        promise: :func:`sdpembed.solvers.solve` reports it ``optimal_inaccurate`` and rule
        5 of :mod:`sdpembed.solve_status` judges it. ``None``: its ``optimal`` points are
        not judged by their price (interior-point backends, see that module).
    """

    name: str
    cvxpy_name: str
    settings: Mapping[str, Setting]
    test_tolerance: float
    install_hint: str
    interface: Any = None
    package: str | None = None
    version: Callable[[], str] | None = None
    usable: Callable[[], str | None] | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)
    stats: Callable[[dict], dict[str, Any]] = generic_stats
    interior_point: bool = True
    absolute_residuals: bool = False
    near_optimal: float | None = None
    memory_bytes: Callable[[Sequence[int]], int] | None = None
    auto_priority: int | None = None
    time_limit_option: str | None = None
    tolerance_options: tuple[str, ...] = ()
    inaccurate_advice: str | None = None
    limits: Callable[[Mapping[str, Any]], tuple[float | None, float | None]] | None = None
    limit_options: str = ""
    stated_accuracy: Callable[[Mapping[str, Any], float], float] | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or self.name != self.name.upper():
            raise InputError(f"a backend's name is an upper-case string; got {self.name!r}")
        if not (isinstance(self.test_tolerance, float) and 0 < self.test_tolerance < 1):
            raise InputError(f"{self.name}: test_tolerance is a number in (0, 1); got "
                             f"{self.test_tolerance!r}")
        for option in (self.time_limit_option, *self.tolerance_options):
            if option is not None and option not in self.settings:
                raise InputError(f"{self.name}: {option!r} is not one of its settings")

    def solver(self) -> Any:
        """What ``cvxpy.Problem.solve(solver=...)`` is given."""
        return self.cvxpy_name if self.interface is None else self.interface

    def why_unusable(self) -> str | None:
        """``None`` when it can run here, else why not (e.g. ``"not installed"``)."""
        if self.usable is not None:
            return self.usable()
        return None if self.cvxpy_name in cp.installed_solvers() else "not installed"

    def solver_version(self) -> str:
        if self.version is not None:
            return self.version()
        try:
            return importlib.metadata.version(self.package or self.name.lower())
        except importlib.metadata.PackageNotFoundError:
            return "unknown"


#: bytes per entry of CLARABEL's dense block of a PSD cone (peak resident memory over
#: block entries, calibrated on a DVU solve; ``docs/tuning.md``)
CLARABEL_BYTES_PER_BLOCK_ENTRY = 56


def _clarabel_memory(sides: Sequence[int]) -> int:
    """CLARABEL factors a dense block of :math:`(s(s+1)/2)^2` entries per PSD cone."""
    return int(CLARABEL_BYTES_PER_BLOCK_ENTRY * sum((s * (s + 1) // 2) ** 2 for s in sides))


def _limits(iterations: str, default: int, seconds: str | None = None,
            no_time: float = 0.0) -> Callable[[Mapping[str, Any]], tuple[float | None,
                                                                         float | None]]:
    """The ``limits`` of an entry whose options ``iterations`` (solver default ``default``)
    and ``seconds`` (``no_time`` or less: none) set them."""
    def limits(options: Mapping[str, Any]) -> tuple[float | None, float | None]:
        cap = options.get(iterations, default)
        t = options.get(seconds) if seconds is not None else None
        return (float(cap) if cap is not None else None,
                float(t) if t is not None and float(t) > no_time else None)
    return limits


def _scs_stated_accuracy(options: Mapping[str, Any], terms: float) -> float:
    """SCS's gap test at convergence: :math:`|x^TPx + c^Tx + b^Ty| \\le` ``eps_abs`` +
    ``eps_rel`` :math:`\\max(|x^TPx|, |c^Tx|, |b^Ty|)` (``terms``), its defaults where the
    options do not set them."""
    return float(options.get("eps_abs", 1e-4)) + float(options.get("eps_rel", 1e-4)) * terms


def _cvxopt_limits(options: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """CVXOPT's ``maxiters`` (cvxpy's ``max_iters`` sets it; default 100); no time limit."""
    return float(options.get("maxiters", options.get("max_iters", 100))), None


def _mosek_limits(options: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """MOSEK's interior-point iteration limit (``MSK_IPAR_INTPNT_MAX_ITERATIONS``, default
    400) and ``MSK_DPAR_OPTIMIZER_MAX_TIME`` (default none), from ``mosek_params`` by
    either spelling of the name."""
    params = {str(k).upper().removeprefix("MSK_IPAR_").removeprefix("MSK_DPAR_")
              .removeprefix("IPARAM.").removeprefix("DPARAM."): v
              for k, v in dict(options.get("mosek_params") or {}).items()}
    t = params.get("OPTIMIZER_MAX_TIME")
    return (float(params.get("INTPNT_MAX_ITERATIONS", 400)),
            float(t) if t is not None and float(t) > 0 else None)


def _mosek_usable() -> str | None:
    if "MOSEK" not in cp.installed_solvers():
        return "not installed"
    return None if mosek_licensed() else "installed but has no licence"


def _csdp_usable() -> str | None:
    return None if _csdp.csdp_executable() is not None else _csdp.csdp_problem()


_S = _settings
_BUILT_IN = (
    ConicBackend(
        "CLARABEL", "CLARABEL", {**_S.CVXPY_SETTINGS, **_S._CLARABEL}, 1e-6,
        "pip install clarabel", interface=_CLARABEL_WITH_STATS, stats=clarabel_stats,
        memory_bytes=_clarabel_memory, auto_priority=1, time_limit_option="time_limit",
        tolerance_options=("tol_gap_abs", "tol_gap_rel", "tol_feas"),
        limits=_limits("max_iter", 200, "time_limit"), limit_options="max_iter, time_limit"),
    ConicBackend(
        "SCS", "SCS", {**_S.CVXPY_SETTINGS, **_S._SCS}, 1e-4, "pip install scs",
        interface=_SCS_WITH_SCALE,
        defaults={"eps_abs": 1e-6, "eps_rel": 1e-6, "max_iters": 50_000}, stats=scs_stats,
        interior_point=False, near_optimal=1e-4, auto_priority=4,
        time_limit_option="time_limit_secs", tolerance_options=("eps_abs", "eps_rel"),
        inaccurate_advice="raise max_iters or use an interior-point backend (CLARABEL, CSDP)",
        limits=_limits("max_iters", 50_000, "time_limit_secs"),
        limit_options="max_iters, time_limit_secs", stated_accuracy=_scs_stated_accuracy),
    ConicBackend(
        "MOSEK", "MOSEK", {**_S.CVXPY_SETTINGS, **_S._MOSEK}, 1e-6,
        "pip install 'sdpembed[mosek]' and put a licence file in ~/mosek/mosek.lic",
        usable=_mosek_usable, auto_priority=2, tolerance_options=("eps",),
        limits=_mosek_limits, limit_options="mosek_params MSK_IPAR_INTPNT_MAX_ITERATIONS, "
        "MSK_DPAR_OPTIMIZER_MAX_TIME"),
    ConicBackend(
        "CVXOPT", "CVXOPT", {**_S.CVXPY_SETTINGS, **_S._CVXOPT}, 1e-5,
        "pip install 'sdpembed[cvxopt]'  (or: pip install cvxopt)",
        interface=_CVXOPT_WITH_STATS, tolerance_options=("abstol", "reltol", "feastol"),
        limits=_cvxopt_limits, limit_options="maxiters"),
    ConicBackend(
        "SDPA", "SDPA", {**_S.CVXPY_SETTINGS, **_S._SDPA}, 1e-5,
        "pip install 'sdpembed[sdpa]'  (or: pip install sdpa-python)", package="sdpa-python",
        interface=_SDPA_WITH_STATS, stats=sdpa_stats,
        tolerance_options=("epsilonStar", "epsilonDash"),
        limits=_limits("maxIteration", 100), limit_options="maxIteration"),
    ConicBackend(
        "CSDP", "CSDP", {**_S.CVXPY_SETTINGS, **_S._CSDP}, 1e-5, _csdp.CSDP_INSTALL_HINT,
        interface=_csdp.CSDPConif(), version=_csdp.csdp_version, usable=_csdp_usable,
        stats=csdp_stats, auto_priority=3, time_limit_option="time_limit",
        tolerance_options=("axtol", "atytol", "objtol"),
        limits=_limits("maxiter", 100, "time_limit"), limit_options="maxiter, time_limit"),
)

#: backend name -> its entry, in order of preference (the order of
#: :func:`sdpembed.solvers.available_solvers`)
CONIC_BACKENDS: dict[str, ConicBackend] = {b.name: b for b in _BUILT_IN}


def register_conic_backend(entry: ConicBackend, *, replace: bool = False) -> None:
    """Add ``entry`` to :data:`CONIC_BACKENDS` (``replace=True`` to change an entry)."""
    if not isinstance(entry, ConicBackend):
        raise InputError(f"register_conic_backend takes a ConicBackend; got "
                         f"{type(entry).__name__}")
    if entry.name in CONIC_BACKENDS and not replace:
        raise InputError(f"a conic backend named {entry.name!r} is registered already; "
                         "pass replace=True to change it")
    CONIC_BACKENDS[entry.name] = entry


def unregister_conic_backend(name: str) -> None:
    """Remove the entry ``name`` from :data:`CONIC_BACKENDS`."""
    CONIC_BACKENDS.pop(str(name).upper(), None)


def conic_backend(name: str) -> ConicBackend | None:
    """The entry of ``name`` (case-insensitive), or ``None``."""
    return CONIC_BACKENDS.get(str(name).upper())


def conic_backend_names() -> tuple[str, ...]:
    return tuple(CONIC_BACKENDS)


def conic_alternatives() -> str:
    """The registered conic backends as an error message names them: ``"A, B or C"``."""
    names = list(CONIC_BACKENDS)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def backend_options_for(name: str, *, time_limit: float | None = None,
                        tol: float | None = None) -> dict[str, Any]:
    """The options of backend ``name`` that mean "stop after ``time_limit`` seconds" and
    "stop at tolerance ``tol``" (every stopping tolerance of the entry set to ``tol``).

    Raises :class:`~sdpembed.exceptions.InputError` if the backend has no such option.
    """
    entry = conic_backend(name)
    if entry is None:
        raise InputError(f"{name!r} is not a conic backend; choose from "
                         f"{', '.join(CONIC_BACKENDS)}")
    out: dict[str, Any] = {}
    if time_limit is not None:
        if entry.time_limit_option is None:
            raise InputError(f"{entry.name} has no time-limit option; set its iteration "
                             "limit instead")
        out[entry.time_limit_option] = time_limit
    if tol is not None:
        if not entry.tolerance_options:
            raise InputError(f"{entry.name} has no tolerance option")
        out.update({key: tol for key in entry.tolerance_options})
    return out


class EntryView(Mapping):
    """A read-only mapping backend name -> one field of its entry (live: a backend
    registered later appears), holding the backends where ``keep(value)``."""

    def __init__(self, get: Callable[[ConicBackend], Any],
                 keep: Callable[[Any], bool] = lambda v: True) -> None:
        self._get, self._keep = get, keep

    def _items(self) -> dict[str, Any]:
        return {k: self._get(b) for k, b in CONIC_BACKENDS.items() if self._keep(self._get(b))}

    def __getitem__(self, key: str) -> Any:
        return self._items()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def __repr__(self) -> str:
        return repr(self._items())

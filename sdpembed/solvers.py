"""Solver layer: one ``solve()`` for every backend, a :class:`SolveReport` for every solve.

Backends are chosen by name with ``solver=``:

* every installed cvxpy conic solver that accepts PSD cones
  (``"SCS"``, ``"CLARABEL"``, ``"CVXOPT"``, ``"SDPA"``, ``"MOSEK"`` when licensed);
* ``"CSDP"``, the DVU paper's solver, through an SDPA file (:mod:`sdpembed._csdp`);
* the toolkit's own backends (``TOOLKIT_BACKENDS``: ``"LOWRANK"``, the large-n solver of
  :mod:`sdpembed.lowrank`) and any registered with :func:`register_backend`.

A status other than optimal raises a typed error from :mod:`sdpembed.exceptions`;
``optimal_inaccurate`` warns with :class:`~sdpembed.exceptions.InaccurateSolutionWarning`.
Fallbacks happen only when asked for (``fallback=[...]``) and are recorded in
:attr:`SolveReport.attempts`.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import cvxpy as cp
import numpy as np

from ._checks import describe_value
from .backend_options import check_backend_options
from .backends.interfaces import generic_stats
from .backends.table import CLARABEL_BYTES_PER_BLOCK_ENTRY, CONIC_BACKENDS, EntryView
from .exceptions import (
    InaccurateSolutionWarning,
    InfeasibleError,
    InputError,
    ProblemTooLargeError,
    SdpEmbedError,
    SolverFailedError,
    SolverLimitError,
    SolverMissingError,
    UnboundedError,
    warn,
)
from .formulation import Formulation
from .formulations.gram_problem import rigidity_note
from .lowrank.backend import BACKEND as _LOWRANK
from .relaxations import MAX_INTERIOR_POINT_DIM
from .report import Backend, SolveReport
from .solve_status import VIOLATION_WORTH, check_result, gap_in_objective_unit, priced_beyond
from .violation_worth import repaired_worth, violation_worth

__all__ = ["SolveReport", "solve", "solve_sweep", "available_solvers", "register_backend",
           "solver_version", "INSTALL_HINTS"]

logger = logging.getLogger(__name__)

#: The conic backends of cvxpy that accept PSD cones, in order of preference: the
#: entries of :data:`sdpembed.backends.CONIC_BACKENDS` built in, bar CSDP (kept for
#: code that named it; the table is what the toolkit reads).
CVXPY_SDP_SOLVERS = ("CLARABEL", "SCS", "MOSEK", "CVXOPT", "SDPA")

#: How to install each conic backend (each entry's ``install_hint``; a live view).
INSTALL_HINTS = EntryView(lambda b: b.install_hint)

#: Defaults applied unless the caller overrides them (recorded in the report): each
#: entry's ``defaults``, a live view.
DEFAULT_OPTIONS = EntryView(lambda b: b.defaults)


# --------------------------------------------------------------------- registry
#: the backends besides cvxpy's conic solvers and CSDP, by name: the toolkit's own
#: (LOWRANK) and those added with :func:`register_backend`; each entry says how to
#: solve, whether it can run here, its version and what it refuses
TOOLKIT_BACKENDS: dict[str, Backend] = {b.name: b for b in (_LOWRANK,)}


def register_backend(name: str, solve_fn: Callable[..., SolveReport], *,
                     available: Callable[[], bool] = lambda: True,
                     version: Callable[[], str] = lambda: "sdpembed",
                     refusal: Callable[[Formulation], str | None] = lambda f: None) -> None:
    """Register a backend ``solve_fn(formulation, verbose=..., **options) -> SolveReport``.

    The function must write the solution into the formulation's variables and
    raise the typed errors of :mod:`sdpembed.exceptions` on failure.
    ``refusal(formulation)`` returns why the backend cannot solve a formulation
    exactly as posed (``None`` if it can), without solving; ``solver="auto"`` uses it.
    The backend becomes an entry of :data:`TOOLKIT_BACKENDS`.
    """
    key = name.upper()
    TOOLKIT_BACKENDS[key] = Backend(key, solve_fn, version=version, available=available,
                                    refusal=refusal)


def available_solvers() -> list[str]:
    """Names of the backends usable here, for ``solve(..., solver=NAME)``."""
    names = [k for k, b in CONIC_BACKENDS.items() if b.why_unusable() is None]
    names += [k for k, b in TOOLKIT_BACKENDS.items() if b.available()]
    return names


def solver_version(name: str) -> str:
    name = name.upper()
    if name in TOOLKIT_BACKENDS:
        return TOOLKIT_BACKENDS[name].version()
    entry = CONIC_BACKENDS.get(name)
    return "unknown" if entry is None else entry.solver_version()


# ------------------------------------------------------------------------ solve
def solve(formulation: Formulation, solver: str = "auto", verbose: bool = False, *,
          fallback: Sequence[str] | None = None, **options: Any) -> SolveReport:
    """Solve a :class:`~sdpembed.formulations.Formulation` with the named backend.

    Parameters
    ----------
    formulation : Formulation
        Built by one of the toolkit's builders (or by hand).
    solver : str
        Backend name, see :func:`available_solvers`. Case-insensitive. ``"auto"``
        (default) picks one that fits (:func:`choose_backend`) and says why in
        ``report.selection``; backend options then need the backend named.
    verbose : bool
        Pass the backend's own progress output through.
    fallback : sequence of str, optional
        Backends to try, in order, if ``solver`` fails numerically
        (:class:`SolverFailedError` only; infeasible or unbounded problems are
        not retried). Every attempt is recorded in ``report.attempts``.
    **options
        Backend options (e.g. SCS ``eps_abs``, CSDP ``axtol``), merged over
        :data:`DEFAULT_OPTIONS` and recorded in ``report.options``. A cvxpy backend
        starts cold (cvxpy's ``warm_start=False``) unless ``warm_start=True`` is given:
        no option or point of an earlier solve of the same formulation carries over
        (with ``warm_start=True`` the point may, an option never).

    Returns
    -------
    SolveReport

    Raises
    ------
    SolverMissingError, InfeasibleError, UnboundedError, SolverFailedError
    """
    if not isinstance(formulation, Formulation):
        raise InputError("solve() takes a Formulation built by sdpembed.formulations; "
                         f"got {type(formulation).__name__}")
    if not isinstance(verbose, (bool, np.bool_)):  # SCS would fail on it after compiling
        raise InputError(f"verbose must be True or False; got {describe_value(verbose)}")
    selection = None
    if isinstance(solver, str) and solver.lower() == "auto":
        solver, selection = choose_backend(formulation)
        refuse_options_under_auto(options, (solver, selection))
    chain = [solver, *_check_fallback(fallback)]
    _check_inputs(formulation)
    attempts: list[dict[str, Any]] = []
    for k, name in enumerate(chain):
        try:
            report = _solve_typed(formulation, name, verbose, options if k == 0 else {})
        except SolverFailedError as exc:
            attempts.append({"solver": str(name).upper(), "error": str(exc)})
            if k + 1 < len(chain):
                logger.warning("%s failed (%s); falling back to %s as requested",
                               name, exc, chain[k + 1])
                continue
            raise
        report.attempts = attempts + [{"solver": report.solver, "status": report.status}]
        report.selection = selection
        return report
    raise AssertionError("unreachable")  # pragma: no cover


def refuse_options_under_auto(options: Mapping[str, Any] | None,
                              chosen: tuple[str, str] | None = None) -> None:
    """``InputError`` when backend ``options`` come with ``solver="auto"``: they are one
    backend's settings, so the backend must be named. ``chosen``: the backend ``"auto"``
    picked and why (``None``: not picked yet, e.g. an estimator before its fit). Shared by
    :func:`solve` and the estimators' ``solver_options``."""
    if not options:
        return
    what = "picks the backend per problem" if chosen is None else \
        f"picks the backend per problem and chose {chosen[0]} ({chosen[1]})"
    example = "LOWRANK" if chosen is None else chosen[0]
    raise InputError(f"solver='auto' {what}; the options {sorted(options)} are backend "
                     f"settings: name the backend, e.g. solver={example!r}")


def _check_fallback(fallback) -> list[str]:
    """The fallback backends as a list of names, checked before any backend runs."""
    if fallback is None:
        return []
    if isinstance(fallback, str) or not isinstance(fallback, Sequence):
        raise InputError(f"fallback takes a list of backend names, e.g. fallback=['SCS']; got "
                         f"{describe_value(fallback)}")
    names = list(fallback)
    known = set(CONIC_BACKENDS) | set(TOOLKIT_BACKENDS)
    for k, name in enumerate(names):
        if not isinstance(name, str) or name.upper() not in known:
            raise InputError(f"fallback item {k} ({describe_value(name)}) is not a backend "
                             f"name; choose from {available_solvers()}")
    return names


def _check_inputs(formulation: Formulation) -> None:
    """What no backend can solve, refused before any runs: a parameter without a value or
    with a non-finite one, and (Gram SDPs) the added constraints that
    :func:`~sdpembed.formulations.constraints.check_added_constraints` refuses."""
    from .formulations.gram import GramFormulation

    if isinstance(formulation, GramFormulation):
        params = list(formulation.parameters.values())
        for c in formulation.user_constraints:
            params += c.parameters()
    else:
        params = formulation.problem.parameters()
    for par in params:
        if par.value is None:
            raise InputError(f"the parameter {par.name()!r} has no value; set its .value "
                             "before solving")
        if not np.all(np.isfinite(np.asarray(par.value, dtype=float))):
            raise InputError(f"the parameter {par.name()!r} has a non-finite value "
                             f"({describe_value(par.value)}); give it a finite one")
    if isinstance(formulation, GramFormulation) and formulation.user_constraints:
        from .formulations.constraints import check_added_constraints

        check_added_constraints(formulation)


def _solve_typed(formulation: Formulation, name, verbose: bool, options) -> SolveReport:
    """:func:`_solve_once`, with an error of a backend's own code that is not one of the
    toolkit's (a bug, or data the checks missed) turned into
    :class:`~sdpembed.exceptions.SolverFailedError`, the original chained."""
    try:
        return _solve_once(formulation, name, verbose, options)
    except SdpEmbedError:
        raise
    except (ArithmeticError, ValueError, TypeError, LookupError, AttributeError,
            np.linalg.LinAlgError) as exc:
        raise SolverFailedError(
            f"{str(name).upper()} failed on {formulation.method} with {type(exc).__name__}: "
            f"{exc}. This is not a property of the problem that sdpembed recognised; try "
            f"another backend (available: {available_solvers()}) and please report it.") from exc


#: Gram SDPs on more points than this go to LOWRANK under solver="auto" (see choose_backend)
AUTO_LOWRANK_MIN_POINTS = 30


def choose_backend(formulation: Formulation) -> tuple[str, str]:
    """The backend ``solver="auto"`` picks for ``formulation``, and why.

    * A Gram SDP (DVU, MVU) on more than :data:`AUTO_LOWRANK_MIN_POINTS` points, or
      one whose dense cvxpy problem would not fit in memory, goes to ``"LOWRANK"``
      when LOWRANK can represent it (no ratio constraint, added constraints affine
      in :math:`G`): its iterations cost :math:`O((n + m)r)` where an interior-point
      backend factors a dense system in :math:`O(n^4)` memory, and it reports a
      certified gap.
    * Anything else goes to the first interior-point backend that fits in memory
      (``"CLARABEL"``, ``"MOSEK"``, ``"CSDP"``), else to ``"SCS"`` (first order,
      memory :math:`O(n^2)`); a PSD cone larger than
      :data:`~sdpembed.relaxations.MAX_INTERIOR_POINT_DIM` goes to ``"SCS"``, as
      :func:`~sdpembed.relaxations.check_sdp_size` refuses interior-point backends
      there. A backend the memory guard would refuse is never chosen; if none fits,
      :class:`~sdpembed.exceptions.ProblemTooLargeError` says what would.
    """
    from .formulations.gram import GramFormulation
    from .formulations.memory import _check_memory

    available = available_solvers()
    gram = isinstance(formulation, GramFormulation)
    refusal = "not installed"
    if gram and "LOWRANK" in available:
        refusal = TOOLKIT_BACKENDS["LOWRANK"].refusal(formulation)
    if gram:
        n = formulation.n_points
        try:
            _check_memory(formulation.psd_size, formulation.n_edges, formulation.method)
            dense_fits = True
        except ProblemTooLargeError:
            dense_fits = False
        if refusal is None and (n > AUTO_LOWRANK_MIN_POINTS or not dense_fits):
            why = (f"a Gram SDP on {n} points: the low-rank solver with a duality certificate"
                   + ("" if dense_fits else "; the dense problem would not fit in memory"))
            return "LOWRANK", why
        if not dense_fits:
            raise ProblemTooLargeError(
                f"{formulation.method} on {n} points: the dense problem would not fit in "
                f"memory and LOWRANK cannot solve it as posed ({refusal}); drop what LOWRANK "
                "refuses, or use a reduced basis (basis_rank=30)")
        sides = [formulation.psd_size]
        note = ("" if refusal is None else f" (LOWRANK refuses it: {refusal})")
        small = f"a Gram SDP on {n} points{note}"
    else:
        sides = _psd_sides(formulation.problem)
        small = f"a {formulation.method} problem (not a Gram SDP)"
    candidates = sorted((b for b in CONIC_BACKENDS.values()
                         if b.auto_priority is not None and b.name in available),
                        key=lambda b: b.auto_priority)
    first_order = [b.name for b in candidates if not b.interior_point]
    side = max(sides, default=0)
    if not gram and side > MAX_INTERIOR_POINT_DIM and first_order:
        return first_order[0], (f"{small} with a {side} x {side} PSD cone, above the "
                                f"interior-point limit {MAX_INTERIOR_POINT_DIM}: "
                                f"{first_order[0]} needs O(p^2)")
    have = None
    for b in candidates:
        if not b.interior_point:
            continue
        if b.memory_bytes is not None:
            have = _available_memory() if have is None else have
            if b.memory_bytes(sides) > 0.8 * have:
                continue
        return b.name, f"{small}: an interior-point backend that fits in memory"
    if first_order:
        return first_order[0], (f"{small}: no interior-point backend fits in memory, "
                                f"{first_order[0]} needs O(n^2)")
    raise SolverMissingError(f"no backend available for {formulation.method}; "
                             f"{INSTALL_HINTS['SCS']}")


def _psd_sides(problem: cp.Problem) -> list[int]:
    sides = [c.args[0].shape[0] for c in problem.constraints if isinstance(c, cp.constraints.PSD)]
    return sides + [v.shape[0] for v in problem.variables()
                    if v.attributes.get("PSD") or v.attributes.get("NSD")]


def _available_memory() -> int:
    from .formulations.memory import available_memory

    return available_memory()


def _solve_once(formulation: Formulation, solver: str, verbose: bool, options) -> SolveReport:
    check_backend_options(solver, options)
    name = str(solver).upper()
    if name in TOOLKIT_BACKENDS:
        backend = TOOLKIT_BACKENDS[name]
        if not backend.available():
            raise SolverMissingError(f"backend {name} is not usable here")
        report = backend.solve(formulation, verbose=verbose, **options)
        _raise_for_status(report.status, formulation, name, report.extra.get("message", ""))
        _check_result(name, report.status, report.objective, report, formulation)
        if report.status == cp.OPTIMAL_INACCURATE:
            gap = "none" if report.certified_gap is None else f"{report.certified_gap:.2g}"
            # the backend's own word on why it stopped before its generic advice: where
            # LOWRANK stopped on a rule that more time cannot change, it says so
            advice = (report.extra.get("message") or report.extra.get("stop_advice")
                      or "raise the time or iteration limits")
            _warn_inaccurate(name, f"{formulation.method} (certified gap {gap})",
                             str(advice).rstrip("."))
        return report
    entry = _check_available(name)
    effective = {**entry.defaults, **options}
    problem = formulation.problem
    if hasattr(formulation, "set_factor"):
        formulation.set_factor(None)   # the variables now hold this backend's solution
    _check_backend_memory(problem, name, formulation.method)
    cvx_solver = entry.solver()
    t0 = time.perf_counter()
    try:
        # cold unless warm_start is asked: cvxpy warm-starts by default, and its CLARABEL
        # interface then updates the cached solver with these options over the previous
        # solve's settings, so a limit given once (max_iter=3) stayed for later solves
        with warnings.catch_warnings():
            # cvxpy's "Solution may be inaccurate" would point into this module; the
            # status is judged below and said at the caller's line (_warn_inaccurate)
            warnings.filterwarnings("ignore", message="Solution may be inaccurate",
                                    category=UserWarning)
            problem.solve(solver=cvx_solver, verbose=verbose,
                          **{"warm_start": False, **effective})
    except cp.error.SolverError as exc:
        said = str(exc).replace(f"'SDPEMBED_{name}'", f"'{name}'")  # our plug-ins' names
        if getattr(exc, "at_limit", False):   # stopped at its limit without an iterate
            raise SolverLimitError(
                f"{name} on {formulation.method} stopped at its iteration or time limit "
                f"before converging and returned no point: {said}. Raise the limit "
                f"({entry.limit_options or 'its iteration or time limit'}) and solve again, "
                "or use another backend.") from exc
        raise SolverFailedError(
            f"{name} failed on {formulation.method}: {said}. Try another backend "
            f"(available: {available_solvers()}), tighten/loosen tolerances, or rescale the "
            "data (normalize=True)."
        ) from exc
    except cp.error.ParameterError as exc:
        raise InputError(f"{name} on {formulation.method}: {exc}") from exc
    except (TypeError, ValueError) as exc:
        if "option" in str(exc).lower() or "argument" in str(exc).lower():
            raise InputError(f"invalid option for {name}: {exc}") from exc
        if "nan" in str(exc).lower() or "inf" in str(exc).lower():
            raise InputError(f"{name} on {formulation.method}: {exc} (a constant or parameter "
                             "value of the problem is not finite)") from exc
        raise
    wall = time.perf_counter() - t0
    stats = problem.solver_stats
    compile_s = float(getattr(problem, "compilation_time", None) or 0.0)
    solve_s = float(stats.solve_time) if stats and stats.solve_time is not None \
        else max(wall - compile_s, 0.0)
    extra = _extra_stats(name, stats.extra_stats if stats else None)
    status = problem.status
    iterations = int(stats.num_iters) if stats and stats.num_iters is not None else None
    if extra.pop("at_limit", False) or status == cp.USER_LIMIT or _used_up_limits(
            entry, effective, iterations, solve_s):
        if status in (cp.OPTIMAL_INACCURATE, cp.USER_LIMIT):
            extra["stopped_by_limit"] = True   # its last iterate, cut: refused below
    terms = None
    if extra.get("gap_terms") is not None:
        terms = extra.pop("gap_terms")
        if extra.get("absolute_gap") is not None:
            extra["gap"] = gap_in_objective_unit(extra["absolute_gap"], problem.value, terms)
        if extra.get("dual_effect") is not None:
            extra["dual_residual_effect"] = gap_in_objective_unit(
                extra.pop("dual_effect"), problem.value, terms)
    if status in (cp.OPTIMAL_INACCURATE, cp.USER_LIMIT) and extra.get("gap") is not None:
        # an iterate stopped before converging is neither primal nor dual feasible: its gap
        # bounds nothing, so the report makes no claim (solve_status judges the solver's)
        extra["solver_gap"] = extra.pop("gap")
    if not extra.get("stopped_by_limit"):
        _raise_for_status(status, formulation, name, extra.get("message", ""))
        # its rows' violations priced at its own multipliers (solve_status, rule 5)
        worth = violation_worth(formulation, problem.value, tolerance=VIOLATION_WORTH)
        if worth is not None:
            extra["violation_worth"] = worth
            if status == cp.OPTIMAL and entry.stated_accuracy is not None and terms is not None:
                status = _priced_beyond_stated(entry, effective, problem.value, terms, extra)
            if worth > VIOLATION_WORTH and status == cp.OPTIMAL_INACCURATE:
                # what the point's repair onto its rows proves (rule 5 keeps it on that)
                repaired = repaired_worth(formulation, problem.value)
                if repaired is not None:
                    extra["repaired_worth"] = repaired
        # what to try, should its point be refused for what its violations buy (rule 5)
        extra["advice"] = entry.inaccurate_advice or _inaccurate_advice(formulation)
        _check_result(name, status, problem.value, extra, formulation)
        extra.pop("advice")
    if extra.get("primal_residual") is None:
        extra["primal_residual"] = _max_violation(problem)
        extra["primal_residual_source"] = "max constraint violation computed by sdpembed"
    report = SolveReport(
        status=status,
        objective=float(problem.value) if problem.value is not None else None,
        solver=name,
        solver_version=solver_version(name),
        options=effective,
        compile_seconds=compile_s,
        solve_seconds=solve_s,
        iterations=iterations,
        primal_residual=extra.pop("primal_residual", None),
        dual_residual=extra.pop("dual_residual", None),
        gap=extra.pop("gap", None),
        extra=extra,
    )
    if extra.get("stopped_by_limit"):
        # a cut iterate: refused (SolverLimitError), its report on the error
        _check_result(name, status, report.objective, report, formulation)
    if status == cp.OPTIMAL_INACCURATE:
        advice = entry.inaccurate_advice or _inaccurate_advice(formulation)
        said = extra.get("message")
        _warn_inaccurate(name, formulation.method + (f" ({said})" if said else ""), advice)
    return report


def _priced_beyond_stated(entry, options: Mapping[str, Any], objective: float, terms: float,
                          extra: dict[str, Any]) -> str:
    """The status of an ``optimal`` point of a backend whose tolerances state an accuracy of
    the objective (its entry's ``stated_accuracy``, recorded in ``extra``): ``optimal``
    unless its price (``extra["violation_worth"]``) exceeds that accuracy, its own gap and
    :data:`~sdpembed.solve_status.VIOLATION_WORTH` (:func:`~sdpembed.solve_status.priced_beyond`,
    the rule LOWRANK shares); then ``optimal_inaccurate``, its gap no claim (``solver_gap``)
    and ``extra["message"]`` saying why (rule 5 judges it)."""
    stated = gap_in_objective_unit(entry.stated_accuracy(options, terms), objective, terms)
    if stated is None:
        return cp.OPTIMAL
    extra["stated_accuracy"] = stated
    said = priced_beyond(extra["violation_worth"], {
        f"the {{}} its tolerances ({', '.join(entry.tolerance_options)}) state": stated,
        "its own gap {}": extra.get("gap")})
    if said is None:
        return cp.OPTIMAL
    if extra.get("gap") is not None:
        extra["solver_gap"] = extra.pop("gap")
    extra["message"] = f"{extra.get('message') or 'converged'}; but {said}: optimal_inaccurate"
    return cp.OPTIMAL_INACCURATE


def _used_up_limits(entry, options: Mapping[str, Any], iterations: int | None,
                    seconds: float) -> bool:
    """Whether a conic solve used up the iteration or time limit of its options (its entry's
    ``limits``, the solver's defaults included): an unconverged stop there was a cut."""
    if entry.limits is None:
        return False
    cap, time_limit = entry.limits(options)
    return (cap is not None and iterations is not None and iterations >= cap) or (
        time_limit is not None and seconds >= time_limit)


def _check_result(name: str, status: str, objective, stats, formulation: Formulation) -> None:
    """:func:`~sdpembed.solve_status.check_result`, the error carrying the point returned
    (LOWRANK's factor, else the Gram matrix or the problem's first variable)."""
    try:
        check_result(name, status, objective, stats, what=formulation.method)
    except SolverFailedError as exc:
        exc.point = _point_of(formulation)
        raise


def _point_of(formulation: Formulation):
    factor = getattr(formulation, "factor", None)
    if factor is not None:
        return factor
    try:
        if "gram" in formulation.expressions:
            return formulation.value("gram")
        variables = list(formulation.variables.values())
        return variables[0].value if variables else None
    except Exception:  # noqa: BLE001 - the point is a courtesy of the error, never its cause
        return None


def _inaccurate_advice(formulation) -> str:
    """What to try after an interior-point backend's inaccurate answer on ``formulation``."""
    reduced = getattr(formulation, "reduce_face", None)      # None: not a Gram SDP
    if reduced is False:
        return ("try another backend, or build with reduce_face=True (without it the Gram SDP "
                "has no strictly feasible point and interior-point methods lose accuracy)")
    if reduced:
        distances = getattr(getattr(formulation, "gram_problem", None), "distances", None)
        example = (" (e.g. equality distances fixing a rank-deficient clique)"
                   if distances == "equality" else "")
        return ("try another backend; the face is already reduced, so the constraints may "
                f"leave no strictly feasible point{example}: LOWRANK reports an interval for "
                "such problems." + rigidity_note(distances or "")).rstrip(".")
    return "try another backend"


def _warn_inaccurate(name: str, what: str, advice: str) -> None:
    """The one InaccurateSolutionWarning of every backend; points at ``solve()``'s caller."""
    warn(f"{name} returned optimal_inaccurate on {what}: the solution is usable but "
                  f"less accurate than asked; {advice}.", InaccurateSolutionWarning)


#: CLARABEL's memory model (:data:`sdpembed.backends.table.CLARABEL_BYTES_PER_BLOCK_ENTRY`)
_CLARABEL_BYTES_PER_BLOCK_ENTRY = CLARABEL_BYTES_PER_BLOCK_ENTRY


def backend_memory_estimate(problem: cp.Problem, solver: str) -> int | None:
    """Bytes an interior-point backend needs for the PSD cones of ``problem`` (or ``None``).

    The backend entry's ``memory_bytes`` model: CLARABEL factors a dense block of
    :math:`(s(s+1)/2)^2` entries for every PSD cone of side :math:`s`, so its memory
    grows like :math:`s^4` (the calibration is in ``docs/tuning.md``). Backends without
    a model are covered by the build-time check of
    :class:`~sdpembed.formulations.gram.GramFormulation`.
    """
    entry = CONIC_BACKENDS.get(str(solver).upper())
    if entry is None or entry.memory_bytes is None:
        return None
    return int(entry.memory_bytes(_psd_sides(problem)))


def _check_backend_memory(problem: cp.Problem, solver: str, method: str) -> None:
    from .formulations.memory import available_memory

    need = backend_memory_estimate(problem, solver)
    if need is None:
        return
    have = available_memory()
    if need > 0.8 * have:
        raise ProblemTooLargeError(
            f"{solver} on {method} needs about {need / 2**30:.1f} GiB for its dense PSD blocks "
            f"but {have / 2**30:.1f} GiB is available. Use SCS or CSDP (memory ~ n^2), or, "
            "for the Gram SDPs (DVU, MVU), the large-n solver solver=\"LOWRANK\".")


def _max_violation(problem: cp.Problem) -> float | None:
    """Largest violation over all constraints (absolute), for backends that report none."""
    worst = 0.0
    try:
        for constraint in problem.constraints:
            v = np.asarray(constraint.violation(), dtype=float)
            if v.size:
                worst = max(worst, float(np.max(v)))
    except (ValueError, TypeError, np.linalg.LinAlgError):
        return None
    return worst


def _check_available(name: str):
    """The entry of conic backend ``name``, usable here; a typed error otherwise."""
    entry = CONIC_BACKENDS.get(name)
    if entry is None:
        raise InputError(f"unknown solver {name!r}; choose one of {available_solvers()}")
    why = entry.why_unusable()
    if why is not None:
        raise SolverMissingError(f"{name} is not usable ({why}); {entry.install_hint}")
    return entry


def _raise_for_status(status: str, formulation: Formulation, name: str, message: str = ""):
    where = f"{name} on {formulation.method} ({formulation.variant or ''})"
    if status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        hint = formulation.meta.get("infeasible_hint",
                                    "check that the constraints can hold together")
        raise InfeasibleError(f"{where}: the problem is infeasible. {hint}")
    if status in (cp.UNBOUNDED, cp.UNBOUNDED_INACCURATE):
        hint = formulation.meta.get("unbounded_hint", "add a bounding term or constraint")
        hint = hint() if callable(hint) else hint
        raise UnboundedError(f"{where}: the problem is unbounded. {hint}")
    if status == cp.USER_LIMIT:
        # a limit reached by a backend without an entry's reader (a cut conic solve is
        # refused with its report by _solve_once): not a result either
        raise SolverLimitError(
            f"{where} stopped at its iteration or time limit ({message or status}) before "
            "converging; its point is not a solution. Raise the limit (CLARABEL max_iter, "
            "time_limit) or try another backend.")
    if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise SolverFailedError(
            f"{where} stopped with status {status!r}{': ' + message if message else ''}. "
            "Try another backend, more iterations, or a better-scaled problem.")


def _extra_stats(name: str, raw) -> dict[str, Any]:
    """Residuals and gaps out of a backend's own statistics (its entry's ``stats``)."""
    if not isinstance(raw, dict):
        return {}
    entry = CONIC_BACKENDS.get(name)
    return dict((entry.stats if entry is not None else generic_stats)(raw))


def solve_sweep(formulations: Iterable, *, warm: bool = True, **options: Any) -> list:
    r"""Solve a sequence of formulations on one graph by LOWRANK, each from the last.

    Parameters
    ----------
    formulations : iterable of Formulation
        Problems on the same points and graph, differing in what a sweep changes (e.g.
        ``dvu(graph, y, slack_weight=lam)`` for several ``lam``, or ``snr=`` values).
    warm : bool
        Start each solve after the first from the previous solve's factor
        (``warm_start``) and multipliers (``warm_multipliers``,
        :func:`sdpembed.lowrank.sweep.warm_multipliers`); ``False`` solves each
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

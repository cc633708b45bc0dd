"""cvxpy's conic interfaces as the toolkit runs them, and what each backend reports.

cvxpy drops some of the statistics a solver returns; the interfaces here keep them
(CLARABEL's residuals and objectives, SDPA's gap and feasibility errors), and the
``*_stats`` readers turn each backend's own statistics into the ``primal_residual``,
``dual_residual``, ``gap`` and ``message`` of a :class:`~sdpembed.report.SolveReport`.
Each is named by its backend's entry in :data:`sdpembed.backends.CONIC_BACKENDS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import cvxpy.settings as cvxpy_settings
import numpy as np
from cvxpy.reductions.solvers.conic_solvers.clarabel_conif import CLARABEL as _ClarabelConif
from cvxpy.reductions.solvers.conic_solvers.cvxopt_conif import CVXOPT as _CvxoptConif
from cvxpy.reductions.solvers.conic_solvers.scs_conif import SCS as _ScsConif
from cvxpy.reductions.solvers.conic_solvers.sdpa_conif import SDPA as _SdpaConif

__all__ = ["scs_stats", "scs_term_sizes", "csdp_stats", "clarabel_stats", "sdpa_stats",
           "generic_stats", "mosek_licensed"]


class _ClarabelWithStats(_ClarabelConif):
    """cvxpy's CLARABEL interface that keeps Clarabel's residuals and objectives.

    cvxpy leaves ``solver_stats.extra_stats`` empty for Clarabel; this keeps the
    solution's primal and dual residuals and primal/dual objectives there, so the
    :class:`SolveReport` carries them.
    """

    def name(self):
        return "SDPEMBED_CLARABEL"   # cvxpy requires custom solvers to have their own name

    @staticmethod
    def parse_solver_opts(verbose, opts, settings=None):
        """Clarabel's settings from its defaults and ``opts`` only.

        With ``warm_start=True`` cvxpy updates its cached Clarabel solver and passes the
        cached solver's settings here as the base, so an option of an earlier solve
        (``max_iter=3``) stayed in force while ``report.options`` did not name it. The
        base is always ``clarabel.DefaultSettings()``: a solve runs with exactly the
        options it was given.
        """
        return _ClarabelConif.parse_solver_opts(verbose, opts, None)

    def invert(self, solution, inverse_data):
        out = super().invert(solution, inverse_data)
        out.attr[cvxpy_settings.EXTRA_STATS] = {
            key: getattr(solution, key, None)
            for key in ("r_prim", "r_dual", "obj_val", "obj_val_dual", "status")}
        return out


#: one instance, so that cvxpy's cache of a compiled parametric problem (keyed on the
#: solver) is reused across re-solves
_CLARABEL_WITH_STATS = _ClarabelWithStats()


class _KeepsStats:
    """The ``invert`` of a cvxpy conic interface whose ``solve_via_data`` keeps the
    solver's statistics under ``solution["sdpembed_stats"]``: they become cvxpy's
    ``extra_stats``, and their iteration count (key ``_ITERATIONS``) its ``num_iters``."""

    _ITERATIONS = "iterations"

    def invert(self, solution, inverse_data):
        out = super().invert(solution, inverse_data)
        kept = solution.get("sdpembed_stats", {})
        out.attr[cvxpy_settings.EXTRA_STATS] = kept
        if kept.get(self._ITERATIONS) is not None:
            out.attr[cvxpy_settings.NUM_ITERS] = int(kept[self._ITERATIONS])
        return out


class _SdpaWithStats(_KeepsStats, _SdpaConif):
    """cvxpy's SDPA interface that keeps SDPA's gap, feasibility errors and iterations.

    cvxpy drops the statistics ``sdpap.solve`` returns, so an SDPA solve stopped
    by ``maxIteration`` (phase ``pdFEAS``/``dFEAS``/``pFEAS``, mapped to
    ``optimal_inaccurate``) could not be judged: a point with a relative gap of 2
    passed as a result. This keeps ``dualityGap`` (relative,
    :math:`|p - d| / \\max(1, (|p| + |d|)/2)`), ``primalError``, ``dualError``,
    the phase and the iteration count, so
    :func:`~sdpembed.solve_status.check_result` can judge the point. The call
    is cvxpy's ``SDPA.solve_via_data`` (CLP form with ``b`` negated, a free cone
    ``K`` for ``x``), keeping what it discards.
    """

    _ITERATIONS = "iteration"

    def name(self):
        return "SDPEMBED_SDPA"   # cvxpy requires custom solvers to have their own name

    def solve_via_data(self, data, warm_start, verbose, solver_opts, solver_cache=None):
        import sdpap
        from cvxpy.reductions.solvers.conic_solvers.sdpa_conif import dims_to_solver_dict

        dims = dims_to_solver_dict(data[cvxpy_settings.DIMS])
        A, b, c = data[cvxpy_settings.A], data[cvxpy_settings.B], data[cvxpy_settings.C]
        K = sdpap.SymCone(f=c.shape[0])
        J = sdpap.SymCone(f=dims["f"], l=dims["l"], s=tuple(dims["s"]))
        opts = dict(solver_opts)
        opts.setdefault("print", "display" if verbose else "no")
        x, y, info, _, sdpainfo = sdpap.solve(A, -b, c, K, J, opts)
        status = self.STATUS_MAP[info["phasevalue"]]
        solution = {cvxpy_settings.STATUS: status,
                    "sdpembed_stats": {**info, "iteration": sdpainfo.get("iteration")}}
        if status in cvxpy_settings.SOLUTION_PRESENT:
            x, y = x.toarray(), y.toarray()
            solution[cvxpy_settings.VALUE] = info["primalObj"]
            solution[cvxpy_settings.PRIMAL] = x
            solution[cvxpy_settings.EQ_DUAL] = y[:dims["f"]]
            solution[cvxpy_settings.INEQ_DUAL] = y[dims["f"]:]
        return solution


_SDPA_WITH_STATS = _SdpaWithStats()


class _CvxoptWithStats(_KeepsStats, _CvxoptConif):
    """cvxpy's CVXOPT interface that keeps CVXOPT's gap, infeasibilities and iterations,
    and tells its iteration limit from a failure.

    CVXOPT's ``conelp`` stops at ``maxiters`` with status ``"unknown"`` and its last
    iterate, which cvxpy maps to a solver error like any numerical failure, dropping the
    iterate and every statistic. This keeps ``relative gap``, ``primal infeasibility``,
    ``dual infeasibility``, ``iterations`` and the status (cvxpy's ``extra_stats``), and
    reports a stop at ``maxiters`` with an iterate as cvxpy's ``user_limit`` (as cvxpy
    does for CLARABEL's ``MaxIterations``), so that it is refused as a cut solve
    (:class:`~sdpembed.exceptions.SolverLimitError`) with its iterate's report.
    """

    _AT_LIMIT = "sdpembed: maximum iterations"
    STATUS_MAP = {**_CvxoptConif.STATUS_MAP, _AT_LIMIT: cvxpy_settings.USER_LIMIT}

    def name(self):
        return "SDPEMBED_CVXOPT"   # cvxpy requires custom solvers to have their own name

    def solve_via_data(self, data, warm_start, verbose, solver_opts, solver_cache=None):
        import cvxopt.solvers

        conelp, kept = cvxopt.solvers.conelp, {}

        def kept_conelp(*args, **kwargs):
            out = conelp(*args, **kwargs)
            kept.update({k: out.get(k) for k in ("status", "iterations", "relative gap",
                                                 "primal infeasibility", "dual infeasibility")})
            cap = cvxopt.solvers.options.get("maxiters", 100)
            if out.get("status") == "unknown" and out.get("x") is not None \
                    and (out.get("iterations") or 0) >= cap:
                out = {**out, "status": self._AT_LIMIT}
            return out

        cvxopt.solvers.conelp = kept_conelp
        try:
            solution = super().solve_via_data(data, warm_start, verbose, solver_opts,
                                              solver_cache)
        finally:
            cvxopt.solvers.conelp = conelp
        solution["sdpembed_stats"] = kept
        return solution


_CVXOPT_WITH_STATS = _CvxoptWithStats()


class _ScsWithScale(_ScsConif):
    r"""cvxpy's SCS interface that keeps the size of SCS's terms at the point it returns.

    SCS reports absolute residuals and gap, :math:`\|Ax + s - b\|_\infty`,
    :math:`\|Px + A^Ty + c\|_\infty` and :math:`|x^TPx + c^Tx + b^Ty|`, and its stopping
    test measures each against the size of its own terms at the point,
    :math:`\max(\|Ax\|_\infty, \|s\|_\infty, \|b\|_\infty)`,
    :math:`\max(\|Px\|_\infty, \|A^Ty\|_\infty, \|c\|_\infty)` and
    :math:`\max(|x^TPx|, |c^Tx|, |b^Ty|)` (its ``eps_rel``). This keeps those three sizes
    (``sdpembed_scale``), computed from the problem data SCS was given and the point it
    returned, so that :func:`scs_stats` reports relative numbers in the constraints' own
    unit (not the objective's, nor 1).
    """

    def name(self):
        return "SDPEMBED_SCS"   # cvxpy requires custom solvers to have their own name

    def solve_via_data(self, data, warm_start, verbose, solver_opts, solver_cache=None):
        results = super().solve_via_data(data, warm_start, verbose, solver_opts, solver_cache)
        x, y, s = (results.get(k) for k in ("x", "y", "s"))
        if x is not None and y is not None and s is not None:
            results["sdpembed_scale"] = scs_term_sizes(
                data[cvxpy_settings.A], data[cvxpy_settings.B], data[cvxpy_settings.C],
                data.get(cvxpy_settings.P), x, y, s)
        return results


_SCS_WITH_SCALE = _ScsWithScale()


def scs_term_sizes(A: Any, b: np.ndarray, c: np.ndarray, P: Any, x: np.ndarray,
                   y: np.ndarray, s: np.ndarray) -> dict[str, float]:
    r"""The sizes of SCS's terms at the point ``(x, y, s)`` (:class:`_ScsWithScale`):
    ``primal`` :math:`\max(\|Ax\|, \|s\|, \|b\|)`, ``dual``
    :math:`\max(\|Px\|, \|A^Ty\|, \|c\|)`, ``gap`` :math:`\max(|x^TPx|, |c^Tx|, |b^Ty|)`
    (infinity norms); ``dual_effect`` :math:`|r^Tx|`, the dual residual
    :math:`r = Px + A^Ty + c` acting on the point: what it moves the dual bound by."""
    x, y, s = (np.asarray(v, dtype=float) for v in (x, y, s))
    b, c = np.asarray(b, dtype=float).ravel(), np.asarray(c, dtype=float).ravel()
    Px = P @ x if P is not None else np.zeros_like(x)

    def norm(v):
        return float(np.max(np.abs(v))) if np.size(v) else 0.0

    ATy = A.T @ y
    return {"primal": max(norm(A @ x), norm(s), norm(b)),
            "dual": max(norm(Px), norm(ATy), norm(c)),
            "gap": max(abs(float(x @ Px)), abs(float(c @ x)), abs(float(b @ y))),
            "dual_effect": abs(float((Px + ATy + c) @ x))}


def _num(v):
    try:
        v = float(v)
        return v if np.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def scs_stats(raw: Mapping[str, Any]) -> dict[str, Any]:
    """SCS's ``info``: its residuals made relative to the size of their own terms at the
    point (``sdpembed_scale``, :class:`_ScsWithScale`: SCS's own unit), its absolute gap
    (``absolute_gap``) with the size of the objective's terms (``gap_terms``), which
    :mod:`sdpembed.solvers` turns into a gap relative to the objective, and its status
    text. Without the sizes (no point returned) only the absolute numbers are kept."""
    info = raw.get("info", {})
    sizes = raw.get("sdpembed_scale")
    absolute = {"primal_residual": _num(info.get("res_pri")),
                "dual_residual": _num(info.get("res_dual")), "gap": _num(info.get("gap"))}
    out: dict[str, Any] = {f"absolute_{k}": v for k, v in absolute.items()}
    if sizes is not None:
        for key, unit in (("primal_residual", "primal"), ("dual_residual", "dual")):
            value, size = absolute[key], _num(sizes.get(unit))
            out[key] = None if value is None or size is None else (
                abs(value) / size if size > 0 else (0.0 if value == 0 else np.inf))
        # the gap is the objective's: made relative to the objective where it is known
        # (sdpembed.solvers, solve_status.gap_in_objective_unit), its terms' size the floor
        out["gap_terms"] = _num(sizes.get("gap"))
        out["dual_effect"] = _num(sizes.get("dual_effect"))
    out["message"] = str(info.get("status", ""))
    if "reached" in out["message"]:
        out["at_limit"] = True   # "solved (inaccurate - reached max_iters)" or time_limit_secs
    return out


def csdp_stats(raw: Mapping[str, Any]) -> dict[str, Any]:
    """CSDP's ``info`` (:mod:`sdpembed._csdp`): relative residuals, gap and exit code;
    ``at_limit`` when it stopped at its iteration limit."""
    info = raw.get("info", {})
    out = dict(primal_residual=_num(info.get("primal_infeasibility")),
               dual_residual=_num(info.get("dual_infeasibility")), gap=_num(info.get("gap")),
               message=str(info.get("status", "")), exit_code=info.get("exit_code"))
    if info.get("exit_code") == 4:
        out["at_limit"] = True   # CSDP's maxiter: its last iterate, judged as inaccurate
    return out


def clarabel_stats(raw: Mapping[str, Any]) -> dict[str, Any]:
    """What :class:`_ClarabelWithStats` keeps: residuals, and the gap from both objectives."""
    out: dict[str, Any] = dict(primal_residual=_num(raw.get("r_prim")),
                               dual_residual=_num(raw.get("r_dual")))
    p, d = _num(raw.get("obj_val")), _num(raw.get("obj_val_dual"))
    if p is not None and d is not None:
        # Clarabel's own relative gap measure (its stopping test)
        out["gap"] = abs(p - d) / max(1.0, min(abs(p), abs(d)))
    out["message"] = str(raw.get("status", ""))
    return out


def sdpa_stats(raw: Mapping[str, Any]) -> dict[str, Any]:
    """What :class:`_SdpaWithStats` keeps: relative gap, feasibility errors and the phase."""
    return dict(gap=_num(raw.get("dualityGap")), primal_residual=_num(raw.get("primalError")),
                dual_residual=_num(raw.get("dualError")),
                message=f"SDPA phase {raw.get('phasevalue')}")


def generic_stats(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The gap and infeasibilities of a backend that names them as cvxpy's CVXOPT does."""
    out: dict[str, Any] = {}
    for key, dest in (("gap", "gap"), ("relative gap", "gap"), ("primal infeasibility",
                      "primal_residual"), ("dual infeasibility", "dual_residual")):
        if key in raw:
            out[dest] = _num(raw[key])
    if isinstance(raw.get("status"), str):
        out["message"] = raw["status"]
    return out


def mosek_licensed() -> bool:
    try:
        import mosek

        with mosek.Env() as env:
            env.checkoutlicense(mosek.feature.pts)
        return True
    except Exception:  # noqa: BLE001 - any failure means "not usable"
        return False

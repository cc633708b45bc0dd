"""The settings each conic backend accepts, as tables (one per backend).

Each table lists the settings documented by the solver itself, with their types and
ranges (the sources are named in :mod:`sdpembed.backend_options`); a backend's entry
of :data:`sdpembed.backends.CONIC_BACKENDS` holds its table, and
:func:`check_settings` checks options against it.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .._checks import Boolean, Check, Integer, Number, Table, Text
from ..exceptions import InputError

__all__ = ["Setting", "check_settings", "CVXPY_SETTINGS"]

_U32 = 2**32 - 1


@dataclass(frozen=True)
class Setting:
    """One accepted option of a backend.

    Attributes
    ----------
    check : Check
        The values accepted (type and range).
    doc : str
        One line.
    writes_file : bool or callable
        True (or a predicate on the value) when the option makes the backend
        write a file at a path it names.
    """

    check: Check
    doc: str = ""
    writes_file: bool | Callable[[object], bool] = False

    def writes(self, value: object) -> bool:
        return self.writes_file(value) if callable(self.writes_file) else bool(self.writes_file)


def _s(check: Check, doc: str = "", writes_file=False) -> Setting:
    return Setting(check, doc, writes_file)


_POS = Number(0, lo_open=True)
_NONNEG = Number(0)
_UNIT_OPEN = Number(0, 1, lo_open=True, hi_open=True)
_FLAG = Integer(0, 1)

#: Options of cvxpy's ``Problem.solve`` that every cvxpy backend accepts.
_CVXPY = {
    "warm_start": _s(Boolean(), "start from the previous solution where the solver can"),
    "ignore_dpp": _s(Boolean(), "compile without DPP (faster for one-off solves)"),
    "enforce_dpp": _s(Boolean(), "raise if the problem is not DPP"),
    "canon_backend": _s(Text(("CPP", "SCIPY", "COO", "RUST")), "cvxpy canonicalisation backend"),
}

_SCS = {
    "max_iters": _s(Integer(1, _U32), "iteration limit"),
    "eps_abs": _s(_NONNEG, "absolute feasibility tolerance"),
    "eps_rel": _s(_NONNEG, "relative feasibility tolerance"),
    "eps_infeas": _s(_NONNEG, "infeasibility certificate tolerance"),
    "eps": _s(_POS, "cvxpy's older name setting eps_abs and eps_rel"),
    "alpha": _s(Number(0, 2, lo_open=True, hi_open=True), "Douglas-Rachford relaxation"),
    "scale": _s(_POS, "initial dual scaling"),
    "adaptive_scale": _s(Boolean(), "update scale heuristically"),
    "rho_x": _s(_POS, "primal scaling"),
    "normalize": _s(Boolean(), "equilibrate the data"),
    "time_limit_secs": _s(_NONNEG, "seconds (0: none)"),
    "acceleration_lookback": _s(Integer(-_U32, _U32), "Anderson memory (0: off)"),
    "acceleration_interval": _s(Integer(1, _U32), "iterations between Anderson steps"),
    "use_indirect": _s(Boolean(), "indirect (CG) linear solver"),
    "linear_solver": _s(Text(("auto", "qdldl", "cpu_indirect", "mkl", "accelerate", "cpu_dense",
                              "gpu_indirect", "cudss")), "linear system solver"),
    "write_data_filename": _s(Text(nonempty=True), "dump the problem data here",
                              writes_file=True),
    "log_csv_filename": _s(Text(nonempty=True), "write the iterates' log here", writes_file=True),
}

_CLARABEL_TOL = ("tol_gap_abs", "tol_gap_rel", "tol_feas", "tol_infeas_abs", "tol_infeas_rel",
                 "tol_ktratio", "reduced_tol_gap_abs", "reduced_tol_gap_rel", "reduced_tol_feas",
                 "reduced_tol_infeas_abs", "reduced_tol_infeas_rel", "reduced_tol_ktratio")
_CLARABEL = {
    "max_iter": _s(Integer(1, _U32), "iteration limit"),
    "time_limit": _s(Number(0, inf=True), "seconds"),
    "max_step_fraction": _s(Number(0, 1, lo_open=True), "largest step towards the boundary"),
    **{k: _s(_POS, "stopping tolerance") for k in _CLARABEL_TOL},
    "equilibrate_enable": _s(Boolean(), "equilibrate the data"),
    "equilibrate_max_iter": _s(Integer(0, _U32), "equilibration passes"),
    "equilibrate_min_scaling": _s(_POS, "smallest equilibration factor"),
    "equilibrate_max_scaling": _s(_POS, "largest equilibration factor"),
    "linesearch_backtrack_step": _s(_UNIT_OPEN, "backtracking factor"),
    "min_switch_step_length": _s(_POS, "step below which the scaling strategy switches"),
    "min_terminate_step_length": _s(_POS, "step below which the solve stops"),
    "max_threads": _s(Integer(0, _U32), "threads (0: automatic)"),
    "direct_kkt_solver": _s(Boolean(), "direct KKT solve"),
    "direct_solve_method": _s(Text(nonempty=True), "KKT factorisation ('auto', 'qdldl', ...)"),
    "static_regularization_enable": _s(Boolean()),
    "static_regularization_constant": _s(_NONNEG),
    "static_regularization_proportional": _s(_NONNEG),
    "dynamic_regularization_enable": _s(Boolean()),
    "dynamic_regularization_eps": _s(_NONNEG),
    "dynamic_regularization_delta": _s(_NONNEG),
    "iterative_refinement_enable": _s(Boolean()),
    "iterative_refinement_reltol": _s(_NONNEG),
    "iterative_refinement_abstol": _s(_NONNEG),
    "iterative_refinement_max_iter": _s(Integer(0, _U32)),
    "iterative_refinement_stop_ratio": _s(_NONNEG),
    "presolve_enable": _s(Boolean(), "drop redundant constraints"),
    "input_sparse_dropzeros": _s(Boolean()),
    "chordal_decomposition_enable": _s(Boolean(), "split sparse PSD cones"),
    "chordal_decomposition_merge_method": _s(Text(("clique_graph", "parent_child", "none"))),
    "chordal_decomposition_compact": _s(Boolean()),
    "chordal_decomposition_complete_dual": _s(Boolean()),
    "pardiso_verbose": _s(Boolean()),
    "accept_unknown": _s(Boolean(), "cvxpy: accept an 'unknown' status as inaccurate"),
}

_CVXOPT = {
    "maxiters": _s(Integer(1), "iteration limit"),
    "max_iters": _s(Integer(1), "cvxpy's name of maxiters"),
    "abstol": _s(_POS, "absolute gap tolerance"),
    "reltol": _s(_POS, "relative gap tolerance"),
    "feastol": _s(_POS, "feasibility tolerance"),
    "refinement": _s(Integer(0), "iterative refinement steps"),
    "kktsolver": _s(Text(("chol", "chol2", "ldl", "ldl2", "qr", "robust")), "KKT solver"),
}


def _sdpa_print_writes(value) -> bool:
    return value not in ("", "no", "display")


_SDPA = {
    "maxIteration": _s(Integer(1), "iteration limit"),
    "epsilonStar": _s(_POS, "accuracy of the approximate optimum"),
    "epsilonDash": _s(_POS, "relative accuracy between primal and dual"),
    "lambdaStar": _s(_POS, "initial point"),
    "omegaStar": _s(_POS, "search region"),
    "lowerBound": _s(Number(), "lower bound of the primal objective"),
    "upperBound": _s(Number(), "upper bound of the dual objective"),
    "betaStar": _s(_UNIT_OPEN, "direction parameter (feasible)"),
    "betaBar": _s(_UNIT_OPEN, "direction parameter (infeasible)"),
    "gammaStar": _s(_UNIT_OPEN, "step reduction"),
    "mpfPrecision": _s(Integer(1), "GMP precision (sdpa-gmp)"),
    "isSymmetric": _s(Boolean()),
    "isDimacs": _s(Boolean()),
    "numThreads": _s(Integer(1), "threads"),
    "frvMethod": _s(Text(("split", "elimination"))),
    "convMethod": _s(Text(("LMI", "EQ"))),
    "domainMethod": _s(Text(("none", "clique", "basis"))),
    "rangeMethod": _s(Text(("none", "clique", "decomp"))),
    "rho": _s(_NONNEG),
    "zeroPoint": _s(_POS),
    "xPrint": _s(Text()), "yPrint": _s(Text()), "sPrint": _s(Text()), "infPrint": _s(Text()),
    "print": _s(Text(), "'no', 'display' or a file name", writes_file=_sdpa_print_writes),
    "resultFile": _s(Text(), "detail file", writes_file=lambda v: bool(v)),
    "sdpaResult": _s(Text(), "result file", writes_file=lambda v: bool(v)),
}

_MOSEK = {
    "mosek_params": _s(Table(), "MOSEK parameters by name"),
    "save_file": _s(Text(nonempty=True), "write the task here", writes_file=True),
    "bfs": _s(Boolean(), "basic solution (LPs)"),
    "accept_unknown": _s(Boolean()),
    "eps": _s(_POS, "tolerance applied to MOSEK's termination parameters"),
}

#: The ``param.csdp`` parameters (CSDP user's guide) and ``time_limit``.
_CSDP = {
    "axtol": _s(_POS, "primal feasibility tolerance"),
    "atytol": _s(_POS, "dual feasibility tolerance"),
    "objtol": _s(_POS, "relative gap tolerance"),
    "pinftol": _s(_POS, "primal infeasibility tolerance"),
    "dinftol": _s(_POS, "dual infeasibility tolerance"),
    "maxiter": _s(Integer(1), "iteration limit"),
    "minstepfrac": _s(_UNIT_OPEN, "smallest fraction of the step to the boundary"),
    "maxstepfrac": _s(_UNIT_OPEN, "largest fraction of the step to the boundary"),
    "minstepp": _s(_POS, "smallest primal step before failure"),
    "minstepd": _s(_POS, "smallest dual step before failure"),
    "usexzgap": _s(_FLAG, "1: gap tr(XZ); 0: objective difference"),
    "tweakgap": _s(_FLAG, "1: fix negative gaps"),
    "affine": _s(_FLAG, "1: affine primal-dual steps only"),
    "perturbobj": _s(_NONNEG, "objective perturbation"),
    "fastmode": _s(_FLAG, "1: faster, less accurate"),
    "printlevel": _s(Integer(0), "output detail"),
    "time_limit": _s(_POS, "seconds; csdp is stopped after it"),
}

#: cvxpy's own settings, accepted by every cvxpy backend (public name of ``_CVXPY``)
CVXPY_SETTINGS = _CVXPY


def check_settings(backend: str, table: Mapping[str, Setting], options: Mapping, *,
                   allow_files: bool = True) -> None:
    """Check ``options`` against ``table``, the settings ``backend`` accepts;
    :class:`~sdpembed.exceptions.InputError` naming the backend and the option otherwise."""
    for key, value in options.items():
        setting = table.get(key)
        if setting is None:
            close = difflib.get_close_matches(str(key), table, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InputError(f"unknown {backend} option {key!r}{hint}; {backend} accepts: "
                             f"{', '.join(sorted(table))}")
        problem = setting.check.problem(value)
        if problem is not None:
            raise InputError(f"{backend} option {key!r}: {problem}")
        if not allow_files and setting.writes(value):
            raise InputError(f"{backend} option {key!r} writes the file {value!r}, which is "
                             "not allowed here: an experiment writes only under its --out "
                             "folder")

"""The ``"LOWRANK"`` backend of :func:`sdpembed.solve`: formulation in, report out."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from ..exceptions import InputError
from ..formulations.gram import GramFormulation, GramProblem
from ..report import Backend, SolveReport
from .options import LowRankOptions
from .solve import lowrank_solve

BACKEND_NAME = "LOWRANK"


def _formulation_problem(formulation) -> tuple[GramProblem, np.ndarray | None, bool]:
    """(eliminated GramProblem, reduced basis or None, lifted explicit form?) of a formulation."""
    meta = formulation.meta
    gp = meta.get("gram_problem")
    if not isinstance(gp, GramProblem):
        raise InputError("solver='LOWRANK' solves the Gram SDPs (DVU, MVU) built by "
                         "sdpembed.formulations.dvu / mvu; this formulation has no "
                         "meta['gram_problem']")
    lifted = "eliminated_problem" in meta
    if lifted:
        gp = meta["eliminated_problem"]
    basis = meta.get("basis") if meta.get("basis_rank") is not None else None
    return gp, basis, lifted


def _write_solution(formulation, gp: GramProblem, F: np.ndarray, lifted: bool) -> bool:
    """Write the factor into the cvxpy variables when the problem is (or is cheaply) built."""
    if isinstance(formulation, GramFormulation):
        formulation.set_factor(F)
        if not formulation.is_built:
            return False
    variables = formulation.variables
    meta = formulation.meta
    if lifted:
        lp = meta["gram_problem"]
        y = gp.meta["y"]
        K = len(gp.meta["classes"])
        counts = np.bincount(y[y >= 0], minlength=K).astype(float)
        A = np.zeros((gp.n, K))
        idx = np.flatnonzero(y >= 0)
        A[idx, y[idx]] = 1.0 / counts[y[idx]]
        cent = F.T @ A                              # centroids (k x K)
        Ff = np.r_[F, cent.T, cent.mean(axis=1)[None, :]]
        assert Ff.shape[0] == lp.n
    else:
        Ff = F
    name = "G" if "G" in variables else "Y"
    var = variables[name]
    if name == "G":
        var.value = Ff @ Ff.T
    else:
        basis = formulation.basis() if isinstance(formulation, GramFormulation) \
            else meta.get("basis")
        B = np.asarray(basis, dtype=float)
        P = np.linalg.lstsq(B, Ff, rcond=None)[0] if B.shape[1] < B.shape[0] else B.T @ Ff
        var.value = P @ P.T
    if "eps" in variables:
        D = gp.distances_of_factor(F)
        variables["eps"].value = np.abs(D - gp.target) / gp.target
    return True


def _solve_backend(formulation, verbose: bool = False, **options) -> SolveReport:
    """``solve(formulation, solver="LOWRANK", **options)``; options: :class:`LowRankOptions`."""
    opts = LowRankOptions.from_options(options)
    gp, basis, lifted = _formulation_problem(formulation)
    if verbose:
        logging.getLogger(__package__).setLevel(logging.INFO)  # every lowrank module
    result = lowrank_solve(gp, basis=basis, options=opts)
    cert = result.certificate
    extra: dict[str, Any] = {
        "rank": result.factor.shape[1],
        "lower_bound": result.bound,
        "certificate": cert.describe() if cert is not None else "no certificate",
        "certificate_check": (cert.check if cert is not None and cert.bound is not None
                              else None),
        "outer_iterations": result.iterations,
        "function_evaluations": result.function_evaluations,
        "reduced_basis_rank": None if basis is None else basis.shape[1],
        "reduced_solver": result.reduced_solver,
        "interval_envelope": result.interval_envelope,
        "history": result.history,
    }
    if result.status in ("unbounded", "infeasible"):
        extra["message"] = f"LOWRANK detected the problem {result.status}"
        return SolveReport(status=result.status, objective=None, solver=BACKEND_NAME,
                           solver_version=_version(), options=dict(options),
                           compile_seconds=0.0, solve_seconds=result.seconds,
                           iterations=result.iterations, extra=extra)
    if result.unverified:
        extra["estimated_gap"] = result.estimated_gap
        extra["estimated_lower_bound"] = result.estimated_bound
    if result.verify_seconds is not None:
        extra["verify_seconds"] = result.verify_seconds
    if result.status != "optimal" and result.certified_gap is None:
        if result.estimated_gap is not None:
            extra["message"] = (f"gap {result.estimated_gap:.2g} estimated, not "
                                "certified (" + extra["certificate"] + ")")
        else:
            extra["message"] = ("stopped without a certificate (" + extra["certificate"]
                                + "); raise time_limit/max_outer")
    t1 = time.perf_counter()
    wrote = _write_solution(formulation, gp, result.factor, lifted)
    extra["wrote_variables"] = wrote
    if not wrote:
        extra["note"] = ("the cvxpy problem was never built (not needed): the solution is "
                         "formulation.factor, G = F F^T; formulation.value('gram') forms it")
    status = "optimal" if result.status == "optimal" else "optimal_inaccurate"
    return SolveReport(
        status=status, objective=float(result.objective), solver=BACKEND_NAME,
        solver_version=_version(), options={**opts.__dict__, "warm_start": str(opts.warm_start)
                                            if not isinstance(opts.warm_start, np.ndarray)
                                            else "array"},
        compile_seconds=time.perf_counter() - t1,
        solve_seconds=result.seconds, iterations=result.iterations,
        gap=(result.certified_gap if result.certified_gap is not None
             else result.estimated_gap),
        certified_gap=result.certified_gap,
        primal_infeasibility=result.infeasibility, extra=extra)


def _version() -> str:
    from .._version import __version__

    return f"sdpembed {__version__}"


#: the entry of :data:`sdpembed.solvers.TOOLKIT_BACKENDS`
BACKEND = Backend(BACKEND_NAME, _solve_backend, version=_version)

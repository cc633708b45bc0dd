"""CSDP backend: cvxpy problem -> SDPA sparse file -> ``csdp`` -> cvxpy variables.

CSDP (Borchers) is the solver the DVU paper used. It is driven here through
its command-line program and an SDPA sparse-format file, as a cvxpy
conic-solver plug-in: cvxpy compiles the problem to the standard form

.. math::  \\min_x\\; c^T x \\quad \\text{s.t.}\\quad s = b - A x \\in \\mathcal K,

with :math:`\\mathcal K` a product of zero, non-negative and PSD cones (PSD
blocks in scaled lower-triangular vectorisation). This is exactly CSDP's
*dual* (LMI) form

.. math::  \\min_y\\; a^T y \\quad\\text{s.t.}\\quad Z = \\sum_i y_i F_i - F_0 \\succeq 0

with :math:`y = x`, :math:`a = c`, :math:`F_i = -\\mathrm{mat}(A_{:,i})` and
:math:`F_0 = -\\mathrm{mat}(b)`; non-negative rows become one diagonal (LP)
block, and each equality row becomes a pair of opposite LP entries (CSDP has
no free cone). CSDP's primal matrix :math:`X` is the dual multiplier of the
conic constraint, returned to cvxpy as the constraints' dual values.
Because this class reuses cvxpy's SCS reduction and inversion, solutions land
in ``variable.value`` exactly as with any other backend.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile
import time

import numpy as np
import scipy.sparse as sp
from cvxpy.reductions.solvers.conic_solvers.scs_conif import SCS

logger = logging.getLogger(__name__)

CSDP_INSTALL_HINT = (
    "install the csdp program: 'sudo apt-get install coinor-csdp' (Debian/Ubuntu), "
    "'brew install csdp' (macOS), or build it from https://github.com/coin-or/Csdp"
)

#: CSDP exit codes -> (SCS-style status value, meaning)
_CSDP_CODES = {
    0: (1, "success: SDP solved"),
    1: (-1, "CSDP's primal is infeasible: the problem as posed is unbounded"),
    2: (-2, "CSDP's dual is infeasible: the problem as posed is infeasible"),
    3: (2, "partial success: solution found but full accuracy not reached"),
    4: (-4, "maximum iterations reached"),
    5: (-4, "stuck at edge of primal feasibility"),
    6: (-4, "stuck at edge of dual infeasibility"),
    7: (-4, "lack of progress"),
    8: (-4, "X, Z or O was singular"),
    9: (-4, "detected NaN or Inf values"),
}

_PARAM_NAMES = ("axtol", "atytol", "objtol", "pinftol", "dinftol", "maxiter", "minstepfrac",
                "maxstepfrac", "minstepp", "minstepd", "usexzgap", "tweakgap", "affine",
                "perturbobj", "fastmode")


def csdp_executable() -> str | None:
    """Path of the ``csdp`` program (``SDPEMBED_CSDP`` overrides the search), or None."""
    return os.environ.get("SDPEMBED_CSDP") or shutil.which("csdp")


def csdp_version() -> str:
    exe = csdp_executable()
    if exe is None:
        return "not installed"
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "coinor-csdp"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def _svec_index(n: int):
    """(row, col) of each entry of SCS's scaled lower-triangular column-major vectorisation."""
    cols, rows = np.triu_indices(n)  # upper row-major == lower column-major, transposed
    return rows, cols


def _placements(dims):
    """Map each row of the conic form to SDPA block entries.

    Returns arrays (row, block, i, j, scale) (1-based block/i/j, i <= j), block
    sizes, and the layout used by :func:`read_solution`. Zero rows become two
    opposite LP entries; SOC rows become an arrow matrix
    :math:`\\begin{bmatrix} t & x^T \\\\ x & tI \\end{bmatrix} \\succeq 0`.
    """
    z, l = int(dims.zero), int(dims.nonneg)
    soc = [int(k) for k in (getattr(dims, "soc", None) or [])]
    psd = [int(k) for k in (getattr(dims, "psd", None) or [])]
    if getattr(dims, "exp", 0) or len(getattr(dims, "p3d", None) or []):
        raise ValueError("CSDP handles linear, second-order and PSD cones only")
    R, B, I, J, S = [], [], [], [], []
    blocks: list[int] = []
    blk = 0
    if 2 * z + l:
        blk = 1
        blocks.append(-(2 * z + l))
        r = np.arange(z)
        R += [r, r, z + np.arange(l)]
        I += [2 * r + 1, 2 * r + 2, 2 * z + np.arange(l) + 1]
        J += [2 * r + 1, 2 * r + 2, 2 * z + np.arange(l) + 1]
        S += [np.ones(z), -np.ones(z), np.ones(l)]
        B += [np.full(2 * z + l, blk)]
    offset = z + l
    for k in soc:
        blk += 1
        blocks.append(k)
        R += [np.full(k, offset), offset + np.arange(1, k)]
        I += [np.arange(1, k + 1), np.ones(k - 1, int)]
        J += [np.arange(1, k + 1), np.arange(2, k + 1)]
        S += [np.ones(k), np.ones(k - 1)]
        B += [np.full(2 * k - 1, blk)]
        offset += k
    for k in psd:
        blk += 1
        blocks.append(k)
        rr, cc = _svec_index(k)
        R.append(offset + np.arange(rr.size))
        I.append(np.minimum(rr, cc) + 1)
        J.append(np.maximum(rr, cc) + 1)
        S.append(np.where(rr == cc, 1.0, 1.0 / np.sqrt(2.0)))
        B.append(np.full(rr.size, blk))
        offset += rr.size
    cat = lambda parts, dt: np.concatenate(parts).astype(dt) if parts else np.empty(0, dt)  # noqa: E731
    layout = {"z": z, "l": l, "soc": soc, "psd": psd, "blocks": blocks}
    return (cat(R, int), cat(B, int), cat(I, int), cat(J, int), cat(S, float)), blocks, layout


def write_sdpa(path, c, A, b, dims) -> tuple[list[int], dict]:
    """Write ``min c^T x s.t. b - A x in K`` as an SDPA sparse file for CSDP.

    Returns the block sizes (negative for the LP block) and a layout dict used to
    map CSDP's solution back.
    """
    A = sp.csr_matrix(A)
    (R, B, I, J, S), blocks, layout = _placements(dims)
    E = sp.csr_matrix((S, (np.arange(R.size), R)), shape=(R.size, A.shape[0]))
    F0 = -(E @ np.asarray(b, dtype=float))
    F = (-(E @ A)).tocoo()
    with open(path, "w") as fh:
        fh.write(f"{A.shape[1]}\n{len(blocks)}\n")
        fh.write(" ".join(str(s) for s in blocks) + "\n")
        fh.write(" ".join(repr(float(v)) for v in np.asarray(c, dtype=float)) + "\n")
        nz0 = np.flatnonzero(F0)
        fh.writelines(f"0 {B[e]} {I[e]} {J[e]} {float(F0[e])!r}\n" for e in nz0)
        keep = F.data != 0
        fh.writelines(f"{col + 1} {B[e]} {I[e]} {J[e]} {float(v)!r}\n"
                      for e, col, v in zip(F.row[keep], F.col[keep], F.data[keep]))
    return blocks, layout


def read_solution(path, m_vars: int, layout: dict):
    """Parse CSDP's solution file into (x, dual y in SCS layout, s in SCS layout)."""
    with open(path) as fh:
        first = fh.readline().split()
        x = np.array([float(v) for v in first], dtype=float)
        data = np.loadtxt(fh, ndmin=2) if os.path.getsize(path) > 0 else np.empty((0, 5))
    if x.size != m_vars:
        raise RuntimeError(f"CSDP solution has {x.size} values, expected {m_vars}")
    z, l, psd = layout["z"], layout["l"], layout["psd"]
    blocks_mats = {1: {}, 2: {}}  # matno 1 = Z, 2 = X
    sizes = [abs(s) for s in layout["blocks"]]
    for matno in (1, 2):
        for b, size in enumerate(sizes, start=1):
            blocks_mats[matno][b] = np.zeros((size, size)) if layout["blocks"][b - 1] > 0 \
                else np.zeros(size)
    for mat, b, i, j, v in data:
        mat, b, i, j = int(mat), int(b), int(i) - 1, int(j) - 1
        M = blocks_mats[mat][b]
        if M.ndim == 1:
            M[i] = v
        else:
            M[i, j] = v
            M[j, i] = v
    out = []
    for matno in (2, 1):  # y (dual) from X, s from Z
        parts = []
        b = 1
        if 2 * z + l:
            lp = blocks_mats[matno][1]
            if matno == 2:
                parts.append(lp[0:2 * z:2] - lp[1:2 * z:2])
            else:
                parts.append(0.5 * (lp[0:2 * z:2] - lp[1:2 * z:2]))
            parts.append(lp[2 * z:])
            b = 2
        for k in layout["soc"]:
            M = blocks_mats[matno][b]
            if matno == 2:  # <arrow(t, x), W> = t (W00 + tr W11) + 2 x^T W10
                parts.append(np.r_[np.trace(M), 2 * M[1:, 0]])
            else:
                parts.append(np.r_[M[0, 0], M[1:, 0]])
            b += 1
        for k in psd:
            M = blocks_mats[matno][b]
            rr, cc = _svec_index(k)
            scale = np.where(rr == cc, 1.0, np.sqrt(2.0))
            parts.append(M[rr, cc] * scale)
            b += 1
        out.append(np.concatenate(parts) if parts else np.empty(0))
    return x, out[0], out[1]


class CSDPConif(SCS):
    """cvxpy conic-solver plug-in running the ``csdp`` executable."""

    SUPPORTED_CONSTRAINTS = [c for c in SCS.SUPPORTED_CONSTRAINTS
                             if c.__name__ in ("Zero", "NonNeg", "SOC", "PSD", "SvecPSD")]

    def supports_quad_obj(self) -> bool:
        return False

    def name(self):
        return "CSDP"

    def import_solver(self) -> None:
        if csdp_executable() is None:
            raise ImportError("csdp executable not found; " + CSDP_INSTALL_HINT)

    def solve_via_data(self, data, warm_start, verbose, solver_opts, solver_cache=None):
        from cvxpy.constraints import PSD, NonNeg, Zero  # noqa: F401

        opts = dict(solver_opts or {})
        time_limit = opts.pop("time_limit", None)
        unknown = set(opts) - set(_PARAM_NAMES)
        if unknown:
            raise ValueError(f"unknown CSDP options {sorted(unknown)}; known: {_PARAM_NAMES} "
                             "and time_limit")
        exe = csdp_executable()
        c, A, b, dims = data["c"], data["A"], data["b"], data["dims"]
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="sdpembed-csdp-") as tmp:
            prob, sol = os.path.join(tmp, "problem.dat-s"), os.path.join(tmp, "solution.txt")
            _, layout = write_sdpa(prob, c, A, b, dims)
            if opts:
                with open(os.path.join(tmp, "param.csdp"), "w") as fh:
                    for key, val in opts.items():
                        fh.write(f"{key}={val}\n")
            t1 = time.perf_counter()
            try:
                proc = subprocess.run([exe, prob, sol], cwd=tmp, capture_output=True, text=True,
                                      timeout=time_limit)
            except subprocess.TimeoutExpired:
                info = {"status_val": -4, "status": f"time limit of {time_limit} s reached",
                        "solve_time": 1000 * (time.perf_counter() - t1),
                        "setup_time": 1000 * (t1 - t0), "iter": -1}
                y0 = np.zeros(A.shape[0])
                return {"x": None, "y": y0, "s": None, "info": info}
            t2 = time.perf_counter()
            if verbose:
                print(proc.stdout)  # solver verbose passthrough, as cvxpy does
            logger.debug("csdp stdout:\n%s", proc.stdout)
            code = proc.returncode
            status_val, meaning = _CSDP_CODES.get(code, (-4, f"unknown exit code {code}"))
            info = {"status_val": status_val, "status": meaning, "exit_code": code,
                    "solve_time": 1000 * (t2 - t1), "setup_time": 1000 * (t1 - t0),
                    "iter": _parse_int(proc.stdout, r"Iter:\s*(\d+)", last=True),
                    "stdout_tail": proc.stdout[-2000:]}
            info.update(_parse_stats(proc.stdout))
            if os.path.exists(sol) and os.path.getsize(sol) > 0 and status_val in (1, 2):
                x, y, s = read_solution(sol, A.shape[1], layout)
                info["pobj"] = float(np.dot(c, x))
                return {"x": x, "y": y, "s": s, "info": info}
            return {"x": None, "y": np.zeros(A.shape[0]), "s": None, "info": info}


def _parse_int(text: str, pattern: str, last: bool = False):
    found = re.findall(pattern, text)
    if not found:
        return -1
    return int(found[-1] if last else found[0])


def _parse_stats(text: str) -> dict:
    keys = {"primal_objective": r"Primal objective value:\s*(\S+)",
            "dual_objective": r"Dual objective value:\s*(\S+)",
            "primal_infeasibility": r"Relative primal infeasibility:\s*(\S+)",
            "dual_infeasibility": r"Relative dual infeasibility:\s*(\S+)",
            "gap": r"Real Relative Gap:\s*(\S+)"}
    out = {}
    for k, pat in keys.items():
        m = re.search(pat, text)
        if m:
            try:
                out[k] = float(m.group(1))
            except ValueError:
                pass
    return out

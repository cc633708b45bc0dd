"""CSDP backend: cvxpy problem -> SDPA sparse file -> ``csdp`` -> cvxpy variables.

CSDP (Borchers) is the solver the DVU paper used. It is driven here through
its command-line program and an SDPA sparse-format file, as a cvxpy
conic-solver plug-in. cvxpy compiles the problem to

.. math::  \\min_x\\; c^T x \\quad \\text{s.t.}\\quad s = b - A x \\in \\mathcal K

(zero, non-negative, second-order and PSD cones; PSD blocks in scaled
lower-triangular vectorisation). :class:`PrimalMap` rewrites this in CSDP's
primal form :math:`\\max \\mathrm{tr}(CX)` s.t. :math:`\\mathrm{tr}(A_iX)=a_i`,
:math:`X\\succeq0`, with cone-constrained variables (a Gram matrix declared
``PSD=True``, slacks declared ``nonneg=True``) as blocks of :math:`X` and one
CSDP constraint per real constraint, which keeps CSDP's Schur complement
the size of the edge set rather than of the matrix. The solution is mapped
back to cvxpy's SCS layout (primal ``x``, slacks ``s`` and duals ``y``), so
cvxpy's own inversion writes ``variable.value`` and ``constraint.dual_value``
exactly as for any other backend.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import numpy as np
import scipy.sparse as sp
from cvxpy.error import SolverError as CvxpySolverError
from cvxpy.reductions.solvers.conic_solvers.scs_conif import SCS

from .exceptions import SolverMissingError

logger = logging.getLogger(__name__)

#: Environment variable naming the ``csdp`` program (wins over the search of ``PATH``).
ENV_VAR = "SDPEMBED_CSDP"

CSDP_INSTALL_HINT = (
    "install the csdp program: 'sudo apt-get install coinor-csdp' (Debian/Ubuntu), "
    "'brew install csdp' (macOS), or build it from https://github.com/coin-or/Csdp; "
    f"or set {ENV_VAR} to its path"
)

#: CSDP exit codes -> (SCS-style status value, meaning); 2 is ``optimal_inaccurate``, which
#: :func:`sdpembed.solve_status.check_result` keeps near the optimum and refuses far from it
_CSDP_CODES = {
    0: (1, "success: SDP solved"),
    1: (-2, "primal infeasible: the problem as posed is infeasible"),
    2: (-1, "dual infeasible: the problem as posed is unbounded"),
    3: (2, "partial success: solution found but full accuracy not reached"),
    4: (2, "maximum iterations reached"),  # the last iterate: refused as cut (solvers)
    5: (-4, "stuck at edge of primal feasibility"),
    6: (-4, "stuck at edge of dual infeasibility"),
    7: (-4, "lack of progress"),
    8: (-4, "X, Z or O was singular"),
    9: (-4, "detected NaN or Inf values"),
}

#: CSDP's "success" is decided by its gap tr(XZ) (``usexzgap=1``, the default), which
#: says nothing of the objectives when the points are only nearly feasible; a success
#: whose real relative gap (primal against dual objective) exceeds this, or ``objtol``
#: when that is looser, is reported ``optimal_inaccurate`` and judged by that gap
REAL_GAP_LIMIT = 1e-6

_PARAM_NAMES = ("axtol", "atytol", "objtol", "pinftol", "dinftol", "maxiter", "minstepfrac",
                "maxstepfrac", "minstepp", "minstepd", "usexzgap", "tweakgap", "affine",
                "perturbobj", "fastmode", "printlevel")

#: Seconds ``csdp`` (run without arguments) has to print its usage when probed.
_PROBE_TIMEOUT_S = 5.0

# (path, mtime_ns, size) -> None if the program runs, else the reason it does not
_PROBED: dict[tuple, str | None] = {}


def _candidate() -> tuple[str | None, str]:
    """(path of the csdp program or None, why not): ``$SDPEMBED_CSDP``, else ``PATH``."""
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        if not os.path.isfile(env):
            return None, f"{ENV_VAR}={env} is not a file"
        if not os.access(env, os.X_OK):
            return None, f"{ENV_VAR}={env} is not executable"
        return env, ""
    found = shutil.which("csdp")
    return (found, "") if found else (None, "no csdp program on PATH")


def _probe(path: str) -> str | None:
    """Run ``csdp`` without arguments (it prints its usage): ``None`` if it runs, else why not.

    A file that cannot be executed (wrong format, a crash on start) is not a
    usable CSDP; the answer is cached per file version.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"{path} cannot be read ({exc})"
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in _PROBED:
        try:
            proc = subprocess.run([path], stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=_PROBE_TIMEOUT_S)
        except OSError as exc:
            reason = f"{path} cannot be run ({exc})"
        except subprocess.TimeoutExpired:
            reason = (f"{path} did not answer within {_PROBE_TIMEOUT_S:g} s when run "
                      "without a problem")
        else:
            reason = None if proc.returncode >= 0 else (
                f"{path} crashed when run without a problem "
                f"({_signal_text(-proc.returncode)})")
        _PROBED[key] = reason
    return _PROBED[key]


def csdp_problem() -> str | None:
    """Why CSDP is not usable here (missing, not executable, crashing), or ``None``."""
    path, why = _candidate()
    if path is None:
        return why
    return _probe(path)


def csdp_executable() -> str | None:
    """Path of a working ``csdp`` program (``SDPEMBED_CSDP`` overrides the search), or None.

    A path that does not exist, is not executable or does not run is
    ``None``: CSDP is then not listed by
    :func:`sdpembed.solvers.available_solvers` and asking for it raises
    :class:`~sdpembed.exceptions.SolverMissingError` (:func:`csdp_problem` says why).
    """
    path, why = _candidate()
    if path is None or _probe(path) is not None:
        if os.environ.get(ENV_VAR, "").strip():
            logger.debug("CSDP not usable: %s", why or _probe(path))
        return None
    return path


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


def _signal_text(signum: int) -> str:
    try:
        return f"signal {signal.Signals(signum).name}"
    except ValueError:
        return f"signal {signum}"


def _svec_index(n: int):
    """(row, col) of each entry of SCS's scaled lower-triangular column-major vectorisation."""
    cols, rows = np.triu_indices(n)  # upper row-major == lower column-major, transposed
    return rows, cols


class PrimalMap:
    """Map ``min c^T x s.t. b - A x = s in K`` to CSDP's primal form and back.

    CSDP solves :math:`\\max \\mathrm{tr}(CX)` s.t. :math:`\\mathrm{tr}(A_iX) = a_i`,
    :math:`X \\succeq 0` (block diagonal, with one diagonal LP block). Rows of
    ``(A, b)`` that merely say "variable ``x_j`` lies in a cone" (one non-zero,
    ``b = 0``, as cvxpy emits for ``Variable(PSD=True)`` and ``nonneg=True``)
    turn ``x_j`` into an entry of a block of ``X`` itself. Other variables are
    free and split as :math:`x_j = p_j - q_j` with :math:`p, q \\ge 0`. Every
    remaining row becomes one CSDP constraint :math:`a_r^T x + s_r = b_r`,
    with :math:`s_r` = 0 (zero cone), an LP slack (non-negative cone), an
    entry of a new PSD block (an LMI) or of an arrow block
    :math:`\\begin{bmatrix} t & u^T\\\\ u & tI\\end{bmatrix}` (second-order cone).
    The constraint count is then the number of real constraints (e.g. the
    edges of a Gram SDP), not the number of matrix entries.

    The entries of ``X`` are handled in "svec" coordinates ``w`` (off-diagonal
    entries scaled by :math:`\\sqrt2`, as in SCS), so :math:`x = T w` with a
    sparse ``T``.
    """

    def __init__(self, c, A, b, dims):
        A = sp.csr_matrix(A)
        b = np.asarray(b, dtype=float)
        c = np.asarray(c, dtype=float)
        n_rows, n_x = A.shape
        z, l = int(dims.zero), int(dims.nonneg)
        soc = [int(k) for k in (getattr(dims, "soc", None) or [])]
        psd = [int(k) for k in (getattr(dims, "psd", None) or [])]
        if getattr(dims, "exp", 0) or len(getattr(dims, "p3d", None) or []):
            raise ValueError("CSDP handles linear, second-order and PSD cones only")
        nnz = np.diff(A.indptr)
        single_col = np.full(n_rows, -1)
        single = (nnz == 1) & (b == 0)
        single_col[single] = A.indices[A.indptr[:-1][single]]
        single_val = np.zeros(n_rows)
        single_val[single] = A.data[A.indptr[:-1][single]]
        claimed = np.zeros(n_x, dtype=bool)
        # w coordinates: lists of (block, i, j) with block 1 = LP block
        psd_blocks: list[dict] = []
        T_rows, T_cols, T_vals = [], [], []  # x_j = sum T[j, w] w
        defining = np.zeros(n_rows, dtype=bool)
        # 1. PSD blocks that are exactly a variable
        offset = z + l + sum(soc)
        block_rows = []
        for k in psd:
            rows = np.arange(offset, offset + k * (k + 1) // 2)
            cols = single_col[rows]
            ok = np.all(cols >= 0) and np.unique(cols).size == cols.size \
                and not claimed[cols].any()
            block_rows.append((k, rows, bool(ok)))
            if ok:
                claimed[cols] = True
                defining[rows] = True
            offset += rows.size
        # 2. non-negative rows that are a variable
        for r in range(z, z + l):
            j = single_col[r]
            if j >= 0 and not claimed[j]:
                claimed[j] = True
                defining[r] = True
        self.n_x, self.n_rows, self.z, self.l = n_x, n_rows, z, l
        # LP block layout: defining nonneg rows, slack rows, free p, free q
        lp_def = [r for r in range(z, z + l) if defining[r]]
        lp_slack = [r for r in range(z, z + l) if not defining[r]]
        free = np.flatnonzero(~claimed)
        n_lp = len(lp_def) + len(lp_slack) + 2 * free.size
        self.blocks: list[int] = []
        coord_block, coord_i, coord_j = [], [], []
        w_count = 0
        blk = 0
        slack_of_row = {}
        if n_lp:
            blk = 1
            self.blocks.append(-n_lp)
            pos = np.arange(n_lp)
            coord_block.append(np.full(n_lp, 1))
            coord_i.append(pos + 1)
            coord_j.append(pos + 1)
            for t, r in enumerate(lp_def):
                j = single_col[r]
                T_rows.append(j), T_cols.append(t), T_vals.append(-1.0 / single_val[r])
            base = len(lp_def)
            for t, r in enumerate(lp_slack):
                slack_of_row[r] = (base + t, 1.0)
            base += len(lp_slack)
            for t, j in enumerate(free):
                T_rows += [j, j]
                T_cols += [base + t, base + free.size + t]
                T_vals += [1.0, -1.0]
            w_count = n_lp

        def add_block(k, blk):
            """Append a k x k block's upper-triangle coordinates (SDPA, 1-based)."""
            self.blocks.append(k)
            rr, cc = _svec_index(k)
            coord_block.append(np.full(rr.size, blk))
            coord_i.append(np.minimum(rr, cc) + 1)
            coord_j.append(np.maximum(rr, cc) + 1)
            return rr, cc

        # PSD blocks (variable blocks and LMI slack blocks)
        for k, rows, ok in block_rows:
            blk += 1
            rr, cc = add_block(k, blk)
            if ok:
                cols = single_col[rows]
                T_rows += cols.tolist()
                T_cols += (w_count + np.arange(rows.size)).tolist()
                T_vals += (-1.0 / single_val[rows]).tolist()
            else:
                for t, r in enumerate(rows):
                    slack_of_row[int(r)] = (w_count + t, 1.0)
            psd_blocks.append({"size": k, "rows": rows, "variable": ok, "w0": w_count})
            w_count += rows.size
        # SOC blocks as arrow matrices; extra equalities M_ii = M_00
        extra_rows = []  # list of dict(coord -> coef)
        offset = z + l
        for k in soc:
            blk += 1
            rr, cc = add_block(k, blk)
            index = {(int(a), int(bb)): w_count + t for t, (a, bb) in enumerate(zip(rr, cc))}
            slack_of_row[offset] = (index[(0, 0)], 1.0)
            for i in range(1, k):
                # s_i = M_{i0} = w / sqrt(2)
                slack_of_row[offset + i] = (index[(i, 0)], 1.0 / np.sqrt(2.0))
                extra_rows.append({index[(i, i)]: 1.0, index[(0, 0)]: -1.0})
            # off-diagonal entries among the u-part must vanish
            for a in range(1, k):
                for bb in range(1, a):
                    extra_rows.append({index[(a, bb)]: 1.0})
            w_count += rr.size
            offset += k
        self.n_w = w_count
        def cat(parts):
            return np.concatenate(parts).astype(int) if parts else np.empty(0, int)

        self.coord_block, self.coord_i, self.coord_j = cat(coord_block), cat(coord_i), cat(coord_j)
        self.T = sp.csr_matrix((T_vals, (T_rows, T_cols)), shape=(n_x, w_count))
        self.con_rows = np.flatnonzero(~defining)
        S = sp.csr_matrix(
            ([slack_of_row[int(r)][1] for r in self.con_rows if int(r) in slack_of_row],
             ([t for t, r in enumerate(self.con_rows) if int(r) in slack_of_row],
              [slack_of_row[int(r)][0] for r in self.con_rows if int(r) in slack_of_row])),
            shape=(self.con_rows.size, w_count))
        Acon = (A[self.con_rows] @ self.T + S).tocsr()
        if extra_rows:
            E = sp.lil_matrix((len(extra_rows), w_count))
            for t, row in enumerate(extra_rows):
                for col, v in row.items():
                    E[t, col] = v
            Acon = sp.vstack([Acon, E.tocsr()]).tocsr()
        self.Acon = Acon
        self.rhs = np.r_[b[self.con_rows], np.zeros(len(extra_rows))]
        self.cost = -(self.T.T @ c)  # CSDP maximises tr(CX) = -c^T x
        self.A, self.b, self.c = A, b, c
        self.defining_rows = np.flatnonzero(defining)
        self.psd_blocks = psd_blocks

    def _entry_scale(self) -> np.ndarray:
        return np.where(self.coord_i == self.coord_j, 1.0, 1.0 / np.sqrt(2.0))

    def write(self, path) -> None:
        scale = self._entry_scale()
        with open(path, "w") as fh:
            fh.write(f"{self.Acon.shape[0]}\n{len(self.blocks)}\n")
            fh.write(" ".join(str(s) for s in self.blocks) + "\n")
            fh.write(" ".join(repr(float(v)) for v in self.rhs) + "\n")
            c0 = self.cost * scale
            nz = np.flatnonzero(c0)
            fh.writelines(f"0 {self.coord_block[k]} {self.coord_i[k]} {self.coord_j[k]} "
                          f"{float(c0[k])!r}\n" for k in nz)
            M = self.Acon.tocoo()
            vals = M.data * scale[M.col]
            keep = vals != 0
            entries = zip(M.row[keep], M.col[keep], vals[keep])
            fh.writelines(f"{r + 1} {self.coord_block[k]} {self.coord_i[k]} {self.coord_j[k]} "
                          f"{float(v)!r}\n" for r, k, v in entries)

    def recover(self, path):
        """Read CSDP's solution file; return (x, y, s) in the SCS layout of cvxpy."""
        with open(path) as fh:
            yhat = np.array([float(v) for v in fh.readline().split()], dtype=float)
            data = np.loadtxt(fh, ndmin=2)
        if yhat.size != self.Acon.shape[0]:
            raise RuntimeError(f"CSDP returned {yhat.size} multipliers, "
                               f"expected {self.Acon.shape[0]}")
        w = np.zeros(self.n_w)
        lookup = {(int(b), int(i), int(j)): k for k, (b, i, j) in
                  enumerate(zip(self.coord_block, self.coord_i, self.coord_j))}
        scale = 1.0 / self._entry_scale()  # svec coordinate = sqrt(2) X_ij off the diagonal
        for _, b, i, j, v in data[data[:, 0] == 2] if data.size else []:
            i, j = int(min(i, j)), int(max(i, j))
            k = lookup.get((int(b), i, j))
            if k is not None:
                w[k] = v * scale[k]
        x = self.T @ w
        s = self.b - self.A @ x
        y = np.zeros(self.n_rows)
        y[self.con_rows] = yhat[: self.con_rows.size]
        # defining rows: c_j + a_kj y_k + sum_r a_rj y_r = 0
        resid = self.c + self.A.T @ y
        if self.defining_rows.size:
            Ad = self.A[self.defining_rows]
            cols = Ad.indices[Ad.indptr[:-1]]
            vals = Ad.data[Ad.indptr[:-1]]
            y[self.defining_rows] = -resid[cols] / vals
        return x, y, s


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
            raise ImportError(f"CSDP is not usable ({csdp_problem()}); " + CSDP_INSTALL_HINT)

    def solve_via_data(self, data, warm_start, verbose, solver_opts, solver_cache=None):
        from .backends.settings import _CSDP, CVXPY_SETTINGS, check_settings

        opts = dict(solver_opts or {})
        check_settings("CSDP", {**CVXPY_SETTINGS, **_CSDP}, opts)  # InputError naming it
        time_limit = opts.pop("time_limit", None)
        unknown = set(opts) - set(_PARAM_NAMES)
        if unknown:  # cvxpy's own settings never reach a solver's options
            raise CvxpySolverError(f"CSDP takes no options {sorted(unknown)} here")
        exe = csdp_executable()
        if exe is None:
            raise SolverMissingError(f"CSDP is not usable ({csdp_problem()}); "
                                     + CSDP_INSTALL_HINT)
        c, A, b, dims = data["c"], data["A"], data["b"], data["dims"]
        t0 = time.perf_counter()
        try:
            # the guard is inside the folder's context: csdp is stopped before its folder goes
            with tempfile.TemporaryDirectory(prefix="sdpembed-csdp-") as tmp, \
                    _StopOnSigterm() as guard:
                return self._run(exe, tmp, guard, c, A, b, dims, opts, time_limit, verbose, t0)
        except _Terminated as term:
            # the folder is removed and csdp stopped: now end as SIGTERM asked
            signal.raise_signal(term.signum)
            raise

    @staticmethod
    def _run(exe, tmp, guard, c, A, b, dims, opts, time_limit, verbose, t0):
        prob, sol = os.path.join(tmp, "problem.dat-s"), os.path.join(tmp, "solution.txt")
        pmap = PrimalMap(c, A, b, dims)
        pmap.write(prob)
        if opts:
            with open(os.path.join(tmp, "param.csdp"), "w") as fh:
                for key, val in opts.items():
                    fh.write(f"{key}={val}\n")
        t1 = time.perf_counter()
        try:
            proc = subprocess.Popen([exe, prob, sol], cwd=tmp, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        except OSError as exc:
            raise SolverMissingError(f"the csdp program {exe} cannot be run ({exc}); "
                                     + CSDP_INSTALL_HINT) from exc
        guard.child = proc
        lines: list[str] = []
        reader = threading.Thread(target=_read_output, args=(proc.stdout, lines, verbose),
                                  daemon=True)
        reader.start()
        try:
            code = proc.wait(timeout=time_limit)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            reader.join()
            err = CvxpySolverError(f"csdp stopped by its time limit of {time_limit} s"
                                   + _tail(lines))
            err.at_limit = True   # sdpembed.solvers: a SolverLimitError (no iterate written)
            raise err from None
        reader.join()
        t2 = time.perf_counter()
        stdout = "".join(lines)
        logger.debug("csdp stdout:\n%s", stdout)
        if code < 0:
            raise CvxpySolverError(f"csdp was killed by {_signal_text(-code)}" + _tail(lines))
        status_val, meaning = _CSDP_CODES.get(code, (-4, f"unknown exit code {code}"))
        if status_val == -4:
            # CSDP's own reason; cvxpy would otherwise say only "Solver 'CSDP' failed"
            raise CvxpySolverError(f"csdp stopped: {meaning} (exit code {code})" + _tail(lines))
        info = {"status_val": status_val, "status": meaning, "exit_code": code,
                "solve_time": 1000 * (t2 - t1), "setup_time": 1000 * (t1 - t0),
                "iter": _parse_int(stdout, r"Iter:\s*(\d+)", last=True),
                "stdout_tail": stdout[-2000:]}
        info.update(_parse_stats(stdout))
        limit = max(REAL_GAP_LIMIT, float(opts.get("objtol", 0.0)))
        if code == 0 and abs(info.get("gap", 0.0)) > limit:
            status_val = info["status_val"] = 2
            info["status"] = meaning = (
                f"success by the gap tr(XZ), but the real relative gap {info['gap']:.3g} "
                f"(primal against dual objective) exceeds {limit:g}: the points are not "
                "feasible enough for their objectives to agree")
        if os.path.exists(sol) and os.path.getsize(sol) > 0 and status_val in (1, 2):
            x, y, s = pmap.recover(sol)
            info["pobj"] = float(np.dot(c, x))
            return {"x": x, "y": y, "s": s, "info": info}
        if status_val in (1, 2):
            err = CvxpySolverError(f"csdp stopped: {meaning} (exit code {code}) and wrote no "
                                   "solution file" + _tail(lines))
            err.at_limit = code == 4   # maxiter
            raise err
        return {"x": None, "y": np.zeros(A.shape[0]), "s": None, "info": info}


class _Terminated(BaseException):
    """SIGTERM arrived while csdp ran (a BaseException: nothing on the way may swallow it)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class _StopOnSigterm:
    """While csdp runs, SIGTERM stops it and unwinds, so its temporary folder is removed.

    The default action of SIGTERM ends the process at once, leaving the
    ``sdpembed-csdp-*`` folder and the ``csdp`` child behind. Here (in the
    main thread, where Python handles signals) the signal raises
    :class:`_Terminated`; on the way out the child is killed, the previous
    handler restored, the folder removed, and the signal delivered again to
    that handler (by default: the process ends). An ignored SIGTERM stays ignored.
    """

    def __init__(self):
        self.child: subprocess.Popen | None = None
        self._previous = None
        self._installed = False

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            try:
                self._previous = signal.signal(signal.SIGTERM, self._handler)
                self._installed = True
            except ValueError:  # not the main interpreter
                self._installed = False
        return self

    def _handler(self, signum, frame):
        if self._previous is signal.SIG_IGN:
            return
        raise _Terminated(signum)

    def __exit__(self, exc_type, exc, tb):
        if self.child is not None and self.child.poll() is None:
            self.child.kill()
            self.child.wait()
        if self._installed:
            signal.signal(signal.SIGTERM, self._previous)
        return False


def _read_output(stream, lines: list, verbose: bool) -> None:
    """Collect csdp's output line by line; with ``verbose``, pass it through as it comes."""
    for line in stream:
        lines.append(line)
        if verbose:
            print(line, end="", flush=True)  # solver verbose passthrough, as cvxpy does
    stream.close()


def _tail(lines: list, n: int = 4) -> str:
    text = " | ".join(line.strip() for line in lines[-n:] if line.strip())
    return f"; last output: {text}" if text else ""


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

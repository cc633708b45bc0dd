"""What a dense Gram SDP needs in memory, and what this machine has."""

from __future__ import annotations

import os

import numpy as np

from ..exceptions import ProblemTooLargeError


def dense_memory_estimate(size: int, n_edges: int = 0) -> int:
    """Bytes needed to build and solve a dense formulation whose PSD matrix is ``size x size``.

    cvxpy canonicalises the dense objective, the PSD cone and the edge
    operator into matrices with a few copies of :math:`\\mathrm{size}^2` entries,
    and the conic solvers add their own (SCS: an eigendecomposition per
    iteration; CLARABEL: a dense block of :math:`(\\mathrm{size}(\\mathrm{size}+1)/2)^2`).
    Calibrated with ``problem.get_problem_data(cvxpy.SCS)`` (peak resident
    memory of a DVU build; ``docs/tuning.md``); a lower bound for the
    interior-point backends.
    """
    return int(_BYTES_PER_ENTRY * size * size + 2_000 * n_edges)


#: bytes per entry of the PSD matrix needed by a dense cvxpy build (calibrated, see above)
_BYTES_PER_ENTRY = 600


def available_memory() -> int:
    """Bytes of memory available now (``MemAvailable``; a cgroup limit if lower)."""
    avail = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return 1 << 62
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as fh:
                raw = fh.read().strip()
            if raw.isdigit():
                avail = min(avail, int(raw))
        except OSError:
            continue
    return int(avail)


def _check_memory(size: int, n_edges: int, what: str) -> None:
    need = dense_memory_estimate(size, n_edges)
    have = available_memory()
    if need > 0.8 * have:
        raise ProblemTooLargeError(
            f"{what}: building the dense cvxpy problem over a {size} x {size} PSD matrix needs "
            f"about {need / 2**30:.1f} GiB but {have / 2**30:.1f} GiB is available. Use the "
            "large-n solver, solve(formulation, solver=\"LOWRANK\") (or solver=\"LOWRANK\" in "
            "the estimator), which never forms an n x n matrix, or a reduced basis "
            "(basis_rank=30).")


def _check_basis_memory(shape: tuple, what: str) -> None:
    need, have = 8 * int(np.prod(shape)), available_memory()
    if need > 0.8 * have:
        raise ProblemTooLargeError(
            f"{what}: the cvxpy expressions need the dense basis ({shape[0]} x {shape[1]}, "
            f"{need / 2**30:.1f} GiB) but {have / 2**30:.1f} GiB is available; solve with "
            "solver=\"LOWRANK\" without reading f.variables or f.expressions, or use "
            "reduce_face=False")

"""Fingerprint solves of the LOWRANK backend: run them, compare them, re-record them.

Each case is a small deterministic ``solve(f, solver="LOWRANK", blas_threads=1)`` on
scikit-learn's bundled digits (no download), with ``n <= 800`` so that every eigenvalue
of the dual slack matrix comes from a dense ``eigh`` (Lanczos, used above 800, is not
bit-reproducible). Its fingerprint is every number of ``report.extra["history"]`` per
outer iteration (objective, residual, cheap gap, inner iteration counts, rank, ...;
wall-clock entries excluded) and the final objective, certified gap, lower bound and
number of outer iterations.

The solves run in a fresh process whose floating point is pinned: OpenBLAS's kernels
(``OPENBLAS_CORETYPE=Haswell``, one thread), numpy's SIMD loops (the AVX-512 dispatch
targets disabled, so x86-64-v3 on every machine that has it) and one CPU (the dense
checks use all usable cores). Then the same library versions give the same bits on
different x86-64 CPUs; different versions of numpy, scipy or OpenBLAS may not, which
``tests/test_lowrank_fingerprint.py`` reports instead of comparing.

Usage (from the repository root)::

    python -m tests.record_fingerprints             # re-record tests/data/lowrank_fingerprints.json
    python -m tests.record_fingerprints --out F     # run every case, write F (no re-recording)
    python -m tests.record_fingerprints --cases dvu_interval mvu --out F

Re-record only when a change is *meant* to change the iterates, and say so in the
commit body.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "lowrank_fingerprints.json"

#: environment of the pinned process (see the module docstring)
PINNED_ENV = {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_NUM_THREADS": "1",
              "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg",
              "SDPEMBED_FINGERPRINT_PINNED": "1"}

#: cases: (builder, builder keywords, LOWRANK options); data and graph in :func:`_problem`.
#: ``slow`` cases are left out of the default test run.
CASES = {
    "dvu_interval": {"builder": "dvu", "n": 320, "kw": {}, "options": {"tol": 1e-6}},
    "dvu_huber": {"builder": "dvu", "n": 200, "kw": {}, "slow": True,
                  "options": {"tol": 1e-6, "interval_envelope": "huber"}},
    # the Huber envelope past its first outer iteration (dvu_huber certifies at outer 1):
    # four outers, a rank growth on a stalled gap at outer 3, the certificate at outer 4
    "dvu_huber_outers": {"builder": "dvu", "n": 300, "kw": {},
                         "options": {"tol": 1e-6, "interval_envelope": "huber"}},
    "dvu_equality": {"builder": "dvu", "n": 200, "kw": {"distances": "equality"},
                     "options": {"tol": 1e-7}},
    "dvu_quadratic": {"builder": "dvu", "n": 200, "kw": {"distances": "quadratic"},
                      "options": {"tol": 1e-6}},
    "dvu_trace_min": {"builder": "dvu", "n": 200, "kw": {"trace": "min", "trace_weight": 1e-3},
                      "options": {"tol": 1e-6}},
    "dvu_snr": {"builder": "dvu", "n": 200, "kw": {"snr": 4.0}, "options": {"tol": 1e-5}},
    "dvu_basis_ipm": {"builder": "dvu", "n": 400, "kw": {"basis_rank": 30},
                      "options": {"tol": 1e-4}},
    # the reduced augmented Lagrangian to its certificate: rank growth on the basis (a
    # max_outer that stops it earlier leaves a far gap, a SolverFailedError)
    "dvu_basis_alm": {"builder": "dvu", "n": 400, "kw": {"basis_rank": 30}, "slow": True,
                      "options": {"tol": 1e-4, "reduced_solver": "alm", "max_outer": 40}},
    "dvu_plbfgs": {"builder": "dvu", "n": 200, "kw": {},
                   "options": {"tol": 1e-5, "inner": "plbfgs"}},
    "mvu": {"builder": "mvu", "n": 200, "kw": {}, "options": {"tol": 1e-6}},
}


def pin() -> None:
    """Pin this process's floating point before numpy is imported (see the docstring)."""
    os.environ.update(PINNED_ENV)
    os.environ["NPY_DISABLE_CPU_FEATURES"] = _avx512_features()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def _avx512_features() -> str:
    """numpy's dispatch targets above x86-64-v3 that this CPU has (names differ by version)."""
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", "import numpy._core._multiarray_umath as m; "
         "print(' '.join(k for k, v in m.__cpu_features__.items() if v and "
         "k in m.__cpu_dispatch__))"],
        capture_output=True, text=True, env={**os.environ, "NPY_DISABLE_CPU_FEATURES": ""})
    found = out.stdout.split()
    return " ".join(f for f in found if f.startswith("AVX512") or f == "X86_V4")


def environment() -> dict:
    """The library versions and kernels the fingerprints depend on."""
    import numpy as np
    import scipy
    from threadpoolctl import threadpool_info

    blas = sorted({f"{d['prefix']} {d['version']} {d.get('architecture')}"
                   for d in threadpool_info() if d["user_api"] == "blas"})
    import numpy._core._multiarray_umath as m

    simd = sorted(k for k, v in m.__cpu_features__.items() if v and k in m.__cpu_dispatch__)
    return {"numpy": np.__version__, "scipy": scipy.__version__, "blas": blas,
            "numpy_simd": simd}


def _problem(case: dict):
    """The formulation of a case: ``n`` digits of classes 0-4 (seed 0), about 80 % labelled,
    a 2-NN + 1 random long edge graph."""
    import numpy as np
    from sklearn.datasets import load_digits

    from sdpembed.formulations.dvu import dvu
    from sdpembed.formulations.mvu import mvu
    from sdpembed.graphs import knn_graph

    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    pool = np.flatnonzero(y < 5)
    idx = np.sort(rng.permutation(pool)[: case["n"]])
    X, y = X[idx].astype(float), y[idx]
    y_obs = y.copy()
    y_obs[rng.random(idx.size) > 0.8] = -1
    graph = knn_graph(X, n_neighbors=2, n_random=1, random_state=0)
    if case["builder"] == "mvu":
        return mvu(graph, **case["kw"])
    return dvu(graph, y_obs, centroids="eliminated", **case["kw"])


def _numbers(entry: dict) -> dict:
    """The reproducible numbers of a history entry (wall-clock entries left out)."""
    out = {}
    for k, v in entry.items():
        if k.endswith("seconds") or k == "seconds":
            continue
        if isinstance(v, bool) or v is None or isinstance(v, str):
            out[k] = v
        elif isinstance(v, (int, float)) or hasattr(v, "dtype"):
            v = v.item() if hasattr(v, "item") else v
            out[k] = v if isinstance(v, int) else float(v)
    return out


def run_case(name: str) -> dict:
    """The fingerprint of one case (a JSON-able dict)."""
    import warnings

    from sdpembed.exceptions import InaccurateSolutionWarning
    from sdpembed.solvers import solve

    case = CASES[name]
    with warnings.catch_warnings():
        # a case that stopped at a limit would record its status (none does now)
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        rep = solve(_problem(case), solver="LOWRANK", blas_threads=1, **case["options"])
    return {
        "status": rep.status,
        "objective": rep.objective,
        "certified_gap": rep.certified_gap,
        "lower_bound": rep.extra.get("lower_bound"),
        "outer_iterations": rep.extra.get("outer_iterations"),
        "rank": rep.extra.get("rank"),
        "certificate_check": rep.extra.get("certificate_check"),
        "history": [_numbers(e) for e in rep.extra.get("history", [])],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="write the fingerprints here (default: re-record the test data)")
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    args = parser.parse_args(argv)
    if os.environ.get("SDPEMBED_FINGERPRINT_PINNED") != "1":
        pin()
        os.execv(sys.executable, [sys.executable, "-m", "tests.record_fingerprints",
                                  *(argv if argv is not None else sys.argv[1:])])
    results = {"environment": environment(), "cases": {}}
    for name in args.cases:
        results["cases"][name] = run_case(name)
        print(f"{name}: {results['cases'][name]['outer_iterations']} outer iterations, "
              f"objective {results['cases'][name]['objective']!r}", file=sys.stderr)
    out = args.out or DATA
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

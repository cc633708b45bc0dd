"""Fill and time of the verified lambda_min of LOWRANK's dual slack: Cholesky, LDL^T, LU.

Run ``python -m problems.bench_slack_factor [--n 2500 9298 40000]
[--methods cholmod ldl lu] [--points opposite corner] [--lu-limit N]``.

For each size, the ``lowrank_scale`` instance (USPS, Euclidean 2-NN + 1, DVU, slack 1; above
9,298 points the digits with their shifted and rotated copies) and the dual slack matrix
:math:`S(y)` at two corners of the multipliers' box :math:`|y_e|\\le w_e`:
``opposite`` (``y = -w``: :math:`\\mathbf 1` an eigenvector above :math:`\\lambda_{\\min}`, the
proof in full coordinates, as for DVU at a solution) and ``corner`` (``y = w``: the proof on
a spanning-tree basis of :math:`\\mathbf 1^\\perp`, as for MVU; more fill). A Lanczos estimate
of :math:`\\lambda_{\\min}` is computed once per point; each method (CHOLMOD's supernodal
Cholesky through cvxopt, QDLDL's LDL^T, SuperLU) then proves a bound below it
(``_sparse_verified_lambda_min``: one factorisation of the bordered matrix at the estimate,
more only if it fails). Printed per method: the verified bound, the factorisations used,
the factor's non-zeros, seconds, and the process's peak memory so far; with ``--bottom k``
also the seconds of the ``k`` bottom eigenpairs by shift-invert Lanczos on the same
factorisation (``sparse_bottom``, the certificate's escape directions and lift). ``--lu-limit``
skips SuperLU above a size (it filled to 78 M non-zeros at 40,000 points). Timings on
shared cores are noisy: the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

import tomllib

from problems import bench_large as bl


def _instance(n: int):
    spec = tomllib.loads((Path(bl.HERE) / "benchmarks" / "lowrank_scale.toml").read_text())
    run = {"method": "dvu", "n": n, "backends": ["LOWRANK"]}
    if n > 9298:
        run["data"] = {"augment": ["shift", "rotate"]}
    X, _, y_obs, _, graph = bl._instance(spec, run)
    f = bl._formulation(spec, run, X, y_obs, graph)
    return f.current_problem()


def measure(n: int, methods: list[str], lu_limit: int, points: list[str],
            bottom: int = 0) -> list[dict]:
    """One row per method (module docstring)."""
    from sdpembed import lowrank
    from sdpembed.lowrank import sparse_slack
    from sdpembed.lowrank.sparse_slack import sparse_bottom
    from sdpembed.lowrank.spectrum import _lambda_min
    from sdpembed.lowrank.verify import _sparse_verified_lambda_min

    t0 = time.perf_counter()
    gp = _instance(n)
    space = lowrank.FactorSpace(gp, None)
    w = lowrank.DistancePenalty(gp).w.copy()
    t_build = time.perf_counter() - t0
    rows = []
    for point, method in [(pt, m) for pt in points for m in methods]:
        y = -w if point == "opposite" else w
        if method == methods[0]:
            t0 = time.perf_counter()
            est = _lambda_min(space, y, 0.0, tol=1e-6)
            t_est = time.perf_counter() - t0
        if method == "lu" and n > lu_limit:
            rows.append({"n": n, "point": point, "method": method,
                         "status": f"skipped (n > {lu_limit})"})
            continue
        sparse_slack.FACTORISATION = method
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        mu, why, checks = _sparse_verified_lambda_min(space, y, 0.0, est.value)
        sec = time.perf_counter() - t0
        bottom_s = None
        if bottom and mu is not None:
            t0 = time.perf_counter()
            sparse_bottom(space, y, 0.0, bottom, sigma=mu - 1e-6 * abs(mu) - 1e-9)
            bottom_s = time.perf_counter() - t0
        rows.append({"n": n, "point": point, "edges": int(gp.edges.shape[0]), "method": method,
                     "mode": checks[-1].mode if checks else "",
                     "estimate": est.value, "verified": mu, "reason": why,
                     "factorisations": len(checks),
                     "factor_nnz": max((c.factor_nnz for c in checks), default=0),
                     "seconds": sec, "bottom_s": bottom_s, "lanczos_s": t_est,
                     "build_s": t_build, "load": load,
                     "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
        print(rows[-1], flush=True)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[2500, 9298])
    parser.add_argument("--methods", nargs="+", default=["cholmod", "ldl", "lu"],
                        choices=["cholmod", "ldl", "lu"])
    parser.add_argument("--lu-limit", type=int, default=10**9)
    parser.add_argument("--points", nargs="+", default=["opposite", "corner"],
                        choices=["opposite", "corner"])
    parser.add_argument("--bottom", type=int, default=0)
    args = parser.parse_args(argv)
    rows = [r for n in args.n
            for r in measure(n, args.methods, args.lu_limit, args.points, args.bottom)]
    print("| n | y | method | verified lambda_min >= | estimate | factorisations | factor nnz "
          "| seconds | shift-invert s | peak MB | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "verified" not in r:
            print(f"| {r['n']:,} | {r['point']} | {r['method']} | {r['status']} | | | | | | | |")
            continue
        ver = "not verified: " + r["reason"] if r["verified"] is None else f"{r['verified']:.6g}"
        print(f"| {r['n']:,} | {r['point']} ({r['mode']}) | {r['method']} | {ver} | "
              f"{r['estimate']:.6g} | "
              f"{r['factorisations']} | {r['factor_nnz']:,} | {r['seconds']:.2f} | "
              f"{'-' if r['bottom_s'] is None else format(r['bottom_s'], '.2f')} | "
              f"{r['peak_mb']:.0f} | {r['load']:.1f} |")


if __name__ == "__main__":
    main()

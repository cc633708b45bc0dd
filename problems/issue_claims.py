"""Issue 40's seven claims and issue 41's small ones, re-run as the issues state them.

Each claim is one function returning what happens now: the typed error and the start of
its message, or the result (status, objective, certified gap, bound, violation, CPU s).
The issues' own instances were not recorded with their data; where an issue names only
"30 points, 2 classes" or "300 digits" the instance here is the project's own of that
description (named in each claim's ``instance``):

* ``blobs30``: the robustness battery's ``blobs30-2class`` row
  (``problems/benchmarks/lowrank_battery.toml``: ``make_blobs(30, centers=2)``, seed 0,
  80 % labelled, 2-NN + 1 random partner), the "plain 30-point, 2-class DVU";
* ``usps300``: 300 USPS digits as :mod:`problems.bench_large` draws them (seed 0, 80 %
  labelled, 2-NN + 1), estimator defaults (interval distances, slack weight 1);
* the random 45- and 55-point variants: :func:`problems.differential.make_instance` seeds.

Run: ``python -m problems.issue_claims [--only NAME ...] [--seeds 18 20 ...]``; prints one
markdown row per claim (``--list`` names them). CPU seconds are the process's
(``time.process_time``) around the call.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import cvxpy as cp
import numpy as np
import tomllib

HERE = Path(__file__).resolve().parent


# ------------------------------------------------------------------ instances
def _battery_row(name: str, n: int | None = None):
    from problems import bench_large

    spec = tomllib.loads((HERE / "benchmarks" / "lowrank_battery.toml").read_text())
    run = next(r for r in spec["run"] if r["name"] == name)
    if n is not None:
        run = {**run, "n": n}
    X, _, y_obs, _, graph = bench_large._instance(spec, run)
    return X, y_obs, graph


def blobs30(n: int = 30, **kw):
    """The battery's plain 30-point, 2-class DVU (``dvu(g, y, centroids="eliminated")``);
    ``n`` other than 30: the same row's generator with ``n`` points."""
    from sdpembed.formulations import dvu

    _, y, g = _battery_row("blobs30-2class", n)
    return dvu(g, y, **{"centroids": "eliminated", **kw})


def usps300_data():
    from problems import bench_large

    spec = tomllib.loads((HERE / "benchmarks" / "lowrank_battery.toml").read_text())
    X, _, y_obs, _, graph = bench_large._instance(spec, {"n": 300})
    return X, y_obs, graph


def usps300(**kw):
    from sdpembed.formulations import dvu

    _, y, g = usps300_data()
    return dvu(g, y, centroids="eliminated", **kw)


# ------------------------------------------------------------------ outcomes
def _short(text: str, n: int = 230) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _ends(text: str, n: int = 170) -> str:
    """An error message's start and end (where its advice is), each up to ``n`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= 2 * n + 5 else f"{text[:n]} … {text[-n:]}"


def outcome(call) -> str:
    """What ``call()`` does: ``ErrorType: message`` (typed or not), or its report."""
    t0 = time.process_time()
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            got = call()
    except Exception as exc:   # every exception is what the claim is about
        from sdpembed.exceptions import SdpEmbedError

        kind = "typed" if isinstance(exc, SdpEmbedError) else "UNTYPED"
        extra = ""
        if getattr(exc, "objective", None) is not None:
            extra = f" [objective {exc.objective:.6g}"
            if getattr(exc, "bound", None) is not None:
                extra += f", bound {exc.bound:.6g}"
            extra += "]"
        return (f"{kind} {type(exc).__name__}{extra}: {_ends(exc)} "
                f"({time.process_time() - t0:.1f} CPU s)")
    cpu = time.process_time() - t0
    warned = f"; {len(seen)} warning(s): {_short(seen[0].message, 120)}" if seen else ""
    return f"{_describe(got)} ({cpu:.1f} CPU s){warned}"


def _describe(got) -> str:
    from sdpembed.report import SolveReport

    if isinstance(got, SolveReport):
        parts = [got.status, f"objective {got.objective:.8g}" if got.objective is not None
                 else "no objective"]
        if got.certified_gap is not None:
            parts.append(f"certified gap {got.certified_gap:.2g}")
        elif got.gap is not None:
            parts.append(f"gap {got.gap:.2g}")
        if got.bound is not None:
            parts.append(f"bound {got.bound:.8g}")
        if got.primal_infeasibility is not None:
            parts.append(f"violation {got.primal_infeasibility:.2g}")
        ex = got.extra or {}
        if ex.get("outer_iterations") is not None:
            parts.append(f"{ex['outer_iterations']} outer ({ex.get('stop_reason')})")
        return ", ".join(parts)
    return _short(got)


def _with_trace(f, report):
    """``report`` described with the trace of the Gram matrix it wrote."""
    return f"{_describe(report)}, trace(G) {np.trace(f.value('gram')):.6g}"


# ------------------------------------------------------------------ issue 40
def item1_antisymmetric():
    f = blobs30()
    G = f.expressions["gram"]
    return outcome(lambda: f.with_constraints([cp.trace(G) <= 10, G[0, 1] - G[1, 0] == 0]))


def item1_trace_bound():
    """The reproducer without its antisymmetric row: LOWRANK against CLARABEL."""
    from sdpembed import solve

    f = blobs30()
    h = f.with_constraints([cp.trace(f.expressions["gram"]) <= 10])
    out = []
    for solver in ("LOWRANK", "CLARABEL"):
        out.append(f"{solver}: " + outcome(lambda s=solver: _with_trace(h, solve(h, s))))
    return " / ".join(out)


def item2_infeasible():
    """Equality DVU with ``G[0, 30] == 0``: the Gram matrix is the points' (n x n, either
    centroid form), so the instance needs more than 30 points: the blobs row at n = 40."""
    from sdpembed import solve

    f = blobs30(40, distances="equality")
    h = f.with_constraints([f.expressions["gram"][0, 30] == 0])
    return " / ".join(f"{s}: " + outcome(lambda s=s: solve(h, s))
                      for s in ("LOWRANK", "CLARABEL", "CSDP"))


def item2_eliminated():
    """The same row on 30 points: cvxpy's own indexing refuses index 30 (an IndexError in
    the user's line, before the toolkit sees the constraint)."""
    f = blobs30(distances="equality")
    return outcome(lambda: f.with_constraints([f.expressions["gram"][0, 30] == 0]))


def item3_foreign_gram():
    f, other = blobs30(), blobs30()
    return outcome(lambda: f.with_constraints([cp.trace(other.expressions["gram"]) <= 5]))


def item4_nan():
    f = blobs30()
    G = f.expressions["gram"]
    return (outcome(lambda: f.with_constraints([G[0, 0] <= np.nan])) + " / trace == inf: "
            + outcome(lambda: f.with_constraints([cp.trace(G) == np.inf])))


def item5_time_limit():
    from sdpembed import solve

    f = usps300()
    return outcome(lambda: solve(f, "LOWRANK", time_limit=0.05))


def item5_max_outer():
    from sdpembed import solve

    f = usps300()
    return outcome(lambda: solve(f, "LOWRANK", max_outer=2))


def item5_optimum():
    from sdpembed import solve

    f = usps300()
    return outcome(lambda: solve(f, "LOWRANK"))


def item5_estimator():
    from sdpembed.estimators import DVU

    X, y, _ = usps300_data()
    est = DVU(n_components=2, solver="LOWRANK", solver_options={"time_limit": 0.3},
              random_state=0)

    def fit():
        est.fit(X, y)
        return f"fitted, embedding_ {est.embedding_.shape}, {_describe(est.solve_report_)}"

    got = outcome(fit)
    return got + f"; embedding_ kept: {hasattr(est, 'embedding_')}"


_SPEC = """
name = "claims"
description = "issue 40 item 5: a DVU row cut by its time limit"
seeds = 1
solvers = ["LOWRANK"]

[dataset]
name = "usps"
n_samples = 300

[labels]
fraction = 0.8

[graph]
metric = "euclidean"
n_neighbors = 2
n_random = 1

[methods.raw]
estimator = "raw"

[methods.dvu]
estimator = "DVU"
n_components = 2

[solver_options.LOWRANK]
time_limit = 0.3

[metrics.knn1]
kind = "knn"
k = 1
"""


def item5_runner():
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "claims.toml"
        spec.write_text(_SPEC)
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "sdpembed", "run", str(spec), "--out",
                               str(Path(tmp) / "out")], capture_output=True, text=True)
        tail = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]
        said = " | ".join(ln.strip() for ln in tail[-6:])
        return (f"exit {done.returncode}, {time.perf_counter() - t0:.0f} s wall; "
                f"{_short(said, 400)}")


def item5_scs():
    from sdpembed import solve

    f = blobs30()
    ref = outcome(lambda: solve(f, "CLARABEL"))
    return ("SCS max_iters=200: " + outcome(lambda: solve(f, "SCS", max_iters=200))
            + " / CLARABEL: " + ref)


def item6_progress_line():
    from sdpembed import solve

    f = blobs30(slack_weight=0.01)
    h = f.with_constraints([cp.trace(f.expressions["gram"]) <= 50])
    return outcome(lambda: solve(h, "LOWRANK"))


def item6_threshold():
    from sdpembed import solve
    from sdpembed.formulations.dvu import min_bounded_slack_weight

    lam = min_bounded_slack_weight(blobs30().points_problem)
    f = blobs30(slack_weight=lam)
    _ = f.problem   # the cvxpy variables exist: LOWRANK writes its point into them
    # a time limit so that a regression ends: LOWRANK refuses the threshold before any
    # iteration (its dual barrier used to search for an interior until the limit)
    return f"slack_weight {lam:.6g}, time_limit 60: " + outcome(
        lambda: solve(f, "LOWRANK", time_limit=60.0))


def item6_rank():
    from sdpembed import solve

    return outcome(lambda: solve(blobs30(), "LOWRANK", rank=2.5))


def item6_nan_warm_start():
    from sdpembed import solve

    return outcome(lambda: solve(blobs30(), "LOWRANK", warm_start=np.full((30, 3), np.nan)))


def item6_zero_warm_start():
    from sdpembed import solve

    return outcome(lambda: solve(blobs30(), "LOWRANK", warm_start=np.zeros((30, 3))))


def item6_non_dcp():
    f = blobs30()
    return outcome(lambda: f.with_constraints([f.expressions["gram"][0, 0] ** 2 == 1]))


def item6_parameter():
    from sdpembed import solve

    f = blobs30()
    u = cp.Parameter(name="u")
    h = f.with_constraints([f.expressions["gram"][0, 0] <= u])
    return " / ".join(f"{s}: " + outcome(lambda s=s: solve(h, s))
                      for s in ("LOWRANK", "CLARABEL"))


def item6_fallback():
    from sdpembed import solve

    f = blobs30()
    return outcome(lambda: solve(f, "LOWRANK", fallback="SCS"))


def item7_contradictory_rows():
    """Where CLARABEL proves infeasibility (trace rows that cannot hold together)."""
    from sdpembed import solve

    f = blobs30(distances="quadratic")
    G = f.expressions["gram"]
    h = f.with_constraints([cp.trace(G) >= 3.0 * _trace(f), cp.trace(G) <= _trace(f)])
    return " / ".join(f"{s}: " + outcome(lambda s=s: solve(h, s))
                      for s in ("LOWRANK", "CLARABEL"))


def _trace(f) -> float:
    from sdpembed import solve

    solve(f, "CLARABEL")
    return float(np.trace(f.value("gram")))


# ------------------------------------------------------------------ issue 41
def issue41_blobs30():
    from sdpembed import solve

    f = blobs30()
    return ("LOWRANK: " + outcome(lambda: solve(f, "LOWRANK")) + " / CLARABEL: "
            + outcome(lambda: solve(blobs30(), "CLARABEL")))


def issue41_seed(seed: int, time_limit: float | None = None) -> str:
    from problems.differential import make_instance
    from sdpembed import solve

    inst = make_instance(seed)
    f, words = inst.build()
    d = inst.description
    what = (f"seed {seed}: {d['method']} n={d['n']} {d.get('distances')} "
            f"{d.get('centroids', '')} k={d['k']}+{d['n_random']}"
            + (" snr" if "snr" in d else "") + (f" trace={d['trace']}" if "trace" in d else "")
            + (f" added {','.join(words)}" if words else ""))
    opts = {} if time_limit is None else {"time_limit": time_limit}
    return what + " -> " + outcome(lambda: solve(f, "LOWRANK", **opts))


CLAIMS = {
    "1-antisymmetric": item1_antisymmetric,
    "1-trace-bound": item1_trace_bound,
    "2-infeasible": item2_infeasible,
    "2-eliminated": item2_eliminated,
    "3-foreign-gram": item3_foreign_gram,
    "4-nan-inf": item4_nan,
    "5-optimum": item5_optimum,
    "5-time-limit": item5_time_limit,
    "5-max-outer": item5_max_outer,
    "5-estimator": item5_estimator,
    "5-runner": item5_runner,
    "5-scs": item5_scs,
    "6-progress-line": item6_progress_line,
    "6-threshold": item6_threshold,
    "6-rank": item6_rank,
    "6-nan-warm-start": item6_nan_warm_start,
    "6-zero-warm-start": item6_zero_warm_start,
    "6-non-dcp": item6_non_dcp,
    "6-parameter": item6_parameter,
    "6-fallback": item6_fallback,
    "7-contradictory": item7_contradictory_rows,
    "41-blobs30": issue41_blobs30,
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", default=None, help="claim names (default: all)")
    ap.add_argument("--seeds", nargs="*", type=int, default=[],
                    help="differential seeds solved by LOWRANK (issue 41's variants)")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="LOWRANK's time_limit for --seeds (default: its own)")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(CLAIMS))
        return 0
    names = args.only if args.only is not None else list(CLAIMS)
    print("| claim | now |\n|---|---|", flush=True)
    for name in names:
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                text = CLAIMS[name]()
            except Exception as exc:   # the script's own failure, shown on its row
                text = f"SCRIPT ERROR {type(exc).__name__}: {_short(exc)}"
        print(f"| {name} | {text} |", flush=True)
    for seed in args.seeds:
        with contextlib.redirect_stdout(io.StringIO()):
            text = issue41_seed(seed, args.time_limit)
        print(f"| 41-seed-{seed} | {text} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

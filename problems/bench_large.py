"""Benchmark of the large-n path for the Gram SDPs (DVU, MVU) on USPS and other data.

Run::

    .venv/bin/python -m problems.bench_large dvu_scale [--only dvu:500] [--backend LOWRANK]
        [--timeout 590] [--tag TAG] [--resume] [--render] [--tuning]

reads ``problems/benchmarks/<spec>.toml`` and writes ``results/<spec>.{md,json}`` with one
row per (method, n, backend): objective, certified relative gap,
infeasibility, CPU seconds and wall time of the solve (CPU: the child process and the
programs it waited for, so that a row's cost reads the same under load; both also where
the solve raised), peak memory (resident set of the run's own process), the wall-time
ratio to cvxpy+SCS where SCS ran in the same benchmark, and the 3-NN accuracy on the
hidden labels of the top-10 embedding (for DVU; for MVU also measured, the labels being
unused by the solve). A spec with ``table = "battery"`` (``lowrank_battery``) renders one
row per named instance instead: status, certified gap, CPU and wall seconds, peak memory,
outer iterations, final rank, largest multiplier and the split of LOWRANK's (wall) time
into subproblems, certificate attempts, the dual points offered to them (multipliers) and
the rest; its runs may take their data from
scikit-learn, UCI or a generator (``data = { source = ... }``, see :func:`_load_source`).
Reduced-basis rows (``basis_rank``) also report their gap to the best lower bound of the
full problem found in the same benchmark.

Each run is a fresh (spawned) process with a wall-clock limit, so a backend that
exhausts memory or time is recorded as such and the benchmark goes on. The
results files are rewritten after every row; ``--resume`` keeps the rows already
in them and runs only the missing ones (an interrupted benchmark goes on where it
stopped, and the SCS ratios still come from one results file). ``--tuning`` also
writes the table into its section of ``docs/tuning.md`` (:mod:`problems.tuning`), one
section per spec and tag; with ``--render`` from the results file as it stands.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing as mp
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import tomllib

from problems._proc import stop_child, usage
from problems.tuning import add_tuning_argument, write_section

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
RESULTS = Path("results")


def _data_path(name: str) -> Path:
    for root in (os.environ.get("SDPEMBED_DATA"), HERE.parent.parent / "shared" / "data",
                 HERE.parent / ".." / "shared" / "data"):
        if root and (Path(root) / name).exists():
            return Path(root) / name
    raise FileNotFoundError(f"{name} not found; set SDPEMBED_DATA to the data folder")


def _settings(spec: dict, run: dict | int) -> tuple[dict, dict, int]:
    """The run's data and graph settings (the spec's, overridden by the run's ``data`` and
    ``graph`` tables) and its size."""
    if isinstance(run, int):
        return dict(spec["data"]), dict(spec["graph"]), run
    return ({**spec["data"], **run.get("data", {})}, {**spec["graph"], **run.get("graph", {})},
            run["n"])


def _instance_text(spec: dict, run: dict) -> str:
    """What a run changes of the spec's data and graph, for the table ("" when nothing)."""
    data, g, _ = _settings(spec, run)
    parts = []
    if (g["n_neighbors"], g["n_random"], g.get("metric", "euclidean")) != (
            spec["graph"]["n_neighbors"], spec["graph"]["n_random"],
            spec["graph"].get("metric", "euclidean")):
        parts.append(f"{g.get('metric', 'euclidean')} {g['n_neighbors']}-NN + {g['n_random']}")
    if data.get("augment"):
        parts.append("augment " + "+".join(data["augment"]))
    if data.get("deslant"):
        parts.append("deslanted")
    if data.get("stratified"):
        parts.append("stratified")
    return ", ".join(parts)


def _load_source(data: dict, n: int):
    """``(X, y, t)`` of the run's ``source``: ``"usps"`` (the default, ``path``), a seeded
    subset of n rows of ``"sklearn:<name>"`` (bundled digits, wine, breast_cancer) or
    ``"uci:<name>"`` (sonar, ionosphere, car), or n samples of a generator: ``"moons"``,
    ``"blobs"`` (``centers``), ``"swiss_roll"`` and ``"s_curve"`` (their classes are the
    ``classes`` quantiles of the roll parameter ``t``, which is returned for the unrolling
    measure; ``None`` elsewhere)."""
    source = data.get("source", "usps")
    seed = data["seed"]
    t = None
    if source.startswith(("sklearn:", "uci:")):
        from sdpembed.datasets import load_sklearn, load_uci

        kind, name = source.split(":", 1)
        X, y = (load_sklearn if kind == "sklearn" else load_uci)(name, return_X_y=True)
        X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=np.int64)
    elif source in ("moons", "blobs", "swiss_roll", "s_curve"):
        import sklearn.datasets as skd

        if source == "moons":
            X, y = skd.make_moons(n, noise=data.get("noise", 0.1), random_state=seed)
        elif source == "blobs":
            X, y = skd.make_blobs(n, centers=data.get("centers", 3), random_state=seed,
                                  n_features=data.get("n_features", 2))
        else:
            make = skd.make_swiss_roll if source == "swiss_roll" else skd.make_s_curve
            X, t = make(n, noise=data.get("noise", 0.0), random_state=seed)
            edges = np.quantile(t, np.linspace(0, 1, data.get("classes", 4) + 1)[1:-1])
            y = np.searchsorted(edges, t)
        return np.asarray(X, dtype=float), np.asarray(y, dtype=np.int64), t
    elif source == "usps":
        return None
    else:
        raise ValueError(f"unknown data source {source!r}")
    # duplicate rows (ionosphere has some) are no embedding problem: kept once
    X, first = np.unique(X, axis=0, return_index=True)
    y = y[first]
    if n > X.shape[0]:
        raise ValueError(f"n = {n} > {X.shape[0]} distinct rows of {source}")
    idx = np.sort(np.random.default_rng(seed).permutation(X.shape[0])[:n])
    return X[idx], y[idx], None


def _instance(spec: dict, run: dict | int, with_t: bool = False):
    """The run's data (USPS subset of n digits by default: seeded, a random subset or
    ``stratified``, ``deslant``-ed and ``augment``-ed as the run says; or another
    ``source``, see :func:`_load_source`, z-scored with ``standardize``), 80 % labelled, and
    its graph (Euclidean or ``metric = "tangent"``). With ``with_t`` also the roll
    parameter of a manifold source (else ``None``)."""
    from sdpembed.graphs import knn_graph

    data, g, n = _settings(spec, run)
    rng = np.random.default_rng(data["seed"])
    loaded = _load_source(data, n)
    t = None
    if loaded is not None:
        X, y, t = loaded
        rng.permutation(n)  # the same draws as a USPS subset: labelled rows below
    elif data.get("augment"):
        from sdpembed.datasets import load_usps

        bunch = load_usps(augment=data["augment"])
        X, y = np.asarray(bunch.data, dtype=float), np.asarray(bunch.target, dtype=np.int64)
    else:
        with np.load(_data_path(data["path"]), allow_pickle=False) as z:
            X, y = z["X"].astype(float), z["y"].astype(np.int64)
    if loaded is None:
        if n > X.shape[0]:
            raise ValueError(f"n = {n} > {X.shape[0]} digits (augment for more)")
        if data.get("stratified"):
            from sklearn.model_selection import train_test_split

            idx, _ = train_test_split(np.arange(X.shape[0]), train_size=n, stratify=y,
                                      random_state=data["seed"])
            idx = np.sort(idx)
        else:
            idx = np.sort(rng.permutation(X.shape[0])[:n])
        X, y = X[idx], y[idx]
    if data.get("deslant"):
        from sdpembed.tangent import deslant

        X = deslant(X, shape=(16, 16)).reshape(n, -1).astype(float)
    if data.get("standardize"):
        sd = X.std(axis=0)
        X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    labeled = rng.random(n) < data["labeled_fraction"]
    y_obs = np.where(labeled, y, -1)
    extra = {}
    if g.get("metric", "euclidean") == "tangent":
        extra = {"metric": "tangent", "shape": (16, 16),
                 **({"candidates": g["candidates"]} if "candidates" in g else {})}
    graph = knn_graph(X, n_neighbors=g["n_neighbors"], n_random=g["n_random"],
                      random_state=data["seed"], **extra)
    if with_t:
        return X, y, y_obs, labeled, graph, t
    return X, y, y_obs, labeled, graph


def _formulation(spec, run, X, y_obs, graph):
    from sdpembed.formulations.dvu import dvu
    from sdpembed.formulations.mvu import mvu
    from sdpembed.graphs import knn_graph

    basis_rank = run.get("basis_rank")
    basis_graph = None
    if basis_rank is not None:
        basis_graph = knn_graph(X, n_neighbors=spec["basis"]["n_neighbors"], n_random=0)
    lam = run.get("slack_weight", spec["solve"]["slack_weight"])
    if run["method"] == "dvu":
        f = dvu(graph, y_obs, centroids="eliminated", slack_weight=lam,
                distances=run.get("distances", "interval"), basis_rank=basis_rank,
                basis_graph=basis_graph, **run.get("dvu", {}))
        return _with_links(f, y_obs, run["links"]) if run.get("links") else f
    f = mvu(graph, distances=run.get("distances", "equality"), slack_weight=lam,
            basis_rank=basis_rank, basis_graph=basis_graph)
    return _with_alignment(f, y_obs, run["alignment"]) if run.get("alignment") else f


def _with_alignment(f, y_obs, weight: float):
    r"""Colored MVU as user code: ``f`` with the label-kernel alignment
    :math:`-w\langle K_y, G\rangle` added by ``f.with_objective`` (maximised, hence the
    sign), :math:`K_y = YY^T` with :math:`Y_{ic} = 1/\sqrt{n_c}` for a labelled point
    ``i`` of class ``c`` (``n_c`` labelled points in it) and 0 on unlabelled rows, so
    :math:`\langle K_y, G\rangle = \sum_c n_c\|\bar z_c\|^2` is the between-class
    scatter of the labelled points, on the scale of the trace. Passed by its factor
    (:func:`~sdpembed.formulations.objective.gram_inner`): ``K_y`` is never formed."""
    from sdpembed.formulations.objective import gram_inner

    classes = np.unique(y_obs[y_obs >= 0])
    Y = (y_obs[:, None] == classes[None, :]).astype(float)
    Y /= np.sqrt(Y.sum(axis=0))
    return f.with_objective(-float(weight) * gram_inner(f.expressions["gram"], Y))


def _with_links(f, y_obs, links: dict):
    """``f`` with must-link and cannot-link bounds on random pairs of labelled points
    (``f.with_constraints``): same-class pairs at most the ``low``-th percentile of the target
    distances, different-class pairs at least the ``high``-th."""
    rng = np.random.default_rng(links.get("seed", 0))
    lab = np.flatnonzero(y_obs >= 0)
    low, high = np.percentile(f.current_problem().target, [links["low"], links["high"]])

    def pairs(same: bool, k: int) -> np.ndarray:
        out: list[tuple[int, int]] = []
        while len(out) < k:
            a, b = rng.choice(lab, 2, replace=False)
            if (y_obs[a] == y_obs[b]) == same:
                out.append((a, b))
        return np.array(out)

    G = f.expressions["gram"]
    ml, cl = pairs(True, links["must_link"]), pairs(False, links["cannot_link"])

    def sqdist(P):
        return G[P[:, 0], P[:, 0]] + G[P[:, 1], P[:, 1]] - 2 * G[P[:, 0], P[:, 1]]

    return f.with_constraints([sqdist(ml) <= low, sqdist(cl) >= high])


def _distances(run) -> str:
    return run.get("distances", "interval" if run["method"] == "dvu" else "equality")


def _child(spec, run, backend, queue):
    """One solve in its own process; reports numbers (never raises)."""
    from sdpembed.evaluation import transductive_knn_accuracy
    from sdpembed.recovery import embedding_from_factor, embedding_from_gram
    from sdpembed.solvers import solve

    out = {**_row_head(spec, run, backend), "distances": _distances(run)}
    t0 = cpu0 = None
    try:
        X, y, y_obs, labeled, graph, t = _instance(spec, run, with_t=True)
        out["n_edges"] = int(graph.n_edges)
        # the solve's CPU seconds (this process and the programs it waits for, csdp), beside
        # its wall seconds: under load the wall clock also counts other people's jobs
        t0, cpu0 = time.perf_counter(), usage()["cpu_s"]
        f = _formulation(spec, run, X, y_obs, graph)
        if backend == "LOWRANK":
            options = {**spec["solve"].get("lowrank", {}), **run.get("lowrank", {})}
        else:
            options = dict(spec["solve"].get(backend.lower(), {}))
        if run.get("sweep"):
            rep = _sweep(spec, run, X, y_obs, graph, options, out)
            f = out.pop("_formulation")
        else:
            rep = solve(f, solver=backend, **options)
        out["wall_s"] = time.perf_counter() - t0
        out["solve_cpu_s"] = usage()["cpu_s"] - cpu0
        out.update(status=rep.status, objective=rep.objective, certified_gap=rep.certified_gap,
                   infeasibility=rep.primal_infeasibility, backend_gap=rep.gap,
                   lower_bound=rep.extra.get("lower_bound"), rank=rep.extra.get("rank"),
                   certificate=rep.extra.get("certificate"), options=rep.options,
                   certificate_check=rep.extra.get("certificate_check"),
                   estimated_gap=rep.extra.get("estimated_gap"),
                   outer_iterations=rep.extra.get("outer_iterations"),
                   max_abs_multiplier=rep.extra.get("max_abs_multiplier"),
                   time_split=rep.extra.get("time_split"))
        # the solve's numbers go to the parent now: a row whose evaluation below is cut
        # by the timeout keeps them
        queue.put(_plain({**out, "evaluation": "not finished"}))
        factor = getattr(f, "factor", None)
        if factor is not None:
            Z = embedding_from_factor(factor, 10)
        else:
            Z = embedding_from_gram(f.value("gram"), 10)
        out["knn3_accuracy"] = float(transductive_knn_accuracy(Z, y, labeled, 3))
        if t is not None:
            from scipy.stats import spearmanr

            # unrolled: the first coordinate follows the roll parameter
            out["spearman_t"] = float(abs(spearmanr(Z[:, 0], t)[0]))
    except BaseException as exc:  # noqa: BLE001 - recorded in the table
        out["status"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        if cpu0 is not None and "wall_s" not in out:
            # a solve that raised (stopped uncertified, say) still cost this much
            out["wall_s"] = time.perf_counter() - t0
            out["solve_cpu_s"] = usage()["cpu_s"] - cpu0
        out.setdefault("wall_s", None)
    # the whole child (data, graph, solve) and the programs it ran (csdp)
    out.update(usage())
    queue.put(_plain(out))


def _plain(out: dict) -> dict:
    """``out`` with numpy scalars as Python numbers and no options that are not a dict
    (what the results file can hold)."""
    out = {k: v.item() if isinstance(v, np.generic) else v for k, v in out.items()}
    if not isinstance(out.get("options"), dict):
        out.pop("options", None)
    return out


def _sweep(spec, run, X, y_obs, graph, options, out):
    """A ``sweep = [slack weights]`` row: the formulations solved cold one by one, then by
    :func:`sdpembed.solvers.solve_sweep` (each from the previous solution), in this process;
    the warm sweep's last report is the row's. Records both totals, the objectives and
    their largest relative difference."""
    from sdpembed.solvers import solve_sweep

    def forms():
        return [_formulation(spec, {**run, "slack_weight": lam}, X, y_obs, graph)
                for lam in run["sweep"]]
    t0 = time.perf_counter()
    cold = solve_sweep(forms(), warm=False, **options)
    t1 = time.perf_counter()
    fs = forms()
    warm = solve_sweep(fs, **options)
    t2 = time.perf_counter()
    oc = [r.objective for r in cold]
    ow = [r.objective for r in warm]
    out.update(sweep=list(run["sweep"]), sweep_cold_s=t1 - t0, sweep_warm_s=t2 - t1,
               sweep_cold_objectives=oc, sweep_warm_objectives=ow,
               sweep_cold_gaps=[r.certified_gap for r in cold],
               sweep_warm_gaps=[r.certified_gap for r in warm],
               sweep_cold_solve_s=[r.solve_seconds for r in cold],
               sweep_warm_solve_s=[r.solve_seconds for r in warm],
               sweep_max_rel_diff=max(abs(a - b) / max(1.0, abs(a)) for a, b in zip(oc, ow)),
               _formulation=fs[-1])
    return warm[-1]


def _variant(run, backend, spec=None) -> str:
    """The row's own data, graph and backend options (beyond the spec's), for the table."""
    own = run.get(backend.lower())
    own = own if isinstance(own, dict) else {}
    text = ", ".join(f"{k}={v}" for k, v in sorted(own.items()))
    if spec is not None:
        lam = run.get("slack_weight", spec["solve"]["slack_weight"])
        slack = f"slack {lam:g}" if lam != spec["solve"]["slack_weight"] else ""
        text = ", ".join(filter(None, [_instance_text(spec, run) if not run.get("name")
                                       else "", slack, text]))
    if run.get("dvu"):
        text = ", ".join(filter(None, [", ".join(f"{k}={v}" for k, v in
                                                 sorted(run["dvu"].items())), text]))
    if run.get("name"):
        text = ", ".join(filter(None, [run["name"], text]))
    if run.get("sweep"):
        text = ", ".join(filter(None, [f"sweep of slack {run['sweep']}", text]))
    if run.get("alignment"):
        text = ", ".join(filter(None, [f"label alignment {run['alignment']:g}", text]))
    if run.get("links"):
        lk = run["links"]
        text = ", ".join(filter(None, [f"{lk['must_link']} must-link <= q{lk['low']}, "
                                       f"{lk['cannot_link']} cannot-link >= q{lk['high']}",
                                       text]))
    return text


def _run_one(spec, run, backend, timeout):
    # spawn, not fork: a forked child deadlocks in OpenBLAS once the parent has used
    # its thread pool (measured: 0 s of CPU in 10 minutes)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(spec, run, backend, queue))
    t0 = time.perf_counter()
    proc.start()
    records = []  # the child puts the solve's numbers, then the whole row
    while proc.is_alive() and (left := timeout - (time.perf_counter() - t0)) > 0:
        # read while waiting: a child whose records still sit in its feeder's buffer
        # cannot exit until they are read
        try:
            records.append(queue.get(timeout=min(1.0, left)))
        except Exception:  # noqa: BLE001 - nothing yet
            pass
    killed = proc.is_alive()
    if killed:
        stop_child(proc)
    proc.join()
    while True:
        try:
            records.append(queue.get(timeout=0.5))
        except Exception:  # noqa: BLE001 - empty, or a record cut off by the kill
            break
    return _collect(records, _row_head(spec, run, backend), killed, timeout, proc.exitcode,
                    time.perf_counter() - t0)


def _row_head(spec, run, backend) -> dict:
    """The fields that name a row: the child's record starts with them, and the bare row of
    a child that sent nothing back is them."""
    return {"method": run["method"], "n": run["n"], "backend": backend,
            "name": run.get("name"), "basis_rank": run.get("basis_rank"),
            "variant": _variant(run, backend, spec)}


def _collect(records, base, killed, timeout, exitcode, wall_s) -> dict:
    """The row from what the child put on its queue (oldest first): its last record, the
    whole row or, where the child was killed or died after its solve, the solve's
    numbers with the evaluation marked cut; the bare row where nothing came back."""
    if records:
        row = records[-1]
        if row.get("evaluation") == "not finished":
            row["evaluation"] = (f"cut by the {timeout} s timeout" if killed else
                                 f"process died (exit code {exitcode})")
            row["status"] = f"{row.get('status')}; evaluation {row['evaluation']}"
        return row
    status = (f"timeout after {timeout} s" if killed else
              f"process died (exit code {exitcode}; out of memory?)")
    return {**base, "status": status, "wall_s": wall_s}


def _baseline_knn(spec, run):
    from sdpembed.evaluation import transductive_knn_accuracy

    X, y, _, labeled, _ = _instance(spec, run)
    if not np.all(np.isfinite(X)):
        return None
    return float(transductive_knn_accuracy(X, y, labeled, 3))


def _status_text(r) -> str:
    """The status column: a sweep row also gives both sweeps' seconds (warm, then cold) and
    the largest relative difference of their objectives."""
    if r.get("sweep_cold_s"):
        return (f"{r.get('status')}: sweep warm {r['sweep_warm_s']:.0f} s, cold "
                f"{r['sweep_cold_s']:.0f} s, max rel. diff {r['sweep_max_rel_diff']:.1e}")
    return str(r.get("status", "-"))[:60]


def _fmt(v, f="{:.6g}"):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f.format(v)
    return str(v)


def _battery_markdown(rows, spec_name, meta) -> str:
    """The robustness battery's table: one row per instance and backend, with the
    solve's outer iterations, final rank, largest multiplier and where its time went."""
    head = ("| instance | method | n | edges | distances | backend | status | objective | "
            "certified gap | CPU s | wall s | peak MB | outer it. | rank | max abs y | "
            "subproblems / certificates / multipliers / other s | CSDP, SCS time / this | "
            "rel. diff to CSDP, SCS | 3-NN acc. (raw) | unrolled |")
    lines = [f"# {spec_name}: LOWRANK robustness battery", "",
             f"Machine: {meta['machine']}; {meta['date']}. Command: `{meta['command']}`.", "",
             "Certified gap: proven by an exact (dense) or verified (sparse) lambda_min; an "
             "unverified estimate is shown as (est. ...). `unrolled`: Spearman correlation "
             "of the first embedding coordinate with the roll parameter (manifold data).", "",
             head, "|" + "---|" * 20]
    for r in rows:
        split = r.get("time_split") or {}
        split_text = (" / ".join(_fmt(split.get(k), "{:.1f}") for k in
                                 ("subproblems", "certificates", "multipliers", "other"))
                      if split else "-")
        gap = (_fmt(r.get("certified_gap"), "{:.2e}") if r.get("certified_gap") is not None
               or r.get("estimated_gap") is None else f"(est. {r['estimated_gap']:.2e})")
        lines.append("| " + " | ".join([
            r.get("variant") or "-", r["method"], str(r["n"]), _fmt(r.get("n_edges")),
            r.get("distances") or _distances(r), r["backend"],
            _status_text(r), _fmt(r.get("objective"), "{:.8g}"), gap,
            _fmt(r.get("solve_cpu_s"), "{:.1f}"), _fmt(r.get("wall_s"), "{:.1f}"),
            _fmt(r.get("peak_mb"), "{:.0f}"),
            _fmt(r.get("outer_iterations")), _fmt(r.get("rank")),
            _fmt(r.get("max_abs_multiplier"), "{:.3g}"), split_text,
            ", ".join([(">" if r.get("csdp_ratio_is_lower_bound") else "")
                       + _fmt(r.get("ratio_to_csdp"), "{:.1f}"),
                       (">" if r.get("ratio_is_lower_bound") else "")
                       + _fmt(r.get("ratio_to_scs"), "{:.1f}")]),
            ", ".join([_fmt(r.get("rel_diff_to_csdp"), "{:.1e}"),
                       _fmt(r.get("rel_diff_to_scs"), "{:.1e}")]),
            f"{_fmt(r.get('knn3_accuracy'), '{:.3f}')} ({_fmt(r.get('raw_knn3'), '{:.3f}')})",
            _fmt(r.get("spearman_t"), "{:.3f}"),
        ]) + " |")
    return "\n".join(lines) + "\n"


def _markdown(rows, spec_name, meta) -> str:
    if meta.get("table") == "battery":
        return _battery_markdown(rows, spec_name, meta)
    head = ("| method | n | distances | backend | basis r | status | objective | certified gap | "
            "check | gap to full opt. | infeasibility | CPU s | wall s | peak MB | "
            "SCS time / this | rel. diff to SCS | rel. diff to CSDP | 3-NN acc. (raw pixels) |")
    lines = [f"# {spec_name}: large-scale Gram SDPs on USPS", "",
             f"Machine: {meta['machine']}; {meta['date']}. Command: `{meta['command']}`.", "",
             "A certified gap is proven by a lambda_min that is exact (check dense) or "
             "verified by a rounding-aware factorisation (sparse LU, or dense Cholesky); an "
             "unverified Lanczos estimate is shown as (est. ...).", "",
             head, "|" + "---|" * 18]
    for r in rows:
        lines.append("| " + " | ".join([
            r["method"], str(r["n"]), r.get("distances") or _distances(r),
            r["backend"] + (f" ({r['variant']})" if r.get("variant") else ""),
            _fmt(r.get("basis_rank")),
            _status_text(r), _fmt(r.get("objective"), "{:.8g}"),
            _fmt(r.get("certified_gap"), "{:.2e}") if r.get("certified_gap") is not None
            or r.get("estimated_gap") is None else f"(est. {r['estimated_gap']:.2e})",
            _fmt(r.get("certificate_check")), _fmt(r.get("gap_to_full"), "{:.2e}"),
            _fmt(r.get("infeasibility"), "{:.1e}"), _fmt(r.get("solve_cpu_s"), "{:.1f}"),
            _fmt(r.get("wall_s"), "{:.1f}"),
            _fmt(r.get("peak_mb"), "{:.0f}"),
            (">" if r.get("ratio_is_lower_bound") else "") + _fmt(r.get("ratio_to_scs"), "{:.1f}"),
            _fmt(r.get("rel_diff_to_scs"), "{:.1e}"), _fmt(r.get("rel_diff_to_csdp"), "{:.1e}"),
            f"{_fmt(r.get('knn3_accuracy'), '{:.3f}')} ({_fmt(r.get('raw_knn3'), '{:.3f}')})",
        ]) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="name of problems/benchmarks/<spec>.toml")
    parser.add_argument("--specs", type=Path, default=HERE / "benchmarks",
                        help="folder of the spec files (default problems/benchmarks)")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="folder of the results files (default ./results)")
    parser.add_argument("--only", action="append", default=None,
                        help="method:n filter, e.g. dvu:500, or dvu:9298/r30 and dvu:9298/full "
                             "for reduced-basis or full rows only, or a run's name "
                             "(repeatable)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds per run, overriding the spec's timeouts")
    parser.add_argument("--backend", action="append", default=None,
                        help="run only these backends (repeatable)")
    parser.add_argument("--tag", default="", help="suffix of the results files")
    parser.add_argument("--resume", action="store_true",
                        help="keep the rows already in the results file; run only the others")
    parser.add_argument("--render", action="store_true",
                        help="only rebuild results/<spec>.md from results/<spec>.json")
    add_tuning_argument(parser)
    args = parser.parse_args(argv)
    results = args.results
    if args.render:
        name = args.spec + (f"-{args.tag}" if args.tag else "")
        data = json.loads((results / f"{name}.json").read_text())
        _finish(data["rows"])
        md = _markdown(data["rows"], name, data["meta"])
        (results / f"{name}.md").write_text(md)
        if args.tuning:
            _write_tuning(name, md, data["meta"])
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    spec = tomllib.loads((args.specs / f"{args.spec}.toml").read_text())
    # per run and backend: [[run]] timeout = { SCS = 1200 }; else [solve] timeout
    timeout = spec["solve"].get("timeout", 590)
    results.mkdir(parents=True, exist_ok=True)
    rows = []
    name = args.spec + (f"-{args.tag}" if args.tag else "")
    out_json = results / f"{name}.json"
    meta = {"machine": f"{platform.node()} ({os.cpu_count()} cpus)",
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "command": _command(argv, args), "table": spec.get("table", "scale")}
    if args.resume and out_json.exists():
        old = json.loads(out_json.read_text())
        rows, meta = old["rows"], old["meta"]
        meta["command"] += " ; resumed: " + _command(argv, args)
    done = {_row_key(r) for r in rows}
    raw: dict = {}
    for run in spec["run"]:
        key = f"{run['method']}:{run['n']}"
        rkey = key + (f"/r{run['basis_rank']}" if run.get("basis_rank") else "/full")
        if args.only and key not in args.only and rkey not in args.only \
                and run.get("name") not in args.only:
            continue
        for backend in run["backends"]:
            if args.backend and backend not in args.backend:
                continue
            if (run["method"], run["n"], backend, run.get("basis_rank"),
                    _variant(run, backend, spec)) in done:
                logger.info("kept %s %s basis=%s from %s", key, backend,
                            run.get("basis_rank"), out_json)
                continue
            logger.info("running %s %s basis=%s", key, backend, run.get("basis_rank"))
            row = _run_one(spec, run, backend,
                           args.timeout or run.get("timeout", {}).get(backend, timeout))
            data_key = json.dumps([_settings(spec, run)[0], run["n"]], sort_keys=True,
                                  default=str)
            if data_key not in raw:
                raw[data_key] = _baseline_knn(spec, run)
            row["raw_knn3"] = raw[data_key]
            rows.append(row)
            logger.info("%s", {k: v for k, v in row.items() if k != "certificate"})
            _finish(rows)
            out_json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=str))
            (results / f"{name}.md").write_text(_markdown(rows, name, meta))
    if args.tuning:
        _finish(rows)
        _write_tuning(name, _markdown(rows, name, meta), meta)


def _write_tuning(name: str, md: str, meta: dict) -> None:
    """The spec's section of docs/tuning.md, dated when its rows were measured."""
    title = (f"LOWRANK robustness battery ({name})" if meta.get("table") == "battery"
             else f"Large-scale Gram SDPs on USPS ({name})")
    write_section(f"bench_large:{name}", title, md, command=meta["command"], date=meta["date"])


def _command(argv, args) -> str:
    words = argv if argv is not None else sys.argv[1:]
    return "python -m problems.bench_large " + " ".join(words)


def _row_key(row) -> tuple:
    return (row["method"], row["n"], row["backend"], row.get("basis_rank"),
            row.get("variant", ""))


def _finish(rows) -> None:
    """Ratios to SCS and reduced-basis gaps to the full problem's best bound."""
    def same(s, r, backend):
        return (s["method"] == r["method"] and s["n"] == r["n"] and s["backend"] == backend
                and s.get("basis_rank") == r.get("basis_rank") and s.get("wall_s")
                and s.get("name") == r.get("name"))

    for r in rows:
        scs = [s for s in rows if same(s, r, "SCS")]
        if scs and r.get("wall_s") and r.get("objective") is not None and r["backend"] != "SCS":
            # an SCS run cut off by the timeout gives a lower bound on the ratio
            r["ratio_to_scs"] = scs[0]["wall_s"] / r["wall_s"]
            r["ratio_is_lower_bound"] = scs[0].get("objective") is None
            if scs[0].get("objective") is not None:
                r["rel_diff_to_scs"] = abs(r["objective"] - scs[0]["objective"]) / abs(
                    scs[0]["objective"])
        ref = [s for s in rows if same(s, r, "CSDP") and s.get("objective") is not None]
        csdp = [s for s in rows if same(s, r, "CSDP")]
        if csdp and r.get("wall_s") and r["backend"] != "CSDP":
            # a CSDP run cut off by the timeout gives a lower bound on the ratio
            r["ratio_to_csdp"] = csdp[0]["wall_s"] / r["wall_s"]
            r["csdp_ratio_is_lower_bound"] = csdp[0].get("objective") is None
        if ref and r.get("objective") is not None:
            r["rel_diff_to_csdp"] = abs(r["objective"] - ref[0]["objective"]) / abs(
                ref[0]["objective"])
        if r.get("basis_rank") is not None and r.get("objective") is not None:
            bounds = [s.get("lower_bound") for s in rows if s["method"] == r["method"]
                      and s["n"] == r["n"] and s.get("basis_rank") is None
                      and _distances(s) == _distances(r) and s.get("lower_bound") is not None]
            if bounds:
                lb = max(bounds)
                r["gap_to_full"] = (r["objective"] - lb) / max(abs(lb), 1e-300)


if __name__ == "__main__":
    main()

"""Closed form vs SDP relaxation for every eigen-based projection method.

For each (dataset, method) pair this fits the estimator twice, with
``method="eigen"`` (closed form) and ``method="sdp"`` (the exact relaxation of
:mod:`sdpembed.relaxations`), and tabulates both objectives, their relative
difference, the largest principal angle between the two subspaces, the SDP's
rank gap and the wall time of each path.

Run::

    .venv/bin/python -m problems.bench_eigen [--solver CLARABEL] [--usps-n 500] [--pca 50]
        [--tuning]

Results go to ``results/bench_eigen.{md,json}``; with ``--tuning`` also to its section
of ``docs/tuning.md`` (:mod:`problems.tuning`).

Methods live in :data:`REGISTRY`, a dict ``name -> Entry(factory, labeled_fraction)``
where ``factory(info)`` returns an unfitted estimator (``method="eigen"``) given
a :class:`DataInfo` (number of classes and features). Add methods by adding
entries; every estimator must follow
:class:`~sdpembed.estimators._projection.ProjectionEstimator`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.datasets import load_iris, load_wine
from sklearn.decomposition import PCA as SkPCA
from sklearn.preprocessing import StandardScaler

from problems.tuning import add_tuning_argument, command_line, write_section
from sdpembed.estimators.classic import LDA, LPP, PCA, SDA
from sdpembed.estimators.discriminative import DiscriminativeProjections
from sdpembed.estimators.dne import DNE
from sdpembed.estimators.tca import OTCA, TCA
from sdpembed.relaxations import principal_angles
from sdpembed.solvers import solver_version

logger = logging.getLogger(__name__)

RESULTS = Path("results")


@dataclass(frozen=True)
class DataInfo:
    name: str
    n_classes: int
    n_features: int


@dataclass(frozen=True)
class Entry:
    factory: Callable[[DataInfo], object]
    labeled_fraction: float = 1.0  # the rest get y = -1 (fixed seed)


def _d(info: DataInfo) -> int:
    """Target dimension: c - 1 (the discriminant bound) for every method, for comparability."""
    return min(info.n_classes - 1, info.n_features)


#: name -> Entry.
REGISTRY: dict[str, Entry] = {
    "LDA": Entry(lambda i: LDA(n_components=_d(i))),
    "LDA-trace-ratio": Entry(lambda i: LDA(n_components=_d(i), criterion="trace_ratio")),
    "SDA (20% labels)": Entry(lambda i: SDA(n_components=_d(i)), 0.2),
    "LPP": Entry(lambda i: LPP(n_components=_d(i))),
    "PCA": Entry(lambda i: PCA(n_components=_d(i))),
    "DiscProj": Entry(lambda i: DiscriminativeProjections(n_components=_d(i))),
    "DiscProj (20% labels)": Entry(lambda i: DiscriminativeProjections(n_components=_d(i)), 0.2),
    "DNE": Entry(lambda i: DNE(n_components=_d(i))),
    "TCA (20% labels)": Entry(lambda i: TCA(n_components=_d(i)), 0.2),
    "OTCA (20% labels)": Entry(lambda i: OTCA(n_components=_d(i)), 0.2),
}


def _usps_path() -> Path:
    home = os.environ.get("SDPEMBED_DATA") or str(Path(__file__).resolve().parents[2] / "shared"
                                                  / "data")
    return Path(home) / "usps.npz"


def load_datasets(usps_n: int, pca: int, seed: int = 0):
    """(name, X, y, note) triples: standardized iris and wine; USPS subset after PCA."""
    out = []
    for name, loader in (("iris", load_iris), ("wine", load_wine)):
        X, y = loader(return_X_y=True)
        out.append((name, StandardScaler().fit_transform(X), y, "standardized"))
    path = _usps_path()
    if path.exists():
        with np.load(path, allow_pickle=False) as z:
            X, y = z["X"].astype(float), z["y"].astype(int)
        idx = np.sort(np.random.default_rng(seed).choice(X.shape[0], usps_n, replace=False))
        X, y = X[idx], y[idx]
        X = SkPCA(n_components=pca, random_state=seed).fit_transform(X)
        out.append((f"usps{usps_n}", X, y, f"random {usps_n} images, PCA to {pca} dims "
                    "(the SDP side is p or p + c)"))
    else:
        logger.warning("USPS not found at %s; set SDPEMBED_DATA", path)
    return out


def _basis(est) -> np.ndarray:
    """Columns spanning the learned subspace (with the label map for discriminative projections)."""
    B = est.components_.T
    if hasattr(est, "label_components_"):
        B = np.vstack([B, est.label_components_.T])
    return B


def _semi(y: np.ndarray, frac: float, seed: int = 0) -> np.ndarray:
    if frac >= 1:
        return y
    rng = np.random.default_rng(seed)
    ys = np.full_like(y, -1)
    for k in np.unique(y):  # the same fraction in every class, at least 2 points
        idx = np.flatnonzero(y == k)
        take = rng.choice(idx, max(2, int(round(frac * idx.size))), replace=False)
        ys[take] = k
    return ys


def run_one(name: str, entry: Entry, dataset, solver: str) -> dict:
    dname, X, y, _ = dataset
    info = DataInfo(dname, int(np.unique(y).size), X.shape[1])
    ys = _semi(y, entry.labeled_fraction)
    row = {"dataset": dname, "method": name, "n": X.shape[0], "p": X.shape[1]}
    try:
        eig = entry.factory(info)
        t0 = time.perf_counter()
        eig.fit(X, ys)
        row["eigen_s"] = time.perf_counter() - t0
        sdp = entry.factory(info).set_params(method="sdp", solver=solver)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            sdp.fit(X, ys)
            row["sdp_s"] = time.perf_counter() - t0
        rep = sdp.solve_report_
        row.update(
            # OTCA is a sequence of QPs (no pencil, no rank gap)
            d=int(eig.n_components_), kind=getattr(eig, "pencil_kind_", "sequential QP"),
            m=int(_basis(eig).shape[0]),
            eigen_objective=float(eig.objective_), sdp_objective=float(sdp.objective_),
            rel_diff=abs(sdp.objective_ - eig.objective_) / max(abs(eig.objective_), 1e-300),
            max_angle=float(principal_angles(_basis(eig), _basis(sdp)).max()),
            rank_gap=float(getattr(sdp, "rank_gap_", np.nan)), status=rep.status,
            iterations=rep.iterations,
            solve_s=rep.solve_seconds, compile_s=rep.compile_seconds,
            warnings=sorted({type(w.message).__name__ for w in caught}),
        )
    except Exception as exc:  # noqa: BLE001 - a benchmark reports failures, it does not stop
        row["error"] = f"{type(exc).__name__}: {exc}"
    return row


def trace_ratio_rows(datasets, solver: str) -> list[dict]:
    """Charnes–Cooper SDP vs Dinkelbach (DPP Fantope re-solves) vs ITR on LDA's trace ratio."""
    from sdpembed import relaxations as rlx
    from sdpembed.formulations.lda import lda_pencil
    from sdpembed.sequential import dinkelbach
    from sdpembed.solvers import solve

    out = []
    for dname, X, y, _ in datasets:
        c = int(np.unique(y).size)
        A, B, sense, _ = lda_pencil(X, y, c, criterion="trace_ratio")[:4]
        d = min(c - 1, X.shape[1])
        row = {"dataset": dname, "p": X.shape[1], "d": d}
        t0 = time.perf_counter()
        itr = rlx.trace_ratio_iteration(A, B, d, sense=sense)
        row.update(itr_value=itr.value, itr_iterations=itr.iterations,
                   itr_s=time.perf_counter() - t0)
        pencil, _, scale = rlx.precondition(rlx.Pencil(A, B, sense, "trace_ratio"))
        form = rlx.formulate(pencil, d)
        t0 = time.perf_counter()
        rep = solve(form, solver=solver)
        Yf = form.value("Y_fantope")
        row.update(cc_value=scale * rep.objective, cc_s=time.perf_counter() - t0,
                   cc_rank_gap=rlx.rank_gap(Yf, d), cc_t=float(form.value("t")),
                   cc_angle=float(principal_angles(rlx.recover_basis(Yf, d), itr.vectors).max()))
        dk = dinkelbach(pencil.A, pencil.B, d, sense=sense, solver=solver)
        row.update(dk_value=scale * dk.value, dk_iterations=dk.iterations, dk_s=dk.seconds,
                   dk_first_compile_s=dk.reports[0].compile_seconds,
                   dk_later_compile_s=float(np.mean([r.compile_seconds for r in dk.reports[1:]]))
                   if dk.iterations > 1 else None,
                   dk_angle=float(principal_angles(dk.vectors, itr.vectors).max()))
        out.append(row)
    return out


def trace_ratio_markdown(rows: list[dict]) -> str:
    lines = ["", "## LDA trace ratio: Charnes–Cooper SDP vs Dinkelbach vs ITR", "",
             "| dataset | p | d | ITR value (iters, s) | Charnes–Cooper value (s) | CC rank gap "
             "| CC angle | Dinkelbach value (iters, s) | Dinkelbach angle "
             "| compile s: first / later |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        later = "-" if r["dk_later_compile_s"] is None else f"{r['dk_later_compile_s']:.3f}"
        lines.append(
            f"| {r['dataset']} | {r['p']} | {r['d']} | {r['itr_value']:.10g} "
            f"({r['itr_iterations']}, {r['itr_s']:.3f}) | {r['cc_value']:.10g} ({r['cc_s']:.2f}) "
            f"| {r['cc_rank_gap']:.1e} "
            f"| {r['cc_angle']:.1e} | {r['dk_value']:.10g} ({r['dk_iterations']}, {r['dk_s']:.2f}) "
            f"| {r['dk_angle']:.1e} | {r['dk_first_compile_s']:.3f} / {later} |")
    return "\n".join(lines) + "\n"


def to_markdown(rows: list[dict], header: dict) -> str:
    lines = [f"# Closed form vs SDP relaxation ({header['solver']} {header['solver_version']})",
             "", f"{header['when']}, {header['machine']}; datasets: " +
             "; ".join(f"{k}: {v}" for k, v in header["datasets"].items()), "",
             "| dataset | method | kind | p (m) | d | eigen objective | SDP objective | rel. diff "
             "| max angle (rad) | rank gap | eigen s | SDP s (solve) | status |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['dataset']} | {r['method']} | | {r['p']} | | | | | | | | | "
                         f"{r['error'][:80]} |")
            continue
        lines.append(
            f"| {r['dataset']} | {r['method']} | {r['kind']} | {r['p']} ({r['m']}) | {r['d']} "
            f"| {r['eigen_objective']:.10g} | {r['sdp_objective']:.10g} | {r['rel_diff']:.1e} "
            f"| {r['max_angle']:.1e} | {r['rank_gap']:.1e} | {r['eigen_s']:.4f} "
            f"| {r['sdp_s']:.2f} ({r['solve_s']:.2f}) | {r['status']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--solver", default="CLARABEL")
    ap.add_argument("--usps-n", type=int, default=500)
    ap.add_argument("--pca", type=int, default=50, help="PCA dimension for USPS")
    ap.add_argument("--methods", nargs="*", default=None, help="subset of REGISTRY names")
    ap.add_argument("--out", default=str(RESULTS / "bench_eigen"))
    ap.add_argument("--no-trace-ratio", action="store_true",
                    help="skip the Charnes–Cooper / Dinkelbach / ITR table")
    add_tuning_argument(ap)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    datasets = load_datasets(args.usps_n, args.pca)
    names = args.methods or list(REGISTRY)
    rows = []
    for ds in datasets:
        for name in names:
            row = run_one(name, REGISTRY[name], ds, args.solver)
            logger.info("%s / %s: %s", ds[0], name,
                        row.get("error") or f"rel {row['rel_diff']:.1e}, angle "
                        f"{row['max_angle']:.1e}, eigen {row['eigen_s']:.3f}s, "
                        f"sdp {row['sdp_s']:.2f}s")
            rows.append(row)
    header = {"solver": args.solver.upper(), "solver_version": solver_version(args.solver),
              "when": time.strftime("%Y-%m-%d %H:%M"),
              "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
              "datasets": {d[0]: d[3] for d in datasets}}
    tr_rows = trace_ratio_rows(datasets, args.solver) if not args.no_trace_ratio else []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(
        {"header": header, "rows": rows, "trace_ratio": tr_rows}, indent=1))
    md = to_markdown(rows, header) + (trace_ratio_markdown(tr_rows) if tr_rows else "")
    out.with_suffix(".md").write_text(md)
    print(md)  # a script, not library code
    if args.tuning:
        write_section("bench_eigen", "Closed form against SDP relaxation, eigen methods", md,
                      command=command_line("problems.bench_eigen", argv))
    return rows


if __name__ == "__main__":
    main()

"""Tangent distance on USPS: k-NN test error and graph-building time.

Run ``python -m problems.bench_tangent [--tune] [--quick] [--tuning]``.

* Standard USPS split (7,291 training / 2,007 test digits, ``usps.npz``):
  1-NN and 3-NN test error with the Euclidean and the two-sided tangent
  distance, with and without deslanting, and the wall time of classifying the
  whole test set. Classic figures: Euclidean 1-NN about 5.6 %, tangent
  distance 1-NN about 2.5 % (Simard, LeCun & Denker, NIPS 1993).
* The DVU graph (2 tangent neighbours + 1 random long edge per digit) on all
  9,298 digits, timed (target: under 2 minutes on 2 cores).
* ``--tune`` re-runs the selection of the defaults ``sigma`` and ``blur``:
  leave-one-out tangent 1-NN error on the training split only (the test
  split is never used for tuning).

Writes ``results/bench_tangent.md`` and ``results/bench_tangent.json``; with
``--tuning`` also its section of ``docs/tuning.md`` (:mod:`problems.tuning`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import scipy
import sklearn
from sklearn.neighbors import NearestNeighbors

from problems.tuning import add_tuning_argument, command_line, write_section
from sdpembed import tangent
from sdpembed.datasets import load_usps as load_usps_bunch
from sdpembed.tangent import _vote

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"


def load_usps():
    """The USPS archive via :func:`sdpembed.datasets.load_usps`.

    ``$SDPEMBED_DATA`` wins; otherwise the repository's sibling ``shared/data``
    folder if it holds ``usps.npz``; otherwise the loader's cache (downloads).
    """
    shared = ROOT.parent / "shared" / "data"
    home = None if os.environ.get("SDPEMBED_DATA") or not (shared / "usps.npz").exists() \
        else shared
    b = load_usps_bunch(data_home=home)
    X, y, split = b.data.astype(np.float64), b.target, b.split
    tr, te = split == "train", split == "test"
    return X, y, X[tr], y[tr], X[te], y[te]


def errors(ind, y_ref, y_true):
    """1-NN and 3-NN (majority, ties to the nearer class) error rates in percent."""
    return (100 * float(np.mean(y_ref[ind[:, 0]] != y_true)),
            100 * float(np.mean(_vote(y_ref[ind[:, :3]], 10) != y_true)))


def euclidean_row(name, Xtr, ytr, Xte, yte):
    t = time.perf_counter()
    ind = NearestNeighbors(n_neighbors=3, algorithm="brute").fit(Xtr).kneighbors(
        Xte, return_distance=False)
    wall = time.perf_counter() - t
    e1, e3 = errors(ind, ytr, yte)
    return dict(distance=name, err_1nn=e1, err_3nn=e3, seconds=wall)


def tangent_row(name, Xtr, ytr, Xte, yte, **kw):
    t = time.perf_counter()
    _, ind = tangent.tangent_kneighbors(Xte, Xtr, n_neighbors=3, **kw)
    wall = time.perf_counter() - t
    e1, e3 = errors(ind, ytr, yte)
    return dict(distance=name, err_1nn=e1, err_3nn=e3, seconds=wall,
                params={k: v for k, v in kw.items()})


def slant_stats(X):
    imgs = X.reshape(-1, 16, 16)
    yy, xx = np.mgrid[:16, :16]
    m = imgs.sum(axis=(1, 2))
    xb = (imgs * xx).sum(axis=(1, 2)) / m
    yb = (imgs * yy).sum(axis=(1, 2)) / m
    dx, dy = xx - xb[:, None, None], yy - yb[:, None, None]
    return (imgs * dx * dy).sum(axis=(1, 2)) / (imgs * dy**2).sum(axis=(1, 2))


def tune(Xtr, ytr, candidates):
    """Leave-one-out tangent 1-NN / 3-NN errors on the training split (counts of 7,291)."""
    grid = []
    for blur in (0.0, 0.5, 0.75, 1.0):
        for sigma in (0.5, 0.75, 1.0):
            t = time.perf_counter()
            _, ind = tangent.tangent_kneighbors(Xtr, n_neighbors=3, candidates=candidates,
                                                sigma=sigma, blur=blur)
            grid.append(dict(blur=blur, sigma=sigma,
                             loo_errors_1nn=int(np.sum(ytr[ind[:, 0]] != ytr)),
                             loo_errors_3nn=int(np.sum(_vote(ytr[ind], 10) != ytr)),
                             seconds=time.perf_counter() - t))
            print("  tune", grid[-1], flush=True)
    return grid


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tune", action="store_true", help="re-run the LOO grid on the train split")
    ap.add_argument("--quick", action="store_true", help="skip the exact (all-pairs) rows")
    ap.add_argument("--candidates", type=int, default=100,
                    help="Euclidean candidates re-ranked per test digit (default 100)")
    add_tuning_argument(ap)
    args = ap.parse_args(argv)

    X, y, Xtr, ytr, Xte, yte = load_usps()
    info = dict(machine=platform.machine(), cpus=os.cpu_count(), python=platform.python_version(),
                numpy=np.__version__, scipy=scipy.__version__, sklearn=sklearn.__version__,
                load_average_at_start=os.getloadavg(),
                defaults=dict(sigma=tangent.DEFAULT_SIGMA, blur=tangent.DEFAULT_BLUR,
                              regularization=0.0, transforms=list(tangent.TRANSFORMS),
                              sided="two"))
    print(info, flush=True)

    Dtr, Dte = tangent.deslant(Xtr), tangent.deslant(Xte)
    s_before, s_after = slant_stats(X), slant_stats(np.r_[Dtr, Dte])
    deslant_info = dict(mean_abs_slant_before=float(np.mean(np.abs(s_before))),
                        mean_abs_slant_after=float(np.mean(np.abs(s_after))),
                        mean_abs_pixel_change=float(np.mean(np.abs(np.r_[Dtr, Dte] - X))))
    print(deslant_info, flush=True)

    rows = []
    blur = tangent.DEFAULT_BLUR

    def blurred(A):
        from scipy import ndimage

        return ndimage.gaussian_filter(A.reshape(-1, 16, 16), blur, axes=(1, 2),
                                       mode="constant").reshape(A.shape)

    c = args.candidates
    plan = [
        ("euclidean", lambda: euclidean_row("euclidean", Xtr, ytr, Xte, yte)),
        ("euclidean, deslanted", lambda: euclidean_row("euclidean, deslanted", Dtr, ytr, Dte,
                                                       yte)),
        (f"euclidean, blur {blur}", lambda: euclidean_row(f"euclidean, blur {blur}",
                                                          blurred(Xtr), ytr, blurred(Xte), yte)),
        (f"tangent two-sided, {c} candidates",
         lambda: tangent_row(f"tangent two-sided, {c} candidates", Xtr, ytr, Xte, yte,
                             candidates=c)),
        (f"tangent two-sided, {c} candidates, deslanted",
         lambda: tangent_row(f"tangent two-sided, {c} candidates, deslanted", Xtr, ytr, Xte,
                             yte, candidates=c, deslant=True)),
        (f"tangent one-sided, {c} candidates",
         lambda: tangent_row(f"tangent one-sided, {c} candidates", Xtr, ytr, Xte, yte,
                             candidates=c, sided="one")),
        (f"tangent two-sided, {c} candidates, no blur",
         lambda: tangent_row(f"tangent two-sided, {c} candidates, no blur", Xtr, ytr, Xte, yte,
                             candidates=c, blur=0.0)),
    ]
    if not args.quick:
        plan += [
            ("tangent two-sided, exact", lambda: tangent_row(
                "tangent two-sided, exact", Xtr, ytr, Xte, yte, candidates=None)),
            ("tangent two-sided, exact, deslanted", lambda: tangent_row(
                "tangent two-sided, exact, deslanted", Xtr, ytr, Xte, yte, candidates=None,
                deslant=True)),
        ]
    for name, fn in plan:
        rows.append(fn())
        print(f"  {name}: {rows[-1]['err_1nn']:.2f} % / {rows[-1]['err_3nn']:.2f} % "
              f"({rows[-1]['seconds']:.1f} s)", flush=True)

    graphs = []
    for deslanted in (True, False):
        for n_jobs in (None, -1):
            t = time.perf_counter()
            g = tangent.tangent_knn_graph(X, n_neighbors=2, n_random=1, candidates=50,
                                          random_state=0, deslant=deslanted, n_jobs=n_jobs)
            wall = time.perf_counter() - t
            same = float(np.mean(y[g.edges[:, 0]] == y[g.edges[:, 1]]))
            graphs.append(dict(n_nodes=g.n_nodes, n_edges=g.n_edges, deslant=deslanted,
                               n_jobs=n_jobs, candidates=50, connected=bool(g.is_connected()),
                               same_class_edge_fraction=same,
                               median_sqdist=float(np.median(g.sqdist)), seconds=wall))
            print("  graph", graphs[-1], flush=True)

    result = dict(info=info, deslant=deslant_info, classification=rows, graph=graphs)
    if args.tune:
        result["tuning_loo_train"] = tune(Xtr, ytr, candidates=100)
    md = write(result)
    if args.tuning:
        write_section("bench_tangent", "Tangent distance on USPS", md,
                      command=command_line("problems.bench_tangent", argv))


def write(result):
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_tangent.json").write_text(json.dumps(result, indent=2))
    info = result["info"]
    lines = [
        "# Tangent distance on USPS",
        "",
        f"Machine: {info['cpus']} cores ({info['machine']}), Python {info['python']}, "
        f"numpy {info['numpy']}, scipy {info['scipy']}, scikit-learn {info['sklearn']}; "
        f"load average at start {tuple(round(v, 1) for v in info['load_average_at_start'])} "
        "(shared machine: timings include other jobs).",
        "",
        f"Tangent defaults: {info['defaults']}.",
        "",
        "## k-NN test error, standard split (7,291 train / 2,007 test)",
        "",
        "Classic: Euclidean 1-NN about 5.6 %, tangent-distance 1-NN about 2.5 % "
        "(Simard, LeCun & Denker 1993).",
        "",
        "| distance | 1-NN error % | 3-NN error % | wall time, full test set (s) |",
        "|---|---|---|---|",
    ]
    for r in result["classification"]:
        lines.append(f"| {r['distance']} | {r['err_1nn']:.2f} | {r['err_3nn']:.2f} | "
                     f"{r['seconds']:.1f} |")
    d = result["deslant"]
    lines += [
        "",
        f"Deslanting: mean |slant| {d['mean_abs_slant_before']:.2e} before, "
        f"{d['mean_abs_slant_after']:.2e} after; mean |pixel change| "
        f"{d['mean_abs_pixel_change']:.2e} (pixels in [0, 1]). These USPS digits were "
        "already deslanted when the data set was made, so deslanting is nearly a no-op.",
        "",
        "## DVU tangent graph on all 9,298 digits",
        "",
        "2 tangent neighbours (re-ranked among 50 Euclidean candidates) + 1 random long edge.",
        "",
        "| deslant | n_jobs | edges | connected | same-class edges | median sqdist | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for g in result["graph"]:
        lines.append(f"| {g['deslant']} | {g['n_jobs']} | {g['n_edges']} | {g['connected']} | "
                     f"{g['same_class_edge_fraction']:.3f} | {g['median_sqdist']:.3f} | "
                     f"{g['seconds']:.1f} |")
    if "tuning_loo_train" in result:
        lines += [
            "",
            "## Selection of sigma and blur (training split only)",
            "",
            "Leave-one-out errors (out of 7,291) of tangent k-NN on the training split, "
            "100 Euclidean candidates.",
            "",
            "| blur | sigma | LOO 1-NN errors | LOO 3-NN errors |",
            "|---|---|---|---|",
        ]
        for t in result["tuning_loo_train"]:
            lines.append(f"| {t['blur']} | {t['sigma']} | {t['loo_errors_1nn']} | "
                         f"{t['loo_errors_3nn']} |")
    md = "\n".join(lines) + "\n"
    (RESULTS / "bench_tangent.md").write_text(md)
    print(f"wrote {RESULTS / 'bench_tangent.md'}")
    return md


if __name__ == "__main__":
    main()

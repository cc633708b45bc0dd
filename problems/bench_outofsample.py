"""Out-of-sample DVU on USPS's own split: fit on training digits, embed the test digits.

Run::

    .venv/bin/python -m problems.bench_outofsample outofsample_usps [--only NAME] [--resume]
        [--no-transductive-test]

reads ``problems/benchmarks/<spec>.toml`` and writes ``results/<spec>.{md,json}``.
For each set-up (graph metric, seed) of the spec:

* DVU is fitted on ``n_train`` digits of USPS's training split (stratified,
  seeded), deslanted, with a fraction of the labels hidden (DVU paper,
  section 4: 2,500 digits, 80 % labelled, 2 tangent neighbours + 1 random
  partner, normalised distances), by the LOWRANK solver;
* **transductive** accuracy: 3-NN and the Crammer-Singer linear SVM (the
  paper's M-SVM), trained on the labelled digits' top-10 DVU components,
  on the hidden training labels;
* **out of sample**: the 2,007 test digits are placed by ``DVU.transform``
  (each ``out_of_sample`` method) and classified by the same classifiers;
  transform time (neighbour search + placement) and, for ``"distances"``,
  the largest certified duality gap;
* baselines on the test digits: 3-NN on raw pixels (tangent distance, exact;
  Euclidean) from the same labelled digits, and the tangent 1-NN / 3-NN
  from *all* fitted digits with their true labels (a reference for any
  extension that sees a test digit only through its distances to the fitted
  digits);
* **transductive on the test digits** (unless ``--no-transductive-test``):
  DVU fitted on the training and the (unlabelled) test digits together, the
  paper's protocol ("embed the test points at training time"), evaluated on
  the test digits: the accuracy the out-of-sample extension stands in for;
* the neighbour count of the extension: leave-one-out placement of the
  labelled training digits (each placed from the fitted digits other than
  itself, then 3-NN among the other labelled digits), the training-only
  criterion the default ``out_of_sample_neighbors`` was chosen by, next to
  the test accuracy for the same counts (not used for the choice).

The results files are rewritten after every set-up; ``--resume`` keeps the
set-ups already in them. Timings are wall times on the machine that ran the
benchmark, with its load average recorded.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import tomllib

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
RESULTS = Path("results")


def _data(spec: dict, seed: int):
    """Training subset (stratified, seeded) and the whole test split, deslanted."""
    from sklearn.model_selection import train_test_split

    from sdpembed.datasets import load_usps, partial_labels
    from sdpembed.tangent import deslant

    d = spec["data"]
    bunch = load_usps()
    X, y, split = bunch.data.astype(float), bunch.target.astype(np.int64), bunch.split
    tr, te = np.flatnonzero(split == "train"), np.flatnonzero(split == "test")
    idx, _ = train_test_split(tr, train_size=d["n_train"], stratify=y[tr], random_state=seed)
    idx = np.sort(idx)
    Xtr, ytr, Xte, yte = X[idx], y[idx], X[te], y[te]
    if d.get("deslant", True):
        Xtr, Xte = deslant(Xtr), deslant(Xte)
    y_partial = partial_labels(ytr, d["labeled_fraction"], per_class=True, min_per_class=2,
                               random_state=seed)
    return Xtr, ytr, y_partial, Xte, yte


def _classifiers(Z, y):
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import LinearSVC

    return {"3-NN": KNeighborsClassifier(3).fit(Z, y),
            "M-SVM": LinearSVC(C=1.0, multi_class="crammer_singer", max_iter=10_000,
                               random_state=0).fit(Z, y)}


def _accuracies(clfs, Z, y) -> dict:
    return {name: float(np.mean(c.predict(Z) == y)) for name, c in clfs.items()}


def _dvu(spec: dict, setup: dict, seed: int, **extra):
    from sdpembed import DVU

    s = spec["dvu"]
    return DVU(n_components=s["n_components"], metric=setup["metric"],
               n_neighbors=spec["graph"]["n_neighbors"], n_random=spec["graph"]["n_random"],
               slack_weight=setup.get("slack_weight", s["slack_weight"]),
               snr=setup.get("snr"), solver="LOWRANK",
               solver_options=dict(spec["lowrank"]), random_state=seed,
               out_of_sample_neighbors=spec["out_of_sample"]["neighbors"], **extra)


def run_setup(spec: dict, setup: dict, transductive_test: bool) -> dict:
    from sdpembed.outofsample import fitted_neighbors, place_by_distances
    from sdpembed.tangent import _vote, tangent_kneighbors

    seed = int(setup["seed"])
    out = dict(name=setup["name"], metric=setup["metric"], seed=seed,
               load_average_at_start=os.getloadavg())
    Xtr, ytr, y_partial, Xte, yte = _data(spec, seed)
    lab = y_partial != -1
    out.update(n_train=int(len(ytr)), n_labeled=int(lab.sum()), n_test=int(len(yte)))

    t = time.perf_counter()
    est = _dvu(spec, setup, seed).fit(Xtr, y_partial)
    out["fit_seconds"] = time.perf_counter() - t
    rep = est.solve_report_
    out["solve"] = dict(status=rep.status, objective=rep.objective,
                        gap=rep.certified_gap, seconds=rep.solve_seconds)
    print(f"[{setup['name']}] fit {out['fit_seconds']:.0f} s: {rep}", flush=True)
    Z = est.embedding_
    clfs = _classifiers(Z[lab], ytr[lab])
    rows = {"DVU, transductive (hidden training labels)": _accuracies(clfs, Z[~lab], ytr[~lab])}

    timing = {}
    for method in spec["out_of_sample"]["methods"]:
        est.set_params(out_of_sample=method)
        t = time.perf_counter()
        Zte = est.transform(Xte)
        timing[method] = dict(transform_seconds=time.perf_counter() - t)
        rows[f"DVU, out of sample ({method})"] = _accuracies(clfs, Zte, yte)
        # the estimator's own predict uses the same classifier (3-NN)
        assert np.array_equal(est.predict(Xte), clfs["3-NN"].predict(Zte))
        print(f"  {method}: {rows[f'DVU, out of sample ({method})']} "
              f"({timing[method]['transform_seconds']:.1f} s)", flush=True)

    # split of the transform time, and the certificate of the distance placement
    k = est.out_of_sample_neighbors
    t = time.perf_counter()
    sq, ind = fitted_neighbors(Xte, Xtr, k, metric=setup["metric"])
    search = time.perf_counter() - t
    t = time.perf_counter()
    pl = place_by_distances(Z, ind, sq)
    timing["neighbour_search_seconds"] = search
    timing["distances_placement_seconds"] = time.perf_counter() - t
    timing["distances_max_gap"] = float(pl.gap.max())
    timing["distances_newton_steps"] = int(pl.iterations)
    timing["distances_lifted_fraction"] = float(np.mean(pl.lift > 1e-6 * np.sqrt(sq.mean())))

    # baselines on the test digits
    t = time.perf_counter()
    _, ind_t = tangent_kneighbors(Xte, Xtr[lab], n_neighbors=3, candidates=None)
    timing["tangent_3nn_raw_seconds"] = time.perf_counter() - t
    rows["raw pixels, tangent distance (exact), labelled digits"] = {
        "3-NN": float(np.mean(_vote(ytr[lab][ind_t], 10) == yte))}
    from sklearn.neighbors import KNeighborsClassifier

    rows["raw pixels, Euclidean, labelled digits"] = {
        "3-NN": float(KNeighborsClassifier(3).fit(Xtr[lab], ytr[lab]).score(Xte, yte))}
    _, ind_all = tangent_kneighbors(Xte, Xtr, n_neighbors=3, candidates=None)
    rows["raw pixels, tangent distance, all fitted digits with true labels (reference)"] = {
        "1-NN": float(np.mean(ytr[ind_all[:, 0]] == yte)),
        "3-NN": float(np.mean(_vote(ytr[ind_all], 10) == yte))}

    # neighbour count: training-only leave-one-out criterion, and the test accuracy
    sweep = []
    ks = spec["out_of_sample"]["sweep"]
    kmax = max(ks)
    sq_te, ind_te = fitted_neighbors(Xte, Xtr, kmax, metric=setup["metric"])
    labeled = np.flatnonzero(lab)
    sq_lo, ind_lo = fitted_neighbors(Xtr[lab], Xtr, kmax, metric=setup["metric"],
                                     exclude=labeled)
    from sdpembed.outofsample import extend

    for kk in ks:
        for method in spec["out_of_sample"]["methods"]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                Zl = extend(Z, ind_lo[:, :kk], sq_lo[:, :kk], method)
                Zt = extend(Z, ind_te[:, :kk], sq_te[:, :kk], method)
            nb = KNeighborsClassifier(4).fit(Z[lab], ytr[lab]).kneighbors(
                Zl, return_distance=False)
            own = np.arange(labeled.size)[:, None]
            nb = np.array([row[row != i][:3] for row, i in zip(nb, own[:, 0])])
            loo = float(np.mean(_vote(ytr[lab][nb], 10) == ytr[lab]))
            sweep.append(dict(k=kk, method=method, loo_3nn=loo,
                              test=_accuracies(clfs, Zt, yte)))

    if transductive_test:
        X_all = np.r_[Xtr, Xte]
        y_all = np.r_[y_partial, -np.ones(len(yte), dtype=np.int64)]
        t = time.perf_counter()
        big = _dvu(spec, setup, seed).fit(X_all, y_all)
        secs = time.perf_counter() - t
        Zb = big.embedding_
        n = len(ytr)
        cb = _classifiers(Zb[:n][lab], ytr[lab])
        rows["DVU, transductive on the test digits (fit on training + test)"] = \
            _accuracies(cb, Zb[n:], yte)
        rep = big.solve_report_
        out["transductive_test_fit"] = dict(seconds=secs, status=rep.status,
                                            gap=rep.certified_gap)
        print(f"  transductive with test: {rows[list(rows)[-1]]} ({secs:.0f} s, {rep})",
              flush=True)
    out.update(rows=rows, timing=timing, sweep=sweep, load_average_at_end=os.getloadavg())
    return out


def render(spec_name: str, result: dict) -> str:
    info = result["info"]
    lines = [
        "# Out-of-sample DVU on USPS (fit on training digits, embed the test split)",
        "",
        f"Spec `problems/benchmarks/{spec_name}.toml`; machine: {info['cpus']} cores "
        f"({info['machine']}), Python {info['python']}, numpy {info['numpy']}. Shared machine: "
        "load averages are given per set-up; timings include other jobs.",
        "",
        "Accuracy (%) of 3-NN and the Crammer-Singer linear SVM (M-SVM) trained on the "
        "top-10 DVU components of the labelled training digits. *Transductive*: on the "
        "hidden training labels; *out of sample*: on the 2,007 test digits placed by "
        "`DVU.transform`.",
    ]
    for s in result["setups"]:
        la, lb = s["load_average_at_start"], s["load_average_at_end"]
        lines += ["", f"## {s['name']}", "",
                  f"{s['n_train']} training digits ({s['n_labeled']} labelled), "
                  f"{s['n_test']} test digits; graph metric `{s['metric']}`, seed {s['seed']}. "
                  f"DVU fit {s['fit_seconds']:.0f} s ({s['solve']['status']}, certified gap "
                  f"{_fmt(s['solve']['gap'])}). Load average {la[0]:.1f} at start, "
                  f"{lb[0]:.1f} at end.", "",
                  "| | 1-NN | 3-NN | M-SVM |", "|---|---|---|---|"]
        for name, acc in s["rows"].items():
            cells = [f"{100 * acc[c]:.2f}" if c in acc else "" for c in ("1-NN", "3-NN", "M-SVM")]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        tm = s["timing"]
        lines += ["", "Transform of the test digits (s): "
                  + ", ".join(f"{m} {tm[m]['transform_seconds']:.2f}"
                              for m in ("distances", "nystrom") if m in tm)
                  + f"; of which neighbour search {tm['neighbour_search_seconds']:.2f}, distance "
                  f"placement {tm['distances_placement_seconds']:.2f} "
                  f"({tm['distances_newton_steps']} batched Newton steps, largest certified gap "
                  f"{tm['distances_max_gap']:.1e}, {100 * tm['distances_lifted_fraction']:.0f} % "
                  f"of the digits lifted off the embedding, h > 0). Exact tangent 3-NN on raw "
                  f"pixels: {tm['tangent_3nn_raw_seconds']:.1f} s.",
                  "", "Neighbour count of the extension: leave-one-out 3-NN accuracy of the "
                  "labelled training digits (training-only criterion) and test accuracy (%).",
                  "", "| k | method | LOO 3-NN (train) | test 3-NN | test M-SVM |",
                  "|---|---|---|---|---|"]
        for r in s["sweep"]:
            lines.append(f"| {r['k']} | {r['method']} | {100 * r['loo_3nn']:.2f} | "
                         f"{100 * r['test']['3-NN']:.2f} | {100 * r['test']['M-SVM']:.2f} |")
        if "transductive_test_fit" in s:
            f = s["transductive_test_fit"]
            lines += ["", f"Fit on training + test digits: {f['seconds']:.0f} s "
                      f"({f['status']}, certified gap {_fmt(f['gap'])})."]
    return "\n".join(lines) + "\n"


def _fmt(v):
    return "n/a" if v is None else f"{v:.1e}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default="outofsample_usps")
    parser.add_argument("--only", action="append", help="run only the set-up of this name")
    parser.add_argument("--resume", action="store_true", help="keep set-ups already done")
    parser.add_argument("--no-transductive-test", action="store_true",
                        help="skip the DVU fit on training + test digits")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    spec = tomllib.loads((HERE / "benchmarks" / f"{args.spec}.toml").read_text())
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{args.spec}.json"
    result = dict(info=dict(machine=platform.machine(), cpus=os.cpu_count(),
                            python=platform.python_version(), numpy=np.__version__),
                  setups=[])
    if args.resume and path.exists():
        result = json.loads(path.read_text())
    done = {s["name"] for s in result["setups"]}
    for setup in spec["setup"]:
        if (args.only and setup["name"] not in args.only) or setup["name"] in done:
            continue
        want = spec.get("transductive_test", True) and not args.no_transductive_test
        result["setups"].append(run_setup(spec, setup, want and setup.get(
            "transductive_test", True)))
        path.write_text(json.dumps(result, indent=2))
        (RESULTS / f"{args.spec}.md").write_text(render(args.spec, result))
    (RESULTS / f"{args.spec}.md").write_text(render(args.spec, result))
    print(f"wrote {RESULTS / args.spec}.md")


if __name__ == "__main__":
    main()

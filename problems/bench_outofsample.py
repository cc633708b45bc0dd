"""Out-of-sample DVU on USPS's own split: fit on training digits, embed the test digits.

Run::

    .venv/bin/python -m problems.bench_outofsample outofsample_usps [--only NAME] [--resume]
        [--no-transductive-test] [--render] [--tuning]

reads ``problems/benchmarks/<spec>.toml`` and writes ``results/<spec>.{md,json}``
(``--render``: only the markdown, from the results file as it stands); with
``--tuning`` also its section of ``docs/tuning.md`` (:mod:`problems.tuning`).
For each set-up (graph metric, seed) of the spec:

* DVU is fitted on ``n_train`` digits of USPS's training split (stratified,
  seeded), deslanted, with a fraction of the labels hidden (DVU paper,
  section 4: 2,500 digits, 80 % labelled, 2 tangent neighbours + 1 random
  partner, normalised distances), by the LOWRANK solver;
* **transductive** accuracy: 3-NN and the Crammer-Singer linear SVM (the
  paper's M-SVM), trained on the labelled digits' top-10 DVU components,
  on the hidden training labels;
* **out of sample**: the training split's digits that were not fitted
  (*held-out*, 4,791: new digits from the fitted digits' own distribution)
  and the 2,007 test digits are placed by ``DVU.transform`` (each
  ``out_of_sample`` method) and classified by the same classifiers;
  transform time of the test digits (neighbour search + placement) and, for
  ``"distances"``, the largest certified duality gap;
* baselines on every population: 3-NN on raw pixels (tangent distance,
  exact; Euclidean) from the same labelled digits, and the tangent 1-NN
  from *all* fitted digits with their true labels (a reference for any
  extension that sees a new digit only through its distances to the fitted
  digits). USPS's test split is harder than its training split (the raw
  tangent 3-NN loses about 2 points between the held-out training digits
  and the test digits), so the held-out digits are the like-for-like
  comparison with the transductive accuracy on the hidden training labels;
* **transductive on the test digits** (unless ``--no-transductive-test``):
  DVU fitted on the training and the (unlabelled) test digits together, the
  paper's protocol ("embed the test points at training time"), evaluated on
  the test digits: the accuracy the out-of-sample extension stands in for;
* the neighbour count of the extension: accuracy on the held-out training
  digits (the validation set the default ``out_of_sample_neighbors`` was
  chosen on; no test digit is used), leave-one-out placement of the
  labelled fitted digits (each placed from the fitted digits other than
  itself, then 3-NN among the other labelled digits), and the test accuracy
  for the same counts (reported, not used for the choice);
* the spec's goals, checked per method and classifier (``goals``).

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

from problems.tuning import add_tuning_argument, command_line, write_section

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
RESULTS = Path("results")


def _data(spec: dict, seed: int):
    """Training subset (stratified, seeded), the rest of the training split, the test split.

    All deslanted. The rest of the training split (4,791 digits for
    ``n_train = 2500``) is never fitted: new points from the fitted digits'
    own distribution, the validation set of the extension.
    """
    from sklearn.model_selection import train_test_split

    from sdpembed.datasets import load_usps, partial_labels
    from sdpembed.tangent import deslant

    d = spec["data"]
    bunch = load_usps()
    X, y, split = bunch.data.astype(float), bunch.target.astype(np.int64), bunch.split
    tr, te = np.flatnonzero(split == "train"), np.flatnonzero(split == "test")
    idx, rest = train_test_split(tr, train_size=d["n_train"], stratify=y[tr], random_state=seed)
    idx, rest = np.sort(idx), np.sort(rest)
    Xtr, ytr, Xho, yho, Xte, yte = X[idx], y[idx], X[rest], y[rest], X[te], y[te]
    if d.get("deslant", True):
        Xtr, Xho, Xte = deslant(Xtr), deslant(Xho), deslant(Xte)
    y_partial = partial_labels(ytr, d["labeled_fraction"], per_class=True, min_per_class=2,
                               random_state=seed)
    return Xtr, ytr, y_partial, Xho, yho, Xte, yte


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


#: Populations the accuracies are measured on (columns of the table).
POPULATIONS = {
    "hidden": "hidden training labels (fitted, transductive)",
    "heldout": "held-out training digits (not fitted)",
    "test": "test split (not fitted)",
}


def _raw_knn(Xq, yq, Xref, yref, k, metric) -> float:
    """k-NN accuracy on raw pixels: exact tangent distance, or Euclidean."""
    from sklearn.neighbors import KNeighborsClassifier

    from sdpembed.tangent import _vote, tangent_kneighbors

    if metric == "tangent":
        _, ind = tangent_kneighbors(Xq, Xref, n_neighbors=k, candidates=None)
        return float(np.mean(_vote(yref[ind], 10) == yq))
    return float(KNeighborsClassifier(k).fit(Xref, yref).score(Xq, yq))


def run_setup(spec: dict, setup: dict, transductive_test: bool) -> dict:
    from sdpembed.outofsample import extend, fitted_neighbors, place_by_distances
    from sdpembed.tangent import _vote

    seed = int(setup["seed"])
    metric = setup["metric"]
    out = dict(name=setup["name"], metric=metric, seed=seed,
               load_average_at_start=os.getloadavg())
    Xtr, ytr, y_partial, Xho, yho, Xte, yte = _data(spec, seed)
    lab = y_partial != -1
    new = {"heldout": (Xho, yho), "test": (Xte, yte)}
    out.update(n_train=int(len(ytr)), n_labeled=int(lab.sum()), n_heldout=int(len(yho)),
               n_test=int(len(yte)), out_of_sample_neighbors=spec["out_of_sample"]["neighbors"])

    t = time.perf_counter()
    est = _dvu(spec, setup, seed).fit(Xtr, y_partial)
    out["fit_seconds"] = time.perf_counter() - t
    rep = est.solve_report_
    out["solve"] = dict(status=rep.status, objective=rep.objective,
                        gap=rep.certified_gap, seconds=rep.solve_seconds)
    print(f"[{setup['name']}] fit {out['fit_seconds']:.0f} s: {rep}", flush=True)
    Z = est.embedding_
    clfs = _classifiers(Z[lab], ytr[lab])
    rows = {"DVU, transductive": {"hidden": _accuracies(clfs, Z[~lab], ytr[~lab])}}

    timing = {}
    for method in spec["out_of_sample"]["methods"]:
        est.set_params(out_of_sample=method)
        row = rows[f"DVU, out of sample ({method})"] = {}
        for pop, (Xq, yq) in new.items():
            t = time.perf_counter()
            Zq = est.transform(Xq)
            secs = time.perf_counter() - t
            if pop == "test":
                timing[method] = dict(transform_seconds=secs)
                # the estimator's own predict uses the same classifier (3-NN)
                assert np.array_equal(est.predict(Xq), clfs["3-NN"].predict(Zq))
            row[pop] = _accuracies(clfs, Zq, yq)
        print(f"  {method}: {row} (test {timing[method]['transform_seconds']:.1f} s)", flush=True)

    # split of the transform time, and the certificate of the distance placement
    k = est.out_of_sample_neighbors
    t = time.perf_counter()
    sq, ind = fitted_neighbors(Xte, Xtr, k, metric=metric)
    search = time.perf_counter() - t
    t = time.perf_counter()
    pl = place_by_distances(Z, ind, sq)
    timing["neighbour_search_seconds"] = search
    timing["distances_placement_seconds"] = time.perf_counter() - t
    timing["distances_max_gap"] = float(pl.gap.max())
    timing["distances_newton_steps"] = int(pl.iterations)
    timing["distances_lifted_fraction"] = float(np.mean(pl.lift > 1e-6 * np.sqrt(sq.mean())))

    # baselines on raw pixels, on every population
    pops = {"hidden": (Xtr[~lab], ytr[~lab]), **new}
    t = time.perf_counter()
    rows["raw pixels, tangent 3-NN (exact), labelled digits"] = {
        pop: {"k-NN": _raw_knn(Xq, yq, Xtr[lab], ytr[lab], 3, "tangent")}
        for pop, (Xq, yq) in pops.items()}
    timing["tangent_3nn_raw_seconds"] = time.perf_counter() - t
    rows["raw pixels, Euclidean 3-NN, labelled digits"] = {
        pop: {"k-NN": _raw_knn(Xq, yq, Xtr[lab], ytr[lab], 3, "euclidean")}
        for pop, (Xq, yq) in pops.items()}
    rows["raw pixels, tangent 1-NN (exact), all fitted digits with true labels (reference)"] = {
        pop: {"k-NN": _raw_knn(Xq, yq, Xtr, ytr, 1, "tangent")} for pop, (Xq, yq) in new.items()}

    # neighbour count of the extension: the held-out training digits are the validation
    # set (the criterion of the default); leave-one-out placement of the labelled fitted
    # digits for comparison; test accuracy for the same counts (not used for the choice)
    sweep = []
    ks = spec["out_of_sample"]["sweep"]
    kmax = max(ks)
    nbrs = {pop: fitted_neighbors(Xq, Xtr, kmax, metric=metric) for pop, (Xq, _) in new.items()}
    labeled = np.flatnonzero(lab)
    sq_lo, ind_lo = fitted_neighbors(Xtr[lab], Xtr, kmax, metric=metric, exclude=labeled)
    from sklearn.neighbors import KNeighborsClassifier

    for kk in ks:
        for method in spec["out_of_sample"]["methods"]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                Zl = extend(Z, ind_lo[:, :kk], sq_lo[:, :kk], method)
                acc = {pop: _accuracies(clfs, extend(Z, i[:, :kk], s[:, :kk], method), new[pop][1])
                       for pop, (s, i) in nbrs.items()}
            nb = KNeighborsClassifier(4).fit(Z[lab], ytr[lab]).kneighbors(
                Zl, return_distance=False)
            nb = np.array([row[row != i][:3] for row, i in zip(nb, range(labeled.size))])
            loo = float(np.mean(_vote(ytr[lab][nb], 10) == ytr[lab]))
            sweep.append(dict(k=kk, method=method, loo_3nn=loo, **acc))

    if transductive_test:
        X_all = np.r_[Xtr, Xte]
        y_all = np.r_[y_partial, -np.ones(len(yte), dtype=np.int64)]
        t = time.perf_counter()
        big = _dvu(spec, setup, seed).fit(X_all, y_all)
        secs = time.perf_counter() - t
        Zb = big.embedding_
        n = len(ytr)
        cb = _classifiers(Zb[:n][lab], ytr[lab])
        rows["DVU, transductive"]["test"] = _accuracies(cb, Zb[n:], yte)
        rep = big.solve_report_
        out["transductive_test_fit"] = dict(seconds=secs, status=rep.status,
                                            gap=rep.certified_gap)
        print(f"  transductive with test: {rows['DVU, transductive']['test']} ({secs:.0f} s, "
              f"{rep})", flush=True)
    out.update(rows=rows, timing=timing, sweep=sweep, load_average_at_end=os.getloadavg())
    out["goals"] = goals(out)
    return out


def goals(s: dict) -> list[dict]:
    """The spec's goals, checked per out-of-sample method and classifier.

    * out-of-sample accuracy within 1 point of the transductive accuracy on the
      hidden training labels, on the test split (as stated) and on the held-out
      training digits (same distribution as the fitted digits);
    * out-of-sample test accuracy above tangent 3-NN on raw pixels from the same
      labelled digits;
    * transform of the test split in at most 10 s.
    """
    rows = s["rows"]
    trans = rows["DVU, transductive"]["hidden"]
    raw = rows["raw pixels, tangent 3-NN (exact), labelled digits"]["test"]["k-NN"]
    out = []
    for name, row in rows.items():
        if not name.startswith("DVU, out of sample"):
            continue
        method = name[name.index("(") + 1:-1]
        for clf, acc in row["test"].items():
            out.append(dict(
                method=method, classifier=clf,
                test_within_1_of_transductive=bool(acc >= trans[clf] - 0.01),
                heldout_within_1_of_transductive=bool(row["heldout"][clf] >= trans[clf] - 0.01),
                test_above_raw_tangent_3nn=bool(acc > raw),
                transform_within_10_s=bool(s["timing"][method]["transform_seconds"] <= 10.0)))
    return out


def render(spec_name: str, result: dict) -> str:
    info = result["info"]
    lines = [
        "# Out-of-sample DVU on USPS (fit on training digits, embed new digits)",
        "",
        f"Spec `problems/benchmarks/{spec_name}.toml`; machine: {info['cpus']} cores "
        f"({info['machine']}), Python {info['python']}, numpy {info['numpy']}. Shared machine: "
        "load averages are given per set-up; timings include other jobs.",
        "",
        "Accuracy (%) of 3-NN and the Crammer-Singer linear SVM (M-SVM) trained on the "
        "top-10 DVU components of the labelled training digits, on three populations: the "
        "fitted digits whose labels were hidden (*transductive*), the training split's "
        "digits that were not fitted (*held-out*: new points from the fitted digits' own "
        "distribution) and USPS's test split, both placed by `DVU.transform`. The DVU "
        "transductive test cell is DVU fitted on the training and test digits together "
        "(the paper's protocol). Raw-pixel rows: k-NN from the labelled (or all fitted) "
        "digits.",
    ]
    for s in result["setups"]:
        la, lb = s["load_average_at_start"], s["load_average_at_end"]
        head = "| |" + "".join(f" {POPULATIONS[p].split(' (')[0]}: k-NN | M-SVM |"
                               for p in POPULATIONS)
        lines += ["", f"## {s['name']}", "",
                  f"{s['n_train']} training digits fitted ({s['n_labeled']} labelled), "
                  f"{s['n_heldout']} held-out training digits, {s['n_test']} test digits; "
                  f"graph metric `{s['metric']}`, seed {s['seed']}, "
                  f"{s['out_of_sample_neighbors']} neighbours per new digit. DVU fit "
                  f"{s['fit_seconds']:.0f} s ({s['solve']['status']}, certified gap "
                  f"{_fmt(s['solve']['gap'])}). Load average {la[0]:.1f} at start, "
                  f"{lb[0]:.1f} at end.", "", head, "|---" * 7 + "|"]
        for name, row in s["rows"].items():
            cells = []
            for p in POPULATIONS:
                acc = row.get(p, {})
                knn = acc.get("3-NN", acc.get("k-NN"))
                cells += [f"{100 * knn:.2f}" if knn is not None else "",
                          f"{100 * acc['M-SVM']:.2f}" if "M-SVM" in acc else ""]
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
                  f"pixels, all three populations: {tm['tangent_3nn_raw_seconds']:.1f} s."]
        if "goals" in s:
            lines += ["", "Goals (met: yes/no): test / held-out accuracy within 1 point of the "
                      "transductive accuracy; test accuracy above raw tangent 3-NN; transform "
                      "of the test split in at most 10 s.", "",
                      "| method | classifier | test within 1 | held-out within 1 | "
                      "test above raw tangent 3-NN | transform <= 10 s |", "|---" * 6 + "|"]
            yn = {True: "yes", False: "no"}
            for g in s["goals"]:
                lines.append(f"| {g['method']} | {g['classifier']} | "
                             f"{yn[g['test_within_1_of_transductive']]} | "
                             f"{yn[g['heldout_within_1_of_transductive']]} | "
                             f"{yn[g['test_above_raw_tangent_3nn']]} | "
                             f"{yn[g['transform_within_10_s']]} |")
        lines += ["", "Neighbour count of the extension: accuracy (%) on the held-out "
                  "training digits (the validation set the default was chosen on), "
                  "leave-one-out 3-NN of the labelled fitted digits placed out of sample, and "
                  "the test accuracy for the same counts (not used for the choice).",
                  "", "| k | method | held-out 3-NN | held-out M-SVM | LOO 3-NN (fitted) | "
                  "test 3-NN | test M-SVM |", "|---" * 7 + "|"]
        for r in s["sweep"]:
            lines.append(f"| {r['k']} | {r['method']} | {100 * r['heldout']['3-NN']:.2f} | "
                         f"{100 * r['heldout']['M-SVM']:.2f} | {100 * r['loo_3nn']:.2f} | "
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
    parser.add_argument("--render", action="store_true",
                        help="only rebuild results/<spec>.md from results/<spec>.json")
    add_tuning_argument(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    path = RESULTS / f"{args.spec}.json"
    if args.render:
        result = json.loads(path.read_text())
    else:
        spec = tomllib.loads((HERE / "benchmarks" / f"{args.spec}.toml").read_text())
        RESULTS.mkdir(exist_ok=True)
        result = dict(info=dict(machine=platform.machine(), cpus=os.cpu_count(),
                                python=platform.python_version(), numpy=np.__version__,
                                command=command_line("problems.bench_outofsample", argv)),
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
    md = render(args.spec, result)
    (RESULTS / f"{args.spec}.md").write_text(md)
    print(f"wrote {RESULTS / args.spec}.md")
    if args.tuning:
        write_section(f"bench_outofsample:{args.spec}",
                      "Out-of-sample DVU on USPS: the extension's neighbour count", md,
                      command=result["info"].get(
                          "command", command_line("problems.bench_outofsample", argv)))


if __name__ == "__main__":
    main()

"""Command line: ``sdpembed demo | run | solvers | datasets``."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

__all__ = ["main"]


def _cmd_demo(args) -> int:
    from .demo import run
    from .exceptions import SdpEmbedError

    try:
        run(solver=args.solver, quiet=False, plot=args.plot or None, n_samples=args.n_samples)
    except SdpEmbedError as exc:
        print(f"sdpembed demo: {exc}", file=sys.stderr)
        return 2
    return 0


def _cmd_solvers(args) -> int:
    from .solvers import available_solvers, solver_version

    print("| backend | version |\n|---|---|")
    for name in available_solvers():
        print(f"| {name} | {solver_version(name)} |")
    return 0


def _cmd_run(args) -> int:
    from .exceptions import SdpEmbedError
    from .experiments import find_spec, load_spec, run_spec

    try:
        spec = load_spec(find_spec(args.spec))
        seeds = None if args.seeds is None else spec.seeds[:args.seeds]
        out = Path(args.out) / spec.name
        result = run_spec(spec, solvers=args.solver, seeds=seeds, n_jobs=args.jobs,
                          scheduler=args.scheduler, out_dir=out,
                          progress=not args.no_progress)
    except SdpEmbedError as exc:
        print(f"sdpembed run: {exc}", file=sys.stderr)
        return 2
    print(result.summary())
    print(f"results written to {out}/ (results.csv, results.json, summary.md"
          + (", figures/" if result.figures else "") + ")")
    return 0


def _cmd_datasets(args) -> int:
    from .datasets import data_home, dataset_info, list_datasets

    home = data_home()
    print(f"data folder: {home} (set SDPEMBED_DATA to change it)\n")
    print("| name | kind | samples x features | classes | here | description |")
    print("|---|---|---|---|---|---|")
    for name in list_datasets():
        info = dataset_info(name)
        if info.kind == "download":
            here = "yes" if (home / info.filename).is_file() else "downloaded on first use"
        else:
            here = "yes"
        print(f"| {name} | {info.kind} | {info.n_samples} x {info.n_features} | "
              f"{info.n_classes} | {here} | {info.description} |")
    return 0


def _positive_or_all(text: str) -> int:
    value = int(text)
    if value == 0 or value < -1:
        raise argparse.ArgumentTypeError("must be a positive integer or -1 (all cores)")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sdpembed", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="DVU on scikit-learn's 1,797 digits with a certified gap",
                          description="DVU on all 1,797 of scikit-learn's bundled digits (80 %% "
                          "labelled) through the LOWRANK backend: the certified duality gap, "
                          "3-NN and linear-SVM accuracy on the hidden labels before and after, "
                          "and a figure of the embedding and its spectrum.")
    demo.add_argument("--solver", default="LOWRANK",
                      help="backend (default LOWRANK; interior-point backends need a small "
                      "--n-samples)")
    demo.add_argument("--plot", default="sdpembed-demo.png", metavar="PATH",
                      help="where to write the figure (default sdpembed-demo.png; '' for none)")
    demo.add_argument("--n-samples", type=_positive, default=None, metavar="N",
                      help="a class-stratified subset of N digits (20 or more) instead of all")
    demo.set_defaults(func=_cmd_demo)
    run = sub.add_parser("run", help="run an experiment spec (problems/*.toml)",
                         description="Run the grid of a TOML spec and write results.csv, "
                         "results.json, summary.md and figures into OUT/<spec name>/.")
    run.add_argument("spec", help="path of a TOML spec, or a name in problems/ (e.g. smoke)")
    run.add_argument("--solver", action="append", default=None, metavar="NAME",
                     help="backend for the SDP methods, replacing the spec's (repeat for "
                     "several)")
    run.add_argument("--jobs", type=_positive_or_all, default=1,
                     help="parallel joblib workers (-1: all cores; default 1)")
    run.add_argument("--scheduler", default=None, metavar="ADDRESS",
                     help="Dask scheduler address (e.g. tcp://host:8786): run on the cluster")
    run.add_argument("--out", default="results", metavar="DIR",
                     help="output folder (default: results)")
    run.add_argument("--seeds", type=_positive, default=None, metavar="N",
                     help="use only the spec's first N seeds (a quick look)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.set_defaults(func=_cmd_run)
    solvers = sub.add_parser("solvers", help="installed backends and their versions")
    solvers.set_defaults(func=_cmd_solvers)
    data = sub.add_parser("datasets", help="datasets the loaders know, and which are here")
    data.set_defaults(func=_cmd_datasets)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

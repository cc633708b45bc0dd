"""Command line: ``sdpembed demo | run | solvers | datasets``."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from .exceptions import SdpEmbedError

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
    from .backends import CONIC_BACKENDS
    from .solvers import available_solvers, solver_version

    usable = available_solvers()
    print("| backend | version |\n|---|---|")
    for name in usable:
        print(f"| {name} | {solver_version(name)} |")
    missing = [b for n, b in CONIC_BACKENDS.items() if n not in usable]
    if missing:
        print("\nnot usable here:")
        for entry in missing:
            print(f"- {entry.name}: {entry.why_unusable() or 'not usable'}; "
                  f"{entry.install_hint}")
    return 0


def _cmd_run(args) -> int:
    from .experiments import find_spec, load_spec, run_spec

    spec = load_spec(find_spec(args.spec))
    seeds = None if args.seeds is None else spec.seeds[:args.seeds]
    out = Path(args.out) / spec.name
    result = run_spec(spec, solvers=args.solver, seeds=seeds, n_jobs=args.jobs,
                      scheduler=args.scheduler, out_dir=out, progress=not args.no_progress,
                      resume=args.resume, overwrite=args.overwrite)
    print(result.summary())
    print(f"results written to {out}/ (results.csv, results.json, summary.md"
          + (", figures/" if result.figures else "") + "; every run in rows.jsonl)")
    errors = result.meta["errors"]
    if errors:
        print(f"sdpembed run: {errors} of {result.meta['runs']} runs failed (see 'Errors' in "
              f"{out / 'summary.md'})", file=sys.stderr)
        return 1
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
    # plain text: argparse prints descriptions as they are, so no reStructuredText markup
    parser = argparse.ArgumentParser(
        prog="sdpembed", description="The sdpembed command line: a demo with a certified "
        "gap, experiment specs, the installed backends, the datasets.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="DVU on scikit-learn's 1,797 digits with a certified gap",
                          description="DVU on all 1,797 of scikit-learn's bundled digits (80 % "
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
    run = sub.add_parser(
        "run", help="run an experiment spec (a TOML file, or the name of a shipped spec)",
        description="Run the grid of a TOML spec into OUT/<spec name>/: every finished run "
        "is appended to rows.jsonl at once (an interrupted run keeps it; finish it with "
        "--resume), then results.csv, results.json, summary.md and figures are written. "
        "Exit status: 0 all runs ok, 1 some runs failed (listed in the summary), 2 bad "
        "input, 130/143 interrupted by SIGINT/SIGTERM.")
    run.add_argument("spec", help="path of a TOML spec, or the name of a spec shipped with "
                     "sdpembed (e.g. smoke)")
    run.add_argument("--solver", action="append", default=None, metavar="NAME",
                     help="backend for the SDP methods, replacing the spec's (repeat for "
                     "several)")
    run.add_argument("--jobs", type=_positive_or_all, default=1,
                     help="parallel joblib workers (-1: all cores; default 1)")
    run.add_argument("--scheduler", default=None, metavar="ADDRESS",
                     help="Dask scheduler address (e.g. tcp://host:8786): run on the cluster "
                     "(the data are sent from here)")
    run.add_argument("--out", default="results", metavar="DIR",
                     help="output folder (default: results)")
    run.add_argument("--seeds", type=_positive, default=None, metavar="N",
                     help="use only the spec's first N seeds (a quick look)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    again = run.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="OUT/<name> holds an interrupted run of the same spec and "
                       "options: run only the missing tasks")
    again.add_argument("--overwrite", action="store_true",
                       help="replace the results OUT/<name> holds")
    run.set_defaults(func=_cmd_run)
    solvers = sub.add_parser("solvers", help="installed backends and their versions")
    solvers.set_defaults(func=_cmd_solvers)
    data = sub.add_parser("datasets", help="datasets the loaders know, and which are here")
    data.set_defaults(func=_cmd_datasets)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; errors are one line on stderr (``-v`` adds the traceback).

    Exit status: 0 success; 1 a failure while running (some runs of a grid
    failed, an unexpected error); 2 bad input (usage, spec, options, output
    folder); 128 + the signal number when interrupted.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    prefix = f"{parser.prog} {args.command}"
    try:
        return args.func(args)
    except SdpEmbedError as exc:
        _error(prefix, str(exc), args.verbose)
        return 2
    except KeyboardInterrupt as exc:  # RunInterrupted says what was kept
        signum = getattr(exc, "signum", signal.SIGINT)
        _error(prefix, str(exc) or f"interrupted by {signal.Signals(signum).name}",
               args.verbose)
        return 128 + int(signum)
    except Exception as exc:  # noqa: BLE001 - one line instead of a traceback
        _error(prefix, f"{type(exc).__name__}: {exc}" + ("" if args.verbose else
                                                         " (run with -v for the traceback)"),
               args.verbose)
        return 1


def _error(prefix: str, message: str, verbose: bool) -> None:
    if verbose:
        traceback.print_exc()
    print(f"{prefix}: {' '.join(message.split())}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

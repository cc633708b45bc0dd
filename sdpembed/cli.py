"""Command line: ``sdpembed demo | solvers``."""

from __future__ import annotations

import argparse
import logging
import sys

__all__ = ["main"]


def _cmd_demo(args) -> int:
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "dvu_digits.py"
    if not path.exists():
        print(f"the demo script {path} is missing: run 'sdpembed demo' from a source checkout "
              "installed with 'pip install -e .'", file=sys.stderr)
        return 2
    spec = importlib.util.spec_from_file_location("dvu_digits_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.run(solver=args.solver, quiet=False, plot=args.plot)
    return 0


def _cmd_solvers(args) -> int:
    from .solvers import available_solvers, solver_version

    print("| backend | version |\n|---|---|")
    for name in available_solvers():
        print(f"| {name} | {solver_version(name)} |")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sdpembed", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="DVU on a small built-in example (under a minute)")
    demo.add_argument("--solver", default=None, help="backend (default: CSDP if installed, "
                      "else CLARABEL)")
    demo.add_argument("--plot", default="sdpembed-demo.png", help="where to write the plot")
    demo.set_defaults(func=_cmd_demo)
    solvers = sub.add_parser("solvers", help="installed backends and their versions")
    solvers.set_defaults(func=_cmd_solvers)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

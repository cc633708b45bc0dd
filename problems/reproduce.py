"""Run the paper-reproduction specs shipped with sdpembed and collect their summaries.

The specs are package data (``sdpembed/experiments/specs/*.toml``, listed by
:func:`sdpembed.experiments.list_specs`). Each is run as ``sdpembed run NAME
--jobs N --out results --resume`` would run it (:func:`sdpembed.experiments.run_spec`),
writing ``results/<name>/`` (an interrupted reproduction continues where it
stopped); the summaries are concatenated, with the wall time of each run, into
``results/reproduce.md``; with ``--docs`` also into ``docs/reproductions.md``, the
documentation site's reproductions page.

Run: ``.venv/bin/python -m problems.reproduce [NAME ...] [--jobs 2] [--seeds N] [--docs]``.
Without names, the specs that finish in minutes on a laptop are run:
tca_table3, tca_table4, dne_uci, wm_mushroom, wm_usps_loo. ``dvu_table1_small``
(about half an hour with CSDP on 2 cores) and ``dvu_table1`` (2,500 digits,
needs the LOWRANK backend) are run only when named.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from sdpembed.experiments import find_spec, load_spec, run_spec

ROOT = Path(__file__).resolve().parents[1]
FAST = ("tca_table3", "tca_table4", "dne_uci", "wm_mushroom", "wm_usps_loo")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(FAST), help="spec names")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=None, help="first N seeds only")
    parser.add_argument("--out", default=str(ROOT / "results"))
    parser.add_argument("--docs", action="store_true",
                        help="also write docs/reproductions.md (the site's reproductions page)")
    args = parser.parse_args(argv)
    parts = ["# Reproductions of the papers' tables", ""]
    for name in args.names:
        spec = load_spec(find_spec(name))
        seeds = None if args.seeds is None else spec.seeds[:args.seeds]
        t0 = time.perf_counter()
        result = run_spec(spec, seeds=seeds, n_jobs=args.jobs,
                          out_dir=Path(args.out) / spec.name, resume=True)
        wall = time.perf_counter() - t0
        command = f"sdpembed run {name} --jobs {args.jobs} --resume" + (
            f" --seeds {args.seeds}" if args.seeds else "")
        parts += [f"<!-- {command}: {wall:.1f} s -->", "", result.summary().replace(
            f"# {spec.name}", f"## {spec.name}", 1).replace("\n## ", "\n### "),
            f"Command: `{command}`; wall time {wall:.1f} s.", ""]
        print(f"{name}: {wall:.1f} s, {result.meta['errors']} failed runs", flush=True)
    out = Path(args.out) / "reproduce.md"
    out.write_text("\n".join(parts))
    print(f"wrote {out}")
    if args.docs:
        page = ROOT / "docs" / "reproductions.md"
        page.write_text("\n".join(parts))
        print(f"wrote {page}")


if __name__ == "__main__":
    main()

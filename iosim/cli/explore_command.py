"""``iosim explore``: evaluate a (B_r, B_c) grid for one GPU and shape, and pick the best."""

from __future__ import annotations

import argparse
import json

from ..report.explore_report import explore_csv, explore_json, render_explore
from ..studies.explore import OBJECTIVES, explore
from ..report.plots import plot_explore
from ..schedules import SCHEDULES
from .arguments import (add_pass_argument, add_problem_arguments, add_sweep_output_arguments, check_plot_argument,
                     comma_names, parse_values, positive_int, problem_from_args, write_plot)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "explore",
        help="sweep block sizes (B_r, B_c) and compare the best with the paper's and the real kernel's",
        description="Run every (B_r, B_c) of a grid (default: powers of two and multiples of 16 up to what "
                    "shared memory allows), mark the ones that do not fit, and report the best for the "
                    "objective next to the paper's default and the real FlashAttention kernel's tile.",
        epilog="Value lists: 64,128 or LO:HI (doubling), LO:HI:STEP, LO:HI:xF; 8k = 8192.",
    )
    add_problem_arguments(p)
    p.add_argument("--algo", required=True, type=comma_names(list(SCHEDULES)),
                   help=f"algorithm(s), comma-separated: {', '.join(SCHEDULES)} (standard runs with tiled GEMMs)")
    add_pass_argument(p)
    p.add_argument("--block-mask", metavar="SPEC", help="block-sparse mask for every candidate: local:W, random:S[:SEED], ...")
    p.add_argument("--block-q", type=parse_values, help="B_r values to try (default: the grid)")
    p.add_argument("--block-kv", type=parse_values, help="B_c values to try (default: the grid)")
    p.add_argument("--objective", choices=list(OBJECTIVES), default="hbm-bytes",
                   help="hbm-bytes: HBM read + write bytes; time: the roofline prediction (default hbm-bytes)")
    p.add_argument("--allow-spill", action="store_true",
                   help="let the best be a tile whose register use exceeds the register file (spills)")
    p.add_argument("--dropout", action="store_true",
                   help="look the real kernel's tile up for a dropout launch (counts do not model dropout)")
    p.add_argument("--format", choices=["table", "json", "csv"], default="table")
    p.add_argument("--top", type=positive_int, default=10, help="rows in the table's ranking (default 10)")
    add_sweep_output_arguments(p, "write a heat map over (B_r, B_c) to FILE (.png or .svg)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_plot_argument(args)
    problem = problem_from_args(args)
    results = [explore(args.hw, algo, problem, block_q=args.block_q, block_kv=args.block_kv,
                       objective=args.objective, allow_spill=args.allow_spill, dropout=args.dropout, jobs=args.jobs,
                       passes=args.passes, block_mask=args.block_mask)
               for algo in args.algo]
    if args.format == "json":
        print(json.dumps(explore_json(results), indent=2))
    elif args.format == "csv":
        print(explore_csv(results), end="")
    else:
        print(render_explore(results, top=args.top))
    write_plot(args, plot_explore, results)
    return 0

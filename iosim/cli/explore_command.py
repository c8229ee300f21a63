"""``iosim explore``: run a (B_r, B_c) grid at each point (N, d, heads) and rank it by the
model ``iosim simulate`` uses."""

from __future__ import annotations

import argparse
import itertools
import json
import sys

from ..errors import ProblemError
from ..kernels.plan import KERNELS
from ..report.explore_report import explore_csv, explore_json, render_explore
from ..report.plots import plot_explore
from ..schedules import SCHEDULES
from ..studies.explore.triton_configs import explore_triton
from ..report.triton_report import render_triton
from ..studies.explore import (DEFAULT_REPLAYS, DEFAULT_TIE, GRIDS, OBJECTIVE_ALIASES, OBJECTIVES, PRACTICAL_RULE,
                               explore_points)
from ..workload.problem import Problem
from .arguments import (add_pass_argument, add_problem_arguments, add_sweep_output_arguments, algorithm_list,
                        check_plot_argument, non_negative_int, parse_values, positive_int, refuse_three_lengths,
                        sweep_executor, write_plot)
from .commands import HELP

#: points (N × d × heads) one command may ask for
MAX_POINTS = 64


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "explore",
        help=HELP["explore"],
        description="At each point (N, d, heads), run every (B_r, B_c) of a grid (default: multiples of 16 up to "
                    "what shared memory allows), mark the ones that do not fit, and rank the rest by the objective "
                    "with the model `iosim simulate` uses (the L2 model on for profiles with a cache): the best, "
                    "the near-ties within --tie of it, the practical choice among them, the paper's default and the "
                    "real FlashAttention kernel's tile.",
        epilog="Value lists (-N, -d, --heads, --block-q, --block-kv): 64,128 or LO:HI (doubling), LO:HI:STEP, "
               f"LO:HI:xF; 8k = 8192. Practical choice: {PRACTICAL_RULE}.",
    )
    add_problem_arguments(p, lists=True)
    p.add_argument("--algo", required=True, type=algorithm_list(list(SCHEDULES)),
                   help=f"algorithm(s), comma-separated: {', '.join(SCHEDULES)} (standard runs with tiled GEMMs), "
                        "or FILE.py:FUNCTION, a schedule of your own (docs/bounds-and-explore.md)")
    add_pass_argument(p)
    p.add_argument("--block-mask", metavar="SPEC", help="block-sparse mask for every candidate: local:W, random:S[:SEED], ...")
    p.add_argument("--block-q", type=parse_values, help="B_r values to try (default: the grid)")
    p.add_argument("--block-kv", type=parse_values, help="B_c values to try (default: the grid)")
    p.add_argument("--grid", choices=list(GRIDS), default="tensor-core",
                   help="tensor-core: multiples of 16 from 16 (default); all: powers of two and multiples of 16 "
                        "from 1 (the paper's abstract machine)")
    p.add_argument("--objective", choices=list(OBJECTIVES) + list(OBJECTIVE_ALIASES),
                   help="time: the time `iosim simulate` predicts; bytes (or hbm-bytes): HBM bytes requested; "
                        "dram: DRAM bytes from the L2 model (default: time with --kernel, bytes without)")
    p.add_argument("--kernel", choices=list(KERNELS),
                   help="time each tile with this real kernel's launches and kernel time model (fa2; the "
                        "kernel's own tile is what `iosim simulate --kernel` runs)")
    p.add_argument("--cache", action=argparse.BooleanOptionalAction, default=None,
                   help="model the L2 in every time (default: as `iosim simulate` does for the reference tile: on "
                        "for profiles with a cache up to 4,000,000 tile steps per head; causal: 4,000,000 in all)")
    p.add_argument("--tie", type=_fraction, default=DEFAULT_TIE,
                   help=f"near-tie tolerance, a fraction or a percentage (default {DEFAULT_TIE:.0%}%)")
    p.add_argument("--replays", type=non_negative_int, default=DEFAULT_REPLAYS,
                   help=f"L2-model replays the ranking may spend per point (default {DEFAULT_REPLAYS})")
    p.add_argument("--allow-spill", action="store_true",
                   help="let the best be a tile whose register use exceeds the register file (spills)")
    p.add_argument("--dropout", action="store_true",
                   help="look the real kernel's tile up for a dropout launch (counts do not model dropout)")
    p.add_argument("--format", choices=["table", "json", "csv"], default="table")
    p.add_argument("--top", type=positive_int, default=10, help="rows in the table's ranking (default 10)")
    add_sweep_output_arguments(p, "write a heat map over (B_r, B_c) to FILE (.png or .svg), a panel per point")
    p.set_defaults(run=run)


def _fraction(text: str) -> float:
    """argparse type: ``0.01`` or ``1%``, in [0, 1)."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.01 or 1%, got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a tolerance in [0, 1), got {text!r}")
    return value


def problems_from_args(args: argparse.Namespace) -> list[Problem]:
    """One problem per point: every N × d × heads."""
    if not (args.seq_len or (args.seq_len_q and args.seq_len_kv)):
        raise ProblemError("give --seq-len N, or both --seq-len-q and --seq-len-kv")
    if args.seq_len and len(args.seq_len) > 1 and (args.seq_len_q or args.seq_len_kv):
        raise ProblemError("a list of --seq-len takes no --seq-len-q / --seq-len-kv")
    refuse_three_lengths(args)
    points = list(itertools.product(args.seq_len or [None], args.head_dim, args.heads))
    if len(points) > MAX_POINTS:
        raise ProblemError(f"{len(points):,} points (N × d × heads); at most {MAX_POINTS} per command")
    return [Problem(seq_len_q=args.seq_len_q or n, seq_len_kv=args.seq_len_kv or n, head_dim=d, batch=args.batch,
                    heads=h, kv_heads=args.kv_heads, dtype=args.dtype, causal=args.causal, layout=args.layout)
            for n, d, h in points]


def run(args: argparse.Namespace) -> int:
    check_plot_argument(args)
    problems = problems_from_args(args)
    if args.kernel == "triton-fa2":
        return _run_triton(args, problems)
    results = explore_points(args.hw, args.algo, problems, block_q=args.block_q, block_kv=args.block_kv,
                             objective=args.objective, allow_spill=args.allow_spill, dropout=args.dropout,
                             jobs=args.jobs, passes=args.passes, block_mask=args.block_mask, grid=args.grid,
                             kernel=args.kernel, cache=args.cache, tie=args.tie, replays=args.replays,
                             executor=sweep_executor(args))
    if args.format == "json":
        print(json.dumps(explore_json(results), indent=2))
    elif args.format == "csv":
        print(explore_csv(results), end="")
        for note in dict.fromkeys(n for r in results for n in r.notes):
            print(f"iosim: note: {note}", file=sys.stderr)
    else:
        print(render_explore(results, top=args.top))
    write_plot(args, plot_explore, results)
    return 0


def _run_triton(args: argparse.Namespace, problems: list[Problem]) -> int:
    """``--kernel triton-fa2``: rank the Triton kernel's configurations (docs/triton.md)."""
    if args.block_q or args.block_kv or args.block_mask or args.passes != "forward" or args.plot:
        raise ProblemError("--kernel triton-fa2 ranks the kernel's (BLOCK_M, BLOCK_N, num_warps, num_stages) "
                           "configurations of the forward pass: drop --block-q/--block-kv/--block-mask/--plot/--pass")
    if args.algo != ["fa2"]:
        raise ProblemError("--kernel triton-fa2 runs FlashAttention-2's loop order: use --algo fa2")
    results = [explore_triton(args.hw, p, cache=args.cache, tie=args.tie, jobs=args.jobs, executor=sweep_executor(args),
                              progress=None) for p in problems]
    if args.format == "json":
        print(json.dumps([r.to_dict() for r in results], indent=2))
    else:
        print(render_triton(results, top=args.top, csv=args.format == "csv"), end="")
    return 0

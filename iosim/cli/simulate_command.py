"""``iosim simulate``: count one algorithm on one problem and report it."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from ..errors import ProblemError
from ..kernels.plan import KERNELS
from ..kernels.triton_preset import TritonConfig
from ..models.cache.watch import watching
from ..report.tables import FORMATTERS
from ..run import Options, prepare
from ..run.launches import run_launches
from ..schedules import SCHEDULES
from ..studies.progress import ProgressBar
from .arguments import (add_pass_argument, add_problem_arguments, parse_int, positive_int, problem_from_args,
                        schedule_or_file)
from .commands import HELP


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "simulate",
        help=HELP["simulate"],
        description="Run one loop order on one attention shape and count every byte it moves.",
    )
    add_problem_arguments(p)
    algo = p.add_argument("--algo", required=True, type=schedule_or_file(list(SCHEDULES)), metavar="ALGO",
                          help=f"loop order: {', '.join(SCHEDULES)}, or FILE.py:FUNCTION, a schedule of your own "
                               "(docs/simulator.md)")
    algo.completer = lambda **_: list(SCHEDULES)       # shell completion: the built-in names
    add_pass_argument(p)
    p.add_argument("--block-q", type=parse_int, help="B_r, query rows per tile (default: the paper's min(⌈M/4d⌉, d))")
    p.add_argument("--block-kv", type=parse_int, help="B_c, key rows per tile (default: the paper's ⌈M/4d⌉)")
    p.add_argument("--format", choices=list(FORMATTERS), default="table")
    p.add_argument("--tiles", choices=["exact", "padded"], default="exact",
                   help="a ragged last tile moves its real rows (exact, default) or a whole block (padded)")
    p.add_argument("--count-init", action="store_true", help="also count 'Initialize … in HBM' writes (FA1 line 2)")
    p.add_argument("--residency", choices=["kernel", "sram"], default="kernel",
                   help="where S, P and the O accumulator live: registers as in the real kernels (default) or SRAM")
    p.add_argument("--gemm", choices=["idealised", "tiled"],
                   help="standard only: matrix products counted as the paper does (idealised, default) or as tiled "
                        "kernels")
    p.add_argument("--block-mask", metavar="SPEC",
                   help="block-sparse attention (Algorithm 5): local:W, random:S[:SEED], dense, or a .npy / 0-1 text file")
    p.add_argument("--kernel", choices=list(KERNELS),
                   help="run the launches the real kernels make, with their tiles (docs/spec/kernels.md; --algo fa2)")
    p.add_argument("--kernel-config", metavar="BM,BN,W,S",
                   help="--kernel triton-fa2: BLOCK_M,BLOCK_N,num_warps,num_stages (default 128,64,4,3; docs/triton.md)")
    p.add_argument("--cache", action=argparse.BooleanOptionalAction, default=None,
                   help="play every access through the profile's L2 and report L2 and DRAM bytes (default: on "
                        "for profiles with a cache, exact up to 4,000,000 requests and past that from a sample of the "
                        "chunks, said in the output; causal or masked, up to 4,000,000 tile steps per head: "
                        "docs/cache.md)")
    p.add_argument("--l2-edge", action="store_true",
                   help="with --kernel: also play the L2 at 0.9 and 1.1 times its room and report each launch's DRAM "
                        "reads there, saying where its figure sits at the room's edge (a run takes 2-2.5 x as long; "
                        "docs/known-limits.md)")
    p.add_argument("--num-splits", type=positive_int,
                   help="fa2-splitkv: number of key/value splits (default: flash-attn's heuristic for the profile)")
    p.add_argument("--dq-read-twice", action="store_true",
                   help="fa2 backward: read dQ_i in both line 9 and line 15 (the literal reading)")
    p.set_defaults(run=run)


def _kernel_config(args: argparse.Namespace) -> tuple | None:
    if args.kernel_config is None:
        return None
    if args.kernel != "triton-fa2":
        raise ProblemError("--kernel-config is for --kernel triton-fa2")
    return TritonConfig.parse(args.kernel_config).key()


def _gemm(args: argparse.Namespace) -> str | None:
    """``--gemm`` as given (an algorithm that takes none refuses it, as it does --num-splits);
    not given: standard attention's default, recorded in its options, and None for the rest."""
    if args.gemm is not None:
        return args.gemm
    return "idealised" if args.algo == "standard" and args.kernel is None else None


def run(args: argparse.Namespace) -> int:
    problem = problem_from_args(args)
    if args.kernel and (args.block_q or args.block_kv or args.block_mask):
        raise ProblemError("--kernel picks the kernels' own tiles; drop --block-q/--block-kv/--block-mask")
    options = Options(
        tiles=args.tiles, count_init=args.count_init, residency=args.residency, block_mask=args.block_mask,
        gemm=_gemm(args), dq_read_twice=args.dq_read_twice or None,
        num_splits=args.num_splits, kernel=args.kernel, cache=bool(args.cache),
        kernel_config=_kernel_config(args), l2_edge=args.l2_edge,
    )
    blocks = (args.block_q, args.block_kv)
    setup = prepare(args.hw, args.algo, problem, passes=args.passes, blocks=blocks, options=options)
    if args.cache is None and setup.cache_by_default():
        setup = prepare(setup.profile, args.algo, problem, passes=args.passes, blocks=blocks,
                        options=dataclasses.replace(options, cache="auto"))
    with ProgressBar(1, "iosim") as bar, watching(bar.show):     # drawn on a terminal, past a second
        result = run_launches(setup, "count", None)
    why = result.l2_off
    if why:
        result = dataclasses.replace(result, l2_off=why)
        print(f"iosim: note: {why}; DRAM bytes are not modelled and the time counts every HBM request as DRAM "
              "traffic. --cache models it (docs/cache.md)", file=sys.stderr)
    if args.format == "csv":      # the table and the JSON carry the notes themselves
        for note in result.notes:
            print(f"iosim: note: {note}", file=sys.stderr)
    out = FORMATTERS[args.format](result)
    print(out, end="" if out.endswith("\n") else "\n")       # CSV ends its last row itself
    return 0

"""``iosim simulate``: count one algorithm on one problem and report it."""

from __future__ import annotations

import argparse

from ..kernels.plan import KERNELS
from ..workload.problem import sram_elements
from ..report.tables import FORMATTERS
from ..schedules import SCHEDULES
from ..run.simulate import choose_blocks, resolve_profile, simulate
from .arguments import add_pass_argument, add_problem_arguments, positive_int, problem_from_args


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="count the HBM traffic, SRAM use, FLOPs and time of one algorithm",
        description="Run one loop order on one attention shape and count every byte it moves.",
    )
    add_problem_arguments(p)
    p.add_argument("--algo", required=True, choices=list(SCHEDULES), help="loop order")
    add_pass_argument(p)
    p.add_argument("--block-q", type=positive_int, help="B_r, query rows per tile (default: the paper's min(⌈M/4d⌉, d))")
    p.add_argument("--block-kv", type=positive_int, help="B_c, key rows per tile (default: the paper's ⌈M/4d⌉)")
    p.add_argument("--format", choices=list(FORMATTERS), default="table")
    p.add_argument("--tiles", choices=["exact", "padded"], default="exact",
                   help="a ragged last tile moves its real rows (exact, default) or a whole block (padded)")
    p.add_argument("--count-init", action="store_true", help="also count 'Initialize … in HBM' writes (FA1 line 2)")
    p.add_argument("--residency", choices=["kernel", "sram"], default="kernel",
                   help="where S, P and the O accumulator live: registers as in the real kernels (default) or SRAM")
    p.add_argument("--gemm", choices=["idealised", "tiled"], default="idealised",
                   help="standard only: matrix products counted as the paper does (idealised) or as tiled kernels")
    p.add_argument("--block-mask", metavar="SPEC",
                   help="block-sparse attention (Algorithm 5): local:W, random:S[:SEED], dense, or a .npy / 0-1 text file")
    p.add_argument("--kernel", choices=list(KERNELS),
                   help="run the launches the real kernels make, with their tiles (spec §5; --algo fa2)")
    p.add_argument("--cache", action=argparse.BooleanOptionalAction, default=None,
                   help="play every access through the profile's L2 and report L2 and DRAM bytes (default: on "
                        "for profiles with a cache when the run has at most 100,000 tile steps per head)")
    p.add_argument("--num-splits", type=positive_int,
                   help="fa2-splitkv: number of key/value splits (default: flash-attn's heuristic for the profile)")
    p.add_argument("--dq-read-twice", action="store_true",
                   help="fa2 backward: read dQ_i in both line 9 and line 15 (the literal reading)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    options = {}
    if args.algo == "standard":
        options["gemm"] = args.gemm
    if args.dq_read_twice:
        options["dq_read_twice"] = True
    if args.num_splits is not None:
        options["num_splits"] = args.num_splits
    problem = problem_from_args(args)
    profile = resolve_profile(args.hw)
    cache = args.cache
    if cache is None:
        cache = _cache_by_default(profile, problem, args.block_q, args.block_kv)
    result = simulate(
        profile, args.algo, problem, block_q=args.block_q, block_kv=args.block_kv, cache=cache,
        tiles=args.tiles, count_init=args.count_init, residency=args.residency, schedule_options=options,
        passes=args.passes, block_mask=args.block_mask, kernel=args.kernel,
    )
    print(FORMATTERS[args.format](result))
    return 0


#: the cache model replays every tile step; past this many per head it is opt-in
AUTO_CACHE_STEPS = 100_000


def _cache_by_default(profile, problem, block_q, block_kv) -> bool:
    """On for profiles that describe a cache, unless the run is too long to replay quickly."""
    if profile.cache is None:
        return False
    M = sram_elements(profile.scratchpad.per_block_bytes, problem.dtype)
    blocks, _ = choose_blocks(problem, M, block_q, block_kv)
    return blocks.num_q_blocks(problem) * blocks.num_kv_blocks(problem) <= AUTO_CACHE_STEPS

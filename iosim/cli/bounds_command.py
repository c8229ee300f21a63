"""``iosim bounds``: check the paper's IO claims against counted traffic; exit 0/1/2.

Value lists (``--seq-len``, ``--head-dim``, ``--sram``, and ``explore``'s ``--block-q``,
``--block-kv``) are comma lists whose items are numbers or ranges:

* ``8192`` or ``8k`` (k = 1,024);
* ``LO:HI``: LO, 2·LO, 4·LO, … up to HI;
* ``LO:HI:STEP``: LO, LO+STEP, … up to HI;
* ``LO:HI:xF``: LO, LO·F, LO·F², … up to HI (rounded to integers).
"""

from __future__ import annotations

import argparse
import json

from ..report.bounds_report import bounds_csv, render_bounds
from ..studies.bounds import ALGORITHMS, BLOCK_RULES, CLAIMS, check_bounds
from ..dtypes import WIDTH_BYTES
from ..errors import ProblemError
from ..report.plots import plot_bounds
from .arguments import (add_hw_argument, add_sweep_output_arguments, algorithm_list, check_plot_argument,
                        comma_names, flatten, parse_values, positive_int, sweep_executor, write_plot)
from .commands import HELP


def register(subparsers) -> None:
    claims = "; ".join(f"{c.id}: {c.expression}" for c in CLAIMS.values())
    p = subparsers.add_parser(
        "bounds",
        help=HELP["bounds"],
        description="Sweep N, d and M over Theorem 2's regime d ≤ M ≤ N·d (M in elements), count every point "
                    "by running the schedule, and judge each claim: ratio count/expression, fitted exponents, "
                    f"verdict. Claims: {claims}. Exit code 0 when every claim holds, 1 when one fails, "
                    "2 on bad input.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    add_hw_argument(p)
    p.add_argument("--algo", required=True, action="append", type=algorithm_list(list(ALGORITHMS)),
                   help=f"algorithm(s), comma-separated or repeated: {', '.join(ALGORITHMS)} "
                        "(row-by-row: FA2's loop order with B_r = 1, which must fail theorem2-flash), or "
                        "FILE.py:FUNCTION, a schedule of your own, judged as the FlashAttention family "
                        "(docs/bounds-and-explore.md)")
    p.add_argument("--claim", action="append", type=comma_names(list(CLAIMS)),
                   help="claim id(s) to check for every algorithm (default: the algorithm's Theorem 2 claim, "
                        "proposition3-lower and compulsory; Theorem 5's for a backward algorithm, Proposition 4's "
                        "for fa1-block-sparse). A claim is judged on the pass it is about: theorem5-* on the "
                        "backward pass (fa1 → fa1-backward), the others but compulsory on the forward pass "
                        "(fa1-backward → fa1); an algorithm without that pass is refused (exit 2)")
    p.add_argument("--seq-len", "-N", type=parse_values, default=parse_values("512:16k"),
                   help="sequence lengths N (default 512:16k, i.e. 512, 1024, …, 16384)")
    p.add_argument("--head-dim", "-d", type=parse_values, default=[64, 128], help="head dims d (default 64,128)")
    p.add_argument("--sram", type=parse_values,
                   help="SRAM sizes M in elements (default: d, 2d, 4d, … N·d at each (N, d), plus the profile's M); "
                        "values outside d ≤ M ≤ N·d are reported and skipped")
    p.add_argument("--sram-steps", type=positive_int,
                   help="instead of doubling, this many M values evenly spaced in log M over [d, N·d]")
    p.add_argument("--block-rule", choices=list(BLOCK_RULES), default="paper",
                   help="; ".join(f"{k}: {v}" for k, v in BLOCK_RULES.items()))
    p.add_argument("--dtype", choices=list(WIDTH_BYTES), default="fp16",
                   help="element type (sets the bytes of M; counts are in elements)")
    p.add_argument("--format", choices=["table", "json", "csv"], default="table",
                   help="table (default), json, or csv: one row per simulated point")
    add_sweep_output_arguments(p, "write count against M and N, log-log, to FILE (.png or .svg)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_plot_argument(args)
    if args.sram is not None and args.sram_steps is not None:
        raise ProblemError("give --sram or --sram-steps, not both")
    report = check_bounds(
        args.hw, flatten(args.algo), flatten(args.claim) or None, seq_lens=args.seq_len, head_dims=args.head_dim,
        sram=args.sram, sram_steps=args.sram_steps, block_rule=args.block_rule, dtype=args.dtype, jobs=args.jobs,
        executor=sweep_executor(args),
    )
    if args.format == "json":
        print(json.dumps(report.to_dict(), indent=2))
    elif args.format == "csv":
        print(bounds_csv(report), end="")
    else:
        print(render_bounds(report))
    write_plot(args, plot_bounds, report)
    return 0 if report.holds else 1

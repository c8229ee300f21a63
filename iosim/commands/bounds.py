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

from ..bounds import ALGORITHMS, BLOCK_RULES, CLAIMS, check_bounds, render_bounds
from ..dtypes import WIDTH_BYTES
from .common import positive_int


def parse_int(text: str) -> int:
    t = text.strip().replace("_", "")
    scale = 1
    if t[-1:] in ("k", "K"):
        t, scale = t[:-1], 1024
    try:
        value = int(t) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer such as 8192 or 8k, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def parse_values(text: str) -> list[int]:
    """argparse type for a value list (see the module docstring); sorted, without repeats."""
    out: set[int] = set()
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        parts = item.split(":")
        if len(parts) == 1:
            out.add(parse_int(parts[0]))
            continue
        if len(parts) not in (2, 3):
            raise argparse.ArgumentTypeError(f"a range is LO:HI, LO:HI:STEP or LO:HI:xF, got {item!r}")
        lo, hi = parse_int(parts[0]), parse_int(parts[1])
        if hi < lo:
            raise argparse.ArgumentTypeError(f"range {item!r}: HI is smaller than LO")
        step = parts[2].strip() if len(parts) == 3 else "x2"
        if step[:1] in ("x", "*"):
            try:
                factor = float(step[1:])
            except ValueError:
                raise argparse.ArgumentTypeError(f"range {item!r}: factor must be a number > 1") from None
            if factor <= 1:
                raise argparse.ArgumentTypeError(f"range {item!r}: factor must be > 1")
            x = float(lo)
            while round(x) <= hi:
                out.add(int(round(x)))
                x *= factor
        else:
            inc = parse_int(step)
            out.update(range(lo, hi + 1, inc))
    if not out:
        raise argparse.ArgumentTypeError(f"no values in {text!r}")
    if len(out) > 100_000:
        raise argparse.ArgumentTypeError(f"{text!r} expands to {len(out):,} values; at most 100,000")
    return sorted(out)


def comma_names(choices):
    """argparse type: a comma list of names, each one of ``choices``."""
    def parse(text: str) -> list[str]:
        names = [t.strip() for t in text.split(",") if t.strip()]
        for n in names:
            if n not in choices:
                raise argparse.ArgumentTypeError(f"unknown name {n!r}; choose from {', '.join(choices)}")
        if not names:
            raise argparse.ArgumentTypeError("give at least one name")
        return names
    return parse


def flatten(lists) -> list:
    return list(dict.fromkeys(x for xs in (lists or []) for x in xs))


def register(subparsers) -> None:
    claims = "; ".join(f"{c.id}: {c.expression}" for c in CLAIMS.values())
    p = subparsers.add_parser(
        "bounds",
        help="check Theorem 2, Proposition 3 and compulsory traffic against counted HBM accesses",
        description="Sweep N, d and M over Theorem 2's regime d ≤ M ≤ N·d (M in elements), count every point "
                    "by running the schedule, and judge each claim: ratio count/expression, fitted exponents, "
                    f"verdict. Claims: {claims}. Exit code 0 when every claim holds, 1 when one fails, "
                    "2 on bad input.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    p.add_argument("--hw", required=True, help="built-in profile name (see `iosim profiles`) or path to a YAML profile")
    p.add_argument("--algo", required=True, action="append", type=comma_names(list(ALGORITHMS)),
                   help=f"algorithm(s), comma-separated or repeated: {', '.join(ALGORITHMS)} "
                        "(row-by-row: FA2's loop order with B_r = 1, which must fail theorem2-flash)")
    p.add_argument("--claim", action="append", type=comma_names(list(CLAIMS)),
                   help="claim id(s) to check for every algorithm (default: the algorithm's Theorem 2 claim, "
                        "proposition3-lower and compulsory)")
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
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument("--plot", metavar="FILE", help="write count against M and N, log-log, to FILE (.png or .svg)")
    p.add_argument("--jobs", type=positive_int, help="worker processes (default: one per core)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.plot:
        from ..plotting import check_plot_path

        check_plot_path(args.plot)
    if args.sram is not None and args.sram_steps is not None:
        from ..errors import ProblemError

        raise ProblemError("give --sram or --sram-steps, not both")
    report = check_bounds(
        args.hw, flatten(args.algo), flatten(args.claim) or None, seq_lens=args.seq_len, head_dims=args.head_dim,
        sram=args.sram, sram_steps=args.sram_steps, block_rule=args.block_rule, dtype=args.dtype, jobs=args.jobs,
    )
    if args.format == "json":
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(render_bounds(report))
    if args.plot:
        from ..plotting import plot_bounds

        plot_bounds(report, args.plot)
        if args.format == "table":
            print(f"\nplot written to {args.plot}")
    return 0 if report.holds else 1

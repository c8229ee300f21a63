"""``iosim pebble``: red-blue pebbling of the attention DAG — optimum, loop orders, iosim counts."""

from __future__ import annotations

import argparse

from ..errors import IosimError
from ..studies.pebbling.comparison import ALL, compare, render, render_moves, to_json
from ..studies.pebbling.search import MAX_NODES, MAX_STATES, check_max_states
from ..report.csv_rows import records_csv
from .arguments import bounded_int, positive_int
from .commands import HELP


#: the exact search's default time budget on the command line (the API's is none)
SEARCH_SECONDS = 10


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "pebble",
        help=HELP["pebble"],
        description="Play the red-blue pebble game (Hong & Kung 1981) on the element-level computation DAG of "
                    "one attention head with S red pebbles (fast-memory slots): the exact minimum IO by search, "
                    "and standard attention, FA1 and FA2 played as legal pebblings with the largest block that "
                    "fits, beside iosim's tile-level HBM counts for the same blocks and Proposition 3's N²d²/S. "
                    f"The exact search is for tiny DAGs only (at most {MAX_NODES} nodes: N=1 with d ≤ 6, "
                    "N=2 with d ≤ 2); see docs/pebbling.md. Exit 0, or 2 on bad input.",
    )
    p.add_argument("--seq-len", "-N", type=positive_int, required=True, help="sequence length N")
    p.add_argument("--head-dim", "-d", type=positive_int, required=True, help="head dimension d")
    p.add_argument("--red", "-S", type=positive_int, required=True,
                   help="S, the number of red pebbles (fast-memory capacity in elements)")
    p.add_argument("--schedule", choices=list(ALL), action="append",
                   help="standard, fa1, fa2 or optimal; repeat for several (default: all four)")
    p.add_argument("--block", type=positive_int,
                   help="block of the schedule (B_r for standard and fa2, B_c for fa1) instead of the largest "
                        "that fits; needs a single --schedule")
    p.add_argument("--max-states", type=positive_int, default=MAX_STATES,
                   help=f"budget of the exact search, in distinct states seen, about 0.6 GB per million "
                        f"(default {MAX_STATES:,})")
    p.add_argument("--max-seconds", type=bounded_int(86_400), default=SEARCH_SECONDS,
                   help=f"time budget of the exact search, seconds (default {SEARCH_SECONDS}; a search past it "
                        "gives up with a message, as past --max-states)")
    p.add_argument("--moves", action="store_true", help="also print the pebbling's moves (a single --schedule)")
    p.add_argument("--format", choices=["table", "json", "csv"], default="table",
                   help="table (default), json, or csv: a row per schedule")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_max_states(args.max_states)
    schedules = tuple(dict.fromkeys(args.schedule or ALL))
    single = len(schedules) == 1
    if args.block is not None and (not single or schedules[0] == "optimal"):
        raise IosimError("--block applies to one schedule: give exactly one --schedule standard|fa1|fa2")
    if args.moves and not single:
        raise IosimError("--moves prints one pebbling: give exactly one --schedule")
    report = compare(args.seq_len, args.head_dim, args.red, schedules, block=args.block,
                     max_states=args.max_states, strict=single, max_seconds=args.max_seconds)
    if args.format == "json":
        print(to_json(report))
        return 0
    if args.format == "csv":
        data = report.to_dict()
        print(records_csv(data["rows"], {k: data[k] for k in ("seq_len", "head_dim", "red")}), end="")
        return 0
    print(render(report))
    if args.moves:
        print()
        print(render_moves(report.rows[0].pebbling))
    return 0

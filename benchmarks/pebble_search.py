"""Run time of the exact minimum-IO search of `iosim pebble`, and the results it finds.

Run:  python benchmarks/pebble_search.py [--quick | --no-main-table]     (prints Markdown tables)

For each instance (N, d, S): the DAG's size, the optimum and the compulsory 4Nd, the
loop orders played as pebblings with the largest block that fits S (— where even block 1
does not fit), Proposition 3's N²d²/S, and what the search cost (states expanded, states
seen, seconds; one run each, the search is deterministic). A last table times playing the
loop orders alone on the largest DAGs the CLI accepts.
"""

from __future__ import annotations

import os
import platform
import sys
import time

from iosim.studies.pebbling.comparison import compare
from iosim.studies.pebbling.dag import attention_dag
from iosim.studies.pebbling.strategies import SCHEDULES, DoesNotFit, fit
from iosim.studies.pebbling.search import SearchLimit, minimum_io

#: (N, d, S): the DAGs the table in docs/pebbling.md shows
INSTANCES = [
    (1, 1, 3), (1, 2, 4), (1, 3, 4), (1, 4, 4),
    (2, 1, 4), (2, 1, 5), (2, 1, 6), (2, 1, 7), (2, 1, 8), (2, 1, 9),
    (2, 2, 8), (2, 2, 12), (2, 2, 16),
]
QUICK = [(1, 1, 3), (1, 2, 4), (2, 1, 7), (2, 1, 8), (2, 2, 12)]
#: beyond the default limits: how far the search goes when allowed
STRETCH = [(3, 1, 16, 60, 3_000_000), (2, 2, 7, 60, 3_000_000)]
PLAYED = [(16, 16, 128), (32, 32, 256), (64, 8, 64), (64, 4, 64)]


def machine() -> str:
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f", {int(f.readline().split()[1]) // (1024 * 1024)} GiB"
    except OSError:
        pass
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{platform.system()} {platform.release()} ({cpu}, {os.cpu_count()} cores{mem}), Python {sys.version.split()[0]}"


def cell(row) -> str:
    return "—" if row.io is None else f"{row.io} ({'B_c' if row.schedule == 'fa1' else 'B_r'}={row.block})"


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    print(f"Machine: {machine()}\n")
    if "--no-main-table" not in argv:
        main_table(quick)
    if not quick:
        beyond()


def main_table(quick: bool) -> None:
    print("| N | d | S | nodes | optimum | 4Nd | N²d²/S | standard | FA1 | FA2 | expanded | seen | time |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for N, d, S in QUICK if quick else INSTANCES:
        r = compare(N, d, S)
        opt = r.row("optimal")
        s = opt.search
        print(f"| {N} | {d} | {S} | {r.nodes} | **{opt.io}** | {r.compulsory} | {r.prop3_scale:.2f} | "
              f"{cell(r.row('standard'))} | {cell(r.row('fa1'))} | {cell(r.row('fa2'))} | "
              f"{s['expanded']:,} | {s['generated']:,} | {s['seconds']:.2f} s |", flush=True)


def beyond() -> None:
    print("\nPlaying the loop orders only (`--schedule standard|fa1|fa2`), largest block that fits:\n")
    print("| N | d | S | nodes | schedule | block | IO | IO / (N²d²/S) | time (fit + play) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for N, d, S in PLAYED:
        dag = attention_dag(N, d)
        scale = N * N * d * d / S
        for name in SCHEDULES:
            start = time.perf_counter()
            try:
                block, pebbling = fit(dag, name, S)
            except DoesNotFit as exc:
                print(f"| {N} | {d} | {S} | {len(dag):,} | {name} | — | {exc} | | |")
                continue
            print(f"| {N} | {d} | {S} | {len(dag):,} | {name} | {block} | {pebbling.io:,} | "
                  f"{pebbling.io / scale:.2f} | {time.perf_counter() - start:.2f} s |", flush=True)
    print("\nThe exact search beyond the default limits (`max_nodes`, `max_states` raised):\n")
    print("| N | d | S | nodes | result | states seen | time |")
    print("|---|---|---|---|---|---|---|")
    for N, d, S, nodes, states in STRETCH:
        dag = attention_dag(N, d)
        start = time.perf_counter()
        try:
            best = minimum_io(dag, S, max_nodes=nodes, max_states=states)
            result, seen = f"optimum {best.io}", f"{best.generated:,}"
        except SearchLimit:
            result, seen = "gave up", f"> {states:,}"
        print(f"| {N} | {d} | {S} | {len(dag)} | {result} | {seen} | {time.perf_counter() - start:.1f} s |",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

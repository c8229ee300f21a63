"""Where a kernel's warps wait, from ncu's per-instruction warp-stall sampling (session 24;
docs/validation/2026-12-04-even-mn.md, "Session 24").

    ncu --clock-control none --section SourceCounters --import-source no -k regex:flash_fwd_kernel -c 2 -o REP \\
        python3 benchmarks/sdpa_ncu.py --target --head-dim 64 --grid even                # on the H200
    ncu -i REP.ncu-rep --page source --csv --print-source sass --launch-skip I --launch-count 1 > src_I.csv
    python benchmarks/stall_sampling.py --cut src_I.csv OUT.csv      # keep what the table needs
    python benchmarks/stall_sampling.py OUT.csv [OUT.csv ...]        # the table

Per kernel: its instructions (distinct addresses; 16 bytes each), the instructions its warps
executed, the stall samples, and the share of the largest reasons. ``stall_no_inst`` is a warp
waiting for its next instruction to be fetched.
"""

from __future__ import annotations

import argparse
import csv
import re

KEEP = ("Address", "Source", "Instructions Executed", "Warp Stall Sampling (All Samples)")
REASONS = ("stall_no_inst", "stall_wait", "stall_selected", "stall_long_sb", "stall_short_sb", "stall_math",
           "stall_barrier", "stall_not_selected")


def read_source_page(text: str) -> tuple[str, list, list]:
    """ncu's source page (``--page source --csv --print-source sass``): (the kernel's name, the
    column names, the rows of as many cells: every instruction, as often as the page lists it)."""
    table = list(csv.reader(text.splitlines()))
    head = next(i for i, row in enumerate(table) if "Source" in row)
    kernel = next((row[1] for row in table[:head] if len(row) > 1 and row[0] == "Kernel Name"), "")
    return kernel, table[head], [row for row in table[head + 1:] if len(row) == len(table[head])]


def cut(page: str, out: str) -> None:
    """ncu's source page cut to the kernel's name, one row per instruction, and the columns
    :data:`KEEP` and :data:`REASONS`."""
    kernel, head, table = read_source_page(open(page).read())
    ix = {h: i for i, h in enumerate(head)}
    seen, rows = set(), []
    for row in table:
        if row[0] in seen or not row[ix["Instructions Executed"]].isdigit():
            continue
        seen.add(row[0])
        rows.append([row[ix[c]].strip() for c in KEEP + REASONS])
    with open(out, "w", newline="") as f:
        csv.writer(f).writerows([["kernel", kernel], list(KEEP + REASONS)] + rows)


def summary(path: str) -> dict:
    table = list(csv.reader(open(path)))
    ix = {h: i for i, h in enumerate(table[1])}
    rows = table[2:]
    total = lambda col: sum(float(r[ix[col]] or 0) for r in rows)      # noqa: E731
    flags = re.search(r">>, (.*)>\(", table[0][1])
    return {"kernel": table[0][1], "flags": flags.group(1) if flags else "", "instructions": len(rows),
            "executed": total("Instructions Executed"), "samples": total("Warp Stall Sampling (All Samples)"),
            **{reason: total(reason) for reason in REASONS}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cut", nargs=2, metavar=("PAGE", "OUT"))
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    if args.cut:
        cut(*args.cut)
        return
    print("| file | template flags | instructions | executed (M) | samples | "
          + " | ".join(r.removeprefix("stall_") for r in REASONS) + " |")
    print("|---|---|---:|---:|---:|" + "---:|" * len(REASONS))
    for path in args.files:
        s = summary(path)
        shares = " | ".join(f"{100 * s[r] / s['samples']:.0f} %" for r in REASONS)
        print(f"| {path.rsplit('/', 1)[-1]} | {re.sub(r'[(]bool[)]', '', s['flags'])} | {s['instructions']:,} | "
              f"{s['executed'] / 1e6:.0f} | {s['samples']:,.0f} | {shares} |")


if __name__ == "__main__":
    main()

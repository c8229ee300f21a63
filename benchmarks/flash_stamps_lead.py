"""Do flash-attn 2's blocks that lead on their K and V tiles run slower? A test of one cause of
drift, from the committed stamps (docs/validation/2026-12-05-same-launch.md, "Leaders").

A block that reads a K/V tile no block of its head read shortly before misses in the L2 and
waits on DRAM; its followers hit. If misses set a block's pace, leaders fall back and followers
catch up, and a head's blocks would bunch, which changes what the L2 keeps. Here each block's
steps are spread evenly over its stamped span (``flash_stamps_replay.step_times``); a read
*leads* when the previous read of that tile by its head came more than ``--gap`` MB of the
launch's K and V traffic earlier (or never). Per head and launch: the correlation of a block's
pace (its span over its steps, over the head's median) with the share of its reads that lead,
and the mean pace of the blocks above and below the median share. Blocks of 64 steps or more.

    python benchmarks/flash_stamps_lead.py [--gap 30] [--json OUT]

A head whose blocks all lead alike (or none) has no row.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flash_stamps as fs  # noqa: E402
import flash_stamps_replay as rp  # noqa: E402
from flash_stamps_sides import RAW  # noqa: E402

LEAST = 64


def lead_share(ids: list, steps: np.ndarray, times: list, tile_bytes: int, span: float, gap_mb: float) -> np.ndarray:
    """Each block's share of its K/V tile reads that lead: no read of that tile by its head in
    the ``gap_mb`` MB of K and V traffic before (at the launch's mean rate over ``span``)."""
    when = np.concatenate([np.asarray(t[:k], dtype=float) for t, k in zip(times, steps.tolist())])
    block = np.repeat(np.arange(len(steps)), steps)
    head = np.array([h for h, _ in ids])[block]
    tile = np.concatenate([np.arange(k)[::-1] for k in steps.tolist()])   # key blocks walked down
    order = np.lexsort((when, tile, head))
    same = (head[order][1:] == head[order][:-1]) & (tile[order][1:] == tile[order][:-1])
    apart = np.full(len(order), np.inf)
    apart[1:][same] = np.diff(when[order])[same] * (len(when) * tile_bytes / span) / 2 ** 20
    return np.bincount(block[order], weights=apart > gap_mb, minlength=len(steps)) / np.maximum(steps, 1)


def launch_rows(name: str, cfg: dict, launch: int, stamps: tuple, gap_mb: float) -> list[dict]:
    """One row a head of one stamped launch: blocks, mean lead share, correlation, paces."""
    tile = fs.tile(cfg)
    ids, steps = rp.blocks_of(cfg, tile)
    _, start, end, _ = stamps
    share = lead_share(ids, steps, rp.step_times(start, end, steps), 2 * tile[1] * cfg["head_dim"] * 2,
                       float(end.max()), gap_mb)
    pace, heads, rows = (end - start) / (steps + 0.8), np.array([h for h, _ in ids]), []
    for h in np.unique(heads):
        sel = (heads == h) & (steps >= LEAST)
        if sel.sum() < 16:
            continue
        p, s = pace[sel] / np.median(pace[sel]), share[sel]
        lead = s > np.median(s)
        if lead.all() or not lead.any():      # one share for all: no halves, no correlation
            continue
        rows.append({"config": name, "launch": launch, "head": int(h), "blocks": int(sel.sum()),
                     "lead_share": float(s.mean()), "corr": float(np.corrcoef(p, s)[0, 1]),
                     "pace_leading": float(p[lead].mean()), "pace_following": float(p[~lead].mean())})
    return rows


def rows(gap_mb: float) -> list[dict]:
    """:func:`launch_rows` of every launch of every committed causal stamped config."""
    with open(os.path.join(RAW, "configs.json")) as f:
        grid = [c for c in json.load(f)["grid"] if c["causal"]]
    out = []
    for cfg in grid:
        name = fs.name(cfg)
        _, steps = rp.blocks_of(cfg, fs.tile(cfg))
        for i, stamps in enumerate(rp.read_stamps(os.path.join(RAW, "stamps", f"{name}.bin.gz"), len(steps))):
            out += launch_rows(name, cfg, i, stamps, gap_mb)
    return out


def markdown(table: list[dict]) -> str:
    """Per config: heads × launches, the correlations' range, the paces' means."""
    lines = ["| config | heads × launches | lead share | correlation: least / median / most "
             "| pace, leading half / following half |", "|---|---:|---:|---|---|"]
    for name in dict.fromkeys(r["config"] for r in table):
        mine = [r for r in table if r["config"] == name]
        c = np.array([r["corr"] for r in mine])
        lines.append(f"| {name} | {len(mine)} | {np.mean([r['lead_share'] for r in mine]):.2f} | "
                     f"{c.min():+.2f} / {np.median(c):+.2f} / {c.max():+.2f} | "
                     f"{np.mean([r['pace_leading'] for r in mine]):.3f} / "
                     f"{np.mean([r['pace_following'] for r in mine]):.3f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gap", type=float, default=30.0, help="MB of K/V traffic since the tile's last read (30)")
    ap.add_argument("--json", help="write the rows here too")
    a = ap.parse_args()
    table = rows(a.gap)
    print(markdown(table))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()

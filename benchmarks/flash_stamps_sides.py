"""How much a long causal launch's DRAM reads hang on which L2 side each SM is on, from the
committed stamps alone (docs/validation/2026-12-05-same-launch.md, "Offline").

    python benchmarks/flash_stamps_sides.py [CONFIG ...] [--jobs 2] [--json OUT]

For each stamped config (docs/validation/2026-12-05-flash-stamps/raw: its first stamped launch)
the Q, K, V and O tile stream is replayed line by line on runs of addresses (``pages``,
flash_stamps_replay.dram_read) five ways, each SM's side taken from the index halves (the
model's rule) or from one of three side maps measured on H200s in earlier sessions (whose
chips are not the one that stamped):

* the stamped order on the stamped SMs;
* the model's lockstep order, slot s on SM s mod 132 (the model's play);
* the lockstep order, its first wave's slots on the SMs in the order the GPU dispatched them.

The spread across side maps, at one order, is how much the chip's map decides.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import flash_stamps as fs  # noqa: E402
import flash_stamps_replay as rp  # noqa: E402

VALIDATION = os.path.join(HERE, "..", "docs", "validation")
RAW = os.path.join(VALIDATION, "2026-12-05-flash-stamps", "raw")
#: the side maps measured on H200s before (label: folder under docs/validation)
MAPS = {"A": "2026-12-02-l2-sides", "B": "2026-12-03-l2-policy", "C": "2026-12-03-l2-scatter"}
DEFAULT = ["d128_n65536_b1h2_causal", "d64_n262144_b1h1_causal", "d256_n16384_b1h4_causal"]


def side_map(folder: str) -> np.ndarray:
    """Each SM's side (0: SM 0's) from a committed sides.json: a plain list (l2_shared_ncu), or
    the hop times to SM 0's lines (l2_sm_sides.py: far where above the midpoint)."""
    with open(os.path.join(VALIDATION, folder, "sides.json")) as f:
        got = json.load(f)
    if isinstance(got, list):
        return np.array(got, dtype=int)
    hops = np.array([r["hop_ns"] for r in got["sides"]["0"]])
    return (hops > (hops.min() + hops.max()) / 2).astype(int)


def config_rows(name: str) -> list[dict]:
    """The config's plays: (order, side map label, DRAM MB), and its measured DRAM reads."""
    with open(os.path.join(RAW, "configs.json")) as f:
        cfg = next((c for c in json.load(f)["grid"] if fs.name(c) == name), None)
    if cfg is None:
        raise SystemExit(f"{name}: no such stamped config in {RAW}/configs.json")
    tile = fs.tile(cfg)
    _, steps = rp.blocks_of(cfg, tile)
    _, start, end, sm = rp.read_stamps(os.path.join(RAW, "stamps", f"{name}.bin.gz"), len(steps))[0]
    slots = rp.per_sm(start, sm)
    dispatch = sm[np.argsort(start, kind="stable")[:slots * rp.SMS]]
    orders = {"stamped": rp.measured_timing(start, end, sm, steps),
              "lockstep": rp.lockstep_timing(cfg, tile, slots),
              "lockstep, GPU dispatch": rp.lockstep_timing(cfg, tile, slots, dispatch)}
    maps = {"halves": None, **{k: side_map(v) for k, v in MAPS.items()}}
    return [{"config": name, "order": o, "sides": m,
             "dram_mb": rp.dram_read(cfg, tile, timing, "pages", side_of=side) / 1e6}
            for o, timing in orders.items() for m, side in maps.items()]


def measured_mb(name: str) -> str:
    """The config's DRAM reads under ncu (MB): the stamped build, the plain build, PyTorch's."""
    with open(os.path.join(RAW, "..", "summary.json")) as f:
        row = next(r for r in json.load(f) if r["name"] == name)
    return " / ".join(f"{row[k]['dram__bytes_read.sum'] / 1e6:,.0f}" for k in ("stamps", "plain", "torch"))


def markdown(rows: list[dict]) -> str:
    maps = ["halves", *MAPS]
    lines = ["| config | measured: stamped / plain / torch | order | " + " | ".join(f"sides: {m}" for m in maps) + " |",
             "|---|---|---|" + "---:|" * len(maps)]
    seen = {}
    for r in rows:
        seen.setdefault((r["config"], r["order"]), {})[r["sides"]] = r["dram_mb"]
    for (name, order), got in seen.items():
        lines.append(f"| {name} | {measured_mb(name)} | {order} | " + " | ".join(f"{got[m]:,.1f}" for m in maps) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("configs", nargs="*", default=DEFAULT)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json")
    a = ap.parse_args()
    with ProcessPoolExecutor(a.jobs) as pool:
        rows = [r for got in pool.map(config_rows, a.configs) for r in got]
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(markdown(rows))


if __name__ == "__main__":
    main()

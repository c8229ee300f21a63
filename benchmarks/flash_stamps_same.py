"""The stamped forward's launches measured by ncu together with their own stamps, on a GPU whose SM
sides were measured in the same call (``flash_stamps.py --same-launch``), replayed each in its
own order, on its own SMs and sides (docs/validation/2026-12-05-same-launch.md).

    python benchmarks/flash_stamps_same.py DIR [--jobs 2] [--json OUT]

For every launch: its DRAM reads, and the replays of its Q, K, V and O tile stream
(flash_stamps_replay.dram_read) through iosim's two partitions of 16-way hashed sets (``sets``)
and line by line on runs of addresses (``pages``), with each SM on the side this GPU measured
(``chip``) or on its index half, the model's rule (``halves``); and the same in lockstep (every
block at one rate, the model's play), the first wave's slots on the SMs in the order this GPU
dispatched the launch's blocks and later blocks on the slot that frees first: what a model
would play from the chip's dispatch order alone.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flash_stamps as fs  # noqa: E402
import flash_stamps_replay as rp  # noqa: E402

#: configs whose sets replay takes minutes on one core (the longest: about 6): pages only
SETS_MAX_STEPS = 1_000_000


def _dram(path: str) -> dict:
    """The one launch's metrics of an ncu CSV (dram__bytes_read.sum, gpu__time_duration.sum)."""
    from iosim.gpu.ncu import read_launches
    with open(path) as f:
        launches = read_launches(f.read())
    if len(launches) != 1:
        raise SystemExit(f"{path}: {len(launches)} launches, not the one the run profiles")
    return launches[0]["metrics"]


def _plays(cfg: dict, timing, side_of: np.ndarray | None, steps: np.ndarray) -> dict:
    tile = fs.tile(cfg)
    out = {"pages": rp.dram_read(cfg, tile, timing, "pages", side_of=side_of)}
    if steps.sum() <= SETS_MAX_STEPS:
        out["sets"] = rp.dram_read(cfg, tile, timing, None, side_of=side_of)
    return out


def launch_row(job: tuple) -> dict:
    """One measured launch: its DRAM reads and time, its dispatch order, and its replays in its
    stamped order and in lockstep from its dispatch order, each on the chip's sides and on the
    index halves."""
    folder, cfg, i, side = job
    tile = fs.tile(cfg)
    _, steps = rp.blocks_of(cfg, tile)
    path = os.path.join(folder, "stamps", f"{fs.name(cfg)}_{i}.bin")
    runs = rp.read_stamps(path if os.path.exists(path) else path + ".gz", len(steps))   # committed: gzip
    if len(runs) != 1:
        raise SystemExit(f"{fs.name(cfg)}_{i}: {len(runs)} stamped launches, not one")
    _, start, end, sm = runs[0]
    got = _dram(os.path.join(folder, "ncu", f"{fs.name(cfg)}_{i}.csv"))
    first = rp.dispatch_order(start, sm)
    orders = {"stamped": rp.measured_timing(start, end, sm, steps),
              "lockstep": rp.lockstep_timing(cfg, tile, len(first) // rp.SMS, first)}
    return {"name": fs.name(cfg), "i": i, "dram_read": got.get("dram__bytes_read.sum"),
            "time_ns": got.get("gpu__time_duration.sum"), "dispatch": first.tolist(),
            **{f"{o} {label}": _plays(cfg, timing, m, steps)
               for o, timing in orders.items() for label, m in (("chip", side), ("halves", None))}}


PLAYS = ("stamped chip", "stamped halves", "lockstep chip", "lockstep halves")


def rows(folder: str, jobs: int = 2) -> dict:
    with open(os.path.join(folder, "configs.json")) as f:
        run = json.load(f)
    with open(os.path.join(folder, "sides.json")) as f:
        side = np.array(json.load(f))
    with open(os.path.join(folder, "sides_end.json")) as f:
        same_sides = json.load(f) == side.tolist()
    work = [(folder, cfg, i, side) for i in range(run["times"]) for cfg in run["grid"]]
    with ProcessPoolExecutor(jobs) as pool:
        launches = list(pool.map(launch_row, work))
    return {"sides": side.tolist(), "sides_unchanged": same_sides, "launches": launches}


def markdown(table: dict) -> str:
    lines = ["| config | launch | DRAM read (MB) | time (µs) | " +
             " | ".join(f"{p.replace(' ', ' order, ')} sides: sets / pages" for p in PLAYS) + " |",
             "|---|---:|---:|---:|" + "---|" * len(PLAYS)]
    for r in table["launches"]:
        got = r["dram_read"]

        def ratio(x, of=got):
            return f"{x / of:.2f}" if x is not None and of else "—"
        lines.append(f"| {r['name']} | {r['i']} | {got / 1e6:,.1f} | {r['time_ns'] / 1e3:,.0f} | " +
                     " | ".join(f"{ratio(r[p].get('sets'))} / {ratio(r[p]['pages'])}" for p in PLAYS) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json")
    a = ap.parse_args()
    table = rows(a.folder, a.jobs)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(table, f, indent=1)
    print(markdown(table))


if __name__ == "__main__":
    main()

"""The stamped forward's launches measured by ncu together with their own stamps, on a GPU whose SM
sides were measured in the same call (``flash_stamps.py --same-launch``), replayed each in its
own order, on its own SMs and sides (docs/validation/2026-12-05-same-launch.md).

    python benchmarks/flash_stamps_same.py DIR [--jobs 2] [--json OUT]

For every launch: its DRAM reads, and the replays of its Q, K, V and O tile stream
(flash_stamps_replay.dram_read) through iosim's two partitions of 16-way hashed sets (``sets``)
and line by line on runs of addresses (``pages``), with each SM on the side this GPU measured
(``chip``) or on its index half, the model's rule (``halves``). Per config, one more play: every
block at one rate (the model's lockstep), the first wave's slots on the SMs in the order this
GPU dispatched them and later blocks on the slot that frees first, each SM on its measured side:
what a model would play from the chip's dispatch order and side map alone.
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
    """One measured launch: its DRAM reads and time, its dispatch order and its replays."""
    folder, cfg, i, side = job
    _, steps = rp.blocks_of(cfg, fs.tile(cfg))
    runs = rp.read_stamps(os.path.join(folder, "stamps", f"{fs.name(cfg)}_{i}.bin"), len(steps))
    if len(runs) != 1:
        raise SystemExit(f"{fs.name(cfg)}_{i}: {len(runs)} stamped launches, not one")
    _, start, end, sm = runs[0]
    got = _dram(os.path.join(folder, "ncu", f"{fs.name(cfg)}_{i}.csv"))
    timing = rp.measured_timing(start, end, sm, steps)
    first = sm[np.argsort(start, kind="stable")[:rp.per_sm(start, sm) * rp.SMS]]
    return {"name": fs.name(cfg), "i": i, "dram_read": got.get("dram__bytes_read.sum"),
            "time_ns": got.get("gpu__time_duration.sum"), "dispatch": first.tolist(),
            "chip": _plays(cfg, timing, side, steps), "halves": {"pages": rp.dram_read(cfg, fs.tile(cfg), timing, "pages")}}


def lockstep_row(job: tuple) -> dict:
    """The config in lockstep, slots on the SMs in ``dispatch`` order, each SM on its ``side``."""
    cfg, dispatch, side = job
    _, steps = rp.blocks_of(cfg, fs.tile(cfg))
    timing = rp.lockstep_timing(cfg, fs.tile(cfg), len(dispatch) // rp.SMS, dispatch)
    return {"name": fs.name(cfg), "lockstep_chip": _plays(cfg, timing, side, steps)}


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
        first = {r["name"]: r["dispatch"] for r in launches if r["i"] == 0}
        locks = list(pool.map(lockstep_row, [(cfg, first[fs.name(cfg)], side) for cfg in run["grid"]]))
    return {"sides": side.tolist(), "sides_unchanged": same_sides, "launches": launches, "lockstep": locks}


def markdown(table: dict) -> str:
    lock = {r["name"]: r["lockstep_chip"] for r in table["lockstep"]}
    lines = ["| config | launch | DRAM read (MB) | time (µs) | stamped order, chip's sides: sets / pages "
             "| stamped order, index halves: pages | lockstep, chip's dispatch and sides: sets / pages |",
             "|---|---:|---:|---:|---|---:|---|"]
    for r in table["launches"]:
        got = r["dram_read"]

        def ratio(x, of=got):
            return f"{x / of:.2f}" if x is not None and of else "—"
        lk = lock[r["name"]]
        lines.append(f"| {r['name']} | {r['i']} | {got / 1e6:,.1f} | {r['time_ns'] / 1e3:,.0f} | "
                     f"{ratio(r['chip'].get('sets'))} / {ratio(r['chip']['pages'])} | {ratio(r['halves']['pages'])} | "
                     f"{ratio(lk.get('sets'))} / {ratio(lk['pages'])} |")
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

"""How much a long causal launch's DRAM reads hang on which L2 side each SM is on, from the
committed stamps alone (docs/validation/2026-12-05-same-launch.md, "Offline").

    python benchmarks/flash_stamps_sides.py [CONFIG ...] [--jobs 2] [--json OUT]
    python benchmarks/flash_stamps_sides.py --model [--jobs 2] [--json OUT]

For each stamped config (docs/validation/2026-12-05-flash-stamps/raw: its first stamped launch)
the Q, K, V and O tile stream is replayed line by line on runs of addresses (``pages``,
flash_stamps_replay.dram_read) in three orders, each with four side maps: the index halves
(the model's rule) and the three measured on H200s in earlier sessions (none on the chip that
stamped). The orders:

* the stamped order on the stamped SMs;
* the model's lockstep order, slot s on SM s mod 132 (the model's play);
* the lockstep order, its first wave's slots on the SMs in the order the GPU dispatched the
  stamped launch's blocks (flash_stamps_replay.dispatch_order).

The spread across side maps, at one order, is how much the chip's map decides.

``--model``: iosim's own L2 model (its hashed sets, not this sketch's lines) on every long causal
main forward of the committed status rows (16,384 ≤ N ≤ --max-n, N_q = N), as it is (slot s
on SM s mod 132) and with slot s on the SM the GPU dispatched the s-th block to (the stamped d = 128,
N = 65,536 launch's first wave), each SM on its index half: would the dispatch order help the
model?
"""

from __future__ import annotations

import argparse
import glob
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
    from l2_partition_experiment import hop_sides
    return np.array(got, dtype=int) if isinstance(got, list) else hop_sides(got)


def stamped(name: str) -> tuple:
    """(config, tile, steps, start, end, sm) of the committed stamped config's first launch."""
    with open(os.path.join(RAW, "configs.json")) as f:
        cfg = next((c for c in json.load(f)["grid"] if fs.name(c) == name), None)
    if cfg is None:
        raise SystemExit(f"{name}: no such stamped config in {RAW}/configs.json")
    tile = fs.tile(cfg)
    _, steps = rp.blocks_of(cfg, tile)
    _, start, end, sm = rp.read_stamps(os.path.join(RAW, "stamps", f"{name}.bin.gz"), len(steps))[0]
    return cfg, tile, steps, start, end, sm


def config_rows(name: str) -> list[dict]:
    """The config's plays: (order, side map label, DRAM MB), and its measured DRAM reads."""
    cfg, tile, steps, start, end, sm = stamped(name)
    slots = rp.per_sm(start, sm)
    dispatch = rp.dispatch_order(start, sm)
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


_MODEL_SIDES = None


def model_row(job: tuple) -> dict:
    """One status row's main forward DRAM reads, iosim's L2 model with its slot rule or with
    slot s on ``dispatch[s mod len]`` (partitions.sides replaced in this worker only)."""
    row, dispatch = job
    from iosim import load_profile
    from iosim.gpu import sdpa
    from iosim.models.cache import partitions
    from iosim.run import Options, simulate
    global _MODEL_SIDES
    _MODEL_SIDES = _MODEL_SIDES or partitions.sides       # the model's rule, before any patch here
    partitions.sides = _MODEL_SIDES
    if dispatch is not None:
        order = np.asarray(dispatch, np.int64)
        partitions.sides = lambda slots, sm_count: (order[np.asarray(slots, np.int64) % len(order)]
                                                    >= sm_count // 2).astype(np.int64)
    cfg = {k: row[k] for k in ("seq_len", "head_dim", "batch", "heads", "causal", "kv_heads", "dtype") if k in row}
    res = simulate(load_profile("h200"), "fa2", sdpa.problem_of(cfg), passes="forward",
                   options=Options(kernel="flash-attn-2", cache=True))
    return {"config": cfg, "measured": row["measured"]["dram_read"], "dispatch": dispatch is not None,
            "predicted": sdpa.predicted(res, "main")["dram_read"]}


def model_rows(jobs: int, max_n: int) -> list[dict]:
    """:func:`model_row` both ways for each long causal main forward of N ≤ ``max_n`` (the model's
    play of N = 262,144 takes over 10 minutes and 14 GB)."""
    rows, seen = [], set()
    for path in sorted(glob.glob(os.path.join(VALIDATION, "2026-12-04-status", "rows", "*.json"))):
        with open(path) as f:
            for r in json.load(f):
                key = json.dumps({k: v for k, v in r.items() if k not in ("predicted", "measured", "within_target")},
                                 sort_keys=True)
                if (r["kernel"] == "main" and r.get("causal") and 16384 <= r["seq_len"] and key not in seen
                        and r["seq_len"] <= max_n
                        and r.get("seq_len_q", r["seq_len"]) == r["seq_len"] and r["measured"].get("dram_read")):
                    seen.add(key)
                    rows.append(r)
    *_, start, _, sm = stamped("d128_n65536_b1h2_causal")
    dispatch = rp.dispatch_order(start, sm).tolist()
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(model_row, [(r, d) for r in rows for d in (None, dispatch)]))


def model_markdown(rows: list[dict]) -> str:
    lines = ["| config | measured (MB) | model (MB) | model, GPU dispatch (MB) |", "|---|---:|---:|---:|"]
    for a, b in zip(rows[::2], rows[1::2]):
        m = a["measured"]
        c = a["config"]
        label = fs.name(c) + (f" kv{c['kv_heads']}" if "kv_heads" in c else "") + (f" {c['dtype']}" if "dtype" in c else "")
        lines.append(f"| {label} | {m / 1e6:,.1f} | {a['predicted'] / 1e6:,.1f} ({a['predicted'] / m:.2f}) "
                     f"| {b['predicted'] / 1e6:,.1f} ({b['predicted'] / m:.2f}) |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("configs", nargs="*", default=DEFAULT)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json")
    ap.add_argument("--model", action="store_true")
    ap.add_argument("--max-n", type=int, default=131_072, help="--model: the longest N played")
    a = ap.parse_args()
    if a.model:
        rows = model_rows(a.jobs, a.max_n)
        text = model_markdown(rows)
    else:
        with ProcessPoolExecutor(a.jobs) as pool:
            rows = [r for got in pool.map(config_rows, a.configs) for r in got]
        text = markdown(rows)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(text)


if __name__ == "__main__":
    main()

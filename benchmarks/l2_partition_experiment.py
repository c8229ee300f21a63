"""An experiment, not the model: the H200's L2 as two partitions instead of one 50 MB LRU.

Why: the L2 model under-predicts the DRAM reads of long causal FlashAttention-2 forwards
(0.19-0.77 of the measured bytes at d = 128, N = 16k-64k); the committed counters of those
runs (docs/validation/2026-12-01-l2-sweep.md, section 2) show about half of the L2's misses
served over the fabric from the other partition, i.e. lines cached near the SMs that read
them, by each partition. The experiment plays each forward launch's requests, thread block
by thread block in the model's launch order and round robin, through:

* ``one``: the model's cache, one LRU of the profile's capacity (what iosim predicts);
* ``two``: two LRUs of half the capacity each; an SM uses the partition of its half of the
  chip (SMs 0 … S/2 − 1 and S/2 … S − 1; a thread block in slot s runs on SM s mod S); a
  chunk has a home partition (a hash of its key). A request is a hit when its partition
  holds the chunk; a miss there is served by the home partition when that holds it (over
  the fabric) and filled into both, else read from DRAM. Writes are placed like reads.

* ``measured_map`` (with ``--sides DIR``, the output of ``benchmarks/l2_sm_sides.py``): the
  same two partitions with the H200's measured maps instead of the halves: which SMs find
  another SM's lines near, and which SM the launch order puts each slot on.

Nothing in it is fitted: the capacities are the profile's halves; in ``two`` the SM halves
and the hash are choices (an alternating assignment of SMs, also tried, gave 35× the
measured bytes at N = 65,536), in ``measured_map`` only the hash is. It is a pure-Python
LRU (about a million requests a second), so configurations whose streams exceed
``--limit`` requests are skipped.

Run:  python benchmarks/l2_partition_experiment.py docs/validation/GRID [...] [--limit 6000000]
      [--sides docs/validation/2026-12-02-l2-sides]
Prints one JSON line per main forward launch: measured DRAM read bytes (ncu), and each
model's prediction and ratio.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import OrderedDict

import numpy as np

from iosim import Options, prepare
from iosim.gpu import sdpa
from iosim.models.cache.programs import head_programs
from iosim.models.cache.stream import _head_keys, schedule
from iosim.run import kernel_timing
from iosim.run.count import count_launch


def cta_stream(prog, heads: int, slots: int, kv_of_q, leads_group) -> tuple:
    """(slot, head key, hi, lo, size, write) per request, every thread block's every request,
    in round-robin order (round, slot)."""
    n = len(prog.cta_class)
    start, slot = schedule(np.tile(prog.lengths, heads), slots)
    parts = []
    for g in range(n * heads):
        h, c = divmod(g, n)
        cls, row = prog.classes[prog.cta_class[c]], prog.cta_row[c]
        for steps, fields, kind in ((cls.shared_steps, cls.shared, cls.shared["kind"]),
                                    (cls.private_steps, {k: v[row] for k, v in cls.private.items()} if
                                     len(cls.private_steps) else None, None)):
            if fields is None:
                continue
            keys = _head_keys(fields["kind"] if kind is None else kind, h, kv_of_q, leads_group)
            parts.append((start[g] + steps, np.full(len(keys), slot[g]), keys, fields["hi"], fields["lo"],
                          fields["size"], fields["write"]))
    rounds, slot_of, head, hi, lo, size, write = (np.concatenate([p[i] for p in parts]) for i in range(7))
    order = np.lexsort((slot_of, rounds))
    order = order[head[order] >= 0]
    return slot_of[order], head[order], hi[order], lo[order], size[order], write[order]


class Partition:
    def __init__(self, capacity: int):
        self.lines, self.used, self.capacity = OrderedDict(), 0, capacity

    def touch(self, key, size: int) -> bool:
        """Whether ``key`` was held; held and most recent after."""
        if key in self.lines:
            self.lines.move_to_end(key)
            return True
        self.lines[key] = size
        self.used += size
        while self.used > self.capacity:
            self.used -= self.lines.popitem(last=False)[1]
        return False


def hop_sides(sides: dict) -> np.ndarray:
    """Each SM's side from l2_sm_sides.py's sides.json: 1 (far) where its mean hop to SM 0's lines
    is above the midpoint of the fastest and slowest."""
    hops = np.array([r["hop_ns"] for r in sides["sides"]["0"]])
    return (hops > (hops.min() + hops.max()) / 2).astype(int)


def measured_sides(folder: str):
    """slot -> partition from the H200's measured maps (benchmarks/l2_sm_sides.py): the SM the
    launch order puts slot s on (order.json: the first wave's blocks), and that SM's side
    (sides.json: the SMs that find SM 0's lines near)."""
    with open(os.path.join(folder, "sides.json")) as f:
        far = hop_sides(json.load(f))
    with open(os.path.join(folder, "order.json")) as f:
        order = json.load(f)["sm"]
    return lambda s: int(far[order[s]])


def dram_reads(stream: tuple, capacity: int, sms: int, parts: int, side_of=None) -> int:
    """DRAM bytes read with ``parts`` partitions (1: the model's one LRU); ``side_of(slot)``:
    a slot's partition (default: SMs 0 … S/2 − 1 and S/2 … S − 1, slot s on SM s mod S)."""
    caches = [Partition(capacity // parts) for _ in range(parts)]
    side_of = side_of or (lambda s: int((s % sms) >= sms // 2))
    dram = 0
    for s, head, hi, lo, size, write in zip(*(a.tolist() for a in stream)):
        key = (head, hi, lo)
        near = side_of(s) if parts == 2 else 0
        if caches[near].touch(key, size):
            continue
        home = hash(key) & 1 if parts == 2 else 0
        if (home == near or not caches[home].touch(key, size)) and not write:
            dram += size
    return dram


def predict(problem, limit: int, sides=None):
    setup = prepare("h200", "fa2", problem, options=Options(cache=True, kernel="flash-attn-2"))
    launch = setup.launches[0]
    counted = count_launch(setup.profile, launch, setup.options, setup.sram_bytes, "count", None, record=True)
    prog = head_programs(list(counted.requests), 64).get("main")
    if prog is None or int(prog.lengths.sum()) * problem.heads_total > limit:
        return None
    profile = setup.profile
    slots = profile.sm_count * kernel_timing.blocks_per_sm(profile, launch, counted.sram.peak_bytes)
    lead = lambda q: (q % problem.heads) % problem.group_size == 0  # noqa: E731
    stream = cta_stream(prog, problem.heads_total, slots, problem.kv_head_of, lead)
    got = {f"{parts}": dram_reads(stream, profile.cache.capacity_bytes, profile.sm_count, parts) for parts in (1, 2)}
    if sides is not None:
        got["measured"] = dram_reads(stream, profile.cache.capacity_bytes, profile.sm_count, 2, sides)
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grids", nargs="+")
    ap.add_argument("--limit", type=int, default=6_000_000)
    ap.add_argument("--sides", help="a folder of benchmarks/l2_sm_sides.py's output: also the measured maps")
    args = ap.parse_args()
    sides = measured_sides(args.sides) if args.sides else None
    for grid in args.grids:
        for cfg, problem, measured in sdpa.raw_configs(grid):
            main_launch = [m for m in measured if sdpa.label(m["name"]) == "main"]
            got = predict(problem, args.limit, sides) if main_launch else None
            if got is None:
                continue
            meas = main_launch[0]["metrics"]["dram__bytes_read.sum"]
            names = {"1": "one", "2": "two", "measured": "measured_map"}
            row = {"grid": grid.rstrip("/").split("/")[-1], **cfg, "measured": meas}
            for key, name in names.items():
                if key in got:
                    row.update({name: got[key], f"{name}_ratio": round(got[key] / meas, 3)})
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()

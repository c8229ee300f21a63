"""Would the L2 room that flash-attn 2's spill frames hold explain DRAM reads the model misses? A sketch,
outside the model (docs/validation/2026-12-07-s54.md).

Every one of PyTorch's flash-attn 2 kernels runs at 250-255 registers a thread and many spill: the L1 writes
each local store through to the L2 (docs/validation/2026-12-04-local-memory.md), and each thread-block slot's
frame is reused by the blocks that follow on it (2026-12-04-frames.md). So the frames' lines stay in the L2,
rewritten every step, and take room from what the model plays. Their size is read from the sm_90 build's SASS
(2026-12-04-spill-footprint/spills.json: the distinct 4-byte words each instantiation's STL touch): local memory
interleaves a warp's 32 lanes word by word, so a word is one 128-byte line a warp, and a launch holds

    words × 128 B × warps a block × resident blocks (the model's slots)

of them, 1.6 MB for the d = 64 decode backward on 132 slots, 4.5 MB for the d = 128 forward on 264. Here each
pass's L2 is played with its room less ``factor`` times its main kernel's frames (1.5: a line written from
one side is held at its home and near its writer, the model's rule for writes; 1: once), over the committed
rows of one or more runs, and each main kernel's DRAM reads are compared with the shipped model's:

    python benchmarks/l2_frames_sketch.py docs/validation/2026-12-04-status/rows/2026-12-04-s27-check.json \
        --factors 1,1.5 [--hw h200] [--kernels dq_dk_dv] [--max-kv-mb 15.7] [--gqa-decode]

``--max-kv-mb`` leaves out causal forwards whose K/V head's K and V pass that many MB (the long causal
forwards, whose plays take minutes). Only the sm_90 build was read: the sketch applies to the profiles whose
GPU is that build (the H100 and H200 profiles).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from iosim import Options, load_profile, simulate  # noqa: E402
from iosim.gpu.sdpa import problem_of  # noqa: E402
from iosim.kernels import flash_code  # noqa: E402
from iosim.kernels.plan import gpu_info  # noqa: E402
from iosim.kernels.spill_frames import MEASURED_ON  # noqa: E402
from iosim.run import launches  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPILLS = os.path.join(ROOT, "docs", "validation", "2026-12-04-spill-footprint", "spills.json")
MAIN = ("main", "splitkv", "dq_dk_dv")


@functools.lru_cache(maxsize=1)
def words_table() -> dict:
    """(kernel, dtype, kHeadDim, template flags) -> distinct frame words its local stores touch, for the traits
    the H200 runs (flash_code's table)."""
    with open(flash_code.TABLE) as f:
        traits = json.load(f)["traits"]
    out = {}
    with open(SPILLS) as f:
        for e in json.load(f):
            kd = e["traits"].split(",")[0]
            if traits.get(f"{e['kernel']}/{kd}") == e["traits"]:
                out[e["kernel"], e["dtype"], int(kd), e["flags"]] = len(
                    {w for off, n in e["stl"] for w in range(off // 4, (off + n + 3) // 4)})
    return out


def frames_bytes(profile, launch, counted, kernels, slots: int) -> int:
    """The frames the pass's main kernel keeps in the L2: words × 128 B × warps × slots (0 where unknown, or
    where the profile's GPU is not the sm_90 build read)."""
    tile, p = launch.tile, launch.problem
    main = next((k for k in MAIN if k in kernels), None)
    if main is None or not getattr(tile, "kernel", "").startswith("flash-attn 2"):
        return 0
    if tuple(gpu_info(profile).compute_capability or ()) != MEASURED_ON:
        return 0
    flags = flash_code.instantiation(main, p, tile, counted.num_splits or 1)
    words = words_table().get((main, p.dtype, tile.kernel_head_dim, flags), 0)
    return words * 128 * (launch.threads_per_block // 32) * slots


@contextlib.contextmanager
def room(change):
    """The L2 model, each pass played with the room ``change(capacity, setup, launch, counted, recorded, slots)``
    gives (nests: each level changes the room the one outside it gave)."""
    cache_plan = launches._cache_plan

    def patched(setup, launch, c, room=1.0):
        plan = launches.plan

        def changed(recorded, **kw):
            slots = max(kw["concurrency"].values(), default=1)
            kw["capacity_bytes"] = change(kw["capacity_bytes"], setup, launch, c, recorded, slots)
            if kw["capacity_bytes"] <= 0:
                raise ValueError("no room is left in the L2")
            return plan(recorded, **kw)
        launches.plan = changed
        try:
            return cache_plan(setup, launch, c, room)
        finally:
            launches.plan = plan
    launches._cache_plan = patched
    try:
        yield
    finally:
        launches._cache_plan = cache_plan


def less_room(factor: float):
    """The L2 model, each pass played with its room less ``factor`` × its main kernel's frames."""
    return room(lambda capacity, setup, launch, c, recorded, slots: capacity - int(
        factor * frames_bytes(setup.profile, launch, c, {r.kernel for r in recorded}, slots)))


def scaled_room(scale: float):
    """The L2 model, each pass played with ``scale`` times its room."""
    return room(lambda capacity, *_: int(capacity * scale))


def kernel_stats(row: dict, hw: str):
    """The L2 model's counters of the row's main kernel (its launch played forward and backward)."""
    r = simulate(load_profile(hw), "fa2", problem_of({k: v for k, v in row.items() if v is not None}),
                 passes="forward+backward",
                 options=Options(kernel="flash-attn-2", cache=True))
    return r.cache.kernels[row["kernel"]]


def dram(row: dict, hw: str) -> float:
    return kernel_stats(row, hw).dram_read_bytes


#: the names of :func:`launch_fields`
FIELDS = ("d", "Nq", "Nkv", "B", "H", "Hkv", "c")


def launch_fields(row: dict) -> dict:
    """A row's launch as the sketches' one-line outputs name it: d, N_q, N_kv, B, H, H_kv and causal (0 or 1)."""
    return dict(zip(FIELDS, (row["head_dim"], row.get("seq_len_q") or row["seq_len"],
                             row.get("seq_len_kv") or row["seq_len"], row["batch"], row["heads"], row.get("kv_heads"),
                             int(row["causal"]))))


def selected(paths: list, kernels: tuple, max_kv_mb: float, gqa_decode: bool = False) -> list:
    """The rows of ``kernels`` with DRAM reads measured, but the causal forwards whose K/V head's K and V (2-byte
    elements) pass ``max_kv_mb`` MB; with ``gqa_decode``, the GQA backwards of at most 16 query rows only."""
    out = []
    for path in paths:
        with open(path) as f:
            rows = json.load(f)
        for r in rows:
            n_kv = r.get("seq_len_kv") or r["seq_len"]
            long_causal = r["kernel"] == "main" and r["causal"] and n_kv * r["head_dim"] * 4 > max_kv_mb * 1e6
            decode = (r["kernel"] == "dq_dk_dv" and (r.get("seq_len_q") or r["seq_len"]) <= 16
                      and (r.get("kv_heads") or r["heads"]) < r["heads"])
            if (r["kernel"] in kernels and r["measured"].get("dram_read") and not long_causal
                    and (decode or not gqa_decode)):
                out.append(r)
    return out


def compare(rows: list, hw: str, variants: list) -> str:
    """A markdown table: each row's main kernel, its committed prediction's DRAM reads over the measured
    ("shipped": the model of when the rows were written; the status rows are the model now), and each
    variant's (``variants``: (label, a context manager factory)), then how many are within 10 %."""
    lines = ["| kernel | d | N_q × N_kv | B × H (H_kv) | causal | shipped | " + " | ".join(v for v, _ in variants) + " |",
             "|---|---:|---|---|:---:|---:|" + "---:|" * len(variants)]
    within = [0] * (len(variants) + 1)
    for r in rows:
        m = r["measured"]["dram_read"]
        ratios = [r["predicted"]["dram_read"] / m]
        for _, variant in variants:
            with variant():
                ratios.append(dram(r, hw) / m)
        within = [w + (abs(x - 1) <= 0.1) for w, x in zip(within, ratios)]
        lines.append(f"| {r['kernel']} | {r['head_dim']} | {r.get('seq_len_q') or r['seq_len']:,} × "
                     f"{r.get('seq_len_kv') or r['seq_len']:,} | {r['batch']} × {r['heads']} "
                     f"({r.get('kv_heads') or r['heads']}) | {'y' if r['causal'] else ''} | "
                     + " | ".join(f"{x:.3f}" for x in ratios) + " |")
    lines.append(f"\nwithin 10 %: shipped {within[0]}, " + ", ".join(f"{v} {w}" for (v, _), w in zip(variants, within[1:]))
                 + f" of {len(rows)}")
    return "\n".join(lines)


def arguments(doc: str) -> argparse.ArgumentParser:
    """The options every such sketch takes: the rows, the profile, the kernels, the long causal forwards' bound."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("rows", nargs="+", help="committed comparison rows (benchmarks/sdpa_compare.py --json)")
    ap.add_argument("--hw", default="h200")
    ap.add_argument("--kernels", default=",".join(MAIN))
    ap.add_argument("--max-kv-mb", type=float, default=15.7)
    ap.add_argument("--gqa-decode", action="store_true", help="the GQA backwards of at most 16 query rows only")
    return ap


def main() -> None:
    ap = arguments(__doc__)
    ap.add_argument("--factors", default="1,1.5")
    a = ap.parse_args()
    variants = [(f"frames × {f:g}", functools.partial(less_room, f)) for f in map(float, a.factors.split(","))]
    print(compare(selected(a.rows, tuple(a.kernels.split(",")), a.max_kv_mb, a.gqa_decode), a.hw, variants))


if __name__ == "__main__":
    main()

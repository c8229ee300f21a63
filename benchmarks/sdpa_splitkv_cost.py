"""The split-KV forward kernel's step, two blocks an SM (device machine).

``iosim.kernels.coresidency`` measured the forward kernel's steps (``sdpa_block_cost.py``,
``sdpa_uneven_cost.py``); the split-KV kernel (``flash_fwd_splitkv_kernel``, tile 64 × kBlockN)
borrowed the forward's pair factor. PyTorch's split heuristic (docs/spec/kernels.md §3) aims
at two blocks on every SM (it counts 2 × 132 slots), so it never runs one block an SM with
many steps, and two an SM is what nearly every split-KV launch runs: this measures that. One
query block a head (N_q = 64, the split tile's B_r), fp16, B = 1: 66 heads → 4 splits → 264
blocks, two an SM, with N_kv = kBlockN · 4 · k for k = 2 … 32, so every block walks k key
blocks. Each with 66 K/V heads (every block reads its own keys from DRAM) and with one (MQA:
the keys stay in the L2), since a 64-row tile's step is near the memory rates. The slope of
time against k is the step of two blocks sharing an SM, free of the launch's fixed costs;
``benchmarks/step_factors.py --splitkv`` divides it by the model's serial slope of two blocks.
Head dims: the kernel sizes 32 … 256 and the uneven d = 40, 72, 112, 160, 224 (``Is_even_K = false``).
ncu's ``gpu__time_duration``, the split kernel only (not the combine).

Run (device):  python3 benchmarks/sdpa_splitkv_cost.py --out DIR      (ncu; writes DIR/splitkv_cost.json)
               SPLITKV_DIMS=16,24 python3 benchmarks/sdpa_splitkv_cost.py --out DIR2   (the second run)
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_block_cost import cli, durations, save_timed, sdpa_calls  # noqa: E402

REPEATS = 2
#: the split tile's query rows and its key rows a step, by kHeadDim (docs/spec/kernels.md §2.1)
BLOCK_Q = 64
BLOCK_KV = {32: 256, 64: 256, 96: 128, 128: 128, 192: 64, 256: 64}
#: the head dims (``SPLITKV_DIMS``, comma-separated, inherited by ncu's target process): by default
#: the first run's; the second (session 26) measured the 32 kernel's uneven form, d = 16 and 24
HEAD_DIMS = tuple(int(d) for d in os.environ.get("SPLITKV_DIMS", "32,64,96,128,192,256,40,72,112,160,224").split(","))
#: heads, and the splits PyTorch's heuristic picks for them with one query block a head on 132 SMs
HEADS, SPLITS = 66, 4
KV_HEADS = (66, 1)
STEPS = (2, 4, 8, 16, 32)


def kernel_head_dim(d: int) -> int:
    return next(k for k in sorted(BLOCK_KV) if k >= d)


def configs() -> list[dict]:
    return [{"d": d, "heads": HEADS, "kv_heads": kv, "splits": SPLITS, "steps": k, "n_q": BLOCK_Q,
             "n_kv": BLOCK_KV[kernel_head_dim(d)] * SPLITS * k} for d in HEAD_DIMS for kv in KV_HEADS for k in STEPS]


def target() -> None:
    for cfg in configs():
        sdpa_calls(cfg["d"], cfg["heads"], cfg["n_q"], cfg["n_kv"], REPEATS, kv_heads=cfg["kv_heads"])


def summarise(text: str, out: str, machine: dict) -> None:
    """Per configuration, the split kernel's launches (grid and time) and their median."""
    launches = [(n, g, t) for n, g, t in durations(text) if "splitkv_kernel" in n]
    save_timed(out, "splitkv_cost.json", machine, configs(), launches, REPEATS, "split-KV launches")


def main() -> None:
    cli(__doc__, target, summarise, "splitkv_cost.json", "regex:flash_fwd_splitkv_kernel", __file__)


if __name__ == "__main__":
    main()

"""The split-KV combine kernel's time against its number of splits, measured (device machine).

flash-attn 2's ``flash_fwd_splitkv_combine_kernel`` (flash_fwd_kernel.h,
``combine_attn_seqk_parallel``) gives each thread block kBlockM rows of the output: it loads
the rows' log-sum-exps of every split (one round trip), reduces them, then walks the splits
one after another, each a load of the split's partial output rows that the next iteration
does not start before (the loop's bound is a run-time value, so the loads are not issued
ahead). Decode launches (one query row, B·H rows in all) make few blocks, so the time is that
chain of round trips. Here: one query row, d = 64 and 128, B·H = 4, 16, 64, N_kv = 512 …
131,072 (PyTorch's heuristic picks the splits; the split kernel's grid says how many),
fp16, three calls each, ncu's ``gpu__time_duration`` (default cache control, as the grids).

Run (device):  python3 benchmarks/sdpa_combine_cost.py --out DIR     (ncu; writes DIR/combine_cost.json)
Target:        python3 benchmarks/sdpa_combine_cost.py --target
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_block_cost import cli, durations, machine, run_ncu  # noqa: E402

REPEATS = 3


def configs() -> list[dict]:
    return [{"d": d, "heads": h, "n_q": 1, "n_kv": n} for d in (64, 128) for h in (4, 16, 64)
            for n in (512, 2048, 8192, 32768, 131072)]


def target() -> None:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    for cfg in configs():
        q = torch.randn(1, cfg["heads"], cfg["n_q"], cfg["d"], device="cuda", dtype=torch.float16)
        k, v = (torch.randn(1, cfg["heads"], cfg["n_kv"], cfg["d"], device="cuda", dtype=torch.float16)
                for _ in range(2))
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            for _ in range(REPEATS):
                F.scaled_dot_product_attention(q, k, v)
        torch.cuda.synchronize()
        del q, k, v


def summarise(text: str, out: str, machine: dict) -> None:
    """Each configuration's launches in order: (kernel, grid, seconds); the combine follows its split kernel."""
    launches = durations(text)
    rows, at = [], 0
    for cfg in configs():
        calls = []
        while at < len(launches) and len(calls) < REPEATS:
            name, grid, t = launches[at]
            at += 1
            if "combine" in name:
                if calls:
                    calls[-1].update(combine_grid=grid, combine_s=t)
                continue
            calls.append({"kernel": "splitkv" if "splitkv" in name else "main", "grid": grid, "time_s": t})
        if at < len(launches) and "combine" in launches[at][0]:
            calls[-1].update(combine_grid=launches[at][1], combine_s=launches[at][2])
            at += 1
        rows.append({**cfg, "calls": calls})
    with open(os.path.join(out, "combine_cost.json"), "w") as f:
        json.dump({**machine, "launches": len(launches), "rows": rows}, f, indent=1)
    print(f"{len(launches)} launches for {len(configs())} configurations of {REPEATS} calls")


def drive(out: str) -> None:
    text = run_ncu("regex:flash_fwd", __file__, out)
    summarise(text, out, machine(out))


def main() -> None:
    cli(__doc__, target, drive, summarise, "combine_cost.json")


if __name__ == "__main__":
    main()

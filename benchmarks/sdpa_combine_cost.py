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

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_block_cost import cli, durations, forward_calls, save, sdpa_calls  # noqa: E402

REPEATS = 3


def configs() -> list[dict]:
    return [{"d": d, "heads": h, "n_q": 1, "n_kv": n} for d in (64, 128) for h in (4, 16, 64)
            for n in (512, 2048, 8192, 32768, 131072)]


def target() -> None:
    for cfg in configs():
        sdpa_calls(cfg["d"], cfg["heads"], cfg["n_q"], cfg["n_kv"], REPEATS)


def summarise(text: str, out: str, machine: dict) -> None:
    """Each configuration's launches in order: (kernel, grid, seconds); the combine follows its split kernel."""
    launches = durations(text)
    calls = forward_calls(launches, len(configs()), REPEATS, combine_grid=True)
    rows = [{**cfg, "calls": c} for cfg, c in zip(configs(), calls)]
    save(out, "combine_cost.json", {**machine, "launches": len(launches), "rows": rows})
    print(f"{len(launches)} launches for {len(configs())} configurations of {REPEATS} calls")


def main() -> None:
    cli(__doc__, target, summarise, "combine_cost.json", "regex:flash_fwd", __file__)


if __name__ == "__main__":
    main()

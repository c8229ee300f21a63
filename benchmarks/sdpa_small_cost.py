"""What flash-attn 2's two element-wise backward kernels cost, by head dim and blocks (device machine).

The backward runs ``flash_bwd_dot_do_o_kernel`` (D = rowsum(dO ∘ O)) before its main kernel and
``flash_bwd_convert_dq_kernel`` (dQ = scale · dQaccum, fp32 to fp16) after it, one thread block
per B_r query rows a head (the backward's B_r: 128 up to d = 64, else 64). On the committed grids
the model times both as their bytes at the copy rate above a floor (the smallest read-then-write
kernel, 2.18 µs), and a small convert_dq takes 3.8 µs at kHeadDim 32 and 6-8 µs at 64-256.

This measures both kernels alone, under Nsight Compute (``gpu__time_duration``, ncu's default
cache control: the L2 flushed before each, as in every committed grid): fp16, B = 1,
N_q = N_kv = B_r (one block a head), 1 … 2,112 heads, at the kernel sizes d = 32 … 256 and two
uneven head dims (d = 40, 160: ``Is_even_K = false``). The time against the blocks says what a
block's chain costs alone and how the blocks' bytes add once they fill the SMs.

Run (device):  python3 benchmarks/sdpa_small_cost.py --out DIR     (ncu; writes DIR/small_cost.json)
               SMALL_SET=rows python3 benchmarks/sdpa_small_cost.py --out DIR2   (1, 16 and B_r/2 query rows)
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_block_cost import cli, durations, save, sdpa_calls  # noqa: E402

REPEATS = 3
HEAD_DIMS = (32, 64, 96, 128, 192, 256, 40, 160)
BLOCKS = (1, 8, 33, 66, 132, 264, 528, 1056, 2112)
KERNELS = ("dot_do_o", "convert_dq")


def block_q(d: int) -> int:
    """The backward's B_r (docs/spec/kernels.md): 128 up to d = 64, then 64."""
    return 128 if d <= 64 else 64


#: which set (``SMALL_SET``, inherited by ncu's target process): "tiles" (one whole query block a
#: head, the first run) or "rows" (fewer query rows than a block: decodes and partial blocks)
SET = os.environ.get("SMALL_SET", "tiles")


def configs(name: str = SET) -> list[dict]:
    if name == "rows":
        return [{"d": d, "heads": h, "n_q": n, "n_kv": block_q(d)}
                for d in HEAD_DIMS[:6] for n in (1, 16, block_q(d) // 2) for h in (1, 132, 1056)]
    return [{"d": d, "heads": h, "n_q": block_q(d), "n_kv": block_q(d)} for d in HEAD_DIMS for h in BLOCKS]


def target() -> None:
    for cfg in configs():
        sdpa_calls(cfg["d"], cfg["heads"], cfg["n_q"], cfg["n_kv"], REPEATS, backward=True)


def summarise(text: str, out: str, machine: dict) -> None:
    """Per configuration and kernel, its launches' grids and times and their median."""
    launches = durations(text)
    rows = []
    for i, cfg in enumerate(configs()):
        got = launches[i * REPEATS * len(KERNELS):(i + 1) * REPEATS * len(KERNELS)]
        for kernel in KERNELS:
            mine = [(g, t) for n, g, t in got if kernel in n]
            times = sorted(t for _, t in mine)
            rows.append({**cfg, "kernel": kernel, "grids": sorted({g for g, _ in mine}), "times_s": times,
                         "median_s": times[len(times) // 2] if times else None})
    save(out, "small_cost.json", {**machine, "set": SET, "launches": len(launches),
                                  "expected": len(configs()) * REPEATS * len(KERNELS), "rows": rows})
    print(f"{len(launches)} launches of {len(configs()) * REPEATS * len(KERNELS)} expected")


def main() -> None:
    cli(__doc__, target, summarise, "small_cost.json", "regex:flash_bwd_(dot_do_o|convert_dq)", __file__)


if __name__ == "__main__":
    main()

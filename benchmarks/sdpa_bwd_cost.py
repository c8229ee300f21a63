"""The flash-attn 2 backward kernels' step time and per-block cost, measured (device machine).

The companion of benchmarks/sdpa_block_cost.py for the backward pass: the main backward
kernel (``flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel``) runs one thread block per key
block, alone on its SM (8 warps of 255 registers), walking the query blocks. With one key
block a head (N_kv = B_c) and 132 heads, every SM holds one block, and the block makes one
step per query block: time against N_q is a line whose slope is the step time (compare the
model's, which sums the step's units at the SM's rates) and whose intercept is the launch
and the block's own fill and drain. A second layout, one head of 132 key blocks
(``layout`` "shared"), has every block walk the same query blocks, whose Q_i and dO_i come from
the L2 after the first block's read, as in a long launch: its slope is the step that
``iosim.kernels.coresidency.BACKWARD_FACTORS`` takes (docs/validation/2026-12-02-bwd-step.md).
The element-wise kernels of the same calls (``dot_do_o``, ``convert_dq``) are recorded too. fp16, B = 1, not causal, ncu's
``gpu__time_duration`` with its default cache control (as every committed grid).

Run (device):  python3 benchmarks/sdpa_bwd_cost.py --out DIR      (ncu; writes DIR/bwd_cost.json)
               BWD_SET=heads python3 benchmarks/sdpa_bwd_cost.py --out DIR2   (session 27)
Target:        python3 benchmarks/sdpa_bwd_cost.py --target
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_block_cost import cli, durations, save, sdpa_calls  # noqa: E402

#: kHeadDim -> key rows a block (B_c) of the H200's backward kernel (docs/spec/kernels.md)
BLOCK_KV = {32: 128, 64: 128, 96: 128, 128: 128, 192: 64, 256: 64}
HEADS = 132
REPEATS = 3
KERNELS = {"flash_bwd_dq_dk_dv": "dq_dk_dv", "dot_do_o": "dot_do_o", "convert_dq": "convert_dq"}


#: which set (``BWD_SET``, inherited by ncu's target process): "first" (the layouts above) or
#: "heads" (session 27: 132 blocks as 4, 12 or 44 heads of 33, 11 or 3 key blocks, and "shared"
#: again, at d = 64, 96, 128: does the step depend on how many blocks walk a head's query blocks?)
#: or "walks" (session 27: long walks of one head, and 8-head launches of several waves), or
#: "uneven" (session 27: the shared layout at lengths one short of the tiles), or "square" (session
#: 27: 8 heads at N = 4,096 and 4,095, dense and causal)
SET = os.environ.get("BWD_SET", "first")


def configs(name: str = SET) -> list[dict]:
    """One key block a head, 132 heads; then one head of 132 key blocks (``layout`` "shared":
    every block walks the same query blocks, whose Q_i, dO_i come from the L2 after the first
    block reads them, as in a long launch). Set "heads": k heads of 132 / k key blocks."""
    if name == "square":  # 8 heads, N_q = N_kv = 4,096 or 4,095, dense and causal: the instantiations side by side
        return [{"d": d, "heads": 8, "n_q": n, "n_kv": n, "layout": "square", "causal": c}
                for d in (32, 64, 96, 128) for c in (False, True) for n in (4096, 4095)]
    if name == "uneven":  # the Is_even_MN = false instantiation: lengths one short of the tiles
        return ([{"d": d, "heads": 1, "n_q": 128 * s - 1, "n_kv": HEADS * bc - 1, "layout": "shared-uneven"}
                 for d, bc in BLOCK_KV.items() for s in (2, 4, 8, 16, 32)] +
                [{"d": 96, "heads": 24, "n_q": 5120, "n_kv": 5120, "layout": "final-check", "causal": True}])
    if name == "walks":   # long walks (one head of 132 key blocks) and multi-wave launches (8 heads, N_q = N_kv)
        return ([{"d": d, "heads": 1, "n_q": n, "n_kv": HEADS * BLOCK_KV[d], "layout": "shared"}
                 for d in (64, 96, 128) for n in (4096, 8192, 16384, 32768)] +
                [{"d": d, "heads": 8, "n_q": n, "n_kv": n, "layout": "square"}
                 for d in (64, 96, 128) for n in (2048, 4096, 8192, 16384)])
    if name == "heads":
        return [{"d": d, "heads": k, "n_q": 128 * s, "n_kv": HEADS // k * BLOCK_KV[d],
                 "layout": "shared" if k == 1 else f"heads-{k}"}
                for d in (64, 96, 128) for k in (1, 4, 12, 44) for s in (2, 4, 8, 16, 32)]
    own = [{"d": d, "heads": HEADS, "n_q": 128 * s, "n_kv": bc} for d, bc in BLOCK_KV.items()
           for s in (1, 2, 4, 8, 16, 32)]
    shared = [{"d": d, "heads": 1, "n_q": 128 * s, "n_kv": HEADS * bc, "layout": "shared"}
              for d, bc in BLOCK_KV.items() for s in (2, 4, 8, 16, 32)]
    return own + shared


def target() -> None:
    for cfg in configs():
        sdpa_calls(cfg["d"], cfg["heads"], cfg["n_q"], cfg["n_kv"], REPEATS, causal=cfg.get("causal", False),
                   backward=True)


def summarise(text: str, out: str, machine: dict) -> None:
    launches = []
    for name, _, t in durations(text):
        kind = next((v for k, v in KERNELS.items() if k in name), None)
        if kind is not None:
            launches.append((kind, t))
    if len(launches) != 3 * REPEATS * len(configs()):   # three kernels a call, in order
        raise SystemExit(f"{len(launches)} launches for {len(configs())} configurations of {REPEATS} calls")
    rows, at = [], 0
    for cfg in configs():
        calls = launches[at:at + 3 * REPEATS]
        at += 3 * REPEATS
        med = {}
        for kind in KERNELS.values():
            got = sorted(t for k, t in calls if k == kind)
            med[kind] = got[len(got) // 2] if got else None
        rows.append({**cfg, "median_s": med})
    save(out, "bwd_cost.json", {**machine, "set": SET, "launches": len(launches), "rows": rows})
    print(f"{len(launches)} of {3 * REPEATS * len(configs())} launches")


def main() -> None:
    cli(__doc__, target, summarise, "bwd_cost.json", "regex:flash_bwd", __file__)


if __name__ == "__main__":
    main()

"""Two flash-attn 2 forward blocks on one SM, measured on the real kernel (device machine).

The kernel time model's factor for two co-resident forward blocks
(iosim.kernels.coresidency) was first measured on an emulation of each kernel's step
(benchmarks/microbench_overlap.py); the prospective check
(docs/validation/2026-12-01-overlap-check.md) found the d = 96 kernel overlapping more
than its emulation. This measures the compiled kernels themselves, without the model: for
each 4-warp forward kernel of the H200 (kHeadDim 32, 64, 96, 128, 256), PyTorch's
``scaled_dot_product_attention`` (FLASH_ATTENTION backend, fp16, not causal, B = 1) at
N = 4,224 (33 blocks of 128 rows a head; 66 of 64 at d = 256) with H heads giving 132
blocks (one an SM), 264 (two an SM: the registers allow two) and 396, timed by CUDA
events (median of 30 back-to-back calls after 5 warm-ups). With equal blocks,
t(264) = 2·r·t(132), so r = t(264) / (2·t(132)) — the time of a block-step when two share
an SM, as a fraction of one alone — and t(396) should be 2·r·t + t. The 8-warp d = 192
kernel (one block an SM) is timed at 132 and 264 blocks for the record.

Run:  python3 benchmarks/sdpa_pair_factor.py --out DIR     (writes DIR/pair_factor.json)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

#: kHeadDim -> query rows a block (B_r) of the H200's forward kernel (docs/spec/kernels.md §2)
KERNELS = {32: 128, 64: 128, 96: 128, 128: 128, 192: 128, 256: 64}
SEQ_LEN = 33 * 128


def timed(fn, repeats: int = 30) -> float:
    import torch

    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e-3)
    return statistics.median(times)


def main() -> None:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for d, block_q in KERNELS.items():
        per_head = SEQ_LEN // block_q
        row = {"head_dim": d, "block_q": block_q, "seq_len": SEQ_LEN, "blocks_per_head": per_head}
        for waves in (1, 2, 3):
            heads = waves * sms // per_head
            q, k, v = (torch.randn(1, heads, SEQ_LEN, d, device="cuda", dtype=torch.float16) for _ in range(3))
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                row[f"t{heads * per_head}_s"] = timed(lambda: F.scaled_dot_product_attention(q, k, v))
            del q, k, v
        t1, t2 = row[f"t{sms}_s"], row[f"t{2 * sms}_s"]
        row["r"] = t2 / (2 * t1)
        rows.append(row)
        print(json.dumps(row), flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "pair_factor.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "sm_count": sms, "torch": torch.__version__,
                   "cuda": torch.version.cuda, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

"""Does a short block of the Triton FA2 forward cost its steps, or more? (issue 14, item 3: the
whole-space check's misses, docs/validation/2026-12-02-triton-fullcheck.md). Run on the device:

    PYTHONPATH=$PWD python3 -u benchmarks/triton_short_blocks.py --out $OUT/short

The measured steps (``triton_steps.py``) come from blocks of 33–132 key steps, and the model
charges a block its steps and a wave its measured extra. At N = 1,000 a 256 × 128 block has
8 key steps, and the model gave it 0.80 of its measured time. This times a few
configurations with the same number of blocks (4 waves at CUDA's occupancy: whole waves),
from 1 to 64 key steps a block, at whole blocks of N. If T grows as a + b·n, ``a`` is what a
block costs besides its steps, and ``b`` should equal the table's step.

Writes DIR/short.csv (config, d, N, key steps a block, B·H, blocks, median/min seconds, runs)
and DIR/machine.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from triton_steps import cuda_occupancy  # noqa: E402
from triton_tiles import _driver, time_config  # noqa: E402

SMS = 132
WAVES = 4
CONFIGS = {128: [(256, 128, 8, 2), (256, 64, 8, 4), (128, 32, 8, 3), (64, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3)],
           64: [(128, 64, 4, 3), (64, 64, 4, 3), (64, 128, 4, 3)]}
STEPS = (1, 2, 4, 8, 16, 32, 64)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch
    import triton
    from iosim.gpu.triton_attention import fa2_forward
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    with open(os.path.join(args.out, "machine.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_properties(0).name, "torch": torch.__version__,
                   "triton": triton.__version__, "driver": _driver(), "date": time.strftime("%Y-%m-%d %H:%M:%S"),
                   "waves": WAVES, "configs": CONFIGS, "steps": STEPS}, f, indent=1)
    with open(os.path.join(args.out, "short.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["block_m", "block_n", "num_warps", "num_stages", "head_dim", "seq_len", "steps", "batch_heads",
                    "blocks", "blocks_per_sm", "median_s", "min_s", "runs"])
        for d, configs in CONFIGS.items():
            for cfg in configs:
                q = torch.randn(1, 1, 256, d, device="cuda", dtype=torch.float16)
                k = cuda_occupancy(fa2_forward(q, q, q, False, *cfg)[2]) or 1
                for n in STEPS:
                    seq = n * cfg[1]
                    seq = seq * (cfg[0] // math.gcd(seq, cfg[0]))     # whole blocks of BLOCK_M rows
                    blocks_per_head = seq // cfg[0]
                    bh = max(1, SMS * k * WAVES // blocks_per_head)
                    g = torch.Generator(device="cuda").manual_seed(3)
                    qq, kk, vv = (torch.randn(1, bh, seq, d, device="cuda", dtype=torch.float16, generator=g)
                                  for _ in range(3))
                    med, low, runs = time_config(lambda: fa2_forward(qq, kk, vv, False, *cfg), flush, torch,
                                                 min_runs=5, max_runs=20, target_s=0.05)
                    w.writerow([*cfg, d, seq, seq // cfg[1], bh, bh * blocks_per_head, k, f"{med:.9f}", f"{low:.9f}",
                                runs])
                    f.flush()
                print(d, cfg, "done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

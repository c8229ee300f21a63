"""Measure iosim's own CuPy kernels with Nsight Compute over a grid (device machine only).

Driver:  python3 benchmarks/cupy_ncu.py --out DIR [--budget-s 300]
  Runs this file in ``--target`` mode under ``ncu --clock-control none`` and writes
  DIR/cupy.csv (raw ncu CSV, one row per kernel launch and metric) and DIR/cupy_configs.json
  (the grid, in launch order, with each config's kernel launches).
Target:  python3 benchmarks/cupy_ncu.py --target
  One uninstrumented launch of every config, in order.

The metrics are issue 6's (iosim.gpu.sdpa.METRICS). The comparison with
iosim's predictions runs anywhere: benchmarks/cupy_compare.py DIR.
"""

from __future__ import annotations

import itertools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ncu_self_profile import self_profile  # noqa: E402

from iosim.gpu.sdpa import METRICS  # noqa: E402

from iosim.gpu.cupy_kernels import launches, make_config  # noqa: E402
from iosim.gpu.ncu import KERNEL_REGEX  # noqa: E402

HEADS_TOTAL = 16


def grid() -> list[dict]:
    """fa2 and standard on the tensor cores (fp16, 64 x 64 tiles) and fa1 on the CUDA cores
    (one thread block per head walks every tile, so it is kept small)."""
    out = []
    for algo, n, d, causal in itertools.product(("fa2", "standard"), (2048, 8192), (64, 128), (False, True)):
        out.append(dict(algo=algo, seq_len=n, head_dim=d, heads_total=HEADS_TOTAL, dtype="fp16", causal=causal,
                        block_q=64, block_kv=64))
    for causal in (False, True):
        out.append(dict(algo="fa1", seq_len=1024, head_dim=64, heads_total=HEADS_TOTAL, dtype="fp16", causal=causal,
                        block_q=64, block_kv=64))
    return out


def run_target() -> None:
    import cupy

    from iosim.gpu.ncu_target import run

    for spec in grid():
        run(make_config(**spec))  # seed 0, uninstrumented; the launch's buffers are dropped on return
        cupy.get_default_memory_pool().free_all_blocks()


def main() -> None:
    configs = []
    for spec in grid():
        cfg = make_config(**spec)
        configs.append({**spec, "impl": cfg.impl, "kernels": [ln.name for ln in launches(cfg)]})
    self_profile(__file__, __doc__, run_target, KERNEL_REGEX, list(METRICS), "cupy.csv", "cupy_configs.json",
                 {"grid": configs}, budget_s=300.0)


if __name__ == "__main__":
    main()

"""Where the long causal forward's extra DRAM reads come from: the L2's two partitions
(device machine only).

Issue 14: iosim's L2 model (one 50 MB LRU, thread blocks in lockstep) predicts 0.77, 0.45
and 0.19 of the DRAM bytes PyTorch's FlashAttention-2 forward reads for causal d = 128 at
N = 16k, 32k, 64k (docs/validation/2026-12-01-sdpa-gqa-long.md), while d = 64 and the
non-causal runs are within 10 %. The H100/H200 L2 is two partitions joined by a fabric; a
line homed in one partition that an SM of the other side reads can be kept on both sides.
This measures, per forward launch, the L2 lookups from the SMs (hits and misses), the
lookups arriving over the fabric from the other partition (``srcunit_ltcfabric``), and
DRAM bytes, so the next model can be chosen from what the hardware does.

Run:  PYTHONPATH=$PWD python3 benchmarks/l2_partitions_ncu.py --out DIR [--budget-s 240]
Writes DIR/l2_partitions.csv (raw ncu CSV, forward launches only) and DIR/configs.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_self_profile import self_profile  # noqa: E402

#: (N, heads, causal, d): the three long causal misses, d = 64 at 64k (within 5 %), and
#: non-causal controls at the same sizes
CONFIGS = [
    (16384, 8, True, 128), (32768, 4, True, 128), (65536, 2, True, 128),
    (65536, 2, True, 64), (32768, 4, False, 128), (16384, 8, False, 128),
]
METRICS = [
    "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
    "lts__t_sectors_srcunit_ltcfabric.sum",
    "lts__t_sectors_srcunit_ltcfabric_op_read.sum",
    "lts__t_sectors_srcunit_ltcfabric_op_read_lookup_hit.sum",
    "lts__t_sectors_srcunit_ltcfabric_op_read_lookup_miss.sum",
    "lts__t_sectors_op_read_lookup_miss.sum",
    "lts__t_sectors_op_write.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "lts__t_sectors_srcunit_ltcfabric_op_write.sum",
    "lts__d_sectors_fill_device.sum",
    "lts__t_sectors_lookup_hit.sum",
    "lts__t_sectors_lookup_miss.sum",
]


def run_target() -> None:
    import torch

    from iosim.gpu.sdpa_target import run

    torch.manual_seed(0)
    for n, h, causal, d in CONFIGS:
        run({"seq_len": n, "head_dim": d, "batch": 1, "heads": h, "causal": causal})


def main() -> None:
    self_profile(__file__, __doc__, run_target, "regex:flash_fwd_kernel", METRICS, "l2_partitions.csv", "configs.json",
                 {"configs": [dict(seq_len=n, heads=h, batch=1, causal=c, head_dim=d) for n, h, c, d in CONFIGS]})


if __name__ == "__main__":
    main()

"""Three ncu probes of PyTorch's flash-attn 2 kernels (device machine), whose CSVs are committed.

``--fwd-pipes``: one forward launch each at d = 32, 64, 128 with 132 one-block heads (one block
an SM, 4,096 keys), for Nsight Compute's instruction and issue sections
(docs/validation/2026-12-02-bwd-step/fwd_pipes.csv):

    ncu --clock-control none --kernel-name regex:flash_fwd --section InstructionStats \\
        --section ComputeWorkloadAnalysis --section WarpStateStats --section SpeedOfLight \\
        --csv --page details python3 benchmarks/sdpa_probes.py --fwd-pipes

``--uneven-loads``: the forward at d = 72, 80, 88, 104 and 40 (uneven instantiations of the 96,
128 and 64 kernels), 256 heads (the main kernel, not split-KV), N_q × N_kv from 128 × 64 to
2,048 × 4,096, for the load counters (docs/validation/2026-12-02-uneven-k/loads_ncu.csv):

    ncu --clock-control none --kernel-name regex:flash_fwd --csv --print-units base --metrics \
        smsp__sass_data_bytes_mem_global_op_ldgsts.sum,smsp__sass_data_bytes_mem_global_op_ld.sum,\
smsp__sass_inst_executed_op_ldgsts.sum,smsp__sass_data_bytes_mem_global_op_st.sum,launch__grid_size \
        python3 benchmarks/sdpa_probes.py --uneven-loads

``--combine``: split-KV decodes and short one-head launches at d = 32, 64, 128, 256, three calls
each, for the combine kernel's registers, occupancy limits and durations
(docs/validation/2026-12-02-combine-cost/occupancy_ncu.csv):

    ncu --clock-control none --kernel-name regex:flash_fwd --csv --print-units base --metrics \\
        gpu__time_duration.sum,launch__registers_per_thread,launch__occupancy_limit_registers,\\
launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps,launch__occupancy_limit_blocks,\\
launch__grid_size,launch__shared_mem_per_block_static,dram__bytes_read.sum,lts__t_bytes.sum \\
        python3 benchmarks/sdpa_probes.py --combine
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_block_cost import sdpa_calls  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fwd-pipes", action="store_true")
    ap.add_argument("--combine", action="store_true")
    ap.add_argument("--uneven-loads", action="store_true")
    args = ap.parse_args()
    if args.uneven_loads:
        for d in (72, 80, 88, 104, 40):
            for n_q, n_kv in ((128, 64), (128, 128), (128, 256), (256, 64), (128, 4096), (2048, 4096)):
                sdpa_calls(d, 256, n_q, n_kv, 1)
    if args.fwd_pipes:
        for d in (32, 64, 128):
            sdpa_calls(d, 132, 128, 4096, 1)
    if args.combine:
        for d in (32, 64, 128, 256):
            for n in (512, 8192, 65536):
                sdpa_calls(d, 4, 1, n, 3)
            for n in (256, 512, 1024, 2048, 4096):
                sdpa_calls(d, 1, n, n, 3)


if __name__ == "__main__":
    main()

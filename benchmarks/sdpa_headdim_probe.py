"""Probe: how PyTorch's FlashAttention-2 forward kernel loads rows of a head dim that is no
kernel size (issue 14, item 1: the forward's loads at d = 40 are 1.3× iosim's by the L1 tag
stage, 12–24 % more by the instructions' bytes; docs/validation/2026-12-01-sdpa-unseen.md).

Device:  PYTHONPATH=$PWD python3 benchmarks/sdpa_headdim_probe.py --out $OUT/probe
  For each (N, d) below (B = 2, H = 8, fp16, not causal): flash_fwd_kernel under ncu with
  the instruction counts and bytes of plain and cp.async loads, the tag stage's requests,
  sectors and bytes, and the kernel's demangled name (its Is_even_MN / Is_even_K template
  arguments). Writes DIR/probe_n{N}_d{D}.csv (raw) and DIR/configs.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CONFIGS = [(1000, 40), (1024, 40), (1000, 48), (1024, 48), (1000, 56), (1000, 72), (1000, 80), (1024, 64)]
WANTED = [
    "smsp__sass_data_bytes_mem_global_op_ld.sum", "smsp__sass_data_bytes_mem_global_op_ldgsts.sum",
    "smsp__sass_inst_executed_op_ldgsts.sum", "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_thread_inst_executed_op_ldgsts_pred_on.sum",
    "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_bytes_pipe_lsu_mem_global_op_ldgsts.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum",
    "l1tex__m_xbar2l1tex_read_bytes.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
]


def run(out: str) -> int:
    from iosim.gpu.ncu import find_ncu
    from iosim.gpu.ncu import profile as ncu_profile

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from sdpa_ncu import available_metrics, query_metrics

    os.makedirs(out, exist_ok=True)
    ncu = find_ncu()
    metrics = available_metrics(ncu, WANTED, query_metrics(ncu))
    for n, d in CONFIGS:
        spec = json.dumps({"seq_len": n, "head_dim": d, "batch": 2, "heads": 8, "causal": False})
        done = ncu_profile("iosim.gpu.sdpa_target", spec, "regex:flash_fwd_kernel", metrics,
                           ("--print-kernel-base", "demangled"), ncu=ncu)
        with open(os.path.join(out, f"probe_n{n}_d{d}.csv"), "w") as f:
            f.write(done.log)
        print(n, d, "ok" if done.ok else f"failed {done.returncode}: {done.stderr[-300:]}", flush=True)
    with open(os.path.join(out, "configs.json"), "w") as f:
        json.dump({"configs": CONFIGS, "batch": 2, "heads": 8, "metrics": metrics,
                   "missing": [m for m in WANTED if m not in metrics],
                   "versions": subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                                              capture_output=True, text=True).stdout.strip()}, f, indent=1)
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    sys.exit(run(ap.parse_args().out))

"""Run every kernel family under compute-sanitizer (memcheck and racecheck) at small shapes.

    PYTHONPATH=. python3 benchmarks/gpu_sanitize.py

Shapes are ragged (N = 200 and 203: a partial last tile, and for 203 the element-wise P/S
paths of the tensor-core standard kernels, taken when N % 8 != 0), causal, with B·H = 2.
CuPy's memory pool is bypassed (IOSIM_NO_POOL=1) so that memcheck sees each buffer's bounds.
Prints one line per run and the sanitizer's summary; exits 1 if any run reports an error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = [
    ("fa2", "mma", "fp16", 200), ("standard", "mma", "fp16", 200), ("standard", "mma", "fp16", 203),
    ("fa1", "generic", "fp16", 203), ("fa2", "generic", "fp32", 203), ("standard", "generic", "fp32", 203),
]


def main() -> int:
    tool = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    env = dict(os.environ, IOSIM_NO_POOL="1", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    bad = 0
    for algo, impl, dtype, n in RUNS:
        spec = json.dumps(dict(algo=algo, seq_len=n, head_dim=64, heads_total=2, dtype=dtype, causal=True,
                               block_q=64, block_kv=32, impl=impl, seed=0, count=True))
        for check in ("memcheck", "racecheck"):
            cmd = [tool, "--tool", check, "--error-exitcode", "99", sys.executable, "-m", "iosim.gpu.ncu_target", spec]
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
            summary = [ln for ln in (done.stdout + done.stderr).splitlines() if "ERROR SUMMARY" in ln or "RACECHECK SUMMARY" in ln]
            ok = done.returncode == 0
            bad += not ok
            print(f"{check:9s} {algo:8s} {impl:7s} {dtype} N={n}: rc={done.returncode} {' '.join(summary)}", flush=True)
            if not ok:
                print((done.stdout + done.stderr)[-3000:], flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Measure each tile's step on iosim's CuPy tensor-core FA2 kernel (``fa2_mma``, fp16; issue 14,
item 3, second half; docs/gpu.md). Run on the device:

    PYTHONPATH=$PWD python3 -u benchmarks/cupy_steps.py --out $OUT/cupy-steps

The launches are ``benchmarks/triton_steps.py``'s, for the 16 tiles (B_r, B_c ∈ 16…128) at
d = 64 and 128: whole waves of ``k`` blocks an SM (CUDA's occupancy of the compiled kernel
with its dynamic shared memory) at N = 4,224 and 8,448, four times the waves, 132 lone
blocks where they are whole heads, and the causal mask (a run-time flag of the same kernel)
at both lengths with B·H and 2·B·H heads. The kernel is one stage (Q_i, K_j and V_j in one
buffer each) with B_r/16 warps, so its row in ``steps.csv`` is keyed (B_r, B_c, B_r/16, 1, d),
and ``benchmarks/steps_table.py --kernel cupy-fa2-mma`` derives the table the kernel's time
model reads (``iosim/kernels/cupy_fa2_steps_h200.json``). Its ``spills`` column holds the
compiled kernel's local memory, bytes a thread (CuPy's ``local_size_bytes``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cupy_tiles import TILES, _error, _Flush, _Shim, config   # noqa: E402
from triton_steps import FIELDS, N1, N2, launches               # noqa: E402  (B_r <= 128: N1, N2)
from triton_tiles import _driver, time_config                  # noqa: E402


def occupancy(kernel, threads: int, smem: int) -> tuple[int, int]:
    """(CUDA's blocks an SM, or 0 where it cannot be asked; iosim's rule from the attributes)."""
    from iosim.models.cache import occupancy as iosim_rule
    ours = iosim_rule(1, 228 * 1024, smem + 1024, threads, registers_per_thread=kernel.num_regs,
                      register_file_bytes=256 * 1024)
    try:
        from cupy_backends.cuda.api import driver
        return int(driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, threads, smem)), ours
    except Exception:  # noqa: BLE001 - recorded as unknown
        return 0, ours


def measure(tile, d, writer, flush) -> int:
    """Time one (tile, d); returns the timings written."""
    import cupy
    from iosim.gpu.cupy_kernels import Attention
    probe = Attention(config(256, d, 1, False, tile), *(cupy.zeros((1, 256, d), cupy.float16) for _ in range(3)),
                      count=False)
    (plan,), (kernel,) = probe.plan, probe.kernels
    cuda_k, ours = occupancy(kernel, plan.block, plan.smem_bytes)
    k = cuda_k or ours
    cfg_key = (tile[0], tile[1], tile[0] // 16, 1)
    common = [plan.smem_bytes, kernel.num_regs, kernel.local_size_bytes, cuda_k, ours]
    written = 0
    for kind, causal, n, bh, waves in launches(cfg_key, k):
        row = [*cfg_key, d, "float16", causal, kind, n, bh, waves, bh * (n // tile[0])]
        try:
            rng = cupy.random.default_rng(2)
            q, kk, v = (rng.standard_normal((bh, n, d), dtype=cupy.float32).astype(cupy.float16) for _ in range(3))
            att = Attention(config(n, d, bh, causal, tile), q, kk, v, count=False)
            med, low, runs = time_config(att.launch, flush, _Shim, min_runs=5, max_runs=20, target_s=0.05)
            writer.writerow(row + [f"{med:.9f}", f"{low:.9f}", runs, *common, ""])
            written += 1
        except Exception as exc:  # noqa: BLE001 - record and go on
            writer.writerow(row + ["", "", 0, *common, _error(exc)])
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=300.0, help="seconds for the timings")
    ap.add_argument("--jobs", type=int, default=min(14, os.cpu_count() or 1))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import cupy
    from iosim.gpu.cupy_kernels import warm_configs
    props = cupy.cuda.runtime.getDeviceProperties(0)
    machine = {"gpu": props["name"].decode(), "sm_count": props["multiProcessorCount"], "cupy": cupy.__version__,
               "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(), "driver": _driver(),
               "date": time.strftime("%Y-%m-%d %H:%M:%S"), "lengths": [N1, N2], "kernel": "fa2_mma (impl mma, fp16)",
               "key": "B_r, B_c, warps (B_r/16), stages (1), d",
               "timing": "CUDA events, 2 warm-ups, median of >= 5 runs (up to 20 or 0.05 s), 256 MiB L2 flush each"}
    with open(os.path.join(args.out, "machine.json"), "w") as f:
        json.dump(machine, f, indent=2)
    t0 = time.perf_counter()
    warm_configs([config(256, d, 1, False, t) for t in TILES for d in (64, 128)], counts=(False,), workers=args.jobs)
    print(f"compiled in {time.perf_counter() - t0:.0f} s", flush=True)
    flush, deadline, done = _Flush(), time.perf_counter() + args.budget_s, 0
    with open(os.path.join(args.out, "steps.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(FIELDS)
        for tile in sorted(TILES, key=lambda t: -t[0] * t[1]):       # large tiles first: small ones are slowest
            for d in (64, 128):
                if time.perf_counter() > deadline:
                    print(f"time budget: {tile} d={d} and after not measured", flush=True)
                    break
                done += measure(tile, d, writer, flush)
                f.flush()
        print(f"done: {done} timings in {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

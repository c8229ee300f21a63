"""The tensor cores' sustained wgmma rate on a Hopper GPU, measured through cuBLAS: large fp16
and bf16 matrix products (``torch.matmul``), timed with CUDA events (device machine only).

cuBLAS's Hopper GEMMs issue ``wgmma`` from warp-specialised kernels that keep the tensor cores
fed; a large square product is the closest a library kernel comes to the instruction's own
sustained rate (benchmarks/microbench_rates.py measures ``mma.sync`` the same way, with a
kernel of its own). Prints JSON: per dtype and shape the best and median TFLOP/s of
``--repeats`` runs after warm-up, and the GPU's clocks as nvidia-smi reports them.

    PYTHONPATH=$PWD python3 benchmarks/gemm_rate.py [--repeats 30] > rates.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess

SHAPES = [(8192, 8192, 8192), (16384, 16384, 4096), (4096, 4096, 16384)]


def main() -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda, "runs": []}
    for dtype in (torch.float16, torch.bfloat16):
        for m, n, k in SHAPES:
            a = torch.randn(m, k, device="cuda", dtype=dtype)
            b = torch.randn(k, n, device="cuda", dtype=dtype)
            for _ in range(5):
                torch.matmul(a, b)
            torch.cuda.synchronize()
            rates = []
            for _ in range(args.repeats):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                torch.matmul(a, b)
                end.record()
                torch.cuda.synchronize()
                rates.append(2 * m * n * k / (start.elapsed_time(end) * 1e-3) / 1e12)
            out["runs"].append({"dtype": str(dtype).split(".")[-1], "m": m, "n": n, "k": k,
                                "best_tflops": max(rates), "median_tflops": statistics.median(rates)})
            del a, b
    out["clocks"] = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,power.draw,power.limit",
                                    "--format=csv"], capture_output=True, text=True).stdout
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

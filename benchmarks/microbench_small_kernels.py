"""What a small memory-bound kernel costs on the GPU, measured (for the kernel time model of
FlashAttention-2's element-wise kernels: dot_do_o, convert_dq, the split-KV combine).

Run it under Nsight Compute, which gives each launch's duration as the other validation
runs measure it:

    ncu --clock-control none --metrics gpu__time_duration.sum --csv \\
        python3 benchmarks/microbench_small_kernels.py > small.csv
    python3 benchmarks/microbench_small_kernels.py --summary small.csv

Kernels (each launched ``REPEATS`` times; CuPy, 16-byte vector accesses):

* ``empty_kernel`` — nothing: the launch floor;
* ``load_store`` over 2 KiB (one thread block) — one dependent DRAM round trip, then a store:
  the floor of a kernel that reads and writes;
* ``load_load_store`` over 2 KiB — a load whose address comes from a load (two dependent
  round trips), then a store;
* ``load_store`` over 1 GiB (read 1 GiB, write 1 GiB) — the DRAM rate of a kernel that
  reads and writes as much (a copy);
* ``store_only`` over 1 GiB — the DRAM write rate.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import sys

REPEATS = 7
SOURCE = r"""
extern "C" __global__ void empty_kernel() {}
extern "C" __global__ void load_store(const int4* a, int4* b, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}
extern "C" __global__ void load_load_store(const int* idx, const int4* a, int4* b, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[idx[i]];
}
extern "C" __global__ void store_only(int4* b, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) b[i] = make_int4((int)i, 0, 0, 0);
}
"""


def run() -> None:
    import cupy as cp
    module = cp.RawModule(code=SOURCE)
    small = 2048 // 16                               # 2 KiB of int4: one thread block of 128
    big = 2 ** 30 // 16                              # 1 GiB of int4
    a, b = cp.ones((big, 4), dtype=cp.int32), cp.zeros((big, 4), dtype=cp.int32)
    idx = cp.random.RandomState(0).permutation(small).astype(cp.int32) * 4096   # far apart lines
    for _ in range(REPEATS):
        module.get_function("empty_kernel")((1,), (32,), ())
        module.get_function("load_store")((1,), (128,), (a, b, cp.int64(small)))
        module.get_function("load_load_store")((1,), (128,), (idx, a, b, cp.int64(small)))
        module.get_function("load_store")((big // 256,), (256,), (a, b, cp.int64(big)))
        module.get_function("store_only")((big // 256,), (256,), (b, cp.int64(big)))
    cp.cuda.Device().synchronize()


def summary(path: str) -> dict:
    """Median duration per (kernel, grid) from the ncu CSV, and the derived figures."""
    text = open(path).read()
    text = text[text.index('"ID"'):]
    times: dict = {}
    for row in csv.DictReader(io.StringIO(text)):
        if row["Metric Name"] == "gpu__time_duration.sum":
            key = (row["Kernel Name"], row["Grid Size"])
            times.setdefault(key, []).append(float(row["Metric Value"].replace(",", "")) * 1e-9)
    med = {f"{k} {g}": statistics.median(v) for (k, g), v in times.items()}
    big = 2 ** 30
    grid_big = f"({big // 16 // 256}, 1, 1)"
    return {
        "durations_s": med,
        "empty_s": med["empty_kernel (1, 1, 1)"],
        "load_store_s": med["load_store (1, 1, 1)"],
        "load_load_store_s": med["load_load_store (1, 1, 1)"],
        "dram_copy_bytes_per_s": 2 * big / med[f"load_store {grid_big}"],
        "dram_write_bytes_per_s": big / med[f"store_only {grid_big}"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summary", metavar="NCU_CSV", help="summarise an ncu CSV of this script's launches")
    args = ap.parse_args()
    if args.summary:
        json.dump(summary(args.summary), sys.stdout, indent=1)
        print()
    else:
        run()


if __name__ == "__main__":
    main()

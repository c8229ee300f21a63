"""How the L1's tag stage counts 16-byte loads of rows that are not whole sectors (the
flash-attn 2 forward's Q/K/V reads at d = 40, 56, 72; docs/validation/2026-12-01-headdim-probe.md).

Each kernel copies rows of ``d`` fp16 values (row stride ``d``: contiguous, as PyTorch passes a
(B, H, N, d) tensor) the way flash-attn's gmem tiled copy does: 128 threads, ``tpr`` threads a
row (8 for the 64 kernel, 4 for the 96 kernel's 32-column slabs), 16 bytes a thread, the
thread's chunk loaded only if its first column is below ``d``; ``cp.async`` (LDGSTS, as the
kernel) or a plain 16-byte load (LDG). Run under Nsight Compute:

    PYTHONPATH=$PWD python3 benchmarks/sector_probe.py --out DIR      # on the GPU machine

writes DIR/probe.csv (ncu) and DIR/cases.json (kernel launch order).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

SOURCE = r"""
extern "C" __global__ void probe_cp_async(const unsigned short* src, int rows, int d, int tpr, int slabs) {
    __shared__ __align__(16) unsigned short buf[128 * 8 * 4];
    int t = threadIdx.x, per_pass = 128 / tpr;
    for (int s = 0; s < slabs; ++s) {
        int col = s * tpr * 8 + (t % tpr) * 8;
        for (int r = blockIdx.x * per_pass * 4 + t / tpr; r < min(rows, (blockIdx.x + 1) * per_pass * 4); r += per_pass) {
            if (col < d) {
                const unsigned short* g = src + (long long)r * d + col;
                unsigned smem = (unsigned)__cvta_generic_to_shared(buf + 8 * t);
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(smem), "l"(g));
            }
        }
    }
    asm volatile("cp.async.wait_all;\n" ::);
}
extern "C" __global__ void probe_one_row(const unsigned short* src, int d, int offset_elems, int active_row) {
    __shared__ __align__(16) unsigned short buf[128 * 8];
    int t = threadIdx.x;                      // one warp: rows t / 8, chunks t % 8; one row active
    int row = t / 8, col = (t % 8) * 8;
    if (row == active_row && col < d) {
        const unsigned short* g = src + offset_elems + (long long)row * d + col;
        unsigned smem = (unsigned)__cvta_generic_to_shared(buf + 8 * t);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(smem), "l"(g));
    }
    asm volatile("cp.async.wait_all;\n" ::);
}
extern "C" __global__ void probe_ldg(const unsigned short* src, int rows, int d, int tpr, int slabs, int4* sink) {
    int t = threadIdx.x, per_pass = 128 / tpr;
    int4 acc = make_int4(0, 0, 0, 0);
    for (int s = 0; s < slabs; ++s) {
        int col = s * tpr * 8 + (t % tpr) * 8;
        for (int r = blockIdx.x * per_pass * 4 + t / tpr; r < min(rows, (blockIdx.x + 1) * per_pass * 4); r += per_pass) {
            if (col < d) {
                int4 v = *reinterpret_cast<const int4*>(src + (long long)r * d + col);
                acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
            }
        }
    }
    if (acc.x == 12345 && acc.y == 678) sink[0] = acc;
}
"""
#: (d, threads a row, slabs): the 64 kernel at d = 40, 48, 56, 64; the 96 kernel at 72, 80
CASES = [(40, 8, 1), (48, 8, 1), (56, 8, 1), (64, 8, 1), (72, 4, 3), (80, 4, 3)]
ROWS = 1024
METRICS = ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
           "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum", "smsp__sass_data_bytes_mem_global_op_ldgsts.sum",
           "smsp__sass_data_bytes_mem_global_op_ld.sum", "smsp__sass_inst_executed_op_ldgsts.sum",
           "smsp__sass_inst_executed_op_global_ld.sum"]


def target() -> None:
    import cupy as cp
    module = cp.RawModule(code=SOURCE, options=("-std=c++17",))
    sink = cp.zeros((1, 4), dtype=cp.int32)
    for d, tpr, slabs in CASES:
        src = cp.zeros(ROWS * d + 64, dtype=cp.uint16)
        blocks = -(-ROWS // (128 // tpr * 4))
        module.get_function("probe_cp_async")((blocks,), (128,), (src, cp.int32(ROWS), cp.int32(d), cp.int32(tpr),
                                                                   cp.int32(slabs)))
        module.get_function("probe_ldg")((blocks,), (128,), (src, cp.int32(ROWS), cp.int32(d), cp.int32(tpr),
                                                              cp.int32(slabs), sink))
    src = cp.zeros(4096, dtype=cp.uint16)
    for offset in range(0, 128, 16):          # bytes
        for active in range(4):
            module.get_function("probe_one_row")((1,), (32,), (src, cp.int32(40), cp.int32(offset // 2),
                                                               cp.int32(active)))
    cp.cuda.Device().synchronize()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--target", action="store_true")
    args = ap.parse_args()
    if args.target:
        target()
        return 0
    os.makedirs(args.out, exist_ok=True)
    log = os.path.join(args.out, "probe.csv")
    cmd = ["ncu", "--clock-control", "none", "--csv", "--print-units", "base", "--kernel-name", "regex:probe_",
           "--metrics", ",".join(METRICS), "--log-file", log, sys.executable, __file__, "--target"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    print(done.returncode, done.stderr[-1500:])
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump({"cases": CASES, "rows": ROWS, "kernels": ["probe_cp_async", "probe_ldg"],
                   "one_row": {"d": 40, "offsets_bytes": list(range(0, 128, 16)), "active_rows": [0, 1, 2, 3]}}, f)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())

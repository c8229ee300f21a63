"""Does where a buffer's lines lie change how much of it one half of the H200's L2 keeps?
(device machine only)

iosim's L2 model is fully associative: a partition keeps any set of lines up to its
capacity. The clean sweeps keep about 28 MB a side (docs/validation/2026-12-03-l2-shared.md),
yet the kernels' DRAM reads are predicted best with 25 MB (docs/cache.md, "Two
partitions", "Capacity"). A set-associative cache keeps less of a buffer whose lines fall
unevenly on its sets: a contiguous buffer fills the sets evenly, lines placed at random do
not. This reads the same D bytes twice from the blocks of side 0 (16-byte
``ld.global.cg``, a grid-wide barrier between the passes; sides measured first, as in
``l2_shared_ncu.py``), the bytes laid out six ways (``LAYOUTS``): contiguous; in chunks of
16 KiB, 2 KiB or 128 B (one line), chunk c at slot mix(c) of an allocation of 2^k chunks,
2^k ≥ 4 × the chunks (mix: a bijection of k-bit numbers, multiply-xorshift rounds, computed
in the kernel so that no table is read); or in chunks of 256 B at a stride of 16 or 64
chunks, chunk c at slot 16c or 64c (one head's rows of a (B, N, H, d) tensor at d = 128,
fp16, with H = 16 or 64, as PyTorch lays out the flash kernels' Q, K, V and O). ncu reports
the DRAM bytes read: D when the second pass hits.

If the other layouts keep as much as the contiguous buffer, placement does not matter at
these sizes and the model's fully associative partitions stand; if some start to miss at a
smaller D, the kernels' scattered or strided tiles lose part of the L2 to its sets.

Run:  PYTHONPATH=$PWD python3 benchmarks/l2_scatter_ncu.py --out DIR
Its table, from a committed run: python benchmarks/l2_scatter_ncu.py --summary DIR
Writes DIR/l2_scatter.csv (raw ncu CSV, one launch per case, in CASES order), DIR/cases.json
and DIR/sides.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_shared_ncu import PRELUDE, profile_sided, sided_kernel  # noqa: E402

MB = 10 ** 6
#: (chunk bytes, stride in chunks): (0, 0) contiguous; stride 0: the chunks at slots mix(c)
LAYOUTS = ((0, 0), (16384, 0), (2048, 0), (128, 0), (256, 16), (256, 64))
SIZES_MB = (12, 16, 20, 22, 24, 26, 28, 30, 32, 36)
CASES = [(chunk, stride, d * MB) for chunk, stride in LAYOUTS for d in SIZES_MB]
METRICS = ["dram__bytes_read.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
           "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum", "lts__t_sectors_srcunit_ltcfabric_op_read.sum",
           "lts__t_sectors_srcunit_ltcfabric_op_read_lookup_hit.sum", "gpu__time_duration.sum"]
SOURCE = PRELUDE + r"""
__device__ __forceinline__ unsigned long long mix(unsigned long long x, int k) {
    // a bijection of k-bit numbers: odd multipliers and right xorshifts, each invertible mod 2^k
    unsigned long long mask = (1ull << k) - 1;
    x = (x * 0x9E3779B97F4A7C15ull) & mask;
    x ^= x >> (k / 2 + 1);
    x = (x * 0xBF58476D1CE4E5B9ull) & mask;
    x ^= x >> (k / 3 + 1);
    x = (x * 0x94D049BB133111EBull) & mask;
    return x ^ (x >> (k / 2));
}

extern "C" __global__ void scatter_sweep(const int4* __restrict__ buf, unsigned long long n_vec, int k,
                                         unsigned long long chunk_vec, unsigned long long stride,
                                         const int* __restrict__ side_of_sm, unsigned* counters,
                                         int4* __restrict__ sink) {
    // counters: [0] barrier arrivals, [1], [2] blocks on side 0 and 1; chunk_vec == 0: contiguous;
    // stride == 0: chunk c at slot mix(c, k), else at slot stride * c
    __shared__ unsigned rank, count0;
    int side = side_of_sm[smid()];
    if (threadIdx.x == 0) rank = atomicAdd(counters + 1 + side, 1u);
    unsigned nb = gridDim.x;
    grid_barrier(counters, nb);
    if (threadIdx.x == 0) count0 = atomicAdd(counters + 1, 0u);
    __syncthreads();
    int acc = 0;
    for (int p = 0; p < 2; ++p) {
        if (side == 0) {
            unsigned long long step = (unsigned long long)count0 * blockDim.x;
            for (unsigned long long i = (unsigned long long)rank * blockDim.x + threadIdx.x; i < n_vec; i += step) {
                unsigned long long c = chunk_vec ? i / chunk_vec : 0;
                unsigned long long at = !chunk_vec ? i : (stride ? stride * c : mix(c, k)) * chunk_vec + i % chunk_vec;
                int4 v = __ldcg(buf + at);
                acc ^= v.x ^ v.y ^ v.z ^ v.w;
            }
        }
        grid_barrier(counters, nb * (p + 2));
    }
    if (acc == 0x7fffffff) sink[0] = make_int4(acc, 0, 0, 0);
}
"""


def run_target() -> None:
    import cupy as cp
    import numpy as np

    kernel, sms, side_dev, sink = sided_kernel(SOURCE, "scatter_sweep")
    for chunk, stride, size in CASES:
        k = int(np.ceil(np.log2(4 * size / chunk))) if chunk and not stride else 0
        allocated = size * stride if stride else (chunk << k) if chunk else size
        buf = cp.zeros(allocated // 4, dtype=cp.int32)
        counters = cp.zeros(3, dtype=cp.uint32)
        kernel((sms * 2,), (256,), (buf, cp.uint64(size // 16), cp.int32(k), cp.uint64(chunk // 16),
                                    cp.uint64(stride), side_dev, counters, sink))
        cp.cuda.Device().synchronize()
        del buf


def main() -> None:
    profile_sided(__file__, __doc__, run_target, "scatter_sweep", METRICS, "l2_scatter.csv",
                  [{"chunk_bytes": c, "stride_chunks": t, "bytes": s} for c, t, s in CASES])


if __name__ == "__main__":
    main()

"""Where the H200's L2 holds a line written by one half of the chip (device machine only).

iosim's two-partition model (docs/cache.md, "Two partitions") does a write at the line's
home partition only. Held also near its writer, a written line would take room from that
half's reads. This tells the two apart: the blocks on side 0 read a buffer X of D bytes,
then the blocks of side ``writer`` write a buffer Y of W bytes (16-byte stores, each line
whole, once), then side 0 reads X again in the same order (16-byte ``ld.global.cg``; a
grid-wide barrier between the three phases; sides measured first, as in
``l2_shared_ncu.py``). ncu reports the DRAM bytes read: D when X's re-read hits.

Side 0's partition holds X (D) and the lines of Y homed on it (about W/2) when writes are
done at home, whoever wrote them; with writes held near the writer too, it holds all of Y
when side 0 wrote it. So if X's re-read starts to miss at the same W for both writers,
writes live at home only; if it misses at a smaller W when side 0 writes, they are held
near the writer as well.

Run:  PYTHONPATH=$PWD python3 benchmarks/l2_write_near_ncu.py --out DIR
Its table, from a committed run: python benchmarks/l2_write_near_ncu.py --summary DIR
Writes DIR/l2_write_near.csv (raw ncu CSV, one launch per case, in CASES order),
DIR/cases.json and DIR/sides.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_shared_ncu import PRELUDE, profile_sided, sided_kernel  # noqa: E402

MB = 10 ** 6
#: (read buffer D, written buffer W, the side that writes)
CASES = [(d * MB, w * MB, writer) for d in (12, 20) for writer in (0, 1)
         for w in (0, 4, 8, 12, 16, 20, 24, 28, 32, 40)]
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
           "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum", "lts__t_sectors_srcunit_ltcfabric_op_read.sum",
           "lts__t_sectors_srcunit_ltcfabric_op_read_lookup_hit.sum", "gpu__time_duration.sum"]
SOURCE = PRELUDE + r"""
__device__ int read_side0(const int4* __restrict__ x, unsigned long long n, unsigned rank, unsigned readers) {
    int acc = 0;
    unsigned long long stride = (unsigned long long)readers * blockDim.x;
    for (unsigned long long i = (unsigned long long)rank * blockDim.x + threadIdx.x; i < n; i += stride) {
        int4 v = __ldcg(x + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    return acc;
}

extern "C" __global__ void write_near(const int4* __restrict__ x, unsigned long long n_x, int4* __restrict__ y,
                                      unsigned long long n_y, const int* __restrict__ side_of_sm, int writer,
                                      unsigned* counters, int4* __restrict__ sink) {
    // counters: [0] barrier arrivals, [1], [2] blocks on side 0 and 1
    __shared__ unsigned rank, count[2];
    int side = side_of_sm[smid()];
    if (threadIdx.x == 0) rank = atomicAdd(counters + 1 + side, 1u);
    unsigned nb = gridDim.x;
    grid_barrier(counters, nb);
    if (threadIdx.x == 0) { count[0] = atomicAdd(counters + 1, 0u); count[1] = atomicAdd(counters + 2, 0u); }
    __syncthreads();
    int acc = 0;
    if (side == 0) acc ^= read_side0(x, n_x, rank, count[0]);
    grid_barrier(counters, 2 * nb);
    if (side == writer) {
        unsigned long long stride = (unsigned long long)count[side] * blockDim.x;
        for (unsigned long long i = (unsigned long long)rank * blockDim.x + threadIdx.x; i < n_y; i += stride)
            y[i] = make_int4((int)i, 1, 2, 3);
    }
    grid_barrier(counters, 3 * nb);
    if (side == 0) acc ^= read_side0(x, n_x, rank, count[0]);
    if (acc == 0x7fffffff) sink[0] = make_int4(acc, 0, 0, 0);
}
"""


def run_target() -> None:
    import cupy as cp

    kernel, sms, side_dev, sink = sided_kernel(SOURCE, "write_near")
    for d, w, writer in CASES:
        x = cp.zeros(d // 4, dtype=cp.int32)
        y = cp.zeros(max(w, 16) // 4, dtype=cp.int32)
        counters = cp.zeros(3, dtype=cp.uint32)
        kernel((sms * 2,), (256,), (x, cp.uint64(d // 16), y, cp.uint64(w // 16), side_dev, cp.int32(writer),
                                    counters, sink))
        cp.cuda.Device().synchronize()
        del x, y


def main() -> None:
    profile_sided(__file__, __doc__, run_target, "write_near", METRICS, "l2_write_near.csv",
                  [{"read_bytes": d, "write_bytes": w, "writer": s} for d, w, s in CASES])


if __name__ == "__main__":
    main()

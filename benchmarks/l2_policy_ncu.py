"""Does a hit refresh a line in the H200's L2 (LRU), or is a line evicted in the order it
came in (FIFO)? And does a written line push out read lines as a read one does? (device
machine only)

iosim's L2 model plays each partition as LRU sets (docs/cache.md, "Sets"): a request hits
when the distinct bytes since its key's *last request* fit. Its backward kernels' DRAM
reads come out under the measured ones where a K/V tile is read by several thread blocks in
turn (docs/validation/2026-12-03-s19-check.md), which a cache that does not refresh a line
on a hit would give. This tells the two apart. Side 0's blocks (sides measured first, as
in ``l2_shared_ncu.py``) run phases over three contiguous buffers, a grid-wide barrier
between phases, 16-byte ``ld.global.cg`` reads and 16-byte stores (each line whole):

* ``refresh, B``: read A, read B, read A again (hits), read C, read B again;
* ``refresh, A``: the same, A read last;
* ``plain, B`` and ``plain, A``: read A, read B, read C, then B or A again (no refresh);
* ``write, B`` and ``write, A``: as ``refresh``, with C written instead of read.

A and B are 10 MB; C is 6, 14 or 20 MB, so that A, B and C fit side 0's partition (about
30 MB) or overflow it by 4 or 10 MB. Past the fit, an LRU evicts B before the refreshed A
(``refresh, B`` misses, ``refresh, A`` hits), a FIFO evicts A first (the other way round);
without the refresh both evict A. Only the lines homed on side 0 reach DRAM when missed
(the others are held at their home, on side 1): DRAM bytes read beyond the first reads of
A, B and (read) C are half the missed bytes. ncu flushes the L2 before each launch.

Run:  PYTHONPATH=$PWD python3 benchmarks/l2_policy_ncu.py --out DIR
Its table, from a committed run: python benchmarks/l2_policy_ncu.py --summary DIR
Writes DIR/l2_policy.csv (raw ncu CSV, one launch per case, in CASES order),
DIR/cases.json and DIR/sides.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_shared_ncu import PRELUDE, profile_sided, sided_kernel  # noqa: E402

MB = 10 ** 6
A, B, C = 0, 1, 2
READ, WRITE = 0, 1
#: name -> phases (buffer, op), all by side 0
SEQUENCES = {
    "refresh, B": ((A, READ), (B, READ), (A, READ), (C, READ), (B, READ)),
    "refresh, A": ((A, READ), (B, READ), (A, READ), (C, READ), (A, READ)),
    "plain, B": ((A, READ), (B, READ), (C, READ), (B, READ)),
    "plain, A": ((A, READ), (B, READ), (C, READ), (A, READ)),
    "write, B": ((A, READ), (B, READ), (A, READ), (C, WRITE), (B, READ)),
    "write, A": ((A, READ), (B, READ), (A, READ), (C, WRITE), (A, READ)),
}
AB_BYTES, C_MB = 10 * MB, (6, 14, 20)
CASES = [(name, c * MB) for c in C_MB for name in SEQUENCES]
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
           "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum", "lts__t_sectors_srcunit_ltcfabric_op_read.sum",
           "lts__t_sectors_srcunit_ltcfabric_op_read_lookup_hit.sum", "gpu__time_duration.sum"]
SOURCE = PRELUDE + r"""
extern "C" __global__ void policy(int4* __restrict__ a, int4* __restrict__ b, int4* __restrict__ c,
                                  unsigned long long n_ab, unsigned long long n_c, const int* __restrict__ phases,
                                  int n_phases, const int* __restrict__ side_of_sm, unsigned* counters,
                                  int4* __restrict__ sink) {
    // counters: [0] barrier arrivals, [1], [2] blocks on side 0 and 1; phases: (buffer, op) pairs, an op's
    // bit 2 (4) giving the phase to side 1 (l2_dirty_ncu.py --home), else side 0's
    __shared__ unsigned rank, count[2];
    int side = side_of_sm[smid()];
    if (threadIdx.x == 0) rank = atomicAdd(counters + 1 + side, 1u);
    unsigned nb = gridDim.x, barrier = 0;
    grid_barrier(counters, nb * ++barrier);
    if (threadIdx.x == 0) { count[0] = atomicAdd(counters + 1, 0u); count[1] = atomicAdd(counters + 2, 0u); }
    __syncthreads();
    int acc = 0;
    for (int p = 0; p < n_phases; ++p) {
        int which = phases[2 * p], op = phases[2 * p + 1] & 3, who = phases[2 * p + 1] >> 2;
        int4* buf = which == 0 ? a : which == 1 ? b : c;
        unsigned long long n = which == 2 ? n_c : n_ab, stride = (unsigned long long)count[who] * blockDim.x;
        if (side == who) {
            for (unsigned long long i = (unsigned long long)rank * blockDim.x + threadIdx.x; i < n; i += stride) {
                // ops 2 and 3 (l2_dirty_ncu.py): the i-th 16 bytes of one 128-byte line every 4 KiB
                unsigned long long j = op < 2 ? i : (i >> 3) * 256 + (i & 7);
                if (op % 2 == 0) { int4 v = __ldcg(buf + j); acc ^= v.x ^ v.y ^ v.z ^ v.w; }
                else buf[j] = make_int4((int)i, p, 2, 3);
            }
        }
        grid_barrier(counters, nb * ++barrier);
    }
    if (acc == 0x7fffffff) sink[0] = make_int4(acc, 0, 0, 0);
}
"""


def run_target() -> None:
    import cupy as cp
    import numpy as np

    kernel, sms, side_dev, sink = sided_kernel(SOURCE, "policy")
    for name, c in CASES:
        a, b, cc = (cp.zeros(n // 4, dtype=cp.int32) for n in (AB_BYTES, AB_BYTES, c))
        phases = cp.asarray(np.array(SEQUENCES[name], np.int32).ravel())
        counters = cp.zeros(3, dtype=cp.uint32)
        kernel((sms * 2,), (256,), (a, b, cc, cp.uint64(AB_BYTES // 16), cp.uint64(c // 16), phases,
                                    cp.int32(len(SEQUENCES[name])), side_dev, counters, sink))
        cp.cuda.Device().synchronize()
        del a, b, cc


def main() -> None:
    profile_sided(__file__, __doc__, run_target, "policy", METRICS, "l2_policy.csv",
                  [{"sequence": n, "ab_bytes": AB_BYTES, "c_bytes": c, "phases": SEQUENCES[n]} for n, c in CASES])


if __name__ == "__main__":
    main()

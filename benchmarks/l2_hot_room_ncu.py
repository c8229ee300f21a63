"""Do lines a kernel rewrites all the time (its spilled registers) take room in the H200's L2
from the data it reads twice? (device machine only; the table runs anywhere)

The d = 64 and d = 128 flash forwards store spilled registers on every key-block step, and the
L1 writes each store through to the L2 (docs/validation/2026-12-04-local-memory.md). Those
lines are the most recently used the L2 has, for the whole kernel. If they hold their room,
the room left to K and V is the L2 less the frames of the warps resident.

The kernel: 8 blocks of 256 threads an SM (2,048 threads, all resident at once) read a buffer
of D bytes twice (16-byte ``ld.global.cg``, each thread its own lines, in the same order both
passes), in ``chunks`` chunks a pass. After every chunk each thread rewrites its share of a hot
region (``mode`` 1: a global buffer of H bytes) or every word of its local frame (``mode`` 2:
``words`` 4-byte words a thread, a volatile local array, so H = threads × words × 4). ncu flushes
the L2 before each launch; the DRAM bytes read beyond D are the second pass's misses.

Run:      PYTHONPATH=$PWD python3 benchmarks/l2_hot_room_ncu.py --out DIR
Summary:  python benchmarks/l2_hot_room_ncu.py --summary DIR
Writes DIR/l2_hot_room.csv (raw ncu CSV, one launch per case, in CASES order) and DIR/cases.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_shared_ncu import summary as measured  # noqa: E402
from ncu_self_profile import main_or_summary  # noqa: E402

MB = 10 ** 6
THREADS_PER_SM = 2048
MAX_WORDS = 64
#: (D bytes read twice, mode (0 none, 1 global hot region, 2 local frames), H bytes or words a thread)
CASES = [(d * MB, mode, size) for d in (16, 20, 24, 28, 32, 36, 40)
         for mode, size in ((0, 0), (1, 8 * MB), (1, 16 * MB), (2, 8), (2, 16), (2, 32))]
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
           "lts__t_sectors_srcunit_tex_op_write.sum", "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
           "smsp__sass_inst_executed_op_local_st.sum", "gpu__time_duration.sum"]
SOURCE = r"""
#define MAX_WORDS %d
extern "C" __global__ void __launch_bounds__(256, 8)
hot_room(const int4* __restrict__ src, unsigned long long n_src, int4* __restrict__ hot, unsigned long long n_hot,
         int mode, int words, int chunks, int* __restrict__ sink) {
    unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long mine = (n_src + stride - 1) / stride, per = (mine + chunks - 1) / chunks;
    volatile int frame[MAX_WORDS];
    int acc = 0;
    for (int pass = 0; pass < 2; ++pass)
        for (int c = 0; c < chunks; ++c) {
            unsigned long long k1 = min(mine, (c + 1) * per);
            for (unsigned long long k = c * per; k < k1; ++k) {
                unsigned long long i = tid + k * stride;
                if (i < n_src) { int4 v = __ldcg(src + i); acc ^= v.x ^ v.w; }
            }
            if (mode == 1)
                for (unsigned long long i = tid; i < n_hot; i += stride) hot[i] = make_int4(c, pass, (int)i, acc);
            else if (mode == 2)
                for (int w = 0; w < words; ++w) frame[w] = acc + w + c;
        }
    if (mode == 2) for (int w = 0; w < words; ++w) acc ^= frame[w];
    if (acc == 0x5eed1234) sink[0] = acc;
}
""" % MAX_WORDS


def hot_bytes(mode: int, size: int, sms: int) -> int:
    """The bytes rewritten all through the kernel: the hot region, or every resident thread's frame."""
    return size if mode == 1 else size * 4 * THREADS_PER_SM * sms if mode == 2 else 0


def run_target() -> None:
    import cupy as cp

    kernel = cp.RawKernel(SOURCE, "hot_room")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    sink = cp.zeros(1, dtype=cp.int32)
    src = cp.ones(max(d for d, _, _ in CASES) // 4, dtype=cp.int32)
    hot = cp.zeros(16 * MB // 4, dtype=cp.int32)
    for d, mode, size in CASES:
        n_hot = size // 16 if mode == 1 else 0
        kernel((sms * 8,), (256,), (src, cp.uint64(d // 16), hot, cp.uint64(n_hot), cp.int32(mode),
                                    cp.int32(size if mode == 2 else 0), cp.int32(64), sink))
        cp.cuda.Device().synchronize()


def summary(raw_dir: str) -> str:
    lines = ["| D (MB) | hot | H (MB) | DRAM read (MB) | beyond D (MB) | L2 writes (MB) | local store instructions (M, warps) |",
             "|---:|---|---:|---:|---:|---:|---:|"]
    for case, got in measured(raw_dir, "l2_hot_room.csv"):
        h = hot_bytes(case["mode"], case["size"], case.get("sms", 132))
        read = got["dram__bytes_read.sum"]
        lines.append(f"| {case['d'] / MB:g} | {('none', 'global', 'local')[case['mode']]} | {h / MB:.1f} "
                     f"| {read:.1f} | {read - case['d'] / MB:.1f} "
                     f"| {got.get('lts__t_sectors_srcunit_tex_op_write.sum', 0):.1f} "
                     f"| {got.get('smsp__sass_inst_executed_op_local_st.sum', 0):.2f} |")
    return "\n".join(lines)


def main() -> None:
    main_or_summary(summary, __file__, __doc__, run_target, "regex:hot_room", METRICS, "l2_hot_room.csv",
                    "cases.json", {"cases": [{"d": d, "mode": m, "size": s} for d, m, s in CASES],
                                   "grid": "8 x SMs", "block": 256, "chunks": 64})


if __name__ == "__main__":
    main()

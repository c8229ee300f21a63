"""Does the L2 prefer to evict clean lines, or dirty ones, over the least recently used? (device machine only,
the table runs anywhere)

iosim plays each L2 partition as LRU sets in which a written line takes the room a read one does
(docs/validation/2026-12-03-l2-policy.md). That run could not tell an LRU from a cache that evicts clean lines
first (keeping dirty ones, whose eviction costs a write to DRAM) or dirty ones first: in each of its sequences
the least recently used line was also the one either preference would pick. The GQA decodes' backwards re-read
their K and V (clean) while dK and dV stream out (dirty), and the model keeps more of the K and V than the GPU
does (docs/cache.md, "Sets"): a cache that evicts clean lines first would do that.

Here the blocks on side 0 (the SMs near one L2 partition) run phases over three contiguous buffers, a grid-wide
barrier between phases (the kernel of ``l2_policy_ncu.py``): A and B are a third of side 0's room each, and C
(written or read) comes before A, or between A and B, then A is read again:

* ``C written first`` / ``C read first``: C, A, B, A;
* ``C written between`` / ``C read between``: A, C, B, A.

C is a sixth of the room (everything fits), or a third plus 2/15 (the room overflows by 2/15 of it, 4 MB on
the H200) or two thirds (it overflows by a third, A's size). Past the room an LRU loses the oldest lines: C's
when C came first (A kept), A's when C came between. A cache that evicts clean lines first loses A's in both
when C is written; one that evicts dirty lines first loses C's in both. Only the lines of A homed on side 0
reach DRAM when missed (the others are held at their home on side 1): the DRAM bytes read beyond the first
reads of A, B and a read C are half of A's lost bytes (with ``--twice``, of the lost bytes of the buffer read
last, A or B). ncu flushes the L2 before each launch.

Run:      PYTHONPATH=$PWD python3 benchmarks/l2_dirty_ncu.py --out DIR [--strided | --twice | --home]
          (``--strided``: C's lines one every 4 KiB, written or read, beside the contiguous written C: STRIDED;
          ``--twice``: does a line hit once outlive newer lines never hit? TWICE;
          ``--home``: is a dirty copy leaving the writer's partition written into its home there? HOME)
Summary:  python benchmarks/l2_dirty_ncu.py --summary DIR    (every counter, per case)
Table:    python benchmarks/l2_dirty_ncu.py --table DIR      (DRAM read beyond the first reads / DRAM written, MB)
Writes DIR/l2_dirty.csv (raw ncu CSV, one launch per case, in cases.json's order), DIR/cases.json and
DIR/sides.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_policy_ncu import A, B, C, METRICS, READ, SOURCE, WRITE  # noqa: E402
from l2_shared_ncu import profile_sided, sided_kernel  # noqa: E402

STRIDED_READ, STRIDED_WRITE = 2, 3   # one line every 4 KiB (the kernel's ops 2 and 3)
STRIDE = 4096

MB = 10 ** 6
#: name -> phases (buffer, op), all by side 0
SEQUENCES = {
    "C written first": ((C, WRITE), (A, READ), (B, READ), (A, READ)),
    "C read first": ((C, READ), (A, READ), (B, READ), (A, READ)),
    "C written between": ((A, READ), (C, WRITE), (B, READ), (A, READ)),
    "C read between": ((A, READ), (C, READ), (B, READ), (A, READ)),
}
#: ``--strided``: C's lines one every 4 KiB (a GQA decode backward's dK and dV rows of one head at d = 64 over 32
#: heads), written or read, against the contiguous sequences above: do lines written at such a stride take more
#: room than lines read at it?
STRIDED = {
    "C written between, strided": ((A, READ), (C, STRIDED_WRITE), (B, READ), (A, READ)),
    "C read between, strided": ((A, READ), (C, STRIDED_READ), (B, READ), (A, READ)),
    "C written between": SEQUENCES["C written between"],
}
#: ``--twice``: A read twice over (its second read all hits) before B and C: an LRU still loses A first past the
#: room (its last use is the oldest); a cache that protects lines hit once (as re-reference-interval policies do)
#: keeps A and loses B. "A once" is the control, lost by either.
TWICE = {
    "A twice, A last": ((A, READ), (A, READ), (B, READ), (C, READ), (A, READ)),
    "A twice, B last": ((A, READ), (A, READ), (B, READ), (C, READ), (B, READ)),
    "A once, A last": ((A, READ), (B, READ), (C, READ), (A, READ)),
}
#: ``--home`` (session 55): B written (or read) by side 1, A read by side 0, C read by side 1, A again. B's lines
#: homed on side 0 are held there and near side 1 (a dirty copy where written). C pushes them out of side 1's
#: partition, and half of C fills side 0's, at its home, past the room. If a dirty copy leaving side 1 is written
#: into its home, refreshing it there, side 0's partition then loses A's lines before B's: A's last read misses
#: where B was written and hits where it was read. If it goes to DRAM, or the copy was clean, both hit alike.
SIDE1 = 4
HOME = {
    "B written by side 1": ((B, WRITE | SIDE1), (A, READ), (C, READ | SIDE1), (A, READ)),
    "B read by side 1": ((B, READ | SIDE1), (A, READ), (C, READ | SIDE1), (A, READ)),
}
VARIANTS = {"--strided": STRIDED, "--twice": TWICE, "--home": HOME}
#: C's size in rooms: fits, overflows by 2/15, overflows by a third (A and B are a third each)
C_ROOMS = (1 / 6, 1 / 3 + 2 / 15, 2 / 3)
#: ``--home``'s: side 0's partition, A and half of B and of C, past the room by 1/6 and by 1/3 of it
HOME_C_ROOMS = (4 / 3, 5 / 3)


def room(l2_bytes: int) -> int:
    """Side 0's room, bytes: 95 % of half the L2, where a contiguous buffer read twice starts to miss
    (a little under 30 MB on the H200, 24-26 MB on the H100), in whole MiB."""
    return int(0.95 * l2_bytes / 2) // 2 ** 20 * 2 ** 20


def cases(l2_bytes: int, sequences: dict = SEQUENCES) -> list[dict]:
    """The launches, in order: each sequence at each size of C (its lines' bytes; a strided C spans 32 times
    as much memory)."""
    r = room(l2_bytes)
    ab = r // 3 // 4096 * 4096
    return [{"sequence": name, "ab_bytes": ab, "c_bytes": int(r * f) // 4096 * 4096, "room_bytes": r,
             "phases": phases} for f in (HOME_C_ROOMS if sequences is HOME else C_ROOMS)
            for name, phases in sequences.items()]


def _l2_bytes() -> int:
    import cupy as cp
    return cp.cuda.Device().attributes["L2CacheSize"]


def run_target() -> None:
    import cupy as cp
    import numpy as np

    kernel, sms, side_dev, sink = sided_kernel(SOURCE, "policy")
    for case in cases(_l2_bytes(), _sequences()):
        ab, c = case["ab_bytes"], case["c_bytes"]
        span = c * STRIDE // 128 if any(op & 3 >= STRIDED_READ for _, op in case["phases"]) else c
        a, b, cc = (cp.zeros(n // 4, dtype=cp.int32) for n in (ab, ab, span))
        phases = cp.asarray(np.array(case["phases"], np.int32).ravel())
        counters = cp.zeros(3, dtype=cp.uint32)
        kernel((sms * 2,), (256,), (a, b, cc, cp.uint64(ab // 16), cp.uint64(c // 16), phases,
                                    cp.int32(len(case["phases"])), side_dev, counters, sink))
        cp.cuda.Device().synchronize()
        del a, b, cc


def table(raw_dir: str) -> list[dict]:
    """Per case (MB): C's size, the DRAM bytes read beyond the first reads of A, B and a read C, and the DRAM
    bytes written."""
    from l2_shared_ncu import summary

    out = []
    for case, got in summary(raw_dir, "l2_dirty.csv"):
        first = _first_reads(case) / MB
        out.append({"sequence": case["sequence"], "c_mb": case["c_bytes"] / MB,
                    "dram_beyond": got["dram__bytes_read.sum"] - first, "dram_written": got["dram__bytes_write.sum"]})
    return out


def _first_reads(case: dict) -> int:
    """The bytes of the buffers whose first phase reads them (read from DRAM once whatever the cache does)."""
    seen, total = set(), 0
    for buf, op in case["phases"]:
        if buf not in seen and op & 3 in (READ, STRIDED_READ):
            total += case["c_bytes"] if buf == C else case["ab_bytes"]
        seen.add(buf)
    return total


def markdown(raw_dir: str) -> str:
    from l2_shared_ncu import sequence_table
    found = table(raw_dir)
    return sequence_table([{**r, "c_mb": round(r["c_mb"], 1)} for r in found],
                          list(dict.fromkeys(r["sequence"] for r in found)), "dram_beyond", "dram_written")


def _sequences() -> dict:
    """The sequences this run plays: STRIDED with ``--strided``, TWICE with ``--twice`` (in the environment of
    ncu's target too)."""
    given = [f for f in VARIANTS if f in sys.argv]
    if len(given) > 1:
        print(f"l2_dirty_ncu.py: error: {' and '.join(given)} are two runs: give one", file=sys.stderr)
        sys.exit(2)
    flag = (given or [None])[0] or os.environ.get("IOSIM_L2_DIRTY_VARIANT")
    if flag:
        os.environ["IOSIM_L2_DIRTY_VARIANT"] = flag
    return VARIANTS.get(flag, SEQUENCES)


def main() -> None:
    if "--table" in sys.argv:
        print(markdown(sys.argv[sys.argv.index("--table") + 1]))
        return
    sequences = _sequences()
    sys.argv = [a for a in sys.argv if a not in VARIANTS]
    profile_sided(__file__, __doc__, run_target, "policy", METRICS, "l2_dirty.csv",
                  cases(_l2_bytes(), sequences) if "--summary" not in sys.argv else [])


if __name__ == "__main__":
    main()

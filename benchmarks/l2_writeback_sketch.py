"""Would a far-homed write's dirty near copy, written into its home as it leaves the writer's partition, explain
DRAM reads the model misses? A sketch, outside the model (docs/validation/2026-12-07-s55.md).

Measured on an H100 (``benchmarks/l2_dirty_ncu.py --home``): a line written from the half of the chip that is
not its home is held near its writer, dirty, and when that copy leaves the writer's partition it is written
into its home as the home's newest line. The model holds the near copy clean and lets it go without a trace.
Here each such write gets a second request at its home, a write done there, where the writer's side has
requested the partition's size (half the L2) since. That is a bound on when the copy leaves (requests, not
distinct bytes), and the copy is taken to stay while its side requests the chunk again before then. The
second request counts no bytes written:

    python benchmarks/l2_writeback_sketch.py docs/validation/2026-12-07-s53-check/decode/rows-h100.json \
        --hw h100-sxm --gqa-decode [--kernels dq_dk_dv]
"""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_frames_sketch import arguments, compare, selected  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from iosim.models.cache import partitions, stack  # noqa: E402


def leaving(keys, sizes, writes, sides, homes, half: int) -> tuple[np.ndarray, np.ndarray]:
    """(the far-homed writes whose near copy leaves, the request each leaves before): the first request by
    which the writer's side has requested ``half`` bytes more, where its side does not request the chunk
    again first."""
    n = len(keys)
    far = np.flatnonzero((writes == 1) & (sides != homes))
    by_side = keys * 2 + sides                                  # a chunk's requests from one side
    _, _, nxt = stack.links(by_side, np.argsort(by_side, kind="stable"))
    nxt = np.where(nxt < 0, n, nxt)
    out_i, out_e = [], []
    for q in (0, 1):
        cum = np.cumsum(np.where(sides == q, sizes, 0))
        f = far[sides[far] == q]
        e = np.searchsorted(cum, cum[f] + half, side="right")
        ok = (e < n) & (nxt[f] > e)
        out_i.append(f[ok])
        out_e.append(e[ok])
    return np.concatenate(out_i), np.concatenate(out_e)


@contextlib.contextmanager
def written_back():
    """The model with each leaving copy's second write at its home (:func:`leaving`)."""
    shipped = partitions.play

    def play(keys, sizes, writes, sides, capacity, cuts=(), groups=None, homes=None, ways=None, salts=None,
             rule="home"):
        keys, sizes, writes, sides = (np.asarray(a, np.int64) for a in (keys, sizes, writes, sides))
        homes = partitions.home(keys) if homes is None else np.asarray(homes, np.int64)
        i, e = leaving(keys, sizes, writes, sides, homes, capacity // 2)
        if not len(i):
            return shipped(keys, sizes, writes, sides, capacity, cuts, groups, homes, ways, salts, rule)
        n = len(keys)
        at = np.argsort(np.concatenate([2 * np.arange(n) + 1, 2 * e]), kind="stable")
        real = at < n
        pick = np.where(real, at, i[np.clip(at - n, 0, len(i) - 1)])
        new_sides = np.where(real, sides[pick], homes[pick])
        new_cuts = [int(c) + int(np.count_nonzero(e < int(c))) for c in cuts]
        got = shipped(keys[pick], sizes[pick], writes[pick], new_sides, capacity, new_cuts,
                      None if groups is None else np.asarray(groups)[pick], homes[pick], ways,
                      None if salts is None else np.asarray(salts)[pick], rule)
        extra = np.concatenate([[0], np.cumsum(np.where(real, 0, sizes[pick]))])
        for stats, c in zip([*got.marks, got.stats], [*new_cuts, len(pick)]):
            stats.write_bytes -= int(extra[c])
        if got.hits is not None:
            got.hits = got.hits[real]
        before = np.concatenate([[0], np.cumsum(real)])             # a new position -> the stream's
        token = np.where(real, before[:-1], pick)                    # a second write's stay is its write's
        for part in got.parts or []:
            if part.stays is not None:
                part.stays = {**part.stays, "token": token[part.stays["token"]], "pos": before[part.stays["pos"]]}
        return got

    partitions.play = play
    try:
        yield
    finally:
        partitions.play = shipped


def main() -> None:
    a = arguments(__doc__).parse_args()
    print(compare(selected(a.rows, tuple(a.kernels.split(",")), a.max_kv_mb, a.gqa_decode), a.hw,
                  [("written back", written_back)]))


if __name__ == "__main__":
    main()

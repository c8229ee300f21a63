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

``--leave partition`` (session 56, docs/validation/2026-12-07-s56-check.md): the copy's leave from its own
partition's stream instead, as the shipped model played it (its side's requests, the other side's lookups homed
there and the copies it holds): where the bytes of the misses after the copy's last request there pass the room
left beside it (a bound from the other side: an LRU loses a line no sooner), the copy carried on through its
side's re-reads. ``--changed FILE``: only the rows whose DRAM reads a line of FILE (s55's all-rows output,
``docs/validation/2026-12-07-s55/writeback-all-h200.txt``) shows moved by more than half a point, one line each.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_frames_sketch import FIELDS, arguments, compare, dram, launch_fields, selected  # noqa: E402

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


def leaving_in(q: int, seen, hit, keys, sizes, writes, issued, homes, half: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`leaving` from partition ``q``'s own stream (``seen``: the stream's requests it played, ``hit``: each
    one's hit there): a far-homed write from side ``q`` leaves before the first request by which the bytes of the
    partition's misses since its copy's last request there pass ``half`` less the copy's size; a read of the chunk
    there before then carries the copy on from that read, a write of it starts a copy of its own."""
    ls, m = sizes[seen], len(seen)
    own = (writes[seen] == 1) & (issued[seen] == q) & (homes[seen] != q)
    _, _, nxt = stack.links(keys[seen], np.argsort(keys[seen], kind="stable"))
    nxt = np.where(nxt < 0, m, nxt)
    cum = np.concatenate([[0], np.cumsum(np.where(hit, 0, ls))])       # bytes of the misses before each request
    last = token = np.flatnonzero(own)
    out_i, out_e = [], []
    while len(last):
        e = np.maximum(np.searchsorted(cum, cum[last + 1] + half - ls[last], side="right") - 1, last + 1)
        nx = nxt[last]
        leaves = (nx > e) & (e < m)
        out_i.append(seen[token[leaves]])
        out_e.append(seen[e[leaves]])
        on = (nx <= e) & (nx < m)
        on[on] = ~own[nx[on]]
        last, token = nx[on], token[on]
    return (np.concatenate(out_i), np.concatenate(out_e)) if out_i else (np.zeros(0, np.int64),) * 2


def _second_writes(shipped, i, e, keys, sizes, writes, sides, homes, capacity, cuts, groups, ways, salts, rule):
    """The stream played by ``shipped`` with a write of request ``i``'s chunk at its home before each request
    ``e``, mapped back to the stream's requests (the second writes count no bytes)."""
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


def _partition_leaves(shipped, keys, sizes, writes, sides, homes, capacity, cuts, groups, ways, salts, rule):
    """(:func:`leaving_in` of both partitions as ``shipped`` plays the stream: each one's last turn)."""
    last, own = {}, partitions._partition

    def part(p, *args, **kw):
        got = own(p, *args, **kw)
        if got is not None:
            last[p] = (got[2], got[0].hits)
        return got
    partitions._partition = part
    try:
        shipped(keys, sizes, writes, sides, capacity, cuts, groups, homes, ways, salts, rule)
    finally:
        partitions._partition = own
    found = [leaving_in(q, *last[q], keys, sizes, writes, sides, homes, capacity // 2) for q in sorted(last)]
    return tuple(np.concatenate(f) for f in zip(*found)) if found else (np.zeros(0, np.int64),) * 2


@contextlib.contextmanager
def written_back(leave: str = "side"):
    """The model with each leaving copy's second write at its home: ``leave`` "side", where :func:`leaving` has
    it; "partition", where :func:`leaving_in` has it."""
    shipped = partitions.play

    def play(keys, sizes, writes, sides, capacity, cuts=(), groups=None, homes=None, ways=None, salts=None,
             rule="home"):
        keys, sizes, writes, sides = (np.asarray(a, np.int64) for a in (keys, sizes, writes, sides))
        homes = partitions.home(keys) if homes is None else np.asarray(homes, np.int64)
        args = (keys, sizes, writes, sides, homes, capacity, cuts, groups, ways, salts, rule)
        i, e = (leaving(keys, sizes, writes, sides, homes, capacity // 2) if leave == "side"
                else _partition_leaves(shipped, *args))
        if not len(i):
            return shipped(keys, sizes, writes, sides, capacity, cuts, groups, homes, ways, salts, rule)
        return _second_writes(shipped, i, e, keys, sizes, writes, sides, homes, capacity, cuts, groups, ways,
                              salts, rule)

    partitions.play = play
    try:
        yield
    finally:
        partitions.play = shipped


def _key(r: dict) -> tuple:
    """A row's line key in ``--changed``'s file: its kernel, then :func:`launch_fields`' values."""
    return (r["kernel"], *(str(v) for v in launch_fields(r).values()))


def changed_rows(rows: list, path: str, hw: str) -> None:
    """Print, row by row, the DRAM reads over the measured of each row whose line in ``path`` moved by more than
    half a point: shipped, s55's (its file) and this run's."""
    moved = {}
    with open(path) as f:
        for line in f:
            cells = line.split()
            if line.startswith("#") or not cells:
                continue
            v = dict(c.split("=", 1) for c in cells[1:] if "=" in c)
            if abs(float(v["now"]) - float(v["wb"])) > 0.005:
                moved[(cells[0], *(v[k] for k in FIELDS))] = v["wb"]
    for r in rows:
        if _key(r) in moved:
            m = r["measured"]["dram_read"]
            print(" ".join(_key(r)), f"now={r['predicted']['dram_read'] / m:.3f} s55={moved.pop(_key(r))}", end=" ")
            print(f"wb={dram(r, hw) / m:.3f}", flush=True)


def main() -> None:
    ap = arguments(__doc__)
    ap.add_argument("--leave", choices=("side", "partition"), default="side")
    ap.add_argument("--changed", help="s55's all-rows output: only the rows it shows moved, one line each")
    a = ap.parse_args()
    rows = selected(a.rows, tuple(a.kernels.split(",")), a.max_kv_mb, a.gqa_decode)
    if a.changed:
        with written_back(a.leave):
            changed_rows(rows, a.changed, a.hw)
        return
    print(compare(rows, a.hw, [("written back", functools.partial(written_back, a.leave))]))


if __name__ == "__main__":
    main()

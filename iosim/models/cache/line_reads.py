"""Lines read by many heads: what the DRAM sends for a line that holds rows of several heads.

flash-attn 2's backward reads O and dO as PyTorch hands them over: ``grad_out.contiguous()``
and ``out.contiguous()`` of the (B, N_q, H, d) views it passes on (aten's
``_flash_attention_backward``), so a query row's neighbours in memory are the same row of query
heads h − 1 and h + 1, which other thread blocks read, B · ⌈N_q / B_r⌉ blocks apart in
launch order. Where a row of R bytes is no whole number of 128-byte lines, :mod:`.lines`
plays the requests of these buffers as the lines they touch, keyed so that neighbouring heads
request the same line. A line's requests are counted here:

* **DRAM reads.** A plain load that misses reads the 64-byte units of the line that its head's rows
  touch (a load that misses reads whole units: docs/validation/2026-12-04-reductions.md), not
  the whole line; a cp.async load with the .L2::128B hint (flash-attn's forward and main
  backward) reads the whole line (``fetch_lines``: docs/validation/2026-12-07-line-fetch.md).
  While the line stays, a later head's read adds the units no earlier read of the stay touched.
  So a unit shared by heads h and h + 1 (a boundary that is no multiple of 64 bytes) is read once
  where the line stayed between the two heads' reads, and twice where it was evicted: what
  dot_do_o reads over O and dO at such head dims, up to 96 bytes a query row over the rows'
  bytes (docs/validation/2026-12-06-torn-units.md).
* **L2 reads.** A request asks for its head's rows' bytes in the line (the count's bytes, as
  everywhere in the model), not the line.

The line itself takes its 128 bytes of the cache while it stays: a head's rows hold every line
they touch.

A key's H rows (a query row's G = H · R bytes) are played from the start of a line; where G is no
multiple of 128 they are not, and the real rows' lines shift from one query row to the next.
Played from a line, the row's last line would never meet the next query row's first, and a
small launch whose L2 holds both would read their shared unit twice. So that line is keyed as the
first line (:func:`wraps`) by every head whose rows reach it (the last head's, and with rows of
less than a line an earlier one's: at d = 40 over 3 heads the second head's too), its unit at the
boundary as the first line's first unit for the query rows whose boundary falls inside a unit, one
of its own for the others (:func:`shared_rows`), any other unit as a third (:func:`units`). Within a
query row, a head's rows are placed as in a row that starts on a line. Rows of fewer than 64 bytes
(d < 32) are not played as lines. Against real addresses, where a row starts anywhere in a line, the
frame is within 13.4 % where every line stays and 21.5 % where none does (d = 40 to 256, 2 to 16 heads:
tests/invariants/test_l2_lines.py).
"""

from __future__ import annotations

import numpy as np

UNIT = 64
LINE = 128


def wraps(line: np.ndarray, g) -> np.ndarray:
    """Per request: whether it reads the last line of a query row of ``g`` bytes that ends inside a line
    (whichever head's rows reach that line), keyed as the row's first line (``g``: one, or one a request)."""
    return (g % LINE != 0) & (line == (g - 1) // LINE) & (line > 0)


def units(line: np.ndarray, start: np.ndarray, end: np.ndarray, wrapped: np.ndarray, g,
          fetch_lines: bool = False) -> np.ndarray:
    """Per request of the bytes [start, end) of ``line``: its 64-byte units as bits of its key's
    line (bit 0 the first, bit 1 the second); where it ``wrapped`` (:func:`wraps`), the unit at the row's end,
    where its rows reach it, as bit 0 (the next query row's first unit, which it shares where the boundary
    falls inside a unit: :func:`shared_rows`) and bit 3 (a unit of its own, where it does not), any other
    unit of the last line as bit 2. ``fetch_lines``: a miss fetches the whole line, so a plain request has
    both units and a wrapped one all of the last line's units and the next query row's units in it (bit 0
    for every row, bit 1 where they pass a unit)."""
    half = line * LINE + UNIT
    plain = (start < half) * 1 + (end > half) * 2
    g = np.asarray(g)
    shared, last_unit = g % UNIT != 0, (g - 1) // UNIT
    if fetch_lines:                      # the whole last line: as a request from its start to the row's end
        plain, start, end = np.full_like(plain, 3), np.where(wrapped, line * LINE, start), np.where(wrapped, g, end)
    ends = (end - 1) // UNIT == last_unit
    before = (start // UNIT < last_unit) | (ends & ~shared)
    at_end = np.where(ends & shared, 1 + 8, 0) + np.where(before, 4, 0)
    if fetch_lines:
        at_end = at_end | 1 | np.where(-g % LINE > UNIT, 2, 0)
    return np.where(wrapped, at_end, plain)


def shared_rows(n0: np.ndarray, rows: np.ndarray, g) -> np.ndarray:
    """Of query rows n0 … n0 + rows − 1, how many end inside a 64-byte unit (row n ends at
    (n + 1) · g bytes): all but those where (n + 1) is a multiple of 64 / gcd(g, 64)."""
    period = UNIT // np.gcd(g, UNIT)
    return rows - ((n0 + rows) // period - n0 // period)


def _weights(sp, rows: np.ndarray) -> dict:
    """Per bit, per request: the rows whose unit it is (bits 0 and 3 of a wrapped request split
    its rows by :func:`shared_rows`; every other bit all of them)."""
    w = {bit: np.where(sp.units & bit > 0, rows, 0) for bit in (1, 2, 4, 8)}
    if sp.shared is not None:
        wrapped = sp.units & 8 > 0
        w[1] = w[1] if sp.fetch_lines else np.where(wrapped, sp.shared, w[1])
        w[8] = np.where(wrapped, rows - sp.shared, 0)
    return w


def _charged(stay: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Per request: the rows of a unit it reads from DRAM: within its stay, what its weight adds
    to the most of the requests before it (a unit is read for the rows no earlier read of the
    stay fetched)."""
    out = np.zeros(len(weight), np.int64)
    want = np.flatnonzero(weight > 0)
    if not len(want):
        return out
    order = want[np.lexsort((want, stay[want]))]
    s, w = stay[order], weight[order]
    rank = np.concatenate([[0], np.cumsum(s[1:] != s[:-1])])
    top = np.maximum.accumulate(rank * (int(w.max()) + 1) + w) - rank * (int(w.max()) + 1)
    new = np.concatenate([[True], s[1:] != s[:-1]])
    before = np.where(new, 0, np.concatenate([[0], top[:-1]]))
    out[order] = top - before
    return out


def correct(got, last: np.ndarray, sizes: np.ndarray, sp, ends: list, issuer=None, repeats=None) -> None:
    """Count into ``got`` (a :class:`.stack.Played` with ``hits``) the DRAM and L2 reads of the
    split read requests of ``sp`` (a :class:`.lines.Split`) in place of their lines; at each of
    ``ends``. ``last``: per request, the last request of its key's stay (a run from a miss up to
    the next)."""
    read = sp.units > 0
    rows = sizes // LINE
    dram = UNIT * sum(_charged(last, w) for w in _weights(sp, rows).values())
    hit = got.hits
    rep = np.zeros(len(sizes), np.int64) if repeats is None else np.asarray(repeats, np.int64)
    asked = sp.read_asked
    delta = {"dram_read_bytes": np.where(read, dram - np.where(hit, 0, sizes), 0),
             "read_bytes": np.where(read, (asked - sizes) * (1 + rep), 0),
             "read_hit_bytes": np.where(read, np.maximum(asked - dram, 0) - np.where(hit, sizes, 0)
                                        + (asked - sizes) * rep, 0)}
    running = {k: np.concatenate([[0], np.cumsum(v)]) for k, v in delta.items()}
    for stats, c in zip([*got.marks, got.stats], ends):
        for name, run in running.items():
            setattr(stats, name, getattr(stats, name) + int(run[c]))
    if got.by_group is not None and issuer is not None:
        g = np.asarray(issuer)
        width = len(got.by_group["dram_read_bytes"])
        for name, v in delta.items():
            got.by_group[name] += np.bincount(g, v, minlength=width).astype(np.int64)

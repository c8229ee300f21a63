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
  While a key stays, a later head's read adds the units no earlier read of the stay fetched.
  So a unit shared by heads h and h + 1 (a boundary that is no multiple of 64 bytes) is read once
  where the line stayed between the two heads' reads, and twice where it was evicted: what
  dot_do_o reads over O and dO at such head dims, up to 96 bytes a query row over the rows'
  bytes (docs/validation/2026-12-06-torn-units.md).
* **L2 reads.** A request asks for its head's rows' bytes in the line (the count's bytes, as
  everywhere in the model), not the line.

A key takes 128 bytes of the cache for each of its lines while it stays, whichever head's rows
touch them.

A key's H rows (a query row's G = H · R bytes) lie at real addresses: query row n of batch b starts
(b · N + n) · G bytes into the buffer, so at one of P = 128 / gcd(G, 128) offsets o within its first
line, the rows taking them by turn (their *class*; P ≤ 8 at the kernels' head dims, multiples of 8). A
head's read of a chunk of rows is played as one request for each (line, class) its rows touch
(:func:`read_lines`): the lines j of the chunk's rows of that class, but a row's last line, which the
next query row starts in (where (o + G) is no multiple of 128), is that row's first line, keyed 0 of
the next row's class. Each such key is the lines of so many rows (its class's rows in the chunk), which
every head that reads them shares, and which the L2 holds whole. Where every line stays this reads the
tensor's lines; where none stays, each head's own lines, row by row; at real addresses both are exact
where a chunk's first and last rows meet the chunks beside them on a line's edge (64-row chunks of a
batch that starts on one: tests/invariants/test_l2_lines.py). Where they do not (a decode's one row a
batch, a ragged N), the line two chunks' rows share is keyed in both, and a line's class weighs the
larger of its two sides' rows: a few lines a chunk, e.g. 1.47 × a decode's dO of one row over 8 batches
where every line stays, bytes next to its K and V. (Until session 52 every row was played as if it
started on a line: up to 40 % off where every line stayed, 21 % where none did;
docs/validation/2026-12-07-s52-device.md.) Rows of fewer than 64 bytes (d < 32) are not played as lines.
"""

from __future__ import annotations

import numpy as np

UNIT = 64
LINE = 128


def classes(g: int) -> tuple[int, int, int]:
    """(q, P, step) of query rows of ``g`` bytes: they start at offsets o = c · q in a line, c one of P
    classes; the next row's class is c + step (mod P)."""
    q = int(np.gcd(g, LINE))
    return q, LINE // q, (g // q) % (LINE // q)


def _geometry(h: int, g: int, r: int, fetch_lines: bool, q: int, p: int) -> dict:
    """{(line, class): [bits, touched, bytes], the last two per class of the rows read}: the lines head ``h``'s
    row of ``r`` bytes touches in a query row of ``g`` bytes placed at each class's offset, each as its line (the
    row's last line, where the next row starts in it, as line 0) and the class of the row whose line it is (for
    that last line, the next row's); bits: 1 for a whole line, else one per 64-byte unit (``q``, ``p``:
    :func:`classes`)."""
    out: dict = {}
    for c in range(p):
        o = c * q
        lo, hi = o + h * r, o + (h + 1) * r
        for j in range(lo // LINE, (hi - 1) // LINE + 1):
            a, e = max(lo, j * LINE), min(hi, (j + 1) * LINE)
            wrapped = j == (o + g - 1) // LINE and (o + g) % LINE != 0
            key = (0, (o + g) % LINE // q) if wrapped else (j, c)
            units = range((a - j * LINE) // UNIT, (e - 1 - j * LINE) // UNIT + 1)
            entry = out.setdefault(key, [0, np.zeros(p, bool), np.zeros(p, np.int64)])
            entry[0] |= 1 if fetch_lines else sum(1 << u for u in units)
            entry[1][c] = True
            entry[2][c] += e - a
    return out


def class_rows(first: np.ndarray, rows: np.ndarray, g: int) -> np.ndarray:
    """(requests × P): of each chunk's ``rows`` query rows from the buffer's row ``first`` on, how many are of
    each class (:func:`classes`)."""
    q, p, step = classes(g)
    phase = (first * g) % LINE // q
    out = np.zeros((len(rows), p), np.int64)
    for i in range(p):
        out[np.arange(len(rows)), (phase + i * step) % p] = np.maximum(0, (rows - i + p - 1) // p)
    return out


def read_lines(h: np.ndarray, heads: np.ndarray, r: int, first: np.ndarray, rows: np.ndarray,
               fetch_lines: bool) -> dict:
    """The line requests of chunk reads of whole rows (head ``h`` of ``heads``, rows ``first`` … ``first`` +
    ``rows`` − 1 of the buffer, of ``r`` bytes a head): "count" per read, then per new request in order of the
    reads and their keys: "key" (line · 128 + class: the lines of one class of the chunk's rows), "bits"
    (:func:`_geometry`), "weights" (the class's rows in the chunk; for line 0 also the rows whose next row is of
    the class, the larger), "size" (the key's lines: what it holds of the L2) and "asked" (its rows' bytes in
    those lines); a key none of the chunk's rows touch makes none."""
    out = {"count": np.zeros(len(h), np.int64)}
    parts = []
    for hh, hs in sorted(set(zip(h.tolist(), heads.tolist()))):
        at = np.flatnonzero((h == hh) & (heads == hs))
        counts = class_rows(first[at], rows[at], hs * r)
        q, p, step = classes(hs * r)
        for (line, cls), (bits, touched, nbytes) in sorted(_geometry(hh, hs * r, r, fetch_lines, q, p).items()):
            # the first lines of a class's rows are the last lines of the rows before them (a chunk's edge)
            weight = np.maximum(counts[:, cls], counts[:, (cls - step) % p] if line == 0 else 0)
            keep = (counts * touched).sum(axis=1) > 0
            parts.append((at[keep], np.full(keep.sum(), line * LINE + cls), np.full(keep.sum(), bits), weight[keep],
                          LINE * weight[keep], (counts * nbytes).sum(axis=1)[keep]))
            out["count"][at[keep]] += 1
    read, *cols = [np.concatenate(c) for c in zip(*parts)] or [np.zeros(0, np.int64)] * 6
    order = np.lexsort((cols[0], read))                        # by read, then key: the order split places them
    return {**out, **{k: v[order] for k, v in zip(("key", "bits", "weights", "size", "asked"), cols)}}


def _weights(sp) -> dict:
    """Per bit, per request: the rows its bit weighs (the request's weight: :func:`read_lines`), 0 where unset."""
    return {bit: np.where((sp.units >> bit) & 1 > 0, sp.weights, 0) for bit in (0, 1)}


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
    dram = (LINE if sp.fetch_lines else UNIT) * sum(_charged(last, w) for w in _weights(sp).values())
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

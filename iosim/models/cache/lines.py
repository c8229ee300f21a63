"""Rows of many heads in one buffer: the L2's lines they share, and sectors written in halves.

Which of a launch's buffers hold every head's rows side by side, (B, N, H, d), is
:mod:`iosim.kernels.strided_rows`'s to say (flash-attn 2's expanded dK and dV, its backward's O
and dO, and with (B, N, H, d) inputs Q, K, V and their kin); each buffer has its own rows a head
(N_q or N_kv), and under GQA K, V, dK and dV are keyed by K/V head (:meth:`Interleaved.places`).
The written buffer this was first built for:

flash-attn 2's backward under GQA writes dK and dV per query head into buffers laid out
(B, N_kv, H, d) (``dk_expanded``, ``dv_expanded`` in flash_api.cpp's ``mha_bwd``): a row's
neighbours in memory are the same key's rows of query heads h − 1 and h + 1, which other
thread blocks write, B · ⌈N_kv / 128⌉ blocks apart in launch order
(docs/validation/2026-12-04-partial.md). Where a row of R bytes is not a whole number of
128-byte lines, two things follow that the L2 model's chunks of one head's rows miss:

* **Lines.** The L2 holds whole 128-byte lines: a head's rows take every line they touch
  until the neighbours' rows fill the rest, and a neighbour that writes while the line is
  held adds nothing. So the written chunks of such a buffer are played as its *lines*:
  the requests of head h for rows [n0, n0 + r) become one request per line k that the
  bytes [h R, (h + 1) R) of a key's H rows touch, keyed by (batch, line, rows), each of
  128 · r bytes: heads h and h + 1 request the line they share, and the second request
  hits when it is still held. (A key's H rows are taken to start on a line: exact where
  H · R is a multiple of 128, e.g. H a multiple of 8.)
* **Sectors written in halves.** Where R ≡ 16 (mod 32), every other row boundary falls
  inside a 32-byte sector. A line evicted with such a sector written only in part is
  written back by a read-modify-write of the 64-byte DRAM unit that holds it
  (docs/validation/2026-12-04-half-sectors.md). So a boundary whose second half's request
  misses (its line was evicted since the first half's) costs 64 bytes a row of DRAM reads
  when the first half's stay is written back. The L2's counters say one such read for each
  torn boundary, not one for each of its two stays: the DRAM reads that no SM read or
  reduction missed are 0.95-1.16 of 64 bytes a torn boundary on three decodes, where two
  would be twice that (docs/validation/2026-12-04-lines.md, "Where the reads come from").

The DRAM writes are the written sectors of each stay written back (a partial sector as a
whole one), not its lines: the stack plays lines, and :func:`correct` counts them back.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from . import line_reads
from .stream import mixed_radix, stream, stream_size

LINE, SECTOR, UNIT = 128, 32, 64


@dataclass(frozen=True)
class Interleaved:
    """Which tensors of a kernel hold rows of all query heads side by side, and how."""

    tensors: tuple          # the tensors' names (e.g. dK_expanded, dV_expanded)
    row_bytes: int          # R: one head's row
    heads: int              # H: query heads per batch
    rows: int               # N_kv: key rows per batch
    batch: int
    #: heads launch as h·B + b (flash-attn 2's grids), else b·H + h
    batch_fastest: bool
    chunk_rows: int = 64
    #: buffers laid out the same way that the kernels read, in requests of whole rows
    #: (flash-attn 2's backward: O and dO, which PyTorch makes (B, N_q, H, d) contiguous;
    #: counted by :mod:`.line_reads`)
    read_tensors: tuple = ()
    #: of the buffers above, those whose heads have ``q_rows`` rows (N_q: Q, O, dO, dQ), not ``rows``
    q_buffers: tuple = ()
    q_rows: int = 0
    #: of the buffers above, those keyed by K/V head, b·H_kv + h (GQA's K, V, dK and dV), of
    #: ``kv_heads`` heads a batch
    kv_buffers: tuple = ()
    kv_heads: int = 0
    #: the kernels whose loads of ``read_tensors`` are plain loads (a miss reads the 64-byte units
    #: its head's rows touch); the others' are cp.async with the .L2::128B prefetch hint
    unit_kernels: tuple = ()
    #: the kernel played: whether its loads fetch whole lines (set per kernel: :meth:`for_kernel`)
    fetch_lines: bool = False

    def for_kernel(self, kernel: str) -> "Interleaved":
        """This spec as ``kernel`` plays it: its loads fetch whole lines unless it is of ``unit_kernels``."""
        return dataclasses.replace(self, fetch_lines=kernel not in self.unit_kernels)

    def batch_head(self, ell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(b, h) of each launch-ordered query head ``ell``."""
        if self.batch_fastest and self.batch > 1:
            return ell % self.batch, ell // self.batch
        return ell // self.heads, ell % self.heads

    def places(self, key: np.ndarray, numbers: np.ndarray, tensors: dict) -> tuple:
        """(b, h, heads a batch, rows a head) of each request, by its head ``key`` and its
        tensor's number in the kernel's keys (``tensors``: names -> numbers)."""
        kv, q = (np.isin(numbers, _numbers(tensors, names)) for names in (self.kv_buffers, self.q_buffers))
        b, h = self.batch_head(key)
        if kv.any():
            b, h = np.where(kv, key // max(1, self.kv_heads), b), np.where(kv, key % max(1, self.kv_heads), h)
        return b, h, np.where(kv, self.kv_heads, self.heads), np.where(q, self.q_rows, self.rows)


@dataclass(frozen=True)
class Split:
    """What :func:`split` made of a stream: per request of the new stream, its bytes written
    (sectors, a partial one whole; 0 for a request it did not make) and, per boundary written
    in halves, the two requests (first, second) of its line and its rows."""

    sector_bytes: np.ndarray
    #: per request of the new stream: its bytes beyond what it writes (a line's bytes less the
    #: row bytes in it), which :func:`correct` takes back from the L2's write requests
    excess: np.ndarray
    first: np.ndarray
    second: np.ndarray
    rows: np.ndarray
    #: per request of the new stream that reads lines (one class of a chunk's rows:
    #: :func:`.line_reads.read_lines`): what a miss fetches, as bits (the line, or its 64-byte units; 0 for
    #: any other request), its rows' bytes in the lines, what the L2 is asked for, and the rows whose lines
    #: the bits are
    units: np.ndarray | None = None
    read_asked: np.ndarray | None = None
    weights: np.ndarray | None = None
    #: a read that misses fetches its whole line (cp.async's .L2::128B hint), not its units
    fetch_lines: bool = False


def applies(spec: Interleaved | None) -> bool:
    """Whether a row of ``spec``'s buffers leaves lines to share (R not a multiple of 128)."""
    return spec is not None and spec.row_bytes % LINE != 0


def touched(tensors: dict, spec: Interleaved | None) -> list:
    """The numbers, in a kernel's keys (``tensors``: names -> numbers), of the buffers of
    ``spec`` (written or read) that it touches and that leave lines to share; [] where none."""
    return _numbers(tensors, spec.tensors + spec.read_tensors) if applies(spec) else []


def _numbers(tensors: dict, names: tuple) -> list:
    """The numbers in a kernel's keys of those of ``names`` it touches."""
    return [tensors[t] for t in names if t in tensors]


def apply(s, tensors: dict, spec: Interleaved | None):
    """The stream ``s`` (a :class:`.stream.Stream`) with the written chunks of ``spec``'s
    tensors, and the read chunks of its ``read_tensors``, as their lines (``s.lines``: the
    :class:`Split`), or ``s`` itself where nothing is split (``tensors``: the kernel's names ->
    numbers in its keys)."""
    if not touched(tensors, spec) or not len(s.size):
        return s
    count, parts, size, src, sp = split(s.key_parts, s.size, s.write, tensors, spec)
    if not sp.sector_bytes.any() and not sp.units.any():
        return s
    starts = np.concatenate([[0], np.cumsum(count)])
    pick = (lambda a: None if a is None else a[src])
    return dataclasses.replace(s, key_parts=parts, size=size, write=s.write[src], repeats=s.repeats[src],
                               cuts=[int(starts[c]) for c in s.cuts], issuer=pick(s.issuer), side=pick(s.side),
                               lines=sp)


#: about so many requests (picked by a hash of their keys) are split to estimate what splitting adds
#: (:func:`split_share`)
SPLIT_SAMPLE = 50_000


def split_share(prog, heads: int, slots: int, kv_of_q, leads_group, sides=None) -> float:
    """How many requests one request of ``prog``'s stream over ``heads`` heads becomes once split into the lines
    of the buffers many heads' rows share (1 where none is split), from about :data:`SPLIT_SAMPLE` of them that a
    hash of their keys picks (all of a smaller stream): the split requests are what playing them costs."""
    if not touched(prog.tensors, prog.interleaved):
        return 1.0
    every = max(1, stream_size(prog, heads, slots, sides) // SPLIT_SAMPLE)

    def keep(head_keys, hi, lo):      # a mixing hash (splitmix64's finaliser) of the three keys
        x = (head_keys.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) ^ hi.astype(np.uint64)) \
            * np.uint64(0xBF58476D1CE4E5B9) ^ lo.astype(np.uint64)
        x = (x ^ (x >> np.uint64(31))) * np.uint64(0x94D049BB133111EB)
        return (x ^ (x >> np.uint64(29))) % np.uint64(every) == 0
    s = stream(prog, heads, slots, kv_of_q, leads_group, keep=keep, sides=sides)
    return len(apply(s, prog.tensors, prog.interleaved).size) / len(s.size) if len(s.size) else 1.0


def split(key_parts, size, write, tensors: dict, spec: Interleaved):
    """(per old request: how many new requests it becomes; the new key parts and sizes; per
    new request, the old one it comes from; the :class:`Split`). ``tensors``: the kernel's
    names -> numbers in its keys; a read is split where it is of whole rows."""
    hi, lo = key_parts[:, 1], key_parts[:, 2]
    tensor, r = (hi >> 26) >> 9, spec.row_bytes
    written = np.isin(tensor, _numbers(tensors, spec.tensors)) & (write == 1)
    read = np.isin(tensor, _numbers(tensors, spec.read_tensors)) & (write == 0) \
        & (size == r * (lo % (spec.chunk_rows + 1))) & (r >= UNIT)         # a row of a unit at least
    b, h, heads, n_rows = spec.places(key_parts[:, 0], tensor, tensors)
    k0, k1 = h * r // LINE, ((h + 1) * r - 1) // LINE
    n0, rows = lo // (spec.chunk_rows + 1), lo % (spec.chunk_rows + 1)
    i = np.flatnonzero(read)
    rl = line_reads.read_lines(h[i], heads[i], r, b[i] * n_rows[i] + n0[i], rows[i], spec.fetch_lines)
    count = np.where(written, k1 - k0 + 1, 1)
    count[i] = rl["count"]
    src = np.repeat(np.arange(len(size)), count)
    within = np.arange(len(src)) - np.repeat(np.cumsum(count) - count, count)
    w, rd = written[src], read[src]
    line = np.where(w, k0[src] + within, -1)          # a written line; for a read, its key (line · 128 + class)
    line[rd] = rl["key"]
    parts = key_parts[src].copy()
    m = w | rd
    parts[m, 0] = b[src][m]
    parts[m, 1] = hi[src][m] + line[m]          # the column field: these requests are of whole rows
    new_size = np.where(w, LINE * rows[src], size[src])
    new_size[rd] = rl["size"]
    h, b, heads, n0, rows = h[src], b[src], heads[src], n0[src], rows[src]
    start, end = np.maximum(h * r, line * LINE), np.minimum((h + 1) * r, (line + 1) * LINE)
    sectors = (end - 1) // SECTOR - start // SECTOR + 1
    sector_bytes = np.where(w, SECTOR * sectors * rows, 0)
    excess = np.where(w, new_size - (end - start) * rows, 0)
    halves = _halves(parts, line, h, b, n0, rows, w, r, heads, n_rows[src])
    units, weights, asked = (np.zeros(len(src), np.int64) for _ in range(3))
    units[rd], weights[rd], asked[rd] = rl["bits"], rl["weights"], rl["asked"]
    return count, parts, new_size, src, Split(sector_bytes, excess, *halves, units=units, read_asked=asked,
                                              weights=weights, fetch_lines=spec.fetch_lines)


def _halves(parts, line, h, b, n0, rows, m, r: int, heads, n_rows):
    """(first, second, rows) of each boundary between heads h and h + 1 that falls inside a
    sector: the requests of the two heads for the line that holds it, and the rows (of the
    chunk's n0 … n0 + r − 1) where the row index (b·N + n)·H + h + 1 is odd (``heads``: H, and
    ``n_rows``: N, per request)."""
    empty = np.zeros(0, np.int64)
    if r % SECTOR != SECTOR // 2:
        return empty, empty, empty
    odd = np.where(heads % 2 == 1, (rows + (n0 + b * n_rows + h + 1) % 2) // 2,    # parity of b·N + n + h + 1
                   np.where((h + 1) % 2 == 1, rows, 0))                             # parity of h + 1
    at = m & (line == (h + 1) * r // LINE) & (h + 1 < heads) & (odd > 0)
    i = np.flatnonzero(at)
    code, want = _codes(np.column_stack([parts, h]), np.column_stack([parts[i], h[i] + 1]))
    order = np.argsort(code, kind="stable")
    pos = np.minimum(np.searchsorted(code[order], want), len(order) - 1)
    found = code[order][pos] == want
    j = order[pos][found]
    i = i[found]
    return np.minimum(i, j), np.maximum(i, j), odd[i]


def _codes(rows: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One integer per row of ``rows`` and of ``wanted`` (equal rows, equal integers)."""
    code = mixed_radix(list(np.concatenate([rows, wanted]).T))
    return code[:len(rows)], code[len(rows):]


def correct(got, ids: np.ndarray, sizes: np.ndarray, sp: Split, ends: list, issuer=None, repeats=None) -> None:
    """Count into ``got`` (a :class:`.stack.Played` of two partitions or of one LRU, with
    ``hits`` and the dirty stays) the read-modify-writes of the boundaries written in halves, and the
    written sectors in place of the lines of each stay written back or left dirty; at each
    of ``ends`` (the cuts, then the stream's end). The lines read: :func:`.line_reads.correct`
    (``repeats``: per request, the hits of its cohort not played)."""
    n = len(ids)
    order = np.argsort(ids, kind="stable")
    last = _last_of_stay(ids, got.hits, order)
    if sp.units is not None and sp.units.any():
        line_reads.correct(got, last, sizes, sp, ends, issuer, repeats)
    pos = _stay_ends(got, last, n)
    held = _held(got.hits, order, sp.first, sp.second)
    torn = ~held
    first, rows = sp.first[torn], sp.rows[torn]
    when, extra = pos[first], UNIT * rows              # read when the first half's stay leaves
    stays = _stays(last, held, pos, sizes, sp)
    stats = [*got.marks, got.stats]
    excess = np.concatenate([[0], np.cumsum(sp.excess)])
    for s, c in zip(stats, ends):
        s.write_bytes -= int(excess[c])
        s.dram_read_bytes += int(extra[when < c].sum())
        s.dram_write_bytes -= int(stays["over"][stays["pos"] < c].sum())
    got.stats.dirty_bytes_left -= int(stays["over"][stays["pos"] >= n].sum())
    if got.by_group is not None and issuer is not None:
        g, width = np.asarray(issuer), len(got.by_group["dram_read_bytes"])
        got.by_group["write_bytes"] -= np.bincount(g, sp.excess, minlength=width).astype(np.int64)
        back = when < n
        got.by_group["dram_read_bytes"] += np.bincount(g[first][back], extra[back], minlength=width).astype(np.int64)
        for name, keep in (("dram_write_bytes", stays["pos"] < n), ("dirty_bytes_left", stays["pos"] >= n)):
            got.by_group[name] -= np.bincount(g[stays["last"][keep]], stays["over"][keep],
                                              minlength=width).astype(np.int64)


def _held(hits, order, first, second) -> np.ndarray:
    """Per boundary: whether its line was held from the first half's request to the second's
    (no miss of the key in between; ``order``: the requests sorted stably by key)."""
    where = np.empty(len(order), np.int64)
    where[order] = np.arange(len(order))
    misses = np.cumsum(~hits[order])
    return misses[where[second]] == misses[where[first]]


def _stay_ends(got, last, n) -> np.ndarray:
    """Per request: the request before which its stay is written back (n: never, within the
    stream), from the partitions' dirty stays (a stay is named by its last write; ``last``:
    each request's stay's last request)."""
    pos = np.full(n, n, np.int64)
    for part in got.parts or [got]:
        st = part.stays
        np.minimum.at(pos, st["token"], st["pos"])
    return pos[last]


def _last_of_stay(ids, hits, order) -> np.ndarray:
    """Per request: the last request of its key's stay (the run from a miss up to the next;
    ``order``: the requests sorted stably by key)."""
    key = ids[order]
    start = ~hits[order] | np.concatenate([[True], key[1:] != key[:-1]])
    run = np.cumsum(start) - 1
    ends = order[np.flatnonzero(np.concatenate([start[1:], [True]]))] if len(order) else order
    out = np.empty(len(ids), np.int64)
    out[order] = ends[run]
    return out


def _stays(last, held, pos, sizes, sp: Split) -> dict:
    """Per stay of a split line (named by its last request): its line bytes less its written
    sectors' bytes (what :func:`correct` takes back from the writes), and its ``pos``
    (``held``: per boundary, whether both halves are in one stay)."""
    split = sp.sector_bytes > 0
    names, at = np.unique(last[split], return_inverse=True)
    written = np.bincount(at.reshape(-1), sp.sector_bytes[split], minlength=len(names))
    np.subtract.at(written, np.searchsorted(names, last[sp.second[held]]), SECTOR * sp.rows[held])   # once
    return {"last": names, "over": sizes[names] - written, "pos": pos[names]}

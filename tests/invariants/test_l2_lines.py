"""Buffers of many heads' rows, played as the lines they share (iosim.models.cache.lines).

The stack's count (lines.correct after stack.play) is checked against a direct, request by
request LRU of 128-byte lines that keeps, per line, which heads wrote it since it was
filled: a line evicted dirty writes its written sectors back, and reads 64 bytes a row for
each sector that only the first of its two heads wrote (the second head's half, written after
the line left, reads nothing: docs/validation/2026-12-04-lines.md)."""

import dataclasses
from collections import OrderedDict

import numpy as np
import pytest

from iosim.models.cache import lines, stack
from iosim.models.cache.lines import Interleaved

TENSOR = 7                       # the written tensor's number in the keys
HI = (TENSOR * 512) << 26


def _requests(spec: Interleaved, rng, reads: int):
    """Every head's writes of every chunk of the buffer, in launch order, with reads of other
    chunks between them: (key parts, sizes, writes) before the split."""
    parts, sizes, writes = [], [], []
    for ell in range(spec.batch * spec.heads):
        for n0 in range(0, spec.rows, spec.chunk_rows):
            r = min(spec.chunk_rows, spec.rows - n0)
            parts.append((ell, HI, n0 * (spec.chunk_rows + 1) + r))
            sizes.append(r * spec.row_bytes)
            writes.append(1)
            for _ in range(rng.integers(0, reads + 1)):
                parts.append((0, 1 << 26, int(rng.integers(0, 40)) * 65 + 64))
                sizes.append(4096)
                writes.append(0)
    return np.array(parts, np.int64), np.array(sizes, np.int64), np.array(writes, np.int64)


def _sectors(spec, h, line) -> set:
    start, end = max(h * spec.row_bytes, line * 128), min((h + 1) * spec.row_bytes, (line + 1) * 128)
    return set(range(start // 32, (end - 1) // 32 + 1)) if end > start else set()


def _written_back(spec, key, heads, rows, n0, b):
    """(bytes written, bytes read-modify-written) when a line written by ``heads`` leaves."""
    line = key[1] - HI
    sectors = set().union(*(_sectors(spec, h, line) for h in heads))
    rmw = 0
    for h in range(spec.heads - 1):
        edge = (h + 1) * spec.row_bytes
        if edge // 128 == line and edge % 32 == 16 and h in heads and h + 1 not in heads:
            odd = sum(((b * spec.rows + n) * spec.heads + h + 1) % 2 for n in range(n0, n0 + rows))
            rmw += 64 * odd
    return 32 * len(sectors) * rows, rmw


def _reference(spec, parts, sizes, writes, heads, capacity):
    """DRAM (read, written, dirty left) of the split stream, line by line."""
    cache, used = OrderedDict(), 0
    read = written = 0

    def leave(key, entry):
        nonlocal read, written
        size, who, dirty, rows, n0, b = entry
        if not dirty:
            return
        if who is None:
            written += size
            return
        w, r = _written_back(spec, key, who, rows, n0, b)
        written, read = written + w, read + r

    for key, size, write, h in zip(map(tuple, parts.tolist()), sizes.tolist(), writes.tolist(), heads.tolist()):
        entry = cache.get(key)
        if entry is None:
            read += size if not write else 0
            split = h >= 0
            rows, n0 = key[2] % 65, key[2] // 65
            entry = [size, set() if split else None, False, rows, n0, key[0]]
            cache[key] = entry
            used += size
            while used > capacity:
                old, e = cache.popitem(last=False)
                used -= e[0]
                leave(old, e)
        else:
            cache.move_to_end(key)
        if write:
            entry[2] = True
            if entry[1] is not None:
                entry[1].add(h)
    left = sum(_written_back(spec, k, e[1], e[3], e[4], e[5])[0] if e[1] is not None else e[0]
               for k, e in cache.items() if e[2])
    return read, written, left


@pytest.mark.parametrize("d, heads, batch, rows", [(72, 4, 1, 130), (40, 8, 2, 64), (40, 5, 1, 70), (96, 4, 2, 64),
                                                   (200, 2, 3, 100), (8, 6, 1, 64)])
@pytest.mark.parametrize("capacity_lines", [60, 150, 400])
def test_the_stack_counts_what_a_line_by_line_lru_counts(d, heads, batch, rows, capacity_lines):
    rng = np.random.default_rng(d * 1000 + capacity_lines)
    spec = Interleaved(("dK_expanded",), 2 * d, heads, rows, batch, batch_fastest=False)
    parts, sizes, writes = _requests(spec, rng, reads=3)
    count, new_parts, new_sizes, src, sp = lines.split(parts, sizes, writes, {"dK_expanded": TENSOR}, spec)
    new_writes = writes[src]
    b, h = spec.batch_head(parts[:, 0])
    head_of = np.where((new_writes == 1) & (parts[src, 1] >> 26 >> 9 == TENSOR), h[src], -1)
    ids = np.unique(new_parts, axis=0, return_inverse=True)[1].reshape(-1)
    capacity = capacity_lines * 128 * 64
    got = stack.play(ids, new_sizes, new_writes, capacity, hits=True, stays=True)
    lines.correct(got, ids, new_sizes, sp, [len(ids)])
    want = _reference(spec, new_parts, new_sizes, new_writes, head_of, capacity)
    assert (got.stats.dram_read_bytes, got.stats.dram_write_bytes, got.stats.dirty_bytes_left) == want
    assert got.stats.write_bytes == int(sizes[writes == 1].sum())      # the L2 is asked for the rows' bytes


def test_a_row_of_72_elements_is_split_into_the_lines_it_touches():
    spec = Interleaved(("dK_expanded",), 144, 4, 64, 1, batch_fastest=False)
    parts = np.array([(h, HI, 64) for h in range(4)], np.int64)
    count, new_parts, sizes, src, sp = lines.split(parts, np.full(4, 64 * 144), np.ones(4, np.int64),
                                                   {"dK_expanded": TENSOR}, spec)
    assert count.tolist() == [2, 2, 2, 2]
    assert (new_parts[:, 1] - HI).tolist() == [0, 1, 1, 2, 2, 3, 3, 4]        # line k of a key's 4 rows
    assert sizes.tolist() == [128 * 64] * 8
    assert (sp.sector_bytes // 64).tolist() == [128, 32, 128, 32, 96, 64, 96, 64]    # a partial sector whole
    # rows 0|1 and 2|3 meet 16 bytes into a sector (at 144 and 432), rows 1|2 on one (288)
    assert list(zip(sp.first.tolist(), sp.second.tolist(), sp.rows.tolist())) == [(1, 2, 64), (5, 6, 64)]


def test_rows_that_fill_whole_lines_are_not_split():
    spec = Interleaved(("dK_expanded",), 256, 4, 64, 1, batch_fastest=False)
    assert not lines.applies(spec)


def _bits(spec, h, key, b, n0, rows):
    """({unit: rows} of a read of head h's rows n0 … n0 + rows − 1 (batch b) in the lines keyed ``key`` (line ·
    128 + class), the L2 asked for), row by row at real offsets: row n starts (b · N + n) · G bytes in, at offset
    o in its first line (its class o / gcd(G, 128)); its last line, which the next row starts in, is keyed 0 and
    is of the next row's class. A unit (a whole line where the loads fetch lines) weighs its class's rows in the
    chunk."""
    g, r = spec.heads * spec.row_bytes, spec.row_bytes
    q = int(np.gcd(g, 128))
    offsets = [((b * spec.rows + n) * g) % 128 for n in range(n0, n0 + rows)]
    out, asked = {}, 0
    for o in offsets:
        for j in range((o + h * r) // 128, (o + (h + 1) * r - 1) // 128 + 1):
            wrapped = j == (o + g - 1) // 128 and (o + g) % 128
            if (0 if wrapped else j) * 128 + ((o + g) % 128 if wrapped else o) // q != key:
                continue
            a, e = max(o + h * r, j * 128), min(o + (h + 1) * r, (j + 1) * 128)
            asked += e - a
            for u in [0] if spec.fetch_lines else range((a - j * 128) // 64, (e - 1 - j * 128) // 64 + 1):
                out[u] = sum(x // q == key % 128 for x in offsets)
                if key < 128:        # a first line: also the last line of the rows before the class's (a chunk's edge)
                    out[u] = max(out[u], sum((x + g) % 128 // q == key % 128 for x in offsets))
    return out, asked


def _read_reference(spec, parts, sizes, heads, capacity):
    """(DRAM read bytes, L2 read bytes) of the split reads, key by key: a key holds, while it stays, the units
    (lines) its heads' reads fetched, each for so many rows; a read fetches the rows of its units that the key
    does not hold, and asks for its rows' bytes; other requests read their size on a miss."""
    cache, used, dram, asked = OrderedDict(), 0, 0, 0
    grain = 128 if spec.fetch_lines else 64          # a whole line, or a 64-byte unit
    for key, size, h in zip(map(tuple, parts.tolist()), sizes.tolist(), heads.tolist()):
        entry = cache.get(key)
        if entry is None:
            entry = cache[key] = [size, {}]
            used += size
            if h < 0:
                dram += size
            while used > capacity:
                used -= cache.popitem(last=False)[1][0]
        else:
            cache.move_to_end(key)
        if h < 0:
            asked += size
            continue
        bits, wanted = _bits(spec, h, key[1] - HI, key[0], key[2] // 65, key[2] % 65)
        for bit, weight in bits.items():
            dram += grain * max(0, weight - entry[1].get(bit, 0))
            entry[1][bit] = max(weight, entry[1].get(bit, 0))
        asked += wanted
    return dram, asked


@pytest.mark.parametrize("d, heads, batch, rows", [(72, 4, 1, 130), (40, 8, 2, 64), (40, 5, 1, 70), (200, 2, 3, 100),
                                                   (8, 6, 1, 64), (104, 3, 2, 64), (40, 3, 2, 70), (40, 6, 1, 64),
                                                   (56, 3, 1, 64)])
@pytest.mark.parametrize("capacity_lines", [30, 150, 400])
@pytest.mark.parametrize("kernel", ["dot_do_o", "dq_dk_dv"])
def test_lines_read_by_many_heads_cost_the_units_each_stay_fetches(d, heads, batch, rows, capacity_lines, kernel):
    """Reads of rows of many heads (flash-attn 2's backward reads O and dO so, iosim.models.cache.line_reads):
    the stack's DRAM and L2 reads, once corrected, are what a line-by-line LRU gives, with the plain loads of
    dot_do_o (units) and the cp.async loads of dq_dk_dv (whole lines)."""
    rng = np.random.default_rng(d * 7 + capacity_lines)
    spec = Interleaved((), 2 * d, heads, rows, batch, batch_fastest=True, read_tensors=("dO",),
                       unit_kernels=("dot_do_o",)).for_kernel(kernel)
    parts, sizes, writes = _requests(spec, rng, reads=3)
    writes = np.zeros_like(writes)                             # every request a read: the buffer's too
    count, new_parts, new_sizes, src, sp = lines.split(parts, sizes, writes, {spec.read_tensors[0]: TENSOR}, spec)
    b, h = spec.batch_head(parts[:, 0])
    head_of = np.where(sp.units > 0, h[src], -1)
    ids = np.unique(new_parts, axis=0, return_inverse=True)[1].reshape(-1)
    capacity = capacity_lines * 128 * 64
    got = stack.play(ids, new_sizes, writes[src], capacity, hits=True, stays=True)
    lines.correct(got, ids, new_sizes, sp, [len(ids)])
    dram, asked = _read_reference(spec, new_parts, new_sizes, head_of, capacity)
    assert (got.stats.dram_read_bytes, got.stats.read_bytes) == (dram, asked)
    assert asked == int(sizes.sum())                   # the L2 is asked for the rows' bytes


def test_a_read_of_a_row_of_72_elements_fetches_the_units_it_touches():
    """A query row of 4 heads of d = 72 is 576 bytes, 4.5 lines: even rows start on a line (class 0), odd rows
    64 bytes into one (class 1). Bits are 2 · class + unit."""
    spec = Interleaved((), 144, 4, 64, 1, batch_fastest=False, read_tensors=("O",))
    parts = np.array([(h, HI, 64) for h in range(4)], np.int64)
    count, new_parts, sizes, src, sp = lines.split(parts, np.full(4, 64 * 144), np.zeros(4, np.int64),
                                                   {"O": TENSOR}, spec)
    # keys are line · 128 + class; an even row's last line (bytes 512-575) is the next (odd) row's first line:
    # head 3 keys it 0 · 128 + 1; an odd row ends on a line, so head 3's read of its last line is line 4's
    assert count.tolist() == [4, 4, 4, 4]
    assert (new_parts[:, 1] - HI).tolist() == [0, 1, 128, 129, 128, 129, 256, 257, 256, 257, 384, 385, 1, 384, 385, 513]
    # head 0: bytes 0-143 of an even row (line 0's units 0, 1; line 1's unit 0), 64-207 of an odd one (line 0's
    # unit 1; line 1's units 0, 1); head 3's read of the odd rows' first line is its unit 0 (bytes 512-575)
    assert sp.units.tolist() == [3, 2, 1, 3] * 3 + [1, 3, 2, 3]
    assert (sp.read_asked // 64).tolist() == [64, 32, 8, 40, 56, 24, 16, 48, 48, 16, 24, 56, 32, 40, 8, 64]
    assert sp.weights.tolist() == [32] * 16 and sizes.tolist() == [32 * 128] * 16
    assert not sp.sector_bytes.any()


def test_a_cp_async_read_of_a_row_of_72_elements_fetches_the_lines_it_touches():
    """flash-attn 2's main kernels load with ``cp.async.cg.shared.global.L2::128B``: a miss fetches the whole line,
    one bit for the line of a class of rows."""
    spec = Interleaved((), 144, 4, 64, 1, batch_fastest=False, read_tensors=("O",),
                       unit_kernels=("dot_do_o",)).for_kernel("dq_dk_dv")
    parts = np.array([(h, HI, 64) for h in range(4)], np.int64)
    *_, sp = lines.split(parts, np.full(4, 64 * 144), np.zeros(4, np.int64), {"O": TENSOR}, spec)
    assert sp.fetch_lines and sp.units.tolist() == [1] * 16
    assert not Interleaved((), 144, 4, 64, 1, batch_fastest=False, unit_kernels=("dot_do_o",)).for_kernel(
        "dot_do_o").fetch_lines


def test_query_rows_take_their_offsets_in_a_line_by_turn():
    """Query rows of G = 720 bytes (3 heads of d = 120) start at 8 offsets in a line, multiples of 16, the next
    row's 5 classes on (720 / 16 = 45 ≡ 5 mod 8): a chunk of 64 rows has 8 of each; rows 1-3 are of classes 5
    (offset 80), 2 (32) and 7 (112)."""
    from iosim.models.cache import line_reads
    assert line_reads.classes(720) == (16, 8, 5)
    got = line_reads.class_rows(np.array([0, 1]), np.array([64, 3]), 720)
    assert got[0].tolist() == [8] * 8 and got[1].tolist() == [0, 0, 1, 0, 0, 1, 0, 1]
    assert line_reads.classes(768) == (128, 1, 0)


def _same_split(a, b) -> None:
    assert all(np.array_equal(x, y) for x, y in zip(a[:4], b[:4]))
    for name in ("sector_bytes", "excess", "first", "second", "rows", "units", "read_asked", "weights"):
        assert np.array_equal(getattr(a[4], name), getattr(b[4], name)), name


@pytest.mark.parametrize("d, heads, kv_heads, batch", [(40, 8, 2, 3), (72, 32, 8, 2), (104, 6, 3, 1)])
def test_buffers_keyed_by_kv_head_split_as_the_kv_heads_own_buffer(d, heads, kv_heads, batch):
    """Under GQA the K and V of (B, N, H, d) inputs are keyed by K/V head b·H_kv + h, whatever order the
    query heads launch in: split as a buffer of H_kv heads a batch keyed so."""
    rng = np.random.default_rng(d)
    alone = Interleaved(("dK",), 2 * d, kv_heads, 100, batch, batch_fastest=False, read_tensors=("K",))
    parts, sizes, writes = _requests(alone, rng, reads=2)
    writes = np.where(rng.random(len(writes)) < 0.5, writes, 0)     # some of the buffer's requests reads
    both = Interleaved(("dK",), 2 * d, heads, 100, batch, batch_fastest=True, read_tensors=("K",),
                       kv_buffers=("K", "dK"), kv_heads=kv_heads)
    ids = {"K": TENSOR, "dK": TENSOR}
    _same_split(lines.split(parts, sizes, writes, ids, both), lines.split(parts, sizes, writes, ids, alone))


def test_buffers_of_query_rows_take_their_own_row_count():
    """A written buffer of N_q rows a head (O, dQ of (B, N, H, d) inputs) beside the N_kv of the
    others: its sectors written in halves are those of a buffer of N_q rows (the parity of a row
    (b·N_q + n)·H + h + 1, H odd)."""
    rng = np.random.default_rng(5)
    alone = Interleaved(("O",), 80, 5, 71, 2, batch_fastest=False)
    parts, sizes, writes = _requests(alone, rng, reads=2)
    beside = Interleaved(("O",), 80, 5, 300, 2, batch_fastest=False, q_buffers=("O",), q_rows=71)
    _same_split(lines.split(parts, sizes, writes, {"O": TENSOR}, beside),
                lines.split(parts, sizes, writes, {"O": TENSOR}, alone))
    other = lines.split(parts, sizes, writes, {"O": TENSOR}, dataclasses.replace(beside, q_buffers=()))
    assert not np.array_equal(other[4].rows, lines.split(parts, sizes, writes, {"O": TENSOR}, alone)[4].rows)


def _at_addresses(spec, parts, stays: bool) -> int:
    """DRAM bytes of reads of ``spec``'s rows at their real byte addresses (query row n of batch b at
    (b · N + n) · G), a miss fetching the 128-byte lines (``spec.fetch_lines``) or 64-byte units its rows touch:
    every line kept (``stays``) or none kept between requests."""
    g, grain, held, total = spec.heads * spec.row_bytes, 128 if spec.fetch_lines else 64, set(), 0
    for ell, _, lo in parts.tolist():
        b, h = (int(x) for x in spec.batch_head(np.array(ell)))
        n0, rows = divmod(lo, spec.chunk_rows + 1)
        starts = [(b * spec.rows + n) * g + h * spec.row_bytes for n in range(n0, n0 + rows)]
        want = {u for s in starts for u in range(s // grain, (s + spec.row_bytes - 1) // grain + 1)}
        total += grain * len(want - held if stays else want)
        held |= want if stays else set()
    return total


def _dram_read(spec, parts, stays: bool) -> int:
    """The model's DRAM reads of whole-row reads ``parts`` of ``spec``'s buffer (rows ``lo % 65`` a chunk): split,
    played and corrected, every line kept (``stays``) or none kept between requests."""
    sizes = spec.row_bytes * (parts[:, 2] % (spec.chunk_rows + 1))
    reads = np.zeros(len(parts), np.int64)
    count, new_parts, new_sizes, src, sp = lines.split(parts, sizes, reads, {"dO": TENSOR}, spec)
    ids = np.unique(new_parts, axis=0, return_inverse=True)[1].reshape(-1)
    capacity = 1 << 40 if stays else int(new_sizes.max())
    played = stack.play(ids, new_sizes, reads[src], capacity, hits=True, stays=True)
    lines.correct(played, ids, new_sizes, sp, [len(ids)])
    return played.stats.dram_read_bytes


def test_the_classes_against_real_addresses():
    """The model plays a query row's heads at the offsets in a line that real rows take by turn (their classes,
    iosim.models.cache.line_reads). Over d = 40 … 256 (rows no multiple of 128 bytes) and 2 … 16 heads, with
    either kind of load, on chunks of 64 rows: where every line stays, and where none stays between requests,
    the DRAM reads are those of an LRU at real byte addresses, exactly. (Until session 52 every row was played
    as if it started on a line: off by up to 40 % where every line stayed and 21 % where none did.)"""
    got, want = [], []
    for d in [d for d in range(40, 257, 8) if (2 * d) % 128]:
        for heads in range(2, 17):
            for kernel in ("dot_do_o", "dq_dk_dv"):
                spec = Interleaved((), 2 * d, heads, 128, 2, batch_fastest=True, read_tensors=("dO",),
                                   unit_kernels=("dot_do_o",)).for_kernel(kernel)
                parts = np.array([(ell, HI, n0 * (spec.chunk_rows + 1) + spec.chunk_rows) for ell in range(2 * heads)
                                  for n0 in range(0, 128, spec.chunk_rows)], np.int64)
                for stays in (True, False):
                    got.append(_dram_read(spec, parts, stays))
                    want.append(_at_addresses(spec, parts, stays))
    assert len(got) == 1440 and got == want


@pytest.mark.parametrize("d, heads, lines_over, units_over", [(40, 3, 1.467, 1.2), (56, 2, 1.429, 1.143),
                                                              (72, 4, 1.111, 1.0)])
def test_a_decodes_rows_over_batches_are_keyed_apart(d, heads, lines_over, units_over):
    """The limit line_reads states: a decode's one query row a batch starts inside the line the batch before ends
    in, and that line is keyed in both batches' chunks, so where every line stays (dO of 8 batches) the model reads
    more than real addresses do, by the few lines the batches share."""
    over = []
    for kernel in ("dq_dk_dv", "dot_do_o"):
        spec = Interleaved((), 2 * d, heads, 1, 8, batch_fastest=True, read_tensors=("dO",),
                           unit_kernels=("dot_do_o",)).for_kernel(kernel)
        parts = np.array([(ell, HI, 1) for ell in range(8 * heads)], np.int64)
        over.append(round(_dram_read(spec, parts, True) / _at_addresses(spec, parts, True), 3))
    assert over == [lines_over, units_over]

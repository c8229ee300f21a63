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


def _units(spec, h, line, n0, rows):
    """{unit: rows} a read of head h's rows n0 … n0 + rows − 1 in ``line`` (of a query row's frame)
    fetches: the last line of a row that ends inside a line is the next row's first line, whichever head
    reads it; its unit at the row's end that line's first unit for the rows whose end falls inside a unit
    ((n + 1) · G no multiple of 64) and a unit of its own for the others; any other unit its own. A kernel
    whose loads fetch whole lines (``spec.fetch_lines``) fetches both units of a line, and with the row's last
    line all of that line's units and the next row's units in it."""
    g = spec.heads * spec.row_bytes
    units = {s // 2 for s in _sectors(spec, h, line)}
    if not (g % 128 and line == (g - 1) // 128 and line > 0):
        return {("unit", u): rows for u in ({0, 1} if spec.fetch_lines else units)}
    last = (g - 1) // 64                                       # the row's last unit
    units = set(range(2 * line, last + 1)) if spec.fetch_lines else units
    nxt = {("unit", 0): rows, **({("unit", 1): rows} if -g % 128 > 64 else {})} if spec.fetch_lines else {}
    if g % 64 == 0:
        return {("tail",): rows, **nxt}
    out = dict(nxt)
    if last in units:
        shared = sum(((n + 1) * g) % 64 != 0 for n in range(n0, n0 + rows))
        out[("unit", 0)], out[("own",)] = rows if spec.fetch_lines else shared, rows - shared
    return {**out, ("tail",): rows} if units - {last} else out


def _read_reference(spec, parts, sizes, heads, lines_of, capacity):
    """(DRAM read bytes, L2 read bytes) of the split reads, line by line: a line holds, while it
    stays, the 64-byte units its heads' reads fetched, each for so many rows; a read fetches the
    rows of its units that the line does not hold, and asks for its rows' bytes in the line; other
    requests read their size on a miss."""
    cache, used, dram, asked = OrderedDict(), 0, 0, 0
    for key, size, h, line in zip(map(tuple, parts.tolist()), sizes.tolist(), heads.tolist(), lines_of.tolist()):
        rows = key[2] % 65
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
        for unit, weight in _units(spec, h, line, key[2] // 65, rows).items():
            dram += 64 * max(0, weight - entry[1].get(unit, 0))
            entry[1][unit] = max(weight, entry[1].get(unit, 0))
        start, end = max(h * spec.row_bytes, line * 128), min((h + 1) * spec.row_bytes, (line + 1) * 128)
        asked += (end - start) * rows
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
    within = np.arange(len(src)) - np.repeat(np.cumsum(count) - count, count)
    line_of = (h[src] * spec.row_bytes) // 128 + within          # the line in the query row's frame
    ids = np.unique(new_parts, axis=0, return_inverse=True)[1].reshape(-1)
    capacity = capacity_lines * 128 * 64
    got = stack.play(ids, new_sizes, writes[src], capacity, hits=True, stays=True)
    lines.correct(got, ids, new_sizes, sp, [len(ids)])
    dram, asked = _read_reference(spec, new_parts, new_sizes, head_of, line_of, capacity)
    assert (got.stats.dram_read_bytes, got.stats.read_bytes) == (dram, asked)
    assert asked == int(sizes.sum())                   # the L2 is asked for the rows' bytes


def test_a_read_of_a_row_of_72_elements_fetches_the_units_it_touches():
    spec = Interleaved((), 144, 4, 64, 1, batch_fastest=False, read_tensors=("O",))
    parts = np.array([(h, HI, 64) for h in range(4)], np.int64)
    count, new_parts, sizes, src, sp = lines.split(parts, np.full(4, 64 * 144), np.zeros(4, np.int64),
                                                   {"O": TENSOR}, spec)
    # the last head's last line (bytes 512-575 of a query row of 576) is keyed as the row's first
    assert (new_parts[:, 1] - HI).tolist() == [0, 1, 1, 2, 2, 3, 3, 0]
    # head 0: bytes 0-143 (units 0, 1 of line 0; unit 0 of line 1); head 1: 144-287 (line 1's units 0, 1;
    # line 2's unit 0): the unit at bytes 128-191 is both heads', as 256-319 (heads 1, 2), 384-447 (2, 3);
    # the row ends on a unit, so its last unit (512-575) is a unit of its own in the first line's key (bit 2)
    assert sp.units.tolist() == [3, 1, 3, 1, 3, 1, 3, 4]
    assert (sp.read_asked // 64).tolist() == [128, 16, 112, 32, 96, 48, 80, 64]
    assert not sp.sector_bytes.any()


def test_a_cp_async_read_of_a_row_of_72_elements_fetches_the_lines_it_touches():
    """flash-attn 2's main kernels load with ``cp.async.cg.shared.global.L2::128B``: a miss fetches the whole line.
    The last head's last line (bytes 512-575 of a query row of 576, keyed as the row's first) fetches its own unit
    and, with it, the next row's first unit in that line (bit 0); every other line both its units."""
    spec = Interleaved((), 144, 4, 64, 1, batch_fastest=False, read_tensors=("O",),
                       unit_kernels=("dot_do_o",)).for_kernel("dq_dk_dv")
    parts = np.array([(h, HI, 64) for h in range(4)], np.int64)
    *_, sp = lines.split(parts, np.full(4, 64 * 144), np.zeros(4, np.int64), {"O": TENSOR}, spec)
    assert sp.fetch_lines and sp.units.tolist() == [3, 3, 3, 3, 3, 3, 3, 4 | 1]
    assert not Interleaved((), 144, 4, 64, 1, batch_fastest=False, unit_kernels=("dot_do_o",)).for_kernel(
        "dot_do_o").fetch_lines


def test_query_rows_whose_end_shares_a_unit():
    """A query row of G = 720 bytes (3 heads of d = 120) ends on a unit every fourth row: rows 3, 7, … (ending at
    (n + 1) · 720, a multiple of 64 when n + 1 is a multiple of 4)."""
    from iosim.models.cache import line_reads
    got = line_reads.shared_rows(np.array([0, 64, 1, 5]), np.array([64, 64, 3, 2]), 720)
    assert got.tolist() == [48, 48, 2, 2]          # rows 1-3: row 3 ends on a unit; rows 5-6: neither does
    assert line_reads.shared_rows(np.array([0]), np.array([64]), 768).tolist() == [0]


def _same_split(a, b) -> None:
    assert all(np.array_equal(x, y) for x, y in zip(a[:4], b[:4]))
    for name in ("sector_bytes", "excess", "first", "second", "rows", "units", "read_asked", "shared"):
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


def test_the_frame_against_real_addresses():
    """The model plays a query row's heads as if the row started on a line (iosim.models.cache.line_reads); at
    real addresses the rows start anywhere in a line. Over d = 40 … 256 (rows no multiple of 128 bytes) and
    2 … 16 heads, with either kind of load: where every line stays, within 13.4 % of real addresses (the worst,
    d = 40 over 3 or 6 heads, 0.867, where the frame's rows span fewer units than real ones; 1.40 when an earlier
    head's read of the row's last line was keyed apart from the last head's), mean error under 0.4 %; where no
    line stays, within 21.5 % (d = 56 over 2 heads, 0.786), mean under 1.4 %."""
    errors = {True: [], False: []}
    for d in [d for d in range(40, 257, 8) if (2 * d) % 128]:
        for heads in range(2, 17):
            for kernel in ("dot_do_o", "dq_dk_dv"):
                spec = Interleaved((), 2 * d, heads, 128, 2, batch_fastest=True, read_tensors=("dO",),
                                   unit_kernels=("dot_do_o",)).for_kernel(kernel)
                parts = np.array([(ell, HI, n0 * (spec.chunk_rows + 1) + spec.chunk_rows) for ell in range(2 * heads)
                                  for n0 in range(0, 128, spec.chunk_rows)], np.int64)
                sizes = np.full(len(parts), spec.chunk_rows * spec.row_bytes, np.int64)
                reads = np.zeros(len(parts), np.int64)
                count, new_parts, new_sizes, src, sp = lines.split(parts, sizes, reads, {"dO": TENSOR}, spec)
                ids = np.unique(new_parts, axis=0, return_inverse=True)[1].reshape(-1)
                for stays in (True, False):
                    capacity = 1 << 40 if stays else int(new_sizes.max())
                    got = stack.play(ids, new_sizes, reads[src], capacity, hits=True, stays=True)
                    lines.correct(got, ids, new_sizes, sp, [len(ids)])
                    errors[stays].append(got.stats.dram_read_bytes / _at_addresses(spec, parts, stays) - 1)
    for stays, (worst, mean) in {True: (0.134, 0.004), False: (0.215, 0.014)}.items():
        e = np.abs(errors[stays])
        assert len(e) == 720 and e.max() <= worst and e.mean() < mean, (stays, e.max(), e.mean())

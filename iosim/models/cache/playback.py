"""Which thread blocks run together, and the request stream they send to the cache.

Assumptions (docs/cache.md):

* **Occupancy.** A thread block (CTA) needs its peak shared memory, ``threads``
  threads and, when the kernel's register use is known (the real-kernel presets), its
  registers; an SM holds as many as fit in its shared memory, register file and 2,048
  threads (at most 32). ``SMs × that`` CTAs are resident at once.
* **Launch order.** A kernel's grid is (blocks of one head, heads in launch order) with the
  first dimension fastest: all thread blocks of head 0 first. CTAs are issued in that
  order; when one finishes, the next takes its slot. The caller names the heads in launch
  order through ``kv_of_q`` and ``leads_group`` (flash-attn 2's (blocks, batch, heads)
  grids: ``iosim.run.launches._head_order``).
* **Interleaving.** Resident CTAs progress at the same rate: each issues its next
  request in turn (round robin). So FA2's query blocks of one head walk the same K/V
  tiles nearly together, and one head's K and V are read from DRAM about once.
* **Kernels** start with a cold cache (profilers flush it between kernels), and one
  kernel's dirty data is not written back when it ends.
* **Chunks.** A request for rows [a, a + r) of a tile touches the chunks of
  ``chunk_rows`` rows that overlap it, each keyed by (tensor, head, split, chunk, column
  offset) and sized rows × columns × width (:mod:`.programs`). A chunk is the rows of
  one ``chunk_rows``-aligned window that the request covers; its key names those rows,
  so a tile that covers only part of a window (a block size that is not a multiple of
  ``chunk_rows``) never hits on rows another tile brought in.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
import numpy as np

from .lru import CacheStats, LRUCache
from .periodic import all_heads, copies, heads_played, period
from .programs import HEAD, PER_KV_HEAD, HeadPrograms
from . import lines, partitions, watch
from .stream import add_repeats, play, stream, stream_size

MAX_THREADS_PER_SM = 2048
MAX_CTAS_PER_SM = 32


def occupancy(sm_count: int, smem_per_sm: int, smem_per_cta: int, threads_per_cta: int,
              registers_per_thread: int | None = None, register_file_bytes: int | None = None) -> int:
    """How many CTAs of one kernel run at once on the whole GPU.

    Registers count when the kernel's use is known: a warp's registers are allocated in
    units of 256 (CUDA occupancy calculator), from the SM's 4-byte registers.
    """
    by_smem = smem_per_sm // smem_per_cta if smem_per_cta else MAX_CTAS_PER_SM
    by_threads = MAX_THREADS_PER_SM // threads_per_cta
    by_regs = MAX_CTAS_PER_SM
    if registers_per_thread and register_file_bytes:
        per_warp = -(-registers_per_thread * 32 // 256) * 256
        by_regs = (register_file_bytes // 4) // (per_warp * -(-threads_per_cta // 32))
    return sm_count * max(1, min(by_smem, by_threads, by_regs, MAX_CTAS_PER_SM))


@dataclass(frozen=True)
class CacheReport:
    """What the cache model predicts for a run (all heads)."""

    kernels: dict            # kernel -> CacheStats of the cache nearest the SMs; its dram_* count
                             # what reached DRAM past every level
    concurrency: dict        # kernel -> resident CTAs
    #: kernel -> {level name: CacheStats} of the levels beyond the nearest (MI300X's Infinity Cache)
    outer: dict = None
    #: kernel -> how far apart (relative) the two steps of the launch pattern were that extended
    #: its heads, where they were not equal (:func:`~.periodic.all_heads`); absent: exact
    near: dict = None
    #: kernel -> :class:`~.sampled.Sampled` where its counters are estimated from a sample of
    #: its chunks (:mod:`.sampled`) or windows of its rounds (:mod:`.windows`); absent: played in full
    sampled: dict = None
    #: the L2 played as one LRU (1) or two partitions (2: :mod:`.partitions`)
    partitions: int = 1
    #: kernels whose buffers of many heads' rows were played as chunks where their lines were
    #: asked for (:mod:`.lines`; the partitions' turns did not settle and the reference played them)
    as_chunks: tuple = ()
    #: kernel -> DRAM bytes among its reads that fill spill frames (:mod:`.frames`); absent: none
    frames: dict = None
    #: kernel -> DRAM bytes among its reads that are its code (:mod:`iosim.kernels.flash_code`); absent: none
    code: dict = None

    def with_reads(self, kind: str, kernel: str, nbytes: int) -> "CacheReport":
        """This report with ``nbytes`` more DRAM reads in ``kernel``, listed apart as ``kind``
        ("frames" or "code")."""
        stats = dataclasses.replace(self.kernels[kernel])
        stats.dram_read_bytes += nbytes
        return dataclasses.replace(self, kernels={**self.kernels, kernel: stats},
                                   **{kind: {**(getattr(self, kind) or {}), kernel: nbytes}})

    @property
    def total(self) -> CacheStats:
        return _sum(self.kernels.values())

    def to_dict(self) -> dict:
        """The result's ``l2``, ``dram`` and ``outer_caches`` (the JSON contract)."""
        s = self.total
        per_kernel = {k: {"read_bytes": v.read_bytes, "hit_rate": v.hit_rate, "dram_read_bytes": v.dram_read_bytes,
                          "dram_write_bytes": v.dram_write_bytes, "dirty_bytes_left": v.dirty_bytes_left,
                          "concurrent_blocks": self.concurrency[k],
                          **({"heads_extended_within": self.near[k]} if k in (self.near or {}) else {}),
                          **(self.sampled[k].describe() if k in (self.sampled or {}) else {}),
                          **({"frame_read_bytes": self.frames[k]} if k in (self.frames or {}) else {}),
                          **({"code_read_bytes": self.code[k]} if k in (self.code or {}) else {})}
                      for k, v in self.kernels.items()}
        return {
            "l2": {**({"model": "windowed" if any(g.model == "windowed" for g in self.sampled.values()) else "sampled"}
                      if self.sampled else {}), "read_bytes": s.read_bytes,
                   "write_bytes": s.write_bytes, "hit_rate": s.hit_rate, "partitions": self.partitions,
                   "per_kernel": per_kernel},
            # write_bytes: written back during the kernels (what a profiler counts per kernel);
            # dirty_bytes_left: written, still in the cache when they end (DRAM gets it later)
            "dram": {"read_bytes": s.dram_read_bytes, "write_bytes": s.dram_write_bytes,
                     "dirty_bytes_left": s.dirty_bytes_left,
                     **({"frame_read_bytes": sum(self.frames.values())} if self.frames else {}),
                     **({"code_read_bytes": sum(self.code.values())} if self.code else {})},
            # further cache levels between the L2 and DRAM (MI300X's Infinity Cache): what
            # reached each from the level in front, and what it served
            "outer_caches": {name: {"read_bytes": t.read_bytes, "write_bytes": t.write_bytes, "hit_rate": t.hit_rate}
                             for name, t in self.outer_totals().items()},
        }

    def outer_totals(self) -> dict:
        """{level name: CacheStats summed over kernels} of the levels beyond the nearest."""
        names = {n for levels in (self.outer or {}).values() for n in levels}
        return {n: _sum(levels[n] for levels in self.outer.values() if n in levels) for n in sorted(names)}


def _sum(stats) -> CacheStats:
    out = CacheStats()
    names = [f.name for f in dataclasses.fields(CacheStats)]
    for s in stats:
        for name in names:
            setattr(out, name, getattr(out, name) + getattr(s, name))
    return out


class PlayLimit(Exception):
    """Playing would pass its limit of requests (the heads' extension needed more heads than planned)."""

    def __init__(self, requests: int):
        super().__init__(f"{requests:,} requests")
        self.requests = requests


def cost(prog: HeadPrograms, slots: int, outer_levels: tuple, *, heads: int, kv_of_q, leads_group, group: int,
          capacity_bytes: int, sides=None, ways=None, in_lines: bool = False) -> int:
    """Requests the streams of one kernel will hold, as :func:`replay_programs` plays them; ``in_lines``: once the
    buffers many heads' rows share are split into their lines (:func:`.lines.split_share`), which is what playing
    them costs."""
    copied = None if outer_levels else _copies(prog, heads, slots, kv_of_q, leads_group, group)
    if copied is not None:
        return sum(stream_size(prog, h, slots, sides) for h in copied[::2])
    played = heads_played(heads, slots=slots, ctas_per_head=len(prog.cta_class), group=group,
                          footprint_bytes=lambda: prog.footprint,
                          capacity_bytes=capacity_bytes + sum(c for _, c in outer_levels))
    split = lines.split_share(prog, played, slots, kv_of_q, leads_group, sides) if in_lines and not outer_levels else 1
    return round(stream_size(prog, played, slots, sides) * split)


def replay_programs(programs: dict, concurrency: dict, outer_levels: tuple, method: str, limit: int | None, *, heads: int,
            kv_of_q, leads_group, group: int, capacity_bytes: int, sides=None, ways=None) -> CacheReport:
    """Every kernel's heads played (:func:`~.plans.plan`); ``sides(slots)``: the L2 partition
    each slot reads through, where there are two (:mod:`.partitions`); ``ways``: each of
    them hashed sets of so many ways (:mod:`.sets`)."""
    if sides is not None and (method != "stream" or outer_levels):
        raise ValueError("two L2 partitions are played from the cohorts' stream, with no cache behind them")
    if ways is not None and sides is None:
        raise ValueError("hashed sets are played for two L2 partitions only")
    stats, outer, near, chunks = {}, {}, {}, set()
    played = [0]

    def spend(prog: HeadPrograms, h: int, slots: int) -> None:
        played[0] += stream_size(prog, h, slots, sides)
        if limit is not None and played[0] > limit:
            raise PlayLimit(played[0])

    for kernel, prog in programs.items():
        watch.kernel(kernel)
        slots = concurrency.get(kernel, 1)
        if method == "stream" and not outer_levels:
            stats[kernel] = _by_copies(prog, heads, slots, kv_of_q, leads_group, group, capacity_bytes, sides, ways)
            if stats[kernel] is not None:
                continue
        if method == "stream":
            def play_marked(h, marks, prog=prog, slots=slots, kernel=kernel):
                spend(prog, h, slots)
                watch.stage(f"the stream of {h:,} heads")
                s = stream(prog, h, slots, kv_of_q, leads_group, marks, sides=sides)
                return _play_in_parts(s, capacity_bytes, outer_levels, ways, prog if sides is not None else None,
                                      lambda: chunks.add(kernel))

            def play_heads(h: int, play_marked=play_marked) -> tuple:
                return play_marked(h, ())[0]
        else:
            def play_heads(h: int, prog=prog, slots=slots) -> tuple:
                watch.stage(f"{h:,} heads, request by request")
                return _play(lambda cache: _run(cache, _cta_lists(prog, h), slots, kv_of_q, leads_group),
                             capacity_bytes, outer_levels)
            play_marked = None

        stats[kernel], levels, apart = all_heads(
            play_heads, heads, slots=slots, ctas_per_head=len(prog.cta_class), group=group,
            footprint_bytes=lambda prog=prog: prog.footprint,
            capacity_bytes=capacity_bytes + sum(c for _, c in outer_levels), play_marked=play_marked)
        if levels:
            outer[kernel] = levels
        if apart is not None:
            near[kernel] = apart
    return CacheReport(stats, {k: concurrency.get(k, 1) for k in stats}, outer or None, near,
                       as_chunks=tuple(sorted(chunks)))


def _caches(capacity_bytes: int, outer_levels: tuple) -> tuple:
    """A cold cache and the chain of (name, cache) behind it, nearest first."""
    chain = []
    for name, capacity in reversed(outer_levels):
        chain.insert(0, (name, LRUCache(capacity, backing=chain[0][1] if chain else None)))
    return LRUCache(capacity_bytes, backing=chain[0][1] if chain else None), chain


def _report(cache: LRUCache, chain: list) -> tuple[CacheStats, dict]:
    """(the nearest cache's stats, with DRAM as the last level saw it; {level: stats}), copies."""
    if not chain:
        return dataclasses.replace(cache.stats), {}
    last = chain[-1][1].stats
    nearest = dataclasses.replace(cache.stats, dram_read_bytes=last.dram_read_bytes,
                                  dram_write_bytes=last.dram_write_bytes)
    return nearest, {name: dataclasses.replace(c.stats) for name, c in chain}


def _play(feed, capacity_bytes: int, outer_levels: tuple) -> tuple[CacheStats, dict]:
    """``feed(cache)`` from a cold cache: (the nearest cache's stats, with DRAM as the last
    level saw it; {level: stats} of the levels behind it)."""
    cache, chain = _caches(capacity_bytes, outer_levels)
    feed(cache)
    _dirty_left(cache, chain)
    return _report(cache, chain)


def _by_copies(prog: HeadPrograms, heads: int, slots: int, kv_of_q, leads_group, group: int,
               capacity_bytes: int, sides=None, ways=None) -> CacheStats | None:
    """Every head from two streams, exactly (:func:`~.periodic.copies`): P heads, played
    once for the ⌊heads / P⌋ copies of the launch pattern, and the remaining heads; None
    where that does not hold (:func:`_copies`, or keys :mod:`.stack` cannot play)."""
    copied = _copies(prog, heads, slots, kv_of_q, leads_group, group)
    if copied is None:
        return None
    p, times, rest = copied
    played = [_stacked(stream(prog, h, slots, kv_of_q, leads_group, sides=sides), capacity_bytes, ways=ways)
              for h in (p, rest)]
    if None in played or (sides is not None and any(x.parts is None for x in played)):
        return None
    return copies(played[0], times, played[1], capacity_bytes)


def _copies(prog: HeadPrograms, heads: int, slots: int, kv_of_q, leads_group, group: int) -> tuple | None:
    """(P, copies, remaining heads) where every head follows from copies of P heads; None
    where it does not (CTAs of unequal lengths, heads that do not repeat every P, fewer
    than two copies)."""
    p = period(slots, len(prog.cta_class), group)
    times, rest = divmod(heads, p)
    lengths = prog.lengths
    if times < 2 or not (lengths == lengths[0]).all() or not _repeats_every(p, times, kv_of_q, leads_group):
        return None
    if lines.touched(prog.tensors, prog.interleaved):       # heads share lines: no copies of a pattern
        return None
    return p, times, rest


def _repeats_every(p: int, times: int, kv_of_q, leads_group) -> bool:
    """Whether heads c·P + h name the K/V heads of h shifted past those of the copies
    before, and lead their groups as h does (checked for the second and the last copy)."""
    kv = [kv_of_q(h) for h in range(p)]
    for c in {1, times - 1}:
        shift = kv_of_q(c * p) - kv[0]
        if shift <= max(kv) - kv[0] or any(kv_of_q(c * p + h) != kv[h] + shift or
                                           leads_group(c * p + h) != leads_group(h) for h in range(p)):
            return False
    return True


def _stacked(s, capacity_bytes: int, by_issuer: bool = False, ways=None):
    """The stream ``s`` played at once (:func:`.partitions.played`: one LRU, or two
    partitions, of ``ways``-way sets where given), its repeats counted as hits (and,
    ``by_issuer``, every counter per query head too); None where one LRU cannot play it
    exactly (two partitions always can)."""
    ids = s.key_ids()
    got = partitions.played(s.key_parts, ids, s.size, s.write, s.side, capacity_bytes, s.cuts,
                            s.issuer if by_issuer else None, ways)
    if got is not None and s.lines is not None:
        if got.hits is None:     # the reference played it (turns unsettled): no stays; the caller plays chunks
            return None
        lines.correct(got, ids, s.size, s.lines, [*s.cuts, len(s.size)], s.issuer if by_issuer else None,
                      s.repeats)
    if got is not None:
        for stats, stop in zip((got.stats, *got.marks), [None, *s.cuts]):
            add_repeats(stats, s, 0, stop)
        if by_issuer:
            extra, reads = s.repeats * s.size, s.write == 0
            for name, mask in (("read_bytes", reads), ("read_hit_bytes", reads), ("write_bytes", ~reads)):
                got.by_group[name] += np.bincount(s.issuer[mask], extra[mask], minlength=len(got.by_group[name])
                                                  ).astype(np.int64)
    return got


def _play_in_parts(s, capacity_bytes: int, outer_levels: tuple, ways=None, prog: HeadPrograms | None = None,
                   as_chunks=None) -> tuple:
    """The stream ``s`` from a cold cache: (the totals as :func:`_play` gives them, [the
    stats at each of ``s.cuts``], every counter per query head or None); the dirty bytes
    left are the end's only. One cache with no level behind it is played at once
    (:mod:`.stack`) where that is exact, and only then counted per head; given ``prog``, with
    its buffers of many heads' rows as the lines they share (:mod:`.lines`) where it has any,
    else as chunks, said by calling ``as_chunks()``."""
    got = None
    if prog is not None and not outer_levels:
        split = lines.apply(s, prog.tensors, prog.interleaved)
        got = None if split is s else _stacked(split, capacity_bytes, by_issuer=True, ways=ways)
        if split is not s and got is None and as_chunks is not None:
            as_chunks()
    if got is None and not outer_levels:
        got = _stacked(s, capacity_bytes, by_issuer=True, ways=ways)
    if got is not None:
        return (got.stats, {}), [(m, {}) for m in got.marks], got.by_group
    cache, chain = _caches(capacity_bytes, outer_levels)
    marks, done = [], 0
    for cut in s.cuts:
        play(cache, s, done, cut)
        marks.append(_report(cache, chain))
        done = cut
    play(cache, s, done)
    _dirty_left(cache, chain)
    return _report(cache, chain), marks, None


def _dirty_left(cache: LRUCache, chain: list) -> None:
    left = {}
    for level in [cache] + [c for _, c in chain]:  # a chunk dirty in two levels is left once
        left.update(level.dirty_keys())
    cache.stats.dirty_bytes_left = sum(left.values())


def _cta_lists(prog: HeadPrograms, heads: int) -> list:
    """(head, [(hi, lo, size, is write, kind), ...]) per CTA of ``heads`` heads, in launch order."""
    ctas = []
    for c in range(len(prog.cta_class)):
        p = prog.program(c)
        ctas.append(list(zip(*(p[name].tolist() for name in ("hi", "lo", "size", "write", "kind")))))
    return [(h, program) for h in range(heads) for program in ctas]


def _run(cache: LRUCache, programs: list, slots: int, kv_of_q, leads_group) -> None:
    """Round robin over the resident CTAs, refilling each slot in launch order."""
    pending = iter(programs)
    active = []
    for _ in range(slots):
        nxt = next(pending, None)
        if nxt is None:
            break
        active.append([nxt[0], nxt[1], 0])
    read, write = cache.read, cache.write
    while active:
        still = []
        for cta in active:
            head, program, pc = cta
            hi, lo, size, is_write, kind = program[pc]
            if kind != PER_KV_HEAD or leads_group(head):
                full = (kv_of_q(head) if kind != HEAD else head, hi, lo)
                if is_write:
                    write(full, size, is_write == 2)
                else:
                    read(full, size)
            cta[2] = pc + 1
            if cta[2] < len(program):
                still.append(cta)
            else:
                nxt = next(pending, None)
                if nxt is not None:
                    still.append([nxt[0], nxt[1], 0])
        active = still

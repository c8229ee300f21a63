"""A fully associative LRU cache with write-back and write-allocate, at chunk granularity.

Granularity: the unit of caching is a *chunk* — a fixed run of rows of one tile of one
tensor of one head (see :mod:`.replay`), not a 128-byte line. That keeps a 50 MB L2 to a
few thousand entries and a million requests to a few seconds of Python, at the cost of
rounding partial chunks up. Policy: LRU over chunks; a read miss fetches the chunk from
DRAM; a write allocates the chunk without fetching it (the kernels overwrite whole
tiles) and marks it dirty; a dirty chunk is written to DRAM when evicted. Dirty data
still in the cache when the run ends is not written back — that is what a profiler
measures per kernel (the L2 keeps it) — and is reported apart, as ``dirty_bytes_left``.

Levels chain: a cache made with ``backing=`` (MI300X's L2 in front of its Infinity Cache)
sends its read misses and dirty evictions to that cache instead of DRAM; its
``dram_*`` stats then count what it passed on.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass


@dataclass
class CacheStats:
    """Bytes requested from the cache and bytes that reached DRAM."""

    read_bytes: int = 0          # read requests from the SMs (or from the cache in front)
    read_hit_bytes: int = 0
    write_bytes: int = 0         # write requests from the SMs (or from the cache in front)
    dram_read_bytes: int = 0     # read misses, passed on to the next level or DRAM
    dram_write_bytes: int = 0    # dirty evictions, passed on
    dirty_bytes_left: int = 0    # written but still only in the cache(s) when the kernel ends

    @property
    def hit_rate(self) -> float:
        """Fraction of requested read bytes served by the cache."""
        return self.read_hit_bytes / self.read_bytes if self.read_bytes else 0.0


class LRUCache:
    """``capacity_bytes`` of chunks, least recently used evicted first."""

    def __init__(self, capacity_bytes: int, backing: "LRUCache | None" = None):
        if capacity_bytes <= 0:
            raise ValueError("cache capacity must be positive")
        self.capacity = capacity_bytes
        self.backing = backing
        self.used = 0
        self.entries: OrderedDict = OrderedDict()   # key -> [size, dirty]
        self.stats = CacheStats()

    def read(self, key, size: int) -> bool:
        """A read of chunk ``key``; True on a hit."""
        self.stats.read_bytes += size
        entry = self.entries.get(key)
        if entry is not None:
            self.entries.move_to_end(key)
            self.stats.read_hit_bytes += size
            return True
        self.stats.dram_read_bytes += size
        if self.backing is not None:
            self.backing.read(key, size)
        self._insert(key, size, dirty=False)
        return False

    def write(self, key, size: int, fill: bool = False) -> None:
        """A write of chunk ``key`` (allocated if absent, marked dirty); ``fill``: a reduction,
        whose old value is read from the level behind when the chunk is absent."""
        self.stats.write_bytes += size
        entry = self.entries.get(key)
        if entry is not None:
            entry[1] = True
            self.entries.move_to_end(key)
            return
        if fill:
            self.stats.dram_read_bytes += size
            if self.backing is not None:
                self.backing.read(key, size)
        self._insert(key, size, dirty=True)

    def play(self, keys, sizes, writes) -> None:
        """:meth:`read` or :meth:`write` each request in turn (the same, inlined for speed
        when no cache is behind this one)."""
        if self.backing is not None:
            for key, size, is_write in zip(keys, sizes, writes):
                if is_write:
                    self.write(key, size, fill=is_write == 2)
                else:
                    self.read(key, size)
            return
        entries, stats, insert = self.entries, self.stats, self._insert
        get, to_end = entries.get, entries.move_to_end
        read_bytes = hit_bytes = write_bytes = miss_bytes = 0
        for key, size, is_write in zip(keys, sizes, writes):
            entry = get(key)
            if is_write:
                write_bytes += size
                if entry is None:
                    if is_write == 2:      # a reduction: the old value is read first
                        miss_bytes += size
                    insert(key, size, True)
                else:
                    entry[1] = True
                    to_end(key)
                continue
            read_bytes += size
            if entry is None:
                miss_bytes += size
                insert(key, size, False)
            else:
                hit_bytes += size
                to_end(key)
        stats.read_bytes += read_bytes
        stats.read_hit_bytes += hit_bytes
        stats.write_bytes += write_bytes
        stats.dram_read_bytes += miss_bytes

    def dirty_keys(self) -> dict:
        """key -> size of every chunk written and not yet passed on."""
        return {k: size for k, (size, dirty) in self.entries.items() if dirty}

    def _insert(self, key, size: int, dirty: bool) -> None:
        while self.used + size > self.capacity and self.entries:
            old_key, (old_size, old_dirty) = self.entries.popitem(last=False)
            self.used -= old_size
            if old_dirty:
                self._pass_write(old_key, old_size)
        if size > self.capacity:  # larger than the whole cache: streams through
            if dirty:
                self._pass_write(key, size)
            return
        self.entries[key] = [size, dirty]
        self.used += size

    def _pass_write(self, key, size: int) -> None:
        self.stats.dram_write_bytes += size
        if self.backing is not None:
            self.backing.write(key, size)

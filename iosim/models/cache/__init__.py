"""A hardware-managed cache between on-chip memory and HBM (the L2), and the thread-block
concurrency that decides what shares it.

:mod:`.lru` is the cache (LRU, write-back, write-allocate); :mod:`.playback` turns a
schedule's recorded accesses into the interleaved request stream of concurrently running
thread blocks and plays it through the cache. See docs/cache.md for what is assumed.
"""

from .lru import CacheStats, LRUCache
from .playback import CacheReport, PlayLimit, occupancy
from .plans import Plan, plan, replay

__all__ = ["LRUCache", "CacheStats", "replay", "plan", "Plan", "PlayLimit", "occupancy", "CacheReport"]

"""Write-backs of chunks held in two partitions, under three rules.

On the H200 a line written by one half of the chip is held near its writer and at its home
partition, and the write-near microbenchmark says the writer's copy is dirty too
(docs/validation/2026-12-04-write-backs.md; docs/cache.md, "Two partitions"). The
partitions' plays (:func:`.partitions.play` from stack distances, :class:`.partitions.
PartitionedLRU` request by request) each give their *dirty stays*: a chunk's time in a
partition from a miss until it is evicted, with at least one write. A stay carries the
index of its last write (its *token*: a write and its copy near the writer share one), the
request before which it is written back (``pos``; n: still held at the end), its size and
the group of its last request (:func:`.stack.dirty_stays`).

:func:`joined` counts them under a rule:

* ``"home"`` (shipped): the partitions' plays make the writer's copy clean, so only the
  home's stay is dirty, and it writes itself back;
* ``"first"``: stays of one token are one line: written back when the first is evicted
  (the smallest ``pos``), left dirty when none is;
* ``"each"``: every stay writes its own copy back (an upper bound, the ablation of session
  21).

The kernels' grids fit ``"home"`` best (docs/validation/2026-12-04-write-backs.md, "Session
22"); the other two are ablations of :func:`.partitions.play` and its reference.

A write-back belongs to the group of the home's stay when that stay is written back, else
to the group of the stay that is; a dirty byte left to the home's stay's group where there
is one.
"""

from __future__ import annotations

import numpy as np

RULES = ("first", "each", "home")


def joined(stays: list[dict], homes: np.ndarray, n: int, ends: list[int], width: int | None,
           rule: str = "home") -> tuple[list[int], int, dict | None]:
    """(bytes written back before each of ``ends``, dirty bytes left at the end, with
    ``width``: {"dram_write_bytes", "dirty_bytes_left"} -> bytes per group) of the dirty
    stays of each partition (``stays[p]``: :func:`.stack.dirty_stays`' fields, ``token``
    and ``pos`` indices of the whole stream of n requests; a stay may be given twice, with
    the smaller ``pos`` counting). ``homes``: each request's home partition."""
    if rule not in RULES:
        raise ValueError(f"unknown write-back rule {rule!r}; one of {', '.join(RULES)}")
    token, pos, size, group = (np.concatenate([s[k] for s in stays]).astype(np.int64)
                               for k in ("token", "pos", "size", "group"))
    part = np.concatenate([np.full(len(s["token"]), p, np.int64) for p, s in enumerate(stays)])
    line = token if rule == "first" else token * 2 + part
    rank = (pos >= n) * 2 + (part != homes[token])         # the home's stay written back first
    order = np.lexsort((rank, line))
    line, pos, size, group = line[order], pos[order], size[order], group[order]
    first = np.flatnonzero(np.concatenate([[True], line[1:] != line[:-1]])) if len(line) else np.zeros(0, np.int64)
    written = np.minimum.reduceat(pos, first) if len(first) else pos[:0]
    size, group = size[first], group[first]
    at_ends = [int(size[written < c].sum()) for c in ends]
    kept = written >= n
    by_group = None
    if width is not None:
        by_group = {"dram_write_bytes": np.bincount(group[~kept], size[~kept], minlength=width).astype(np.int64),
                    "dirty_bytes_left": np.bincount(group[kept], size[kept], minlength=width).astype(np.int64)}
    return at_ends, int(size[kept].sum()), by_group


__all__ = ["RULES", "joined"]

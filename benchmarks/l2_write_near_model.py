"""The write-near microbenchmark replayed through the L2 model (runs anywhere): where a
written line is written back to DRAM.

``benchmarks/l2_write_near_ncu.py`` measured on the H200 (docs/validation/2026-12-03-l2-write-near.md):
the blocks on side 0 read X (D bytes), the blocks of the writer's side write Y (W bytes),
side 0 reads X again; ncu counted the DRAM bytes written within the kernel. This plays the
same stream (4 KiB chunks, the H200 profile's two partitions of 16-way sets, 60 MiB) through
:func:`iosim.models.cache.partitions.play` under the three write-back rules of
:mod:`iosim.models.cache.writebacks`: ``"home"`` (a write is dirty at its home only; the copy
near its writer is clean: shipped), ``"first"`` (both copies dirty; the first evicted writes
the line, once: added in session 22) and ``"each"`` (each copy writes itself back: a line
evicted from both is counted twice, the upper bound).

    python benchmarks/l2_write_near_model.py [DIR]     (default: the committed run)
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from iosim.models.cache import partitions  # noqa: E402
from iosim.models.cache.writebacks import RULES  # noqa: E402
from l2_shared_ncu import summary  # noqa: E402

CHUNK = 4096
L2_BYTES = 62_914_560
DEFAULT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "validation",
                       "2026-12-03-l2-write-near")


def stream(read_bytes: int, write_bytes: int, writer: int):
    """(keys, sizes, writes, sides) of X read by side 0, Y written by ``writer``, X read again."""
    nx, ny = read_bytes // CHUNK, write_bytes // CHUNK
    x, y = np.arange(nx), 10 ** 9 + np.arange(ny)
    keys = np.concatenate([x, y, x])
    writes = np.concatenate([np.zeros(nx, np.int64), np.ones(ny, np.int64), np.zeros(nx, np.int64)])
    sides = np.concatenate([np.zeros(nx, np.int64), np.full(ny, writer, np.int64), np.zeros(nx, np.int64)])
    return keys, np.full(len(keys), CHUNK), writes, sides


def rows(raw_dir: str = DEFAULT) -> list[dict]:
    """Per measured case with something written: the measured DRAM bytes written (MB) and the
    model's under each rule."""
    out = []
    for case, got in summary(raw_dir, "l2_write_near.csv"):
        if not case["write_bytes"]:
            continue
        keys, sizes, writes, sides = stream(case["read_bytes"], case["write_bytes"], case["writer"])
        played = {rule: partitions.play(keys, sizes, writes, sides, L2_BYTES, ways=16, homes=partitions.home(keys),
                                        rule=rule).stats.dram_write_bytes / 1e6 for rule in RULES}
        out.append({"read_mb": case["read_bytes"] / 1e6, "write_mb": case["write_bytes"] / 1e6,
                    "writer": case["writer"], "measured": got["dram__bytes_write.sum"], **played})
    return out


def markdown(found: list[dict]) -> str:
    lines = ["| D (MB) | W (MB) | writer | DRAM written, H200 | model: dirty at home (shipped) | model: first eviction "
             "writes | model: each copy writes |", "|---:|---:|:---:|---:|---:|---:|---:|"]
    lines += [f"| {r['read_mb']:g} | {r['write_mb']:g} | {r['writer']} | {r['measured']:.1f} | {r['home']:.1f} "
              f"| {r['first']:.1f} | {r['each']:.1f} |" for r in found]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(rows(sys.argv[1] if len(sys.argv) > 1 else DEFAULT)))

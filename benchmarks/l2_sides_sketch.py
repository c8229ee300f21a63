"""Would another rule for which L2 partition a thread-block slot reads through explain DRAM reads the model
misses? A sketch, outside the model (docs/validation/2026-12-07-s54.md).

The model puts slot s on SM s mod S and SMs 0 … S/2 − 1 on side 0 (``partitions.sides``). On the GPU the
sides are runs of 2-8 SM ids, and the launch's dispatch order puts consecutive thread blocks on one side in
runs of about 8-26 (docs/cache.md, "Two partitions"; docs/validation/2026-12-02-l2-sides/order.json). Under
the index halves, blocks a multiple of about S apart land on one side: a GQA decode backward's query heads of
one K/V head are B · ⌈N_kv / B_c⌉ blocks apart, so at B = 2 and N_kv = 8,192 (128 blocks) the model has the
four readers of a K/V tile on one side nearly always (1.18 sides on average), where the measured dispatch
order and side map give 1.95. Here the slots' sides are played instead

* ``runs R``: runs of R consecutive SMs, each run's side by a hash (a slot on SM s mod S, as the model has it);
* ``hash``: each SM's side by a hash;

over committed rows, each main kernel's DRAM reads against the shipped model's:

    python benchmarks/l2_sides_sketch.py docs/validation/2026-12-04-status/rows/*.json --runs 8,16 [--hash]
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_frames_sketch import arguments, compare, selected  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from iosim.models.cache import partitions  # noqa: E402


@contextlib.contextmanager
def sides_in_runs(run: int):
    """The model with slot s, on SM s mod S as the model has it, on side hashed((s mod S) // run): an SM's
    slots share its side (run 1: each SM's side hashed, as :func:`partitions.home` hashes a chunk's home). One
    hash, not a draw of many: the salt is fixed."""
    shipped = partitions.sides
    partitions.sides = lambda slots, sm_count: partitions.home(np.asarray(slots, np.int64) % sm_count // run + 777)
    try:
        yield
    finally:
        partitions.sides = shipped


def main() -> None:
    ap = arguments(__doc__)
    ap.add_argument("--runs", default="16", help="run lengths, comma-separated")
    ap.add_argument("--hash", action="store_true", help="also each slot's side by a hash")
    a = ap.parse_args()
    runs = [int(r) for r in a.runs.split(",")] + ([1] if a.hash else [])
    variants = [("hash" if r == 1 else f"runs {r}", functools.partial(sides_in_runs, r)) for r in runs]
    print(compare(selected(a.rows, tuple(a.kernels.split(",")), a.max_kv_mb, a.gqa_decode), a.hw, variants))


if __name__ == "__main__":
    main()

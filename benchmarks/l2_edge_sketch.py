"""Does the L2 model know where its own DRAM reads are fragile? A study over committed rows, outside the model
(docs/validation/2026-12-07-s56-check.md).

The L2's room a launch really has is known to a tenth or so: the kernels' spill frames hold 1.6-4.5 MB of it
(session 54), a write's near copy comes back to its home when it leaves (session 55), two chips of one model
differ by 10 % in near misses. Where a launch's working set sits at the room's edge, a tenth less or more room
moves its DRAM reads a lot, and neither the model nor the GPU's sets are then steady. Here each row's main kernel
is played again with ``--scales`` times the room (0.9 and 1.1), and the spread of its DRAM reads over the
three plays, (most − least) / the model's, is set beside whether the model's reads miss the measured by more
than 10 %: every such miss, and ``--sample`` rows within 10 % drawn at random (``--seed``):

    python benchmarks/l2_edge_sketch.py docs/validation/2026-12-04-status/rows/*.json --sample 60 --seed 1 \
        [--hw h200] [--max-kv-mb 15.7] [--scales 0.9,1.1] [--replay]

One line a row (``miss`` or ``within``, the launch, the model's reads over the measured at each room), then how
many of each class spread by more than 5 % and 10 %. The long causal forwards (``--max-kv-mb``, as
``l2_frames_sketch``) are left out: their plays take minutes, and their note marks them.
"""

from __future__ import annotations

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_frames_sketch import MAIN, arguments, dram, launch_fields, scaled_room, selected  # noqa: E402

from iosim.run.l2_edge import EDGE, spread  # noqa: E402  (the model's: simulate --l2-edge)

#: the spreads each class is counted past
SPREADS = (EDGE, 0.1)


def table_lines(text: str) -> list:
    """(class, the launch's fields as printed, {room scale: reads over measured}) of each line :func:`main` printed
    (its closing counts, lines of "#", left out)."""
    out = []
    for line in text.splitlines():
        if not line.startswith("#"):
            cells = line.split()
            out.append((cells[0], cells[1:9], {float(k): float(v) for k, v in (c.split("=") for c in cells[9:])}))
    return out


def ratios(row: dict, hw: str, scales: tuple, base: float) -> list:
    """The row's main kernel's DRAM reads over the measured: ``base`` (the model's), then at each of ``scales``."""
    m = row["measured"]["dram_read"]
    out = [base]
    for scale in scales:
        with scaled_room(scale):
            out.append(dram(row, hw) / m)
    return out


def classes(rows: list, sample: int, seed: int, base) -> list:
    """(class, row, its ``base``): every row whose reads miss by more than 10 %, then ``sample`` of the others at
    random."""
    bases = [base(r) for r in rows]
    within = [(r, b) for r, b in zip(rows, bases) if abs(b - 1) <= 0.1]
    picked = random.Random(seed).sample(within, min(sample, len(within)))
    return [("miss", r, b) for r, b in zip(rows, bases) if abs(b - 1) > 0.1] + [("within", r, b) for r, b in picked]


def main() -> None:
    ap = arguments(__doc__)
    ap.add_argument("--sample", type=int, default=60, help="rows within 10 %% drawn at random")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scales", default="0.9,1.1")
    ap.add_argument("--replay", action="store_true",
                    help="the model's reads played now, not the rows' (rows committed as predicted by an older model)")
    a = ap.parse_args()
    scales = tuple(float(x) for x in a.scales.split(","))
    if any(not 0 < x for x in scales):
        ap.error("--scales: each a number above 0")
    kernels = tuple(a.kernels.split(","))
    if not set(kernels) <= set(MAIN):
        ap.error(f"--kernels: of {', '.join(MAIN)}")
    missing = [p for p in a.rows if not os.path.isfile(p)]
    if missing:
        ap.error(f"no such rows file: {missing[0]}")
    counts = {}

    def base(r):
        return (dram(r, a.hw) if a.replay else r["predicted"]["dram_read"]) / r["measured"]["dram_read"]
    for kind, r, b in classes(selected(a.rows, kernels, a.max_kv_mb, a.gqa_decode), a.sample, a.seed, base):
        got = ratios(r, a.hw, scales, b)
        c = counts.setdefault(kind, [0] * (1 + len(SPREADS)))
        c[0] += 1
        for i, edge in enumerate(SPREADS):
            c[1 + i] += spread(got) > edge
        print(kind, r["kernel"], *(f"{k}={v}" for k, v in launch_fields(r).items()),
              " ".join(f"{s:g}={x:.3f}" for s, x in zip((1.0, *scales), got)), flush=True)
    for kind, c in counts.items():
        print(f"# {kind}: {c[0]} rows; spread past " + ", ".join(f"{e:.0%}: {n}" for e, n in zip(SPREADS, c[1:])))


if __name__ == "__main__":
    main()

"""Where a launch's DRAM reads sit at the L2's edge: the L2 model played again at a tenth less and a tenth more room.

The room a launch really has in the L2 is known to about a tenth: the kernels' spill frames hold some of it, a
write's near copy comes back to its home when it leaves, and two chips of one model differ by a tenth in near
misses (docs/known-limits.md). Where a launch's working set sits near that room, a tenth less or more of it moves
its DRAM reads a lot, and the model's figure is then fragile. ``Options(l2_edge=True)`` (``iosim simulate
--l2-edge``) plays every launch's L2 again at :data:`SCALES` times the room (the L2 only: a cache behind it keeps
its size) and reports, per launch, each kernel's DRAM reads at each room, and the spread of its attention kernel
(the one that asks the L2 for the most bytes, not an element-wise one that reads the most from DRAM), (most − least)
/ the reads at the room itself. A spread past :data:`EDGE` is said in the launch's note.

Measured (session 56, docs/validation/2026-12-07-s56-check.md, played outside the model then): of the H200's main
kernels whose modelled reads miss the measured by more than 10 % (the long causal forwards left out), 27 of 33
spread past 5 %, and of 120 drawn at random among those within 10 %, 12 did. So a spread past 5 % marks a launch
whose DRAM figure is fragile; a small spread does not promise the figure (six misses had one). The range is no
interval for the GPU's reads: it held them on 6 of those 33 misses (docs/known-limits.md). It costs two more plays
of the L2 model: a run took 2-2.5 times as long (docs/performance.md).
"""

from __future__ import annotations

from .unrequested import with_unrequested

#: the L2 room's scales played beside the room itself
SCALES = (0.9, 1.1)
#: a spread past this is said in the launch's note
EDGE = 0.05


def edges(launches, played: list, play) -> list[dict | None]:
    """Per launch of ``launches``, its ``l2_edge`` entry (None where its L2 was not played), from ``played`` (per
    launch, its (CacheReport, count) or None, at the room) and ``play(scale)`` (the same at ``scale`` times the
    room). The reads are the result's: with each kernel's code (:func:`.unrequested.with_unrequested`)."""
    scaled = [play(scale) for scale in SCALES]
    out = []
    for i, (launch, x) in enumerate(zip(launches, played)):
        if x is None:
            out.append(None)
            continue
        reports = [with_unrequested(r, launch) for r in (x[0], *(s[i][0] for s in scaled))]
        reads = {k: [r.kernels[k].dram_read_bytes for r in reports] for k in reports[0].kernels}
        out.append(_entry(reads, max(x[0].kernels, key=lambda k: x[0].kernels[k].read_bytes)))
    return out


def spread(values: list) -> float:
    """(most − least) / the first (the reads at the room itself) of one kernel's DRAM reads at each room; 0 where
    the first is 0."""
    return (max(values) - min(values)) / values[0] if values[0] else 0.0


def _entry(reads: dict, kernel: str) -> dict:
    """The entry for one launch's kernels' DRAM reads [at the room, at each of SCALES], spread by ``kernel``'s."""
    at = reads[kernel]
    width = spread(at)
    entry = {"room_scales": [1.0, *SCALES], "dram_read_bytes": reads, "kernel": kernel, "spread": round(width, 4)}
    lo, hi = min(at), max(at)
    range_ = f"its {kernel} kernel reads {lo / 1e6:,.1f}-{hi / 1e6:,.1f} MB from DRAM at {SCALES[0]:g}-{SCALES[1]:g} " \
             f"times the L2's room ({at[0] / 1e6:,.1f} MB at the room; spread {width:.1%})"
    if width > EDGE:
        entry["note"] = (f"at the L2 room's edge: {range_}; the DRAM figure is fragile here (a sign, not an interval "
                         "for the GPU's reads): on the H200, 27 of 33 main kernels whose modelled reads missed by more "
                         "than 10 % spread past 5 %, 12 of 120 within 10 % did (iosim/run/l2_edge.py)")
    else:
        entry["note"] = f"not at the L2 room's edge: {range_}"
    return entry

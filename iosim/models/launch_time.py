"""A launch's floor and memory times, and how the kernel time model combines them with compute.

:mod:`iosim.models.kernel_time` and :mod:`iosim.models.triton_time` time a launch as its floor
(an empty launch, or the measured read-then-write kernel; plus a forward launch's fill and
drain, :mod:`.block_fill`) plus the longest of compute and the memory times: every requested
byte at the L2's rate, the bytes reaching DRAM at its read and write rates and, for a kernel
without matrix products, its loads and stores at the measured copy kernel's rate.
"""

from __future__ import annotations

from .block_fill import FILL
from .roofline import TimePrediction

#: the per-resource key of an element-wise kernel's loads and stores at the measured copy rate
COPY = "loads and stores at the copy rate"


def memory_seconds(rates, reads: int, writes: int, dram_rw: tuple, copying: bool = False) -> dict:
    """A launch's floor and memory times: {"launch", "L2" (where the profile has one), "DRAM",
    and for a ``copying`` kernel :data:`COPY`}; ``dram_rw``: (read, written) bytes reaching
    DRAM. The floor: an empty launch, or for a kernel that reads then writes the smallest such
    kernel's measured duration. A kernel that loads tiles and stores what it makes of them (no
    matrix products: dot_do_o, convert_dq, the split-KV combine) moves its requested bytes no
    faster than the measured copy kernel, even where the L2 keeps its writes."""
    floor = rates.read_write_s if reads and writes and rates.read_write_s else rates.launch_s
    per: dict[str, float] = {"launch": floor}
    if rates.l2_bytes:
        per["L2"] = (reads + writes) / rates.l2_bytes
    dram_r, dram_w = dram_rw
    per["DRAM"] = dram_r / rates.dram_bytes + dram_w / (rates.dram_write_bytes or rates.dram_bytes)
    if copying and rates.copy_bytes and reads and writes:
        per[COPY] = (reads + writes) / rates.copy_bytes
    return per


def combine(per: dict, compute: float, units) -> TimePrediction:
    """Memory overlaps compute: the floor (and a forward launch's fill and drain) plus the
    longer of ``compute`` (split over ``units`` in ``per``) and the memory times in ``per``;
    what bounds it, in words."""
    floor, fill = per["launch"], per.get(FILL, 0.0)
    memory = max(per.get("L2", 0.0), per["DRAM"], per.get(COPY, 0.0))
    if compute >= memory and compute > 0:
        parts = sorted(((k, per[k]) for k in units), key=lambda kv: -kv[1])
        bound = "compute (" + ", ".join(f"{k} {v / compute:.0%}" for k, v in parts) + ")"
    elif memory > floor:
        bound = max(("L2", "DRAM", COPY), key=lambda k: per.get(k, 0.0))   # ties: the first
    else:
        bound = "launch"
    # the fill and drain stall the SMs, not the memory: its bytes are in the memory times
    return TimePrediction(floor + max(compute + fill, memory), bound, per)


def each_kernel(rates, requested: dict, dram: dict, work: dict, compute) -> dict:
    """kernel -> :class:`TimePrediction`: each kernel's memory times (:func:`memory_seconds`)
    and ``compute(heads, works)``'s (seconds, {unit: seconds}) combined (:func:`combine`);
    arguments as :func:`iosim.models.kernel_time.predict`."""
    out = {}
    for kernel, (reads, writes) in requested.items():
        per = memory_seconds(rates, reads, writes, dram.get(kernel, (reads, writes)))
        seconds, units = compute(*work.get(kernel, (0, [])))
        per.update(units)
        out[kernel] = combine(per, seconds, units)
    return out


__all__ = ["COPY", "FILL", "combine", "each_kernel", "memory_seconds"]

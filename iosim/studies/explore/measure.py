"""Count one tile the way ``iosim simulate`` would, and bound what the L2 model would add.

Every candidate is counted first *without* the L2 model (fast: the engine groups equal
tile steps). That gives its shared-memory and register need, its HBM bytes (exact, the
L2 does not change them) and the time model's per-resource times. When the L2 is
modelled the time and the DRAM bytes need the replay of every access, which costs about
0.15 ms per tile step in Python; this module bounds them from the first count instead:

* **time, roofline**: the L2 model only changes the bytes on the DRAM's link, so the
  slowest *other* resource is a lower bound, and the time without the L2 an upper bound
  (the L2 never adds DRAM traffic; tests/invariants/test_explore_model.py checks it).
  When a resource other than the DRAM link bounds the time without the L2, both bounds
  are the same number: the time is exact without a replay.
* **time, kernel time model**: per kernel, the launch floor plus the largest of compute
  (with a forward launch's fill and drain, without its waits for keys from DRAM), the L2's
  traffic and the copy-rate time is a lower bound (DRAM traffic only ever adds to it); exact
  when the DRAM's share bounds no kernel and no forward waits for DRAM.
* **DRAM bytes** (read + written back + left dirty): at most every byte requested; at
  least nothing. No count without the replay bounds them from below: the L2 merges a
  line's rewrites into one write-back (FA1 rewrites O, ℓ, m at every inner step; the
  backward accumulates dQ), and serves rereads, so the HBM requests (even the writes
  alone) can be many times the DRAM bytes. Ranked by DRAM bytes, every tile is replayed
  until the budget runs out (``--replays``); those left are shown as intervals.

:func:`replay` runs the same tile with the L2 model: the exact time and DRAM bytes.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor

from ...hardware import HardwareProfile
from ...models.kernel_time import COMPUTE, COPY, DRAM_WAIT, FILL
from ...run import Options, Setup, prepare
from ...run.launches import run_launches
from ...workload.problem import BlockSizes, Problem
from ..schedule_files import resolve_schedule
from .registers import tile_registers

#: shared memory given to the first count, so a tile that does not fit is still counted
UNLIMITED_BYTES = 1 << 60
#: exactness needs the DRAM's time strictly below the rest (rounding of sums)
_MARGIN = 1e-9

_LOCAL = threading.local()


def _worker() -> dict:
    """This thread's state for the counts (a Dask worker may run several tasks at once, one
    per thread; a process's tasks run in its main thread)."""
    state = getattr(_LOCAL, "state", None)
    if state is None:
        state = _LOCAL.state = {}
    return state


def init_worker(profile: HardwareProfile, algorithm, problem: Problem, passes: str, option_kwargs: dict,
                cache: bool | str) -> None:
    """State every count shares (run in each worker, and here). ``option_kwargs``: the
    :class:`~iosim.Options` fields every run takes (plain values: they travel to workers);
    ``cache``: the L2 model off (False), on (True), or on as simulate decides per tile ("auto").
    ``algorithm``: a built-in name, a function, or a
    :class:`~iosim.studies.schedule_files.ScheduleFile`, loaded here (in the worker)."""
    options = Options(**option_kwargs)
    _worker().update(profile=profile, algorithm=resolve_schedule(algorithm), problem=problem, passes=passes,
                     options=options, cache=cache, base=None, measured={}, tile_options={})
    if options.kernel is not None:
        _worker()["base"] = prepare(profile, algorithm, problem, passes=passes,
                                    options=dataclasses.replace(options, cache=False, sram_bytes=None))


def kernel_base() -> Setup | None:
    """The real-kernel preset's setup (its own tiles), or None without a preset."""
    return _worker()["base"]


def count_tile(blocks: tuple[int, int], *, cache: bool = False, sram_bytes: int | None = UNLIMITED_BYTES):
    """The :class:`~iosim.Result` of one tile, with or without the L2 model.

    Without a real-kernel preset this is :func:`iosim.simulate` with ``blocks``; with one
    (``Options.kernel``) it is the preset's launches with every launch's tile set to
    ``blocks`` (same warps, threads and registers) — for the kernel's own tile exactly
    what ``simulate(..., options=Options(kernel=...))`` runs.
    """
    return run_launches(tile_setup(blocks, cache=cache, sram_bytes=sram_bytes), "count", None)


def tile_setup(blocks: tuple[int, int], *, cache: bool = False, sram_bytes: int | None = UNLIMITED_BYTES) -> Setup:
    """The setup :func:`count_tile` runs for one tile (``prepare``, or the preset's launches
    with the tile)."""
    w = _worker()
    options = w["tile_options"].get((cache, sram_bytes))
    if options is None:   # the same for every tile of the point (Options is frozen): made once
        options = w["tile_options"][cache, sram_bytes] = dataclasses.replace(w["options"], cache=cache,
                                                                              sram_bytes=sram_bytes)
    if options.kernel is None:
        return prepare(w["profile"], w["algorithm"], w["problem"], passes=w["passes"], blocks=blocks, options=options)
    return kernel_setup(w["base"], blocks, options)


def kernel_setup(base: Setup, blocks: tuple[int, int], options: Options) -> Setup:
    """A real kernel's setup with every launch's tile replaced by ``blocks``."""
    chosen = BlockSizes(*blocks)
    launches = []
    for launch in base.launches:
        tile = launch.kernel.tile.with_blocks(chosen.block_q, chosen.block_kv)
        kernel = dataclasses.replace(launch.kernel, tile=tile)
        launches.append(dataclasses.replace(launch, blocks=chosen, kernel=kernel))
    sram = base.sram_bytes if options.sram_bytes is None else options.sram_bytes
    return dataclasses.replace(base, options=options, blocks=chosen, launches=tuple(launches), sram_bytes=sram)


def measure(blocks: tuple[int, int]) -> tuple:
    """The first count of one tile, as plain numbers: (B_r, B_c, shared memory need,
    registers (:func:`~.registers.tile_registers`), HBM read, HBM write, time min, time max, bound, tile steps per head,
    kernel model used). Counted once per worker setup: the grid's search for the tiles
    that fit asks for the same counts the ranking then reads (:func:`measured`)."""
    memo = _worker()["measured"]
    known = memo.get(blocks)
    if known is None:
        known = memo[blocks] = _measure(blocks)
    return known


def measured(blocks: tuple[int, int]) -> tuple | None:
    """What :func:`measure` gave for ``blocks`` since the last :func:`init_worker`, or None."""
    return _worker()["measured"].get(blocks)


def _measure(blocks: tuple[int, int]) -> tuple:
    setup = tile_setup(blocks)
    r = run_launches(setup, "count", None, cta_work=False)   # the tuple reads no thread block's work
    w = _worker()
    lo, exact = time_bounds(r, w["profile"]) if w["cache"] else (r.time.predicted_s, True)
    hi = r.time.predicted_s
    regs = tile_registers(r.registers, w["options"].kernel)
    return (blocks[0], blocks[1], r.sram.peak_bytes, regs, r.hbm.read_bytes, r.hbm.write_bytes,
            hi if exact else min(lo, hi), hi, r.time.bound, setup.steps_per_head, bool(r.kernel_times))


def shared_memory_need(blocks: tuple[int, int]) -> int:
    """Peak shared-memory bytes of one tile (for the grid's bisection)."""
    return measure(blocks)[2]


def fits(blocks: tuple[int, int], sram_bytes: int, register_bytes: int | None) -> bool:
    """Whether one tile fits the shared memory, and the register file when one is given."""
    need = measure(blocks)
    return need[2] <= sram_bytes and (register_bytes is None or need[3] <= register_bytes)


def replay(blocks: tuple[int, int]) -> tuple:
    """The tile with the L2 model, as ``simulate`` runs it: (time, bound, DRAM bytes read +
    written back + left dirty). As simulate decides where the point's default does (the
    worker's ``cache`` "auto"): past the L2 model's budget from a sample of the chunks, which
    the bound says, and past that without it, every requested byte going to DRAM, and the
    bound says why."""
    r = count_tile(blocks, cache=_worker()["cache"] or True, sram_bytes=None)
    if r.cache is None:
        return r.time.predicted_s, f"{r.time.bound}; {r.l2_off}", r.hbm.read_bytes + r.hbm.write_bytes
    s = r.cache.total
    return r.time.predicted_s, r.time.bound + sampled_note(r.cache), s.dram_read_bytes + s.dram_write_bytes + \
        s.dirty_bytes_left


def sampled_note(report) -> str:
    """What a bound adds where the L2 model's DRAM bytes come from a sample of the chunks
    (or windows of the rounds)."""
    got = (report.sampled or {}).values()
    rates = sorted({round(1 / k.rate) for k in got if k.model == "sampled"})
    note = f"; DRAM bytes estimated by sampling 1 in {'/'.join(map(str, rates))} chunks" if rates else ""
    return note + ("; DRAM bytes estimated in windows of the rounds" if any(k.model == "windowed" for k in got) else "")


def replay_many(keys: list, worker_args: tuple, jobs: int) -> list:
    """:func:`replay` of each tile, on up to ``jobs`` processes (each set up once with
    ``worker_args``, the arguments of :func:`init_worker`), in the order of ``keys``."""
    if jobs <= 1 or len(keys) <= 1:
        return [replay(k) for k in keys]
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    with ProcessPoolExecutor(max_workers=min(jobs, len(keys)), mp_context=ctx, initializer=init_worker,
                             initargs=worker_args) as pool:
        return list(pool.map(replay, keys))


def _is_dram_link(resource: str, dram: str) -> bool:
    return resource.startswith(f"link {dram}-") or (resource.startswith("link ") and resource.endswith(f"-{dram}"))


def time_bounds(result, profile: HardwareProfile) -> tuple[float, bool]:
    """(a lower bound on the time with the L2 model, whether it is exact) from a result
    counted without it (see the module docstring)."""
    dram = profile.dram.name
    if result.kernel_times:
        lo, exact = 0.0, True
        for t in result.kernel_times.values():
            per = t.per_resource_s
            # as launch_time.combine: the fill stalls compute only; L2 and copy times need no L2 model.
            # The forward's waits for keys from DRAM grow with the DRAM bytes (here all of them, as
            # without the L2 model): left out of the bound, and where there are any, not exact
            rest = max(sum(per.get(k, 0.0) for k in COMPUTE if k != DRAM_WAIT) + per.get(FILL, 0.0),
                       per.get("L2", 0.0), per.get(COPY, 0.0))
            lo += per.get("launch", 0.0) + rest
            exact = exact and per.get("DRAM", 0.0) < rest * (1 - _MARGIN) and per.get(DRAM_WAIT, 0.0) <= rest * _MARGIN
        return (result.time.predicted_s, True) if exact else (lo * (1 - _MARGIN), False)
    per = result.time.per_resource_s
    others = [v for k, v in per.items() if not _is_dram_link(k, dram)]
    lo = max(others, default=0.0)
    exact = all(v < lo * (1 - _MARGIN) for k, v in per.items() if _is_dram_link(k, dram))
    return (result.time.predicted_s, True) if exact else (lo, False)


__all__ = ["init_worker", "kernel_base", "count_tile", "measure", "measured", "replay", "replay_many", "time_bounds", "shared_memory_need", "fits",
           "UNLIMITED_BYTES"]

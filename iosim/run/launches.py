"""Count a setup's launches one after another, apply the models to each, and combine.

A paper algorithm is one launch; a real-kernel preset is a launch per pass; decode's
layout runs the problem the kernel really runs and reports the user's. Each launch is
counted once (:func:`iosim.run.count.count_launch`); the models then read the counts:
the L2 model the recorded accesses, the roofline the link bytes and operations, the
kernel time model each thread block's work, Theorem 2 the problem and M.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging

import numpy as np
from threadpoolctl import threadpool_limits

from ..errors import ProblemError
from ..models.cache import PlayLimit, partitions, plan
from ..models.cache.uniform import uniform_programs
from ..models.roofline import predict_time
from ..models.theory import THEOREM_BY_PASSES, theorem2
from ..schedules import get_schedule, options_for
from ..workload.inputs import random_inputs
from ..workload.layouts import kernel_inputs, user_outputs
from ..workload.masks import density
from ..workload.problem import BlockSizes
from . import l2_edge
from .combine import combine_results
from .count import Counted, count_launch
from .head_order import head_order
from .kernel_timing import blocks_per_sm, time_model, with_kernel_times
from .options import Options
from .result import L2_OFF, Result
from .setup import AUTO_REQUESTS, MAX_REQUESTS, SAMPLE_REQUESTS, WINDOW_SHARE, Launch, Setup
from .shared_lines import interleaved, shared_lines
from .unrequested import with_unrequested

#: where a long play is announced (shown by the command line, :mod:`iosim.cli.main`; silent in a library)
LOG = logging.getLogger("iosim")


def run_launches(setup: Setup, mode: str, inputs: dict[str, np.ndarray] | None, cta_work: bool = True) -> Result:
    """Every launch of ``setup`` counted in order and reported as one :class:`Result`.
    Without ``cta_work`` a run that models neither the L2 nor a real kernel's time keeps no
    thread block's work (its ``cta_work`` is empty; :func:`iosim.run.count.count_launch`):
    for a caller that reads only the totals and the roofline time."""
    if setup.options.l2_edge and not (setup.options.cache and setup.profile.cache is not None):
        why = f"profile {setup.profile.name} has no cache" if setup.profile.cache is None else "the cache is off"
        raise ProblemError(f"l2_edge plays the L2 model at 0.9 and 1.1 times the L2's room, but {why}",
                           field="l2_edge")
    keep = mode == "numeric" or bool(cta_work or setup.options.cache or setup.options.kernel is not None)
    with threadpool_limits(limits=1, user_api="blas") if mode == "numeric" else contextlib.nullcontext():
        result = _run_all(setup, mode, _numeric_inputs(setup, inputs) if mode == "numeric" else inputs, keep)
    return dataclasses.replace(result, notes=setup.notes) if setup.notes else result


def cache_plans(setup: Setup, room: float = 1.0, counted: list | None = None) -> tuple[list, str | None]:
    """Each launch's (:class:`~iosim.models.cache.Plan`, the count that recorded it) (None
    each where the L2 model is off: not asked for, or no cache in the profile), and why it
    is off where it was on by default (None: with the budgets in use every run of a profile
    with a cache has the model). A count run of each launch records its accesses (the same
    in numeric mode); a run whose streams would hold more than
    :data:`~iosim.run.setup.MAX_REQUESTS` requests (past :data:`~iosim.run.setup.AUTO_REQUESTS`
    when it was not asked for) is modelled from a sample of about
    :data:`~iosim.run.setup.SAMPLE_REQUESTS` requests, of its chunks
    (:mod:`iosim.models.cache.sampled`) or, for kernels out of lockstep and where that is past
    the limit too or cannot be made, in windows of its thread blocks' rounds
    (:mod:`iosim.models.cache.windows`) from :data:`~iosim.run.setup.WINDOW_SHARE` times as
    many (:func:`_budgets`). Past the limit each launch is sampled on its own budgets, so its DRAM
    bytes do not depend on the passes run beside it; within the limit every launch is played
    whole (the limit bounds what a run holds in memory at once). ``room``: the L2's capacity played, times
    the profile's (:mod:`.l2_edge`); ``counted``: the launches' recorded counts, where a play at another room
    already made them."""
    if not setup.options.cache:
        return [None] * len(setup.launches), None
    auto = setup.options.cache == "auto"
    counted = counted or [count_launch(setup.profile, l, setup.options, setup.sram_bytes, "count", None, record=True)
                          for l in setup.launches]
    plans = [_cache_plan(setup, l, c, room) for l, c in zip(setup.launches, counted)]
    requests = sum(p.requests for p in plans)
    limit = AUTO_REQUESTS if auto else MAX_REQUESTS
    if requests <= limit:
        if requests > AUTO_REQUESTS:
            LOG.info("iosim: the L2 model plays all %s requests of this run, as asked (past the default budget "
                     "of %s, which plays a sample); this can take minutes", f"{requests:,}", f"{AUTO_REQUESTS:,}")
        elif (in_lines := sum(p.in_lines() for p in plans)) > AUTO_REQUESTS:
            LOG.info("iosim: the L2 model plays all %s requests of this run as about %s requests for the 128-byte "
                     "lines that several heads' rows share ((B, N, H, d) inputs); this can take minutes",
                     f"{requests:,}", f"{in_lines:,}")
        return list(zip(plans, counted)), None
    samples = [_sampled(p, limit) for p in plans]
    if None not in samples:
        return list(zip(samples, counted)), None
    why = f"its streams would hold {requests:,} requests, more than {limit:,}, and no sample of them fits"
    if auto:             # not with the budgets in use: a windowed sample is about SAMPLE_REQUESTS
        return [None] * len(plans), f"{L2_OFF}{why}"
    raise ProblemError(f"the L2 model would play {requests:,} requests, more than {limit:,}, and no sample of them "
                       "fits: model the run without it (cache off, --no-cache)", field="cache")


def _sampled(plan, limit: int):
    """A sample of ``plan``'s chunks, or else windows of its rounds, within ``limit`` requests
    (:func:`_budgets`); None where neither is."""
    for how in ("sampled", "windowed"):
        sample = getattr(plan, how)(*_budgets(limit))
        if sample is not None and sample.requests <= limit:
            return sample
    return None


def _budgets(limit: int) -> tuple[int, int]:
    """A launch's sample budgets: :data:`SAMPLE_REQUESTS` for a sample of the chunks, and
    :data:`WINDOW_SHARE` times that, within ``limit``, for its kernels played in windows."""
    return SAMPLE_REQUESTS, min(limit, WINDOW_SHARE * SAMPLE_REQUESTS)


def l2_by_default(setup: Setup) -> bool:
    """Whether ``iosim simulate`` models the L2 for ``setup`` when not told: wherever the
    profile has a cache (:meth:`Setup.cache_by_default`), at any size (:func:`cache_plans`)."""
    return setup.cache_by_default()


def _played(setup: Setup, planned: list, why: str | None) -> tuple[list, str | None]:
    """Each launch's (CacheReport, the count) for the (plan, count) of :func:`cache_plans`,
    played; where that would pass :data:`MAX_REQUESTS` (the heads' extension needed more
    heads than planned) or a sample of the chunks cannot be played from stack distances (a
    chunk of two sizes), that launch in windows of the rounds instead
    (:meth:`~iosim.models.cache.Plan.windowed`, :func:`_budgets`)."""
    parts = 2 if _two_partitions(setup.profile) else 1

    def played(plan, limit=None):
        return dataclasses.replace(plan.play(limit), partitions=parts)

    def one(x):
        if x is None:
            return None
        try:
            return played(x[0], MAX_REQUESTS), x[1]
        except PlayLimit:
            windowed = x[0].windowed(*_budgets(MAX_REQUESTS))
        if windowed is None:                                       # a plan made without the intervals
            raise ProblemError("the L2 model cannot play this run: model it without the L2 (cache off, --no-cache)",
                               field="cache")
        return played(windowed), x[1]
    return [one(x) for x in planned], why


def _run_all(setup: Setup, mode: str, inputs: dict[str, np.ndarray] | None, cta_work: bool = True) -> Result:
    """The launches counted in order, as one result. In numeric mode the BLAS runs on one
    thread (the caller sees to it): the products are of small tiles, and on a contended
    many-core machine a threaded BLAS waits for cores (issue 15 measured 0.45 s alone and
    23 s contended); on 2 cores the two settings are within 20 % (docs/performance.md)."""
    planned, l2_off = _played(setup, *cache_plans(setup))
    counts = [x[1] for x in planned] if setup.options.l2_edge and l2_off is None else None
    edges = l2_edge.edges(setup.launches, planned, lambda room: _played(setup, *cache_plans(setup, room, counts))[0]) \
        if counts else [None] * len(planned)
    results = []
    for launch, l2 in zip(setup.launches, planned):
        result = _run_one(setup, launch, mode, inputs, l2, cta_work)
        if mode == "numeric" and setup.options.kernel is not None and launch.passes == "forward":
            inputs = {**inputs, "O": result.outputs["O"], "L": result.outputs["L"]}
        results.append(result if l2_off is None else dataclasses.replace(result, l2_off=l2_off))   # None: as made
    if setup.options.kernel is None:
        return results[0]
    options = {**results[0].options, "kernel": setup.options.kernel,
               "launches": [{**launch.kernel.describe(), "time_model": time_model(r, launch.kernel.tile),
                             **shared_lines(launch, r), **({"l2_edge": e} if e else {})}
                            for launch, r, e in zip(setup.launches, results, edges)]}
    combined = combine_results(results, algorithm=setup.algorithm, passes=setup.passes, options=options,
                               block_rule=setup.block_rule)
    return dataclasses.replace(combined, theorem2=dataclasses.replace(combined.theorem2,
                                                                      name=THEOREM_BY_PASSES[setup.passes]),
                               mode=mode, problem=setup.problem)


def _run_one(setup: Setup, launch: Launch, mode: str, inputs, l2: tuple | None, cta_work: bool = True) -> Result:
    """Count one launch (in count mode, the count that recorded its L2 accesses: ``l2``, the
    pair (CacheReport, count) of :func:`_played`), apply the models, and report it on the
    user's problem."""
    user, runs = setup.problem, launch.problem
    if mode == "numeric" and runs != user:
        inputs = kernel_inputs(inputs, user, runs)
    counted = l2[1] if l2 is not None and mode == "count" else \
        count_launch(setup.profile, launch, setup.options, setup.sram_bytes, mode, inputs, cta_work=cta_work)
    result = _result(setup, launch, mode, counted, l2[0] if l2 is not None else None)
    if runs == user:
        return result
    options = {**result.options, "kernel_problem": {"heads": runs.heads, "seq_len_q": runs.seq_len_q,
                                                    "head_dim": runs.head_dim, "causal": runs.causal,
                                                    "layout": runs.layout}}
    return dataclasses.replace(result, problem=user, outputs=user_outputs(result.outputs, user, runs), options=options)


def _result(setup: Setup, launch: Launch, mode: str, c: Counted, cache) -> Result:
    """The models applied to one launch's counts (the L2 model's ``cache`` report, or None)."""
    profile, p = setup.profile, launch.problem
    cache = with_unrequested(cache, launch)
    link_bytes = dict(c.link_bytes)
    if cache is not None:  # with the L2 modelled, only what misses it crosses the DRAM's own link
        dram = cache.total
        for key in link_bytes:
            if profile.dram.name in key:
                link_bytes[key] = dram.dram_read_bytes + dram.dram_write_bytes
    result = Result(
        algorithm=launch.name, profile=profile.name, problem=p, blocks=launch.blocks, block_rule=launch.block_rule,
        mode=mode, options=_options(setup.options, setup.sram_bytes, launch, c), tensors=c.tensors, hbm=c.hbm,
        sram=c.sram, registers=c.registers, ops=c.ops, time=predict_time(profile, link_bytes, c.ops, p.dtype),
        theorem2=theorem2(setup.family if setup.options.kernel is None else "flash", p.seq_len_q, p.seq_len_kv,
                          p.head_dim, setup.M, THEOREM_BY_PASSES[launch.passes], density=c.density_active),
        passes=launch.passes, sram_elements=setup.M, outputs=c.outputs, watches=c.watches, kernels=c.kernels,
        kernel_ops=c.kernel_ops, cache=cache, cta_work=c.cta_work,
    )
    return with_kernel_times(result, setup, launch) if launch.tile is not None else result


def _options(options: Options, sram_bytes: int, launch: Launch, c: Counted) -> dict:
    """The ``options`` echoed in the result: conventions, the schedule's options, what was derived."""
    out = {"tiles": options.tiles, "count_init": options.count_init, "residency": options.residency,
           "sram_bytes": sram_bytes, **launch.schedule_options}
    if c.num_splits is not None:
        out["num_splits"] = c.num_splits
    if launch.mask is not None:
        spec = options.block_mask
        out.update(block_mask=spec if isinstance(spec, str) else "array", block_density=density(launch.mask),
                   block_density_active=c.density_active)
    return out


def _cache_plan(setup: Setup, launch: Launch, c: Counted, room: float = 1.0):
    """Every head's recorded accesses, to be played through the profile's L2 (and caches
    behind it); with the thread blocks' programs as runs of loop bodies
    (:mod:`iosim.models.cache.uniform`) where they run out of lockstep or a cache is behind
    the L2: what the windows of :mod:`iosim.models.cache.windows` play past the budget."""
    profile, p = setup.profile, launch.problem
    slots = profile.sm_count * blocks_per_sm(profile, launch, c.sram.peak_bytes)
    kernels = {r.kernel for r in c.requests}
    outer = tuple((cc.name, cc.capacity_bytes) for cc in reversed(profile.caches[:-1]))  # e.g. MI300X's Infinity Cache
    recorded = list(c.requests)
    uniform = (functools.partial(uniform_programs, recorded, 64) if setup.lockstep and not outer   # made if asked
               else uniform_programs(recorded, 64))
    kv_of_q, leads_group, group = head_order(p, launch.kernel is not None and launch.kernel.batch_fastest)
    return plan(recorded, heads_total=p.heads_total, capacity_bytes=int(profile.cache.capacity_bytes * room),
                kv_of_q=kv_of_q, leads_group=leads_group, concurrency={k: slots for k in kernels},
                outer_levels=outer, group_size=group, uniform=uniform, lockstep=setup.lockstep,
                interleaved=interleaved(launch), **partition_play(profile))


def partition_play(profile) -> dict:
    """How the L2 model plays ``profile``'s L2 (:func:`iosim.models.cache.plan`'s ``sides`` and
    ``ways``): two partitions of hashed sets, each resident slot's side by its SM; None each
    for one LRU."""
    halves = _two_partitions(profile)
    return dict(sides=functools.partial(partitions.sides, sm_count=profile.sm_count) if halves else None,
                ways=profile.cache.ways if halves else None)


def _two_partitions(profile) -> bool:
    """Whether the L2 is played as two partitions: the profile's ``partitions: 2``, with no
    cache behind the L2 (the loader refuses the two together)."""
    return profile.cache is not None and profile.cache.partitions == 2 and len(profile.caches) == 1


def _numeric_inputs(setup: Setup, inputs: dict[str, np.ndarray] | None) -> dict[str, np.ndarray]:
    """Random inputs unless given; a backward-only run of a built-in algorithm first
    computes, uncounted, the forward outputs it reads (O and the statistics), from Q, K, V
    only: forward outputs the caller gave are inputs of the backward pass and win."""
    if inputs is None:
        inputs = random_inputs(setup.problem, setup.options.seed, gradient="backward" in setup.passes)
    if setup.passes != "backward" or not setup.builtin:
        return inputs
    given, inputs = inputs, {k: v for k, v in inputs.items() if k in ("Q", "K", "V")}
    if setup.options.kernel is not None:  # the backward kernels read O and L of flash-attn's forward
        forward = Launch("fa2", "forward", get_schedule("fa2"), setup.problem, BlockSizes(64, 64), "user", None,
                         {}, 128, None)
        counted = count_launch(setup.profile, forward, Options(), setup.profile.scratchpad.per_block_bytes,
                               "numeric", inputs)
        return {"O": counted.outputs["O"], "L": counted.outputs["L"], **given}
    launch = setup.launches[0]
    forward = dataclasses.replace(launch, passes="forward", schedule=get_schedule(setup.algorithm, "forward"),
                                  schedule_options=options_for(setup.algorithm, "forward", launch.schedule_options))
    counted = count_launch(setup.profile, forward, Options(residency=setup.options.residency), setup.sram_bytes,
                           "numeric", inputs)
    return {**counted.outputs, **given}


__all__ = ["run_launches"]

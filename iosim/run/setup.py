"""One setup, computed once: everything a run needs decided before anything is counted.

:func:`prepare` resolves the profile, M, the blocks and their rule, the block mask, the
problem each kernel really runs (decode's GQA swap) and the list of launches to count
(one for a paper algorithm; the real kernels' launches with ``Options.kernel``), into a
frozen :class:`Setup` that the CLI, explore, bounds, the grader and validate all use.

>>> from iosim import Problem, prepare
>>> s = prepare("fa-paper-a100", "fa2", Problem(seq_len=8192, head_dim=128))
>>> (s.M, s.blocks.block_q, s.blocks.block_kv, s.block_rule, len(s.launches))
(98304, 128, 192, 'paper', 1)
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import ProblemError, require_positive_int
from ..hardware import HardwareProfile, load_profile
from ..kernels.plan import KernelLaunch, plan
from ..kernels.tile_tables import KernelTile
from ..kernels.split_heuristic import default_num_splits
from ..schedules import SCHEDULES, get_schedule
from ..workload.layouts import padded_layout_notes
from ..workload.masks import parse_block_mask
from ..workload.problem import BlockSizes, Problem, paper_block_sizes, sram_elements
from .options import Options

#: what ``blocks=`` accepts: B_r × B_c, or a pair where None means "the paper's rule"
Blocks = BlockSizes | tuple[int | None, int | None] | None
#: the built-in algorithms whose counts a block mask changes (Algorithm 5's FlashAttention
#: family); standard attention writes and reads all of S and P whatever the mask
MASKED = tuple(name for name, a in SCHEDULES.items() if a.family == "flash")


@dataclass(frozen=True)
class Launch:
    """One kernel launch to count: a schedule on the problem the kernel runs, with its tile.

    A paper algorithm is one launch covering all its passes; a real-kernel preset makes
    one per pass (``tile`` is then the kernel's :class:`~iosim.kernels.tile_tables.KernelTile`).
    """

    name: str                      # the schedule's name, as reported
    passes: str
    schedule: Callable
    problem: Problem               # what the kernel runs (e.g. decode's GQA swap)
    blocks: BlockSizes
    block_rule: str
    mask: np.ndarray | None
    schedule_options: dict
    threads_per_block: int
    registers_per_thread: int | None
    #: the real kernel's launch (its tile, for the kernel time model), for the presets
    kernel: KernelLaunch | None = None
    #: τ where it is not 1/√d of ``problem`` (a head dim the kernel runs padded), else None
    softmax_scale: float | None = None

    @property
    def tile(self) -> KernelTile | None:
        return None if self.kernel is None else self.kernel.tile

    @property
    def steps_per_head(self) -> int:
        """Tile steps of one head, T_r × T_c."""
        return self.blocks.num_q_blocks(self.problem) * self.blocks.num_kv_blocks(self.problem)


#: what playing costs: the requests its streams hold (:class:`iosim.models.cache.Plan`), about
#: 2 µs each on the development machine, more on a long causal stream whose two partitions take
#: several turns (docs/performance.md, session 50: 4.4 µs at 65,536 tokens, 18 µs at 262,144 over 23
#: turns; the turns are not priced); played in full up to
#: AUTO_REQUESTS by default, MAX_REQUESTS when asked for (``--cache``), a sample past them
AUTO_REQUESTS = 4_000_000
MAX_REQUESTS = 20_000_000
#: past those, the model plays a sample of about this many requests (plus what it is checked
#: against: :mod:`iosim.models.cache.sampled`, :mod:`iosim.models.cache.windows`), a quarter
#: of the default budget: about 2 s on the development machine
SAMPLE_REQUESTS = AUTO_REQUESTS // 4
#: a launch played in windows of its rounds (:mod:`iosim.models.cache.windows`) takes this many
#: times SAMPLE_REQUESTS (within the budget): a span's DRAM reads come in bursts, so
#: the windows need more of the rounds than a sample of the chunks needs of its chunks
#: (docs/cache.md, "The windows' share")
WINDOW_SHARE = 4


@dataclass(frozen=True)
class Setup:
    """A run, fully resolved: what :func:`iosim.run.count.count_launch` and the models read."""

    profile: HardwareProfile
    algorithm: str                 # the name reported (a user schedule's function name)
    problem: Problem               # the user's
    passes: str
    options: Options
    sram_bytes: int                # per-block shared memory (the profile's, or Options.sram_bytes)
    M: int                         # sram_bytes in elements of the problem's dtype
    blocks: BlockSizes
    block_rule: str
    launches: tuple[Launch, ...]
    builtin: bool                  # a registered algorithm (not a user's schedule function)

    @property
    def steps_per_head(self) -> int:
        """Tile steps per head, T_r × T_c summed over the launches."""
        return sum(l.steps_per_head for l in self.launches)

    @property
    def lockstep(self) -> bool:
        """Whether the thread blocks of each launch run alike (a built-in schedule, no causal
        or block mask): the L2 model then plays their shared requests once per round."""
        return self.builtin and not any(l.problem.causal or l.mask is not None for l in self.launches)

    def cache_by_default(self) -> bool:
        """Whether ``iosim simulate`` (and explore) model the L2 when not told: wherever the
        profile has a cache (the run then says why where it leaves it off:
        :func:`iosim.run.launches.cache_plans`)."""
        return self.profile.cache is not None

    @property
    def notes(self) -> tuple[str, ...]:
        """What the result should say of the run that is no error: a padded head dim's inputs' layout left
        behind, Q, K, V and O past the profile's HBM capacity (the shape is counted, but could not run on that GPU)."""
        return padded_layout_notes(self.problem, self.options.kernel) + self._past_capacity()

    def _past_capacity(self) -> tuple[str, ...]:
        """Q, K, V and O past the profile's HBM capacity, said."""
        capacity, p = self.profile.dram.capacity_bytes, self.problem
        if not capacity:
            return ()
        sizes = {"Q": p.heads_total * p.seq_len_q, "K": p.kv_heads_total * p.seq_len_kv,
                 "V": p.kv_heads_total * p.seq_len_kv, "O": p.heads_total * p.seq_len_q}
        sizes = {k: v * p.head_dim * p.width for k, v in sizes.items()}
        total = sum(sizes.values())
        if total <= capacity:
            return ()
        each = ", ".join(f"{k} {v:,} B" for k, v in sizes.items())
        return (f"the tensors Q, K, V and O alone take {total:,} B ({each}), more than {self.profile.name}'s HBM "
                f"capacity of {capacity:,} B: this shape could not run on that GPU (counted all the same)",)

    @property
    def family(self) -> str:
        """Theorem 2's family: "standard" (Θ(Nd + N²)) or "flash" (Θ(N²d²/M))."""
        return SCHEDULES[self.algorithm].family if self.algorithm in SCHEDULES else "flash"


def resolve_profile(hw: str | os.PathLike | HardwareProfile) -> HardwareProfile:
    """A profile object from a built-in name, a YAML path, or a profile already loaded."""
    return hw if isinstance(hw, HardwareProfile) else load_profile(hw)


def choose_blocks(problem: Problem, M: int, blocks: Blocks = None) -> tuple[BlockSizes, str]:
    """B_r × B_c: the caller's where given, the paper's rule (Algorithm 1 line 1) elsewhere."""
    block_q, block_kv = (blocks.block_q, blocks.block_kv) if isinstance(blocks, BlockSizes) else (blocks or (None, None))
    if block_q is not None and block_kv is not None:
        chosen, rule = BlockSizes(block_q, block_kv), "user"
    else:
        paper = paper_block_sizes(M, problem.head_dim)
        chosen = BlockSizes(block_q if block_q is not None else paper.block_q,
                            block_kv if block_kv is not None else paper.block_kv)
        rule = "paper" if block_q is None and block_kv is None else "paper+user"
    chosen.check(problem)
    return chosen, rule


def prepare(hw: str | os.PathLike | HardwareProfile, algorithm: str | Callable, problem: Problem, *,
            passes: str = "forward", blocks: Blocks = None, options: Options | None = None) -> Setup:
    """Resolve a run once (see the module docstring); raises :class:`~iosim.IosimError`."""
    options = options or Options()
    if blocks == (None, None):
        blocks = None
    profile = resolve_profile(hw)
    sram_bytes = profile.scratchpad.per_block_bytes if options.sram_bytes is None else options.sram_bytes
    require_positive_int("sram_bytes", sram_bytes)
    if options.cache and profile.cache is None:
        raise ProblemError(f"profile {profile.name} describes no cache level to model")
    if options.cache and problem.layout != "bhnd" and options.kernel != "flash-attn-2":
        raise ProblemError(f"layout {problem.layout!r} is played by the L2 model of kernel='flash-attn-2' only "
                           "(the counts do not depend on it): use that kernel, or turn the L2 model off (the cache "
                           "option; --no-cache)", field="layout")
    M = sram_elements(sram_bytes, problem.dtype)
    if options.kernel is not None:
        launches = _kernel_launches(profile, algorithm, problem, passes, options, blocks)
        first = launches[0]
        return Setup(profile, algorithm, problem, passes, options, sram_bytes, M, first.blocks,
                     f"{options.kernel} kernel tiles", launches, builtin=True)
    name = algorithm if isinstance(algorithm, str) else getattr(algorithm, "__name__", "custom")
    if options.block_mask is not None and isinstance(algorithm, str) and algorithm not in MASKED:
        raise ProblemError(f"block_mask does not apply to {algorithm}: its counts are the same with or "
                           f"without a mask; the algorithms that take one are {', '.join(MASKED)} (Algorithm 5)",
                           field="block_mask")
    schedule = get_schedule(algorithm, passes) if isinstance(algorithm, str) else algorithm
    layout = SCHEDULES[algorithm].layout if isinstance(algorithm, str) and algorithm in SCHEDULES else None
    runs = layout(problem) if layout is not None else problem
    chosen, rule = choose_blocks(runs, M, blocks)
    mask = None
    if options.block_mask is not None:
        mask = parse_block_mask(options.block_mask, chosen.num_q_blocks(runs), chosen.num_kv_blocks(runs),
                                chosen.block_q, chosen.block_kv)
    schedule_options = options.schedule_options()
    if name == "fa2-splitkv" and "num_splits" not in schedule_options:
        schedule_options["num_splits"] = default_num_splits(
            runs.batch, runs.heads, runs.seq_len_q, chosen.num_kv_blocks(runs), profile.sm_count, chosen.block_q)
    launch = Launch(name, passes, schedule, runs, chosen, rule, mask, schedule_options,
                    options.threads_per_block, options.registers_per_thread)
    return Setup(profile, name, problem, passes, options, sram_bytes, M, chosen, rule, (launch,),
                 builtin=isinstance(algorithm, str))


#: the counting conventions a real kernel's preset counts by (Options' defaults): it takes no other
KERNEL_CONVENTIONS = (("tiles", "exact"), ("count_init", False), ("residency", "kernel"))


def _kernel_launches(profile, algorithm, problem, passes, options, blocks) -> tuple[Launch, ...]:
    """The launches a real-kernel preset makes, each with the kernel's own tile."""
    if blocks is not None or options.block_mask is not None:
        raise ProblemError(f"kernel={options.kernel!r} picks the kernels' own tiles: give no blocks and no "
                           "block_mask", field="kernel")
    planned = plan(options.kernel, algorithm, problem, profile, passes, options.num_splits, options.kernel_config)
    ignored = [k for k in ("gemm", "dq_read_twice") if getattr(options, k) is not None] + list(options.schedule_kwargs)
    if ignored:
        raise ProblemError(f"kernel={options.kernel!r} runs the kernels' own launches, which take no "
                           f"{', '.join(ignored)}", field="kernel")
    conventions = [k if getattr(options, k) is True else f"{k}={getattr(options, k)!r}"
                   for k, own in KERNEL_CONVENTIONS if getattr(options, k) != own]
    if conventions:       # the paper's conventions (C4, C5, its abstract SRAM) are not what a kernel does
        raise ProblemError(f"kernel={options.kernel!r} counts what the kernels do (a ragged tile's real rows, no "
                           f"initialisation in HBM, their own residency): it takes no {', '.join(conventions)}",
                           field="kernel")
    out = []
    for k in planned:
        tile = k.tile
        chosen = BlockSizes(tile.block_q, tile.block_kv)
        chosen.check(k.problem)
        scale = None if k.problem.head_dim == problem.head_dim else 1.0 / math.sqrt(problem.head_dim)
        out.append(Launch(k.schedule, k.passes, get_schedule(k.schedule, k.passes), k.problem, chosen, "user", None,
                          dict(k.schedule_options), 32 * tile.warps, tile.registers, k, scale))
    return tuple(out)


__all__ = ["Setup", "Launch", "prepare", "choose_blocks", "resolve_profile", "Blocks"]

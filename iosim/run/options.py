"""How a run is counted, as one frozen value: the spec's conventions, the schedule's
options, the block mask, and the real-kernel and cache choices.

>>> from iosim import Options
>>> Options(tiles="padded", gemm="tiled").schedule_options()
{'gemm': 'tiled'}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from ..errors import ProblemError, require_choice, require_positive_int

TILES = ("exact", "padded")
RESIDENCIES = ("kernel", "sram")
#: the most splits a split-KV run may have (flash-attn: num_splits ≤ 128, docs/spec/kernels.md)
MAX_SPLITS = 128


@dataclass(frozen=True)
class Options:
    """Everything about a run that is not the problem, the blocks or the mode.

    Conventions (docs/spec): ``tiles`` (C4: a ragged last tile moves its real rows,
    ``"exact"``, or a whole block, ``"padded"``), ``count_init`` (C5: count "Initialize …
    in HBM"), ``residency`` (``"kernel"``: S, P and the O accumulator in registers as the
    real kernels keep them; ``"sram"``: everything in shared memory), ``enforce_registers``
    (the register file a hard limit too, each temporary included, as the grader runs; by
    default registers are reported and a spill only marked), ``sram_bytes`` (overrides the
    profile's per-block shared memory, and so M).

    Schedule options: ``gemm`` (standard attention: ``"idealised"`` or ``"tiled"``
    matrix products), ``dq_read_twice`` (FA2's backward, the literal reading of lines 9
    and 15), ``num_splits`` (Flash-Decoding's S; default: flash-attn's heuristic),
    ``schedule_kwargs`` (anything else a custom schedule takes, passed as keywords).

    ``block_mask``: block-sparse attention (a T_r × T_c 0/1 array or a spec such as
    ``"local:2"``). ``kernel``: ``"flash-attn-2"`` or ``"flash-attn-3"`` runs the launches
    the real kernels make, with their tiles. ``cache``: also play the accesses through the
    profile's L2 (``threads_per_block`` threads and ``registers_per_thread`` registers
    each decide how many thread blocks share it); ``"auto"``: the same, unless it would
    play more than its default budget (the result's ``l2_off`` says why it did not). ``l2_edge`` (with ``cache`` and a
    ``kernel``): also play the L2 at 0.9 and 1.1 times its room, and report each launch's DRAM reads there
    (:mod:`iosim.run.l2_edge`). ``seed``: random inputs in numeric mode.
    """

    tiles: str = "exact"
    count_init: bool = False
    residency: str = "kernel"
    enforce_registers: bool = False
    sram_bytes: int | None = None
    gemm: str | None = None
    dq_read_twice: bool | None = None
    num_splits: int | None = None
    schedule_kwargs: Mapping[str, Any] = field(default_factory=dict)
    block_mask: str | np.ndarray | None = field(default=None, compare=False)
    kernel: str | None = None
    #: ``kernel="triton-fa2"``: its (BLOCK_M, BLOCK_N, num_warps, num_stages) (None: the preset's default)
    kernel_config: tuple | None = None
    cache: bool | str = False
    l2_edge: bool = False
    threads_per_block: int = 128
    registers_per_thread: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        require_choice("tiles", self.tiles, TILES)
        require_choice("residency", self.residency, RESIDENCIES)
        for name in ("sram_bytes", "num_splits", "registers_per_thread"):
            if getattr(self, name) is not None:
                require_positive_int(name, getattr(self, name))
        if self.num_splits is not None and self.num_splits > MAX_SPLITS:
            raise ProblemError(f"num_splits must be at most {MAX_SPLITS} (flash-attn's combine kernel holds at most "
                               f"{MAX_SPLITS} splits), got {self.num_splits:,}", field="num_splits")
        require_positive_int("threads_per_block", self.threads_per_block)
        if self.cache not in (True, False, "auto"):
            raise ProblemError(f"cache must be True, False or \"auto\", got {self.cache!r}", field="cache")
        if self.l2_edge and self.kernel is None:
            raise ProblemError("l2_edge reports each real kernel's launch: it needs a kernel (e.g. kernel="
                               "'flash-attn-2')", field="l2_edge")
        if isinstance(self.kernel_config, list):
            object.__setattr__(self, "kernel_config", tuple(self.kernel_config))
        if not isinstance(self.schedule_kwargs, Mapping):
            raise ProblemError(f"schedule_kwargs must be a mapping, got {self.schedule_kwargs!r}")
        object.__setattr__(self, "schedule_kwargs", MappingProxyType(dict(self.schedule_kwargs)))

    def schedule_options(self) -> dict[str, Any]:
        """The keyword arguments the schedule is called with (only those set)."""
        named = {"gemm": self.gemm, "dq_read_twice": self.dq_read_twice, "num_splits": self.num_splits}
        return {**{k: v for k, v in named.items() if v is not None}, **self.schedule_kwargs}


__all__ = ["Options", "TILES", "RESIDENCIES"]

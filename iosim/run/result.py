"""What a simulation returns: immutable values with a JSON form other tools script against.

JSON contract (``Result.to_dict()``; byte counts are integers summed over batch × heads;
the JSON Schema is docs/result.schema.json):

* ``schema_version``: :data:`SCHEMA_VERSION`, bumped when a field changes meaning or goes.

* ``hbm``: ``{read_bytes, write_bytes, total_bytes}`` — traffic between HBM and on-chip
  memory as the paper counts it: every access goes to HBM, no cache (convention C9).
* ``tensors``: ``{NAME: {read_bytes, write_bytes, read_elements, write_elements, dtype}}``.
* ``kernels``: ``{LAUNCH: {NAME: {read_elements, write_elements}}}`` — the same traffic split
  by the kernel launch that makes it (``main`` for single-kernel schedules).
* ``sram``: ``{level, peak_bytes, capacity_bytes, fits, peak_tiles}`` (per thread block), and
  ``peak_bytes_by_kernel`` ({kernel launch: its own peak}) where the schedule names launches.
* ``registers``: the same for the register file (reported, not enforced by default).
* ``blocks``: ``{block_q, block_kv, num_q_blocks, num_kv_blocks, rule}``.
* ``flops``: matrix-product FLOPs (2·m·k·n per product, the usual attention FLOP count);
  ``ops`` has those plus ``exp`` and ``elementwise`` operation counts.
* ``time``: ``{predicted_s, bound, per_resource_s}`` — the roofline, or with a real-kernel
  preset the sum of ``kernel_times``, bound by its longest launch.
* ``kernel_times``: ``{LAUNCH: {predicted_s, bound, per_resource_s}}`` — the kernel time
  model per launch (``--kernel flash-attn-2``; empty otherwise; :mod:`iosim.models.kernel_time`).
* ``l2`` and ``dram`` (with ``cache=True``): ``l2`` {``read_bytes`` (requests from the SMs),
  ``write_bytes``, ``hit_rate``, ``per_kernel``}; ``dram`` {``read_bytes``, ``write_bytes``}
  (what reaches the HBM devices; docs/cache.md); ``outer_caches`` {NAME: {``read_bytes``,
  ``write_bytes``, ``hit_rate``}} for cache levels behind the L2 (MI300X's Infinity Cache).
  A ``per_kernel`` entry has ``heads_extended_within`` where its heads were extended from
  two steps that nearly agreed (how far apart, over a step's DRAM bytes). Past the exact
  model's budget the counters are estimated from a sample of the chunks: ``l2.model`` is
  ``"sampled"``, and each such kernel has ``model``, ``sample_rate`` and ``sampled_within``
  (docs/cache.md), or windows of the rounds (``"windowed"``, with ``warm_up_reached``).
  ``l2_off`` (why the model was left off) instead only where no sample fits a budget: with
  the budgets in use, never for a profile with a cache. A real kernel's launch in
  ``options.launches`` has ``l2_note`` where the L2 model is known to part from what the
  GPU measured, and by how much (docs/cache.md), and ``l2_lines`` where it writes buffers of
  all query heads' rows that share lines: ``"lines"`` where the L2 model played them as such,
  else ``"chunks (sampled)"``, ``"chunks (windowed)"`` or ``"chunks (turns unsettled)"``
  (docs/validation/2026-12-04-lines.md), and ``l2_edge`` with ``Options(l2_edge=True)``: each kernel's DRAM
  reads at 1, 0.9 and 1.1 times the L2's room, the attention kernel's spread and a note
  (:mod:`iosim.run.l2_edge`). It has ``time_note`` where the kernel time model is
  known to part from the measured time, and by how much (a short causal forward in flash-attn 2's
  uneven instantiation: docs/validation/2026-12-04-even-mn.md; a backward over a single query
  block at kHeadDim ≤ 96: docs/validation/2026-12-04-red-contention.md).
* ``theorem2``: ``{expression, value_elements, count_elements, ratio, in_regime, M_elements}``.
* ``algorithm``, ``profile``, ``problem``, ``options``: what was run.
* ``notes`` (only where there is one): what the run should be read with that is no error,
  e.g. Q, K, V and O taking more than the profile's HBM capacity (the shape is counted, but
  could not run on that GPU).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from ..dtypes import width
from ..engine.ledger import CtaWork
from ..workload.problem import BlockSizes, Problem


#: the version of the JSON contract below
SCHEMA_VERSION = 1
#: how every ``l2_off`` reason begins (the table shows what follows it)
L2_OFF = "the L2 model is off for this run: "


class ModelOutput(Protocol):
    """What a model (:mod:`iosim.models`) hands back: a value with a JSON form. The result
    holds model outputs without importing the models."""

    def to_dict(self) -> dict: ...


@dataclass(frozen=True)
class TensorTraffic:
    """HBM traffic of one tensor, summed over heads."""

    dtype: str
    read_elements: int
    write_elements: int
    read_bytes: int
    write_bytes: int


@dataclass(frozen=True)
class HbmTraffic:
    read_bytes: int
    write_bytes: int
    read_elements: int
    write_elements: int

    @property
    def total_bytes(self) -> int:
        return self.read_bytes + self.write_bytes

    @property
    def total_elements(self) -> int:
        return self.read_elements + self.write_elements


@dataclass(frozen=True)
class LevelOccupancy:
    """Peak bytes resident in one on-chip level during the run (per thread block)."""

    level: str
    peak_bytes: int
    capacity_bytes: int | None
    enforced: bool
    peak_tiles: tuple = ()
    #: (kernel launch, its own peak bytes) for each launch the schedule names (``ctx.kernel``)
    #: that moved data
    by_kernel: tuple = ()

    @property
    def fits(self) -> bool:
        return self.capacity_bytes is None or self.peak_bytes <= self.capacity_bytes


@dataclass(frozen=True)
class LaunchWork:
    """The thread blocks of one kernel launch: ``heads`` copies of one head's ``blocks``
    (each a :class:`~iosim.engine.ledger.CtaWork`, in launch order)."""

    heads: int
    blocks: tuple[CtaWork, ...]


@dataclass(frozen=True)
class Result:
    algorithm: str
    profile: str
    problem: Problem
    blocks: BlockSizes
    block_rule: str
    mode: str
    #: what was run besides the problem: conventions, schedule options, what was derived
    options: dict[str, Any]
    tensors: dict[str, TensorTraffic]
    hbm: HbmTraffic
    sram: LevelOccupancy
    registers: LevelOccupancy
    #: "matmul" (FLOPs), "exp", "elementwise" operations, summed over heads
    ops: dict[str, int]
    #: the roofline or, for the presets, the kernel time model (a :class:`~iosim.models.roofline.TimePrediction`)
    time: ModelOutput
    #: Theorem 2's expression at this size (a :class:`~iosim.models.theory.Theorem2`)
    theorem2: Any
    sram_elements: int
    passes: str = "forward"
    #: kernel launch -> tensor -> (read_elements, write_elements), summed over heads
    kernels: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    #: the L2 model's prediction (a :class:`~iosim.models.cache.CacheReport`), when asked for
    cache: ModelOutput | None = None
    #: why the L2 model is off, where it was on by default and the run past its default budget
    l2_off: str | None = None
    #: kernel launch -> {"matmul", "exp", "elementwise", "thread_blocks"}, summed over heads
    kernel_ops: dict[str, dict[str, int]] = field(default_factory=dict)
    #: numeric mode: O and the statistics (and gradients), shaped (B, H, N, ·)
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    #: numeric mode: copies of on-chip values a schedule asked to watch
    watches: dict[str, list[np.ndarray]] = field(default_factory=dict)
    #: kernel launch -> each thread block's work
    cta_work: dict[str, LaunchWork] = field(default_factory=dict)
    #: kernel launch -> the kernel time model's TimePrediction (the real-kernel presets)
    kernel_times: dict[str, ModelOutput] = field(default_factory=dict)
    #: what the run should be read with that is no error (:attr:`iosim.run.setup.Setup.notes`)
    notes: tuple[str, ...] = ()

    def kernel_bytes(self, kernel: str) -> dict:
        """{tensor: (read bytes, write bytes)} of one kernel launch, summed over heads."""
        return {t: (r * width(self.tensors[t].dtype), w * width(self.tensors[t].dtype))
                for t, (r, w) in self.kernels.get(kernel, {}).items()}

    @property
    def flops(self) -> int:
        """Matrix-product FLOPs, summed over heads."""
        return self.ops.get("matmul", 0)

    def _cache_dict(self) -> dict:
        if self.cache is None:
            return {} if self.l2_off is None else {"l2_off": self.l2_off}
        return self.cache.to_dict()

    def to_dict(self) -> dict:
        """The JSON contract described in this module's docstring."""
        p = self.problem
        return {
            "schema_version": SCHEMA_VERSION,
            "algorithm": self.algorithm,
            "passes": self.passes,
            "profile": self.profile,
            "problem": {
                "batch": p.batch, "heads": p.heads, "kv_heads": p.kv_heads, "seq_len_q": p.seq_len_q, "seq_len_kv": p.seq_len_kv,
                "head_dim": p.head_dim, "dtype": p.dtype, "causal": p.causal, "layout": p.layout,
            },
            "options": dict(self.options),
            "blocks": {
                "block_q": self.blocks.block_q, "block_kv": self.blocks.block_kv,
                "num_q_blocks": self.blocks.num_q_blocks(p), "num_kv_blocks": self.blocks.num_kv_blocks(p),
                "rule": self.block_rule,
            },
            "hbm": {
                "read_bytes": self.hbm.read_bytes, "write_bytes": self.hbm.write_bytes,
                "total_bytes": self.hbm.total_bytes,
                "read_elements": self.hbm.read_elements, "write_elements": self.hbm.write_elements,
            },
            "tensors": {name: asdict(t) for name, t in self.tensors.items()},
            "kernels": {k: {t: {"read_elements": r, "write_elements": w} for t, (r, w) in v.items()}
                        for k, v in self.kernels.items()},
            "sram": _level_dict(self.sram),
            "registers": _level_dict(self.registers),
            **self._cache_dict(),
            "flops": self.flops,
            "ops": dict(self.ops),
            "time": self.time.to_dict(),
            "kernel_times": {k: v.to_dict() for k, v in self.kernel_times.items()},
            "theorem2": {
                "theorem": self.theorem2.name,
                "family": self.theorem2.family,
                "expression": self.theorem2.expression,
                "M_elements": self.sram_elements,
                "value_elements": self.theorem2.value,
                "count_elements": self.hbm.total_elements // self.problem.heads_total,
                "ratio": self.theorem2.ratio(self.hbm.total_elements // self.problem.heads_total),
                "in_regime": self.theorem2.in_regime,
                "per": "head",
            },
            **({"notes": list(self.notes)} if self.notes else {}),
        }


def _level_dict(level: LevelOccupancy) -> dict:
    return {
        "level": level.level,
        "peak_bytes": level.peak_bytes,
        "capacity_bytes": level.capacity_bytes,
        "fits": level.fits,
        "enforced": level.enforced,
        "peak_tiles": [{"name": n, "bytes": b, "shape": s} for n, b, s in level.peak_tiles],
        **({"peak_bytes_by_kernel": dict(level.by_kernel)} if level.by_kernel else {}),
    }

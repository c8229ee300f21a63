"""What a simulation returns: immutable values with a JSON form other tools script against.

JSON contract (``Result.to_dict()``; byte counts are integers summed over batch × heads):

* ``hbm``: ``{read_bytes, write_bytes, total_bytes}`` — traffic between HBM and on-chip
  memory as the paper counts it: every access goes to HBM, no cache (convention C9).
* ``tensors``: ``{NAME: {read_bytes, write_bytes, read_elements, write_elements, dtype}}``.
* ``kernels``: ``{LAUNCH: {NAME: {read_elements, write_elements}}}`` — the same traffic split
  by the kernel launch that makes it (``main`` for single-kernel schedules).
* ``sram``: ``{level, peak_bytes, capacity_bytes, fits, peak_tiles}`` (per thread block).
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
* ``theorem2``: ``{expression, value_elements, count_elements, ratio, in_regime, M_elements}``.
* ``algorithm``, ``profile``, ``problem``, ``options``: what was run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field

from ..workload.problem import BlockSizes, Problem
from ..models.cache import CacheReport
from ..dtypes import width
from ..models.theory import Theorem2
from ..models.roofline import TimePrediction, in_sequence


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

    @property
    def fits(self) -> bool:
        return self.capacity_bytes is None or self.peak_bytes <= self.capacity_bytes


@dataclass(frozen=True)
class Result:
    algorithm: str
    profile: str
    problem: Problem
    blocks: BlockSizes
    block_rule: str
    mode: str
    options: dict
    tensors: dict
    hbm: HbmTraffic
    sram: LevelOccupancy
    registers: LevelOccupancy
    ops: dict
    time: TimePrediction
    theorem2: Theorem2
    sram_elements: int
    passes: str = "forward"
    #: kernel launch -> tensor -> (read_elements, write_elements), summed over heads
    kernels: dict = field(default_factory=dict)
    #: the L2 model's prediction (:class:`iosim.models.cache.CacheReport`), when asked for
    cache: object = None
    #: kernel launch -> {"matmul", "exp", "elementwise"} operations, summed over heads
    kernel_ops: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)
    watches: dict = field(default_factory=dict)
    #: kernel launch -> (heads run, [CtaWork, ...] of one head): each thread block's work
    cta_work: dict = field(default_factory=dict)
    #: kernel launch -> TimePrediction of the kernel time model (:mod:`iosim.models.kernel_time`),
    #: for the real-kernel presets
    kernel_times: dict = field(default_factory=dict)

    def kernel_bytes(self, kernel: str) -> dict:
        """{tensor: (read bytes, write bytes)} of one kernel launch, summed over heads."""
        return {t: (r * width(self.tensors[t].dtype), w * width(self.tensors[t].dtype))
                for t, (r, w) in self.kernels.get(kernel, {}).items()}

    @property
    def flops(self) -> int:
        """Matrix-product FLOPs, summed over heads."""
        return self.ops.get("matmul", 0)

    def _cache_dict(self) -> dict:
        return {} if self.cache is None else _cache_fields(self.cache)

    def to_dict(self) -> dict:
        """The JSON contract described in this module's docstring."""
        p = self.problem
        return {
            "algorithm": self.algorithm,
            "passes": self.passes,
            "profile": self.profile,
            "problem": {
                "batch": p.batch, "heads": p.heads, "kv_heads": p.kv_heads, "seq_len_q": p.seq_len_q, "seq_len_kv": p.seq_len_kv,
                "head_dim": p.head_dim, "dtype": p.dtype, "causal": p.causal,
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
        }


def _cache_fields(report) -> dict:
    s = report.total
    return {
        "l2": {"read_bytes": s.read_bytes, "write_bytes": s.write_bytes, "hit_rate": s.hit_rate,
               "per_kernel": {k: {"read_bytes": v.read_bytes, "hit_rate": v.hit_rate, "dram_read_bytes": v.dram_read_bytes,
                                  "dram_write_bytes": v.dram_write_bytes, "concurrent_blocks": report.concurrency[k]}
                              for k, v in report.kernels.items()}},
        "dram": {"read_bytes": s.dram_read_bytes, "write_bytes": s.dram_write_bytes},
        # further cache levels between the L2 and DRAM (MI300X's Infinity Cache): what
        # reached each from the level in front, and what it served
        "outer_caches": {name: {"read_bytes": t.read_bytes, "write_bytes": t.write_bytes, "hit_rate": t.hit_rate}
                         for name, t in report.outer_totals().items()},
    }


def combine_results(results: list[Result], **fields) -> Result:
    """Several kernel launches run one after another, reported as one result.

    Traffic and operations add up; on-chip peaks are the largest of the launches; each
    resource's time adds up, and so does the predicted time (the launches run in
    sequence). ``fields`` override the first result's (algorithm, blocks, options...).
    """
    first = results[0]
    tensors: dict[str, TensorTraffic] = {}
    for r in results:
        for name, t in r.tensors.items():
            if name in tensors:
                u = tensors[name]
                t = TensorTraffic(t.dtype, u.read_elements + t.read_elements, u.write_elements + t.write_elements,
                                  u.read_bytes + t.read_bytes, u.write_bytes + t.write_bytes)
            tensors[name] = t
    hbm = HbmTraffic(*(sum(getattr(r.hbm, f) for r in results)
                       for f in ("read_bytes", "write_bytes", "read_elements", "write_elements")))
    ops: dict[str, int] = {}
    for r in results:
        for k, v in r.ops.items():
            ops[k] = ops.get(k, 0) + v
    outputs: dict = {}
    kernels: dict = {}
    kernel_ops: dict = {}
    cta_work: dict = {}
    kernel_times: dict = {}
    for r in results:
        outputs.update(r.outputs)
        for name, traffic in r.kernels.items():
            key = name if name not in kernels else f"{name} ({r.passes})"
            kernels[key] = traffic
            kernel_ops[key] = r.kernel_ops.get(name, {})
            if name in r.cta_work:
                cta_work[key] = r.cta_work[name]
            if name in r.kernel_times:
                kernel_times[key] = r.kernel_times[name]
    seq = in_sequence(dict(enumerate(r.time for r in results)))
    if kernel_times:  # the kernel time model: the longest kernel launch names the bound
        bound = in_sequence(kernel_times).bound
    else:             # rooflines: the resource busiest over all launches
        bound = max(seq.per_resource_s, key=seq.per_resource_s.get) if seq.per_resource_s else "nothing"
    time = TimePrediction(seq.predicted_s, bound, seq.per_resource_s)
    caches = [r.cache for r in results if r.cache is not None]
    cache = None
    if caches:
        outer = {k: v for c in caches for k, v in (c.outer or {}).items()}
        cache = CacheReport({k: v for c in caches for k, v in c.kernels.items()},
                            {k: v for c in caches for k, v in c.concurrency.items()}, outer or None)
    return dataclasses.replace(
        first, tensors=tensors, hbm=hbm, ops=ops, time=time, outputs=outputs, kernels=kernels, cache=cache,
        kernel_ops=kernel_ops, cta_work=cta_work, kernel_times=kernel_times,
        sram=max((r.sram for r in results), key=lambda o: o.peak_bytes),
        registers=max((r.registers for r in results), key=lambda o: o.peak_bytes),
        **fields,
    )


def _level_dict(level: LevelOccupancy) -> dict:
    return {
        "level": level.level,
        "peak_bytes": level.peak_bytes,
        "capacity_bytes": level.capacity_bytes,
        "fits": level.fits,
        "enforced": level.enforced,
        "peak_tiles": [{"name": n, "bytes": b, "shape": s} for n, b, s in level.peak_tiles],
    }

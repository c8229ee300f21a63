"""A kernel time model for iosim's Triton FlashAttention-2 forward (``--kernel triton-fa2``).

It follows :mod:`iosim.models.kernel_time` (steps in order per thread block, memory
overlapping compute, the launch floor) and adds what differs between Triton's
configurations (docs/triton.md, "The time model"):

* **One step of a thread block** (one key block): the tensor-core FLOPs of both products at
  the rows the instruction computes (:func:`iosim.kernels.triton_preset.computed_rows`; a
  masked ragged tile costs a whole tile), the shared-memory operand bytes, the exps and the
  other fp32 work, each at the SM's share of its rate, summed (``c``). The tensor-core rate
  is the measured ``mma.sync`` rate for MMA v2 and, for wgmma (MMA v3), the profile's
  measured sustained wgmma rate (a large cuBLAS GEMM, benchmarks/gemm_rate.py), else the
  vendor peak. Operand bytes by the warp layout: wgmma reads Q and, once per
  warpgroup, K and V from shared memory, P from registers; mma.sync keeps Q in registers
  and every warp row reads K and V (``ldmatrix``); warps along the keys pass P through
  shared memory to the warps that need whole rows of it.
* **Warps feeding the tensor cores.** An SM has 4 sub-partitions, each with its own tensor
  core, special-function and fp32 units; fewer than 4 resident warps leave some idle:
  with ``r`` blocks of ``W`` warps resident, ``u = min(1, r·W/4)`` (a wgmma warpgroup spans
  all four).
* **Waiting for K_j, V_j.** A load takes the measured dependent DRAM round trip ``L``
  (``read_write_floor − launch``) plus the tile's transfer at the SM's share of the L2
  rate. With ``num_stages = 1`` the loop is not pipelined and a step waits all of it
  (``w = L + t``); with ``s ≥ 2`` the load was issued ``s − 1`` steps earlier:
  ``w = max(0, L + t − (s − 1)·c)``. Each block also waits once for its Q tile (``p``).
* **Rounds of co-resident blocks.** ``k`` blocks fit on an SM at once (shared memory with
  CUDA's 1 KiB per block, registers, threads: :func:`iosim.models.cache.occupancy`). Under
  wgmma (MMA v3, every configuration measured on the H200) the warpgroups of the
  co-resident blocks, and of one block, do not overlap their phases: each issues its
  product, waits for it, then runs its softmax, and with nothing alternating them (no
  ping-pong, which FlashAttention-3 adds for exactly this) they fall into step — all
  multiply, then all exponentiate, then all wait for their next tiles. A round of ``r``
  blocks then takes ``r·c`` a step plus the part of the load wait that the pipeline's
  earlier stages do not cover: ``p + n·(r·c + max(0, w − (s − 1)(r − 1)·c))`` (with one
  stage the whole wait; docs/triton.md, "What the device data changed", item 6: chosen
  after the 12 shapes were measured). Under ``mma.sync`` warps interleave instruction by instruction (flash-attn's
  own co-resident blocks overlap: :mod:`iosim.kernels.coresidency`), and a round is
  throughput-bound, ``p + n·max(r·c_max/u, c + w)`` with ``c_max`` the busiest unit's share.
* **Waves.** Blocks spread over the SMs as evenly as the grid allows; the busiest SM runs
  ``ceil(T / SMs)`` of them in rounds of ``k``, the last round partial. Where blocks differ
  (causal) each is charged its share of a full SM, ``(p + n·max(k·c/u, c + w))/k``, and the
  busiest SM comes from :func:`iosim.models.kernel_time.busiest_sm`, at least the longest
  block alone.
* **Memory**: the L2 and DRAM times as :mod:`iosim.models.kernel_time`; the kernel takes the
  launch floor plus the longest of compute, L2 and DRAM.

**Measured steps.** Where the preset has the configuration's steps measured on the
profile's GPU (:mod:`iosim.kernels.measured_steps`: whole waves of the compiled kernel on
launches made for that, none a shape the tile benchmarks time), a round's step and a
wave's other costs are the measured ones and the analytic step above is not used: ``k`` is
CUDA's occupancy of the compiled kernel; the launch's fill and drain are paid once, each
later round its ``wave`` cost; a round of ``r`` uniform blocks takes ``n·R(r)``, ``R(k)``
measured, a partial round's between the lone block's measured step and the full round's
(:meth:`~iosim.kernels.measured_steps.MeasuredStep.round_step`;
:mod:`iosim.models.measured_time`); a causal block takes its
share ``(wave + n·R_causal)/k`` of a full SM (the causal kernel's own measured step),
list-scheduled as above; where the short blocks' line was measured too (a fixed cost a round
plus a step), a round or a share costs the larger of the two lines. The split of compute by
unit stays the analytic step's proportions. Where no step was measured the analytic model times the launch and the
launch says so (:func:`model_name`).

No constant is fitted to the timed tile shapes; every rate is the profile's or measured
on the compiled kernel.
"""

from __future__ import annotations

import math

from ..dtypes import width as dtype_width
from . import measured_time
from .cache import occupancy
from .kernel_time import KernelRates, busiest_sm
from .launch_time import each_kernel

#: shared memory CUDA reserves per thread block on sm80+ (CUDA-PG, "Shared Memory" of CC 8.x/9.x)
RESERVED_SMEM_PER_BLOCK = 1024


def blocks_per_sm(tile, profile) -> int:
    """How many of the kernel's thread blocks one SM holds at once: CUDA's own count for the
    compiled kernel where its steps were measured, else from its estimated footprint."""
    if tile.measured is not None:
        return tile.measured.blocks_per_sm
    regs = profile.registers
    return occupancy(1, profile.scratchpad.capacity_bytes or 0, tile.shared_bytes + RESERVED_SMEM_PER_BLOCK,
                     32 * tile.warps, registers_per_thread=tile.registers,
                     register_file_bytes=regs.capacity_bytes if regs is not None else None)


def step_seconds(tile, rates: KernelRates, profile, dtype: str, elementwise: float, exps: float) -> dict:
    """One step's compute (one key block), by unit, at the SM's share of each rate."""
    sm, w, d = rates.sm_count, dtype_width(dtype), tile.kernel_head_dim
    rows, bn, warps = tile.computed_rows, tile.block_kv, tile.warps
    if tile.mma == 3:
        pv = tile.pv_rows or rows
        flops = 2 * rows * bn * d + 2 * pv * bn * d
        mma_rate = rates.wgmma_flops or profile.tensor_flops_per_s(dtype) or rates.mma_flops
        # each 64-row wgmma reads its A (Q) and the whole B (K, then V) from shared memory; P is a
        # register operand, passed through shared memory when the two dots' warp grids differ
        operand = rows * d + (rows // 64) * bn * d + (pv // 64) * bn * d + (2 * pv * bn if tile.p_convert else 0)
    else:
        flops = 2 * 2 * rows * bn * d
        mma_rate = rates.mma_flops
        wm, wn = tile.warps_m, warps // tile.warps_m
        operand = 2 * wm * bn * d + ((1 + wn) * rows * bn if wn > 1 else 0)
    return {"tensor cores": flops * sm / mma_rate, "shared memory": operand * w * sm / rates.smem_bytes,
            "exp": exps * sm / rates.exp_ops, "fp32": elementwise * sm / rates.fp32_ops}


def chain_seconds(tile, per: dict) -> tuple[float, float]:
    """(one step of one block's chain of dependent work, the busiest unit's share of it).

    Within a warpgroup the step is a chain: S's wgmma, the softmax on S, then P·V's wgmma,
    each waiting for the one before, so its units' times add. A wgmma reads its shared-memory
    operands as it computes (the asynchronous proxy feeds the tensor cores), so the tensor
    path is the longer of the two; ``mma.sync`` issues ``ldmatrix`` separately, so they add.
    Across chains (other blocks, or another warpgroup of independent rows) the tensor cores
    and the CUDA cores (exp and fp32, sharing the warp schedulers' issue) run at once."""
    if tile.mma == 3:
        tensor = max(per["tensor cores"], per["shared memory"])
    else:
        tensor = per["tensor cores"] + per["shared memory"]
    cuda = per["exp"] + per["fp32"]
    return tensor + cuda, max(tensor, cuda)


def load_wait(tile, rates: KernelRates, dtype: str, step: float) -> tuple[float, float]:
    """(the exposed wait of one step for its K_j and V_j, the block's wait for its Q tile)."""
    latency = rates.round_trip_s
    per_sm = (rates.l2_bytes or rates.dram_bytes) / rates.sm_count
    w = dtype_width(dtype)
    kv = latency + 2 * tile.block_kv * tile.kernel_head_dim * w / per_sm
    q = latency + tile.block_q * tile.kernel_head_dim * w / per_sm
    if tile.num_stages == 1:
        return kv, q
    return max(0.0, kv - (tile.num_stages - 1) * step), q


def _use(tile, resident: int) -> float:
    """Fraction of the SM's 4 sub-partitions that ``resident`` blocks' warps keep busy."""
    return 1.0 if tile.mma == 3 else min(1.0, resident * tile.warps / 4)


def _round(tile, per: dict, w: float, resident: int) -> float:
    """One step of every block of a round of ``resident`` blocks: under wgmma the blocks' chains
    one after another (their phases fall into step); under mma.sync the units' throughput over
    every chain; or one chain's latency with its exposed load wait, whichever is longer."""
    chain, busiest = chain_seconds(tile, per)
    if tile.mma == 3:   # in step: the loads too, so a round waits for what its chains do not cover
        hidden = (tile.num_stages - 1) * (resident - 1) * chain if tile.num_stages > 1 else 0.0
        return resident * chain + max(0.0, w - hidden)
    return max(resident * busiest / _use(tile, resident), chain + w)


def model_name(tile) -> str:
    """What times this configuration's steps, in words (the launch's ``time_model``)."""
    if tile.measured is not None:
        return f"kernel time model ({tile.measured.source})"
    return "kernel time model (analytic steps: none measured for this configuration on this GPU)"


def compute_seconds(tile, profile, dtype: str, heads: int, works: list,
                    rates: KernelRates | None = None, causal: bool = False) -> tuple[float, dict, int]:
    """(the busiest SM's compute time, its split by unit, blocks per SM) of one launch;
    ``works``: the per-head :class:`~iosim.engine.ledger.CtaWork` list; ``rates``: the
    profile's, where the caller has them; ``causal``: the causal kernel (its measured step)."""
    rates = rates or KernelRates.from_profile(profile, dtype)
    k = blocks_per_sm(tile, profile)
    blocks = []   # (steps, step seconds by unit, wait per step, prologue) per distinct block, with its count
    for work in works:
        n = measured_time.steps_of(work)
        if not n:
            continue
        scale = tile.computed_rows / max(m for (m, *_rest) in work.products)  # padded rows compute too
        per = step_seconds(tile, rates, profile, dtype, work.ops.get("elementwise", 0) * scale / n,
                           work.ops.get("exp", 0) * scale / n)
        w, p = load_wait(tile, rates, dtype, chain_seconds(tile, per)[0])
        blocks.append((n, per, w, p, work.count))
    if not blocks:
        return 0.0, {}, k
    total_blocks = heads * sum(b[4] for b in blocks)
    if tile.measured is not None:
        _, per, w, _, _ = blocks[0]
        full = _round(tile, per, w, tile.measured.blocks_per_sm)
        busiest = measured_time.busiest(tile.measured, [(b[0], b[4]) for b in blocks], heads, rates.sm_count, causal,
                                        lambda r: _round(tile, per, w, r) / full)
    elif len({(b[0], b[2]) for b in blocks}) == 1:                        # every block alike
        n, per, w, p, _ = blocks[0]
        m = math.ceil(total_blocks / rates.sm_count)
        rounds = [k] * (m // k) + ([m % k] if m % k else [])
        busiest = sum(p + n * _round(tile, per, w, r) for r in rounds)
    else:
        runs = [((p + n * _round(tile, per, w, k)) / k, count) for n, per, w, p, count in blocks]
        alone = max(p + n * _round(tile, per, w, 1) for n, per, w, p, _ in blocks)
        busiest = max(busiest_sm(runs, rates.sm_count, heads), alone)
    work_by_unit = {u: sum(b[0] * b[1][u] * b[4] for b in blocks) for u in blocks[0][1]}
    whole = sum(work_by_unit.values()) or 1.0
    return busiest, {u: busiest * v / whole for u, v in work_by_unit.items()}, k


def predict(profile, dtype: str, tile, requested: dict, dram: dict, work: dict, causal: bool = False) -> dict:
    """kernel -> :class:`~iosim.models.roofline.TimePrediction` (arguments as :func:`iosim.models.kernel_time.predict`,
    ``tile`` the launch's :class:`~iosim.kernels.triton_preset.TritonTile`, ``causal`` the causal kernel)."""
    rates = KernelRates.from_profile(profile, dtype)
    return each_kernel(rates, requested, dram, work,
                       lambda heads, works: compute_seconds(tile, profile, dtype, heads, works, rates, causal)[:2])


__all__ = ["predict", "model_name", "compute_seconds", "blocks_per_sm", "step_seconds", "chain_seconds", "load_wait", "RESERVED_SMEM_PER_BLOCK"]

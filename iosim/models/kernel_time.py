"""A kernel time model for the real FlashAttention-2 kernels (``--kernel flash-attn-2``).

The roofline of :mod:`iosim.models.roofline` assumes every unit of the GPU works at once; FA2's
kernels do not work that way, and it predicts 0.16–0.67 of the times Nsight Compute
measures. This model follows how the kernels run instead (docs/cache.md, "Kernel time"):

* **Per thread block, one step after another.** FA2's warps run their steps in order,
  each waiting for the previous one's result: the shared-memory reads of each matrix
  product's operands (``ldmatrix``), the products themselves (``mma.sync``), the
  exponentials (special-function units) and the other element-wise work (fp32 units).
  Co-resident warps run the same steps in step, so an SM's time for a thread block is
  the *sum* of these four times, each at the SM's share (rate ÷ SMs) of its rate (and,
  for a block alone on its SM, its own wait for its first and last tiles):

      t_block = FLOPs/R_mma + operand bytes/R_smem + exps/R_exp + other/R_fp32 (+ wait)

* **Operand bytes follow the warp layout.** A product C[M×N] += A[M×K]·B[K×N] split over
  a warps_m × warps_n grid reads A once per warp column and B once per warp row:
  warps_n·M·K + warps_m·N·K elements. The forward kernel stacks its warps along the
  query rows (grid warps × 1) and keeps P in registers; the backward kernel's grids are
  its AtomLayoutMSdP / AtomLayoutNdKV / AtomLayoutMdQ (:mod:`iosim.kernels.tile_tables`) and it passes
  every computed operand (P, dS) through shared memory.
* **Thread blocks over SMs.** Blocks are taken in launch order (all of head 0's first)
  by the SM with the least work so far; the kernel's compute time is the busiest SM's.
  So a causal kernel's long last query blocks, or a grid smaller than the GPU, show up.
  Where an SM holds two blocks at once their steps overlap on its units: a kernel tile
  with a measured factor r (:mod:`iosim.kernels.coresidency`, the H200's flash-attn 2
  forward) takes 2·r of a step's time for the pair (:mod:`.sm_schedule`).
* **Memory overlaps compute** (``cp.async`` prefetches the next tile): the kernel takes
  the longest of compute, L2 traffic (every requested byte ÷ the L2's rate) and DRAM
  traffic (the L2 model's DRAM bytes when it ran, else every requested byte), plus the
  launch floor (an empty kernel's duration); blocks' fills and drains: :mod:`.block_fill`;
  kernels without products: at most the measured copy rate (:func:`memory_seconds`). A
  flash-attn 2 forward's step waits for its loads phase by phase (:func:`_phase_waits`), and a
  causal one for the code its masking steps add, once a launch (:func:`_code_fetch`).

Rates are the profile's ``measured`` block where present (benchmarks/microbench_rates.py
measured them on an H200, each on a kernel of its own), else its vendor peaks. Nothing
is fitted to the launches being predicted; one factor is calibrated on a controlled launch
of its kernel (the 8-warp d = 192 forward's, :mod:`iosim.kernels.coresidency`), and the code
fetch's two numbers on 18 controlled launch pairs (:func:`_code_fetch`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..dtypes import width as dtype_width
from .block_fill import BLOCK_WAIT, ForwardGrid, fill_drain_s, lone_block_s
from .launch_time import COPY, FILL, combine, memory_seconds
from .roofline import TimePrediction
from .sm_schedule import blocks_of, busiest_sm, busiest_sm_shared

#: what a forward's steps wait for DRAM beyond their compute (:func:`_phase_waits`)
DRAM_WAIT = "DRAM waits"
#: what a flash-attn 2 forward's warps wait for its code (:func:`_code_fetch`)
FETCH = "instruction fetch"
#: the steps of a thread block's time, as its per-resource keys
COMPUTE = ("tensor cores", "shared memory", "exp", "fp32", BLOCK_WAIT, DRAM_WAIT, FETCH)


@dataclass(frozen=True)
class KernelRates:
    """Whole-GPU rates the model uses (per second) and where they came from."""

    mma_flops: float
    smem_bytes: float
    exp_ops: float
    fp32_ops: float
    l2_bytes: float | None
    dram_bytes: float
    launch_s: float
    sm_count: int
    source: str  # "measured" or "vendor peaks"
    #: DRAM write rate; a kernel that reads then writes cannot end sooner than ``read_write_s``
    #: (an empty launch plus one dependent DRAM round trip, measured), where measured
    dram_write_bytes: float = 0.0
    read_write_s: float = 0.0
    #: Hopper's wgmma, sustained (measured: a large cuBLAS GEMM); 0 where not measured
    wgmma_flops: float = 0.0
    #: loads and stores of a copy kernel, together (measured); 0 where not measured
    copy_bytes: float = 0.0
    #: a flash-attn 2 forward's code that costs no fetch wait, and the rate the rest is fetched
    #: at once a launch (measured; :func:`_code_fetch`); 0 where not measured
    code_free_bytes: float = 0.0
    code_fetch_bytes: float = 0.0

    @property
    def round_trip_s(self) -> float:
        """One dependent DRAM round trip: the read-then-write floor less an empty launch."""
        return max(self.read_write_s - self.launch_s, 0.0)

    @classmethod
    def from_profile(cls, profile, dtype: str) -> "KernelRates":
        m = profile.measured
        link = profile.bandwidth
        dram, cache = profile.dram.name, profile.cache.name if profile.cache is not None else None
        scratch = profile.scratchpad.name
        regs = profile.registers.name if profile.registers is not None else None
        peak = {
            "mma_sync_fp16": profile.tensor_flops_per_s(dtype),
            "shared_memory": link(scratch, regs),
            "exp": profile.compute["exp"].value if "exp" in profile.compute else None,
            "fp32": profile.compute["fp32"].value if "fp32" in profile.compute else None,
            "dram_read": link(dram, cache) if cache else link(dram, scratch),
            "l2_read": link(cache, scratch) if cache else None,
        }
        use_measured = bool(m) and dtype in ("fp16", "bf16")
        pick = {k: (m[k].value if use_measured and k in m else v) for k, v in peak.items()}
        missing = [k for k in ("mma_sync_fp16", "shared_memory", "exp", "fp32", "dram_read") if not pick[k]]
        if missing:
            raise ValueError(f"profile {profile.name} lacks the rates {', '.join(missing)} the kernel time model needs")
        launch = m["launch"].value if use_measured and "launch" in m else 0.0
        floor = m["read_write_floor"].value if use_measured and "read_write_floor" in m else launch
        write = m["dram_write"].value if use_measured and "dram_write" in m else pick["dram_read"]
        wgmma = m["wgmma_fp16"].value if use_measured and "wgmma_fp16" in m else 0.0
        copy = m["copy"].value if use_measured and "copy" in m else 0.0
        fetch = ((m["code_fetch_free"].value, m["code_fetch"].value)
                 if use_measured and "code_fetch_free" in m and "code_fetch" in m else (0.0, 0.0))
        return cls(pick["mma_sync_fp16"], pick["shared_memory"], pick["exp"], pick["fp32"], pick["l2_read"],
                   pick["dram_read"], launch, profile.sm_count, "measured" if use_measured else "vendor peaks",
                   write, floor, wgmma, copy, *fetch)


@dataclass(frozen=True)
class WarpLayout:
    """How a kernel's warps share a thread block's matrix products."""

    warps: int
    #: backward: (AtomLayoutMSdP, AtomLayoutNdKV, AtomLayoutMdQ) with the block's (B_r, B_c, d);
    #: None for the forward kernels, which stack every warp along the query rows
    atoms: tuple[int, int, int] | None = None
    block_q: int = 0
    block_kv: int = 0
    head_dim: int = 0
    #: the head dim the kernel is compiled for (kHeadDim: d rounded up to a kernel size, e.g.
    #: 64 for d = 40); its products run at that width, the extra columns zero. 0: d itself
    kernel_head_dim: int = 0
    #: (blocks an SM, step factor) measured for the kernel's tile (:mod:`iosim.kernels.coresidency`):
    #: how the SM's units overlap the steps of blocks that share it; None: the serial sum
    coresident: tuple[int, float] | None = None
    #: a lone block's measured step over the serial sum (:mod:`iosim.kernels.coresidency`)
    step_factor: float = 1.0
    #: thread blocks an SM holds at once (occupancy); 0: not known
    blocks_per_sm: int = 0
    #: whether the kernel's fills and drains are modelled (flash-attn 2's kernels: :mod:`.block_fill`)
    fa2_waits: bool = False
    #: a flash-attn 2 forward's thread blocks in launch order (:class:`.block_fill.ForwardGrid`):
    #: which Q tiles and first key blocks its first wave loads; None: not such a forward
    launch_order: ForwardGrid | None = None
    #: a causal flash-attn 2 forward's code (:class:`iosim.kernels.flash_code.CausalCode`); None: not such.
    #: Its kernels without the score product (split-KV's combine) run none of its steps' code
    causal_code: object | None = None

    def padded(self, products: dict) -> dict:
        """``products`` as the kernel computes them: its MMA tiles are static, so a side of d
        (N or K; d is never a product's M) runs at the kernel's head dim, and, where the
        layout knows the block (B_r, B_c), a ragged block's side at the whole block — the
        last query block of N = 3,000, or the one row of a decode step, computes B_r rows."""
        d, kd = self.head_dim, self.kernel_head_dim or self.head_dim
        if kd == d and not (self.block_q and self.block_kv):
            return products
        out: dict = {}
        for (m, n, k, a, b), count in products.items():
            key = (*self._whole(m, n, k, d, kd), a, b)
            out[key] = out.get(key, 0) + count
        return out

    def _whole(self, m: int, n: int, k: int, d: int, kd: int) -> tuple[int, int, int]:
        """(M, N, K) of one product at the tile the kernel computes. S and dP are (q, kv, d);
        the forward's PV (q, d, kv); the backward's dV, dK (kv, d, q) and dQ (q, d, kv), told
        apart by which side exceeds the other block (where neither does, the two have the
        same FLOPs whichever is taken)."""
        br, bc = self.block_q, self.block_kv
        if not (br and bc):
            return m, kd if n == d else n, kd if k == d else k
        if k == d:
            return br, bc, kd
        if n != d:
            return m, n, k      # no product of these kernels: leave it as counted
        dkv = self.atoms is not None and m <= bc and k <= br     # could be dV or dK: (kv, d, q)
        return (bc, kd, br) if dkv else (br, kd, bc)

    def fill_ratio(self, products: dict) -> float:
        """How much more of the score tiles the kernel computes than its blocks hold: whole
        B_r × B_c over the rows × columns counted, summed over the (q, kv, d) products. The
        softmax's element-wise work runs on the whole tile in registers too."""
        if not (self.block_q and self.block_kv):
            return 1.0
        s_products = [(m * n, c) for (m, n, k, _, _), c in products.items() if k == self.head_dim]
        counted = sum(area * c for area, c in s_products)
        return self.block_q * self.block_kv * sum(c for _, c in s_products) / counted if counted else 1.0

    @property
    def computed_in_registers(self) -> bool:
        """Whether a product's computed operand (P) stays in the warp's registers."""
        return self.atoms is None

    def grid(self, m: int, n: int, k: int) -> tuple[int, int]:
        """(warps along M, warps along N) for the product C[M×N] += A[M×K]·B[K×N].

        The backward kernel's products are told apart by shape: S and dP are B_r×B_c×d,
        dV and dK B_c×d×B_r, dQ B_r×d×B_c (where two share a shape, the tables give them
        the same grid; a test checks it).
        """
        if self.atoms is None:
            return self.warps, 1
        sdp, dkv, dq = self.atoms
        br, bc, d = self.block_q, self.block_kv, self.kernel_head_dim or self.head_dim   # products are padded
        rows = {(br, bc, d): sdp, (bc, d, br): dkv, (br, d, bc): dq}.get((m, n, k), sdp)
        return rows, self.warps // rows

    def operand_bytes(self, products: dict, width: int) -> int:
        """Shared-memory bytes one thread block's warps read as product operands."""
        total = 0
        for (m, n, k, a_staged, b_staged), count in products.items():
            wm, wn = self.grid(m, n, k)
            a = a_staged or not self.computed_in_registers
            b = b_staged or not self.computed_in_registers
            total += count * ((wn * m * k if a else 0) + (wm * n * k if b else 0))
        return total * width


def block_seconds(work, layout: WarpLayout, rates: KernelRates, width: int) -> dict:
    """One thread block's time on one SM, by step (seconds); the products, and the softmax's
    work with them, at the tiles the kernel computes (:meth:`WarpLayout.padded`)."""
    sm = rates.sm_count
    ops = work.ops
    products = layout.padded(work.products)
    flops = ops.get("matmul", 0) if products is work.products else \
        sum(2 * m * n * k * count for (m, n, k, _, _), count in products.items())
    # the softmax on whole tiles, as the products: its exponentials are the score tile's; the
    # forward's other element-wise work is on tiles of the query rows too (S, O, m, ℓ), the
    # backward's partly on dK and dV, which a ragged query block does not pad
    fill = layout.fill_ratio(work.products)
    return {
        "tensor cores": flops * sm / rates.mma_flops,
        "shared memory": layout.operand_bytes(products, width) * sm / rates.smem_bytes,
        "exp": ops.get("exp", 0) * fill * sm / rates.exp_ops,
        "fp32": ops.get("elementwise", 0) * (fill if layout.atoms is None else 1.0) * sm / rates.fp32_ops,
    }


def _same_work_runs(works) -> list[tuple]:
    """(work, count) runs of consecutive thread blocks that do the same work. Counting mode
    groups identical blocks into one record and trace mode records them one by one; merged
    runs make the prediction the same, to the last bit, whichever mode counted."""
    runs: list[list] = []
    for w in works:
        if runs and runs[-1][0].ops == w.ops and runs[-1][0].products == w.products:
            runs[-1][1] += w.count
        else:
            runs.append([w, w.count])
    return [(w, n) for w, n in runs]


def _unit_totals(steps: list[dict], counts: list[int]) -> dict:
    """Each unit's seconds over a head's blocks, summed per distinct block time in a fixed
    order: the same floats whichever mode grouped the blocks (blocks that differ only in a
    ragged side take a whole tile's time, and count mode may group them where trace mode
    lists them one by one)."""
    blocks: dict = {}
    for step, n in zip(steps, counts):
        key = tuple(sorted(step.items()))
        blocks[key] = blocks.get(key, 0) + n
    units = dict.fromkeys(k for step in steps for k in step)   # a block without work has no wait
    return {k: sum(dict(key).get(k, 0.0) * n for key, n in sorted(blocks.items())) for k in units}


def predict(profile, dtype: str, requested: dict, dram: dict, work: dict, layouts: dict) -> dict:
    """Per kernel launch: a :class:`TimePrediction` from this model.

    ``requested``: kernel -> (bytes read, bytes written) its loads and stores request (in
    launch order); ``dram``: kernel -> (read, written) bytes that reach DRAM, where the L2
    was modelled (else the requests do); ``work``: kernel -> (heads, [CtaWork, ...] of one
    head); ``layouts``: kernel -> :class:`WarpLayout`. A kernel without thread-block work
    (the small element-wise kernels) is timed by its memory traffic and the floor: an
    empty launch, or, for a kernel that reads and then writes, the measured duration of
    the smallest such kernel (one dependent DRAM round trip more).
    """
    rates = KernelRates.from_profile(profile, dtype)
    width = dtype_width(dtype)  # bytes per operand element (Q, K, V, P)
    out = {}
    for kernel, (reads, writes) in requested.items():
        heads, works = work.get(kernel, (0, []))
        copying = not any(w.products for w in works)     # an element-wise kernel: loads into stores
        per = memory_seconds(rates, reads, writes, dram.get(kernel, (reads, writes)), copying)
        compute, shared = 0.0, None
        if works and kernel in layouts:
            works, layout = _same_work_runs(works), layouts[kernel]
            shared = layout.coresident if rates.source == "measured" else None   # measured on the H200
            per_head = sum(n for _, n in works)
            steps = [_block_steps(w, layout, rates, width, shared, per_head) for w, _ in works]
            # one head, launch order; fsum: correctly rounded, so equal blocks tie on every Python
            # (3.12's sum() compensates, 3.11's does not) and the SMs' schedule is the same everywhere
            runs = [(math.fsum(s.values()), n) for s, (_, n) in zip(steps, works)]
            if shared and shared[0] == 2 and (blocks_of(runs, heads)[0] <= rates.sm_count or layout.blocks_per_sm == 1):
                shared = None   # a block an SM at most (or only one fits): nothing shares it
            compute = busiest_sm_shared(runs, rates.sm_count, heads, shared if shared and shared[0] == 2 else None)
            totals = _unit_totals(steps, [n for _, n in works])
            whole = sum(totals.values()) or 1.0
            for k, v in totals.items():  # the busiest SM's time, split as the work is
                per[k] = compute * v / whole
            fill = fill_drain_s(works, heads, layout, rates, width)
            if fill:
                per[FILL] = fill
            waits = _phase_waits(compute, per["DRAM"], works, layout, rates, width)
            if waits:
                per[DRAM_WAIT], compute = waits, compute + waits
            fetch = _code_fetch(layout, rates, works)
            if fetch:
                per[FETCH], compute = fetch, compute + fetch
        out[kernel] = _noted(combine(per, compute, [k for k in COMPUTE if k in per]), shared)
    return out


def _phase_waits(compute: float, dram: float, works, layout: WarpLayout, rates: KernelRates, width: int) -> float:
    """Seconds a flash-attn 2 forward's steps wait for DRAM beyond its compute, 0 elsewhere.

    Its main loop is a pipeline of one stage: the load of V_j is issued before S = Q K_jᵀ and
    waited for before O += P V_j; the load of K_{j-1} is issued before that product and waited
    for at the next step's start. Each phase ends when both its products and the load behind
    it are done, so where the keys stream from DRAM a step takes max(c_A, m/2) + max(c_B, m/2),
    not max(c_A + c_B, m): c_A the QKᵀ product with the softmax, c_B the PV product, m the
    DRAM time of the step's K and V (docs/validation/2026-12-04-splitkv-step.md)."""
    if not layout.fa2_waits or layout.atoms is not None or rates.source != "measured" or not dram or not compute:
        return 0.0
    wholes, pvs = [], []     # summed exactly (math.fsum): the works come in another order in each mode
    for w, n in works:
        steps = block_seconds(w, layout, rates, width)
        products = {key: c for key, c in w.products.items() if not key[3]}    # P from registers: the PV product
        if not products:
            continue
        flops = sum(2 * m * nn * k * c for (m, nn, k, _, _), c in products.items())   # block_seconds pads them
        pv_steps = block_seconds(dataclasses.replace(w, products=products, ops={"matmul": flops}), layout, rates, width)
        wholes.append(n * sum(steps.values()))
        pvs.append(n * sum(pv_steps.values()))
    whole, pv = math.fsum(wholes), math.fsum(pvs)
    if not whole:
        return 0.0
    c_b = compute * pv / whole
    c_a = compute - c_b
    # max(c_A, m/2) + max(c_B, m/2) - (c_A + c_B), as the two phases' excesses: exactly 0 where
    # both products outlast their loads (the difference left ±1e-20, printed "DRAM waits 0%")
    return max(0.0, dram / 2 - c_a) + max(0.0, dram / 2 - c_b)


def _code_fetch(layout: WarpLayout, rates: KernelRates, works) -> float:
    """Seconds a causal flash-attn 2 forward launch waits for its code beyond the dense one's, 0
    elsewhere: the code its longest block runs beyond ``code_free_bytes``, less the dense
    kernel's, at ``code_fetch_bytes`` a second, once a launch.

    Measured on the H200 under Nsight Compute (which flushes the caches before each launch;
    docs/validation/2026-12-04-mask-cost.md): a causal forward at a kernel head dim takes 0-22 µs
    more than the dense one with the same steps, growing with its code (60-125 KiB: the masking
    steps are unrolled copies of the step, one more in the uneven instantiation; rms 1.0 µs over
    18 launches), the same at 8 and 32 key blocks a block, and its warps stall for instructions
    for that time (``smsp__warps_issue_stalled_no_instruction``). Not modelled: two blocks an SM
    wait about 0.7 of it, a wave past the second 3-7 µs more (the largest codes), and the main
    kernel at other head dims (its ``CausalCode`` is None: the extra fell with the key blocks)."""
    code = layout.causal_code
    if code is None or not rates.code_fetch_bytes:
        return 0.0
    steps = max((sum(c for (_, _, k, _, _), c in w.products.items() if k == layout.head_dim) for w, _ in works),
                default=0)
    causal, dense = code.executed(steps)
    free = rates.code_free_bytes
    return max(0.0, max(0.0, causal - free) - max(0.0, dense - free)) / rates.code_fetch_bytes


def _block_steps(work, layout: WarpLayout, rates: KernelRates, width: int, shared, per_head: int) -> dict:
    """One block's time by step (seconds): an 8-warp kernel's steps at its measured factor
    (``shared`` = (1, r): its two warps a sub-partition overlap), a 4-warp forward's at its
    measured lone step (``layout.step_factor``), and where the block holds its SM alone its
    own wait for its first tiles and last stores (:func:`.block_fill.lone_block_s`; ``per_head``
    blocks a head)."""
    step = block_seconds(work, layout, rates, width)
    measured = rates.source == "measured"   # the factors were measured with the H200's rates
    scale = (shared[1] if shared and shared[0] == 1 else 1.0) * (layout.step_factor if measured else 1.0)
    if scale != 1.0:
        step = {k: scale * v for k, v in step.items()}
    wait = lone_block_s(work, layout, rates, width, per_head)
    if wait:
        step[BLOCK_WAIT] = wait
    return step


def _noted(prediction: TimePrediction, shared: tuple[int, float] | None) -> TimePrediction:
    """A compute bound says how the SM's blocks were overlapped (``shared``), where they were."""
    if shared is None or not prediction.bound.startswith("compute ("):
        return prediction
    blocks, r = shared
    how = "two blocks an SM" if blocks == 2 else "two warps a sub-partition"
    return dataclasses.replace(prediction, bound=prediction.bound.replace(
        "compute (", f"compute, {how} at {r:.2f} a step (", 1))


__all__ = ["COPY", "FILL", "BLOCK_WAIT", "KernelRates", "WarpLayout", "block_seconds", "busiest_sm", "busiest_sm_shared", "combine", "memory_seconds", "predict"]

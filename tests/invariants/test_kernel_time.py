"""The kernel time model (iosim.models.kernel_time): its pieces. Its predictions against the
committed Nsight Compute measurements on an H200 are tests/gpu/test_ncu_replays.py."""

import pytest

from iosim import Options, Problem, load_profile, simulate
from iosim.models.cache import occupancy
from iosim.models.kernel_time import KernelRates, WarpLayout, busiest_sm
from iosim.kernels.tile_tables import TABLES


def test_blocks_go_to_the_least_busy_sm_in_launch_order():
    # 2 SMs: 1 -> SM0, 3 -> SM1, 1 -> SM0 (1+1), 1 -> SM0 (2+1): the busiest has 3
    assert busiest_sm([(1.0, 1), (3.0, 1), (1.0, 2)], 2) == 3.0
    # a long block last cannot be balanced: 1, 1 then 3 -> 1 + 3
    assert busiest_sm([(1.0, 2), (3.0, 1)], 2) == 4.0
    assert busiest_sm([(2.0, 133)], 132) == 4.0  # uniform: ceil(133 / 132) waves
    assert busiest_sm([], 132) == 0.0


def test_registers_limit_occupancy():
    regs = 256 * 1024  # the register file, bytes
    assert occupancy(132, 228 * 1024, 64 * 1024, 128, 255, regs) == 132 * 2   # FA2 forward, d = 128
    assert occupancy(132, 228 * 1024, 96 * 1024, 256, 255, regs) == 132 * 1   # FA2 backward
    assert occupancy(132, 228 * 1024, 64 * 1024, 128) == 132 * 3               # unknown registers: smem decides


def _run(causal=False, mode="count", n=4096, heads=4):
    # 4 heads of 4,096: enough query blocks that flash-attn does not split the keys (docs/spec/kernels.md §3)
    p = load_profile("h200")
    return simulate(p, "fa2", Problem(seq_len=n, head_dim=128, heads=heads, causal=causal), passes="forward+backward", mode=mode, options=Options(kernel="flash-attn-2"))


def test_forward_operand_bytes_follow_the_warp_layout():
    # B_r = 128, B_c = 64, d = 128, 4 warps stacked on the rows. Per step j: S = Q_i K_jᵀ reads
    # Q_i once (128·128) and K_j by all 4 warps (4·64·128); O += P V_j keeps P in registers
    # and reads V_j by all 4 warps (4·128·64). fp16: 2 bytes each. 64 steps per block.
    r = _run()
    heads, works = r.cta_work["main"].heads, r.cta_work["main"].blocks
    assert heads == 4 and len(works) == 1 and works[0].count == 4096 // 128
    per_step = 128 * 128 + 4 * 64 * 128 + 4 * 128 * 64
    assert WarpLayout(4).operand_bytes(works[0].products, 2) == 64 * per_step * 2


def test_backward_grids_are_the_atom_layouts():
    layout = WarpLayout(8, (2, 4, 2), block_q=64, block_kv=128, head_dim=128)
    assert layout.grid(64, 128, 128) == (2, 4)    # S, dP: B_r × B_c × d; also dQ's shape here
    assert layout.grid(128, 128, 64) == (4, 2)    # dV, dK: B_c × d × B_r
    assert not layout.computed_in_registers


@pytest.mark.parametrize("rule", [r for r in TABLES[("fa2", "bwd")].rules if r.atoms], ids=lambda r: f"d{r.head_dim}")
def test_coinciding_backward_shapes_share_a_grid(rule):
    # grid() tells the products apart by shape; where two roles have one shape, their
    # atom layouts must agree, or the model would read the wrong one.
    br, bc, d = rule.block_q, rule.block_kv, rule.head_dim
    sdp, dkv, dq = rule.atoms
    roles = {(br, bc, d): sdp}
    for shape, rows in (((bc, d, br), dkv), ((br, d, bc), dq)):
        assert roles.setdefault(shape, rows) == rows


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("mode", ["count", "trace"])
def test_thread_block_records_add_up_to_the_kernel_ops(causal, mode):
    r = _run(causal, mode, n=1024, heads=8)
    for kernel, launch in r.cta_work.items():
        heads, works = launch.heads, launch.blocks
        for kind in ("matmul", "exp", "elementwise"):
            assert sum(w.ops.get(kind, 0) * w.count for w in works) * heads == r.kernel_ops[kernel].get(kind, 0), \
                (kernel, kind)


def test_rates_measured_where_the_profile_has_them():
    h200 = KernelRates.from_profile(load_profile("h200"), "fp16")
    assert h200.source == "measured" and h200.launch_s == pytest.approx(1.46e-6)
    assert h200.mma_flops == pytest.approx(643.4e12)
    h100 = KernelRates.from_profile(load_profile("h100-pcie"), "fp16")
    assert h100.source == "vendor peaks" and h100.launch_s == 0.0
    assert h100.mma_flops == load_profile("h100-pcie").tensor_flops_per_s("fp16")


def test_standard_tiled_runs_as_three_launches():
    r = simulate("h200", "standard", Problem(seq_len=512, head_dim=64, heads=2), blocks=(64, 64), options=Options(gemm="tiled"))
    assert list(r.kernels) == ["qk", "softmax", "pv"]
    assert r.kernel_ops["qk"]["thread_blocks"] == 2 * 8 * 8 and r.kernel_ops["pv"]["thread_blocks"] == 2 * 8


def test_operand_bytes_use_the_problems_width():
    """fp8 operands are one byte: the model's shared-memory step for fp8 is half its step for
    fp16 on the same work (the rates being the same vendor peaks for both would not hold, so
    compare the operand bytes the model charged). flash-attn 2 runs no fp8 (the preset refuses
    it), so an fp16 run's counts are timed as both."""
    from iosim.kernels.tile_tables import kernel_tile
    from iosim.models.kernel_time import predict
    from iosim.run.kernel_timing import kernel_traffic

    profile = load_profile("h100-sxm")
    r = simulate(profile, "fa2", Problem(seq_len=4096, head_dim=128, heads=16), options=Options(kernel="flash-attn-2"))
    tile = kernel_tile("fa2", 128, profile)
    layout = WarpLayout(tile.warps, block_q=tile.block_q, block_kv=tile.block_kv, head_dim=128)
    times = {}
    for dtype in ("fp16", "fp8"):
        rates = KernelRates.from_profile(profile, dtype)
        shared = predict(profile, dtype, *kernel_traffic(r), {"main": layout})["main"].per_resource_s["shared memory"]
        times[dtype] = shared * rates.smem_bytes
    assert times["fp8"] * 2 == pytest.approx(times["fp16"])


@pytest.mark.parametrize("causal", [False, True])
def test_kernel_times_do_not_depend_on_the_counting_mode(causal):
    # count mode groups identical thread blocks, trace mode records them one by one; the
    # model merges runs of identical blocks, so both give the same floats to the last bit
    # (before the merge, causal backward's dot_do_o differed in its fp32 share's last digit)
    count = simulate("a100-80gb", "fa2", Problem(seq_len=4096, head_dim=128, batch=4, heads=16, causal=causal), passes="forward+backward", options=Options(kernel="flash-attn-2"))
    trace = simulate("a100-80gb", "fa2", Problem(seq_len=4096, head_dim=128, batch=4, heads=16, causal=causal), passes="forward+backward", mode="trace", options=Options(kernel="flash-attn-2"))
    assert {k: v.to_dict() for k, v in count.kernel_times.items()} == \
           {k: v.to_dict() for k, v in trace.kernel_times.items()}


def _measured_backward_traits() -> dict:
    """kHeadDim -> (kBlockM, kBlockN, kNWarps, atoms) as the backward kernels' names read in
    every committed Nsight Compute CSV (the H200's template arguments)."""
    import re
    from pathlib import Path
    pattern = re.compile(r"Flash_bwd_kernel_traits<(\d+), (\d+), (\d+), (\d+), (\d+), (\d+), (\d+),")
    found: dict = {}
    from iosim.gpu.ncu import read_raw
    runs = Path(__file__).resolve().parents[2] / "docs" / "validation"
    for csv in [*runs.glob("*/sdpa_d*.csv"), *(p.with_suffix("") for p in runs.glob("*/sdpa_d*.csv.gz"))]:
        for m in pattern.finditer(read_raw(str(csv))):
            d, bm, bn, warps, *atoms = map(int, m.groups())
            found.setdefault(d, set()).add((bm, bn, warps, tuple(atoms)))
    return found


def test_backward_rules_match_the_kernels_the_h200_ran():
    """The backward table's tile and atom layouts for each head dim are the template
    arguments in the names of the kernels ncu measured (d = 32 to 256, H100/H200's
    shared-memory branch), so the time model has every head dim's warp grids."""
    from iosim.kernels.tile_tables import kernel_tile
    measured = _measured_backward_traits()
    assert {32, 64, 96, 128, 192, 256} <= set(measured)
    h200 = load_profile("h200")
    for d, traits in measured.items():
        tile = kernel_tile("fa2", d, h200, direction="bwd")
        assert traits == {(tile.block_q, tile.block_kv, tile.warps, tile.warp_grids)}, d


# -- two blocks an SM (iosim.kernels.coresidency) -------------------------------------------
def _sm_times(durations, sms, r):
    """An exact event simulation of SMs holding two blocks each: blocks enter, in launch
    order, the first free slot (one slot of every SM, then the second); a block alone on
    its SM progresses at rate 1, two together at 1 / (2r) each. The busiest SM's time."""
    queue = [t for t, c in durations for _ in range(c)]
    left = [[None, None] for _ in range(sms)]           # remaining lone-seconds of each slot's block
    clock, busiest = 0.0, [0.0] * sms
    while queue or any(x is not None for s in left for x in s):
        for j in (0, 1):
            for s in range(sms):
                if left[s][j] is None and queue:
                    left[s][j] = queue.pop(0)
        rates = [1 / (2 * r) if None not in s else 1.0 for s in left]
        step = min(x / rates[i] for i, s in enumerate(left) for x in s if x is not None)
        clock += step
        for i, s in enumerate(left):
            for j in (0, 1):
                if s[j] is not None:
                    s[j] -= step * rates[i]
                    if s[j] <= 1e-12:
                        s[j], busiest[i] = None, clock
    return max(busiest)


@pytest.mark.parametrize("blocks", [1, 5, 8, 9, 13, 16, 17, 24, 31])
def test_two_blocks_an_sm_equal_blocks_match_an_event_simulation(blocks):
    from iosim.models.kernel_time import busiest_sm_shared

    for r in (0.5, 0.73, 1.0):
        assert busiest_sm_shared([(2.0, blocks)], 4, 1, (2, r)) == pytest.approx(_sm_times([(2.0, blocks)], 4, r))


def test_two_blocks_an_sm_unequal_blocks_heap():
    from iosim.models.kernel_time import busiest_sm_shared

    # causal-like: blocks of growing length; the slot heap against the event simulation
    runs = [(float(t), 1) for t in range(1, 13)]
    got = busiest_sm_shared(runs, 3, 2, (2, 0.75))
    assert got == pytest.approx(_sm_times(runs * 2, 3, 0.75), rel=0.15)
    # never faster than the longest block alone, never slower than the serial sum
    assert 12.0 <= got <= busiest_sm(runs, 3, 2)
    # r = 1: two blocks together take as long as one after the other; equal blocks: the serial sum
    assert busiest_sm_shared([(3.0, 10)], 4, 3, (2, 1.0)) == busiest_sm([(3.0, 10)], 4, 3)
    # one block an SM at most: nothing shares an SM
    assert busiest_sm_shared([(3.0, 4)], 4, 1, (2, 0.7)) == 3.0
    # the 8-warp kernel: every block at r of its time
    assert busiest_sm_shared(runs, 3, 2, (1, 0.9)) == pytest.approx(0.9 * busiest_sm(runs, 3, 2))


def test_an_empty_block_takes_its_turn_in_the_dispatch():
    """A block with no work (a causal split-KV block whose keys are all masked) still takes a
    slot in launch order, so the blocks after it pair up on the SMs where their launch order
    puts them: here the two working blocks both land on SM 1 (slots 1 and 3), as in the event
    simulation with the empty blocks given a moment's work, not one each on SMs 0 and 1."""
    from iosim.models.kernel_time import busiest_sm_shared

    runs = [(0.0, 1), (1.0, 1), (0.0, 1), (1.0, 1)]
    assert busiest_sm_shared(runs, 2, 1, (2, 0.8)) == pytest.approx(1.6)
    assert busiest_sm_shared(runs, 2, 1, (2, 0.8)) == pytest.approx(
        _sm_times([(1e-9, 1), (1.0, 1), (1e-9, 1), (1.0, 1)], 2, 0.8), abs=1e-6)
    assert busiest_sm_shared([(1.0, 2)], 2, 1, (2, 0.8)) == 1.0     # without them: one block an SM


def test_every_h200_forward_tile_has_its_measured_factor():
    from iosim.kernels.coresidency import FACTORS, KERNEL
    from iosim.kernels.tile_tables import kernel_tile

    p = load_profile("h200")
    for d in (32, 40, 64, 96, 128, 160, 192, 256):
        for causal in (False, True):
            t = kernel_tile("fa2", d, p, causal=causal)
            assert t.kernel == KERNEL and (t.block_q, t.block_kv, t.warps, t.kernel_head_dim) in FACTORS, d


def test_the_forward_says_when_blocks_share_an_sm():
    p = load_profile("h200")
    big = simulate(p, "fa2", Problem(seq_len=4096, head_dim=128, batch=4, heads=32),
                   options=Options(kernel="flash-attn-2"))
    small = simulate(p, "fa2", Problem(seq_len=4096, head_dim=128, heads=4), options=Options(kernel="flash-attn-2"))
    assert "two blocks an SM at 0.80 a step" in big.kernel_times["main"].bound
    assert "two blocks" not in small.kernel_times["main"].bound     # 128 blocks: one an SM
    # the same on a profile with vendor peaks only: not measured there, the serial sum
    h100 = simulate(load_profile("h100-pcie"), "fa2", Problem(seq_len=4096, head_dim=128, batch=4, heads=32),
                    options=Options(kernel="flash-attn-2"))
    assert "two blocks" not in h100.kernel_times["main"].bound


def test_ragged_blocks_compute_whole_tiles():
    """The kernels' MMA tiles are static: a ragged block's side, and d, run at the whole
    tile (the one row of a decode step computes B_r rows)."""
    fwd = WarpLayout(4, block_q=128, block_kv=64, head_dim=40, kernel_head_dim=64)
    # S of a 56-row last query block; PV of a 24-row last key block
    assert fwd.padded({(56, 64, 40, True, True): 3, (128, 40, 24, False, True): 2}) == {
        (128, 64, 64, True, True): 3, (128, 64, 64, False, True): 2}
    bwd = WarpLayout(8, (2, 4, 2), 64, 128, 128)
    # a decode step (N_q = 1): S and dP (1 × 128 × d), dV and dK (128 × d × 1), dQ (1 × d × 128)
    got = bwd.padded({(1, 128, 128, True, True): 2, (128, 128, 1, True, True): 2, (1, 128, 128, False, True): 1})
    assert got == {(64, 128, 128, True, True): 2, (128, 128, 64, True, True): 2, (64, 128, 128, False, True): 1}
    # dQ of a 40-row query block against a 100-row key block, and dK the other way round
    assert bwd.padded({(40, 128, 100, True, True): 1, (100, 128, 40, True, True): 1}) == {
        (64, 128, 128, True, True): 1, (128, 128, 64, True, True): 1}
    # without the blocks (iosim's CuPy kernel): only d is padded
    assert WarpLayout(4).padded({(56, 64, 40, True, True): 1}) == {(56, 64, 40, True, True): 1}

"""The triton-fa2 preset's and time model's mechanisms, one test each, on the preset and
the model alone (no measured data; docs/triton.md, "What the device data changed")."""

import pytest

from iosim import load_profile
from iosim.kernels.triton_preset import (TritonConfig, converts_p, pv_rows, pv_warp_grid, registers_per_thread,
                                         triton_tile, warp_grid)
from iosim.models.kernel_time import KernelRates
from iosim.models.triton_time import chain_seconds, load_wait, step_seconds, _round

H200 = load_profile("h200")
RATES = KernelRates.from_profile(H200, "fp16")


def _tile(bm, bn, w, s, d=128):
    return triton_tile(TritonConfig(bm, bn, w, s), d, "fp16", H200)


def test_pv_dot_grows_warps_along_d_when_the_rows_run_out():
    # warpsPerTileV3 without a chained dot: (4, 1), then x2 along the rows while BLOCK_M > 16 * wm
    assert pv_warp_grid(TritonConfig(64, 64, 8, 2), 3) == (4, 2)
    assert pv_warp_grid(TritonConfig(128, 64, 8, 2), 3) == (8, 1)
    assert pv_warp_grid(TritonConfig(64, 64, 4, 2), 3) == (4, 1)
    assert warp_grid(TritonConfig(64, 64, 8, 2), 3) == (8, 1)       # the first dot: every warp on the rows
    assert pv_warp_grid(TritonConfig(32, 64, 4, 2), 2) == warp_grid(TritonConfig(32, 64, 4, 2), 2)


def test_64_rows_on_8_warps_replicate_s_split_o_and_convert_p():
    t = _tile(64, 64, 8, 2)
    assert (t.computed_rows, t.pv_rows, t.p_convert) == (128, 64, True)
    assert not converts_p(TritonConfig(128, 64, 8, 2), 3) and not converts_p(TritonConfig(64, 64, 4, 2), 3)
    assert pv_rows(TritonConfig(64, 64, 8, 2), 3) == 64
    # the replicated S costs tensor work: more than the 128-row tile's S per useful row
    per64, per128 = (step_seconds(x, RATES, H200, "fp16", 0, 0) for x in (t, _tile(128, 64, 8, 2)))
    assert per64["tensor cores"] > 0.7 * per128["tensor cores"]
    assert per64["shared memory"] > step_seconds(_tile(64, 64, 4, 2), RATES, H200, "fp16", 0, 0)["shared memory"]


def test_o_accumulator_is_split_over_the_pv_grid():
    # d = 128, 64 x 64, 8 warps: O over (4, 2) warps is 64 * 128 / 256 = 32 fp32 per thread
    cfg = TritonConfig(64, 64, 8, 2)
    assert registers_per_thread(cfg, 128, 3) == 32 + 32 + 4 + 32      # O + S (128 rows) + m, l + overhead
    assert registers_per_thread(TritonConfig(128, 128, 4, 2), 128, 3) > 255    # spills, as ptxas reports


def test_wgmma_reads_its_operands_while_it_computes():
    t = _tile(128, 128, 8, 3)
    per = {"tensor cores": 1.0, "shared memory": 0.6, "exp": 0.3, "fp32": 0.2}
    assert chain_seconds(t, per) == (1.0 + 0.5, 1.0)
    v2 = triton_tile(TritonConfig(32, 64, 2, 2), 128, "fp16", H200)
    assert v2.mma == 2 and chain_seconds(v2, per) == (1.6 + 0.5, 1.6)


def test_wgmma_rounds_run_their_chains_in_turn():
    """Under wgmma the co-resident blocks' phases fall into step (no ping-pong): a round of r
    blocks takes r chains, or one chain and its exposed wait where longer."""
    t = _tile(128, 64, 4, 1)
    per = {"tensor cores": 1.0, "shared memory": 0.5, "exp": 0.4, "fp32": 0.2}
    assert t.mma == 3
    assert _round(t, per, 0.0, 1) == 1.6                   # one chain: units in turn
    assert _round(t, per, 0.0, 3) == pytest.approx(4.8)    # three chains, one after another
    assert _round(t, per, 5.0, 3) == pytest.approx(9.8)    # one stage: every round waits for its loads
    t3 = _tile(128, 64, 4, 3)
    assert _round(t3, per, 8.0, 3) == pytest.approx(4.8 + 8.0 - 2 * 2 * 1.6)   # earlier stages cover part
    assert _round(t3, per, 5.0, 3) == pytest.approx(4.8)                       # or all of it
    assert _round(t3, per, 5.0, 1) == pytest.approx(1.6 + 5.0)


def test_mma_sync_rounds_are_throughput_or_latency_bound():
    t = triton_tile(TritonConfig(32, 64, 2, 2), 128, "fp16", H200)
    per = {"tensor cores": 1.0, "shared memory": 0.5, "exp": 0.4, "fp32": 0.2}
    assert t.mma == 2
    assert _round(t, per, 0.0, 1) == pytest.approx(1.5 / 0.5)     # 2 warps: the tensor path on half the sub-partitions
    assert _round(t, per, 0.0, 4) == pytest.approx(4 * 1.5)       # four blocks: the tensor path is the limit
    assert _round(t, per, 9.0, 4) == pytest.approx(2.1 + 9.0)     # an exposed wait dominates


def test_stages_hide_the_load_wait():
    waits = [load_wait(_tile(128, 64, 4, s), RATES, "fp16", 0.3e-6)[0] for s in (1, 2, 3)]
    assert waits[0] > waits[1] > waits[2] >= 0

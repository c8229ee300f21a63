"""benchmarks/cudnn_steps.py's launches and benchmarks/cudnn_steps_table.py's arithmetic (no GPU needed): the timed
launches are whole waves of the persistent kernels' tiles, and the table gives back the steps of timings that a known
model of them made."""

import csv

import pytest

from conftest import load_module
from iosim.kernels import cudnn_preset

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
STEPS = load_module("cudnn_steps", ROOT / "benchmarks" / "cudnn_steps.py")
TABLE = load_module("cudnn_steps_table", ROOT / "benchmarks" / "cudnn_steps_table.py")


def test_every_launch_is_whole_waves_of_tiles():
    """B·H·N/128 tiles = 132 · waves at both lengths, every kernel head dim of the Hopper kernels, dense and causal."""
    launches = STEPS.launches()
    assert len(launches) == 4 * len(STEPS.CONFIGS)
    for d, dtype, causal, n, bh, waves in launches:
        assert n % 128 == 0 and bh * n // 128 == 132 * waves
        assert cudnn_preset.persistent_grid(bh * n // 128, 132) == 132
    assert {(d, causal) for d, _, causal, *_ in launches} == {(d, c) for d in (64, 128, 192, 256) for c in (False, True)}
    assert {(d, dtype) for d, dtype, *_ in launches if dtype == "bfloat16"} == {(128, "bfloat16")}


@pytest.mark.parametrize("kernel", ["fprop", "bprop"])
def test_the_table_gives_back_a_known_models_steps(tmp_path, kernel):
    """Timings written from a model of the kernels (step 1.1 µs, causal step 1.4 µs, tile 2.5 µs, fill 4 µs) come back
    as those four figures, and every timed launch (those not fitted among them) as the model's time."""
    fit = {"step_s": 1.1e-6, "tile_s": 2.5e-6, "fill_s": 4e-6, "causal_step_s": 1.4e-6}
    path = tmp_path / "steps.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(STEPS.FIELDS)
        for d, dtype, causal, n, bh, waves in STEPS.launches():
            s = TABLE.launch_s(fit, kernel, d, n, bh, causal)
            w.writerow([d, dtype, causal, n, bh, bh * n // 128, waves, f"sdpa_sm90_flash_{kernel}_wgmma_f16", "132x1x1",
                        "384x1x1", f"{s * 1e6:.4f}", f"{s * 1e6:.4f}", 10])
            w.writerow([d, dtype, causal, n, bh, bh * n // 128, waves, "cudnn::convert_dq_to_16bits", "1x1x1",
                        "128x1x1", "3.0", "3.0", 10])
    entries = TABLE.table(TABLE.read(str(path)))
    assert len(entries) == len(STEPS.CONFIGS) // 2
    for e in entries:
        assert e["kernel"] == kernel
        for key, value in fit.items():
            assert e[key] == pytest.approx(value, rel=1e-4), (e["d"], key)
        assert len(e["launches"]) == 8
        for r in e["launches"]:
            assert r["model_s"] == pytest.approx(r["measured_s"], rel=1e-4)


def test_a_causal_fprop_tile_walks_to_its_diagonal_and_a_bprop_tile_from_it():
    """In steps of the tile's walk (fprop: key blocks of 128; bprop: query blocks of 64), in launch order; the bprop
    above d = 128 in two thread blocks a tile."""
    assert TABLE.tile_steps("fprop", 512, True) == [1, 2, 3, 4]
    assert TABLE.tile_steps("bprop", 512, True) == [8, 6, 4, 2]
    assert TABLE.tile_steps("fprop", 512, False) == [4] * 4 and TABLE.tile_steps("bprop", 512, False) == [8] * 4
    assert [TABLE.units(k, d) for k in ("fprop", "bprop") for d in (128, 192)] == [1, 1, 1, 2]


def test_the_committed_h200_runs_take_one_step_cost_a_kernel():
    """Each committed H200 fprop and bprop launch at N >= 2,048 over its busiest SM's steps, as the table's model
    schedules its tiles (launch order, to the least-loaded SM; nothing fitted), one a distinct shape: within 20 % across
    the shapes of a kernel and kernel head dim (dense and causal, fp16 and bf16, 4 to 256 heads), and rising with the
    head dim."""
    groups = TABLE.committed()
    for key, rows in groups.items():
        us = [r[0] for r in rows]
        if len(us) >= 5:
            assert max(us) / min(us) < 1.2, (key, sorted(us))
    for kernel in ("fprop", "bprop"):
        least = [min(r[0] for r in groups[kernel, kd]) for kd in (64, 128, 192, 256)]
        assert least == sorted(least), (kernel, least)
    assert {key: len(rows) for key, rows in groups.items()} == {(k, kd): 7 if kd <= 128 else 1
                                                                for k in ("fprop", "bprop") for kd in (64, 128, 192, 256)}

"""iosim explore: feasibility from the engine, the best never infeasible nor worse than the
paper default, the real kernel's tile (spec §5.2), JSON/CSV contracts, CLI and heat map."""

from __future__ import annotations

import csv
import io
import json
from types import SimpleNamespace

import pytest

from iosim import Options, CapacityError, Problem, load_profile, simulate
from iosim.cli.main import main
from iosim.errors import ProblemError
from iosim.report.explore_report import explore_csv, explore_json
from iosim.studies.explore import default_grid, explore
from iosim.kernels.tile_tables import NoKernelTile, gpu_info, kernel_tile

import closed_forms as cf


@pytest.fixture(scope="module")
def toy_runs():
    toy = load_profile("toy")
    return [explore(toy, algo, Problem(seq_len=N, head_dim=d), objective=obj, jobs=1, progress=False)
            for algo in ("fa1", "fa2", "standard") for N, d in ((512, 32), (1000, 64)) for obj in ("hbm-bytes", "time")]


def test_best_is_feasible_and_not_worse_than_the_defaults(toy_runs):
    for res in toy_runs:
        assert res.best.feasible and res.best.registers_fit
        for ref in (res.paper, res.kernel):
            if ref is not None and ref.feasible and ref.registers_fit:
                assert res.best.score(res.objective) <= ref.score(res.objective)
        assert any(not c.feasible for c in res.candidates)        # the grid reaches past what fits


def test_reasons(toy_runs):
    for res in toy_runs:
        for c in res.candidates:
            assert (c.reason == "") == (c.feasible and c.registers_fit)
            if not c.feasible:
                assert f"{c.sram_need_bytes:,} B > {c.sram_capacity_bytes:,} B" in c.reason


def test_feasibility_agrees_with_the_engine():
    toy = load_profile("toy")
    problem = Problem(seq_len=512, head_dim=32)
    res = explore(toy, "fa2", problem, block_q=[16, 32, 64, 128], block_kv=[16, 32, 64, 128], jobs=1)
    for c in res.candidates:
        try:
            simulate(toy, "fa2", problem, blocks=(c.block_q, c.block_kv))
            fits = True
        except CapacityError:
            fits = False
        assert fits == c.feasible, (c.block_q, c.block_kv)


def test_counts_are_the_engines_and_the_closed_form(h100):
    N, d = 2048, 128
    problem = Problem(seq_len=N, head_dim=d)
    res = explore(h100, "fa2", problem, block_q=[64, 128], block_kv=[64], jobs=1)
    for c in res.candidates:
        r = simulate(h100, "fa2", problem, blocks=(c.block_q, c.block_kv))
        assert (c.hbm_read_bytes, c.hbm_write_bytes) == (r.hbm.read_bytes, r.hbm.write_bytes)
        # spec §3.3: Q, K, V, O in fp16 (2 B), L in fp32 (4 B)
        per = cf.fa2_forward(N, d, c.block_q, c.block_kv, causal=False)
        assert c.hbm_total_bytes == 2 * sum(r + w for k, (r, w) in per.items() if k != "L") + 4 * N


def test_default_grid():
    assert default_grid(100) == [1, 2, 4, 8, 16, 32, 48, 64, 80, 96]
    assert default_grid(1) == [1]


def test_grid_limits_come_from_the_engine(h100):
    res = explore(h100, "fa2", Problem(seq_len=4096, head_dim=128), jobs=1, block_kv=[64])
    limit = res.grid_limits["block_q"]
    cap = h100.scratchpad.per_block_bytes
    need = lambda bq: simulate(h100, "fa2", Problem(seq_len=4096, head_dim=128), blocks=(bq, 1), options=Options(sram_bytes=1 << 40)).sram.peak_bytes
    assert need(limit) <= cap < need(limit + 1)


# -- real kernel tiles (spec §5.2) --------------------------------------------------------
@pytest.mark.parametrize("profile,d,tile", [
    ("h100-sxm", 32, (128, 128)), ("h100-sxm", 64, (128, 128)), ("h100-sxm", 96, (128, 64)),
    ("h100-sxm", 128, (128, 64)), ("a100-80gb", 128, (128, 64)), ("h100-sxm", 192, (128, 64)),
    ("a100-80gb", 256, (128, 64)), ("h100-sxm", 256, (64, 64)), ("h100-pcie", 80, (128, 64)),
])
def test_fa2_kernel_tiles(profile, d, tile):
    t = kernel_tile("fa2", d, load_profile(profile))
    assert (t.block_q, t.block_kv) == tile


def fake_gpu(cc, smem_block=101376, smem_sm=102400):
    return SimpleNamespace(name="rtx", vendor="nvidia", description=f"GeForce (compute capability {cc})",
                           scratchpad=SimpleNamespace(per_block_bytes=smem_block, capacity_bytes=smem_sm))


@pytest.mark.parametrize("cc,d,causal,dropout,tile", [
    ("8.6", 128, False, False, (128, 32)), ("8.9", 128, True, False, (64, 64)),
    ("8.6", 96, True, False, (64, 64)), ("8.6", 96, False, False, (128, 64)),
    ("9.0", 128, False, True, (128, 32)), ("8.0", 64, False, True, (128, 64)),
    ("8.0", 192, False, True, (64, 64)),
])
def test_fa2_kernel_tile_conditions(cc, d, causal, dropout, tile):
    t = kernel_tile("fa2", d, fake_gpu(cc), causal=causal, dropout=dropout)
    assert (t.block_q, t.block_kv) == tile


def test_no_kernel_tile_reasons():
    with pytest.raises(NoKernelTile, match="vendor 'amd'"):
        kernel_tile("fa2", 128, load_profile("mi300x"))
    with pytest.raises(NoKernelTile, match="sm75"):
        kernel_tile("fa2", 128, fake_gpu("7.5"))
    with pytest.raises(NoKernelTile, match="up to 256"):
        kernel_tile("fa2", 512, load_profile("h100-sxm"))
    with pytest.raises(NoKernelTile, match="no real-kernel tile table"):
        kernel_tile("standard", 64, load_profile("h100-sxm"))
    assert gpu_info(load_profile("h100-sxm")).compute_capability == (9, 0)


def test_split_kv_kernel_tiles():
    h100 = load_profile("h100-sxm")
    assert [(kernel_tile("fa2-splitkv", d, h100).block_q, kernel_tile("fa2-splitkv", d, h100).block_kv)
            for d in (64, 128, 256)] == [(64, 256), (64, 128), (64, 64)]


def test_fa1_kernel_tiles():
    h100 = load_profile("h100-sxm")
    assert (kernel_tile("fa1", 64, h100, seq_len_kv=4096).block_kv, kernel_tile("fa1", 64, h100).block_q) == (256, 16)
    assert kernel_tile("fa1", 64, h100, seq_len_kv=128).block_kv == 128
    assert kernel_tile("fa1", 128, h100).block_kv == 128


def test_explore_compares_with_the_real_kernel(h100):
    res = explore(h100, "fa2", Problem(seq_len=4096, head_dim=128), block_q=[64, 128, 256], block_kv=[32, 64, 128],
                  jobs=1)
    assert (res.kernel.block_q, res.kernel.block_kv) == (128, 64)
    d = res.to_dict()
    assert d["kernel_default"]["hbm_ratio_vs_best"] >= 1 and d["paper_default"]["hbm_ratio_vs_best"] >= 1
    assert d["kernel_default"]["kernel"]["rule"].startswith("kHeadDim=128")
    amd = explore("mi300x", "fa2", Problem(seq_len=1024, head_dim=64), block_q=[64], block_kv=[64], jobs=1)
    assert amd.kernel is None and "amd" in amd.to_dict()["kernel_reason"]


def test_nothing_fits_is_bad_input():
    with pytest.raises(ProblemError, match="no candidate fits|do not fit"):
        explore("toy", "fa2", Problem(seq_len=512, head_dim=2048), block_q=[1, 2], block_kv=[1], jobs=1)
    with pytest.raises(ProblemError, match="even 1-row tiles"):
        explore("toy", "fa2", Problem(seq_len=512, head_dim=2048), jobs=1)


# -- contracts and CLI --------------------------------------------------------------------
def test_json_contract(toy_runs):
    out = explore_json(toy_runs[:2])
    for key in ("best", "paper_default", "kernel_default", "candidates"):
        assert key in out
    for key in ("block_q", "block_kv", "hbm_read_bytes", "hbm_write_bytes", "predicted_s"):
        assert key in out["best"]
    for key in ("block_q", "block_kv", "feasible", "reason"):
        assert key in out["candidates"][0]
    assert len(out["results"]) == 2 and out["results"][0]["best"] == out["best"]
    json.dumps(out)


def test_csv(toy_runs):
    rows = list(csv.DictReader(io.StringIO(explore_csv(toy_runs[:1]))))
    assert len(rows) == len(toy_runs[0].candidates)
    assert sum(r["is_best"] == "True" for r in rows) == 1


CLI = ["explore", "--hw", "toy", "-N", "1024", "-d", "64", "--jobs", "1"]


def test_cli_table_and_formats(capsys):
    assert main(CLI + ["--algo", "fa2,fa1"]) == 0
    out = capsys.readouterr().out
    assert "best" in out and "paper default" in out and "real kernel" in out
    assert main(CLI + ["--algo", "fa2", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["best"]["block_q"] >= 1
    assert main(CLI + ["--algo", "fa2", "--format", "csv", "--block-q", "16:64", "--block-kv", "16,32"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 3 * 2                  # the paper default (M = 4096, d = 64: 16×16) is in the grid
    assert any("paper" in r["sources"] for r in rows)


def test_cli_bad_input(capsys):
    assert main(CLI + ["--algo", "fa2", "--plot", "heat.jpg"]) == 2
    with pytest.raises(SystemExit) as exc:
        main(CLI + ["--algo", "fa5"])
    assert exc.value.code == 2


@pytest.mark.parametrize("name", ["heat.png", "heat.svg"])
def test_heat_map(tmp_path, name, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / name
    assert main(CLI + ["--algo", "fa2,fa1", "--objective", "time", "--plot", str(path)]) == 0
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG") if name.endswith(".png") else b"<svg" in data[:2000]

"""iosim explore: feasibility from the engine, the best never infeasible nor worse than the
paper default, the grids, the real kernel's tile (docs/spec/kernels.md §2), CLI and heat map.

The model explore ranks by is tested in test_explore_model.py, the near-ties and the
practical choice in test_explore_ties.py, points and the JSON/CSV contracts in
test_explore_points.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from iosim import Options, CapacityError, Problem, load_profile, simulate
from iosim.cli.main import main
from iosim.errors import ProblemError
from iosim.studies.explore import default_grid, explore, explore_points
from iosim.kernels.tile_tables import NoKernelTile, gpu_info, kernel_tile

import closed_forms as cf


@pytest.fixture(scope="module")
def toy_runs():
    toy = load_profile("toy")
    # the roofline without the L2 (fast); the model with it: test_explore_model.py
    return [explore(toy, algo, Problem(seq_len=N, head_dim=d), objective=obj, grid="all", cache=False, jobs=1,
                    progress=False)
            for algo in ("fa1", "fa2", "standard") for N, d in ((512, 32), (1000, 64)) for obj in ("bytes", "time")]


def test_best_is_feasible_and_not_worse_than_the_defaults(toy_runs):
    for res in toy_runs:
        assert res.best.feasible and res.best.registers_fit
        assert res.ranking.best_proven
        for ref in (res.paper, res.kernel):
            if ref is not None and ref.feasible and ref.registers_fit:
                assert res.best.rank_key(res.objective) <= ref.rank_key(res.objective)
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
    res = explore(toy, "fa2", problem, block_q=[16, 32, 64, 128], block_kv=[16, 32, 64, 128], jobs=1, cache=False)
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
    res = explore(h100, "fa2", problem, block_q=[64, 128], block_kv=[64], jobs=1, cache=False)
    for c in res.candidates:
        r = simulate(h100, "fa2", problem, blocks=(c.block_q, c.block_kv))
        assert (c.hbm_read_bytes, c.hbm_write_bytes) == (r.hbm.read_bytes, r.hbm.write_bytes)
        # docs/spec/algorithms.md §4.1: Q, K, V, O in fp16 (2 B), L in fp32 (4 B)
        per = cf.fa2_forward(N, d, c.block_q, c.block_kv, causal=False)
        assert c.hbm_total_bytes == 2 * sum(r + w for k, (r, w) in per.items() if k != "L") + 4 * N


def test_default_grid():
    assert default_grid(100) == [1, 2, 4, 8, 16, 32, 48, 64, 80, 96]
    assert default_grid(1) == [1]


def test_grid_limits_come_from_the_engine(h100):
    problem = Problem(seq_len=4096, head_dim=128)
    need = lambda bq, bkv: simulate(h100, "fa2", problem, blocks=(bq, bkv),  # noqa: E731
                                    options=Options(sram_bytes=1 << 40)).sram.peak_bytes
    cap = h100.scratchpad.per_block_bytes
    res = explore(h100, "fa2", problem, jobs=1, block_kv=[64], grid="all", cache=False)
    limit = res.grid_limits["block_q"]
    assert need(limit, 1) <= cap < need(limit + 1, 1)
    res = explore(h100, "fa2", problem, jobs=1, block_kv=[64], cache=False)     # tensor-core: steps of 16
    limit = res.grid_limits["block_q"]
    assert limit % 16 == 0 and need(limit, 16) <= cap < need(limit + 16, 16)


# -- real kernel tiles (kernels.md §2) --------------------------------------------------------
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
                  jobs=1, cache=False)
    assert (res.kernel.block_q, res.kernel.block_kv) == (128, 64)
    d = res.to_dict()
    assert d["kernel_default"]["hbm_ratio_vs_best"] >= 1 and d["paper_default"]["hbm_ratio_vs_best"] >= 1
    assert d["kernel_default"]["kernel"]["rule"].startswith("kHeadDim=128")
    amd = explore("mi300x", "fa2", Problem(seq_len=1024, head_dim=64), block_q=[64], block_kv=[64], jobs=1,
                  cache=False)
    assert amd.kernel is None and "amd" in amd.to_dict()["kernel_reason"]


def test_nothing_fits_is_bad_input():
    with pytest.raises(ProblemError, match="none of the tiles given fits: the smallest asked, B_r×B_c = 1×1"):
        explore("toy", "fa2", Problem(seq_len=512, head_dim=2048), block_q=[1, 2], block_kv=[1], jobs=1)
    with pytest.raises(ProblemError, match="even 1-row tiles"):
        explore("toy", "fa2", Problem(seq_len=512, head_dim=2048), grid="all", jobs=1)
    with pytest.raises(ProblemError, match=r"even 16×16 tiles .*--grid all"):
        explore("toy", "fa2", Problem(seq_len=512, head_dim=512), jobs=1)


def test_the_counts_run_on_any_executor():
    from iosim.studies.executors import LocalExecutor, make_executor

    kw = dict(objective="time", block_q=[16, 32, 48, 64], block_kv=[16, 32], progress=False)
    local = explore("toy", "fa2", Problem(seq_len=512, head_dim=32), jobs=1, **kw).to_dict()
    assert explore("toy", "fa2", Problem(seq_len=512, head_dim=32), executor=LocalExecutor(2), **kw).to_dict() == local
    distributed = pytest.importorskip("distributed", reason="the Dask executor needs dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        dask = explore("toy", "fa2", Problem(seq_len=512, head_dim=32),
                       executor=make_executor("dask", scheduler=cluster.scheduler_address), **kw)
    assert dask.to_dict() == local


def test_points_spread_over_workers_give_the_same_results():
    from iosim.studies.executors import LocalExecutor, make_executor

    points = [Problem(seq_len=512, head_dim=32), Problem(seq_len=384, head_dim=16, causal=True)]
    kw = dict(objective="time", block_q=[16, 32, 48], block_kv=[16, 32], progress=False)
    here = [r.to_dict() for r in explore_points("toy", ["fa2", "fa1"], points, jobs=1, **kw)]
    assert [(r["problem"]["seq_len_q"], r["algorithm"]) for r in here] == [(512, "fa2"), (512, "fa1"),
                                                                           (384, "fa2"), (384, "fa1")]
    spread = explore_points("toy", ["fa2", "fa1"], points, executor=LocalExecutor(2), **kw)
    assert [r.to_dict() for r in spread] == here
    distributed = pytest.importorskip("distributed", reason="the Dask executor needs dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        dask = explore_points("toy", ["fa2", "fa1"], points,
                              executor=make_executor("dask", scheduler=cluster.scheduler_address), **kw)
    assert [r.to_dict() for r in dask] == here


def test_a_point_that_fails_in_a_worker_raises_its_error_here():
    from iosim.studies.executors import LocalExecutor

    points = [Problem(seq_len=512, head_dim=32), Problem(seq_len=512, head_dim=2048)]
    with pytest.raises(ProblemError, match="even 16×16 tiles") as err:
        explore_points("toy", ["fa2"], points, executor=LocalExecutor(2), progress=False)
    assert err.value.field is None or isinstance(err.value.field, str)


# -- CLI ----------------------------------------------------------------------------------
CLI = ["explore", "--hw", "toy", "-N", "512", "-d", "32", "--jobs", "1"]


def test_cli_table_and_formats(capsys):
    assert main(CLI + ["--algo", "fa2,fa1"]) == 0
    out = capsys.readouterr().out
    for row in ("best", "practical choice", "paper default", "real kernel", "near-ties within 1.0% of the best"):
        assert row in out
    assert main(CLI + ["--algo", "fa2", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["best"]["block_q"] >= 16
    assert main(CLI + ["--algo", "fa2", "--format", "csv", "--block-q", "16:64", "--block-kv", "16,32"]) == 0
    rows = capsys.readouterr().out.strip().splitlines()[1:]
    assert len(rows) == 3 * 2                  # the paper default (M = 4096, d = 32: 32×32) is in the grid
    assert any("paper" in r for r in rows)


def test_cli_help(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["explore", "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and "--objective" in out and "tolerance" in out and "(default 1%)" in out


def test_cli_bad_input(capsys):
    assert main(CLI + ["--algo", "fa2", "--plot", "heat.jpg"]) == 2
    for bad in (["--algo", "fa5"], ["--algo", "fa2", "--grid", "pow2"], ["--algo", "fa2", "--tie", "1.5"],
                ["--algo", "fa2", "--objective", "latency"]):
        with pytest.raises(SystemExit) as exc:
            main(CLI + bad)
        assert exc.value.code == 2
    assert main(CLI + ["--algo", "fa1", "--kernel", "flash-attn-2"]) == 2     # the kernels run fa2's loop order
    assert "fa2" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["heat.png", "heat.svg"])
def test_heat_map(tmp_path, name, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / name
    cache = ["--objective", "time", "--algo", "fa2"] if name.endswith(".png") else ["--no-cache", "--algo", "fa2,fa1"]
    assert main(CLI + ["-N", "256,512", "--plot", str(path)] + cache) == 0
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG") if name.endswith(".png") else b"<svg" in data[:2000]

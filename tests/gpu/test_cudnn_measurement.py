"""The cuDNN measurement's parts that run without a GPU (issue 14, item 4): the SDPA target's
config checks (an unknown backend refused in one line, exit 2, before PyTorch is imported),
benchmarks/sdpa_ncu.py's cuDNN grid, re-read hypotheses and per-config loop, and
benchmarks/cudnn_compare.py's arithmetic on a small CSV in ncu's format."""

import csv
import io
import json
import math
import pathlib
import subprocess
import sys
import warnings

import pytest

from iosim.errors import IosimError
from iosim.gpu import sdpa_target

from conftest import load_module

ROOT = pathlib.Path(__file__).resolve().parents[2]
CFG = {"seq_len": 256, "head_dim": 64, "batch": 1, "heads": 2, "causal": False}


@pytest.fixture(scope="module")
def ncu_driver():
    return load_module("sdpa_ncu", ROOT / "benchmarks" / "sdpa_ncu.py")


@pytest.fixture(scope="module")
def compare():
    return load_module("cudnn_compare", ROOT / "benchmarks" / "cudnn_compare.py")


def test_config_backend_defaults_to_flash_and_takes_cudnn():
    assert sdpa_target.parse_config(json.dumps(CFG)) == CFG
    assert sdpa_target.parse_config(json.dumps({**CFG, "backend": "cudnn"}))["backend"] == "cudnn"
    assert sdpa_target.parse_config(json.dumps({**CFG, "layout": "bnhd"}))["layout"] == "bnhd"


@pytest.mark.parametrize("text,words", [
    (json.dumps({**CFG, "backend": "xla"}), "unknown backend 'xla': choose one of flash, cudnn"),
    (json.dumps({**CFG, "dtype": "fp8"}), "unknown dtype 'fp8'"),
    (json.dumps({**CFG, "layout": "nhd"}), "unknown layout 'nhd': choose one of bhnd, bnhd"),
    (json.dumps({"seq_len": 4}), "lacks head_dim, batch, heads, causal"),
    ("[1, 2]", "must be a JSON object, not list"),
    ("{seq_len: 4", "not JSON"),
])
def test_config_refused_with_one_line(text, words):
    with pytest.raises(IosimError) as info:
        sdpa_target.parse_config(text)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_target_refuses_unknown_backend_before_importing_torch():
    """Exit 2 and one line on stderr, in a process where importing torch would fail."""
    code = ("import sys; sys.modules['torch'] = None; from iosim.gpu.sdpa_target import main; "
            "sys.exit(main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", code, json.dumps({**CFG, "backend": "xla"})],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == "sdpa_target: error: unknown backend 'xla': choose one of flash, cudnn"
    assert sdpa_target.main([]) == 2


def test_cudnn_grid_covers_the_issue(ncu_driver):
    configs = [c for d in (64, 128, 96) for c in ncu_driver.grid(d, "cudnn", "cudnn")]
    assert len(configs) == 24 and all(sdpa_target.check_config(c)["backend"] == "cudnn" for c in configs)
    assert {c["head_dim"] for c in configs} == {64, 96, 128}
    assert {c.get("dtype", "fp16") for c in configs} == {"fp16", "bf16"}
    assert {c["seq_len"] for c in configs} == {1000, 1024, 4096} and {c["causal"] for c in configs} == {False, True}
    assert any(c.get("seq_len_kv", c["seq_len"]) != c["seq_len"] for c in configs)
    assert any("kv_heads" in c for c in configs)
    assert {(c["batch"], c["heads"]) for c in configs} == {(1, 4), (2, 8)}
    assert "backend" not in ncu_driver.grid(64, "cudnn")[0]   # the flash backend is not named


def test_expected_bytes_closed_forms(ncu_driver):
    """N = 256, d = 64, B×H = 1×2, fp16: a row of one head is 128 B."""
    e = ncu_driver.expected_bytes(CFG, tiles=(128,))
    q = 2 * 256 * 128
    assert (e["Q"], e["K"], e["V"], e["O"], e["LSE"], e["QKV"]) == (q, q, q, q, 2 * 256 * 4, 3 * q)
    assert e["forward"][128] == q + 2 * (2 * q)              # K and V read by each of 2 query blocks
    assert e["backward"][128] == 2 * q + 2 * 2 * 256 * (2 * 128 + 8)   # Q, dO, LSE, D by 2 key blocks
    causal = ncu_driver.expected_bytes({**CFG, "causal": True}, tiles=(128,))
    assert causal["forward"][128] == q + 2 * (128 + 256) * 2 * 128   # rows 0-127 see 128 keys, 128-255 all
    assert causal["backward"][128] == 2 * q + 2 * (256 + 128) * (2 * 128 + 8)
    gqa = ncu_driver.expected_bytes({**CFG, "heads": 4, "kv_heads": 1}, tiles=(256,))
    assert gqa["K"] == q // 2 and gqa["forward"][256] == 2 * q + 4 * 256 * 2 * 128   # each query head reads K, V


def test_measure_each_records_refusals_and_keeps_one_marker_per_config(ncu_driver, tmp_path):
    calls = []

    def measured(cfg):
        calls.append(("measured", cfg["seq_len"]))
        if cfg["seq_len"] == 2:
            warnings.warn("cuDNN attention not used because of the shape")
            raise RuntimeError("No available kernel. Aborting execution.")

    status = tmp_path / "status.jsonl"
    configs = [{**CFG, "seq_len": n} for n in (1, 2, 3)]
    ncu_driver.measure_each(configs, lambda: calls.append("marker"), lambda cfg: calls.append(("warm", cfg["seq_len"])),
                            measured, str(status), None)
    lines = [json.loads(x) for x in status.read_text().splitlines()]
    assert calls.count("marker") == 3 and [x["ok"] for x in lines] == [True, False, True]
    assert lines[1]["error"] == "RuntimeError: No available kernel. Aborting execution."
    assert lines[1]["warnings"] == ["cuDNN attention not used because of the shape"]
    ncu_driver.measure_each(configs, lambda: None, lambda cfg: None, lambda cfg: None, str(status), 0.0)
    assert [json.loads(x)["skipped"] for x in status.read_text().splitlines()] == ["budget"]


def test_tma_counters_picked_from_the_query(ncu_driver):
    text = ("Metric Name  Metric Type  Metric Unit  Metric Description\n"
            "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld   Counter   byte   TMA loads\n"
            "smsp__inst_executed_op_stmatrix   Counter   inst   not TMA\n"
            "tma__cycles_active   Ratio   cycle   a ratio, not a counter\n")
    assert ncu_driver.tma_counters(text) == ["l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"]


def _csv(launches) -> str:
    """ncu's --csv --print-units base output for ``launches``: (name, grid, {metric: value})."""
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL)
    w.writerow(["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
                "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value"])
    for i, (name, grid, metrics) in enumerate(launches):
        for metric, value in metrics.items():
            w.writerow([i, 1, "python3", "h", name, 1, 7, "(384, 1, 1)", grid, 0, "9.0", "s", metric, "", f"{value:,}"])
    return "==PROF== Connected\n" + buf.getvalue()


def test_compare_divides_each_candidate_by_qkv(ncu_driver, compare, tmp_path):
    """Two configs; the first ran (two launches after its marker), the second was refused."""
    cfgs = [{**CFG, "backend": "cudnn"}, {**CFG, "seq_len": 100, "backend": "cudnn"}]
    for c in cfgs:
        c["expected"] = ncu_driver.expected_bytes(c)
    qkv, o = cfgs[0]["expected"]["QKV"], cfgs[0]["expected"]["O"]
    tma = "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"
    meta = {"grid": {"64": cfgs}, "marker": "spin_kernel", "tma_metrics": [tma]}
    (tmp_path / "cudnn_configs.json").write_text(json.dumps(meta))
    fwd = {"l1tex__m_xbar2l1tex_read_bytes.sum": 3 * qkv, "lts__t_sectors_srcunit_tex_op_read.sum": 3 * qkv // 32,
           "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum": 0, "smsp__sass_data_bytes_mem_global_op_st.sum": o,
           "launch__shared_mem_per_block_static": 0, "launch__shared_mem_per_block_dynamic": 131_072,
           "launch__registers_per_thread": 168, "gpu__time_duration.sum": 12_500, tma: qkv // 2}
    (tmp_path / "cudnn_d64.csv").write_text(_csv([
        ("at::cuda::(anonymous namespace)::spin_kernel(long)", "(1, 1, 1)", {"gpu__time_duration.sum": 900}),
        ("cudnn_generated_fort_native_sdpa_sm90_fprop", "(2, 2, 1)", fwd),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)", "(8, 1, 1)",
         {"dram__bytes_write.sum": o // 4}),
        ("at::cuda::(anonymous namespace)::spin_kernel(long)", "(1, 1, 1)", {"gpu__time_duration.sum": 900}),
    ]))
    (tmp_path / "cudnn_status_d64.jsonl").write_text(
        json.dumps({"index": 0, "ok": True}) + "\n" + json.dumps({"index": 1, "ok": False, "error": "No kernel"}) + "\n")
    recs = compare.records(str(tmp_path))
    assert [len(r["rows"]) for r in recs] == [2, 0]
    row, fill = recs[0]["rows"]
    assert row["loads"]["xbar→L1 bytes"] == 3.0 and row["loads"]["L2 read, tex"] == 3.0
    assert row["loads"]["LSU ld"] == 0.0 and row["loads"]["DRAM read"] is None
    assert row["stores"]["SASS st"] == 1.0 and row["tma"][tma] == 0.5
    assert (row["grid"], row["smem"], row["registers"], row["time_us"]) == ("(2, 2, 1)", 131_072, 168, 12.5)
    assert fill["short"] == "at::native::vectorized_elementwise_kernel<…>" and fill["stores"]["DRAM write"] == 0.25
    text = compare.report(recs)
    assert "| 0 | cudnn_generated_fort_native_sdpa_sm90_fprop | (2, 2, 1) |" in text
    assert "refused: No kernel" in text
    hyp = cfgs[0]["expected"]["forward"][128] / qkv
    assert f"B_r=128: {hyp:.3f} ({math.ceil(256 / 128)} blocks)" in text


def test_compare_without_its_files_exits_2(compare, tmp_path, capsys):
    assert compare.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cudnn_compare: error:") and err.count("\n") == 1


def test_the_l2_metric_set_asks_where_the_l2_reads_went(ncu_driver, monkeypatch):
    """``--metric-set l2``: DRAM, and the L2's lookups by source and op, hit and miss."""
    monkeypatch.setattr(ncu_driver, "available_metrics", lambda ncu, wanted, query=None: list(wanted))
    args = ncu_driver.argparse.Namespace(grid="s19", backend="flash", metric_set="l2")
    got = ncu_driver.plan(args, "ncu")["meta"]["metrics"]
    assert "lts__t_sectors_srcunit_ltcfabric_op_read_lookup_miss.sum" in got and "dram__bytes_read.sum" in got
    assert "lts__t_sectors_srcunit_tex_op_red_lookup_hit.sum" in got
    default = ncu_driver.plan(ncu_driver.argparse.Namespace(grid="s19", backend="flash"), "ncu")["meta"]["metrics"]
    assert default == ncu_driver.WANTED_METRICS


def test_one_head_dim_of_a_grid(ncu_driver, monkeypatch):
    """``--head-dim D`` plans that head dim of the grid alone, and refuses one the grid does not have."""
    monkeypatch.setattr(ncu_driver, "available_metrics", lambda ncu, wanted, query=None: list(wanted))
    args = ncu_driver.argparse.Namespace(grid="s53", backend="flash", head_dim=175)
    assert list(ncu_driver.plan(args, "ncu")["meta"]["grid"]) == [175]
    with pytest.raises(SystemExit, match="grid s53 has head dims 40, 48"):
        ncu_driver.plan(ncu_driver.argparse.Namespace(grid="s53", backend="flash", head_dim=64), "ncu")

"""Replays of the committed GPU measurements (docs/validation/; no GPU needed): iosim's predictions
against Nsight Compute runs of PyTorch's FlashAttention-2 SDPA kernels and of iosim's own CuPy
kernels on an H200.

The SDPA runs were taken with benchmarks/sdpa_ncu.py; per kernel launch, iosim's loads, stores
and atomics must equal them, and its kernel time model must stay near the measured times."""

import os
import pathlib

import pytest

from iosim import Options, Problem, load_profile, simulate
from iosim.gpu.ncu import cupy_groups
from iosim.gpu.sdpa import compare, raw_configs

from conftest import load_module

ROOT = pathlib.Path(__file__).resolve().parents[2]
VALIDATION = ROOT / "docs" / "validation"
SDPA = os.path.join(VALIDATION, "2026-11-29-sdpa-flash-attn-2")
#: Nsight Compute runs of PyTorch's flash SDPA on an H200: (folder, configurations, kernel launches)
RAW_RUNS = [("2026-11-29-sdpa-flash-attn-2", 40, 168), ("2026-11-29-sdpa-flash-attn-2-wide", 56, 240)]


@pytest.fixture(scope="module")
def compare_module():
    return load_module("sdpa_compare", ROOT / "benchmarks" / "sdpa_compare.py")


@pytest.mark.parametrize("folder,configs,launches", RAW_RUNS)
def test_predictions_equal_pytorch_sdpa_on_h200(compare_module, folder, configs, launches):
    """Per kernel launch: loads, stores and atomics, every configuration × 4–5 kernels.

    Loads are compared with the issue's l1tex__t_bytes_pipe_lsu_mem_global_op_ld, except the
    combine kernel's: at d ≥ 128 each of its thread blocks reads 64 bytes of LSEaccum and
    l1tex reports twice that, so there the SASS instruction bytes are the measure (they
    match exactly; docs/validation/2026-11-29-sdpa-flash-attn-2.md).
    """
    rows = compare_module.compare(str(VALIDATION / folder))
    assert len({(r["seq_len"], r["head_dim"], r["batch"], r["heads"], r["causal"]) for r in rows}) == configs
    assert len(rows) == launches  # 4 kernels per configuration, 5 when the forward splits
    for row in rows:
        ok = compare_module.agreement(row)
        loads = ok["loads_sass"] if row["kernel"] == "combine" else ok["loads_l1tex"]
        assert loads and ok["stores"] and ok["atomics"], row


def test_rounded_buffers_equal_pytorch_sdpa_on_unseen_shapes(compare_module):
    """Head dims that are no kernel size (40, 80, 160) and two that are (96, 192), ragged N
    (1,000, 2,500): every store and atomic of every launch is exact (softmax_d and dQaccum
    are buffers of whole blocks of rows, dQaccum's rows of the rounded head size), and every
    load: the main backward kernel's at N = 2,500 by the L1 tag stage once its L reads are
    counted in whole sectors, and the forward's at d = 40 once its 80-byte rows are counted as
    the tag stage counts cp.async rows (iosim.gpu.sectors; docs/validation/2026-12-01-sector-probe/)."""
    rows = compare_module.compare(str(VALIDATION / "2026-12-01-sdpa-unseen"))
    assert len(rows) == 180
    for row in rows:
        ok = compare_module.agreement(row)
        assert ok["stores"] and ok["atomics"], row
        if row["kernel"] in ("dot_do_o", "convert_dq", "combine"):
            assert ok["loads_sass"], row
        else:
            assert ok["loads_sass"] or ok["loads_l1tex"], row
    d40 = [r for r in rows if r["head_dim"] == 40 and r["kernel"] in ("main", "splitkv")]
    assert len(d40) == 8 and all(compare_module.agreement(r)["loads_l1tex"] for r in d40)


def test_unequal_lengths_decode_and_bf16_equal_pytorch_sdpa(compare_module):
    """(N_q, N_kv) both ways, decode (N_q = 1, 7), bf16: every store, atomic and load of the
    248 launches (the main backward kernel's at N_q ≤ 7 by the L1 tag stage, its L reads in
    whole sectors: iosim.gpu.sectors; docs/validation/2026-12-01-sdpa-unequal.md)."""
    rows = compare_module.compare(str(VALIDATION / "2026-12-01-sdpa-unequal"))
    assert len(rows) == 248
    for row in rows:
        ok = compare_module.agreement(row)
        assert ok["stores"] and ok["atomics"] and (ok["loads_sass"] or ok["loads_l1tex"]), row
    decode = [r for r in rows if r["kernel"] == "dq_dk_dv" and r.get("seq_len_q", r["seq_len"]) <= 7]
    assert decode and all(r["predicted"]["l1tex_loads"] > r["predicted"]["loads"] for r in decode)


def test_gqa_mqa_long_causal_and_decode_equal_pytorch_sdpa(compare_module):
    """A grid nobody tuned for (docs/validation/2026-12-01-sdpa-gqa-long.md): GQA and MQA through
    PyTorch's enable_gqa, causal runs to N = 65,536, decode with and without splits, B × H =
    1,024, bf16; d = 64, 128; 26 configurations, 110 launches. Every store, atomic and load is
    exact (the combine kernel's loads by the instructions' bytes, the rest by the L1 tag
    stage; at N_q = 1 with L's reads in whole sectors)."""
    rows = compare_module.compare(str(VALIDATION / "2026-12-01-sdpa-gqa-long"))
    assert len(rows) == 110
    for row in rows:
        ok = compare_module.agreement(row)
        assert ok["stores"] and ok["atomics"], row
        assert ok["loads_sass"] if row["kernel"] == "combine" else ok["loads_l1tex"], row


def test_fresh_shapes_equal_pytorch_sdpa(compare_module):
    """Shapes fixed before measuring and unlike every earlier grid (session 7,
    docs/validation/2026-12-01-sdpa-fresh.md): head dims 48 and 112 beside 64, 128, 256, ragged
    and unequal lengths, GQA, decode with long keys, 64 × 16 small heads, bf16; 15
    configurations, 65 launches. Every store, atomic and load is exact (loads by one of the
    two metrics; the main backward's at N_q = 1 by the tag stage with L's reads in whole
    sectors)."""
    rows = compare_module.compare(str(VALIDATION / "2026-12-01-sdpa-fresh"))
    assert len(rows) == 65
    for row in rows:
        ok = compare_module.agreement(row)
        assert ok["stores"] and ok["atomics"] and (ok["loads_sass"] or ok["loads_l1tex"]), row


def test_sector_rule_predicted_before_measuring(compare_module):
    """Query lengths that are no multiple of 8 (13, 100, 1,234, 3,001, 2,500), chosen after the
    sector rule for L's reads was derived and before they were measured
    (docs/validation/2026-12-01-sdpa-sectors.md): every main backward launch's tag-stage
    loads equal iosim's loads plus the rule's excess, which is not zero on any of them; every
    other load, store and atomic is exact (the combine kernel's stores with its last block's
    L rows, iosim.gpu.sdpa.combine_lse_tail)."""
    rows = compare_module.compare(str(VALIDATION / "2026-12-01-sdpa-sectors"))
    assert len(rows) == 44
    backward = [r for r in rows if r["kernel"] == "dq_dk_dv"]
    assert len(backward) == 10 and all(r["predicted"]["l1tex_loads"] > r["predicted"]["loads"] for r in backward)
    for row in rows:
        ok = compare_module.agreement(row)
        assert ok["stores"] and ok["atomics"] and (ok["loads_sass"] or ok["loads_l1tex"]), row
    assert any(r["kernel"] == "combine" and r["predicted"]["stores"] % 64 for r in rows)    # the tail, 16 B


def test_vendor_loads_target_by_either_metric(compare_module):
    """`--vendor torch-sdpa`'s loads target: met by the tag stage (whole sectors) or by the
    instructions' bytes. On the fresh grid the forward's cp.async bytes fall short on some
    launches where the tag stage is exact; those meet it, and so does every launch of the
    unseen grid (the d = 40 forward by the tag stage's count of its cp.async rows)."""
    fresh = compare_module.compare(str(VALIDATION / "2026-12-01-sdpa-fresh"))
    short = [r for r in fresh if r["pass"] == "forward" and r["predicted"]["loads"] != r["measured"]["loads"]]
    assert short and all(r["within_target"]["loads"] for r in fresh)
    unseen = compare_module.compare(str(VALIDATION / "2026-12-01-sdpa-unseen"))
    assert all(r["within_target"]["loads"] for r in unseen)


def _measured_rows():
    profile = load_profile("h200")
    for cfg, problem, group in raw_configs(SDPA):
        if cfg["seq_len"] < 2048:
            continue
        yield cfg, compare(problem, group, profile, cache=False)


def test_main_backward_kernel_time_within_25_percent_of_ncu():
    """Regression guard on the committed H200 measurements (docs/validation/): every main
    backward launch with N >= 2,048 is predicted within 25 % (they are 0.94–1.19×)."""
    seen = 0
    for cfg, rows in _measured_rows():
        for row in rows:
            if row["kernel"] == "dq_dk_dv":
                seen += 1
                ratio = row["predicted"]["time_s"] / row["measured"]["time_s"]
                assert 0.75 <= ratio <= 1.25, (cfg, ratio)
    assert seen == 24


def test_main_forward_kernel_time_with_two_blocks_an_sm():
    """Regression guard: the main forward launches with N >= 2,048 (24), timed with the
    measured overlap of two blocks an SM (iosim.kernels.coresidency) and the launch's fill and
    drain (iosim.models.block_fill): 0.76–1.20× without the L2 model, median |error| 7 % (the
    serial sum gave 0.74–1.40×, median 19 %; the emulated factors 0.74–1.19×, 8 %)."""
    ratios = [row["predicted"]["time_s"] / row["measured"]["time_s"]
              for _, rows in _measured_rows() for row in rows if row["kernel"] == "main"]
    assert len(ratios) == 24 and all(0.70 <= r <= 1.25 for r in ratios), ratios
    assert sorted(abs(r - 1) for r in ratios)[len(ratios) // 2] <= 0.10


def _no_worse(kernel: str, then: list, now: list, band: tuple = (0.80, 1.20)) -> None:
    """Today's model on a prospective check: every launch within ``band`` (issue 14's ±20 % for
    the main kernels), and a median |error| no larger than the predictions written before the
    GPU measured them."""
    def median_error(ratios):
        return sorted(abs(x - 1) for x in ratios)[len(ratios) // 2]

    assert all(band[0] <= x <= band[1] for x in now), (kernel, now)
    assert median_error(now) <= median_error(then), (kernel, then, now)


def _config_key(cfg: dict) -> tuple:
    """A measured configuration as both predictions.json and the compared rows name it."""
    return (cfg["head_dim"], cfg.get("seq_len_q", cfg["seq_len"]), cfg.get("seq_len_kv", cfg["seq_len"]),
            cfg["batch"], cfg["heads"], cfg["causal"])


def _prospective(compare_module, name: str):
    """A committed prospective check replayed: (today's rows, ratios) where ``ratios(kernel)``
    gives that kernel's rows and their predicted ÷ measured times as written then and now."""
    import json

    raw = VALIDATION / name
    rows = compare_module.compare(str(raw), cache=True)
    written = json.loads((raw / "predictions.json").read_text())["rows"]
    before = {(*_config_key(r["config"]), k): v["predicted_s"] for r in written for k, v in r["kernel_times"].items()}

    def ratios(kernel: str):
        got = [r for r in rows if r["kernel"] == kernel]
        then = [before[(*_config_key(r), kernel)] / r["measured"]["time_s"] for r in got]
        return got, then, [r["predicted"]["time_s"] / r["measured"]["time_s"] for r in got]

    return rows, ratios


def test_overlap_check_replays(compare_module):
    """The prospective run of session 8 (docs/validation/2026-12-01-overlap-check.md): the
    predictions written before measuring (predictions.json, kept as written) met the forward
    within 0.84-1.25 and the backward within 0.97-1.14; today's model replays it with every
    load exact and its main kernels' times within ±20 %, no worse at the median."""
    rows, ratios = _prospective(compare_module, "2026-12-01-overlap-check")
    assert len(rows) == 52 and all(r["within_target"]["loads"] for r in rows)
    for kernel, (lo, hi) in (("main", (0.80, 1.30)), ("dq_dk_dv", (0.95, 1.20))):
        _, then, now = ratios(kernel)
        assert len(then) == 13 and all(lo <= x <= hi for x in then), (kernel, then)
        _no_worse(kernel, then, now)


def test_vendor_report_from_committed_measurements():
    """The --vendor table and its target checks, on one committed config (no GPU needed), with the
    notes the preset gives its launches where a model is known not to be exact."""
    from iosim.cli.validate_command import format_vendor_table

    cfg, rows = next((c, r) for c, r in _measured_rows() if c["seq_len"] == 4096 and c["heads"] == 32
                     and c["head_dim"] == 128 and c["causal"])
    assert [r["kernel"] for r in rows] == ["main", "dot_do_o", "dq_dk_dv", "convert_dq"]
    assert all(r["within_target"]["loads"] for r in rows)       # forward exact, backward within 5 %
    main = rows[0]
    assert main["predicted"]["loads"] == main["measured"]["loads"]
    from iosim import load_profile
    from iosim.gpu.sdpa import launch_notes, problem_of
    notes = launch_notes(problem_of(cfg), load_profile("h200"))
    assert list(notes) == ["forward", "backward"] and list(notes["forward"]) == ["l2_note"]   # past one wave, d = 128
    assert notes["backward"]["l2_note"].startswith("not exact: a backward whose query heads with blocks resident")
    report = {"hw_profile": "h200", "problem": {**cfg, "dtype": "fp16"}, "launches": rows, "notes": notes, "ok": True}
    text = format_vendor_table(report)
    assert "dq_dk_dv" in text and "compute, two warps a sub-partition at 0.87 a step (" in text
    assert "note, forward (L2): not exact: a causal forward at kernel head dim 128 in more than one wave" in text
    assert "note, backward (L2): not exact: a backward whose query heads with blocks resident at once (up to 6: 132 blocks" in text
    assert "load counts meet their targets" in text


@pytest.mark.parametrize("n", [2048])
def test_cupy_fa2_dram_reads_match_ncu(n):
    """iosim's own fa2 kernel under ncu (docs/validation/2026-11-29-cupy-ncu/): the L2 model's
    DRAM reads within 1 % of the measured bytes (they are 0.2 % apart)."""
    raw = os.path.join(VALIDATION, "2026-11-29-cupy-ncu")
    for cfg, mine in cupy_groups(raw):
        if cfg["algo"] != "fa2" or cfg["seq_len"] != n:
            continue
        r = simulate("h200", "fa2", Problem(seq_len=n, head_dim=cfg["head_dim"], heads=cfg["heads_total"],
                                            causal=cfg["causal"]), blocks=(cfg["block_q"], cfg["block_kv"]), options=Options(cache=True, threads_per_block=128))
        measured = mine[0]["metrics"]["dram__bytes_read.sum"]
        assert abs(r.cache.total.dram_read_bytes / measured - 1) < 0.01, cfg
        assert r.hbm.read_bytes == mine[0]["metrics"]["smsp__sass_data_bytes_mem_global_op_ldgsts.sum"] + \
            mine[0]["metrics"].get("smsp__sass_data_bytes_mem_global_op_ld.sum", 0)


def test_fill_check_replays(compare_module):
    """The prospective run of session 9 (docs/validation/2026-12-02-fill-check.md): 16
    configurations fixed, and iosim's predictions written (predictions.json), before the H200
    measured them; every load exact. As written then: main forwards 0.72-1.06 (d = 32 lowest),
    main backwards 0.89-1.17, dot_do_o 0.77-1.06; today's model: the main kernels within
    ±20 %, and every kernel's median |error| no larger."""
    rows, ratios = _prospective(compare_module, "2026-12-02-fill-check")
    assert len(rows) == 69 and all(r["within_target"]["loads"] for r in rows)
    for kernel, n, (lo, hi) in (("main", 11, (0.70, 1.10)), ("dq_dk_dv", 16, (0.85, 1.20)),
                                ("dot_do_o", 16, (0.75, 1.10))):
        _, then, now = ratios(kernel)
        assert len(then) == n and all(lo <= x <= hi for x in then), (kernel, then)
        _no_worse(kernel, then, now, (lo, hi) if kernel == "dot_do_o" else (0.80, 1.20))


def test_step_check_replays(compare_module):
    """The prospective run of session 10 (docs/validation/2026-12-02-step-check.md): 16
    configurations fixed, and iosim's predictions written (predictions.json), before the H200
    measured them. As written: the split-KV combine 0.90-0.98 (0.13-0.44 before the session),
    main forwards 0.74-1.07, main backwards 0.76-1.03; today's model (with the uneven head
    dims' factors measured after it) every main kernel at N >= 2,048 within ±20 %, no worse at
    the median. Loads: all 70 exact (66 when written; d = 72's forwards and d = 40's GQA
    split-KV became exact by the tag stage with session 22's rule for rows crossing lines,
    docs/validation/2026-12-04-rows.md)."""
    rows, ratios = _prospective(compare_module, "2026-12-02-step-check")
    assert len(rows) == 70 and all(r["within_target"]["loads"] for r in rows)
    for kernel, n, (lo, hi) in (("combine", 6, (0.88, 1.00)), ("main", 10, (0.72, 1.10)),
                                ("dq_dk_dv", 16, (0.75, 1.05))):
        got, then, now = ratios(kernel)
        assert len(then) == n and all(lo <= x <= hi for x in then), (kernel, then)
        long = [x for r, x in zip(got, now) if r.get("seq_len_q", r["seq_len"]) >= 2048]
        _no_worse(kernel, then, now, (0.85, 1.15) if kernel == "combine" else (0.70, 1.20))
        assert kernel == "combine" or all(0.80 <= x <= 1.20 for x in long), (kernel, long)


def test_final_check_replays(compare_module):
    """The last prospective run of session 10 (docs/validation/2026-12-02-final-check.md): ten
    configurations fixed, and the predictions written (predictions.json), before the H200
    measured them; nothing changed after. Every load exact; today's model gives the times
    written then (main forwards 1.00-1.04, main backwards 0.86-1.04, at N >= 2,048 within
    ±20 %)."""
    rows, ratios = _prospective(compare_module, "2026-12-02-final-check")
    assert len(rows) == 44 and all(r["within_target"]["loads"] for r in rows)
    for kernel, n, (lo, hi) in (("main", 6, (0.98, 1.06)), ("dq_dk_dv", 10, (0.84, 1.06)),
                                ("combine", 4, (0.83, 1.00))):
        _, then, now = ratios(kernel)
        assert len(then) == n and all(lo <= x <= hi for x in then), (kernel, then)
        _no_worse(kernel, then, now, (0.80, 1.20))


def test_the_longest_causal_runs_equal_pytorch_sdpa(compare_module):
    """Causal runs longer than any grid before (docs/validation/2026-12-02-longest.md: N =
    131,072 with 2 heads, and MQA with 4; N = 262,144 with one; d = 64, 128; 24 launches):
    every load, store and atomic exact; the main kernels' times within 12 % (measured:
    forwards 1.03-1.11, backwards 0.99-1.03)."""
    rows = compare_module.compare(str(VALIDATION / "2026-12-02-longest"))
    assert len(rows) == 24
    for row in rows:
        ok = compare_module.agreement(row)
        assert ok["loads_l1tex"] and ok["stores"] and ok["atomics"], row
        if row["kernel"] in ("main", "dq_dk_dv"):
            assert abs(row["predicted"]["time_s"] / row["measured"]["time_s"] - 1) <= 0.12, row


def test_the_session_15_prospective_grid_equals_pytorch_sdpa(compare_module):
    """Nine configurations fixed before measuring, predictions committed first
    (docs/validation/2026-12-02-s15-check.md): every load, store and atomic exact; the main
    kernels' times at N >= 2,048 within 10 % (measured: 0.96-1.08)."""
    rows = compare_module.compare(str(VALIDATION / "2026-12-02-s15-check"))
    assert len(rows) == 37
    for row in rows:
        ok = compare_module.agreement(row)
        assert ok["loads_l1tex"] and ok["stores"] and ok["atomics"], row
        if row["kernel"] in ("main", "dq_dk_dv") and row["seq_len"] >= 2048:
            assert abs(row["predicted"]["time_s"] / row["measured"]["time_s"] - 1) <= 0.10, row


def test_the_session_16_prospective_grid_equals_pytorch_sdpa(compare_module):
    """Eight configurations fixed before measuring, predictions committed first
    (docs/validation/2026-12-02-s16-check.md: d = 64 to 256, bf16, causal N up to 48,000,
    GQA, a decode backward over 30,000 keys): every load, store and atomic exact."""
    rows = compare_module.compare(str(VALIDATION / "2026-12-02-s16-check"))
    assert len(rows) == 33
    for row in rows:
        ok = compare_module.agreement(row)
        assert ok["loads_l1tex"] and ok["stores"] and ok["atomics"], row


def test_the_session_16_grid_times_and_dram_reads_with_the_l2_model():
    """The same grid's times and DRAM reads with the L2 model on (as iosim runs), for the
    configurations it replays in seconds (the two dense ones, the decode and d = 192 causal;
    the four other causal ones take 50 s, their ratios are in the doc): the main kernels'
    times at N >= 2,048 within 10 % (measured 0.92-1.06); every launch's DRAM reads over
    1 MB within 10 % (0.96-1.10 with the L2's sets, docs/cache.md, Sets), the decode's
    backward at 0.91 since its dK and dV buffers are played as the lines their query heads
    share (0.77 before: rows of 320 bytes take three lines until a neighbour fills them;
    docs/validation/2026-12-04-lines.md)."""
    configs, rows = _with_l2("2026-12-02-s16-check", lambda cfg: not cfg["causal"] or cfg["head_dim"] == 192)
    assert configs == 4
    for cfg, row in rows:
        p, m = row["predicted"], row["measured"]
        if row["kernel"] in ("main", "dq_dk_dv") and cfg["seq_len"] >= 2048:
            assert abs(p["time_s"] / m["time_s"] - 1) <= 0.10, (cfg, row["kernel"])
        if m["dram_read"] <= 10 ** 6:
            continue
        ratio = p["dram_read"] / m["dram_read"]
        assert abs(ratio - 1) <= 0.10, (cfg, row["kernel"], ratio)


def _with_l2(folder: str, keep) -> tuple[int, list]:
    """(how many configurations ``keep`` selects, (config, row) for each of their launches)
    of a committed grid, predicted with the L2 model on."""
    profile = load_profile("h200")
    configs = [c for c in raw_configs(str(VALIDATION / folder)) if keep(c[0])]
    return len(configs), [(cfg, row) for cfg, problem, launches in configs
                          for row in compare(problem, launches, profile, cache=True)]


def test_the_session_19_grid_dram_reads_with_the_l2_sets():
    """The same grid's DRAM reads with the L2 model on, for the configurations it replays in
    seconds (the dense ones, GQA causal at N = 6,144 and the two decodes; the long causal ones
    are in the doc): every launch over 1 MB within 10 % but the decodes' backwards, 15 % under
    (0.85, 0.84: a K/V head re-read after most of a partition), as predicted before the run.
    The GQA causal backward, 1.17 then, is 1.02 since its key blocks walk their query blocks
    downwards as flash-attn's do (session 29)."""
    configs, rows = _with_l2("2026-12-03-s19-check", lambda cfg: not cfg["causal"] or cfg["seq_len"] == 6144)
    assert configs == 5
    for cfg, row in rows:
        p, m = row["predicted"], row["measured"]
        if m["dram_read"] <= 10 ** 6:
            continue
        ratio = p["dram_read"] / m["dram_read"]
        if row["kernel"] == "dq_dk_dv" and cfg["seq_len"] == 1:
            assert 0.80 <= ratio <= 0.90, (cfg, ratio)
        else:
            assert abs(ratio - 1) <= 0.10, (cfg, row["kernel"], ratio)

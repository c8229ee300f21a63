"""Replays of session 21's committed measurements on the H200 (no GPU needed): what
docs/validation/2026-12-04-local-memory.md, 2026-12-04-ncu-replay.md and
2026-12-04-l2-hot-dirty.md read from the raw ncu CSVs, recomputed."""

import json
import pathlib

import pytest

from conftest import load_module
from iosim.gpu.ncu import read_launches

ROOT = pathlib.Path(__file__).resolve().parents[2]
LOCAL = ROOT / "docs" / "validation" / "2026-12-04-local-memory"
REPLAY = ROOT / "docs" / "validation" / "2026-12-04-ncu-replay"


@pytest.fixture(scope="module")
def local_rows():
    module = load_module("local_memory", ROOT / "benchmarks" / "local_memory.py")
    return [r for d in ("spill", "s19") for r in module.rows(str(LOCAL / d))]


def test_every_write_the_l2_sees_is_a_global_or_a_local_store(local_rows):
    """The forward and backward kernels' L2 writes from the SMs are their global stores and
    their local (spilled-register) stores, to the byte: nothing else writes."""
    main = [r for r in local_rows if r["kernel"] in ("main", "dq_dk_dv")]
    assert len(main) == 78
    assert all(r["check"] == 0 for r in main)


def test_spills_of_the_d128_forward_are_a_fixed_amount_a_step(local_rows):
    """The d = 128 forward kernel with even lengths stores 7.2-7.4 KB of spilled registers a
    key-block step, whatever N, heads, causal mask or dtype; its uneven-length variant (another
    template) stores less; the d = 96 and d = 192 forwards spill nothing."""
    fwd = [r for r in local_rows if r["kernel"] == "main"]
    even128 = [r["local_st_per_step"] for r in fwd if r["d_kernel"] == 128 and r["even_mn"]]
    assert len(even128) == 6 and 7.1e3 < min(even128) and max(even128) < 7.5e3
    uneven128 = [r["local_st_per_step"] for r in fwd if r["d_kernel"] == 128 and not r["even_mn"]]
    assert len(uneven128) == 1 and uneven128[0] < 0.65 * min(even128)
    assert all(r["local_st"] == 0 for r in fwd if r["d_kernel"] == 192)
    assert all(r["local_st"] < 0.3e6 for r in fwd if r["d_kernel"] == 96)


def test_forward_spills_are_served_by_the_l1_and_dwarf_the_output(local_rows):
    """The forwards read their spills back from the L1 (more than 99.9 % of the local loads hit) and send the
    L2 7 to 55 times the bytes of O and LSE where they spill."""
    spilling = [r for r in local_rows if r["kernel"] == "main" and r["local_st"] > 100e6]
    assert len(spilling) == 7
    assert all(r["local_ld_l1_hit"] > 0.999 for r in spilling)
    assert all(7 < r["local_st"] / r["global_st"] < 56 for r in spilling)


def test_one_pass_dram_bytes_match_the_page(local_rows):
    """The one-pass run (no memory restored between passes) of the s19 grid: the forwards'
    DRAM writes exceed their stores where the page says so (d = 128 at N = 28,000: 38.6 MB for
    21.8 MB stored; d = 64 at N = 90,000: 15.3 MB for 11.9 MB)."""
    module = load_module("ncu_replay_probe", ROOT / "benchmarks" / "ncu_replay_probe.py")
    one_pass = [r for r in module.rows(str(REPLAY)) if r["variant"] == "dram"]
    assert len(one_pass) == 42
    got = {(r["config"]["head_dim"], r["config"]["seq_len"], r["kernel"]): r for r in one_pass}
    stored = {(r["config"]["head_dim"], r["config"]["seq_len"], r["kernel"]): r["global_st"] for r in local_rows}
    for key, wrote_mb, ratio_low in (((128, 28000, "main"), 38.6, 1.7), ((64, 90000, "main"), 15.3, 1.25)):
        assert got[key]["write"] / 1e6 == pytest.approx(wrote_mb, abs=0.05)
        assert got[key]["write"] / stored[key] > ratio_low
    assert "1 pass" in (REPLAY / "passes.txt").read_text() and "3 passes" in (REPLAY / "passes.txt").read_text()


def test_lines_rewritten_over_and_over_reach_dram_once_at_most():
    """docs/validation/2026-12-04-l2-hot-dirty.md: a hot region H rewritten every round adds
    at most 0.6 H of DRAM writes to an output W written once, whatever the rounds; and a long
    grid's blocks run in 8 warp slots an SM."""
    module = load_module("l2_hot_dirty_ncu", ROOT / "benchmarks" / "l2_hot_dirty_ncu.py")
    folder = ROOT / "docs" / "validation" / "2026-12-04-l2-hot-dirty"
    cases = json.loads((folder / "cases.json").read_text())["cases"]
    launches = read_launches((folder / "l2_hot_dirty.csv").read_text())
    assert len(cases) == len(launches) == len(module.CASES) == 20
    wrote = {(c["hot"], c["out"], c["src"], c["rounds"]): l["metrics"]["dram__bytes_write.sum"]
             for c, l in zip(cases, launches)}
    mb = 10 ** 6
    for (hot, out, src, rounds), got in wrote.items():
        if src and hot:
            cold = wrote[(0, out, src, 64)]
            assert got - cold < 0.6 * hot + 0.5 * mb, (hot, out, rounds)
        if hot + out <= 24 * mb:   # under the dirty cap, nothing streaming: nothing written back
            assert src or got < 0.5 * mb
    slots = json.loads((ROOT / "docs" / "validation" / "2026-12-04-warp-slots" / "warp_slots.json").read_text())
    assert all(c["sms_seen"] == 132 and c["slots_per_sm_max"] == 8 for c in slots["cases"])


def test_a_stream_pushes_out_lines_used_more_than_once_like_lines_used_once():
    """docs/validation/2026-12-04-l2-scan.md: no scan resistance (A used once, twice or four
    times is lost alike), and two contiguous buffers of 26 MB in all are kept whole, where the
    model's random placement on 16-way sets keeps 74 % of A."""
    from iosim.models.cache.sets import hit_probability

    module = load_module("l2_scan_ncu", ROOT / "benchmarks" / "l2_scan_ncu.py")
    found = module.table(str(ROOT / "docs" / "validation" / "2026-12-04-l2-scan"))
    assert len(found) == len(module.CASES) == 20
    by_c = {}
    for r in found:
        by_c.setdefault(r["c_mb"], []).append(r["near_hits"])
    assert all(h == pytest.approx(10.0, abs=0.05) for h in by_c[16])
    assert all(1.3 < h < 1.8 for h in by_c[24]) and max(by_c[24]) - min(by_c[24]) < 0.2
    assert all(h < 0.05 for c in (32, 48, 96) for h in by_c[c])
    assert 10 * hit_probability(26e6 / (62_914_560 / 2), 16) < 7.5


@pytest.fixture(scope="module")
def layouts():
    module = load_module("layout_compare", ROOT / "benchmarks" / "layout_compare.py")
    folder = ROOT / "docs" / "validation" / "2026-12-04-layout"
    contiguous, strided = module.measured(str(folder / "bhnd")), module.measured(str(folder / "bnhd"))
    reads = {(c["head_dim"], c["seq_len"], k): (a, b) for (c, k, a), (_, _, b) in zip(contiguous, strided)}
    return module, folder, reads


def test_strided_heads_read_more_where_the_l2_is_near_its_room(layouts):
    """docs/validation/2026-12-04-layout.md: the same configs with a head's rows at a stride
    read 21 % (d = 96 backward), 13 % (its forward) and 10 % (d = 256 causal forward) more
    from DRAM; twelve launches are within 1.1 %."""
    _, _, reads = layouts
    assert len(reads) == 18
    ratio = {k: b / a for k, (a, b) in reads.items()}
    assert 1.19 < ratio[(96, 36000, "dq_dk_dv")] < 1.23
    assert 1.11 < ratio[(96, 36000, "main")] < 1.15
    assert 1.08 < ratio[(256, 28000, "main")] < 1.12
    assert sum(abs(r - 1) <= 0.011 for r in ratio.values()) == 12
    assert all(r > 0.99 for r in ratio.values())


@pytest.mark.slow
def test_the_d256_forward_lies_between_random_and_even_sets(layouts):
    """The d = 256 causal forward at N = 28,000: the model with 16-way random sets reads 1.53 x
    what the GPU reads, with the sets filled evenly (a fully associative LRU a partition) 0.53 x."""
    module, folder, reads = layouts
    import l2_sets_ablation

    every = l2_sets_ablation.variants()
    played = {}
    for name in module.MODELS:
        rows = [r for r in l2_sets_ablation.rows(every[name], [str(folder / "bhnd")], head_dims=(256,))
                if r["kernel"] == "main"]
        played[name] = rows[0]["dram_read"] / reads[(256, 28000, "main")][0]
    assert played["sets 60 MiB"] > 1.45 and played["LRU 60 MiB"] < 0.6


def test_write_near_lies_between_home_only_and_each_copy_written():
    """docs/validation/2026-12-04-write-backs.md: on the write-near microbenchmark the H200's
    DRAM writes lie between the rule "home" (a write dirty at its home only) and the rule
    "each" (the writer's copy dirty too, each copy written back: an upper bound), and "home"
    falls 6 MB short where one side reads 12 MB and the other writes 40 MB. The rule "first"
    lies between the two."""
    module = load_module("l2_write_near_model", ROOT / "benchmarks" / "l2_write_near_model.py")
    found = module.rows()
    assert len(found) == 36
    big = [r for r in found if r["write_mb"] >= 24]
    assert len(big) == 16 and all(r["home"] - 0.7 < r["measured"] < r["each"] + 0.7 for r in big)
    assert all(r["home"] <= r["first"] <= r["each"] for r in found)
    assert sum(r["measured"] > r["home"] + 1 for r in big) == 13
    case = next(r for r in found if (r["read_mb"], r["write_mb"], r["writer"]) == (12, 40, 1))
    assert case["measured"] - case["home"] > 5 and abs(case["measured"] - case["each"]) < 0.5


def test_a_sector_written_in_halves_reads_dram_when_evicted_partly_written():
    """docs/validation/2026-12-04-half-sectors.md: with 96 MB read between the two halves of
    256 K sectors, the DRAM reads beyond the stream level off at 32 bytes a half (two halves to
    a 64-byte unit), with or without the second halves written; whole-line writes between push
    the halves out as reads do; nothing between, little."""
    module = load_module("l2_half_sectors_ncu", ROOT / "benchmarks" / "l2_half_sectors_ncu.py")
    from l2_shared_ncu import summary
    got = {(c["halves"], c["reads"], c["writes"], c["second"]): m["dram__bytes_read.sum"] - c["reads"] / 1e6
           for c, m in summary(str(ROOT / "docs" / "validation" / "2026-12-04-half-sectors"), "l2_half_sectors.csv")}
    assert len(got) == len(module.CASES) == 18
    mb = 10 ** 6
    halves = 4 * mb // 16
    for second in (0, 1):
        assert abs(got[(4 * mb, 96 * mb, 0, second)] - halves * 32 / 1e6) < 0.5
    assert abs(got[(4 * mb, 0, 48 * mb, 1)] - got[(4 * mb, 48 * mb, 0, 1)]) < 0.5
    assert got[(4 * mb, 0, 0, 1)] < 2 and got[(4 * mb, 0, 0, 0)] < 1


def test_a_missed_sector_brings_its_64_byte_unit():
    """docs/validation/2026-12-04-reductions.md: a 4-byte load into one sector of each cold line
    reads 64 bytes a line from DRAM, the same as into both sectors of its 64-byte unit, half of
    loads into two units; a reduction's missed sector brings its unit too (two sectors of a unit
    reduced: 64 bytes a line, one missed sector a line; the unit's other sector then hits)."""
    load_module("l2_reductions_ncu", ROOT / "benchmarks" / "l2_reductions_ncu.py")
    from l2_shared_ncu import summary
    lines = 1 << 17
    got = {(c["op"], tuple(c["offsets"])): m for c, m in
           summary(str(ROOT / "docs" / "validation" / "2026-12-04-reductions"), "l2_reductions.csv")}
    per_line = {k: round(m["dram__bytes_read.sum"] * 1e6 / lines) for k, m in got.items()}
    assert per_line[("load", (0,))] == per_line[("load", (0, 32))] == 64
    assert per_line[("load", (0, 64))] == per_line[("load", (0, 32, 64, 96))] == 128
    assert per_line[("red", (0, 32))] == 64 and per_line[("red", (0, 32, 64, 96))] == 128
    missed = {k: round(m["lts__t_sectors_srcunit_tex_op_red_lookup_miss.sum"] * 1e6 / 32 / lines, 2)
              for k, m in got.items() if k[0] == "red"}
    assert missed[("red", (0, 32))] == 1 and missed[("red", (0, 32, 64, 96))] == 2


def test_reductions_into_one_tile_go_at_a_rate_per_line():
    """docs/validation/2026-12-04-red-contention.md: 15,040 blocks adding 128-row fp32 tiles in an
    accumulator fragment's order: into one 32 KB tile about 1,180 µs, into two about half that,
    into 64 or more about 430 µs; a tile twice as wide (one tile) goes at twice the rate; the
    fragment's order makes eight L2 requests a warp instruction."""
    load_module("l2_red_contention_ncu", ROOT / "benchmarks" / "l2_red_contention_ncu.py")
    from l2_shared_ncu import summary
    got = {(c["d"], c["regions"], c["pattern"]): m for c, m in
           summary(str(ROOT / "docs" / "validation" / "2026-12-04-red-contention"), "l2_red_contention.csv")}
    t = {k: m["gpu__time_duration.sum"] for k, m in got.items()}
    assert 1100 < t[(64, 1, "mma")] < 1250 and 0.45 < t[(64, 2, "mma")] / t[(64, 1, "mma")] < 0.55
    assert 400 < t[(64, 64, "mma")] < 460 and abs(t[(64, 256, "mma")] - t[(64, 64, "mma")]) < 10
    reds = 15040 * 128 * 64
    assert abs((2 * reds / t[(128, 1, "mma")]) / (reds / t[(64, 1, "mma")]) / 2 - 1) < 0.1    # a rate per line
    assert round(got[(64, 1, "mma")]["lts__t_requests_srcunit_tex_op_red.sum"] * 1e6) == reds // 4


def test_the_flash_kernels_reduce_a_line_an_instruction():
    """docs/validation/2026-12-04-red-contention.md: on all 21 main backwards of the ``lines`` and
    ``s22`` grids under ``--metric-set red``, each reduction instruction is one L2 request of
    four sectors (32 fp32 additions along a row), decodes and not."""
    from iosim.gpu import sdpa
    seen = 0
    for grid in ("lines", "s22"):
        for _, problem, launches in sdpa.raw_configs(str(ROOT / "docs" / "validation" / "2026-12-04-red-contention"
                                                         / "kernels" / grid)):
            (m,) = [l["metrics"] for l in launches if sdpa.label(l["name"]) == "dq_dk_dv"]
            inst = m["smsp__inst_executed_op_global_red.sum"]
            assert m["lts__t_requests_srcunit_tex_op_red.sum"] == inst, problem
            assert m["lts__t_sectors_srcunit_tex_op_red.sum"] == 4 * inst, problem
            assert m["smsp__sass_data_bytes_mem_global_op_red.sum"] == 128 * inst, problem
            seen += 1
    assert seen == 21

"""Replays of the committed L2 measurements on the H200 (no GPU needed): what
docs/validation/2026-12-03-l2-scatter.md reads from them, recomputed from the raw ncu CSVs."""

import pathlib

import numpy as np
import pytest

from conftest import load_module

ROOT = pathlib.Path(__file__).resolve().parents[2]
VALIDATION = ROOT / "docs" / "validation"
MB = 1e6
#: half of the 62,914,560-byte L2 the H200's driver reports (docs/validation/2026-12-03-l2-size.txt)
PARTITION = 62_914_560 / 2


@pytest.fixture(scope="module")
def sided():
    return load_module("l2_shared_ncu", ROOT / "benchmarks" / "l2_shared_ncu.py")


@pytest.fixture(scope="module")
def misses(sided):
    """{(chunk bytes, stride): {D in MB: the second pass's DRAM misses in MB}}."""
    out = {}
    for case, got in sided.summary(str(VALIDATION / "2026-12-03-l2-scatter"), "l2_scatter.csv"):
        layout = (case["chunk_bytes"], case["stride_chunks"])
        out.setdefault(layout, {})[case["bytes"] / MB] = got["dram__bytes_read.sum"] - case["bytes"] / MB
    return out


def _set_misses(d_mb: float, ways: int) -> float:
    """Side 0's lines that a partition of ``ways``-way sets on hashed 128-byte lines loses
    when it reads D bytes twice: the half homed on side 0, each lost when ``ways`` or more of
    the D bytes' other lines share its set (Poisson with mean ways × D / partition)."""
    lam = ways * d_mb * MB / PARTITION
    kept = sum(np.exp(-lam) * lam ** k / np.prod(np.arange(1, k + 1), dtype=float) for k in range(ways))
    return d_mb / 2 * (1 - kept)


def test_a_contiguous_buffer_is_kept_whole_to_28_mb_and_scattered_ones_are_not(misses):
    misses = dict(misses)
    contiguous = misses.pop((0, 0))
    assert len(misses) == 5 and all(len(m) == 10 for m in misses.values())
    assert all(miss < 0.2 for d, miss in contiguous.items() if d <= 28)
    assert contiguous[36] > 0.45 * 36                # past the partition, side 0's half misses
    for layout, by_size in misses.items():
        assert by_size[16] < 0.2 and by_size[20] > 0.3, layout
        assert 4.5 < by_size[28] < 5.5, layout


def test_sixteen_hashed_ways_of_30_mib_predict_every_scattered_layout(misses):
    misses = {layout: by_size for layout, by_size in misses.items() if layout != (0, 0)}
    worst = {ways: max(abs(miss - _set_misses(d, ways)) for by_size in misses.values() for d, miss in by_size.items())
             for ways in (8, 16, 32)}
    assert worst[16] < 1.1, worst                          # of 36 MB at most; 0.6 MB to 32 MB
    assert worst[8] > 1.3 and worst[32] > 1.3, worst       # the fit singles out sixteen ways


def test_every_written_line_reaches_dram_once(sided):
    rows = sided.summary(str(VALIDATION / "2026-12-03-l2-write-twice"), "l2_write_twice.csv")
    assert len(rows) == 12
    for case, got in rows:
        if case["write_bytes"]:
            assert abs(got["dram__bytes_write.sum"] - case["write_bytes"] / MB) < 0.1, case


def test_a_hit_refreshes_a_line_and_a_write_takes_room_as_a_read(sided):
    """docs/validation/2026-12-03-l2-policy.md: past side 0's partition, a refreshed buffer is
    kept and the older one lost (an LRU, not first-in-first-out), and a written buffer
    evicts what a read one of the same size does."""
    extra = {}
    for case, got in sided.summary(str(VALIDATION / "2026-12-03-l2-policy"), "l2_policy.csv"):
        first = 2 * case["ab_bytes"] + (case["c_bytes"] if case["phases"][3][1] == 0 else 0)
        extra[case["sequence"], case["c_bytes"] // 10 ** 6] = got["dram__bytes_read.sum"] - first / MB
    assert len(extra) == 18
    assert all(abs(extra[seq, 6]) < 0.2 for seq, c in extra if c == 6)
    for c in (14, 20):
        assert extra["refresh, B", c] > 3.5 and extra["refresh, A", c] < 0.5
        assert extra["plain, A", c] > 3.5 and extra["plain, B", c] < 1.5
        assert abs(extra["write, B", c] - extra["refresh, B", c]) < 0.3 and extra["write, A", c] < 0.5


@pytest.fixture(scope="module")
def breakdown():
    return load_module("l2_breakdown", ROOT / "benchmarks" / "l2_breakdown.py")


def _launches(folder: str, d: int) -> list:
    from iosim.gpu.ncu import read_launches, read_raw
    return read_launches(read_raw(str(VALIDATION / folder / f"sdpa_d{d}.csv")))


def test_the_breakdown_run_repeats_the_session_19_launches():
    """docs/validation/2026-12-03-l2-breakdown.md: the same 42 launches as the s19 grid, and
    each one's DRAM reads within 2.5 % of that run's, but for the d = 256 causal forward
    (0.94: the launch nearest a partition's edge varies between runs)."""
    ratios = []
    for d in (64, 96, 128, 192, 256):
        now, then = _launches("2026-12-03-l2-breakdown", d), _launches("2026-12-03-s19-check", d)
        assert [x["name"] for x in now] == [x["name"] for x in then]
        ratios += [(d, x["name"], x["metrics"]["dram__bytes_read.sum"] / max(y["metrics"]["dram__bytes_read.sum"], 1))
                   for x, y in zip(now, then) if y["metrics"]["dram__bytes_read.sum"] > 1e6]
    off = [(d, name.split("<")[0], round(r, 3)) for d, name, r in ratios if abs(r - 1) > 0.025]
    assert off == [(256, "void flash_fwd_kernel", 0.941)]


def test_reductions_are_looked_up_near_only_for_lines_homed_there(breakdown):
    """The backward's dQaccum reductions: the near partition misses about half of them (the
    lines homed on its side; the rest are done at the home, over the fabric), so that DRAM
    reads = read misses homed near + fabric read misses + twice the near reductions' misses,
    within 10 % on every main backward launch."""
    for d in (64, 96, 128, 192, 256):
        for x in _launches("2026-12-03-l2-breakdown", d):
            if "dq_dk_dv" not in x["name"]:
                continue
            m = breakdown.measured(x["metrics"])    # MB: near misses, lookups at the home, hits there
            dram = m["near miss"] - m["looked"] + (m["looked"] - m["far hit"]) + 2 * m["acc near miss"]
            assert dram == pytest.approx(m["DRAM"], rel=0.10), (d, x["grid"])

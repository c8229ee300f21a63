"""iosim.gpu.sectors: the bytes the L1 tag stage counts beyond iosim's loads when the main
backward kernel reads L (fp32, N_q values a head) in 8-row requests, whole 32-byte sectors
each — hand-counted cases, and the committed decode launches it makes exact."""

import numpy as np
import pytest

from iosim import Problem
from iosim import load_profile
from iosim.gpu.sdpa import combine_lse_tail
from iosim.gpu.sectors import backward_excess, copy_row_bytes, forward_excess, sectors, stats_excess, visits


def test_sectors_touched():
    assert [sectors(0, 32), sectors(0, 33), sectors(28, 8), sectors(4, 4), sectors(16, 0)] == [1, 2, 2, 1, 0]


def test_one_value_a_head_counts_a_sector():
    """N_q = 1: each head's one value (4 B) is a whole sector (32 B): 28 B more per head, per
    key block and loading warp."""
    p = Problem(seq_len_q=1, seq_len_kv=256, head_dim=64, heads=8)
    assert stats_excess(p, 64, 64, 1) == 8 * 28 * 4                      # 4 key blocks
    assert stats_excess(p, 64, 64, 2) == 2 * 8 * 28 * 4                  # two warps load each row


def test_seven_values_a_head_by_hand():
    """N_q = 7: head h's 28 bytes start at 28h; over 8 heads two fit one sector (+4 B) and six
    straddle two (+36 B): 224 B."""
    assert stats_excess(Problem(seq_len_q=7, seq_len_kv=64, head_dim=64, heads=8), 64, 64, 1) == 2 * 4 + 6 * 36


@pytest.mark.parametrize("n_q", [8, 16, 1000, 4096])
def test_lengths_that_are_multiples_of_eight_add_nothing(n_q):
    assert stats_excess(Problem(seq_len_q=n_q, seq_len_kv=512, head_dim=64, batch=3, heads=5), 64, 128, 4) == 0


def test_heads_beyond_eight_repeat_the_first_eight():
    p = lambda h: Problem(seq_len_q=2500, seq_len_kv=2500, head_dim=80, heads=h)  # noqa: E731
    assert stats_excess(p(16), 64, 128, 4) == 2 * stats_excess(p(8), 64, 128, 4)
    assert stats_excess(p(10), 64, 128, 4) == stats_excess(p(8), 64, 128, 4) + stats_excess(p(2), 64, 128, 4)


def test_causal_visits_bottom_right():
    assert visits(Problem(seq_len=256, head_dim=64, causal=True), 64, 64) == [1, 2, 3, 4]
    assert visits(Problem(seq_len_q=64, seq_len_kv=256, head_dim=64, causal=True), 64, 64) == [4]
    assert visits(Problem(seq_len=256, head_dim=64), 64, 128) == [2, 2, 2, 2]


@pytest.mark.parametrize("d,rows,tail", [(64, 7500, 16), (128, 7500, 0), (64, 7504, 0), (96, 7500, 16), (32, 7501, 12),
                                         (256, 7501, 12)])
def test_combine_writes_its_last_blocks_rows(d, rows, tail):
    """kBlockM over the flattened rows: 8 at kernel head dim 64, 4 at 128 and 256, 16 at 32 and 96."""
    assert combine_lse_tail(Problem(seq_len_q=rows, seq_len_kv=4096, head_dim=d), load_profile("h200")) == tail


#: benchmarks/sector_probe.py on the H200 (docs/validation/2026-12-01-sector-probe/): one
#: 80-byte row read by 16-byte cp.async chunks, at each 16-byte offset of a 128-byte line
#: (offset of the row's start → sectors the tag stage counted)
ONE_ROW = {0: 3, 16: 3, 32: 3, 48: 3, 64: 3, 80: 4, 96: 3, 112: 4}


@pytest.mark.parametrize("start,counted", sorted(ONE_ROW.items()))
def test_copy_row_bytes_as_measured(start, counted):
    for line in (0, 128, 4096):
        assert copy_row_bytes(np.array([line + start]), 80)[0] == 32 * counted


def test_the_single_row_probe_is_the_table():
    """The committed probe's single-row launches, read back: they are ONE_ROW."""
    import json
    import pathlib

    from iosim.gpu.ncu import read_launches
    raw = pathlib.Path(__file__).resolve().parents[2] / "docs" / "validation" / "2026-12-01-sector-probe"
    cases = json.loads((raw / "cases.json").read_text())["one_row"]
    launches = [x for x in read_launches((raw / "probe.csv").read_text()) if "one_row" in x["name"]]
    assert len(launches) == len(cases["offsets_bytes"]) * len(cases["active_rows"])
    it = iter(launches)
    for offset in cases["offsets_bytes"]:
        for row in cases["active_rows"]:
            sectors_counted = next(it)["metrics"]["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
            assert sectors_counted == ONE_ROW[(offset + 80 * row) % 128]


def test_forward_excess_only_where_rows_leave_sectors():
    p = Problem(seq_len=1000, head_dim=48, batch=2, heads=8)
    assert forward_excess(p, 128, 128) == 0                                      # 96-byte rows: whole sectors
    assert forward_excess(Problem(seq_len=1000, head_dim=72, heads=4), 128, 64) > 0   # 144 bytes: half start mid-sector
    assert forward_excess(Problem(seq_len=1000, head_dim=40, batch=2, heads=8), 128, 128) > 0


@pytest.mark.parametrize("start,nbytes,counted", [
    (0, 400, 13), (16, 400, 13 + 3), (48, 400, 13 + 3), (32, 400, 13),       # d = 200: 12.5 sectors a row
    (16, 176, 6 + 1), (112, 176, 6 + 2), (0, 176, 6),                         # d = 88: one or two lines crossed
    (112, 48, 2 + 1), (80, 48, 2), (16, 16, 1)])                              # d = 24, 8: within a line
def test_a_row_counts_a_sector_more_per_line_it_crosses_from_mid_sector(start, nbytes, counted):
    """Session 22 (docs/validation/2026-12-04-rows.md): a row that starts 16 bytes into a sector
    counts one sector more for each 128-byte line boundary it crosses, however long."""
    assert copy_row_bytes(np.array([4096 + start]), nbytes)[0] == 32 * counted


def test_backward_excess_counts_q_and_do_per_visiting_key_block():
    """K and V once per query head, Q and dO once per key block that visits their query block:
    a causal run's Q rows count fewer visits than a dense run's, and 8 query heads on 2 K/V
    heads read K and V as often as 8 on 8 (the backward kernel runs a thread block per key
    block and query head)."""
    dense, causal = (Problem(seq_len=1000, head_dim=72, heads=4, causal=c) for c in (False, True))
    assert backward_excess(Problem(seq_len=1000, head_dim=64, heads=4), 64, 128) == 0
    assert 0 < backward_excess(causal, 64, 128) < backward_excess(dense, 64, 128)
    gqa = Problem(seq_len=1000, head_dim=72, heads=8, kv_heads=2)
    mha = Problem(seq_len=1000, head_dim=72, heads=8)
    assert backward_excess(gqa, 64, 128) == backward_excess(mha, 64, 128) == 2 * backward_excess(dense, 64, 128)


def test_forward_excess_reproduces_the_probe_at_d56():
    """d = 56 was not used to derive the rule: the probe's forward launch (N = 1,000, B×H = 2×8,
    the 64 kernel's 128 × 128 tiles) measured 38,080,000 bytes at the tag stage."""
    p = Problem(seq_len=1000, head_dim=56, batch=2, heads=8)
    requested = (1000 * 8 + 2 * 1000 * 8 * 8) * 2 * 56 * 2     # Q once, K and V by 8 query blocks, 16 heads
    assert requested + forward_excess(p, 128, 128) == 38_080_000

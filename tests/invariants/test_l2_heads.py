"""The L2 model over many heads (iosim/models/cache/periodic.py): a few heads are played and
the totals extended to every head, exactly as playing every head gives them — every counter
of every cache level, the DRAM bytes and the time — over FA1, FA2 (both passes), GQA, causal
masks, unequal lengths and split-KV. (A two-level cache, MI300X's, turns over only after
thousands of heads: its runs here play every head.) Two ways: the checked extension
(``all_heads``) and, where every CTA has one length, the copies of P heads (``copies``)."""

import pytest

import iosim.models.cache.playback as playback
from iosim import Options, Problem, simulate
from iosim.models.cache.periodic import period

CASES = [
    ("toy", "fa2", "forward", Problem(seq_len=512, head_dim=32, heads=300), (32, 32)),
    ("toy", "fa1", "forward", Problem(seq_len=300, head_dim=16, heads=400, causal=True), (32, 32)),
    ("toy", "fa2", "backward", Problem(seq_len=256, head_dim=16, batch=10, heads=48, kv_heads=16, causal=True),
     (32, 32)),
    ("toy", "fa2-splitkv", "forward", Problem(seq_len_q=1, seq_len_kv=2048, head_dim=32, heads=64, kv_heads=8,
                                              batch=40), (16, 32)),
    ("toy", "fa2", "forward", Problem(seq_len_q=100, seq_len_kv=260, head_dim=16, batch=20, heads=30, kv_heads=10,
                                      causal=True), (32, 32)),
]


@pytest.mark.parametrize("hw,algo,passes,problem,blocks", CASES)
def test_a_few_heads_extended_equal_every_head_played(monkeypatch, hw, algo, passes, problem, blocks):
    played, marked = [], []
    extend = playback.all_heads

    def spy(play, heads, play_marked=None, **kw):
        def counting(h):
            played.append(h)
            return play(h)

        def counting_marked(h, marks):
            played.append(h)
            marked.append(h)
            return play_marked(h, marks)
        return extend(counting, heads, play_marked=counting_marked if play_marked else None, **kw)

    monkeypatch.setattr(playback, "_by_copies", lambda *a: None)      # the checked extension, not copies
    monkeypatch.setattr(playback, "all_heads", spy)
    extended = simulate(hw, algo, problem, passes=passes, blocks=blocks, options=Options(cache=True)).to_dict()
    monkeypatch.setattr(playback, "all_heads", lambda play, heads, **kw: play(heads))
    every = simulate(hw, algo, problem, passes=passes, blocks=blocks, options=Options(cache=True)).to_dict()
    assert sum(played) < problem.heads_total                 # the extension was used
    assert marked == played                                  # each run a single marked one
    for key in ("l2", "dram", "outer_caches", "time", "kernel_times"):
        assert extended.get(key) == every.get(key), key


def test_the_period_of_the_launch_pattern():
    assert period(slots=264, ctas_per_head=16, group=1) == 33      # lcm(264, 16) = 528 CTAs = 33 heads
    assert period(slots=264, ctas_per_head=64, group=1) == 33
    assert period(slots=16, ctas_per_head=16, group=4) == 4        # one wave a head; GQA groups of 4
    assert period(slots=12, ctas_per_head=8, group=3) == 3


COPY_CASES = [
    ("toy", "fa2", "forward", Problem(seq_len=512, head_dim=32, heads=300), (32, 32)),
    ("toy", "fa2", "forward", Problem(seq_len=500, head_dim=32, heads=70), (32, 32)),    # ragged rows
    ("toy", "fa1", "forward", Problem(seq_len=300, head_dim=16, heads=97), (32, 32)),    # FA1 rewrites O
    ("toy", "fa2", "backward", Problem(seq_len=256, head_dim=16, batch=10, heads=48, kv_heads=16), (32, 32)),
    ("toy", "fa2", "forward", Problem(seq_len=4096, head_dim=16, heads=45), (32, 32)),  # a head > the cache
    ("h200", "fa2", "forward", Problem(seq_len=2048, head_dim=128, batch=3, heads=100), (128, 64)),
]


@pytest.mark.parametrize("hw,algo,passes,problem,blocks", COPY_CASES)
def test_copies_of_the_launch_pattern_equal_every_head_played(monkeypatch, hw, algo, passes, problem, blocks):
    used = []
    original = playback.copies

    def spy(full, times, rest, capacity):
        used.append(times)
        return original(full, times, rest, capacity)

    monkeypatch.setattr(playback, "copies", spy)
    by_copies = simulate(hw, algo, problem, passes=passes, blocks=blocks, options=Options(cache=True)).to_dict()
    assert used and min(used) >= 2                            # the copies were used
    monkeypatch.setattr(playback, "_by_copies", lambda *a: None)
    monkeypatch.setattr(playback, "all_heads", lambda play, heads, **kw: play(heads))
    every = simulate(hw, algo, problem, passes=passes, blocks=blocks, options=Options(cache=True)).to_dict()
    for key in ("l2", "dram", "outer_caches", "time", "kernel_times"):
        assert by_copies.get(key) == every.get(key), key

"""The L2 model over many heads (iosim/models/cache/periodic.py): a few heads are played and
the totals extended to every head, exactly as playing every head gives them — every counter
of every cache level, the DRAM bytes and the time — over FA1, FA2 (both passes), GQA, causal
masks, unequal lengths and split-KV. (A two-level cache, MI300X's, turns over only after
thousands of heads: its runs here play every head.) Two ways: the checked extension
(``all_heads``) and, where every CTA has one length, the copies of P heads (``copies``).
Where the two steps of P heads differ by no more than ``periodic.NEAR``, the extension is
approximate, and says so."""

import pytest

import iosim.models.cache.periodic as periodic
import iosim.models.cache.playback as playback
import iosim.models.cache.plans as plans
import iosim.run.launches as launches
from iosim import Options, Problem, prepare, simulate
from iosim.models.cache.periodic import NEAR, period
from iosim.run.count import count_launch

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
    monkeypatch.setattr(playback, "all_heads", lambda play, heads, **kw: (*play(heads), None))
    every = simulate(hw, algo, problem, passes=passes, blocks=blocks, options=Options(cache=True)).to_dict()
    assert sum(played) < problem.heads_total                 # the extension was used
    assert marked == played                                  # each run a single marked one
    near = [k.pop("heads_extended_within", None) for k in extended["l2"]["per_kernel"].values()]
    if any(near):                                            # steps taken by head: within NEAR
        _within_near(extended, every)
        return
    for key in ("l2", "dram", "outer_caches", "time", "kernel_times"):
        assert extended.get(key) == every.get(key), key


def _within_near(got: dict, every: dict) -> None:
    """Every DRAM and L2 counter of ``got`` within NEAR of the DRAM bytes of ``every``."""
    scale = sum(every["dram"].values())
    for key in ("read_bytes", "write_bytes", "dirty_bytes_left"):
        assert abs(got["dram"][key] - every["dram"][key]) <= NEAR * scale, key
    for key in ("read_bytes", "write_bytes"):
        assert abs(got["l2"][key] - every["l2"][key]) <= NEAR * scale, key


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
    monkeypatch.setattr(playback, "all_heads", lambda play, heads, **kw: (*play(heads), None))
    every = simulate(hw, algo, problem, passes=passes, blocks=blocks, options=Options(cache=True)).to_dict()
    for key in ("l2", "dram", "outer_caches", "time", "kernel_times"):
        assert by_copies.get(key) == every.get(key), key


def test_steps_that_nearly_agree_extend_and_say_so(monkeypatch):
    """Causal thread blocks have unequal lengths: the rounds where heads start need not repeat
    exactly, so two steps of P heads cut at rounds differ by the few requests a mark cuts
    off. Steps taken by head instead, within periodic.NEAR, extend too; the result names how
    far apart the steps were, and the totals stay within NEAR of the kernel's DRAM bytes of
    playing every head."""
    problem, blocks = Problem(seq_len=2048, head_dim=128, batch=4, heads=200, causal=True), (128, 64)
    near = simulate("h200", "fa2", problem, blocks=blocks, options=Options(cache=True))
    apart = near.to_dict()["l2"]["per_kernel"]["main"]["heads_extended_within"]
    assert 0 < apart <= NEAR
    first_touch = 3 * problem.heads_total * 2048 * 128 * 2                  # Q, K, V of every head
    assert near.cache.total.dram_read_bytes >= first_touch                  # never below compulsory
    monkeypatch.setattr(playback, "all_heads", lambda play, heads, **kw: (*play(heads), None))
    every = simulate("h200", "fa2", problem, blocks=blocks, options=Options(cache=True))
    assert "heads_extended_within" not in every.to_dict()["l2"]["per_kernel"]["main"]
    e = every.cache.total
    scale = e.dram_read_bytes + e.dram_write_bytes + e.dirty_bytes_left
    for name in ("read_bytes", "read_hit_bytes", "write_bytes", "dram_read_bytes", "dram_write_bytes",
                 "dirty_bytes_left"):
        assert abs(getattr(near.cache.total, name) - getattr(e, name)) <= NEAR * scale, name


@pytest.mark.parametrize("hw,problem,blocks,settled", [
    ("h200", Problem(seq_len=2048, head_dim=128, batch=3, heads=100), (128, 64), True),             # copies
    ("toy", Problem(seq_len=100, head_dim=16, heads=30, kv_heads=10, causal=True), (32, 32), True),  # every head
    ("h200", Problem(seq_len=2048, head_dim=128, batch=4, heads=200, causal=True), (128, 64), True),  # extended
    ("mi300x", Problem(seq_len=1024, head_dim=64, heads=8), (64, 64), True),                       # two levels
    ("toy", Problem(seq_len_q=100, seq_len_kv=260, head_dim=16, batch=20, heads=30, kv_heads=10,
                    causal=True), (32, 32), True),                   # extended, steps taken by head
    ("toy", Problem(seq_len_q=100, seq_len_kv=260, head_dim=16, batch=20, heads=30, kv_heads=10,
                    causal=True), (32, 32), False),                  # the same, asking equal steps: more heads
])
def test_the_plan_counts_the_requests_it_plays(monkeypatch, hw, problem, blocks, settled):
    """What the L2 model's plan says playing costs (the default budget's unit) is what its
    streams hold where the heads' extension takes its first two steps, less where it needs
    more heads (and playing past a limit stops before the stream that would pass it)."""
    held, planned = [], []
    stream, plan = playback.stream, plans.plan

    def counting(*a, **kw):
        s = stream(*a, **kw)
        held.append(len(s.size))
        return s

    def keeping(*a, **kw):
        p = plan(*a, **kw)
        planned.append(p.requests)
        return p
    monkeypatch.setattr(playback, "stream", counting)
    monkeypatch.setattr(launches, "plan", keeping)
    if not settled:
        monkeypatch.setattr(periodic, "NEAR", -1.0)
    simulate(hw, "fa2", problem, blocks=blocks, options=Options(cache=True))
    assert (sum(planned) == sum(held) > 0) if settled else (0 < sum(planned) < sum(held))
    if not settled:
        with pytest.raises(plans.PlayLimit):
            s = prepare(hw, "fa2", problem, blocks=blocks, options=Options(cache=True))
            c = count_launch(s.profile, s.launches[0], s.options, s.sram_bytes, "count", None, record=True)
            launches._cache_plan(s, s.launches[0], c).play(limit=sum(held) - 1)

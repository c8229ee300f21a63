"""Loops a schedule declares interchangeable (``ctx.q_blocks(interchangeable=True)``, FA2's
forward pass) run one body per group of plain blocks in a count run that records no
accesses, instead of the group's first member and then the rest (iosim/engine/loops.py).

The promise is the schedule's: every iteration of a group does the same work, whatever its
index and whatever the iterations before it left. These tests hold FA2 to it — the counts,
peaks, times and every thread block's work equal those of the two runs per group and of
trace mode, over ragged, causal, GQA, block-sparse and padded problems and the real-kernel
presets — and show that the comparison catches a body that breaks it.
"""

import pytest

from iosim import Options, Problem, simulate
from iosim.engine.loops import BlockLoops
from iosim.engine.tiles import maximum
from iosim.run.count import count_launch
from iosim.run.setup import prepare
from iosim.studies.explore.measure import UNLIMITED_BYTES
from count_summaries import records, runs, summary


#: Flash-Decoding's thread blocks, grouped by their splits' blocks in a count run, come in
#: the groups' order there: left out where runs of equal work are compared with trace mode
SPLITS = ("splitkv",)


def _declarations_ignored(monkeypatch):
    """Every loop run as its groups' first member, then the rest (as before the promise)."""
    iterate = BlockLoops._iterate
    monkeypatch.setattr(BlockLoops, "_iterate", lambda self, blocks, descending=False, interchangeable=False:
                        iterate(self, blocks, descending))


PROBLEMS = [  # (N_q, N_kv, d, B_r, B_c, causal, kv heads): ragged both ways or not, unequal lengths
    (256, 256, 32, 64, 64, False, None), (333, 333, 32, 64, 32, False, None), (333, 333, 32, 16, 64, True, None),
    (100, 517, 64, 32, 16, False, 2), (517, 100, 16, 32, 48, True, 2), (1, 300, 32, 64, 64, False, None),
    (300, 1, 32, 64, 64, True, None), (250, 250, 48, 80, 80, False, 1), (128, 128, 32, 128, 128, False, None),
]
VARIANTS = [  # (profile, options, passes)
    ("h100-sxm", {"cache": False}, "forward"),
    ("h100-sxm", {"cache": True}, "forward"),
    ("fa-paper-a100", {"tiles": "padded"}, "forward"),
    ("fa-paper-a100", {"block_mask": "local:2"}, "forward"),
    ("h100-sxm", {"kernel": "flash-attn-2", "cache": False}, "forward+backward"),
    ("h100-sxm", {"kernel": "flash-attn-3", "cache": False}, "forward"),
]


@pytest.mark.parametrize("shape", PROBLEMS, ids=lambda s: "q{}k{}d{}_{}x{}_{}_{}".format(*s))
@pytest.mark.parametrize("hw,options,passes", VARIANTS, ids=lambda v: str(v))
def test_fa2_counts_as_two_runs_per_group_and_as_trace(shape, hw, options, passes, monkeypatch):
    nq, nk, d, br, bc, causal, kv_heads = shape
    problem = Problem(seq_len_q=nq, seq_len_kv=nk, head_dim=d, heads=2, kv_heads=kv_heads, causal=causal)
    kw = dict(passes=passes, blocks=None if "kernel" in options else (br, bc),
              options=Options(sram_bytes=None if "kernel" in options else UNLIMITED_BYTES, **options))
    counted = simulate(hw, "fa2", problem, **kw)
    traced = simulate(hw, "fa2", problem, mode="trace", **kw)
    _declarations_ignored(monkeypatch)
    twice = simulate(hw, "fa2", problem, **kw)
    assert summary(counted) == summary(twice) == summary(traced)
    assert records(counted) == records(twice)
    assert runs(counted, SPLITS) == runs(traced, SPLITS)
    assert repr(counted.cache) == repr(twice.cache)


@pytest.mark.parametrize("shape", PROBLEMS, ids=lambda s: "q{}k{}d{}_{}x{}_{}_{}".format(*s))
def test_a_count_without_thread_block_work_is_the_same(shape, monkeypatch):
    """Explore's first counts (``cta_work=False``): the same totals and peaks."""
    nq, nk, d, br, bc, causal, kv_heads = shape
    problem = Problem(seq_len_q=nq, seq_len_kv=nk, head_dim=d, heads=2, kv_heads=kv_heads, causal=causal)
    setup = prepare("h100-sxm", "fa2", problem, blocks=(br, bc), options=Options(cache=False))

    def count():
        c = count_launch(setup.profile, setup.launches[0], setup.options, UNLIMITED_BYTES, "count", cta_work=False)
        return (c.tensors, c.kernels, c.ops, c.kernel_ops, c.link_bytes, c.sram, c.registers)

    one = count()
    _declarations_ignored(monkeypatch)
    assert one == count()


# -- a body that breaks the promise is caught ------------------------------------------------

def _fa2_like(interchangeable: bool):
    """FA2's loops, with an inner body that does more once an earlier iteration has run:
    its work depends on the iteration."""
    def schedule(ctx):
        for i in ctx.q_blocks(interchangeable=interchangeable):
            Q_i = ctx.load("Q", i)
            m_i = ctx.fill("m_i", i, 0.0, role="stats")
            seen = []
            for j in ctx.kv_blocks(visible_to=i, interchangeable=interchangeable):
                K_j = ctx.load("K", j)
                S_ij = ctx.keep("S_ij", Q_i @ K_j.T, role="scores")
                if seen:                                   # not the first key block
                    S_ij = ctx.keep("S_ij", S_ij.exp(), role="scores")
                m_i = ctx.keep("m_i", maximum(m_i, S_ij.rowmax()), role="stats")
                seen.append(j)
            ctx.store("L", i, m_i)
    return schedule


@pytest.mark.parametrize("interchangeable", [False, True])
def test_an_iteration_dependent_body_differs_from_trace_only_when_declared(interchangeable, monkeypatch):
    problem = Problem(seq_len=256, head_dim=32)

    def ops(mode):
        return simulate("fa-paper-a100", _fa2_like(interchangeable), problem, blocks=(64, 64), mode=mode).ops

    traced = ops("trace")
    assert traced["exp"] == 4 * 3 * 64 * 64
    assert (ops("count") == traced) != interchangeable     # undeclared: the second run per group catches it
    _declarations_ignored(monkeypatch)
    assert ops("count") == traced                          # what the tests above compare with

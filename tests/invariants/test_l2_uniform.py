"""Thread-block programs as runs of one loop body (iosim/models/cache/uniform.py): every
step of every thread block equals the expanded program (iosim/models/cache/programs.py),
for the paper's FA2 (tiles that cut the 64-row chunk windows differently from one key block
to the next), the flash-attn 2 kernels (forward, split-KV and combine, the backward's four),
and the Triton kernel, FA1 and the paper's backward (a loop inside a loop); causal and not,
ragged N, GQA; and loops whose bodies share members (no built-in loop order has them),
walked member by member."""

import dataclasses

import pytest

from iosim import Options, Problem, prepare
from iosim.models.cache.programs import FIELDS, head_programs
from iosim.models.cache.uniform import uniform_programs
from iosim.run.count import count_launch

P = Problem
CASES = [
    ("fa2", "forward", None, P(seq_len=3001, head_dim=128, heads=2, causal=True)),     # B_c = 227
    ("fa2", "forward", None, P(seq_len=2048, head_dim=40, heads=2)),
    ("fa2", "forward", "flash-attn-2", P(seq_len=3001, head_dim=64, heads=2, causal=True)),
    ("fa2", "forward", "flash-attn-2", P(seq_len_q=1, seq_len_kv=5000, head_dim=128, heads=8, kv_heads=2)),
    ("fa2", "forward", "flash-attn-2", P(seq_len=1000, head_dim=40, heads=64, causal=True)),
    ("fa2", "backward", "flash-attn-2", P(seq_len=1000, head_dim=128, heads=4, kv_heads=2, causal=True)),
    ("fa2", "backward", "flash-attn-2", P(seq_len=2048, head_dim=64, heads=2)),
    ("fa2", "forward", "triton-fa2", P(seq_len=3001, head_dim=64, heads=2, causal=True)),
]


def _recorded(algo, passes, kernel, problem):
    setup = prepare("h200", algo, problem, passes=passes, options=Options(kernel=kernel, cache=True))
    for launch in setup.launches:
        yield list(count_launch(setup.profile, launch, setup.options, setup.sram_bytes, "count", None,
                                record=True).requests)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_every_step_is_the_expanded_programs(case):
    for requests in _recorded(*case):
        _same_programs(requests)


def _same_programs(requests: list) -> None:
    """Every step of every thread block of :mod:`uniform` is the expanded program's."""
    expanded, uniform = head_programs(requests, 64), uniform_programs(requests, 64)
    assert uniform.keys() == expanded.keys()
    for kernel, prog in expanded.items():
        u = uniform[kernel]
        assert u.ctas == len(prog.cta_class) and (u.lengths == prog.lengths).all()
        for cta in range(u.ctas):
            a, b = prog.program(cta), u.program(cta)
            for name in FIELDS:
                assert (a[name] == b[name]).all(), (kernel, cta, name)


@pytest.mark.parametrize("algo,passes,problem", [
    ("fa1", "forward", P(seq_len=1000, head_dim=32, heads=2, causal=True)),
    ("fa2", "backward", P(seq_len=700, head_dim=64, heads=2, causal=True)),
    ("fa1", "forward", P(seq_len=512, head_dim=128, heads=2)),
])
def test_a_loop_inside_a_loop_member_by_member(algo, passes, problem):
    """FA1 and the paper's backward: one thread block a head, its outer loop walked member by
    member (tiles of the paper's rule, which cut the chunk windows unevenly)."""
    test_every_step_is_the_expanded_programs((algo, passes, None, problem))


def _twice(requests: list, depth_of) -> list:
    """``requests`` and a copy of the records of one body at loop depth ``depth_of(requests)``,
    named another body of the same loop (so two bodies share every member of the first)."""
    depth = depth_of(requests)
    body = next(r.levels[depth].body_seq for r in requests if len(r.levels) > depth)
    copied = [dataclasses.replace(r, levels=r.levels[:depth] + (dataclasses.replace(
        r.levels[depth], body_seq=r.levels[depth].body_seq + 10 ** 6),) + r.levels[depth + 1:])
        for r in requests if len(r.levels) > depth and r.levels[depth].body_seq == body]
    assert copied
    return requests + copied


@pytest.mark.parametrize("algo,problem,depth_of", [
    ("fa2", P(seq_len=512, head_dim=32, heads=2, causal=True), lambda rs: rs[0].cta_levels),
    ("fa1", P(seq_len=640, head_dim=32, heads=2, causal=True), lambda rs: 0),       # bodies holding a loop
    ("fa1", P(seq_len=640, head_dim=32, heads=2, causal=True), lambda rs: 1),       # inside a loop's member
])
def test_two_bodies_at_one_member_are_walked_member_by_member(algo, problem, depth_of):
    """No built-in loop order has two bodies at one member; a program that has them is still
    of this form, each member its own intervals, and equals the expanded program step for step."""
    (requests,) = _recorded(algo, "forward", None, problem)
    twice = _twice(requests, depth_of)
    assert sum(p.lengths.sum() for p in head_programs(twice, 64).values()) > sum(
        p.lengths.sum() for p in head_programs(requests, 64).values())
    _same_programs(twice)


def test_the_cost_is_that_of_the_bodies_not_the_steps():
    """A causal head of N = 65,536: 524,288 tile steps, a few intervals a query block."""
    (requests,) = _recorded("fa2", "forward", "flash-attn-2", P(seq_len=65536, head_dim=128, causal=True))
    u = uniform_programs(requests, 64)["main"]
    assert int(u.lengths.sum()) > 500_000 and len(u.start) <= 4 * u.ctas and len(u.ptr) - 1 <= 4 * u.ctas


@pytest.mark.parametrize("passes,kernel,problem,blocks,moved", [
    ("forward", None, P(seq_len=4096, head_dim=64, heads=2), None, True),
    ("forward", "flash-attn-2", P(seq_len=4000, head_dim=96, heads=3), None, True),                 # ragged
    ("backward", "flash-attn-2", P(seq_len=2048, head_dim=64, heads=2), None, True),
    ("forward", None, P(seq_len=2400, head_dim=64, heads=2), (96, 64), False),   # 96-row blocks: windows cut unevenly
])
def test_thread_blocks_in_lockstep_are_moved_from_the_first(monkeypatch, passes, kernel, problem, blocks, moved):
    """Thread blocks in lockstep differ only in where their own accesses sit: their intervals
    are the first block's, moved, where a member moves every access alike (else made block by
    block); either way every step is the expanded program's."""
    from iosim.models.cache import uniform as module
    setup = prepare("h200", "fa2", problem, blocks=blocks or (None, None), options=Options(kernel=kernel, cache=True),
                    passes=passes)
    calls = []
    original = module._program
    monkeypatch.setattr(module, "_program", lambda *a: calls.append(a[1]) or original(*a))
    for launch in setup.launches:
        requests = list(count_launch(setup.profile, launch, setup.options, setup.sram_bytes, "count", None,
                                     record=True).requests)
        calls.clear()
        ctas = module.uniform_programs(requests, 64)
        made = sum(1 for depth in calls if depth == requests[0].cta_levels)
        if max(u.ctas for u in ctas.values()) > 8:                 # the element-wise kernels: one group of many
            assert (made < sum(u.ctas for u in ctas.values()) / 2) == moved, launch
        _same_programs(requests)

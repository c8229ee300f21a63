"""Residency by identity, continued: read-only inputs, and the built-in schedules unchanged
and counting the same in every mode (count mode's grouping of iterations must not change
what trace and numeric mode count). See test_residency_identity.py for the cheats.
"""

import numpy as np
import pytest

from iosim import Options, Problem, ScheduleError, simulate
from iosim.workload.inputs import random_inputs

HW = "fa-paper-a100"
MODES = ("count", "trace", "numeric")
SMALL = Problem(seq_len=256, head_dim=32)


def run(schedule, mode, problem=SMALL, **options):
    return simulate(HW, schedule, problem, blocks=(64, 64), mode=mode, options=Options(**options))


# -- inputs are read-only ------------------------------------------------------------------

def zero_the_inputs(ctx):
    ctx.init("Q", 0.0)
    ctx.init("V", 0.0)
    ctx.init("O", 0.0)


def store_into_v(ctx):
    for j in ctx.kv_blocks():
        ctx.store("V", j, ctx.load("V", j) * 0.0)


def write_k(ctx):
    ctx.write("K", ctx.read("K") * 0.0)


@pytest.mark.parametrize("schedule,call", [(zero_the_inputs, r"ctx.init\('Q', …\)"),
                                           (store_into_v, r"ctx.store\('V', …\)"),
                                           (write_k, r"ctx.write\('K', …\)")])
def test_writing_an_input_raises_and_leaves_the_callers_arrays(schedule, call):
    """ScheduleError in every mode; in numeric mode the caller's arrays are untouched."""
    inputs = random_inputs(SMALL, 0)
    before = {k: v.copy() for k, v in inputs.items()}
    for mode in MODES:
        with pytest.raises(ScheduleError, match=call + r": \w+ is an input of this run"):
            simulate(HW, schedule, SMALL, blocks=(64, 64), mode=mode, inputs=inputs if mode == "numeric" else None)
    for name, array in inputs.items():
        assert np.array_equal(array, before[name]), f"{name} was written"


def test_a_backward_pass_reads_the_forward_outputs_it_is_given():
    """O and L given to a backward-only run are its inputs: read as given, never written."""
    forward = simulate(HW, "fa2", SMALL, blocks=(64, 64), mode="numeric", inputs=random_inputs(SMALL, 0, True))
    inputs = {**random_inputs(SMALL, 0, True), "O": forward.outputs["O"] + 1.0, "L": forward.outputs["L"]}
    before = {k: v.copy() for k, v in inputs.items()}
    given = simulate(HW, "fa2", SMALL, blocks=(64, 64), passes="backward", mode="numeric", inputs=inputs)
    for name, array in inputs.items():
        assert np.array_equal(array, before[name]), f"{name} was written"
    computed = simulate(HW, "fa2", SMALL, blocks=(64, 64), passes="backward", mode="numeric",
                        inputs=random_inputs(SMALL, 0, True))
    # D = rowsum(dO ∘ O) used the O given (shifted by 1), not a recomputed one
    assert not np.allclose(given.outputs["D"], computed.outputs["D"])

    def clear_o(ctx):
        for i in ctx.q_blocks():
            ctx.store("O", i, ctx.load("O", i) * 0.0)

    with pytest.raises(ScheduleError, match=r"ctx.store\('O', …\): O is an input of this run \(given in inputs\)"):
        simulate(HW, clear_o, SMALL, blocks=(64, 64), mode="numeric", inputs=inputs)
    assert np.array_equal(inputs["O"], before["O"])


# -- the built-ins: unchanged, and the same in every mode ---------------------------------------

BUILTINS = [
    ("fa2", "forward+backward", Problem(seq_len=333, head_dim=16, causal=True, batch=2, heads=4, kv_heads=2), {}),
    ("fa1", "forward+backward", Problem(seq_len=333, head_dim=16, causal=True), {}),
    ("standard", "forward+backward", Problem(seq_len=200, head_dim=16), {}),
    ("standard", "forward", Problem(seq_len=200, head_dim=16, causal=True), {"gemm": "tiled"}),
    ("fa2", "backward", Problem(seq_len=300, head_dim=16), {"dq_read_twice": True}),
    ("fa2", "forward", Problem(seq_len=320, head_dim=16), {"block_mask": "local:2"}),
    ("fa2-splitkv", "forward", Problem(seq_len_q=3, seq_len_kv=700, head_dim=32, heads=4, kv_heads=2),
     {"num_splits": 5}),
    ("fa2-splitkv", "forward", Problem(seq_len_q=5, seq_len_kv=700, head_dim=32, causal=True), {"num_splits": 3}),
]


@pytest.mark.parametrize("algorithm,passes,problem,options", BUILTINS)
def test_builtins_count_the_same_in_every_mode(algorithm, passes, problem, options):
    """A guard, not a cheat: it passes before and after. The grouping of count mode (a
    group runs as its first member, then the rest) leaves traffic, operations, the
    on-chip peaks and the tiles at the peak exactly as trace and numeric mode count them."""
    runs = [simulate(HW, algorithm, problem, passes=passes, blocks=(32, 64), mode=mode, options=Options(**options))
            for mode in MODES]
    for other in runs[1:]:
        assert other.tensors == runs[0].tensors and other.kernels == runs[0].kernels
        assert other.ops == runs[0].ops and other.kernel_ops == runs[0].kernel_ops
        assert other.sram == runs[0].sram and other.registers == runs[0].registers


def test_kernel_preset_counts_and_times_the_same_in_every_mode():
    problem = Problem(seq_len=700, head_dim=64, causal=True, heads=4, kv_heads=2)
    runs = [simulate("h100-sxm", "fa2", problem, passes="forward+backward", mode=mode,
                     options=Options(kernel="flash-attn-2")) for mode in MODES]
    for other in runs[1:]:
        assert other.tensors == runs[0].tensors and other.ops == runs[0].ops
        assert other.sram == runs[0].sram and other.registers == runs[0].registers
        assert other.time == runs[0].time


def test_split_kv_combine_holds_every_splits_lse():
    """The combine kernel holds the LSE of every split at once (flash-attn's sLSE): each is
    charged, under its own name, while the Oaccum tiles pass through one place."""
    problem = Problem(seq_len_q=1, seq_len_kv=8192, head_dim=128, heads=32, kv_heads=8)
    r = simulate("h100-sxm", "fa2-splitkv", problem, blocks=(64, 128), options=Options(num_splits=7))
    names = [name for name, _, _ in r.registers.peak_tiles]
    assert names == [f"LSEaccum_i,s={s}" for s in range(7)] + ["sum_i", "L_i", "O_i", "Oaccum_i"]
    assert r.registers.peak_bytes == 4 * (7 * 4 + 4 + 4 + 2 * 4 * 128)



def test_the_second_of_a_pair_of_visible_blocks_is_a_single_block_in_count_mode():
    """A group of two visible blocks runs as its first and its second member, each one block
    with its own mask: a loop visible to the second runs in count mode as in trace mode."""
    def nested_visibility(ctx):
        for i in ctx.q_blocks():
            for j in ctx.kv_blocks(visible_to=i):         # i = 1 sees j = 0, 1: a group of two
                for i2 in ctx.q_blocks(visible_to=j):
                    ctx.load("Q", i2)

    causal = Problem(seq_len=64, head_dim=32, causal=True)
    counts = {mode: simulate(HW, nested_visibility, causal, blocks=(32, 32), mode=mode).hbm.total_bytes
              for mode in MODES}
    assert counts == {mode: 5 * 32 * 32 * 2 for mode in MODES}    # Q_0, Q_1; Q_0, Q_1; Q_1

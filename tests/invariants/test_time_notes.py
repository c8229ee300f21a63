"""Where the kernel time model is known to part from the measured time, the launch says so
(``options.launches[].time_note``)."""

import pytest

from iosim import Options, Problem, load_profile, simulate


@pytest.mark.parametrize("n,d,causal,noted", [(1023, 64, True, True), (1024, 64, True, False), (1000, 40, True, True),
                                             (1024, 40, True, True), (1000, 40, False, False), (5000, 64, True, False),
                                             (1000, 256, True, False)])
def test_short_uneven_causal_forwards_say_their_time_is_not_exact(n, d, causal, noted):
    """docs/validation/2026-12-04-even-mn.md, "Session 24": the uneven instantiation (N off the
    tile, or d off the kernel sizes) waits for instruction fetch on short causal forwards; the
    only instantiation above kHeadDim 128 is the one the time model was measured on."""
    from iosim.report.tables import result_table
    r = simulate(load_profile("h200"), "fa2", Problem(seq_len=n, head_dim=d, batch=32, heads=32, causal=causal),
                 passes="forward+backward", options=Options(kernel="flash-attn-2"))
    forward, backward = r.options["launches"]
    assert ("time_note" in forward) == noted and "time_note" not in backward
    assert ("note, forward: not exact: this causal forward runs" in result_table(r)) == noted


@pytest.mark.parametrize("n_q,d,noted", [(1, 64, True), (96, 40, True), (1, 72, True), (129, 64, False),
                                         (1, 128, False), (1, 256, False)])
def test_single_query_block_backwards_say_their_time_is_not_exact(n_q, d, noted):
    """docs/validation/2026-12-04-red-contention.md: a decode backward at kHeadDim <= 96 takes
    1.02-1.41 x the model's time; one over several query blocks, or at d >= 112, is within 10 %."""
    r = simulate(load_profile("h200"), "fa2", Problem(seq_len_q=n_q, seq_len_kv=4096, head_dim=d, batch=4, heads=16),
                 passes="forward+backward", options=Options(kernel="flash-attn-2"))
    backward = r.options["launches"][-1]
    assert backward["pass"] == "backward" and ("time_note" in backward) == noted

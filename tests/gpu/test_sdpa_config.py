"""iosim.gpu.sdpa.problem_of: a measured config's Problem, whichever lengths the config names."""

from iosim.gpu.sdpa import problem_of

BASE = dict(head_dim=72, batch=3, heads=8, causal=False)


def test_square_lengths_from_seq_len():
    p = problem_of(dict(BASE, seq_len=1000))
    assert (p.seq_len_q, p.seq_len_kv, p.kv_heads, p.dtype) == (1000, 1000, 8, "fp16")


def test_unequal_lengths_need_no_seq_len():
    """A config that names only N_q and N_kv (as a script writes one) is read, not refused with a KeyError."""
    p = problem_of(dict(BASE, seq_len_q=7, seq_len_kv=900, kv_heads=2, dtype="bf16"))
    assert (p.seq_len_q, p.seq_len_kv, p.kv_heads, p.dtype) == (7, 900, 2, "bf16")


def test_named_lengths_win_over_seq_len():
    p = problem_of(dict(BASE, seq_len=7, seq_len_kv=900))
    assert (p.seq_len_q, p.seq_len_kv) == (7, 900)

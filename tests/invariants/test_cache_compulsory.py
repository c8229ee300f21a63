"""The L2 model never reports fewer DRAM reads than the compulsory first touch: with a cold
cache, every byte of Q, K and V is read from DRAM at least once, whatever the tiles (ragged
ones included: a block size that is not a multiple of the model's 64-row chunk once let a
partial chunk hit on rows another tile had brought in, 0.90× compulsory at B_c = 227)."""

import pytest

from iosim import Options, Problem, list_profiles, load_profile, simulate

CACHED = [name for name in list_profiles() if load_profile(name).cache is not None]


@pytest.mark.parametrize("hw", CACHED)
@pytest.mark.parametrize("algorithm", ["standard", "fa1", "fa2"])
@pytest.mark.parametrize("blocks", [(128, 227), (100, 37)])
def test_dram_reads_at_least_first_touch(hw, algorithm, blocks):
    p = Problem(seq_len_q=333, seq_len_kv=500, head_dim=32, heads=2, kv_heads=1, causal=algorithm == "fa2")
    r = simulate(hw, algorithm, p, blocks=blocks, options=Options(cache=True, sram_bytes=1 << 22))
    first_touch = (p.heads_total * p.seq_len_q + 2 * p.kv_heads_total * p.seq_len_kv) * p.head_dim * p.width
    assert r.cache.total.dram_read_bytes >= first_touch


def test_the_readme_shape_reads_exactly_q_k_v_once():
    # h100-sxm's paper rule gives B_c = 227; with a cold cache and everything fitting in
    # the L2, DRAM reads are Q + K + V exactly (was 5,676,032 B, 0.90× of that)
    r = simulate("h100-sxm", "fa2", Problem(seq_len=8192, head_dim=128), options=Options(cache=True))
    assert r.blocks.block_kv == 227
    assert r.cache.total.dram_read_bytes == 3 * 8192 * 128 * 2


@pytest.mark.parametrize("hw,n", [("toy", 256), ("toy", 4096), ("h200", 2048)])
def test_every_written_byte_is_written_back_or_left_dirty(hw, n):
    # FA2's forward writes each chunk of O and L once: what reaches DRAM during the kernel
    # plus what is still dirty in the L2 at its end is exactly what the kernel wrote
    # (the toy's 4096 overflows its L2, so part is written back during the kernel)
    r = simulate(hw, "fa2", Problem(seq_len=n, head_dim=32, heads=4), options=Options(cache=True))
    s = r.cache.total
    assert s.dram_write_bytes + s.dirty_bytes_left == r.hbm.write_bytes
    if n == 4096:
        assert s.dram_write_bytes > 0 and s.dirty_bytes_left > 0
    d = r.to_dict()["dram"]
    assert (d["write_bytes"], d["dirty_bytes_left"]) == (s.dram_write_bytes, s.dirty_bytes_left)

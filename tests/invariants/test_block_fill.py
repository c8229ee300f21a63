"""A forward launch's first-wave fill and last-wave drain (iosim.models.block_fill)."""

import pytest

from iosim import Options, Problem, load_profile, simulate
from iosim.models.kernel_time import FILL, KernelRates


def _run(profile, passes="forward", **problem):
    return simulate(load_profile(profile), "fa2", Problem(**problem), passes=passes,
                    options=Options(kernel="flash-attn-2", cache=True))


def test_fill_and_drain_from_the_first_and_last_waves_bytes():
    # 264 one-block heads (d = 128: 128 × 64 tiles, two blocks an SM): one wave, every Q, K_0, V_0 distinct
    r = _run("h200", seq_len=1024, seq_len_q=128, seq_len_kv=1024, head_dim=128, heads=264)
    t = r.kernel_times["main"]
    rates = KernelRates.from_profile(load_profile("h200"), "fp16")
    q, kv = 2 * 128 * 128, 2 * 2 * 64 * 128                       # bytes of Q_i; of K_0 and V_0
    fill = max(264 * (q + kv) / rates.dram_bytes, 264 * (q + kv) / rates.l2_bytes)
    drain = 264 * 128 * (2 * 128 + 4) / rates.dram_write_bytes    # O_i and its LSE
    assert t.per_resource_s[FILL] == pytest.approx(rates.read_write_s - rates.launch_s + fill + drain, rel=1e-12)
    memory = max(t.per_resource_s["L2"], t.per_resource_s["DRAM"])
    compute = sum(t.per_resource_s[k] for k in ("tensor cores", "shared memory", "exp", "fp32"))
    # the fill stalls the SMs; its bytes are already in the memory times
    assert t.predicted_s == pytest.approx(t.per_resource_s["launch"] + max(compute + t.per_resource_s[FILL], memory))


def test_fill_counts_a_heads_first_tiles_once_and_one_wave_of_blocks():
    # 64 query blocks a head, 16 heads: the first wave is 264 blocks of 5 heads; K_0, V_0 from DRAM once a head
    r = _run("h200", seq_len=8192, head_dim=128, heads=16)
    rates = KernelRates.from_profile(load_profile("h200"), "fp16")
    q, kv = 2 * 128 * 128, 2 * 2 * 64 * 128
    dram = 264 * q + 5 * kv
    fill = max(dram / rates.dram_bytes, 264 * (q + kv) / rates.l2_bytes)
    drain = 264 * 128 * (2 * 128 + 4) / rates.dram_write_bytes
    got = r.kernel_times["main"].per_resource_s[FILL]
    assert got == pytest.approx(rates.read_write_s - rates.launch_s + fill + drain, rel=1e-12)


def test_only_forward_attention_kernels_on_measured_profiles_fill():
    r = _run("h200", seq_len=2048, head_dim=64, heads=8, passes="forward+backward")
    assert FILL in r.kernel_times["main"].per_resource_s
    for kernel in ("dot_do_o", "dq_dk_dv", "convert_dq"):
        assert FILL not in r.kernel_times[kernel].per_resource_s, kernel
    decode = _run("h200", seq_len=8192, seq_len_q=1, seq_len_kv=8192, head_dim=128, heads=32, kv_heads=8)
    assert FILL in decode.kernel_times["splitkv"].per_resource_s        # one query row: its Q is one row
    assert FILL not in decode.kernel_times["combine"].per_resource_s    # no score tiles
    h100 = _run("h100-sxm", seq_len=2048, head_dim=64, heads=8)         # vendor peaks: no measured floor
    assert FILL not in h100.kernel_times["main"].per_resource_s


def test_element_wise_kernels_move_their_bytes_at_the_copy_rate():
    """dot_do_o, convert_dq and the split-KV combine load tiles and store what they make of
    them: at least their requested bytes at the measured copy kernel's rate, even where the
    L2 keeps the writes; the kernels with matrix products are not bound by it."""
    from iosim.models.kernel_time import COPY

    r = _run("h200", seq_len=4096, head_dim=128, heads=16, passes="forward+backward")
    rates = KernelRates.from_profile(load_profile("h200"), "fp16")
    assert rates.copy_bytes == pytest.approx(4.30e12)
    for kernel in ("dot_do_o", "convert_dq"):
        t = r.kernel_times[kernel]
        requested = sum(rd + wr for rd, wr in r.kernel_bytes(kernel).values())
        assert t.per_resource_s[COPY] == requested / rates.copy_bytes
        assert t.bound == COPY and t.predicted_s == rates.read_write_s + requested / rates.copy_bytes
    for kernel in ("main", "dq_dk_dv"):
        assert COPY not in r.kernel_times[kernel].per_resource_s
    h100 = _run("h100-sxm", seq_len=4096, head_dim=128, heads=16, passes="forward+backward")
    assert COPY not in h100.kernel_times["dot_do_o"].per_resource_s     # no measured copy rate there


def test_a_block_alone_on_its_sm_waits_for_its_own_first_tiles_and_last_stores():
    """The backward kernels hold one block an SM (8 warps of 255 registers): every block
    pays its first loads' round trip and bytes and its last stores' bytes at the SM's share
    of the DRAM rates — a step of its own in the block's time, not a launch term."""
    from iosim.models.kernel_time import BLOCK_WAIT

    r = _run("h200", seq_len=4096, seq_len_q=1, seq_len_kv=4096, head_dim=128, heads=32, passes="forward+backward")
    rates = KernelRates.from_profile(load_profile("h200"), "fp16")
    t = r.kernel_times["dq_dk_dv"]
    assert FILL not in t.per_resource_s and BLOCK_WAIT in t.per_resource_s
    # a key block of 128 rows, one query row: Q_i, dO_i (1 row), K_j, V_j (128 rows), L_i and D_i in; dK_j, dV_j out
    first, last = 2 * 128 * 2 * (1 + 128) + 2 * 4 * 1, 2 * 2 * 128 * 128
    sm = rates.sm_count
    wait = (rates.read_write_s - rates.launch_s) + first * sm / rates.dram_bytes + last * sm / rates.dram_write_bytes
    blocks = 32 * 4096 // 128                                    # one a key block of each head, one an SM at a time
    assert t.per_resource_s[BLOCK_WAIT] == pytest.approx(wait * -(-blocks // sm), rel=1e-9)
    # the 4-warp (split-KV) forward, two blocks an SM, has its launch's fill and drain instead
    assert BLOCK_WAIT not in r.kernel_times["splitkv"].per_resource_s and FILL in r.kernel_times["splitkv"].per_resource_s
    d192 = _run("h200", seq_len=2048, head_dim=192, heads=8)     # the 8-warp forward: one block an SM
    assert BLOCK_WAIT in d192.kernel_times["main"].per_resource_s and FILL not in d192.kernel_times["main"].per_resource_s


def test_fills_are_flash_attn_2s_and_a_lone_blocks_wait_is_not_overlapped():
    """FlashAttention-3 (warp-specialised, TMA) loads its tiles otherwise: neither term. A
    short query block as wide as d takes its tiles from S (not dV's equal-K product); the
    8-warp kernel's factor scales its steps, not its wait."""
    from iosim.models.kernel_time import BLOCK_WAIT

    fa3 = simulate(load_profile("h200"), "fa2", Problem(seq_len=4096, head_dim=128, heads=8),
                   options=Options(kernel="flash-attn-3", cache=True)).kernel_times["main"].per_resource_s
    assert FILL not in fa3 and BLOCK_WAIT not in fa3
    rates = KernelRates.from_profile(load_profile("h200"), "fp16")
    short = _run("h200", seq_len=2048, seq_len_q=64, seq_len_kv=2048, head_dim=64, heads=8, passes="backward")
    per = short.kernel_times["dq_dk_dv"].per_resource_s
    first, last = 2 * 64 * 2 * (64 + 128) + 2 * 4 * 64, 2 * 2 * 64 * 128     # B_r = 64 query rows, B_c = 128 keys
    sm = rates.sm_count
    wait = (rates.read_write_s - rates.launch_s) + first * sm / rates.dram_bytes + last * sm / rates.dram_write_bytes
    assert per[BLOCK_WAIT] == pytest.approx(wait, rel=1e-9)        # 16 key blocks × 8 heads: one block an SM
    assert per["launch"] == rates.read_write_s                   # the last stores' completion: the floor's
    # the 8-warp d = 192 forward, 128 equal blocks (one an SM): Q_i, K_0, V_0 in after two round trips, O_i out
    d192 = _run("h200", seq_len=2048, head_dim=192, heads=8).kernel_times["main"].per_resource_s
    first, last = 2 * 192 * (128 + 2 * 64), 128 * (2 * 192 + 4)
    wait = 2 * (rates.read_write_s - rates.launch_s) + first * sm / rates.dram_bytes + last * sm / rates.dram_write_bytes
    assert d192[BLOCK_WAIT] == pytest.approx(wait, rel=1e-9)       # not scaled by the warps' overlap factor


def test_split_kv_blocks_of_one_split_share_its_first_tiles_where_the_mask_is_dense():
    # N = 2,048, one head, d = 64: 32 query blocks of 64 rows × 8 splits of one 256-key block, 256
    # blocks in one wave, split after split (grid(num_m_block, num_splits, b·h)). Dense: the
    # 32 query blocks of a split start at its key block, so K_0, V_0 come from DRAM once a split;
    # causal: counted once a block (their first key blocks differ along the diagonal)
    rates = KernelRates.from_profile(load_profile("h200"), "fp16")
    q, kv, out = 2 * 64 * 64, 2 * 2 * 256 * 64, 64 * (4 * 64 + 4)     # Q_i; K_0, V_0; fp32 O_i and LSE
    for causal, tiles in ((False, 8), (True, 256)):
        r = _run("h200", seq_len=2048, head_dim=64, heads=1, causal=causal)
        fill = max((256 * q + tiles * kv) / rates.dram_bytes, 256 * (q + kv) / rates.l2_bytes)
        want = rates.read_write_s - rates.launch_s + fill + 256 * out / rates.dram_write_bytes
        assert r.kernel_times["splitkv"].per_resource_s[FILL] == pytest.approx(want, rel=1e-12), causal

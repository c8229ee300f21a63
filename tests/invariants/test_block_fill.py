"""A forward launch's first-wave fill and last-wave drain (iosim.models.block_fill)."""

import pytest

from iosim import BlockSizes, Options, Problem, load_profile, simulate
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
    h100 = _run("h100-pcie", seq_len=2048, head_dim=64, heads=8)         # vendor peaks: no measured floor
    assert FILL not in h100.kernel_times["main"].per_resource_s


def test_element_wise_kernels_move_their_bytes_at_the_copy_rate():
    """dot_do_o, convert_dq and the split-KV combine load tiles and store what they make of
    them: at least their requested bytes at the measured copy kernel's rate, even where the
    L2 keeps the writes; the kernels with matrix products are not bound by it. On the H200
    convert_dq's floor is its lone block's measured duration (iosim.models.elementwise_time)."""
    from iosim.kernels.elementwise_chains import CONVERT_DQ_S
    from iosim.models.kernel_time import COPY

    r = _run("h200", seq_len=4096, head_dim=128, heads=16, passes="forward+backward")
    rates = KernelRates.from_profile(load_profile("h200"), "fp16")
    assert rates.copy_bytes == pytest.approx(4.30e12)
    for kernel in ("dot_do_o", "convert_dq"):
        t = r.kernel_times[kernel]
        requested = sum(rd + wr for rd, wr in r.kernel_bytes(kernel).values())
        assert t.per_resource_s[COPY] == requested / rates.copy_bytes
        floor = CONVERT_DQ_S[128] if kernel == "convert_dq" else rates.read_write_s
        assert t.bound == COPY and t.predicted_s == pytest.approx(floor + requested / rates.copy_bytes, rel=1e-12)
    for kernel in ("main", "dq_dk_dv"):
        assert COPY not in r.kernel_times[kernel].per_resource_s
    h100 = _run("h100-pcie", seq_len=4096, head_dim=128, heads=16, passes="forward+backward")
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
    # the 8-warp d = 192 forward, 128 equal blocks (one an SM): Q_i, K_0, V_0 in after two round trips, O_i out.
    # Its 16 query blocks a head share the head's first key block: a block's own DRAM bytes are Q_i and a
    # 16th of (K_0, V_0), and all its tiles come through the L2 (whichever share takes longer)
    d192 = _run("h200", seq_len=2048, head_dim=192, heads=8).kernel_times["main"].per_resource_s
    q, kv, last = 2 * 192 * 128, 2 * 192 * 2 * 64, 128 * (2 * 192 + 4)
    first = max((q + kv / 16) * sm / rates.dram_bytes, (q + kv) * sm / rates.l2_bytes)
    wait = 2 * (rates.read_write_s - rates.launch_s) + first + last * sm / rates.dram_write_bytes
    assert d192[BLOCK_WAIT] == pytest.approx(wait, rel=1e-9)       # not scaled by the warps' overlap factor
    # one query block a head (132 heads, one wave: the block-cost measurement's shape): every tile its own, from DRAM
    one = _run("h200", seq_len=1024, seq_len_q=128, seq_len_kv=1024, head_dim=192, heads=132)
    wait = 2 * (rates.read_write_s - rates.launch_s) + (q + kv) * sm / rates.dram_bytes + last * sm / \
        rates.dram_write_bytes
    assert one.kernel_times["main"].per_resource_s[BLOCK_WAIT] == pytest.approx(wait, rel=1e-9)


def test_split_kv_first_wave_loads_each_distinct_tile_from_dram_once():
    # N = 2,048, one head, d = 64: 32 query blocks of 64 rows × 8 splits of one 256-key block, 256
    # blocks in one wave, query block fastest (grid(num_m_block, num_splits, b·h)). The 8 splits
    # of a query block load the same Q_i: 32 distinct. Dense: the 32 query blocks of a split
    # start at its key block, 8 distinct (K_0, V_0) pairs, and all 256 blocks load. Causal: block
    # (i, s) has a visible key iff 256·s ≤ 64·i + 63, i ≥ 4·s: Σ_s (32 − 4·s) = 144 blocks load
    # (the others write zeros and exit); each split's one key block is its first: 8 pairs.
    # Either way some SM runs two loading blocks (256 or 144 over 132 SMs), and each SM takes
    # 1/132 of the L2's rate: its two blocks' tiles arrive as 264 blocks' would.
    rates = KernelRates.from_profile(load_profile("h200"), "fp16")
    q, kv, out = 2 * 64 * 64, 2 * 2 * 256 * 64, 64 * (4 * 64 + 4)     # Q_i; K_0, V_0; fp32 O_i and LSE
    for causal in (False, True):
        r = _run("h200", seq_len=2048, head_dim=64, heads=1, causal=causal)
        fill = max((32 * q + 8 * kv) / rates.dram_bytes, 2 * 132 * (q + kv) / rates.l2_bytes)
        want = rates.read_write_s - rates.launch_s + fill + 256 * out / rates.dram_write_bytes
        assert r.kernel_times["splitkv"].per_resource_s[FILL] == pytest.approx(want, rel=1e-12), causal


def test_a_causal_forwards_fill_counts_a_pair_a_head_though_its_blocks_start_at_their_diagonal():
    # d = 128: 128 × 64 tiles (checked), 64 query blocks a head; block i's first key block is its
    # last active one, 2·i + 1: the 264 blocks of the first wave (heads 0–3 and 8 of head 4) load
    # 264 distinct (K, V) pairs. The fill counts 5, one a head, as for a dense mask (counting the
    # 264 was tried and not adopted: docs/validation/2026-12-04-code.md)
    from iosim.engine.blocks import BlockMask
    from iosim.models.block_fill import FirstWave, ForwardGrid, first_wave

    r = _run("h200", seq_len=8192, head_dim=128, heads=16, causal=True)
    (launch,) = r.options["launches"]
    assert (launch["block_q"], launch["block_kv"]) == (128, 64)
    mask = BlockMask(Problem(seq_len=8192, head_dim=128, causal=True), BlockSizes(128, 64))
    assert first_wave(ForwardGrid(mask, 16, lambda h: h), 264) == FirstWave(264, 264, 264, 5)
    rates = KernelRates.from_profile(load_profile("h200"), "fp16")
    q, kv = 2 * 128 * 128, 2 * 2 * 64 * 128
    fill = max((264 * q + 5 * kv) / rates.dram_bytes, 264 * (q + kv) / rates.l2_bytes)
    drain = 264 * 128 * (2 * 128 + 4) / rates.dram_write_bytes
    got = r.kernel_times["main"].per_resource_s[FILL]
    assert got == pytest.approx(rates.read_write_s - rates.launch_s + fill + drain, rel=1e-12)


def test_first_wave_by_the_kernels_launch_rules():
    from iosim.engine.blocks import BlockMask
    from iosim.models.block_fill import FirstWave, ForwardGrid, first_wave

    def mask(nq, nk, causal, bq=64, bk=64):
        return BlockMask(Problem(seq_len=nk, seq_len_q=nq, seq_len_kv=nk, head_dim=64, causal=causal),
                         BlockSizes(bq, bk))
    dense = mask(512, 512, False)                                   # 8 × 8 blocks a head
    # GQA, 4 query heads a K/V head, next to each other in launch order: one (K_0, V_0) per K/V head
    assert first_wave(ForwardGrid(dense, 8, lambda h: h // 4), 20) == FirstWave(20, 20, 1, 3)
    assert first_wave(ForwardGrid(dense, 8, lambda h: h // 4), 1000) == FirstWave(64, 64, 2, 8)
    causal = mask(512, 512, True)                                   # block i starts at key block i
    assert first_wave(ForwardGrid(causal, 2, lambda h: h), 1000) == FirstWave(16, 16, 16, 2)
    # bottom-right alignment, N_kv = 1,024: block i's last key block is i + 8
    assert first_wave(ForwardGrid(mask(512, 1024, True), 1, lambda h: h), 1000) == FirstWave(8, 8, 8, 1)
    # 3 splits of ⌈8/3⌉ = 3 key blocks (the last has 2), causal: split s loads for i ≥ 3·s, and
    # block i starts at min(i, its split's last block): split 0 at 0, 1, 2, 2, …; split 1 at
    # 3, 4, 5, 5, 5; split 2 at 6, 7
    split = first_wave(ForwardGrid(causal, 1, lambda h: h, num_splits=3), 1000)
    assert split == FirstWave(8 + 5 + 2, 8, 3 + 3 + 2, 1)
    assert first_wave(ForwardGrid(causal, 1, lambda h: h, num_splits=3), 10) == FirstWave(10, 8, 5, 1)


def test_the_busiest_sm_waits_for_all_its_loading_blocks_tiles():
    # 8 heads of 16 query blocks (N = 2,048, d = 128: 128 × 64 tiles), 128 blocks on 132 SMs: one
    # each, so the L2 delivers 132 blocks' worth at the rate 128 would take; at 24 heads, 384
    # blocks fill the 264 slots, two an SM (heads 0-15 and half of head 16: 17 K_0, V_0 pairs)
    rates = KernelRates.from_profile(load_profile("h200"), "fp16")
    q, kv = 2 * 128 * 128, 2 * 2 * 64 * 128
    for heads, busiest, blocks, pairs in ((8, 1, 128, 8), (24, 2, 264, 17)):
        r = _run("h200", seq_len=2048, head_dim=128, heads=heads)
        fill = max((blocks * q + pairs * kv) / rates.dram_bytes, busiest * 132 * (q + kv) / rates.l2_bytes)
        drain = blocks * 128 * (2 * 128 + 4) / rates.dram_write_bytes
        got = r.kernel_times["main"].per_resource_s[FILL]
        assert got == pytest.approx(rates.read_write_s - rates.launch_s + fill + drain, rel=1e-12), heads

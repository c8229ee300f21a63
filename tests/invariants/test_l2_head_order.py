"""flash-attn 2 launches its grids as (blocks, batch, heads), the batch dimension faster, so
the query heads of one GQA group are B heads apart in launch order (docs/cache.md, "Launch
order"). The L2 model plays heads in that order for the flash-attn-2 preset's kernels."""

import dataclasses

from iosim import Options, Problem, load_profile, simulate
from iosim.run.head_order import head_order as _head_order


def test_launch_order_maps_to_batch_then_head():
    p = Problem(seq_len=64, head_dim=16, batch=3, heads=4, kv_heads=2)
    kv_of_q, leads, group = _head_order(p, batch_fastest=True)
    # launch order l = h·B + b; head h of batch b reads K/V head b·H_k + h // 2
    assert [int(kv_of_q(ell)) for ell in range(12)] == [0, 2, 4, 0, 2, 4, 1, 3, 5, 1, 3, 5]
    assert [leads(ell) for ell in range(12)] == [True] * 3 + [False] * 3 + [True] * 3 + [False] * 3
    assert group == 6
    kv_of_q, leads, group = _head_order(p, batch_fastest=False)
    assert [int(kv_of_q(h)) for h in range(12)] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5] and group == 2


def _one_lru(name: str):
    """Profile ``name`` with its L2 as one LRU of the same size (no partitions, no sets)."""
    profile = load_profile(name)
    l2 = profile.cache
    return dataclasses.replace(profile, levels={**profile.levels,
                                                l2.name: dataclasses.replace(l2, partitions=1, ways=None)})


def _dq_dk_dv_dram(batch, heads, kv_heads, hw="h200"):
    problem = Problem(seq_len_q=1, seq_len_kv=30000, head_dim=160, batch=batch, heads=heads, kv_heads=kv_heads)
    r = simulate(hw, "fa2", problem, passes="backward", options=Options(kernel="flash-attn-2", cache=True))
    return r.cache.kernels["dq_dk_dv"].dram_read_bytes


def test_a_gqa_decode_backward_rereads_k_and_v_per_query_head_when_batches_come_between():
    """d = 160 (the 192 kernel), N_kv = 30,000: a K/V head's K and V are 19.2 MB. With B = 2
    the next query head of the group starts after another batch's head has read its own K, V
    and written its dK, dV (more than the 50 MB L2 holds with them), so each of the 16 query
    heads reads K and V from DRAM: the H200 measured 308,041,472 B
    (docs/validation/2026-12-02-final-check). With B = 1 the group's heads run together: one
    50 MB LRU (the H100's L2 as one partition) reads them once a K/V head. (The H200's
    two partitions hold K and V near the SMs that read them, and the next query head's
    blocks land on other SMs: its model reads them about as often as with B = 2.)"""
    kv_bytes = 2 * 30000 * 160 * 2
    measured = 308_041_472
    assert abs(_dq_dk_dv_dram(2, 8, 2) - measured) <= 0.01 * measured
    lru = _one_lru("h100-sxm")
    assert _dq_dk_dv_dram(2, 8, 2, lru) >= 16 * kv_bytes
    assert _dq_dk_dv_dram(1, 16, 4, lru) <= 1.1 * 4 * kv_bytes


def test_the_backward_walks_its_query_blocks_down_and_counts_alike():
    """flash-attn 2's backward (flash_bwd_kernel.h: m_block from m_block_max - 1 down) and the cudnn
    preset walk a key block's query blocks downwards; the counts are the upward walk's."""
    from iosim import Options, Problem, simulate
    from iosim.schedules.fa2_kernel_backward import fa2_kernel_backward
    problem = Problem(seq_len=700, head_dim=64, heads=2, causal=True)
    for kernel in ("flash-attn-2", "cudnn"):
        r = simulate("h200", "fa2", problem, passes="backward", options=Options(kernel=kernel, cache=False))
        assert r.options["launches"][0]["q_descending"] is True
    up, down = (simulate("h200", lambda ctx, d=d: fa2_kernel_backward(ctx, q_descending=d), problem,
                         passes="backward", blocks=(64, 128), options=Options(cache=False)) for d in (False, True))
    assert up.hbm.read_bytes == down.hbm.read_bytes and up.hbm.write_bytes == down.hbm.write_bytes

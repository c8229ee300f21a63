"""The L2 model is asked for the bytes the count moves: with flash-attn 2's kernels, whose
backward pads D and dQaccum to whole blocks of 128 rows, each launch's read requests to the
L2 equal its counted reads, also at a ragged or decode N_q (docs/cache.md, "What the model
assumes"). Before, a request named only the block's real rows, so convert_dq at N_q = 1
asked the L2 for one row of dQaccum a head where it loads 128 (the H200 measured 4,203,264 B
of DRAM reads for 4,194,304 B loaded at d = 48, B = 8, H = 16, N_kv = 15,000; the model said
32,768)."""

import pytest

from iosim import Options, Problem, simulate
from iosim.dtypes import WIDTH_BYTES


def _counted_reads(r, kernel: str) -> int:
    return sum(read * WIDTH_BYTES[r.tensors[name].dtype] for name, (read, _) in r.kernels[kernel].items())


@pytest.mark.parametrize("problem", [
    Problem(seq_len_q=1, seq_len_kv=300, head_dim=40, heads=3, batch=2),             # decode, uneven d
    Problem(seq_len=200, head_dim=64, heads=2, causal=True),                          # ragged N
    Problem(seq_len_q=7, seq_len_kv=777, head_dim=128, heads=4, kv_heads=2),         # GQA
])
def test_each_launch_asks_the_l2_for_what_it_loads(problem):
    r = simulate("h200", "fa2", problem, passes="forward+backward", options=Options(kernel="flash-attn-2", cache=True))
    for kernel, stats in r.cache.kernels.items():
        assert stats.read_bytes == _counted_reads(r, kernel), kernel
    assert r.cache.total.read_bytes == r.hbm.read_bytes


def test_convert_dq_reads_whole_blocks_of_dqaccum_from_dram():
    """A cold L2 (each kernel starts cold, as under the profiler): convert_dq's DRAM reads are
    its 128 rows a head of dQaccum, d rounded to 64 columns, 4 bytes each."""
    problem = Problem(seq_len_q=1, seq_len_kv=1500, head_dim=48, heads=16, batch=2)
    r = simulate("h200", "fa2", problem, passes="backward", options=Options(kernel="flash-attn-2", cache=True))
    code = r.cache.code["convert_dq"]            # its instructions, once (iosim.kernels.flash_code)
    assert r.cache.kernels["convert_dq"].dram_read_bytes == 2 * 16 * 128 * 64 * 4 + code


def test_a_tma_box_past_the_tensor_is_not_asked_for():
    """cuDNN's TMA boxes: rows past N and columns past d are zero-filled on chip, not read
    (the crossbar counts the box; the L2 is asked for the tensor's own bytes)."""
    problem = Problem(seq_len=1000, head_dim=96, heads=2)
    r = simulate("h200", "fa2", problem, options=Options(kernel="cudnn", cache=True))
    stats = r.cache.kernels["main"] if "main" in r.cache.kernels else next(iter(r.cache.kernels.values()))
    assert stats.dram_read_bytes == 3 * 2 * 1000 * 96 * 2        # Q, K, V once each, cold
    assert r.hbm.read_bytes > stats.read_bytes                   # the count's boxes: 1,024 rows x 128 columns

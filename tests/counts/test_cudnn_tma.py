"""iosim.gpu.cudnn_tma: what the crossbar carries beyond the rows of cuDNN's sm90 TMA boxes, against a
count row by row (docs/validation/2026-12-06-cudnn-odd.md)."""

import pytest

from iosim import Problem
from iosim.gpu import cudnn_tma
from iosim.gpu.sectors import sectors


def _row(start: int, row_bytes: int, load: bool) -> int:
    """One row's excess, counted directly: each 128-byte run's sectors, and 16 bytes more a load."""
    carried = sum(32 * int(sectors(start + c, min(128, row_bytes - c))) for c in range(0, row_bytes, 128))
    return carried - row_bytes + (16 if load else 0)


def _fprop_by_rows(p) -> tuple[int, int]:
    rb, tq, tk = p.head_dim * 2, -(-p.seq_len_q // 128), -(-p.seq_len_kv // 128)
    loads = stores = 0
    for h in range(p.batch * p.heads):
        kvh = h // p.group_size
        for i in range(tq):
            for n in range(i * 128, min(p.seq_len_q, i * 128 + 128)):
                loads += _row((h * p.seq_len_q + n) * rb, rb, True)
                stores += _row((h * p.seq_len_q + n) * rb, rb, False)
            for j in range(tk if not p.causal else i + 1):
                for n in range(j * 128, min(p.seq_len_kv, j * 128 + 128)):
                    loads += 2 * _row((kvh * p.seq_len_kv + n) * rb, rb, True)
    return loads, stores


@pytest.mark.parametrize("d, n_q, n_kv, b, h, h_kv, causal", [
    (40, 300, 300, 1, 2, 2, False), (72, 257, 257, 2, 4, 2, True), (152, 130, 390, 1, 3, 1, False),
    (200, 129, 129, 3, 1, 1, True)])
def test_the_fprop_excess_is_the_rows_counted_one_by_one(d, n_q, n_kv, b, h, h_kv, causal):
    p = Problem(head_dim=d, seq_len_q=n_q, seq_len_kv=n_kv, batch=b, heads=h, kv_heads=h_kv, causal=causal)
    assert cudnn_tma.fprop_excess(p) == _fprop_by_rows(p)


def test_rows_of_whole_sectors_add_nothing():
    for d in (32, 48, 64, 112, 128, 256):
        p = Problem(head_dim=d, seq_len_q=1000, seq_len_kv=777, batch=2, heads=4, kv_heads=2, causal=False)
        assert cudnn_tma.fprop_excess(p) == (0, 0)
        assert cudnn_tma.bprop_load_excess(p, 2) == cudnn_tma.dkdv_store_excess(p) == 0


def test_an_80_byte_row_carries_a_sector_and_a_half_more_on_load():
    """d = 40: every row 80 bytes, 3 sectors whether it starts on a sector or 16 bytes in: 16 bytes
    more stored, 32 more loaded."""
    p = Problem(head_dim=40, seq_len_q=128, seq_len_kv=128, batch=1, heads=1, causal=False)
    assert cudnn_tma.fprop_excess(p) == (3 * 128 * 32, 128 * 16)
    assert cudnn_tma.dkdv_store_excess(p) == 2 * 128 * 16

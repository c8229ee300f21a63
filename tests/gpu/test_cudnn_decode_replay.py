"""Replay of the committed measurements of cuDNN's decode forward (no GPU needed): the split rule
read from 300 configs' launch grids (benchmarks/cudnn_splits_probe.py), and the byte formulas of
its two kernels against Nsight Compute on an H200 and an H100 (benchmarks/cudnn_decode_bytes.py;
docs/validation/2026-12-06-cudnn-splits.md)."""

import pathlib

from conftest import load_module

ROOT = pathlib.Path(__file__).resolve().parents[2]
SPLITS = ROOT / "docs" / "validation" / "2026-12-06-cudnn-splits"
probe = load_module("cudnn_splits_probe", ROOT / "benchmarks" / "cudnn_splits_probe.py")
decode = load_module("cudnn_decode_bytes", ROOT / "benchmarks" / "cudnn_decode_bytes.py")


def test_the_split_rule_gives_every_recorded_grid(capsys):
    assert probe.check([str(SPLITS / "sweep.jsonl"), str(SPLITS / "boundary.jsonl")]) == 0
    assert "300 of 300 configs" in capsys.readouterr().out


def test_the_split_rule_at_its_edges():
    splits = probe.splits
    assert [splits(512, 1), splits(513, 1), splits(1000, 1), splits(1023, 1)] == [1, 4, 4, 8]
    assert [splits(16384, p) for p in (4, 5, 33, 66, 67)] == [64, 32, 4, 2, 1]
    # above d = 128 two blocks a split (a half of the head dim each), so two blocks and no reduction at 300 keys
    assert probe.expected(dict(seq_len_kv=300, batch=1, heads=9, kv_heads=9, head_dim=256)) == ([2, 9, 1], None)


def test_the_byte_formulas_give_every_recorded_launch(capsys):
    # grid s30-cudnn-decode on the H200 and on an H100 (20 decode launches, 14 reductions each), grid
    # s41-cudnn-decode on the H100 (12 and 11: d = 32-256, N_kv <= 256, B > 1 with H < 8)
    assert [decode.check(raw)[:2] for raw in decode.RUNS[:3]] == [(34, 0), (34, 0), (23, 0)]


def test_the_formulas_predicted_grid_s41_decode2_at_head_dims_of_sixteens():
    """Committed before the grid ran (predictions-decode2.json): every launch at d = 160-256 exact (11).
    At d = 40 and 120 the reductions are exact since that grid (O's rows in pieces of 128 elements), the
    decode kernels since session 44 (each instruction's run of a row counted as the LSU does; the one-split
    decode's O rows in pieces of 64 bytes, read from this grid's d = 40 and s44-cudnn-odd's d = 72)."""
    raw = decode.RUNS[3]
    assert decode.check(raw, sixteens=True)[:2] == (11, 0)
    assert decode.check(raw) == (18, 0, 8)


def test_at_head_dims_no_multiple_of_16_every_launch_is_the_formulas():
    """Grid s41-cudnn-decode-odd (d = 40-168; 18 decode kernels, 18 reductions): every LSU load and store."""
    launches, misses = decode.check(str(SPLITS / "decode-odd-h100"))[:2]
    assert (launches, misses) == (36, 0)


ODD = ROOT / "docs" / "validation" / "2026-12-06-cudnn-odd"


def test_the_lsu_rule_gives_every_launch_of_the_cp_async_probe():
    """benchmarks/ldgsts_zfill_probe.py on an H100: 4 rows × 8 pieces of 16 bytes a warp instruction, rows
    80-240 bytes apart, zero-filled lanes at three addresses and two lane layouts, and every group at each
    16-byte offset of 512: the LSU's sectors a warp instruction are cudnn_lsu.run_bytes's on all 220."""
    probe = load_module("ldgsts_zfill_probe", ROOT / "benchmarks" / "ldgsts_zfill_probe.py")
    rows = probe.rows(str(ODD / "probe" / "probe.csv.gz"))
    assert len(rows) == 220 and all(got == rule for *_, got, rule in rows)
    pitch80 = [got for variant, pitch, _, base, got, _ in rows if pitch == 80 and base is not None][:8]
    assert pitch80 == [14, 12, 13, 13, 12, 14, 13, 13]          # the ideal: 10 or 11


def test_at_head_dims_of_sixteens_the_lsu_loads_are_the_tiles_bytes():
    """Every run of a row is whole sectors there, so decode_load_bytes is the closed form: K and V once
    (3/2 of them above d = 128), Q's tile of R rows once a block (again at every key tile above d = 128)."""
    from iosim.gpu.cudnn_lsu import decode_load_bytes, q_tile_rows
    from iosim.workload.problem import Problem
    for b, h, h_kv, n_kv, d, s in [(1, 4, 4, 4096, 64, 32), (3, 16, 4, 777, 48, 4), (2, 8, 2, 1000, 112, 4),
                                   (2, 8, 4, 1500, 256, 8), (1, 6, 3, 9000, 224, 64), (5, 12, 1, 129, 160, 1)]:
        p = Problem(head_dim=d, seq_len_q=1, seq_len_kv=n_kv, batch=b, heads=h, kv_heads=h_kv)
        kv, q = 2 * b * h_kv * n_kv * d * 2, b * q_tile_rows(h, h_kv) * d * 2
        want = kv + s * q if d <= 128 else kv * 3 // 2 + 2 * -(-n_kv // 128) * q
        assert decode_load_bytes(p, s) == want, (b, h, h_kv, n_kv, d, s)


def test_above_d_128_two_blocks_a_split_read_k_twice_and_q_every_key_tile():
    b, h, h_kv, n_kv, d, s = 2, 8, 4, 1500, 256, 8
    kv, rows, tiles = 2 * b * h_kv * n_kv * d * 2, 8 + 6 + 4 + 2, -(-n_kv // 128)
    assert decode.decode_bytes(b, h, h_kv, n_kv, d, s)["loads"] == kv * 3 // 2 + 2 * tiles * b * rows * d * 2


def test_a_block_loads_sixteen_q_rows_cut_at_the_batchs_last_head():
    # 4 K/V heads of 4 query heads each: the blocks load 16, 12, 8 and 4 Q rows, not 4 each
    b, h, h_kv, n_kv, d, s = 4, 16, 4, 4096, 64, 16
    kv = 2 * b * h_kv * n_kv * d * 2
    assert decode.decode_bytes(b, h, h_kv, n_kv, d, s)["loads"] == kv + s * b * (16 + 12 + 8 + 4) * d * 2
    # the reduction reads every split's fp32 partial O, and each row's S maxima and sums a sector each
    assert decode.reduction_bytes(b, h, d, s)["loads"] == 4 * s * b * h * d + 2 * 32 * s * b * h


PRESET = ROOT / "docs" / "validation" / "2026-12-06-cudnn-decode-preset"
#: grid s42-cudnn-decode on an H100 (session 42): the first run reached 9 configs, the second the other 3
S42_RUNS = (PRESET / "raw-h100", PRESET / "rest-h100")


def _through_the_preset(raw: str):
    """(config, cudnn.compare's rows (cache off), or the ScheduleError) of every config of one run."""
    from iosim import ScheduleError, load_profile
    from iosim.gpu import cudnn
    from iosim.gpu.sdpa import problem_of
    table = load_module("cudnn_decode_table", ROOT / "benchmarks" / "cudnn_decode_table.py")
    h200 = load_profile("h200")
    for cfg, launches in table.configs_and_launches(str(raw), measured_only=True):
        try:
            yield cfg, cudnn.compare(problem_of(cfg), launches, h200, cache=False)["launches"]
        except ScheduleError as exc:
            yield cfg, exc


def _tally(runs) -> tuple[int, int, int, list]:
    """(forward launches, backward launches, bprop crossbar loads within 0.05 % but not exact, the other
    counts off: (d, N_kv, kernel, quantity, measured − predicted)) of every config of ``runs`` through the
    preset."""
    forward = backward = loose = 0
    off = []
    for raw in runs:
        for cfg, rows in _through_the_preset(raw):
            assert not isinstance(rows, Exception), (cfg, rows)
            for row in rows:
                forward += row["pass"] == "forward"
                backward += row["pass"] == "backward"
                for c in row["checks"]:
                    if c["measured"] == c["predicted"]:
                        continue
                    if (row["kernel"], c["quantity"]) == ("bprop", "loads"):
                        loose += 1
                        assert abs(c["measured"] / c["predicted"] - 1) <= 0.0005, (cfg, c)
                    else:
                        off.append((cfg["head_dim"], cfg.get("seq_len_kv", cfg["seq_len"]), row["kernel"],
                                    c["quantity"], c["measured"] - c["predicted"]))
    return forward, backward, loose, off


def test_the_cudnn_preset_gives_every_recorded_launch_of_the_decode_forward():
    """The ``cudnn`` preset (the ``cudnn_decode`` schedule's counts, iosim.gpu.cudnn_lsu's runs of rows, Q
    rows of later groups and sectors, iosim.gpu.cudnn_tma's box rows) against every launch of the four runs
    (109 forward launches: the decode kernel and the reduction, on the H200 and an H100, 7 of them at
    d = 40 and 120), and their backwards: every load and store exact, but the bprop's crossbar loads where
    its persistent blocks take more than one tile (the order they take them in is the run's, as at
    N = 4,096: within 0.05 %; 5 launches)."""
    assert _tally(decode.RUNS) == (109, 260, 5, [])


def test_the_preset_gives_every_launch_at_head_dims_no_multiple_of_16():
    """Grid s41-cudnn-decode-odd (d = 40-168, refused until session 44) through the preset: every count of
    its 18 configs' forward and backward launches, the bprop's crossbar loads within 0.05 % (its persistent
    blocks' order, as above)."""
    assert _tally([str(SPLITS / "decode-odd-h100")]) == (36, 72, 3, [])


def test_grid_s42_predicted_before_it_ran():
    """predictions.json (the preset at 14d9cb3, before the grid ran) against both runs: 197 of 198 counts
    as predicted; the miss, the decode kernel's stores at 12 query heads a group (+3,072 B: its statistics
    are stored 8 rows a store), was fixed after (cudnn_lsu.STATS_ROWS)."""
    predict = load_module("cudnn_predict", ROOT / "benchmarks" / "cudnn_predict.py")
    assert [predict.check(str(PRESET / "predictions.json"), str(raw)) for raw in S42_RUNS] == [1, 0]


def test_grid_s42_through_the_preset_now():
    """Every count of the 12 configs' launches (groups of 9 to 16, d = 48 and 112, 70 batches) as the
    preset gives it now, but three bprops' crossbar loads (128 to 2,560 B under, within 0.002 %: where
    its persistent blocks take several tiles, the order they take them in is the run's)."""
    loose = checks = 0
    for raw in S42_RUNS:
        for cfg, rows in _through_the_preset(raw):
            for row in rows:
                for c in row["checks"]:
                    checks += 1
                    if (row["kernel"], c["quantity"]) == ("bprop", "loads") and c["measured"] != c["predicted"]:
                        loose += 1
                        assert abs(c["measured"] / c["predicted"] - 1) <= 0.0005, (cfg, c)
                    else:
                        assert c["measured"] == c["predicted"], (cfg, row["kernel"], c)
    assert (checks, loose) == (198, 3)


S44 = ODD / "s44"


def test_grid_s44_cudnn_odd_as_predicted_then_through_the_preset(capsys):
    """Grid s44-cudnn-odd (d = 40-248, no multiple of 16; decodes and, for the first time at such head dims,
    the sm90 kernels at more than one query row), its predictions committed before it ran: the decode
    kernels' loads as predicted on all 5 (the LSU rule, prospectively); 31 of 138 counts off, the sm90
    kernels' TMA boxes among them. Through the preset now (cudnn_tma's box rows: the loads' 16 bytes a row
    read from this grid's d = 40, 120 and 152 fprops; the one-split decode's O rows in pieces of 64 bytes,
    from its d = 72 and s41-cudnn-decode2's d = 40): every count but convert_dq's at N_q > 1 (not
    modelled)."""
    predict = load_module("cudnn_predict", ROOT / "benchmarks" / "cudnn_predict.py")
    assert predict.check(str(S44 / "predictions.json"), str(S44 / "raw")) == 1
    out = capsys.readouterr().out
    assert "107 of 138 counts as predicted" in out and "decode loads" not in out
    forward, backward, loose, off = _tally([str(S44 / "raw")])
    assert (forward, backward, loose) == (14, 38, 3)
    assert [o for o in off if o[2] != "convert_dq"] == []
    assert off == []


def test_convert_dq_blocks_in_every_recorded_grid():
    """convert_dq_to_16bits's grid in every committed cuDNN run: ⌈N_q / ⌊chunk/d⌋⌉ blocks a head, the chunk
    2,048 fp32 elements, or 1,024 at head dims no multiple of 16 (cudnn_preset.convert_chunk): 152 launches,
    32 of them at such head dims, 5 of those at N_q > 1 (d = 40, 72, 120, 152, 200)."""
    from iosim.kernels.cudnn_preset import convert_chunk
    table = load_module("cudnn_decode_table", ROOT / "benchmarks" / "cudnn_decode_table.py")
    seen = []
    for configs in sorted((ROOT / "docs" / "validation").rglob("cudnn_configs.json")):
        for cfg, launches in table.configs_and_launches(str(configs.parent), measured_only=True):
            n_q, d = cfg.get("seq_len_q") or cfg["seq_len"], cfg["head_dim"]
            for launch in (x for x in launches if "convert_dq" in x["name"]):
                blocks = int(launch["grid"].strip("()").split(",")[0])
                assert blocks == -(-n_q // (convert_chunk(d) // d)), (configs.parent.name, cfg, launch["grid"])
                seen.append((d % 16 != 0, n_q > 1 and d % 16 != 0))
    assert (len(seen), sum(a for a, _ in seen), sum(b for _, b in seen)) == (152, 32, 5)

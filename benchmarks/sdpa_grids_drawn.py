"""The prospective grids of sessions 31-37 for ``benchmarks/sdpa_ncu.py --grid NAME``, in the format of
benchmarks/sdpa_grids.py, which merges them into its ``GRIDS``: explicit configs per head dim,
(N_q, N_kv, B, H, H_kv, causal, dtype). Each was fixed, and iosim's predictions committed
(``benchmarks/sdpa_predict.py``), before the device measured it; s36-s38 were drawn at random
(``benchmarks/draw_grid.py``, from s37 on)."""

from __future__ import annotations

PROSPECTIVE_GRIDS = {
    # session 31, prospective (predictions first; no device that session): the notes' boundaries
    # (docs/known-limits.md) and shapes no grid had: backwards just below and above half a partition
    # (d = 64 at N = 28,000 and 36,000), a dense GQA forward like the one miss without a note (d = 88),
    # causal forwards past one wave at kernel head dim 128, short causal forwards that run part of
    # their code, a GQA decode backward of 8 rows, a long causal forward at d = 96, d = 208 GQA causal
    "s31": dict(head_dims=(32, 48, 56, 64, 80, 88, 96, 112, 120, 128, 208), configs={
        32: ((200, 200, 2, 8, 8, True, "fp16"),),
        48: ((1, 30000, 8, 16, 2, False, "bf16"),),
        56: ((20000, 20000, 1, 8, 1, False, "fp16"),),
        64: ((28000, 28000, 1, 4, 4, False, "fp16"), (36000, 36000, 1, 4, 4, False, "bf16")),
        80: ((300, 300, 1, 4, 4, True, "bf16"),),
        88: ((24576, 24576, 2, 16, 4, False, "fp16"),),
        96: ((24000, 24000, 1, 4, 2, True, "fp16"), (48000, 48000, 1, 2, 2, True, "fp16")),
        112: ((3000, 3000, 2, 24, 24, True, "bf16"),),
        120: ((9999, 9999, 1, 8, 8, True, "fp16"),),
        128: ((8, 16000, 4, 32, 8, False, "fp16"),),
        208: ((5000, 5000, 2, 12, 3, True, "bf16"),)}),
    # session 36's prospective grid, drawn before any measurement (random.Random(20261205): d in
    # 40..256 step 8, decode / unequal / square N log-uniform, B·H log-uniform to 1,024, GQA
    # ratio, causal and dtype by coin; N_q·N_kv·B·H·d kept within 2.5e12); the one causal draw
    # with N_q ≠ N_kv made dense (PyTorch's flash backend refuses it)
    "s36": dict(head_dims=(40, 56, 64, 72, 88, 112, 144, 160, 168, 216, 224, 232), configs={
        40: ((1, 1470, 1, 25, 25, False, "bf16"), (210, 105, 1, 9, 1, False, "bf16"),
             (284, 284, 36, 8, 1, False, "fp16")),
        56: ((5860, 5860, 8, 4, 1, True, "bf16"),),
        64: ((2, 18502, 2, 16, 16, False, "bf16"), (9727, 9727, 1, 1, 1, False, "bf16")),
        72: ((445, 445, 7, 32, 32, True, "fp16"), (2238, 2238, 1, 18, 18, True, "bf16")),
        88: ((578, 144, 1, 4, 4, False, "bf16"),),
        112: ((8, 52695, 107, 2, 1, False, "fp16"),),
        144: ((931, 931, 305, 1, 1, True, "fp16"),),
        160: ((4, 4864, 1, 1, 1, False, "bf16"),),
        168: ((60175, 60175, 1, 2, 1, False, "bf16"),),
        216: ((574, 574, 27, 16, 2, True, "fp16"),),
        224: ((6409, 12818, 1, 5, 1, False, "bf16"),),
        232: ((21459, 21459, 10, 2, 1, False, "fp16"),)}),
    # session 37's prospective grid: `python benchmarks/draw_grid.py --seed 2026120537`, as drawn
    "s37": dict(head_dims=(48, 64, 72, 104, 125, 131, 160, 176, 184, 208, 211, 214, 216, 224), configs={
        48: ((872, 872, 1, 87, 1, True, "bf16"),),
        64: ((37274, 15759, 4, 4, 4, False, "fp16"), (9, 4601, 2, 3, 3, False, "bf16")),
        72: ((6, 25708, 7, 1, 1, False, "bf16"),),
        104: ((12538, 862, 3, 2, 2, False, "bf16"),),
        125: ((313, 313, 1, 26, 13, False, "bf16"),),
        131: ((19722, 19722, 1, 9, 9, True, "fp16"),),
        160: ((278, 1029, 14, 2, 1, False, "fp16"),),
        176: ((1534, 21772, 21, 3, 3, False, "fp16"), (42819, 1827, 2, 1, 1, False, "fp16")),
        184: ((6853, 6853, 1, 416, 208, True, "fp16"),),
        208: ((2, 3612, 6, 12, 3, False, "fp16"),),
        211: ((546, 546, 2, 2, 2, False, "bf16"),),
        214: ((1540, 309, 3, 2, 1, False, "fp16"),),
        216: ((12, 1466, 1, 2, 2, False, "fp16"),),
        224: ((3051, 3051, 8, 15, 15, False, "fp16"),)}),
    # session 37's second: `python benchmarks/draw_grid.py --seed 2026120538 --count 10 --work 2e13`, as
    # drawn (a larger work than s37's, to reach the long lengths and the many heads the issue names)
    "s38": dict(head_dims=(64, 104, 128, 136, 176, 184, 192, 200, 212, 248), configs={
        64: ((4309, 45841, 2, 7, 7, False, "fp16"),),
        104: ((18033, 18033, 3, 7, 7, False, "bf16"),),
        128: ((674, 52614, 66, 6, 6, False, "bf16"),),
        136: ((16524, 16524, 2, 165, 1, True, "fp16"),),
        176: ((42353, 3383, 48, 5, 5, False, "bf16"),),
        184: ((15, 34077, 6, 3, 3, False, "bf16"),),
        192: ((5604, 1851, 24, 1, 1, False, "fp16"),),
        200: ((1680, 397, 1, 5, 5, False, "fp16"),),
        212: ((15444, 15444, 1, 4, 2, True, "fp16"),),
        248: ((16, 49946, 4, 1, 1, False, "bf16"),)}),
    # session 40: long causal runs, which the L2 model plays in windows of their rounds (past
    # 4,000,000 requests), picked by that rule, not drawn, and predicted before they ran
    # (docs/validation/2026-12-06-s40-windows.md)
    "s40": dict(head_dims=(80, 64, 128, 96), configs={
        80: ((100000, 100000, 2, 12, 3, True, "bf16"),),
        64: ((98304, 98304, 1, 8, 2, True, "bf16"),),
        128: ((131072, 131072, 1, 4, 1, True, "fp16"),),
        96: ((80000, 80000, 1, 6, 6, True, "fp16"),)}),
    # session 42's: `python benchmarks/draw_grid.py --seed 2026120642 --count 16`, as drawn, predicted for the
    # H100 and the H200 before it ran (docs/validation/2026-12-06-s42-check/)
    "s42": dict(head_dims=(53, 64, 96, 136, 144, 152, 160, 176, 192, 194, 208, 224), configs={
        53: ((2193, 1448, 17, 6, 6, False, "fp16"),),
        64: ((8, 1351, 1, 2, 2, False, "fp16"), (8901, 8901, 5, 1, 1, False, "fp16"), (7775, 7775, 2, 1, 1, False, "fp16")),
        96: ((3531, 183, 1, 14, 14, False, "fp16"),),
        136: ((12, 1382, 2, 13, 13, False, "fp16"), (332, 332, 16, 21, 21, False, "bf16")),
        144: ((3935, 3935, 5, 139, 139, False, "bf16"),),
        152: ((1912, 1912, 4, 1, 1, False, "fp16"),),
        160: ((31236, 31236, 4, 1, 1, True, "bf16"), (4030, 4030, 1, 2, 1, False, "bf16")),
        176: ((482, 592, 3, 2, 2, False, "bf16"),),
        192: ((2532, 2532, 3, 2, 1, True, "bf16"),),
        194: ((16, 24144, 7, 4, 4, False, "bf16"),),
        208: ((16188, 16188, 5, 9, 9, True, "bf16"),),
        224: ((10, 8075, 30, 13, 13, False, "bf16"),)}),
    # session 43's: `python benchmarks/draw_grid.py --seed 2026120643 --count 12`, as drawn, predicted for the
    # H100 and the H200 before it ran (docs/validation/2026-12-06-s43-check/)
    "s43": dict(head_dims=(40, 88, 120, 128, 136, 174, 180, 184, 212, 224, 231, 240), configs={
        40: ((2976, 2976, 10, 67, 1, False, "bf16"),),
        88: ((4, 8032, 1, 1, 1, False, "bf16"),),
        120: ((5054, 5054, 1, 3, 3, True, "bf16"),),
        128: ((3804, 3804, 1, 6, 3, True, "fp16"),),
        136: ((840, 840, 2, 1, 1, True, "bf16"),),
        174: ((225, 4336, 7, 62, 62, False, "fp16"),),
        180: ((1130, 1130, 65, 6, 6, True, "fp16"),),
        184: ((10752, 10752, 149, 1, 1, True, "fp16"),),
        212: ((12, 3516, 2, 12, 12, False, "bf16"),),
        224: ((2712, 2712, 9, 1, 1, True, "bf16"),),
        231: ((1614, 1614, 11, 16, 4, True, "bf16"),),
        240: ((56658, 56658, 3, 1, 1, True, "fp16"),)}),
    # session 44's: `python benchmarks/draw_grid.py --seed 2026120644 --count 16`, as drawn, predicted for the
    # H100 and the H200 before it ran (docs/validation/2026-12-06-s44-check/)
    "s44": dict(head_dims=(72, 88, 104, 112, 144, 152, 160, 166, 168, 176, 184, 256), configs={
        72: ((6491, 6491, 1, 9, 9, True, "bf16"), (1425, 267, 552, 1, 1, False, "bf16")),
        88: ((8, 962, 3, 2, 2, False, "bf16"),),
        104: ((42229, 1310, 2, 13, 13, False, "bf16"),),
        112: ((391, 18264, 3, 4, 1, False, "fp16"), (15, 5686, 7, 3, 3, False, "fp16")),
        144: ((1430, 1430, 152, 2, 2, False, "bf16"), (760, 760, 1, 2, 1, True, "fp16")),
        152: ((17255, 5216, 4, 27, 27, False, "bf16"),),
        160: ((348, 45501, 1, 2, 2, False, "fp16"),),
        166: ((11074, 11074, 9, 11, 11, False, "fp16"),),
        168: ((934, 934, 51, 8, 2, False, "bf16"),),
        176: ((3, 2870, 7, 74, 74, False, "bf16"),),
        184: ((2375, 1589, 88, 2, 1, False, "fp16"), (1081, 31432, 15, 2, 2, False, "bf16")),
        256: ((268, 327, 259, 1, 1, False, "fp16"),)}),
    # session 46's: `python benchmarks/draw_grid.py --seed 2026120646 --count 26`, as drawn but the draws of one
    # head (H = 1), whose two memory layouts are the same memory; run as "s46-bnhd" (inputs (B, N, H, d)) and
    # "s46", predicted for both before it ran (docs/validation/2026-12-06-s46-check/)
    "s46": dict(head_dims=(40, 80, 84, 114, 120, 128, 144, 160, 168, 176, 179, 180, 184, 200, 224), configs={
        40: ((5, 372, 28, 7, 7, False, "fp16"),),
        80: ((49684, 49684, 1, 4, 1, True, "fp16"),),
        84: ((4, 42863, 2, 2, 2, False, "fp16"),),
        114: ((7978, 7978, 2, 5, 5, True, "fp16"),),
        120: ((1206, 1206, 1, 2, 1, False, "fp16"),),
        128: ((7, 812, 7, 5, 5, False, "bf16"),),
        144: ((15, 663, 2, 3, 3, False, "fp16"),),
        160: ((1461, 1461, 2, 2, 1, True, "fp16"), (260, 260, 1, 5, 1, True, "bf16")),
        168: ((2421, 2421, 8, 19, 19, True, "bf16"),),
        176: ((3880, 138, 32, 6, 6, False, "bf16"),),
        179: ((30614, 30614, 1, 2, 2, True, "bf16"),),
        180: ((7535, 7535, 1, 2, 1, False, "fp16"),),
        184: ((34470, 34470, 4, 2, 2, True, "fp16"),),
        200: ((387, 387, 44, 2, 2, False, "fp16"),),
        224: ((4633, 4633, 51, 5, 1, False, "fp16"),)}),
    # session 48's: `python benchmarks/draw_grid.py --seed 2026120648 --count 16`, as drawn, (B, H, N, d) inputs;
    # predicted for the H200 and the H100 before it ran (docs/validation/2026-12-06-s48-check/)
    "s48": dict(head_dims=(40, 48, 56, 65, 88, 104, 128, 148, 153, 192, 224, 244, 248, 256), configs={
        40: ((3360, 3360, 101, 1, 1, True, "fp16"), (23493, 978, 1, 2, 1, False, "fp16")),
        48: ((47480, 1011, 2, 1, 1, False, "fp16"),),
        56: ((1481, 1481, 33, 1, 1, True, "bf16"),),
        65: ((1182, 1182, 10, 48, 48, False, "bf16"),),
        88: ((304, 304, 2, 119, 119, False, "fp16"),),
        104: ((10033, 10033, 132, 1, 1, False, "fp16"), (1, 958, 2, 243, 243, False, "bf16")),
        128: ((4561, 4561, 4, 203, 203, True, "fp16"),),
        148: ((3279, 989, 89, 5, 1, False, "fp16"),),
        153: ((51248, 258, 1, 1, 1, False, "fp16"),),
        192: ((14, 42716, 14, 6, 6, False, "bf16"),),
        224: ((475, 4914, 12, 38, 38, False, "bf16"),),
        244: ((16975, 16975, 4, 2, 2, False, "fp16"),),
        248: ((662, 662, 1, 1, 1, True, "bf16"),),
        256: ((7368, 7368, 2, 1, 1, True, "bf16"),)}),
    # session 50's: `python benchmarks/draw_grid.py --seed 2026120750 --count 16`, as drawn, (B, H, N, d) inputs;
    # predicted for the H200 and the H100 before it ran (docs/validation/2026-12-07-s50-check/)
    "s50": dict(head_dims=(48, 72, 80, 88, 112, 139, 176, 181, 200, 208, 216, 220, 240, 248), configs={
        48: ((3660, 3660, 4, 16, 16, False, "bf16"),),
        72: ((16, 1500, 1, 446, 223, False, "fp16"),),
        80: ((400, 400, 1, 3, 3, True, "fp16"),),
        88: ((256, 249, 2, 22, 22, False, "fp16"), (34572, 34572, 2, 2, 2, True, "fp16")),
        112: ((1, 46934, 1, 2, 1, False, "bf16"),),
        139: ((708, 3687, 4, 3, 1, False, "bf16"),),
        176: ((6, 1202, 1, 383, 383, False, "bf16"),),
        181: ((6, 36854, 2, 52, 52, False, "bf16"),),
        200: ((5, 5692, 24, 8, 8, False, "fp16"),),
        208: ((1210, 1210, 60, 1, 1, True, "fp16"),),
        216: ((9, 44105, 1, 1, 1, False, "bf16"),),
        220: ((15, 984, 14, 13, 13, False, "fp16"),),
        240: ((7, 50860, 202, 1, 1, False, "bf16"),),
        248: ((3, 10348, 32, 1, 1, False, "fp16"), (1464, 1464, 2, 1, 1, True, "fp16"))}),
    # session 53's: `python benchmarks/draw_grid.py --seed 2026120753 --count 16`, as drawn, (B, H, N, d) inputs;
    # predicted for the H200 and the H100 before it ran (docs/validation/2026-12-07-s53-check/)
    "s53": dict(head_dims=(40, 48, 56, 72, 96, 101, 112, 126, 136, 158, 160, 168, 175, 220), configs={
        40: ((18204, 18204, 2, 10, 10, False, "fp16"), (16, 16068, 19, 5, 5, False, "bf16")),
        48: ((23579, 10267, 17, 12, 12, False, "bf16"),),
        56: ((2807, 2807, 15, 26, 26, True, "bf16"),),
        72: ((61037, 3442, 2, 3, 3, False, "bf16"),),
        96: ((382, 320, 8, 14, 14, False, "bf16"),),
        101: ((10145, 10145, 3, 1, 1, True, "fp16"),),
        112: ((136, 57998, 2, 1, 1, False, "fp16"), (5, 27598, 3, 35, 35, False, "fp16")),
        126: ((9830, 1345, 15, 48, 12, False, "bf16"),),
        136: ((2, 1263, 2, 1, 1, False, "fp16"),),
        158: ((22831, 22831, 1, 7, 7, True, "fp16"),),
        160: ((6874, 3751, 4, 2, 2, False, "fp16"),),
        168: ((13531, 30671, 1, 14, 7, False, "bf16"),),
        175: ((12774, 12774, 6, 4, 4, True, "fp16"),),
        220: ((11, 50968, 2, 1, 1, False, "bf16"),)}),
    # session 56's: `python benchmarks/draw_grid.py --seed 2026120756 --count 16`, as drawn, (B, H, N, d) inputs;
    # predicted for the H200 and the H100 before it ran (docs/validation/2026-12-07-s56-check/)
    "s56": dict(head_dims=(40, 46, 104, 110, 120, 136, 144, 168, 176, 200, 208, 224, 237, 256), configs={
        40: ((2592, 2592, 8, 78, 1, True, "fp16"),),
        46: ((8, 618, 37, 3, 3, False, "fp16"),),
        104: ((4012, 4012, 2, 1, 1, True, "fp16"),),
        110: ((12, 51250, 143, 1, 1, False, "bf16"),),
        120: ((12538, 12538, 5, 1, 1, False, "bf16"),),
        136: ((4977, 57997, 1, 53, 1, False, "fp16"),),
        144: ((6, 1069, 23, 3, 3, False, "bf16"), (16, 2943, 2, 1, 1, False, "fp16"), (16, 1786, 2, 1, 1, False, "bf16")),
        168: ((5548, 5548, 3, 40, 40, True, "fp16"),),
        176: ((2873, 2873, 7, 52, 52, False, "fp16"),),
        200: ((1, 22455, 36, 25, 25, False, "fp16"),),
        208: ((16, 1703, 6, 118, 118, False, "bf16"),),
        224: ((4388, 4388, 1, 4, 1, False, "fp16"),),
        237: ((3434, 3434, 34, 12, 3, False, "fp16"),),
        256: ((10, 684, 1, 2, 2, False, "bf16"),)}),
    # session 57's: `python benchmarks/draw_grid.py --seed 2026120757 --count 16`, as drawn, (B, H, N, d) inputs;
    # predicted for the H200 and the H100 before it ran (docs/validation/2026-12-07-s57-check/)
    "s57": dict(head_dims=(40, 96, 113, 120, 124, 136, 151, 152, 160, 168, 192, 202, 209), configs={
        40: ((464, 464, 1, 3, 3, True, "bf16"),),
        96: ((356, 356, 4, 2, 2, True, "fp16"),),
        113: ((30258, 54848, 1, 1, 1, False, "fp16"),),
        120: ((4, 20471, 9, 1, 1, False, "bf16"),),
        124: ((710, 710, 9, 9, 9, True, "bf16"),),
        136: ((161, 180, 2, 1, 1, False, "bf16"),),
        151: ((1157, 1157, 1, 1, 1, True, "fp16"),),
        152: ((5176, 5176, 2, 63, 63, False, "bf16"),),
        160: ((10460, 10460, 1, 1, 1, False, "fp16"), (653, 653, 1, 432, 108, True, "fp16")),
        168: ((9, 12605, 3, 1, 1, False, "fp16"),),
        192: ((8, 13508, 1, 33, 33, False, "fp16"), (604, 604, 7, 2, 2, False, "fp16"),
              (8, 25936, 16, 19, 19, False, "bf16")),
        202: ((376, 285, 5, 3, 3, False, "fp16"),),
        209: ((8750, 8750, 8, 3, 1, True, "fp16"),)}),
    # session 57's second: `python benchmarks/draw_grid.py --seed 2026120758 --count 16`, as drawn, (B, H, N, d)
    # inputs; predicted for the H200 and the H100, with the L2 edge, before any device ran it
    # (docs/validation/2026-12-07-s58-check/)
    "s58": dict(head_dims=(40, 48, 56, 80, 96, 112, 120, 128, 136, 144, 200, 248, 256), configs={
        40: ((1160, 1160, 9, 33, 33, False, "fp16"),),
        48: ((9497, 18967, 1, 1, 1, False, "fp16"), (6, 489, 5, 7, 7, False, "fp16")),
        56: ((337, 337, 24, 3, 3, False, "fp16"),),
        80: ((7495, 3534, 2, 88, 88, False, "fp16"),),
        96: ((5452, 5452, 3, 22, 22, True, "bf16"),),
        112: ((8878, 8878, 2, 1, 1, False, "bf16"),),
        120: ((463, 23413, 7, 1, 1, False, "fp16"),),
        128: ((5690, 5690, 6, 90, 90, False, "bf16"),),
        136: ((1484, 1484, 5, 18, 18, True, "bf16"),),
        144: ((8670, 8670, 2, 3, 3, False, "bf16"),),
        200: ((5549, 5549, 2, 184, 184, False, "fp16"),),
        248: ((167, 216, 9, 1, 1, False, "bf16"), (14221, 6695, 14, 6, 6, False, "bf16"),
              (7, 31772, 3, 6, 6, False, "bf16")),
        256: ((1621, 1621, 1, 581, 581, False, "fp16"),)}),
    # session 53: the GQA decodes' backwards (one query row, 32 heads on 8, 8,192 keys) over 1 to 16 batches, where
    # a group's next query head re-reads its K/V head B key walks later (gqa-long's B = 8 read 0.72 in the model),
    # and its MHA twin at B = 8
    "s53-decode": dict(head_dims=(64,), configs={64: tuple((1, 8192, b, 32, 8, False, "fp16") for b in (1, 2, 4, 8, 16))
                                                 + ((1, 8192, 8, 32, 32, False, "fp16"),)}),
    # and at d = 128 (16 query heads on 4), 1-8 batches over 8,192 keys and 3-5 over 6,144: does the GPU lose the re-reads at
    # windows a tenth smaller than the model's at another head dim too?
    "s53-decode128": dict(head_dims=(128,), configs={128: tuple((1, 8192, b, 16, 4, False, "fp16") for b in (1, 2, 4, 8))
                                                     + tuple((1, 6144, b, 16, 4, False, "fp16") for b in (3, 4, 5))}),
}

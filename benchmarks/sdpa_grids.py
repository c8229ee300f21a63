"""The configurations ``benchmarks/sdpa_ncu.py`` measures, grid by grid (``--grid NAME``).

Each grid is either explicit configs per head dim, (N_q, N_kv, B, H, H_kv, causal, dtype), or
a product of lengths, batch × heads, causal and dtypes capped by N_q·N_kv·B·H. The grids of
prospective checks (``overlap``, ``fill``) were fixed, and iosim's predictions committed
(``benchmarks/sdpa_predict.py``), before the device measured them.
"""

from __future__ import annotations

import itertools

HEAD_DIMS = (32, 64, 128, 256)

from sdpa_grids_cudnn import CUDNN_CONFIGS, CUDNN_GRIDS  # noqa: E402  (cuDNN's grids, --backend cudnn)
from sdpa_grids_drawn import PROSPECTIVE_GRIDS  # noqa: E402  (s31 and the drawn grids s36-s38)

#: grid s51's configs (below), whose head dims its (B, N, H, d) twin runs too
S51 = dict(head_dims=(88, 104, 176, 72, 232), configs={
    88: ((4096, 4096, 16, 6, 6, False, "fp16"),), 104: ((4096, 4096, 8, 8, 8, True, "bf16"),),
    176: ((2048, 2048, 16, 4, 4, False, "fp16"),), 72: ((8192, 8192, 2, 12, 4, False, "fp16"),),
    232: ((3000, 3000, 4, 3, 3, True, "fp16"),)})
#: grid s52's configs: rows of fewer than two lines over 2, 3 or 6 heads, where session 52 keyed every head's read
#: of a query row's last line as its first (d = 40 over 3 and 6 heads) or where the frame's placement of a head's
#: rows parts most from real addresses (d = 48 over 3 heads, d = 56 over 2)
S52 = dict(head_dims=(40, 48, 56), configs={
    40: ((4096, 4096, 4, 3, 3, False, "fp16"), (2048, 2048, 8, 6, 6, True, "bf16")),
    48: ((16384, 16384, 4, 3, 3, False, "fp16"),), 56: ((32768, 32768, 2, 2, 2, False, "bf16"),)})

GRIDS = {
    # issue 5's check of the counts: small enough that every metric pass is quick
    "counts": dict(seq_lens=(1024, 4096, 16384), batch_heads=((1, 4), (4, 32)), max_work=2 ** 31),
    # issue 6's grid for DRAM bytes and time: N to 32,768, batch × heads 1 to 512
    "wide": dict(seq_lens=(2048, 8192, 32768), batch_heads=((1, 1), (1, 16), (8, 64)), max_work=2 ** 34),
    # the kernels' launch resources (LAUNCH_METRICS), one small config per head dim
    "launch": dict(seq_lens=(2048,), batch_heads=((1, 16),), max_work=2 ** 34),
    # how busy the pipes and the warp schedulers are (PIPE_METRICS), for the time model's misses
    "pipes": dict(seq_lens=(8192,), batch_heads=((1, 16),), max_work=2 ** 34),
    # issue 14: head dims that are no kernel size (40, 80, 160) and two that are (96, 192), ragged N
    "unseen": dict(seq_lens=(1000, 2500), batch_heads=((1, 4), (2, 8)), max_work=2 ** 31,
                   head_dims=(40, 80, 96, 160, 192)),
    # the kernels' local memory (register spills; sdpa_ncu.py --metric-set local): every head dim's
    # kernels, both dtypes and masks, at two lengths, so that per-launch and per-step amounts part
    "spill": dict(seq_lens=(1024, 4096), batch_heads=((1, 8),), max_work=2 ** 31,
                  head_dims=(64, 96, 128, 192, 256), dtypes=("fp16", "bf16")),
    # issue 14: bf16, unequal lengths (N_q, N_kv) both ways, decode (N_q = 1), and causal ragged N
    "unequal": dict(lengths=((512, 2048), (2048, 512), (1000, 3000), (1, 4096), (7, 777), (3000, 3000)),
                    batch_heads=((1, 8), (4, 16)), max_work=2 ** 31, head_dims=(64, 128), dtypes=("fp16", "bf16")),
    # issue 14's wider grid: GQA and MQA (PyTorch's enable_gqa), long causal runs, decode with
    # and without splits, many small heads, bf16; explicit configs (N_q, N_kv, B, H, H_kv, causal, dtype)
    "gqa-long": dict(head_dims=(64, 128), configs=(
        (4096, 4096, 2, 32, 8, False, "fp16"), (4096, 4096, 2, 32, 8, True, "bf16"),
        (4096, 4096, 1, 16, 1, False, "bf16"), (4096, 4096, 1, 16, 1, True, "fp16"),
        (2048, 2048, 8, 128, 128, False, "fp16"), (1024, 1024, 8, 128, 128, True, "fp16"),
        (16384, 16384, 1, 8, 8, True, "fp16"), (32768, 32768, 1, 4, 4, True, "bf16"),
        (65536, 65536, 1, 2, 2, True, "fp16"),
        (1, 8192, 8, 32, 8, False, "fp16"), (1, 65536, 2, 32, 32, False, "bf16"),
        (1, 2048, 64, 16, 16, False, "fp16"), (16, 4096, 4, 16, 2, False, "fp16"),
    )),
    # session 7: shapes fixed before measuring, unlike every committed grid (head dims 48 and 112,
    # ragged and unequal lengths, GQA, decode with long keys, many small heads, bf16), to test the
    # preset where nobody tuned it
    "fresh": dict(head_dims=(48, 64, 112, 128, 256), configs={
        48: ((1536, 1536, 3, 5, 5, False, "fp16"), (3000, 3000, 1, 6, 2, True, "bf16"),
             (1, 5000, 4, 8, 8, False, "fp16"), (333, 1200, 2, 4, 4, False, "bf16")),
        64: ((12288, 12288, 1, 6, 6, True, "fp16"), (96, 96, 64, 16, 16, False, "fp16"),
             (1, 1000, 128, 8, 8, False, "bf16")),
        112: ((2000, 2000, 2, 12, 4, True, "fp16"), (640, 2560, 3, 8, 8, False, "bf16"),
              (1, 3333, 6, 16, 16, False, "fp16")),
        128: ((7000, 7000, 1, 8, 8, True, "bf16"), (2048, 6144, 2, 16, 4, False, "fp16"),
              (1, 16384, 1, 32, 8, False, "fp16")),
        256: ((1280, 1280, 2, 10, 10, True, "bf16"), (3072, 3072, 1, 4, 2, False, "fp16")),
    }),
    # session 7: query lengths that are no multiple of 8, chosen after iosim.gpu.sectors was
    # derived and before measuring, to test its rule for the main backward's L reads
    "sectors": dict(head_dims=(64, 128), configs=(
        (13, 2048, 2, 8, 8, False, "fp16"), (100, 100, 3, 6, 6, True, "bf16"),
        (1234, 1234, 1, 12, 4, False, "fp16"), (3001, 3001, 1, 5, 5, True, "fp16"),
        (2500, 2500, 1, 3, 3, False, "bf16"),
    )),
    # session 8: main kernels at N >= 2,048 chosen before measuring, after the forward's
    # two-blocks-an-SM factor was adopted, to test it prospectively (predictions written first)
    "overlap": dict(head_dims=(64, 80, 96, 128, 192, 256), configs={
        64: ((5000, 5000, 2, 12, 12, False, "bf16"), (6144, 6144, 1, 24, 24, True, "fp16"),
             (2048, 8192, 3, 16, 4, False, "fp16")),
        80: ((4000, 4000, 2, 8, 8, False, "fp16"),),
        96: ((3500, 3500, 2, 10, 10, False, "fp16"), (9000, 9000, 1, 6, 6, True, "bf16")),
        128: ((2500, 2500, 6, 20, 20, False, "fp16"), (10000, 10000, 1, 5, 5, False, "bf16"),
              (4500, 4500, 2, 14, 7, True, "fp16")),
        192: ((3000, 3000, 2, 8, 8, False, "fp16"), (5000, 5000, 1, 6, 6, True, "fp16")),
        256: ((2304, 2304, 4, 6, 6, False, "bf16"), (6000, 6000, 1, 4, 4, True, "fp16")),
    }),
    # session 9: chosen before measuring, after the fill and drain, the measured co-residency
    # factors and the copy rate were adopted, to test them prospectively (predictions written
    # first, benchmarks/sdpa_predict.py): short launches, decode, lone-block backward, d 32-256
    "fill": dict(head_dims=(32, 48, 64, 96, 128, 160, 192, 256), configs={
        32: ((3000, 3000, 2, 10, 10, False, "fp16"),),
        48: ((2200, 2200, 2, 8, 8, True, "fp16"),),
        64: ((1536, 1536, 4, 10, 10, False, "fp16"), (1, 6000, 16, 16, 4, False, "bf16"),
             (768, 768, 8, 12, 12, True, "fp16")),
        96: ((640, 640, 6, 10, 10, False, "fp16"),),
        128: ((1, 3000, 24, 8, 8, False, "fp16"), (4, 12000, 2, 16, 2, False, "bf16"),
              (2048, 2048, 2, 9, 9, True, "bf16"), (1200, 1200, 3, 7, 7, False, "fp16")),
        160: ((2000, 2000, 2, 6, 6, False, "fp16"), (1, 5000, 8, 8, 8, False, "fp16")),
        192: ((1000, 1000, 4, 6, 6, True, "fp16"), (3500, 3500, 1, 7, 7, False, "bf16")),
        256: ((1, 2000, 16, 8, 8, False, "fp16"), (1800, 1800, 2, 6, 6, False, "fp16")),
    }),
    # session 10: chosen before measuring, after the backward's measured 8-warp factors, the
    # forward's measured lone steps and the combine's chain were adopted, to test them
    # prospectively (predictions written first): d = 40 and 72 run the 64 and 96 kernels,
    # 224 the 256 one; decodes with splits at every head dim
    "step": dict(head_dims=(32, 40, 72, 128, 224), configs={
        32: ((4096, 4096, 2, 12, 12, False, "bf16"), (2048, 2048, 4, 6, 6, True, "fp16"),
             (1, 20000, 2, 8, 8, False, "fp16")),
        40: ((5000, 5000, 1, 16, 16, False, "fp16"), (1, 9000, 4, 8, 2, False, "bf16"),
             (3000, 3000, 2, 8, 8, True, "fp16")),
        72: ((6000, 6000, 1, 8, 8, True, "fp16"), (2048, 4096, 2, 8, 8, False, "bf16"),
             (2, 7000, 6, 8, 8, False, "fp16")),
        128: ((8192, 8192, 1, 12, 4, True, "bf16"), (3000, 3000, 4, 8, 8, False, "fp16"),
              (1, 50000, 1, 16, 16, False, "fp16"), (16, 6000, 8, 8, 8, False, "fp16")),
        224: ((4096, 4096, 1, 8, 8, False, "fp16"), (1, 12000, 2, 4, 4, False, "bf16"),
              (2500, 2500, 2, 4, 4, True, "fp16")),
    }),
    # session 10, last: chosen before measuring, after the uneven head dims' factors and the
    # split-KV occupancy, to test the session's final model prospectively (predictions first)
    "final": dict(head_dims=(48, 96, 112, 160, 256), configs={
        48: ((3500, 3500, 2, 12, 4, False, "bf16"), (1, 15000, 8, 16, 16, False, "fp16")),
        96: ((5120, 5120, 1, 24, 24, True, "fp16"), (2, 9000, 4, 12, 12, False, "bf16")),
        112: ((4096, 2048, 2, 16, 16, False, "fp16"), (2800, 2800, 3, 8, 8, True, "bf16")),
        160: ((3333, 3333, 2, 6, 6, False, "fp16"), (1, 30000, 2, 8, 2, False, "fp16")),
        256: ((2500, 2500, 2, 8, 8, True, "bf16"), (1, 40000, 1, 16, 16, False, "fp16")),
    }),
    # session 14: causal runs longer than any before (the L2 model now plays them in windows):
    # N = 131,072 with 2 heads, and MQA with 4; N = 262,144 with one head
    "longest": dict(head_dims=(64, 128), configs=(
        (131072, 131072, 1, 2, 2, True, "fp16"), (131072, 131072, 1, 4, 1, True, "bf16"),
        (262144, 262144, 1, 1, 1, True, "fp16"),
    )),
    # session 15: fixed before measuring, to test the model prospectively on shapes no grid had
    # (predictions first): causal GQA at N = 24,576 in bf16, 768 small heads, a GQA decode with
    # splits, d = 80 (the 96 kernel, uneven), ragged causal N = 40,000, N_q < N_kv, d = 192
    "s15": dict(head_dims=(64, 80, 128, 192), configs={
        64: ((24576, 24576, 1, 8, 2, True, "bf16"), (1000, 1000, 48, 16, 16, False, "fp16"),
             (1, 33000, 4, 16, 4, False, "bf16")),
        80: ((6144, 6144, 2, 10, 10, False, "fp16"), (3000, 3000, 2, 10, 5, True, "bf16")),
        128: ((40000, 40000, 1, 2, 2, True, "fp16"), (3000, 20000, 1, 16, 16, False, "fp16")),
        192: ((9000, 9000, 1, 8, 8, False, "bf16"), (2000, 2000, 4, 6, 6, True, "fp16")),
    }),
    # session 16, fixed before measuring: where one 50 MB LRU and two 25 MB partitions disagree
    # (long causal runs near the L2's size, outputs of 10-30 MB, a GQA decode backward at B = 1)
    "s16": dict(head_dims=(64, 96, 128, 160, 192, 256), configs={
        64: ((32768, 32768, 1, 4, 4, True, "bf16"),),
        96: ((20000, 20000, 1, 6, 6, False, "fp16"),),
        128: ((48000, 48000, 1, 2, 2, True, "fp16"), (12288, 12288, 1, 8, 8, False, "bf16"),
              (8192, 8192, 2, 32, 8, True, "fp16")),
        160: ((1, 30000, 1, 16, 4, False, "fp16"),),
        192: ((16384, 16384, 1, 4, 4, True, "bf16"),),
        256: ((24576, 24576, 1, 4, 4, True, "fp16"),),
    }),
    # session 19, fixed before measuring, after the L2's 16-way hashed sets (60 MiB) were adopted,
    # to test them prospectively (predictions first): causal runs whose K/V head is 7-29 MB,
    # decode backwards whose K/V head is re-read near a partition's size, GQA causal, dense
    "s19": dict(head_dims=(64, 96, 128, 192, 256), configs={
        64: ((40960, 40960, 1, 3, 3, True, "fp16"), (1, 50000, 1, 32, 8, False, "bf16"),
             (90000, 90000, 1, 1, 1, True, "bf16")),
        96: ((36000, 36000, 1, 2, 2, True, "fp16"),),
        128: ((28000, 28000, 1, 3, 3, True, "bf16"), (1, 40000, 1, 16, 4, False, "fp16"),
              (6144, 6144, 2, 16, 4, True, "bf16"), (16000, 16000, 1, 6, 6, False, "fp16")),
        192: ((12000, 12000, 1, 6, 6, False, "fp16"),),
        256: ((28000, 28000, 1, 2, 2, True, "fp16"),),
    }),
    # session 22, fixed before measuring, to test the whole model prospectively on shapes no grid
    # had (predictions first): head dims between the kernels' (144 → 160, 176 → 192, 200 → 224,
    # 240 → 256), ragged N (777, 1,023, 3,001, 7,777), B × H = 1,024, MQA causal at N = 20,000,
    # a 17-row query chunk over 20,000 keys, decodes with splits at d = 40 and 256, N_q < N_kv
    "s22": dict(head_dims=(32, 40, 64, 72, 96, 112, 128, 144, 176, 200, 240, 256), configs={
        32: ((16384, 16384, 1, 16, 16, False, "fp16"),),
        40: ((777, 777, 16, 16, 16, False, "bf16"), (1, 12345, 8, 32, 8, False, "fp16")),
        64: ((1023, 1023, 32, 32, 32, True, "fp16"),),
        72: ((10000, 10000, 1, 6, 6, True, "fp16"),),
        96: ((17, 20000, 4, 16, 4, False, "fp16"),),
        112: ((3000, 9000, 2, 8, 2, False, "bf16"),),
        128: ((20000, 20000, 1, 8, 1, True, "bf16"),),
        144: ((5000, 5000, 2, 12, 4, True, "bf16"),),
        176: ((7777, 7777, 1, 4, 4, False, "fp16"),),
        200: ((3001, 3001, 1, 8, 8, False, "fp16"),),
        240: ((4096, 4096, 2, 4, 4, True, "bf16"),),
        256: ((1, 30000, 2, 8, 8, False, "bf16"),),
    }),
    # session 22: every kernel at head dims whose rows start 16 bytes into a sector every other
    # row (d = 8 mod 16), for the L1 tag stage's count of the kernels' 16-byte copies
    "rows": dict(head_dims=(8, 24, 88, 104, 120, 136, 152, 168, 184, 216, 232, 248),
                 configs=((1000, 1000, 1, 4, 4, False, "fp16"), (777, 777, 2, 3, 3, True, "bf16"))),
    # session 22: stores of rows that end inside a sector next to another head's rows (GQA's
    # dk_expanded is (B, N, H, d)): GQA backwards and decodes at d = 40, 72, 200, an MHA control;
    # "partial-bnhd" the same with the inputs (B, N, H, d), so that O and dQ are laid out so too
    "partial": dict(head_dims=(40, 72, 200), configs={
        40: ((4096, 4096, 1, 16, 4, False, "fp16"), (1, 20000, 2, 16, 4, False, "fp16"),
             (4096, 4096, 1, 16, 16, False, "fp16")),
        72: ((4096, 4096, 1, 16, 4, True, "bf16"), (1, 12345, 4, 32, 8, False, "fp16")),
        200: ((2048, 2048, 1, 8, 2, False, "fp16"),),
    }),
    "partial-bnhd": dict(head_dims=(40, 72, 200), layout="bnhd", configs=None),
    # session 23, fixed before measuring (predictions first): GQA backwards whose dK, dV rows
    # leave 128-byte lines to share (docs/validation/2026-12-04-lines.md), none in any grid: rows
    # under a line with sectors whole (d = 48) and in halves (56), over a line (72 at N = 32,768,
    # 80, 96, 104, 136), decodes at B = 2 to 8
    "lines": dict(head_dims=(40, 48, 56, 72, 80, 96, 104, 136), configs={
        40: ((1, 30000, 4, 16, 4, False, "fp16"),),
        48: ((1, 12345, 8, 32, 8, False, "fp16"),),
        56: ((1, 16000, 4, 32, 8, False, "bf16"),),
        72: ((32768, 32768, 2, 16, 4, False, "fp16"),),
        80: ((1, 10000, 8, 32, 8, False, "fp16"),),
        96: ((1, 8192, 8, 32, 8, False, "fp16"),),
        104: ((1, 20000, 2, 16, 4, False, "bf16"),),
        136: ((8192, 8192, 2, 16, 2, True, "bf16"),),
    }),
    # session 22: s22's causal forward at N = 1,023 (flash's Is_even_MN = false instantiation) took
    # 0.58 of the model's time where N = 1,024 took 0.88: the same work at N = 1,023 and 1,024,
    # causal or not, B x H = 32 x 32, and at 2,047 / 2,048
    "even": dict(head_dims=(64,), configs=(
        (1023, 1023, 32, 32, 32, True, "fp16"), (1024, 1024, 32, 32, 32, True, "fp16"),
        (1023, 1023, 32, 32, 32, False, "fp16"), (1024, 1024, 32, 32, 32, False, "fp16"),
        (2047, 2047, 8, 32, 32, True, "fp16"), (2048, 2048, 8, 32, 32, True, "fp16"))),
    # session 24: the forwards at d = 40 and 48 (the d = 64 kernel, columns predicated) read
    # 1.12-1.29 x Q, K and V from DRAM where d = 32, 64 and 72 read 1.00-1.02 x, about 8.5 KB a
    # resident block; with the local counters: is it the spilled registers' frames, read once a
    # slot? Blocks below and above the 264 slots, even and uneven N, both masks; d = 64, 72 as
    # controls, d = 8 and 24 the d = 32 kernel's predicated columns
    "frames": dict(head_dims=(8, 24, 32, 40, 48, 56, 64, 72), configs={
        **{d: ((1000, 1000, 2, 8, 8, False, "fp16"), (1000, 1000, 2, 8, 8, True, "fp16"),
               (1024, 1024, 2, 8, 8, False, "fp16"), (1000, 1000, 4, 16, 16, False, "fp16"),
               (1000, 1000, 4, 16, 16, True, "fp16"), (1024, 1024, 4, 16, 16, False, "fp16"),
               (4000, 4000, 2, 8, 8, False, "fp16")) for d in (40, 48, 56)},
        **{d: ((1000, 1000, 4, 16, 16, False, "fp16"), (1000, 1000, 4, 16, 16, True, "fp16"),
               (1024, 1024, 4, 16, 16, False, "fp16"), (1000, 1000, 1, 4, 4, False, "fp16"))
           for d in (8, 24)},
        **{d: ((1000, 1000, 2, 8, 8, False, "fp16"), (1000, 1000, 4, 16, 16, False, "fp16"),
               (1024, 1024, 4, 16, 16, False, "fp16"), (1000, 1000, 4, 16, 16, True, "fp16"))
           for d in (32, 64, 72)}}),
    # session 24, prospective (predictions committed first): the spill-frame rule where it was not
    # measured: one and two key blocks, causal blocks that stop within the masking steps, bf16,
    # N_q < N_kv, GQA causal, d = 16 and 24 on the 32 kernel; the first two d = 24 and the bf16
    # d = 40 forwards also under ncu's per-instruction counters (SourceCounters)
    "frames2": dict(head_dims=(16, 24, 40, 56), configs={
        16: ((1000, 1000, 4, 16, 16, False, "fp16"), (1000, 1000, 4, 16, 16, True, "fp16")),
        24: ((1000, 1000, 2, 8, 8, False, "fp16"), (1000, 1000, 2, 8, 8, True, "fp16")),
        40: ((100, 100, 16, 16, 16, False, "fp16"), (200, 200, 8, 16, 16, False, "fp16"),
             (256, 256, 16, 16, 16, True, "fp16"), (384, 384, 16, 16, 16, True, "fp16"),
             (1000, 1000, 2, 8, 8, False, "bf16"), (1000, 1000, 2, 8, 8, True, "bf16"),
             (500, 2000, 2, 8, 8, False, "fp16"), (2048, 2048, 2, 16, 4, True, "fp16")),
        56: ((3000, 3000, 1, 6, 6, True, "bf16"),)}),
    # session 24, prospective: the split-KV forward at kHeadDim 192 and 256 with its tile's pair
    # factor (iosim/kernels/coresidency.py), on shapes no grid had: decodes and few heads
    "split2": dict(head_dims=(192, 256), configs={
        192: ((1, 20000, 4, 16, 4, False, "fp16"), (2048, 2048, 1, 2, 2, False, "bf16"),
              (1, 6000, 16, 8, 8, False, "fp16")),
        256: ((1, 16000, 8, 8, 8, False, "bf16"), (3000, 3000, 1, 2, 2, False, "fp16"),
              (1, 50000, 1, 32, 8, False, "fp16"))}),
    # session 25, prospective: small launches, whose DRAM reads are much their kernels' code
    # (iosim/kernels/flash_code.py): decodes with splits, GQA, tiny and ragged N, causal, bf16,
    # head dims off the kernel sizes (16, 48, 100, 200) and on them (128, 256)
    "code": dict(head_dims=(16, 48, 100, 128, 200, 256), configs={
        16: ((1, 3000, 2, 4, 4, False, "bf16"), (500, 500, 1, 2, 2, True, "fp16")),
        48: ((1, 7000, 4, 8, 2, False, "fp16"), (300, 300, 2, 4, 4, False, "bf16")),
        100: ((1, 5000, 2, 8, 8, False, "bf16"), (700, 700, 1, 4, 4, True, "fp16")),
        128: ((64, 64, 4, 8, 8, False, "fp16"), (1, 1500, 1, 16, 16, False, "fp16")),
        200: ((1, 4000, 2, 4, 4, False, "fp16"), (256, 256, 2, 4, 4, True, "bf16")),
        256: ((128, 128, 2, 2, 2, False, "fp16"),)}),
    # session 26, prospective: head dims that are no multiple of 8, which PyTorch pads before
    # flash-attn (docs/spec/kernels.md §1.1), on every kernel size, some padded onto it (90 -> 96,
    # 124 -> 128, 250 -> 256: Is_even_K true after padding); decodes (MQA, GQA), unequal
    # lengths, causal, bf16, and N >= 2,048 for the time target
    "pad": dict(head_dims=(12, 36, 70, 90, 124, 130, 250), configs={
        12: ((2048, 2048, 2, 8, 8, True, "fp16"), (1, 9000, 4, 8, 2, False, "bf16")),
        36: ((3000, 3000, 1, 16, 16, False, "bf16"), (600, 1800, 2, 4, 4, False, "fp16")),
        70: ((4096, 4096, 1, 8, 8, True, "fp16"), (1, 12000, 2, 16, 16, False, "fp16")),
        90: ((2500, 2500, 2, 4, 2, True, "bf16"), (2048, 2048, 4, 8, 8, False, "fp16")),
        124: ((4096, 4096, 2, 4, 4, False, "bf16"), (333, 333, 3, 8, 8, True, "fp16")),
        130: ((2048, 2048, 2, 8, 8, True, "fp16"), (1, 5000, 8, 8, 1, False, "bf16")),
        250: ((2048, 2048, 1, 4, 4, False, "fp16"), (1000, 1000, 2, 2, 2, True, "bf16"))}),
    # session 27, prospective: the 256 kernel's measured steps (d = 208, 232: its uneven form) and
    # the element-wise backward kernels' lone blocks, on shapes no grid had (decodes, a few query
    # rows, GQA, causal, bf16), beside common LLM shapes (d = 128 causal, 32 heads)
    "s27": dict(head_dims=(256, 232, 208, 128, 96, 64, 48, 160, 32), configs={
        256: ((3072, 3072, 2, 12, 12, True, "bf16"), (1536, 1536, 4, 8, 8, False, "fp16")),
        232: ((2600, 2600, 1, 16, 16, False, "fp16"), (1, 7000, 4, 8, 2, False, "bf16")),
        208: ((5000, 5000, 1, 6, 6, True, "fp16"),),
        128: ((3, 3000, 4, 8, 8, False, "fp16"), (4096, 4096, 2, 32, 8, True, "bf16"),
              (2048, 2048, 4, 32, 32, True, "fp16")),
        96: ((700, 700, 3, 10, 10, False, "fp16"), (6000, 6000, 1, 12, 4, False, "bf16")),
        64: ((1, 6000, 8, 16, 4, False, "bf16"), (8192, 8192, 2, 16, 16, True, "fp16")),
        48: ((1500, 1500, 2, 24, 24, False, "fp16"),),
        160: ((2200, 2200, 2, 8, 8, False, "bf16"),),
        32: ((9000, 9000, 1, 4, 4, True, "fp16"),)}),
    # session 28, prospective: causal forwards' wait for their code (docs/validation/2026-12-04-mask-cost.md)
    # on shapes no grid had: ragged lengths at the kernel sizes (the uneven instantiation), the even
    # d = 128 one with few blocks, a chunk of queries against a long cache, the split-KV kernel at
    # d = 40 and 104, dense twins beside them, bf16 and GQA. The two causal chunks (N_q < N_kv) did
    # not run: SDPA's flash backend refuses a causal mask with N_q != N_kv (2026-12-04-s28-check.md)
    "s28": dict(head_dims=(64, 128, 32, 96, 40, 104, 256), configs={
        64: ((2500, 2500, 1, 12, 12, True, "fp16"), (2500, 2500, 1, 12, 12, False, "fp16"),
             (256, 6000, 2, 8, 2, True, "bf16")),
        128: ((1500, 1500, 2, 6, 6, True, "bf16"), (2048, 2048, 1, 4, 4, True, "fp16"),
              (384, 5000, 1, 16, 4, True, "fp16")),
        32: ((3333, 3333, 1, 8, 8, True, "fp16"),),
        96: ((5000, 5000, 1, 6, 2, True, "bf16"),),
        40: ((1800, 1800, 1, 4, 4, True, "fp16"), (1800, 1800, 1, 4, 4, False, "fp16")),
        104: ((3000, 3000, 1, 3, 3, True, "fp16"),),
        256: ((3000, 3000, 1, 6, 6, True, "fp16"),)}),
    # session 29, a diagnostic (not a prospective check): causal forwards over many heads, where the
    # model reads too little from DRAM at d = 128 (0.85-0.88) but not at d = 64 or 96; the same N at
    # 8 to 256 heads, d = 64, 96, 128 and 256, a dense twin; run with --metric-set l2
    "s29-heads": dict(head_dims=(128, 96, 64, 256), configs={
        128: ((2048, 2048, 1, 16, 16, True, "fp16"), (2048, 2048, 1, 64, 64, True, "fp16"),
              (2048, 2048, 1, 256, 256, True, "fp16"), (4096, 4096, 1, 8, 8, True, "fp16"),
              (4096, 4096, 1, 32, 32, True, "fp16"), (4096, 4096, 1, 128, 128, True, "fp16"),
              (4096, 4096, 4, 32, 32, True, "fp16"), (4096, 4096, 1, 128, 128, False, "fp16"),
              (8192, 8192, 1, 32, 32, True, "fp16")),
        96: ((4096, 4096, 1, 128, 128, True, "fp16"), (2048, 2048, 1, 256, 256, True, "fp16")),
        64: ((4096, 4096, 1, 128, 128, True, "fp16"), (8192, 8192, 1, 32, 32, True, "fp16")),
        256: ((2048, 2048, 1, 128, 128, True, "fp16"),)}),
    # session 38, a diagnostic: s38's d = 176 backward (42,353 queries against 3,383 keys, 48 x 5
    # heads) read 4.2 x the DRAM bytes the model gives on an H100; the same shape at fewer heads
    # (the heads in flight), fewer queries (the rows a block sweeps) and fewer keys (the blocks a head)
    "s38-bwd": dict(head_dims=(176, 128), configs={
        176: ((42353, 3383, 1, 5, 5, False, "bf16"), (42353, 3383, 4, 5, 5, False, "bf16"),
              (42353, 3383, 12, 5, 5, False, "bf16"), (42353, 3383, 48, 5, 5, False, "bf16"),
              (10000, 3383, 48, 5, 5, False, "bf16"), (42353, 1024, 48, 5, 5, False, "bf16")),
        128: ((42353, 3383, 48, 5, 5, False, "bf16"),)}),
    # the same question at the other kernel head dims (64, 96, 256) and at 24 x 5 heads at d = 176
    "s38-bwd2": dict(head_dims=(176, 256, 96, 64), configs={
        176: ((42353, 3383, 24, 5, 5, False, "bf16"),),
        256: ((32768, 4096, 48, 5, 5, False, "bf16"),),
        96: ((65536, 2048, 48, 5, 5, False, "bf16"),),
        64: ((131072, 2048, 48, 5, 5, False, "bf16"),)}),
    # only the 176 one misses (uneven in the 192 kernel): even and uneven head dims of three kernels
    "s38-bwd3": dict(head_dims=(192, 160, 240, 120), configs={
        192: ((42353, 3383, 48, 5, 5, False, "bf16"),),
        160: ((42353, 3383, 48, 5, 5, False, "bf16"),),
        240: ((32768, 4096, 48, 5, 5, False, "bf16"),),
        120: ((42353, 3383, 48, 5, 5, False, "bf16"),)}),
    **PROSPECTIVE_GRIDS,
    # s19's configs with the inputs laid out (B, N, H, d) in memory (a head's rows at a stride
    # of H·d), against s19's (B, H, N, d): does the L2 keep contiguous heads better?
    "s19-bnhd": dict(head_dims=(64, 96, 128, 192, 256), layout="bnhd", configs=None),
    # session 46's drawn grid with the inputs (B, N, H, d): the layout model's prospective check
    "s46-bnhd": dict(head_dims=PROSPECTIVE_GRIDS["s46"]["head_dims"], layout="bnhd", configs=None),
    # session 51, predicted before it ran: rows of heads that share lines, read by cp.async's .L2::128B loads
    # (a miss fetches the whole line) where the heads' reads of a line are far apart; run in both layouts
    "s51": S51,
    "s51-bnhd": dict(head_dims=S51["head_dims"], layout="bnhd", configs=None),
    "s52": S52,
    "s52-bnhd": dict(head_dims=S52["head_dims"], layout="bnhd", configs=None),
    **CUDNN_GRIDS,
}


def grid(head_dim: int, name: str = "counts", backend: str = "flash") -> list[dict]:
    """The configs of one head dim, in launch order; N²·B·H is capped to bound ncu's time. A
    backend other than flash is named in every config (its ``backend`` key)."""
    configs = _grid(head_dim, name)
    return configs if backend == "flash" else [{**cfg, "backend": backend} for cfg in configs]


def _grid(head_dim: int, name: str) -> list[dict]:
    g = GRIDS[name]
    if g.get("layout"):   # another grid's configs in another memory layout
        return [{**cfg, "layout": g["layout"]} for cfg in _grid(head_dim, name.rsplit("-", 1)[0])]
    if "configs" in g:
        configs = g["configs"][head_dim] if isinstance(g["configs"], dict) else g["configs"]
        return [_explicit(head_dim, *c) for c in configs]
    out = []
    lengths = g.get("lengths") or [(n, n) for n in g["seq_lens"]]
    for (n_q, n_kv), (b, h), causal, dtype in itertools.product(lengths, g["batch_heads"], (False, True),
                                                                 g.get("dtypes", ("fp16",))):
        if n_q * n_kv * b * h > g["max_work"] or (causal and n_q != n_kv):
            continue   # (PyTorch's is_causal aligns a non-square mask top-left, flash-attn bottom-right)
        cfg = {"seq_len": n_q, "head_dim": head_dim, "batch": b, "heads": h, "causal": causal}
        if n_q != n_kv:
            cfg.update(seq_len_q=n_q, seq_len_kv=n_kv)
        if dtype != "fp16":
            cfg["dtype"] = dtype
        out.append(cfg)
    return out


def _explicit(head_dim: int, n_q: int, n_kv: int, b: int, h: int, h_kv: int, causal: bool, dtype: str) -> dict:
    cfg = {"seq_len": n_q, "head_dim": head_dim, "batch": b, "heads": h, "causal": causal}
    if n_q != n_kv:
        cfg.update(seq_len_q=n_q, seq_len_kv=n_kv)
    if h_kv != h:
        cfg["kv_heads"] = h_kv
    if dtype != "fp16":
        cfg["dtype"] = dtype
    return cfg


__all__ = ["CUDNN_CONFIGS", "GRIDS", "HEAD_DIMS", "grid"]

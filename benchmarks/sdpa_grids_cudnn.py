"""cuDNN's grids for ``benchmarks/sdpa_ncu.py --backend cudnn`` (``--grid NAME``), in the format of
benchmarks/sdpa_grids.py, which merges them into its ``GRIDS``: explicit configs per head dim,
(N_q, N_kv, B, H, H_kv, causal, dtype)."""

from __future__ import annotations

#: issue 14's cuDNN grid, explicit configs (N_q, N_kv, B, H, H_kv, causal, dtype): fp16 and bf16,
#: N = 1,024 and 4,096, ragged N = 1,000, N_q < N_kv, causal or not, B×H = 1×4 and 2×8, one GQA
CUDNN_CONFIGS = (
    (1024, 1024, 1, 4, 4, False, "fp16"), (4096, 4096, 2, 8, 8, True, "fp16"),
    (1000, 1000, 2, 8, 8, False, "bf16"), (1024, 4096, 1, 4, 4, False, "fp16"),
    (1024, 1024, 1, 4, 4, True, "fp16"), (4096, 4096, 2, 8, 8, False, "fp16"),
    (1024, 1024, 2, 8, 8, False, "bf16"), (4096, 4096, 1, 4, 4, True, "bf16"),
    (1000, 1000, 1, 4, 4, True, "fp16"), (4096, 4096, 2, 8, 2, False, "fp16"),
)

#: grid s42-cudnn-decode's configs (session 42, predicted before they ran; see CUDNN_GRIDS)
S42_DECODE = {
    64: ((1, 2500, 3, 24, 2, False, "bf16"), (1, 777, 1, 16, 1, False, "fp16")),
    128: ((1, 50000, 1, 12, 12, False, "fp16"), (1, 3333, 5, 8, 8, False, "bf16")),
    96: ((1, 10000, 2, 16, 4, False, "fp16"),), 32: ((1, 600, 7, 4, 2, False, "fp16"),),
    160: ((1, 1800, 1, 10, 5, False, "bf16"),), 224: ((1, 7000, 2, 6, 2, False, "fp16"),),
    256: ((1, 450, 4, 4, 4, False, "bf16"),), 80: ((1, 2048, 70, 2, 1, False, "fp16"),),
    48: ((1, 1024, 2, 9, 3, False, "fp16"),), 112: ((1, 520, 1, 32, 2, False, "bf16"),)}

CUDNN_GRIDS = {
    # session 29, prospective (predictions first, benchmarks/sdpa_predict.py --backend cudnn): cuDNN's
    # fused attention on shapes its grid never had: N to 16,384, ragged N, decode, MQA, 128-256 heads,
    # d = 32, 80, 112 (run with --backend cudnn)
    "s29-cudnn": dict(head_dims=(64, 128, 32, 80, 112), configs={
        64: ((16384, 16384, 1, 8, 8, True, "bf16"), (777, 777, 3, 6, 6, False, "fp16"),
             (1, 4096, 4, 16, 4, False, "fp16"), (2048, 2048, 8, 32, 32, True, "fp16")),
        128: ((3000, 3000, 2, 8, 8, True, "bf16"), (512, 8192, 1, 8, 2, False, "fp16"),
              (8192, 8192, 1, 16, 1, True, "fp16"), (2048, 2048, 4, 32, 32, False, "bf16")),
        32: ((2048, 2048, 2, 8, 8, False, "fp16"),),
        80: ((1500, 1500, 2, 4, 4, True, "fp16"),),
        112: ((2500, 2500, 1, 8, 8, False, "bf16"),)}),
    # session 29: cuDNN above d = 128, which the cudnn preset refused then (not measured): which kernels run,
    # and with which tiles (run with --backend cudnn)
    "s29-cudnn-wide": dict(head_dims=(256, 192, 160), configs={
        256: ((1024, 1024, 1, 4, 4, False, "fp16"), (2048, 2048, 2, 8, 8, True, "bf16"),
              (1000, 1000, 1, 4, 4, False, "fp16")),
        192: ((1024, 1024, 1, 4, 4, False, "fp16"), (2048, 2048, 1, 8, 2, True, "fp16")),
        160: ((1024, 1024, 1, 4, 4, False, "fp16"),)}),
    # session 30, exploratory, not yet run (the session had no device for it): cuDNN's decode forward (N_q = 1), which runs
    # the sm80 flash_fprop_wmma kernel and lean_reduction_kernel: their grids, splits and bytes over
    # N_kv, batch, heads and groups (run with --backend cudnn)
    "s30-cudnn-decode": dict(head_dims=(64, 128), configs={
        d: ((1, 4096, 4, 16, 4, False, "fp16"), (1, 1024, 1, 8, 8, False, "fp16"), (1, 8192, 2, 32, 8, False, "fp16"),
            (1, 16384, 1, 8, 1, False, "fp16"), (1, 1000, 2, 8, 2, False, "fp16"), (1, 12345, 1, 4, 4, False, "bf16"),
            (1, 2048, 16, 8, 8, False, "fp16"), (1, 512, 8, 32, 32, False, "fp16"), (1, 65536, 1, 4, 4, False, "fp16"),
            (1, 300, 3, 6, 3, False, "bf16"))
        for d in (64, 128)}),
    # session 41: the decode forward's byte formulas (benchmarks/cudnn_decode_bytes.py), fixed from
    # d = 64 and 128 at N_kv > 256, tried where they were not read: other head dims, N_kv <= 256
    # (the 64x64x64 tile), larger groups, bf16
    "s41-cudnn-decode": dict(head_dims=(64, 32, 80, 96, 192, 256), configs={
        64: ((1, 200, 2, 8, 2, False, "fp16"), (1, 100, 3, 12, 4, False, "bf16"), (1, 5000, 2, 24, 3, False, "fp16"),
             (1, 700, 1, 16, 16, False, "fp16")),
        32: ((1, 3000, 2, 8, 2, False, "fp16"), (1, 200, 1, 4, 4, False, "fp16")),
        80: ((1, 6000, 1, 8, 2, False, "fp16"), (1, 900, 4, 4, 4, False, "bf16")),
        96: ((1, 20000, 1, 12, 4, False, "fp16"), (1, 300, 2, 8, 8, False, "fp16")),
        192: ((1, 4096, 1, 8, 8, False, "fp16"), (1, 300, 3, 6, 3, False, "fp16")),
        256: ((1, 16384, 1, 2, 1, False, "fp16"), (1, 1500, 2, 8, 4, False, "bf16"))}),
    # session 41: the formulas as s41-cudnn-decode left them (committed before this grid ran), on
    # shapes no grid had: d above 128 with B > 1 and GQA, N_kv off the key tile, B > 1 with H < 8
    "s41-cudnn-decode2": dict(head_dims=(160, 224, 192, 256, 40, 120), configs={
        160: ((1, 2500, 2, 4, 2, False, "bf16"), (1, 700, 3, 8, 8, False, "fp16")),
        224: ((1, 9000, 1, 6, 3, False, "fp16"), (1, 260, 4, 4, 1, False, "fp16")),
        192: ((1, 33000, 2, 2, 2, False, "bf16"),),
        256: ((1, 5000, 3, 4, 4, False, "fp16"),),
        40: ((1, 7000, 5, 4, 2, False, "fp16"), (1, 150, 2, 6, 6, False, "bf16")),
        120: ((1, 40000, 2, 4, 4, False, "fp16"), (1, 1300, 6, 2, 1, False, "bf16"))}),
    # session 41: head dims that are no multiple of 16 (d = 40 and 120 of s41-cudnn-decode2 loaded
    # 1.18-1.30 x K and V): the same two shapes at every such d to 168, for the pattern
    "s41-cudnn-decode-odd": dict(head_dims=(40, 56, 72, 88, 104, 120, 136, 152, 168), configs={
        d: ((1, 4096, 1, 4, 4, False, "fp16"), (1, 1000, 2, 8, 2, False, "fp16"))
        for d in (40, 56, 72, 88, 104, 120, 136, 152, 168)}),
    # session 42: the cudnn preset's decode forward (cudnn_decode schedule, iosim.gpu.cudnn_lsu), predicted
    # (docs/validation/2026-12-06-cudnn-decode-preset/predictions.json) before it ran, on shapes no grid had: groups
    # of 9 to 16 query heads (unmeasured), d = 48 and 112, 70 batches, S = 1 to 32 and bf16
    "s42-cudnn-decode": dict(head_dims=(64, 128, 96, 32, 160, 224, 256, 80, 48, 112), configs=S42_DECODE),
    # the three head dims of s42-cudnn-decode its first run's budget did not reach (the same configs)
    "s42-cudnn-decode-rest": dict(head_dims=(80, 48, 112), configs={
        d: S42_DECODE[d] for d in (80, 48, 112)}),
    # session 44: head dims that are no multiple of 16 (rows 16 bytes past a sector every other row), predicted
    # (docs/validation/2026-12-06-cudnn-odd/s44/predictions.json) before it ran: decodes the odd grid did not have
    # (GQA groups of 3 and 8, one split at d = 72, d = 200 and 248), and the sm90 kernels at more than one
    # query row, which no grid had measured at such head dims
    "s44-cudnn-odd": dict(head_dims=(40, 72, 104, 120, 152, 200, 248), configs={
        40: ((1, 6000, 3, 12, 4, False, "bf16"), (2048, 2048, 1, 4, 4, False, "fp16")),
        72: ((1, 300, 4, 8, 8, False, "fp16"), (1000, 1000, 2, 4, 2, True, "bf16")),
        104: ((1, 2222, 1, 16, 2, False, "fp16"),),
        120: ((4096, 4096, 1, 2, 2, False, "fp16"),),
        152: ((1500, 3000, 1, 4, 4, False, "fp16"),),
        200: ((1, 3000, 2, 4, 4, False, "bf16"), (2048, 2048, 1, 2, 2, True, "bf16")),
        248: ((1, 700, 1, 6, 3, False, "fp16"),)}),
    # issue 14, item 4: cuDNN's fused attention (--backend cudnn); d = 96 runs the first four only
    "cudnn": dict(head_dims=(64, 128, 96), configs={64: CUDNN_CONFIGS, 128: CUDNN_CONFIGS, 96: CUDNN_CONFIGS[:4]}),
    # session 13: the backward's crossbar loads at N = 4,096 were 0.004-0.04 % over the model's,
    # by amounts that differ between launches of identical work; the same launches repeated
    # tell whether the excess is the kernel's (fixed) or the run's (varies)
    "cudnn-repeat": dict(head_dims=(64,), configs={64: (CUDNN_CONFIGS[5],) * 3 + (CUDNN_CONFIGS[9],) * 2 +
                                                   (CUDNN_CONFIGS[0],) * 2}),
}

__all__ = ["CUDNN_CONFIGS", "CUDNN_GRIDS"]

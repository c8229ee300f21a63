"""What a causal mask's masking steps cost flash-attn 2's forward kernels (device machine).

flash-attn 2's forward (``compute_attn_1rowblock``) and split-KV forward
(``compute_attn_1rowblock_splitkv``) walk their key blocks from the last down; the first
``n_masking_steps`` of them apply the mask (``mask.apply_mask<Is_causal, Is_even_MN>``):
⌈kBlockM / kBlockN⌉ steps under a causal mask in the even instantiation, one more in the uneven
one, and one (the key-length bound, a no-op when even) without a causal mask. Every thread block
pays them, whether or not its keys straddle the diagonal: a split-KV block of a split far from it
masks nothing but runs the masking code.

The kernel time model counts a masked tile as a whole tile's step. This measures what the mask
adds: 128 query rows a head (one block; two at d = 256), N_kv keys with one K/V head (the keys stay
in the L2, so a step is its compute), dense and causal side by side (bottom-right aligned: the
block's last key blocks straddle the diagonal, its others are whole). Then the same number of
steps run in both launches, and t_causal − t_dense is the masking steps' extra, taken at two
lengths to see that it does not grow with them:

* **forward**: d = 32 … 256 (kernel sizes) and 40, 72, 112, 160, 224 (``Is_even_K = false``),
  132 and 264 blocks (one and two an SM), N_kv = 1,024 and 4,096; at the kernel sizes ≤ 128 also
  N_kv = 1,000 and 4,072 (no multiple of kBlockN: the uneven instantiation).
* **split-KV**: 66 heads of N_q = 64 (PyTorch's heuristic: 4 splits, 264 blocks), k = 4 and 16
  key blocks a split, d = 32 … 256 and 40.

Besides ``gpu__time_duration``: the warp instructions executed and the local-memory sectors
loaded and stored (spilled registers), to say where the extra comes from; the later runs also the
warps stalled for an instruction. ``MASK_SET`` (inherited by ncu's target process) picks a later
run: ``blocks`` (1-8 blocks an SM), ``split`` (the split kernel's other instantiations, and N = 777),
``sms`` (one block an SM on 8-132 SMs), ``steps`` (about as many key blocks as step copies) or
``dtype`` (d = 128's uneven instantiation in fp16 and bf16).
The launches go through ``aten._flash_attention_forward`` (SDPA refuses a causal mask with
N_q ≠ N_kv), ``sms`` and ``steps``'s main-kernel ones through its variable-length form, which
never splits them (and always runs ``Is_even_MN = false``).

Run (device):  python3 benchmarks/sdpa_mask_cost.py --out DIR      (ncu; writes DIR/mask_cost.json)
Summary:       python3 benchmarks/sdpa_mask_cost.py --table DIR/mask_cost.json
Fit:           python benchmarks/sdpa_mask_cost.py --fit docs/validation/2026-12-04-mask-cost/forward/mask_cost.json
               (the H200 profile's measured code_fetch_free and code_fetch)
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdpa_ncu  # noqa: E402  (also puts the repository on the path)
from sdpa_block_cost import BLOCK_Q, machine, save  # noqa: E402
from sdpa_splitkv_cost import BLOCK_KV as SPLIT_KV  # noqa: E402  (the split tile's key rows a step)
from sdpa_splitkv_cost import kernel_head_dim as kernel_dim  # noqa: E402

from iosim.gpu.ncu import find_ncu, read_launches  # noqa: E402

DURATION = "gpu__time_duration.sum"
METRICS = [DURATION, "smsp__inst_executed.sum", "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
           "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"]
REPEATS = 3
#: ``MASK_SET=blocks`` (inherited by ncu's target process): the second run (:func:`blocks_configs`)
BLOCKS_SET = os.environ.get("MASK_SET") == "blocks"
#: ``MASK_SET=split``: the third run (:func:`split_configs`)
SPLIT_SET = os.environ.get("MASK_SET") == "split"
#: ``MASK_SET=sms``: the fourth run: one block an SM on 8 … 132 SMs (whether the wait grows with the SMs
#: that fetch the same code at once)
SMS_SET = os.environ.get("MASK_SET") == "sms"
#: ``MASK_SET=steps``: the fifth run (:func:`steps_configs`)
STEPS_SET = os.environ.get("MASK_SET") == "steps"
#: ``MASK_SET=dtype``: the sixth run: d = 128's uneven instantiation in fp16 and bf16, one block an SM
#: and two square causal shapes (s28's N = 1,500, 2 × 6 heads, and N = 3,000, 8 heads), with the K/V
#: heads of the query heads (the one-block shape with one)
DTYPE_SET = os.environ.get("MASK_SET") == "dtype"
#: asked for where this ncu has them (the second run): warps waiting for an instruction fetch
STALLS = ["smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio",
          "smsp__warps_issue_stalled_no_instruction.sum", "smsp__cycles_active.sum"]
SMS = 132
KERNEL_DIMS = tuple(sorted(SPLIT_KV))
UNEVEN_DIMS = (40, 72, 112, 160, 224)


def configs() -> list[dict]:
    """The launches' problems in launch order (fp16, B = 1, one K/V head)."""
    if BLOCKS_SET:
        return blocks_configs()
    if SPLIT_SET:
        return split_configs()
    if SMS_SET:
        return [{"study": "sms", "d": d, "heads": h, "n_q": 128, "n_kv": n_kv, "causal": c}
                for d, n_kv in ((64, 1000), (128, 1000), (128, 1024), (32, 1000)) for h in (8, 16, 33, 66, 132)
                for c in (False, True)]
    if STEPS_SET:
        return steps_configs()
    if DTYPE_SET:
        return [{"study": "dtype", "d": 128, "batch": b, "heads": h, "n_q": n_q, "n_kv": n_kv, "causal": c, "dtype": t}
                for b, h, n_q, n_kv in ((1, 132, 128, 1000), (2, 6, 1500, 1500), (1, 8, 3000, 3000))
                for t in ("fp16", "bf16") for c in (False, True)]
    out = []
    for d in KERNEL_DIMS + UNEVEN_DIMS:
        lengths = (1024, 4096) + ((1000, 4072) if d == kernel_dim(d) and d <= 128 else ())
        for blocks in (SMS, 2 * SMS):
            for n_kv in lengths:
                for causal in (False, True):
                    out.append({"study": "forward", "d": d, "heads": blocks * BLOCK_Q[kernel_dim(d)] // 128,
                                "n_q": 128, "n_kv": n_kv, "causal": causal})
    for d in KERNEL_DIMS + (40,):
        for k in (4, 16):
            for causal in (False, True):
                out.append({"study": "splitkv", "d": d, "heads": 66, "n_q": 64,
                            "n_kv": SPLIT_KV[kernel_dim(d)] * 4 * k, "causal": causal})
    return out


def flash_calls(d: int, heads: int, n_q: int, n_kv: int, calls: int, causal: bool, batch: int = 1,
                dtype: str = "fp16") -> None:
    """``calls`` calls of flash-attn's forward as PyTorch exposes it (``aten._flash_attention_forward``,
    flash-attn's ``mha_fwd`` with its split heuristic; SDPA refuses a causal mask with N_q ≠ N_kv):
    fp16 (B, N, H, d) tensors, one K/V head."""
    import torch

    kind = torch.bfloat16 if dtype == "bf16" else torch.float16
    kv = heads if DTYPE_SET and n_q == n_kv else 1
    q = torch.randn(batch, n_q, heads, d, device="cuda", dtype=kind)
    k, v = (torch.randn(batch, n_kv, kv, d, device="cuda", dtype=kind) for _ in range(2))
    lengths = [None, None]
    if SMS_SET or ((STEPS_SET or DTYPE_SET) and n_q == 128):   # the variable-length entry: never splits N_q > 1
        q, k, v = q[0], k[0], v[0]
        lengths = [torch.tensor([0, n], device="cuda", dtype=torch.int32) for n in (n_q, n_kv)]
    for _ in range(calls):
        torch.ops.aten._flash_attention_forward(q, k, v, *lengths, n_q, n_kv, 0.0, causal, False)
    torch.cuda.synchronize()


def blocks_configs() -> list[dict]:
    """``MASK_SET=blocks``: whether the extra is paid once an SM or once a block: 1, 2, 4 and 8
    blocks an SM of the instantiations where the first run found it."""
    out = []
    for d, n_kv in ((64, 1000), (128, 1000), (128, 1024), (32, 1000), (96, 1000), (64, 4072), (128, 4096)):
        for blocks in (SMS, 2 * SMS, 4 * SMS, 8 * SMS)[(2 if n_kv > 2048 else 0):]:
            for causal in (False, True):
                out.append({"study": "blocks", "d": d, "heads": blocks, "n_q": 128, "n_kv": n_kv, "causal": causal})
    return out


def split_configs() -> list[dict]:
    """``MASK_SET=split``: the split-KV kernel's instantiations the first run left out (the 32 kernel's
    uneven d = 8, 24; 88, 104, 120 on the 96 and 128 kernels; 216, 232 on 256), one and four key blocks
    a split (66 heads of N_q = 64, 4 splits), and each at N_q = N_kv = 777 with B = 2, H = 3."""
    out = []
    for d in (8, 24, 40, 88, 104, 120, 216, 232, 32, 64, 128, 256):
        for k in (1, 4):
            for causal in (False, True):
                out.append({"study": "splitkv", "d": d, "heads": 66, "n_q": 64,
                            "n_kv": SPLIT_KV[kernel_dim(d)] * 4 * k, "causal": causal})
        for causal in (False, True):
            out.append({"study": "square", "d": d, "batch": 2, "heads": 3, "n_q": 777, "n_kv": 777, "causal": causal})
    return out


def steps_configs() -> list[dict]:
    """``MASK_SET=steps``: blocks of about as many key blocks as the loop has step copies (⌈kBlockM /
    kBlockN⌉ + 1 masking steps and the loop's step): the main kernel's uneven instantiation through the
    variable-length entry (132 one-block heads; d = 64: 3 copies, 2 … 4 key blocks; d = 128: 4 copies,
    3 … 5), the split kernel at 2 and 3 key blocks a split (d = 40, 104, 232)."""
    out = [{"study": "steps", "d": d, "heads": SMS, "n_q": 128, "n_kv": n_kv, "causal": c}
           for d, lengths in ((64, (250, 380, 500)), (128, (190, 250, 310))) for n_kv in lengths for c in (False, True)]
    return out + [{"study": "splitkv", "d": d, "heads": 66, "n_q": 64, "n_kv": SPLIT_KV[kernel_dim(d)] * 4 * k,
                   "causal": c} for d in (40, 104, 232) for k in (2, 3) for c in (False, True)]


def target() -> None:
    for cfg in configs():
        flash_calls(cfg["d"], cfg["heads"], cfg["n_q"], cfg["n_kv"], REPEATS, cfg["causal"], cfg.get("batch", 1),
                    cfg.get("dtype", "fp16"))


def summarise(text: str, out: str, info: dict) -> None:
    """ncu's CSV -> DIR/mask_cost.json: each configuration's main or split launches (the
    combines left out) with their metrics, and the median duration."""
    launches = [ln for ln in read_launches(text) if "combine" not in ln["name"] and DURATION in ln["metrics"]]
    rows = []
    for i, cfg in enumerate(configs()):
        got = launches[i * REPEATS:(i + 1) * REPEATS]
        times = sorted(ln["metrics"][DURATION] * 1e-9 for ln in got)
        rows.append({**cfg, "kernels": sorted({ln["name"][:60] for ln in got}), "grids": [ln["grid"] for ln in got],
                     "metrics": [ln["metrics"] for ln in got], "median_s": times[len(times) // 2] if times else None})
    save(out, "mask_cost.json", {**info, "launches": len(launches), "expected": len(configs()) * REPEATS,
                                 "rows": rows})
    print(f"{len(launches)} launches of {len(configs()) * REPEATS} expected")


def table(path: str) -> None:
    """Per head dim, blocks and length: t_causal − t_dense (µs), and the extra warp
    instructions and local sectors a block (causal − dense, ÷ the launch's blocks)."""
    rows = json.load(open(path))["rows"]
    pairs = {}
    for r in rows:
        pairs.setdefault((r["study"], r["d"], r["heads"], r["n_q"], r["n_kv"], r.get("dtype", "")), {})[r["causal"]] = r
    print("study    d  heads   n_kv   dense_us  causal_us  extra_us  inst/block  local_ld/block")
    for (study, d, heads, _, n_kv, dtype), two in pairs.items():
        if len(two) < 2 or not (two[False]["median_s"] and two[True]["median_s"]):
            continue
        blocks = len_blocks(two[False])
        diff = {m: (_median(two[True], m) - _median(two[False], m)) / blocks for m in METRICS[1:3]}
        print(f"{study:8s} {d:3d} {heads:5d} {n_kv:6d}{dtype:>5s} {two[False]['median_s'] * 1e6:9.2f} "
              f"{two[True]['median_s'] * 1e6:9.2f} {(two[True]['median_s'] - two[False]['median_s']) * 1e6:8.2f} "
              f"{diff[METRICS[1]]:10.0f} {diff[METRICS[2]]:10.0f}")


def len_blocks(row: dict) -> int:
    """Thread blocks of the row's first launch (its grid's product)."""
    x, y, z = (int(v) for v in row["grids"][0].strip("()").split(","))
    return x * y * z


def extras(rows: list[dict]) -> list[dict]:
    """The forward study's launches with one block an SM (132 blocks of the main kernel) at the
    kernel sizes (``Is_even_K``; the other head dims' extra fell with the key blocks, see
    docs/validation/2026-12-04-mask-cost.md): per pair of launches, the causal one's extra (µs) and
    both instantiations' code (bytes, :mod:`iosim.kernels.flash_code`, from the launches iosim plans)."""
    from iosim import Problem, load_profile
    from iosim.kernels.plan import plan

    profile, out = load_profile("h200"), []
    pairs: dict = {}
    for r in rows:
        if r["study"] == "forward" and r["median_s"]:
            pairs.setdefault((r["d"], r["heads"], r["n_q"], r["n_kv"]), {})[r["causal"]] = r
    for (d, heads, n_q, n_kv), two in pairs.items():
        launches = [plan("flash-attn-2", "fa2", Problem(head_dim=d, seq_len_q=n_q, seq_len_kv=n_kv, heads=heads,
                                                       kv_heads=1, causal=c), profile, "forward")[0] for c in (0, 1)]
        if len(two) == 2 and len_blocks(two[False]) == SMS and all(ln.schedule == "fa2" for ln in launches) \
                and d == kernel_dim(d):
            out.append({"d": d, "n_kv": n_kv, "dense_code": launches[0].code["main"],
                        "causal_code": launches[1].code["main"],
                        "extra_us": (two[True]["median_s"] - two[False]["median_s"]) * 1e6})
    return out


def fit(points: list[dict]) -> tuple[float, float, float]:
    """(free KiB, µs a KiB, rms µs): extra = k·(max(0, causal − free) − max(0, dense − free)),
    the free size on a 0.5 KiB grid from 60 to 90 KiB, k by least squares at each."""
    best = None
    for i in range(61):
        free = 60 + 0.5 * i
        x = [max(0.0, p["causal_code"] / 1024 - free) - max(0.0, p["dense_code"] / 1024 - free) for p in points]
        y = [p["extra_us"] for p in points]
        k = sum(a * b for a, b in zip(x, y)) / sum(a * a for a in x)
        sse = sum((b - k * a) ** 2 for a, b in zip(x, y))
        if best is None or sse < best[0]:
            best = (sse, free, k)
    sse, free, k = best
    return free, k, (sse / len(points)) ** 0.5


def _median(row: dict, metric: str) -> float:
    vals = sorted(m.get(metric, 0.0) for m in row["metrics"])
    return vals[len(vals) // 2] if vals else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--target", action="store_true")
    ap.add_argument("--table", metavar="MASK_COST_JSON")
    ap.add_argument("--fit", metavar="MASK_COST_JSON", help="the code-fetch fit of the forward study")
    args = ap.parse_args()
    if args.target:
        target()
    elif args.table:
        table(args.table)
    elif args.fit:
        free, k, rms = fit(extras(json.load(open(args.fit))["rows"]))
        print(f"code_fetch_free {free:g} KiB; {k:.4f} us a KiB = code_fetch {1024 / k / 1e3:.3f} GB/s; "
              f"rms {rms:.2f} us")
    else:
        os.makedirs(args.out, exist_ok=True)
        ncu = find_ncu()
        stalls = BLOCKS_SET or SPLIT_SET or SMS_SET or STEPS_SET or DTYPE_SET    # the later runs
        metrics = METRICS + (sdpa_ncu.available_metrics(ncu, STALLS) if stalls else [])
        text = sdpa_ncu.run_ncu(ncu, "regex:flash_fwd", metrics, [os.path.abspath(__file__), "--target"],
                                os.path.join(args.out, "ncu.csv"), timeout=None)
        summarise(text, args.out, machine(args.out))


if __name__ == "__main__":
    main()

"""What one flash-attn 2 forward block costs beyond its steps, measured on the real kernels.

The kernel time model times a forward block as the sum of its key-block steps (products,
operand reads, exponentials, element-wise work) and a launch as its busiest SM's blocks plus
an empty launch. A block also waits before its first step (Q and the first K tile come from
memory, nothing to overlap them with) and after its last (O is normalised, staged through
shared memory and stored). This measures that per-block cost and the step time on the
compiled kernels, without the model, under Nsight Compute (``gpu__time_duration``, the
quantity the validation grids compare):

* **slopes**: 128 query rows a head (one block; two at d = 256), 132 or 264 blocks (one or
  two an SM), N_kv = 256·s for s = 1 … 32: t = a + b·steps. b is the step time (alone, or two
  blocks sharing the SM); a − (an empty launch) is what a block costs besides its steps.
* **tails**: N_q = B_r, N_kv = 4,096, H = 132 … 660 heads in steps of 66: how blocks past
  the first two an SM are dispatched (docs/validation/2026-12-01-pair-factor.md found three
  blocks an SM taking 2.5–3.0 lone times).
* **causal**: the same one-block heads with N_q = N_kv (the diagonal's masked tiles).

Run (device):  python3 benchmarks/sdpa_block_cost.py --out DIR      (ncu; writes DIR/block_cost.json)
Target:        python3 benchmarks/sdpa_block_cost.py --target       (the launches, in order)
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdpa_ncu  # noqa: E402  (also puts the repository on the path)

from iosim.gpu.ncu import find_ncu, read_launches, read_raw  # noqa: E402

#: the one metric these measurements ask ncu for
DURATION = "gpu__time_duration.sum"

#: kHeadDim -> query rows a block (B_r) of the H200's forward kernel (docs/spec/kernels.md §2)
BLOCK_Q = {32: 128, 64: 128, 96: 128, 128: 128, 192: 128, 256: 64}
REPEATS = 3
SMS = 132
#: K/V heads of every launch (``BLOCK_KV_HEADS``, inherited by ncu's target process): unset, each
#: query head its own (the first run: every block streams its keys from DRAM); 1 (session 27, the
#: slopes only): the keys stay in the L2, so the slope is the step alone, as the split-KV kernel's was
#: measured (docs/validation/2026-12-04-splitkv-step.md)
KV_HEADS = int(os.environ["BLOCK_KV_HEADS"]) if os.environ.get("BLOCK_KV_HEADS") else None


#: ``BLOCK_SET=square`` (session 27): 8 heads at N = 3,072 / 3,000 and 4,096 / 4,095, dense and
#: causal, d = 32 … 128: the forward's Is_even_MN instantiations side by side
SQUARE = os.environ.get("BLOCK_SET") == "square"


def configs() -> list[dict]:
    """(study, d, heads, N_q, N_kv, causal) in launch order."""
    if SQUARE:
        return [{"study": "square", "d": d, "heads": 8, "n_q": n, "n_kv": n, "causal": c}
                for d in (32, 64, 96, 128) for c in (False, True) for n in (3072, 3000, 4096, 4095)]
    out = []
    for d, bq in BLOCK_Q.items():
        for blocks in (SMS, 2 * SMS):   # 128 query rows a head: one block (two at d = 256, B_r = 64)
            for s in (1, 2, 4, 8, 16, 32):
                out.append({"study": "slopes", "d": d, "heads": blocks * bq // 128, "n_q": 128, "n_kv": 256 * s,
                            "causal": False})
    if KV_HEADS:
        return [{**c, "kv_heads": KV_HEADS} for c in out]
    for d in (64, 128):
        for heads in range(SMS, 5 * SMS + 1, SMS // 2):
            out.append({"study": "tails", "d": d, "heads": heads, "n_q": BLOCK_Q[d], "n_kv": 4096, "causal": False})
    for d, bq in BLOCK_Q.items():
        for heads in (SMS, 2 * SMS):
            for n in (bq, 4 * bq):
                out.append({"study": "causal", "d": d, "heads": heads, "n_q": n, "n_kv": n, "causal": True})
    return out


def sdpa_calls(d: int, heads: int, n_q: int, n_kv: int, calls: int, causal: bool = False,
               backward: bool = False, kv_heads: int | None = None) -> None:
    """``calls`` calls of PyTorch's flash SDPA on one fp16 problem (B = 1; ``kv_heads`` K/V
    heads, grouped-query where fewer than ``heads``), each with its backward where asked; the
    launches these measurements time."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.randn(1, heads, n_q, d, device="cuda", dtype=torch.float16, requires_grad=backward)
    kv_heads = heads if kv_heads is None else kv_heads
    k, v = (torch.randn(1, kv_heads, n_kv, d, device="cuda", dtype=torch.float16, requires_grad=backward)
            for _ in range(2))
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        for _ in range(calls):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=kv_heads != heads)
            if backward:
                out.backward(torch.ones_like(out))
    torch.cuda.synchronize()


def target() -> None:
    for cfg in configs():
        sdpa_calls(cfg["d"], cfg["heads"], cfg["n_q"], cfg["n_kv"], REPEATS, causal=cfg["causal"],
                   kv_heads=cfg.get("kv_heads"))


def run_ncu(kernel_regex: str, script: str, out: str) -> str:
    """``ncu`` (clocks as found, ``gpu__time_duration``) over ``python3 SCRIPT --target`` for the
    kernels matching ``kernel_regex`` (sdpa_ncu.py's runner); the CSV is OUT/ncu.csv, returned."""
    os.makedirs(out, exist_ok=True)
    return sdpa_ncu.run_ncu(find_ncu(), kernel_regex, [DURATION], [os.path.abspath(script), "--target"],
                            os.path.join(out, "ncu.csv"), timeout=None)


def durations(text: str) -> list[tuple[str, str, float]]:
    """(kernel name, grid, seconds) of every launch in ncu's CSV, in launch order."""
    return [(ln["name"], ln["grid"], ln["metrics"][DURATION] * 1e-9) for ln in read_launches(text)
            if DURATION in ln["metrics"]]


def machine(out: str) -> dict:
    """The device and versions, also written to OUT/machine.json (what ``--summarise`` reads)."""
    import torch

    info = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda}
    with open(os.path.join(out, "machine.json"), "w") as f:
        json.dump(info, f)
    return info


def summarise(text: str, out: str, machine: dict) -> None:
    """ncu's CSV -> DIR/block_cost.json (each configuration's durations, in launch order)."""
    launches = durations(text)
    rows = []
    for cfg, calls in zip(configs(), forward_calls(launches, len(configs()), REPEATS)):
        main = sorted(c["time_s"] for c in calls)
        rows.append({**cfg, "calls": calls, "median_s": main[len(main) // 2] if main else None})
    save(out, "block_cost.json", {**machine, "launches_expected": len(configs()) * REPEATS,
                                  "launches_measured": len(launches), "rows": rows})
    print(f"{len(launches)} launches measured for {len(configs()) * REPEATS} calls (split-KV's combines beside)")


def forward_calls(launches: list, configs: int, repeats: int, combine_grid: bool = False) -> list[list[dict]]:
    """The forward calls of each configuration, ``repeats`` a configuration in launch order: a
    call is one kernel ({"kernel": "main" or "splitkv", "grid", "time_s"}), or split-KV's two,
    the combine's time (and, with ``combine_grid``, its grid) on the call it follows."""
    out, at = [], 0
    for _ in range(configs):
        calls = []
        while at < len(launches):
            name, grid, t = launches[at]
            if "combine" in name and calls:
                calls[-1].update({"combine_grid": grid} if combine_grid else {}, combine_s=t)
            elif len(calls) == repeats:
                break
            else:
                calls.append({"kernel": "splitkv" if "splitkv" in name else "main", "grid": grid, "time_s": t})
            at += 1
        out.append(calls)
    return out


def timed(cfg: dict, got: list, **extra) -> dict:
    """A configuration's row: ``extra``, its launches' grids and sorted times (``got``: (name, grid,
    seconds) in launch order) and their median."""
    times = sorted(t for _, _, t in got)
    return {**cfg, **extra, "grids": [g for _, g, _ in got], "times_s": times,
            "median_s": times[len(times) // 2] if times else None}


def save_timed(out: str, json_name: str, machine: dict, configs: list, launches: list, repeats: int,
               what: str = "launches", extra=None) -> None:
    """DIR/JSON_NAME: each configuration's ``repeats`` launches in launch order (``launches``: (name,
    grid, seconds)) as :func:`timed` rows (``extra(got)``: more keys of a row), and how many came."""
    rows = []
    for i, cfg in enumerate(configs):
        got = launches[i * repeats:(i + 1) * repeats]
        rows.append(timed(cfg, got, **(extra(got) if extra else {})))
    save(out, json_name, {**machine, "launches": len(launches), "expected": len(configs) * repeats, "rows": rows})
    print(f"{len(launches)} {what} of {len(configs) * repeats} expected")


def save(out: str, json_name: str, report: dict) -> None:
    """DIR/JSON_NAME, indented."""
    with open(os.path.join(out, json_name), "w") as f:
        json.dump(report, f, indent=1)


def cli(doc: str, target, summarise, json_name: str, kernel_regex: str, script: str) -> None:
    """The command line of these measurements: ``--target`` (the launches), ``--out DIR``
    (ncu over ``python3 SCRIPT --target`` for the kernels matching ``kernel_regex``, then
    ``summarise``), ``--summarise NCU_CSV --out DIR`` (DIR/JSON_NAME from a saved CSV and
    DIR/machine.json)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--target", action="store_true")
    ap.add_argument("--summarise", metavar="NCU_CSV", help=f"only write --out's {json_name} from a saved ncu.csv")
    args = ap.parse_args()
    if args.target:
        target()
    elif args.summarise:
        summarise(read_raw(args.summarise), args.out, json.load(open(os.path.join(args.out, "machine.json"))))
    else:
        summarise(run_ncu(kernel_regex, script, args.out), args.out, machine(args.out))


def main() -> None:
    cli(__doc__, target, summarise, "block_cost.json", "regex:flash_fwd", __file__)


if __name__ == "__main__":
    main()

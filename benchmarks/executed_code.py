"""How much of flash-attn 2's forward code a launch runs, per instantiation (device machine).

docs/validation/2026-12-04-mask-cost.md found a causal forward waiting for its instructions,
more the larger its code. A kernel's ``.text`` (``iosim/kernels/flash_code_sm90.json``) holds
paths a launch never takes (the split-KV kernel's paged and appended K/V, rotary embedding), so
this counts the code a launch runs: ncu's per-instruction counters (``--section SourceCounters``)
give every SASS instruction's warp executions; the instructions executed at least once, 16 bytes
each, are the code it ran.

Launches (fp16, one K/V head, ``aten._flash_attention_forward`` as in sdpa_mask_cost.py):

* **main**: 132 blocks of 128 query rows, d = 32 … 256 and 40, 72, 112, 160, 224, dense and
  causal, N_kv = 1,024 (and 1,000 at the kernel sizes ≤ 128: the uneven instantiation), and
  N_kv = 128 and 256 (one and two key blocks a block at kBlockN = 128; 2 and 4 at 64);
* **splitkv**: 66 heads of N_q = 64 (4 splits), four key blocks a split, d = 32 … 256 and 40, 88,
  104, 232, dense and causal.

Run (device):  python3 benchmarks/executed_code.py --device --out DIR       (~5 min)
Table:         python benchmarks/executed_code.py --table DIR/executed.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# sdpa_mask_cost puts the repository on the path
from sdpa_mask_cost import KERNEL_DIMS, SPLIT_KV, flash_calls, kernel_dim  # noqa: E402
from stall_sampling import read_source_page  # noqa: E402

from iosim.gpu.ncu import find_ncu  # noqa: E402

#: bytes of one SASS instruction (sm_90)
INSTRUCTION_BYTES = 16
UNEVEN_DIMS = (40, 72, 112, 160, 224)
SPLIT_DIMS = KERNEL_DIMS + (40, 88, 104, 232)
KERNELS = "regex:flash_fwd_(kernel|splitkv_kernel)"


def configs() -> list[dict]:
    """The launches, in launch order (one call each)."""
    out = []
    for d in KERNEL_DIMS + UNEVEN_DIMS:
        lengths = (1024, 128, 256) + ((1000,) if d == kernel_dim(d) and d <= 128 else ())
        heads = 132 if kernel_dim(d) < 256 else 66
        for n_kv in lengths:
            for causal in (False, True):
                out.append({"study": "main", "d": d, "heads": heads, "n_q": 128, "n_kv": n_kv, "causal": causal})
    for d in SPLIT_DIMS:
        for causal in (False, True):
            out.append({"study": "splitkv", "d": d, "heads": 66, "n_q": 64, "n_kv": SPLIT_KV[kernel_dim(d)] * 16,
                        "causal": causal})
    return out


def target() -> None:
    for cfg in configs():
        flash_calls(cfg["d"], cfg["heads"], cfg["n_q"], cfg["n_kv"], 1, cfg["causal"])


def executed(page: str) -> dict:
    """One launch's source page -> its kernel, instructions, those executed, and their warp executions."""
    kernel, head, rows = read_source_page(page)
    ix = {h: i for i, h in enumerate(head)}
    seen: dict = {}
    for row in rows:
        count = row[ix["Instructions Executed"]].strip()
        if count.isdigit():
            seen[row[ix["Address"]]] = int(count)
    return {"kernel": kernel, "instructions": len(seen), "executed": sum(1 for c in seen.values() if c),
            "warp_instructions": sum(seen.values()), "runs": _runs(seen)}


def _runs(seen: dict) -> list[list[int]]:
    """The executed instructions as [first, last] address runs (bytes from the kernel's start)."""
    out: list[list[int]] = []
    for address, count in sorted((int(a, 16), c) for a, c in seen.items()):
        if not count:
            continue
        if out and address == out[-1][1] + INSTRUCTION_BYTES:
            out[-1][1] = address
        else:
            out.append([address, address])
    base = min((int(a, 16) for a in seen), default=0)
    return [[a - base, b - base] for a, b in out]


def device(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    ncu, rep = find_ncu(), os.path.join(out, "code")
    run = subprocess.run([ncu, "--clock-control", "none", "--section", "SourceCounters", "--import-source", "no",
                          "-k", KERNELS, "-f", "-o", rep, sys.executable, os.path.abspath(__file__), "--target"],
                         capture_output=True, text=True)
    open(os.path.join(out, "ncu.log"), "w").write(run.stdout[-4000:] + run.stderr[-4000:])

    def page(i: int) -> dict:
        text = subprocess.run([ncu, "-i", rep + ".ncu-rep", "--page", "source", "--csv", "--print-source", "sass",
                               "--launch-skip", str(i), "--launch-count", "1"], capture_output=True, text=True).stdout
        try:
            return executed(text)
        except (StopIteration, KeyError) as exc:
            return {"error": repr(exc)}

    cfgs = configs()
    with ThreadPoolExecutor(12) as pool:
        got = list(pool.map(page, range(len(cfgs))))
    rows = [{**cfg, **g} for cfg, g in zip(cfgs, got)]
    with open(os.path.join(out, "executed.json"), "w") as f:
        json.dump({"configs": len(cfgs), "rows": rows}, f, indent=1)
    print(f"{sum('executed' in r for r in rows)} of {len(rows)} launches read")


def table(path: str) -> None:
    rows = json.load(open(path))["rows"]
    print("study     d  n_kv causal  KiB(all)  KiB(run)  warp_insts  kernel")
    for r in rows:
        if "executed" not in r:
            print(r["study"], r["d"], r["n_kv"], r["causal"], r.get("error"))
            continue
        flags = r["kernel"].split(">>, ")[-1].split(">(")[0] if ">>, " in r["kernel"] else ""
        print(f"{r['study']:8s} {r['d']:3d} {r['n_kv']:5d} {int(r['causal']):5d} "
              f"{r['instructions'] * INSTRUCTION_BYTES / 1024:9.1f} {r['executed'] * INSTRUCTION_BYTES / 1024:9.1f} "
              f"{r['warp_instructions']:11d}  {flags}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--device", action="store_true")
    ap.add_argument("--target", action="store_true")
    ap.add_argument("--table", metavar="EXECUTED_JSON")
    args = ap.parse_args()
    actions = {"target": target, "table": lambda: table(args.table), "device": lambda: device(args.out)}
    chosen = [name for name in actions if getattr(args, name)]
    if not chosen:
        ap.error("give --device --out DIR, --target or --table")
    actions[chosen[0]]()


if __name__ == "__main__":
    main()

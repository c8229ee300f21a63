"""Where flash-attn 2's kernels keep their spilled registers: each kernel's stack frame and the
local-memory words its stores touch, read from PyTorch's sm_90 build (device machine: the
library is there; the table runs anywhere).

Local memory interleaves a warp's 32 lanes word by word, so each 4-byte word of a thread's
frame that some store touches is one 128-byte line a warp; the L1 writes every local store
through to the L2 (docs/validation/2026-12-04-local-memory.md). The lines a kernel keeps
rewriting are therefore (distinct words stored) × 128 bytes a resident warp.

    PYTHONPATH=$PWD python3 benchmarks/spill_footprint.py --device DIR      # on the H200: DIR/spills.json
    python benchmarks/spill_footprint.py --table DIR/spills.json
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flash_code import parse  # noqa: E402

KERNELS = (b"flash_fwd_kernel", b"flash_fwd_splitkv_kernel", b"flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel")
_INSN = re.compile(r"\b(STL|LDL)(\.[\w.]+)?\s+(?:R\w+,\s*)?\[R1(?:\+(0x[0-9a-f]+))?\]")
_WIDTH = {".64": 8, ".128": 16, ".U8": 1, ".S8": 1, ".U16": 2, ".S16": 2}


def words(accesses: list[tuple[int, int]]) -> int:
    """Distinct 4-byte words that (offset, bytes) accesses touch."""
    return len({w for off, n in accesses for w in range(off // 4, (off + n + 3) // 4)})


def scan_sass(text: str) -> dict:
    """mangled name -> {"stl": [(offset, bytes)...], "ldl": [...], "n_stl": .., "n_ldl": ..}."""
    out, name = {}, None
    for line in text.splitlines():
        if "Function :" in line:
            name = line.split("Function :", 1)[1].strip()
            out[name] = {"stl": set(), "ldl": set(), "n_stl": 0, "n_ldl": 0}
            continue
        m = _INSN.search(line) if name else None
        if m:
            op, suffix, off = m.group(1).lower(), m.group(2) or "", int(m.group(3) or "0", 16)
            width = next((b for s, b in _WIDTH.items() if s in suffix), 4)
            out[name][op].add((off, width))
            out[name]["n_" + op] += 1
    return {k: {**v, "stl": sorted(v["stl"]), "ldl": sorted(v["ldl"])} for k, v in out.items()}


def scan_usage(text: str) -> dict:
    """mangled name -> {"REG": .., "STACK": .., ...} from ``cuobjdump -res-usage``."""
    out, name = {}, None
    for line in text.splitlines():
        if line.strip().startswith("Function"):
            name = line.split("Function", 1)[1].strip().rstrip(":").strip()
        elif name and "REG:" in line:
            out[name] = {k: int(v) for k, v in re.findall(r"(\w+):(\d+)", line)}
            name = None
    return out


def device(out_dir: str) -> None:
    import torch
    lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so")
    found = {}
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["cuobjdump", "-xelf", "all", lib], cwd=tmp, capture_output=True, check=True)
        for cubin in sorted(glob.glob(os.path.join(tmp, "*sm_90*"))):
            with open(cubin, "rb") as f:
                blob = f.read()
            if not any(k in blob for k in KERNELS):
                continue
            sass = subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True, text=True).stdout
            usage = scan_usage(subprocess.run(["cuobjdump", "-res-usage", cubin], capture_output=True,
                                              text=True).stdout)
            for name, acc in scan_sass(sass).items():
                if any(k.decode() in name for k in KERNELS):
                    found[name] = {**acc, "usage": usage.get(name, {})}
    names = list(found)
    demangled = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    rows = []
    for name, dem in zip(names, demangled):
        p = parse(dem)
        if p:
            rows.append({"kernel": p[0], "dtype": p[1], "traits": p[2], "flags": p[3], **found[name]})
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "spills.json"), "w") as f:
        json.dump(rows, f, indent=0)
    print(f"{len(rows)} kernels")


def table(path: str) -> str:
    with open(path) as f:
        rows = json.load(f)
    lines = ["| kernel | dtype | traits | flags | REG | STACK (B) | STL | words stored | words loaded |",
             "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in sorted(rows, key=lambda r: (r["kernel"], r["dtype"], r["traits"], r["flags"])):
        u = r["usage"]
        lines.append(f"| {r['kernel']} | {r['dtype']} | {r['traits']} | {r['flags']} | {u.get('REG', '')} "
                     f"| {u.get('STACK', '')} | {r['n_stl']} | {words(r['stl'])} | {words(r['ldl'])} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", metavar="DIR")
    ap.add_argument("--table", metavar="JSON")
    args = ap.parse_args()
    if args.device:
        device(args.device)
    elif args.table:
        print(table(args.table))
    else:
        ap.error("give --device DIR or --table JSON")


if __name__ == "__main__":
    main()

"""The code of PyTorch's flash-attn 2 kernels: what a launch reads from DRAM for its
instructions after Nsight Compute's cache flush (docs/validation/2026-12-04-code.md).

On the device (``--device DIR``): lists the sm_90 ELF sections of ``libtorch_cuda.so`` with
cuobjdump and keeps each flash kernel's ``.text`` size, demangled, as
``DIR/flash_text_sm90.csv`` (family, dtype, traits, flags, bytes). Here (``--table CSV``):
writes ``iosim/kernels/flash_code_sm90.json``, the bytes of the instantiations the H200 runs
(one traits list a kernel and kHeadDim: those the committed runs' kernel names carry), and
``--residuals`` prints, for the committed runs, the measured DRAM reads beyond iosim's against
each launch's code bytes.

    PYTHONPATH=$PWD python3 benchmarks/flash_code.py --device $OUT/code          # on the H200
    python benchmarks/flash_code.py --table docs/validation/2026-12-04-code/flash_text_sm90.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys

FAMILIES = {"flash_fwd_kernel": "main", "flash_fwd_splitkv_kernel": "splitkv",
            "flash_fwd_splitkv_combine_kernel": "combine", "flash_bwd_dot_do_o_kernel": "dot_do_o",
            "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel": "dq_dk_dv", "flash_bwd_convert_dq_kernel": "convert_dq"}
DTYPES = {"half_t": "fp16", "bfloat16_t": "bf16"}
OUT_JSON = os.path.join(os.path.dirname(__file__), "..", "iosim", "kernels", "flash_code_sm90.json")


def parse(name: str) -> tuple[str, str, str, str] | None:
    """(kernel, dtype, traits, flags) of a demangled flash kernel name (ncu's or c++filt's), or None."""
    s = re.sub(r"\s+", "", name.replace("pytorch_flash::", "").replace("cutlass::", ""))
    s = s.replace("true", "1").replace("false", "0")
    m = re.match(r"(?:void)?(\w+)<(.*)>\((.*)\)$", s)
    if not m or m.group(1) not in FAMILIES:
        return None
    args, depth, cur = [], 0, ""
    for ch in m.group(2):
        depth += (ch == "<") - (ch == ">")
        if ch == "," and depth == 0:
            args.append(cur)
            cur = ""
        else:
            cur += ch
    args.append(cur)
    traits = next(a for a in args if "traits" in a)
    t = re.match(r"\w+<(.*?),(half_t|bfloat16_t),", traits)
    flags = ",".join(a for a in args if "traits" not in a)
    return FAMILIES[m.group(1)], DTYPES[t.group(2)], t.group(1), flags


def sizes(elf_listing: str) -> list[tuple[str, int]]:
    """(demangled name, .text bytes) of the flash kernels in a ``cuobjdump -elf`` listing."""
    sections = {}
    for line in elf_listing.splitlines():
        f = line.split()
        if "PROGBITS" in f and f[-1].startswith(".text.") and "flash" in f[-1]:
            sections[f[-1][len(".text."):]] = int(f[2], 16)
    names = subprocess.run(["c++filt"], input="\n".join(sections), capture_output=True, text=True).stdout.split("\n")
    return list(zip(names, sections.values()))


def device(out: str) -> None:
    import torch
    lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so")
    elf = subprocess.run(["cuobjdump", "-elf", "-arch", "sm_90", lib], capture_output=True, text=True).stdout
    os.makedirs(out, exist_ok=True)
    _write_csv(os.path.join(out, "flash_text_sm90.csv"), sizes(elf))


def _write_csv(path: str, named_sizes) -> None:
    rows = sorted({(*parse(n), b) for n, b in named_sizes if parse(n)})
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kernel", "dtype", "traits", "flags", "text_bytes"])
        w.writerows(rows)


def _runs_names(runs: list[str]) -> dict:
    """(kernel, kHeadDim) -> the traits the committed runs' launches carry."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from iosim.gpu.sdpa import raw_configs
    seen: dict = {}
    for run in runs:
        for _, _, launches in raw_configs(run):
            for launch in launches:
                kernel, _, traits, _ = parse(launch["name"])
                seen.setdefault((kernel, int(traits.split(",")[0])), set()).add(traits)
    return seen


def build(csv_path: str, runs: list[str]) -> dict:
    """The table iosim reads: ``csv_path``'s sizes of the instantiations with the traits the
    committed ``runs`` ran (one traits list a kernel and kHeadDim)."""
    seen = _runs_names(runs)
    assert all(len(t) == 1 for t in seen.values()), seen
    ran = {k: next(iter(t)) for k, t in seen.items()}
    out: dict = {}
    with open(csv_path) as f:
        for row in csv.DictReader(f):
            d = int(row["traits"].split(",")[0])
            if ran.get((row["kernel"], d)) == row["traits"]:
                out.setdefault(row["kernel"], {}).setdefault(row["dtype"], {}).setdefault(str(d), {})[row["flags"]] = \
                    int(row["text_bytes"])
    return {"about": "bytes of .text of each flash-attn 2 kernel instantiation in PyTorch 2.11.0+cu130's "
                     "libtorch_cuda.so, sm_90 (cuobjdump -elf), for the traits the H200 runs: "
                     "kernel -> dtype -> kHeadDim -> template flags after the traits -> bytes",
            "traits": {f"{k}/{d}": t for (k, d), t in sorted(ran.items())}, "bytes": out}


def table(csv_path: str, runs: list[str]) -> None:
    with open(OUT_JSON, "w") as f:
        json.dump(build(csv_path, runs), f, indent=0, sort_keys=True)
        f.write("\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", metavar="DIR", help="on the GPU machine: write DIR/flash_text_sm90.csv")
    ap.add_argument("--elf", nargs=2, metavar=("LISTING", "CSV"),
                    help="write CSV from a saved `cuobjdump -elf -arch sm_90 libtorch_cuda.so` listing")
    ap.add_argument("--table", metavar="CSV", help="write iosim/kernels/flash_code_sm90.json from CSV")
    ap.add_argument("--runs", default="docs/validation/2026-12-04-code/runs.txt",
                    help="file listing the committed run folders whose kernel names pick the traits")
    args = ap.parse_args()
    if args.device:
        device(args.device)
    elif args.elf:
        with open(args.elf[0]) as f:
            _write_csv(args.elf[1], sizes(f.read()))
    elif args.table:
        with open(args.runs) as f:
            table(args.table, f.read().split())
    else:
        ap.error("give --device DIR or --table CSV")


if __name__ == "__main__":
    main()

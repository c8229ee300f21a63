"""Spilled registers that flash-attn 2's forward reloads before every lane wrote them (session 24;
docs/validation/2026-12-04-frames.md, iosim.kernels.spill_frames).

    PYTHONPATH=$PWD python3 benchmarks/spill_frames.py --device --out DIR     # on the H200, ~4 min
    python benchmarks/spill_frames.py --summary docs/validation/2026-12-04-frames

``--device`` runs the grids ``frames`` and ``frames2`` of benchmarks/sdpa_grids.py under
benchmarks/sdpa_ncu.py twice: the validation's metric set (``lsu``: loads, DRAM, time) and
``local-l2`` (local memory and the L2's reads). It also runs ncu's per-instruction counters
(``--section SourceCounters``) on the first two forwards of ``frames2`` at d = 24 (the 32
kernel, dense and causal) and on its bf16 forwards at d = 40 (the 64 kernel). Of those it keeps
the local-memory instructions (``sass_d{D}_{i}.csv``).

``--summary`` prints, per forward launch, the local loads the L1 missed (bytes) against
iosim's spill-frame fills (``dram.frame_read_bytes`` of the forward), the DRAM reads beyond
Q, K and V, and then each kernel's column-predicated spill stores.
"""

from __future__ import annotations

import argparse
import csv
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from iosim import Options, load_profile, simulate  # noqa: E402
from iosim.gpu.ncu import find_ncu  # noqa: E402
from iosim.gpu.sdpa import problem_of, raw_configs  # noqa: E402
from stall_sampling import read_source_page  # noqa: E402

MISS = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss.sum"
LOCAL = re.compile(r"\b(STL|LDL)")
#: a spill store: (its predicate, its width, the frame offset)
STORE = re.compile(r"(@!?P\d+\s+)?STL(\.\d+)?\s+\[R1(\+0x([0-9a-f]+))?\]")
#: the per-instruction runs: (head dim of grid frames2, launches skipped, launches kept)
SASS_RUNS = ((24, 0, 2), (40, 4, 2))


def device(out: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    for grid, metric_set in (("frames", "lsu"), ("frames2", "lsu"), ("frames2", "local-l2")):
        subprocess.run([sys.executable, "benchmarks/sdpa_ncu.py", "--out", f"{out}/{grid}-{metric_set}", "--grid",
                        grid, "--metric-set", metric_set, "--budget-s", "150"], env=env, check=False)
    ncu = find_ncu()
    for d, skip, count in SASS_RUNS:
        rep = f"{out}/rep{d}"
        subprocess.run([ncu, "--clock-control", "none", "--section", "SourceCounters", "--import-source", "no",
                        "-k", "regex:flash_fwd_kernel", "--launch-skip", str(skip), "-c", str(count), "-f", "-o", rep,
                        sys.executable, "benchmarks/sdpa_ncu.py", "--target", "--head-dim", str(d), "--grid", "frames2"],
                       env=env, check=False, capture_output=True)
        for i in range(count):
            page = subprocess.run([ncu, "-i", rep + ".ncu-rep", "--page", "source", "--csv", "--print-source", "sass",
                                   "--launch-skip", str(i), "--launch-count", "1"], capture_output=True, text=True)
            with open(f"{out}/sass_d{d}_{i}.csv", "w", newline="") as f:
                csv.writer(f).writerows(local_instructions(page.stdout))
        os.remove(rep + ".ncu-rep")


def local_instructions(page: str) -> list[list[str]]:
    """ncu's source page (SASS, CSV) cut to the kernel's name and its local-memory instructions:
    (address, instruction, warp instructions, thread instructions, predicated-on threads)."""
    kernel, head, rows = read_source_page(page)
    ix = {h: i for i, h in enumerate(head)}
    cols = ("Address", "Source", "Instructions Executed", "Thread Instructions Executed",
            "Predicated-On Thread Instructions Executed")
    return [["kernel", kernel], list(cols)] + [[row[ix[c]].strip() for c in cols] for row in rows
                                                if LOCAL.search(row[ix["Source"]])]


def unwritten_words(path: str) -> tuple[str, int, int]:
    """(kernel, words a thread its column-predicated spill stores write, how many of those words an
    unpredicated store wrote before them): the rest are reloaded by lanes that never wrote them.
    The listing is in address order; every block that runs the predicated stores ran the earlier
    ones (their warp counts are at least as large in the committed runs)."""
    rows = list(csv.reader(open(path)))
    predicated, before = set(), set()
    for _address, source, executed, *_ in rows[2:]:
        m = STORE.search(source)
        if not m or not int(executed):
            continue
        words = {int(m.group(4) or "0", 16) + 4 * k for k in range({"": 1, ".64": 2, ".128": 4}[m.group(2) or ""])}
        if m.group(1):
            predicated |= words
        elif not predicated:
            before |= words
    return rows[0][1], len(predicated), len(predicated & before)


def forwards(raw_dir: str):
    """(config, its forward launch's metrics) of a run's grid, in launch order."""
    for cfg, _problem, launches in raw_configs(raw_dir):
        yield cfg, next(x["metrics"] for x in launches if "flash_fwd" in x["name"] and "combine" not in x["name"])


def frame_rows(root: str) -> list[dict]:
    """Per forward launch of the two ``local-l2`` runs: its problem, blocks, the slots iosim gives it,
    the local loads the L1 missed (bytes), iosim's spill-frame fills, the DRAM reads beyond Q, K, V."""
    profile, out = load_profile("h200"), []
    for raw in (f"{root}/frames-local-l2", f"{root}/frames2-local-l2"):
        for cfg, m in forwards(raw):
            p = problem_of(cfg)
            r = simulate(profile, "fa2", p, passes="forward", options=Options(kernel="flash-attn-2", cache=True))
            kernel = "main" if "main" in r.cache.kernels else "splitkv"
            inputs = (p.heads_total * p.seq_len_q + 2 * p.kv_heads_total * p.seq_len_kv) * p.head_dim * 2
            out.append({"problem": p, "blocks": int(m["launch__grid_size"]), "slots": r.cache.concurrency[kernel],
                        "missed": int(m.get(MISS, 0)) * 32, "fills": (r.cache.frames or {}).get(kernel, 0),
                        "dram_read": int(m["dram__bytes_read.sum"]),
                        "beyond_inputs": int(m["dram__bytes_read.sum"]) - inputs})
    return out


def summary(root: str) -> None:
    print("| d | N_q × N_kv | B × H (H_kv) | causal | dtype | blocks | local loads the L1 missed | iosim's fills | "
          "ratio | DRAM reads beyond Q, K, V |\n|---:|---|---|:---:|---|---:|---:|---:|---:|---:|")
    for r in frame_rows(root):
        p, missed, fills = r["problem"], r["missed"], r["fills"]
        ratio = f"{missed / fills:.3f}" if fills else "-"
        print(f"| {p.head_dim} | {p.seq_len_q:,} × {p.seq_len_kv:,} | {p.batch} × {p.heads} ({p.kv_heads}) | "
              f"{'y' if p.causal else ''} | {p.dtype} | {r['blocks']:,} | {missed:,} | {fills:,} | {ratio} | "
              f"{r['beyond_inputs']:,} |")
    print("\n| per-instruction run | flash_fwd_kernel | words a thread, predicated stores | of them written before | "
          "bytes a thread read unwritten |\n|---|---|---:|---:|---:|")
    for path in sorted(glob.glob(f"{root}/sass_*.csv")):
        kernel, words, before = unwritten_words(path)
        name = re.sub(r"\(int\)|\(bool\)|cutlass::|pytorch_flash::", "", kernel)
        t = re.search(r"traits<(\d+), (\d+), (\d+), (\d+), \d, \d, (\w+),.*?>>, (\d), (\d)", name)
        what = f"kHeadDim {t[1]}, {t[2]}×{t[3]}, {t[5]}, {'causal' if t[7] == '1' else 'dense'}" if t else name[:60]
        print(f"| {os.path.basename(path)} | {what} | {words} | {before} | {4 * (words - before)} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--summary")
    args = ap.parse_args()
    if args.device:
        if not args.out:
            ap.error("--device needs --out DIR")
        device(args.out)
    elif args.summary:
        summary(args.summary)
    else:
        ap.error("give --device --out DIR or --summary DIR")


if __name__ == "__main__":
    main()

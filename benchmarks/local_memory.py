"""What the flash kernels' spilled registers (local memory) send to the L2, from a run of
``benchmarks/sdpa_ncu.py --metric-set local`` (the table runs anywhere; the run needs the H200).

    PYTHONPATH=$PWD python3 benchmarks/sdpa_ncu.py --out DIR --grid spill --metric-set local   # device
    python benchmarks/local_memory.py DIR [DIR ...] [--json OUT.json]

Per main kernel launch (forward, split-key forward, backward): the kernel's tiles and flags
(from its template arguments), its key-block steps (one S = Q·Kᵀ tile product each, every
thread block's, from the tiles and the mask), the local stores (``l1tex`` sectors, 32 bytes),
the local loads and how many of them the L1 served, the global stores, and the L2's writes
from the SMs: ``check`` is the L2's writes less the global and local stores (0 where every
write the L2 sees is one of the two).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from iosim.engine.blocks import BlockMask  # noqa: E402
from iosim.gpu import sdpa  # noqa: E402
from iosim.workload.problem import BlockSizes  # noqa: E402

SECTOR = 32
TRAITS = re.compile(r"Flash_(fwd|bwd)_kernel_traits<(\d+), (\d+), (\d+), (\d+)")
#: flash_fwd_kernel<traits, Is_dropout, Is_causal, Is_local, Has_alibi, Is_even_MN, Is_even_K, ...>
FWD_FLAGS = re.compile(r">>, (\d), (\d), (\d), (\d), (\d), (\d)")


def kernel_shape(name: str) -> dict:
    """Head dim, the two tile sides and warps of a flash kernel's name; the forward's
    even-lengths flag where its name has it."""
    t = TRAITS.search(name)
    out = {"d_kernel": int(t.group(2)), "tile_m": int(t.group(3)), "tile_n": int(t.group(4)),
           "warps": int(t.group(5))} if t else {}
    f = FWD_FLAGS.search(name)
    if f and "flash_fwd_kernel" in name:
        out["even_mn"] = f.group(5) == "1"
    return out


def forward_steps(cfg: dict, tile_m: int, tile_n: int) -> int:
    """Key-block steps of every thread block of the forward: the (query block, key block)
    pairs the kernel visits (bottom-right causal mask, as flash-attn aligns it), by the
    engine's :class:`~iosim.engine.blocks.BlockMask`, times batch × heads."""
    visited = BlockMask(sdpa.problem_of(cfg), BlockSizes(tile_m, tile_n)).n_active()
    return visited * cfg["batch"] * cfg["heads"]


def rows(raw_dir: str) -> list[dict]:
    out = []
    for cfg, _problem, launches in sdpa.raw_configs(raw_dir):
        for launch in launches:
            kernel = sdpa.label(launch["name"])
            if kernel not in ("main", "splitkv", "dq_dk_dv"):
                continue
            m = launch["metrics"]
            local_st = SECTOR * m["l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"]
            ld_hit = m["l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_hit.sum"]
            ld_miss = m["l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss.sum"]
            row = {"config": cfg, "kernel": kernel, **kernel_shape(launch["name"]),
                   "registers": m.get("launch__registers_per_thread"), "local_st": local_st,
                   "local_ld": SECTOR * (ld_hit + ld_miss),
                   "local_ld_l1_hit": ld_hit / (ld_hit + ld_miss) if ld_hit + ld_miss else None,
                   "global_st": m["smsp__sass_data_bytes_mem_global_op_st.sum"],
                   "l2_write": SECTOR * m["lts__t_sectors_srcunit_tex_op_write.sum"],
                   "dram_write": m["dram__bytes_write.sum"], "dram_read": m["dram__bytes_read.sum"]}
            row["check"] = row["l2_write"] - row["global_st"] - local_st
            if kernel == "main" and "tile_m" in row:
                row["steps"] = forward_steps(cfg, row["tile_m"], row["tile_n"])
                row["local_st_per_step"] = local_st / row["steps"] if row["steps"] else None
            out.append(row)
    return out


def markdown(found: list[dict]) -> str:
    lines = ["| d | N_q×N_kv | B×H | causal | dtype | kernel | tiles | even | steps | local stores (MB) "
             "| a step (KB) | local loads (MB), L1 hits | global stores (MB) | L2 writes (MB) | check (B) |",
             "|---:|---|---|:---:|---|---|---|:---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in found:
        c = r["config"]
        shape = f"{c.get('seq_len_q', c['seq_len']):,}×{c.get('seq_len_kv', c['seq_len']):,}"
        tiles = f"{r.get('tile_m', '?')}×{r.get('tile_n', '?')}"
        even = {True: "y", False: "n"}.get(r.get("even_mn"), "")
        per = f"{r['local_st_per_step'] / 1e3:.2f}" if r.get("local_st_per_step") is not None else ""
        hit = f"{r['local_ld_l1_hit']:.2f}" if r["local_ld_l1_hit"] is not None else "-"
        steps = f"{r['steps']:,}" if r.get("steps") is not None else ""
        lines.append(f"| {c['head_dim']} | {shape} | {c['batch']}×{c['heads']} | {'y' if c['causal'] else ''} "
                     f"| {c.get('dtype', 'fp16')} | {r['kernel']} | {tiles} | {even} | {steps} "
                     f"| {r['local_st'] / 1e6:.2f} | {per} | {r['local_ld'] / 1e6:.2f}, {hit} "
                     f"| {r['global_st'] / 1e6:.2f} | {r['l2_write'] / 1e6:.2f} | {r['check']:,.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("raw_dirs", nargs="+")
    parser.add_argument("--json")
    args = parser.parse_args()
    found = [r for d in args.raw_dirs for r in rows(d)]
    if args.json:
        json.dump(found, open(args.json, "w"), indent=1)
    print(markdown(found))


if __name__ == "__main__":
    main()

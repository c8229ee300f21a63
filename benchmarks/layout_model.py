"""The flash-attn-2 preset's DRAM reads in each input layout (Problem.layout), against the same
configs measured in both (runs anywhere, from committed ncu CSVs).

    python benchmarks/layout_model.py BHND_DIR BNHD_DIR [BHND_DIR BNHD_DIR …] [--json OUT.json]

Each pair is one grid run twice with the inputs laid out (B, H, N, d) (a head's rows contiguous)
and (B, N, H, d) (a row's heads side by side: ``--grid NAME-bnhd`` of ``benchmarks/sdpa_ncu.py``).
Per main kernel launch (forward, split-KV forward, main backward): the measured DRAM reads in both
layouts, and the model's over the measured in each, played with the layout the config names
(``sdpa_compare.compare(..., cache=True)``). About a minute a run on two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_compare import compare  # noqa: E402

MAIN = ("main", "splitkv", "dq_dk_dv")


def _key(row: dict) -> tuple:
    """A launch, its layout left out."""
    return tuple(sorted((k, v) for k, v in row.items() if k not in ("layout", "predicted", "measured",
                                                                      "within_target", "grid"))), row["kernel"]


def table(pairs: list[tuple[str, str]]) -> list[dict]:
    out = []
    for bhnd_dir, bnhd_dir in pairs:
        contiguous = {_key(r): r for r in compare(bhnd_dir, cache=True) if r["kernel"] in MAIN}
        for r in compare(bnhd_dir, cache=True):
            c = contiguous.get(_key(r))
            if r["kernel"] not in MAIN or c is None:
                continue
            out.append({"config": {k: v for k, v in r.items() if k not in ("predicted", "measured", "within_target")},
                        "bhnd": {"measured": c["measured"]["dram_read"], "model": c["predicted"]["dram_read"]},
                        "bnhd": {"measured": r["measured"]["dram_read"], "model": r["predicted"]["dram_read"]}})
    return out


def markdown(found: list[dict]) -> str:
    lines = ["| d | N_q×N_kv | B×H (H_kv) | causal | kernel | (B, H, N, d) MB | (B, N, H, d) MB | measured ratio "
             "| model ratio | model / measured, (B, H, N, d) | model / measured, (B, N, H, d) |",
             "|---:|---|---|:---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in found:
        c, a, b = r["config"], r["bhnd"], r["bnhd"]
        shape = f"{c.get('seq_len_q', c['seq_len']):,}×{c.get('seq_len_kv', c['seq_len']):,}"
        heads = f"{c['batch']}×{c['heads']}" + (f" ({c['kv_heads']})" if "kv_heads" in c else "")
        lines.append(f"| {c['head_dim']} | {shape} | {heads} | {'y' if c['causal'] else ''} | {c['kernel']} "
                     f"| {a['measured'] / 1e6:.1f} | {b['measured'] / 1e6:.1f} | {b['measured'] / a['measured']:.2f} "
                     f"| {b['model'] / a['model']:.2f} | {a['model'] / a['measured']:.3f} "
                     f"| {b['model'] / b['measured']:.3f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", help="pairs: a (B, H, N, d) run, then the same grid's (B, N, H, d) run")
    ap.add_argument("--json")
    args = ap.parse_args()
    if len(args.dirs) % 2:
        ap.error("give the runs in pairs: BHND_DIR BNHD_DIR")
    found = table(list(zip(args.dirs[::2], args.dirs[1::2])))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(found, f, indent=1)
    print(markdown(found))


if __name__ == "__main__":
    main()

"""The same SDPA configs measured with the inputs in two memory layouts, against the L2
model played two ways (runs anywhere, from committed ncu CSVs).

    python benchmarks/layout_compare.py BHND_DIR BNHD_DIR [--json OUT.json]

BHND_DIR and BNHD_DIR are ``benchmarks/sdpa_ncu.py --metric-set dram`` runs of one grid with
the inputs laid out (B, H, N, d) (a head's rows contiguous: ``--grid s19``) and (B, N, H, d)
(a head's rows at a stride of H·d: ``--grid s19-bnhd``). The model has no addresses, so it
predicts both alike; it is played with the H200 profile as shipped (16-way hashed sets: lines
fall on the sets at random) and with its sets removed (a fully associative LRU a partition:
lines fill the sets evenly, as a contiguous buffer does), ``l2_sets_ablation.variants``.
Per main kernel launch: the measured DRAM reads in both layouts, and each model's over the
(B, H, N, d) measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from iosim.gpu import sdpa  # noqa: E402
from l2_sets_ablation import MAIN, rows, variants  # noqa: E402

MODELS = ("sets 60 MiB", "LRU 60 MiB")


def measured(raw_dir: str) -> list[tuple[dict, str, float]]:
    """(config without its layout, kernel, DRAM bytes read) per main kernel launch."""
    out = []
    for cfg, _problem, launches in sdpa.raw_configs(raw_dir):
        plain = {k: v for k, v in cfg.items() if k != "layout"}
        out += [(plain, sdpa.label(l["name"]), l["metrics"]["dram__bytes_read.sum"]) for l in launches
                if sdpa.label(l["name"]) in MAIN]
    return out


def table(bhnd_dir: str, bnhd_dir: str) -> list[dict]:
    contiguous, strided = measured(bhnd_dir), measured(bnhd_dir)
    if [(c, k) for c, k, _ in contiguous] != [(c, k) for c, k, _ in strided]:
        raise SystemExit("the two runs do not hold the same configs in the same order")
    every = variants()
    models = {name: rows(every[name], [bhnd_dir]) for name in MODELS}
    return [{"config": c, "kernel": k, "bhnd": a, "bnhd": b, **{n: models[n][i]["dram_read"] for n in MODELS}}
            for i, ((c, k, a), (_, _, b)) in enumerate(zip(contiguous, strided))]


def markdown(found: list[dict]) -> str:
    lines = ["| d | N_q×N_kv | B×H (H_kv) | causal | kernel | (B, H, N, d) MB | (B, N, H, d) MB | ratio | "
             + " | ".join(f"{n} / (B, H, N, d)" for n in MODELS) + " |",
             "|---:|---|---|:---:|---|---:|---:|---:|" + "---:|" * len(MODELS)]
    for r in found:
        c = r["config"]
        shape = f"{c.get('seq_len_q', c['seq_len']):,}×{c.get('seq_len_kv', c['seq_len']):,}"
        heads = f"{c['batch']}×{c['heads']}" + (f" ({c['kv_heads']})" if "kv_heads" in c else "")
        lines.append(f"| {c['head_dim']} | {shape} | {heads} | {'y' if c['causal'] else ''} | {r['kernel']} "
                     f"| {r['bhnd'] / 1e6:.1f} | {r['bnhd'] / 1e6:.1f} | {r['bnhd'] / r['bhnd']:.2f} | "
                     + " | ".join(f"{r[n] / r['bhnd']:.2f}" for n in MODELS) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bhnd_dir")
    ap.add_argument("bnhd_dir")
    ap.add_argument("--json")
    args = ap.parse_args()
    found = table(args.bhnd_dir, args.bnhd_dir)
    if args.json:
        json.dump(found, open(args.json, "w"), indent=1)
    print(markdown(found))


if __name__ == "__main__":
    main()

"""iosim's predictions for an SDPA grid, written before the device measures it (a prospective check).

For every configuration of ``benchmarks/sdpa_ncu.py --grid NAME``: the flash-attn-2 preset's
launches on the h200 profile (``--hw``: another; forward+backward, L2 model on, as ``sdpa_compare.py`` runs
them), each kernel's predicted time and bound and DRAM bytes read and written (also with
the L2 as one LRU instead of the profile's two partitions: ``one_lru``), with the time they
were written. Commit the
file before the run; ``sdpa_compare.py`` then recomputes the same predictions beside the
measurements (docs/validation/2026-12-01-overlap-check.md, -12-02-fill-check.md).

Run:  python benchmarks/sdpa_predict.py --grid fill --out docs/validation/DIR/predictions.json \
          [--markdown notes.md]   # a table of each config's notes (docs/known-limits.md) and main DRAM reads
          [--l2-edge]             # also each pass's L2 edge (iosim simulate --l2-edge): 2-2.5 x the time
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from same_launch_model import one_lru  # noqa: E402
from sdpa_ncu import GRIDS, grid  # noqa: E402

from iosim import Options, load_profile, simulate  # noqa: E402
from iosim.gpu.sdpa import problem_of  # noqa: E402
from iosim.run.heap import keep_freed_memory  # noqa: E402
from iosim.run.l2_edge import EDGE  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", required=True, choices=sorted(GRIDS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--hw", default="h200", help="the profile of the GPU that will measure it (default h200)")
    ap.add_argument("--markdown", help="also write a table of each config's launch notes and main DRAM reads")
    ap.add_argument("--l2-edge", action="store_true", help="also each pass's reads at 0.9 and 1.1 times the L2's room")
    ap.add_argument("--backend", choices=["flash", "cudnn"], default="flash",
                    help="cudnn: the cudnn preset's launches and the bytes each one is checked on")
    args = ap.parse_args()
    keep_freed_memory()          # the L2 model's large arrays reuse the heap's pages (iosim/run/heap.py)
    profile = load_profile(args.hw)
    if args.backend == "cudnn":
        return _write(args.out, _cudnn_rows(args.grid, profile), f"{args.hw} profile, --kernel cudnn, the preset's "
                      "launches and checked bytes")
    rows = flash_rows(args.grid, profile, edge=args.l2_edge)
    _write(args.out, rows, f"{args.hw} profile, --kernel flash-attn-2, L2 model on" + (", --l2-edge" * args.l2_edge))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(notes_table(rows))


def flash_rows(name: str, profile, edge: bool = False) -> list[dict]:
    """Per configuration of grid ``name``: the flash-attn-2 preset's kernel times and bounds, DRAM
    bytes (with the profile's L2, and as one LRU: ``one_lru``) and each pass's notes; with ``edge``, each pass's
    ``l2_edge`` too (iosim/run/l2_edge.py), played on the profile's L2."""
    one = one_lru(profile)
    rows = []
    for d in GRIDS[name]["head_dims"]:
        for cfg in grid(d, name):
            r, r1 = (simulate(p, "fa2", problem_of(cfg), passes="forward+backward",
                              options=Options(kernel="flash-attn-2", cache=True, l2_edge=edge and p is profile))
                     for p in (profile, one))
            launches = r.to_dict()["options"]["launches"]
            rows.append({"config": cfg, "kernel_times": {k: {"predicted_s": t.predicted_s, "bound": t.bound}
                                                         for k, t in r.kernel_times.items()},
                         "dram": {k: _dram(s) for k, s in r.cache.kernels.items()},
                         "one_lru": {k: _dram(s) for k, s in r1.cache.kernels.items()},
                         "notes": {x["pass"]: {k: x[k] for k in ("l2_note", "time_note") if x.get(k)}
                                   for x in launches},
                         **({"l2_edge": {x["pass"]: x["l2_edge"] for x in launches}} if edge else {})})
    return rows


def _cudnn_rows(name: str, profile) -> list[dict]:
    """Per configuration of grid ``name``: the cudnn preset's launches, each with the bytes
    ``iosim.gpu.cudnn.compare`` checks it on (no L2 model: the checks are exact counts)."""
    from iosim.gpu import cudnn
    rows = []
    for d in GRIDS[name]["head_dims"]:
        for cfg in grid(d, name, backend="cudnn"):
            result, _ = cudnn.predict(problem_of(cfg), profile, cache=False)
            rows.append({"config": cfg, "launches": [{"kernel": x["kernel"], "checks": x["checks"]}
                                                     for x in cudnn.predicted_launches(result, profile)]})
    return rows


def _write(out: str, rows: list, what: str) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    written = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"written": written, "note": f"predicted before the device run (iosim at {commit}, {what})", "rows": rows}, f, indent=1)
    print(f"{len(rows)} configurations predicted -> {out}")


#: each note of docs/known-limits.md, by the words that open it, and its short name in a table
NOTES = {"LONG_CAUSAL_NOTE": "long causal", "WAVES_D128_NOTE": "waves d128", "SPREAD_GROUP_NOTE": "spread group",
         "FETCH_NOTE": "fetch (time)", "ONE_QUERY_BLOCK_NOTE": "one query block (time)",
         "SHARED_SECTORS_NOTE": "shared sectors", "GQA_DECODE_NOTE": "GQA decode", "LONG_BACKWARD_NOTE": "long backward",
         "WAVE_ROWS_NOTE": "wave rows", "PARTIAL_CODE_NOTE": "partial code", "WIDE_CAUSAL_NOTE": "wide causal"}


def note_names(text: str) -> list[str]:
    """The short names of the notes in a launch's note ``text`` (in NOTES' order)."""
    from iosim.kernels import flash_code, plan
    return [short for name, short in NOTES.items()
            if getattr(flash_code if name == "PARTIAL_CODE_NOTE" else plan, name).split("{")[0][:60] in text]


def notes_table(rows: list) -> str:
    """Markdown: per config, its shape, each pass's notes and the main kernels' predicted DRAM reads."""
    out = ["| d | N_q × N_kv | B × H (H_kv) | causal | dtype | forward's notes | backward's notes | "
           "main DRAM read, predicted (MB) |", "|---:|---|---|:---:|---|---|---|---|"]
    for row in rows:
        c, dram = row["config"], row["dram"]
        nq, nkv = c.get("seq_len_q", c["seq_len"]), c.get("seq_len_kv", c["seq_len"])
        notes = [", ".join(note_names(" ".join(row["notes"].get(p, {}).values()))) or "none"
                 for p in ("forward", "backward")]
        main = ", ".join(f"{k} {dram[k]['read_bytes'] / 1e6:.1f}" + _edge(row, k)
                         for k in ("main", "splitkv", "dq_dk_dv") if k in dram)
        out.append(f"| {c['head_dim']} | {nq:,} × {nkv:,} | {c['batch']} × {c['heads']} ({c.get('kv_heads', c['heads'])}) "
                   f"| {'y' if c['causal'] else ''} | {c.get('dtype', 'fp16')} | {notes[0]} | {notes[1]} | {main} |")
    return "\n".join(out) + "\n"


def _edge(row: dict, kernel: str) -> str:
    """" (edge S %)" after a main kernel's reads where its pass's L2 edge spread past 5 % (rows made with --l2-edge)."""
    for e in row.get("l2_edge", {}).values():
        if e["kernel"] == kernel and e["spread"] > EDGE:
            return f" (edge {e['spread']:.0%})"
    return ""


def _dram(stats) -> dict:
    return {"read_bytes": stats.dram_read_bytes, "write_bytes": stats.dram_write_bytes}


if __name__ == "__main__":
    main()

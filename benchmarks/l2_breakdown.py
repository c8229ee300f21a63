"""Where the L2's reads go, measured against the model: near misses, lookups at the home over
the fabric, hits there, DRAM (docs/validation/2026-12-03-l2-breakdown.md).

Measure (device):  PYTHONPATH=$PWD python3 benchmarks/sdpa_ncu.py --out DIR --grid s19 --metric-set l2
Compare (any machine):  python benchmarks/l2_breakdown.py DIR [--hw h100-sxm]

Per main kernel (forward, split-KV forward, backward), MB, model / measured:

* ``reads``: bytes the SMs read through their own partition (``lts__t_sectors_srcunit_tex_op_read``);
* ``near miss``: of those, missed there;
* ``looked``: lookups at the other partition, the line's home (``..._srcunit_ltcfabric_op_read``);
* ``far hit``: served there;
* ``acc``: the backward's dQaccum, which the GPU adds with reductions (``..._tex_op_red``) and
  the model plays as a read and a write of the same chunk; its near misses;
* ``DRAM``: bytes read from DRAM.

The model's side comes from its partitions' play (``partitions._played``, wrapped here to
keep each play's masks; the shipped model is unchanged). A stream played from copies of
heads or a sample of chunks counts a part of the launch only: ``reads`` then differs from
the measured, and the row's components are not comparable (its DRAM bytes are).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from iosim import Options, load_profile, simulate  # noqa: E402
from iosim.gpu.ncu import read_launches, read_raw  # noqa: E402
from iosim.gpu.sdpa import label, problem_of  # noqa: E402
from iosim.models.cache import partitions  # noqa: E402

MAIN = ("main", "splitkv", "dq_dk_dv")
_PLAYS: list[dict] = []


def _spy(played):
    def wrapped(turn, near_hit, looked, keys, sizes, writes, sides, homes, cuts, groups, order, *rest):
        acc = (writes == 0) & np.isin(keys, keys[writes > 0])     # read and written: dQaccum
        read = (writes == 0) & ~acc
        far_hit = partitions.far_hits(turn, homes, looked)
        mb = lambda m: float(sizes[m].sum()) / 1e6                # noqa: E731
        _PLAYS.append({"reads": mb(read), "near miss": mb(read & ~near_hit), "looked": mb(read & looked),
                       "far hit": mb(read & far_hit), "acc": mb(acc), "acc near miss": mb(acc & ~near_hit)})
        return played(turn, near_hit, looked, keys, sizes, writes, sides, homes, cuts, groups, order, *rest)
    return wrapped


def measured(m: dict) -> dict:
    def s(src, op, x):
        return m.get(f"lts__t_sectors_srcunit_{src}_op_{op}_lookup_{x}.sum", 0.0) * 32 / 1e6
    return {"reads": s("tex", "read", "hit") + s("tex", "read", "miss"), "near miss": s("tex", "read", "miss"),
            "looked": s("ltcfabric", "read", "hit") + s("ltcfabric", "read", "miss"),
            "far hit": s("ltcfabric", "read", "hit"), "acc": s("tex", "red", "hit") + s("tex", "red", "miss"),
            "acc near miss": s("tex", "red", "miss"), "DRAM": m["dram__bytes_read.sum"] / 1e6}


def modelled(cfg: dict, profile) -> dict:
    """kernel -> the model's components (as :func:`measured`) for one config's launches."""
    _PLAYS.clear()
    r = simulate(profile, "fa2", problem_of(cfg), passes="forward+backward",
                 options=Options(kernel="flash-attn-2", cache=True))
    plays = dict(zip(r.cache.kernels, _PLAYS)) if len(_PLAYS) == len(r.cache.kernels) else {}
    return {k: {**plays.get(k, {}), "DRAM": s.dram_read_bytes / 1e6} for k, s in r.cache.kernels.items()}


def rows(raw_dir: str, hw: str = "h200") -> list[dict]:
    meta = json.load(open(os.path.join(raw_dir, "sdpa_configs.json")))
    profile, out, played = load_profile(hw), [], partitions._played
    partitions._played = _spy(played)
    try:
        for d, configs in meta["grid"].items():
            launches = [x for x in read_launches(read_raw(os.path.join(raw_dir, f"sdpa_d{d}.csv")))
                        if label(x["name"]) in MAIN]
            for cfg, pair in zip(configs, zip(launches[::2], launches[1::2])):
                model = modelled(cfg, profile)
                out += [{"config": cfg, "kernel": label(x["name"]), "model": model[label(x["name"])],
                         "measured": measured(x["metrics"])} for x in pair]
    finally:
        partitions._played = played
    return out


def table(found: list[dict]) -> str:
    cols = ("reads", "near miss", "looked", "far hit", "acc", "acc near miss", "DRAM")
    lines = ["| d | N_q × N_kv | B×H (H_kv) | causal | kernel | " + " | ".join(cols) + " | DRAM ratio |",
             "|---:|---|---|:---:|---|" + "---:|" * (len(cols) + 1)]
    for r in found:
        c, m, g = r["config"], r["model"], r["measured"]
        n_q, n_kv = c.get("seq_len_q", c["seq_len"]), c.get("seq_len_kv", c["seq_len"])
        cells = [f"{m[k]:,.1f} / {g[k]:,.1f}" if k in m else f"— / {g[k]:,.1f}" for k in cols]
        lines.append(f"| {c['head_dim']} | {n_q:,} × {n_kv:,} | {c['batch']}×{c['heads']} ({c.get('kv_heads', c['heads'])})"
                     f" | {'y' if c['causal'] else ''} | {r['kernel']} | " + " | ".join(cells)
                     + f" | {m['DRAM'] / g['DRAM']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw_dir", help="a benchmarks/sdpa_ncu.py --metric-set l2 run")
    ap.add_argument("--hw", default="h200", help="the profile the GPU of the run is (default h200; h100-sxm)")
    args = ap.parse_args()
    print(table(rows(args.raw_dir, args.hw)))


if __name__ == "__main__":
    main()

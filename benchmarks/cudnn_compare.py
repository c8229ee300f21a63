"""cuDNN's fused attention launches as Nsight Compute measured them, laid out to be read (issue 14,
item 4). Runs anywhere; reads what ``benchmarks/sdpa_ncu.py --backend cudnn`` wrote on the
device machine (cudnn_configs.json, cudnn_d{D}.csv, cudnn_status_d{D}.jsonl).

    python benchmarks/cudnn_compare.py RAW_DIR [--json OUT.json] [--preset]

``--preset``: instead, every measured launch beside the ``cudnn`` preset's bytes (one table;
:func:`compare`): the TMA kernels' loads against the L1's crossbar bytes (TMA loads, plain
loads and the scheduler's atomics all arrive through it), the element-wise kernels' against
the SASS load bytes; stores, TMA stores and TMA reductions.

Per config: the bytes of Q, K, V, O, the backend's error where it refused the shape, and the
loads of the re-read hypotheses that sdpa_ncu.py recorded (several tiles each) divided by
Q+K+V. Per kernel launch (the launches after the config's marker kernel): the kernel, grid,
block, cluster, registers, shared memory (static + dynamic), time, CTAs launched, each
candidate load metric divided by Q+K+V and each store metric divided by O, and the TMA counters
this ncu had. How many times K and V were read (the query blocks, beside the grid's dimensions)
is read off these tables; the script chooses no tile.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from iosim import IosimError, load_profile  # noqa: E402
from iosim.gpu import cudnn  # noqa: E402  (the comparison `iosim validate --vendor cudnn` makes)
from iosim.gpu.cudnn import split_by_marker  # noqa: E402
from iosim.gpu.ncu import raw_exists, read_launches, read_raw  # noqa: E402
from iosim.gpu.sdpa import problem_of  # noqa: E402

#: (column, metrics summed, bytes per unit): the candidates for a launch's global loads
LOADS = [
    ("LSU ld", ("l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum",), 1),
    ("SASS ld+ldgsts", ("smsp__sass_data_bytes_mem_global_op_ld.sum",
                        "smsp__sass_data_bytes_mem_global_op_ldgsts.sum"), 1),
    ("xbar→L1 bytes", ("l1tex__m_xbar2l1tex_read_bytes.sum",), 1),
    ("xbar→L1 sectors", ("l1tex__m_xbar2l1tex_read_sectors.sum",), 32),
    ("L2 read, tex", ("lts__t_sectors_srcunit_tex_op_read.sum",), 32),
    ("L2 read, all", ("lts__t_sectors_op_read.sum",), 32),
    ("DRAM read", ("dram__bytes_read.sum",), 1),
]
#: the same for stores (and reductions, where dQ is accumulated)
STORES = [
    ("LSU st", ("l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum",), 1),
    ("SASS st", ("smsp__sass_data_bytes_mem_global_op_st.sum",), 1),
    ("SASS red+atom", ("smsp__sass_data_bytes_mem_global_op_red.sum",
                       "smsp__sass_data_bytes_mem_global_op_atom.sum"), 1),
    ("L1→xbar bytes", ("l1tex__m_l1tex2xbar_write_bytes.sum",), 1),
    ("L2 write, tex", ("lts__t_sectors_srcunit_tex_op_write.sum",), 32),
    ("L2 red, tex", ("lts__t_sectors_srcunit_tex_op_red.sum",), 32),
    ("L2 write, all", ("lts__t_sectors_op_write.sum",), 32),
    ("DRAM write", ("dram__bytes_write.sum",), 1),
]
PREFIX = "cudnn"


def short_name(name: str) -> str:
    """A kernel's demangled name without its return type, template arguments and parameters."""
    name = name.replace("(anonymous namespace)", "{anon}").removeprefix("void ").strip()
    out, depth = [], 0
    for ch in name:
        if ch == "(" and depth == 0:
            break
        if ch == "<":
            depth += 1
            out += ["<…>"] if depth == 1 else []
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def metric_bytes(metrics: dict, names: tuple, unit: int) -> float | None:
    """The sum of ``names`` times ``unit``; None where the launch has none of them."""
    found = [metrics[n] for n in names if n in metrics]
    return sum(found) * unit if found else None


def tma_scale(name: str) -> int | None:
    """Bytes per unit of a TMA counter: 32 for sectors, 1 for bytes, None (a count) otherwise."""
    return 32 if "sector" in name else 1 if "byte" in name else None


def launch_row(launch: dict, expected: dict, tma_metrics: list[str]) -> dict:
    """One launch: kernel, grid, block, cluster, registers, shared memory, time, CTAs, and the
    load candidates ÷ (Q+K+V), the store candidates ÷ O, the TMA counters (÷ (Q+K+V) where
    they count bytes or sectors, else the count)."""
    m = launch["metrics"]
    get = m.get
    cluster = tuple(int(get(f"launch__cluster_dim_{a}", 0)) for a in "xyz")
    smem = [get("launch__shared_mem_per_block_static"), get("launch__shared_mem_per_block_dynamic")]
    ratio = lambda value, total: None if value is None else value / total  # noqa: E731
    tma = {}
    for name in tma_metrics:
        if name in m:
            scale = tma_scale(name)
            tma[name] = m[name] if scale is None else m[name] * scale / expected["QKV"]
    return {"kernel": launch["name"], "short": short_name(launch["name"]), "grid": launch["grid"],
            "block": launch["block"], "cluster": "×".join(map(str, cluster)) if any(cluster) else "",
            "registers": get("launch__registers_per_thread"),
            "smem": None if None in smem else int(sum(smem)), "time_us": get("gpu__time_duration.sum", math.nan) / 1e3,
            "ctas": get("sm__ctas_launched.sum"),
            "loads": {label: ratio(metric_bytes(m, names, unit), expected["QKV"]) for label, names, unit in LOADS},
            "stores": {label: ratio(metric_bytes(m, names, unit), expected["O"]) for label, names, unit in STORES},
            "tma": tma}


def read_status(path: str) -> dict[int, dict]:
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {e["index"]: e for e in map(json.loads, filter(str.strip, f))}


def records(raw_dir: str) -> list[dict]:
    """One record per config, in launch order: d, index, config, status (the target's line),
    note (why there are no launches, if so), rows (launch_row per launch)."""
    with open(os.path.join(raw_dir, f"{PREFIX}_configs.json")) as f:
        meta = json.load(f)
    out = []
    for d, configs in meta["grid"].items():
        status = read_status(os.path.join(raw_dir, f"{PREFIX}_status_d{d}.jsonl"))
        groups, note = _groups(os.path.join(raw_dir, f"{PREFIX}_d{d}.csv"), meta.get("marker", "spin_kernel"))
        if len(groups) > len(configs):
            raise IosimError(f"{PREFIX}_d{d}.csv: {len(groups)} marker launches for {len(configs)} configs")
        for i, cfg in enumerate(configs):
            rows = [launch_row(x, cfg["expected"], meta.get("tma_metrics", [])) for x in groups[i]] \
                if i < len(groups) else []
            out.append({"d": int(d), "index": i, "config": cfg, "status": status.get(i),
                        "note": note or _missing(i, groups),
                        "rows": rows})
    return out


def _missing(i: int, groups: list[list[dict]]) -> str:
    """Why config ``i`` has no launches ("" where it has some)."""
    if i >= len(groups):
        return "not measured (the run stopped before it)"
    return "" if groups[i] else "no launch after its marker"


def _groups(path: str, marker: str) -> tuple[list[list[dict]], str]:
    if not raw_exists(path):
        return [], "no CSV (the budget ran out before this head dim)"
    text = read_raw(path)
    try:
        groups, before = split_by_marker(read_launches(text), marker)
    except IosimError:
        return [], "ncu wrote no metric table: " + " | ".join(text.strip().splitlines()[-3:])[:300]
    return groups, f"{len(before)} launch(es) before the first marker, left out" if before else ""


def fmt(x, digits: int = 3) -> str:
    """``x`` with ``digits`` decimals (0: a whole number with thousands separators); "-" for none."""
    if x is None or math.isnan(x):
        return "-"
    return f"{round(x):,}" if digits == 0 else f"{x:.{digits}f}"


def header(rec: dict) -> list[str]:
    """A config's title, its tensors, the hypotheses' loads ÷ (Q+K+V), and why it has no launches."""
    c, e = rec["config"], rec["config"]["expected"]
    n_q, n_kv = c.get("seq_len_q", c["seq_len"]), c.get("seq_len_kv", c["seq_len"])
    kv = f"/{c['kv_heads']}" if "kv_heads" in c else ""
    lines = [f"## d={rec['d']} N_q={n_q:,} N_kv={n_kv:,} B×H={c['batch']}×{c['heads']}{kv} "
             f"{'causal' if c['causal'] else 'full'} {c.get('dtype', 'fp16')}",
             f"Q {e['Q']:,} B, K {e['K']:,} B, V {e['V']:,} B, O {e['O']:,} B, LSE {e['LSE']:,} B; "
             f"Q+K+V {e['QKV']:,} B"]
    for name, n, what in (("forward", n_q, "B_r"), ("backward", n_kv, "B_c")):
        tiles = sorted(e[name], key=int)
        cells = ", ".join(f"{what}={t}: {e[name][t] / e['QKV']:.3f} ({math.ceil(n / int(t))} blocks)" for t in tiles)
        lines.append(f"hypothesis {name} loads ÷ (Q+K+V): {cells}")
    s = rec["status"] or {}
    if s.get("error"):
        lines.append(f"refused: {s['error'].splitlines()[0][:300]}")
    for w in s.get("warnings", [])[:3]:
        lines.append(f"warning: {w.splitlines()[0][:300]}")
    if rec["note"]:
        lines.append(rec["note"])
    return lines


def table(rec: dict) -> list[str]:
    """One markdown row per launch of the config."""
    if not rec["rows"]:
        return []
    tma = list(dict.fromkeys(k for r in rec["rows"] for k in r["tma"]))
    head = ["#", "kernel", "grid", "block", "cluster", "regs", "smem B", "µs", "CTAs"] + \
           [f"{label} ÷QKV" for label, _, _ in LOADS] + [f"{label} ÷O" for label, _, _ in STORES] + tma
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, r in enumerate(rec["rows"]):
        cells = [str(i), r["short"], r["grid"], r["block"], r["cluster"], fmt(r["registers"], 0), fmt(r["smem"], 0),
                 fmt(r["time_us"], 1), fmt(r["ctas"], 0)]
        cells += [fmt(r["loads"][label]) for label, _, _ in LOADS] + [fmt(r["stores"][label]) for label, _, _ in STORES]
        cells += [fmt(r["tma"].get(k)) for k in tma]
        out.append("| " + " | ".join(cells) + " |")
    names = dict.fromkeys(r["kernel"] for r in rec["rows"])
    return out + [""] + [f"kernel: {name}" for name in names]


def report(recs: list[dict]) -> str:
    return "\n".join(line for rec in recs for line in header(rec) + [""] + table(rec) + [""])


def compare(raw_dir: str) -> list[dict]:
    """One row per (measured launch, quantity): config, kernel, metric, measured, predicted
    (:func:`iosim.gpu.cudnn.compare`, the L2 model off)."""
    rows = []
    with open(os.path.join(raw_dir, f"{PREFIX}_configs.json")) as f:
        meta = json.load(f)
    h200 = load_profile("h200")
    for d, configs in meta["grid"].items():
        groups, _ = _groups(os.path.join(raw_dir, f"{PREFIX}_d{d}.csv"), meta.get("marker", "spin_kernel"))
        for i, c in enumerate(configs):
            try:
                launches = cudnn.compare(problem_of(c), groups[i] if i < len(groups) else [], h200, cache=False)
            except IosimError as exc:
                raise IosimError(f"d={d} config {i}: {exc}") from None
            for launch in launches["launches"]:
                for check in launch["checks"]:
                    rows.append({"d": int(d), "index": i, "config": c, "kernel": launch["kernel"],
                                 "name": launch["name"], "quantity": check["quantity"], "metric": check["metric"],
                                 "measured": check["measured"], "predicted": check["predicted"]})
    return rows


def compare_report(rows: list[dict]) -> str:
    head = ["d", "#", "config", "kernel", "quantity", "metric", "measured B", "iosim B", "ratio"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        c = r["config"]
        cfg = (f"{c.get('seq_len_q', c['seq_len'])}/{c.get('seq_len_kv', c['seq_len'])} {c['batch']}×{c['heads']}"
               f"{'/' + str(c['kv_heads']) if 'kv_heads' in c else ''} {'causal' if c['causal'] else 'full'} "
               f"{c.get('dtype', 'fp16')}")
        ratio = "exact" if r["measured"] == r["predicted"] else f"{r['measured'] / r['predicted']:.5f}"
        out.append(f"| {r['d']} | {r['index']} | {cfg} | {r['kernel']} | {r['quantity']} | {r['metric'].split('.')[0]} "
                   f"| {r['measured']:,} | {r['predicted']:,} | {ratio} |")
    exact = sum(r["measured"] == r["predicted"] for r in rows)
    return "\n".join(out + ["", f"{exact} of {len(rows)} quantities exact"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("raw_dir")
    parser.add_argument("--json", help="also write the records (full kernel names, every ratio) here")
    parser.add_argument("--preset", action="store_true", help="compare every launch with the cudnn preset")
    args = parser.parse_args(argv)
    try:
        if args.preset:
            print(compare_report(compare(args.raw_dir)))
            return 0
        recs = records(args.raw_dir)
    except (OSError, ValueError, KeyError, IosimError) as exc:
        print(f"cudnn_compare: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    if args.json:
        with open(args.json, "w") as f:
            json.dump(recs, f, indent=1)
    print(report(recs))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A one-step backward block's cost, measured (device machine): flash-attn 2's decode backwards.

The kernel time model under-predicts flash-attn 2's backwards of a single query block (the
decodes' backwards; ``plan.ONE_QUERY_BLOCK_NOTE``): their blocks take one key-block step, and
session 24 counted about one more step's worth of instructions a block outside it
(docs/validation/2026-12-04-red-contention.md). This measures that cost directly: 132 heads of
``r`` key blocks each, one query row (N_q = 1), B = 1, fp16, so that every SM runs ``r`` blocks
one after another, alone (the main backward kernel holds one block an SM). Time against ``r`` is
a line whose slope is one block's duration; a second length, N_q = B_r + 1, gives each block two
steps, so the difference of the two slopes is one step and the rest of the one-step slope is the
block's own start and end. Each kHeadDim is run at its own head dim and at one below it
(``Is_even_K`` false). ncu's ``gpu__time_duration`` (its default cache control, as every committed
grid), the SMs' warp instructions and the DRAM bytes.

Run (device):  python3 benchmarks/sdpa_decode_bwd_cost.py --out DIR      (ncu; writes DIR/decode_bwd_cost.json)
Target:        python3 benchmarks/sdpa_decode_bwd_cost.py --target
Table:         python3 benchmarks/sdpa_decode_bwd_cost.py --table DIR [--hw PROFILE]     (DECODE_SET as it ran)
Sweep:         python3 benchmarks/sdpa_decode_bwd_cost.py --sweep DIR [--hw PROFILE]     (DECODE_SET=gqa-sweep's DIR)
Slopes:        python3 benchmarks/sdpa_decode_bwd_cost.py --slopes FIRST_DIR ONE_HEAD_DIR [--hw PROFILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdpa_ncu  # noqa: E402  (also puts the repository on the path)
from sdpa_block_cost import machine, save, sdpa_calls  # noqa: E402
from sdpa_bwd_cost import BLOCK_KV  # noqa: E402  (kHeadDim -> the backward kernel's B_c)

from iosim.cli.main import main as iosim  # noqa: E402
from iosim.gpu.ncu import find_ncu, read_launches, read_raw  # noqa: E402

#: (head dim, the backward kernel's B_r) in launch order: each kHeadDim at its own size and below it
HEAD_DIMS = ((32, 128), (24, 128), (64, 128), (40, 128), (96, 64), (72, 64), (128, 64), (104, 64),
             (192, 64), (160, 64), (256, 64), (232, 64))
ROUNDS = (1, 4, 12)
HEADS = 132
REPEATS = 3
METRICS = ["gpu__time_duration.sum", "smsp__inst_executed.sum", "dram__bytes_read.sum",
           "sm__cycles_elapsed.avg.per_second"]
SWEEP_METRICS = [m for m in sdpa_ncu.L2_METRICS if m not in METRICS] + [
    "smsp__sass_data_bytes_mem_local_op_st.sum", "l1tex__m_l1tex2xbar_write_bytes.sum",
    "smsp__sass_data_bytes_mem_global_op_st.sum"]
KERNELS = {"flash_bwd_dq_dk_dv": "dq_dk_dv", "dot_do_o": "dot_do_o", "convert_dq": "convert_dq"}


def kernel_dim(d: int) -> int:
    return next(k for k in sorted(BLOCK_KV) if k >= d)


#: ``DECODE_SET`` (inherited by ncu's target process): unset, 132 heads of ``r`` key blocks; "one-head":
#: one head of 132·r key blocks and 8 query heads on 2 K/V heads of 33·r, N_q = 1 (as a long decode's
#: backward runs: every block of a round adds into the same dQaccum tile)
SET = os.environ.get("DECODE_SET", "")
#: "gqa-sweep": the GQA launches' DRAM reads against the window between a K/V head's readers, with
#: the L2's counters (``sdpa_ncu.L2_METRICS``) and the spilled registers' stores: 8 query heads on 2
#: K/V heads of 33·r key blocks (r = 4 … 12) at d = 24, 40, 64, 128, and on 4 and on 1 at d = 64
SWEEP = (4, 6, 8, 10, 12)


def configs(name: str = SET) -> list[dict]:
    """(d, heads, N_q, N_kv, rounds) in launch order: N_q = 1 at every round count, N_q = B_r + 1 at the last."""
    out = []
    if name == "gqa-sweep":
        groups = ([(d, 2, r) for d in (64, 128, 24, 40) for r in SWEEP] +
                  [(64, kv, r) for kv in (4, 1) for r in (4, 8, 12)])
        return [{"d": d, "heads": 8, "kv_heads": kv, "n_q": 1, "n_kv": BLOCK_KV[kernel_dim(d)] * HEADS // 4 * r,
                 "rounds": 2 * r, "steps": 1} for d, kv, r in groups]
    if name == "one-head":
        for d, _ in HEAD_DIMS:
            bc = BLOCK_KV[kernel_dim(d)]
            out += [{"d": d, "heads": 1, "n_q": 1, "n_kv": bc * HEADS * r, "rounds": r, "steps": 1}
                    for r in ROUNDS[1:]]
            out += [{"d": d, "heads": 8, "kv_heads": 2, "n_q": 1, "n_kv": bc * HEADS // 4 * r, "rounds": 2 * r,
                     "steps": 1} for r in ROUNDS[1:]]
        return out
    for d, br in HEAD_DIMS:
        bc = BLOCK_KV[kernel_dim(d)]
        out += [{"d": d, "heads": HEADS, "n_q": 1, "n_kv": bc * r, "rounds": r, "steps": 1} for r in ROUNDS]
        out.append({"d": d, "heads": HEADS, "n_q": br + 1, "n_kv": bc * ROUNDS[-1], "rounds": ROUNDS[-1],
                    "steps": 2})
    return out


def target() -> None:
    for c in configs():
        sdpa_calls(c["d"], c["heads"], c["n_q"], c["n_kv"], REPEATS, backward=True, kv_heads=c.get("kv_heads"))


def medians(text: str, name: str = SET) -> list[dict]:
    """Each configuration of set ``name`` with the median (by time) of its main backward's three
    launches in ncu's CSV ``text``."""
    launches = [(next((v for k, v in KERNELS.items() if k in ln["name"]), None), ln["metrics"])
                for ln in read_launches(text)]
    launches = [x for x in launches if x[0] is not None]
    want = 3 * REPEATS * len(configs(name))
    if len(launches) != want:
        raise SystemExit(f"{len(launches)} launches, {want} expected")
    rows = []
    for i, c in enumerate(configs(name)):
        calls = [m for k, m in launches[3 * REPEATS * i:3 * REPEATS * (i + 1)] if k == "dq_dk_dv"]
        calls.sort(key=lambda m: m.get(METRICS[0], 0))
        rows.append({**c, "median": calls[len(calls) // 2]})
    return rows


def summarise(text: str, out: str, info: dict) -> None:
    save(out, "decode_bwd_cost.json", {**info, "set": SET, "rows": medians(text)})
    print(f"{3 * REPEATS * len(configs())} launches")


def block_us(rows: list[dict], d: int, heads: int, lo: int, hi: int) -> float:
    """One one-step block's measured µs: the slope of the time from ``lo`` to ``hi`` rounds."""
    t = {c["rounds"]: c["median"]["gpu__time_duration.sum"] * 1e-3 for c in rows
         if c["d"] == d and c["heads"] == heads and c["steps"] == 1}
    return (t[hi] - t[lo]) / (hi - lo)


def block_instructions(rows: list[dict], d: int) -> tuple[float, float]:
    """Warp instructions a block of 132 heads at the last round count: one step, two steps."""
    got = {c["steps"]: c["median"]["smsp__inst_executed.sum"] / (HEADS * c["rounds"]) for c in rows
           if c["d"] == d and c["heads"] == HEADS and c["rounds"] == ROUNDS[-1]}
    return got[1], got[2]


def model_json(c: dict, hw: str) -> dict:
    """``iosim simulate --format json`` of the backward of configuration ``c`` on ``hw``."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        iosim(["simulate", "--hw", hw, "--seq-len-q", str(c["n_q"]), "--seq-len-kv", str(c["n_kv"]), "-d", str(c["d"]),
               "-H", str(c["heads"]), "--kv-heads", str(c.get("kv_heads", c["heads"])), "--algo", "fa2",
               "--kernel", "flash-attn-2", "--pass", "backward", "--format", "json"])
    return json.loads(buf.getvalue())


def model_us(c: dict, hw: str) -> float:
    """The kernel time model's microseconds for the main backward of configuration ``c`` on ``hw``."""
    return model_json(c, hw)["kernel_times"]["dq_dk_dv"]["predicted_s"] * 1e6


def read_misses(m: dict) -> float:
    """DRAM bytes the L2's read lookups missed: over the fabric at the line's home, and near where the
    near partition is the home (the SMs' near misses less those sent over the fabric)."""
    sectors = m["lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"] - \
        m["lts__t_sectors_srcunit_ltcfabric_op_read_lookup_hit.sum"]
    return 32 * sectors


def sweep(path: str, hw: str) -> None:
    """The GQA sweep's main backward: DRAM reads (the read lookups' misses, the rest: the fills of
    sectors written in part) and writes, measured and the L2 model's (MB)."""
    print("| d | K/V heads | rounds | a K/V head's K and V (MB) | DRAM read: measured / model (ratio) | "
          "read misses, other fills | DRAM write: measured / model |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for c in json.load(open(os.path.join(path, "decode_bwd_cost.json")))["rows"]:
        k = model_json(c, hw)["l2"]["per_kernel"]["dq_dk_dv"]
        m = c["median"]
        read, write, missed = m["dram__bytes_read.sum"], m["dram__bytes_write.sum"], read_misses(m)
        print(f"| {c['d']} | {c['kv_heads']} | {c['rounds']} | {c['n_kv'] * c['d'] * 4 / 1e6:.1f} | "
              f"{read / 1e6:.2f} / {k['dram_read_bytes'] / 1e6:.2f} ({k['dram_read_bytes'] / read:.3f}) | "
              f"{missed / 1e6:.2f}, {(read - missed) / 1e6:.2f} | "
              f"{write / 1e6:.1f} / {k['dram_write_bytes'] / 1e6:.1f} |")


def table(path: str, hw: str) -> None:
    """Measured against the model: per kHeadDim, the one-step block's slope, the step, and the rest."""
    rows = json.load(open(os.path.join(path, "decode_bwd_cost.json")))["rows"]
    print("| d | heads (K/V) | rounds | steps | measured µs | model µs | ratio | warp instructions a block |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for c in rows:
        t, p = c["median"]["gpu__time_duration.sum"] * 1e-3, model_us(c, hw)
        inst = c["median"]["smsp__inst_executed.sum"] / (HEADS * c["rounds"])
        print(f"| {c['d']} | {c['heads']} ({c.get('kv_heads', c['heads'])}) | {c['rounds']} | {c['steps']} | "
              f"{t:.2f} | {p:.2f} | {t / p:.3f} | {inst:,.0f} |")


def slopes(first: str, one_head: str, hw: str) -> None:
    """Per head dim: a one-step block's duration (the slope of time against rounds, 4 to 12 rounds,
    or 8 to 24 for the GQA launches), measured and in the model, in each layout; and the warp
    instructions of a one-step and a two-step block (132 heads)."""
    first_rows = json.load(open(os.path.join(first, "decode_bwd_cost.json")))["rows"]
    head_rows = json.load(open(os.path.join(one_head, "decode_bwd_cost.json")))["rows"]

    def model_slope(rows, d, heads, lo, hi):
        m = {c["rounds"]: model_us(c, hw) for c in rows if c["d"] == d and c["heads"] == heads and c["steps"] == 1}
        return (m[hi] - m[lo]) / (hi - lo)

    print("| d (kHeadDim) | 132 heads: measured / model µs | one head | 8 heads on 2 (GQA) | "
          "warp instructions: one step / two steps (difference) |")
    print("|---|---:|---:|---:|---:|")
    for d, _ in HEAD_DIMS:
        cells = ((first_rows, HEADS, 4, 12), (head_rows, 1, 4, 12), (head_rows, 8, 8, 24))
        one, two = block_instructions(first_rows, d)
        print(f"| {d} ({kernel_dim(d)}) | " + " | ".join(
            f"{block_us(r, d, h, lo, hi):.2f} / {model_slope(r, d, h, lo, hi):.2f}" for r, h, lo, hi in cells) +
            f" | {one:,.0f} / {two:,.0f} ({two - one:,.0f}) |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--target", action="store_true")
    ap.add_argument("--table")
    ap.add_argument("--sweep", metavar="SWEEP_DIR")
    ap.add_argument("--slopes", nargs=2, metavar=("FIRST_DIR", "ONE_HEAD_DIR"))
    ap.add_argument("--hw", default="h200")
    ap.add_argument("--summarise", metavar="NCU_CSV", help="only write --out's JSON from a saved ncu.csv")
    args = ap.parse_args()
    if args.target:
        target()
    elif args.sweep:
        sweep(args.sweep, args.hw)
    elif args.slopes:
        slopes(*args.slopes, args.hw)
    elif args.table:
        table(args.table, args.hw)
    elif args.summarise:
        summarise(read_raw(args.summarise), args.out, json.load(open(os.path.join(args.out, "machine.json"))))
    else:
        os.makedirs(args.out, exist_ok=True)
        metrics = METRICS + (SWEEP_METRICS if SET == "gqa-sweep" else [])
        text = sdpa_ncu.run_ncu(find_ncu(), "regex:flash_bwd", metrics, [os.path.abspath(__file__), "--target"],
                                os.path.join(args.out, "ncu.csv"), timeout=None)
        summarise(text, args.out, machine(args.out))


if __name__ == "__main__":
    main()

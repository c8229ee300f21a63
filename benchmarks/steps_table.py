"""Derive a kernel's measured steps from ``benchmarks/triton_steps.py``'s (or
``benchmarks/cupy_steps.py``'s) timings (docs/triton.md, "Measured steps"; docs/gpu.md):

    python benchmarks/steps_table.py docs/validation/2026-12-02-triton-steps \
        docs/validation/2026-12-02-triton-steps/run1 --write iosim/kernels/triton_steps_h200.json
    python benchmarks/steps_table.py docs/validation/2026-12-02-cupy-steps --kernel cupy-fa2-mma \
        --write iosim/kernels/cupy_fa2_steps_h200.json

Per (configuration, d), fp16, from ``steps.csv``:

* ``step_s``: a step of a full round (``k`` blocks an SM, CUDA's occupancy), the slope of the
  two full launches of ``w`` waves, (T(N2) − T(N1)) / (w · (N2 − N1) / BLOCK_N);
* ``wave_s``: what a wave costs besides its steps once waves follow each other (the next
  blocks' Q loads and the last ones' O stores, partly under other blocks' steps), from the
  launch of 4·w waves at N1: (T(4w) − T(w)) / (3w) − n1 · step_s, at least 0;
* ``fill_s``: the launch's own fill and drain (the first Q loads, the last O stores),
  T(N1) − launch − w · n1 · step_s − (w − 1) · wave_s, at least 0 (the launch floor is the
  profile's, charged by the model);
* ``lone_step_s``: the same slope with one block an SM (132 blocks), where measured;
* ``round_s``, ``short_step_s`` (run4 on): a round's fixed cost besides its steps and its step,
  through the two short launches, blocks of about 4 and 16 key steps (:func:`_short`);
* ``causal_step_s``: the causal kernel's step of a full round, the mean of its two lengths,
  each from launches of B·H and 2·B·H heads: the SMs hold ``k`` blocks at once, so the added
  time times 132·k is the added blocks' waves plus their steps,
  (ΔT · 132 · k − Δblocks · wave_s) / Δsteps;
* the compiled kernel's registers, spills and shared bytes, and CUDA's blocks an SM.

bf16 is checked on four configurations (their steps over fp16's are in the table's
``dtype`` note); the preset uses the fp16 steps for both.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections import defaultdict

#: an empty kernel on the H200 (hardware_profiles/h200.yaml, measured.launch)
LAUNCH_S = 1.46e-6
SMS = 132


def _rows(folders: list) -> dict:
    """(config, d, dtype) -> {(kind, N, B·H): row} of the timings that ran; where several runs
    timed the same launch, the run with the lowest median (what else ran on the GPU only
    ever adds time: one run's median at N = 4,224 of 64×128, 4 warps, 2 stages, d = 64 was
    225 µs against 70 and 102 µs for its other run and its own minimum)."""
    out = defaultdict(dict)
    for folder in folders:
        with open(os.path.join(folder, "steps.csv")) as f:
            for r in csv.DictReader(f):
                if r["error"] or not r["median_s"]:
                    continue
                key = tuple(int(r[k]) for k in ("block_m", "block_n", "num_warps", "num_stages", "head_dim"))
                launch = (r["kind"], int(r["seq_len"]), int(r["batch_heads"]))
                kept = out[key + (r["dtype"],)].get(launch)
                if kept is None or float(r["median_s"]) < float(kept["median_s"]):
                    out[key + (r["dtype"],)][launch] = r
    return out


def _pair(timings: dict, kind: str) -> list:
    return sorted(((k, v) for k, v in timings.items() if k[0] == kind), key=lambda kv: (kv[0][1], kv[0][2]))


def _slope(pair: list, block_n: int, waves: int) -> float:
    """The step of two launches at lengths N1 < N2 with the same waves."""
    (k1, r1), (k2, r2) = pair
    n1, n2 = k1[1] // block_n, k2[1] // block_n
    return (float(r2["median_s"]) - float(r1["median_s"])) / (waves * (n2 - n1))


def _causal_step(pair: list, bm: int, bn: int, k: int, wave: float) -> float:
    """The causal kernel's step from its launches of B·H and 2·B·H at one length."""
    (ka, ra), (kb, rb) = pair
    n = ka[1]
    steps = sum(-(-min((i + 1) * bm, n) // bn) for i in range(-(-n // bm)))    # one head's block-steps
    added = kb[2] - ka[2]
    dt = float(rb["median_s"]) - float(ra["median_s"])
    return (dt * SMS * k - added * -(-n // bm) * wave) / (added * steps)


def _whole(launch: tuple, bm: int) -> bool:
    """Whether a launch (kind, N, B·H) was whole blocks of ``bm`` rows (so whole waves)."""
    return launch[1] % bm == 0


def entry(key: tuple, timings: dict) -> dict | None:
    """One configuration's steps (module docstring), or None where its launches did not run.
    Launches that were not whole blocks are left out (256-row blocks at N = 4,224 in the first
    two runs of 2026-12-02, 16.5 blocks a head: not whole waves; run3 timed them at 8,448 and
    16,896)."""
    bm, bn, *_ = key
    timings = {launch: r for launch, r in timings.items() if _whole(launch, bm)}   # (run3 re-timed them whole)
    full, more, lone = _pair(timings, "full"), _pair(timings, "waves"), _pair(timings, "lone")
    if len(full) != 2 or len(more) != 1:
        return None
    first = full[0][1]
    k, w, n1 = int(first["cuda_blocks_per_sm"]) or int(first["iosim_blocks_per_sm"]), int(first["waves"]), \
        full[0][0][1] // bn
    step = _slope(full, bn, w)
    t1, t4, w4 = float(first["median_s"]), float(more[0][1]["median_s"]), int(more[0][1]["waves"])
    wave = max((t4 - t1) / (w4 - w) - n1 * step, 0.0)
    fill = max(t1 - LAUNCH_S - w * n1 * step - (w - 1) * wave, 0.0)
    causal = [_causal_step([kv for kv in _pair(timings, "causal") if kv[0][1] == n], bm, bn, k, wave)
              for n in sorted({kk[1] for kk in timings if kk[0] == "causal"})]
    out = {"blocks_per_sm": k, "step_s": step, "wave_s": wave, "fill_s": fill,
           "lone_step_s": _slope(lone, bn, 1) if len(lone) == 2 else None,
           "causal_step_s": sum(causal) / len(causal) if causal else None,
           "registers": int(first["registers"]), "spills": int(first["spills"]),
           "shared_bytes": int(first["shared_bytes"])}
    short = _pair(timings, "short")
    if len(short) == 2:
        out.update(_short(short, bn, k))
    return out


def _short(pair: list, bn: int, k: int) -> dict:
    """A round's fixed cost and step from the two short launches (blocks of about 4 and 16
    key steps, whole waves): a round of the busiest SM is (T − launch) / rounds, and
    round(n) = round_s + n · short_step_s through the two."""
    rounds = []
    for (_, n, _bh), r in pair:
        per_sm = -(-int(r["blocks"]) // SMS)
        rounds.append(((float(r["median_s"]) - LAUNCH_S) / -(-per_sm // k), n // bn))
    (ra, na), (rb, nb) = rounds
    step = (rb - ra) / (nb - na)
    return {"round_s": max(ra - na * step, 0.0), "short_step_s": step}


#: kernel -> (the script that timed it, its key, what the machine file names its toolkit by)
KERNELS = {
    "triton-fa2": ("benchmarks/triton_steps.py", "BLOCK_M,BLOCK_N,num_warps,num_stages,head_dim", "triton"),
    "cupy-fa2-mma": ("benchmarks/cupy_steps.py", "B_r,B_c,warps,stages,head_dim", "cupy"),
}


def table(folders: list, kernel: str = "triton-fa2") -> dict:
    """The table of ``kernel``'s steps from the timings in ``folders``."""
    script, key_text, toolkit = KERNELS[kernel]
    with open(os.path.join(folders[0], "machine.json")) as f:
        machine = json.load(f)
    entries, bf16 = {}, {}
    for key, timings in sorted(_rows(folders).items()):
        e = entry(key[:5], timings)
        if e is None:
            continue
        name = ",".join(map(str, key[:5]))
        (entries if key[5] == "float16" else bf16)[name] = e
    checks = {name: round(e["step_s"] / entries[name]["step_s"], 4) for name, e in bf16.items() if name in entries}
    return {"kernel": kernel, "gpu": machine["gpu"], "profiles": ["h200"], "date": machine["date"][:10],
            "toolkit": f"{toolkit} {machine[toolkit]}", "driver": machine["driver"],
            "source": f"{_in_repo(folders[0])} ({script}, benchmarks/steps_table.py)", "key": key_text,
            "dtype": "fp16" + (" (bf16 steps / fp16 steps: " + ", ".join(f"{n}: {v}" for n, v in checks.items()) + ")"
                               if checks else ""), "entries": entries}


def _in_repo(folder: str) -> str:
    """``folder`` relative to the repository (the table names where its data is, in the repo)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.relpath(os.path.abspath(folder), root)


def dumps(out: dict) -> str:
    """The table as JSON, one configuration a line."""
    head = {k: v for k, v in out.items() if k != "entries"}
    rows = ",\n".join(f"  {json.dumps(k)}: {json.dumps(e, sort_keys=True)}" for k, e in out["entries"].items())
    return json.dumps(head, indent=1)[:-2] + ',\n "entries": {\n' + rows + "\n }\n}\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="+", help="steps.csv folders (the first's machine.json names the GPU); "
                    "a launch timed in several keeps its lowest median")
    ap.add_argument("--write", help="the JSON table to write (default: print a summary)")
    ap.add_argument("--kernel", choices=sorted(KERNELS), default="triton-fa2")
    args = ap.parse_args()
    out = table(args.folders, args.kernel)
    if args.write:
        with open(args.write, "w") as f:
            f.write(dumps(out))
    print(f"{len(out['entries'])} configurations; {out['dtype']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

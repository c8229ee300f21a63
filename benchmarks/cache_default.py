"""When `iosim simulate` models the L2 by itself, and what that costs (issue 13: "a fast L2
model that is always on"): whole commands without ``--cache``/``--no-cache``, FA2's forward
pass with the flash-attn-2 preset's tile (128 × 64 at d = 128) on the H200 profile. Prints,
per case, whether the model was on — exact, or from a sample of the chunks past its budget
(the rate and the half sample's difference) — or the note saying why not, DRAM bytes read,
and the command's time (median of ``--repeats``). ``--cache`` plays up to 20,000,000
requests exactly: a case run both ways gives the sampled model's error. The iosim run is the one on ``sys.path`` (set
PYTHONPATH to time another checkout).

Run:  python benchmarks/cache_default.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from machine import machine  # benchmarks/machine.py (this script's folder is on sys.path)

CASES = [
    ("N = 262,144, 16 heads", ["-N", "262144", "-H", "16"]),
    ("N = 1,048,576, 1 head", ["-N", "1048576"]),
    ("N = 8,192, B = 32 × H = 64, causal", ["-N", "8192", "-B", "32", "-H", "64", "--causal"]),
    ("N = 2,048, B = 4 × H = 200, causal", ["-N", "2048", "-B", "4", "-H", "200", "--causal"]),
    ("N = 32,768, 16 heads, causal", ["-N", "32768", "-H", "16", "--causal"]),
    ("N = 65,536, 16 heads, causal", ["-N", "65536", "-H", "16", "--causal"]),
    ("N = 65,536, 16 heads, causal, --cache", ["-N", "65536", "-H", "16", "--causal", "--cache"]),
    ("N = 1,048,576, 16 heads", ["-N", "1048576", "-H", "16"]),
    ("N = 1,048,576, 16 heads, --cache", ["-N", "1048576", "-H", "16", "--cache"]),
    ("N = 262,144, 16 heads, causal, --cache", ["-N", "262144", "-H", "16", "--causal", "--cache"]),
]
BASE = ["simulate", "--hw", "h200", "--algo", "fa2", "-d", "128", "--block-q", "128", "--block-kv", "64",
        "--format", "json"]


def run(argv: list) -> tuple[float, dict, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "iosim", *BASE, *argv], capture_output=True, text=True)
    took = time.perf_counter() - start
    out = json.loads(done.stdout) if done.returncode == 0 else {}
    return took, out, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(machine())
    print("| case | L2 model | DRAM read (B) | DRAM written back (B) | extended within | time (median) |")
    print("|---|---|---|---|---|---|")
    for name, argv in CASES:
        runs = [run(argv) for _ in range(args.repeats)]
        took = statistics.median(r[0] for r in runs)
        _, out, note = runs[-1]
        if "dram" in out:
            kernels = out["l2"]["per_kernel"].values()
            near = [k.get("heads_extended_within") for k in kernels]
            within = ", ".join(f"{x:.4f}" for x in near if x) or "exact"
            if out["l2"].get("model") == "sampled":
                within = "— (every head played)"
            model = ", ".join(f"sampled 1 in {round(1 / k['sample_rate'])} (half: {k['sampled_within']:.4f})"
                              for k in kernels if k.get("model") == "sampled") or "exact"
            print(f"| {name} | on, {model} | {out['dram']['read_bytes']:,} | {out['dram']['write_bytes']:,} | {within} "
                  f"| {took:.2f} s |", flush=True)
        else:
            print(f"| {name} | off: {note.removeprefix('iosim: ')[:150]} | — | — | — | {took:.2f} s |", flush=True)


if __name__ == "__main__":
    main()

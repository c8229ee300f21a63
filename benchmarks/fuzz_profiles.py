"""Fuzz the hardware-profile loader (and the block-mask reader): ``python benchmarks/fuzz_profiles.py``.

Each execution takes a built-in profile's YAML, applies 1-3 random structural mutations
(delete or duplicate lines and keys, numbers made huge, negative, inf, nan or strings,
units swapped, unicode/NUL/control characters inserted, nesting deepened, aliases and
tags, truncation, capacities scaled out of order, ``allow_unusual`` switched on) and loads
the result in-process with :func:`iosim.hardware.profile_from_yaml`. The outcome is one of

* ``valid``     — a HardwareProfile whose invariants hold (:func:`profile_violations`);
* ``rejected``  — a ProfileError whose message is short and one problem a line;
* ``accepted_invalid`` — a HardwareProfile that breaks an invariant (a bug);
* ``bad_message`` — a ProfileError with an over-long or multi-line problem (a bug);
* ``crash``     — any other exception (a bug);
* ``hang``      — over ``--timeout`` seconds (a bug).

``--target masks`` fuzzes :func:`iosim.workload.masks.parse_block_mask` on mutated text
and .npy mask files instead. Work is spread over ``--jobs`` processes; the summary
(counts, executions/s, wall time) is written to ``OUT/summary.json`` and every failing
input to ``OUT/failures/`` (default OUT: ``out/fuzz_<target>/<UTC time>/``, ignored by
git). The mutation operators and the invariant checks are shared with the CI fuzz tests
(tests/invariants/test_profile_fuzz.py, test_mask_fuzz.py), which drive them from
Hypothesis. See docs/input-limits.md.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import multiprocessing
import os
import random
import re
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from iosim.errors import ProblemError, ProfileError  # noqa: E402
from iosim.hardware import HardwareProfile, list_profiles, load_profile, profile_from_yaml  # noqa: E402
from iosim.hardware.limits import MAX_PROBLEM_CHARS, MAX_PROBLEMS, PLAUSIBLE, REPRESENTABLE  # noqa: E402
from iosim.workload.masks import parse_block_mask  # noqa: E402

SEEDS = {name: Path(load_profile(name).source_path).read_text() for name in list_profiles()}
NASTY_NUMBERS = [
    "0", "-1", "-0.0", "1e308", "1.0e308", "1.0e+308", "-1e308", "1e-300", "1e-320", "10" + "0" * 400,
    "9" * 5000, ".inf", "-.inf", ".nan", "NaN", "inf", "1:20", "012", "0o12", "0x1F", "0b101", "1_000",
    "2.5", "1e5", "3", "1000000000000", "2147483648", "1e24", "1e30", "yes", "true", "null", "~", "''",
    '"12"', "fast", "[1, 2]", "{a: 1}", "2026-13-45", "2026-01-01", "!!float abc", "!!int x", "é", "1 e 3",
]
NASTY_UNITS = ["B", "KB", "GB", "TB", "PiB", "TB/s", "B/s", "MB/s", "GB", "TFLOP/s", "Gop/s", "MHz", "us",
               "tb/s", "", "null", "[GB]", "ms", "s", "Hz", "EB"]
NASTY_TEXT = ["\x00", "\t", "\x07", "\x1b", "\ufeff", "é", "\u2028", "\ud7ff", "\U0001f600", "'", '"', "{", "}",
              "[", "]", ":", ": ", "&a ", "*a ", "!!python/object:os.system ", "!!binary ", "\n", "\r\n", "#", "- ",
              "? ", "|", ">", "%YAML 1.1\n", "---\n", "...\n", "<<: ", "\\", "\u0085", "\ufffe"]
LAUGHS = "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}" if i else "lol"] * 9) + "]\n" for i in range(9))
KEYS = ["schema_version", "name", "levels", "links", "role", "capacity", "capacity_per_sm", "capacity_per_block",
        "bandwidth", "between", "value", "unit", "source", "sm_count", "compute", "measured", "allow_unusual"]
_NUMBER = re.compile(r"(?<=value: )[^,}\n]+")
_UNIT = re.compile(r"(?<=unit: )[^,}\n]+")
_SCALAR = re.compile(r"(?<=: )[^\n{}\[\],]+")
_KEY = re.compile(r"\b[a-z_0-9]+(?=:)")


class Chooser:
    """How an operator draws: ``pick`` one of a sequence, ``integer`` in [lo, hi]. The
    benchmark draws from random.Random; the CI tests from Hypothesis (which then shrinks)."""

    def __init__(self, pick, integer):
        self.pick, self.integer = pick, integer

    @classmethod
    def from_random(cls, rng: random.Random) -> "Chooser":
        return cls(lambda seq: seq[rng.randrange(len(seq))], rng.randint)


def _splice(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def _spot(c: Chooser, text: str, pattern: re.Pattern) -> re.Match | None:
    found = list(pattern.finditer(text))
    return c.pick(found) if found else None


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True) or [""]


def op_lines(c, text):
    """Delete, duplicate or swap lines."""
    lines = _lines(text)
    i, j = c.integer(0, len(lines) - 1), c.integer(0, len(lines) - 1)
    mode = c.integer(0, 2)
    if mode == 0:
        del lines[i]
    elif mode == 1:
        lines.insert(i, lines[i])
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def op_number(c, text):
    m = _spot(c, text, _NUMBER)
    return _splice(text, m.start(), m.end(), c.pick(NASTY_NUMBERS)) if m else text


def op_unit(c, text):
    m = _spot(c, text, _UNIT)
    return _splice(text, m.start(), m.end(), c.pick(NASTY_UNITS)) if m else text


def op_scalar(c, text):
    m = _spot(c, text, _SCALAR)
    new = c.pick(NASTY_NUMBERS + NASTY_TEXT + ["x" * c.integer(0, 3000), "dram", "cache", "scratchpad", "hbm"])
    return _splice(text, m.start(), m.end(), new) if m else text


def op_key(c, text):
    """Rename a key (to another known key: a duplicate, or to garbage) or delete it."""
    m = _spot(c, text, _KEY)
    return _splice(text, m.start(), m.end(), c.pick(KEYS + ["", "valeu", "x" * 200, "012", "1:20"])) if m else text


def op_insert(c, text):
    return _splice(text, *[c.integer(0, len(text))] * 2, c.pick(NASTY_TEXT) * c.integer(1, 3))


def op_deepen(c, text):
    m = _spot(c, text, _SCALAR) or _spot(c, text, _NUMBER)
    if m is None:
        return text
    depth = c.pick([2, 5, 15, 16, 17, 100, 1000, 20000])
    return _splice(text, m.start(), m.end(), "[" * depth + m.group(0) + "]" * depth)


def op_alias(c, text):
    form = c.integer(0, 2)
    if form == 0:
        return LAUGHS + text.replace("role: dram", "role: *l8", 1)
    if form == 1:
        return text.replace("role: dram", "role: &r dram", 1).replace("role: cache", "role: *r", 1)
    return text.replace("levels:", "levels: &lv", 1) + "extra: *lv\n"


def op_truncate(c, text):
    return text[: c.integer(0, len(text))]


def op_unusual(c, text):
    return text + c.pick(["allow_unusual: true\n", "allow_unusual: yes\n", "allow_unusual: 1\n", "allow_unusual: [x]\n"])


def op_reindent(c, text):
    lines = _lines(text)
    i = c.integer(0, len(lines) - 1)
    lines[i] = c.pick(["", " ", "  ", "\t", "      "]) + lines[i].lstrip(" ")
    return "".join(lines)


def op_scale(c, text):
    """Scale one number by a power of ten: capacities out of order, rates out of range."""
    m = _spot(c, text, _NUMBER)
    if m is None:
        return text
    try:
        value = float(m.group(0))
    except ValueError:
        return text
    new = value * 10.0 ** c.pick([-12, -9, -6, -3, 3, 6, 9, 12, 20])
    return _splice(text, m.start(), m.end(), repr(new))


def op_huge(c, text):
    """Grow the file: repeat a line many times (size and node caps)."""
    lines = _lines(text)
    i = c.integer(0, len(lines) - 1)
    return "".join(lines[:i] + [lines[i]] * c.pick([10, 1000, 20000]) + lines[i + 1:])


OPS = [op_lines, op_number, op_unit, op_scalar, op_key, op_insert,
       op_deepen, op_alias, op_truncate, op_reindent, op_scale, op_unusual, op_huge]


def mutate(c: Chooser, text: str) -> str:
    for _ in range(c.integer(1, 3)):
        text = c.pick(OPS)(c, text)
    return text


# --------------------------------------------------------------------------- invariants


def profile_violations(p: HardwareProfile) -> list[str]:
    """What is wrong with a profile the loader accepted (empty when nothing is).

    Written apart from the loader's own checks, so a bug in those shows up here."""
    bad = []
    if not isinstance(p.sm_count, int) or not 1 <= p.sm_count <= REPRESENTABLE["count"][1]:
        bad.append(f"sm_count {p.sm_count!r}")
    for path, q in p.quantities.items():
        if not (isinstance(q.value, (int, float)) and math.isfinite(q.value) and q.value > 0):
            bad.append(f"{path}: {q.value!r} is not finite and positive")
    for link in p.links:
        if not (math.isfinite(link.bandwidth_bytes_per_s) and link.bandwidth_bytes_per_s >= 1):
            bad.append(f"link {link.a}-{link.b}: bandwidth {link.bandwidth_bytes_per_s!r}")
    dram, smem = p.dram, p.scratchpad
    device = [lv for lv in p.levels.values() if lv.role in ("dram", "cache")]
    for lv in p.levels.values():
        if lv.role == "cache" and lv.capacity_bytes > dram.capacity_bytes:
            bad.append(f"cache {lv.name} larger than dram")
        if lv.role in ("scratchpad", "registers"):
            if not 0 < lv.per_block_bytes <= lv.capacity_bytes:
                bad.append(f"{lv.name}: per block {lv.per_block_bytes} vs per SM {lv.capacity_bytes}")
            if any(lv.capacity_bytes > d.capacity_bytes for d in device):
                bad.append(f"{lv.name}: per SM larger than a device-wide level")
    if not p.path(dram.name, smem.name):
        bad.append("no path from dram to the scratchpad")
    if not p.warnings:  # nothing let through by allow_unusual: every figure is plausible
        if not PLAUSIBLE["sm_count"][0] <= p.sm_count <= PLAUSIBLE["sm_count"][1]:
            bad.append(f"sm_count {p.sm_count} implausible without a warning")
        bad += [f"{link.a}-{link.b} implausible without a warning" for link in p.links
                if not PLAUSIBLE["bandwidth"][0] <= link.bandwidth_bytes_per_s <= PLAUSIBLE["bandwidth"][1]]
    time_s = 2**60 / min(link.bandwidth_bytes_per_s for link in p.links)
    if not math.isfinite(time_s):
        bad.append("a transfer time is not finite")
    p.summary_row()
    return bad


def message_violations(error: Exception) -> list[str]:
    """What is wrong with an error's message: too many or too long problems, or an
    unprintable character (a message quotes at most short excerpts)."""
    problems = getattr(error, "problems", None) or [str(error)]
    bad = []
    if len(problems) > MAX_PROBLEMS + 1:
        bad.append(f"{len(problems)} problems listed")
    for problem in problems:
        if len(problem) > MAX_PROBLEM_CHARS or not problem.isprintable():
            bad.append(f"problem not one short printable line: {problem[:80]!r}")
    if len(str(error)) > 500 + (MAX_PROBLEMS + 1) * (MAX_PROBLEM_CHARS + 5):
        bad.append(f"message of {len(str(error)):,} characters")
    return bad


# --------------------------------------------------------------------------- running


class _Hang(BaseException):
    """Raised by the alarm when one execution runs over --timeout."""


def _alarm(signum, frame):
    raise _Hang()


def load_one(text: str) -> tuple[str, str]:
    """(outcome, detail) of loading one mutated profile."""
    try:
        profile = profile_from_yaml(text, "fuzz.yaml")
    except ProfileError as e:
        bad = message_violations(e)
        return ("bad_message", bad[0]) if bad else ("rejected", "")
    except _Hang:
        raise
    except Exception as e:  # noqa: BLE001 - the point is to catch anything else
        return "crash", f"{type(e).__name__}: {str(e)[:200]}"
    try:
        bad = profile_violations(profile)
    except Exception as e:  # noqa: BLE001
        return "accepted_invalid", f"checking raised {type(e).__name__}: {str(e)[:200]}"
    return ("accepted_invalid", bad[0]) if bad else ("valid", "")


MASK_SHAPE = (4, 6)


def mask_seed(c: Chooser) -> tuple[bytes, str]:
    """A valid mask file for MASK_SHAPE: text rows, or a .npy of some dtype."""
    mask = np.ones(MASK_SHAPE, dtype=np.int8)
    mask[c.integer(0, 3), c.integer(0, 5)] = 0
    if c.integer(0, 1):
        sep = c.pick([" ", ",", ", ", "\t"])
        return ("\n".join(sep.join(map(str, row)) for row in mask) + "\n").encode(), ".txt"
    buf = io.BytesIO()
    dtype = c.pick(["bool", "int8", "int64", "uint8", "float32", "float64", "complex64", "U1", "O"])
    np.save(buf, mask.astype(dtype), allow_pickle=False) if dtype != "O" else np.save(buf, mask.astype(dtype))
    return buf.getvalue(), ".npy"


_MASK_EDITS = [
    lambda c, data, i: data[:i],
    lambda c, data, i: data[:i] + bytes([c.integer(0, 255)]) * c.integer(1, 4) + data[i + 1:],
    lambda c, data, i: data[:i] + c.pick([b"2", b"-1", b"\x00", b"1.0", b"nan", b"\n", b"(99999, 99999)", b"'<c16'",
                                          b"x" * 70000, b"#", b"1 1 1 1 1 1\n" * 3]) + data[i:],
    lambda c, data, i: data.replace(b"(4, 6)", c.pick([b"(6, 4)", b"(4,)", b"(99999999, 99999999)", b"(4, 6, 1)"]), 1),
    lambda c, data, i: data.replace(b"<i1", c.pick([b"<c8", b"|O", b"<U1", b"|V8", b"<f2", b"<M8"]), 1),
]


def mutate_mask(c: Chooser, data: bytes) -> bytes:
    for _ in range(c.integer(0, 3)):
        data = c.pick(_MASK_EDITS)(c, data, c.integer(0, len(data)))
    return data


def mask_one(data: bytes, suffix: str, folder: str) -> tuple[str, str]:
    path = os.path.join(folder, f"mask{suffix}")
    with open(path, "wb") as f:
        f.write(data)
    try:
        mask = parse_block_mask(path, *MASK_SHAPE, 64, 64)
    except ProblemError as e:
        bad = message_violations(e)
        return ("bad_message", bad[0]) if bad else ("rejected", "")
    except _Hang:
        raise
    except Exception as e:  # noqa: BLE001
        return "crash", f"{type(e).__name__}: {str(e)[:200]}"
    ok = isinstance(mask, np.ndarray) and mask.dtype == bool and mask.shape == MASK_SHAPE
    return ("valid", "") if ok else ("accepted_invalid", f"mask {mask.dtype} {mask.shape}")


def _worker(task: tuple[str, int, int, float, str]) -> dict:
    target, seed, count, timeout, out = task
    c, counts, failures = Chooser.from_random(random.Random(seed)), Counter(), []
    signal.signal(signal.SIGALRM, _alarm)
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(count):
            data, suffix = (SEEDS[c.pick(sorted(SEEDS))], ".yaml") if target == "profiles" else mask_seed(c)
            data = mutate(c, data) if target == "profiles" else mutate_mask(c, data)
            try:  # the alarm may fire as the call returns, so the cancel is inside the try too
                signal.setitimer(signal.ITIMER_REAL, timeout)
                try:
                    outcome, detail = load_one(data) if target == "profiles" else mask_one(data, suffix, folder)
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            except _Hang:
                outcome, detail = "hang", f"over {timeout} s"
            counts[outcome] += 1
            if outcome not in ("valid", "rejected") and len(failures) < 50:  # 50 inputs kept per chunk
                failures.append(_save(out, data, suffix, outcome, detail))
    return {"counts": counts, "failures": failures}


def _save(out: str, data, suffix: str, outcome: str, detail: str) -> dict:
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    name = hashlib.sha1(raw).hexdigest()[:16] + suffix
    folder = Path(out) / "failures"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(raw)
    return {"outcome": outcome, "detail": detail, "input": f"failures/{name}"}


def run(target: str, executions: int, jobs: int, seed: int, timeout: float, out: str, chunk: int = 500) -> dict:
    tasks = [(target, seed * 1_000_003 + i, min(chunk, executions - i * chunk), timeout, out)
             for i in range(math.ceil(executions / chunk))]
    counts, failures = Counter(), []
    start = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        for result in pool.imap_unordered(_worker, tasks):
            counts.update(result["counts"])
            failures += result["failures"][: max(0, 1000 - len(failures))]
    wall = time.perf_counter() - start
    bugs = sum(v for k, v in counts.items() if k not in ("valid", "rejected"))
    return {"target": target, "executions": executions, "jobs": jobs, "seed": seed, "timeout_s": timeout,
            "wall_s": round(wall, 2), "executions_per_s": round(executions / wall, 1),
            "counts": dict(sorted(counts.items())), "bugs": bugs, "failures": failures}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", choices=["profiles", "masks"], default="profiles")
    ap.add_argument("-n", "--executions", type=int, default=1_000_000, help="loader executions (default 10^6)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: every core)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds one execution may take before it is a hang")
    ap.add_argument("--out", help="folder for summary.json and failures/ (default out/fuzz_TARGET/UTC-TIME)")
    args = ap.parse_args(argv)
    out = args.out or str(Path("out") / f"fuzz_{args.target}" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    Path(out).mkdir(parents=True, exist_ok=True)
    summary = run(args.target, args.executions, args.jobs, args.seed, args.timeout, out)
    summary["machine"] = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}"
    (Path(out) / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "failures"}, indent=2))
    print(f"summary: {out}/summary.json; failing inputs: {out}/failures/ ({len(summary['failures'])})")
    return 1 if summary["bugs"] else 0


if __name__ == "__main__":
    sys.exit(main())

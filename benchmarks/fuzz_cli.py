"""Fuzz the command line: random combinations of every subcommand's options, with good and
bad values, run in this process (``python benchmarks/fuzz_cli.py -n 2000``).

Each run must end with exit 0, 1 or 2, and exit 2 with an ``iosim…: error:`` line; a Python
exception escaping ``main`` (a traceback) or a run past ``--timeout`` seconds is a bug,
written with its command line to ``OUT/failures.txt``. The single-option classes are the
table of tests/cli/test_bad_input_table.py; this script tries options together (conflicts,
extremes meeting), which the table does not.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import signal
import sys
import tempfile
import time
import traceback

from iosim.cli.main import build_parser, main

GOOD = {"--hw": ["toy", "h100-sxm", "mi300x", "a100-40gb"], "--algo": ["fa2", "fa1", "standard", "fa2-splitkv"],
        "--seq-len": ["1", "7", "64", "256", "1k"], "--head-dim": ["1", "16", "64", "96"], "--batch": ["1", "2", "3"],
        "--heads": ["1", "2", "4", "6"], "--kv-heads": ["1", "2", "3"], "--block-q": ["1", "16", "64", "300"],
        "--block-kv": ["1", "16", "64", "300"], "--seq-len-q": ["1", "5", "100"], "--seq-len-kv": ["1", "9", "200"]}
BAD = ["0", "-1", str(10 ** 40), "abc", "inf", "nan", "", "/dev/zero", "1e3", "0x10", "4k:1k", "1,2", "-0", " 5"]
BASE = {"simulate": ["--hw", "toy", "--algo", "fa2", "-N", "64", "-d", "16"],
        "explore": ["--hw", "toy", "--algo", "fa2", "-N", "128", "-d", "16", "--block-q", "16", "--block-kv", "16"],
        "bounds": ["--hw", "toy", "--algo", "fa2", "-N", "256", "-d", "16"],
        "pebble": ["-N", "2", "-d", "1", "-S", "4", "--schedule", "fa2"], "profiles": []}


def options(parser) -> dict:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    return {name: [a for a in sub[name]._actions if a.option_strings and a.dest != "help"] for name in BASE}


def argv_for(rng: random.Random, name: str, actions: list) -> list:
    argv = [name] + list(BASE[name])
    for action in rng.sample(actions, k=min(len(actions), rng.randint(1, 4))):
        flag = action.option_strings[-1] if rng.random() < 0.5 else action.option_strings[0]
        if action.nargs == 0:
            argv.append(flag)
            continue
        if action.choices and rng.random() < 0.7:
            value = str(rng.choice(list(action.choices)))
        elif flag in GOOD and rng.random() < 0.6:
            value = rng.choice(GOOD[flag])
        else:
            value = rng.choice(BAD + sum(GOOD.values(), []))
        argv += [flag, value]
    return argv


def run_one(argv: list, timeout: float) -> tuple[str, str]:
    def hang(*_):
        raise TimeoutError

    signal.signal(signal.SIGALRM, hang)
    signal.alarm(int(timeout))
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as stop:
        code = stop.code
    except TimeoutError:
        return "hang", ""
    except BaseException:        # noqa: BLE001 - what the fuzzer is for
        return "crash", traceback.format_exc()
    finally:
        signal.alarm(0)
    if code not in (0, 1, 2):
        return "bad exit", f"exit {code!r}"
    if code == 2 and "error:" not in err.getvalue():
        return "bad message", err.getvalue()[-500:]
    return "ok", ""


def main_() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("-n", "--executions", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=20)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="fuzz_cli_")
    os.makedirs(out, exist_ok=True)
    os.chdir(out)                                 # output files a run may name land here
    rng, acts = random.Random(args.seed), options(build_parser())
    counts, failures, start = {}, [], time.perf_counter()
    for _ in range(args.executions):
        name = rng.choice(list(BASE))
        argv = argv_for(rng, name, acts[name])
        kind, detail = run_one(argv, args.timeout)
        counts[kind] = counts.get(kind, 0) + 1
        if kind != "ok":
            failures.append(f"{kind}: iosim {' '.join(repr(a) if not a or ' ' in a else a for a in argv)}\n{detail}")
    with open(os.path.join(out, "failures.txt"), "w") as f:
        f.write("\n".join(failures))
    print(f"{args.executions} runs in {time.perf_counter() - start:.0f} s: {counts}; failures in {out}/failures.txt")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main_()

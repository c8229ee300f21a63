"""The CLI's bad-input table (issue 16): every option of every subcommand, given each class of
bad value — zero, negative, huge, non-numeric, inf, nan, empty, a special file — ends in
exit 2 with one `iosim…: error:` line that names the option, or is a value the option
accepts on purpose (ACCEPTED, each with its reason); never a traceback, never a hang.

The options are read from the parser itself, so a new option joins the table by itself.
Each case runs in this process with a 20 s alarm (a hang fails the case instead of the
suite); `iosim validate` finds no GPU here (its GPU check is replaced by a refusal), so the
table checks that it names a bad argument before it looks for one.
"""

import argparse
import signal

import pytest

from iosim.cli.main import build_parser, main
from iosim.errors import DependencyError
from conftest import run_untraced

VALUES = {"zero": "0", "negative": "-1", "huge": str(10 ** 40), "word": "abc", "inf": "inf", "nan": "nan",
          "empty": "", "special file": "/dev/zero"}
#: a valid command line for each subcommand, small enough to run in milliseconds
BASE = {
    "profiles": [],
    "simulate": ["--hw", "toy", "--algo", "fa2", "-N", "64", "-d", "16"],
    "validate": ["--hw", "toy", "--algo", "fa2", "-N", "64", "-d", "16"],
    "bounds": ["--hw", "toy", "--algo", "fa2", "-N", "256", "-d", "16"],
    "explore": ["--hw", "toy", "--algo", "fa2", "-N", "128", "-d", "16", "--block-q", "16", "--block-kv", "16"],
    "grade": ["{submission}"],
    "pebble": ["-N", "2", "-d", "1", "-S", "4", "--schedule", "fa2"],
}
#: words that name an option in a message written for the API as well as the CLI
NAMES = {"--hw": ("hardware profile",), "--block-mask": ("block mask",), "--batch": ("batch × heads",),
         "--heads": ("batch × heads",), "--kv-heads": ("kv_heads", "--kv-heads"), "--seed": ("seed",),
         "--seq-len": ("N²·d",), "--head-dim": ("N²·d",), "--timeout": ("time limit",),
         "--memory-mb": ("memory limit",), "--block": ("block must",)}
#: (subcommand, option, class) a value of which is accepted on purpose, and why
ACCEPTED = {
    ("simulate", "--block-q", "huge"): "a block larger than N is one block of N rows",
    ("simulate", "--block-kv", "huge"): "a block larger than N is one block of N rows",
    ("explore", "--block-q", "huge"): "a block larger than N is one block of N rows",
    ("explore", "--block-kv", "huge"): "a block larger than N is one block of N rows",
    ("explore", "--tie", "zero"): "no tolerance: only exact ties are near-ties",
    ("explore", "--replays", "zero"): "no L2 replays: bounds only",
    ("explore", "--replays", "huge"): "replay every candidate",
    ("explore", "--top", "huge"): "every row of the ranking",
    ("explore", "--jobs", "huge"): "at most one process per chunk of work",
    ("bounds", "--jobs", "huge"): "at most one process per chunk of work",
    ("pebble", "--red", "huge"): "more red pebbles than nodes: no IO beyond the compulsory",
    ("grade", "--timeout", "huge"): "clamped to the grader's range (the report says so)",
    ("grade", "--timeout", "inf"): "clamped to the grader's range (the report says so)",
    ("grade", "--memory-mb", "huge"): "clamped to the grader's range (the report says so)",
    ("grade", "--seed", "zero"): "a seed",
    ("grade", "--seed", "huge"): "a seed (any non-negative integer)",
    ("validate", "--seed", "zero"): "a seed",
    ("validate", "--warmup", "zero"): "no untimed launch: the first launch is timed too",
    ("validate", "--seed", "huge"): "a seed (any non-negative integer)",
    **{("grade", "--csv", kind): "a file name (written in this test's own folder)"
       for kind in ("zero", "negative", "huge", "word", "inf", "nan")},
    ("grade", "--csv", "special file"): "a device the user names is written to, as any file",
    ("validate", "--block-q", "huge"): "as in simulate (the GPU check comes after the arguments)",
    ("validate", "--block-kv", "huge"): "as in simulate (the GPU check comes after the arguments)",
}


def _cases():
    parser = build_parser()
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name, sub in subcommands.items():
        for action in sub._actions:
            if action.option_strings and action.dest != "help" and action.nargs != 0:
                for kind in VALUES:
                    yield pytest.param(name, tuple(action.option_strings), kind,
                                       id=f"{name}-{action.option_strings[0]}-{kind}")


def _argv(name: str, options: tuple, value: str, submission: str) -> list:
    base = [a.format(submission=submission) for a in BASE[name]]
    for option in options:                     # the option under test replaces its base value
        if option in base:
            i = base.index(option)
            del base[i:i + 2]
    return [name, *base, options[0], value]


def _no_gpu():
    raise DependencyError("no GPU in this test")


@pytest.mark.parametrize("name,options,kind", list(_cases()))
def test_bad_values_are_refused_in_one_line(tmp_path, capsys, monkeypatch, name, options, kind):
    monkeypatch.setattr("iosim.gpu.require", _no_gpu)
    monkeypatch.chdir(tmp_path)                 # an accepted output name (--csv 0) is written here
    submission = tmp_path / "submission.py"
    submission.write_text("def fa2_forward(ctx):\n    pass\n\nraise SystemExit('no grading today')\n")
    argv = _argv(name, options, VALUES[kind], str(submission))

    def hang(*_):
        raise TimeoutError(f"iosim {' '.join(argv)} ran for 20 s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(20)
    try:
        code = main(argv)
    except SystemExit as stop:        # argparse
        code = stop.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    accepted = code in (0, 1) or (name == "validate" and "no GPU in this test" in err)
    if accepted:
        assert (name, options[0], kind) in ACCEPTED, f"accepted: iosim {' '.join(argv)}"
        return
    assert code == 2, (code, err)
    lines = err.strip().splitlines()
    message = " ".join(lines)
    assert lines[0].startswith("iosim: error:") and len(lines) <= 3, err      # argparse's usage is --help's
    assert any(o in message for o in options) or any(w in message for w in NAMES.get(options[0], ())), message


# --------------------------------------------------------------------------------------
# valid values that do not go together: a model that does not apply, or flags that contradict
# each other, are refused the same way (exit 2, one error line naming the flags), never run
# with a fallback nor with a flag ignored
# --------------------------------------------------------------------------------------
H100 = ["--hw", "h100-sxm", "--algo", "fa2", "-N", "1024", "-d", "64"]
TOY = ["--hw", "toy", "--algo", "fa2", "-N", "256", "-d", "16"]
#: id -> (argv, fragments the message holds)
COMBINATIONS = {
    # FA3's FP8 forward writes O in bf16 (not modelled): refused, not run with the 16-bit 192 × 192 tile
    "fa3-fp8": (["simulate", *H100, "--kernel", "flash-attn-3", "--dtype", "fp8"],
                ("--kernel flash-attn-3", "fp16 or bf16", "fp8", "O in bf16")),
    "fa3-fp32": (["simulate", *H100, "--kernel", "flash-attn-3", "--dtype", "fp32"],
                 ("--kernel flash-attn-3", "fp16 or bf16", "fp32")),
    "fa2-fp32": (["simulate", *H100, "--kernel", "flash-attn-2", "--dtype", "fp32"],
                 ("--kernel flash-attn-2", "fp16 or bf16", "fp32")),
    "fa2-fp8": (["simulate", *H100, "--kernel", "flash-attn-2", "--dtype", "fp8", "--pass", "backward"],
                ("--kernel flash-attn-2", "fp16 or bf16", "fp8")),
    "explore-fa2-fp32": (["explore", *H100, "--kernel", "flash-attn-2", "--dtype", "fp32", "--block-q", "64",
                          "--block-kv", "64"], ("--kernel flash-attn-2", "fp16 or bf16", "fp32")),
    "standard-mask": (["simulate", "--hw", "h100-sxm", "--algo", "standard", "-N", "1024", "-d", "64",
                       "--block-mask", "local:2"], ("--block-mask", "standard", "fa1, fa2, fa2-splitkv")),
    "standard-mask-backward": (["simulate", "--hw", "toy", "--algo", "standard", "-N", "256", "-d", "16",
                                "--pass", "backward", "--block-mask", "dense"], ("--block-mask", "standard")),
    "explore-standard-mask": (["explore", "--hw", "toy", "--algo", "standard", "-N", "128", "-d", "16",
                               "--block-q", "16", "--block-kv", "16", "--block-mask", "local:1"],
                              ("--block-mask", "standard", "fa1, fa2, fa2-splitkv")),
    "gemm-fa2": (["simulate", *TOY, "--gemm", "tiled"], ("fa2", "takes no option gemm")),
    "gemm-fa1-idealised": (["simulate", *TOY[:3], "fa1", *TOY[4:], "--gemm", "idealised"],
                           ("fa1", "takes no option gemm")),
    "gemm-kernel": (["simulate", *H100, "--kernel", "flash-attn-2", "--gemm", "tiled"],
                    ("--kernel flash-attn-2", "gemm")),
    "dq-read-twice-kernel": (["simulate", *H100, "--kernel", "flash-attn-2", "--pass", "backward",
                              "--dq-read-twice"], ("--kernel flash-attn-2", "--dq-read-twice")),
    "tiles-padded-kernel": (["simulate", *H100, "--kernel", "cudnn", "--tiles", "padded"],
                            ("--kernel cudnn", "takes no --tiles padded")),
    "count-init-kernel": (["simulate", *H100, "--kernel", "flash-attn-2", "--count-init"],
                          ("--kernel flash-attn-2", "takes no --count-init")),
    "residency-kernel": (["simulate", *H100, "--kernel", "flash-attn-2", "--residency", "sram"],
                         ("--kernel flash-attn-2", "residency sram")),
    "splitkv-triton": (["simulate", *H100[:3], "fa2-splitkv", *H100[4:], "--kernel", "triton-fa2"],
                       ("--kernel triton-fa2", "split-KV", "--algo fa2")),
    "splitkv-fa3": (["simulate", *H100[:3], "fa2-splitkv", *H100[4:], "--kernel", "flash-attn-3"],
                    ("--kernel flash-attn-3", "split-KV")),
    "splitkv-cudnn": (["simulate", *H100[:3], "fa2-splitkv", *H100[4:], "--kernel", "cudnn"],
                      ("--kernel cudnn", "split-KV kernel but for one query row")),
    "seq-len-with-both": (["simulate", *TOY, "--seq-len-q", "128", "--seq-len-kv", "512"],
                          ("--seq-len", "--seq-len-q", "--seq-len-kv")),
    "explore-seq-len-with-both": (["explore", *TOY, "--seq-len-q", "128", "--seq-len-kv", "512"],
                                  ("--seq-len", "--seq-len-q", "--seq-len-kv")),
    "seq-len-with-both-agreeing": (["simulate", *TOY, "--seq-len-q", "256", "--seq-len-kv", "256"],
                                   ("--seq-len", "--seq-len-q", "--seq-len-kv")),
}


@pytest.mark.parametrize("argv,fragments", list(COMBINATIONS.values()), ids=list(COMBINATIONS))
def test_combinations_that_do_not_apply_are_refused(capsys, argv, fragments):
    code, out, err = run_untraced(capsys, *argv)
    assert code == 2, (code, out[-500:], err)
    assert out == ""                  # refused before anything is reported
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("iosim: error:"), err
    assert all(f in lines[0] for f in fragments), (fragments, lines[0])

"""Arguments shared by several subcommands, parsed once into iosim values."""

from __future__ import annotations

import argparse
import math
from typing import Callable

from ..dtypes import WIDTH_BYTES
from ..studies.executors import EXECUTORS, make_executor
from ..studies.schedule_files import ScheduleFile, split_reference
from ..errors import ProblemError, ScheduleError
from ..report.plots import check_plot_path
from ..workload.problem import LAYOUTS, Problem
from ..schedules import PASSES


def _int_at_least(text: str, least: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: an integer ≥ 0 (a seed, a count that may be none)."""
    return _int_at_least(text, 0, "a whole number ≥ 0")


def positive_int(text: str) -> int:
    """argparse type: an integer ≥ 1, with a message naming the bad value."""
    return _int_at_least(text, 1, "a positive integer")


def bounded_int(most: int, least: int = 1):
    """argparse type: an integer from ``least`` (1 or 0) to ``most``."""
    def parse(text: str) -> int:
        value = positive_int(text) if least else non_negative_int(text)
        if value > most:
            raise argparse.ArgumentTypeError(f"expected at most {most:,}, got {value:,}")
        return value
    return parse


def parse_int(text: str) -> int:
    """argparse type: a positive integer such as ``8192`` or ``8k`` (k = 1,024)."""
    t = text.strip().replace("_", "")
    scale = 1
    if t[-1:] in ("k", "K"):
        t, scale = t[:-1], 1024
    try:
        value = int(t) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer such as 8192 or 8k, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


#: the most values one list may expand to (checked before any is made)
MAX_VALUES = 100_000


def parse_values(text: str) -> list[int]:
    """argparse type for a value list, sorted, without repeats. Items are comma-separated:
    ``8192`` or ``8k``; ``LO:HI`` (LO, 2·LO, 4·LO, … up to HI); ``LO:HI:STEP``;
    ``LO:HI:xF`` (LO, LO·F, LO·F², … up to HI, rounded to integers). The whole list may
    hold at most :data:`MAX_VALUES` values, counted before any is made."""
    out: set[int] = set()
    for item in text.split(","):
        item = item.strip()
        if item:
            out.update(_range_values(item, MAX_VALUES - len(out)))
    if not out:
        raise argparse.ArgumentTypeError(f"no values in {text!r}")
    return sorted(out)


def _range_values(item: str, room: int) -> set[int]:
    parts = item.split(":")
    if len(parts) == 1:
        return {parse_int(parts[0])}
    if len(parts) not in (2, 3):
        raise argparse.ArgumentTypeError(f"a range is LO:HI, LO:HI:STEP or LO:HI:xF, got {item!r}")
    lo, hi = parse_int(parts[0]), parse_int(parts[1])
    if hi < lo:
        raise argparse.ArgumentTypeError(f"range {item!r}: HI is smaller than LO")
    step = parts[2].strip() if len(parts) == 3 else "x2"
    too_many = argparse.ArgumentTypeError(f"range {item!r} expands to more than {MAX_VALUES:,} values in all")
    if step[:1] not in ("x", "*"):
        inc = parse_int(step)
        if (hi - lo) // inc + 1 > room:
            raise too_many
        return set(range(lo, hi + 1, inc))
    try:
        factor = float(step[1:])
    except ValueError:
        raise argparse.ArgumentTypeError(f"range {item!r}: factor must be a number > 1") from None
    if not 1 < factor < float("inf"):
        raise argparse.ArgumentTypeError(f"range {item!r}: factor must be a finite number > 1")
    steps = math.log(hi / lo) / math.log(factor) + 1       # the terms LO·F^k ≤ HI
    if steps > room:
        raise argparse.ArgumentTypeError(f"range {item!r} takes {steps:,.0f} steps of ×{factor:g}; at most "
                                         f"{MAX_VALUES:,} values in all")
    values, x = set(), float(lo)
    while round(x) <= hi:
        values.add(int(round(x)))
        x *= factor
    return values


def schedule_or_file(choices):
    """argparse type: a built-in schedule's name (one of ``choices``), or ``FILE.py:FUNCTION``,
    a schedule of one's own (``def my_fa2(ctx): …``, as ``simulate(hw, my_fa2, …)`` takes
    it), loaded from the file."""
    def parse(text: str):
        if text in choices:
            return text
        parts = split_reference(text)
        if parts is None:
            raise argparse.ArgumentTypeError(f"unknown algorithm {text!r}; choose one of {', '.join(choices)}, "
                                             "or give FILE.py:FUNCTION")
        return load_schedule(text)
    return parse


def load_schedule(text: str):
    """The function of ``FILE.py:FUNCTION`` (it runs the file; the loader of
    :mod:`iosim.studies.schedule_files`, its errors as argparse's), whose errors while it
    runs are one-line :class:`~iosim.ScheduleError` s naming it."""
    try:
        return ScheduleFile.from_text(text).load()
    except ScheduleError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def algorithm_list(choices):
    """argparse type: a comma list of algorithms (``bounds``, ``explore``), each a built-in
    name (one of ``choices``) or ``FILE.py:FUNCTION``, a schedule of one's own: a
    :class:`~iosim.studies.schedule_files.ScheduleFile`, loaded once here to check it, that
    the sweep's workers load again themselves."""
    def parse(text: str) -> list:
        out = []
        for item in (t.strip() for t in text.split(",")):
            if not item or item in choices:
                out += [item] if item else []
            elif split_reference(item) is None:
                raise argparse.ArgumentTypeError(f"unknown algorithm {item!r}; choose from {', '.join(choices)}, "
                                                 "or give FILE.py:FUNCTION")
            else:
                try:
                    out.append(ScheduleFile.from_text(item))
                except ScheduleError as exc:
                    raise argparse.ArgumentTypeError(str(exc)) from None
        if not out:
            raise argparse.ArgumentTypeError("give at least one algorithm")
        return out
    return parse


def comma_names(choices):
    """argparse type: a comma list of names, each one of ``choices``."""
    def parse(text: str) -> list[str]:
        names = [t.strip() for t in text.split(",") if t.strip()]
        for n in names:
            if n not in choices:
                raise argparse.ArgumentTypeError(f"unknown name {n!r}; choose from {', '.join(choices)}")
        if not names:
            raise argparse.ArgumentTypeError("give at least one name")
        return names
    return parse


def flatten(lists) -> list:
    """The items of repeated list options (``action="append"``), in order, without repeats."""
    return list(dict.fromkeys(x for xs in (lists or []) for x in xs))


def add_hw_argument(p: argparse.ArgumentParser) -> None:
    action = p.add_argument("--hw", required=True,
                            help="built-in profile name (see `iosim profiles`) or path to a YAML profile")
    action.completer = _profile_names      # shell completion (argcomplete): the built-in names


def _profile_names(**_) -> list[str]:
    from ..hardware import list_profiles

    return list_profiles()


def add_pass_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pass", dest="passes", choices=list(PASSES), default="forward",
                   help="forward (default), backward, or forward+backward")


def add_problem_arguments(p: argparse.ArgumentParser, lists: bool = False) -> None:
    """The problem's options; with ``lists``, N, d and H take value lists (explore's points)."""
    add_hw_argument(p)
    # sizes take what explore's and bounds' value lists take for one value: 8192 or 8k (parse_int)
    if lists:
        p.add_argument("--seq-len", "-N", type=parse_values, help="sequence length(s) N, e.g. 8192 or 4k:128k")
    else:
        p.add_argument("--seq-len", "-N", type=parse_int, help="sequence length N (queries and keys), e.g. 8192 or 8k")
    p.add_argument("--seq-len-q", type=parse_int, help="query length N_q, if it differs from the key length")
    p.add_argument("--seq-len-kv", type=parse_int, help="key/value length N_kv (causal masks align bottom-right)")
    p.add_argument("--head-dim", "-d", type=parse_values if lists else parse_int, required=True,
                   help="head dimension(s) d, e.g. 64,128" if lists else "head dimension d")
    p.add_argument("--batch", "-B", type=parse_int, default=1, help="batch size B (default 1)")
    p.add_argument("--heads", "-H", type=parse_values if lists else parse_int, default=[1] if lists else 1,
                   help="number(s) of heads H (default 1)" if lists else "number of heads H (default 1)")
    p.add_argument("--kv-heads", type=parse_int, help="K/V heads H_k for GQA/MQA (default: H)")
    p.add_argument("--dtype", choices=list(WIDTH_BYTES), default="fp16", help="dtype of Q, K, V, O, S, P (default fp16)")
    p.add_argument("--causal", action="store_true", help="causal mask (blocks with no visible key are skipped)")
    p.add_argument("--layout", choices=list(LAYOUTS), default="bhnd",
                   help="how Q, K, V lie in memory: bhnd, a head's rows contiguous (default), or bnhd, a row's "
                        "heads side by side (flash-attn's own API); the L2 model of --kernel flash-attn-2 plays it")


def refuse_three_lengths(args: argparse.Namespace) -> None:
    """-N sets both lengths: given beside both --seq-len-q and --seq-len-kv, one of them is ignored."""
    if args.seq_len and args.seq_len_q and args.seq_len_kv:
        raise ProblemError("--seq-len (-N) sets both lengths: give it, or --seq-len-q and --seq-len-kv, not all three")


def problem_from_args(args: argparse.Namespace) -> Problem:
    refuse_three_lengths(args)
    n_q = args.seq_len_q or args.seq_len
    n_kv = args.seq_len_kv or args.seq_len
    if not (n_q and n_kv):
        raise ProblemError("give --seq-len N, or both --seq-len-q and --seq-len-kv")
    return Problem(seq_len_q=n_q, seq_len_kv=n_kv, head_dim=args.head_dim, batch=args.batch, heads=args.heads,
                   kv_heads=args.kv_heads, dtype=args.dtype, causal=args.causal, layout=args.layout)


# --------------------------------------------------------------------------------------
# sweeps with a plot (bounds, explore)
# --------------------------------------------------------------------------------------
def add_sweep_output_arguments(p: argparse.ArgumentParser, plot_help: str) -> None:
    """``--plot FILE`` (help: ``plot_help``), ``--jobs``, ``--executor`` and ``--scheduler``."""
    p.add_argument("--plot", metavar="FILE", help=plot_help)
    p.add_argument("--jobs", type=positive_int, help="worker processes (default: one per core)")
    p.add_argument("--executor", choices=list(EXECUTORS), default="local",
                   help="where the runs go: local processes (default) or a Dask cluster (pip install \"iosim[dask]\")")
    p.add_argument("--scheduler", metavar="ADDRESS", help="with --executor dask: the scheduler, e.g. tcp://127.0.0.1:8786")


def sweep_executor(args: argparse.Namespace):
    """The executor ``--executor``/``--scheduler`` ask for (None: local processes, ``--jobs``)."""
    if args.executor == "local" and args.scheduler is None:
        return None
    return make_executor(args.executor, jobs=args.jobs or 1, scheduler=args.scheduler)


def check_plot_argument(args: argparse.Namespace) -> None:
    """Validate ``--plot FILE`` before any work is done (an empty FILE too: it is no file)."""
    if args.plot is not None:
        check_plot_path(args.plot)


def write_plot(args: argparse.Namespace, draw: Callable, data) -> None:
    """Draw ``data`` to ``--plot FILE`` with ``draw`` (a function of :mod:`iosim.report.plots`),
    and say so under a table."""
    if args.plot is not None:
        try:
            draw(data, args.plot)
        except OSError as exc:   # checked before the work; the disk may fill or the folder go since
            raise ProblemError(f"--plot {args.plot}: cannot write it ({exc.strerror or exc})") from None
        if args.format == "table":
            print(f"\nplot written to {args.plot}")

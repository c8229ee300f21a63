"""Arguments shared by several subcommands, parsed once into iosim values."""

from __future__ import annotations

import argparse

from ..dtypes import WIDTH_BYTES
from ..errors import ProblemError
from ..problem import Problem


def positive_int(text: str) -> int:
    """argparse type: an integer ≥ 1, with a message naming the bad value."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def add_problem_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hw", required=True, help="built-in profile name (see `iosim profiles`) or path to a YAML profile")
    p.add_argument("--seq-len", "-N", type=positive_int, help="sequence length N (queries and keys)")
    p.add_argument("--seq-len-q", type=positive_int, help="query length N_q, if it differs from the key length")
    p.add_argument("--seq-len-kv", type=positive_int, help="key/value length N_kv (causal masks align bottom-right)")
    p.add_argument("--head-dim", "-d", type=positive_int, required=True, help="head dimension d")
    p.add_argument("--batch", "-B", type=positive_int, default=1, help="batch size B (default 1)")
    p.add_argument("--heads", "-H", type=positive_int, default=1, help="number of heads H (default 1)")
    p.add_argument("--kv-heads", type=positive_int, help="K/V heads H_k for GQA/MQA (default: H)")
    p.add_argument("--dtype", choices=list(WIDTH_BYTES), default="fp16", help="dtype of Q, K, V, O, S, P (default fp16)")
    p.add_argument("--causal", action="store_true", help="causal mask (blocks with no visible key are skipped)")


def problem_from_args(args: argparse.Namespace) -> Problem:
    n_q = args.seq_len_q or args.seq_len
    n_kv = args.seq_len_kv or args.seq_len
    if not (n_q and n_kv):
        raise ProblemError("give --seq-len N, or both --seq-len-q and --seq-len-kv")
    return Problem(seq_len_q=n_q, seq_len_kv=n_kv, head_dim=args.head_dim, batch=args.batch, heads=args.heads,
                   kv_heads=getattr(args, "kv_heads", None), dtype=args.dtype, causal=args.causal)

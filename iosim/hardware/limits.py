"""Bounds on the input iosim reads: file sizes, YAML shapes, number ranges, message sizes.

Profiles and block-mask files come from users, so reading one must finish quickly and in
little memory whatever the file holds (``/dev/zero``, a FIFO, a 60 MB YAML, a billion
laughs) and fail with a short message. Every bound lives here, with its reason; they are
listed for users in ``docs/input-limits.md``.

Two kinds of number range apply to a profile's quantities (in SI base units):

* :data:`REPRESENTABLE` — always enforced: outside it the arithmetic downstream overflows,
  divides by (nearly) zero or leaves int64, whatever the profile means;
* :data:`PLAUSIBLE` — what real GPUs span, with wide margins; outside it a profile is an
  error unless it says ``allow_unusual: true``, which turns these into warnings.
"""

from __future__ import annotations

import os
import stat

#: a profile file may hold at most this many bytes (YAML text: characters); the built-ins
#: are < 6 KB. PyYAML reads dense YAML at 10-100 KB/s, so this bounds a load to seconds
MAX_PROFILE_BYTES = 64 << 10
#: nesting of YAML collections; a profile needs 4 (links, links[0], its bandwidth)
MAX_YAML_DEPTH = 16
#: values (scalars, mappings, lists) in one profile; the built-ins have at most 250
MAX_YAML_NODES = 5_000
#: levels and links a profile may list; a real GPU has 3-6 levels
MAX_LEVELS = 32
MAX_LINKS = 128
#: a ProfileError lists at most this many problems, each cut to at most this many characters
MAX_PROBLEMS = 25
MAX_PROBLEM_CHARS = 300
#: a value quoted in a message is cut to this many characters
EXCERPT_CHARS = 40
#: a number in a profile may have at most this many digits (int("9" * 5000) raises)
MAX_DIGITS = 40

#: a block mask may have at most T_r × T_c = this many blocks (8192 × 8192; 64 MiB as bool)
MAX_MASK_BLOCKS = 1 << 26
#: a block-mask file may hold at most MASK_FILE_SLACK + MASK_BYTES_PER_BLOCK × T_r × T_c
#: bytes (room for a .npy header or comments, and 8 bytes per block: int64, or "1, " rows),
#: and never more than MAX_MASK_FILE_BYTES
MASK_FILE_SLACK = 64 << 10
MASK_BYTES_PER_BLOCK = 8
MAX_MASK_FILE_BYTES = 64 << 20

#: kind -> (lowest, highest) value in base units, always enforced. Rates of at least 1 per
#: second keep every time (bytes / rate) finite; byte sizes stay far inside int64.
REPRESENTABLE: dict[str, tuple[float, float]] = {
    "count": (1, 2**31 - 1),
    "bytes": (1, 2**60),
    "bandwidth": (1, 1e24),
    "flops": (1, 1e24),
    "ops": (1, 1e24),
    "frequency": (1, 1e24),
    "time": (1e-15, 1e6),
}

#: what each range is, for messages and the docs: (lowest, highest, how to print a value)
PLAUSIBLE: dict[str, tuple[float, float, str]] = {
    "sm_count": (1, 100_000, "count"),
    "device capacity": (2**10, 2**50, "bytes"),      # dram, cache: 1 KiB .. 1 PiB
    "on-chip capacity": (2**10, 2**26, "bytes"),     # per SM / per block: 1 KiB .. 64 MiB
    "bandwidth": (1e6, 1e16, "B/s"),                 # 1 MB/s .. 10 PB/s
    "flops": (1e6, 1e18, "FLOP/s"),                  # 1 MFLOP/s .. 1 EFLOP/s
    "ops": (1e6, 1e18, "op/s"),
    "frequency": (1e6, 1e10, "Hz"),                  # 1 MHz .. 10 GHz
    "time": (1e-9, 1.0, "s"),                        # 1 ns .. 1 s
}


class InputRefused(Exception):
    """A file refused before or while reading it; the message says why, in one line."""


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def read_bounded(path: str | os.PathLike, max_bytes: int) -> bytes:
    """The bytes of the regular file at ``path``, if it holds at most ``max_bytes``.

    The file is opened without blocking (a FIFO with no writer would hang ``open``) and
    checked with ``fstat`` on the open descriptor, so a directory, FIFO, device or socket
    is refused up front, and no more than ``max_bytes + 1`` bytes are ever read (a file in
    /proc reports size 0). Raises :class:`InputRefused`.
    """
    if isinstance(path, str) and "\x00" in path:
        raise InputRefused("cannot read: the path contains a NUL character")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError) as e:
        raise InputRefused(f"cannot read: {one_line(getattr(e, 'strerror', None) or str(e), 120)}") from None
    try:
        mode = os.fstat(fd).st_mode
        for test, kind in _KINDS:
            if test(mode):
                raise InputRefused(f"cannot read: it is {kind}, not a regular file")
        if not stat.S_ISREG(mode):
            raise InputRefused("cannot read: it is not a regular file")
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 16, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as e:
        raise InputRefused(f"cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if total > max_bytes:
        raise InputRefused(f"cannot read: it is larger than the limit of {format_size(max_bytes)}")
    return b"".join(chunks)


def format_size(n: int) -> str:
    """``1048576`` -> ``'1 MiB (1,048,576 bytes)'``, for limits in messages."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit} ({n:,} bytes)"
    return f"{n:,} bytes"


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """``repr(value)`` cut to about ``limit`` characters, saying how long the whole was.

    Only str, bytes, numbers and None are shown whole-ish; anything else is named by type,
    so a message never echoes a file or expands a huge nested value.
    """
    if isinstance(value, (str, bytes)):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    if value is None or isinstance(value, (bool, float)):
        return repr(value)
    if isinstance(value, int):
        digits = len(str(abs(value))) if value.bit_length() < 4 * MAX_DIGITS else None
        return repr(value) if digits is not None and digits <= MAX_DIGITS else "a very large integer"
    return f"a {type(value).__name__}"


def one_line(text: str, limit: int = MAX_PROBLEM_CHARS) -> str:
    """``text`` on one line (control characters escaped), cut to ``limit`` characters."""
    flat = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[: 2 * limit])
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"

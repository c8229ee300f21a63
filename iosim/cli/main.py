"""The ``iosim`` command (also ``python -m iosim``).

Every :class:`~iosim.errors.IosimError` (bad profile, impossible blocks, SRAM overflow,
missing GPU...) becomes ``iosim: error: <message>`` on stderr and exit code 2; argparse
reports malformed arguments the same way. No traceback reaches the user.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import IosimError

#: subcommand modules, each with register(subparsers); optional ones may be absent.
COMMANDS = ("profiles", "simulate", "validate", "bounds", "explore", "grade", "pebble")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="iosim",
        description="Count the bytes attention moves between GPU memory levels (HBM, SRAM), "
        "for standard attention, FlashAttention-1 and FlashAttention-2.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"iosim.cli.{name}_command")
        except ModuleNotFoundError as exc:
            if exc.name != f"iosim.cli.{name}_command":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except IosimError as exc:
        print(f"iosim: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `iosim ... | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

# PYTHON_ARGCOMPLETE_OK (shell completion: see complete())
"""The ``iosim`` command (also ``python -m iosim``).

Every :class:`~iosim.errors.IosimError` (bad profile, impossible blocks, SRAM overflow,
missing GPU...) becomes ``iosim: error: <message>`` on stderr and exit code 2; argparse
reports malformed arguments the same way, in one line that names the option (:class:`_Parser`; the
usage is ``--help``'s). No traceback reaches the user. The library's
messages speak the Python API's terms (``block_q``, ``kernel='flash-attn-3'``); here they
are reworded with the subcommand's flags (``--block-q``, ``--kernel flash-attn-3``).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import io
import logging
import os
import re
import sys

from ..errors import IosimError
from ..run.heap import keep_freed_memory
from .commands import COMMANDS

#: API names whose flag's destination is spelled differently
API_TO_DEST = {"algorithm": "algo"}


def _version() -> str:
    """The installed distribution's version (the package root is above the CLI's stage)."""
    try:
        return importlib.metadata.version("iosim")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed: run from a source tree)"


class _Parser(argparse.ArgumentParser):
    """argparse, whose errors are one line like the rest (its subcommands' parsers are of this class too)."""

    def error(self, message: str):
        self.exit(2, f"iosim: error: {message} (usage: {self.prog} --help)\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``iosim`` parser. Every subcommand is registered in full, or, with ``only``, just
    that one (``""``: none), the others by name and help line: ``iosim --help`` and
    ``iosim simulate ...`` then import only what they run."""
    parser = _Parser(
        prog="iosim",
        description="Count the bytes attention moves between GPU memory levels (HBM, SRAM), "
        "for standard attention, FlashAttention-1 and FlashAttention-2.",
    )
    parser.add_argument("--version", action="version", version=f"iosim {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (module, help_line) in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(f"{__package__}.{module}").register(sub)
        else:
            sub.add_parser(name, help=help_line, add_help=False)
    return parser


def _command_in(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names (its first word that is not an option), if any."""
    return next((a for a in argv if not a.startswith("-")), None)


def reword(message: str, subparser: argparse.ArgumentParser) -> str:
    """A library message in the CLI's terms: ``name='value'`` becomes ``--flag value`` and a
    bare API name with an underscore (``block_q``) becomes its flag, for this subcommand's
    options; anything else is left as it is."""
    flags = {a.dest: max(a.option_strings, key=len) for a in subparser._actions if a.option_strings}

    def flag(name: str) -> str | None:
        return flags.get(API_TO_DEST.get(name, name))

    def assignment(m: re.Match) -> str:
        f = flag(m.group(1))
        return m.group(0) if f is None else f"{f} {m.group(2) if m.group(2) is not None else m.group(3)}"

    message = re.sub(r"\b([a-z][a-z0-9_]*)=(?:'([^']*)'|([\w.+-]+))", assignment, message)
    return re.sub(r"(?<![-\w])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b", lambda m: flag(m.group(1)) or m.group(0), message)


def complete(parser: argparse.ArgumentParser | None = None, **argcomplete_options) -> None:
    """Shell completion: when the shell asks (argcomplete sets ``_ARGCOMPLETE``), print the
    completions of the command line it is completing and exit. Needs the optional
    ``argcomplete`` (``pip install "iosim[completion]"``; then
    ``eval "$(register-python-argcomplete iosim)"`` in the shell's start-up file)."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    try:
        import argcomplete
    except ImportError:
        return
    argcomplete.autocomplete(parser or build_parser(), **argcomplete_options)


class _Stderr(logging.Handler):
    """The library's notices (logger ``iosim``: a long L2 play) on this moment's standard error."""

    def emit(self, record: logging.LogRecord) -> None:
        print(self.format(record), file=sys.stderr, flush=True)


def _show_notices() -> None:
    log = logging.getLogger("iosim")
    if not any(isinstance(h, _Stderr) for h in log.handlers):
        log.addHandler(_Stderr())
        log.setLevel(logging.INFO)


def main(argv: list[str] | None = None) -> int:
    complete()                               # (every subcommand in full: completion may need any)
    _show_notices()
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command_in(argv)
    parser = build_parser(command if command in COMMANDS else "")     # "": no subcommand in full
    args = parser.parse_args(argv)
    keep_freed_memory()                      # large arrays reuse the heap's pages (the process exits when done)
    try:
        code = args.run(args)
        sys.stdout.flush()                   # here, so that an output that cannot be written is said below
        return code
    except IosimError as exc:
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        print(f"iosim: error: {reword(str(exc), subparsers.choices[args.command])}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `iosim ... | head`
        return 0
    except OSError as exc:   # a device full or gone (the output's, a file's): no input of the user's is wrong
        _drop_unwritten_output()
        print(f"iosim: error: {exc.filename + ': ' if exc.filename else ''}{exc.strerror or exc}", file=sys.stderr)
        return 1


def _drop_unwritten_output() -> None:
    """Where standard output cannot take what is left in its buffer, point its descriptor at the null device, so
    that the interpreter's flush at exit does not fail again (a stream with no descriptor is left as it is)."""
    try:
        sys.stdout.flush()
    except OSError:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, sys.stdout.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

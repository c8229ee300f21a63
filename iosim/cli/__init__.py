"""The command line, ``iosim …``: the top stage, which may import every other.

:mod:`.main` builds the parser and rewords the library's errors with the subcommand's
flags; :mod:`.arguments` holds the flags several subcommands share; each other module is
one subcommand (``simulate_command`` …), with ``register(subparsers)`` and
``run(args) -> int``.
"""

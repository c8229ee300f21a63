"""The subcommands, in the order ``iosim --help`` lists them: name -> (module, one-line help).

Kept apart from the modules themselves so that ``iosim --help`` (and ``iosim COMMAND``)
imports only what it runs: each module registers its full parser (``register(subparsers)``,
with its help line from here) and sets ``run(args) -> int`` as the command's action.
"""

COMMANDS: dict[str, tuple[str, str]] = {
    "profiles": ("profiles_command", "list the built-in hardware profiles"),
    "simulate": ("simulate_command", "count the HBM traffic, SRAM use, FLOPs and time of one algorithm"),
    "validate": ("validate_command",
                 "run standard/FA1/FA2 as CUDA kernels (CuPy) and compare their bytes with the simulator's"),
    "bounds": ("bounds_command",
               "check Theorems 2 and 5, Propositions 3 and 4 and compulsory traffic against counted HBM accesses"),
    "explore": ("explore_command",
                "sweep block sizes (B_r, B_c), rank them as `iosim simulate` times them, and name the practical "
                "choice"),
    "grade": ("grade_command", "grade an assignment: exact output, tiles within SRAM, HBM traffic of the algorithm"),
    "assignment": ("assignment_command",
                   "write an assignment's student pack (README and starter, never the solution): export NAME|PATH DIR"),
    "pebble": ("pebble_command", "red-blue pebbling of the attention DAG: exact minimum IO against standard, FA1, FA2"),
}

HELP = {name: help_line for name, (_, help_line) in COMMANDS.items()}

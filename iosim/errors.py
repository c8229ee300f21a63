"""One exception family for the whole package.

Every error a user can cause (a bad profile, an impossible block size, a tile set that
overflows SRAM, a missing GPU) is an :class:`IosimError`. The CLI turns any of them into
a one-paragraph message and exit code 2; nothing else escapes as a traceback.
"""


class IosimError(Exception):
    """Base class: a problem with what the user asked for, reported without a traceback."""


class ProfileError(IosimError):
    """A hardware profile could not be found, parsed or validated.

    ``problems`` lists every problem found, each starting with its field path, so a user
    fixes a YAML file in one pass instead of one error at a time.
    """

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid hardware profile {source}:\n{lines}")


class ProblemError(IosimError):
    """An attention shape or block size that cannot be run (d <= 0, B_r > N, ...)."""


class ScheduleError(IosimError):
    """A schedule used the simulator's API in a way it cannot count (unknown tensor, ...)."""


class CapacityError(IosimError):
    """The tiles a schedule keeps on chip do not fit in a capacity-limited level.

    The message is built from parts a caller can use apart: ``detail`` (what does not
    fit), ``advice`` (what the CLI user can do) and ``where`` (the run: blocks, then the
    block rule and passes), read as "detail advice (where...)".
    """

    def __init__(self, detail: str, advice: str = "", where: tuple[str, ...] = ()):
        self.detail, self.advice, self.where = detail, advice, tuple(where)
        text = detail + (f" {advice}" if advice else "") + (f" ({', '.join(self.where)})" if self.where else "")
        super().__init__(text)


class DependencyError(IosimError):
    """An optional dependency (CuPy, a GPU, matplotlib, ncu) is missing."""

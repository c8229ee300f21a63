"""One exception family for the whole package, and the checks that raise it.

Every error a user can cause (a bad profile, an impossible block size, a tile set that
overflows SRAM, a missing GPU) is an :class:`IosimError`. The CLI turns any of them into
a one-paragraph message and exit code 2; nothing else escapes as a traceback.
"""


from __future__ import annotations


class IosimError(Exception):
    """Base class: a problem with what the user asked for, reported without a traceback.

    Messages speak the Python API's terms; ``field`` names the parameter or option at
    fault (e.g. ``"block_q"``), so the CLI can reword the message with its flag.
    """

    def __init__(self, *args, field: str | None = None):
        super().__init__(*args)
        self.field = field

    def __reduce__(self):
        """Pickled as its message and attributes (a sweep's worker process raises it, the
        parent re-raises it), whatever arguments the subclass's constructor takes."""
        return _rebuild, (type(self), self.args, self.__dict__)


def _rebuild(cls: type, args: tuple, state: dict) -> "IosimError":
    exc = Exception.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class ProfileError(IosimError):
    """A hardware profile could not be found, parsed or validated.

    ``problems`` lists every problem found, each starting with its field path, so a user
    fixes a YAML file in one pass instead of one error at a time.
    """

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid hardware profile {source}:\n{lines}", field="hw")


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


def require_positive_int(name: str, value, error: type[IosimError] = ProblemError) -> int:
    """``value`` if it is a positive integer (not a bool), else ``error`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise error(f"{name} must be a positive integer, got {value!r}", field=name)
    return value


def require_choice(name: str, value, choices, error: type[IosimError] = ProblemError):
    """``value`` if it is one of ``choices``, else ``error``: "unknown NAME …; choose one of …"."""
    try:
        known = value in choices
    except TypeError:  # an unhashable value is no key of a dict of choices
        known = False
    if not known:
        raise error(f"unknown {name} {value!r}; choose one of {', '.join(map(str, choices))}", field=name)
    return value

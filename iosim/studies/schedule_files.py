"""Schedules of one's own, named ``FILE.py:FUNCTION``: loaded from the file, checked, and
carried to worker processes by reference.

A user's function may not pickle (it lives in a module Python cannot import by name), so
a sweep (``iosim bounds``, ``iosim explore``) carries a :class:`ScheduleFile` — the
file's path and the function's name — to its workers, and each worker loads the function
itself with :func:`load_schedule_file`, once per process and version of the file.
``iosim simulate --algo FILE.py:FUNCTION`` uses the same loader.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import pathlib
from dataclasses import dataclass
from typing import Callable

from ..errors import IosimError, ScheduleError

#: functions loaded in this process: (resolved path, name, mtime, size) -> function
_LOADED: dict[tuple, Callable] = {}


def split_reference(text: str) -> tuple[str, str] | None:
    """(FILE.py, FUNCTION) of ``FILE.py:FUNCTION``, or None for text of another form."""
    path, _, name = text.rpartition(":")
    return (path, name) if path.endswith(".py") and name.isidentifier() else None


def load_schedule_file(path: str, name: str) -> Callable:
    """The function ``name`` of the Python file ``path`` (it runs the file), checked to take
    a schedule's one argument, ``ctx``; :class:`~iosim.ScheduleError` in one line otherwise."""
    file = pathlib.Path(path)
    if not file.is_file():
        raise ScheduleError(f"{path}: no such file", field="algorithm")
    stat = file.stat()
    key = (str(file.resolve()), name, stat.st_mtime_ns, stat.st_size)
    if key not in _LOADED:
        spec = importlib.util.spec_from_file_location(f"iosim_user_schedule_{file.stem}", file)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except SystemExit as exc:      # sys.exit() in the file: a refusal, not iosim's exit (Ctrl-C still stops)
            raise ScheduleError(f"{path} exited ({exit_call(exc)}) while being imported", field="algorithm") from None
        except Exception as exc:  # noqa: BLE001 - the user's file: say what it raised, in one line
            raise ScheduleError(f"{path}: loading it raised {type(exc).__name__}: {_one_line(exc)}",
                                field="algorithm") from None
        function = getattr(module, name, None)
        if not callable(function):
            raise ScheduleError(f"{path} defines no function {name}", field="algorithm")
        _check_signature(path, name, function)
        _LOADED[key] = function
    return _LOADED[key]


def _check_signature(path: str, name: str, function: Callable) -> None:
    """A schedule is called ``function(ctx)`` (options as keywords with defaults)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):      # no signature to read (a builtin): let the run tell
        return
    try:
        signature.bind(None)
    except TypeError:
        raise ScheduleError(f"{path}:{name} takes {signature}; a schedule takes one argument, ctx "
                            f"(def {name}(ctx): …)", field="algorithm") from None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or "(no message)"


def exit_call(exc: SystemExit) -> str:
    """The ``sys.exit(…)`` call a :class:`SystemExit` stands for: ``sys.exit(3)``, ``sys.exit()``."""
    code = exc.code
    shown = "" if code is None else repr(code) if isinstance(code, (int, str)) else _one_line(exc)
    return f"sys.exit({shown[:200]})"


@dataclass(frozen=True)
class ScheduleFile:
    """A schedule of one's own by reference: plain strings, so it pickles to any worker."""

    path: str            # absolute, so a worker finds it whatever its working folder
    function: str
    label: str           # FILE.py:FUNCTION as given: the name reports show

    @classmethod
    def from_text(cls, text: str) -> "ScheduleFile":
        """``FILE.py:FUNCTION``, loaded once here so that a bad file or function is reported
        before any work starts."""
        parts = split_reference(text)
        if parts is None:
            raise ScheduleError(f"{text!r} is not FILE.py:FUNCTION", field="algorithm")
        path, name = parts
        load_schedule_file(path, name)
        return cls(str(pathlib.Path(path).resolve()), name, text)

    @property
    def name(self) -> str:
        return self.label

    def load(self) -> Callable:
        """The function, loaded in this process, whose errors while it runs are
        :class:`~iosim.ScheduleError` naming it (one line in the CLI, from any worker)."""
        return _guarded(load_schedule_file(self.path, self.function), self.label)


def _guarded(function: Callable, label: str) -> Callable:
    """``function`` whose errors name ``label``, and whose ``__name__`` is ``label``
    (FILE.py:FUNCTION): the name :func:`iosim.prepare` reports a schedule function by, so
    ``simulate`` names it as ``bounds`` and ``explore`` do, whatever the function's own
    name (``from … import fa2_forward as my_fa2`` is ``FILE.py:my_fa2``, not fa2_forward)."""
    @functools.wraps(function)
    def schedule(ctx, **options):
        try:
            return function(ctx, **options)
        except IosimError:
            raise
        except SystemExit as exc:      # as while it is imported: the schedule's refusal, not iosim's exit
            b = ctx.blocks
            raise ScheduleError(f"{label} exited ({exit_call(exc)}) while running (B_r={b.block_q}, "
                                f"B_c={b.block_kv})", field="algorithm") from None
        except Exception as exc:  # noqa: BLE001 - the user's code: say what it raised, in one line
            b = ctx.blocks
            raise ScheduleError(f"{label} raised {type(exc).__name__}: {_one_line(exc)} "
                                f"(B_r={b.block_q}, B_c={b.block_kv})", field="algorithm") from exc
    schedule.__name__ = schedule.__qualname__ = label
    return schedule


def resolve_schedule(schedule):
    """What :func:`iosim.simulate` takes for ``schedule``: a :class:`ScheduleFile` loaded
    (in this process), anything else as it is."""
    return schedule.load() if isinstance(schedule, ScheduleFile) else schedule


def user_schedule(algorithm) -> ScheduleFile | Callable | None:
    """``algorithm`` as a schedule of one's own — a :class:`ScheduleFile` (also from a
    ``"FILE.py:FUNCTION"`` string) or a function — or None for a built-in name."""
    if isinstance(algorithm, str):
        return ScheduleFile.from_text(algorithm) if split_reference(algorithm) else None
    return algorithm if isinstance(algorithm, ScheduleFile) or callable(algorithm) else None


def schedule_name(schedule) -> str:
    """How reports name a schedule of one's own: FILE.py:FUNCTION, or the function's name."""
    if isinstance(schedule, ScheduleFile):
        return schedule.label
    return getattr(schedule, "__name__", "custom")


__all__ = ["ScheduleFile", "load_schedule_file", "split_reference", "resolve_schedule", "user_schedule",
           "schedule_name"]

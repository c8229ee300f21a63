"""``grade(FILE)``: run a submission in its own process and check it.

The flow, for a schedule assignment (``fa1``, ``fa2``):

1. Read the file's syntax tree (not run) to learn which assignment it answers, that it
   defines the graded function and the written answer's string literal; a missing file
   or function is bad input (exit 2). Nothing the student's process says later changes
   these: a file whose function turns out not to be one after loading fails ``loads``.
2. Draw the seed (:mod:`secrets`, unless the instructor gives one) and, for each input,
   in this process: Q, K, V (:func:`.assignments.build_inputs`: random and adversarial
   inputs), kept read-only; the float64 reference output, from that pristine copy; the
   built-in schedule's byte counts (count mode). None of it, the seed included, reaches
   the student's process: its command line, environment and files hold no trace of it,
   and the report names the seed only once that process is gone.
3. Start the student's process (:mod:`.sandbox`); it loads the file and runs the
   function once per input, in an order drawn from the seed, against a stand-in ``ctx``
   whose every call comes back here (:mod:`.server`), where the real engine counts,
   checks capacity and computes on a fresh copy of the inputs.
4. Check (:mod:`.checks`): the file loads; every input runs to the end; the outputs
   match the reference; the tiles fit; the traffic equals the built-in schedule's; the
   written answer is there. An input that did not run to the end fails exactness, io and
   capacity with the reason; a protocol violation by the student's process is a failing
   grade, never bad input.

For ``blocks`` the function returns (B_r, B_c) per GPU and shape; this process runs the
built-in FA2 with them and compares with the best of ``iosim explore``.
"""

from __future__ import annotations

import math
import operator
import pathlib
import secrets
from dataclasses import dataclass

import numpy as np

from ..errors import CapacityError, IosimError
from ..hardware import load_profile
from ..hardware.limits import one_line
from ..workload.problem import sram_elements
from ..run import Options, choose_blocks, simulate
from .assignments import (GradingInputError, ScheduleAssignment, Submission, build_inputs, reference_outputs, resolve,
                          signature)
from .checks import (CaseRun, answer_check, blocks_checks, capacity_check, capacity_message, exactness_check,
                     io_check, loads_check, runs_check)
from .feedback import Check, GradeReport, failure_hint, path_text
from .protocol import (WALL_EXTRA_S, WALL_FACTOR, ChannelClosed, ChannelError, ChannelTimeout, StudentClock,
                       call_reply, error_of, hello_reply)
from .sandbox import StudentProcess
from .server import ScheduleServer, StudentFailure

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_MB = 1024
#: the range grade() brings a limit into. Within it a correct submission always passes: the
#: instructor solutions need 1-3 s of the student's time on an idle machine and about 10 s on
#: one running seven times more work than it has cores (the grader's own work is not counted,
#: see protocol.StudentClock), and well under 256 MiB; a limit outside the range is moved to
#: the nearest end (and the report says so) rather than reaching the student's process as a
#: time-out nobody could meet or an rlimit the kernel cannot take. Not a positive number at
#: all is bad input (GradingInputError).
MIN_TIMEOUT_S, MAX_TIMEOUT_S = 20.0, 24 * 3600.0
MIN_MEMORY_MB, MAX_MEMORY_MB = 256, 1 << 24           # 256 MiB to 16 TiB
#: bits of a seed drawn for a grade
SEED_BITS = 63


def _syntax_failure(exc: Exception) -> dict:
    where = f"line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
    return {"message": f"{type(exc).__name__}: {getattr(exc, 'msg', None) or exc}", "where": where,
            "hint": "the file must be valid Python; run `python FILE` to see the error"}


# -- the student's process --------------------------------------------------------------------
def _start(proc: StudentProcess, clock: StudentClock, sub: Submission, timeout_s: float):
    """Load the submission in the child: the failure, or None once it says it has loaded (which
    only lets the runs start: they are judged on the grader's engine, not on that word). The
    written answer is not asked for: it comes from the file's syntax tree."""
    spec = sub.spec
    try:
        proc.hello(file=str(sub.file), function=spec.function, attributes=[])
        hello = clock.recv(proc.channel)
        how = hello_reply(hello)
    except ChannelTimeout:
        return {"message": f"loading the file did not finish within {timeout_s:g} s",
                "hint": "code at the top level of the file runs on import: an endless loop there?"}
    except ChannelClosed:
        return {"message": proc.exit_reason(), "hint": failure_hint("crash", "", timeout_s, 0)}
    except ChannelError as exc:
        return {"message": f"the student's process broke the protocol: {exc}",
                "hint": failure_hint("protocol", "", timeout_s, 0)}
    if how == "missing":
        return {"message": f"the student's process reports that, once the file is loaded, {spec.function} is not a "
                           "function",
                "hint": f"define {spec.function}{signature(spec)} with def at the top level of the file, and do not "
                        "rebind the name afterwards"}
    if how == "error":
        error = error_of(hello)
        return {"message": f"{error['type']}: {error['message'][:1000]}", "where": error["where"],
                "hint": "the file raised an exception while loading; run `python FILE` to see it"}
    return None


def _transport_failure(exc: Exception, proc: StudentProcess, timeout_s: float, clock: StudentClock) -> tuple:
    """(status, message) when the connection broke during a run: a timeout, a dead process or garbage."""
    if isinstance(exc, ChannelTimeout):
        if clock.used < timeout_s:
            return "timeout", (f"the grade went on for longer than its wall-clock cap of "
                               f"{WALL_FACTOR * timeout_s + WALL_EXTRA_S:g} s "
                               "(the schedule's requests kept the grader busy)")
        return "timeout", f"no answer within the time limit of {timeout_s:g} s"
    if isinstance(exc, ChannelClosed):
        reason = proc.exit_reason()
        if "MemoryError" in proc.output_tail():
            return "memory", reason + " (out of memory)"
        return "crash", reason
    return "protocol", f"the student's process broke the protocol: {exc}"


@dataclass(frozen=True)
class Limits:
    """What the student's process may use, as :func:`validate_limits` made them."""

    timeout_s: float
    memory_mb: int
    isolation: bool = True
    note: str = ""            # what was moved into range, for the report

    def describe(self) -> str:
        return f"limits {self.timeout_s:g} s, {self.memory_mb:,} MiB" + (f" ({self.note})" if self.note else "")


def _graded_session(sub: Submission, limits: Limits, seed: int, setup, *, run, checks) -> GradeReport:
    """What every assignment does around its own part: load the file in the student's process
    and, once it has loaded, ``run(proc, clock)``; then, with the process gone, report whether it
    loaded, the checks ``checks()`` returns (only when it loaded), the written answer and the
    setup line ``setup()`` (which names the seed: made only now)."""
    spec, failure, output = sub.spec, None, ""
    if sub.syntax_error is not None:
        failure = _syntax_failure(sub.syntax_error)
    else:
        with StudentProcess(limits.timeout_s, limits.memory_mb, isolation=limits.isolation) as proc:
            clock = StudentClock(limits.timeout_s)
            failure = _start(proc, clock, sub, limits.timeout_s)
            if failure is None:
                run(proc, clock)
            output = proc.output_tail()
    # The student's process is gone: StudentProcess.__exit__ killed it and everything it started.
    graded = [loads_check(spec.function, signature(spec), failure)]
    if failure is None:
        graded += checks()
    if spec.answer:
        graded.append(answer_check(spec.answer, sub.answers.get(spec.answer), spec.answer_prompt))
    return GradeReport(_shown(sub.file), spec.name, spec.title, setup(), graded, seed, output,
                       weights=dict(spec.weights))


def _shown(file: pathlib.Path) -> str:
    """The file as the report names it: relative to the working directory when inside it."""
    try:
        return path_text(file.relative_to(pathlib.Path.cwd()))
    except ValueError:
        return path_text(file)


def _problem_payload(problem) -> dict:
    return {"head_dim": problem.head_dim, "seq_len_q": problem.seq_len_q, "seq_len_kv": problem.seq_len_kv,
            "batch": problem.batch, "heads": problem.heads, "kv_heads": problem.kv_heads, "dtype": problem.dtype,
            "causal": problem.causal}


# -- schedule assignments --------------------------------------------------------------------
def _read_only(inputs: dict) -> dict:
    """A private float64 copy of each array, which nothing can write to."""
    out = {}
    for name, array in inputs.items():
        out[name] = np.array(array, dtype=np.float64, copy=True)
        out[name].setflags(write=False)
    return out


def _prepare(spec: ScheduleAssignment, profile, seed: int) -> list:
    """Every input, before the student's code runs: its blocks, its Q, K, V (the grader's
    pristine read-only copy), the float64 reference computed from that copy and the built-in
    schedule's counts; and the order the inputs run in, drawn from the seed."""
    runs = []
    for k, case in enumerate(spec.cases):
        M = sram_elements(profile.scratchpad.per_block_bytes, case.problem.dtype)
        blocks, _ = choose_blocks(case.problem, M)
        run = CaseRun(case, inputs=_read_only(build_inputs(case, blocks.block_kv, seed + k)), blocks=blocks)
        run.reference = reference_outputs(run.inputs, case.problem)
        run.expected = _expected(spec, profile, case, blocks)
        runs.append(run)
    for position, k in enumerate(np.random.default_rng([seed, len(runs)]).permutation(len(runs))):
        runs[k].order = position
    return runs


def _expected(spec: ScheduleAssignment, profile, case, blocks):
    """The reference schedule's counts on one input; a reference that fails is the instructor's
    problem (:class:`GradingInputError`, exit 2), never the student's."""
    try:
        return simulate(profile, spec.algorithm, case.problem, blocks=blocks)
    except Exception as exc:  # noqa: BLE001 — an instructor's reference.py may raise anything
        raise GradingInputError(one_line(f"the reference schedule ({spec.algorithm_title}) of assignment {spec.name!r} "
                                         f"fails on input {case.name!r}: {type(exc).__name__}: {exc}", 2000)) from None


def _run_cases(proc: StudentProcess, clock: StudentClock, runs: list, profile, timeout_s: float) -> None:
    """Run the schedule on every input, in the drawn order, on a fresh copy of its inputs;
    a broken connection leaves the inputs after it ``not run``."""
    server = ScheduleServer(proc.channel, clock)
    for run in sorted(runs, key=lambda r: r.order):
        p, b = run.case.problem, run.blocks
        payload = {"problem": _problem_payload(p), "blocks": [b.block_q, b.block_kv]}
        inputs = {name: array.copy() for name, array in run.inputs.items()}   # the engine's, not ours
        try:
            run.result = simulate(profile, server.schedule, p, blocks=b, mode="numeric", inputs=inputs,
                                  options=Options(enforce_registers=True, schedule_kwargs={"payload": payload}))
            run.status = "ok"
        except CapacityError as exc:
            run.status, run.message = "capacity", capacity_message(exc)
        except StudentFailure as exc:
            run.status, run.message, run.where = exc.kind, exc.message, exc.where
        except ChannelError as exc:
            run.status, run.message = _transport_failure(exc, proc, timeout_s, clock)
            return
        except IosimError as exc:  # the engine refused what the schedule did (outside a request)
            run.status, run.message = "exception", f"{type(exc).__name__}: {exc}"[:2000]


def _grade_schedule(sub: Submission, limits: Limits, seed: int) -> GradeReport:
    spec = sub.spec
    profile = load_profile(spec.hw)
    runs = _prepare(spec, profile, seed)
    b = runs[0].blocks
    adversarial = sum(r.case.adversarial for r in runs)

    def setup() -> str:
        return (f"hardware {profile.name}: {profile.scratchpad.per_block_bytes:,} B shared memory and "
                f"{profile.registers.per_block_bytes:,} B registers per thread block; blocks B_r × B_c = "
                f"{b.block_q} × {b.block_kv} (Algorithm 1's rule, in ctx.blocks); {len(runs)} inputs, "
                f"{len(runs) - adversarial} random and {adversarial} built to break shortcuts, run in an order "
                f"drawn from the seed (seed {seed}); {limits.describe()}")

    def checks() -> list:
        exact = exactness_check(runs, spec.outputs)
        return [runs_check(runs, limits.timeout_s, limits.memory_mb), exact,
                *(_of_attention(c, runs, exact) for c in (capacity_check(runs),
                                                          io_check(runs, spec.algorithm_title, spec.io_hint)))]

    return _graded_session(sub, limits, seed, setup,
                           run=lambda proc, clock: _run_cases(proc, clock, runs, profile, limits.timeout_s),
                           checks=checks)


def _of_attention(check: Check, runs: list, exact: Check) -> Check:
    """``capacity`` and ``io`` judge how a schedule computes attention: where its outputs are not attention's
    on an ordinary input (random scores of a few units: not built to break shortcuts, not scaled up), a schedule
    that computes nothing could pass them, so they fail, saying so (a red-team pass, session 48: loads and
    stores alone scored 80)."""
    wrong = [r.case.name for r, c in zip(runs, exact.cases)
             if r.status == "ok" and "large" not in r.tags and not c.get("ok", True)]
    if not wrong or not check.passed:
        return check
    return Check(check.name, "fail", f"not credited: the outputs are not attention's on {len(wrong)} of the ordinary "
                 f"inputs (e.g. {wrong[0]}; see exactness), and a schedule that computes something else can hold "
                 f"and move the same tiles ({check.detail})",
                 "make the outputs exact on the ordinary inputs first (see exactness)", check.cases)


# -- choosing blocks ----------------------------------------------------------------------------
def _call_cases(proc: StudentProcess, clock: StudentClock, cases, replies: list, timeout_s: float) -> None:
    """Call the student's function on each (GPU, shape): per case the grader's record
    ``{"status", "value", "message", "where"}`` of the reply, until the connection breaks or
    the process breaks the protocol."""
    for hw, problem in cases:
        try:
            clock.send(proc.channel, {"call": {"hw": hw, "problem": _problem_payload(problem)}})
            reply = clock.recv(proc.channel)
            how = call_reply(reply)
        except ChannelError as exc:
            status, message = _transport_failure(exc, proc, timeout_s, clock)
            replies.append({"status": status, "message": message, "where": ""})
            return
        if how == "value":
            returned = reply.get("returned") if reply["value"] is None else None
            replies.append({"status": "value", "value": reply["value"], "returned": returned})
        else:
            error = error_of(reply)
            status = "memory" if error["type"] == "MemoryError" else "exception"
            replies.append({"status": status, "message": f"{error['type']}: {error['message'][:500]}",
                            "where": error["where"][:300]})


def _grade_blocks(sub: Submission, limits: Limits, seed: int) -> GradeReport:
    spec = sub.spec
    labels = [f"{hw} N={p.seq_len_q} d={p.head_dim} {p.dtype}{' causal' if p.causal else ''}" for hw, p in spec.cases]
    setup = (f"{spec.algorithm} on {len(spec.cases)} GPUs and shapes ({'; '.join(labels)}); graded objective: HBM "
             f"bytes within {spec.band:.0%} of the best of `iosim explore`; {limits.describe()}")
    replies: list = []
    return _graded_session(sub, limits, seed, lambda: setup,
                           run=lambda proc, clock: _call_cases(proc, clock, spec.cases, replies, limits.timeout_s),
                           checks=lambda: blocks_checks(spec, labels, replies, limits.timeout_s, limits.memory_mb))


# -- entry point ------------------------------------------------------------------------------
def validate_limits(timeout_s, memory_mb, isolation: bool = True) -> Limits:
    """The limits as the grader uses them: a positive time (seconds) and a positive whole
    number of MiB, each moved into [MIN, MAX] when outside it; anything else is
    :class:`GradingInputError` (the instructor's input to fix, never a student's failure)."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float, np.integer, np.floating)):
        raise GradingInputError(f"the time limit must be a number of seconds, got {timeout_s!r}")
    asked_s = float(timeout_s)
    if math.isnan(asked_s) or asked_s <= 0:
        raise GradingInputError(f"the time limit must be a positive number of seconds, got {timeout_s!r}")
    try:
        if isinstance(memory_mb, bool):
            raise TypeError
        asked_mb = operator.index(memory_mb)
    except TypeError:
        raise GradingInputError(f"the memory limit must be a whole number of MiB, got {memory_mb!r}") from None
    if asked_mb <= 0:
        raise GradingInputError(f"the memory limit must be a positive number of MiB, got {asked_mb}")
    timeout_s = min(max(asked_s, MIN_TIMEOUT_S), MAX_TIMEOUT_S)
    memory_mb = min(max(asked_mb, MIN_MEMORY_MB), MAX_MEMORY_MB)
    notes = []
    if timeout_s != asked_s:
        notes.append(f"{asked_s:g} s asked, the {'least' if asked_s < timeout_s else 'most'} the grader uses is "
                     f"{timeout_s:g} s")
    if memory_mb != asked_mb:
        notes.append(f"{asked_mb:,} MiB asked, the {'least' if asked_mb < memory_mb else 'most'} the grader uses is "
                     f"{memory_mb:,} MiB")
    return Limits(timeout_s, memory_mb, bool(isolation), "; ".join(notes))


def _seed(seed) -> int:
    """The instructor's seed (a non-negative integer), or a fresh one from the OS's secure source."""
    if seed is None:
        return secrets.randbits(SEED_BITS)
    try:
        if isinstance(seed, bool):
            raise TypeError
        seed = operator.index(seed)
    except TypeError:
        raise GradingInputError(f"the seed must be an integer, got {seed!r}") from None
    if seed < 0:
        raise GradingInputError(f"the seed must be a non-negative integer, got {seed}")
    return seed


def grade(path: str | pathlib.Path, assignment=None, *, timeout_s: float = DEFAULT_TIMEOUT_S,
          memory_mb: int = DEFAULT_MEMORY_MB, seed: int | None = None, isolation: bool = True) -> GradeReport:
    """Grade the submission at ``path``; see :mod:`iosim.grading`.

    ``assignment``: a built-in name (``fa1``, ``fa2``, ``blocks``), the folder of an
    assignment with its ``assignment.yaml`` (docs/grading.md, "Adding an assignment"), or
    None to recognise a built-in one from the function the file defines.

    ``seed`` makes the inputs reproducible (an instructor's re-run); by default a fresh one
    is drawn. Either way it stays in this process. ``isolation`` is passed to
    :class:`~iosim.grading.sandbox.StudentProcess` (the student's process in its own Linux
    namespaces)."""
    limits = validate_limits(timeout_s, memory_mb, isolation)
    sub = resolve(path, assignment)
    run = _grade_schedule if isinstance(sub.spec, ScheduleAssignment) else _grade_blocks
    return run(sub, limits, _seed(seed))

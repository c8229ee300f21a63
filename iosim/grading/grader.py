"""``grade(FILE)``: run a submission in its own process and check it.

The flow, for a schedule assignment (``fa1``, ``fa2``):

1. Read the file's syntax tree (not run) to learn which assignment it answers and that
   it defines the graded function; a missing file or function is bad input (exit 2).
2. For each input, in this process: the built-in schedule's byte counts (count mode),
   random Q, K, V and the float64 reference output. None of it leaves this process.
3. Start the student's process (:mod:`.sandbox`); it loads the file and runs the
   function once per input against a stand-in ``ctx`` whose every call comes back here
   (:mod:`.server`), where the real engine counts, checks capacity and computes.
4. Check (:mod:`.checks`): the file loads; every input runs to the end; the outputs
   match the reference; the tiles fit; the traffic equals the built-in schedule's; the
   written answer is there.

For ``blocks`` the function returns (B_r, B_c) per GPU and shape; this process runs the
built-in FA2 with them and compares with the best of ``iosim explore``.
"""

from __future__ import annotations

import ast
import functools
import pathlib
import re
import secrets

from ..errors import CapacityError, IosimError, require_choice
from ..studies.explore import explore
from ..hardware import load_profile
from ..workload.problem import sram_elements
from ..run import Options, choose_blocks, simulate
from ..workload.inputs import random_inputs
from .assignments import ASSIGNMENTS, BlocksAssignment, ScheduleAssignment, function_names
from .checks import (CaseRun, answer_check, capacity_check, exactness_check, failure_hint, io_check,
                     loads_check, reference_outputs, runs_check)
from .protocol import ChannelClosed, ChannelError, ChannelTimeout
from .feedback import Check, GradeReport
from .sandbox import StudentProcess
from .server import ScheduleServer, StudentFailure

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_MB = 1024
MAX_SOURCE_BYTES = 1 << 20


class GradingInputError(IosimError):
    """The grader cannot grade this: no such file, or not a submission for the assignment."""


# -- which assignment ---------------------------------------------------------------------------
def _defined_names(tree: ast.Module) -> set:
    """Names a module binds at top level (also inside top-level if/try/with blocks)."""
    names, todo = set(), list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                todo.extend(getattr(node, field, []) or [])
        elif isinstance(node, ast.ExceptHandler):
            todo.extend(node.body)
    return names


def resolve(path: str | pathlib.Path, assignment: str | None):
    """(absolute path, assignment, syntax error or None), or :class:`GradingInputError`."""
    file = pathlib.Path(path)
    if not file.is_file():
        raise GradingInputError(f"{path}: no such file")
    if assignment is not None:
        require_choice("assignment", assignment, ASSIGNMENTS, GradingInputError)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise GradingInputError(f"{path}: cannot read it ({exc.strerror})") from None
    if len(raw) > MAX_SOURCE_BYTES:
        raise GradingInputError(f"{path}: {len(raw):,} bytes is too large for a submission")
    source = raw.decode("utf-8", "replace")
    try:
        names, syntax_error = _defined_names(ast.parse(source, filename=str(file))), None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        # Graded as a failure when we know which assignment it is; a guess from the text otherwise.
        names = set(re.findall(r"^def\s+(\w+)", source, flags=re.M))
        syntax_error = exc
    known = function_names()
    if assignment is None:
        found = sorted(known[n] for n in names if n in known)
        if len(found) != 1:
            wanted = ", ".join(f"{f} ({a})" for f, a in known.items())
            what = "several graded functions" if found else "none of the graded functions"
            raise GradingInputError(f"{path} defines {what}: {wanted}; say which with --assignment")
        assignment = found[0]
    spec = ASSIGNMENTS[assignment]
    if spec.function not in names:
        raise GradingInputError(f"{path} does not define {spec.function}{_signature(spec)}, the function assignment "
                                f"{assignment!r} grades (see examples/assignments/{spec.folder}/README.md)")
    return file.resolve(), spec, syntax_error


def _signature(spec) -> str:
    return "(ctx)" if isinstance(spec, ScheduleAssignment) else "(hw, problem)"


def _syntax_failure(exc: Exception) -> dict:
    where = f"line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
    return {"message": f"{type(exc).__name__}: {getattr(exc, 'msg', None) or exc}", "where": where,
            "hint": "the file must be valid Python; run `python FILE` to see the error"}


# -- the student's process --------------------------------------------------------------------
def _start(proc: StudentProcess, file: pathlib.Path, spec, timeout_s: float):
    """Load the submission in the child: (answers, failure or None)."""
    try:
        proc.hello(file=str(file), function=spec.function, attributes=[spec.answer] if spec.answer else [])
        hello = proc.channel.recv(proc.deadline)
    except ChannelTimeout:
        return {}, {"message": f"loading the file did not finish within {timeout_s:g} s",
                    "hint": "code at the top level of the file runs on import: an endless loop there?"}
    except ChannelClosed:
        return {}, {"message": proc.exit_reason(), "hint": failure_hint("crash", "", timeout_s, 0)}
    except ChannelError as exc:
        return {}, {"message": f"protocol error: {exc}", "hint": failure_hint("protocol", "", timeout_s, 0)}
    if hello.get("missing"):
        raise GradingInputError(f"{file} does not define a function {spec.function}{_signature(spec)} "
                                f"(the name is not bound to a function after loading the file)")
    if not hello.get("loaded"):
        error = hello.get("error") if isinstance(hello.get("error"), dict) else {}
        return {}, {"message": f"{str(error.get('type'))[:80]}: {str(error.get('message'))[:1000]}",
                    "where": str(error.get("where", ""))[:500],
                    "hint": "the file raised an exception while loading; run `python FILE` to see it"}
    answers = hello.get("attributes") if isinstance(hello.get("attributes"), dict) else {}
    return {k: v for k, v in answers.items() if isinstance(v, str)}, None


def _transport_failure(exc: Exception, proc: StudentProcess, timeout_s: float) -> tuple:
    """(status, message) when the connection broke during a run: a timeout, a dead process or garbage."""
    if isinstance(exc, ChannelTimeout):
        return "timeout", f"no answer within the time limit of {timeout_s:g} s"
    if isinstance(exc, ChannelClosed):
        reason = proc.exit_reason()
        if "MemoryError" in proc.output_tail():
            return "memory", reason + " (out of memory)"
        return "crash", reason
    return "protocol", f"the student's process broke the protocol: {exc}"


def _graded_session(spec, file, syntax_error, timeout_s: float, memory_mb: int, seed: int, setup: str, *,
                    run, checks) -> GradeReport:
    """What every assignment does around its own part: load the file in the student's process
    and, once it has loaded, ``run(proc)``; then, with the process gone, report whether it
    loaded, the checks ``checks()`` returns (only when it loaded) and the written answer."""
    answers, failure, output = {}, None, ""
    if syntax_error is not None:
        failure = _syntax_failure(syntax_error)
    else:
        with StudentProcess(timeout_s, memory_mb) as proc:
            answers, failure = _start(proc, file, spec, timeout_s)
            if failure is None:
                run(proc)
            output = proc.output_tail()
    graded = [loads_check(spec.function, _signature(spec), failure)]
    if failure is None:
        graded += checks()
    if spec.answer:
        graded.append(answer_check(spec.answer, answers.get(spec.answer), spec.answer_prompt))
    return GradeReport(_shown(file), spec.name, spec.title, setup, graded, seed, output)


def _shown(file: pathlib.Path) -> str:
    """The file as the report names it: relative to the working directory when inside it."""
    try:
        return str(file.relative_to(pathlib.Path.cwd()))
    except ValueError:
        return str(file)


def _problem_payload(problem) -> dict:
    return {"head_dim": problem.head_dim, "seq_len_q": problem.seq_len_q, "seq_len_kv": problem.seq_len_kv,
            "batch": problem.batch, "heads": problem.heads, "kv_heads": problem.kv_heads, "dtype": problem.dtype,
            "causal": problem.causal}


# -- schedule assignments --------------------------------------------------------------------
def _prepare(spec: ScheduleAssignment, profile, seed: int) -> list:
    """The inputs and the blocks of each case (what the run needs; nothing to compare with yet)."""
    runs = []
    for k, case in enumerate(spec.cases):
        M = sram_elements(profile.scratchpad.per_block_bytes, case.problem.dtype)
        blocks, _ = choose_blocks(case.problem, M)
        inputs = random_inputs(case.problem, seed=seed + k)
        for name in ("Q", "K"):
            inputs[name] = inputs[name] * case.score_scale
        runs.append(CaseRun(case, inputs=inputs, blocks=blocks))
    return runs


def _run_cases(proc: StudentProcess, runs: list, profile, timeout_s: float) -> None:
    server = ScheduleServer(proc.channel, proc.deadline)
    for run in runs:
        p, b = run.case.problem, run.blocks
        payload = {"problem": _problem_payload(p), "blocks": [b.block_q, b.block_kv]}
        try:
            run.result = simulate(profile, server.schedule, p, blocks=b, mode="numeric", inputs=run.inputs,
                                  options=Options(schedule_kwargs={"payload": payload}))
            run.status = "ok"
        except CapacityError as exc:
            run.status, run.message = "capacity", _capacity_message(exc)
        except StudentFailure as exc:
            run.status, run.message, run.where = exc.kind, exc.message, exc.where
        except ChannelError as exc:
            run.status, run.message = _transport_failure(exc, proc, timeout_s)
            return


def _capacity_message(exc: CapacityError) -> str:
    """The engine's message with the blocks but without its CLI advice and block rule (the
    grader's hint replaces them)."""
    blocks = [w for w in exc.where if w.startswith("B_r=")]
    return exc.detail + (f" ({blocks[0]})" if blocks else "")


def _grade_schedule(spec: ScheduleAssignment, file, syntax_error, timeout_s, memory_mb, seed) -> GradeReport:
    profile = load_profile(spec.hw)
    runs = _prepare(spec, profile, seed)
    b = runs[0].blocks
    setup = (f"hardware {profile.name}: {profile.scratchpad.per_block_bytes:,} B shared memory and "
             f"{profile.registers.per_block_bytes:,} B registers per thread block; blocks B_r × B_c = "
             f"{b.block_q} × {b.block_kv} (Algorithm 1's rule, in ctx.blocks); {len(runs)} random inputs "
             f"(seed {seed}); limits {timeout_s:g} s, {memory_mb} MiB")

    def checks() -> list:
        # What the runs are compared with is computed only now, with the student's process gone.
        for run in runs:
            p, b = run.case.problem, run.blocks
            run.expected = simulate(profile, spec.algorithm, p, blocks=b)
            run.reference = reference_outputs(run.inputs, p)
        return [runs_check(runs, timeout_s, memory_mb), exactness_check(runs, spec.outputs),
                capacity_check(runs), io_check(runs, spec.algorithm_title, spec.io_hint)]

    return _graded_session(spec, file, syntax_error, timeout_s, memory_mb, seed, setup,
                           run=lambda proc: _run_cases(proc, runs, profile, timeout_s), checks=checks)


# -- choosing blocks ----------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def best_blocks(hw: str, problem, algorithm: str = "fa2"):
    """The best candidate of ``iosim explore`` (HBM bytes) for one GPU and shape."""
    return explore(hw, algorithm, problem, progress=False).best


def _valid_blocks(value) -> bool:
    return (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 1 << 20 for v in value))


def _call_cases(proc: StudentProcess, cases, replies: list, timeout_s: float) -> None:
    """Call the student's function on each (GPU, shape); a reply per case, until the connection breaks."""
    for hw, problem in cases:
        try:
            proc.channel.send({"call": {"hw": hw, "problem": _problem_payload(problem)}}, proc.deadline)
            replies.append(proc.channel.recv(proc.deadline))
        except ChannelError as exc:
            status, message = _transport_failure(exc, proc, timeout_s)
            replies.append({"done": False, "error": {"type": status, "message": message}, "status": status})
            return


def _grade_blocks(spec: BlocksAssignment, file, syntax_error, timeout_s, memory_mb, seed) -> GradeReport:
    labels = [f"{hw} N={p.seq_len_q} d={p.head_dim} {p.dtype}{' causal' if p.causal else ''}" for hw, p in spec.cases]
    setup = (f"{spec.algorithm} on {len(spec.cases)} GPUs and shapes ({'; '.join(labels)}); graded objective: HBM "
             f"bytes within {spec.band:.0%} of the best of `iosim explore`; limits {timeout_s:g} s, {memory_mb} MiB")
    replies: list = []
    return _graded_session(spec, file, syntax_error, timeout_s, memory_mb, seed, setup,
                           run=lambda proc: _call_cases(proc, spec.cases, replies, timeout_s),
                           checks=lambda: _blocks_checks(spec, labels, replies, timeout_s, memory_mb))


def _chosen_blocks(labels, replies) -> tuple[list, list]:
    """(label, (B_r, B_c)) of each case whose reply is a valid choice, and (label, message,
    where, kind) of each whose reply is not."""
    chosen, problems = [], []
    for label, reply in zip(labels, replies):
        if reply.get("done") is True and _valid_blocks(reply.get("value")):
            chosen.append((label, tuple(reply["value"])))
            continue
        error = reply.get("error") if isinstance(reply.get("error"), dict) else None
        if error is None:
            returned = reply.get("returned") or repr(reply.get("value"))
            problems.append((label, f"returned {str(returned)[:80]}, not two positive integers", "", "value"))
        else:
            problems.append((label, f"{str(error.get('type'))[:80]}: {str(error.get('message'))[:500]}",
                             str(error.get("where", ""))[:300], reply.get("status", "exception")))
    return chosen, problems


def _blocks_not_run(labels, replies, problems, timeout_s, memory_mb) -> list:
    """The checks when a case returned no valid choice (or never ran): runs fails on the first."""
    label, message, where, kind = problems[0] if problems else (labels[len(replies)], "not run", "", "not run")
    if kind == "value":
        hint = "choose_blocks(hw, problem) returns a pair of positive integers (block_q, block_kv)"
    elif kind == "exception":
        hint = ("choose_blocks raised; call it yourself to see the traceback, e.g. "
                "choose_blocks('h100-sxm', Problem(seq_len=8192, head_dim=128))")
    else:
        hint = failure_hint(kind, message, timeout_s, memory_mb)
    runs = Check("runs", "fail", f"{label}: {message}{f' at {where}' if where else ''}", hint)
    return [runs, Check("capacity", "skip", "not every case returned blocks"),
            Check("io", "skip", "not every case returned blocks")]


def _simulate_choice(spec: BlocksAssignment, label, bq, bkv, hw, problem, fact: dict) -> tuple:
    """Run the built-in schedule with one case's choice, adding what it found to ``fact``:
    (why it does not fit, None) or (None, its io row)."""
    try:
        r = simulate(hw, spec.algorithm, problem, blocks=(bq, bkv))
    except CapacityError as exc:
        return f"{label}: {bq}×{bkv}: {_capacity_message(exc)}", None
    fact.update(shared_memory_peak_bytes=r.sram.peak_bytes, shared_memory_capacity_bytes=r.sram.capacity_bytes,
                registers_peak_bytes=r.registers.peak_bytes, registers_capacity_bytes=r.registers.capacity_bytes)
    if not r.registers.fits:
        return (f"{label}: {bq}×{bkv} needs {r.registers.peak_bytes:,} B of registers > "
                f"{r.registers.capacity_bytes:,} B (the kernel would spill)"), None
    best = best_blocks(hw, problem, spec.algorithm)
    ratio = r.hbm.total_bytes / best.hbm_total_bytes
    fact.update(hbm_bytes=r.hbm.total_bytes, best_block_q=best.block_q, best_block_kv=best.block_kv,
                best_hbm_bytes=best.hbm_total_bytes, ratio=ratio)
    return None, (label, bq, bkv, r.hbm.total_bytes, best, ratio)


def _blocks_io_check(spec: BlocksAssignment, io_rows: list, chosen: list, cases: list) -> Check:
    """Whether the worst choice's HBM traffic is within the band of the best (all must fit)."""
    worst = max(io_rows, key=lambda row: row[5])
    label, bq, bkv, total, best, ratio = worst
    if ratio <= 1 + spec.band and len(io_rows) == len(chosen):
        return Check("io", "pass", f"HBM traffic within {spec.band:.0%} of the best in every case "
                     f"(worst: {label}, {ratio:.3f}× the best)", cases=cases)
    detail = (f"{label}: {bq}×{bkv} moves {total:,} B, {ratio:.2f}× the best ({best.block_q}×{best.block_kv}, "
              f"{best.hbm_total_bytes:,} B); the band is {spec.band:.0%}")
    if ratio <= 1 + spec.band:
        detail = "the traffic of the choices that do not fit cannot count (see capacity)"
    return Check("io", "fail", detail,
                 "FA2 reads K and V once per query block, T_r = ⌈N/B_r⌉ times, so HBM bytes fall as "
                 "B_r grows; B_r is bounded by Q_i in shared memory and by the B_r × d fp32 accumulator "
                 "(plus S_ij, B_r × B_c) in registers. Compare with `iosim explore --hw HW --algo fa2 "
                 "-N N -d D`", cases)


def _blocks_checks(spec: BlocksAssignment, labels, replies, timeout_s, memory_mb) -> list:
    chosen, problems = _chosen_blocks(labels, replies)
    if problems or len(replies) < len(labels):
        return _blocks_not_run(labels, replies, problems, timeout_s, memory_mb)
    checks = [Check("runs", "pass", f"choose_blocks returned (B_r, B_c) for {len(chosen)}/{len(labels)} cases: "
                    + ", ".join(f"{b[0]}×{b[1]}" for _, b in chosen))]
    cap_fail, io_rows, cases = [], [], []
    for (label, (bq, bkv)), (hw, problem) in zip(chosen, spec.cases):
        fact = {"case": label, "block_q": bq, "block_kv": bkv}
        cases.append(fact)
        failure, row = _simulate_choice(spec, label, bq, bkv, hw, problem, fact)
        if failure is not None:
            cap_fail.append(failure)
        else:
            io_rows.append(row)
    if cap_fail:
        checks.append(Check("capacity", "fail", "; ".join(cap_fail[:2]),
                            "Q_i (B_r × d) and K_j, V_j (B_c × d) sit in shared memory; S_ij (B_r × B_c) and the "
                            "O_i accumulator (B_r × d) in registers, in fp32; `iosim explore` marks what fits",
                            cases))
    else:
        checks.append(Check("capacity", "pass", f"the tiles fit shared memory and registers in all "
                            f"{len(chosen)} cases", cases=cases))
    if not io_rows:
        checks.append(Check("io", "skip", "no choice fits on chip (see capacity)"))
        return checks
    checks.append(_blocks_io_check(spec, io_rows, chosen, cases))
    return checks


# -- entry point ------------------------------------------------------------------------------
def grade(path: str | pathlib.Path, assignment: str | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S,
          memory_mb: int = DEFAULT_MEMORY_MB, seed: int | None = None) -> GradeReport:
    """Grade the submission at ``path``; see :mod:`iosim.grading`."""
    if not timeout_s > 0:
        raise GradingInputError(f"the time limit must be positive, got {timeout_s!r}")
    if not isinstance(memory_mb, int) or memory_mb < 256:
        raise GradingInputError(f"the memory limit must be an integer of at least 256 MiB, got {memory_mb!r}")
    file, spec, syntax_error = resolve(path, assignment)
    seed = secrets.randbelow(1 << 31) if seed is None else seed
    run = _grade_schedule if isinstance(spec, ScheduleAssignment) else _grade_blocks
    return run(spec, file, syntax_error, timeout_s, memory_mb, seed)

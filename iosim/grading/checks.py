"""The checks of ``iosim grade``, computed in the grader's process from what the runs left.

Every number a check compares with — the float64 reference output
(:func:`.assignments.reference_outputs`, from the grader's own read-only copy of the inputs,
made before the student's code runs), the built-in schedule's byte counts, the best block
sizes — is computed in the grader and never sent to the student's process.

All or nothing: a check judges every input or fails. An input that did not run to the end
(stopped at the capacity check, an exception, a crash, a limit, never run) has no output
and no full traffic to judge, so exactness and io fail on it, saying which input and why;
capacity fails too unless the input stopped on its own capacity failure (which is the
capacity check's finding). No check is ever skipped.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

from ..errors import CapacityError
from ..run import simulate
from ..run.result import Result
from ..studies.explore import explore
from .specs import ATOL, RTOL, BlocksAssignment, Case
from .feedback import Check, capacity_hint, exactness_hint, failure_hint, traffic_hint


@dataclass
class CaseRun:
    """One input: how the run ended, and what it produced."""

    case: Case
    status: str = "not run"   # ok, capacity, exception, memory, timeout, crash, protocol, not run
    message: str = ""
    where: str = ""
    result: Result | None = None
    expected: Result | None = None
    reference: dict | None = None
    inputs: dict | None = None
    blocks: object = None

    order: int = -1           # when it ran: its place in the order drawn from the seed

    @property
    def tags(self) -> set:
        p, b = self.case.problem, self.blocks
        tags = {"causal"} if p.causal else set()
        if p.seq_len_q % b.block_q or p.seq_len_kv % b.block_kv:
            tags.add("ragged")
        if self.case.score_scale > 1 or self.case.adversarial:
            tags.add("large")
        if self.case.adversarial:
            tags.add("adversarial")
        return tags


#: why an input has no result to judge, by its status
_UNFINISHED = {
    "capacity": "stopped at the capacity check",
    "exception": "stopped with an exception",
    "memory": "ran out of memory",
    "timeout": "ran out of time",
    "crash": "ended with the student's process dying",
    "protocol": "ended with a protocol violation",
    "not run": "was not run (the student's process had ended)",
}


def unfinished(runs: list) -> list:
    """The inputs that did not run to the end, in the report's order."""
    return [r for r in runs if r.status != "ok"]


def not_judged(stopped: list) -> str:
    """``not judged: input 'X' stopped at the capacity check (and 2 more …)``: the first input
    that ended early, in the report's order (one never run only when none did)."""
    r = next((r for r in stopped if r.status != "not run"), stopped[0])
    more = f" (and {len(stopped) - 1} more input(s) did not run to the end)" if len(stopped) > 1 else ""
    return f"not judged: input {r.case.name!r} {_UNFINISHED.get(r.status, r.status)}{more}"


def _not_judged_case(r: CaseRun) -> dict:
    return {"input": r.case.name, "ok": False, "judged": False, "status": r.status}


# -- loads and runs ---------------------------------------------------------------------------
def loads_check(function: str, signature: str, failure: dict | None) -> Check:
    if failure is None:
        return Check("loads", "pass", f"the file defines {function}{signature}")
    return Check("loads", "fail", f"loading the file failed: {failure['message']}"
                 + (f" ({failure['where']})" if failure.get("where") else ""), failure.get("hint", ""))


def runs_check(runs: list, timeout_s: float, memory_mb: int) -> Check:
    failed = [r for r in runs if r.status not in ("ok", "capacity")]
    stopped = sum(r.status == "capacity" for r in runs)
    cases = [{"input": r.case.name, "status": r.status, "message": r.message, "where": r.where,
              "ran": r.order if r.order >= 0 else None} for r in runs]
    if not failed:
        if stopped:
            return Check("runs", "pass", f"no exception, crash or limit on {len(runs)} inputs ({stopped} stopped early "
                         "by the capacity check, see capacity)", cases=cases)
        return Check("runs", "pass", f"{len(runs)}/{len(runs)} inputs ran to the end", cases=cases)
    first = next(r for r in failed if r.status != "not run")
    where = f" at {first.where}" if first.where else ""
    not_run = sum(r.status == "not run" for r in runs)
    tail = f"; {not_run} input(s) not run after that" if not_run else ""
    return Check("runs", "fail", f"{first.case.name}: {first.status}: {first.message}{where}{tail}",
                 failure_hint(first.status, first.message, timeout_s, memory_mb), cases)


# -- exactness ----------------------------------------------------------------------------------
def _compare(run: CaseRun, outputs: tuple) -> dict:
    out = {"input": run.case.name, "errors": {}, "missing": [], "nonfinite": [], "zero": [], "failing": []}
    for name in outputs:
        got = run.result.outputs.get(name)
        want = run.reference[name]
        if got is None or got.shape != want.shape:
            out["missing"].append(name)
            continue
        if not np.isfinite(got).all():
            out["nonfinite"].append(name)
        if name == "O" and not np.any(got):
            out["zero"].append(name)
        with np.errstate(invalid="ignore"):
            err = np.abs(got - want)
            bad = ~(err <= ATOL + RTOL * np.abs(want))
        out["errors"][name] = float(np.nanmax(np.where(np.isnan(err), np.inf, err)))
        if bad.any():
            out["failing"].append(name)
    out["ok"] = not (out["missing"] or out["failing"])
    return out


def exactness_check(runs: list, outputs: tuple) -> Check:
    """Every input's outputs against the float64 reference; an input that did not run to the end fails it."""
    stopped = unfinished(runs)
    results = {id(r): _compare(r, outputs) for r in runs if r.status == "ok"}
    cases = [results[id(r)] if id(r) in results else _not_judged_case(r) for r in runs]
    done = [r for r in runs if id(r) in results]
    bad = [(r, results[id(r)]) for r in done if not results[id(r)]["ok"]]
    names = ", ".join(outputs)
    if stopped:
        detail = not_judged(stopped)
        if bad:
            detail += f"; of the {len(done)} that did, {_differ(bad, len(done))}"
        elif done:
            detail += f"; the {len(done)} that did match the reference"
        hint = ("an input that does not run to the end has no output to compare, and every input counts: "
                "make each one finish (see runs and capacity)")
        if bad:
            hint += "; " + exactness_hint(bad, done)
        return Check("exactness", "fail", detail, hint, cases)
    worst = max((e for c in results.values() for e in c["errors"].values()), default=0.0)
    if not bad:
        return Check("exactness", "pass", f"{names} match the float64 reference on {len(done)} inputs "
                     f"(max |error| {worst:.1e}; tolerance {ATOL:g} + {RTOL:g}·|reference|)", cases=cases)
    return Check("exactness", "fail", _differ(bad, len(done)), exactness_hint(bad, done), cases)


def _differ(bad: list, total: int) -> str:
    parts = []
    for r, c in bad[:3]:
        what = [f"{n} never written" for n in c["missing"]]
        what += [f"{n} off by {c['errors'][n]:.2g}" for n in c["failing"]]
        parts.append(f"{r.case.name}: {', '.join(what)}")
    more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
    return f"{len(bad)}/{total} inputs differ from the reference: " + "; ".join(parts) + more


# -- capacity -------------------------------------------------------------------------------------
def capacity_check(runs: list) -> Check:
    """The tiles fit on every input: a capacity stop fails it, and so does an input that ended
    otherwise before its end (its capacity is not known)."""
    stopped = [r for r in runs if r.status == "capacity"]
    done = [r for r in runs if r.status == "ok"]
    cases, spill = [], []
    for r in runs:
        if r.status == "capacity":
            cases.append({"input": r.case.name, "status": r.status, "message": r.message})
        elif r.status != "ok":
            cases.append(_not_judged_case(r))
        else:
            s, g = r.result.sram, r.result.registers
            cases.append({"input": r.case.name, "shared_memory_peak_bytes": s.peak_bytes,
                          "shared_memory_capacity_bytes": s.capacity_bytes, "registers_peak_bytes": g.peak_bytes,
                          "registers_capacity_bytes": g.capacity_bytes})
            if not g.fits:
                spill.append(r)
    if stopped:
        r = stopped[0]
        return Check("capacity", "fail", f"{r.case.name}: {r.message}", capacity_hint(r.message), cases)
    if spill:
        g = spill[0].result.registers
        return Check("capacity", "fail", f"{spill[0].case.name}: registers hold {g.peak_bytes:,} B > "
                     f"{g.capacity_bytes:,} B per thread block (the kernel would spill)",
                     "S_ij/P_ij, O_i, ℓ_i and m_i sit in registers in fp32; keep one of each at a time "
                     "(ctx.keep under the same name replaces the old tile)", cases)
    if len(done) < len(runs):
        return Check("capacity", "fail", not_judged(unfinished(runs)),
                     "what is on chip is judged over a whole run; make every input finish (see runs)", cases)
    s = max((r.result.sram for r in done), key=lambda o: o.peak_bytes)
    g = max((r.result.registers for r in done), key=lambda o: o.peak_bytes)
    return Check("capacity", "pass", f"shared memory peak {s.peak_bytes:,} of {s.capacity_bytes:,} B per block; "
                 f"registers peak {g.peak_bytes:,} of {g.capacity_bytes:,} B", cases=cases)


# -- HBM traffic ---------------------------------------------------------------------------------
def traffic_diff(result: Result, expected: Result) -> list:
    """(tensor, direction, elements counted, elements the algorithm moves) for every mismatch."""
    diffs = []
    for name in sorted(set(result.tensors) | set(expected.tensors)):
        for direction in ("read", "write"):
            got = getattr(result.tensors[name], f"{direction}_elements") if name in result.tensors else 0
            want = getattr(expected.tensors[name], f"{direction}_elements") if name in expected.tensors else 0
            if got != want:
                diffs.append((name, direction, got, want))
    return diffs


def io_check(runs: list, algorithm_title: str, io_hint: str) -> Check:
    """Every input's HBM traffic against the algorithm's; an input that did not run to the end fails it."""
    done = [r for r in runs if r.status == "ok"]
    cases, bad = [], []
    for r in runs:
        if r.status != "ok":
            cases.append(_not_judged_case(r))
            continue
        diffs = traffic_diff(r.result, r.expected)
        cases.append({"input": r.case.name, "hbm_bytes": r.result.hbm.total_bytes,
                      "expected_hbm_bytes": r.expected.hbm.total_bytes,
                      "differences": [{"tensor": t, "direction": d, "elements": g, "expected_elements": w}
                                      for t, d, g, w in diffs]})
        if diffs:
            bad.append((r, diffs))
    if len(done) < len(runs):
        detail = not_judged(unfinished(runs))
        if bad:
            detail += f"; of the {len(done)} that did, {len(bad)} move other bytes than {algorithm_title}"
        elif done:
            detail += f"; the {len(done)} that did move {algorithm_title}'s bytes"
        hint = ("the traffic of a run that stops early is not the algorithm's, and every input counts: make each "
                "one finish (see runs and capacity)")
        if bad:
            hint += "; " + traffic_hint(bad[0][1], algorithm_title, io_hint)
        return Check("io", "fail", detail, hint, cases)
    if not bad:
        first = done[0]
        return Check("io", "pass", f"HBM traffic equals {algorithm_title}'s, tensor by tensor, on {len(done)} "
                     f"inputs (e.g. {first.case.name}: {first.result.hbm.total_bytes:,} B)", cases=cases)
    r, diffs = bad[0]
    listed = "; ".join(f"{t} {d} {g:,} elements, expected {w:,}" for t, d, g, w in diffs[:4])
    detail = (f"{len(bad)}/{len(done)} inputs move other bytes than {algorithm_title} "
              f"({r.case.name}: {r.result.hbm.total_bytes:,} B, expected {r.expected.hbm.total_bytes:,} B: {listed})")
    return Check("io", "fail", detail, traffic_hint(diffs, algorithm_title, io_hint), cases)


# -- written answers ---------------------------------------------------------------------------
def answer_check(name: str, text: str | None, prompt: str, min_sentences: int = 2) -> Check:
    """``text``: the string literal the file assigns to ``name`` at top level (read from its syntax
    tree by the grader, never from the student's process), or None."""
    if not text or not text.strip():
        return Check("answer", "fail", f"no {name} string in the file",
                     f"set {name} = \"\"\"…\"\"\" at the top level of the file, as a string literal: {prompt}")
    sentences = [s for s in re.split(r"[.!?](?:\s+|$)", text.strip()) if len(s.split()) >= 3]
    words = len(text.split())
    if "TODO" in text or len(sentences) < min_sentences or words < 15:
        return Check("answer", "fail", f"{name} is a placeholder or too short ({len(sentences)} sentence(s), "
                     f"{words} words)", f"write {prompt}")
    return Check("answer", "pass", f"{name}: {len(sentences)} sentences, {words} words (read by the instructor, "
                 "not graded automatically)")


# -- the engine's capacity failures ----------------------------------------------------------------
def capacity_message(exc: CapacityError) -> str:
    """The engine's message with the blocks but without its CLI advice and block rule (the
    grader's hint replaces them)."""
    blocks = [w for w in exc.where if w.startswith("B_r=")]
    return exc.detail + (f" ({blocks[0]})" if blocks else "")


# -- choosing blocks ----------------------------------------------------------------------------
#: the io check's hint when a blocks assignment's manifest gives none (the built-in one's)
BLOCKS_IO_HINT = ("FA2 reads K and V once per query block, T_r = ⌈N/B_r⌉ times, so HBM bytes fall as "
                  "B_r grows; B_r is bounded by Q_i in shared memory and by the B_r × d fp32 accumulator "
                  "(plus S_ij, B_r × B_c) in registers. Compare with `iosim explore --hw HW --algo fa2 "
                  "-N N -d D`")


@functools.lru_cache(maxsize=None)
def best_blocks(hw: str, problem, algorithm: str = "fa2"):
    """The best candidate of ``iosim explore`` (HBM bytes) for one GPU and shape."""
    return explore(hw, algorithm, problem, progress=False).best


def _valid_blocks(value) -> bool:
    return (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 1 << 20 for v in value))


def _chosen_blocks(labels, replies) -> tuple[list, list]:
    """(label, (B_r, B_c)) of each case whose reply is a valid choice, and (label, message,
    where, kind) of each whose reply is not."""
    chosen, problems = [], []
    for label, reply in zip(labels, replies):
        if reply["status"] == "value" and _valid_blocks(reply["value"]):
            chosen.append((label, tuple(reply["value"])))
        elif reply["status"] == "value":
            returned = reply["returned"] if reply["returned"] is not None else repr(reply["value"])
            problems.append((label, f"returned {str(returned)[:80]}, not two positive integers", "", "value"))
        else:
            problems.append((label, reply["message"], reply["where"], reply["status"]))
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
    why = f"not judged: case {label} returned no valid choice (see runs)"
    return [runs, Check("capacity", "fail", why, "every case must return (B_r, B_c) to be judged"),
            Check("io", "fail", why, "every case must return (B_r, B_c) to be judged")]


def _simulate_choice(spec: BlocksAssignment, label, bq, bkv, hw, problem, fact: dict) -> tuple:
    """Run the built-in schedule with one case's choice, adding what it found to ``fact``:
    (why it does not fit, None) or (None, its io row)."""
    try:
        r = simulate(hw, spec.algorithm, problem, blocks=(bq, bkv))
    except CapacityError as exc:
        return f"{label}: {bq}×{bkv}: {capacity_message(exc)}", None
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
    return Check("io", "fail", detail, spec.io_hint or BLOCKS_IO_HINT, cases)


def blocks_checks(spec: BlocksAssignment, labels, replies, timeout_s, memory_mb) -> list:
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
        checks.append(Check("io", "fail", "not judged: no choice fits on chip (see capacity)",
                            "the traffic of blocks that do not fit cannot count; choose blocks that fit first"))
        return checks
    checks.append(_blocks_io_check(spec, io_rows, chosen, cases))
    return checks

"""The checks of ``iosim grade``, computed in the grader's process from what the runs left.

Every number a check compares with — the float64 reference output, the built-in
schedule's byte counts, the best block sizes — is computed here and never sent to the
student's process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..workload.reference import reference_attention, reference_statistics
from ..run.result import Result
from .assignments import ATOL, RTOL, Case
from .feedback import Check


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

    @property
    def tags(self) -> set:
        p, b = self.case.problem, self.blocks
        tags = {"causal"} if p.causal else set()
        if p.seq_len_q % b.block_q or p.seq_len_kv % b.block_kv:
            tags.add("ragged")
        if self.case.score_scale > 1:
            tags.add("large")
        return tags


# -- the reference, float64 -------------------------------------------------------------------
def reference_outputs(inputs: dict, problem) -> dict:
    """O, and the row statistics m = rowmax(S), ℓ = rowsum(e^{S−m}), L = m + log ℓ."""
    Q, K = inputs["Q"], inputs["K"]
    return {"O": reference_attention(Q, K, inputs["V"], causal=problem.causal),
            **reference_statistics(Q, K, causal=problem.causal)}


# -- loads and runs ---------------------------------------------------------------------------
def loads_check(function: str, signature: str, failure: dict | None) -> Check:
    if failure is None:
        return Check("loads", "pass", f"the file defines {function}{signature}")
    return Check("loads", "fail", f"loading the file failed: {failure['message']}"
                 + (f" ({failure['where']})" if failure.get("where") else ""), failure.get("hint", ""))


def failure_hint(kind: str, message: str, timeout_s: float, memory_mb: int) -> str:
    if kind == "timeout":
        return (f"it did not finish within the time limit ({timeout_s:g} s for all inputs together): an endless "
                "loop?")
    if kind == "memory" and "in the grader" in message:
        return ("a schedule needs a handful of tiles at a time; drop the ones you are done with instead of "
                "collecting them")
    if kind == "memory":
        return (f"it ran out of memory (the student's process may use {memory_mb} MiB): a tile is at most "
                "B_r × B_c or B_r × d; nothing needs N × N")
    if kind == "crash":
        return ("the process running your code died: a schedule must return normally, not exit the interpreter "
                "(os._exit, sys.exit) or crash it (ctypes)")
    if kind == "protocol":
        return "your code wrote to the grader's connection; a schedule talks to the grader only through ctx"
    if "read before anything was written" in message:
        return ("Algorithm 1 line 2 initialises O, ℓ, m in HBM before the loops: ctx.init('O', 0.0), "
                "ctx.init('l', 0.0), ctx.init('m', -math.inf)")
    if "NotImplementedError" in message or "TODO" in message:
        return "fill in the TODOs of the starter file"
    if "not available under `iosim grade`" in message or "tile values stay" in message:
        return "a graded schedule uses only the documented ctx API and tile arithmetic (docs/simulator.md)"
    if "shape" in message and "store" in message:
        return "a stored tile has the block's shape: r_i × d for O_i (r_i = i.rows), r_i for ℓ_i, m_i, L_i"
    return ("fix the exception; to see values and a full traceback, run your function yourself: "
            "simulate('toy', your_function, problem, mode='numeric')")


def runs_check(runs: list, timeout_s: float, memory_mb: int) -> Check:
    failed = [r for r in runs if r.status not in ("ok", "capacity")]
    stopped = sum(r.status == "capacity" for r in runs)
    cases = [{"input": r.case.name, "status": r.status, "message": r.message, "where": r.where} for r in runs]
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
    done = [r for r in runs if r.status == "ok"]
    if not done:
        return Check("exactness", "skip", "no input ran to the end (see runs and capacity)")
    results = [(r, _compare(r, outputs)) for r in done]
    cases = [c for _, c in results]
    names = ", ".join(outputs)
    worst = max((e for c in cases for e in c["errors"].values()), default=0.0)
    bad = [(r, c) for r, c in results if not c["ok"]]
    if not bad:
        return Check("exactness", "pass", f"{names} match the float64 reference on {len(done)} inputs "
                     f"(max |error| {worst:.1e}; tolerance {ATOL:g} + {RTOL:g}·|reference|)", cases=cases)
    parts = []
    for r, c in bad[:3]:
        what = [f"{n} never written" for n in c["missing"]]
        what += [f"{n} off by {c['errors'][n]:.2g}" for n in c["failing"]]
        parts.append(f"{r.case.name}: {', '.join(what)}")
    more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
    return Check("exactness", "fail", f"{len(bad)}/{len(done)} inputs differ from the reference: "
                 + "; ".join(parts) + more, _exactness_hint(bad, done), cases)


def _exactness_hint(bad: list, done: list) -> str:
    missing = sorted({n for _, c in bad for n in c["missing"]})
    if missing:
        return f"{', '.join(missing)} never reached HBM: write each block with ctx.store(name, i, tile)"
    if any(c["zero"] for _, c in bad):
        return "O is all zeros: the starter's placeholder is still there; compute O_i as in the algorithm"
    if any(c["nonfinite"] for _, c in bad):
        return ("NaN or ∞ in the result: exponentials overflowed (the large-score input reaches |S| ≈ 1000) or "
                "divided 0 by 0; exponentiate S − m with the running maximum m, and use m.inf_as_zero() "
                "where a row has seen no key yet")
    ok_tags = [r.tags for r in done if all(r is not b for b, _ in bad)]
    if all("causal" in r.tags for r, _ in bad) and any("causal" not in t for t in ok_tags):
        return ("only causal inputs differ: mask the score tile with ctx.mask(S_ij, i, j) before taking its row "
                "maximum, and visit the blocks ctx.kv_blocks(visible_to=i) / ctx.q_blocks(visible_to=j) give")
    if all("ragged" in r.tags for r, _ in bad) and any("ragged" not in t for t in ok_tags):
        return "only ragged inputs differ: the last block has r_i = i.rows < B_r rows; size tiles by the block"
    return ("online softmax: when a row's running maximum grows from m to m_new, the old sum ℓ and the old "
            "output O must both be rescaled by e^{m − m_new} before the new block's terms are added")


# -- capacity -------------------------------------------------------------------------------------
def capacity_check(runs: list) -> Check:
    stopped = [r for r in runs if r.status == "capacity"]
    done = [r for r in runs if r.status == "ok"]
    if not stopped and not done:
        return Check("capacity", "skip", "no input ran to the end (see runs)")
    cases = [{"input": r.case.name, "status": r.status, "message": r.message} for r in stopped]
    spill = []
    for r in done:
        s, g = r.result.sram, r.result.registers
        cases.append({"input": r.case.name, "shared_memory_peak_bytes": s.peak_bytes,
                      "shared_memory_capacity_bytes": s.capacity_bytes, "registers_peak_bytes": g.peak_bytes,
                      "registers_capacity_bytes": g.capacity_bytes})
        if not g.fits:
            spill.append(r)
    if stopped:
        r = stopped[0]
        return Check("capacity", "fail", f"{r.case.name}: {r.message}", _capacity_hint(r.message), cases)
    if spill:
        g = spill[0].result.registers
        return Check("capacity", "fail", f"{spill[0].case.name}: registers hold {g.peak_bytes:,} B > "
                     f"{g.capacity_bytes:,} B per thread block (the kernel would spill)",
                     "S_ij/P_ij, O_i, ℓ_i and m_i sit in registers in fp32; keep one of each at a time "
                     "(ctx.keep under the same name replaces the old tile)", cases)
    s = max((r.result.sram for r in done), key=lambda o: o.peak_bytes)
    g = max((r.result.registers for r in done), key=lambda o: o.peak_bytes)
    return Check("capacity", "pass", f"shared memory peak {s.peak_bytes:,} of {s.capacity_bytes:,} B per block; "
                 f"registers peak {g.peak_bytes:,} of {g.capacity_bytes:,} B", cases=cases)


def _capacity_hint(message: str) -> str:
    if "after the loop iteration" in message:
        return ("data lives on chip until the end of the iteration that loaded or kept it; what must survive "
                "the inner loop (O_i, ℓ_i, m_i) is made with ctx.fill before it and updated with ctx.keep "
                "under the same name")
    if "ctx.read" in message:
        return ("ctx.read brings a whole tensor on chip; FlashAttention never holds more than one block of Q, "
                "K, V: loop over ctx.q_blocks()/ctx.kv_blocks() and ctx.load(name, block)")
    return ("the tiles on chip at one time must fit: Q_i (B_r × d), K_j, V_j (B_c × d) in shared memory; use "
            "the blocks ctx.blocks gives and never a whole N × N score matrix")


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
    done = [r for r in runs if r.status == "ok"]
    if not done:
        return Check("io", "skip", "no input ran to the end (see runs and capacity)")
    cases, bad = [], []
    for r in done:
        diffs = traffic_diff(r.result, r.expected)
        cases.append({"input": r.case.name, "hbm_bytes": r.result.hbm.total_bytes,
                      "expected_hbm_bytes": r.expected.hbm.total_bytes,
                      "differences": [{"tensor": t, "direction": d, "elements": g, "expected_elements": w}
                                      for t, d, g, w in diffs]})
        if diffs:
            bad.append((r, diffs))
    if not bad:
        first = done[0]
        return Check("io", "pass", f"HBM traffic equals {algorithm_title}'s, tensor by tensor, on {len(done)} "
                     f"inputs (e.g. {first.case.name}: {first.result.hbm.total_bytes:,} B)", cases=cases)
    r, diffs = bad[0]
    listed = "; ".join(f"{t} {d} {g:,} elements, expected {w:,}" for t, d, g, w in diffs[:4])
    detail = (f"{len(bad)}/{len(done)} inputs move other bytes than {algorithm_title} "
              f"({r.case.name}: {r.result.hbm.total_bytes:,} B, expected {r.expected.hbm.total_bytes:,} B: {listed})")
    return Check("io", "fail", detail, _io_hint(diffs, algorithm_title, io_hint), cases)


def _io_hint(diffs: list, algorithm_title: str, io_hint: str) -> str:
    notes = []
    for t, d, got, want in diffs[:3]:
        verb = "read" if d == "read" else "written"
        if want == 0:
            notes.append(f"{t} is never {verb} in {algorithm_title}")
        elif got == 0:
            notes.append(f"{t} is never {verb} by your schedule")
        else:
            notes.append(f"{t} is {verb} {got / want:.2f}× as much as in {algorithm_title}")
    return "; ".join(notes) + ". " + io_hint


# -- written answers ---------------------------------------------------------------------------
def answer_check(name: str, text: str | None, prompt: str, min_sentences: int = 2) -> Check:
    if not text or not text.strip():
        return Check("answer", "fail", f"no {name} string in the file", f"set {name} = \"\"\"…\"\"\": {prompt}")
    sentences = [s for s in re.split(r"[.!?](?:\s+|$)", text.strip()) if len(s.split()) >= 3]
    words = len(text.split())
    if "TODO" in text or len(sentences) < min_sentences or words < 15:
        return Check("answer", "fail", f"{name} is a placeholder or too short ({len(sentences)} sentence(s), "
                     f"{words} words)", f"write {prompt}")
    return Check("answer", "pass", f"{name}: {len(sentences)} sentences, {words} words (read by the instructor, "
                 "not graded automatically)")

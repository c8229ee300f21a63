"""What ``iosim grade`` prints: one line per check, pass or fail, with a hint when it fails
(the hints are made here too, from what the checks found)."""

from __future__ import annotations

import os
import re
import textwrap
from dataclasses import asdict, dataclass, field


@dataclass
class Check:
    """One graded property: ``status`` is ``pass`` or ``fail``. A property that could not be
    judged (an input did not run to the end) fails, saying why; any other status counts as
    a failure too."""

    name: str
    status: str
    detail: str
    hint: str = ""
    cases: list = field(default_factory=list)   # per-input facts, for --format json

    @property
    def passed(self) -> bool:
        return self.status == "pass"


#: the checks a score counts (the blocks assignment has no exactness check)
SCORED = ("loads", "runs", "exactness", "capacity", "io")


@dataclass
class GradeReport:
    file: str
    assignment: str
    title: str
    setup: str
    checks: list
    seed: int | None = None   # the inputs' seed, known to the report once the student's process is gone
    output: str = ""          # the end of what the student's code printed
    weights: dict | None = None   # check -> its weight in the score (the assignment's manifest); None: equal

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def score(self) -> float:
        """0-100: the share of the scored checks (:data:`SCORED`) that pass, each counted with
        its weight (the assignment's manifest; by default all equal); a check that did not run
        (after a failed load, say) counts as failed. The written answer is read by the
        instructor and does not count."""
        passed = {c.name for c in self.checks if c.passed}
        weights = self._weights()
        total = sum(weights.values())
        return round(100 * sum(w for name, w in weights.items() if name in passed) / total, 1)

    def _weights(self) -> dict:
        """check -> its weight in :attr:`score`: the manifest's, or 1 for each of :data:`SCORED`."""
        if self.weights is not None:
            return self.weights
        return {name: 1 for name in SCORED if name != "exactness" or self.assignment != "blocks"}

    def scored(self, name: str) -> bool:
        """Whether check ``name`` counts in :attr:`score` (a weight above 0)."""
        return self._weights().get(name, 0) > 0

    def result_line(self) -> str:
        """``result: PASS|FAIL (k/n checks pass; score s/100[; failed: …])``: every check must
        pass for PASS, so the failed ones are named, an unscored one (the written answer) as
        such — a FAIL with score 100/100 says which check it is."""
        passed = sum(c.passed for c in self.checks)
        failed = [c.name + ("" if self.scored(c.name) else " (unscored)") for c in self.checks if not c.passed]
        return (f"result: {'PASS' if self.passed else 'FAIL'} ({passed}/{len(self.checks)} checks pass; "
                f"score {self.score:g}/100" + (f"; failed: {', '.join(failed)}" if failed else "") + ")")

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def check(self, name: str) -> Check:
        return next(c for c in self.checks if c.name == name)

    def to_dict(self) -> dict:
        return {"schema_version": 1, "file": self.file, "assignment": self.assignment, "title": self.title,
                "setup": self.setup,
                "seed": self.seed, "passed": self.passed, "score": self.score,
                "checks": [asdict(c) for c in self.checks], "output": self.output}

    def render(self) -> str:
        """The report as text for a terminal; what the submission controls (its output, its
        exceptions' messages) has its control and bidirectional-override characters shown
        as ``?``, so it cannot move the cursor or repaint the result."""
        return printable(self._render())

    def _render(self) -> str:
        width = max(len(c.name) for c in self.checks)
        out = [f"iosim grade {self.file}", f"assignment {self.assignment}: {self.title}", self.setup, ""]
        for c in self.checks:
            out.append(f"{c.status.upper():4}  {c.name.ljust(width)}  {_one_detail(c.detail, 8 + width)}")
            if c.hint and not c.passed:
                indent = " " * (8 + width)
                out.append(textwrap.fill(f"hint: {c.hint}", 100, initial_indent=indent,
                                         subsequent_indent=indent + "      "))
        out += ["", self.result_line()]
        if self.output.strip() and not self.passed:
            out += ["", "the end of what your code printed:", textwrap.indent(self.output.rstrip()[-1200:], "  | ")]
        return "\n".join(out)


#: the most lines of a check's detail the text report shows
MAX_DETAIL_LINES = 12


def _one_detail(detail: str, indent: int) -> str:
    """A check's detail under its verdict: its first line, then at most
    :data:`MAX_DETAIL_LINES` of the rest that are not blank, each marked ``| `` under the detail
    column, so that a message the submission wrote cannot pass for a check or the result."""
    first, *rest = detail.split("\n")
    rest = [line for line in rest if line.strip()]
    shown = [" " * indent + "| " + line for line in rest[:MAX_DETAIL_LINES]]
    if len(rest) > MAX_DETAIL_LINES:
        shown.append(" " * indent + f"| … {len(rest) - MAX_DETAIL_LINES} more lines (the JSON report has them)")
    return "\n".join([first, *shown])


#: C0 and C1 controls (tab and newline excepted) and the bidirectional overrides and isolates
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with the C0/C1 controls (but tab and newline) and bidi controls shown as '?'."""
    return _UNPRINTABLE.sub("?", text)


def path_text(path) -> str:
    """A path as text any output can carry: the bytes of a name that is not UTF-8 as ``\\xNN``."""
    return os.fsdecode(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def csv_cell(text: str) -> str:
    """A gradebook cell a spreadsheet shows as written: printable, and not read as a formula (a cell that
    starts with = + - or @ gets a leading ')."""
    text = printable(text).replace("\n", " ")
    return "'" + text if text.startswith(("=", "+", "-", "@")) else text


# -- hints ------------------------------------------------------------------------------------
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


def exactness_hint(bad: list, done: list) -> str:
    missing = sorted({n for _, c in bad for n in c["missing"]})
    if missing:
        return f"{', '.join(missing)} never reached HBM: write each block with ctx.store(name, i, tile)"
    if any(c["zero"] for _, c in bad):
        return "O is all zeros: the starter's placeholder is still there; compute O_i as in the algorithm"
    ok_tags = [r.tags for r in done if all(r is not b for b, _ in bad)]
    only_large = all("large" in r.tags for r, _ in bad) and any("large" not in t for t in ok_tags)
    if any(c["nonfinite"] for _, c in bad):
        return ("NaN or ∞ in the result: an exponential overflowed (some inputs reach |S| ≈ 10⁴, and e^x "
                "overflows above x ≈ 709) or a row's sum underflowed to 0 and was divided by; exponentiate "
                "S − m with the row's running maximum m, updated at every key block (not frozen at the first "
                "block's, nor shifted by a margin), rescale ℓ and O by e^{m − m_new} whenever it grows, and use "
                "m.inf_as_zero() where a row has seen no key yet")
    if only_large:
        first = next(r for r, _ in bad)
        return (f"exact on ordinary scores, not on the inputs built to break shortcuts (e.g. {first.case.name}: "
                f"{first.case.purpose or 'large scores'}): the shift must be the row's running maximum, updated "
                "at every key block, with ℓ and O rescaled by e^{m − m_new} each time it grows")
    if all("causal" in r.tags for r, _ in bad) and any("causal" not in t for t in ok_tags):
        return ("only causal inputs differ: mask the score tile with ctx.mask(S_ij, i, j) before taking its row "
                "maximum, and visit the blocks ctx.kv_blocks(visible_to=i) / ctx.q_blocks(visible_to=j) give")
    if all("ragged" in r.tags for r, _ in bad) and any("ragged" not in t for t in ok_tags):
        return "only ragged inputs differ: the last block has r_i = i.rows < B_r rows; size tiles by the block"
    return ("online softmax: when a row's running maximum grows from m to m_new, the old sum ℓ and the old "
            "output O must both be rescaled by e^{m − m_new} before the new block's terms are added")


def capacity_hint(message: str) -> str:
    if "after the loop iteration" in message:
        return ("data lives on chip until the end of the iteration that loaded or kept it; what must survive "
                "the inner loop (O_i, ℓ_i, m_i) is made with ctx.fill before it and updated with ctx.keep "
                "under the same name")
    if "ctx.read" in message:
        return ("ctx.read brings a whole tensor on chip; FlashAttention never holds more than one block of Q, "
                "K, V: loop over ctx.q_blocks()/ctx.kv_blocks() and ctx.load(name, block)")
    return ("the tiles on chip at one time must fit: Q_i (B_r × d), K_j, V_j (B_c × d) in shared memory; use "
            "the blocks ctx.blocks gives and never a whole N × N score matrix")


def traffic_hint(diffs: list, algorithm_title: str, io_hint: str) -> str:
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

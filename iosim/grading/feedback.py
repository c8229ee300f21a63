"""What ``iosim grade`` prints: one line per check, pass or fail, with a hint when it fails."""

from __future__ import annotations

import textwrap
from dataclasses import asdict, dataclass, field


@dataclass
class Check:
    """One graded property. ``skip`` means it could not be evaluated (nothing ran to the end)."""

    name: str
    status: str
    detail: str
    hint: str = ""
    cases: list = field(default_factory=list)   # per-input facts, for --format json

    @property
    def passed(self) -> bool:
        return self.status == "pass"


@dataclass
class GradeReport:
    file: str
    assignment: str
    title: str
    setup: str
    checks: list
    seed: int | None = None
    output: str = ""          # the end of what the student's code printed

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def check(self, name: str) -> Check:
        return next(c for c in self.checks if c.name == name)

    def to_dict(self) -> dict:
        return {"file": self.file, "assignment": self.assignment, "title": self.title, "setup": self.setup,
                "seed": self.seed, "passed": self.passed,
                "checks": [asdict(c) for c in self.checks], "output": self.output}

    def render(self) -> str:
        width = max(len(c.name) for c in self.checks)
        out = [f"iosim grade {self.file}", f"assignment {self.assignment}: {self.title}", self.setup, ""]
        for c in self.checks:
            out.append(f"{c.status.upper():4}  {c.name.ljust(width)}  {c.detail}")
            if c.hint and not c.passed:
                indent = " " * (8 + width)
                out.append(textwrap.fill(f"hint: {c.hint}", 100, initial_indent=indent,
                                         subsequent_indent=indent + "      "))
        passed = sum(c.passed for c in self.checks)
        out += ["", f"result: {'PASS' if self.passed else 'FAIL'} ({passed}/{len(self.checks)} checks pass)"]
        if self.output.strip() and not self.passed:
            out += ["", "the end of what your code printed:", textwrap.indent(self.output.rstrip()[-1200:], "  | ")]
        return "\n".join(out)

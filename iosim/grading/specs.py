"""What an assignment is, once its manifest is read: the specs ``iosim grade`` grades against.

An assignment is data, a folder with an ``assignment.yaml`` manifest (read by
:mod:`.manifest`; the format is in docs/grading.md, "Adding an assignment"): the built-in
ones are the folders of ``examples/assignments/``, an instructor's own is any folder given
to ``iosim grade --assignment PATH``. Two kinds:

* :class:`ScheduleAssignment` — write a schedule; graded on exact outputs on random and
  adversarial inputs (:class:`Case`), capacity, and HBM traffic equal to a reference
  schedule's (a built-in algorithm, or a ``reference.py`` in the folder, loaded here in
  the grader's process and never shown to the student's);
* :class:`BlocksAssignment` — choose (B_r, B_c); graded on fitting on chip and on HBM
  traffic within a band of the best blocks ``iosim explore`` finds.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass, field
from typing import Callable

from ..errors import IosimError
from ..workload.problem import Problem

#: allowed excess over the best HBM traffic when the student chooses the blocks
BLOCKS_BAND = 0.10
#: |student − reference| ≤ ATOL + RTOL·|reference|, element-wise, in float64
ATOL = RTOL = 1e-9
#: the checks a score can count, by kind (a blocks assignment has no exactness check)
SCHEDULE_CHECKS = ("loads", "runs", "exactness", "capacity", "io")
BLOCKS_CHECKS = ("loads", "runs", "capacity", "io")


class GradingInputError(IosimError):
    """The grader cannot grade this: no such file, or not a submission for the assignment."""


class ManifestError(GradingInputError):
    """An assignment's manifest (or its folder) is not one the grader can use."""


@dataclass(frozen=True)
class Case:
    """One input a schedule runs on; :func:`.patterns.build_inputs` makes its Q, K, V from a seed.

    ``kind`` says how: ``random`` (standard normal; ``score_scale`` multiplies Q and K, the
    scores by its square) or one of the adversarial patterns of :data:`.patterns.PATTERNS`.
    ``purpose`` is what the input is there to catch (one line, shown in the report's JSON).
    """

    name: str
    problem: Problem
    score_scale: float = 1.0
    kind: str = "random"
    purpose: str = ""

    @property
    def adversarial(self) -> bool:
        return self.kind != "random"


@dataclass(frozen=True)
class Source:
    """Where an assignment comes from: its folder, and which of its files a student gets."""

    directory: pathlib.Path
    manifest: pathlib.Path
    student: tuple                   # paths relative to the folder: the student pack
    private: tuple = ()              # never exported: the reference file, the instructor's files
    readme: str = ""                 # how messages point a student to the assignment's README
    builtin: bool = False


@dataclass(frozen=True)
class ScheduleAssignment:
    """Write a schedule; graded on exactness, capacity and HBM traffic against a reference one."""

    name: str
    function: str
    title: str
    folder: str
    algorithm: str | Callable   # the reference: a built-in schedule's name, or a schedule function
    algorithm_title: str
    hw: str
    outputs: tuple              # HBM tensors compared with the float64 reference
    cases: tuple
    io_hint: str
    answer: str | None = None   # module-level string holding a written answer
    answer_prompt: str = ""
    weights: tuple = tuple((name, 1) for name in SCHEDULE_CHECKS)   # (check, weight) in the score
    source: Source | None = field(default=None, compare=False, repr=False)

    @property
    def readme(self) -> str:
        return readme_of(self)


@dataclass(frozen=True)
class BlocksAssignment:
    """Choose (B_r, B_c); graded on fitting on chip and on HBM traffic within a band of the best."""

    name: str
    function: str
    title: str
    folder: str
    algorithm: str
    cases: tuple                # (profile name, Problem)
    band: float
    answer: str | None
    answer_prompt: str
    io_hint: str = ""           # the io check's hint; "" for the built-in one (checks.BLOCKS_IO_HINT)
    weights: tuple = tuple((name, 1) for name in BLOCKS_CHECKS)
    source: Source | None = field(default=None, compare=False, repr=False)

    @property
    def readme(self) -> str:
        return readme_of(self)


def readme_of(spec) -> str:
    """Where a message sends the student: the assignment's README."""
    if spec.source is not None and spec.source.readme:
        return spec.source.readme
    return f"examples/assignments/{spec.folder}/README.md"


def signature(spec) -> str:
    return "(ctx)" if isinstance(spec, ScheduleAssignment) else "(hw, problem)"

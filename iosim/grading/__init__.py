"""``iosim grade``: an autograder for IO-aware attention assignments.

A submission is a Python file defining the graded function (``fa1_forward(ctx)``,
``fa2_forward(ctx)`` or ``choose_blocks(hw, problem)``; see
:mod:`iosim.grading.assignments` and ``examples/assignments/``). :func:`grade` runs it in
a separate process with a time and a memory limit and checks, on several random inputs
(ragged and causal among them), that

* the output equals the float64 reference (exactness),
* the tiles on chip fit shared memory and registers (capacity),
* the HBM traffic equals the algorithm's own count, tensor by tensor, or is within a
  stated band of the best when the blocks are the student's choice (io).

The student's process holds no numbers: every ``ctx`` call and tile operation is
answered by the real engine in the grader's process (:mod:`iosim.grading.server`), which
is also where the reference, the expected counts and the inputs stay. An exception, a
crash, an endless loop or a memory bomb in the submission is a failing grade with the
reason, never a failure of the grader.

Its place in the pipeline: beside :mod:`iosim.gpu`, below only :mod:`iosim.cli`; the
grader runs the real engine (:mod:`iosim.engine`) and :func:`iosim.simulate` for the
expected counts.

>>> report = grade("examples/assignments/instructor/fa2_solution.py")   # doctest: +SKIP
>>> report.passed, [c.name for c in report.checks]                      # doctest: +SKIP
(True, ['loads', 'runs', 'exactness', 'capacity', 'io', 'answer'])
"""

import importlib

#: imported on first use (PEP 562): the student's process imports iosim.grading.child, and
#: nothing of the grader (assignments, expected counts, the engine's runs) comes with it
_LAZY = {"ASSIGNMENTS": ".assignments", "BLOCKS_BAND": ".assignments", "DEFAULT_MEMORY_MB": ".grader",
         "DEFAULT_TIMEOUT_S": ".grader", "GradingInputError": ".grader", "grade": ".grader",
         "Check": ".feedback", "GradeReport": ".feedback"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'iosim.grading' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["grade", "GradeReport", "Check", "ASSIGNMENTS", "BLOCKS_BAND", "GradingInputError",
           "DEFAULT_TIMEOUT_S", "DEFAULT_MEMORY_MB"]

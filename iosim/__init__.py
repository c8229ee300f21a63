"""iosim: count every byte attention moves between GPU memory levels.

The pipeline, one package a stage, each importing only the stages before it (above the
shared :mod:`iosim.errors` and :mod:`iosim.dtypes`): hardware profile
(:mod:`iosim.hardware`) → problem (:mod:`iosim.workload`) → counting engine
(:mod:`iosim.engine`) → schedules, the papers' listings written against its ``ctx``
(:mod:`iosim.schedules`) → the real kernels' launch plans (:mod:`iosim.kernels`) → models
applied to the counts (:mod:`iosim.models`) → one setup, one count per launch
(:mod:`iosim.run`) → studies over many runs (:mod:`iosim.studies`) → reports
(:mod:`iosim.report`) → :mod:`iosim.gpu`, :mod:`iosim.grading` → CLI (:mod:`iosim.cli`).
README.md ("How it works") and docs/simulator.md draw it (docs/img/pipeline.svg).
"""

import importlib

from .errors import CapacityError, DependencyError, IosimError, ProblemError, ProfileError, ScheduleError

#: the public names, by the module that defines them: imported on first use (PEP 562), so
#: ``import iosim`` (and ``iosim --help``) does not load numpy and every stage, and a
#: process that needs one stage (the grader's child) loads only that one
_LAZY = {
    "HardwareProfile": ".hardware", "list_profiles": ".hardware", "load_profile": ".hardware",
    "BlockSizes": ".workload.problem", "Problem": ".workload.problem",
    "paper_block_sizes": ".workload.problem", "sram_elements": ".workload.problem",
    "reference_attention": ".workload.reference", "reference_gradients": ".workload.reference",
    "random_inputs": ".workload.inputs",
    "Options": ".run", "Result": ".run", "Setup": ".run", "prepare": ".run", "simulate": ".run",
    "SCHEDULES": ".schedules",
    "check_bounds": ".studies.bounds", "explore": ".studies.explore",
    "plot_bounds": ".report.plots", "plot_explore": ".report.plots", "grade": ".grading",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'iosim' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

__all__ = [
    "simulate", "prepare", "Options", "Setup", "random_inputs", "Problem", "BlockSizes", "Result", "SCHEDULES", "load_profile", "list_profiles",
    "HardwareProfile", "paper_block_sizes", "sram_elements", "reference_attention", "reference_gradients",
    "IosimError", "ProfileError", "ProblemError", "ScheduleError", "CapacityError", "DependencyError",
    "check_bounds", "explore", "plot_bounds", "plot_explore", "grade",
]

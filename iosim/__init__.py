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

from .errors import CapacityError, DependencyError, IosimError, ProblemError, ProfileError, ScheduleError
from .hardware import HardwareProfile, list_profiles, load_profile
from .workload.problem import BlockSizes, Problem, paper_block_sizes, sram_elements
from .workload.reference import reference_attention, reference_gradients
from .run import Options, Result, Setup, prepare, simulate
from .schedules import SCHEDULES
from .workload.inputs import random_inputs

__version__ = "0.1.0"

__all__ = [
    "simulate", "prepare", "Options", "Setup", "random_inputs", "Problem", "BlockSizes", "Result", "SCHEDULES", "load_profile", "list_profiles",
    "HardwareProfile", "paper_block_sizes", "sram_elements", "reference_attention", "reference_gradients",
    "IosimError", "ProfileError", "ProblemError", "ScheduleError", "CapacityError", "DependencyError",
]

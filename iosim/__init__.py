"""iosim: count every byte attention moves between GPU memory levels.

The pipeline, one module each: hardware profile (:mod:`iosim.hardware`) → problem and
blocks (:mod:`iosim.workload.problem`) → schedule (:mod:`iosim.schedules`, loop orders written
against :class:`iosim.engine.context.Context`) → counting engine (:mod:`iosim.engine`)
→ result (:mod:`iosim.run.result`) and report (:mod:`iosim.report.tables`) → CLI (:mod:`iosim.cli.main`).
"""

from .errors import CapacityError, DependencyError, IosimError, ProblemError, ProfileError, ScheduleError
from .hardware import HardwareProfile, list_profiles, load_profile
from .workload.problem import BlockSizes, Problem, paper_block_sizes, sram_elements
from .workload.reference import reference_attention, reference_gradients
from .run.result import Result
from .schedules import SCHEDULES
from .run.simulate import simulate

__version__ = "0.1.0"

__all__ = [
    "simulate", "Problem", "BlockSizes", "Result", "SCHEDULES", "load_profile", "list_profiles",
    "HardwareProfile", "paper_block_sizes", "sram_elements", "reference_attention", "reference_gradients",
    "IosimError", "ProfileError", "ProblemError", "ScheduleError", "CapacityError", "DependencyError",
]

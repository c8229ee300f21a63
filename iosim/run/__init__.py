"""Run a problem: one setup (:mod:`.setup`, from :mod:`.options`), each launch counted once
(:mod:`.count`), the models applied to what was counted (:mod:`.launches`), the launches
added up (:mod:`.combine`) and reported as a :class:`Result` (:mod:`.result`);
:func:`simulate` (:mod:`.simulation`) does the lot.

Its place in the pipeline: above :mod:`iosim.models`, the first stage that may import
them (:mod:`.result` does not); every stage above uses it.
"""

from .options import Options
from .result import Result
from .setup import Setup, choose_blocks, prepare, resolve_profile
from .simulation import simulate

__all__ = ["simulate", "prepare", "Options", "Setup", "Result", "choose_blocks", "resolve_profile"]

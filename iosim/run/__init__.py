"""Run a problem: one setup (:mod:`.setup`), each launch counted once (:mod:`.count`), the
models applied to what was counted (:mod:`.launches`), reported as a :class:`Result`."""

from .options import Options
from .result import Result
from .setup import Setup, choose_blocks, prepare, resolve_profile
from .simulate import simulate

__all__ = ["simulate", "prepare", "Options", "Setup", "Result", "choose_blocks", "resolve_profile"]

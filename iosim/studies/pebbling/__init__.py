"""Red-blue pebbling (Hong & Kung 1981) of the attention computation DAG (``iosim pebble``).

The pipeline, one module each: the element-level DAG (:mod:`.dag`) → the game's rules,
a legality checker and IO counter (:mod:`.game`) → standard attention, FA1 and FA2 as
pebblings (:mod:`.strategies`) and the exact minimum IO by A* search (:mod:`.search`) →
one instance compared every way, beside iosim's tile-level counts (:mod:`.compare`).
See ``docs/pebbling.md``.

>>> from iosim.studies.pebbling import attention_dag, minimum_io
>>> minimum_io(attention_dag(2, 1), 8).io          # N = 2, d = 1, S = 8: only the compulsory IO
8
"""

from .comparison import PebbleReport, compare
from .dag import AttentionDag, attention_dag, min_red_pebbles
from .game import IllegalPebbling, Move, Pebbling, play
from .strategies import SCHEDULES, DoesNotFit, fit
from .search import Optimum, SearchLimit, brute_force_io, minimum_io

__all__ = [
    "attention_dag", "AttentionDag", "min_red_pebbles", "play", "Move", "Pebbling", "IllegalPebbling",
    "SCHEDULES", "fit", "DoesNotFit", "minimum_io", "brute_force_io", "Optimum", "SearchLimit", "compare",
    "PebbleReport",
]

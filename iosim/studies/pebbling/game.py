"""The red-blue pebble game (Hong & Kung, STOC 1981): rules, legality checker, IO count.

A red pebble is a value in fast memory (SRAM, at most S of them at once); a blue pebble
is a value in slow memory (HBM, unlimited). The game starts with a blue pebble on every
input and nothing else, and a move is one of

* **load** (R1): put a red pebble on a node that has a blue one. Needs fewer than S red
  pebbles on the graph and none on the node. IO 1.
* **store** (R2): put a blue pebble on a node that has a red one (and no blue one). IO 1.
* **compute** (R3): put a red pebble on a non-input node whose operands (predecessors)
  all have red pebbles. Needs fewer than S red pebbles and none on the node. IO 0.
* **delete** (R4): take a red pebble off. IO 0.

It ends legally when every output has a blue pebble. IO = loads + stores. Recomputation
is allowed (a node may be computed again after its red pebble was deleted). Blue pebbles
are never removed: Hong & Kung allow it, but keeping one costs nothing, so it never lowers
the minimum IO. Storing a node that is already blue is rejected as a mistake in the
schedule, as is loading or computing one that is already red.

>>> from iosim.studies.pebbling.dag import attention_dag
>>> dag = attention_dag(1, 1)
>>> moves = [("load", "q[0,0]"), ("load", "k[0,0]"), ("compute", "s[0,0]"), ("delete", "q[0,0]"),
...          ("delete", "k[0,0]"), ("compute", "e[0,0]"), ("delete", "s[0,0]"), ("load", "v[0,0]"),
...          ("compute", "u[0,0,0]"), ("delete", "v[0,0]"), ("compute", "o[0,0]"), ("store", "o[0,0]")]
>>> r = play(dag, moves, red=3)
>>> (r.io, r.loads, r.stores, r.peak_red)
(4, 3, 1, 3)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple

from ...errors import IosimError
from .dag import AttentionDag

MOVES = ("load", "store", "compute", "delete")


class Move(NamedTuple):
    """One move of the game: ``kind`` is one of :data:`MOVES`, ``node`` a node name."""

    kind: str
    node: str


class IllegalPebbling(IosimError):
    """A schedule broke a rule of the game, or ended with an output not in slow memory."""


@dataclass(frozen=True)
class Pebbling:
    """A legal pebbling, checked move by move, and what it cost."""

    red: int                 # S, the red-pebble limit it was checked against
    moves: tuple[Move, ...] = field(repr=False)
    loads: int
    stores: int
    computes: int
    deletes: int
    peak_red: int            # the most red pebbles on the graph at once (≤ S)
    recomputes: int          # compute moves on a node that had been computed before
    loads_by_value: dict[str, int] = field(default_factory=dict)    # "q", "k", "s", "u", … → loads
    stores_by_value: dict[str, int] = field(default_factory=dict)

    @property
    def io(self) -> int:
        """Loads + stores: the pebbling's IO (HBM accesses, in elements)."""
        return self.loads + self.stores


def value_of(node: str) -> str:
    """The matrix a node belongs to: ``"q"`` for ``q[0,1]``, ``"s"`` for ``t[…]`` and ``s[…]``."""
    letter = node.split("[", 1)[0]
    return "s" if letter == "t" else letter


def check_red(red) -> None:
    """Raise :class:`IllegalPebbling` unless ``red`` (S, the red-pebble limit) is a positive integer."""
    if isinstance(red, bool) or not isinstance(red, int) or red < 1:
        raise IllegalPebbling(f"the number of red pebbles S must be a positive integer, got {red!r}")


@dataclass
class _Board:
    """The pebbles on the graph while a schedule is played, and what the moves cost so far."""

    reds: set[str]
    blues: set[str]
    computed: set[str] = field(default_factory=set)
    loads_by: Counter = field(default_factory=Counter)
    stores_by: Counter = field(default_factory=Counter)
    recomputes: int = 0


def _load(dag: AttentionDag, board: _Board, node: str, red: int) -> str | None:
    if node not in board.blues:
        return "the node has no blue pebble (nothing in slow memory to load)"
    if node in board.reds:
        return "the node already has a red pebble"
    if len(board.reds) >= red:
        return f"all S = {red} red pebbles are in use; delete one first"
    board.reds.add(node)
    board.loads_by[value_of(node)] += 1
    return None


def _store(dag: AttentionDag, board: _Board, node: str, red: int) -> str | None:
    if node not in board.reds:
        return "the node has no red pebble (nothing in fast memory to store)"
    if node in board.blues:
        return "the node already has a blue pebble; storing it again only costs IO"
    board.blues.add(node)
    board.stores_by[value_of(node)] += 1
    return None


def _compute(dag: AttentionDag, board: _Board, node: str, red: int) -> str | None:
    if dag.is_input(node):
        return "an input cannot be computed, only loaded"
    missing = [p for p in dag.preds(node) if p not in board.reds]
    if missing:
        return f"operand(s) without a red pebble: {', '.join(missing)}"
    if node in board.reds:
        return "the node already has a red pebble"
    if len(board.reds) >= red:
        return f"all S = {red} red pebbles are in use; delete one first"
    board.reds.add(node)
    board.recomputes += node in board.computed
    board.computed.add(node)
    return None


def _delete(dag: AttentionDag, board: _Board, node: str, red: int) -> str | None:
    if node not in board.reds:
        return "the node has no red pebble to delete"
    board.reds.discard(node)
    return None


#: each move's rules: apply it to the board and return None, or return the rule it breaks
#: (the board unchanged)
_RULES = {"load": _load, "store": _store, "compute": _compute, "delete": _delete}


def _broken_rule(dag: AttentionDag, board: _Board, kind: str, node: str, red: int) -> str | None:
    """Play one move on ``board``; the rule it breaks, or None when it is legal."""
    if kind not in MOVES:
        return f"unknown move; the moves are {', '.join(MOVES)}"
    if node not in dag.graph:
        return f"no such node in the {dag.seq_len}×{dag.head_dim} attention DAG"
    return _RULES[kind](dag, board, node, red)


def play(dag: AttentionDag, moves: Iterable, red: int) -> Pebbling:
    """Play ``moves`` on ``dag`` with at most ``red`` red pebbles; raise on the first illegal one.

    ``moves`` are :class:`Move` or plain ``(kind, node)`` pairs. Raises
    :class:`IllegalPebbling` naming the move (1-based), the node and the rule broken.
    """
    check_red(red)
    board = _Board(reds=set(), blues=set(dag.inputs))
    played: list[Move] = []
    count = Counter()
    peak = 0
    for number, raw in enumerate(moves, 1):
        move = Move(*raw)
        kind, node = move
        reason = _broken_rule(dag, board, kind, node, red)
        if reason is not None:
            raise IllegalPebbling(f"move {number} ({kind} {node}): {reason}")
        count[kind] += 1
        peak = max(peak, len(board.reds))
        played.append(move)
    unfinished = [n for n in dag.outputs if n not in board.blues]
    if unfinished:
        shown = ", ".join(unfinished[:4]) + (" …" if len(unfinished) > 4 else "")
        raise IllegalPebbling(f"the pebbling ends with {len(unfinished)} output(s) not in slow memory "
                              f"(no blue pebble): {shown}")
    return Pebbling(red, tuple(played), count["load"], count["store"], count["compute"], count["delete"],
                    peak, board.recomputes, dict(board.loads_by), dict(board.stores_by))


__all__ = ["Move", "MOVES", "Pebbling", "IllegalPebbling", "check_red", "play", "value_of"]

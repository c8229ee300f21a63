"""The exact minimum IO of the red-blue pebble game, by A* search over game states.

A state is (R, B): the nodes with a red pebble and the non-input nodes with a blue one
(inputs are always blue). Searching every sequence of the four moves is hopeless even for
a 20-node DAG, so the search plays a smaller game whose optimum is provably the same:

1. **Lazy deletion.** A red pebble is deleted only to make room: a placement (load or
   compute) on a full set of S red pebbles evicts one red node, chosen by the search.
   Deleting earlier never helps, because a state with a superset of red pebbles can copy
   every move of the other (it evicts a node the other does not have).
2. **Stores at eviction.** A store is made just before its node's red pebble goes; moving
   a store later within the red interval changes nothing, and one made at the end of the
   game is useless unless the node is an output.
3. **Outputs are stored at once** when computed (they must be stored once anyway).
4. **Loads just in time**: a load is moved to just before the first computation that
   uses the loaded value (the pebble is free in between; a load never used is dropped).
   So one move of the reduced game computes one node y: load y's operands that are not
   red (each must be blue), evict as many red nodes as that needs (never y's operands;
   any evictee may be stored first), compute y.
5. **Dead values are dropped**: a node from which no unfinished output can be reached
   loses its pebbles (they can never matter again).
6. **Symmetry**: renumbering the query rows maps the DAG onto itself, so states that
   differ only by such a renumbering are one state.

Blue pebbles are never removed (keeping one is free). Recomputation is allowed.

The heuristic is the *compulsory* IO still to come: one store per unfinished output,
plus one load per input that is not red and from which an unfinished output is reachable
through nodes with neither a red nor a blue pebble (such an input cannot be avoided: every
node on that path must be computed, so the input must be red again). It never exceeds the
true remaining IO and drops by at most a move's cost along any move (consistent), so the
first time A* takes a goal state off the queue its cost is the minimum. The pebbling
found is expanded back into the four moves and checked by :func:`iosim.studies.pebbling.game.play`.

Limits: the number of states grows exponentially with the DAG; see ``docs/pebbling.md``
for measured sizes and run times. :func:`minimum_io` refuses DAGs over ``max_nodes`` nodes
and gives up once it has seen ``max_states`` distinct states, with a message saying so.
"""

from __future__ import annotations

import heapq
import time
from itertools import combinations
from dataclasses import dataclass, field

from ...errors import IosimError, ProblemError
from .dag import AttentionDag, dag_nodes, min_red_pebbles
from .game import IllegalPebbling, Move, Pebbling, play

#: default refusal threshold: DAGs larger than this are not searched at all
MAX_NODES = 40
#: default budget of one search, in distinct states seen (about 0.6 GB per million)
MAX_STATES = 2_000_000
#: the most a caller may raise it to (about 3 GB of states)
STATES_LIMIT = 5_000_000


class SearchLimit(IosimError):
    """The instance is too large for the exact search, or the search ran out of budget."""


def require_red(dag: AttentionDag, red) -> int:
    """Raise :class:`IllegalPebbling` unless some pebbling of ``dag`` exists with S = ``red``.

    That needs an integer ``red`` ≥ :func:`~iosim.studies.pebbling.dag.min_red_pebbles`, which is returned.
    """
    need = min_red_pebbles(dag)
    if isinstance(red, bool) or not isinstance(red, int) or red < need:
        raise IllegalPebbling(f"no pebbling of the N={dag.seq_len}, d={dag.head_dim} attention DAG exists with "
                              f"S = {red} red pebbles: computing a node needs its operands and itself red at once, "
                              f"so S ≥ {need} (max in-degree {need - 1} + 1)")
    return need


def require_nodes(seq_len: int, head_dim: int, max_nodes: int, hint: str = "") -> None:
    """Raise :class:`SearchLimit` when the N = ``seq_len``, d = ``head_dim`` DAG (built or not: :func:`dag_nodes`)
    has more than ``max_nodes`` nodes (``hint`` ends the message)."""
    nodes = dag_nodes(seq_len, head_dim)
    if nodes > max_nodes:
        raise SearchLimit(f"the N={seq_len}, d={head_dim} DAG has {nodes} nodes; the exact search is "
                          f"limited to {max_nodes} (its states grow exponentially; see docs/pebbling.md)"
                          + (f". {hint}" if hint else ""))


@dataclass(frozen=True)
class Optimum:
    """The minimum IO of one instance, with a pebbling that attains it and what it cost to find."""

    io: int
    pebbling: Pebbling = field(repr=False)
    expanded: int          # states taken off the queue
    generated: int         # distinct states seen
    seconds: float
    lower_bound: int       # the heuristic at the start: the compulsory IO


def _byte_tables(perm) -> list[list[int]]:
    """For each byte position of a mask, the image under ``perm`` of each of its 256 values."""
    tables = []
    for base in range(0, len(perm), 8):
        table = []
        for value in range(256):
            out = 0
            for b in range(8):
                if value >> b & 1 and base + b < len(perm):
                    out |= 1 << perm[base + b]
            table.append(out)
        tables.append(table)
    return tables


def _permute(mask: int, tables) -> int:
    out = 0
    for table in tables:
        if not mask:
            break
        out |= table[mask & 255]
        mask >>= 8
    return out


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class _Instance:
    """The DAG as bitmasks, and the moves of the reduced game."""

    def __init__(self, dag: AttentionDag, red: int):
        idx = dag.index
        self.S, self.n = red, len(dag)
        self.names = dag.order
        self.preds = [sum(1 << idx[p] for p in dag.preds(v)) for v in dag.order]
        self.inputs = sum(1 << idx[v] for v in dag.inputs)
        self.outputs = sum(1 << idx[v] for v in dag.outputs)
        ancestors = []
        for n in range(self.n):          # topological order: operands come first
            a = 1 << n
            for p in _bits(self.preds[n]):
                a |= ancestors[p]
            ancestors.append(a)
        self.ancestors = ancestors
        self._useful: dict[int, int] = {}
        perms = dag.row_permutations() if dag.seq_len <= 4 else [tuple(range(self.n))]
        self.inverse = [tuple(sorted(range(self.n), key=p.__getitem__)) for p in perms]
        self.perm_tables = [_byte_tables(p) for p in perms[1:]]

    def useful(self, pending: int) -> int:
        """Nodes from which an unfinished output can be reached."""
        u = self._useful.get(pending)
        if u is None:
            u = 0
            for o in _bits(pending):
                u |= self.ancestors[o]
            self._useful[pending] = u
        return u

    def canonical(self, R: int, B: int) -> tuple[int, int, int]:
        """Drop dead pebbles, then take the least image under the row permutations.

        Returns (R', B', k): the canonical state is perms[k] applied to the input state.
        """
        keep = self.useful(self.outputs & ~B)
        R, B = R & keep, B & (keep | self.outputs)
        best, which = (R, B), 0
        for k, tables in enumerate(self.perm_tables, 1):
            image_r = _permute(R, tables)
            if image_r > best[0]:
                continue
            image = (image_r, _permute(B, tables))
            if image < best:
                best, which = image, k
        return best[0], best[1], which

    def h(self, R: int, B: int) -> int:
        """Compulsory IO still to come (see the module docstring); admissible and consistent."""
        pending = self.outputs & ~B
        stop = R | B | self.inputs
        need = todo = pending
        while todo:
            n = todo.bit_length() - 1            # operands have lower indices: each node once
            todo ^= 1 << n
            if not (stop >> n) & 1:
                new = self.preds[n] & ~need
                need |= new
                todo |= new
        return pending.bit_count() + (need & self.inputs & ~R).bit_count()

    def successors(self, R: int, B: int):
        """(cost, R', B', action) for every macro move of the reduced game from (R, B).

        A macro move computes one node y: it loads y's operands that are not red (each
        must be blue), evicts as many red nodes as needed to make room (never y's
        operands), storing any evictee that is not blue if the search chooses to, then
        computes y, and stores y at once if it is an output.
        """
        blue = B | self.inputs
        free = self.S - R.bit_count()
        red_nodes = list(_bits(R))
        for y in _bits(self.useful(self.outputs & ~B) & ~R & ~self.inputs):
            missing = self.preds[y] & ~R
            if missing & ~blue:
                continue                         # an operand must be computed first
            loads = missing.bit_count()
            placed = missing | (1 << y)
            stored_y = self.outputs & (1 << y)
            cost = loads + (1 if stored_y else 0)
            evict = loads + 1 - free
            if evict <= 0:
                yield self._after(cost, R | placed, B | stored_y, (y, missing, 0, 0))
                continue
            candidates = [u for u in red_nodes if not (self.preds[y] >> u) & 1]
            for chosen in combinations(candidates, evict):
                out = sum(1 << u for u in chosen)
                unsaved = out & ~blue
                R2 = (R & ~out) | placed
                for stores in _submasks(unsaved):
                    yield self._after(cost + stores.bit_count(), R2, B | stored_y | stores, (y, missing, out, stores))

    def _after(self, cost, R, B, action):
        R, B, which = self.canonical(R, B)
        return cost, R, B, action + (which,)


def _submasks(mask: int):
    sub = mask
    while True:
        yield sub
        if not sub:
            return
        sub = (sub - 1) & mask


def check_max_states(max_states: int) -> int:
    """``max_states`` if the search may take that many (1 to :data:`STATES_LIMIT`)."""
    if isinstance(max_states, bool) or not isinstance(max_states, int) or not 1 <= max_states <= STATES_LIMIT:
        raise ProblemError(f"max_states must be an integer from 1 to {STATES_LIMIT:,} (about 0.6 GB per million "
                           f"states), got {max_states!r}", field="max_states")
    return max_states


def _within_limits(what: str, expanded: int, seen: int, max_states: int, max_seconds: float | None,
                   start_time: float) -> None:
    """:class:`SearchLimit` once the search has seen ``max_states`` states or run ``max_seconds``."""
    if max_seconds is not None and not expanded % 512 and time.perf_counter() - start_time > max_seconds:
        raise SearchLimit(f"{what} gave up after {max_seconds:g} s ({seen:,} states seen); raise --max-seconds, "
                          "or see docs/pebbling.md for the instances it finishes quickly")
    if seen > max_states:
        raise SearchLimit(f"{what} gave up after seeing {max_states:,} states "
                          f"({time.perf_counter() - start_time:.0f} s); raise --max-states, or see docs/pebbling.md "
                          "for the instances it finishes")


def minimum_io(dag: AttentionDag, red: int, *, max_nodes: int = MAX_NODES,
               max_states: int = MAX_STATES, max_seconds: float | None = None) -> Optimum:
    """The minimum IO (loads + stores) of any legal pebbling of ``dag`` with ``red`` red pebbles.

    Raises :class:`SearchLimit` when the DAG has more than ``max_nodes`` nodes or the
    search sees more than ``max_states`` distinct states or runs past ``max_seconds``, and
    :class:`IllegalPebbling` when
    ``red`` is below :func:`~iosim.studies.pebbling.dag.min_red_pebbles` (no pebbling exists).
    """
    check_max_states(max_states)
    require_red(dag, red)
    require_nodes(dag.seq_len, dag.head_dim, max_nodes)
    start_time = time.perf_counter()
    inst = _Instance(dag, red)
    start = inst.canonical(0, 0)[:2]
    best = {start: 0}
    parent: dict[tuple[int, int], tuple] = {start: None}
    h0 = inst.h(*start)
    # Open states by (f, h, red pebbles): among equal f, the one nearer the end, then the
    # one holding fewer red pebbles (fewer eviction choices) first.
    heap = [(h0, h0, 0, 0, start)]
    pushed = expanded = 0
    goal = None
    while heap:
        f, h, _, g_neg, state = heapq.heappop(heap)
        g = f - h
        if best[state] < g:
            continue
        R, B = state
        if not inst.outputs & ~B:
            goal = state
            break
        expanded += 1
        _within_limits(f"the exact search for N={dag.seq_len}, d={dag.head_dim}, S={red}", expanded, len(best),
                       max_states, max_seconds, start_time)
        for cost, R2, B2, action in inst.successors(R, B):
            g2 = g + cost
            key = (R2, B2)
            old = best.get(key)
            if old is not None and old <= g2:
                continue
            best[key] = g2
            parent[key] = (state, action)
            h2 = inst.h(R2, B2)
            if h2 == 0 and g2 == f:  # a goal at the least f on the queue: optimal (h is consistent)
                goal = key
                break
            pushed += 1
            heapq.heappush(heap, (g2 + h2, h2, R2.bit_count(), pushed, key))
        if goal is not None:
            break
    if goal is None:  # cannot happen with red ≥ min_red_pebbles
        raise SearchLimit("the search ran out of states without finishing; please report this")
    moves = _moves(inst, parent, goal)
    pebbling = play(dag, moves, red)
    if pebbling.io != best[goal]:  # the reduced game and the real one must agree
        raise AssertionError(f"search cost {best[goal]} but the pebbling found costs {pebbling.io}")
    return Optimum(best[goal], pebbling, expanded, len(best), time.perf_counter() - start_time, h0)


def _moves(inst: _Instance, parent: dict, goal) -> list[Move]:
    """Expand the path to ``goal`` into the four moves of the real game."""
    path = []
    state = goal
    while parent[state] is not None:
        prev, action = parent[state]
        path.append((action, state))
        state = prev
    path.reverse()
    name = inst.names
    frame = list(range(inst.n))     # canonical position → real node, along the path
    red: set[int] = set()
    moves: list[Move] = []
    for (y, missing, out, stores, which), (R, _B) in path:
        for u in _bits(out):
            if stores >> u & 1:
                moves.append(Move("store", name[frame[u]]))
            moves.append(Move("delete", name[frame[u]]))
            red.discard(frame[u])
        for p in _bits(missing):
            moves.append(Move("load", name[frame[p]]))
            red.add(frame[p])
        moves.append(Move("compute", name[frame[y]]))
        red.add(frame[y])
        if inst.outputs >> y & 1:
            moves.append(Move("store", name[frame[y]]))
        inverse = inst.inverse[which]
        frame = [frame[inverse[c]] for c in range(inst.n)]
        keep = {frame[c] for c in _bits(R)}
        for w in sorted(red - keep):        # dropped as dead by the canonical form
            moves.append(Move("delete", name[w]))
            red.discard(w)
    return moves


def brute_force_io(dag: AttentionDag, red: int, max_states: int = 2_000_000) -> int:
    """The minimum IO by plain 0-1 breadth-first search over *all* moves of the game.

    No reduction (any delete, any store, at any time; only blue pebbles are kept, which is free): an independent check of
    :func:`minimum_io` on the tiniest instances. Raises :class:`SearchLimit` past
    ``max_states`` states.
    """
    from collections import deque

    idx = dag.index
    n = len(dag)
    preds = [sum(1 << idx[p] for p in dag.preds(v)) for v in dag.order]
    inputs = sum(1 << idx[v] for v in dag.inputs)
    outputs = sum(1 << idx[v] for v in dag.outputs)
    start = (0, inputs)
    dist = {start: 0}
    queue = deque([(0, start)])
    while queue:
        g, (R, B) = queue.popleft()
        if dist[(R, B)] < g:
            continue
        if B & outputs == outputs:
            return g
        room = R.bit_count() < red
        for v in range(n):
            bit = 1 << v
            nxt = []
            if R & bit:
                nxt.append((0, (R & ~bit, B)))
                if not B & bit:
                    nxt.append((1, (R, B | bit)))
            elif room:
                if B & bit:
                    nxt.append((1, (R | bit, B)))
                if not inputs & bit and not preds[v] & ~R:
                    nxt.append((0, (R | bit, B)))
            for cost, key in nxt:
                g2 = g + cost
                if dist.get(key, 1 << 30) > g2:
                    dist[key] = g2
                    if len(dist) > max_states:
                        raise SearchLimit(f"brute force passed {max_states:,} states")
                    (queue.appendleft if cost == 0 else queue.append)((g2, key))
    raise SearchLimit("no pebbling exists")


__all__ = ["minimum_io", "brute_force_io", "Optimum", "SearchLimit", "require_nodes", "require_red", "MAX_NODES",
           "MAX_STATES"]

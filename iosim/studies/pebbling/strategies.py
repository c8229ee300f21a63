"""Standard attention, FA1 and FA2 played as red-blue pebblings of the attention DAG.

Each function returns the list of moves; :func:`iosim.studies.pebbling.game.play` checks them
and counts their IO. They follow the loop orders of docs/spec/algorithms.md §2.1, §3.1 and
§4.1 at the granularity of the DAG (one scalar per pebble), keeping on chip what the paper
keeps on chip and writing to HBM what the paper writes:

* ``standard`` (Algorithm 0): S = QKᵀ row block by row block (``block`` rows of Q held,
  K streamed one element at a time), every s_ij stored; then the row softmax reads S and
  stores P̃ = exp(S) and ℓ; then O = P̃V / ℓ, ``block`` rows of accumulators held while V
  streams, reading P̃ once. ``block`` = B_r of a tiled GEMM; the paper's idealised count
  (every input read once) is ``block`` = N.
* ``fa1`` (Algorithm 1): outer loop over blocks of ``block`` keys (B_c), K_j and V_j held;
  inner loop over query rows: load the row of Q, load its running sums ℓ_i and u_i
  (Algorithm 1's O_i, unnormalised here) unless this is the first key block, fold in the
  block's keys, store the sums back (or, after the last block, O_i = u_i/ℓ_i).
* ``fa2`` (FA2 Algorithm 1): outer loop over blocks of ``block`` query rows (B_r), Q_i and
  the accumulators u_i, ℓ_i held on chip throughout; inner loop over keys, each K and V
  element loaded and used for every row of the block; O_i = u_i/ℓ_i stored at the end.

Within those loop orders each value is deleted right after its last use, and the
element-level order (which partial sum first) is chosen to need few red pebbles.
:func:`fit` picks the largest ``block`` whose pebbling fits S red pebbles.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from ...errors import IosimError, require_choice
from .dag import AttentionDag, dot, e, key, o, pv, q, rowsum, score, v
from .game import Move, Pebbling, check_red, play


class _Moves:
    """Collects a schedule's moves, one method per kind of move."""

    def __init__(self):
        self.moves: list[Move] = []

    def load(self, node):
        self.moves.append(Move("load", node))

    def compute(self, node):
        self.moves.append(Move("compute", node))

    def store(self, node):
        self.moves.append(Move("store", node))

    def delete(self, *nodes):
        for node in nodes:
            self.moves.append(Move("delete", node))


def _blocks(n: int, size: int):
    return [list(range(start, min(start + size, n))) for start in range(0, n, size)]


def _dot_rows(m: _Moves, rows, j: int, d: int):
    """s_ij for every i in ``rows`` (their Q elements red): stream K_j one element at a time."""
    for k in range(d):
        m.load(key(j, k))
        for i in rows:
            m.compute(dot(i, j, k, d))
            if k:
                m.delete(dot(i, j, k - 1, d))
        m.delete(key(j, k))


def _fold_values(m: _Moves, rows, j: int, d: int):
    """Load each column of v_j once and fold it into every row's partial P̃V sum."""
    for c in range(d):
        m.load(v(j, c))
        for i in rows:
            m.compute(pv(i, c, j))
            if j:
                m.delete(pv(i, c, j - 1))
        m.delete(v(j, c))


def _fold_rowsum(m: _Moves, i: int, j: int):
    """Fold e_ij into ℓ_i's partial sum (both red); nothing for j = 0, since e_i0 is ℓ's first
    partial sum: it stays red until it is folded with e_i1 here."""
    if j:
        m.compute(rowsum(i, j))
        m.delete(rowsum(i, j - 1), e(i, j))


def _accumulate(m: _Moves, rows, j: int, d: int):
    """e_ij, then ℓ_i and u_i folded with key j, for every i in ``rows`` (s_ij red)."""
    for i in rows:
        m.compute(e(i, j))
        m.delete(score(i, j))
    _fold_values(m, rows, j, d)
    for i in rows:
        _fold_rowsum(m, i, j)


def _finish_rows(m: _Moves, rows, N: int, d: int):
    """O_i = u_i/ℓ_i, stored, for every i in ``rows`` (u_i and ℓ_i red)."""
    for i in rows:
        for c in range(d):
            m.compute(o(i, c))
            m.store(o(i, c))
            m.delete(o(i, c), pv(i, c, N - 1))
        m.delete(rowsum(i, N - 1))


def standard_moves(dag: AttentionDag, block: int) -> list[Move]:
    """Algorithm 0 as a pebbling, with ``block`` query rows per GEMM tile."""
    N, d = dag.seq_len, dag.head_dim
    m = _Moves()
    for rows in _blocks(N, block):                     # 1: S = QKᵀ, written to HBM
        for i in rows:
            for k in range(d):
                m.load(q(i, k))
        for j in range(N):
            _dot_rows(m, rows, j, d)
            for i in rows:
                m.store(score(i, j))
                m.delete(score(i, j))
        m.delete(*(q(i, k) for i in rows for k in range(d)))
    for i in range(N):                                 # 2: read S, write P̃ = exp(S) and ℓ
        for j in range(N):
            m.load(score(i, j))
            m.compute(e(i, j))
            m.delete(score(i, j))
            m.store(e(i, j))
            _fold_rowsum(m, i, j)
        if N > 1:
            m.store(rowsum(i, N - 1))                  # for N = 1, ℓ_i = P̃_i0 is already stored
        m.delete(rowsum(i, N - 1))
    for rows in _blocks(N, block):                     # 3: read P̃ and V, write O = P̃V/ℓ
        for j in range(N):
            for i in rows:
                m.load(e(i, j))
            _fold_values(m, rows, j, d)
            m.delete(*(e(i, j) for i in rows))
        for i in rows:
            m.load(rowsum(i, N - 1))
            _finish_rows(m, [i], N, d)
    return m.moves


def fa1_moves(dag: AttentionDag, block: int) -> list[Move]:
    """FA1's Algorithm 1 as a pebbling, with ``block`` keys per outer iteration (B_c)."""
    N, d = dag.seq_len, dag.head_dim
    m = _Moves()
    kv_blocks = _blocks(N, block)
    for b, cols in enumerate(kv_blocks):
        for j in cols:                                 # 6: load K_j, V_j
            for k in range(d):
                m.load(key(j, k))
            for c in range(d):
                m.load(v(j, c))
        for i in range(N):                             # 8: load Q_i, O_i, ℓ_i (m has no node here)
            for k in range(d):
                m.load(q(i, k))
            if b:
                for c in range(d):
                    m.load(pv(i, c, cols[0] - 1))
                m.load(rowsum(i, cols[0] - 1))
            for j in cols:                             # 9–11: S_ij, P̃_ij, running sums
                for k in range(d):
                    m.compute(dot(i, j, k, d))
                    if k:
                        m.delete(dot(i, j, k - 1, d))
                    if j == cols[-1]:
                        m.delete(q(i, k))              # Q_i's last use in this block
                m.compute(e(i, j))
                m.delete(score(i, j))
                for c in range(d):
                    m.compute(pv(i, c, j))
                    if j:
                        m.delete(pv(i, c, j - 1))
                _fold_rowsum(m, i, j)
            if b == len(kv_blocks) - 1:                # 12: the last write of O_i is the output
                _finish_rows(m, [i], N, d)
            else:                                      # 12–13: write O_i, ℓ_i back to HBM
                for c in range(d):
                    m.store(pv(i, c, cols[-1]))
                    m.delete(pv(i, c, cols[-1]))
                m.store(rowsum(i, cols[-1]))
                m.delete(rowsum(i, cols[-1]))
        m.delete(*(key(j, k) for j in cols for k in range(d)), *(v(j, c) for j in cols for c in range(d)))
    return m.moves


def fa2_moves(dag: AttentionDag, block: int) -> list[Move]:
    """FA2's Algorithm 1 as a pebbling, with ``block`` query rows per outer iteration (B_r)."""
    N, d = dag.seq_len, dag.head_dim
    m = _Moves()
    for rows in _blocks(N, block):
        for i in rows:                                 # 4: load Q_i
            for k in range(d):
                m.load(q(i, k))
        for j in range(N):                             # 6–10: K_j, V_j streamed past the block
            _dot_rows(m, rows, j, d)
            if j == N - 1:
                m.delete(*(q(i, k) for i in rows for k in range(d)))
            _accumulate(m, rows, j, d)
        _finish_rows(m, rows, N, d)                    # 12–14: O_i = u_i/ℓ_i, written once
    return m.moves


SCHEDULES: dict[str, Callable[[AttentionDag, int], list[Move]]] = {
    "standard": standard_moves, "fa1": fa1_moves, "fa2": fa2_moves,
}
SCHEDULE_NAMES = tuple(SCHEDULES)


class DoesNotFit(IosimError):
    """Even the smallest block of a schedule needs more red pebbles than S."""


def _unlimited(dag: AttentionDag, name: str, block: int) -> Pebbling:
    """The schedule ``name`` with this ``block``, played with as many red pebbles as nodes (no limit)."""
    return play(dag, SCHEDULES[name](dag, block), red=len(dag))


def peak_red(dag: AttentionDag, name: str, block: int) -> int:
    """The most red pebbles the schedule ``name`` holds at once with this ``block``."""
    return _unlimited(dag, name, block).peak_red


def fit(dag: AttentionDag, name: str, red: int, block: int | None = None) -> tuple[int, Pebbling]:
    """(block, pebbling) of schedule ``name`` with S = ``red``: the given block, or the largest that fits.

    A larger block never costs more IO (fewer passes over K, V or Q), so the largest block
    whose pebbling holds at most S red pebbles is the schedule's best. Raises
    :class:`DoesNotFit` when block 1 (or the given block) needs more than S.
    """
    require_choice("schedule", name, SCHEDULES, IosimError)
    N = dag.seq_len
    played: dict[int, Pebbling] = {}   # block → its pebbling, played once without a red limit

    def pebbling(b: int) -> Pebbling:
        if b not in played:
            played[b] = _unlimited(dag, name, b)
        return played[b]

    def fitted(b: int) -> tuple[int, Pebbling]:
        # A pebbling legal with len(dag) red pebbles whose peak is at most S is legal with S,
        # and playing it again against S would give the same counts: only ``red`` changes.
        check_red(red)
        return b, dataclasses.replace(pebbling(b), red=red)

    if block is not None:
        if not 1 <= block <= N:
            raise IosimError(f"block must be between 1 and N = {N}, got {block}")
        need = pebbling(block).peak_red
        if need > red:
            raise DoesNotFit(f"{name} with block {block} needs S ≥ {need} red pebbles, have {red}")
        return fitted(block)
    need = pebbling(1).peak_red
    if need > red:
        raise DoesNotFit(f"{name} needs S ≥ {need} red pebbles even with block 1, have {red}")
    lo, hi = 1, N                      # peak grows with the block: binary search the largest that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if pebbling(mid).peak_red <= red:
            lo = mid
        else:
            hi = mid - 1
    return fitted(lo)


__all__ = ["SCHEDULES", "SCHEDULE_NAMES", "DoesNotFit", "fit", "peak_red", "standard_moves", "fa1_moves",
           "fa2_moves"]

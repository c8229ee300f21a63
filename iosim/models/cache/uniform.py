"""One head's thread-block programs as runs of loop bodies: a step of any program, at no
cost per tile step.

:mod:`.programs` expands every tile step of every thread block (CTA), which is what the
exact model plays, and costs about 100 bytes a step: a causal run of N = 1,048,576 would
take gigabytes before a request is played. Most kernels' CTAs are simpler than that: a few
accesses of their own, one loop over key (or query) blocks whose body makes the same
accesses at every member, and a few more of their own. Here each CTA is a list of
*intervals*, in program order; an interval is a run of consecutive members of the loop
(walked up or down) with one body, a *piece*: its chunks at member 0 and how far each moves
per member (the rows a member moves by, when that keeps every access within its chunk
windows, as it does for block sizes that are multiples or divisors of ``chunk_rows``; else
a piece spans the period of members after which they cut the windows alike again). The
CTA's own accesses are intervals of one member. A loop whose body holds another loop (FA1,
the paper's backward: one CTA a head) is walked member by member, each member's body its
own intervals. So a CTA costs its bodies, not its steps (its outer loop's members where
loops nest), and :meth:`Uniform.at` gives the request at any step of any CTA, vectorised.

A loop whose bodies share members (no built-in loop order has one) is walked member by member
too, every body's records at each member in the order :mod:`.programs` expands them: every
program has this form. tests/invariants/test_l2_uniform.py checks every step against
:mod:`.programs`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .programs import FIELDS, KV_HEAD, PER_KV_HEAD, HEAD, WRITE_CODES, _keys, _product


@dataclass(frozen=True)
class Uniform:
    """The CTAs of one kernel of one head, in launch order, as intervals (see the module's
    docstring). Interval k of the kernel starts at step ``start[k]`` of the concatenated
    programs, walks ``count[k]`` members from ``first[k]`` by ``sign[k]`` (±1) and makes
    piece ``piece[k]``: the elements ``ptr[piece]`` … ``ptr[piece + 1] − 1`` of ``base``
    (FIELDS -> array), ``hi_shift`` and ``lo_shift`` at every member."""

    lengths: np.ndarray            # per CTA
    offset: np.ndarray             # per CTA: its first step in the concatenation
    start: np.ndarray              # per interval
    first: np.ndarray
    sign: np.ndarray
    count: np.ndarray
    piece: np.ndarray
    ptr: np.ndarray                # per piece, and one past the last
    base: dict
    hi_shift: np.ndarray
    lo_shift: np.ndarray

    @property
    def ctas(self) -> int:
        return len(self.lengths)

    def at(self, cta: np.ndarray, step: np.ndarray) -> dict:
        """FIELDS -> the request of each (CTA, step) pair."""
        x = self.offset[cta] + step
        k = np.searchsorted(self.start, x, side="right") - 1
        nb = self.ptr[self.piece[k] + 1] - self.ptr[self.piece[k]]
        j = x - self.start[k]
        member = self.first[k] + self.sign[k] * (j // nb)
        e = self.ptr[self.piece[k]] + j % nb
        out = {f: self.base[f][e] for f in FIELDS}
        out["hi"] = out["hi"] + member * self.hi_shift[e]
        out["lo"] = out["lo"] + member * self.lo_shift[e]
        return out

    def program(self, cta: int) -> dict:
        """FIELDS -> the whole program of CTA ``cta`` (as :meth:`.programs.HeadPrograms.program`)."""
        steps = np.arange(int(self.lengths[cta]))
        return self.at(np.full(len(steps), cta), steps)


def uniform_programs(requests: list, chunk_rows: int) -> dict[str, Uniform]:
    """kernel -> its :class:`Uniform`, from one head's recorded requests."""
    by_kernel: dict[str, dict] = {}
    for r in requests:
        by_kernel.setdefault(r.kernel, {}).setdefault(r.cta_serial, []).append(r)
    out = {}
    for kernel, groups in by_kernel.items():
        out[kernel] = _kernel(groups, chunk_rows)
    return out


def _kernel(groups: dict, chunk_rows: int) -> Uniform:
    """One kernel's CTAs, in launch order (by their loops' keys, as :mod:`.programs` orders them)."""
    tensors, pieces = {}, {}
    ctas, keys = [], []                    # per CTA: [(first, sign, count, piece fields)], its order key
    for n, records in enumerate(groups.values()):
        for prefix, intervals in _group(records, chunk_rows, tensors, pieces):
            ctas.append(intervals)
            keys.append((prefix, n))
    width = max(len(p) for p, _ in keys)
    table = np.array([list(p) + [0] * (width - len(p)) + [n] for p, n in keys], np.int64).reshape(len(keys), -1)
    order = np.lexsort(table.T[::-1])
    return _assemble([ctas[i] for i in order])


def _assemble(ctas: list) -> Uniform:
    """The arrays of :class:`Uniform` from each CTA's [(first, sign, count, piece)]; a piece
    made once (every query block's K/V body: :func:`_program`) is kept once."""
    first, sign, count, which, ids, pieces = [], [], [], [], {}, []
    lengths = np.zeros(len(ctas), np.int64)
    for c, intervals in enumerate(ctas):
        for f, s, k, piece in intervals:
            key = id(piece)
            if key not in ids:
                ids[key] = len(pieces)
                pieces.append(piece)
            first.append(f), sign.append(s), count.append(k), which.append(ids[key])
            lengths[c] += k * len(piece["size"])
    count, which = np.array(count, np.int64), np.array(which, np.int64)
    nb = np.array([len(p["size"]) for p in pieces], np.int64)
    cat = {f: np.concatenate([p[f] for p in pieces]) for f in _PIECE}
    return Uniform(lengths, np.concatenate([[0], np.cumsum(lengths)[:-1]]),
                   np.concatenate([[0], np.cumsum(count * nb[which])[:-1]]), np.array(first, np.int64),
                   np.array(sign, np.int64), count, which, np.concatenate([[0], np.cumsum(nb)]),
                   {f: cat[f] for f in FIELDS}, cat["hi_shift"], cat["lo_shift"])


_PIECE = FIELDS + ("hi_shift", "lo_shift")


def _group(records: list, chunk_rows: int, tensors: dict, pieces: dict) -> list:
    """[(order key, intervals)] for each CTA a ``thread_block`` record group stands for."""
    c = records[0].cta_levels
    for r in records:                                   # tensor numbers as programs._attributes makes them
        tensors.setdefault(r.tensor, len(tensors))
    outer = records[0].levels[:c]
    cta_m = _product(outer)
    n_ctas = len(cta_m[0]) if c else 1
    prefix = np.stack(_keys(outer, cta_m, 0), axis=1) if c else np.zeros((1, 0), np.int64)
    members = np.stack(cta_m, axis=1) if c else np.zeros((1, 0), np.int64)

    def program(i):
        return _program(records, c, tuple(members[i].tolist()), chunk_rows, tensors, pieces)
    moved = _moved_programs(records, members, program, chunk_rows) if n_ctas > 2 else None
    return [(tuple(prefix[i].tolist()), program(i) if moved is None else moved(i)) for i in range(n_ctas)]


def _moved_programs(records: list, members: np.ndarray, program, chunk_rows: int):
    """For CTAs that differ only in where their own accesses sit (every CTA of a record group
    in lockstep), a function giving CTA i's intervals from CTA 0's, its own pieces moved by
    its members' distance times what one member moves them (measured on a CTA one member
    away at each level, and checked on the last CTA); None where a CTA level's rows cut the
    chunk windows differently from one member to the next, or the check fails."""
    c = members.shape[1]
    if any(_period(records, k, chunk_rows) != 1 for k in range(c)):
        return None
    base, steps = program(0), []
    for k in range(c):                                  # a CTA one step away at level k only
        away = np.flatnonzero((members[:, k] != members[0, k]) &
                              (np.delete(members, k, axis=1) == np.delete(members[0], k)).all(axis=1))
        if not len(away):
            steps.append(None)
            continue
        j = int(away[0])
        steps.append(_per_member(base, program(j), int(members[j, k] - members[0, k])))
        if steps[-1] is None:
            return None

    def moved(i):
        far = members[i] - members[0]
        if not far.any():
            return base
        out = []
        for n, (first, sign, count, piece) in enumerate(base):
            shift = [(int(d), step[n]) for d, step in zip(far, steps) if d and step is not None and step[n]]
            if shift:
                piece = dict(piece, hi=piece["hi"] + sum(d * s[0] for d, s in shift),
                             lo=piece["lo"] + sum(d * s[1] for d, s in shift))
            out.append((first, sign, count, piece))
        return out
    last = len(members) - 1
    return moved if _same(moved(last), program(last)) else None


def _per_member(a: list, b: list, apart: int):
    """Per interval of ``a``: None where ``b``'s is the same piece, else how far (hi, lo) its
    elements move a member, ``b`` being ``apart`` members on; None where the programs differ
    otherwise."""
    if len(a) != len(b) or any(x[:3] != y[:3] for x, y in zip(a, b)):
        return None
    out = []
    for x, y in zip(a, b):
        p, q = x[3], y[3]
        if p is q:
            out.append(None)
            continue
        if len(p["size"]) != len(q["size"]) or any((p[f] != q[f]).any() for f in _PIECE if f not in ("hi", "lo")):
            return None
        dhi, dlo = q["hi"] - p["hi"], q["lo"] - p["lo"]
        if (dhi % apart).any() or (dlo % apart).any():
            return None
        out.append((dhi // apart, dlo // apart))
    return out


def _same(a: list, b: list) -> bool:
    """Whether two CTAs' intervals are equal, piece for piece."""
    return len(a) == len(b) and all(x[:3] == y[:3] and len(x[3]["size"]) == len(y[3]["size"]) and
                                    all((x[3][f] == y[3][f]).all() for f in _PIECE) for x, y in zip(a, b))


def _program(records: list, depth: int, fixed: tuple, chunk_rows: int, tensors: dict, pieces: dict) -> list:
    """The intervals of ``records`` (those at loop depth ``depth`` and below) in program
    order: runs of their own accesses, and each loop at ``depth``'s members, as runs of one
    body where the body holds no loop, else member by member; ``fixed``: the members of the
    levels above."""
    def piece(recs, member, period):
        """The piece of ``recs`` at ``member`` moving ``period`` members at a time, or, for
        "up" and "down", of every member of a period in walk order, made once."""
        key = (_signature(recs, fixed), depth, member, period)
        if key not in pieces:
            if member in ("up", "down"):
                parts = [piece(recs, j, period) for j in (range(period - 1, -1, -1) if member == "down"
                                                          else range(period))]
                pieces[key] = {f: np.concatenate([q[f] for q in parts]) for f in parts[0]}
            else:
                pieces[key] = _piece(recs, member, period, fixed=fixed, c=depth, chunk_rows=chunk_rows,
                                     tensors=tensors)
        return pieces[key]
    loops: dict = {}
    for r in records:
        if len(r.levels) > depth:
            loops.setdefault(r.levels[depth].loop_seq, []).append(r)
    items = sorted([(r.seq, None, [r]) for r in records if len(r.levels) == depth] +
                   [(seq, seq, recs) for seq, recs in loops.items()], key=lambda t: t[0])
    out, own = [], []
    for _, loop, recs in items + [(None, -1, [])]:
        if loop is None:
            own += recs
            continue
        if own:
            out.append((0, 1, 1, piece(own, 0, 0)))
            own = []
        if recs:
            out += _loop(recs, depth, fixed, piece, chunk_rows, tensors, pieces)
    return out


def _loop(recs: list, depth: int, fixed: tuple, piece, chunk_rows: int, tensors: dict, pieces: dict) -> list:
    """One loop's intervals, its members in walk order (see :func:`_program`)."""
    bodies: dict = {}
    for r in recs:
        bodies.setdefault(r.levels[depth].body_seq, []).append(r)
    runs, spans, descending = [], [], False
    for body in bodies.values():
        body = sorted(body, key=lambda r: r.seq)
        level = body[0].levels[depth]
        descending = level.descending
        m = np.asarray(level.members, np.int64)                   # ascending
        nested = any(len(r.levels) > depth + 1 for r in body)
        period = 1 if nested else _period(body, depth, chunk_rows)
        for run in np.split(m, np.flatnonzero(np.diff(m) != 1) + 1):
            spans.append((int(run[0]), int(run[-1])))
            if not nested:
                runs += _run(body, int(run[0]), len(run), period, descending, piece)
                continue
            for member in run.tolist():                          # a loop inside: member by member
                runs.append((member, _program(body, depth + 1, fixed + (member,), chunk_rows, tensors, pieces)))
    spans.sort()
    if any(a[1] >= b[0] for a, b in zip(spans, spans[1:])):
        return _shared_members(recs, depth, fixed, chunk_rows, tensors, pieces, descending)
    runs.sort(key=lambda t: t[0], reverse=descending)
    return [x for r in runs for x in (r[1] if len(r) == 2 else [r[1:]])]


def _shared_members(recs: list, depth: int, fixed: tuple, chunk_rows: int, tensors: dict, pieces: dict,
                    descending: bool) -> list:
    """A loop whose bodies share members (no built-in loop order makes one: a group of
    iterations stands for members no other group has), member by member: at each, every
    record of every body there, each placed where :mod:`.programs` expands it, by its place
    in its own body (its ``seq`` and its inner loops' ``loop_seq`` taken from the start of
    the body around them)."""
    at: dict = {}
    for r in recs:
        levels = r.levels
        inner = tuple(dataclasses.replace(lv, loop_seq=lv.loop_seq - levels[k - 1].body_seq)
                      for k, lv in enumerate(levels) if k > depth)
        rebased = dataclasses.replace(r, seq=r.seq - levels[-1].body_seq, levels=levels[:depth + 1] + inner)
        for m in np.asarray(levels[depth].members).tolist():
            at.setdefault(int(m), []).append(rebased)
    out = []
    for m in sorted(at, reverse=descending):
        out += _program(at[m], depth + 1, fixed + (m,), chunk_rows, tensors, pieces)
    return out


def _signature(recs: list, fixed: tuple) -> tuple:
    """What a piece of ``recs`` is made of: each record's access, and the members it reads of
    the levels above."""
    return tuple((r.tensor, r.direction, r.row_start, r.rows, r.col_start, r.cols, r.split, r.gathered, r.width,
                  r.per_kv_head, r.rows_level, r.rows_step, r.cols_level, r.cols_step,
                  *(fixed[k] for k in (r.rows_level, r.cols_level) if 0 <= k < len(fixed))) for r in recs)


def _period(recs: list, c: int, chunk_rows: int) -> int:
    """Members after which every access of the body cuts its chunk windows alike again."""
    p = 1
    for r in recs:
        step = r.rows_step if r.rows_level == c else 0
        if step and not (step % chunk_rows == 0 or (chunk_rows % step == 0 and r.rows <= step)):
            p = math.lcm(p, chunk_rows // math.gcd(step, chunk_rows))
    return p


def _run(recs: list, lo: int, n: int, period: int, descending: bool, piece) -> list:
    """(lowest member, first, sign, count, piece) intervals of members lo … lo + n − 1 of one
    body, in walk order: one interval where every member cuts its windows alike; else
    the whole periods of ``period`` members as one interval of super-members (the period's
    members in walk order, moving a period at a time) and the members around them one by one."""
    if period == 1:
        return [(lo, lo + n - 1, -1, n, piece(recs, 0, 1))] if descending else [(lo, lo, 1, n, piece(recs, 0, 1))]
    first, stop = -(-lo // period), (lo + n) // period            # whole periods first … stop − 1
    if stop <= first:
        return [(m, 0, 1, 1, piece(recs, m, 0)) for m in range(lo, lo + n)]
    whole = piece(recs, "down" if descending else "up", period)
    count = stop - first
    out = [(first * period, stop - 1 if descending else first, -1 if descending else 1, count, whole)]
    edges = list(range(lo, first * period)) + list(range(stop * period, lo + n))
    return out + [(m, m // period, 1, 1, piece(recs, m % period, period)) for m in edges]


def _piece(recs: list, member: int, period: int, *, fixed: tuple, c: int, chunk_rows: int,
           tensors: dict) -> dict:
    """FIELDS (and hi_shift, lo_shift) -> per chunk of the records ``recs`` in seq order, at
    ``member`` of the loop at level ``c``, moving ``period`` members at a time."""
    cols = {f: [] for f in _PIECE}
    for r in sorted(recs, key=lambda r: r.seq):
        start, shift = _axis(r.row_start, r.rows_level, r.rows_step, fixed, c)
        col, col_shift = _axis(r.col_start, r.cols_level, r.cols_step, fixed, c)
        start, col = start + member * shift, col + member * col_shift
        w0, w1 = start // chunk_rows, (start + r.rows - 1) // chunk_rows
        window = np.arange(w0, w1 + 1)
        lo = np.maximum(start, window * chunk_rows)
        hi = np.minimum(start + r.rows, (window + 1) * chunk_rows)
        n = len(window)
        split = 0 if r.split is None else r.split + 1
        kind = PER_KV_HEAD if r.per_kv_head else KV_HEAD if r.gathered else HEAD
        cols["hi"].append(np.full(n, ((tensors[r.tensor] * 512 + split) << 26) + col))
        cols["lo"].append(lo * (chunk_rows + 1) + (hi - lo))
        cols["size"].append((hi - lo) * r.cols * r.width)
        cols["write"].append(np.full(n, WRITE_CODES[r.direction]))
        cols["kind"].append(np.full(n, kind))
        cols["hi_shift"].append(np.full(n, period * col_shift))
        cols["lo_shift"].append(np.full(n, period * shift * (chunk_rows + 1)))
    return {f: np.concatenate(v).astype(np.int64) for f, v in cols.items()}


def _axis(start: int, level: int, step: int, fixed: tuple, c: int) -> tuple[int, int]:
    """(rows or columns at member 0 of the loop at level ``c``, how far they move a member;
    ``fixed``: the members of the levels above)."""
    if level == c and step > 0:
        return 0, step
    if 0 <= level < c and step > 0:
        return fixed[level] * step, 0
    return start, 0

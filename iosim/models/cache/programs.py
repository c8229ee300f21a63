"""One head's thread-block programs, from a run's grouped records, class by class.

A count run records its accesses grouped (:mod:`iosim.engine.requests`): one record per
access of a grouped loop body, standing for the access in every combination of members
of the loop iterations around it. The first ``cta_levels`` of those make the thread
block (CTA): a ``thread_block`` opened in a grouped iteration stands for one CTA per
member. :func:`head_programs` expands the records with NumPy into *classes* of CTAs: the
CTAs of a class make the same *shared* accesses (K and V for FA2's query blocks) at the
same steps, so a class holds them once, and each CTA's *own* accesses (its Q, O, L: the
records marked ``private``) at the same steps. The cost is that of the classes' programs
and the CTAs' own accesses, not of every CTA's every tile step.

Chunks are as docs/cache.md says: the ``chunk_rows``-aligned windows an access's rows
cover, each keyed by (tensor, split, column offset) — ``hi`` — and (first row, rows) —
``lo`` — and sized rows × columns × width. Program order is the order a trace run makes
the accesses in: loops walk their members in order (from the last, for a descending
loop), each member's body in record order.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

#: which head a chunk's key names: the query head, its K/V head (a K/V tensor read by a
#: query head), or its K/V head once per group (a GQA reduction: only the group's first
#: query head makes it)
HEAD, KV_HEAD, PER_KV_HEAD = 0, 1, 2
FIELDS = ("hi", "lo", "size", "write", "kind")
#: an access's ``write`` field: a read, a write, or a reduction (a write whose old value the
#: cache must hold: on a miss it is first read from the level behind, e.g. a TMA ``.add``)
READ, WRITE, REDUCE = 0, 1, 2
WRITE_CODES = {"read": READ, "write": WRITE, "reduce": REDUCE}


@dataclass(frozen=True)
class CtaClass:
    """CTAs with one program: ``shared`` accesses (FIELDS -> array) at ``shared_steps``, and
    each CTA's own at ``private_steps`` (``private``: FIELDS -> one row per CTA)."""

    length: int
    shared_steps: np.ndarray
    shared: dict
    private_steps: np.ndarray
    private: dict

    def program(self, row: int) -> dict:
        """FIELDS -> the whole program of the class's CTA ``row``, in step order."""
        out = {}
        for name in FIELDS:
            a = np.empty(self.length, np.int64)
            a[self.shared_steps] = self.shared[name]
            a[self.private_steps] = self.private[name][row]
            out[name] = a
        return out


@dataclass(frozen=True)
class HeadPrograms:
    """The CTAs of one kernel of one head, in launch order: CTA ``c`` runs row
    ``cta_row[c]`` of class ``classes[cta_class[c]]``."""

    classes: tuple
    cta_class: np.ndarray
    cta_row: np.ndarray
    #: tensor name -> its number in the chunks' keys
    tensors: dict = dataclasses.field(default_factory=dict)
    #: the kernel's buffers of many heads' rows side by side (:class:`.lines.Interleaved`), if any
    interleaved: object = None

    @property
    def lengths(self) -> np.ndarray:
        return np.array([k.length for k in self.classes], np.int64)[self.cta_class]

    @functools.cached_property
    def schedules(self) -> dict:
        """(heads, slots) -> the (first round, slot) of every CTA of that many heads
        (:func:`.stream.schedule`), kept: planning a stream, checking its cost and making it
        ask for the same one."""
        return {}

    @functools.cached_property
    def footprint(self) -> int:
        """Bytes of the distinct chunks of one head."""
        parts = [(k.shared["hi"], k.shared["lo"], k.shared["size"]) for k in self.classes]
        parts += [(k.private["hi"].ravel(), k.private["lo"].ravel(), k.private["size"].ravel())
                  for k in self.classes]
        hi, lo, size = (np.concatenate([p[i] for p in parts]) for i in range(3))
        order = np.lexsort((lo, hi))
        new = np.ones(len(order), bool)
        new[1:] = (hi[order][1:] != hi[order][:-1]) | (lo[order][1:] != lo[order][:-1])
        return int(size[order][new].sum())

    def program(self, cta: int) -> dict:
        return self.classes[self.cta_class[cta]].program(self.cta_row[cta])


def head_programs(requests: list, chunk_rows: int) -> dict[str, HeadPrograms]:
    """kernel -> its :class:`HeadPrograms`, from one head's recorded requests."""
    by_kernel: dict[str, dict] = {}
    for r in requests:
        by_kernel.setdefault(r.kernel, {}).setdefault(r.cta_serial, []).append(r)
    return {kernel: _kernel(groups, chunk_rows) for kernel, groups in by_kernel.items()}


def _kernel(groups: dict, chunk_rows: int) -> HeadPrograms:
    """Classes of one kernel's CTAs; the CTAs in launch order (the order they start in)."""
    classes: list = []           # [template, [first keys of its CTAs]]
    by_shape: dict = {}          # a template's shape and shared keys -> indices into classes
    tensors: dict = {}           # tensor name -> its number in the keys, one for the kernel
    for records in groups.values():
        for template, first_keys in _cta_group(records, chunk_rows, tensors):
            shape = (template["length"], len(template["private_steps"]), template["shared"]["hi"].tobytes(),
                     template["shared"]["lo"].tobytes())
            for k in by_shape.get(shape, []):
                known = classes[k][0]
                if _same_program(known, template):
                    known["private"] = {n: np.concatenate([known["private"][n], template["private"][n]])
                                        for n in FIELDS}
                    classes[k][1].append(first_keys)
                    break
            else:
                by_shape.setdefault(shape, []).append(len(classes))
                classes.append([template, [first_keys]])
    keys = [np.concatenate(ks) for _, ks in classes]
    cls = np.concatenate([np.full(len(k), i) for i, k in enumerate(keys)])
    row = np.concatenate([np.arange(len(k)) for k in keys])
    width = max(k.shape[1] for k in keys)
    table = np.concatenate([np.pad(k, ((0, 0), (0, width - k.shape[1]))) for k in keys])
    order = np.lexsort(table.T[::-1])
    return HeadPrograms(tuple(CtaClass(**t) for t, _ in classes), cls[order], row[order], dict(tensors))


def _same_program(a: dict, b: dict) -> bool:
    """Same length, same shared accesses, own accesses at the same steps and of the same kind."""
    return (a["length"] == b["length"] and np.array_equal(a["shared_steps"], b["shared_steps"])
            and np.array_equal(a["private_steps"], b["private_steps"])
            and all(np.array_equal(a["shared"][n], b["shared"][n]) for n in FIELDS)
            and all(np.array_equal(a["private"][n][:1], b["private"][n][:1]) for n in ("write", "kind")))


def _cta_group(records: list, chunk_rows: int, tensors: dict):
    """The CTAs one ``thread_block`` record group stands for: yields (template, each CTA's
    first order keys) — once, or once per subgroup where CTAs' own accesses cut into
    different numbers of chunks (rows not aligned to ``chunk_rows``)."""
    c = records[0].cta_levels
    outer = records[0].levels[:c]
    cta_m = _product(outer)
    n_ctas = len(cta_m[0]) if c else 1
    prefix = np.stack(_keys(outer, cta_m, 0), axis=1) if c else np.zeros((1, 0), np.int64)
    inst = _instances(records, c, outer[-1].body_seq if c else 0)
    at = _attributes(records, inst["rid"], tensors)
    private = at["private"] > 0
    own_start = _starts(at, inst, cta_m, c, "rows", private)       # (n_ctas, own accesses)
    own_col = _starts(at, inst, cta_m, c, "cols", private)
    shared_start = _starts(at, inst, None, c, "rows", ~private)[0]
    n_own = (own_start + at["rows"][private] - 1) // chunk_rows - own_start // chunk_rows + 1
    signatures, which = np.unique(n_own, axis=0, return_inverse=True)
    shared_col = _starts(at, inst, None, c, "cols", ~private)[0]
    first_keys = np.concatenate([prefix, np.tile(inst["suffix"][0], (n_ctas, 1))], axis=1)
    for g, sig in enumerate(signatures):
        rows = np.flatnonzero(which.reshape(-1) == g)
        template = _template(at, private, shared_start, shared_col, own_start[rows], own_col[rows], sig, chunk_rows)
        yield template, first_keys[rows]


def _instances(records: list, c: int, base: int) -> dict:
    """Every record at every combination of its inner levels' members (levels past the
    CTA's), in program order: ``rid`` (record), ``m`` (member per level, −1 past its
    depth), ``suffix`` (order keys)."""
    depth = max(len(r.levels) for r in records)
    rids, members, suffixes = [], [], []
    for k, r in enumerate(records):
        inner = r.levels[c:]
        m = _product(inner)
        n = len(m[0]) if m else 1
        keys = _keys(inner, m, base) + [np.full(n, r.seq - (inner[-1].body_seq if inner else base))]
        rids.append(np.full(n, k))
        members.append(np.stack(m + [np.full(n, -1)] * (depth - c - len(m)), axis=1) if depth > c
                       else np.zeros((n, 0), np.int64))
        suffixes.append(np.stack(keys + [np.zeros(n, np.int64)] * (2 * (depth - c) + 1 - len(keys)), axis=1))
    suffix = np.concatenate(suffixes)
    order = np.lexsort(suffix.T[::-1])
    return {"rid": np.concatenate(rids)[order], "m": np.concatenate(members)[order], "suffix": suffix[order]}


def _attributes(records: list, rid: np.ndarray, tensors: dict) -> dict:
    """Per instance, the attributes of its record (``tensors``: name -> number, added to)."""
    rows = []
    for r in records:
        kind = PER_KV_HEAD if r.per_kv_head else KV_HEAD if r.gathered else HEAD
        split = 0 if r.split is None else r.split + 1
        rows.append((r.row_start, r.rows_level, r.rows_step, r.rows, r.col_start, r.cols_level, r.cols_step,
                     r.cols * r.width, (tensors.setdefault(r.tensor, len(tensors)) * 512 + split) << 26,
                     WRITE_CODES[r.direction], kind, r.private))
    table = np.asarray(rows, dtype=np.int64)[rid]
    names = ("rows_start", "rows_level", "rows_step", "rows", "cols_start", "cols_level", "cols_step",
             "row_bytes", "hi_base", "write", "kind", "private")
    return {name: table[:, k] for k, name in enumerate(names)}


def _starts(at: dict, inst: dict, cta_m, c: int, axis: str, which: np.ndarray) -> np.ndarray:
    """First row (``axis`` "rows") or column of the instances ``which``: (CTAs, instances),
    one row when ``cta_m`` is None (accesses that do not depend on the CTA)."""
    start, level, step = (at[f"{axis}_{k}"][which] for k in ("start", "level", "step"))
    inner = inst["m"][which]
    member = np.where(level >= c, inner[np.arange(len(level)), np.maximum(level - c, 0)] if inner.size else 0, 0)
    base = np.where(step > 0, member * step, start)[None, :]
    if cta_m is None:
        return base
    own = (level >= 0) & (level < c) & (step > 0)
    if not own.any():
        return np.broadcast_to(base, (len(cta_m[0]) if c else 1, base.shape[1]))
    cta = np.stack(cta_m, axis=1)[:, np.where(own, level, 0)]       # (CTAs, instances)
    return np.where(own[None, :], cta * step[None, :], base)


def _template(at: dict, private: np.ndarray, shared_start, shared_col, own_start, own_col, own_chunks,
              chunk_rows: int) -> dict:
    """One class's template: the shared accesses and each CTA's own ones, cut into chunks
    (``own_chunks``: how many each own access makes, the same for every CTA here)."""
    n = np.empty(len(private), np.int64)
    rows = at["rows"]
    n[~private] = (shared_start + rows[~private] - 1) // chunk_rows - shared_start // chunk_rows + 1
    n[private] = own_chunks
    step0 = np.cumsum(n) - n
    shared = _chunks(shared_start, shared_col, rows[~private], at, ~private, chunk_rows)
    def steps(mask):
        return np.repeat(step0[mask], n[mask]) + _within(n[mask])
    own = (_own_chunks(own_start, own_col, rows[private], at, private, own_chunks, chunk_rows) if len(own_start)
           else {name: np.zeros((0, 0), np.int64) for name in FIELDS})
    return {"length": int(n.sum()), "shared_steps": steps(~private), "shared": shared,
            "private_steps": steps(private), "private": own}


def _within(n: np.ndarray) -> np.ndarray:
    """0 … n_k − 1 for each k, concatenated."""
    return np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)


def _chunks(start, col, rows, at, which, chunk_rows: int) -> dict:
    """FIELDS -> per chunk of the accesses ``which`` (rows [start, start + rows), first column ``col``)."""
    first = start // chunk_rows
    n = (start + rows - 1) // chunk_rows - first + 1
    idx = np.repeat(np.arange(len(start)), n)
    window = first[idx] + _within(n)
    lo = np.maximum(start[idx], window * chunk_rows)
    hi = np.minimum(start[idx] + rows[idx], (window + 1) * chunk_rows)
    pick = {name: at[name][which][idx] for name in ("hi_base", "row_bytes", "write", "kind")}
    return {"hi": pick["hi_base"] + col[idx], "lo": lo * (chunk_rows + 1) + (hi - lo),
            "size": (hi - lo) * pick["row_bytes"], "write": pick["write"], "kind": pick["kind"]}


def _own_chunks(start, col, rows, at, which, n, chunk_rows: int) -> dict:
    """FIELDS -> per CTA (a row) and chunk, the CTAs' own accesses ``which``: :func:`_chunks`
    of each row of ``start`` and ``col`` (CTAs × accesses), stacked; ``n``: the chunks each
    access makes, the same in every row (the CTAs' class)."""
    idx = np.repeat(np.arange(start.shape[1]), n)
    window = (start // chunk_rows)[:, idx] + _within(n)
    first = start[:, idx]
    lo = np.maximum(first, window * chunk_rows)
    hi = np.minimum(first + rows[idx], (window + 1) * chunk_rows)
    pick = {name: at[name][which][idx] for name in ("hi_base", "row_bytes", "write", "kind")}
    ctas = (len(start), 1)
    return {"hi": pick["hi_base"] + col[:, idx], "lo": lo * (chunk_rows + 1) + (hi - lo),
            "size": (hi - lo) * pick["row_bytes"], "write": np.tile(pick["write"], ctas),
            "kind": np.tile(pick["kind"], ctas)}


def _product(levels: tuple) -> list[np.ndarray]:
    """Every combination of the levels' members: one array per level."""
    if not levels:
        return []
    grids = np.meshgrid(*[np.asarray(lv.members, np.int64) for lv in levels], indexing="ij")
    return [g.ravel() for g in grids]


def _keys(levels: tuple, members: list, base: int) -> list[np.ndarray]:
    """Order keys of member combinations: per level, where its loop began (relative to the
    body around it, ``base`` at the outermost) and the member's place in its walk."""
    out, body = [], base
    for lv, m in zip(levels, members):
        out += [np.full(len(m), lv.loop_seq - body), -m if lv.descending else m]
        body = lv.body_seq
    return out

"""One head's thread-block programs, as arrays, from a run's recorded accesses.

A count run records its accesses grouped (:mod:`iosim.engine.requests`): one record per
access of a grouped loop body, standing for the same access in every member of the
group. :func:`head_programs` expands them with NumPy into the chunk accesses of every
thread block (CTA) of one head, in the order a trace run makes them, without running
the schedule again: its cost is that of the arrays, not of Python per tile step.

Chunks are as :func:`~.playback.replay` makes them: the ``chunk_rows``-aligned windows a
request's rows cover, each keyed by (tensor, split, first row, rows, column offset); the
key is held as two integers, ``hi`` (tensor, split, column offset) and ``lo`` (rows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: which head a chunk's key names: the query head, its K/V head (a K/V tensor read by a
#: query head), or its K/V head once per group (a GQA reduction: only the group's first
#: query head makes it)
HEAD, KV_HEAD, PER_KV_HEAD = 0, 1, 2


@dataclass(frozen=True)
class HeadPrograms:
    """The CTAs of one kernel of one head, in launch order; CTA ``c``'s chunk accesses are
    ``[starts[c], starts[c + 1])`` of the event arrays, in program order."""

    starts: np.ndarray
    hi: np.ndarray
    lo: np.ndarray
    size: np.ndarray
    write: np.ndarray
    kind: np.ndarray
    private: np.ndarray     # made by this CTA only (its own rows): never shared with another

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)

    @property
    def footprint(self) -> int:
        """Bytes of the distinct chunks of one head."""
        order = np.lexsort((self.lo, self.hi))
        hi, lo = self.hi[order], self.lo[order]
        new = np.ones(len(order), bool)
        new[1:] = (hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1])
        return int(self.size[order][new].sum())


def head_programs(requests: list, chunk_rows: int) -> dict[str, HeadPrograms]:
    """kernel -> its :class:`HeadPrograms`, from one head's recorded requests."""
    by_kernel: dict[str, list] = {}
    for r in requests:
        by_kernel.setdefault(r.kernel, []).append(r)
    return {kernel: _programs(rs, chunk_rows) for kernel, rs in by_kernel.items()}


def _request_columns(requests: list) -> dict[str, np.ndarray]:
    """Per request, what its instances need: where member m's rows and columns start
    (``row0 + m·rows_step``, key ``hi0 + m·cols_step``), its bytes per row, flags, thread
    block, and its place in program order (``primary``, member sign, ``offset``)."""
    ctas: dict = {}
    tensors: dict = {}
    names = ("row0", "rows_step", "rows", "hi0", "cols_step", "row_bytes", "flags", "cta", "cta_step",
             "primary", "sign", "offset", "n")
    cols: dict[str, list] = {name: [] for name in names}
    for r in requests:
        grouped = r.members is not None
        kind = PER_KV_HEAD if r.per_kv_head else KV_HEAD if r.gathered else HEAD
        split = 0 if r.split is None else r.split + 1
        tensor = tensors.setdefault(r.tensor, len(tensors))
        values = (0 if r.rows_step else r.row_start, r.rows_step, r.rows,
                  (tensor * 512 + split) * (1 << 26) + (0 if r.cols_step else r.col_start), r.cols_step,
                  r.cols * r.width, (r.direction == "write") | kind << 1 | r.private << 3,
                  ctas.setdefault(r.cta, len(ctas)), r.cta_step and grouped,
                  r.loop_seq if grouped else r.seq, (-1 if r.descending else 1) if grouped else 0,
                  r.seq - r.body_seq if grouped else 0, len(r.members) if grouped else 1)
        for name, value in zip(names, values):
            cols[name].append(value)
    out = {name: np.asarray(v, dtype=np.int64) for name, v in cols.items()}
    out["members"] = np.concatenate([np.asarray(r.members, dtype=np.int64) if r.members is not None
                                     else np.zeros(1, np.int64) for r in requests])
    return out


def _program_order(c: dict, rid: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The instances in program order: a grouped loop's members in the order it walks them,
    each member's body in record order; everything else in record order."""
    primary, pos, offset = c["primary"][rid], c["sign"][rid] * m, c["offset"][rid]
    span_pos, span_off = 2 * int(np.abs(m).max(initial=0)) + 1, int(offset.max(initial=0)) + 1
    if (int(primary.max(initial=0)) + 1) * span_pos * span_off < 1 << 62:     # one key: one sort
        return np.argsort((primary * span_pos + pos + span_pos // 2) * span_off + offset)
    return np.lexsort((offset, pos, primary))


def _programs(requests: list, chunk_rows: int) -> HeadPrograms:
    """Expand one kernel's records into per-CTA chunk programs (see the module's docstring)."""
    c = _request_columns(requests)
    rid = np.repeat(np.arange(len(requests)), c["n"])
    m = c["members"]
    order = _program_order(c, rid, m)
    rid, m = rid[order], m[order]
    cta = c["cta"][rid] * (int(m.max(initial=0)) + 1) + m * c["cta_step"][rid]
    _, first_seen, cta_dense = np.unique(cta, return_index=True, return_inverse=True)
    launch_rank = np.empty(len(first_seen), np.int64)       # CTAs are launched in the order they start
    launch_rank[np.argsort(first_seen, kind="stable")] = np.arange(len(first_seen))
    cta_of = launch_rank[cta_dense.reshape(-1)]
    by_cta = np.argsort(cta_of, kind="stable")               # each CTA's accesses together, in order
    rid, m = rid[by_cta], m[by_cta]
    counts = np.bincount(cta_of, minlength=len(first_seen))
    return _chunked(c, rid, m, counts, chunk_rows)


def _chunked(c: dict, rid: np.ndarray, m: np.ndarray, counts: np.ndarray, chunk_rows: int) -> HeadPrograms:
    """Cut each access (request ``rid``, member ``m``, in order) into the chunks its rows cover."""
    rows = c["rows"][rid]
    start = c["row0"][rid] + m * c["rows_step"][rid]
    first = start // chunk_rows
    n_chunks = (start + rows - 1) // chunk_rows - first + 1
    if np.all(n_chunks == 1):
        idx, lo, hi_row = slice(None), start, start + rows
    else:
        idx = np.repeat(np.arange(len(rid)), n_chunks)
        window = first[idx] + np.arange(len(idx)) - np.repeat(np.cumsum(n_chunks) - n_chunks, n_chunks)
        lo = np.maximum(start[idx], window * chunk_rows)
        hi_row = np.minimum(start[idx] + rows[idx], (window + 1) * chunk_rows)
        rid, m = rid[idx], m[idx]
    flags = c["flags"][rid]
    cta_of_chunk = np.repeat(np.arange(len(counts)), counts)[idx]
    return HeadPrograms(
        starts=np.concatenate([[0], np.cumsum(np.bincount(cta_of_chunk, minlength=len(counts)))]),
        hi=c["hi0"][rid] + m * c["cols_step"][rid],
        lo=lo * (chunk_rows + 1) + (hi_row - lo),
        size=(hi_row - lo) * c["row_bytes"][rid], write=(flags & 1) > 0, kind=(flags >> 1) & 3,
        private=(flags & 8) > 0,
    )

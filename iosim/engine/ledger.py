"""The run's accounts: HBM traffic per tensor, bytes per memory link, and operations.

Every number is an exact integer *per head*; the report multiplies by B·H (or by B·H_k
for the once-per-K/V-head accesses of grouped-query attention) at the end, so the cost of
counting never depends on batch × heads.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np


@dataclass
class CtaWork:
    """What ``count`` identical thread blocks (CTAs) each do: operations and products.

    ``ops``: "matmul" (FLOPs), "exp", "elementwise" per thread block. ``products``:
    (M, N, K, A staged in shared memory, B staged in shared memory) -> how many such
    matrix products C[M×N] += A[M×K]·B[K×N] one thread block makes; the kernel time model
    turns them into shared-memory operand reads with the kernel's warp layout.
    """

    key: object
    count: int
    ops: dict = field(default_factory=lambda: defaultdict(int))
    products: dict = field(default_factory=lambda: defaultdict(int))
    #: whether this record stands for thread blocks whose work differs (AffineCtaWork)
    affine: ClassVar[bool] = False


@dataclass
class AffineCtaWork:
    """The thread blocks of an affine group (count mode, :mod:`.affine`): member k of
    ``block`` does, for each term, the term's work times the term's count for k; ``unit``
    copies each. ``first``: the group's first member, run on its own before the group.

    :meth:`expand` turns it into the :class:`CtaWork` records, in launch order, that a
    count run grouped by active set makes: one per run of members with the same active set.
    """

    key: object
    count: int
    unit: int
    block: object
    #: id(counts) -> (each member's count, ops, products) of the work done at those counts
    terms: dict = field(default_factory=dict)
    first: CtaWork | None = None
    #: whether ``first``'s active set is that of the members' first run (:meth:`absorb`)
    first_same: bool = False
    affine: ClassVar[bool] = True

    def add(self, table: str, key, n: int, per) -> None:
        """``n`` of ``key`` (an op kind, or a product shape) done ``per[k]`` times by member k."""
        term = self.terms.get(id(per))
        if term is None:
            term = self.terms[id(per)] = (per, defaultdict(int), defaultdict(int))
        term[1 if table == "ops" else 2][key] += n

    def absorb(self, first: CtaWork, group) -> None:
        """Take the record of the group's first member (``group``: the whole group's block),
        which ran on its own before the others; it joins their first run when its active
        set is theirs and its work the same, as a group by active set would have it."""
        aff = group.affine
        self.first, self.count = first, self.count + first.count
        self.first_same = bool(aff.lo[0] == aff.lo[1] and aff.hi[0] == aff.hi[1])

    def expand(self) -> list[CtaWork]:
        """The records, one per run of members with the same active set (launch order)."""
        members, aff = self.block.members, self.block.affine
        change = (aff.lo[1:] != aff.lo[:-1]) | (aff.hi[1:] != aff.hi[:-1])
        starts = np.concatenate([[0], np.flatnonzero(change) + 1]).astype(np.int64)
        lengths = np.diff(np.append(starts, len(members)))
        ops, products = _per_run(self.terms, starts, 1), _per_run(self.terms, starts, 2)
        out = [CtaWork(_rekey(self.key, self.block.index, members[int(s)]), self.unit * int(n),
                       defaultdict(int, {k: v[r] for k, v in ops.items()}),
                       defaultdict(int, {k: v[r] for k, v in products.items()}))
               for r, (s, n) in enumerate(zip(starts, lengths))]
        first = self.first
        if first is not None:
            head = out[0]
            if self.first_same and first.ops == head.ops and first.products == head.products:
                out[0] = CtaWork(first.key, first.count + head.count, first.ops, first.products)
            else:
                out.insert(0, first)
        return out


def _per_run(terms: dict, starts: np.ndarray, table: int) -> dict:
    """key -> [the work of the run beginning at each of ``starts``], exact Python ints."""
    out: dict = {}
    for term in terms.values():
        counts = term[0][starts].astype(object)
        for key, n in term[table].items():
            total = out.get(key)
            out[key] = n * counts if total is None else total + n * counts
    return {k: [int(x) for x in v] for k, v in out.items()}


def _rekey(key, first: int, member: int):
    """The key a member's thread block has: the group's key, its first index made ``member``'s."""
    if isinstance(key, tuple):
        return tuple(member if type(x) is int and x == first else x for x in key)
    return key


class CtaRecords(Sequence):
    """One head's thread-block records of a launch, in launch order: the ledger's
    entries, each :class:`AffineCtaWork` expanded into its :class:`CtaWork` records the
    first time they are read (a count run that never reads them pays nothing)."""

    def __init__(self, entries):
        self._entries = tuple(entries)
        self._records: tuple | None = None

    def _all(self) -> tuple:
        if self._records is None:
            self._records = tuple(r for e in self._entries for r in (e.expand() if e.affine else (e,)))
        return self._records

    def __getitem__(self, index):
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self):
        return iter(self._all())

    def __eq__(self, other) -> bool:
        return isinstance(other, (tuple, CtaRecords)) and tuple(self) == tuple(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"CtaRecords({list(self)!r})"

    @property
    def blocks(self) -> int:
        """Thread blocks in all (records' counts summed), without expanding."""
        return sum(e.count for e in self._entries)


@dataclass
class Ledger:
    """Counts accumulated while a schedule runs (all per head).

    Each access is recorded once, keyed by the kernel launch that made it; the totals over
    launches (``traffic``, ``ops``, ``ctas_by_kernel``) are derived from those tables.
    """

    #: (kernel, tensor, "read" | "write", per_kv_head) -> elements moved between HBM and
    #: on-chip memory: per query head, or per K/V head for the accesses made once per K/V
    #: head (GQA group reductions). Schedules name their kernels with ctx.kernel(...)
    traffic_by_kernel: dict = field(default_factory=lambda: defaultdict(int))
    #: (level a, level b) -> bytes crossing that link of the hierarchy, either way
    link_bytes: dict = field(default_factory=lambda: defaultdict(int))
    link_bytes_per_kv_head: dict = field(default_factory=lambda: defaultdict(int))
    kernel: str = "main"
    #: (kernel, kind) -> operations: "matmul" (FLOPs), "exp" (special-function ops),
    #: "elementwise" (other ops)
    ops_by_kernel: dict = field(default_factory=lambda: defaultdict(int))
    #: kernel -> [CtaWork, ...]: the work of each thread block of one head, in launch order
    #: (a grouped loop's identical thread blocks share one record with its count)
    cta_work: dict = field(default_factory=lambda: defaultdict(list))
    #: tensors whose HBM initialisation ("Initialize … in HBM") was counted
    init_counted: set = field(default_factory=set)

    def add_traffic(self, tensor: str, direction: str, elements: int, per_kv_head: bool = False) -> None:
        self.traffic_by_kernel[(self.kernel, tensor, direction, per_kv_head)] += elements

    def add_ops(self, kind: str, n: int) -> None:
        self.ops_by_kernel[(self.kernel, kind)] += n

    @property
    def ops(self) -> dict:
        """kind -> operations over all launches."""
        out: dict = defaultdict(int)
        for (_, kind), n in self.ops_by_kernel.items():
            out[kind] += n
        return out

    @property
    def ctas_by_kernel(self) -> dict:
        """kernel -> thread blocks launched (per head), from ctx.thread_block."""
        return {k: sum(w.count for w in works) for k, works in self.cta_work.items()}

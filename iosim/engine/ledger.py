"""The run's accounts: HBM traffic per tensor, bytes per memory link, and operations.

Every number is an exact integer *per head*; the report multiplies by B·H (or by B·H_k
for the once-per-K/V-head accesses of grouped-query attention) at the end, so the cost of
counting never depends on batch × heads.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field


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

    def _traffic(self, per_kv_head: bool) -> dict:
        out: dict = defaultdict(int)
        for (_, tensor, direction, per_kv), elements in self.traffic_by_kernel.items():
            if per_kv == per_kv_head:
                out[(tensor, direction)] += elements
        return out

    @property
    def traffic(self) -> dict:
        """(tensor, direction) -> elements per query head, over all launches."""
        return self._traffic(False)

    @property
    def traffic_per_kv_head(self) -> dict:
        """The same for the accesses made once per K/V head."""
        return self._traffic(True)

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

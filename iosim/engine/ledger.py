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
    """Counts accumulated while a schedule runs (all per head)."""

    #: (tensor, "read" | "write") -> elements moved between HBM and on-chip memory, per query head
    traffic: dict = field(default_factory=lambda: defaultdict(int))
    #: the same, for accesses made once per K/V head (GQA group reductions), per K/V head
    traffic_per_kv_head: dict = field(default_factory=lambda: defaultdict(int))
    #: (level a, level b) -> bytes crossing that link of the hierarchy, either way
    link_bytes: dict = field(default_factory=lambda: defaultdict(int))
    link_bytes_per_kv_head: dict = field(default_factory=lambda: defaultdict(int))
    #: "matmul" (FLOPs), "exp" (special-function ops), "elementwise" (other ops)
    ops: dict = field(default_factory=lambda: defaultdict(int))
    #: (kernel, tensor, direction, per_kv_head) -> elements: the same traffic split by the
    #: kernel launch that made it (schedules name their kernels with ctx.kernel(...))
    traffic_by_kernel: dict = field(default_factory=lambda: defaultdict(int))
    kernel: str = "main"
    #: kernel -> thread blocks launched (per head), from ctx.thread_block
    ctas_by_kernel: dict = field(default_factory=lambda: defaultdict(int))
    #: (kernel, kind) -> operations, the ops split by kernel launch
    ops_by_kernel: dict = field(default_factory=lambda: defaultdict(int))
    #: kernel -> [CtaWork, ...]: the work of each thread block of one head, in launch order
    #: (a grouped loop's identical thread blocks share one record with its count)
    cta_work: dict = field(default_factory=lambda: defaultdict(list))
    #: tensors whose HBM initialisation ("Initialize … in HBM") was counted
    init_counted: set = field(default_factory=set)

    def add_traffic(self, tensor: str, direction: str, elements: int, per_kv_head: bool = False) -> None:
        table = self.traffic_per_kv_head if per_kv_head else self.traffic
        table[(tensor, direction)] += elements
        self.traffic_by_kernel[(self.kernel, tensor, direction, per_kv_head)] += elements

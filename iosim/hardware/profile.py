"""Immutable values for a GPU's memory hierarchy, as the simulator sees it.

A :class:`HardwareProfile` is a small graph: nodes are memory :class:`Level` s (HBM, L2,
shared memory, registers), edges are :class:`Link` s with a bandwidth. FlashAttention's
IO analysis needs three facts from it: the SRAM one thread block may use (the paper's M,
``scratchpad.per_block_bytes``), the bandwidth of each hop between levels, and the peak
compute rates. Everything is in SI base units (bytes, bytes/s, FLOP/s); the YAML units
and the source of every number are kept beside it in :attr:`HardwareProfile.quantities`.

Profiles are built by :func:`iosim.hardware.load_profile`, which validates the YAML first;
the constructors below only check what would make the graph itself meaningless.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


from .units import UNITS, unit_kind

#: Roles a level can play. Capacities of dram/cache are per device; scratchpad/registers
#: are per SM (per CU on AMD) with a separate per-block limit.
ROLES = ("dram", "cache", "scratchpad", "registers")

#: Peak-rate keys of ``compute``: FLOP/s, except ``exp`` which counts exponentials per second.
COMPUTE_KEYS = ("tensor_fp16", "tensor_bf16", "tensor_fp8", "tensor_tf32", "fp32", "exp")

#: Keys of ``measured`` (rates that instructions reach on the device, from
#: benchmarks/microbench_rates.py, for the kernel time model) and the kind of unit each takes.
MEASURED_KEYS = {
    "mma_sync_fp16": "flops",   # mma.sync.m16n8k16, fp16 in, fp32 accumulate
    "wgmma_fp16": "flops",      # Hopper's wgmma, sustained (a large cuBLAS GEMM: benchmarks/gemm_rate.py)
    "shared_memory": "bandwidth",  # ldmatrix reads of shared memory
    "exp": "ops",               # ex2.approx.f32
    "fp32": "flops",            # fp32 FMA
    "dram_read": "bandwidth",
    "dram_write": "bandwidth",
    "copy": "bandwidth",        # a copy kernel's loads and stores together (16-byte accesses, full occupancy)
    "l2_read": "bandwidth",
    "launch": "time",           # an empty kernel's duration as Nsight Compute times it
    "read_write_floor": "time",  # a kernel that loads 2 KiB and stores it: launch + one DRAM round trip
    "code_fetch_free": "bytes",  # a flash-attn 2 forward's code that costs no fetch wait (cold, under ncu)
    "code_fetch": "bandwidth",   # the rate its code beyond that is fetched at, once a launch
}

# dtype -> compute keys to try, in order: an fp32 matmul runs on TF32 tensor cores if any.
_DTYPE_KEYS = {
    "fp16": ("tensor_fp16",),
    "bf16": ("tensor_bf16",),
    "fp8": ("tensor_fp8",),
    "fp32": ("tensor_tf32", "fp32"),
}


class FrozenMap(Mapping):
    """A read-only, hashable mapping that keeps insertion order (levels are listed outside-in)."""

    __slots__ = ("_data",)

    def __init__(self, items: Mapping | tuple = ()):
        self._data = dict(items)

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(tuple(self._data.items()))

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


@dataclass(frozen=True)
class Quantity:
    """One sourced number from a profile.

    ``value`` is in SI base units (bytes, bytes/s, FLOP/s, op/s, Hz; a bare number for
    counts); ``unit`` is the unit the YAML was written in ("KiB", "TB/s"; "" for counts),
    kept so messages can quote the file; ``source`` says where the number comes from and
    what kind of figure it is (vendor peak, derived, measured, proxy).
    """

    value: float
    unit: str
    source: str

    @property
    def as_written(self) -> str:
        """The value in its YAML unit, e.g. '228 KiB'."""
        kind = unit_kind(self.unit) if self.unit else None
        if kind is None:
            return f"{self.value:g}" + (f" {self.unit}" if self.unit else "")
        return f"{self.value / UNITS[kind][self.unit]:g} {self.unit}"


@dataclass(frozen=True)
class Level:
    """One memory level.

    ``role`` is what the simulator may use the level for: "dram" (HBM, where Q, K, V, O
    live), "cache" (L2 / Infinity Cache, transparent to the algorithm), "scratchpad"
    (shared memory / LDS, the paper's SRAM) or "registers".

    ``capacity_bytes`` is the whole device for dram/cache, and *per SM (CU)* for
    scratchpad/registers, because on-chip memory is private to an SM; it bounds how many
    blocks can be resident at once. ``per_block_bytes`` is what one thread block may use
    (CUDA's opt-in per-block limit; the FlashAttention paper's M in bytes); it is None
    for dram/cache.
    """

    name: str
    role: str
    capacity_bytes: int | None
    per_block_bytes: int | None
    description: str = ""
    #: a cache's partitions: 2 where each half of the SMs reads through its own half
    partitions: int = 1
    #: a partitioned cache's associativity where it is measured: each partition is sets of so
    #: many ways on hashed lines (iosim.models.cache.sets); None: a fully associative LRU
    ways: int | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"level {self.name!r}: role must be one of {ROLES}, got {self.role!r}")


@dataclass(frozen=True)
class Link:
    """An undirected connection between two levels, with its peak bandwidth in bytes/s.

    The bandwidth is the whole device's (summed over SMs for on-chip links), so a
    transfer of ``n`` bytes across it takes at least ``n / bandwidth_bytes_per_s`` s.
    """

    a: str
    b: str
    bandwidth_bytes_per_s: float
    source: str = ""


@dataclass(frozen=True)
class HardwareProfile:
    """A GPU as the IO simulator sees it: levels, links between them, peak compute.

    ``sm_count`` is the number of SMs (CUs on AMD); ``clock_hz`` the clock the profile's
    derived per-clock figures assume (None if unstated). ``levels`` maps level name to
    :class:`Level`, listed from DRAM inward. ``compute`` maps keys of
    :data:`COMPUTE_KEYS` to peak rates. ``quantities`` maps each YAML field path
    ("levels.smem.capacity_per_block", "links[0].bandwidth") to the :class:`Quantity`
    it was read from, so every number can be traced to its source. ``warnings`` lists
    the figures a profile marked ``allow_unusual: true`` has outside the plausible ranges.
    """

    name: str
    description: str
    vendor: str
    source_path: str
    sm_count: int
    clock_hz: float | None
    levels: Mapping[str, Level]
    links: tuple[Link, ...]
    compute: Mapping[str, Quantity] = field(default_factory=FrozenMap)
    #: rates measured on the device (keys of :data:`MEASURED_KEYS`); empty when none were
    measured: Mapping[str, Quantity] = field(default_factory=FrozenMap)
    quantities: Mapping[str, Quantity] = field(default_factory=FrozenMap)
    #: figures outside the plausible ranges that ``allow_unusual: true`` let through, one
    #: line each starting with the field path; empty for an ordinary profile
    warnings: tuple[str, ...] = ()
    _adjacent: dict = field(init=False, repr=False, compare=False)   # level -> {neighbour: Link}
    _paths: dict = field(init=False, repr=False, compare=False)
    _roles: dict = field(init=False, repr=False, compare=False)      # role -> its levels, outside-in
    _derived: dict = field(init=False, repr=False, compare=False)    # what properties found, once

    def __post_init__(self) -> None:
        # Freeze whatever mappings/sequences the caller passed, then build the graph once.
        for name in ("levels", "compute", "measured", "quantities"):
            object.__setattr__(self, name, FrozenMap(getattr(self, name)))
        object.__setattr__(self, "links", tuple(self.links))
        object.__setattr__(self, "warnings", tuple(self.warnings))
        adjacent: dict = {name: {} for name in self.levels}
        for link in self.links:
            for end in (link.a, link.b):
                if end not in self.levels:
                    raise ValueError(f"link {link.a}-{link.b}: unknown level {end!r}")
            adjacent[link.a][link.b] = adjacent[link.b][link.a] = link
        # Every load and store asks for a path; the profile is immutable, so each is found once.
        object.__setattr__(self, "_paths", {})
        object.__setattr__(self, "_adjacent", adjacent)
        # Every count asks for the levels by role; they are found once.
        roles: dict = {}
        for lv in self.levels.values():
            roles.setdefault(lv.role, []).append(lv)
        object.__setattr__(self, "_roles", {role: tuple(found) for role, found in roles.items()})
        object.__setattr__(self, "_derived", {})

    @property
    def graph(self):
        """The hierarchy as a (frozen) networkx graph: nodes carry ``level``, edges
        ``bandwidth_bytes_per_s`` and ``link``. (Built on request: the profile itself walks
        its few levels without networkx, whose import alone took half a second of every
        command's start.)"""
        import networkx as nx

        graph = nx.Graph()
        for level in self.levels.values():
            graph.add_node(level.name, level=level)
        for link in self.links:
            graph.add_edge(link.a, link.b, bandwidth_bytes_per_s=link.bandwidth_bytes_per_s, link=link)
        return nx.freeze(graph)

    def _walk(self, src: str) -> dict[str, tuple[int, str | None]]:
        """Breadth-first from ``src``: level -> (hops, the level before it on a shortest path)."""
        seen = {src: (0, None)}
        frontier = [src]
        while frontier:
            nxt = []
            for u in frontier:
                for v in self._adjacent[u]:
                    if v not in seen:
                        seen[v] = (seen[u][0] + 1, u)
                        nxt.append(v)
            frontier = nxt
        return seen

    def level(self, role: str) -> Level:
        """The unique level with ``role``; ValueError if there is none or several."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
        found = self._roles.get(role, ())
        if len(found) != 1:
            names = ", ".join(lv.name for lv in found) or "none"
            raise ValueError(f"profile {self.name!r} has {len(found)} {role!r} levels ({names})")
        return found[0]

    @property
    def dram(self) -> Level:
        """Off-chip memory (HBM), where attention's inputs and outputs live."""
        return self.level("dram")

    @property
    def scratchpad(self) -> Level:
        """Shared memory / LDS: the paper's on-chip SRAM."""
        return self.level("scratchpad")

    @property
    def registers(self) -> Level | None:
        """The register file, or None if the profile does not model one."""
        found = self._roles.get("registers", ())
        return found[0] if found else None

    @property
    def caches(self) -> tuple[Level, ...]:
        """Every cache level, ordered from DRAM inward (by hops from the dram level)."""
        if "caches" not in self._derived:     # found once (the profile is immutable)
            hops = {name: h for name, (h, _) in self._walk(self.dram.name).items()}
            found = self._roles.get("cache", ())
            self._derived["caches"] = tuple(sorted(found, key=lambda lv: hops.get(lv.name, len(self.levels))))
        return self._derived["caches"]

    @property
    def cache(self) -> Level | None:
        """The cache next to the SMs (the L2; on MI300X the L2, not the Infinity Cache),
        or None if the profile has no cache."""
        caches = self.caches
        return caches[-1] if caches else None

    def bandwidth(self, a: str | None, b: str | None) -> float | None:
        """Bytes/s of the link between levels ``a`` and ``b``, or None if there is none."""
        link = self._adjacent.get(a, {}).get(b) if a is not None and b is not None else None
        return None if link is None else link.bandwidth_bytes_per_s

    def path(self, src: str, dst: str) -> list[Link]:
        """The links along the shortest path from level ``src`` to level ``dst``."""
        for end in (src, dst):
            if end not in self.levels:
                raise ValueError(f"unknown level {end!r}; levels are {', '.join(self.levels)}")
        if (src, dst) not in self._paths:
            walk = self._walk(src)
            if dst not in walk:
                raise ValueError(f"no path from level {src!r} to level {dst!r}")
            links, node = [], dst
            while walk[node][1] is not None:
                before = walk[node][1]
                links.append(self._adjacent[before][node])
                node = before
            self._paths[src, dst] = tuple(reversed(links))
        return list(self._paths[src, dst])

    def tensor_flops_per_s(self, dtype: str) -> float | None:
        """Peak matmul FLOP/s for inputs of ``dtype`` (fp32/fp16/bf16/fp8), or None if
        the profile has no figure. fp32 uses TF32 tensor cores when the profile has them."""
        if dtype not in _DTYPE_KEYS:
            raise ValueError(f"unknown dtype {dtype!r}; expected one of {', '.join(_DTYPE_KEYS)}")
        for key in _DTYPE_KEYS[dtype]:
            if key in self.compute:
                return self.compute[key].value
        return None

    def summary_row(self) -> dict:
        """Key figures for a one-line listing (``iosim profiles``), in display units."""
        dram, smem, cache = self.dram, self.scratchpad, self.cache
        dram_bw = max((l.bandwidth_bytes_per_s for l in self.links if dram.name in (l.a, l.b)), default=None)
        fp16 = self.compute.get("tensor_fp16")
        return {
            "name": self.name,
            "description": self.description,
            "hbm_gb": dram.capacity_bytes / 1e9 if dram.capacity_bytes else None,
            "hbm_tb_s": dram_bw / 1e12 if dram_bw else None,
            "l2_mb": cache.capacity_bytes / 1e6 if cache and cache.capacity_bytes else None,
            "smem_per_block_kib": smem.per_block_bytes / 1024 if smem.per_block_bytes else None,
            "smem_per_sm_kib": smem.capacity_bytes / 1024 if smem.capacity_bytes else None,
            "sm_count": self.sm_count,
            "tensor_fp16_tflops": fp16.value / 1e12 if fp16 else None,
        }

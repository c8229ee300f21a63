"""What is resident on chip, where, and whether it fits.

Two placements are built in (``Residency``):

* ``kernel`` (default) — as the real FlashAttention kernels do: tiles loaded from HBM
  (Q_i, K_j, V_j) sit in shared memory (the profile's *scratchpad* level) in the input
  dtype; the score tile S_ij / P_ij, the output accumulator O_i and the row statistics
  m_i, ℓ_i live in *registers*, in fp32. Only shared memory is a hard limit: a schedule
  whose tiles exceed the per-block shared memory fails with :class:`CapacityError`.
  Registers are tracked and reported (``fits: false`` means the kernel would spill).
  Under this placement the paper's default blocks B_c = ⌈M/4d⌉, B_r = min(B_c, d) always
  fit: Q_i + K_j + V_j ≤ M/4 + M/2 elements.
* ``sram`` — the paper's abstract machine: every tile, the scores and the accumulator
  included, counts against one SRAM of M elements (statistics in fp32). This shows why
  the kernels keep S and O in registers: with the paper's default blocks the tiles
  (≈ 5M/4 elements) overflow.

A tile lives from the moment it is loaded or kept until the end of the loop iteration
that made it resident; keeping a tile under a name that is already resident replaces it
in place (P_ij overwrites S_ij, the updated O_i overwrites the old one).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..dtypes import ACCUM_DTYPE, width
from ..errors import CapacityError, ScheduleError, require_choice

#: role -> (level role, dtype or None for the tensor's own dtype)
PLACEMENTS: dict[str, dict[str, tuple[str, str | None]]] = {
    "kernel": {
        "input": ("scratchpad", None),
        "output": ("registers", ACCUM_DTYPE),
        "scores": ("registers", ACCUM_DTYPE),
        "stats": ("registers", ACCUM_DTYPE),
    },
    "sram": {
        "input": ("scratchpad", None),
        "output": ("scratchpad", None),
        "scores": ("scratchpad", None),
        "stats": ("scratchpad", ACCUM_DTYPE),
    },
}


@dataclass
class _Entry:
    name: str
    level: str
    nbytes: int
    description: str


@dataclass
class LevelUse:
    """Occupancy of one on-chip level: current bytes, peak bytes, capacity."""

    level: str
    capacity_bytes: int | None
    enforced: bool
    current: int = 0
    peak: int = 0
    peak_tiles: list = field(default_factory=list)


class ResidencyTracker:
    """Scoped bookkeeping of resident tiles, with a capacity check on every change."""

    def __init__(self, placement: str, level_names: dict[str, str], capacities: dict[str, int | None], enforced: set[str]):
        require_choice("residency", placement, PLACEMENTS, ScheduleError)
        self.placement = PLACEMENTS[placement]
        self.level_names = level_names  # role -> level name in the profile
        self.use = {
            role: LevelUse(level_names[role], capacities.get(role), role in enforced)
            for role in level_names
        }
        self._scopes: list[dict[str, _Entry]] = [{}]

    def place(self, role: str, tensor_dtype: str) -> tuple[str, str]:
        """The (level role, dtype) a tile of this role occupies."""
        level_role, dtype = self.placement[role]
        return level_role, dtype or tensor_dtype

    def push(self) -> None:
        self._scopes.append({})

    def pop(self) -> None:
        for entry in self._scopes.pop().values():
            self.use[entry.level].current -= entry.nbytes

    def keep(self, name: str, level_role: str, elements: int, dtype: str) -> None:
        """Make tile ``name`` resident (or resize it in place if it already is)."""
        nbytes = elements * width(dtype)
        entry = _Entry(name, level_role, nbytes, f"{elements} × {dtype}")
        for scope in reversed(self._scopes):
            if name in scope:
                old = scope[name]
                self.use[old.level].current -= old.nbytes
                scope[name] = entry
                break
        else:
            self._scopes[-1][name] = entry
        use = self.use[level_role]
        use.current += nbytes
        if use.current > use.peak:
            use.peak = use.current
            use.peak_tiles = self._listing(level_role)
        if use.enforced and use.capacity_bytes is not None and use.current > use.capacity_bytes:
            tiles = "; ".join(f"{n} {b:,} B ({d})" for n, b, d in self._listing(level_role))
            raise CapacityError(
                f"on-chip tiles do not fit in {use.level} ({level_role}): "
                f"{use.current:,} bytes resident > capacity {use.capacity_bytes:,} bytes per thread block. "
                f"Resident: {tiles}.",
                advice="Choose smaller blocks (block_q, block_kv).",
            )

    def _listing(self, level_role: str) -> list[tuple[str, int, str]]:
        return [
            (e.name, e.nbytes, e.description)
            for scope in self._scopes
            for e in scope.values()
            if e.level == level_role
        ]

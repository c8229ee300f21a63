"""One (B_r, B_c) of an exploration, counted and judged, and the objectives that rank it.

A candidate's HBM bytes are exact (the engine counts them). Its time and its DRAM bytes
are the L2 model's when the L2 is modelled, and the model plays each tile's request stream
(too slow for every tile of a grid), so a candidate not replayed carries an interval instead: ``time_min_s`` ≤ time ≤
``time_max_s``, ``dram_min_bytes`` ≤ DRAM bytes ≤ ``dram_max_bytes`` (see
:mod:`.measure` for the bounds). Where the two ends are equal the value is exact and
equals what :func:`iosim.simulate` predicts for that tile.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

#: the objectives, and the names they had before (still accepted)
OBJECTIVES = ("time", "bytes", "dram")
OBJECTIVE_ALIASES = {"hbm-bytes": "bytes"}


def canonical_objective(name: str) -> str:
    """``hbm-bytes`` → ``bytes``; other names unchanged."""
    return OBJECTIVE_ALIASES.get(name, name)


@dataclass(frozen=True)
class Candidate:
    """One (B_r, B_c), counted and judged."""

    block_q: int
    block_kv: int
    sram_need_bytes: int
    sram_capacity_bytes: int
    registers_bytes: int
    registers_capacity_bytes: int | None
    hbm_read_bytes: int
    hbm_write_bytes: int
    time_min_s: float
    time_max_s: float
    bound: str                      # what bounds the time (meaningful where the time is exact)
    dram_min_bytes: int | None = None   # None: the L2 is not modelled
    dram_max_bytes: int | None = None
    replayed: bool = False          # its accesses were played through the L2 model
    sources: tuple = ("grid",)      # "grid", "user", "paper", "kernel"
    steps_per_head: int = 0         # tile steps T_r × T_c over the launches (what a replay costs)
    rows_note: str = ""             # why a real kernel's warps cannot split its rows ("": they can)

    @property
    def feasible(self) -> bool:
        return self.sram_need_bytes <= self.sram_capacity_bytes

    @property
    def registers_fit(self) -> bool:
        return self.registers_capacity_bytes is None or self.registers_bytes <= self.registers_capacity_bytes

    def eligible(self, allow_spill: bool) -> bool:
        """Whether it may be chosen: it fits in shared memory, and in the register file
        unless ``allow_spill``, and a real kernel's warps can split its rows."""
        return self.feasible and (allow_spill or self.registers_fit) and not self.rows_note

    @property
    def hbm_total_bytes(self) -> int:
        return self.hbm_read_bytes + self.hbm_write_bytes

    @property
    def time_exact(self) -> bool:
        return self.time_min_s == self.time_max_s

    @property
    def predicted_s(self) -> float | None:
        """The predicted time where exact (what ``iosim simulate`` prints for this tile), else None."""
        return self.time_min_s if self.time_exact else None

    @property
    def dram_bytes(self) -> int | None:
        """DRAM bytes from the L2 model (read + written back + left dirty) where replayed, else None."""
        return self.dram_min_bytes if self.dram_min_bytes is not None and self.dram_min_bytes == self.dram_max_bytes \
            else None

    @property
    def reason(self) -> str:
        """Why the candidate is infeasible or would spill; "" when it fits."""
        parts = []
        if not self.feasible:
            parts.append(f"shared memory: needs {self.sram_need_bytes:,} B > {self.sram_capacity_bytes:,} B per block")
        if not self.registers_fit:
            parts.append(f"registers: needs {self.registers_bytes:,} B > {self.registers_capacity_bytes:,} B "
                         "per block (would spill)")
        if self.rows_note:
            parts.append(self.rows_note)
        return "; ".join(parts)

    def value(self, objective: str) -> tuple:
        """(lowest, highest) possible value of ``objective``; equal when exact."""
        if objective == "time":
            return self.time_min_s, self.time_max_s
        if objective == "dram":
            return self.dram_min_bytes, self.dram_max_bytes
        return self.hbm_total_bytes, self.hbm_total_bytes

    def exact(self, objective: str) -> bool:
        lo, hi = self.value(objective)
        return lo == hi

    def rank_key(self, objective: str) -> tuple:
        """Sort key: the objective (its bounds), then the other measure (time for bytes and
        dram, bytes for time), the smaller shared-memory need, the larger tile."""
        other = self.hbm_total_bytes if objective == "time" else self.time_min_s
        return self.value(objective) + (other, self.sram_need_bytes, -self.block_q, -self.block_kv)

    def squareness(self) -> Fraction:
        """The longer side over the shorter, exactly: 1 for a square tile. It orders tiles as |log2(B_r / B_c)|
        does, without the floating-point ulp that made 192 × 144 look squarer than 192 × 256."""
        return Fraction(max(self.block_q, self.block_kv), min(self.block_q, self.block_kv))

    def to_dict(self) -> dict:
        return {
            "block_q": self.block_q, "block_kv": self.block_kv, "feasible": self.feasible, "reason": self.reason,
            "registers_fit": self.registers_fit,
            "sram_need_bytes": self.sram_need_bytes, "sram_capacity_bytes": self.sram_capacity_bytes,
            "registers_bytes": self.registers_bytes, "registers_capacity_bytes": self.registers_capacity_bytes,
            "hbm_read_bytes": self.hbm_read_bytes, "hbm_write_bytes": self.hbm_write_bytes,
            "hbm_total_bytes": self.hbm_total_bytes, "predicted_s": self.predicted_s,
            "predicted_s_min": self.time_min_s, "predicted_s_max": self.time_max_s,
            "bound": self.bound if self.time_exact else None,
            "dram_bytes": self.dram_bytes, "dram_bytes_min": self.dram_min_bytes,
            "dram_bytes_max": self.dram_max_bytes, "replayed": self.replayed, "steps_per_head": self.steps_per_head,
            "sources": list(self.sources),
        }


__all__ = ["Candidate", "OBJECTIVES", "OBJECTIVE_ALIASES", "canonical_objective"]

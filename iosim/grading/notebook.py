"""What an assignment's notebook calls (``notebooks/assignment-*.py``): the command line as
typed in a terminal, the student's file read afresh after every edit, and a local try of
it — the student's schedule beside the built-in one, or the student's blocks counted.

Nothing here grades: ``iosim grade`` does, in a sandbox (:mod:`iosim.grading.grader`).
"""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import numpy as np

from ..run import Options, simulate
from ..workload.inputs import random_inputs
from ..workload.reference import reference_attention


def iosim(*args) -> int:
    """``iosim ARGS`` as typed in a terminal (with this Python): prints what it prints and
    returns its exit code."""
    done = subprocess.run([sys.executable, "-m", "iosim", *map(str, args)], capture_output=True, text=True)
    print(done.stdout + done.stderr, end="")
    return done.returncode


def load_fresh(path, name: str):
    """The function ``name`` of the Python file at ``path``, the file re-read every time."""
    path = pathlib.Path(path)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def try_schedule(path, function: str, builtin: str, problem, hw: str = "toy", seed: int = 0) -> None:
    """Run the student's ``function`` from ``path`` in numeric mode on random inputs, the
    registers enforced as the grader does, and print how far its O is from the float64
    reference and its HBM bytes beside the built-in ``builtin``'s, tensor by tensor."""
    inputs = random_inputs(problem, seed=seed)
    yours = simulate(hw, load_fresh(path, function), problem, mode="numeric", inputs=inputs,
                     options=Options(enforce_registers=True))
    theirs = simulate(hw, builtin, problem)
    print(f"N_q={problem.seq_len_q} N_kv={problem.seq_len_kv} d={problem.head_dim} causal={problem.causal}: "
          f"blocks {yours.blocks.block_q} × {yours.blocks.block_kv}")
    reference = reference_attention(inputs["Q"], inputs["K"], inputs["V"], causal=problem.causal)
    stats = " and compares ℓ and m too" if {"l", "m"} <= set(theirs.tensors) else ""
    if "O" in yours.outputs:
        print(f"O differs from the reference by {np.abs(yours.outputs['O'] - reference).max():.1e} "
              f"(the grader allows 1e-9{',' if stats else ''}{stats})")
    else:
        print("O is never written to HBM")
    print(f"{'tensor':8}{'direction':>10}{'yours (B)':>12}{builtin + ' (B)':>12}")
    for name in [*theirs.tensors, *(n for n in yours.tensors if n not in theirs.tensors)]:
        for direction in ("read", "write"):
            mine, want = (getattr(run.tensors[name], f"{direction}_bytes") if name in run.tensors else 0
                          for run in (yours, theirs))
            if mine or want:
                print(f"{name:8}{direction:>10}{mine:>12,}{want:>12,}{'' if mine == want else '   differs'}")
    print(f"on chip: shared memory {yours.sram.peak_bytes:,} of {yours.sram.capacity_bytes:,} B, "
          f"registers {yours.registers.peak_bytes:,} of {yours.registers.capacity_bytes:,} B")


def try_blocks(path, hw: str, problem) -> None:
    """Ask the student's ``choose_blocks`` in ``path`` for blocks and print the built-in
    ``fa2``'s HBM bytes with them beside the paper's blocks', and whether the tiles fit."""
    block_q, block_kv = load_fresh(path, "choose_blocks")(hw, problem)
    yours = simulate(hw, "fa2", problem, blocks=(block_q, block_kv))
    paper = simulate(hw, "fa2", problem)
    print(f"{hw}, N={problem.seq_len_q}, d={problem.head_dim}: your blocks {block_q} × {block_kv} move "
          f"{yours.hbm.total_bytes:,} B; the paper's {paper.blocks.block_q} × {paper.blocks.block_kv} "
          f"{paper.hbm.total_bytes:,} B ({yours.hbm.total_bytes / paper.hbm.total_bytes:.2f}×)")
    for label, level in (("shared memory", yours.sram), ("registers", yours.registers)):
        fits = "fits" if level.peak_bytes <= level.capacity_bytes else "DOES NOT FIT"
        print(f"  {label}: peak {level.peak_bytes:,} of {level.capacity_bytes:,} B, {fits}")

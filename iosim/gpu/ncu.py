"""Measure the kernels' memory traffic with Nsight Compute (``ncu``).

The kernels' own counters report what the algorithm *requests*; ncu reports what the memory
system *did*. The two differ for understood reasons: global loads issued with ``cp.async``
(the tensor-core kernels) are LDGSTS, not LD, instructions; the L2 cache serves the many
re-reads of K/V (FA2) or Q/O (FA1) tiles that other blocks fetched moments earlier, so DRAM
bytes fall far below the requested bytes (docs/spec/algorithms.md §10, "Real-kernel counts ignore L2").

ncu runs ``python -m iosim.gpu.ncu_target`` (one uninstrumented launch of one algorithm) with
``--clock-control none`` (the card's clocks are left as found) and sums each metric over the
algorithm's kernels (three for ``standard``).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from ..errors import DependencyError, IosimError
from .cupy_kernels import Config

#: The metrics issue 4 names, with how each is turned into bytes.
METRICS = {
    "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum": ("global_load_bytes", 1),
    "lts__t_sectors_srcunit_tex_op_read.sum": ("l2_read_bytes_from_sm", 32),  # 32-byte sectors
    "dram__bytes_read.sum": ("dram_read_bytes", 1),
    "dram__bytes_write.sum": ("dram_write_bytes", 1),
}
#: Asked for too when this ncu knows them (seen on the H200's ncu 2025.3): the bytes the
#: executed instructions asked for — LD, LDGSTS (cp.async) and ST — which is what the kernels'
#: own counters count, and the bytes the L1 passed on for global stores.
EXTRA_METRICS = {
    "smsp__sass_data_bytes_mem_global_op_ld.sum": ("sass_ld_bytes", 1),
    "smsp__sass_data_bytes_mem_global_op_ldgsts.sum": ("sass_ldgsts_bytes", 1),
    "smsp__sass_data_bytes_mem_global_op_st.sum": ("sass_st_bytes", 1),
    "l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum": ("global_store_bytes", 1),
}
KERNEL_REGEX = "regex:(fa1_generic|fa2_generic|fa2_mma|std_qk_generic|std_qk_mma|std_softmax|std_pv_generic|std_pv_mma)"


def find_ncu() -> str:
    path = shutil.which("ncu")
    if path is None:
        for candidate in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"):
            if os.path.exists(candidate):
                return candidate
        raise DependencyError(
            "--ncu needs NVIDIA Nsight Compute (`ncu`) on PATH; it ships with the CUDA toolkit "
            "(or install Nsight Compute separately)."
        )
    return path


def _number(text: str) -> float:
    return float(text.replace(",", "").strip() or "nan")


def parse_csv(text: str) -> dict[str, float]:
    """Sum each metric of ncu's ``--csv --print-units base`` output over all kernels."""
    return sum_metrics(read_launches(text))


def sum_metrics(launches: list[dict]) -> dict[str, float]:
    """Each metric summed over ``launches`` (dicts of :func:`read_launches`)."""
    totals: dict[str, float] = {}
    for launch in launches:
        for name, value in launch["metrics"].items():
            totals[name] = totals.get(name, 0.0) + value
    return totals


def raw_exists(path: str) -> bool:
    """Whether a committed raw file is there, as written or gzipped (``path`` + ".gz")."""
    return os.path.exists(path) or os.path.exists(path + ".gz")


def read_raw(path: str) -> str:
    """A committed raw file's text: ``path``, or ``path`` + ".gz" where the file was committed gzipped (the
    large Nsight Compute CSVs are, to keep the checkout small); a path ending in .gz is read gzipped."""
    if path.endswith(".gz"):
        path = path[:-3]
    elif os.path.exists(path):
        with open(path, errors="replace") as f:
            return f.read()
    with gzip.open(path + ".gz", "rt", errors="replace") as f:
        return f.read()


def read_launches(text: str) -> list[dict]:
    """One dict per kernel launch of ncu's ``--csv --print-units base`` output, in launch
    order: ``name`` (the kernel's full name), ``grid``, ``block`` and ``metrics`` {name: value}."""
    start = text.find('"ID"')
    if start < 0:
        raise IosimError(f"ncu printed no metric table:\n{text[-2000:]}")
    launches: dict[str, dict] = {}
    for row in csv.DictReader(io.StringIO(text[start:])):
        if not row.get("Metric Name"):
            continue
        entry = launches.setdefault(row["ID"], {"name": row["Kernel Name"], "grid": row.get("Grid Size", ""),
                                                "block": row.get("Block Size", ""), "metrics": {}})
        try:
            entry["metrics"][row["Metric Name"]] = _number(row.get("Metric Value", ""))
        except ValueError:
            continue
    return list(launches.values())


def cupy_groups(raw_dir: str):
    """The configs of a benchmarks/cupy_ncu.py run saved in ``raw_dir`` (cupy_configs.json and
    cupy.csv), in launch order: ``(cfg, launches)``, one launch per name in ``cfg["kernels"]``;
    stops at the first config that ncu did not finish (its time ran out)."""
    with open(os.path.join(raw_dir, "cupy_configs.json")) as f:
        meta = json.load(f)
    with open(os.path.join(raw_dir, "cupy.csv")) as f:
        launches = read_launches(f.read())
    at = 0
    for cfg in meta["grid"]:
        mine = launches[at:at + len(cfg["kernels"])]
        at += len(cfg["kernels"])
        if len(mine) < len(cfg["kernels"]):
            return
        yield cfg, mine


@dataclass(frozen=True)
class Profiled:
    """What one :func:`profile` run gave: ncu's exit status, the metric CSV it wrote to its
    log file ("" where it wrote none), and what ncu and the target printed."""

    args: list[str]
    returncode: int
    log: str
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        """ncu exited 0 and wrote a metric table."""
        return self.returncode == 0 and '"ID"' in self.log


def profile(module: str, spec_json: str, kernel_filter: str, metrics: list[str], extra: tuple[str, ...] = (),
            ncu: str | None = None) -> Profiled:
    """Run ``python -m module spec_json`` under ``ncu --clock-control none`` (this repository
    first on PYTHONPATH), profiling the kernels whose names match ``kernel_filter`` for
    ``metrics``; ``extra`` are more ncu options (after ``--clock-control none``)."""
    ncu = ncu or find_ncu()
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "ncu.csv")
        cmd = [ncu, "--clock-control", "none", *extra, "--csv", "--print-units", "base",
               "--kernel-name", kernel_filter, "--metrics", ",".join(metrics), "--log-file", log,
               sys.executable, "-m", module, spec_json]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        text = open(log, encoding="utf-8").read() if os.path.exists(log) else ""
    return Profiled(cmd, done.returncode, text, done.stdout, done.stderr)


def _run(ncu: str, metrics: list[str], cfg: Config, seed: int) -> Profiled:
    spec = json.dumps({**cfg.__dict__, "seed": seed})
    return profile("iosim.gpu.ncu_target", spec, KERNEL_REGEX, metrics, ("--target-processes", "all"), ncu=ncu)


def measure(cfg: Config, seed: int = 0) -> dict[str, float]:
    """Bytes measured by ncu for one launch of ``cfg``, keyed by the names in METRICS."""
    ncu = find_ncu()
    wanted = list(METRICS) + list(EXTRA_METRICS)
    done = _run(ncu, wanted, cfg, seed)
    if not done.ok:  # an older ncu without the extras
        wanted = list(METRICS)
        done = _run(ncu, wanted, cfg, seed)
    if not done.ok:
        raise IosimError(f"ncu failed (exit {done.returncode}):\n{(done.stdout + done.stderr + done.log)[-3000:]}")
    totals = parse_csv(done.log)
    table = {**METRICS, **EXTRA_METRICS}
    return {table[m][0]: totals[m] * table[m][1] for m in wanted if m in totals}

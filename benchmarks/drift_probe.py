"""Do a causal forward's thread blocks stay in lockstep on the H200? iosim's own tensor-core FA2
kernel, timed block by block and measured with Nsight Compute (device machine; the summary
runs anywhere). docs/validation/2026-12-04-s29-heads.md says why.

iosim's L2 model plays the resident blocks in lockstep. iosim's kernel walks its key blocks
upwards from 0, so every query block of a head reads K_j and V_j at its j-th step: in lockstep
the blocks of one head read each tile within a step of each other and the model predicts Q, K
and V read from DRAM once (``predicted`` below). What a causal launch reads beyond that is what
the blocks' drift costs. Built with ``-DIOSIM_STAMPS`` (``iosim/gpu/cuda/common.cuh``) thread 0 of
each block records its start, end and SM; the measured build is the plain one.

    PYTHONPATH=$PWD python3 benchmarks/drift_probe.py --out DIR     # on the H200: ncu, then the stamps
    python benchmarks/drift_probe.py --summary DIR

Writes DIR/drift.csv (ncu, one launch per config in CONFIGS order), DIR/configs.json and
DIR/stamps.npz (per config and repeat: start ns, end ns, SM of every block in launch order).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

#: fa2 on the tensor cores, fp16: the grid of docs/validation/2026-11-29-cupy-ncu/ (64 × 64, upwards) at
#: many heads, then 128 × 64 walked downwards as flash-attn 2's d = 128 forward does (-DIOSIM_DESCENDING)
CONFIGS = ([dict(seq_len=n, head_dim=d, heads_total=h, causal=c, block_q=64, block_kv=64, descending=False)
            for n, d, h, c in ((4096, 128, 128, True), (4096, 128, 128, False), (4096, 64, 128, True),
                               (2048, 128, 256, True), (8192, 128, 32, True), (4096, 128, 8, True))]
           + [dict(seq_len=n, head_dim=128, heads_total=h, causal=c, block_q=128, block_kv=64, descending=True)
              for n, h, c in ((4096, 128, True), (2048, 256, True), (8192, 32, True), (4096, 8, True),
                              (4096, 128, False), (16384, 8, True))])
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
           "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"]
REPEATS = 3


def config(spec: dict):
    from iosim.gpu.cupy_kernels import make_config
    return make_config("fa2", dtype="fp16", **{k: v for k, v in spec.items() if k != "descending"})


def launcher(spec: dict, stamps: bool):
    """(launch(), the stamps buffer or None, blocks) of iosim's fa2_mma for ``spec``, built with the
    walk it names and, with ``stamps``, -DIOSIM_STAMPS."""
    import cupy

    from iosim.gpu import build, numerics
    from iosim.gpu.cupy_kernels import Attention
    cfg = config(spec)
    q, k, v = (cupy.asarray(x) for x in numerics.make_inputs(cfg.heads_total, cfg.seq_len, cfg.head_dim, "fp16", 0))
    att = Attention(cfg, q, k, v, count=False)
    (ln,) = att.plan
    flags = (("-DIOSIM_STAMPS",) if stamps else ()) + (("-DIOSIM_DESCENDING",) if spec["descending"] else ())
    module = cupy.RawModule(code=build.source(), options=build.BASE_OPTIONS + flags, name_expressions=[ln.name])
    kern = module.get_function(ln.name)
    kern.max_dynamic_shared_size_bytes = max(ln.smem_bytes, 1)
    blocks = int(np.prod(ln.grid))
    buf = cupy.zeros(3 * blocks, dtype=cupy.uint64) if stamps else None
    if stamps:
        cupy.ndarray((1,), cupy.uint64, module.get_global("iosim_stamps"))[0] = buf.data.ptr
    att.kernels = [kern]

    def launch():
        att.launch()
        cupy.cuda.Device().synchronize()
    return launch, buf, blocks


def run_target() -> None:
    import cupy
    for spec in CONFIGS:
        launch, _, _ = launcher(spec, stamps=False)
        launch()
        cupy.get_default_memory_pool().free_all_blocks()


def stamped(spec: dict, flush, repeats: int = REPEATS) -> list:
    """``repeats`` launches of the stamped build: per launch an array (blocks, 3) of start, end, SM."""
    launch, buf, blocks = launcher(spec, stamps=True)
    out = []
    for _ in range(repeats):
        flush()
        launch()
        out.append(buf.get().reshape(blocks, 3))
    return out


def measure_stamps(out_dir: str, configs: list = CONFIGS, repeats: int = REPEATS) -> None:
    import cupy
    scratch = cupy.empty(256 * 2 ** 20, dtype=cupy.uint8)

    def flush():
        scratch.fill(1)                     # 256 MB through the L2 before each launch
    arrays = {}
    for i, spec in enumerate(configs):
        for r, a in enumerate(stamped(spec, flush, repeats)):
            arrays[f"c{i}_r{r}"] = a
        cupy.get_default_memory_pool().free_all_blocks()
    np.savez_compressed(os.path.join(out_dir, "stamps.npz"), **arrays)


def steps(spec: dict) -> np.ndarray:
    """Key-block steps of every block in launch order (grid (T_r, B·H), x fastest)."""
    from l2_drift_sketch import blocks
    return blocks(spec["seq_len"], spec["block_q"], spec["block_kv"], spec["heads_total"], spec["causal"])[1]


def drift_table(a: np.ndarray, spec: dict) -> dict:
    """What the stamps say of one launch: dispatch order, and how far blocks of equal work part."""
    start, end = a[:, 0].astype(np.float64), a[:, 1].astype(np.float64)
    t0 = start.min()
    start, end = start - t0, end - t0
    s = steps(spec)
    inversions = float(np.mean(np.diff(start) < -1000))            # a later block started > 1 µs earlier
    rate = (end - start) / np.maximum(s, 1)                           # ns a step
    later = start > np.quantile(start, 0.25)                          # past the first waves
    cv = [np.std(rate[later & (s == k)]) / np.mean(rate[later & (s == k)])
          for k in np.unique(s) if k >= 8 and np.sum(later & (s == k)) >= 20]
    order = np.argsort(np.r_[start, end], kind="stable")
    at_once = int(np.cumsum(np.r_[np.ones(len(start)), -np.ones(len(end))][order]).max())
    return {"blocks": len(s), "span_us": end.max() / 1e3, "start_inversions": inversions, "at_once": at_once,
            "step_ns_median": float(np.median(rate[s >= 8])), "step_cv_median": float(np.median(cv)) if cv else None,
            "sms": int(len(np.unique(a[:, 2])))}


def simulation(spec: dict, registers: bool = True):
    """A call of iosim's L2 model of the launch (returns its Result), with the occupancy
    ``cupy_kernels.occupancy`` gives (the compiled kernel's registers), or, not ``registers``, by
    shared memory and threads alone."""
    from iosim import Options, Problem, load_profile, simulate
    from iosim.gpu.cupy_kernels import occupancy
    from iosim.schedules.fa2 import fa2_forward

    def walk(ctx):
        fa2_forward(ctx, kv_descending=spec["descending"])
    profile = load_profile("h200")
    occ = occupancy(profile, config(spec))
    if not registers:
        occ.pop("registers_per_thread", None)
    problem = Problem(seq_len=spec["seq_len"], head_dim=spec["head_dim"], heads=spec["heads_total"],
                      causal=spec["causal"])
    return lambda: simulate(profile, walk, problem, blocks=(spec["block_q"], spec["block_kv"]),
                            options=Options(cache=True, **occ))


def predicted(spec: dict, registers: bool = True) -> float:
    """iosim's DRAM reads of the launch (:func:`simulation`)."""
    return simulation(spec, registers)().cache.total.dram_read_bytes


def walk_label(spec: dict) -> str:
    """A config's tile and walk, as the tables name them: "128 × 64, down"."""
    return f"{spec['block_q']} × {spec['block_kv']}, {'down' if spec['descending'] else 'up'}"


def summary(raw_dir: str) -> str:
    from iosim.gpu.ncu import read_launches
    with open(os.path.join(raw_dir, "drift.csv")) as f:
        launches = read_launches(f.read())
    stamps = np.load(os.path.join(raw_dir, "stamps.npz"))
    lines = ["| d | N | heads | causal | tile, walk | DRAM read (MB) | iosim (MB) | ratio | without registers | "
             "ncu time (µs) | step (ns) | step CV | start inversions | blocks at once |",
             "|---:|---:|---:|:---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for i, (spec, launch) in enumerate(zip(CONFIGS, launches)):
        got, model, plain = launch["metrics"]["dram__bytes_read.sum"], predicted(spec), predicted(spec, registers=False)
        tabs = [drift_table(stamps[f"c{i}_r{r}"], spec) for r in range(REPEATS)]
        cv = [t["step_cv_median"] for t in tabs if t["step_cv_median"] is not None]
        walk = walk_label(spec)
        lines.append(f"| {spec['head_dim']} | {spec['seq_len']:,} | {spec['heads_total']} | {'y' if spec['causal'] else ''} "
                     f"| {walk} "
                     f"| {got / 1e6:.1f} | {model / 1e6:.1f} | {model / got:.3f} | {plain / got:.3f} "
                     f"| {launch['metrics']['gpu__time_duration.sum'] / 1e3:.1f} "
                     f"| {np.median([t['step_ns_median'] for t in tabs]):.0f} "
                     f"| {'%.3f' % np.median(cv) if cv else '—'} "
                     f"| {max(t['start_inversions'] for t in tabs):.4f} | {max(t['at_once'] for t in tabs)} |")
    return "\n".join(lines)


def main() -> None:
    if sys.argv[1:2] == ["--summary"]:
        print(summary(sys.argv[2]))
        return
    from ncu_self_profile import self_profile
    if "--target" not in sys.argv:
        out = sys.argv[sys.argv.index("--out") + 1]
        os.makedirs(out, exist_ok=True)
    self_profile(__file__, __doc__, run_target, "regex:fa2_mma", METRICS, "drift.csv", "configs.json",
                 {"configs": CONFIGS, "repeats": REPEATS})
    if "--target" not in sys.argv:
        measure_stamps(out)


if __name__ == "__main__":
    main()

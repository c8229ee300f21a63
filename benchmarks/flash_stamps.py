"""Does flash-attn 2's forward keep its blocks in step? Its own kernel, built from flash-attention's
source with each block's start and end stamped, against PyTorch's build, under Nsight Compute
(docs/validation/2026-12-05-flash-stamps.md says why and what was found).

PyTorch's flash-attn 2 kernels cannot be timed block by block; iosim's L2 model plays their
blocks in lockstep, and the long causal forwards, its largest DRAM misses, are where that is in
doubt (docs/validation/2026-12-04-l2-address.md). ``flash_stamps/stamped_fwd.cu`` compiles
flash's forward (``compute_attn``) for one instantiation with PyTorch's flags; thread 0 of each
block stamps its start, end and SM. The plain build is the same code without the stamps.

    python benchmarks/flash_stamps.py --build FLASH_SRC CUTLASS_INCLUDE BIN_DIR     # nvcc, sm_90
    python benchmarks/flash_stamps_summary.py --predict docs/validation/2026-12-05-flash-stamps/predictions.json
    PYTHONPATH=$PWD python3 benchmarks/flash_stamps.py --device DIR BIN_DIR [FLASH_SRC CUTLASS_INCLUDE]  # on the H200
    python benchmarks/flash_stamps_summary.py --summary DIR
    FLASH_STAMPS_ONLY=NAME,NAME PYTHONPATH=$PWD python3 benchmarks/flash_stamps.py --repeat DIR BIN_DIR TIMES  # on the H200
    FLASH_STAMPS_ONLY=NAME,NAME PYTHONPATH=$PWD python3 benchmarks/flash_stamps.py --same-launch DIR BIN_DIR TIMES  # on the H200

FLASH_SRC is flash-attention's csrc/flash_attn/src (Dao-AILab/flash-attention, read at 0251105a),
CUTLASS_INCLUDE CUTLASS's include/ at its submodule pin (7127592): the user brings both, as they
bring CUDA. On the device, the binaries are built there from them when those built here do not
run. ``--device`` writes DIR/env.txt, DIR/stamps/NAME.bin (three stamped launches a config),
DIR/ncu/NAME_plain.csv and NAME_stamps.csv (the launch after a warm-up) and DIR/ncu/torch.csv
(PyTorch's flash forward of every config, in GRID order).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

#: the configs (fp16, (B, H, N, d) inputs): the long causal forwards the L2 model misses most
#: (2026-12-04-status.md), three past many waves of blocks at d = 128, and a dense control
GRID = [dict(seq_len=n, head_dim=d, batch=b, heads=h, causal=c) for n, d, b, h, c in (
    (65536, 128, 1, 2, True), (131072, 64, 1, 2, True), (262144, 64, 1, 1, True), (32768, 128, 1, 16, True),
    (40000, 128, 1, 2, True), (16384, 256, 1, 4, True), (28000, 256, 1, 2, True), (2048, 128, 8, 64, True),
    (16000, 128, 1, 6, False), (4096, 128, 4, 32, True), (1024, 128, 8, 128, True))]
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
           "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum",
           "launch__registers_per_thread"]
REPEATS = 3
FLAGS = ["-std=c++17", "-O3", "--expt-relaxed-constexpr", "--expt-extended-lambda",
         "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
         # PyTorch's flash-attn build (caffe2/CMakeLists.txt): no fast math
         "-DNDEBUG", "-DFLASH_NAMESPACE=pytorch_flash", "-DFLASHATTENTION_DISABLE_ALIBI",
         "-DFLASHATTENTION_DISABLE_SOFTCAP", "-DUNFUSE_FMA",
         "-gencode", "arch=compute_90,code=sm_90", "-cudart", "static", "-Xptxas", "-v"]


@functools.lru_cache(maxsize=None)
def _kernel_tile(head_dim: int, causal: bool):
    """iosim's tile table's forward tile on the H200 (run_mha_fwd_hdimD, flash_fwd_launch_template.h)."""
    from iosim import load_profile
    from iosim.kernels.tile_tables import kernel_tile
    return kernel_tile("fa2", head_dim, load_profile("h200"), causal=causal)


def traits(cfg: dict) -> tuple[int, int, int]:
    """(kBlockM, kBlockN, warps) of the config's forward on the H200."""
    t = _kernel_tile(cfg["head_dim"], cfg["causal"])
    return t.block_q, t.block_kv, t.warps


def tile(cfg: dict) -> tuple[int, int]:
    """(kBlockM, kBlockN) of the config's forward."""
    return traits(cfg)[:2]


def even_mn(cfg: dict) -> bool:
    """run_flash_fwd's Is_even_MN for the config (iosim.kernels.spill_frames.even_mn)."""
    from iosim.gpu.sdpa import problem_of
    from iosim.kernels.spill_frames import even_mn as flash_even_mn
    return flash_even_mn(problem_of(cfg), _kernel_tile(cfg["head_dim"], cfg["causal"]))


def build_name(cfg: dict) -> str:
    """The instantiation a config runs: ``d128_causal_even``."""
    return f"d{cfg['head_dim']}_{'causal' if cfg['causal'] else 'dense'}_{'even' if even_mn(cfg) else 'uneven'}"


def name(cfg: dict) -> str:
    """A config's file name: ``d128_n65536_b1h2_causal``."""
    return f"d{cfg['head_dim']}_n{cfg['seq_len']}_b{cfg['batch']}h{cfg['heads']}_{'causal' if cfg['causal'] else 'dense'}"


def build(src: str, cutlass: str, out: str, jobs: int = 2) -> None:
    """Each instantiation of GRID, plain and stamped, into ``out`` (fwd_NAME, fwd_NAME_stamps), with
    ptxas's registers and spill frame in ``out``/ptxas.txt."""
    from concurrent.futures import ThreadPoolExecutor
    os.makedirs(out, exist_ok=True)
    todo = {}
    for cfg in GRID:
        bm, bn, warps = traits(cfg)
        defs = [f"-DHDIM={cfg['head_dim']}", f"-DBLOCK_M={bm}", f"-DBLOCK_N={bn}", f"-DNWARPS={warps}",
                f"-DCAUSAL={int(cfg['causal'])}", f"-DEVEN_MN={int(even_mn(cfg))}", "-DEVEN_K=1"]
        for stamps in ("", "_stamps"):
            todo[f"fwd_{build_name(cfg)}{stamps}"] = defs + (["-DSTAMPS"] if stamps else [])
    includes = [f"-I{os.path.join(HERE, 'flash_stamps', 'stubs')}", f"-I{src}", f"-I{cutlass}"]

    def nvcc(item):
        exe, defs = item
        done = subprocess.run(["nvcc", *FLAGS, *includes, *defs, "-o", os.path.join(out, exe),
                               os.path.join(HERE, "flash_stamps", "stamped_fwd.cu")], capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"nvcc failed for {exe}:\n{(done.stdout + done.stderr)[-3000:]}")
        lines = [ln.split(":", 1)[-1].strip() for ln in done.stderr.splitlines()
                 if "stack frame" in ln or "registers" in ln]
        return f"{exe}: " + "; ".join(lines[:2])
    with ThreadPoolExecutor(jobs) as pool:
        report = sorted(pool.map(nvcc, todo.items()))
    open(os.path.join(out, "ptxas.txt"), "w").write("\n".join(report) + "\n")
    print("\n".join(report))


def args_of(cfg: dict, repeats: int, path: str) -> list[str]:
    """stamped_fwd's arguments: B H H_KV N D REPEATS OUT."""
    return [str(x) for x in (cfg["batch"], cfg["heads"], cfg["heads"], cfg["seq_len"], cfg["head_dim"], repeats, path)]


def runs_here(bins: str) -> bool:
    """Whether the binaries in ``bins`` run a small launch on this machine's GPU."""
    small = dict(GRID[0], seq_len=256, batch=1, heads=1)
    exe = os.path.join(bins, f"fwd_{build_name(small)}_stamps")
    try:
        return subprocess.run([exe, *args_of(small, 1, os.devnull)], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def chosen() -> list[dict]:
    """GRID, or the configs named in the environment's FLASH_STAMPS_ONLY (comma-separated)."""
    only = [n for n in os.environ.get("FLASH_STAMPS_ONLY", "").split(",") if n]
    return [c for c in GRID if not only or name(c) in only]


def torch_target() -> None:
    """PyTorch's flash forward of every chosen config once (what ncu profiles for torch.csv)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for cfg in chosen():
        shape = (cfg["batch"], cfg["heads"], cfg["seq_len"], cfg["head_dim"])
        q, k, v = (torch.randn(shape, dtype=torch.float16, device="cuda") for _ in range(3))
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            F.scaled_dot_product_attention(q, k, v, is_causal=cfg["causal"])
        torch.cuda.synchronize()
        del q, k, v
        torch.cuda.empty_cache()


def _ncu_build(ncu: str, metrics: list, exe: str, cfg: dict, path: str, timeout: float,
               stamps: str = os.devnull) -> None:
    """ncu's CSV of one build's launch of ``cfg``, the one after its warm-up, to ``path`` (a stamped
    build writes that launch's stamps to ``stamps``)."""
    from sdpa_ncu import run_ncu
    run_ncu(ncu, "regex:stamped_fwd", metrics, [exe, *args_of(cfg, 1, stamps)], path, timeout=timeout,
            python=False, extra=["--launch-skip", "1", "--launch-count", "1"])


def _ncu_torch(ncu: str, metrics: list, path: str, timeout: float) -> None:
    """ncu's CSV of PyTorch's flash forward of every chosen config (:func:`torch_target`), to ``path``."""
    from sdpa_ncu import run_ncu
    run_ncu(ncu, "regex:flash_fwd_kernel", metrics, [os.path.abspath(__file__), "--torch-target"], path,
            timeout=timeout)


def device(out: str, bins: str, src: str | None, cutlass: str | None) -> None:
    """The measurement (H200): stamps, then ncu of the plain and stamped builds and of PyTorch's."""
    from iosim.gpu.ncu import find_ncu
    from sdpa_ncu import available_metrics, write_env
    ncu = find_ncu()
    for sub in ("stamps", "ncu"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    write_env(out, ncu)
    log = open(os.path.join(out, "run.log"), "a")
    if not runs_here(bins):
        if not (src and cutlass):
            raise SystemExit(f"the binaries in {bins} do not run here, and no sources were given to build them")
        bins = os.path.join(out, "bin")
        build(src, cutlass, bins, jobs=os.cpu_count() or 2)
        print("built here", file=log, flush=True)
    metrics = available_metrics(ncu, METRICS)
    for cfg in GRID:
        t0 = time.time()
        stamped = os.path.join(bins, f"fwd_{build_name(cfg)}_stamps")
        res = subprocess.run([stamped, *args_of(cfg, REPEATS, os.path.join(out, "stamps", name(cfg) + ".bin"))],
                             capture_output=True, text=True, timeout=300)
        print(name(cfg), "stamps:", res.returncode, res.stdout.strip(), res.stderr.strip()[-500:], file=log, flush=True)
        for kind, exe in (("plain", stamped[:-len("_stamps")]), ("stamps", stamped)):
            _ncu_build(ncu, metrics, exe, cfg, os.path.join(out, "ncu", f"{name(cfg)}_{kind}.csv"), 300)
        print(name(cfg), f"{time.time() - t0:.0f} s", file=log, flush=True)
    _ncu_torch(ncu, metrics, os.path.join(out, "ncu", "torch.csv"), 400)
    with open(os.path.join(out, "configs.json"), "w") as f:
        json.dump({"grid": GRID, "repeats": REPEATS, "metrics": metrics, "bins": bins}, f, indent=1)


def repeat(out: str, bins: str, times: int) -> None:
    """The plain build's and PyTorch's launches of the chosen configs measured ``times`` times, each
    in a process of its own, for their run-to-run spread: out/NAME_plain_I.csv, out/torch_I.csv."""
    from iosim.gpu.ncu import find_ncu
    from sdpa_ncu import available_metrics
    ncu = find_ncu()
    metrics = available_metrics(ncu, METRICS)
    os.makedirs(out, exist_ok=True)
    for i in range(times):
        for cfg in chosen():
            _ncu_build(ncu, metrics, os.path.join(bins, f"fwd_{build_name(cfg)}"), cfg,
                       os.path.join(out, f"{name(cfg)}_plain_{i}.csv"), 120)
        _ncu_torch(ncu, metrics, os.path.join(out, f"torch_{i}.csv"), 200)


#: what the same-launch runs measure: one pass, so that the stamps are of the launch ncu counted
SAME_METRICS = ["dram__bytes_read.sum", "gpu__time_duration.sum"]


def same_launch(out: str, bins: str, times: int) -> None:
    """Each chosen config's stamped launch under ncu ``times`` times, each in a process of its own,
    with the stamps of the very launch ncu measured (out/stamps/NAME_I.bin, out/ncu/NAME_I.csv),
    and this GPU's side of each SM before and after (out/sides.json, out/sides_end.json: 0 where
    the SM finds SM 0's lines near; benchmarks/l2_shared_ncu.py), so that a replay has the launch's
    own order, SMs and sides (flash_stamps_same.py)."""
    import cupy
    from iosim.gpu.ncu import find_ncu
    from l2_shared_ncu import measured_sides
    from sdpa_ncu import write_env
    ncu = find_ncu()
    for sub in ("stamps", "ncu"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    write_env(out, ncu)
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    with open(os.path.join(out, "sides.json"), "w") as f:
        json.dump(measured_sides(sms), f)
    for i in range(times):
        for cfg in chosen():
            exe = os.path.join(bins, f"fwd_{build_name(cfg)}_stamps")
            _ncu_build(ncu, SAME_METRICS, exe, cfg, os.path.join(out, "ncu", f"{name(cfg)}_{i}.csv"), 300,
                       stamps=os.path.join(out, "stamps", f"{name(cfg)}_{i}.bin"))
            print(name(cfg), i, "done", flush=True)
    with open(os.path.join(out, "sides_end.json"), "w") as f:
        json.dump(measured_sides(sms), f)
    with open(os.path.join(out, "configs.json"), "w") as f:
        json.dump({"grid": chosen(), "times": times, "metrics": SAME_METRICS}, f, indent=1)


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["--build"] and len(argv) == 4:
        build(*argv[1:4])
    elif argv[:1] == ["--torch-target"]:
        torch_target()
    elif argv[:1] == ["--repeat"] and len(argv) == 4:
        repeat(argv[1], argv[2], int(argv[3]))
    elif argv[:1] == ["--same-launch"] and len(argv) == 4:
        same_launch(argv[1], argv[2], int(argv[3]))
    elif argv[:1] == ["--device"] and len(argv) in (3, 5):
        device(argv[1], argv[2], *(argv[3:5] or [None, None]))
    else:
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        raise SystemExit(2)


if __name__ == "__main__":
    main()

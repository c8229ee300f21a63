"""The golden-output matrix: a fixed list of simulate() runs whose JSON outputs are frozen
in ``golden.json`` (written by ``make_golden.py``, checked by ``test_golden.py``).

Each configuration is a plain JSON-able dict describing *what* to run, independent of how
:func:`iosim.simulate` spells it:

* ``id``: unique, readable name (group/algorithm/passes/profile/shape/extras);
* ``hw``, ``algorithm``, ``passes``, ``problem`` (the :class:`iosim.Problem` fields:
  seq_len_q, seq_len_kv, head_dim, batch, heads, kv_heads, dtype, causal);
* optional: ``block_q``, ``block_kv``, ``tiles``, ``count_init``, ``residency``,
  ``sram_bytes``, ``schedule_options`` (gemm, dq_read_twice, num_splits), ``block_mask``
  (a spec string), ``kernel`` (a real-kernel preset), ``cache`` (bool), ``mode``;
* ``expect_error``: the :class:`iosim.errors.IosimError` subclass name a configuration is
  *meant* to raise (its golden output is the class name and message).

:func:`run` is the ONLY place that knows simulate()'s call signature: when the signature
changes, change :func:`run` and nothing else.
"""

from __future__ import annotations

import json

#: keys of a configuration that describe the run (the rest is bookkeeping: id, expect_error)
RUN_KEYS = ("hw", "algorithm", "passes", "problem", "block_q", "block_kv", "tiles", "count_init", "residency",
            "sram_bytes", "schedule_options", "block_mask", "kernel", "cache", "mode")


def run(cfg: dict) -> dict:
    """Run one configuration with :func:`iosim.simulate` and return ``to_dict()``, or
    ``{"error": ClassName, "message": str(exc)}`` for an :class:`IosimError`."""
    from iosim import Options, Problem, simulate
    from iosim.errors import IosimError

    unknown = set(cfg) - set(RUN_KEYS) - {"id", "expect_error"}
    if unknown:
        raise KeyError(f"configuration {cfg.get('id')!r} has unknown keys {sorted(unknown)}")
    kwargs = {key: cfg[key] for key in ("mode", "passes") if key in cfg}
    if "block_q" in cfg or "block_kv" in cfg:
        kwargs["blocks"] = (cfg.get("block_q"), cfg.get("block_kv"))
    options = {key: cfg[key] for key in ("tiles", "count_init", "residency", "sram_bytes", "block_mask",
                                          "kernel", "cache") if key in cfg}
    try:
        problem = Problem(**cfg["problem"])
        result = simulate(cfg["hw"], cfg["algorithm"], problem,
                          options=Options(**options, **cfg.get("schedule_options", {})), **kwargs)
    except IosimError as exc:
        return {"error": type(exc).__name__, "message": str(exc)}
    return result.to_dict()


def normalise(output: dict) -> dict:
    """An output as the golden file holds it: without ``schema_version`` (a field the JSON
    contract is to gain; the golden outputs predate it)."""
    return {k: v for k, v in output.items() if k != "schema_version"}


def dumps(output: dict) -> str:
    """The exact text two outputs are compared by (float formatting included)."""
    return json.dumps(normalise(output), sort_keys=True)


# -- building the matrix ----------------------------------------------------------------------

_PASS_TAG = {"forward": "fwd", "backward": "bwd", "forward+backward": "fwd+bwd"}


def _problem(n_q, d, n_kv=None, *, b=1, h=1, hk=None, dtype="fp16", causal=False) -> dict:
    return {"seq_len_q": n_q, "seq_len_kv": n_q if n_kv is None else n_kv, "head_dim": d, "batch": b,
            "heads": h, "kv_heads": h if hk is None else hk, "dtype": dtype, "causal": causal}


def _make_id(group: str, cfg: dict) -> str:
    p = cfg["problem"]
    shape = (f"q{p['seq_len_q']}" + ("" if p["seq_len_kv"] == p["seq_len_q"] else f"kv{p['seq_len_kv']}")
             + f"d{p['head_dim']}" + (f"b{p['batch']}" if p["batch"] != 1 else "")
             + (f"h{p['heads']}" if p["heads"] != 1 else "")
             + (f"hk{p['kv_heads']}" if p["kv_heads"] != p["heads"] else ""))
    parts = [group, str(cfg["algorithm"]), _PASS_TAG.get(cfg.get("passes", "forward"), str(cfg.get("passes"))),
             cfg["hw"], shape, p["dtype"]]
    if p["causal"]:
        parts.append("causal")
    if "block_q" in cfg or "block_kv" in cfg:
        parts.append(f"B{cfg.get('block_q', '_')}x{cfg.get('block_kv', '_')}")
    if cfg.get("tiles", "exact") != "exact":
        parts.append(cfg["tiles"])
    if cfg.get("count_init"):
        parts.append("init")
    if cfg.get("residency", "kernel") != "kernel":
        parts.append(f"res-{cfg['residency']}")
    if "sram_bytes" in cfg:
        parts.append(f"sram{cfg['sram_bytes']}")
    for k, v in sorted(cfg.get("schedule_options", {}).items()):
        parts.append(f"{k}={v}")
    if "block_mask" in cfg:
        parts.append(f"mask={cfg['block_mask']}")
    if "kernel" in cfg:
        parts.append(cfg["kernel"])
    if cfg.get("cache"):
        parts.append("cache")
    if cfg.get("mode", "count") != "count":
        parts.append(cfg["mode"])
    return "/".join(parts)


def configurations() -> list[dict]:
    """The fixed, deterministic matrix (same list, same order, every call)."""
    out: list[dict] = []

    def add(group, hw, algorithm, problem, passes="forward", expect_error=None, **options):
        cfg = {"hw": hw, "algorithm": algorithm, "passes": passes, "problem": problem, **options}
        cfg = {"id": _make_id(group, cfg), **cfg}
        if expect_error is not None:
            cfg["expect_error"] = expect_error
        out.append(cfg)

    algos = ("standard", "fa1", "fa2")
    all_passes = ("forward", "backward", "forward+backward")

    # 1. core: every algorithm × every pass × causal, on several profiles and shapes
    #    (paper blocks; ragged N 1000 and 777)
    for hw, shape in (("fa-paper-a100", dict(n_q=1024, d=64)),
                      ("h100-sxm", dict(n_q=1000, d=128, b=2, h=3)),
                      ("a100-80gb", dict(n_q=777, d=64, h=2))):
        for algo in algos:
            for passes in all_passes:
                for causal in (False, True):
                    add("core", hw, algo, _problem(**shape, causal=causal), passes)
    for algo in algos:
        for passes in all_passes:
            add("core", "mi300x", algo, _problem(2048, 128, h=2), passes)
    for algo in algos:
        add("core", "h200", algo, _problem(8192, 128, b=2, h=16, causal=True), "forward+backward")
        add("core", "a100-40gb", algo, _problem(4096, 64, h=4), "forward")
        add("core", "h100-pcie", algo, _problem(2048, 256, h=2), "forward")
        add("core", "h100-pcie", algo, _problem(2048, 128, h=2), "backward")
    # d = 256 backward: the paper's blocks overflow the H100's SRAM for FA1/FA2 (an error
    # configuration below); user blocks fit, and standard attention keeps no tiles
    add("core", "h100-pcie", "fa1", _problem(2048, 256, h=2), "backward", block_q=64, block_kv=64)
    add("core", "h100-pcie", "standard", _problem(2048, 256, h=2), "backward")

    # 2. unequal lengths (causal aligned bottom-right)
    for n_q, n_kv in ((512, 2048), (2048, 512), (1000, 777)):
        for causal in (False, True):
            for algo in algos:
                add("lengths", "fa-paper-a100", algo, _problem(n_q, 64, n_kv, h=2, causal=causal))
            for algo in ("fa1", "fa2"):
                add("lengths", "h100-sxm", algo, _problem(n_q, 128, n_kv, h=2, causal=causal), "backward")
    add("lengths", "h100-sxm", "standard", _problem(1000, 64, 2048, causal=True), "forward+backward")
    add("lengths", "h100-sxm", "fa2", _problem(1000, 64, 2048, causal=True), "forward+backward")

    # 3. grouped-query and multi-query attention
    for h, hk in ((8, 2), (8, 1), (6, 3)):
        for i, algo in enumerate(algos):
            for passes in ("forward", "forward+backward"):
                add("gqa", "h100-sxm", algo, _problem(2048, 128, b=2, h=h, hk=hk, causal=(i + len(passes)) % 2 == 1),
                    passes)
    add("gqa", "fa-paper-a100", "fa2", _problem(512, 64, 2048, h=8, hk=2, causal=True), "forward+backward")
    add("gqa", "fa-paper-a100", "fa1", _problem(2048, 64, 512, h=8, hk=1, causal=True), "backward")

    # 4. block-sparse (Algorithm 5)
    for mask in ("local:1", "local:2", "random:0.5:3", "random:0.3", "dense"):
        for algo in ("fa1", "fa2"):
            for passes in ("forward", "backward"):
                add("sparse", "fa-paper-a100", algo, _problem(2048, 64, h=2), passes,
                    block_q=128, block_kv=128, block_mask=mask)
    add("sparse", "fa-paper-a100", "fa2", _problem(2048, 64, h=2, causal=True), block_q=64, block_kv=128,
        block_mask="local:3")
    add("sparse", "h100-sxm", "fa1", _problem(1000, 128, h=2), "forward+backward", block_mask="random:0.4:7")
    add("sparse", "h100-sxm", "fa2", _problem(1000, 128, 3000, h=4, hk=2), "forward+backward",
        block_q=128, block_kv=64, block_mask="local:2")
    add("sparse", "fa-paper-a100", "fa2-splitkv", _problem(64, 64, 2048, h=2), block_q=64, block_kv=128,
        block_mask="local:2", schedule_options={"num_splits": 4})
    # standard attention's counts do not depend on a mask: it is refused, not echoed with a density
    add("sparse", "fa-paper-a100", "standard", _problem(1024, 64), "forward+backward", block_q=128, block_kv=128,
        block_mask="local:1", expect_error="ProblemError")

    # 5. split-KV (Flash-Decoding): explicit splits and flash-attn's heuristic
    decode_gqa = _problem(1, 128, 8192, h=32, hk=8)
    for splits in (1, 2, 4, 7):
        add("splitkv", "a100-80gb", "fa2-splitkv", decode_gqa, block_q=64, block_kv=128,
            schedule_options={"num_splits": splits})
    for hw in ("a100-80gb", "h100-sxm", "h200"):
        add("splitkv", hw, "fa2-splitkv", decode_gqa, block_q=64, block_kv=128)       # heuristic
    add("splitkv", "h100-sxm", "fa2-splitkv", _problem(1, 128, 8192, h=32), block_q=64, block_kv=128)
    add("splitkv", "h100-sxm", "fa2-splitkv", _problem(1, 64, 4096, b=4, h=8, hk=1, causal=True),
        block_q=64, block_kv=128)
    add("splitkv", "fa-paper-a100", "fa2-splitkv", _problem(5, 32, 700, h=2, causal=True), block_q=64, block_kv=64,
        schedule_options={"num_splits": 3})
    add("splitkv", "fa-paper-a100", "fa2-splitkv", _problem(64, 32, 1000, h=2), block_q=64, block_kv=64,
        schedule_options={"num_splits": 7})
    add("splitkv", "fa-paper-a100", "fa2-splitkv", _problem(100, 32, 1000, h=2, causal=True), block_q=64,
        block_kv=64, schedule_options={"num_splits": 32})
    add("splitkv", "fa-paper-a100", "fa2-splitkv", _problem(3, 64, 129), schedule_options={"num_splits": 5})
    add("splitkv", "h200", "fa2-splitkv", _problem(1, 128, 8192, h=32, hk=8, dtype="bf16"))

    # 6. flash-attn-2 preset: forward (split or not), the backward kernels, both
    for d in (64, 128, 256):
        for passes in all_passes:
            for causal in (False, True):
                add("fa2-kernel", "h100-sxm", "fa2", _problem(2048, d, b=2, h=8, causal=causal), passes,
                    kernel="flash-attn-2")
    for d in (32, 64, 128, 256):
        add("fa2-kernel", "a100-80gb", "fa2", _problem(4096, d, b=4, h=16, causal=d == 128), "forward+backward",
            kernel="flash-attn-2")
    add("fa2-kernel", "h200", "fa2", decode_gqa, kernel="flash-attn-2")
    add("fa2-kernel", "h200", "fa2", _problem(1, 128, 8192, h=32), kernel="flash-attn-2")
    add("fa2-kernel", "h200", "fa2", _problem(1000, 128, 4096, h=16, hk=4, causal=True), "forward+backward",
        kernel="flash-attn-2")
    add("fa2-kernel", "h200", "fa2", _problem(4096, 128, b=2, h=16, dtype="bf16", causal=True), "forward+backward",
        kernel="flash-attn-2")
    add("fa2-kernel", "h100-sxm", "fa2-splitkv", decode_gqa, kernel="flash-attn-2",
        schedule_options={"num_splits": 4})
    add("fa2-kernel", "h100-sxm", "fa2", _problem(777, 64, h=4), "backward", "ProblemError", kernel="flash-attn-2",
        tiles="padded", count_init=True)          # the paper's conventions are not what a kernel does: refused

    # 7. flash-attn-3 preset (forward only)
    for hw in ("h100-sxm", "h200"):
        for d in (64, 128, 256):
            for causal in (False, True):
                add("fa3-kernel", hw, "fa2", _problem(8192, d, h=8, causal=causal), kernel="flash-attn-3")
    # FA3's FP8 forward writes O in bf16, which the preset does not model: refused, not run with 16-bit tiles
    add("fa3-kernel", "h100-sxm", "fa2", _problem(4096, 128, b=2, h=16, dtype="fp8"), kernel="flash-attn-3",
        expect_error="ProblemError")
    add("fa3-kernel", "h100-sxm", "fa2", _problem(1000, 128, 3000, h=8, hk=2, causal=True), kernel="flash-attn-3")

    # 8. dtypes (paper blocks follow M in elements of the dtype)
    for dtype in ("fp32", "fp16", "bf16", "fp8"):
        for algo in algos:
            add("dtype", "h100-sxm", algo, _problem(2048, 128, h=4, dtype=dtype))
        add("dtype", "fa-paper-a100", "fa2", _problem(1000, 64, h=2, dtype=dtype, causal=True), "backward")

    # 9. counting conventions C4 (tiles) and C5 (count_init), ragged N
    for tiles in ("exact", "padded"):
        for count_init in (False, True):
            for algo in algos:
                add("conventions", "fa-paper-a100", algo, _problem(1000, 64, h=2), block_q=128, block_kv=64,
                    tiles=tiles, count_init=count_init)
    for algo in ("fa1", "fa2"):
        add("conventions", "fa-paper-a100", algo, _problem(777, 64, causal=True), "forward+backward",
            block_q=64, block_kv=128, tiles="padded", count_init=True)
        add("conventions", "h100-sxm", algo, _problem(1000, 128, 600, h=2, causal=True), "backward",
            tiles="padded")

    # 10. residency: S, P and the O accumulator in SRAM (sizes that fit)
    for algo in algos:
        for passes in ("forward", "backward"):
            add("residency", "fa-paper-a100", algo, _problem(1024, 64, h=2), passes, block_q=64, block_kv=64,
                residency="sram")
    add("residency", "h100-sxm", "fa2", _problem(1000, 128, causal=True), "forward+backward", block_q=64,
        block_kv=64, residency="sram")
    add("residency", "fa-paper-a100", "fa1", _problem(2048, 32), residency="sram", sram_bytes=1 << 20)

    # 11. the per-block scratchpad overridden (M and so the paper's blocks)
    for sram in (16384, 49152, 65536, 131072):
        for algo in ("fa1", "fa2"):
            add("sram", "fa-paper-a100", algo, _problem(4096, 64, h=2), sram_bytes=sram)
    add("sram", "fa-paper-a100", "standard", _problem(4096, 64, h=2), sram_bytes=49152)
    add("sram", "h100-sxm", "fa2", _problem(2048, 128, causal=True), "forward+backward", sram_bytes=131072)
    add("sram", "h100-sxm", "fa2", _problem(2048, 128, causal=True), sram_bytes=100000)

    # 12. block sizes: user, paper, partial (only one of B_r, B_c given)
    for algo in ("fa1", "fa2"):
        for bq, bkv in ((64, 128), (128, 64), (256, 16), (None, None), (32, None), (None, 32)):
            blocks = {k: v for k, v in (("block_q", bq), ("block_kv", bkv)) if v is not None}
            add("blocks", "fa-paper-a100", algo, _problem(1000, 64, h=2), **blocks)

    # 13. schedule options: standard's GEMMs, FA2 backward's dQ reads
    for passes in all_passes:   # only the forward models tiled GEMMs (an error configuration below)
        add("options", "h100-sxm", "standard", _problem(1000, 64, h=2), passes, schedule_options={"gemm": "idealised"})
    add("options", "h100-sxm", "standard", _problem(1000, 64, h=2), schedule_options={"gemm": "tiled"})
    add("options", "h100-sxm", "standard", _problem(1000, 64, h=2, causal=True), block_q=128, block_kv=64,
        schedule_options={"gemm": "tiled"})
    for dq in (False, True):
        for passes in ("backward", "forward+backward"):
            add("options", "h100-sxm", "fa2", _problem(2048, 128, h=2, causal=passes == "backward"), passes,
                schedule_options={"dq_read_twice": dq})
    add("options", "fa-paper-a100", "standard", _problem(512, 64, 2048, causal=True), block_q=64, block_kv=64,
        schedule_options={"gemm": "tiled"})

    # 14. the L2 model (cache=True): small problems, big blocks (each well under 0.2 s)
    add("cache", "h100-sxm", "fa2", _problem(2048, 128, h=4), block_q=128, block_kv=64, cache=True)
    add("cache", "h200", "fa2", _problem(1024, 128, h=4, causal=True), "forward+backward", block_q=128,
        block_kv=64, cache=True)
    add("cache", "h200", "fa1", _problem(1024, 64, h=2), block_q=64, block_kv=128, cache=True)
    add("cache", "a100-80gb", "standard", _problem(1024, 64, h=2), cache=True)
    add("cache", "mi300x", "fa2", _problem(1024, 128, h=4), block_q=64, block_kv=64, cache=True)
    add("cache", "a100-40gb", "fa2", _problem(1024, 64, h=8, hk=2), "backward", block_q=128, block_kv=128,
        cache=True)
    add("cache", "h200", "fa2-splitkv", _problem(1, 128, 8192, h=32, hk=8), block_q=64, block_kv=128, cache=True)
    add("cache", "h200", "fa2", _problem(1024, 128, h=2), "forward+backward", kernel="flash-attn-2", cache=True)
    add("cache", "toy", "fa2", _problem(256, 32, h=2), cache=True)
    add("cache", "fa-paper-a100", "fa2", _problem(1024, 64, h=2), block_q=128, block_kv=128,
        block_mask="local:2", cache=True)
    # footprints larger than the cache, so that dirty lines are written back to DRAM (every
    # run above fits and writes 0 DRAM bytes); standard attention replays fast even when large
    add("cache", "toy", "standard", _problem(512, 32), cache=True)
    add("cache", "a100-40gb", "standard", _problem(4096, 64, h=2), cache=True)
    add("cache", "mi300x", "standard", _problem(8192, 64, h=2), cache=True)     # through the Infinity Cache

    # 15. trace mode (every iteration one by one): small sizes
    for algo in algos:
        add("trace", "toy", algo, _problem(256, 16), block_q=64, block_kv=64, mode="trace")
    add("trace", "toy", "fa2", _problem(200, 16, causal=True), "forward+backward", block_q=32, block_kv=32,
        mode="trace")
    add("trace", "fa-paper-a100", "fa2-splitkv", _problem(1, 32, 1000, h=4, hk=2), block_q=64, block_kv=64,
        schedule_options={"num_splits": 3}, mode="trace")
    add("trace", "fa-paper-a100", "fa1", _problem(512, 32), block_q=64, block_kv=64, block_mask="local:2",
        mode="trace")

    # 16. numeric mode (float64 NumPy; the golden holds the counts): small sizes
    add("numeric", "toy", "fa1", _problem(256, 16), block_q=64, block_kv=64, mode="numeric")
    add("numeric", "toy", "fa2", _problem(200, 16, causal=True), "forward+backward", block_q=32, block_kv=32,
        mode="numeric")
    add("numeric", "toy", "standard", _problem(128, 16, h=2), "backward", mode="numeric")
    add("numeric", "fa-paper-a100", "fa2-splitkv", _problem(1, 32, 500, h=4, hk=2), block_q=64, block_kv=64,
        schedule_options={"num_splits": 3}, mode="numeric")
    add("numeric", "h100-sxm", "fa2", _problem(256, 64, h=2, causal=True), "forward+backward",
        kernel="flash-attn-2", mode="numeric")

    # 17. errors are behaviour too: each of these is meant to raise an IosimError
    small = _problem(256, 64)
    add("error", "toy", "fa2", small, block_q=128, block_kv=128, expect_error="CapacityError")
    add("error", "fa-paper-a100", "fa1", _problem(8192, 128), residency="sram", expect_error="CapacityError")
    add("error", "h100-pcie", "fa2", _problem(2048, 256, h=2), "backward", expect_error="CapacityError")
    add("error", "fa-paper-a100", "fa2", small, sram_bytes=0, expect_error="ProblemError")
    add("error", "fa-paper-a100", "fa2", small, block_q=0, block_kv=64, expect_error="ProblemError")
    add("error", "no-such-gpu", "fa2", small, expect_error="ProfileError")
    add("error", "fa-paper-a100", "fa3", small, expect_error="ScheduleError")
    add("error", "fa-paper-a100", "fa2-splitkv", _problem(1, 64, 1024), "backward", expect_error="ScheduleError")
    add("error", "fa-paper-a100", "fa2", small, "sideways", expect_error="ScheduleError")
    add("error", "fa-paper-a100", "fa2", small, schedule_options={"gemm": "tiled"}, expect_error="ScheduleError")
    add("error", "fa-paper-a100", "standard", small, schedule_options={"gemm": "strassen"},
        expect_error="ScheduleError")
    add("error", "fa-paper-a100", "standard", small, "backward", schedule_options={"gemm": "tiled"},
        expect_error="ScheduleError")
    add("error", "h100-sxm", "fa2", small, "backward", kernel="flash-attn-3", expect_error="ScheduleError")
    add("error", "h100-sxm", "fa2", small, kernel="flash-attn-2", block_q=64, expect_error="ProblemError")
    add("error", "h100-sxm", "standard", small, kernel="flash-attn-2", expect_error="ProblemError")
    add("error", "h100-sxm", "fa2", small, kernel="flash-attn-4", expect_error="ProblemError")
    add("error", "mi300x", "fa2", small, kernel="flash-attn-2", expect_error="ProblemError")      # no CUDA kernel
    add("error", "a100-80gb", "fa2", small, kernel="flash-attn-3", expect_error="ProblemError")   # needs sm90
    add("error", "fa-paper-a100", "fa2", small, block_q=64, block_kv=64, block_mask="diagonal:2",
        expect_error="ProblemError")
    add("error", "fa-paper-a100", "fa2", _problem(256, 64, h=6, hk=4), expect_error="ProblemError")
    add("error", "fa-paper-a100", "fa2", _problem(256, 64, dtype="fp4"), expect_error="ProblemError")

    ids = [c["id"] for c in out]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"duplicate configuration ids: {duplicates}")
    return out

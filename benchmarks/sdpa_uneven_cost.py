"""Do head dims that are no kernel size step slower? (device machine)

d = 40, 72, 112 run the kernels compiled for 64, 96, 128 with ``Is_even_K = false``: every
load and store of a head-dim-wide tile is predicated column by column and the columns past d
are cleared in shared memory (flash-attn's ``copy<..., Is_even_K>``). The step factors of
``iosim.kernels.coresidency`` were measured at the kernel sizes. This measures both passes at
d = 40, 72, 112 beside 64, 96, 128 in one run, the way ``sdpa_block_cost.py`` (forward: one
query block a head, 132 and 264 blocks, 512 … 8,192 keys; slope per 1,024 keys) and
``sdpa_bwd_cost.py`` (backward, layout "shared": one head of 132 key blocks, N_q = 256 …
4,096; slope per 1,024 query rows) do. fp16, ncu's ``gpu__time_duration``.

Run (device):  python3 benchmarks/sdpa_uneven_cost.py --out DIR     (ncu; writes DIR/uneven_cost.json)
               UNEVEN_SET=wide python3 benchmarks/sdpa_uneven_cost.py --out DIR2   (the second run)
               UNEVEN_SET=small python3 benchmarks/sdpa_uneven_cost.py --out DIR3  (the 32 kernel's, session 26)
               UNEVEN_KV_HEADS=1 UNEVEN_SET=... (session 27: the forwards with one K/V head)
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_block_cost import cli, durations, save, sdpa_calls  # noqa: E402

REPEATS = 3
SMS = 132
#: which set of head dims (``UNEVEN_SET``, inherited by ncu's target process)
SET = os.environ.get("UNEVEN_SET", "first")
#: the first run's head dims; the second's (``--set wide``) adds the 192 and 256 kernels' and a
#: second uneven d of the 64 kernel (the forward only up to 192: with 132 or 264 blocks of
#: d > 192 PyTorch runs the split-KV kernel)
HEAD_DIMS = {"first": (40, 64, 72, 96, 112, 128), "wide": (48, 160, 192, 224, 256),
             # session 26: the 32 kernel's uneven instantiation (d = 8 … 24; PyTorch pads d = 12 to 16)
             "small": (16, 24, 32)}


#: K/V heads of the forwards (``UNEVEN_KV_HEADS``, inherited by ncu's target process): unset, each
#: query head its own; 1 (session 27): the keys stay in the L2 (docs/validation/2026-12-04-block-kv.md)
KV_HEADS = int(os.environ["UNEVEN_KV_HEADS"]) if os.environ.get("UNEVEN_KV_HEADS") else None


def _bwd_block_kv(d: int) -> int:
    """The backward's B_c (docs/spec/kernels.md): 128 up to d = 128, then 64."""
    return 128 if d <= 128 else 64


def configs(name: str = "first") -> list[dict]:
    dims = HEAD_DIMS[name]
    fwd = [{"pass": "forward", "d": d, "heads": blocks, "n_q": 128, "n_kv": 256 * s}
           for d in dims if d <= 192 for blocks in ((SMS,) if d > 128 else (SMS, 2 * SMS)) for s in (2, 4, 8, 16, 32)]
    if KV_HEADS:   # the forwards only: the backward's layout has one head already
        return [{**c, "kv_heads": KV_HEADS} for c in fwd]
    bwd = [{"pass": "backward", "d": d, "heads": 1, "n_q": 128 * s, "n_kv": SMS * _bwd_block_kv(d)}
           for d in dims for s in (2, 4, 8, 16, 32)]
    return fwd + bwd


def target() -> None:
    for cfg in configs(SET):
        sdpa_calls(cfg["d"], cfg["heads"], cfg["n_q"], cfg["n_kv"], REPEATS, backward=cfg["pass"] == "backward",
                   kv_heads=cfg.get("kv_heads"))


def summarise(text: str, out: str, machine: dict) -> None:
    """Per configuration, the median of its main kernel's launches (the forward's flash_fwd_kernel;
    the backward's dq_dk_dv kernel), in launch order."""
    launches = [(n, t) for n, _, t in durations(text)]
    rows, at = [], 0
    for cfg in configs(SET):
        want = "flash_fwd_kernel" if cfg["pass"] == "forward" else "flash_bwd_dq_dk_dv"
        got = []
        while at < len(launches) and len(got) < REPEATS:
            name, t = launches[at]
            at += 1
            if want in name and "splitkv" not in name:
                got.append(t)
        got.sort()
        rows.append({**cfg, "times_s": got, "median_s": got[len(got) // 2] if got else None})
    save(out, "uneven_cost.json", {**machine, "set": SET, "launches": len(launches), "rows": rows})
    print(f"{len(launches)} launches; {sum(r['median_s'] is not None for r in rows)} of {len(rows)} configurations")


def main() -> None:
    cli(__doc__, target, summarise, "uneven_cost.json", "regex:flash_", __file__)


if __name__ == "__main__":
    main()

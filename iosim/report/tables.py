"""Turn a :class:`~iosim.run.result.Result` into a table, JSON or CSV."""

from __future__ import annotations

import csv
import io
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:                     # for the annotations only: `iosim profiles` need not load a run
    from ..run.result import Result


def format_bytes(n: float) -> str:
    """Binary-prefixed size, e.g. 134,217,728 → '128.0 MiB'."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def format_seconds(s: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def render_table(rows: list[list[str]], header: list[str], align: str | None = None) -> str:
    """A plain-text table; ``align`` has one 'l' or 'r' per column (default: first left)."""
    align = align or "l" + "r" * (len(header) - 1)
    cells = [header] + rows
    widths = [max(len(str(r[c])) for r in cells) for c in range(len(header))]

    def line(row):
        cells = (str(v).ljust(w) if a == "l" else str(v).rjust(w) for v, w, a in zip(row, widths, align))
        return "  ".join(cells).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def result_table(r: Result) -> str:
    """The human-readable report of ``iosim simulate``."""
    p = r.problem
    head = _head(r)
    rows = [
        [name, t.dtype, f"{t.read_bytes:,}", f"{t.write_bytes:,}", format_bytes(t.read_bytes + t.write_bytes)]
        for name, t in r.tensors.items()
    ]
    rows.append(["total", "", f"{r.hbm.read_bytes:,}", f"{r.hbm.write_bytes:,}", format_bytes(r.hbm.total_bytes)])
    traffic = render_table(rows, ["tensor", "dtype", "HBM read (B)", "HBM write (B)", "total"], "llrrr")
    chip = []
    for label, level in (("SRAM", r.sram), ("registers", r.registers)):
        cap = "—" if level.capacity_bytes is None else f"{level.capacity_bytes:,}"
        status = "fits" if level.fits else ("OVER" if level.enforced else "over: would spill")
        tiles = ", ".join(n for n, _, _ in level.peak_tiles) or "none modelled"
        chip.append([f"{label} ({level.level})", f"{level.peak_bytes:,}", cap, status, tiles])
    onchip = render_table(chip, ["on chip, per block", "peak (B)", "capacity (B)", "", "resident at peak"], "lrrll")
    timing = _timing(r)
    th = r.theorem2
    per_head = r.hbm.total_elements // p.heads_total
    theory = (
        f"{th.name} ({th.family}): count {per_head:,} elements per head vs {th.expression} = {th.value:,.0f}; "
        f"ratio {th.ratio(per_head):.3f}" + ("" if th.in_regime else "  [outside d ≤ M ≤ N·d]")
    )
    summary = (
        f"FLOPs (matmul): {r.flops:,}   predicted time: {format_seconds(r.time.predicted_s)} "
        f"(bound by {r.time.bound})"
    )
    parts = [head, traffic, onchip, timing, summary, theory]
    if r.l2_off:
        from ..run.result import L2_OFF      # loaded with the result shown
        parts.append(f"L2 model: off ({r.l2_off.removeprefix(L2_OFF)})")
    if r.cache is not None:
        notes = {l["pass"]: "; ".join(t for t in (l.get("l2_note"), _lines_note(l.get("l2_lines")),
                                                  l.get("l2_edge", {}).get("note")) if t)
                 for l in r.options.get("launches", ())}
        notes = {k: v for k, v in notes.items() if v}
        parts += _l2_lines(r.cache, notes)
    return "\n\n".join(parts)


def _head(r: Result) -> str:
    """The table's head: the run, its tiles (or each launch's), its block mask, and its notes."""
    p = r.problem
    shape = f"N={p.seq_len_q}" if p.is_square else f"N_q={p.seq_len_q} N_kv={p.seq_len_kv}"
    title = (
        f"{r.algorithm} {r.passes} on {r.profile}: {shape} d={p.head_dim} batch={p.batch} heads={p.heads} "
        + (f"kv_heads={p.kv_heads} " if p.kv_heads != p.heads else "") +
        f"{p.dtype}{' causal' if p.causal else ''}{' layout bnhd' if p.layout == 'bnhd' else ''}"
    )
    if "block_mask" in r.options:   # block-sparse (Algorithm 5): the share of block pairs it keeps
        title += f", block mask {r.options['block_mask']}, density {r.options['block_density']:.4g}"
    if "launches" in r.options:  # a real-kernel preset: each launch has its own tile
        tiles = [f"launch: {l['pass']} {l['schedule']} B_r={l['block_q']} B_c={l['block_kv']}"
                 + (f" splits={l['num_splits']}" if l.get("num_splits") else "") + f" ({l['kernel']}; {l['rule']})"
                 for l in r.options["launches"]]
    else:
        tiles = [f"blocks: B_r={r.blocks.block_q} B_c={r.blocks.block_kv} ({r.block_rule}; "
                 f"T_r={r.blocks.num_q_blocks(p)}, T_c={r.blocks.num_kv_blocks(p)}; M={r.sram_elements:,} elements)"]
    padded = r.options.get("kernel_problem", {}).get("head_dim", p.head_dim)
    if padded != p.head_dim:
        tiles.append(f"note: the kernels run d={padded}: PyTorch's SDPA pads the head dim to a multiple of 8 "
                     f"(softmax scale 1/sqrt({p.head_dim}); docs/spec/kernels.md §1.1)")
    tiles += [f"note: {n}" for n in r.notes]
    return title + "\n" + "\n".join(tiles)


def _lines_note(how: str | None) -> str | None:
    """What the table says of a launch whose buffers of many heads' rows were not played as the
    lines they share (``options.launches[].l2_lines``), else None."""
    if how is None or how == "lines":
        return None
    return (f"here its buffers of all query heads' rows side by side are played as {how} of one head's "
            "rows, not as the lines they share (docs/validation/2026-12-04-lines.md)")


def _l2_lines(cache, cache_notes: dict | None = None) -> list[str]:
    """The L2 model's lines: its totals (and the caches behind it), per kernel where it is known
    to part from the measured (``cache_notes``: pass -> note), and per kernel estimated past the
    exact model's budget, how."""
    s = cache.total
    parts = [
        f"L2 model (docs/cache.md{'; two partitions' if cache.partitions == 2 else ''}): "
        f"{format_bytes(s.read_bytes)} read requests, hit rate {100 * s.hit_rate:.1f}%; "
        f"DRAM read {s.dram_read_bytes:,} B, written back {s.dram_write_bytes:,} B during the kernel, "
        f"{s.dirty_bytes_left:,} B dirty in the cache at its end (written later; a profiler's "
        "per-kernel DRAM writes leave it out)"
        + "".join(f"; {name}: {format_bytes(t.read_bytes)} read requests, hit rate {100 * t.hit_rate:.1f}%"
                  for name, t in cache.outer_totals().items())]
    for kernel, note in (cache_notes or {}).items():
        parts.append(f"L2 model, {kernel}: {note}")
    for kernel, fills in (cache.frames or {}).items():
        parts.append(f"L2 model, {kernel}: {fills:,} B of its DRAM reads fill spilled registers that some lanes "
                     "never wrote, once per thread-block slot (docs/validation/2026-12-04-frames.md)")
    if cache.code:
        parts.append("L2 model: the DRAM reads include each kernel's code, read once after the profiler's cache "
                     "flush (" + ", ".join(f"{k} {b:,} B" for k, b in cache.code.items())
                     + "; docs/validation/2026-12-04-code.md)")
    for kernel, got in (cache.sampled or {}).items():
        how = (f"sampling 1 in {round(1 / got.rate)} of its chunks" if got.model == "sampled" else
               f"playing {100 * got.rate:.2g}% of its requests, in windows of its rounds")
        short = (f"; its warm-ups reached {got.warm:.2f} of the largest cache's capacity"
                 if got.warm is not None and got.warm < 1 else "")
        parts.append(f"L2 model, {kernel}: DRAM bytes estimated by {how} (the run is past the exact model's "
                     f"budget); half the sample gave {100 * got.within:.2f}% apart{short} (docs/cache.md)")
    return parts


def _timing(r: Result) -> str:
    """The kernel time model's table, one row per kernel (with a note for a launch that has
    none), or the roofline's, one row per resource."""
    if r.kernel_times:  # the kernel time model (iosim.models.kernel_time), one row per launch
        times = [[name, format_seconds(t.predicted_s), t.bound] for name, t in r.kernel_times.items()]
        timing = render_table(times, ["kernel (time model)", "time", "bound by"], "lrl")
        unmodelled = [f"{l['pass']} ({l['block_q']} × {l['block_kv']})" for l in r.options.get("launches", ())
                      if not l.get("time_model", "kernel").startswith("kernel")]
        if unmodelled:
            timing += ("\nnote: no kernel time model for the " + ", ".join(unmodelled) + " launch: its time in the "
                       "total below is the roofline's, a lower bound")
        timing += "".join(f"\nnote, {l['pass']}: {l['time_note']}" for l in r.options.get("launches", ())
                          if "time_note" in l)
        return timing
    times = [[name, format_seconds(s)] for name, s in sorted(r.time.per_resource_s.items(), key=lambda kv: -kv[1])]
    notes = sorted({l["time_model"] for l in r.options.get("launches", ()) if "time_model" in l})
    return render_table(times, ["resource (roofline)", "time"], "lr") + "".join(f"\nnote: {n}" for n in notes)


def result_json(r: Result) -> str:
    return json.dumps(r.to_dict(), indent=2)


def result_csv(r: Result) -> str:
    """One row per tensor plus a total row: tensor, dtype, read/write bytes and elements."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["algorithm", "tensor", "dtype", "read_bytes", "write_bytes", "read_elements", "write_elements"])
    for name, t in r.tensors.items():
        w.writerow([r.algorithm, name, t.dtype, t.read_bytes, t.write_bytes, t.read_elements, t.write_elements])
    h = r.hbm
    w.writerow([r.algorithm, "total", "", h.read_bytes, h.write_bytes, h.read_elements, h.write_elements])
    return out.getvalue()


FORMATTERS = {"table": result_table, "json": result_json, "csv": result_csv}

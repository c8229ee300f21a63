"""Models of the real kernels' deviations from the paper listings (docs/spec/algorithms.md §7).
The gradients' exactness is tests/numeric/test_gradients.py."""

import pytest

from iosim import Options, Problem, simulate
from iosim.engine.tensors import rounded_head_size
from iosim.schedules.fa2_kernel_backward import fa2_kernel_backward

import closed_forms as cf
from closed_forms import BIG, per_tensor


def kernel_backward_form(n, d, br, bc, causal):
    """§7 per head, with R = Σ_A r_i in place of T_c·N when causal. D (softmax_d) and dQaccum
    are buffers of whole blocks of rows (Ñ = T_r·B_r; R̃ = R with every active block's B_r
    rows), moved whole (the main kernel reads D unpredicated), and dQaccum's rows have the
    rounded head size d̃ (40 → 64, 160 → 192)."""
    t_c, n_pad = cf.ceil_div(n, bc), cf.ceil_div(n, br) * br
    R = cf.causal_R(n, br, bc) if causal else t_c * n
    R_pad = sum(n_pad - (j * bc // br) * br for j in range(t_c)) if causal else t_c * n_pad
    d_r = rounded_head_size(d)
    nd = n * d
    return {"dO": (nd + R * d, 0), "O": (nd, 0), "D": (R_pad, n_pad), "L": (R, 0), "Q": (R * d, 0), "K": (nd, 0),
            "V": (nd, 0), "dQaccum": ((R_pad + n_pad) * d_r, (n_pad + R_pad) * d_r), "dQ": (0, nd), "dK": (0, nd),
            "dV": (0, nd)}


def test_rounded_head_size():
    """flash-attn 2's dQaccum head size, as measured on an H200 (docs/validation/2026-12-01-sdpa-unseen.md)."""
    assert [rounded_head_size(d) for d in (32, 40, 64, 80, 96, 128, 160, 192, 200, 256)] == \
        [32, 64, 64, 96, 96, 128, 192, 192, 256, 256]


@pytest.mark.parametrize("n,d,br,bc", [(8192, 128, 64, 128), (1000, 64, 128, 128), (777, 32, 64, 48),
                                       (1000, 80, 64, 128), (333, 160, 64, 64)])
@pytest.mark.parametrize("causal", [False, True])
def test_fa2_kernel_backward_counts(paper_a100, n, d, br, bc, causal):
    r = simulate(paper_a100, fa2_kernel_backward, Problem(seq_len=n, head_dim=d, causal=causal, heads=2), blocks=(br, bc), options=Options(sram_bytes=BIG))
    assert per_tensor(r, 2) == kernel_backward_form(n, d, br, bc, causal)


def test_fa2_kernel_backward_worked_example(paper_a100):
    """§9.2: real bwd tile 64 × 128 at N = 8192, d = 128."""
    r = simulate(paper_a100, fa2_kernel_backward, Problem(seq_len=8192, head_dim=128), blocks=(64, 128))
    assert (r.hbm.total_elements, r.hbm.total_bytes) == (278_929_408, 832_602_112)
    c = simulate(paper_a100, fa2_kernel_backward, Problem(seq_len=8192, head_dim=128, causal=True), blocks=(64, 128))
    assert c.hbm.total_elements == 146_292_736




def test_a_launch_without_a_kernel_time_model_says_so(capsys, monkeypatch):
    """Issue 14: the JSON names each launch's model, and where a tile has no checked warp
    layout the table says the roofline stands in. Every backward rule now carries its
    atoms (checked against the kernels' names: test_kernel_time.py), so d = 96, 160 and 192
    have the model in both passes; an unchecked layout is made by blanking d = 96's atoms."""
    import json
    from iosim.cli.main import main
    from iosim.kernels import tile_tables

    argv = ["simulate", "--hw", "h200", "--algo", "fa2", "-N", "1024", "-d", "96", "--kernel", "flash-attn-2",
            "--pass", "forward+backward", "--no-cache"]
    for d in ("96", "160", "192"):
        assert main(argv[:8] + [d, *argv[9:], "--format", "json"]) == 0
        assert {l["time_model"] for l in json.loads(capsys.readouterr().out)["options"]["launches"]} == \
            {"kernel time model"}, d
    monkeypatch.setattr(tile_tables.KernelTile, "warp_grids", property(
        lambda t: None if t.kernel_head_dim == 96 and t.warps == 8 else t.atoms))
    assert main(argv + ["--format", "json"]) == 0
    models = [(l["pass"], l["time_model"].split(":")[0]) for l in json.loads(capsys.readouterr().out)["options"]["launches"]]
    assert models == [("forward", "kernel time model"), ("backward", "roofline, a lower bound")]
    assert main(argv) == 0
    assert "note: no kernel time model for the backward (64 × 128) launch" in capsys.readouterr().out


def test_the_l2_model_says_where_it_is_not_exact_in_a_gqa_backward(capsys):
    """docs/validation/2026-12-04-lines.md: under GQA flash-attn 2's backward writes dK and dV
    rows of d = 8 (mod 16) next to other query heads' rows, sharing sectors, which the L2 model
    plays as lines with measured errors of 0.75-1.23 on decodes; the backward launch's JSON and
    the table say so, only there."""
    import json
    from iosim.cli.main import main

    argv = ["simulate", "--hw", "h200", "--algo", "fa2", "--seq-len-q", "1", "--seq-len-kv", "4000", "--batch", "2",
            "--heads", "8", "--kernel", "flash-attn-2", "--pass", "forward+backward", "-d"]
    for d, kv_heads, noted in ((40, 2, True), (72, 2, True), (40, 8, False), (48, 2, False), (64, 2, False)):
        assert main(argv + [str(d), "--kv-heads", str(kv_heads), "--format", "json"]) == 0
        launches = json.loads(capsys.readouterr().out)["options"]["launches"]
        assert [("dK and dV rows" in (l.get("l2_note") or "")) for l in launches] == [False, noted], (d, kv_heads)
    assert main(argv + ["40", "--kv-heads", "2"]) == 0
    assert "L2 model, backward: not exact: the main backward kernel's dK and dV rows (80 bytes" in \
        capsys.readouterr().out


#: a flash-attn-2 simulation on the H200 without the L2 model, as JSON (the notes come from the plan)
NOTED = ["simulate", "--hw", "h200", "--algo", "fa2", "--kernel", "flash-attn-2", "--no-cache", "--format", "json"]


def _l2_notes(capsys, *args) -> list:
    """Each launch's l2_note ("" where none) of ``iosim simulate`` with ``NOTED`` and ``args``."""
    import json
    from iosim.cli.main import main
    assert main(NOTED + [str(a) for a in args]) == 0
    return [l.get("l2_note") or "" for l in json.loads(capsys.readouterr().out)["options"]["launches"]]


def test_the_l2_model_says_where_it_is_not_exact_in_a_long_causal_forward(capsys):
    """docs/validation/2026-12-04-l2-address.md: a causal forward whose K/V head's K and V pass half
    an L2 partition (15.7 MB on the H200) is where the model's DRAM reads part from the GPU's
    (0.84-2.13 x over 20 such forwards); the forward launch says so, with its bytes, and no other:
    not below half a partition, not a dense forward, not the backward."""
    for n, d, causal, noted in ((40000, 128, True, True), (28000, 128, True, False), (40000, 128, False, False),
                                (65536, 64, True, True), (61000, 64, True, False), (16384, 256, True, True)):
        extra = ["--causal"] if causal else []
        notes = _l2_notes(capsys, "--seq-len", n, "-d", d, "--heads", 2, "--pass", "forward+backward", *extra)
        assert ["K/V head's K and V" in x for x in notes] == [noted, False], (n, d, causal)
        if noted:
            assert f"K and V ({2 * n * d * 2 / 1e6:.1f} MB) pass half an L2 partition (15.7 MB)" in notes[0]


def test_the_l2_model_says_where_it_is_not_exact_in_a_causal_forward_of_many_waves_at_d128(capsys):
    """docs/validation/2026-12-04-s29-heads.md: causal forwards at kernel head dim 128 past one wave
    of thread blocks (2 an SM on 132 SMs) read more than the model (0.85-1.04 x over 23); the
    forward says so with its blocks; one wave, d = 64 or 256, or a dense forward does not, and a
    forward past half a partition gets the long causal note alone."""
    for extra, expected in ((["-d", "128", "--seq-len", "4096", "--heads", "32", "--causal"], "1,024 blocks, 264 at once"),
                            (["-d", "112", "--seq-len", "2048", "--heads", "33", "--causal"], "528 blocks, 264 at once"),
                            (["-d", "128", "--seq-len", "2048", "--heads", "16", "--causal"], None),
                            (["-d", "64", "--seq-len", "4096", "--heads", "32", "--causal"], None),
                            (["-d", "128", "--seq-len", "4096", "--heads", "32"], None),
                            (["-d", "128", "--seq-len", "40000", "--heads", "32", "--causal"], None)):
        (note,) = _l2_notes(capsys, *extra)
        assert ("more than one wave" in note) == (expected is not None), extra
        if expected:
            assert expected in note, note


def test_the_l2_model_says_where_it_is_not_exact_in_a_long_backward(capsys):
    """docs/cache.md, "Sets": a backward whose query head's Q, dO and fp32 dQaccum rows
    (N_q · (4 d + 4 d_rounded) bytes at fp16 or bf16) pass half an L2 partition (15.7 MB on the H200) is where the
    model's DRAM reads part from the GPU's (0.86-1.14 x over 54 such backwards); the backward launch
    says so, with its bytes, and not the forward; nor a backward below that size, however long its keys."""
    for n_q, n_kv, d, noted in ((32768, 32768, 64, True), (30000, 30000, 64, False), (16384, 16384, 128, True),
                                (15000, 15000, 128, False), (4096, 65536, 64, False), (8192, 8192, 256, True),
                                (38000, 38000, 40, True)):   # d = 40: dQaccum 64 wide (12.2 MB at d · 8 B a row)
        notes = _l2_notes(capsys, "--pass", "forward+backward", "--heads", 2, "--seq-len-q", n_q, "--seq-len-kv", n_kv,
                          "-d", d)
        assert ["which its key blocks walk together" in x for x in notes] == [False, noted], (n_q, n_kv, d)
        if noted:
            rows = n_q * (4 * d + 4 * (-(-d // 32) * 32))        # Q, dO at 2 bytes; dQaccum fp32, d rounded to 32
            assert f"dQaccum rows ({rows / 1e6:.1f} MB, " in notes[1] and "(15.7 MB)" in notes[1]


def test_the_l2_model_says_where_it_is_not_exact_in_a_gqa_decode_backward(capsys):
    """docs/cache.md, "Sets": a GQA backward of at most 16 query rows is where the model reads too
    little (0.72-1.00 x over 27 such backwards); the backward launch says so, an MHA decode's or a
    GQA backward of 17 rows does not, nor does the forward."""
    for n_q, kv_heads, noted in ((1, 2, True), (16, 4, True), (1, 8, False), (17, 2, False)):
        notes = _l2_notes(capsys, "--seq-len-kv", 8192, "-d", 64, "--batch", 2, "--heads", 8, "--pass", "forward+backward",
                          "--seq-len-q", n_q, "--kv-heads", kv_heads)
        assert ["a GQA backward of N_q <= 16 query rows" in x for x in notes] == [False, noted], (n_q, kv_heads)


def test_a_launch_says_whether_its_shared_lines_were_played_as_lines(capsys, monkeypatch):
    """docs/validation/2026-12-04-lines.md: a flash-attn-2 backward whose rows of many heads leave
    lines to share (GQA's dK, dV; since session 45 O and dO at more than one head,
    docs/validation/2026-12-06-torn-units.md) names how the L2 model played them
    (options.launches[].l2_lines): as lines where every head is played, as chunks where the model
    estimates from a sample or windows; rows of whole lines say nothing. The table says so where
    they were not lines."""
    import json
    from iosim.cli.main import main
    import iosim.run.launches as launches

    argv = ["simulate", "--hw", "h200", "--algo", "fa2", "-N", "2048", "--heads", "8", "--kernel", "flash-attn-2",
            "--pass", "backward", "--format", "json", "-d"]
    for d, kv_heads, how in ((72, 2, "lines"), (96, 2, "lines"), (64, 2, None), (72, 8, "lines"), (128, 8, None)):
        assert main(argv + [str(d), "--kv-heads", str(kv_heads)]) == 0
        (launch,) = json.loads(capsys.readouterr().out)["options"]["launches"]
        assert launch.get("l2_lines") == how, (d, kv_heads)
    monkeypatch.setattr(launches, "AUTO_REQUESTS", 2000)       # past the budget: estimated in windows
    monkeypatch.setattr(launches, "SAMPLE_REQUESTS", 1000)
    assert main(argv + ["72", "--kv-heads", "2"]) == 0
    (launch,) = json.loads(capsys.readouterr().out)["options"]["launches"]
    assert launch["l2_lines"] == "chunks (windowed)"
    assert main(argv[:-3] + ["-d", "72", "--kv-heads", "2"]) == 0
    assert "played as chunks (windowed) of one head's rows, not as the lines they share" in capsys.readouterr().out
    monkeypatch.undo()
    from iosim.models.cache import partitions
    monkeypatch.setattr(partitions, "MAX_TURNS", 0)           # the reference plays the partitions: no stays
    assert main(argv + ["72", "--kv-heads", "2"]) == 0
    (launch,) = json.loads(capsys.readouterr().out)["options"]["launches"]
    assert launch["l2_lines"] == "chunks (turns unsettled)"


@pytest.mark.parametrize("d,kernel_d", [(40, 64), (80, 96), (160, 192)])
def test_products_run_at_the_kernels_head_dim(d, kernel_d, monkeypatch):
    """A head dim that is no kernel size runs the next kernel (kHeadDim), whose products
    are that wide: the tensor-core and operand times of d = 40 are those of d = 64 with the
    same tiles, forward and (where its warp layout is known) backward; the traffic is d's.
    (Its uneven instantiation's measured step factors, which make it slower, are set aside
    here: tests/invariants/test_measured_steps.py checks them.)"""
    from iosim.kernels import coresidency

    for table in ("UNEVEN_FACTORS", "UNEVEN_STEP_FACTORS", "UNEVEN_BACKWARD_FACTORS"):
        monkeypatch.setattr(coresidency, table, {})

    def run(head_dim):
        return simulate("h200", "fa2", Problem(seq_len=4096, head_dim=head_dim, heads=8), passes="forward+backward",
                        options=Options(kernel="flash-attn-2", cache=False))
    small, kernel = run(d), run(kernel_d)
    assert small.hbm.read_bytes < kernel.hbm.read_bytes
    for name, t in small.kernel_times.items():
        if name in ("main", "dq_dk_dv") and name in kernel.kernel_times:
            per, ref = t.per_resource_s, kernel.kernel_times[name].per_resource_s
            assert per["tensor cores"] == pytest.approx(ref["tensor cores"], rel=1e-9), name
            assert per["shared memory"] == pytest.approx(ref["shared memory"], rel=1e-9), name


def test_padding_keeps_a_kernel_size_unchanged():
    from iosim.models.kernel_time import WarpLayout
    products = {(128, 64, 128, True, True): 3, (128, 128, 64, False, True): 3}
    assert WarpLayout(4, head_dim=128, kernel_head_dim=128).padded(products) is products
    assert WarpLayout(4, head_dim=40, kernel_head_dim=64).padded({(128, 64, 40, True, True): 2,
                                                                    (128, 40, 64, False, True): 2}) == \
        {(128, 64, 64, True, True): 2, (128, 64, 64, False, True): 2}

"""SRAM capacity: overflow fails with the resident tiles named; the paper's defaults fit."""

import pytest

from iosim import Options, CapacityError, Problem, list_profiles, load_profile, simulate


@pytest.mark.parametrize("name", list_profiles())
@pytest.mark.parametrize("d", [16, 32, 64, 128, 256])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16", "fp8"])
def test_paper_default_blocks_fit_under_kernel_residency(name, d, dtype):
    profile = load_profile(name)
    for algo in ("fa1", "fa2"):
        r = simulate(profile, algo, Problem(seq_len=4096, head_dim=d, dtype=dtype))
        assert r.sram.fits and r.sram.peak_bytes <= r.sram.capacity_bytes
        assert r.block_rule == "paper"


def test_paper_defaults_overflow_when_everything_sits_in_sram(paper_a100):
    """The paper's abstract SRAM: Q, K, V, O, S and the statistics do not all fit in M."""
    with pytest.raises(CapacityError) as info:
        simulate(paper_a100, "fa1", Problem(seq_len=8192, head_dim=128), options=Options(residency="sram"))
    message = str(info.value)
    for tile in ("K_j", "V_j", "Q_i", "O_i", "S_ij"):
        assert tile in message


def test_overflow_names_tiles_and_sizes(h100):
    with pytest.raises(CapacityError) as info:
        simulate(h100, "fa2", Problem(seq_len=8192, head_dim=128), blocks=(128, 1024))
    message = str(info.value)
    assert "Q_i 32,768 B" in message and "K_j 262,144 B" in message
    assert "232,448" in message  # H100's 227 KiB per block


def test_peak_occupancy_is_reported(h100):
    r = simulate(h100, "fa2", Problem(seq_len=8192, head_dim=128), blocks=(128, 64))
    # Q_i (128×128) + K_j + V_j (64×128 each), fp16: the real kernel's 64 KB (docs/spec/kernels.md §2).
    assert r.sram.peak_bytes == 128 * 128 * 2 + 2 * 64 * 128 * 2 == 65_536
    assert {name for name, _, _ in r.sram.peak_tiles} == {"Q_i", "K_j", "V_j"}
    # S_ij (128×64), O_i (128×128), m_i, ℓ_i in fp32 registers.
    assert r.registers.peak_bytes == 4 * (128 * 64 + 128 * 128 + 2 * 128)


def test_an_overflow_of_many_tiles_names_eight_and_counts_the_rest():
    """A schedule that hoards tiles gets a message of bounded length (a red-team pass, session 48)."""
    def hoard(ctx):
        for i in ctx.q_blocks():
            [ctx.fill(f"acc{k}", i, 0.0, role="output") for k in range(1100)]

    with pytest.raises(CapacityError) as info:
        simulate(load_profile("toy"), hoard, Problem(seq_len=256, head_dim=16), options=Options(enforce_registers=True))
    message = str(info.value)
    assert "acc7 64 B (16 × fp32); and 1,017 more." in message and "acc8" not in message
    assert len(message) < 800

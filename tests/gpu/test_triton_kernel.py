"""iosim's Triton FA2 forward against a float64 reference, on a small shape (skips without a
GPU, PyTorch or Triton)."""

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (the Triton kernel runs on torch tensors)")
pytest.importorskip("triton", reason="Triton is not installed (an optional extra, like CuPy)")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU visible", allow_module_level=True)

from iosim.gpu.triton_attention import fa2_forward, reference  # noqa: E402


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("cfg", [(128, 64, 4, 3), (32, 16, 2, 1), (64, 128, 8, 2)])
def test_matches_float64(cfg, d, causal):
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(2, 3, 200, d, device="cuda", dtype=torch.float16, generator=g) for _ in range(3))
    o, lse, _ = fa2_forward(q, k, v, causal, *cfg)
    o_ref, l_ref = reference(q, k, v, causal)
    # fp16 P and O: about 2^-11 relative each; 1e-2 absolute on |O| <~ 1 leaves room for N=200 sums
    assert (o.double() - o_ref).abs().max().item() <= 1e-2
    assert (lse.double() - l_ref).abs().max().item() <= 1e-3

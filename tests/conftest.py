import pytest

from iosim import load_profile


@pytest.fixture(scope="session")
def paper_a100():
    """The FlashAttention paper's illustrative A100 (M = 98,304 fp16 elements)."""
    return load_profile("fa-paper-a100")


@pytest.fixture(scope="session")
def h100():
    return load_profile("h100-sxm")

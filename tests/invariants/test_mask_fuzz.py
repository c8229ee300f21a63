"""Fuzz the block-mask reader with Hypothesis (issue 16): mutated .npy and text mask files,
and arrays of any dtype, give a T_r × T_c bool mask or a short ProblemError, never another
exception. The mutations are benchmarks/fuzz_profiles.py's (``--target masks``)."""

from conftest import load_module
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from iosim.errors import ProblemError
from iosim.workload.masks import parse_block_mask


FUZZ = load_module("fuzz_profiles", Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz_profiles.py")
SETTINGS = settings(max_examples=120, deadline=10_000, derandomize=True, database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def chooser(data):
    return FUZZ.Chooser(lambda seq: data.draw(st.sampled_from(seq)), lambda lo, hi: data.draw(st.integers(lo, hi)))


@SETTINGS
@given(data=st.data())
def test_mutated_mask_files_load_or_fail_cleanly(tmp_path, data):
    c = chooser(data)
    raw, suffix = FUZZ.mask_seed(c)
    outcome, detail = FUZZ.mask_one(FUZZ.mutate_mask(c, raw), suffix, str(tmp_path))
    assert outcome in ("valid", "rejected"), detail


@settings(SETTINGS, max_examples=80)
@given(array=hnp.arrays(st.one_of(hnp.scalar_dtypes(), st.just(np.dtype(object))),
                        hnp.array_shapes(min_dims=0, max_dims=3, max_side=7)))
def test_arrays_of_any_dtype_and_shape(array):
    try:
        mask = parse_block_mask(array, *FUZZ.MASK_SHAPE, 64, 64)
    except ProblemError as error:
        assert FUZZ.message_violations(error) == []
        return
    assert mask.dtype == bool and mask.shape == FUZZ.MASK_SHAPE

"""Tensor repr, differential against PyTorch 2.13: shared element format, scientific switch,
alignment, wrapping at 80 columns, summarisation, suffixes and their line breaks."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import adcompile

CASES = {
    "scalar_int_valued": lambda t: t.tensor(7.0),
    "scalar_half": lambda t: t.tensor(0.5),
    "scalar_third": lambda t: t.tensor(1.0) / 3,
    "int_valued_vector": lambda t: t.tensor([1.0, 2.0]),
    "mixed_vector": lambda t: t.tensor([1.0, 2.5]),
    "negative_padding": lambda t: t.tensor([-1.0, 2.5]),
    "three_widths": lambda t: t.tensor([0.1, -1.4801, 12.25]),
    "large_float32": lambda t: t.tensor([123456.7]),
    "ints": lambda t: t.tensor([1, -2, 300]),
    "bools": lambda t: t.tensor([True, False]),
    "non_finite": lambda t: t.tensor([float("nan"), float("inf"), -float("inf"), 1.0]),
    "zero": lambda t: t.tensor([0.0]),
    "negative_zero": lambda t: t.tensor([-0.0]),
    "sci_small": lambda t: t.tensor([1e-5, 1.0]),
    "sci_large": lambda t: t.tensor([1e5, 1.0]),
    "sci_ratio": lambda t: t.tensor([0.5, 600.0]),
    "sci_ratio_int": lambda t: t.tensor([1.0, 1001.0]),
    "ratio_exactly_1000": lambda t: t.tensor([1.0, 1000.0]),
    "1e8_int": lambda t: t.tensor([100000000.0]),
    "1.5e8": lambda t: t.tensor([1.5e8]),
    "1e-4_float32": lambda t: t.tensor([0.0001]),
    "1e-4_float64": lambda t: t.tensor([0.0001], dtype=t.float64),
    "int_width": lambda t: t.tensor([1.0, 999.0]),
    "matrix": lambda t: t.tensor([[1.0, 2.0], [3.0, 4.0]]),
    "cube": lambda t: t.arange(24.0).reshape(2, 3, 4) / 7,
    "wrapped_row": lambda t: t.arange(30.0) / 7,
    "wrapped_ints": lambda t: t.arange(100),
    "empty": lambda t: t.zeros(0),
    "empty_2d": lambda t: t.zeros(2, 0),
    "empty_int": lambda t: t.zeros(0, dtype=t.int64),
    "summarised_vector": lambda t: t.arange(2000.0) / 3,
    "summarised_matrix": lambda t: t.arange(4000).reshape(40, 100),
    "summarised_cube": lambda t: (t.arange(3000.0) / 11).reshape(30, 10, 10),
    "float64": lambda t: t.tensor(1.0, dtype=t.float64) / 3,
    "float16": lambda t: t.tensor([1.0, 2.0], dtype=t.float16) / 3,
    "int32": lambda t: t.tensor([1, 1], dtype=t.int32),
    "uint8": lambda t: t.tensor([1, 200], dtype=t.uint8),
    "requires_grad": lambda t: t.tensor([1.0, 2.0], requires_grad=True),
    "requires_grad_f64": lambda t: t.tensor([1.0, 2.0], dtype=t.float64, requires_grad=True),
    "grad_fn": lambda t: t.tensor([1.0, 2.0], requires_grad=True).sum(),
    "grad_fn_f64": lambda t: (t.tensor([1.0, 2.0], dtype=t.float64, requires_grad=True) * 2),
    "grad_fn_tiny": lambda t: t.tensor(2.1028e-07, requires_grad=True) + 0,
    "suffix_wraps": lambda t: t.tensor([[1.4, 0.3, -0.6, 1.4, 1.1]], requires_grad=True) * 1,
    "long_f64_suffix_wraps": lambda t: t.arange(9.0, dtype=t.float64, requires_grad=True) * 1.5,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_repr_matches_torch(name):
    assert repr(CASES[name](adcompile)) == repr(CASES[name](torch))


def test_str_format_and_lists():
    for lib in (torch, adcompile):
        t = lib.tensor(2.5)
        assert str(t) == repr(t) and f"{t}" == "2.5" and f"{t:.3f}" == "2.500"
    assert repr([adcompile.tensor(1.0), adcompile.tensor([2.0])]) == \
        repr([torch.tensor(1.0), torch.tensor([2.0])])


def test_parameter_repr():
    for value in ([1.0, 2.0], 3.0):
        ours = adcompile.nn.Parameter(adcompile.tensor(value))
        theirs = torch.nn.Parameter(torch.tensor(value))
        assert repr(ours) == repr(theirs)
    off = adcompile.nn.Parameter(adcompile.tensor([1.0, 2.0]), requires_grad=False)
    assert repr(off) == repr(torch.nn.Parameter(torch.tensor([1.0, 2.0]), requires_grad=False))


def test_printoptions_match_torch():
    try:
        for lib in (torch, adcompile):
            lib.set_printoptions(precision=2, linewidth=40)
        assert repr(adcompile.arange(20.0) / 3) == repr(torch.arange(20.0) / 3)
    finally:
        for lib in (torch, adcompile):
            lib.set_printoptions(profile="default")


magnitudes = st.sampled_from([1e-6, 1e-3, 1.0, 1e3, 1e7, 1e9])


@settings(max_examples=150, deadline=None)
@given(hnp.arrays(st.sampled_from([np.float32, np.float64]),
                  hnp.array_shapes(min_dims=0, max_dims=3, max_side=6),
                  elements=st.floats(-1e3, 1e3, width=32)), magnitudes)
def test_random_arrays_match_torch(values, scale):
    values = np.asarray(values * scale, dtype=values.dtype)
    assert repr(adcompile.from_numpy(values.copy())) == repr(torch.from_numpy(values.copy()))

"""Tensor repr, differential against PyTorch 2.13: `format_tensor` on a tensor's numpy data and
the suffixes PyTorch would show must equal `repr` of the real torch tensor. Covers the shared
element format, the scientific switch, alignment, wrapping, summarisation, empty tensors,
suffix line breaks, print options, and `repr` of adcompile tensors end to end."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import adcompile
from runtime.printing import format_tensor, get_printoptions, set_printoptions

NAN, INF = math.nan, math.inf


def torch_suffixes(t):
    """The suffixes PyTorch shows for `t` after the data (`size=` is format_tensor's own)."""
    suffixes = []
    implicit = (torch.get_default_dtype(),) if t.numel() == 0 else (
        torch.get_default_dtype(), torch.int64, torch.bool)
    if t.dtype not in implicit:
        suffixes.append(f"dtype={t.dtype}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return suffixes


def ours(t):
    return format_tensor(t.detach().numpy(), torch_suffixes(t))


def _randn(*shape, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=gen).to(dtype)


def _randint(*shape, low=-100, high=100, dtype=torch.int64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, shape, generator=gen, dtype=dtype)


def _grad(t):
    return t.clone().requires_grad_(True)


T = torch.tensor
CASES = {
    # shared format, padding and alignment
    "int_valued": lambda: T([1.0, 2.0]),
    "mixed": lambda: T([1.0, 2.5]),
    "int_width": lambda: T([1.0, 999.0]),
    "negative_padding": lambda: T([-1.0, 2.5]),
    "three_widths": lambda: T([0.1, -1.4801, 12.25]),
    "float32_rounding": lambda: T([123456.7]),
    "non_finite": lambda: T([NAN, INF, -INF, 1.0]),
    "only_non_finite": lambda: T([NAN, INF, -INF]),
    "nan_with_fraction": lambda: T([NAN, 0.5]),
    "nan_with_tiny": lambda: T([NAN, 1e-5]),
    "inf_with_huge": lambda: T([INF, 1e9]),
    "zero": lambda: T([0.0]),
    "negative_zero": lambda: T([-0.0]),
    "zeros_both_signs": lambda: T([-0.0, 0.0]),
    "negative_zero_fraction": lambda: T([-0.0, 0.5]),
    "negative_zero_scalar": lambda: T(-0.0),
    "rounds_up_a_digit": lambda: T([9.99996, 0.5]),
    "ints": lambda: T([1, -2, 300]),
    "bools": lambda: T([True, False]),
    "all_true": lambda: T([True, True]),
    "scalar": lambda: T(7.0),
    "scalar_third": lambda: T(1.0) / 3,
    "scalar_int": lambda: T(-42),
    "scalar_bool": lambda: T(True),
    # the scientific switch
    "sci_small": lambda: T([1e-5, 1.0]),
    "sci_large_ratio": lambda: T([1e5, 1.0]),
    "sci_fraction_ratio": lambda: T([0.5, 600.0]),
    "ratio_exactly_1000": lambda: T([1.0, 1000.0]),
    "ratio_just_over_1000": lambda: T([1.0, 1001.0]),
    "1e8_int": lambda: T([100000000.0]),
    "1.5e8": lambda: T([1.5e8]),
    "1e-4_float32": lambda: T([0.0001]),
    "1e-4_float64": lambda: T([0.0001], dtype=torch.float64),
    "huge_and_tiny": lambda: T([1e-10, 1e10]),
    "1e20": lambda: T([1e20, -3e20]),
    "1e-30": lambda: T([1e-30]),
    "float64_extremes": lambda: T([1e-300, 1e300], dtype=torch.float64),
    "large_randn": lambda: _randn(3, 4) * 1e10,
    "small_randn": lambda: _randn(3, 4) * 1e-6,
    "mid_randn_f64": lambda: _randn(5, dtype=torch.float64) * 1e4,
    # random normal tensors of many shapes
    "randn_0d": lambda: _randn(),
    "randn_1": lambda: _randn(1),
    "randn_5": lambda: _randn(5),
    "randn_3x4": lambda: _randn(3, 4),
    "randn_2x3x4": lambda: _randn(2, 3, 4),
    "randn_2x2x2x2": lambda: _randn(2, 2, 2, 2),
    "randn_100": lambda: _randn(100),
    "randn_2000": lambda: _randn(2000),
    "randn_40x40": lambda: _randn(40, 40),
    "randn_3x30": lambda: _randn(3, 30),
    # empty tensors
    "empty_1d": lambda: torch.zeros(0),
    "empty_2x0": lambda: torch.zeros(2, 0),
    "empty_0x3x2": lambda: torch.zeros(0, 3, 2),
    "empty_int": lambda: torch.zeros(0, dtype=torch.int64),
    "empty_bool_2d": lambda: torch.zeros(2, 0, dtype=torch.bool),
    "empty_f64_2d": lambda: torch.zeros(2, 0, dtype=torch.float64),
    "empty_requires_grad": lambda: torch.zeros(2, 0, requires_grad=True),
    # layout: nesting, wrapping, summarising
    "matrix": lambda: T([[1.0, 2.0], [3.0, 4.0]]),
    "cube": lambda: torch.arange(24.0).reshape(2, 3, 4) / 7,
    "wrapped_row": lambda: torch.arange(30.0) / 7,
    "wrapped_ints": lambda: torch.arange(100),
    "wrapped_matrix": lambda: torch.arange(60.0).reshape(2, 30) / 7,
    "summarised_vector": lambda: torch.arange(2000.0) / 3,
    "summarised_matrix": lambda: torch.arange(4000).reshape(40, 100),
    "summarised_cube": lambda: (torch.arange(3000.0) / 11).reshape(30, 10, 10),
    "summarised_narrow": lambda: torch.arange(2002.0).reshape(1001, 2),
    "summarised_bools": lambda: torch.arange(1500) % 3 == 0,
    "summarised_edges_decide_sci": lambda: torch.cat([T([1.0] * 3), torch.full((1000,), 1e-6),
                                                      T([2.0] * 3)]),
    # dtypes
    "float16": lambda: T([1.0, 2.0], dtype=torch.float16) / 3,
    "float16_randn": lambda: _randn(3, 4, dtype=torch.float16),
    "float16_max": lambda: T([65504.0, 1.0], dtype=torch.float16),
    "float16_tiny": lambda: T([6e-8, 1.0], dtype=torch.float16),
    "float16_summarised": lambda: _randn(1200, dtype=torch.float16),
    "float64": lambda: T(1.0, dtype=torch.float64) / 3,
    "float64_randn": lambda: _randn(2, 3, 4, dtype=torch.float64),
    "int8": lambda: _randint(3, 4, dtype=torch.int8),
    "int16": lambda: _randint(5, low=-30000, high=30000, dtype=torch.int16),
    "int32": lambda: _randint(2, 3, 4, dtype=torch.int32),
    "int64": lambda: _randint(7, low=-10**12, high=10**12),
    "int64_extreme": lambda: T([-2**63, 2**63 - 1]),
    "uint8": lambda: T([1, 200], dtype=torch.uint8),
    "uint8_summarised": lambda: _randint(1100, low=0, high=256, dtype=torch.uint8),
    "bool_matrix": lambda: _randn(3, 4) > 0,
    # suffixes
    "requires_grad": lambda: T([1.0, 2.0], requires_grad=True),
    "requires_grad_scalar": lambda: T(1.5, requires_grad=True),
    "requires_grad_f64": lambda: T([1.0, 2.0], dtype=torch.float64, requires_grad=True),
    "grad_fn_sum": lambda: T([1.0, 2.0], requires_grad=True).sum(),
    "grad_fn_mul_f64": lambda: T([1.0, 2.0], dtype=torch.float64, requires_grad=True) * 2,
    "grad_fn_tiny": lambda: T(2.1028e-07, requires_grad=True) + 0,
    "suffix_wraps": lambda: T([[1.4, 0.3, -0.6, 1.4, 1.1]], requires_grad=True) * 1,
    "both_suffixes_wrap": lambda: torch.arange(9.0, dtype=torch.float64, requires_grad=True) * 1.5,
    "f16_suffixes_wrap": lambda: _grad(_randn(8, dtype=torch.float16)) * 1,
    "multiline_grad_fn": lambda: _grad(_randn(3, 4)) * 2,
    "summarised_grad_fn": lambda: _grad(_randn(2000)).exp(),
    "wrapped_row_grad_fn": lambda: _grad(torch.arange(30.0)) / 7,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_format_tensor_matches_torch(name):
    t = CASES[name]()
    assert ours(t) == repr(t)


def test_addmm_suffix_example():
    t = torch.addmm(T([0.0] * 5), T([[1.0]]), T([[1.4, 0.3, -0.6, 1.4, 1.1]], requires_grad=True))
    expected = ("tensor([[ 1.4000,  0.3000, -0.6000,  1.4000,  1.1000]],\n"
                "       grad_fn=<AddmmBackward0>)")
    assert repr(t) == expected and ours(t) == expected


def test_literal_examples():
    assert format_tensor(np.array([1.0, 2.0], np.float32), []) == "tensor([1., 2.])"
    assert format_tensor(np.array([1e-5, 1.0], np.float32), []) == \
        "tensor([1.0000e-05, 1.0000e+00])"
    assert format_tensor(np.zeros((2, 0), np.float32), []) == "tensor([], size=(2, 0))"
    assert format_tensor(np.zeros(0, np.float32), []) == "tensor([])"
    assert format_tensor(np.float64(2.5), ["dtype=torch.float64"], prefix="Thing(") == \
        "Thing(2.5000, dtype=torch.float64)"
    assert ours(torch.arange(30.0) / 7).split("\n")[0].count(",") == 9  # 9 values a line


OPTION_SETS = [
    {"precision": 2},
    {"precision": 8},
    {"linewidth": 40},
    {"threshold": 5},
    {"threshold": 5, "edgeitems": 1},
    {"edgeitems": 0},
    {"threshold": 5, "edgeitems": 0},
    {"sci_mode": True},
    {"sci_mode": False},
    {"profile": "short"},
    {"profile": "full"},
    {"profile": "short", "precision": 6, "linewidth": 60},
]
OPTION_TENSORS = ["mixed", "non_finite", "only_non_finite", "sci_small", "ints", "bools",
                  "randn_0d", "randn_3x4", "randn_2x3x4", "randn_100", "randn_2000",
                  "summarised_matrix", "wrapped_row", "empty_2x0", "large_randn",
                  "summarised_grad_fn", "float16_randn", "int_width"]


@pytest.mark.parametrize("options", OPTION_SETS, ids=str)
def test_printoptions_match_torch(options):
    try:
        torch.set_printoptions(**options)
        set_printoptions(**options)
        assert get_printoptions() == torch._tensor_str.get_printoptions()
        for name in OPTION_TENSORS:
            t = CASES[name]()
            assert ours(t) == repr(t), name
    finally:
        torch.set_printoptions(profile="default")
        set_printoptions(profile="default")
    assert get_printoptions() == torch._tensor_str.get_printoptions()


magnitudes = st.sampled_from([1e-6, 1e-3, 1.0, 1e3, 1e7, 1e9])
elements = st.one_of(st.floats(-1e3, 1e3, width=32),
                     st.sampled_from([0.0, -0.0, 1.0, NAN, INF, -INF]))


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(st.sampled_from([np.float32, np.float64]),
                  hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6),
                  elements=elements), magnitudes)
def test_random_arrays_match_torch(values, scale):
    with np.errstate(over="ignore", invalid="ignore"):
        values = np.asarray(values * scale, dtype=values.dtype)
    t = torch.from_numpy(values.copy())
    assert format_tensor(values, torch_suffixes(t)) == repr(t)


END_TO_END = {
    "leaf": lambda lib: lib.tensor([1.0, 2.0], requires_grad=True),
    "sum_of_product": lambda lib: (lib.tensor([1.0, 2.0], requires_grad=True) * 2).sum(),
    "scalar_third": lambda lib: lib.tensor(1.0) / 3,
    "float64": lambda lib: lib.tensor([1.0, 2.5], dtype=lib.float64),
    "ints": lambda lib: lib.tensor([1, -2, 300]),
    "bools": lambda lib: lib.tensor([True, False]),
    "empty_int": lambda lib: lib.zeros(0, dtype=lib.int64),
    "empty_2d": lambda lib: lib.zeros(2, 0),
    "cube": lambda lib: lib.arange(24.0).reshape(2, 3, 4) / 7,
    "summarised": lambda lib: lib.arange(2000.0) / 3,
    "suffix_wraps": lambda lib: lib.tensor([[1.4, 0.3, -0.6, 1.4, 1.1]], requires_grad=True) * 1,
}


@pytest.mark.parametrize("name", sorted(END_TO_END))
def test_adcompile_repr_matches_torch(name):
    assert repr(END_TO_END[name](adcompile)) == repr(END_TO_END[name](torch))


def test_str_format_and_parameter():
    for lib in (torch, adcompile):
        t = lib.tensor(2.5)
        assert str(t) == repr(t) and f"{t}" == "2.5" and f"{t:.3f}" == "2.500"
    assert repr([adcompile.tensor(1.0), adcompile.tensor([2.0])]) == \
        repr([torch.tensor(1.0), torch.tensor([2.0])])
    for value in ([1.0, 2.0], 3.0):
        assert repr(adcompile.nn.Parameter(adcompile.tensor(value))) == \
            repr(torch.nn.Parameter(torch.tensor(value)))


def test_adcompile_printoptions_match_torch():
    try:
        for lib in (torch, adcompile):
            lib.set_printoptions(precision=2, linewidth=40)
        assert repr(adcompile.arange(20.0) / 3) == repr(torch.arange(20.0) / 3)
    finally:
        for lib in (torch, adcompile):
            lib.set_printoptions(profile="default")

"""Strides of elementwise results against PyTorch 2.13, over a table of input layouts.

TensorIterator lays out a result in three ways: C order when every operand has the result's
shape and is contiguous (the strides of size-1 dimensions aside); the operands' own strides
when all are dense with equal strides (channels-last first, for 4-dim ones); otherwise the
dimensions sorted by the operands' strides, where a Python number or 0-dim tensor it wraps
as an operand makes the shapes differ (`runtime.ops.layout.like_iterator`). numpy keeps
whatever strides a view has along size-1 dimensions, which the fuzzer found (`(v[1::2] *
2).stride()` was (4, 1) where torch's is (2, 1), so a later `view_as` of the result no longer
looked like the same memory to an in-place op's overlap check)."""

import pytest
import torch

import adcompile as ac


def _grid(L, *shape):
    n = 1
    for s in shape:
        n *= s
    return (L.arange(float(n)) - n / 3).reshape(shape)


LAYOUTS = {
    "contiguous": lambda L: _grid(L, 3, 4),
    "transposed": lambda L: _grid(L, 4, 3).t(),
    "sliced": lambda L: _grid(L, 6, 4)[::2],
    "sliced_columns": lambda L: _grid(L, 3, 8)[:, 1::2],
    "expanded": lambda L: _grid(L, 4).expand(3, 4),
    "expanded_column": lambda L: _grid(L, 3, 1).expand(3, 4),
    "zero_dim": lambda L: L.tensor(1.5),
    "one_element": lambda L: _grid(L, 1),
    "one_element_view": lambda L: _grid(L, 2, 3)[-2:4:2, 1],
    "column_of_transpose": lambda L: _grid(L, 1, 4).t(),
    "row_of_transpose": lambda L: _grid(L, 4, 1).t(),
    "stepped_row": lambda L: _grid(L, 2, 4)[1::2],
    "stepped_column": lambda L: _grid(L, 8, 1)[1::2],
    "narrowed_to_one": lambda L: _grid(L, 3, 4)[:, 1:2],
    "one_by_one_slice": lambda L: _grid(L, 2, 6)[1:, ::4][:, :1],
    "size1_middle_permuted": lambda L: _grid(L, 1, 4, 3).transpose(0, 1),
    "size1_trailing_permuted": lambda L: _grid(L, 2, 3, 1).permute(2, 0, 1),
    "size1_two_permuted": lambda L: _grid(L, 3, 1, 1).permute(1, 0, 2),
    "size1_inner_transposed": lambda L: _grid(L, 2, 3, 1).transpose(1, 2),  # (3, 1, 1)
    # a fresh result (no view) that keeps a view's size-1 strides: (1, 3) of strides (1, 1)
    # (fuzz seed 2414041582232: maximum of it and a 0-dim tensor was laid out (3, 1))
    "exp_of_row_of_transpose": lambda L: _grid(L, 3, 2).t()[1:2].exp(),
    # a fresh dense result, (1, 3, 2) of strides (3, 1, 3): a unary op keeps them all (fuzz
    # seed 231881746129: cos of one had numpy's (1, 1, 3))
    "result_of_unsqueezed_transpose": lambda L: _grid(L, 2, 3).t()[None] * 2,
    "permuted_3d": lambda L: _grid(L, 2, 3, 4).permute(2, 0, 1),
    "permuted_not_dense": lambda L: _grid(L, 2, 3, 8).permute(2, 0, 1)[::2],
    "unsqueezed_view": lambda L: _grid(L, 3, 4).t().unsqueeze(1),
    "channels_last": lambda L: _grid(L, 2, 3, 4, 5).permute(0, 3, 1, 2),
    "channels_last_size1": lambda L: _grid(L, 2, 1, 4, 3).permute(0, 3, 1, 2),
    "channels_last_size1_strided": lambda L: _grid(L, 2, 4, 1, 3).permute(0, 3, 2, 1),
    "empty_transposed": lambda L: L.zeros(3, 0).t(),
}

OPS = {
    "neg": lambda L, x: -x,
    "exp": lambda L, x: x.exp(),
    "sigmoid": lambda L, x: x.sigmoid(),
    "relu": lambda L, x: x.relu(),
    "abs": lambda L, x: x.abs(),
    "pow_scalar": lambda L, x: x**2,
    "rpow": lambda L, x: 2**x,
    "clamp": lambda L, x: x.clamp(min=0.5),
    "mul_number": lambda L, x: x * 2,
    "rmul_number": lambda L, x: 2 * x,
    "add_number": lambda L, x: x + 1,
    "rsub_number": lambda L, x: 2 - x,
    "div_number": lambda L, x: x / 2,
    "rdiv_number": lambda L, x: 2 / x,
    "gt_number": lambda L, x: x > 0,
    "remainder_number": lambda L, x: x % 2,
    "fmod_number": lambda L, x: x.fmod(2),
    "where_number": lambda L, x: L.where(x > 0, x, 0.0),
    "mul_zero_dim": lambda L, x: x * L.tensor(2.0),
    "zero_dim_mul": lambda L, x: L.tensor(2.0) * x,
    "add_self": lambda L, x: x + x,
    "mul_self": lambda L, x: x * x,
    "atan2_self": lambda L, x: L.atan2(x, x),
    "maximum_self": lambda L, x: L.maximum(x, x),
    "eq_self": lambda L, x: x == x,
    "where_self": lambda L, x: L.where(x > 0, x, x),
    "add_contiguous": lambda L, x: x + L.ones(x.shape),
    "contiguous_add": lambda L, x: L.ones(x.shape) + x,
    "add_row": lambda L, x: x + L.ones(x.shape[-1:]),
    "add_float32": lambda L, x: x + L.ones(x.shape, dtype=L.float32),
    "lerp_self": lambda L, x: L.lerp(x, x, 0.25),
    "addcmul_self": lambda L, x: L.addcmul(x, x, x, value=0.5),
    "addcdiv_self": lambda L, x: L.addcdiv(x, x, x.abs() + 1, value=0.5),
    "to_float32": lambda L, x: x.float(),
    "to_int": lambda L, x: x.int(),
    "to_float64": lambda L, x: x.double(),  # (8-byte strides of float32 are 2 elements)
    "clone": lambda L, x: x.clone(),
}


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_elementwise_result_strides_match_torch(layout, op):
    theirs = OPS[op](torch, LAYOUTS[layout](torch))
    ours = OPS[op](ac, LAYOUTS[layout](ac))
    assert ours.shape == theirs.shape
    assert (ours.stride(), ours.is_contiguous()) == (theirs.stride(), theirs.is_contiguous())


PAIR_LAYOUTS = ["contiguous", "transposed", "expanded", "zero_dim", "column_of_transpose",
                "size1_middle_permuted", "size1_trailing_permuted", "size1_inner_transposed",
                "exp_of_row_of_transpose", "channels_last_size1"]
PAIR_OPS = {
    "add": lambda L, a, b: a + b,
    "sub_float64": lambda L, a, b: a - b.double(),  # a converted first, keeping its strides
    # (fuzz seed 3730671715471: laid out by numpy's temporary alpha * b, not by b)
    "add_alpha_float64": lambda L, a, b: L.add(a, b.double(), alpha=0.5),
    "where": lambda L, a, b: L.where(a > 0, a, b),
    "addcmul": lambda L, a, b: L.addcmul(a, a, b),
    "addcdiv": lambda L, a, b: L.addcdiv(b, a, b.abs() + 1),
    "lerp": lambda L, a, b: L.lerp(a, b, 0.3),
}


@pytest.mark.parametrize("op", sorted(PAIR_OPS))
@pytest.mark.parametrize("second", PAIR_LAYOUTS)
@pytest.mark.parametrize("first", PAIR_LAYOUTS)
def test_result_strides_of_two_layouts_match_torch(first, second, op):
    fn = PAIR_OPS[op]
    try:
        theirs = fn(torch, LAYOUTS[first](torch), LAYOUTS[second](torch))
    except RuntimeError:
        pytest.skip("shapes that do not broadcast")
    ours = fn(ac, LAYOUTS[first](ac), LAYOUTS[second](ac))
    assert (ours.stride(), ours.is_contiguous()) == (theirs.stride(), theirs.is_contiguous())


def _outcome(L, fn):
    try:
        return fn(L).tolist()
    except RuntimeError:
        return "RuntimeError"


def _imul_by_view_as(L):
    """The fuzzer's program: a result of a view with a size-1 dimension, multiplied in place
    by its own view_as (the same memory, so no partial overlap in either)."""
    v = -_grid(L, 2, 4)[1::2]
    v *= v.view_as(v)
    return v


def _iand_bool_by_view_as(L):
    v = _grid(L, 2, 4)[1::2] > 0
    v &= v.view_as(v)
    return v


@pytest.mark.parametrize("fn", [_imul_by_view_as, _iand_bool_by_view_as])
def test_inplace_op_with_its_own_view_as(fn):
    assert _outcome(ac, fn) == _outcome(torch, fn)

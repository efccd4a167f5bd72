"""Every eager op, differential against PyTorch 2.13.

Each op is one table row: a lambda `fn(L, *xs)` run once with `L = torch` and once with
`L = adcompile` on identical inputs. For every output we compare the value, dtype, shape,
requires_grad, grad_fn class name, next_functions (top node) and the whole backward graph's
structure (class names and output_nr all the way down to AccumulateGrad); then we backward a random
cotangent (identical for both libraries) and compare every leaf's `.grad` (None-ness, dtype,
shape, value). Further tables cover broadcasting, mixed-dtype promotion (with gradient dtypes),
integer/bool promotion, second derivatives and error types.
"""

import zlib
from collections import namedtuple

import numpy as np
import pytest
import torch

import adcompile

LIBS = (torch, adcompile)
TOL = {"float64": 1e-6, "float32": 1e-4}

# ------------------------------------------------------------------------------------------
# Input domains and flags
# ------------------------------------------------------------------------------------------
ANY = "any"  # standard normal
POS = "pos"  # [0.3, 2]: log, sqrt, pow with fractional exponents
AWAY = "away"  # |x| in [0.3, 2], random sign: div, abs, relu, sign, clamp
DISTINCT = "distinct"  # all values (across all inputs) distinct: max/min/maximum/where
SMALLINT = "smallint"  # floats with values in {-2..2}: eq/ne get real ties
ONEZERO = "onezero"  # AWAY with exactly one 0: prod's zero handling
TWOZERO = "twozero"  # AWAY with exactly two 0s
ZERO = "zero"  # all zeros: norm/abs/relu subgradient conventions
LARGE = "large"  # |x| in [500, 1000], random sign: softmax/logsumexp/sigmoid stability

D2 = "second_order"  # also run the second-derivative test on this row (torch supports it)


class Const(tuple):
    """An input shape whose tensor is built with requires_grad=False (a constant operand)."""


Case = namedtuple("Case", "fn shapes domain flags")


def op(fn, shapes, domain=ANY, *flags):
    return Case(fn, shapes, domain, frozenset(flags))


def _implicit(fn, x, **kwargs):
    """fn(x) without dim=: PyTorch picks the dimension and warns (deprecated); so must we."""
    with pytest.warns(UserWarning):
        return fn(x, **kwargs)


# ------------------------------------------------------------------------------------------
# The op table
# ------------------------------------------------------------------------------------------
ARITH = {
    "add": op(lambda L, x, y: x + y, [(3, 4), (3, 4)], ANY, D2),
    "add_method": op(lambda L, x, y: x.add(y), [(3,), (3,)], ANY, D2),
    "add_alpha": op(lambda L, x, y: x.add(y, alpha=2), [(3,), (3,)], ANY, D2),
    "add_fn_alpha": op(lambda L, x, y: L.add(x, y, alpha=-0.5), [(3,), (3,)], ANY, D2),
    "add_scalar": op(lambda L, x: x + 2, [(3,)], ANY, D2),
    "add_scalar_float": op(lambda L, x: x + 2.5, [(3,)], ANY, D2),
    "radd": op(lambda L, x: 2 + x, [(3,)], ANY, D2),
    "add_const_tensor": op(lambda L, x, c: x + c, [(3,), Const((3,))], ANY, D2),
    "radd_const_tensor": op(lambda L, x, c: c + x, [(3,), Const((3,))], ANY, D2),
    "sub": op(lambda L, x, y: x - y, [(3,), (3,)], ANY, D2),
    "sub_fn": op(lambda L, x, y: L.sub(x, y), [(3,), (3,)], ANY, D2),
    "sub_alpha": op(lambda L, x, y: x.sub(y, alpha=3), [(3,), (3,)], ANY, D2),
    "sub_scalar": op(lambda L, x: x - 2, [(3,)], ANY, D2),
    "rsub": op(lambda L, x: 2 - x, [(3,)], ANY, D2),
    "rsub_const_tensor": op(lambda L, x, c: c - x, [(3,), Const((3,))], ANY, D2),
    "mul": op(lambda L, x, y: x * y, [(3,), (3,)], ANY, D2),
    "mul_fn": op(lambda L, x, y: L.mul(x, y), [(2, 3), (2, 3)], ANY, D2),
    "mul_scalar": op(lambda L, x: x * 2, [(3,)], ANY, D2),
    "mul_method_scalar": op(lambda L, x: x.mul(-1.5), [(3,)], ANY, D2),
    "rmul": op(lambda L, x: 2 * x, [(3,)], ANY, D2),
    "rmul_const_tensor": op(lambda L, x, c: c * x, [(3,), Const((3,))], ANY, D2),
    "mul_self": op(lambda L, x: x * x, [(4,)], ANY, D2),
    "div": op(lambda L, x, y: x / y, [(3,), (3,)], AWAY, D2),
    "div_fn": op(lambda L, x, y: L.div(x, y), [(3,), (3,)], AWAY, D2),
    "div_method": op(lambda L, x, y: x.div(y), [(3,), (3,)], AWAY, D2),
    "div_scalar": op(lambda L, x: x / 2, [(3,)], ANY, D2),
    "rdiv": op(lambda L, x: 2 / x, [(3,)], AWAY, D2),
    "rdiv_const_tensor": op(lambda L, x, c: c / x, [(3,), Const((3,))], AWAY, D2),
    "pow_2": op(lambda L, x: x**2, [(3,)], ANY, D2),
    "pow_3_method": op(lambda L, x: x.pow(3), [(3,)], ANY, D2),
    "pow_2_5": op(lambda L, x: x**2.5, [(3,)], POS, D2),
    "pow_0": op(lambda L, x: x**0, [(3,)], ANY, D2),
    "pow_1": op(lambda L, x: x**1, [(3,)], ANY, D2),
    "pow_neg": op(lambda L, x: L.pow(x, -1.5), [(3,)], POS, D2),
    "pow_tensor": op(lambda L, x, y: x**y, [(3,), (3,)], POS, D2),
    "pow_tensor_fn": op(lambda L, x, y: L.pow(x, y), [(3,), (3,)], POS, D2),
    "pow_const_exponent": op(lambda L, x, c: x**c, [(3,), Const((3,))], POS, D2),
    "pow_const_base": op(lambda L, x, c: c**x, [(3,), Const((3,))], POS, D2),
    "rpow": op(lambda L, x: 2**x, [(3,)], ANY, D2),
    "rpow_fn": op(lambda L, x: L.pow(2.5, x), [(3,)], ANY, D2),
    "square": op(lambda L, x: x.square(), [(4,)], ANY, D2),
    "neg": op(lambda L, x: -x, [(3, 4)], ANY, D2),
    "neg_method": op(lambda L, x: x.neg(), [(3,)], ANY, D2),
    "neg_fn": op(lambda L, x: L.neg(x), [(3,)], ANY, D2),
    "div_self": op(lambda L, x: x / x, [(3,)], AWAY, D2),
    "div_0d_tensor": op(lambda L, x, y: x / y, [(3,), ()], AWAY, D2),
    "rsub_0d_const": op(lambda L, x, c: c - x, [(3,), Const(())], ANY),
    "pow_neg_int": op(lambda L, x: x**-1, [(3,)], AWAY, D2),
    "pow_3_negative_base": op(lambda L, x: x**3, [(4,)], AWAY, D2),
    "pow_half_at_zero": op(lambda L, x: x**0.5, [(3,)], ZERO),
    "rpow_float": op(lambda L, x: 2.0**x, [(3,)], ANY, D2),
    "chain": op(lambda L, x, a: (8 * x + a).exp().mean(), [(3,), (3,)], ANY, D2),
    "sub_fn_scalar": op(lambda L, x: L.sub(x, 2), [(3,)], ANY),
    "rsub_fn_scalar": op(lambda L, x: L.rsub(x, 2), [(3,)], ANY, D2),
    "rsub_fn_tensor": op(lambda L, x, y: L.rsub(x, y), [(3,), (3,)], ANY, D2),
    "add_fn_scalar": op(lambda L, x: L.add(x, 2), [(3,)], ANY),
    "add_scalar_alpha": op(lambda L, x: x.add(2, alpha=3), [(3,)], ANY),
    "add_self": op(lambda L, x: x + x, [(4,)], ANY, D2),
    "sub_self": op(lambda L, x: x - x, [(4,)], ANY),
    "mul_bool_scalar": op(lambda L, x: x * True, [(3,)], ANY),
    "add_bool_scalar": op(lambda L, x: x + False, [(3,)], ANY),
    "add_0d_const": op(lambda L, x, c: x + c, [(3,), Const(())], ANY),
    "true_divide": op(lambda L, x, y: x.true_divide(y), [(3,), (3,)], AWAY, D2),
    "div_rounding_floor": op(lambda L, x, y: x.div(y, rounding_mode="floor"), [(4,), (4,)], AWAY,
                             D2),
    "div_rounding_trunc_scalar": op(lambda L, x: L.div(x, 0.7, rounding_mode="trunc"), [(4,)],
                                    AWAY),
    "div_by_zero_scalar": op(lambda L, x: x / 0, [(3,)], AWAY),
    "rdiv_at_zero": op(lambda L, x: 1 / x, [(3,)], ZERO),
    "pow_fn_0": op(lambda L, x: L.pow(x, 0), [(3,)], ANY, D2),
    "pow_0d_exponent_tensor": op(lambda L, x, y: x**y, [(3,), ()], POS, D2),
    "pow_0d_base_tensor": op(lambda L, x, y: x**y, [(), (3,)], POS, D2),
    "pow_method_tensor": op(lambda L, x, y: x.pow(y), [(3,), (3,)], POS, D2),
    "pow_int_0d_tensor_exponent": op(lambda L, x: x ** L.tensor(2), [(3,)], ANY, D2),
    "pow_tensor_zero_base": op(lambda L, x, y: x**y, [(3,), (3,)], ZERO),
    "pow_half_negative_base": op(lambda L, x: x**0.5, [(3,)], AWAY),
    "rpow_zero_base": op(lambda L, x: 0.0**x, [(4,)], POS),
    "rpow_negative_base": op(lambda L, x: (-2.0) ** x, [(3,)], ANY, D2),
    "negative": op(lambda L, x: x.negative(), [(4,)], ANY),
    "rsub_fn_tensor_alpha": op(lambda L, x, y: L.rsub(x, y, alpha=2), [(3,), (3,)], ANY, D2),
    "rsub_fn_0d_const": op(lambda L, x, c: L.rsub(x, c), [(3,), Const(())], ANY),
    "rsub_fn_broadcast": op(lambda L, x, y: L.rsub(x, y), [(2, 3), (3,)], ANY, D2),
    "div_rounding_trunc_tensor": op(lambda L, x, y: x.div(y, rounding_mode="trunc"),
                                    [(4,), (4,)], AWAY),
    "div_rounding_floor_0d": op(lambda L, x, y: L.div(x, y, rounding_mode="floor"),
                                [(4,), ()], AWAY),
    "rpow_zero_base_mixed_signs": op(lambda L, x: 0.0**x, [(4,)], AWAY),
    "rpow_negative_base_integers": op(lambda L, x: (-2.0) ** x, [(4,)], SMALLINT, D2),
    "float_power": op(lambda L, x: x.float_power(2), [(3,)], ANY, D2),
    "float_power_tensor": op(lambda L, x, y: x.float_power(y), [(3,), (3,)], POS, D2),
}

UNARY = {
    "abs": op(lambda L, x: L.abs(x), [(5,)], AWAY, D2),
    "abs_method": op(lambda L, x: x.abs(), [(2, 3)], AWAY, D2),
    "exp": op(lambda L, x: x.exp(), [(3, 2)], ANY, D2),
    "exp_fn": op(lambda L, x: L.exp(x), [(3,)], ANY, D2),
    "log": op(lambda L, x: L.log(x), [(4,)], POS, D2),
    "log_method": op(lambda L, x: x.log(), [(2, 2)], POS, D2),
    "log1p": op(lambda L, x: x.log1p(), [(4,)], POS, D2),
    "log1p_fn": op(lambda L, x: L.log1p(x), [(4,)], POS, D2),
    "sqrt": op(lambda L, x: x.sqrt(), [(4,)], POS, D2),
    "sqrt_fn": op(lambda L, x: L.sqrt(x), [(4,)], POS, D2),
    "rsqrt": op(lambda L, x: x.rsqrt(), [(4,)], POS, D2),
    "rsqrt_fn": op(lambda L, x: L.rsqrt(x), [(4,)], POS, D2),
    "sin": op(lambda L, x: L.sin(x), [(2, 3)], ANY, D2),
    "cos": op(lambda L, x: x.cos(), [(2, 3)], ANY, D2),
    "tan": op(lambda L, x: x.tan(), [(4,)], AWAY, D2),
    "tanh": op(lambda L, x: x.tanh(), [(4,)], ANY, D2),
    "tanh_fn": op(lambda L, x: L.tanh(x), [(4,)], ANY, D2),
    "sigmoid": op(lambda L, x: L.sigmoid(x), [(4,)], ANY, D2),
    "sigmoid_method": op(lambda L, x: x.sigmoid(), [(4,)], ANY, D2),
    "relu": op(lambda L, x: x.relu(), [(6,)], AWAY, D2),
    "relu_fn": op(lambda L, x: L.relu(x), [(6,)], AWAY, D2),
    "relu_F": op(lambda L, x: L.nn.functional.relu(x), [(6,)], AWAY, D2),
    "clamp_both": op(lambda L, x: x.clamp(-0.5, 0.5), [(8,)], AWAY, D2),
    "clamp_kw_both": op(lambda L, x: x.clamp(min=-0.5, max=0.5), [(8,)], AWAY, D2),
    "clamp_min": op(lambda L, x: x.clamp(min=0.1), [(8,)], AWAY, D2),
    "clamp_max": op(lambda L, x: L.clamp(x, max=0.2), [(8,)], AWAY, D2),
    "clamp_fn_both": op(lambda L, x: L.clamp(x, -1.0, 1.0), [(8,)], AWAY, D2),
    "reciprocal": op(lambda L, x: x.reciprocal(), [(4,)], AWAY, D2),
    "reciprocal_fn": op(lambda L, x: L.reciprocal(x), [(4,)], AWAY, D2),
    "sign": op(lambda L, x: x.sign(), [(4,)], AWAY, D2),
    "sign_fn": op(lambda L, x: L.sign(x), [(4,)], AWAY),
    "floor": op(lambda L, x: x.floor(), [(4,)], ANY, D2),
    "floor_fn": op(lambda L, x: L.floor(x), [(4,)], ANY),
    "round": op(lambda L, x: x.round(), [(4,)], ANY, D2),
    "round_fn": op(lambda L, x: L.round(x), [(4,)], ANY),
    "maximum": op(lambda L, x, y: L.maximum(x, y), [(5,), (5,)], DISTINCT, D2),
    "maximum_method": op(lambda L, x, y: x.maximum(y), [(5,), (5,)], DISTINCT, D2),
    "minimum": op(lambda L, x, y: L.minimum(x, y), [(5,), (5,)], DISTINCT, D2),
    "max_binary": op(lambda L, x, y: L.max(x, y), [(5,), (5,)], DISTINCT),
    "where": op(lambda L, x, y: L.where(x > y, x, y), [(5,), (5,)], DISTINCT, D2),
    "where_method": op(lambda L, x, y: x.where(x > y, y), [(5,), (5,)], DISTINCT, D2),
    "where_scalar_other": op(lambda L, x: L.where(x > 0, x, 0.0), [(5,)], AWAY, D2),
    "where_const_input": op(lambda L, x, c: L.where(x > 0, c, x), [(5,), Const((5,))], AWAY),
    "masked_fill": op(lambda L, x: x.masked_fill(x > 0, 0.5), [(6,)], AWAY),
    "round_decimals": op(lambda L, x: x.round(decimals=1), [(4,)], ANY),
    "abs_at_zero": op(lambda L, x: x.abs(), [(3,)], ZERO),
    "relu_at_zero": op(lambda L, x: x.relu(), [(6,)], SMALLINT),
    "sign_at_zero": op(lambda L, x: x.sign(), [(3,)], ZERO),
    "sqrt_at_zero": op(lambda L, x: x.sqrt(), [(3,)], ZERO),
    "clamp_at_bounds": op(lambda L, x: x.clamp(-1, 1), [(8,)], SMALLINT),
    "maximum_ties": op(lambda L, x, y: L.maximum(x, y), [(8,), (8,)], SMALLINT),
    "minimum_ties": op(lambda L, x, y: L.minimum(x, y), [(8,), (8,)], SMALLINT),
    "sigmoid_large": op(lambda L, x: x.sigmoid(), [(6,)], LARGE),
    "tanh_large": op(lambda L, x: x.tanh(), [(6,)], LARGE),
    "exp_neg_large": op(lambda L, x: (-x.abs()).exp(), [(4,)], LARGE),
    "square_fn": op(lambda L, x: L.square(x), [(4,)], ANY, D2),
    "exp_log_sin_chain": op(lambda L, x: x.exp().log().sin(), [(4,)], ANY, D2),
    "log1p_negative": op(lambda L, x: (x * 0.3).log1p(), [(3,)], AWAY, D2),
    "sqrt_negative": op(lambda L, x: x.sqrt(), [(3,)], AWAY),
    "log_at_zero": op(lambda L, x: x.log(), [(3,)], ZERO),
    "log_negative": op(lambda L, x: x.log(), [(3,)], AWAY),
    "rsqrt_at_zero": op(lambda L, x: x.rsqrt(), [(3,)], ZERO),
    "reciprocal_at_zero": op(lambda L, x: x.reciprocal(), [(3,)], ZERO),
    "exp_large": op(lambda L, x: x.exp(), [(3,)], LARGE),
    "sigmoid_F": op(lambda L, x: L.nn.functional.sigmoid(x), [(3,)], ANY),
    "tanh_F": op(lambda L, x: L.nn.functional.tanh(x), [(3,)], ANY),
    "relu_times_x_ties": op(lambda L, x: x.relu() * x, [(6,)], SMALLINT, D2),
    "sign_times_square": op(lambda L, x: x.sign() * x * x, [(4,)], AWAY, D2),
    "abs_times_x": op(lambda L, x: x.abs() * x, [(4,)], AWAY, D2),
    "clip": op(lambda L, x: x.clip(-0.5, 0.5), [(6,)], AWAY),
    "clamp_int_bounds": op(lambda L, x: x.clamp(-1, 1), [(6,)], AWAY),
    "clamp_min_above_max": op(lambda L, x: x.clamp(1.0, -1.0), [(6,)], AWAY),
    "clamp_tensor_min": op(lambda L, x, c: x.clamp(min=c), [(5,), Const((5,))], DISTINCT, D2),
    "clamp_tensor_both": op(lambda L, x, lo, hi: L.clamp(x, lo, hi), [(5,), (5,), (5,)], DISTINCT,
                            D2),
    "min_binary_method": op(lambda L, x, y: x.min(y), [(5,), (5,)], DISTINCT, D2),
    "min_binary_fn": op(lambda L, x, y: L.min(x, y), [(5,), (5,)], DISTINCT),
    "maximum_0d_const": op(lambda L, x: L.maximum(x, L.tensor(0.0, dtype=x.dtype)), [(5,)], AWAY),
    "maximum_self": op(lambda L, x: L.maximum(x, x), [(4,)], ANY),
    "where_scalar_input": op(lambda L, x: L.where(x > 0, 1.0, x), [(5,)], AWAY, D2),
    "where_int_scalar_other": op(lambda L, x: L.where(x > 0, x, 1), [(5,)], AWAY),
    "where_both_scalars": op(lambda L, x: L.where(x > 0, 1.0, 0.0), [(5,)], AWAY),
    "where_broadcast": op(lambda L, x, y: L.where(x > 0, x, y), [(3, 1), (1, 4)], AWAY, D2),
    "where_0d_other": op(lambda L, x, y: L.where(x > 0, x, y), [(4,), ()], AWAY),
    "where_same_tensor": op(lambda L, x: L.where(x > 0, x, x), [(4,)], AWAY),
    "where_condition_only": op(lambda L, x: L.where(x > 0), [(2, 3)], AWAY),
    "masked_fill_0d_tensor_value": op(lambda L, x, v: x.masked_fill(x > 0, v), [(6,), ()], AWAY,
                                      D2),
    "masked_fill_fn": op(lambda L, x: L.masked_fill(x, x < 0, -1.0), [(6,)], AWAY),
    "masked_fill_0d_value_const_input": op(lambda L, x, v: x.masked_fill(x > 0, v),
                                           [Const((6,)), ()], AWAY),
    "masked_fill_broadcast_mask": op(lambda L, x: x.masked_fill(L.tensor([True, False, True]),
                                                                0.5), [(2, 3)], ANY),
    "clamp_tensor_max": op(lambda L, x, hi: x.clamp(max=hi), [(5,), (5,)], DISTINCT, D2),
    "clamp_tensor_crossed": op(lambda L, x, lo: x.clamp(lo, lo - 0.5), [(5,), (5,)], DISTINCT),
    "clamp_tensor_broadcast": op(lambda L, x, lo: x.clamp(min=lo), [(3, 4), (4,)], DISTINCT),
    "clamp_tensor_bounds_only": op(lambda L, x, lo, hi: L.clamp(x, lo, hi),
                                   [Const((5,)), (5,), (5,)], DISTINCT),
    "where_condition_only_3d": op(lambda L, x: L.where(x > 0), [(2, 2, 3)], AWAY),
    "nonzero": op(lambda L, x: (x > 0).nonzero(), [(3, 4)], AWAY),
}

COMPARE = {
    "gt": op(lambda L, x, y: x > y, [(5,), (5,)], DISTINCT),
    "lt_scalar": op(lambda L, x: x < 0, [(5,)], AWAY),
    "ge": op(lambda L, x, y: x >= y, [(6,), (6,)], SMALLINT),
    "le_fn": op(lambda L, x, y: L.le(x, y), [(6,), (6,)], SMALLINT),
    "eq": op(lambda L, x, y: x == y, [(6,), (6,)], SMALLINT),
    "eq_method": op(lambda L, x, y: x.eq(y), [(6,), (6,)], SMALLINT),
    "ne": op(lambda L, x, y: x != y, [(6,), (6,)], SMALLINT),
    "gt_broadcast": op(lambda L, x, y: L.gt(x, y), [(3, 1), (4,)], DISTINCT),
    "rgt_scalar": op(lambda L, x: 0.5 < x, [(5,)], AWAY),
    "argmax": op(lambda L, x: x.argmax(), [(3, 4)], DISTINCT),
    "argmin_dim": op(lambda L, x: L.argmin(x, dim=1), [(3, 4)], DISTINCT),
    "long": op(lambda L, x: (x * 2).long(), [(4,)], AWAY),
    "rlt_scalar_int": op(lambda L, x: 2 > x, [(5,)], AWAY),
    "eq_scalar": op(lambda L, x: x.eq(1.0), [(6,)], SMALLINT),
    "ne_fn_scalar": op(lambda L, x: L.ne(x, 0), [(6,)], SMALLINT),
    "lt_method": op(lambda L, x, y: x.lt(y), [(5,), (5,)], DISTINCT),
    "ge_broadcast_0d": op(lambda L, x, y: x >= y, [(5,), ()], DISTINCT),
    "argmax_keepdim": op(lambda L, x: x.argmax(dim=1, keepdim=True), [(3, 4)], DISTINCT),
}

REDUCE = {
    "sum": op(lambda L, x: x.sum(), [(3, 4)], ANY, D2),
    "sum_fn": op(lambda L, x: L.sum(x), [(3, 4)], ANY, D2),
    "sum_dim": op(lambda L, x: x.sum(0), [(3, 4)], ANY, D2),
    "sum_neg_dim": op(lambda L, x: x.sum(-1), [(3, 4)], ANY),
    "sum_keepdim": op(lambda L, x: x.sum(dim=1, keepdim=True), [(3, 4)], ANY, D2),
    "sum_fn_dim": op(lambda L, x: L.sum(x, dim=0, keepdim=True), [(3, 4)], ANY),
    "sum_dims": op(lambda L, x: x.sum((0, 2)), [(2, 3, 4)], ANY),
    "sum_0d": op(lambda L, x: x.sum(), [()], ANY),
    "mean": op(lambda L, x: x.mean(), [(3, 4)], ANY, D2),
    "mean_fn": op(lambda L, x: L.mean(x), [(3, 4)], ANY),
    "mean_dim": op(lambda L, x: L.mean(x, 1), [(3, 4)], ANY, D2),
    "mean_keepdim": op(lambda L, x: x.mean(dim=0, keepdim=True), [(3, 4)], ANY, D2),
    "mean_dims": op(lambda L, x: x.mean((1, 2)), [(2, 3, 4)], ANY),
    "prod": op(lambda L, x: x.prod(), [(5,)], AWAY, D2),
    "prod_fn": op(lambda L, x: L.prod(x), [(2, 3)], AWAY),
    "prod_dim": op(lambda L, x: x.prod(1), [(3, 4)], AWAY, D2),
    "prod_keepdim": op(lambda L, x: x.prod(0, keepdim=True), [(3, 4)], AWAY, D2),
    "prod_one_zero": op(lambda L, x: x.prod(), [(5,)], ONEZERO, D2),
    "prod_two_zeros": op(lambda L, x: x.prod(), [(5,)], TWOZERO, D2),
    "prod_dim_one_zero": op(lambda L, x: x.prod(0), [(5, 2)], ONEZERO, D2),
    "max_all": op(lambda L, x: x.max(), [(3, 4)], DISTINCT),
    "max_all_fn": op(lambda L, x: L.max(x), [(3, 4)], DISTINCT),
    "min_all": op(lambda L, x: x.min(), [(3, 4)], DISTINCT),
    "max_dim_tuple": op(lambda L, x: x.max(1), [(3, 4)], DISTINCT),
    "max_dim_values": op(lambda L, x: x.max(dim=0).values, [(3, 4)], DISTINCT),
    "max_dim_indices": op(lambda L, x: x.max(dim=0).indices, [(3, 4)], DISTINCT),
    "max_fn_dim_keepdim": op(lambda L, x: L.max(x, 1, keepdim=True), [(3, 4)], DISTINCT),
    "max_dim_unpack": op(lambda L, x: x.max(-1)[0] * 2, [(2, 3, 4)], DISTINCT),
    "min_dim_tuple": op(lambda L, x: x.min(dim=1), [(3, 4)], DISTINCT),
    "min_dim_keepdim": op(lambda L, x: x.min(1, keepdim=True)[0], [(3, 4)], DISTINCT),
    "min_fn_dim": op(lambda L, x: L.min(x, 0), [(3, 4)], DISTINCT),
    "norm": op(lambda L, x: x.norm(), [(3, 4)], ANY, D2),
    "norm_fn": op(lambda L, x: L.norm(x), [(3, 4)], ANY, D2),
    "norm_dim": op(lambda L, x: x.norm(dim=1), [(3, 4)], ANY, D2),
    "norm_dim_keepdim": op(lambda L, x: x.norm(dim=0, keepdim=True), [(3, 4)], ANY),
    "norm_p1": op(lambda L, x: x.norm(p=1), [(5,)], AWAY),
    "norm_p3": op(lambda L, x: x.norm(p=3), [(5,)], AWAY, D2),
    "std": op(lambda L, x: x.std(), [(6,)], ANY, D2),
    "std_fn": op(lambda L, x: L.std(x), [(6,)], ANY),
    "std_dim": op(lambda L, x: x.std(dim=0), [(4, 3)], ANY, D2),
    "std_dim_keepdim": op(lambda L, x: x.std(1, keepdim=True), [(4, 3)], ANY),
    "std_unbiased_false": op(lambda L, x: x.std(unbiased=False), [(6,)], ANY),
    "var": op(lambda L, x: x.var(), [(6,)], ANY, D2),
    "var_fn_dim": op(lambda L, x: L.var(x, 0), [(4, 3)], ANY),
    "var_keepdim": op(lambda L, x: x.var(dim=1, keepdim=True), [(3, 4)], ANY, D2),
    "var_unbiased_false": op(lambda L, x: x.var(1, unbiased=False), [(3, 4)], ANY, D2),
    "mean_positional_keepdim": op(lambda L, x: x.mean(-1, True), [(3, 4)], ANY),
    "max_1d_dim": op(lambda L, x: x.max(0), [(5,)], DISTINCT),
    "sum_1d_keepdim": op(lambda L, x: x.sum(0, keepdim=True), [(5,)], ANY),
    "norm_at_zero": op(lambda L, x: x.norm(), [(3,)], ZERO),
    "norm_p_dim_positional": op(lambda L, x: x.norm(2, 1), [(3, 4)], ANY),
    "norm_dim_tuple": op(lambda L, x: x.norm(dim=(0, 1)), [(2, 3, 2)], ANY),
    "std_correction0": op(lambda L, x: L.std(x, dim=1, correction=0), [(3, 4)], ANY),
    "var_correction2": op(lambda L, x: x.var(correction=2), [(6,)], ANY),
    "logsumexp": op(lambda L, x: x.logsumexp(1), [(2, 5)], ANY, D2),
    "logsumexp_fn_keepdim": op(lambda L, x: L.logsumexp(x, dim=0, keepdim=True), [(3, 2)], ANY),
    "cumsum": op(lambda L, x: x.cumsum(1), [(2, 5)], ANY, D2),
    "cumsum_fn": op(lambda L, x: L.cumsum(x, dim=0), [(4,)], ANY),
    "softmax": op(lambda L, x: x.softmax(1), [(2, 5)], ANY, D2),
    "softmax_fn": op(lambda L, x: L.softmax(x, dim=0), [(3, 2)], ANY, D2),
    "softmax_F_neg_dim": op(lambda L, x: L.nn.functional.softmax(x, dim=-1), [(2, 4)], ANY),
    "log_softmax": op(lambda L, x: L.log_softmax(x, dim=0), [(4, 3)], ANY, D2),
    "log_softmax_method": op(lambda L, x: x.log_softmax(-1), [(2, 4)], ANY, D2),
    "softmax_large": op(lambda L, x: x.softmax(-1), [(2, 4)], LARGE),
    "log_softmax_large": op(lambda L, x: x.log_softmax(-1), [(2, 4)], LARGE),
    "logsumexp_large": op(lambda L, x: x.logsumexp(-1), [(2, 4)], LARGE),
    "log_softmax_F": op(lambda L, x: L.nn.functional.log_softmax(x, dim=1), [(2, 4)], ANY),
    # nn.functional's implicit dim (deprecated, warns): 0 for 0-, 1- and 3-dim input, else 1
    "softmax_F_implicit_2d": op(lambda L, x: _implicit(L.nn.functional.softmax, x), [(2, 4)]),
    "softmax_F_implicit_3d": op(lambda L, x: _implicit(L.nn.functional.softmax, x),
                                [(2, 3, 2)]),
    "softmax_F_implicit_4d": op(lambda L, x: _implicit(L.nn.functional.softmax, x),
                                [(2, 3, 2, 2)]),
    "log_softmax_F_implicit_1d": op(lambda L, x: _implicit(L.nn.functional.log_softmax, x),
                                    [(4,)]),
    "softmin_F": op(lambda L, x: L.nn.functional.softmin(x, 1), [(2, 4)], ANY, D2),
    "softmin_F_implicit_dtype": op(lambda L, x: _implicit(L.nn.functional.softmin, x,
                                                          dtype=L.float64), [(3, 2)]),
    "sum_dim_kw_tuple": op(lambda L, x: x.sum(dim=(0, 1)), [(2, 3, 4)], ANY, D2),
    "sum_fn_dim_list_keepdim": op(lambda L, x: L.sum(x, dim=[0, 2], keepdim=True), [(2, 3, 4)]),
    "sum_fn_positional_keepdim": op(lambda L, x: L.sum(x, 1, True), [(2, 3)], ANY),
    "sum_0d_dim": op(lambda L, x: x.sum(0), [()], ANY),
    "sum_empty_slice": op(lambda L, x: x[2:2].sum(), [(4,)], ANY),
    "sum_dtype": op(lambda L, x: x.sum(dtype=L.float64), [(4,)], ANY),
    "mean_dims_keepdim": op(lambda L, x: x.mean(dim=(0, 1), keepdim=True), [(2, 3, 4)], ANY, D2),
    "mean_neg_dim": op(lambda L, x: x.mean(dim=-1), [(2, 3)], ANY),
    "mean_0d": op(lambda L, x: x.mean(), [()], ANY),
    "mean_dtype": op(lambda L, x: x.mean(dtype=L.float64), [(4,)], ANY),
    "prod_0d": op(lambda L, x: x.prod(), [()], AWAY, D2),
    "prod_neg_dim": op(lambda L, x: x.prod(-1), [(3, 4)], AWAY, D2),
    "prod_all_zero": op(lambda L, x: x.prod(), [(3,)], ZERO, D2),
    "prod_dim_two_zeros": op(lambda L, x: x.prod(0), [(5, 1)], TWOZERO, D2),
    "max_all_ties_d2": op(lambda L, x: x.max(), [(8,)], SMALLINT, D2),
    "min_all_ties": op(lambda L, x: x.min(), [(8,)], SMALLINT, D2),
    "max_dim_ties": op(lambda L, x: x.max(1), [(3, 6)], SMALLINT),
    "min_dim_ties": op(lambda L, x: x.min(0), [(6, 3)], SMALLINT),
    "max_kw_keepdim_tuple": op(lambda L, x: x.max(dim=1, keepdim=True), [(3, 4)], DISTINCT),
    "max_fn_dim_indices": op(lambda L, x: L.max(x, dim=1).indices, [(3, 4)], DISTINCT),
    "max_neg_dim": op(lambda L, x: x.max(dim=-1), [(2, 3, 4)], DISTINCT),
    "max_dim_values_d2": op(lambda L, x: x.max(dim=0).values, [(3, 4)], DISTINCT, D2),
    "min_dim_keepdim_d2": op(lambda L, x: x.min(1, keepdim=True)[0], [(3, 4)], DISTINCT, D2),
    "max_0d": op(lambda L, x: x.max(), [()], ANY),
    "max_0d_dim": op(lambda L, x: x.max(0), [()], ANY),
    "max_all_equal": op(lambda L, x: (x * 0).max(), [(4,)], ANY),
    "norm_fro": op(lambda L, x: x.norm(p="fro"), [(3, 4)], ANY, D2),
    "norm_inf": op(lambda L, x: x.norm(p=float("inf")), [(5,)], DISTINCT, D2),
    "norm_p0": op(lambda L, x: x.norm(p=0), [(5,)], AWAY),
    "norm_fn_dim": op(lambda L, x: L.norm(x, dim=1), [(3, 4)], ANY, D2),
    "norm_fn_positional_keepdim": op(lambda L, x: L.norm(x, 1, 0, True), [(3, 4)], AWAY),
    "norm_p1_times_sum": op(lambda L, x: x.norm(p=1) * x.sum(), [(5,)], AWAY, D2),
    "norm_0d": op(lambda L, x: x.norm(), [()], AWAY, D2),
    "std_single_element": op(lambda L, x: x.std(), [(1,)], ANY),
    "std_positional_unbiased": op(lambda L, x: x.std(0, True), [(4, 3)], ANY),
    "std_correction0_all": op(lambda L, x: x.std(correction=0), [(6,)], ANY, D2),
    "std_of_constant": op(lambda L, x: x.std(), [(4,)], ZERO),
    "var_dims_tuple": op(lambda L, x: x.var(dim=(0, 1)), [(2, 3, 2)], ANY),
    "var_fn_unbiased_false_keepdim": op(lambda L, x: L.var(x, 0, unbiased=False, keepdim=True),
                                        [(4, 3)], ANY, D2),
    "var_dim_of_size_one": op(lambda L, x: x.var(0), [(1, 3)], ANY),
    "cumsum_neg_dim": op(lambda L, x: x.cumsum(-1), [(2, 4)], ANY),
    "cumsum_kw": op(lambda L, x: x.cumsum(dim=0), [(3, 2)], ANY, D2),
    "cumsum_0d": op(lambda L, x: x.cumsum(0), [()], ANY),
    "cumsum_dtype": op(lambda L, x: x.cumsum(0, dtype=L.float64), [(3,)], ANY),
    "logsumexp_dim_tuple": op(lambda L, x: L.logsumexp(x, (0, 1)), [(2, 3)], ANY, D2),
    "logsumexp_neg_keepdim": op(lambda L, x: x.logsumexp(-1, keepdim=True), [(2, 3)], ANY, D2),
    "logsumexp_1d": op(lambda L, x: x.logsumexp(0), [(4,)], ANY, D2),
    "logsumexp_0d": op(lambda L, x: x.logsumexp(0), [()], ANY),
    "softmax_1d": op(lambda L, x: x.softmax(0), [(5,)], ANY, D2),
    "softmax_3d_mid_dim": op(lambda L, x: x.softmax(dim=1), [(2, 3, 2)], ANY, D2),
    "softmax_0d": op(lambda L, x: x.softmax(0), [()], ANY),
    "softmax_dtype": op(lambda L, x: L.softmax(x, 1, dtype=L.float64), [(2, 3)], ANY),
    "softmax_F_dtype": op(lambda L, x: L.nn.functional.softmax(x, dim=0, dtype=L.float64), [(3,)]),
    "log_softmax_1d": op(lambda L, x: x.log_softmax(0), [(5,)], ANY, D2),
    "log_softmax_3d": op(lambda L, x: L.log_softmax(x, 2), [(2, 2, 3)], ANY, D2),
    "log_softmax_dtype": op(lambda L, x: x.log_softmax(0, dtype=L.float64), [(3,)], ANY),
    "prod_0d_dim": op(lambda L, x: x.prod(0), [()], AWAY, D2),
    "norm_minus_inf": op(lambda L, x: x.norm(p=float("-inf")), [(5,)], DISTINCT, D2),
    "norm_inf_ties": op(lambda L, x: x.norm(p=float("inf"), dim=1), [(3, 4)], SMALLINT, D2),
    "norm_p_half": op(lambda L, x: x.norm(p=0.5), [(5,)], ONEZERO),
    "norm_p_minus_one": op(lambda L, x: x.norm(p=-1), [(5,)], AWAY),
    "norm_p1_at_zero": op(lambda L, x: x.norm(p=1), [(5,)], ONEZERO, D2),
    "norm_p1_5_at_zero": op(lambda L, x: x.norm(p=1.5), [(5,)], ONEZERO, D2),
    "norm_p0_dim": op(lambda L, x: x.norm(p=0, dim=1), [(2, 5)], TWOZERO),
    "std_dim_of_constant": op(lambda L, x: x.std(0), [(3, 2)], ZERO),
    "var_correction_too_large": op(lambda L, x: x.var(correction=7), [(6,)], ANY),
    "var_dim_correction_equal": op(lambda L, x: x.var(1, correction=4), [(3, 4)], ANY),
    "var_0d": op(lambda L, x: x.var(), [()], ANY),
    "cumsum_0d_dtype": op(lambda L, x: x.cumsum(0, dtype=L.float64), [()], ANY),
    "cumprod": op(lambda L, x: x.cumprod(1), [(2, 4)], AWAY, D2),
    "cumprod_dim0": op(lambda L, x: x.cumprod(dim=0), [(3, 2)], AWAY),
    "cumprod_one_zero": op(lambda L, x: x.cumprod(0), [(5,)], ONEZERO, D2),
    "cumprod_two_zeros": op(lambda L, x: x.cumprod(0), [(5,)], TWOZERO, D2),
    "cumprod_0d": op(lambda L, x: x.cumprod(0), [()], AWAY),
    # the torch.* spellings of the newer ops
    "fn_cumprod": op(lambda L, x: L.cumprod(x, 0), [(4,)], AWAY),
    "fn_float_power": op(lambda L, x: L.float_power(x, 3), [(3,)], ANY),
    "fn_clamp_min_max": op(lambda L, x: L.clamp_max(L.clamp_min(x, -0.5), 0.5), [(6,)], AWAY),
    "method_clamp_min_max": op(lambda L, x: x.clamp_min(-0.5).clamp_max(0.5), [(6,)], AWAY),
    "fn_swapaxes": op(lambda L, x: L.swapaxes(x, 0, 1) * 2, [(2, 3)], ANY),
    "method_swapdims": op(lambda L, x: x.swapdims(1, 0) * 2, [(2, 3)], ANY),
    "fn_index_select": op(lambda L, x: L.index_select(x, 0, L.tensor([1, 1])), [(3, 2)], ANY),
    "fn_gather": op(lambda L, x: L.gather(x, 1, L.tensor([[0, 0], [1, 0]])), [(2, 2)], ANY),
}

LINALG = {
    "dot": op(lambda L, x, y: L.dot(x, y), [(4,), (4,)], ANY, D2),
    "dot_method": op(lambda L, x, y: x.dot(y), [(4,), (4,)], ANY, D2),
    "mm": op(lambda L, x, y: x.mm(y), [(3, 4), (4, 2)], ANY, D2),
    "mm_fn": op(lambda L, x, y: L.mm(x, y), [(3, 4), (4, 2)], ANY, D2),
    "mm_const": op(lambda L, x, c: L.mm(x, c), [(3, 4), Const((4, 2))], ANY, D2),
    "mv": op(lambda L, x, y: L.mv(x, y), [(3, 4), (4,)], ANY, D2),
    "mv_method": op(lambda L, x, y: x.mv(y), [(3, 4), (4,)], ANY),
    "matmul_1d_1d": op(lambda L, x, y: x @ y, [(4,), (4,)], ANY, D2),
    "matmul_2d_2d": op(lambda L, x, y: x @ y, [(3, 4), (4, 2)], ANY, D2),
    "matmul_fn_2d_2d": op(lambda L, x, y: L.matmul(x, y), [(3, 4), (4, 2)], ANY, D2),
    "matmul_method": op(lambda L, x, y: x.matmul(y), [(3, 4), (4, 2)], ANY),
    "matmul_2d_1d": op(lambda L, x, y: x @ y, [(3, 4), (4,)], ANY, D2),
    "matmul_1d_2d": op(lambda L, x, y: x @ y, [(4,), (4, 2)], ANY, D2),
    "matmul_3d_3d": op(lambda L, x, y: x @ y, [(2, 3, 4), (2, 4, 5)], ANY, D2),
    "matmul_3d_2d": op(lambda L, x, y: L.matmul(x, y), [(2, 3, 4), (4, 5)], ANY, D2),
    "matmul_2d_3d": op(lambda L, x, y: x @ y, [(3, 4), (2, 4, 5)], ANY, D2),
    "matmul_3d_1d": op(lambda L, x, y: x @ y, [(2, 3, 4), (4,)], ANY),
    "matmul_1d_3d": op(lambda L, x, y: x @ y, [(4,), (2, 4, 3)], ANY),
    "matmul_broadcast_batch": op(lambda L, x, y: x @ y, [(2, 1, 3, 4), (3, 4, 2)], ANY, D2),
    "mm_transposed": op(lambda L, x, y: x.t().mm(y), [(4, 3), (4, 2)], ANY, D2),
    "matmul_fn_1d_1d": op(lambda L, x, y: L.matmul(x, y), [(4,), (4,)], ANY),
    "outer_method": op(lambda L, x, y: x.outer(y), [(3,), (2,)], ANY),
    "bmm": op(lambda L, x, y: L.bmm(x, y), [(2, 3, 4), (2, 4, 5)], ANY),
    "outer": op(lambda L, x, y: L.outer(x, y), [(3,), (4,)], ANY, D2),
    "addmm": op(lambda L, b, x, y: L.addmm(b, x, y), [(2,), (3, 4), (4, 2)], ANY, D2),
    "addmm_scaled": op(lambda L, b, x, y: L.addmm(b, x, y, beta=0.5, alpha=2),
                       [(3, 2), (3, 4), (4, 2)], ANY, D2),
    "addmm_const_input": op(lambda L, b, x, w: L.addmm(b, x, w.t()),
                            [(2,), Const((3, 4)), (2, 4)], ANY),
    "dot_nonleaf": op(lambda L, x, y: (x * 2).dot(y.exp()), [(4,), (4,)], ANY, D2),
    "dot_self": op(lambda L, x: x.dot(x), [(4,)], ANY, D2),
    "dot_const_first": op(lambda L, x, c: L.dot(c, x), [(4,), Const((4,))], ANY),
    "mm_self": op(lambda L, x: x.mm(x), [(3, 3)], ANY, D2),
    "mm_const_left": op(lambda L, c, x: c.mm(x), [Const((2, 3)), (3, 4)], ANY, D2),
    "mv_const_vector": op(lambda L, x, c: x.mv(c), [(3, 4), Const((4,))], ANY),
    "matmul_const_1d_2d": op(lambda L, c, x: c @ x, [Const((4,)), (4, 2)], ANY, D2),
    "matmul_1d_const_2d": op(lambda L, x, c: x @ c, [(4,), Const((4, 2))], ANY),
    "matmul_fn_3d_3d": op(lambda L, x, y: L.matmul(x, y), [(2, 3, 4), (2, 4, 5)], ANY),
    "matmul_broadcast_batch_1": op(lambda L, x, y: x @ y, [(1, 3, 4), (2, 4, 5)], ANY, D2),
    "matmul_4d_4d": op(lambda L, x, y: x @ y, [(2, 1, 2, 3), (1, 3, 3, 2)], ANY),
    "matmul_2d_4d": op(lambda L, x, y: x @ y, [(3, 4), (2, 2, 4, 1)], ANY),
    "matmul_3d_1d_d2": op(lambda L, x, y: x @ y, [(2, 3, 4), (4,)], ANY, D2),
    "matmul_1d_3d_d2": op(lambda L, x, y: x @ y, [(4,), (2, 4, 3)], ANY, D2),
    "matmul_transposed_arg": op(lambda L, x, y: x @ y.t(), [(3, 4), (2, 4)], ANY, D2),
    "rmatmul_const": op(lambda L, x, c: c @ x, [(4, 2), Const((3, 4))], ANY),
    "outer_nonleaf": op(lambda L, x, y: L.outer(x.sin(), y), [(3,), (2,)], ANY, D2),
    "outer_self": op(lambda L, x: L.outer(x, x), [(3,)], ANY, D2),
    "addmm_method": op(lambda L, b, x, y: b.addmm(x, y), [(3, 2), (3, 4), (4, 2)], ANY, D2),
    "addmm_bias_row": op(lambda L, b, x, y: L.addmm(b, x, y), [(1, 2), (3, 4), (4, 2)], ANY, D2),
    "addmm_bias_0d": op(lambda L, b, x, y: L.addmm(b, x, y), [(), (3, 4), (4, 2)], ANY),
    "addmm_beta0": op(lambda L, b, x, y: L.addmm(b, x, y, beta=0), [(3, 2), (3, 4), (4, 2)]),
    "addmm_const_bias": op(lambda L, b, x, y: L.addmm(b, x, y), [Const((2,)), (3, 4), (4, 2)]),
    "bmm_d2": op(lambda L, x, y: x.bmm(y), [(2, 3, 4), (2, 4, 5)], ANY, D2),
    "linear_F": op(lambda L, x, w, b: L.nn.functional.linear(x, w, b), [(3, 4), (2, 4), (2,)],
                   ANY, D2),
    "linear_F_1d": op(lambda L, x, w, b: L.nn.functional.linear(x, w, b), [(4,), (2, 4), (2,)]),
    "linear_F_3d": op(lambda L, x, w, b: L.nn.functional.linear(x, w, b),
                      [(2, 3, 4), (2, 4), (2,)]),
    "matmul_2d_3d_const_left": op(lambda L, c, x: c @ x, [Const((3, 4)), (2, 4, 5)], ANY, D2),
    "matmul_3d_2d_const_right": op(lambda L, x, c: x @ c, [(2, 3, 4), Const((4, 5))], ANY),
    "matmul_3d_1d_const_vector": op(lambda L, x, c: x @ c, [(2, 3, 4), Const((4,))], ANY),
    "matmul_1d_3d_const_vector": op(lambda L, c, x: c @ x, [Const((4,)), (2, 4, 3)], ANY),
    "matmul_noncontig_3d_const_2d": op(lambda L, x, c: x.mT @ c, [(2, 4, 3), Const((4, 2))]),
    "matmul_noncontig_3d_const_1d": op(lambda L, x, c: x.mT @ c, [(2, 4, 3), Const((4,))]),
    "matmul_broadcast_batch_1_right": op(lambda L, x, y: x @ y, [(2, 3, 4), (1, 4, 5)], ANY, D2),
    "matmul_batch_1_const": op(lambda L, x, c: x @ c, [(1, 3, 4), Const((2, 4, 5))], ANY),
    "matmul_5d_3d": op(lambda L, x, y: x @ y, [(2, 1, 1, 3, 4), (2, 4, 2)], ANY),
}

JOIN_SPLIT = {
    "cat": op(lambda L, x, y: L.cat([x, y]), [(2, 3), (1, 3)], ANY),
    "cat_dim1": op(lambda L, x, y: L.cat([x, y], 1), [(2, 3), (2, 2)], ANY),
    "cat_neg_dim_three": op(lambda L, x, y, z: L.cat((x, y, z), dim=-1), [(2, 1), (2, 2), (2, 3)]),
    "cat_with_const": op(lambda L, x, c: L.cat([c, x]), [(2,), Const((3,))], ANY),
    "stack": op(lambda L, x, y: L.stack([x, y]), [(2, 3), (2, 3)], ANY),
    "stack_dim1": op(lambda L, x, y: L.stack([x, y], dim=1), [(2, 3), (2, 3)], ANY),
    "stack_neg_dim": op(lambda L, x, y, z: L.stack((x, y, z), -1), [(3,), (3,), (3,)], ANY),
    "split_all": op(lambda L, x: x.split(2), [(5, 2)], ANY),
    "split_one": op(lambda L, x: x.split(2)[1], [(5, 2)], ANY),
    "split_sizes": op(lambda L, x: x.split([1, 4]), [(5, 2)], ANY),
    "split_neg_dim": op(lambda L, x: x.split(2, -1), [(2, 5)], ANY),
    "chunk_more_than_size": op(lambda L, x: x.chunk(5), [(3,)], ANY),
    "split_fn_dim": op(lambda L, x: L.split(x, 1, dim=1), [(2, 3)], ANY),
    "chunk_all": op(lambda L, x: x.chunk(3), [(6,)], ANY),
    "chunk_fn_dim": op(lambda L, x: L.chunk(x, 2, dim=1), [(2, 4)], ANY),
    "chunk_uneven": op(lambda L, x: x.chunk(2), [(5, 2)], ANY),
    "chunk_sum": op(lambda L, x: sum(c.sum() for c in x.chunk(3)), [(6,)], ANY),
    "chunk_add_pieces": op(lambda L, x: x.chunk(2)[0] + x.chunk(2)[1], [(4,)], ANY),
    "unbind_all": op(lambda L, x: x.unbind(), [(3, 2)], ANY),
    "unbind_dim": op(lambda L, x: x.unbind(1)[2], [(2, 3)], ANY),
    "unbind_fn": op(lambda L, x: L.unbind(x, dim=1), [(2, 3)], ANY),
    "split_fn_sizes_dim": op(lambda L, x: L.split(x, [2, 3], dim=0), [(5, 2)], ANY),
    "split_kw_split_size": op(lambda L, x: x.split(split_size=2, dim=1), [(2, 5)], ANY),
    "split_whole": op(lambda L, x: x.split(4), [(4,)], ANY),
    "chunk_neg_dim": op(lambda L, x: x.chunk(2, dim=-1), [(2, 4)], ANY),
    "chunk_one": op(lambda L, x: x.chunk(1), [(4,)], ANY),
    "unbind_neg": op(lambda L, x: x.unbind(-1), [(2, 3)], ANY),
    "unbind_1d": op(lambda L, x: x.unbind(), [(3,)], ANY),
    "cat_single": op(lambda L, x: L.cat([x]), [(2, 3)], ANY),
    "cat_same_tensor": op(lambda L, x: L.cat([x, x]), [(2,)], ANY),
    "cat_kw_tensors": op(lambda L, x, y: L.cat(tensors=[x, y], dim=0), [(2,), (3,)], ANY),
    "cat_3d_mid_dim": op(lambda L, x, y: L.cat([x, y], 1), [(2, 1, 3), (2, 2, 3)], ANY),
    "stack_0d": op(lambda L, x, y: L.stack([x, y]), [(), ()], ANY),
    "stack_same_tensor": op(lambda L, x: L.stack([x, x, x], 1), [(2,)], ANY),
    "stack_with_const": op(lambda L, x, c: L.stack([c, x]), [(3,), Const((3,))], ANY),
    "split_single_section": op(lambda L, x: x.split([4]), [(4,)], ANY),
    "unbind_single": op(lambda L, x: x.unbind(), [(1, 3)], ANY),
    "chunk_one_sum": op(lambda L, x: x.chunk(1)[0].sum(), [(2, 3)], ANY),
}

VIEWS = {
    "view": op(lambda L, x: x.view(4, 3), [(3, 4)], ANY),
    "view_tuple": op(lambda L, x: x.view((2, 6)), [(3, 4)], ANY),
    "view_infer": op(lambda L, x: x.view(-1), [(3, 4)], ANY),
    "view_infer_2": op(lambda L, x: x.view(2, -1, 3), [(3, 4)], ANY),
    "reshape": op(lambda L, x: x.reshape(2, 6), [(3, 4)], ANY),
    "reshape_fn": op(lambda L, x: L.reshape(x, (-1, 2)), [(3, 4)], ANY),
    "reshape_noncontig": op(lambda L, x: x.t().reshape(12), [(3, 4)], ANY),
    "flatten": op(lambda L, x: x.flatten(), [(2, 3, 2)], ANY),
    "flatten_start": op(lambda L, x: x.flatten(1), [(2, 3, 2)], ANY),
    "flatten_fn": op(lambda L, x: L.flatten(x, 0, 1), [(2, 3, 2)], ANY),
    "t": op(lambda L, x: x.t(), [(3, 4)], ANY),
    "t_fn": op(lambda L, x: L.t(x), [(3, 4)], ANY),
    "T": op(lambda L, x: x.T, [(3, 4)], ANY),
    "transpose": op(lambda L, x: x.transpose(0, 2), [(2, 3, 4)], ANY),
    "transpose_neg": op(lambda L, x: L.transpose(x, -1, -2), [(2, 3, 4)], ANY),
    "permute": op(lambda L, x: x.permute(2, 0, 1), [(2, 3, 4)], ANY),
    "permute_tuple": op(lambda L, x: x.permute((1, 0)), [(3, 4)], ANY),
    "permute_fn": op(lambda L, x: L.permute(x, (0, 2, 1)), [(2, 3, 4)], ANY),
    "squeeze": op(lambda L, x: x.squeeze(), [(3, 1, 4)], ANY),
    "squeeze_dim": op(lambda L, x: x.squeeze(1), [(3, 1, 4)], ANY),
    "squeeze_dim_noop": op(lambda L, x: x.squeeze(0), [(3, 1, 4)], ANY),
    "squeeze_fn": op(lambda L, x: L.squeeze(x, -1), [(3, 1)], ANY),
    "unsqueeze": op(lambda L, x: x.unsqueeze(1), [(3, 4)], ANY),
    "unsqueeze_neg": op(lambda L, x: x.unsqueeze(-1), [(3, 4)], ANY),
    "unsqueeze_fn": op(lambda L, x: L.unsqueeze(x, 0), [(3,)], ANY),
    "expand": op(lambda L, x: x.expand(3, 4), [(1, 4)], ANY),
    "expand_minus_one": op(lambda L, x: x.expand(-1, 4), [(3, 1)], ANY),
    "expand_new_dim": op(lambda L, x: x.expand(2, 3, 4), [(3, 4)], ANY),
    "expand_0d": op(lambda L, x: x.expand(3), [()], ANY),
    "expand_as": op(lambda L, x, y: x.expand_as(y), [(1, 4), Const((3, 4))], ANY),
    "view_to_0d": op(lambda L, x: x.view(()), [(1,)], ANY),
    "reshape_0d_to_1d": op(lambda L, x: x.reshape(1), [()], ANY),
    "flatten_0d": op(lambda L, x: x.flatten(), [()], ANY),
    "t_1d": op(lambda L, x: x.t(), [(3,)], ANY),
    "squeeze_dims_tuple": op(lambda L, x: x.squeeze((0, 2)), [(1, 3, 1)], ANY),
    "unsqueeze_0d": op(lambda L, x: x.unsqueeze(0), [()], ANY),
    "view_then_mul": op(lambda L, x: x.view(4, 3) * 2, [(3, 4)], ANY),
    "view_as": op(lambda L, x, y: x.view_as(y), [(3, 4), Const((4, 3))], ANY),
    "reshape_as": op(lambda L, x, y: x.reshape_as(y), [(3, 4), Const((2, 6))], ANY),
    "reshape_same_shape": op(lambda L, x: x.reshape(3, 4), [(3, 4)], ANY),
    "view_same_shape": op(lambda L, x: x.view(3, 4), [(3, 4)], ANY),
    "reshape_list": op(lambda L, x: x.reshape([4, -1]), [(3, 4)], ANY),
    "flatten_noncontig": op(lambda L, x: x.t().flatten(), [(3, 4)], ANY),
    "flatten_1d": op(lambda L, x: x.flatten(), [(4,)], ANY),
    "flatten_end_dim": op(lambda L, x: x.flatten(0, -2), [(2, 3, 2)], ANY),
    "contiguous_noncontig": op(lambda L, x: x.t().contiguous(), [(3, 4)], ANY),
    "mT": op(lambda L, x: x.mT, [(2, 3, 4)], ANY),
    "T_1d": op(lambda L, x: x.T, [(3,)], ANY),
    "t_0d": op(lambda L, x: x.t(), [()], ANY),
    "transpose_same_dim": op(lambda L, x: x.transpose(1, 1), [(3, 4)], ANY),
    "transpose_kw": op(lambda L, x: x.transpose(dim0=0, dim1=1), [(3, 4)], ANY),
    "permute_neg": op(lambda L, x: x.permute(-1, 0, 1), [(2, 3, 4)], ANY),
    "permute_identity": op(lambda L, x: x.permute(0, 1), [(3, 4)], ANY),
    "squeeze_neg": op(lambda L, x: x.squeeze(-2), [(3, 1, 4)], ANY),
    "squeeze_nothing": op(lambda L, x: x.squeeze(), [(3, 4)], ANY),
    "squeeze_all_ones": op(lambda L, x: x.squeeze(), [(1, 1)], ANY),
    "squeeze_kw": op(lambda L, x: x.squeeze(dim=0), [(1, 3)], ANY),
    "squeeze_0d": op(lambda L, x: x.squeeze(), [()], ANY),
    "unsqueeze_kw": op(lambda L, x: x.unsqueeze(dim=2), [(3, 4)], ANY),
    "expand_tuple": op(lambda L, x: x.expand((2, 3, 4)), [(3, 1)], ANY),
    "expand_same_shape": op(lambda L, x: x.expand(3, 4), [(3, 4)], ANY),
    "expand_new_dim_minus_one": op(lambda L, x: x.expand(2, -1, -1), [(3, 4)], ANY),
    "unsqueeze_expand_sum": op(lambda L, x: x.unsqueeze(0).expand(3, 2).sum(0), [(2,)], ANY),
    "reshape_noncontig_view": op(lambda L, x: x.mT.reshape(2, 3, 4), [(2, 4, 3)], ANY),
    "reshape_strided_same_shape": op(lambda L, x: x[:, ::2].reshape(2, 2, 3), [(2, 4, 3)], ANY),
    "view_as_nonleaf": op(lambda L, x, y: (x * 2).view_as(y), [(6,), Const((2, 3))], ANY),
    "repeat": op(lambda L, x: x.repeat(2, 3), [(2, 3)], ANY, D2),
    "repeat_new_dims": op(lambda L, x: x.repeat(2, 1, 3), [(2, 3)], ANY),
    "repeat_tuple": op(lambda L, x: x.repeat((3,)), [(2,)], ANY),
    "repeat_0d": op(lambda L, x: x.repeat(4), [()], ANY),
    "repeat_zero": op(lambda L, x: x.repeat(0, 2), [(2, 3)], ANY),
}

INDEX = {
    "index_int": op(lambda L, x: x[1], [(3, 4)], ANY),
    "index_int_1d": op(lambda L, x: x[2], [(4,)], ANY),
    "index_col": op(lambda L, x: x[:, 0], [(3, 4)], ANY),
    "index_slice": op(lambda L, x: x[0:2], [(3, 4)], ANY),
    "index_slice_col": op(lambda L, x: x[:, 1:3], [(3, 4)], ANY),
    "index_step": op(lambda L, x: x[::2, 1:], [(5, 4)], ANY),
    "index_step_1d": op(lambda L, x: x[1::2], [(7,)], ANY),
    "index_negative": op(lambda L, x: x[-1], [(3, 4)], ANY),
    "index_negative_pair": op(lambda L, x: x[-1, -2], [(3, 4)], ANY),
    "index_negative_slice": op(lambda L, x: x[-2:], [(4,)], ANY),
    "index_none": op(lambda L, x: x[None], [(3,)], ANY),
    "index_none_int": op(lambda L, x: x[None, 1], [(3, 4)], ANY),
    "index_ellipsis": op(lambda L, x: x[..., 1], [(2, 3, 4)], ANY),
    "index_ellipsis_none": op(lambda L, x: x[1, ..., None], [(2, 3, 4)], ANY),
    "index_mixed_tuple": op(lambda L, x: x[1, 1:3, None], [(2, 4, 3)], ANY),
    "index_mixed_tuple_2": op(lambda L, x: x[:, None, -1, ::2], [(2, 3, 4)], ANY),
    "index_list_dup": op(lambda L, x: x[[0, 2, 0]], [(3, 4)], ANY),
    "index_list_second_dim": op(lambda L, x: x[:, [1, 1, 3]], [(3, 4)], ANY),
    "index_long_tensor": op(lambda L, x: x[L.tensor([2, 0, 2])], [(4,)], ANY),
    "index_mask": op(lambda L, x: x[x > 0], [(3, 4)], AWAY),
    "index_row_mask": op(lambda L, x: x[L.tensor([True, False, True])], [(3, 2)], ANY),
    "index_0d_long_tensor": op(lambda L, x: x[L.tensor(1)], [(3, 2)], ANY),
    "index_two_lists": op(lambda L, x: x[[0, 2], [1, 1]], [(3, 4)], ANY),
    "index_chain": op(lambda L, x: x[1][2], [(3, 4)], ANY),
    "index_slice_past_end": op(lambda L, x: x[1:100], [(4,)], ANY),
    "index_empty_slice": op(lambda L, x: x[3:1], [(4, 2)], ANY),
    "index_negative_bounds_slice": op(lambda L, x: x[-3:-1], [(5,)], ANY),
    "index_int_then_step": op(lambda L, x: x[1, ::3], [(3, 7)], ANY),
    "index_bool_list": op(lambda L, x: x[[True, False, True]], [(3, 2)], ANY),
    "index_2d_long_tensor": op(lambda L, x: x[L.tensor([[0, 1], [2, 0]])], [(3, 2)], ANY),
    "index_int_and_list": op(lambda L, x: x[1, [0, 2, 2]], [(3, 4)], ANY),
    "index_list_and_slice": op(lambda L, x: x[[0, 2], 1:], [(3, 4)], ANY),
    "index_slice_list_slice": op(lambda L, x: x[:, [0, 2], :], [(2, 3, 4)], ANY),
    "index_none_and_list": op(lambda L, x: x[None, [1, 0]], [(3,)], ANY),
    "index_separated_lists": op(lambda L, x: x[[0, 1], :, [1, 0]], [(2, 3, 4)], ANY),
    "index_row_mask_from_sum": op(lambda L, x: x[x.sum(1) > 0], [(4, 3)], ANY),
    "index_none_ellipsis_none": op(lambda L, x: x[None, ..., None], [(2, 3)], ANY),
    "index_ellipsis_only": op(lambda L, x: x[...], [(2, 3)], ANY),
    "index_0d_ellipsis": op(lambda L, x: x[...], [()], ANY),
    "index_0d_none": op(lambda L, x: x[None], [()], ANY),
    "index_all_ints": op(lambda L, x: x[1, 2, 0], [(2, 3, 4)], ANY),
    "index_numpy_int": op(lambda L, x: x[np.int64(1)], [(3, 2)], ANY),
    "index_dup_long_tensor_sum": op(lambda L, x: x[L.tensor([1, 1, 1])].sum(), [(3,)], ANY),
    "index_mask_all_false": op(lambda L, x: x[x > 100], [(3,)], ANY),
    "index_mask_then_sum": op(lambda L, x: x[x > 0].sum(), [(3, 4)], AWAY),
    "index_int_slice_list": op(lambda L, x: x[0, :, [0, 3]], [(2, 3, 4)], ANY),
    "index_list_int_list": op(lambda L, x: x[[0, 1], 1, [1, 0]], [(2, 3, 4)], ANY),
    "index_slice_none_list_int": op(lambda L, x: x[1:, None, [0, 1], 2], [(2, 3, 4)], ANY),
    "index_0d_long_and_list": op(lambda L, x: x[L.tensor(1), [0, 2]], [(2, 3, 4)], ANY),
    "index_ellipsis_list": op(lambda L, x: x[..., [0, 1]], [(2, 3, 4)], ANY),
    "index_true": op(lambda L, x: x[True], [(2, 3)], ANY),
    "index_int_false": op(lambda L, x: x[1, False], [(2, 3)], ANY),
    "index_select": op(lambda L, x: x.index_select(1, L.tensor([0, 3, 3])), [(3, 4)], ANY, D2),
    "index_select_0d_index": op(lambda L, x: x.index_select(0, L.tensor(2)), [(3, 4)], ANY),
    "index_select_int32": op(lambda L, x: x.index_select(0, L.tensor([1, 0], dtype=L.int32)),
                             [(3,)], ANY),
    "index_select_0d_input": op(lambda L, x: x.index_select(0, L.tensor([0])), [()], ANY),
    "gather": op(lambda L, x: x.gather(1, L.tensor([[0, 0], [3, 1], [2, 2]])), [(3, 4)], ANY, D2),
    "gather_dim0": op(lambda L, x: x.gather(0, L.tensor([[0, 1, 2, 0]])), [(3, 4)], ANY),
    "gather_smaller_index": op(lambda L, x: x.gather(1, L.tensor([[0], [3]])), [(3, 4)], ANY),
    "gather_0d": op(lambda L, x: x.gather(0, L.tensor(0)), [()], ANY),
}

MISC = {
    "clone": op(lambda L, x: x.clone(), [(3,)], ANY),
    "clone_fn": op(lambda L, x: L.clone(x), [(2, 2)], ANY),
    "to_float64": op(lambda L, x: x.to(L.float64), [(3,)], ANY),
    "to_float32": op(lambda L, x: x.to(L.float32), [(3,)], ANY),
    "to_dtype_kw": op(lambda L, x: x.to(dtype=L.float64) * 2, [(3,)], ANY),
    "double": op(lambda L, x: x.double(), [(3,)], ANY),
    "float": op(lambda L, x: x.float(), [(3,)], ANY),
    "double_then_mul": op(lambda L, x: x.double() * 2, [(3,)], ANY),
    "float_then_mul": op(lambda L, x: x.float() * 2, [(3,)], ANY),
    "detach": op(lambda L, x: x.detach(), [(3,)], ANY),
    "to_same_dtype": op(lambda L, x: x.to(x.dtype), [(3,)], ANY),
    "to_other_tensor": op(lambda L, x, y: x.to(y), [(3,), Const(())], ANY),
    "to_cpu": op(lambda L, x: x.to("cpu"), [(3,)], ANY),
    "type_dtype": op(lambda L, x: x.type(L.float64), [(3,)], ANY),
    "to_int64": op(lambda L, x: x.to(L.int64), [(3,)], AWAY),
    "to_bool": op(lambda L, x: x.bool(), [(3,)], AWAY),
    "half": op(lambda L, x: x.half(), [(3,)], ANY),
    "double_sum_float": op(lambda L, x: x.double().sum().float(), [(3,)], ANY),
    "clone_nonleaf": op(lambda L, x: (x * 2).clone(), [(3,)], ANY),
    "detach_times_x": op(lambda L, x: x.detach() * x, [(3,)], ANY),
    "nll_loss_of_log_softmax": op(lambda L, x: L.nn.functional.nll_loss(x.log_softmax(1),
                                                                       L.tensor([2, 0])),
                                  [(2, 3)], ANY, D2),
    "cross_entropy": op(lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([1, 0, 2])),
                        [(3, 4)], ANY, D2),
}

CASES = {**ARITH, **UNARY, **COMPARE, **REDUCE, **LINALG, **JOIN_SPLIT, **VIEWS, **INDEX, **MISC}

# Broadcasting: every binary op on every shape pair (both orders); grads reduce to each shape.
BROADCAST_OPS = {
    "add": (lambda L, x, y: x + y, ANY),
    "sub": (lambda L, x, y: x - y, ANY),
    "mul": (lambda L, x, y: x * y, ANY),
    "div": (lambda L, x, y: x / y, AWAY),
    "pow": (lambda L, x, y: x**y, POS),
    "maximum": (lambda L, x, y: L.maximum(x, y), DISTINCT),
    "minimum": (lambda L, x, y: L.minimum(x, y), DISTINCT),
    "where": (lambda L, x, y: L.where(x > y, x, y), DISTINCT),
    "add_alpha": (lambda L, x, y: L.add(x, y, alpha=3), ANY),
}
BROADCAST_SHAPES = [((3, 1), (1, 4)), ((4,), (3, 4)), ((3, 4), (4,)), ((), (3,)), ((3,), ()),
                    ((2, 1, 3), (4, 1)), ((1,), (3,)), ((2, 3), (1, 1, 1))]

# ------------------------------------------------------------------------------------------
# Machinery
# ------------------------------------------------------------------------------------------


def _seed(*parts):
    return zlib.crc32("/".join(map(str, parts)).encode())


def _draw(shapes, domain, rng):
    """Values for all inputs at once (so DISTINCT is distinct across inputs too)."""
    sizes = [int(np.prod(s)) for s in shapes]
    n = sum(sizes)
    if domain == POS:
        v = rng.uniform(0.3, 2.0, n)
    elif domain in (AWAY, ONEZERO, TWOZERO):
        v = rng.uniform(0.3, 2.0, n) * rng.choice([-1, 1], n)
        zeros = {ONEZERO: 1, TWOZERO: 2}.get(domain, 0)
        v[rng.permutation(n)[:zeros]] = 0.0
    elif domain == DISTINCT:
        v = rng.permutation(n) * 0.37 - n * 0.15
    elif domain == ZERO:
        v = np.zeros(n)
    elif domain == LARGE:
        v = rng.uniform(500.0, 1000.0, n) * rng.choice([-1, 1], n)
    elif domain == SMALLINT:
        v = rng.integers(-2, 3, n).astype(np.float64)
    else:
        v = rng.standard_normal(n)
    chunks = np.split(v, np.cumsum(sizes)[:-1])
    return [c.reshape(s) for c, s in zip(chunks, shapes)]


def _name(node):
    return None if node is None else type(node).__name__


def _edges(t):
    if t.grad_fn is None:
        return None
    return [(_name(n), i) for n, i in t.grad_fn.next_functions]


def _graph(node, depth=0):
    """The whole backward graph below `node`: (class name, ((child graph, output_nr), ...))."""
    if node is None or depth > 16:
        return None
    return (_name(node), tuple((_graph(n, depth + 1), i) for n, i in node.next_functions))


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _facts(t):
    return dict(value=t.detach().numpy().copy(), dtype=str(t.dtype), shape=tuple(t.shape),
                requires_grad=t.requires_grad, is_leaf=t.is_leaf, node=_name(t.grad_fn),
                edges=_edges(t), graph=_graph(t.grad_fn))


def _run(lib, fn, inputs, seed):
    """inputs: list of (array, dtype_name, requires_grad). Returns forward facts per output and
    the leaves' grads after backwarding a seeded random cotangent through every output that
    requires grad."""
    xs = [lib.tensor(a, dtype=getattr(lib, dt), requires_grad=rg) for a, dt, rg in inputs]
    outs = _outputs(fn(lib, *xs))
    facts = [_facts(o) for o in outs]
    rng = np.random.default_rng(seed)
    live = [o for o in outs if o.requires_grad]
    cots = [lib.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype) for o in live]
    if len(live) == 1:
        live[0].backward(cots[0])
    elif live:
        lib.autograd.backward(live, cots)
    grads = [None if x.grad is None else
             dict(value=x.grad.numpy().copy(), dtype=str(x.grad.dtype), shape=tuple(x.grad.shape))
             for x in xs]
    return facts, grads


def _assert_same(ours, theirs, rtol):
    (our_facts, our_grads), (their_facts, their_grads) = ours, theirs
    assert len(our_facts) == len(their_facts), "number of outputs"
    for k, (a, b) in enumerate(zip(our_facts, their_facts)):
        for key in ("dtype", "shape", "requires_grad", "is_leaf", "node", "edges", "graph"):
            assert a[key] == b[key], f"output {k} {key}: ours {a[key]!r}, torch {b[key]!r}"
        np.testing.assert_allclose(a["value"], b["value"], rtol=rtol, atol=rtol,
                                   err_msg=f"output {k} value")
    for k, (a, b) in enumerate(zip(our_grads, their_grads)):
        assert (a is None) == (b is None), f"input {k} grad None-ness: ours {a}, torch {b}"
        if a is not None:
            assert (a["dtype"], a["shape"]) == (b["dtype"], b["shape"]), f"input {k} grad meta"
            np.testing.assert_allclose(a["value"], b["value"], rtol=rtol, atol=rtol,
                                       err_msg=f"input {k} grad")


def _inputs(shapes, domain, dtype, seed):
    arrays = _draw(shapes, domain, np.random.default_rng(seed))
    return [(a, dtype, not isinstance(s, Const)) for a, s in zip(arrays, shapes)]


def _differential(fn, inputs, seed, rtol):
    theirs = _run(torch, fn, inputs, seed)
    ours = _run(adcompile, fn, inputs, seed)
    _assert_same(ours, theirs, rtol)


# ------------------------------------------------------------------------------------------
# Tests
# ------------------------------------------------------------------------------------------
DTYPES = pytest.mark.parametrize("dtype", ["float64", "float32"])


@DTYPES
@pytest.mark.parametrize("name", list(CASES))
def test_op(name, dtype):
    case = CASES[name]
    seed = _seed(name)
    _differential(case.fn, _inputs(case.shapes, case.domain, dtype, seed), seed, TOL[dtype])


@DTYPES
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES,
                         ids=lambda p: f"{p[0]}x{p[1]}".replace(" ", ""))
@pytest.mark.parametrize("opname", list(BROADCAST_OPS))
def test_broadcast(opname, shapes, dtype):
    fn, domain = BROADCAST_OPS[opname]
    seed = _seed(opname, shapes)
    _differential(fn, _inputs(list(shapes), domain, dtype, seed), seed, TOL[dtype])


# Mixed dtypes with gradients: (fn, [(shape, dtype, requires_grad)][, domain of the floats]).
# Result dtype follows promotion; each leaf's .grad has the leaf's own dtype.
MIXED = {
    "f32_mul_f64": (lambda L, a, b: a * b, [((3,), "float32", True), ((3,), "float64", True)]),
    "f64_add_f32_broadcast": (lambda L, a, b: a + b,
                              [((3, 1), "float64", True), ((4,), "float32", True)]),
    "f32_div_f64": (lambda L, a, b: a / b, [((3,), "float32", True), ((3,), "float64", True)]),
    "f32_sub_f64_scalar_first": (lambda L, a, b: b - a,
                                 [((3,), "float32", True), ((3,), "float64", True)]),
    "0d_f64_mul_1d_f32": (lambda L, a, b: a * b, [((), "float64", True), ((3,), "float32", True)]),
    "1d_f32_add_0d_f64": (lambda L, a, b: a + b, [((3,), "float32", True), ((), "float64", True)]),
    "0d_f32_mul_0d_f64": (lambda L, a, b: a * b, [((), "float32", True), ((), "float64", True)]),
    "1d_f32_mul_0d_f64_const": (lambda L, a, b: a * b,
                                [((3,), "float32", True), ((), "float64", False)]),
    "f32_pow_f64": (lambda L, a, b: a**b, [((3,), "float32", True), ((3,), "float64", True)],
                    POS),
    "maximum_f32_f64": (lambda L, a, b: L.maximum(a, b),
                        [((4,), "float32", True), ((4,), "float64", True)]),
    "where_f32_f64": (lambda L, a, b: L.where(a > 0, a, b),
                      [((4,), "float32", True), ((4,), "float64", True)]),
    "cat_f32_f64": (lambda L, a, b: L.cat([a, b]),
                    [((2,), "float32", True), ((3,), "float64", True)]),
    "stack_f32_f64": (lambda L, a, b: L.stack([a, b]),
                      [((3,), "float32", True), ((3,), "float64", True)]),
    "f32_mul_f64_sum": (lambda L, a, b: (a * b).sum(),
                        [((3,), "float32", True), ((3,), "float64", True)]),
    "int_mul_f32": (lambda L, i, a: i * a, [((3,), "int64", False), ((3,), "float32", True)]),
    "int_add_0d_f64": (lambda L, i, a: i + a, [((3,), "int64", False), ((), "float64", True)]),
    "int32_div_0d_f32": (lambda L, i, a: i / a, [((3,), "int32", False), ((), "float32", True)]),
    "bool_mul_f32": (lambda L, m, a: m * a, [((3,), "bool", False), ((3,), "float32", True)]),
    "f32_mul_int_scalar": (lambda L, a: a * 3, [((3,), "float32", True)]),
    "f32_add_float_scalar": (lambda L, a: 2.5 + a, [((3,), "float32", True)]),
    "f32_pow_float_scalar": (lambda L, a: a**0.5, [((3,), "float32", True)]),
    "f32_to_f64_mul_f64": (lambda L, a, b: a.double() * b,
                           [((3,), "float32", True), ((3,), "float64", True)]),
    "0d_f64_div_1d_f32": (lambda L, a, b: a / b, [((), "float64", True), ((3,), "float32", True)]),
    "1d_f32_pow_0d_f64": (lambda L, a, b: a**b, [((3,), "float32", True), ((), "float64", True)],
                          POS),
    "f64_sub_f32_broadcast": (lambda L, a, b: a - b,
                              [((2, 1), "float64", True), ((3,), "float32", True)]),
    "minimum_f32_0d_f64": (lambda L, a, b: L.minimum(a, b),
                           [((4,), "float32", True), ((), "float64", True)]),
    "where_f32_0d_f64": (lambda L, a, b: L.where(a > 0, a, b),
                         [((4,), "float32", True), ((), "float64", True)]),
    "clamp_f32_by_f64_tensor": (lambda L, a, b: a.clamp(min=b),
                                [((3,), "float32", True), ((3,), "float64", False)]),
    "mm_f32_plus_f64": (lambda L, a, b: a.mm(a.t()) + b,
                        [((2, 3), "float32", True), ((2, 2), "float64", True)]),
    "dot_f32_times_0d_f64": (lambda L, a, b: a.dot(a) * b,
                             [((3,), "float32", True), ((), "float64", True)]),
    "sum_f32_plus_1d_f64": (lambda L, a, b: a.sum() + b,
                            [((3,), "float32", True), ((2,), "float64", True)]),
    "f16_mul_f32": (lambda L, a, b: a * b, [((3,), "float16", True), ((3,), "float32", True)]),
    "int_mul_0d_f32": (lambda L, i, a: i * a, [((3,), "int64", False), ((), "float32", True)]),
    "f64_div_int": (lambda L, i, a: a / i, [((3,), "int64", False), ((3,), "float64", True)]),
    "f32_mul_0d_int": (lambda L, a, i: a * i, [((3,), "float32", True), ((), "int64", False)]),
    "bool_add_f32": (lambda L, m, a: a + m, [((3,), "bool", False), ((3,), "float32", True)]),
    "int_times_float_scalar_times_f64": (lambda L, i, a: (i * 1.5) * a,
                                         [((3,), "int64", False), ((3,), "float64", True)]),
    "int_true_div_int_times_f32": (lambda L, i, j, a: (i / j) * a,
                                   [((3,), "int64", False), ((3,), "int64", False),
                                    ((3,), "float32", True)]),
    "bool_times_int_scalar_times_f32": (lambda L, m, a: (m * 2) * a,
                                        [((3,), "bool", False), ((3,), "float32", True)]),
}


def _mixed_inputs(specs, domain, seed):
    rng = np.random.default_rng(seed)
    out = []
    for shape, dtype, rg in specs:
        if dtype == "bool":
            a = rng.integers(0, 2, shape).astype(bool)
        elif dtype.startswith("int"):
            a = rng.integers(1, 5, shape)
        else:
            a = _draw([shape], domain, rng)[0]
        out.append((a, dtype, rg))
    return out


@pytest.mark.parametrize("name", list(MIXED))
def test_mixed_dtypes(name):
    fn, specs, domain = (*MIXED[name], AWAY)[:3]
    seed = _seed(name)
    _differential(fn, _mixed_inputs(specs, domain, seed), seed, TOL["float32"])


# Integer / bool promotion without autograd: compare dtype and values.
PROMOTION = {
    "int_plus_int_scalar": lambda L: L.tensor([1, 2]) + 1,
    "int_plus_float_scalar": lambda L: L.tensor([1, 2]) + 1.5,
    "float_scalar_times_int": lambda L: 2.5 * L.tensor([1, 2]),
    "int_div_int_tensor": lambda L: L.tensor([1, 2]) / L.tensor([2, 2]),
    "int_div_int_tensor_thirds": lambda L: L.tensor([1, 2, 7]) / L.tensor([3, 3, 3]),
    "int_div_scalar": lambda L: L.tensor([1, 3]) / 2,
    "int_rdiv_scalar": lambda L: 1 / L.tensor([2, 4]),
    "int_div_fn": lambda L: L.div(L.tensor([7, -7]), L.tensor([2, 2])),
    "int_pow_2": lambda L: L.tensor([1, 3]) ** 2,
    "int_pow_half": lambda L: L.tensor([1, 4]) ** 0.5,
    "int_floordiv": lambda L: L.tensor(-7) // 2,
    "int_floordiv_tensor": lambda L: L.tensor([-7, 7]) // L.tensor([2, -2]),
    "int_sub_rsub": lambda L: 5 - L.tensor([1, 2]),
    "int_neg": lambda L: -L.tensor([1, -2]),
    "int32_plus_int64": lambda L: L.tensor([1], dtype=L.int32) + L.tensor([1]),
    "int32_plus_scalar": lambda L: L.tensor([1], dtype=L.int32) + 1,
    "int32_plus_float_scalar": lambda L: L.tensor([1], dtype=L.int32) + 1.5,
    "int32_1d_plus_int64_0d": lambda L: L.tensor([1, 2], dtype=L.int32) + L.tensor(3),
    "int64_1d_plus_f32_0d": lambda L: L.tensor([1, 2]) + L.tensor(0.5),
    "int_x_0d_f64": lambda L: L.tensor([1, 2]) + L.tensor(0.5, dtype=L.float64),
    "uint8_plus_int8": lambda L: L.tensor([1], dtype=L.uint8) + L.tensor([1], dtype=L.int8),
    "bool_plus_int": lambda L: L.tensor([True, False]) + 1,
    "int_plus_bool": lambda L: 1 + L.tensor([True, False]),
    "bool_times_int": lambda L: L.tensor([True, False]) * 3,
    "bool_times_true": lambda L: L.tensor([True, False]) * True,
    "bool_plus_bool": lambda L: L.tensor([True, False]) + L.tensor([True, True]),
    "bool_plus_float": lambda L: L.tensor([True]) + 1.5,
    "bool_plus_int_tensor": lambda L: L.tensor([True, False]) + L.tensor([2, 3]),
    "bool_div_int": lambda L: L.tensor([True, False]) / 2,
    "bool_sum": lambda L: L.tensor([True, True, False]).sum(),
    "int32_sum": lambda L: L.tensor([1, 2], dtype=L.int32).sum(),
    "f16_times_scalar": lambda L: L.tensor([1.0, 2.0], dtype=L.float16) * 3.5,
    "f16_x_f32": lambda L: L.ones(2, dtype=L.float16) + L.ones(2),
    "1d_f16_x_0d_f64": lambda L: L.ones(2, dtype=L.float16) * L.tensor(2.0, dtype=L.float64),
    "0d_x_0d": lambda L: L.tensor(1.0) * L.tensor(2.0, dtype=L.float64),
    "compare_int_float": lambda L: L.tensor([1, 2]) < L.tensor([1.5, 1.5]),
    "compare_int_scalar": lambda L: L.tensor([1, 2]) == 2,
    "int_maximum_float": lambda L: L.maximum(L.tensor([1, 5]), L.tensor([2.5, 2.5])),
    "where_int_float": lambda L: L.where(L.tensor([True, False]), L.tensor([1, 2]), 0.5),
    "cat_int_float": lambda L: L.cat([L.tensor([1, 2]), L.tensor([0.5])]),
    "int_mm": lambda L: L.tensor([[1, 2]]) @ L.tensor([[3], [4]]),
    "int_argmax": lambda L: L.tensor([3, 9, 2]).argmax(),
    "int_mul_float_scalar": lambda L: L.tensor([1, 2]) * 0.5,
    "float_scalar_minus_int": lambda L: 0.5 - L.tensor([1, 2]),
    "float_scalar_pow_int": lambda L: 2.0 ** L.tensor([1, 2]),
    "int_scalar_pow_int": lambda L: 2 ** L.tensor([1, 2]),
    "int_pow_neg_float": lambda L: L.tensor([1, 2]) ** -1.0,
    "int_div_int_signs": lambda L: L.tensor([-7, 7, 0]) / L.tensor([2, -2, 3]),
    "int_div_int_0d": lambda L: L.tensor(7) / L.tensor(2),
    "int_true_divide_scalar": lambda L: L.tensor([3]).true_divide(2),
    "int_div_floor_mode": lambda L: L.tensor([-7, 7]).div(2, rounding_mode="floor"),
    "int_div_trunc_mode": lambda L: L.tensor([-7, 7]).div(2, rounding_mode="trunc"),
    "int_floordiv_float": lambda L: L.tensor([-7, 7]) // 2.0,
    "int32_div_int32": lambda L: L.tensor([1], dtype=L.int32) / L.tensor([2], dtype=L.int32),
    "bool_plus_true": lambda L: L.tensor([True, False]) + True,
    "bool_pow_int": lambda L: L.tensor([True, False]) ** 2,
    "bool_times_0d_float": lambda L: L.tensor([True, False]) * L.tensor(2.5),
    "bool_eq_int": lambda L: L.tensor([True, False]) == 1,
    "bool_cumsum": lambda L: L.tensor([True, True]).cumsum(0),
    "bool_exp": lambda L: L.tensor([True, False]).exp(),
    "int_prod": lambda L: L.tensor([2, 3, 4]).prod(),
    "int_cumsum": lambda L: L.tensor([2, 3, 4]).cumsum(0),
    "int_max": lambda L: L.tensor([2, 9, 4]).max(),
    "int_abs": lambda L: L.tensor([-2, 9]).abs(),
    "int_sign": lambda L: L.tensor([-2, 0, 9]).sign(),
    "int_sqrt": lambda L: L.tensor([4, 9]).sqrt(),
    "int_exp": lambda L: L.tensor([0, 1]).exp(),
    "int_sigmoid": lambda L: L.tensor([0, 1]).sigmoid(),
    "int_clamp_float_bounds": lambda L: L.tensor([0, 5]).clamp(0.5, 2.5),
    "int_clamp_int_bounds": lambda L: L.tensor([0, 5]).clamp(1, 3),
    "int_round": lambda L: L.tensor([1, 2]).round(),
    "int_dot": lambda L: L.dot(L.tensor([1, 2]), L.tensor([3, 4])),
    "int32_sum_dim": lambda L: L.tensor([[1, 2], [3, 4]], dtype=L.int32).sum(0),
    "int8_plus_big_0d": lambda L: L.tensor([1], dtype=L.int8) + L.tensor(1000),
    "f32_0d_plus_int32_1d": lambda L: L.tensor(1.5) + L.tensor([1, 2], dtype=L.int32),
    "int64_maximum_int32": lambda L: L.maximum(L.tensor([1, 5]), L.tensor([2, 2], dtype=L.int32)),
    "stack_int_float": lambda L: L.stack([L.tensor([1, 2]), L.tensor([0.5, 1.5])]),
    "where_int_scalars": lambda L: L.where(L.tensor([True, False]), 1, 0),
    "where_int_and_float_scalar": lambda L: L.where(L.tensor([True, False]), 1, 0.5),
    "int_softmax_dtype": lambda L: L.tensor([1, 2]).softmax(0, dtype=L.float32),
    "int_gt_float_scalar": lambda L: L.tensor([1, 2]) > 1.5,
    "f16_sum": lambda L: L.tensor([1.0, 2.0], dtype=L.float16).sum(),
    "int_clamp_float_tensor": lambda L: L.tensor([1, 2]).clamp(L.tensor([1.5, 1.5])),
    "int_clamp_0d_f64": lambda L: L.tensor([1, 2]).clamp(L.tensor(1.5, dtype=L.float64)),
    "f32_clamp_0d_f64": lambda L: L.tensor([1.0, 2.0]).clamp(L.tensor(1.5, dtype=L.float64)),
    "int32_clamp_int": lambda L: L.tensor([1, 5], dtype=L.int32).clamp(2, 3),
    "bool_clamp_int": lambda L: L.tensor([True, False]).clamp(0),
    "bool_clamp_float": lambda L: L.tensor([True, False]).clamp(0.5),
    "int_clamp_max_float": lambda L: L.tensor([1, 2]).clamp(max=1.5),
    "int_trunc_div_tensor": lambda L: L.tensor([-7, 7, -6, 0]).div(L.tensor([2, -2, 4, 3]),
                                                                   rounding_mode="trunc"),
    "int_floor_div_tensor": lambda L: L.tensor([-7, 7, -6, 0]).div(L.tensor([2, -2, 4, 3]),
                                                                   rounding_mode="floor"),
    "float_floordiv_zero": lambda L: L.tensor([1.0, -1.0, 0.0]) // 0,
    "float_floor_mode_mixed_signs": lambda L: L.tensor([-7.5, 7.5]).div(-2, rounding_mode="floor"),
    "int_float_power": lambda L: L.tensor([1, 2]).float_power(2),
    "int_float_power_tensor": lambda L: L.tensor([1, 2]).float_power(L.tensor([2, 3])),
    "int_cumprod": lambda L: L.tensor([2, 3, 4]).cumprod(0),
    "bool_cumprod": lambda L: L.tensor([True, True, False]).cumprod(0),
    "int_repeat": lambda L: L.tensor([1, 2]).repeat(2),
    "int_gather": lambda L: L.tensor([[1, 2], [3, 4]]).gather(1, L.tensor([[1], [0]])),
    "int_index_select": lambda L: L.tensor([5, 6, 7]).index_select(0, L.tensor([2, 2])),
    "int_nonzero": lambda L: L.tensor([[1, 0], [0, 3]]).nonzero(),
    "int_masked_fill_float": lambda L: L.tensor([1, 2]).masked_fill(L.tensor([True, False]), 2.5),
    "int_rsub_tensor": lambda L: L.rsub(L.tensor([1, 2]), L.tensor([5.5, 5.5])),
    "int_rsub_scalar": lambda L: L.rsub(L.tensor([1, 2]), 3),
}


@pytest.mark.parametrize("name", list(PROMOTION))
def test_promotion(name):
    ours, theirs = PROMOTION[name](adcompile), PROMOTION[name](torch)
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert not ours.requires_grad
    np.testing.assert_allclose(np.asarray(ours.tolist(), dtype=np.float64),
                               np.asarray(theirs.tolist(), dtype=np.float64), rtol=1e-6)


# Second derivatives: g = d/dx (out*v).sum() with create_graph=True, then d/dx (g*w).sum().
SECOND_ORDER = [name for name, case in CASES.items() if D2 in case.flags]


def _second_order(lib, case, arrays):
    xs = [lib.tensor(a, dtype=lib.float64, requires_grad=not isinstance(s, Const))
          for a, s in zip(arrays, case.shapes)]
    leaves = [x for x in xs if x.requires_grad]
    out = case.fn(lib, *xs)
    v = lib.tensor(np.random.default_rng(2).standard_normal(tuple(out.shape)))
    grads = lib.autograd.grad((out * v).sum(), leaves, create_graph=True)
    first = [g.detach().numpy().copy() for g in grads]
    flags = [g.requires_grad for g in grads]
    live = [g for g in grads if g.requires_grad]
    if not live:
        return first, flags, None
    rng = np.random.default_rng(3)
    total = sum((g * lib.tensor(rng.standard_normal(tuple(g.shape)))).sum() for g in live)
    second = lib.autograd.grad(total, leaves, allow_unused=True)
    # An unreachable leaf is None; an all-zero gradient means the same thing. (torch may hand
    # back a ZeroTensor, which only converts with force=True.)
    return first, flags, [np.zeros(x.shape) if s is None else
                          (s.numpy(force=True) if lib is torch else s.numpy()).copy()
                          for s, x in zip(second, leaves)]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_derivative(name):
    case = CASES[name]
    compare_second_order(case, _draw(case.shapes, case.domain,
                                     np.random.default_rng(_seed(name, "d2"))))


def compare_second_order(case, arrays):
    """First and second derivatives of `case` at `arrays`, ours against torch's."""
    t_first, t_flags, t_second = _second_order(torch, case, arrays)
    o_first, o_flags, o_second = _second_order(adcompile, case, arrays)
    for a, b in zip(o_first, t_first):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8, err_msg="first derivative")
    assert o_flags == t_flags, "which first derivatives require grad (create_graph=True)"
    if t_second is not None:
        for k, (a, b) in enumerate(zip(o_second, t_second)):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8, err_msg=f"d2 wrt input {k}")


# Error types (messages deliberately differ).
ERRORS = {
    "mm_shape_mismatch": lambda L: L.ones(2, 3).mm(L.ones(2, 3)),
    "matmul_shape_mismatch": lambda L: L.ones(2, 3) @ L.ones(4),
    "dot_dtype_mismatch": lambda L: L.dot(L.ones(2), L.ones(2, dtype=L.float64)),
    "mm_dtype_mismatch": lambda L: L.ones(2, 2).mm(L.ones(2, 2, dtype=L.float64)),
    "broadcast_mismatch": lambda L: L.ones(3) + L.ones(4),
    "view_bad_size": lambda L: L.ones(3, 4).view(5, 2),
    "view_non_contiguous": lambda L: L.ones(3, 4).t().view(12),
    "cat_shape_mismatch": lambda L: L.cat([L.ones(2, 3), L.ones(2, 2)]),
    "stack_shape_mismatch": lambda L: L.stack([L.ones(2), L.ones(3)]),
    "index_out_of_range": lambda L: L.ones(3)[3],
    "dim_out_of_range": lambda L: L.ones(3).sum(1),
    "unsqueeze_dim_out_of_range": lambda L: L.ones(3).unsqueeze(2),
    "int_requires_grad": lambda L: L.tensor([1, 2], requires_grad=True),
    "backward_non_scalar": lambda L: (L.ones(2, requires_grad=True) * 2).backward(),
    "backward_no_grad": lambda L: L.ones(2).sum().backward(),
    "mean_of_int": lambda L: L.tensor([1, 2]).mean(),
    "expand_bad": lambda L: L.ones(2, 3).expand(4, 3),
    "bool_minus_int": lambda L: L.tensor([True, False]) - 1,
    "bool_neg": lambda L: -L.tensor([True, False]),
    "matmul_batch_mismatch": lambda L: L.ones(2, 2, 3) @ L.ones(3, 3, 2),
    "matmul_0d": lambda L: L.tensor(1.0) @ L.ones(2),
    "dot_2d": lambda L: L.dot(L.ones(2, 2), L.ones(2, 2)),
    "dot_length_mismatch": lambda L: L.dot(L.ones(2), L.ones(3)),
    "mv_mismatch": lambda L: L.ones(2, 3).mv(L.ones(2)),
    "mm_1d": lambda L: L.ones(3).mm(L.ones(3, 2)),
    "addmm_bias_bad": lambda L: L.addmm(L.ones(3), L.ones(2, 2), L.ones(2, 2)),
    "outer_2d": lambda L: L.outer(L.ones(2, 2), L.ones(2)),
    "cat_empty_list": lambda L: L.cat([]),
    "cat_0d": lambda L: L.cat([L.tensor(1.0), L.tensor(2.0)]),
    "cat_dim_out_of_range": lambda L: L.cat([L.ones(2), L.ones(2)], 1),
    "split_size_zero": lambda L: L.ones(4).split(0),
    "split_sizes_bad_sum": lambda L: L.ones(4).split([1, 2]),
    "chunk_zero": lambda L: L.ones(4).chunk(0),
    "view_two_minus_ones": lambda L: L.ones(4).view(-1, -1),
    "view_bad_infer": lambda L: L.ones(5).view(-1, 2),
    "transpose_out_of_range": lambda L: L.ones(2, 3).transpose(0, 2),
    "permute_wrong_length": lambda L: L.ones(2, 3).permute(0),
    "permute_repeated": lambda L: L.ones(2, 3).permute(0, 0),
    "t_3d": lambda L: L.ones(2, 3, 4).t(),
    "squeeze_out_of_range": lambda L: L.ones(2).squeeze(1),
    "expand_fewer_dims": lambda L: L.ones(2, 3).expand(3),
    "expand_minus_one_new_dim": lambda L: L.ones(3).expand(-1, 3),
    "index_too_many": lambda L: L.ones(3)[0, 0],
    "index_negative_out_of_range": lambda L: L.ones(3)[-4],
    "index_list_out_of_range": lambda L: L.ones(3)[[0, 3]],
    "index_negative_step": lambda L: L.ones(3)[::-1],
    "index_float": lambda L: L.ones(3)[1.0],
    "index_mask_shape": lambda L: L.ones(3)[L.tensor([True, False])],
    "index_0d_with_int": lambda L: L.tensor(1.0)[0],
    "max_of_empty": lambda L: L.ones(0).max(),
    "softmax_dim_out_of_range": lambda L: L.ones(3).softmax(1),
    "softmax_of_int": lambda L: L.tensor([1, 2]).softmax(0),
    "std_of_int": lambda L: L.tensor([1, 2]).std(),
    "where_float_condition": lambda L: L.where(L.tensor([1.0, 0.0]), L.ones(2), L.ones(2)),
    "where_shape_mismatch": lambda L: L.where(L.tensor([True, False]), L.ones(3), L.ones(2)),
    "maximum_shape_mismatch": lambda L: L.maximum(L.ones(2), L.ones(3)),
    "int_floordiv_zero": lambda L: L.tensor([1]) // 0,
    "float_of_multi_element": lambda L: float(L.ones(2)),
    "unbind_0d": lambda L: L.tensor(1.0).unbind(),
    "bool_minus_bool": lambda L: L.tensor([True]) - L.tensor([True]),
    "bool_inplace_sub_bool": lambda L: L.tensor([True]).sub_(L.tensor([True])),
    "float_minus_bool_tensor": lambda L: L.ones(1) - L.tensor([True]),
    "float_minus_true": lambda L: L.ones(1) - True,
    "int_minus_bool_tensor": lambda L: 1 - L.tensor([True]),
    "rsub_bool_tensor": lambda L: L.rsub(L.tensor([True]), L.ones(1)),
    "int_trunc_div_zero": lambda L: L.tensor([1]).div(0, rounding_mode="trunc"),
    "int_floordiv_zero_tensor": lambda L: L.tensor([1]) // L.tensor([0]),
    "int_remainder_zero": lambda L: L.tensor([1]) % 0,
    "div_bad_rounding_mode": lambda L: L.ones(2).div(2, rounding_mode="round"),
    "masked_fill_float_mask": lambda L: L.ones(2).masked_fill(L.ones(2), 1.0),
    "masked_fill_1d_value": lambda L: L.ones(2).masked_fill(L.ones(2) > 0, L.ones(2)),
    "clamp_tensor_and_number": lambda L: L.clamp(L.ones(2), L.zeros(2), 0.5),
    "clamp_no_bounds": lambda L: L.ones(2).clamp(),
    "var_of_int": lambda L: L.tensor([1, 2]).var(),
    "norm_of_int": lambda L: L.tensor([1, 2]).norm(),
    "log_softmax_of_int": lambda L: L.tensor([1, 2]).log_softmax(0),
    "index_float_tensor": lambda L: L.ones(3)[L.tensor(1.0)],
    "index_float_in_tuple": lambda L: L.ones(3, 3)[0, 1.5],
    "index_select_float_index": lambda L: L.ones(3).index_select(0, L.tensor([0.0])),
    "index_select_2d_index": lambda L: L.ones(3).index_select(0, L.tensor([[0]])),
    "index_select_out_of_range": lambda L: L.ones(3).index_select(0, L.tensor([3])),
    "index_select_list_index": lambda L: L.ones(3).index_select(0, [0]),
    "gather_ndim_mismatch": lambda L: L.ones(3, 4).gather(1, L.tensor([0])),
    "gather_out_of_bounds": lambda L: L.ones(3, 4).gather(1, L.tensor([[4]])),
    "gather_index_too_large": lambda L: L.ones(3, 4).gather(1, L.tensor([[0], [0], [0], [0]])),
    "repeat_too_few": lambda L: L.ones(3, 4).repeat(2),
    "repeat_negative": lambda L: L.ones(3).repeat(-1),
    "split_negative": lambda L: L.ones(4).split(-1),
    "split_sizes_negative": lambda L: L.ones(4).split([2, -2, 4]),
    "chunk_negative": lambda L: L.ones(4).chunk(-1),
    "stack_empty_list": lambda L: L.stack([]),
    "addmm_dtype_mismatch": lambda L: L.addmm(L.ones(2, 2), L.ones(2, 2), L.ones(2, 2).double()),
    "addmm_inner_mismatch": lambda L: L.addmm(L.ones(2, 2), L.ones(2, 3), L.ones(2, 2)),
    "addmm_bias_more_dims": lambda L: L.addmm(L.ones(1, 2, 2), L.ones(2, 2), L.ones(2, 2)),
    "matmul_3d_inner_mismatch": lambda L: L.ones(2, 3, 4) @ L.ones(2, 5, 6),
    "matmul_3d_1d_mismatch": lambda L: L.ones(2, 3, 4) @ L.ones(5),
    "to_dtype_string": lambda L: L.ones(2).to("float64"),
    "factory_requires_grad_int": lambda L: L.ones(2, requires_grad=1),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_type(name):
    kinds = []
    for lib in LIBS:
        try:
            ERRORS[name](lib)
            kinds.append(None)
        except Exception as e:  # noqa: BLE001 - the type is what we compare
            kinds.append(type(e).__name__)
    assert kinds[0] is not None, "torch raises here"
    assert kinds[1] == kinds[0]


# ------------------------------------------------------------------------------------------
# Focused checks that do not fit the table shape
# ------------------------------------------------------------------------------------------
def test_max_dim_named_fields():
    for lib in LIBS:
        r = lib.tensor([[1.0, 5.0], [7.0, 2.0]], requires_grad=True).max(dim=1)
        values, indices = r
        assert r.values is values or r.values.tolist() == values.tolist()
        assert r.values.tolist() == [5.0, 7.0] and r.indices.tolist() == [1, 0]
        assert str(r.indices.dtype) == "torch.int64" and not r.indices.requires_grad
        assert type(r.values.grad_fn).__name__ == "MaxBackward0"


def test_ties_share_the_gradient_in_full_reduction():
    for lib in LIBS:
        x = lib.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 0.0], requires_grad=True)
        x.max().backward()
        np.testing.assert_allclose(x.grad.numpy(), [1 / 3, 0, 1 / 3, 0, 1 / 3, 0])


def test_tie_in_dim_reduction_goes_to_returned_index():
    grads = []
    for lib in LIBS:
        x = lib.tensor([[2.0, 2.0, 1.0]], requires_grad=True)
        r = x.max(1)
        r.values.sum().backward()
        grads.append((x.grad.tolist(), r.indices.tolist()))
    assert grads[0] == grads[1]


def test_pow_zero_exponent_gradient_at_zero():
    for lib in LIBS:
        x = lib.tensor([0.0, 2.0], requires_grad=True)
        (x**0).sum().backward()
        assert x.grad.tolist() == [0.0, 0.0]


def test_leaf_accumulate_grad_is_shared_between_uses():
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        a, b = y.grad_fn.next_functions
        assert a[0] is b[0] and type(a[0]).__name__ == "AccumulateGrad"

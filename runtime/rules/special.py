"""Derivative rules of the special and inverse-trigonometric functions (issue 16's math).

Partials only, like `runtime.rules.elementwise`; the older rules there (asin, sinh, erf, atan2,
hypot, remainder, ...) serve these primitives too. `ops.digamma` / `ops.polygamma` come from
`runtime.rules.numpy_special` (numpy) and `runtime.ops.special` (Tensors).
"""

import math

from runtime.rules import elementwise, rule

_HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)
_LN2 = math.log(2.0)


@rule("asinh")
def asinh(ops, g, needs, x):
    return (ops.div(g, ops.pow(ops.add(ops.mul(x, x), 1), 0.5)),)


@rule("acosh")
def acosh(ops, g, needs, x):
    return (ops.div(g, ops.pow(ops.sub(ops.mul(x, x), 1), 0.5)),)


@rule("atanh")
def atanh(ops, g, needs, x):
    return (ops.div(g, ops.rsub(ops.mul(x, x), 1)),)


@rule("exp2")
def exp2(ops, g, needs, result):
    return (ops.mul(g, ops.mul(result, math.log(2.0))),)


@rule("erfinv")
def erfinv(ops, g, needs, result):
    """d/dx erfinv(x) = sqrt(pi) / 2 * exp(erfinv(x)^2), rounded as PyTorch's formula is
    (the constant times the exponential, then the cotangent)."""
    return (ops.mul(ops.mul(ops.exp(ops.mul(result, result)), _HALF_SQRT_PI), g),)


@rule("logit")
def logit(ops, g, needs, x, eps):
    """1 / (x (1 - x)); with eps, zero outside [eps, 1 - eps] where the input was clamped,
    without it nan outside [0, 1] (PyTorch's conventions)."""
    partial = ops.div(g, ops.mul(x, ops.rsub(x, 1)))
    if eps is None:
        outside = ops.logical_or(ops.lt(x, 0), ops.gt(x, 1))
        return (ops.where(outside, float("nan"), partial),)
    outside = ops.logical_or(ops.lt(x, eps), ops.gt(x, 1 - eps))
    return (ops.where(outside, 0.0, partial),)


@rule("lgamma")
def lgamma(ops, g, needs, x):
    return (ops.mul(g, ops.digamma(x)),)


@rule("digamma")
def digamma(ops, g, needs, x):
    return (ops.mul(g, ops.polygamma(1, x)),)


@rule("polygamma")
def polygamma(ops, g, needs, x, n):
    return (ops.mul(g, ops.polygamma(n + 1, x)),)


@rule("xlogy")
def xlogy(ops, g, needs, x, y):
    """x * log(y): d/dx is log(y) except where x is 0 (0, or nan where y is nan)."""
    gx = gy = None
    if needs[0]:
        at_zero = ops.where(ops.isnan(y), y, 0.0)
        gx = ops.mul(g, ops.where(ops.eq(x, 0), at_zero, ops.log(y)))
    if needs[1]:
        gy = ops.div(ops.mul(g, x), y)
    return gx, gy


@rule("logaddexp")
def logaddexp(ops, g, needs, a, b):
    """Each operand's share of exp(a) + exp(b): the logistic of its difference to the other."""
    ga = ops.div(g, ops.add(ops.exp(ops.sub(b, a)), 1)) if needs[0] else None
    gb = ops.div(g, ops.add(ops.exp(ops.sub(a, b)), 1)) if needs[1] else None
    return ga, gb


@rule("logaddexp2")
def logaddexp2(ops, g, needs, a, b):
    ga = ops.div(g, ops.add(ops.exp(ops.mul(ops.sub(b, a), _LN2)), 1)) if needs[0] else None
    gb = ops.div(g, ops.add(ops.exp(ops.mul(ops.sub(a, b), _LN2)), 1)) if needs[1] else None
    return ga, gb


@rule("sinc")
def sinc(ops, g, needs, x):
    """sin(pi x) / (pi x): (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at x == 0."""
    x_pi = ops.mul(x, math.pi)
    x_sq_pi = ops.mul(ops.mul(x, x), math.pi)
    slope = ops.div(ops.sub(ops.mul(x_pi, ops.cos(x_pi)), ops.sin(x_pi)), x_sq_pi)
    return (ops.where(ops.eq(x_sq_pi, 0), 0.0, ops.mul(g, slope)),)


@rule("xlogy_scalar_other")
def xlogy_scalar_other(ops, g, needs, x, y):
    return (ops.where(ops.eq(x, 0), 0.0, ops.mul(g, ops.log_scalar(y))),)


@rule("xlogy_scalar_self")
def xlogy_scalar_self(ops, g, needs, x, y):
    return (ops.div(ops.mul(g, x), y),)


@rule("fmod_scalar", "remainder_scalar")
def passthrough(ops, g, needs):
    """x mod c for a number c is x minus a piecewise-constant multiple of c: slope 1."""
    return (g,)


@rule("fmod_tensor", "remainder_tensor")
def modulo(ops, g, needs, a, b, mode, dtype):
    """a - rounded(a / b) * b ("trunc" rounding for fmod, "floor" for remainder): the
    remainder rule with the quotient taken from the saved operands in the result's `dtype`
    at backward time, as PyTorch does (recorded, so the first derivative stays attached to
    the graph)."""
    quotient = ops.div_rounded(a, b, mode, dtype) if needs[1] else None
    return elementwise.remainder(ops, g, needs, a, b, quotient)


@rule("nan_to_num")
def nan_to_num(ops, g, needs, x):
    """The gradient passes where x was finite; x - x is nan exactly at nan and +-inf."""
    return (ops.where(ops.eq(ops.sub(x, x), 0), g, 0.0),)


@rule("i0")
def i0(ops, g, needs, x):
    return (ops.mul(g, ops.i1(x)),)


@rule("i1")
def i1(ops, g, needs, x, result):
    """d/dx I1(x) = I0(x) - I1(x) / x, which tends to 1/2 at x = 0."""
    slope = ops.sub(ops.i0(x), ops.div(result, x))
    return (ops.mul(g, ops.where(ops.eq(x, 0), 0.5, slope)),)


@rule("ldexp")
def ldexp(ops, g, needs, other, result, integral):
    """x * 2**other: the slope in x is 2**other, in other result * ln 2. PyTorch takes the
    slope of an integer exponent in integers, so 2**-k truncates to 0; so do we."""
    gx = None
    if needs[0]:
        scale = ops.pow(2.0, other)
        if integral:
            scale = ops.where(ops.lt(other, 0), 0.0, scale)
        gx = ops.mul(g, scale)
    gother = ops.mul(ops.mul(g, result), _LN2) if needs[1] else None
    return gx, gother


@rule("nextafter")
def nextafter(ops, g, needs, x, other):
    """PyTorch's convention: x's cotangent passes through, other gets zeros."""
    return (g if needs[0] else None, ops.zeros_like(g) if needs[1] else None)

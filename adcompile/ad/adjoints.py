"""Which rule in runtime/rules differentiates each IR primitive, and with what arguments.

An entry maps an IR primitive to (rule name, differentiable operand positions, args builder).
The args builder receives the op, its operands (as values in the IR being built) and its
result, and returns the values the rule expects in the order the eager runtime saves them.
Primitives missing here are not differentiable (comparisons, casts to int...): zero derivative.
"""

import math

from adcompile.ir import types as T
from runtime.rules import RULES


def _operands(op, xs, r):
    return tuple(xs)


def _result(op, xs, r):
    return (r,)


def _x(op, xs, r):
    return (xs[0],)


ADJOINTS = {
    "add": ("add", (0, 1), lambda op, xs, r: (1,)),
    "sub": ("sub", (0, 1), lambda op, xs, r: (1,)),
    "mul": ("mul", (0, 1), _operands),
    "div": ("div", (0, 1), _operands),
    "pow": ("pow_tensor", (0, 1), lambda op, xs, r: (xs[0], xs[1], r)),
    "neg": ("neg", (0,), lambda op, xs, r: ()),
    "abs": ("abs", (0,), _x),
    "sin": ("sin", (0,), _x),
    "cos": ("cos", (0,), _x),
    "tan": ("tan", (0,), _result),
    "exp": ("exp", (0,), _result),
    "log": ("log", (0,), _x),
    "log1p": ("log1p", (0,), _x),
    "sqrt": ("sqrt", (0,), _result),
    "tanh": ("tanh", (0,), _result),
    "expm1": ("expm1", (0,), _result),
    "sinh": ("sinh", (0,), _x),
    "cosh": ("cosh", (0,), _x),
    "asin": ("asin", (0,), _x),
    "acos": ("acos", (0,), _x),
    "atan": ("atan", (0,), _x),
    "log2": ("log2", (0,), lambda op, xs, r: (xs[0], 2.0)),
    "log10": ("log10", (0,), lambda op, xs, r: (xs[0], 10.0)),
    "erf": ("erf", (0,), _x),
    "erfc": ("erfc", (0,), _x),
    "atan2": ("atan2", (0, 1), _operands),
    "hypot": ("hypot", (0, 1), lambda op, xs, r: (xs[0], xs[1], r)),
    "maximum": ("maximum", (0, 1), lambda op, xs, r: (xs[0], xs[1], True)),
    "minimum": ("minimum", (0, 1), lambda op, xs, r: (xs[0], xs[1], False)),
    "max": ("maximum", (0, 1), lambda op, xs, r: (xs[0], xs[1], True)),
    "min": ("minimum", (0, 1), lambda op, xs, r: (xs[0], xs[1], False)),
    "select": ("where", (1, 2), lambda op, xs, r: (xs[0],)),
    "mod": ("remainder", (0, 1), None),  # needs floor(a / b): built by quotient_args
    "fmod": ("remainder", (0, 1), None),  # needs trunc(a / b)
    "copysign": ("copysign", (0, 1), lambda op, xs, r: (xs[0], r)),
}

# math.atan2, math.hypot and their numpy forms compute in floats whatever their operands: the
# rules see an integer operand as that float (x * x of an int near 2**62 overflowed int64 in
# atan2's rule, fuzz seed 2665137667466)
FLOAT_OPERANDS = {"atan2", "hypot"}


def float_operands(b, op, xs):
    """`xs` with each integer or bool operand cast to the float type of op's result."""
    dtype = op.results[0].type.dtype
    return [b.cast(x, T.Scalar(dtype)) if x.type.dtype in ("i64", "bool") else x for x in xs]


# a % b and fmod(a, b) are a - q * b with q = floor(a / b) or trunc(a / b), piecewise constant
QUOTIENT = {"mod": "floor", "fmod": "trunc"}


def quotient_args(b, op, xs):
    """The remainder rule's arguments for the operands `xs` of a mod or fmod `op`, the
    quotient built with the IR builder `b` as numpy computes it (no math-module checks)."""
    quotient = b.value(QUOTIENT[op.prim], (b.value("div", xs),), {"lib": "numpy"})
    return xs[0], xs[1], quotient


ZERO_DERIVATIVE = {"floor", "ceil", "trunc", "round", "floordiv", "sign"}

for _name, (_rule, _, _) in ADJOINTS.items():
    assert _rule in RULES, f"no rule {_rule!r} for IR primitive {_name!r}"
assert math  # module kept for rules' constants

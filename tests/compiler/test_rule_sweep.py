"""Every derivative rule that compiled code uses is swept: for each IR primitive, its JVP and
VJP built through the IR ops namespace and run by the interpreter equal the same rule run
eagerly on numpy (and finite differences). Each primitive declares its input domain."""

import math

import numpy as np
import pytest

from adcompile.ad.adjoints import ADJOINTS
from adcompile.ad.forward import jvp_function
from adcompile.ad.reverse import vjp_function
from adcompile.ir import interp
from adcompile.ir import types as T
from adcompile.ir.builder import IRBuilder
from adcompile.ir.nodes import Block, Function, Value
from runtime.rules import RULES
from runtime.rules import numpy_ops

POS, ANY, UNIT, AWAY = (0.3, 2.0), (-2.0, 2.0), (-0.9, 0.9), (0.5, 2.0)
# primitive: (arity, domain, attrs)
DOMAINS = {
    "add": (2, ANY, {}), "sub": (2, ANY, {}), "mul": (2, ANY, {}), "div": (2, AWAY, {}),
    "pow": (2, POS, {"nonneg_int_exponent": False}), "neg": (1, ANY, {}), "abs": (1, AWAY, {}),
    "sin": (1, ANY, {"lib": "math"}), "cos": (1, ANY, {"lib": "math"}),
    "tan": (1, UNIT, {"lib": "math"}), "exp": (1, ANY, {"lib": "math"}),
    "log": (1, POS, {"lib": "math"}), "log1p": (1, POS, {"lib": "math"}),
    "sqrt": (1, POS, {"lib": "math"}), "tanh": (1, ANY, {"lib": "math"}),
    "expm1": (1, ANY, {"lib": "math"}), "sinh": (1, ANY, {"lib": "math"}),
    "cosh": (1, ANY, {"lib": "math"}), "asin": (1, UNIT, {"lib": "math"}),
    "acos": (1, UNIT, {"lib": "math"}), "atan": (1, ANY, {"lib": "math"}),
    "log2": (1, POS, {"lib": "math"}), "log10": (1, POS, {"lib": "math"}),
    "erf": (1, ANY, {"lib": "math"}), "erfc": (1, ANY, {"lib": "math"}),
    "atan2": (2, AWAY, {"lib": "math"}), "hypot": (2, AWAY, {"lib": "math"}),
    "maximum": (2, ANY, {"lib": "numpy"}), "minimum": (2, ANY, {"lib": "numpy"}),
    "max": (2, ANY, {}), "min": (2, ANY, {}), "mod": (2, AWAY, {}),
    "fmod": (2, AWAY, {"lib": "math"}), "copysign": (2, AWAY, {"lib": "math"}),
}


def _function(prim, arity, attrs):
    params = [Value(T.FLOAT, n) for n in "xy"[:arity]]
    body = Block()
    b = IRBuilder(body)
    r = b.value(prim, params, attrs)
    b.emit("return", [r], {"type": r.type})
    return Function(f"f_{prim}", params, body)


def test_every_adjoint_has_a_domain():
    assert set(DOMAINS) == set(ADJOINTS) - {"select"}


@pytest.mark.parametrize("prim", sorted(DOMAINS))
def test_rule_sweep(prim):
    arity, (lo, hi), attrs = DOMAINS[prim]
    rng = np.random.default_rng(abs(hash(prim)) % 2**32)
    fn = _function(prim, arity, attrs)
    for _ in range(5):
        xs = [float(rng.uniform(lo, hi)) for _ in range(arity)]
        if prim == "mod":
            xs[0] *= 3.1
        ts = [float(rng.standard_normal()) for _ in range(arity)]
        value, tangent = interp.run(jvp_function(fn, [True] * arity), xs + ts)
        eps = 1e-6
        plus = interp.run(fn, [x + eps * t for x, t in zip(xs, ts)])
        minus = interp.run(fn, [x - eps * t for x, t in zip(xs, ts)])
        assert tangent == pytest.approx((plus - minus) / (2 * eps), rel=1e-5, abs=1e-6)
        c = float(rng.standard_normal())
        _, grads = interp.run(vjp_function(fn, [True] * arity), xs + [c])
        assert tangent * c == pytest.approx(sum(g * t for g, t in zip(grads, ts)), rel=1e-9,
                                            abs=1e-12)
        eager = _eager(prim, xs, value, c)
        if eager is not None:
            np.testing.assert_allclose(grads, eager, rtol=1e-12, atol=1e-14)


def _eager(prim, xs, result, c):
    """The same rule run by the eager runtime's numpy ops namespace."""
    rule_name, positions, args_fn = ADJOINTS[prim]
    if args_fn is None:
        return None
    args = args_fn(None, [np.float64(x) for x in xs], np.float64(result))
    needs = tuple(True for _ in positions)
    grads = RULES[rule_name](numpy_ops, np.float64(c), needs, *args)
    return [float(g) for g in grads]


assert math

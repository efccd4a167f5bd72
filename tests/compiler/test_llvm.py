"""LLVM backend: every corpus function, and its JVP and VJP, gives the Python backend's
results to the last bit (fastmath is off, so the operation order is the same); errors become
the exceptions Python raises. (test_corpus, test_jvp, test_vjp and test_second_order run the
LLVM backend against CPython, finite differences and the dot-product identity as well.)"""

import copy

import numpy as np
import pytest

import adcompile as ac
from tests.compiler import corpus as c
from tests.compiler.test_jvp import PARAMS as DPARAMS
from tests.compiler.test_jvp import _direction
from tests.compiler.test_vjp import _cotangent

PARAMS = [(fn, i, args) for fn, arg_sets in c.CASES for i, args in enumerate(arg_sets)]


@pytest.mark.parametrize("fn,i,args", PARAMS, ids=[f"{f.__name__}-{i}" for f, i, _ in PARAMS])
def test_llvm_matches_python_bit_for_bit(fn, i, args):
    got = ac.adcompile(fn, backend="llvm", verify=True)(*copy.deepcopy(args))
    expected = ac.adcompile(fn, backend="python")(*copy.deepcopy(args))
    assert _structure(got) == _structure(expected)
    assert _bits(got) == _bits(expected)


@pytest.mark.parametrize("fn,i,args", DPARAMS, ids=[f"{f.__name__}-{i}" for f, i, _ in DPARAMS])
def test_llvm_derivatives_match_python_bit_for_bit(fn, i, args):
    results = []
    for backend in ("llvm", "python"):
        f = ac.adcompile(fn, backend=backend)
        tangents = _direction(args, np.random.default_rng(i))
        _, value_dot = ac.jvp(f, copy.deepcopy(args), tangents)
        out, pullback = ac.vjp(f, *copy.deepcopy(args))
        grads = pullback(_cotangent(out, np.random.default_rng(i + 1)))
        results.append((value_dot, tuple(g for g in grads if g is not None)))
    # (the Python backend lets a Python-float cotangent stay a Python float where the IR
    # says np.float64; native code follows the IR types, so only the numbers are compared)
    assert _bits(results[0]) == _bits(results[1])


def _structure(value):
    if isinstance(value, tuple):
        return tuple(_structure(v) for v in value)
    if isinstance(value, np.ndarray):
        return ("array", value.dtype, value.shape)
    return type(value)


def _bits(value):
    """Every number as its bit pattern (so -0.0 != 0.0 and NaN == NaN)."""
    if isinstance(value, tuple):
        return [b for v in value for b in _bits(v)]
    return [x.tobytes() for x in np.atleast_1d(np.asarray(value)).ravel()]


def divide(a, b):
    return a // b + a % b


def checked(x):
    assert x > 0, "x must be positive"
    return x


def test_errors_are_python_exceptions():
    f = ac.adcompile(divide, backend="llvm")
    assert f(7, 2) == 7 // 2 + 7 % 2 and f(-7, 2) == -7 // 2 + -7 % 2
    assert f(-7.5, 2.0) == -7.5 // 2.0 + -7.5 % 2.0
    with pytest.raises(ZeroDivisionError):
        f(1, 0)
    with pytest.raises(ZeroDivisionError):
        f(1.0, 0.0)
    with pytest.raises(AssertionError, match="x must be positive"):
        ac.adcompile(checked, backend="llvm")(-1.0)


def test_llvm_ir_and_assembly_are_inspectable():
    f = ac.adcompile(c.poly, backend="llvm")
    spec = f.specialize(2.0)
    text = spec.native.llvm_ir()
    assert "define" in text and "@adc.entry.poly(" in text
    assert "ret" in spec.native.asm()

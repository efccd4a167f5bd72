"""np.prod of floats multiplies in numpy's order on every backend: numpy's iterator visits a
transposed or F-ordered array in memory order and multiplies one element at a time, so the
last bits of a product follow that order (the LLVM backend multiplied in logical C order;
compiler fuzzer seed 863270561288). A table of layouts and expressions, each result equal
bit for bit to numpy's."""

import numpy as np
import pytest

import adcompile as ac

BACKENDS = ("interp", "python", "llvm")


def prod_all(a):
    return np.prod(a)


def prod_method_transposed(a):
    return a.T.prod()


def prod_transposed(a):
    return np.prod(np.transpose(a))


def prod_axis0(a):
    return np.prod(a, axis=0)


def prod_axis1(a):
    return np.prod(a, axis=1)


def prod_axis_last_keepdims(a):
    return np.prod(a, axis=-1, keepdims=True)


def prod_expression_transposed(a):
    return np.prod(a.T * 0.875 + 0.125)


def prod_expression_mixed(a):
    return np.prod(a.T * (a.T + 0.5) / (a + 0.5).T)


def _values(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).uniform(0.6, 1.6, shape).astype(dtype)


LAYOUTS = {  # name: a function making the argument
    "c-2d": lambda: _values((5, 7)),
    "f-2d": lambda: np.asfortranarray(_values((5, 7))),
    "transposed-2d": lambda: _values((7, 5)).T,
    "transposed-3d": lambda: np.transpose(_values((3, 4, 5)), (2, 0, 1)),
    "f-3d": lambda: np.asfortranarray(_values((3, 4, 5))),
    "reversed-rows": lambda: _values((6, 5))[::-1],
    "strided-f": lambda: np.asfortranarray(_values((8, 6)))[::2, ::-1],
    "float32-f": lambda: np.asfortranarray(_values((5, 7), np.float32)),
    "long-f": lambda: np.asfortranarray(1.0 + 0.01 * (_values((40, 300), seed=3) - 1.1)),
}
FUNCTIONS = (prod_all, prod_method_transposed, prod_transposed, prod_axis0, prod_axis1,
             prod_axis_last_keepdims, prod_expression_transposed, prod_expression_mixed)


def _same(got, want):
    assert type(got) is type(want)
    got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint8), want.reshape(-1).view(np.uint8))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_prod_in_numpy_order(fn, layout, backend):
    a = LAYOUTS[layout]()
    want = fn(a)
    _same(ac.adcompile(fn, backend=backend)(a), want)


def test_the_table_tells_the_orders_apart():
    """Multiplying in C order instead gives other bits for most layouts here (the table
    could not fail otherwise)."""
    differ = 0
    for make in LAYOUTS.values():
        a = make()
        c_order = np.float64(1.0).astype(a.dtype)
        for v in a.ravel(order="C"):
            c_order = c_order * v
        differ += c_order != np.prod(a)
    assert differ >= 4

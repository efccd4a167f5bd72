"""ravel() is a view of a C-contiguous array only, a copy of any other (numpy's rule), where
reshape(-1) is a view whenever the strides allow one: a write into the array after ravel()
shows through the result exactly when numpy's does, on every backend (the compiler read ravel
as reshape; compiler fuzzer seed 34812473249)."""

import numpy as np
import pytest

BACKENDS = ("interp", "python", "llvm")


def ravel_then_write(m):
    t = m.ravel()
    m[0, 0] = 5.0
    return t


def np_ravel_then_write(m):
    t = np.ravel(m)
    m[0, 0] = 5.0
    return t


def reshape_then_write(m):
    t = m.reshape(-1)
    m[0, 0] = 5.0
    return t


LAYOUTS = {
    "c": lambda: np.arange(6.0).reshape(2, 3),
    "every-other-column": lambda: np.arange(8.0).reshape(2, 4)[:, ::2],
    "one-column": lambda: np.arange(12.0).reshape(4, 3)[:, :1],
    "transposed": lambda: np.arange(6.0).reshape(3, 2).T,
    "one-row-strided": lambda: np.arange(8.0).reshape(1, 8)[:, ::2],
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fn", [ravel_then_write, np_ravel_then_write, reshape_then_write],
                         ids=lambda f: f.__name__)
def test_ravel_copies_as_numpy(fn, layout, backend):
    import adcompile as ac

    want_arg, got_arg = LAYOUTS[layout](), LAYOUTS[layout]()
    want = fn(want_arg)
    got = ac.adcompile(fn, backend=backend)(got_arg)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_arg, want_arg)

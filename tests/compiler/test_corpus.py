"""The corpus runs identically under CPython, the reference interpreter and the Python
backend: ints exactly, floats to 1e-12, same result structure and dtypes; the IR verifies
after every pass."""

import copy

import numpy as np
import pytest

from adcompile import adcompile
from tests.compiler.corpus import CASES

BACKENDS = ["interp", "python", "llvm"]
PARAMS = [(fn, i, args) for fn, arg_sets in CASES for i, args in enumerate(arg_sets)]


def _same(ours, expected):
    if isinstance(expected, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(expected)
        for a, b in zip(ours, expected):
            _same(a, b)
    elif isinstance(expected, np.ndarray):
        assert isinstance(ours, np.ndarray) and ours.dtype == expected.dtype
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-12)
    elif isinstance(expected, (bool, np.bool_)):
        assert bool(ours) == bool(expected)
    elif isinstance(expected, (int, np.integer)) and not isinstance(ours, float):
        assert ours == expected and not isinstance(ours, (float, np.floating))
    else:
        assert ours == pytest.approx(expected, rel=1e-12, abs=1e-12)
        if isinstance(expected, np.float32):
            assert isinstance(ours, np.float32)


def test_corpus_is_large_enough():
    assert len(CASES) >= 60


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,i,args", PARAMS, ids=[f"{f.__name__}-{i}" for f, i, _ in PARAMS])
def test_backend_matches_python(fn, i, args, backend):
    expected = fn(*copy.deepcopy(args))
    compiled = adcompile(fn, backend=backend, verify=True)
    _same(compiled(*copy.deepcopy(args)), expected)

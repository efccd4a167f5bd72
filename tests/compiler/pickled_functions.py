"""Module-level functions for the pickling, thread and Dask tests (tests/compiler/
test_distributed.py): importable by worker processes, so compiled objects made from them
pickle by reference.

`call_warm` and `unpickle_error` run in the workers."""

import pickle

import numpy as np

from adcompile import adcompile


@adcompile
def least_squares(w, x, y):
    r = x @ w - y
    return 0.5 * np.sum(r * r)


def rosenbrock(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def residuals(w, x, y):
    return x @ w - y


def scaled(a, k):
    return a * k + np.sin(a)


def _not_compiling(*args, **kwargs):
    raise AssertionError("compiled again in a process where the on-disk cache is warm")


def call_warm(payload, args):
    """Unpickle `payload` and call it on `args` with the compiler's front end, derivative
    transforms and code generator replaced by a function that raises: a warm cache means none
    of them runs. Returns the pickled result."""
    from adcompile import api
    from adcompile.backends.llvm import jit

    api.lower_function = api.jvp_function = api.vjp_function = _not_compiling
    jit.emit_object = _not_compiling
    obj = pickle.loads(payload)
    return pickle.dumps(obj(*args))


def unpickle_error(payload):
    """(exception type names, message) of unpickling `payload` here, or None."""
    try:
        pickle.loads(payload)
    except Exception as e:
        return [c.__name__ for c in type(e).__mro__], str(e)
    return None


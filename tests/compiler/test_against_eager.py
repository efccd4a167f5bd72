"""Where a compiled function can also be run with eager Tensors, its static gradient equals
the eager runtime's and PyTorch's."""

import pytest
import torch

import adcompile as ac


def rational(x, y):
    return x * x * y + (x - y) / (1 + x * x)


def horner(x):
    v = x
    for _ in range(4):
        v = v * x + 0.5
    return v


def branchy(x, y):
    if x > y:
        return x * y - y
    return y / x


def power_mix(x, y):
    return x**3 - 2 * x * y + y**2.5


FUNCS = [(rational, (1.5, -0.5)), (horner, (0.7,)), (branchy, (2.0, 1.0)),
         (branchy, (0.5, 1.0)), (power_mix, (1.2, 0.8))]


def _tensor_grads(lib, fn, args):
    xs = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in args]
    fn(*xs).backward()
    return [x.grad.item() for x in xs]


@pytest.mark.parametrize("fn,args", FUNCS, ids=[f"{f.__name__}-{a}" for f, a in FUNCS])
def test_static_gradient_equals_eager_and_torch(fn, args):
    nums = tuple(range(len(args)))
    static = ac.grad(fn, argnums=nums)(*args)
    eager = _tensor_grads(ac, fn, args)
    theirs = _tensor_grads(torch, fn, args)
    assert list(static) == pytest.approx(eager, rel=1e-12)
    assert list(static) == pytest.approx(theirs, rel=1e-12)

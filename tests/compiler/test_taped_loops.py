"""Reverse mode on loops that tape values (results of an `if`, libm calls): a libm call in
such a loop is taped instead of recomputed, the derivative code asking for the same function
of the same value (sin's rule asks for cos(x)) reuses what it has, and a reversed loop that
pops only its forward loop's tapes runs inside that loop, where the values it pops are the
ones the same trip pushed, taken without a tape. The programs' values and gradients
agree across the interpreter, the Python backend and the LLVM backend and with finite
differences; the derivative sources show the fused loop and no second libm call."""

import contextlib
import math
import os
import tempfile
from unittest import mock

import numpy as np
import pytest

import adcompile as ac
from adcompile.ad import reverse
from adcompile.ir.nodes import walk

BACKENDS = ["interp", "python", "llvm"]


def rotate_sum(r, x, w):
    """The first coordinate of each row of x rotated by the axis-angle row of r (Rodrigues,
    as GradBench ba), weighted: the rotation's results come out of an `if`."""
    total = 0.0
    for i in range(r.shape[0]):
        theta2 = r[i, 0] * r[i, 0] + r[i, 1] * r[i, 1] + r[i, 2] * r[i, 2]
        if theta2 != 0.0:
            theta = math.sqrt(theta2)
            cos = math.cos(theta)
            sin = math.sin(theta)
            k1 = r[i, 1] / theta
            k2 = r[i, 2] / theta
            along = (r[i, 0] * x[i, 0] + r[i, 1] * x[i, 1] + r[i, 2] * x[i, 2]) / theta
            y0 = x[i, 0] * cos + (k1 * x[i, 2] - k2 * x[i, 1]) * sin + \
                r[i, 0] / theta * along * (1.0 - cos)
            y2 = x[i, 2] * cos + (r[i, 0] / theta * x[i, 1] - k1 * x[i, 0]) * sin
        else:
            y0 = x[i, 0] + r[i, 1] * x[i, 2] - r[i, 2] * x[i, 1]
            y2 = x[i, 2] + r[i, 0] * x[i, 1] - r[i, 1] * x[i, 0]
        total += w[i] * (y0 / (y2 + 3.0))
    return total


def exp_branch(x, w):
    """exp's result, yielded by an `if`, is read by the adjoint of a product."""
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            y = math.exp(x[i]) * math.tanh(x[i])
        else:
            y = x[i]
        s += w[i] * y * y
    return s


def product_branch(x):
    """A running product (its adjoint changes from trip to trip: no fusion) of taped sines."""
    p = 1.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            p = p * (math.sin(x[i]) + 2.0) * math.cos(x[i])
        else:
            p = p * (x[i] + 2.0)
    return p


def nested_branches(x, w):
    """exp and sin taped two `if`s deep, and the `if`s' result taped at the body's top level."""
    s = 0.0
    for i in range(x.shape[0]):
        y = x[i]
        if x[i] > -0.5:
            if x[i] > 0.0:
                y = math.exp(x[i]) * x[i]
            else:
                y = math.sin(x[i]) * x[i]
        s += w[i] * y * y
    return s


def _rows(seed, n, zero_row):
    rng = np.random.default_rng(seed)
    r = rng.uniform(-1.0, 1.0, (n, 3))
    if zero_row:
        r[1] = 0.0  # the theta = 0 branch
    return r


CASES = [
    (rotate_sum, lambda: (_rows(0, 7, True), np.random.default_rng(1).uniform(-1, 1, (7, 3)),
                          np.random.default_rng(2).uniform(0.5, 1.5, 7)), (0, 1, 2)),
    (exp_branch, lambda: (np.random.default_rng(3).uniform(-1, 1, 9),
                          np.random.default_rng(4).uniform(0.5, 1.5, 9)), (0, 1)),
    (product_branch, lambda: (np.random.default_rng(5).uniform(-1, 1, 8),), (0,)),
    (nested_branches, lambda: (np.random.default_rng(6).uniform(-1, 1, 12),
                               np.random.default_rng(7).uniform(0.5, 1.5, 12)), (0, 1)),
]
IDS = [fn.__name__ for fn, _, _ in CASES]


def _value_and_grad(fn, args, argnums, backend):
    f = ac.value_and_grad(ac.adcompile(fn, backend=backend, verify=True), argnums=argnums)
    return f(*args)


def _numeric(fn, args, k, eps=1e-6):
    x = args[k]
    out = np.zeros(x.size)
    for j in range(x.size):
        step = np.zeros(x.size)
        step[j] = eps
        up, down = list(args), list(args)
        up[k] = (x.ravel() + step).reshape(x.shape)
        down[k] = (x.ravel() - step).reshape(x.shape)
        out[j] = (fn(*up) - fn(*down)) / (2 * eps)
    return out.reshape(x.shape)


@pytest.mark.parametrize("fn,make,argnums", CASES, ids=IDS)
def test_backends_agree_with_each_other_and_finite_differences(fn, make, argnums):
    args = make()
    results = {b: _value_and_grad(fn, args, argnums, b) for b in BACKENDS}
    expected = fn(*args)
    for backend, (value, grads) in results.items():
        assert value == pytest.approx(expected, rel=1e-13), backend
        for k, g in zip(argnums, grads):
            np.testing.assert_allclose(g, _numeric(fn, args, k), rtol=1e-6, atol=1e-7,
                                       err_msg=f"{backend}, argument {k}")
            np.testing.assert_allclose(g, results["llvm"][1][argnums.index(k)], rtol=1e-13,
                                       atol=1e-15, err_msg=f"{backend} vs llvm, argument {k}")


@pytest.mark.parametrize("mode", [ac.grad, ac.value_and_grad])
def test_the_reversed_loop_runs_inside_the_forward_loop_and_calls_no_libm_again(mode):
    args = CASES[0][1]()
    f = mode(ac.adcompile(rotate_sum), argnums=(0, 1, 2))
    program = f.specialize(*args).ir
    passes = [op for op in walk(program.body) if op.prim == "for" and
              any(o.prim == "load" for o in walk(op.regions[0]))]
    assert len(passes) == 1
    calls = [op.prim for op in walk(program.body) if op.prim in ("sin", "cos")]
    assert sorted(calls) == ["cos", "sin"]  # the primal's, taped; the adjoint reuses them


def test_a_changing_adjoint_keeps_two_loops():
    args = CASES[2][1]()
    program = ac.grad(ac.adcompile(product_branch)).specialize(*args).ir
    passes = [op for op in walk(program.body) if op.prim == "for" and
              any(o.prim == "load" for o in walk(op.regions[0]))]
    assert len(passes) == 2
    # sin is taped (its value is read by the product's adjoint), cos(x) for its derivative
    # is the primal's cos; -sin(x) for cos's derivative is the taped sin
    calls = sorted(op.prim for op in walk(program.body) if op.prim in ("sin", "cos"))
    assert calls == ["cos", "sin"]


def _tapes(program):
    return [op for op in walk(program.body) if op.prim == "tape_new"]


@pytest.mark.parametrize("k", [0, 1, 3], ids=[IDS[k] for k in (0, 1, 3)])
def test_a_fused_loop_hands_its_taped_values_over_without_tapes(k):
    """In the fused loop each trip pops what it pushed: the pops become the pushed values
    (brought out of the `if`s around the push as results of theirs), and no tape is left.
    Without that step the same programs keep their tapes."""
    fn, make, argnums = CASES[k]
    args = make()
    program = ac.grad(ac.adcompile(fn), argnums=argnums).specialize(*args).ir
    assert _tapes(program) == []
    with _without_forwarding():
        taped = ac.grad(ac.adcompile(fn), argnums=argnums).specialize(*args).ir
    assert _tapes(taped)


def test_a_loop_that_is_not_fused_keeps_its_tapes():
    fn, make, argnums = CASES[2]
    assert _tapes(ac.grad(ac.adcompile(fn)).specialize(*make()).ir)


@contextlib.contextmanager
def _without_forwarding():
    """Compile with the tapes of fused loops left alone (and an empty cache, so the programs
    are built again)."""
    real = reverse._forward_tapes
    reverse._forward_tapes = lambda body, one_trip: False
    try:
        with tempfile.TemporaryDirectory() as directory, \
                mock.patch.dict(os.environ, {"ADCOMPILE_CACHE_DIR": directory}):
            yield
    finally:
        reverse._forward_tapes = real


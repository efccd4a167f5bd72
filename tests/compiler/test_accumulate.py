"""The `accumulate` pass (shadow-array additions carried in scalars: a window of offsets from
the loop's index, a block of elements s*i + k that one trip alone adds into, or one element at
an index the loop does not change): where it applies, the
derivative programs give exactly the bits they give without it, on every backend and for every
trip count (including loops that never run); where it does not apply, it changes nothing."""

import math
import re

import numpy as np
import pytest

import adcompile as ac
from adcompile.passes import pipeline
from tests.compiler.corpus import dot
from tests.compiler.test_vjp import rosenbrock


def stencil(x):
    s = 0.0
    for i in range(1, x.shape[0] - 1):
        s += (x[i - 1] - 2.0 * x[i] + x[i + 1]) ** 2
    return s


def gapped(x):  # offsets 0 and 2: not a contiguous window, left as additions
    s = 0.0
    for i in range(x.shape[0] - 2):
        s += x[i] * x[i + 2]
    return s


def windowed(x, w):  # a window of four offsets, into two shadow arrays
    s = 0.0
    for i in range(x.shape[0] - 3):
        s += w[0] * x[i] + w[1] * x[i + 1] * x[i + 2] + w[2] * x[i + 3] ** 3
    return s


def triangle(x, y):  # the reversed inner loop adds into x_bar[c], an index it does not change
    s = 0.0
    for c in range(x.shape[0]):
        for r in range(c + 1, x.shape[0]):
            s += x[c] * y[r] * y[r - c]
    return s


def blocks(x):  # trip i adds into elements 3i, 3i + 1, 3i + 2 only: stored once each
    s = 0.0
    for i in range(x.shape[0] // 3):
        s += x[3 * i] * x[3 * i + 1] + math.sin(x[3 * i + 2]) * x[3 * i]
    return s


def block_views(x, w):  # through views of a block of four; element 4i + 1 is never reached
    s = 0.0
    for i in range(x.shape[0] // 4):
        a = x[4 * i:4 * i + 2]
        b = x[4 * i + 2:4 * i + 4]
        s += w[0] * a[0] * b[1] + math.sin(b[0]) + b[0] * w[1] + (w[2] + b[1]) ** 2
    return s


def blocks_reversed(x):  # the carried s is taped: the adjoint loop counts down
    s = 0.0
    for i in range(x.shape[0] // 2):
        s = math.sin(s) * x[2 * i] + x[2 * i + 1] ** 2
    return s


def overlapping(x):  # offsets 0..2 at stride 2: neighbouring trips share an element
    s = 0.0
    for i in range(x.shape[0] // 2 - 1):
        s += x[2 * i] * x[2 * i + 2] + x[2 * i + 1]
    return s


def _one(rng, n):
    return (rng.uniform(-1.5, 1.5, n),)


def _two(rng, n):
    return (rng.uniform(-1.5, 1.5, n), rng.uniform(-1.0, 1.0, n))


def _weights(rng, n):
    return (rng.uniform(-1.5, 1.5, n), rng.uniform(-1.0, 1.0, 3))


CASES = [(rosenbrock, (0,), _one, True), (stencil, (0,), _one, True), (dot, (0, 1), _two, True),
         (gapped, (0,), _one, False), (windowed, (0,), _weights, True),
         (triangle, (0,), _two, True), (blocks, (0,), _one, True),
         (block_views, (0,), _weights, True), (blocks_reversed, (0,), _one, True),
         (overlapping, (0,), _one, False)]
IDS = [c[0].__name__ for c in CASES]


def _without_pass(monkeypatch):
    monkeypatch.setattr(pipeline, "PIPELINE",
                        [p for p in pipeline.PIPELINE if p[0] != "accumulate"])
    # the IR cache's key does not name the pipeline: it would serve the programs built with
    # the pass, and the comparison could not fail
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")


def _programs(fn, argnums, backend, args):
    f = ac.adcompile(fn, backend=backend)
    return (ac.grad(f, argnums=argnums)(*args), ac.value_and_grad(f, argnums=argnums)(*args))


def _same_bits(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for p, q in zip(a, b):
            _same_bits(p, q)
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 9, 64])
@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
@pytest.mark.parametrize("fn,argnums,make,applies", CASES, ids=IDS)
def test_same_bits_with_and_without_the_pass(fn, argnums, make, applies, backend, n,
                                             monkeypatch):
    args = make(np.random.default_rng(n), n)
    args[0][::3] *= -0.0  # signed zeros: 0.0 + -0.0 must come out as the additions had it
    with_pass = _programs(fn, argnums, backend, args)
    _without_pass(monkeypatch)
    without = _programs(fn, argnums, backend, args)
    _same_bits(with_pass, without)


@pytest.mark.parametrize("fn,argnums,make,applies", CASES, ids=IDS)
def test_applies_where_the_window_is_contiguous(fn, argnums, make, applies):
    args = make(np.random.default_rng(0), 8)
    for transform in (ac.grad, ac.value_and_grad):
        ir = transform(fn, argnums=argnums).ir(*args)
        assert ("add_at" not in ir) == applies, ir


def test_rosenbrock_gradient_loop_is_a_recurrence():
    """No load of the shadow array remains in the loop: each gradient element is written
    once, and LLVM vectorises the loop (without bounds checks, or with fastmath=True for the
    value's reduction)."""
    x = np.linspace(-1.0, 1.0, 16)
    unchecked = ac.adcompile(rosenbrock, boundscheck=False)
    source = ac.grad(unchecked).source(x)
    assert re.search(r"x_bar\[\w+\] = ", source) and not re.search(r"x_bar\[\w+\] \+=", source)
    fast = ac.adcompile(rosenbrock, fastmath=True)
    for program in (ac.grad(unchecked), ac.value_and_grad(fast)):
        assert re.search(r"<(4|8) x double>", program.llvm_ir(x))


def test_out_of_range_still_raises(monkeypatch):
    """Indices past the end raise IndexError with the pass as without it."""
    def shifted(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i] * x[i + 1]
        return s

    x = np.linspace(0.0, 1.0, 5)
    for backend in ("python", "llvm"):
        with pytest.raises(IndexError):
            ac.grad(ac.adcompile(shifted, backend=backend))(x)

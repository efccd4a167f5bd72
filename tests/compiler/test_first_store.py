"""The `first_store` pass (the first addition into a fresh zero-filled array computes 0 + v
without reading it; the array is allocated empty and only what lies outside the view is
zeroed): where it applies, programs give exactly the bits they give without it (signed zeros
included: 0.0 + -0.0 is +0.0), the same errors, on every backend; where it does not apply, the
IR is unchanged."""

import numpy as np
import pytest

import adcompile as ac
from adcompile.passes import pipeline
from tests.compiler.test_accumulate import _same_bits

# -- user programs: an allocation, then an addition into a view of it -----------------------


def into_middle(v):
    a = np.zeros(v.shape[0] + 3)
    a[1:-2] += v
    return a


def into_tail(v):
    a = np.zeros(v.shape[0] + 2)
    a[2:] += v
    a[:-1] += 1.0
    return a


def into_whole(v):
    a = np.zeros(v.shape[0])
    a += v
    return a


def into_rows(m):
    a = np.zeros((m.shape[0] + 1, m.shape[1]))
    a[1:, :] += m
    return a


def number_into_head(v):
    a = np.zeros(v.shape[0] + 4)
    n = a.shape[0]
    a[:-4] += v[0]
    return a, n


def backwards_bounds(v):  # start past stop: an empty view, and the whole array zeroed
    a = np.zeros(v.shape[0] + 4)
    a[3:1] += 2.0
    return a


def stepped(v):  # a step: left alone
    a = np.zeros(2 * v.shape[0])
    a[::2] += v
    return a


def read_first(v):  # the array is read before the addition: left alone
    a = np.zeros(v.shape[0] + 1)
    s = np.sum(a)
    a[1:] += v
    return a, s


def float32_from_float64(v):
    a = np.zeros(v.shape[0] + 1, dtype=np.float32)
    a[1:] += v
    return a


# -- derivative programs: shadow arrays --------------------------------------------------------


def rosenbrock(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def scaled_tail(x, c):  # x_bar[1:] += c: -0.0 where c holds it
    return np.sum(x[1:] * c)


def _vector(rng, n):
    v = rng.uniform(-1.5, 1.5, n)
    v[::3] = -0.0
    return (v,)


def _matrix(rng, n):
    m = rng.uniform(-1.5, 1.5, (n, 3))
    m[::2, 1] = -0.0
    return (m,)


def _tail(rng, n):
    c = rng.uniform(-1.0, 1.0, max(n - 1, 0))
    c[::2] = -0.0
    return rng.uniform(-1.5, 1.5, n), c


# (function, argument maker, argnums for a gradient or None, whether the pass applies)
CASES = [
    (into_middle, _vector, None, True), (into_tail, _vector, None, True),
    (into_whole, _vector, None, True), (into_rows, _matrix, None, True),
    (number_into_head, _vector, None, True), (backwards_bounds, _vector, None, True),
    (stepped, _vector, None, False), (read_first, _vector, None, False),
    (float32_from_float64, _vector, None, True),
    (rosenbrock, _vector, (0,), True), (scaled_tail, _tail, (0, 1), True),
]
IDS = [c[0].__name__ for c in CASES]


def _compiled(fn, argnums, backend):
    f = ac.adcompile(fn, backend=backend)
    return f if argnums is None else ac.value_and_grad(f, argnums=argnums)


def _without_pass(monkeypatch):
    monkeypatch.setattr(pipeline, "PIPELINE",
                        [p for p in pipeline.PIPELINE if p[0] != "first_store"])


@pytest.fixture
def no_ir_cache(monkeypatch):
    """Without the on-disk IR cache, a program compiled without the pass is really built
    without it (the cache's key does not name the pipeline)."""
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")


@pytest.mark.parametrize("n", [1, 2, 5, 64])
@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
@pytest.mark.parametrize("fn,make,argnums,applies", CASES, ids=IDS)
def test_same_bits_with_and_without_the_pass(fn, make, argnums, applies, backend, n,
                                             no_ir_cache, monkeypatch):
    args = make(np.random.default_rng(n), n)
    same_bits_without(fn, argnums, backend, args, lambda: _without_pass(monkeypatch))


def same_bits_without(fn, argnums, backend, args, drop_pass):
    """fn compiled (its value_and_grad when argnums is given) gives the same bits before and
    after drop_pass() takes a pass out of the pipeline, and numpy's own bits for a value."""
    with_pass = _compiled(fn, argnums, backend)(*args)
    if argnums is None:
        _same_bits(with_pass, fn(*args))
    drop_pass()
    _same_bits(with_pass, _compiled(fn, argnums, backend)(*args))


@pytest.mark.parametrize("fn,make,argnums,applies", CASES, ids=IDS)
def test_applies_where_the_first_use_is_an_addition(fn, make, argnums, applies,
                                                    no_ir_cache, monkeypatch):
    args = make(np.random.default_rng(0), 6)
    ir = _compiled(fn, argnums, "llvm").ir(*args)
    assert ("fresh=True" in ir) == applies, ir
    assert ("fill=0" not in ir) == applies, ir
    _without_pass(monkeypatch)
    assert "fresh" not in _compiled(fn, argnums, "llvm").ir(*args)


@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
def test_a_value_that_does_not_fit_raises_as_before(backend, no_ir_cache, monkeypatch):
    def message(fn):
        with pytest.raises(ValueError) as info:
            fn(np.ones(5))
        return str(info.value)

    def misfit(v):
        a = np.zeros(4)
        a[1:] += v
        return a

    with_pass = message(ac.adcompile(misfit, backend=backend))
    assert "fresh=True" in ac.adcompile(misfit, backend=backend).ir(np.ones(3))
    _without_pass(monkeypatch)
    assert message(ac.adcompile(misfit, backend=backend)) == with_pass

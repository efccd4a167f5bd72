"""Stores into shifted views of one array run as one loop (LLVM backend, fusion.py's
`shifted_stores`; issue 13: the Rosenbrock gradient's `x_bar[1:] += a; x_bar[:1] = 0;
x_bar[:-1] += b` was two passes writing x_bar, the second reading it back).

Each program is compiled with the shifted loop (the default), without it (fusion.SHIFTED off:
the stores run as before), without fusion at all (lower.FUSE off), on the Python backend and
on the interpreter, and run with the pool splitting every loop on one and three threads: the
results (signed zeros included) must be the same bits everywhere, and a value that does not
fit its destination must raise the same error. Cases: windows that start and stop anywhere
(sizes 0 to 1000, so the part all stores cover is empty, one element or long), zero fills
beside and inside that part, reversed and stepped lines, rows of a matrix, values broadcast
from length 1, a float32 destination of float64 values, stores into two arrays, and the
Rosenbrock gradient.
Run single-process (-p no:xdist): the pool's settings are process-wide.
"""

import numpy as np
import pytest

import adcompile as ac
from adcompile.backends.llvm import fusion, lower, pool
from tests.compiler.test_accumulate import _same_bits

# -- programs --------------------------------------------------------------------------------


def shifted_adds(x, y):  # first_store: x_bar-like g[1:] = x * y, g[:1] = 0, g[:-1] += x - y
    g = np.zeros(x.shape[0] + 1)
    a = x * y
    b = x - y
    g[1:] += a
    g[:-1] += b
    return g


def three_windows(x, y):
    g = np.zeros(x.shape[0] + 2)
    a = x * 2.0
    b = x * y
    c = y - x
    g[2:] += a
    g[1:-1] += b
    g[:-2] += c
    return g


def fill_beside(x, y):
    g = np.empty(x.shape[0] + 1)
    a = x * y
    b = x - y
    g[1:] = a
    g[:1] = 0.5
    g[:-1] += b
    return g


def fill_inside(x, y):  # a number stored inside the part every array store covers
    g = np.zeros(x.shape[0] + 1)
    a = x * y
    b = x - y
    g[1:] = a
    g[2:4] = 0.5
    g[:-1] -= b
    return g


def reversed_line(x, y):
    g = np.zeros(x.shape[0] + 1)
    h = g[::-1]
    a = x * y
    b = x + y
    h[1:] += a
    h[:-1] *= b
    return g


def stepped_line(x, y):
    g = np.zeros(2 * x.shape[0] + 3)
    h = g[1::2]
    a = x * y
    b = x + y
    h[1:] += a
    h[:-1] += b
    return g


def rows(x, y):
    g = np.zeros((x.shape[0] + 1, 3))
    a = np.outer(x, y[:3] if y.shape[0] >= 3 else np.ones(3))
    b = a * a
    g[1:, :] += a
    g[:-1, :] += b
    return g


def broadcast_values(x, y):
    g = np.zeros(x.shape[0] + 1)
    a = x[:1] * 3.0
    b = x * y
    g[1:] += a
    g[:-1] += b
    g[1:] += y[-1:] - 1.0
    return g


def float32_line(x, y):
    g = np.zeros(x.shape[0] + 1, dtype=np.float32)
    a = x * y
    b = x - y
    g[1:] += a
    g[:-1] += b
    return g


def two_arrays(x, y):  # a group whose destinations are not one array: as before
    g = np.zeros(x.shape[0])
    h = np.zeros(x.shape[0])
    a = x * y
    g[...] += a
    h[...] = 1.5
    h[...] += y
    return g, h


def numbers_only(x, y):  # stores of numbers only: as before
    g = np.zeros(x.shape[0] + 2)
    g[1:] += 2.5
    g[:-1] -= 0.5
    return g


def rosenbrock(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_gradient(x, y):
    return ac.value_and_grad(rosenbrock)(x)


PROGRAMS = [shifted_adds, three_windows, fill_beside, fill_inside, reversed_line, stepped_line,
            rows, broadcast_values, float32_line, two_arrays, numbers_only]
SIZES = (0, 1, 2, 3, 5, 64, 1000)


@pytest.fixture(autouse=True)
def fresh_compiles(monkeypatch):
    """Every variant compiled here (the cache's key does not name the switches), and the pool
    splitting every loop it may (restored afterwards)."""
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")
    saved = pool.settings()
    pool.configure(min_work=1, unit=256)
    yield
    pool.configure(**saved)


def _arguments(n):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    x[::3] = -0.0  # -0.0 + 0.0 is +0.0: the additions must stay in their order
    y[1::4] = 0.0
    return x, y


def _outcome(f, args):
    try:
        return f(*args)
    except ValueError as e:
        return str(e)


def _with(module, name, value, f, args):
    """f(*args), compiled (on its first call) with module.name set to value."""
    saved = getattr(module, name)
    setattr(module, name, value)
    try:
        return _outcome(f, args)
    finally:
        setattr(module, name, saved)


_COMPILED = {}


def _variants(fn, wrap):
    """fn's compiled variants, made once per test session (the sizes share them: shapes are
    not part of a signature), each compiled on its first call with its switch set."""
    key = (fn, wrap)
    if key not in _COMPILED:
        _COMPILED[key] = {
            "fused": (wrap(ac.adcompile(fn)), None),
            "alone": (wrap(ac.adcompile(fn)), (fusion, "SHIFTED", False)),
            "unfused": (wrap(ac.adcompile(fn)), (lower, "FUSE", False)),
            "python": (wrap(ac.adcompile(fn, backend="python")), None),
            "interp": (wrap(ac.adcompile(fn, backend="interp")), None)}
    return _COMPILED[key]


def _plain(f):
    return f


def _results(fn, args, wrap=_plain):
    variants = _variants(fn, wrap)
    results = {name: _outcome(f, args) if switch is None else _with(*switch, f, args)
               for name, (f, switch) in variants.items()}
    for threads in (1, 3):
        saved = ac.get_num_threads()
        ac.set_num_threads(threads)
        try:
            results[f"fused, {threads} threads"] = _outcome(variants["fused"][0], args)
        finally:
            ac.set_num_threads(saved)
    return results


def _agree(results, what):
    """The same bits everywhere; or a ValueError everywhere, with the message the stores
    alone give on every native variant (numpy words its own)."""
    want = results["interp"]
    for name, got in results.items():
        if isinstance(want, str):
            assert isinstance(got, str), f"{what}, {name}: {got!r}"
            if name not in ("python", "interp"):
                assert got == results["alone"], f"{what}, {name}: {got!r}"
        else:
            _same_bits(got, want)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_same_bits_as_the_stores_alone(fn, n):
    _agree(_results(fn, _arguments(n)), f"{fn.__name__}({n})")


@pytest.mark.parametrize("n", SIZES[1:])
def test_rosenbrock_gradient(n):
    x, _ = _arguments(n)
    results = _results(rosenbrock, (x,), ac.value_and_grad)
    _agree(results, f"rosenbrock gradient ({n})")


def test_a_value_that_does_not_fit_raises_as_before():
    def misfit(x, y):
        g = np.zeros(x.shape[0] + 1)
        a = x * 2.0
        b = y * 3.0
        g[1:] += a
        g[:-1] += b
        return g

    x, y = np.ones(5), np.ones(4)
    results = _results(misfit, (x, y))
    assert isinstance(results["fused"], str), results["fused"]
    _agree(results, "misfit")


@pytest.mark.parametrize("call", [lambda: ac.value_and_grad(rosenbrock)(np.ones(8)),
                                  lambda: ac.adcompile(into_argument)(np.ones(8), np.ones(8)),
                                  lambda: ac.adcompile(fill_beside)(np.ones(8), np.ones(8))],
                         ids=["rosenbrock gradient", "into_argument", "fill_beside"])
def test_shifted_stores_plan_one_group(call, monkeypatch):
    """The gradient's stores, and a user's with views and constants made between them (made
    first, where the group starts), are one group of three."""
    groups = []
    shifted = fusion.FusionLowering.shifted_stores
    monkeypatch.setattr(fusion.FusionLowering, "shifted_stores",
                        lambda self, ops, *a: groups.append(len(ops)) or shifted(self, ops, *a))
    call()
    assert groups == [3], groups


def into_argument(x, y):  # the destinations are views of an argument, written in place
    a = np.exp(y * 0.5)  # made by the kernel, so it cannot share x's memory
    b = a * a - 1.0
    x[1:] += a[1:]
    x[:1] = 0.25
    x[:-1] -= b[:-1]
    return np.sum(a) + np.sum(b)


@pytest.mark.parametrize("n", SIZES[1:])
def test_stores_into_an_argument(n):
    x, y = _arguments(n)
    variants = {"fused": lambda: ac.adcompile(into_argument),
                "python": lambda: ac.adcompile(into_argument, backend="python"),
                "interp": lambda: ac.adcompile(into_argument, backend="interp")}
    results = {}
    for name, make in variants.items():
        args = (x.copy(), y.copy())
        results[name] = (make()(*args), args[0])
    args = (x.copy(), y.copy())
    results["alone"] = (_with(fusion, "SHIFTED", False, ac.adcompile(into_argument), args),
                        args[0])
    # the LLVM variants agree bit for bit, and so do the Python backend and the interpreter;
    # exp is glibc's in the first and numpy's (SIMD, an ulp apart here and there) in the others
    _same_bits(results["fused"], results["alone"])
    _same_bits(results["python"], results["interp"])
    for k in range(2):
        np.testing.assert_allclose(results["fused"][k], results["interp"][k], rtol=1e-13)

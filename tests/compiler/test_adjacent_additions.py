"""The `adjacent` pass (additions into one view brought next to each other): where it
applies, the additions into a view stand together and programs give exactly the bits they
give without it on every backend; where something between uses the array or writes what a
moved value reads, or the array is an argument, the additions stay where they were."""

import re

import numpy as np
import pytest

import adcompile as ac
from adcompile.ir.nodes import walk
from adcompile.passes import pipeline
from tests.compiler.test_accumulate import _same_bits
from tests.compiler.test_first_store import (  # noqa: F401 (no_ir_cache: a fixture)
    _compiled, no_ir_cache, same_bits_without)
from tests.compiler.test_gather_additions import _vectors, rk4_last

# -- user programs: additions into a view of a new array, other work between ---------------


def work_between(v, w, u):  # what lies between raises nothing and touches no x
    x = v * 1.0
    x[1:] += w[1:]
    t = u * 2.0
    s = t * 3.0 + 1.0
    x[1:] += s[1:]
    return x, s


def raising_between(v, w, u):  # x[1:] += w[1:] may raise (shapes), and so may what follows
    x = v * 1.0
    x[1:] += w[1:]
    t = u * 2.0
    x[:1] += u[:1]
    t[1:] += v[1:]
    x[1:] += t[1:] * w[1:]
    return x, t


def read_between(v, w, u):  # x is read between: left alone
    x = v * 1.0
    x[1:] += w[1:]
    s = np.sum(x)
    x[1:] += u[1:]
    return x, s


def value_written_between(v, w, u):  # the first value changes before the second addition
    x = v * 1.0
    b = w * 3.0
    x += b
    b[0] = 5.0
    x += u
    return x, b


def overlapping_view_between(v, w, u):  # x[:2] meets x[1:]: left alone
    x = v * 1.0
    x[1:] += w[1:]
    x[:2] += u[:2]
    x[1:] += u[1:]
    return x


def reshape_between(v, w, u):  # a reshape of a strided view copies (reads): left alone
    x = np.zeros((v.shape[0], 4))
    s = x[:, :2]
    s += w[:, None]
    r = s.reshape(2 * v.shape[0])
    s += u[:, None]
    return r, x


def an_argument(v, w, u):  # additions into an argument stay where they are
    v[1:] += w[1:]
    t = u * 2.0
    v[1:] += t[1:]
    return v


# -- derivative programs: reverse mode's additions into x_bar --------------------------------
# rk4_last (GradBench ode's steps, test_gather_additions): each step's four stages add into
# x_bar[:1] and x_bar[1:] of its gradient


# (function, argnums for a gradient or None, whether the pass applies)
CASES = [
    (work_between, None, True), (raising_between, None, False), (read_between, None, False),
    (value_written_between, None, False), (overlapping_view_between, None, False),
    (an_argument, None, False), (reshape_between, None, False), (rk4_last, (0, 1), True),
]
IDS = [c[0].__name__ for c in CASES]


def _without_pass(monkeypatch):
    monkeypatch.setattr(pipeline, "PIPELINE",
                        [p for p in pipeline.PIPELINE if p[0] != "adjacent"])


def _copies(args):
    return tuple(np.array(a, copy=True) for a in args)


@pytest.mark.parametrize("n", [1, 2, 64, 40_000])
@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
@pytest.mark.parametrize("fn,argnums,applies", CASES, ids=IDS)
def test_same_bits_with_and_without_the_pass(fn, argnums, applies, backend, n, no_ir_cache,
                                             monkeypatch):
    if n == 40_000 and backend != "llvm":
        pytest.skip("the long arrays are for the LLVM backend's tiled runs")
    args = _vectors(np.random.default_rng(n), n)
    if fn is an_argument:  # it writes its argument: each call gets its own
        with_pass = _compiled(fn, argnums, backend)(*_copies(args))
        _without_pass(monkeypatch)
        np.testing.assert_array_equal(with_pass, _compiled(fn, argnums, backend)(*_copies(args)))
        np.testing.assert_array_equal(with_pass, fn(*_copies(args)))
        return
    same_bits_without(fn, argnums, backend, args, lambda: _without_pass(monkeypatch))


def _scattered(ir_fn):
    """The views whose additions (in one block) do not all stand together."""
    found = []
    blocks = [ir_fn.body] + [r for op in walk(ir_fn.body) for r in op.regions]
    for block in blocks:
        at = {}
        for k, op in enumerate(block.ops):
            if op.prim == "iadd":
                at.setdefault(op.operands[0], []).append(k)
        found += [view for view, ks in at.items() if ks[-1] - ks[0] != len(ks) - 1]
    return found


@pytest.mark.parametrize("fn,argnums,applies", CASES, ids=IDS)
def test_applies_where_nothing_between_touches_the_view(fn, argnums, applies, no_ir_cache,
                                                        monkeypatch):
    args = _vectors(np.random.default_rng(0), 6)
    compiled = _compiled(fn, argnums, "llvm")
    with_pass = _scattered(compiled.specialize(*_copies(args)).ir)
    _without_pass(monkeypatch)
    without = _scattered(_compiled(fn, argnums, "llvm").specialize(*_copies(args)).ir)
    assert without, "each case has additions with work between them"
    assert (not with_pass) == applies, with_pass


# -- the LLVM backend: additions into one view, one loop, one store ------------------------


def _vector_bodies(text):
    """(loads, stores) of each vectorised loop body in an LLVM module's text."""
    found = []
    for body in re.findall(r"\nvector\.body[^\n]*\n(.*?)\n\n", text, re.S):
        found.append((body.count("= load <"), body.count("store <")))
    return found


def test_additions_into_one_view_store_once(no_ir_cache):
    """The four additions into x_bar[1:] of rk4_last's gradient run as one store group; its
    values read no destination, and alias scopes say so (lower.alias_info), so LLVM keeps
    the element in a register through the additions and stores it once."""
    args = _vectors(np.random.default_rng(3), 1000)
    g = ac.grad(ac.adcompile(rk4_last))
    bodies = [(loads, stores) for loads, stores in _vector_bodies(g.llvm_ir(*args))
              if loads >= 8]
    assert bodies and min(stores for _, stores in bodies) == 1, bodies
    _same_bits(g(*args), ac.grad(ac.adcompile(rk4_last, backend="python"))(*args))


# -- errors: an addition that may raise keeps its place before what raises or what the caller
# sees -----------------------------------------------------------------------------------------


def index_error_between(x, i, out):
    t = np.zeros(3)
    t[1:] += x  # of another shape: numpy's ValueError comes first
    y = x[i]
    t[1:] += y
    return np.sum(t)


def assert_between(x, i, out):
    t = np.zeros(3)
    t[1:] += x
    assert i < 0, "i must be negative"
    t[1:] += 1.0
    return np.sum(t)


def argument_written_between(x, i, out):
    t = np.zeros(3)
    t[1:] += x
    out[0] = 7.0  # the caller must not find this done
    t[1:] += 1.0
    return np.sum(t)


@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
@pytest.mark.parametrize("fn", [index_error_between, assert_between, argument_written_between])
def test_an_addition_that_may_raise_stays_before_what_raises(fn, backend, no_ir_cache):
    x = np.ones(4)  # t[1:] has 2 elements: ValueError
    out = np.zeros(2)
    with pytest.raises(ValueError):
        fn(x, 10, out)
    f = ac.adcompile(fn, backend=backend)
    with pytest.raises(ValueError):
        f(x, 10, out)
    np.testing.assert_array_equal(out, np.zeros(2))

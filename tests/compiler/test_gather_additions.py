"""The `gather` pass (additions into a fresh array gathered into one store) and the alias
facts of ir/origins.py that it and the LLVM backend's fusion use: where the pass applies,
programs give exactly the bits they give without it (signed zeros included) on every
backend; where something touches the array or writes a value in between, the IR keeps its
additions; arrays that may be one memory (a loop's slot holding the written array) are not
fused across the write."""

import numpy as np
import pytest

import adcompile as ac
from adcompile.ir import types as T
from adcompile.ir.nodes import Block, Function, Op, Value
from adcompile.ir.origins import Origins
from adcompile.passes import pipeline
from tests.compiler.test_accumulate import _same_bits
from tests.compiler.test_first_store import (  # noqa: F401 (no_ir_cache: a fixture)
    _compiled, no_ir_cache, same_bits_without)

# -- user programs: a fresh array, then additions into it -----------------------------------


def three_additions(v, w, u):
    a = np.zeros(v.shape[0])
    a += v
    a += w * 2.0
    a += u
    return a


def float32_additions(v, w, u):
    a = np.zeros(v.shape[0], dtype=np.float32)
    a += v.astype(np.float32)
    a += w.astype(np.float32)
    return a


def read_between(v, w, u):  # the array is read between the additions: left alone
    a = np.zeros(v.shape[0])
    a += v
    s = np.sum(a)
    a += w
    return a, s


def value_written_between(v, w, u):  # the first value changes before the second addition
    b = v * 1.0
    a = np.zeros(v.shape[0])
    a += b
    b[0] = 5.0
    a += w
    return a, b


def other_dtype(v, w, u):  # a float32 value into a float64 array: left alone
    a = np.zeros(v.shape[0])
    a += v
    a += w.astype(np.float32)
    return a


# -- derivative programs: reverse mode's accumulations --------------------------------------


def field(x, y):
    return np.concatenate((x[:1], x[1:] * y[:-1]))


def rk4_last(x, u, w):  # GradBench ode's steps: four additions into the state's shadow
    h = 0.5
    y = u * 1.0
    for _ in range(3):
        k1 = field(x, y)
        k2 = field(x, y + h / 2 * k1)
        k3 = field(x, y + h / 2 * k2)
        k4 = field(x, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return np.sum(y * w)


def _vectors(rng, n):
    v, w, u = (rng.uniform(-1.5, 1.5, n) for _ in range(3))
    v[::3] = -0.0
    w[::2] = -0.0
    u[1::3] = -0.0
    return v, w, u


# (function, argnums for a gradient or None, whether the pass applies)
CASES = [
    (three_additions, None, True), (float32_additions, None, True),
    (read_between, None, False), (value_written_between, None, False),
    (other_dtype, None, False), (rk4_last, (0, 1), True),
]
IDS = [c[0].__name__ for c in CASES]


def _without_pass(monkeypatch):
    monkeypatch.setattr(pipeline, "PIPELINE",
                        [p for p in pipeline.PIPELINE if p[0] != "gather"])


@pytest.mark.parametrize("n", [1, 2, 64])
@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
@pytest.mark.parametrize("fn,argnums,applies", CASES, ids=IDS)
def test_same_bits_with_and_without_the_pass(fn, argnums, applies, backend, n, no_ir_cache,
                                             monkeypatch):
    args = _vectors(np.random.default_rng(n), n)
    same_bits_without(fn, argnums, backend, args, lambda: _without_pass(monkeypatch))


@pytest.mark.parametrize("fn,argnums,applies", CASES, ids=IDS)
def test_applies_where_nothing_touches_the_array(fn, argnums, applies, no_ir_cache,
                                                 monkeypatch):
    args = _vectors(np.random.default_rng(0), 6)

    def additions(ir):
        return ir.count("iadd")

    gathered = additions(_compiled(fn, argnums, "llvm").ir(*args))
    _without_pass(monkeypatch)
    assert (gathered < additions(_compiled(fn, argnums, "llvm").ir(*args))) == applies


# -- alias facts: a loop's slot and the arrays made in its trips -----------------------------


def slot_holds_the_written_array(x, n):
    """b is a on the first trip: b * 2.0 must be read before a is written."""
    a = np.zeros(x.shape[0])
    b = a
    for _ in range(n):
        c = b * 2.0
        a += x
        b = c + a
    return b


def slot_holds_an_earlier_trip(x, n):
    """b is what an earlier trip made; d is new in this one, so writing d leaves b alone."""
    b = x + 1.0
    for _ in range(n):
        c = b * 2.0
        d = np.zeros(x.shape[0])
        d += x
        b = c + d
    return b


@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
@pytest.mark.parametrize("fn", [slot_holds_the_written_array, slot_holds_an_earlier_trip])
def test_loop_slots_against_numpy(fn, backend):
    x = np.random.default_rng(1).uniform(-1.0, 1.0, 7)
    for n in (0, 1, 3):
        _same_bits(ac.adcompile(fn, backend=backend)(x, n), fn(x, n))


def _loop_function():
    """start = alloc; for: slot p; made = alloc inside; yield made; other = alloc before."""
    vec = T.Array("f64", 1)
    n = Value(T.INT, "n")
    before = Op("alloc", [n], [vec], {"dtype": "f64", "fill": 0, "ndim": 1})
    other = Op("alloc", [n], [vec], {"dtype": "f64", "fill": 0, "ndim": 1})
    body = Block([Value(T.INT, "i"), Value(vec, "p")])
    made = Op("alloc", [n], [vec], {"dtype": "f64", "fill": 0, "ndim": 1})
    body.ops = [made, Op("yield", [made.result])]
    loop = Op("for", [n, n, n, before.result], [vec], regions=[body])
    fn_body = Block()
    fn_body.ops = [before, other, loop, Op("return", [loop.result])]
    return Function("f", [n], fn_body), before, other, body.params[1], made, loop


def test_origins_tell_new_buffers_apart():
    fn, before, other, slot, made, loop = _loop_function()
    origins = Origins(fn)
    assert origins.makers(slot) == {before, made}
    assert origins.distinct(other.result, slot)  # no op made both
    assert origins.distinct(made.result, slot)  # made this trip, the slot before it
    assert not origins.distinct(before.result, slot)  # the slot's first value
    assert not origins.distinct(loop.results[0], made.result)  # (not alive together)
    assert origins.makers(fn.params[0]) is None

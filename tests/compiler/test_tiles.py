"""Tiled runs on the LLVM backend (backends/llvm/tiles.py): consecutive loops over
one-dimensional arrays run tile by tile where every two of them that meet in memory reach
each element in one order. Each program gives the same bits with runs (tiles of 4 elements
from 8 on, so small arrays are cut into many tiles with a remainder) and without them, and
as numpy; values and gradients: stages that read the last one behind (ascending tiles) or
ahead (descending, with the store of a number run first), both (the run must stay whole),
overlapping stores of a group, a store reading its own destination shifted, a broadcast read
of a written element, units of different lengths. The plan finds GradBench ode's runs."""

import numpy as np
import pytest

import adcompile as ac
from adcompile.backends.llvm import fusion, tiles
from tests.compiler.test_accumulate import _same_bits
from tests.compiler.test_first_store import no_ir_cache  # noqa: F401 (a fixture)
from tests.compiler.test_joins import _gradient, _vectors, ode_primal, rk4_steps

# -- programs (x, y: vectors of one length n >= 1) --------------------------------------------


def rk4_two(x, y):  # GradBench ode's steps: each stage reads the last one element behind
    return rk4_steps(x, y, 0.5, 2)


def behind(x, y):  # stores reading the array before them one element back
    a = np.empty(x.shape[0])
    a[...] = x * y
    b = np.empty(x.shape[0])
    b[1:] = a[:-1] + x[1:]
    b[:1] = 2.0
    return b * a


def ahead(x, y):  # one element on, as in reverse mode's adjoint stages: descending
    a = np.empty(x.shape[0])
    a[:-1] = x[1:] * y[1:]
    a[-1:] = 0.5
    b = np.empty(x.shape[0])
    b[:-1] = (a + y)[1:] * x[:-1]
    b[-1:] = -1.0
    return b - a


def both_ways(x, y):  # one stage reads behind, the next ahead: no order fits
    a = np.empty(x.shape[0])
    a[...] = x * y
    b = np.empty(x.shape[0])
    b[1:] = a[:-1] + 1.0
    b[:1] = 0.0
    c = np.empty(x.shape[0])
    c[:-1] = b[1:] * a[1:]
    c[-1:] = 1.0
    return c


def written_first(x, y):  # a number stored where an earlier unit wrote: not run first
    a = np.empty(x.shape[0])
    a[...] = x + y
    a[-1:] = 3.0
    b = np.empty(x.shape[0])
    b[...] = a * 2.0
    return b


def shifted_group(x, y):  # a group's stores into overlapping windows of one array
    g = np.empty(x.shape[0])
    g[...] = x * 1.5
    g[1:] += y[:-1]
    g[:-1] += y[1:]
    return g


def own_window(x, y):  # a store whose value reads its own destination, shifted
    a = np.empty(x.shape[0])
    a[...] = x - y
    a[1:] += a[:-1]
    return a


def broadcast_written(x, y):  # every element reads one that an earlier unit wrote
    a = np.empty(x.shape[0])
    a[...] = x * y
    b = np.empty(x.shape[0])
    b[...] = a[-1:] * x
    return b + a


def short_units(x, y):  # units of different lengths, the short one reading the long one
    a = np.empty(x.shape[0])
    a[...] = x * y
    b = np.empty(2)
    b[...] = a[1:3]
    c = np.empty(x.shape[0])
    c[...] = a * 0.5
    return c + np.sum(b)


CASES = [rk4_two, behind, ahead, both_ways, written_first, shifted_group, own_window,
         broadcast_written, short_units]
IDS = [c.__name__ for c in CASES]
# (their reverse steps read ahead, behind, both, and overlap in a group; each gradient
# compiles for seconds, so not every case)
GRADIENT_CASES = [rk4_two, behind, both_ways, shifted_group]


def _results(fn, on, sizes, monkeypatch, grad=False):
    """fn's results (or its gradient's) at each size, compiled with runs on or off, tiles of
    4 elements from 8 on (the switches are read when it compiles, at its first call; the
    other sizes reuse the code)."""
    monkeypatch.setattr(tiles, "TILES", on)
    monkeypatch.setattr(tiles, "TILE", 4)
    monkeypatch.setattr(tiles, "MIN_TILED", 8)
    f = ac.adcompile(_gradient(fn) if grad else fn)
    f = ac.grad(f, argnums=(0, 1)) if grad else f
    return [f(*_vectors(n)) for n in sizes]


@pytest.mark.parametrize("fn", CASES, ids=IDS)
def test_same_bits_with_and_without_tiles(fn, monkeypatch):
    sizes = (4, 9, 33)
    tiled = _results(fn, True, sizes, monkeypatch)
    _same_bits(tuple(tiled), tuple(fn(*_vectors(n)) for n in sizes))
    _same_bits(tuple(tiled), tuple(_results(fn, False, sizes, monkeypatch)))


@pytest.mark.parametrize("fn", GRADIENT_CASES, ids=[c.__name__ for c in GRADIENT_CASES])
def test_same_gradient_bits_with_and_without_tiles(fn, monkeypatch):
    sizes = (9, 34)
    _same_bits(tuple(_results(fn, True, sizes, monkeypatch, grad=True)),
               tuple(_results(fn, False, sizes, monkeypatch, grad=True)))


def test_errors_of_a_run_as_before(monkeypatch):
    """A value that does not fit its destination raises numpy's ValueError in a run too
    (its check runs where the store stands, before a tile cuts both to fit)."""
    def bad(x, y):
        a = np.empty(x.shape[0])
        a[...] = x * y
        b = np.empty(x.shape[0] - 1)
        b[...] = a * 2.0
        return b

    for on in (True, False):
        with pytest.raises(ValueError):
            _results(bad, on, (20,), monkeypatch)


def _runs(ir):
    plan = fusion.plan(ir)
    return sorted(sum(op in plan.units for op in ops) for ops in plan.runs.values())


def test_the_ode_steps_are_runs(no_ir_cache):
    """GradBench ode's step is one run: 5 units (k1-k4 and the state) in the primal, 4 in
    its gradient's forward step (k4 lazy there), and the reverse step one run of 6 planned
    units: each of three adjoint stages' shifted stores (a store group, whose stores tile as
    units of their own), the state's adjoint, and the four additions into each of x_bar[:1]
    and x_bar[1:] that passes/adjacent_additions.py brought together (two groups; the four
    into one view tile as one unit); the kernels call adc.tiles.order."""
    def ode_last(x, s):
        return ode_primal(x, s)[-1]

    x = _vectors(9)[0]
    primal = ac.adcompile(ode_primal)
    assert _runs(primal.specialize(x, 2).ir) == [5]
    grad = ac.grad(ac.adcompile(ode_last))
    assert _runs(grad.specialize(x, 2).ir) == [4, 6]
    assert "adc.tiles.order" in grad.llvm_ir(x, 2)

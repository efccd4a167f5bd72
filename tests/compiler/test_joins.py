"""Lazy concatenations on the LLVM backend (backends/llvm/joins.py): a one-dimensional
`np.concatenate` read element by element is computed part by part inside its consumers'
loops. Each program gives the same bits with joins (the default) and without them
(fusion.JOIN off: the concatenation copied into an array), on the Python backend and the
interpreter, and as numpy; values and gradients, on empty parts, a join of length 1
broadcast, joins with different boundaries in one expression, slices of joins, joins of
joins and stores of joins into a matrix's rows. Where a join must stay an array (a
reduction reads it, its consumer writes into what it reads) the plan keeps it one."""

import numpy as np
import pytest

import adcompile as ac
from adcompile.backends.llvm import fusion
from tests.compiler.test_accumulate import _same_bits
from tests.compiler.test_first_store import no_ir_cache  # noqa: F401 (a fixture)
from tests.slices import sliced

# -- programs (x, y: vectors of one length n >= 1) --------------------------------------------


def field_step(x, y):  # GradBench ode's stage: a join inside an elementwise expression
    k = np.concatenate((x[:1], x[1:] * y[:-1]))
    return y + 0.25 * k


def chained_stages(x, y):  # joins over joins: each stage reads the last one shifted
    k1 = np.concatenate((x[:1], x[1:] * y[:-1]))
    k2 = np.concatenate((x[:1], x[1:] * (y + 0.5 * k1)[:-1]))
    return y + k2 / 3.0


def two_boundaries(x, y):  # two joins cut at different places, in one expression
    return np.concatenate((x[:2], y[2:])) * np.concatenate((y[:3], x[3:])) - x


def sliced_join(x, y):
    j = np.concatenate((x, 2.0 * y))
    return j[1:-1] * 3.0 + j[2:]


def join_of_join(x, y):
    inner = np.concatenate((x[:1], y)) * 2.0
    return np.concatenate((inner, x[1:] - y[1:])) + 1.0


def empty_parts(x, y):
    return np.concatenate((x[:0], y)) * x + np.concatenate((y, x[3:3]))


def broadcast_one(x, y):  # a join of one element broadcast along x
    return np.concatenate((x[:0], y[:1])) * x


def stored_rows(x, y):  # a join stored into every row of a matrix, then added into one
    m = np.zeros((3, x.shape[0] + 1))
    m[...] = np.concatenate((x[:1] * 2.0, y * x))
    m[1] += np.concatenate((y, x[-1:] - 1.0))
    return m


def stored_fresh(x, y):  # the value of `a[1:] += join` into a new array
    a = np.ones(x.shape[0] + 1)
    a[1:] += np.concatenate((x[:1], y[1:])) * 0.5
    return a


def summed_join(x, y):  # a reduction reads it: it stays an array
    return np.sum(np.concatenate((x, y))) + x


def summed_product(x, y):  # the product a reduction reads is an array, made piece by piece
    return np.sum(np.concatenate((x, y)) * 2.0) + x


def written_leaf(x, y):  # the store writes what the join reads: it stays an array
    z = x * 1.0
    z[...] = np.concatenate((z[1:], z[:1]))
    return z + y


def written_under_product(x, y):  # the product would be an array: the join is one instead
    z = x * 1.0
    z[...] = np.concatenate((z[1:], z[:1])) * 2.0
    return z + y


def rk4_steps(x, y, h, steps):  # the ode eval's steps
    for _ in range(steps):
        k1 = np.concatenate((x[:1], x[1:] * y[:-1]))
        k2 = np.concatenate((x[:1], x[1:] * (y + h / 2 * k1)[:-1]))
        k3 = np.concatenate((x[:1], x[1:] * (y + h / 2 * k2)[:-1]))
        k4 = np.concatenate((x[:1], x[1:] * (y + h * k3)[:-1]))
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def rk4_last(x, y):  # a join would make the stage sum an array: none
    return rk4_steps(x, y, 0.5, 2)


# (function, whether some concatenation of it stays lazy)
CASES = [(field_step, True), (chained_stages, True), (two_boundaries, True),
         (sliced_join, True), (join_of_join, True), (empty_parts, True),
         (broadcast_one, True), (stored_rows, True), (stored_fresh, True),
         (summed_join, False), (summed_product, False), (written_leaf, False),
         (written_under_product, False), (rk4_last, False)]
IDS = [c[0].__name__ for c in CASES]


def _vectors(n):
    rng = np.random.default_rng(n)
    x, y = rng.uniform(-1.5, 1.5, n), rng.uniform(-1.5, 1.5, n)
    x[::3] = -0.0
    y[1::4] = -0.0
    return x, y


def _gradient(fn):
    """The gradient of a weighted sum of fn's result (an elementwise weight, so every
    element's adjoint differs), with respect to both vectors."""
    def weighted(x, y):
        r = fn(x, y)
        return np.sum(r * np.sin(np.arange(r.size) * 0.7 + 0.3).reshape(r.shape))
    return weighted


def _run(fn, backend, args, joins, monkeypatch, grad=False):
    monkeypatch.setattr(fusion, "JOIN", joins)
    f = ac.adcompile(_gradient(fn) if grad else fn, backend=backend)
    return (ac.grad(f, argnums=(0, 1)) if grad else f)(*args)


_JOINED = {}


def _joined(fn, n, monkeypatch, grad=False):
    """fn's result (or gradient) on the LLVM backend with joins, compiled once per test
    session for each size (the comparisons with each backend share it)."""
    key = (fn, n, grad)
    if key not in _JOINED:
        _JOINED[key] = _run(fn, "llvm", _vectors(n), True, monkeypatch, grad)
    return _JOINED[key]


def _sized(sizes, kept):
    """(fn, lazy, n) for every case and size; CI runs size `kept` of every case and the
    other sizes of every other case (tests/slices.py: each size compiles twice on LLVM)."""
    cases = [(fn, lazy, n) for n in sizes for fn, lazy in CASES]
    return sliced(cases, 2, keep=lambda case: case[2] == kept)


def _sized_ids(sizes):
    return [f"{fn.__name__}-{n}" for n in sizes for fn, _ in CASES]


@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
@pytest.mark.parametrize("fn,lazy,n", _sized([1, 3, 64], 64), ids=_sized_ids([1, 3, 64]))
def test_same_bits_with_and_without_joins(fn, lazy, backend, n, no_ir_cache, monkeypatch):
    args = _vectors(n)
    joined = _joined(fn, n, monkeypatch)
    _same_bits(joined, fn(*args))
    _same_bits(joined, _run(fn, backend, args, False, monkeypatch))


@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
@pytest.mark.parametrize("fn,lazy,n", _sized([2, 33], 33), ids=_sized_ids([2, 33]))
def test_same_gradient_bits_with_and_without_joins(fn, lazy, backend, n, no_ir_cache,
                                                   monkeypatch):
    """Bits on the LLVM backend (joins change nothing elsewhere); the interpreter's and
    the Python backend's gradients agree to rounding: with joins or without, the LLVM
    backend's may differ from theirs in the sign of a zero (`np.sum(y * x)`'s gradient in
    y is +0.0 there where x is -0.0, -0.0 on the Python backend) and in the order a
    broadcast operand's adjoint is summed."""
    args = _vectors(n)
    joined = _joined(fn, n, monkeypatch, grad=True)
    other = _run(fn, backend, args, False, monkeypatch, grad=True)
    if backend == "llvm":
        _same_bits(joined, other)
        return
    for a, b in zip(joined, other):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=0.0, strict=True)


@pytest.mark.parametrize("fn,lazy", CASES, ids=IDS)
def test_which_concatenations_stay_lazy(fn, lazy, no_ir_cache):
    args = _vectors(6)
    plan = fusion.plan(ac.adcompile(fn).specialize(*args).ir)
    joins = [v for v in plan.joins if v.owner.prim == "concatenate"]
    assert bool(joins) == lazy


@pytest.mark.parametrize("backend", ["python", "llvm"])
def test_errors_of_a_join_as_before(backend, no_ir_cache, monkeypatch):
    """A join that does not broadcast against its other operand, or into the store's
    destination, raises numpy's ValueError whether it is lazy or copied."""
    def bad_operand(x, y):
        return np.concatenate((x[:1], y)) * x

    def bad_store(x, y):
        a = np.zeros(x.shape[0])
        a[...] = np.concatenate((x[:1], y))
        return a

    x, y = _vectors(5)
    for fn in (bad_operand, bad_store):
        for joins in (True, False):
            with pytest.raises(ValueError):
                _run(fn, backend, (x, y), joins, monkeypatch)


def ode_primal(x, s):  # the eval's primal
    return rk4_steps(x, np.zeros(x.shape[0]), 2.0 / s, s)


@pytest.mark.parametrize("fn", [c[0] for c in CASES] + [ode_primal])
def test_joins_take_no_lazy_op_away(fn, no_ir_cache, monkeypatch):
    """Every op that is lazy without joins is lazy with them: a concatenation whose join
    would leave an elementwise op over it an array (more than PIECES loops, a reduction
    reading it) is copied instead."""
    args = _vectors(6) if fn is not ode_primal else (_vectors(6)[0], 2)
    ir = ac.adcompile(fn).specialize(*args).ir
    joined = fusion.plan(ir).lazy
    monkeypatch.setattr(fusion, "JOIN", False)
    assert fusion.plan(ir).lazy <= joined


def test_the_last_stage_joins_in_the_gradient(no_ir_cache):
    """In the gradient of the ode eval's last component (which tapes k1, k2 and k3) k4 is
    lazy, read by the state's update piece by piece, within PIECES loops; the gradient's
    bits are those without joins."""
    def ode_last(x, s):
        return ode_primal(x, s)[-1]

    x = _vectors(9)[0]
    grad = ac.grad(ac.adcompile(ode_last))
    plan = fusion.plan(grad.specialize(x, 3).ir)
    joins = [v for v in plan.joins if v.owner.prim == "concatenate"]
    assert len(joins) == 1 and max(plan.pieces.values()) <= fusion.PIECES
    joined = grad(x, 3)
    fusion.JOIN = False
    try:
        _same_bits(joined, ac.grad(ac.adcompile(ode_last))(x, 3))
    finally:
        fusion.JOIN = True

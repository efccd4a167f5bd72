"""The last trip's state (backends/llvm/fusion.spare_on_last_trip, tiles.py): an array a `for`
loop's body makes and yields, into a slot whose final value nothing after the loop reads an
element of (its shape only, or a load whose value is unused), is computed on every trip but
the last, where it is allocated and left unfilled. GradBench ode's gradient is the case:
`ode_primal(x, s)[-1]`'s gradient needs only the shape of the last state.

The plan names exactly such values: not one whose final value is read (value_and_grad, a sum
after the loop, the array returned), nor one the body also uses (a tape of it, a second slot).
Gradients and values agree bit for bit with the interpreter and the Python backend for s = 0
(no trip), 1 and 3, on vectors short and long enough to be tiled."""

import numpy as np
import pytest

import adcompile as ac
from adcompile.backends.llvm import fusion
from tests.compiler.test_accumulate import _same_bits
from tests.compiler.test_first_store import no_ir_cache  # noqa: F401 (a fixture)
from tests.compiler.test_joins import _vectors, rk4_steps


def last_state(x, s):  # ode's gradient: only y's shape after the loop (and y[-1]'s check)
    return rk4_steps(x, np.zeros(x.shape[0]), 2.0 / max(s, 1), s)[-1]


def last_state_read(x, s):  # the gradient reads y[-1]: the last trip's y is needed
    y = rk4_steps(x, np.zeros(x.shape[0]), 0.5, s)
    return y[-1] ** 2


def decay(x, s):
    y = x * 1.0
    z = x * 0.0
    for _ in range(s):
        z = z + y * 0.5  # z's last value: summed after the loop
        y = y * 0.5 + x  # y's last value: its size only
    return np.sum(z) + y.size


def carried_twice(x, s):
    y = x * 1.0
    w = x * 1.0
    for _ in range(s):  # (an RK4 step: a tiled run)
        k1 = np.concatenate((x[:1], x[1:] * y[:-1]))
        k2 = np.concatenate((x[:1], x[1:] * (y + 0.25 * k1)[:-1]))
        k3 = np.concatenate((x[:1], x[1:] * (y + 0.25 * k2)[:-1]))
        k4 = np.concatenate((x[:1], x[1:] * (y + 0.5 * k3)[:-1]))
        y = y + 0.125 * (k1 + 2 * k2 + 2 * k3 + k4)
        w = y  # one array in two slots: w's final value is read
    return np.sum(w) * y.shape[0]


def _spare(fn, args, how=ac.grad):
    f = ac.adcompile(fn)
    ir = (how(f) if how else f).specialize(*args).ir
    return [v.name for values in fusion.spare_on_last_trip(ir).values() for v in values]


def test_the_plan_names_the_unread_state():
    x = _vectors(9)[0]
    found = _spare(last_state, (x, 2))  # the forward sweep's last update of y
    assert len(found) == 1 and found[0].startswith("y")
    assert _spare(last_state, (x, 2), how=None) == []  # y[-1] is the function's value
    assert _spare(last_state, (x, 2), how=ac.value_and_grad) == []
    assert _spare(last_state_read, (x, 2)) == []
    found = _spare(decay, (x, 2), how=None)  # y's, not z's (summed)
    assert len(found) == 1 and found[0].startswith("y")
    assert len(_spare(decay, (x, 2))) == 2  # the gradient of a sum reads no element
    assert _spare(carried_twice, (x, 2)) == []


@pytest.mark.parametrize("n", [9, 40000])
@pytest.mark.parametrize("s", [0, 1, 3])
@pytest.mark.parametrize("fn", [last_state, last_state_read, decay, carried_twice])
def test_gradients_and_values_agree(fn, s, n, no_ir_cache):
    x = _vectors(n)[0]
    for backend in ("interp", "python"):
        want = ac.value_and_grad(ac.adcompile(fn, backend=backend))(x, s)
        _same_bits(ac.value_and_grad(ac.adcompile(fn))(x, s), want)
        _same_bits(ac.grad(ac.adcompile(fn))(x, s), want[1])

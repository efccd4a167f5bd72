"""Common subexpressions (passes/cse.py): loads through views of parameters nothing writes are
merged; an `if` on a condition an earlier `if` tested takes what the earlier one's same
branch computed, as a new result of it. Programs agree across the interpreter, the Python
backend and the LLVM backend, and the IR shows the merged ops once."""

import math

import numpy as np
import pytest

import adcompile as ac
from adcompile.ir.nodes import walk

BACKENDS = ["interp", "python", "llvm"]


def rows_twice(a, i):
    """Elements of a row view, read twice (as the reverse pass rereads them)."""
    r = a[i]
    s = r[0] * r[1]
    t = a[i]
    return s + t[0] * t[1] + r[2]


def rows_after_a_write(a, b, i):
    """A parameter is written: loads through views are not merged (b may be a view of a)."""
    r = a[i]
    x = r[0]
    b[0] = x + 1.0
    y = a[i][0]
    return x * x - y * y


def branches_twice(x, y):
    """Two `if`s on one condition, the second computing again what the first did (a chain:
    a square root, then a division by it), in either branch."""
    big = x > 0.5
    if big:
        root = math.sqrt(x)
        k = y / root
        u = k * k
    else:
        k = y * x
        u = k + 1.0
    if big:
        v = y / math.sqrt(x) + u
    else:
        v = y * x - u
    return v


def nested_branches(x, y):
    """The later `if` inside a loop and another `if`: the earlier one's results dominate it."""
    c = x > 0.0
    if c:
        q = math.exp(x) / y
    else:
        q = y
    s = 0.0
    for j in range(3):
        if y > 0.0:
            if c:
                s += math.exp(x) / y + j
            else:
                s += q - j
    return s


CASES = [
    (rows_twice, lambda: (np.arange(12.0).reshape(4, 3) + 0.5, 2)),
    (rows_after_a_write, lambda: (np.arange(12.0).reshape(4, 3), np.zeros(2), 1)),
    (branches_twice, lambda: (2.0, 3.0)),
    (branches_twice, lambda: (0.25, 3.0)),
    (nested_branches, lambda: (0.5, 2.0)),
    (nested_branches, lambda: (-0.5, 2.0)),
]


def _count(fn, args, prim):
    """How many `prim` ops of fn's IR have a result something uses (an op merged away may stay
    for the error it can raise, with no reader)."""
    program = ac.adcompile(fn).specialize(*args).ir
    used = {v for op in walk(program.body) for v in op.operands}
    return sum(1 for op in walk(program.body) if op.prim == prim and op.results[0] in used)


@pytest.mark.parametrize("k", range(len(CASES)))
def test_backends_agree_with_python(k):
    fn, make = CASES[k]
    expected = fn(*make())
    for backend in BACKENDS:
        got = ac.adcompile(fn, backend=backend, verify=True)(*make())
        assert got == expected, backend


def test_loads_through_views_of_unwritten_parameters_merge():
    assert _count(rows_twice, CASES[0][1](), "mul") == 1  # t[0] * t[1] is r[0] * r[1]


def test_loads_after_a_write_into_a_parameter_stay():
    assert _count(rows_after_a_write, CASES[1][1](), "mul") == 2


def test_an_if_on_a_tested_condition_takes_the_earlier_ifs_values():
    assert _count(branches_twice, CASES[2][1](), "sqrt") == 1
    assert _count(branches_twice, CASES[2][1](), "div") == 1
    assert _count(nested_branches, CASES[4][1](), "exp") == 1
    program = ac.adcompile(branches_twice).specialize(*CASES[2][1]()).ir
    first = next(op for op in walk(program.body) if op.prim == "if")
    assert len(first.results) > 2  # k and u, and what the second `if` took from it


def test_a_gradient_under_a_tested_condition_computes_the_rotation_once():
    """The reverse pass recomputes a branch's values under the same condition (the GradBench
    ba rotation shape); the square root and the divisions by it are the forward pass's."""

    def rotated(r, x):
        total = 0.0
        for i in range(r.shape[0]):
            theta2 = r[i, 0] * r[i, 0] + r[i, 1] * r[i, 1]
            if theta2 != 0.0:
                theta = math.sqrt(theta2)
                y = x[i] * math.cos(theta) + r[i, 0] / theta * math.sin(theta)
            else:
                y = x[i] + r[i, 1]
            total += y * y
        return total

    rng = np.random.default_rng(0)
    r, x = rng.uniform(-1, 1, (6, 2)), rng.uniform(-1, 1, 6)
    r[2] = 0.0
    g = ac.grad(ac.adcompile(rotated), argnums=(0, 1))
    program = g.specialize(r, x).ir
    used = {v for op in walk(program.body) for v in op.operands}
    assert sum(1 for op in walk(program.body) if op.prim == "sqrt" and op.results[0] in used) == 1
    results = [ac.grad(ac.adcompile(rotated, backend=b, verify=True), argnums=(0, 1))(r, x)
               for b in BACKENDS]
    for got in results[1:]:
        for a, b in zip(got, results[0]):
            np.testing.assert_array_equal(a, b)
    eps = 1e-6
    for k in range(x.size):
        up, down = x.copy(), x.copy()
        up[k] += eps
        down[k] -= eps
        numeric = (rotated(r, up) - rotated(r, down)) / (2 * eps)
        assert results[0][1][k] == pytest.approx(numeric, rel=1e-6, abs=1e-7)

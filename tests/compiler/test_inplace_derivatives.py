"""Derivatives of in-place array updates (ad/inplace.py, ad/forward.py's own tangents).

`x *= y`, `x /= y`, `x **= p`, `x //= y`, `x %= y` are differentiated as the new value stored
back; `x **= p` used to give a silently wrong gradient and the others were refused. The
array corpus (array_corpus.py, "in-place updates ...") checks values and derivatives of such
programs on every backend; these check what it cannot see: the caller's tangents stay as they
were, the primal program keeps its in-place update, and the exact derivatives of small
cases on every backend."""

import math

import numpy as np
import pytest

import adcompile as ac
from adcompile.ir.nodes import walk

BACKENDS = ["interp", "python", "llvm"]
X = np.array([0.3, 1.2, 0.7, 2.0, 0.1])
Y = np.array([1.5, 0.8, 1.1, 0.6, 1.3])
T1 = np.array([0.5, -1.0, 2.0, 0.25, -0.75])
T2 = np.array([-0.5, 0.3, 0.2, 1.0, 0.4])


def passed_through_then_scaled(x, y):
    z = x + 0.5  # z's tangent is x's
    z *= 2.0
    return np.sum(z * y)


def passed_through_then_stored(x, y):
    z = x - 0.0
    z[0] = 1.0
    return np.sum(z * y)


def passed_through_then_added(x, y):
    z = x + 0.5
    z += y
    return np.sum(z)


def powered(x, y):
    z = x + 0.5
    z **= 3
    return np.sum(z * y)


def divided_by_array(x, y):
    z = x * 1.0
    z /= y
    return np.sum(z * z)


def floored(x, y):
    z = 3.0 * x
    z //= 0.7
    return np.sum(z * y)


def tanh_then_written(x, y):
    z = np.tanh(x)
    z[0] -= 2.25  # tanh's adjoint reads z
    return np.sum(z * y)


def exp_then_scaled(x, y):
    z = np.exp(x)
    z *= y
    return np.sum(z)


def sqrt_written_in_loop(x, y):
    z = np.sqrt(x + 1.0)
    for _ in range(2):
        z[1:] = z[:-1] * y[1:]
    return np.sum(z)


def powered_then_stored(x, y):
    z = x ** 3
    z[2] = 0.0
    return np.sum(z * y)


# (function, d/dx . t1 + d/dy . t2 at X, Y by hand)
EXACT = [
    (passed_through_then_scaled, lambda: np.sum(2 * T1 * Y) + np.sum(2 * (X + 0.5) * T2)),
    (passed_through_then_stored,
     lambda: np.sum(T1[1:] * Y[1:]) + np.sum(np.concatenate(([1.0], X[1:])) * T2)),
    (passed_through_then_added, lambda: np.sum(T1) + np.sum(T2)),
    (powered, lambda: np.sum(3 * (X + 0.5) ** 2 * T1 * Y) + np.sum((X + 0.5) ** 3 * T2)),
    (divided_by_array, lambda: np.sum(2 * X / Y**2 * T1) - np.sum(2 * X**2 / Y**3 * T2)),
    (floored, lambda: np.sum((3.0 * X // 0.7) * T2)),
    (tanh_then_written,
     lambda: np.sum((1 - np.tanh(X) ** 2) * T1 * Y)
     + np.sum((np.tanh(X) - [2.25, 0, 0, 0, 0]) * T2)),
    (exp_then_scaled, lambda: np.sum(np.exp(X) * Y * T1) + np.sum(np.exp(X) * T2)),
    (sqrt_written_in_loop, lambda: _sqrt_written_in_loop_exact()),
    (powered_then_stored,
     lambda: np.sum(np.where(np.arange(5) == 2, 0, 3 * X**2) * Y * T1)
     + np.sum(np.where(np.arange(5) == 2, 0, X**3) * T2)),
]


def _sqrt_written_in_loop_exact():
    """z = sqrt(x + 1); twice z[1:] = z[:-1] * y[1:]; d(sum z) by forward differentiation."""
    z, dz = np.sqrt(X + 1.0), T1 / (2 * np.sqrt(X + 1.0))
    for _ in range(2):
        z_new, dz_new = z.copy(), dz.copy()
        z_new[1:] = z[:-1] * Y[1:]
        dz_new[1:] = dz[:-1] * Y[1:] + z[:-1] * T2[1:]
        z, dz = z_new, dz_new
    return np.sum(dz)
IDS = [fn.__name__ for fn, _ in EXACT]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,exact", EXACT, ids=IDS)
def test_jvp_is_exact_and_leaves_the_tangents(fn, exact, backend):
    x, y, t1, t2 = X.copy(), Y.copy(), T1.copy(), T2.copy()
    value, tangent = ac.jvp(ac.adcompile(fn, backend=backend), (x, y), (t1, t2))
    assert value == fn(X, Y)
    np.testing.assert_allclose(tangent, exact(), rtol=1e-13)
    for given, kept in ((x, X), (y, Y), (t1, T1), (t2, T2)):
        np.testing.assert_array_equal(given, kept)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,exact", EXACT, ids=IDS)
def test_gradient_is_exact(fn, exact, backend):
    gx, gy = ac.grad(ac.adcompile(fn, backend=backend), argnums=(0, 1))(X.copy(), Y.copy())
    np.testing.assert_allclose(gx @ T1 + gy @ T2, exact(), rtol=1e-13)


def test_the_primal_keeps_its_update_in_place():
    f = ac.adcompile(powered, backend="python")
    ac.grad(f, argnums=(0, 1))(X, Y)
    ac.jvp(f, (X, Y), (T1, T2))
    kinds = [op.attrs.get("op") for op in walk(f.specialize(X, Y).ir.body)
             if op.prim == "iadd"]
    assert kinds == ["pow"]


def written_but_unread(x, a):
    a[1] *= (-math.inf * x) * np.arctan(a[0])  # a: an argument the result never reads
    return x * -0.5


def written_then_read(x, a):
    b = a * 1.0
    b[1] *= x * np.arctan(a[0])
    return np.sum(b) + x * -0.5


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_write_the_result_never_reads_has_no_adjoint(backend):
    """Its adjoint would be zero, and zero times the infinite partial derivative is nan
    (compiler fuzz seed 2267316895463); a write the result does read keeps its adjoint."""
    g = ac.grad(ac.adcompile(written_but_unread, backend=backend))
    assert g(-0.4, np.array([0.5, 1.8])) == -0.5
    h = ac.grad(ac.adcompile(written_then_read, backend=backend))
    assert h(-0.4, np.array([0.5, 1.8])) == pytest.approx(1.8 * np.arctan(0.5) - 0.5, 1e-15)

"""Second order: hessian and hvp (forward over reverse) match finite differences of grad,
loops and branches included; jacobian matches finite differences; grad composes with grad on
straight-line code."""

import numpy as np
import pytest

import adcompile as ac
from tests.compiler import corpus as c

FUNCS = [(c.poly, (1.3,)), (c.rational, (1.0, 2.0)), (c.math_funcs, (0.8,)),
         (c.piecewise, (0.4,)), (c.piecewise, (3.0,)), (c.newton_sqrt, (3.0,)),
         (c.series_exp, (0.7,)), (c.dot, (c.V, c.W)), (c.matrix_sum, (c.M,)),
         (c.norm2, (c.V,)), (c.calls_with_control, (c.V,)), (c.early_return, (2.5,)),
         (c.more_math, (0.3,)), (c.augmented, (1.7,))]


def _numeric_hessian(fn, args, k):
    g = ac.grad(fn, argnums=k)
    x = np.asarray(args[k], dtype=float)
    cols = []
    for j in range(x.size):
        step = np.zeros(x.size)
        step[j] = 1e-5
        up, down = list(args), list(args)
        up[k] = (x.ravel() + step).reshape(x.shape) if x.ndim else float(x + 1e-5)
        down[k] = (x.ravel() - step).reshape(x.shape) if x.ndim else float(x - 1e-5)
        cols.append((np.asarray(g(*up)) - np.asarray(g(*down))).ravel() / 2e-5)
    return np.stack(cols, axis=-1)


@pytest.mark.parametrize("fn,args", FUNCS, ids=[f"{f.__name__}-{a[0] if not hasattr(a[0], 'shape') else 'array'}" for f, a in FUNCS])
def test_hessian_matches_finite_differences_of_grad(fn, args):
    hess = np.asarray(ac.hessian(fn)(*args))
    numeric = _numeric_hessian(fn, args, 0)
    np.testing.assert_allclose(hess.reshape(numeric.shape), numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn,args", FUNCS[:8], ids=[f.__name__ for f, _ in FUNCS[:8]])
def test_hvp_is_hessian_times_vector(fn, args):
    x = args[0]
    v = np.random.default_rng(0).standard_normal(np.shape(x)) if np.ndim(x) else 0.7
    tangents = (v,) + (None,) * (len(args) - 1)
    product = np.asarray(ac.hvp(fn, args, tangents))
    hess = np.asarray(ac.hessian(fn)(*args)).reshape(np.size(x), np.size(x))
    np.testing.assert_allclose(product.ravel(), hess @ np.ravel(v), rtol=1e-9, atol=1e-9)


def test_jacobian_matches_finite_differences():
    x = np.array([0.5, 1.5, -2.0])
    jac = ac.jacobian(c.stencil)(x)
    numeric = np.stack([(c.stencil(x + e * 1e-6) - c.stencil(x - e * 1e-6)) / 2e-6
                        for e in np.eye(3)], axis=-1)
    np.testing.assert_allclose(jac, numeric, rtol=1e-6, atol=1e-8)


SCALAR_ARG = [(f, a) for f, a in FUNCS if not hasattr(a[0], "shape")]


@pytest.mark.parametrize("fn,args", SCALAR_ARG, ids=[f"{f.__name__}-{a[0]}" for f, a in
                                                     SCALAR_ARG])
def test_grad_of_grad_equals_hessian(fn, args):
    """Reverse over reverse: the inner program's tapes are differentiated like any value
    (a pop's adjoint is pushed on an adjoint tape, a push's adjoint is popped from it)."""
    assert ac.grad(ac.grad(fn))(*args) == pytest.approx(ac.hessian(fn)(*args), rel=1e-10)


def test_programs_of_a_function_and_of_its_grad_are_kept_apart():
    """jvp(f) and jvp(grad(f)) (which hvp builds) share argument types, and grad(f) and
    value_and_grad(f) too: each must get its own program, in any order."""
    f = ac.adcompile(c.norm2)  # |x|, whose Hessian is (I - x x^T / |x|^2) / |x|
    x = np.array([0.5, -1.0, 2.0])
    v = np.array([1.0, 0.0, 0.0])
    r = np.linalg.norm(x)
    hess = (np.eye(3) - np.outer(x, x) / r**2) / r
    value, derivative = ac.jvp(f, (x,), (v,))
    np.testing.assert_allclose(ac.hvp(f, (x,), (v,)), hess @ v, rtol=1e-12)
    np.testing.assert_allclose(ac.hessian(f)(x), hess, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ac.jvp(f, (x,), (v,))[1], derivative, rtol=0)
    g = ac.grad(f)(x)
    both = ac.value_and_grad(f)(x)
    np.testing.assert_allclose(both[0], value, rtol=0)
    np.testing.assert_allclose(both[1], g, rtol=0)
    np.testing.assert_allclose(derivative, g @ v, rtol=1e-12)

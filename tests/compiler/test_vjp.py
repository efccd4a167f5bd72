"""Reverse mode on the corpus: every VJP satisfies the dot-product identity
<J t, c> = <t, J^T c> against the (finite-difference-checked) JVP, on both backends; grad of
scalar functions matches finite differences; the tape holds O(N) machine words."""

import copy
import tracemalloc

import numpy as np
import pytest

import adcompile as ac
from adcompile.ir.nodes import walk
from tests.compiler import corpus as c
from tests.compiler.test_jvp import PARAMS, _direction, _flat, _is_float


def _cotangent(value, rng):
    if isinstance(value, tuple):
        return tuple(_cotangent(v, rng) for v in value)
    if isinstance(value, np.ndarray):
        return rng.standard_normal(value.shape) if value.dtype.kind == "f" else value * 0
    if isinstance(value, (float, np.floating)) and not isinstance(value, np.float32):
        return float(rng.standard_normal())
    return 0.0


@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
@pytest.mark.parametrize("fn,i,args", PARAMS, ids=[f"{f.__name__}-{i}" for f, i, _ in PARAMS])
def test_vjp_dot_product_identity(fn, i, args, backend):
    rng = np.random.default_rng(100 + i)
    tangents = _direction(args, rng)
    compiled = ac.adcompile(fn, backend=backend, verify=True)
    value, value_dot = ac.jvp(compiled, copy.deepcopy(args), tangents)
    cot = _cotangent(value, rng)
    out, pullback = ac.vjp(compiled, *copy.deepcopy(args))
    grads = pullback(cot)
    np.testing.assert_allclose(_flat(out), _flat(value), rtol=1e-12, atol=1e-12)
    lhs = float(np.dot(_flat(value_dot), _flat(cot)))
    rhs = sum(float(np.dot(_flat(t), _flat(g))) for t, g in zip(tangents, grads)
              if t is not None)
    assert lhs == pytest.approx(rhs, rel=1e-9, abs=1e-9)


SCALAR = [(c.poly, (1.3,)), (c.piecewise, (0.4,)), (c.more_math, (0.7,)),
          (c.newton_sqrt, (3.0,)), (c.series_exp, (0.7,)), (c.dot, (c.V, c.W)),
          (c.matrix_sum, (c.M,)), (c.calls_with_control, (c.V,)), (c.early_return, (2.5,)),
          (c.rational, (1.0, 2.0)), (c.norm2, (c.V,)), (c.bool_array, (c.V > 0, c.W))]


@pytest.mark.parametrize("fn,args", SCALAR, ids=[f.__name__ for f, _ in SCALAR])
def test_grad_matches_finite_differences(fn, args):
    scalar = fn
    g = ac.grad(fn)
    k = next(i for i, a in enumerate(args) if _is_float(a))
    grad = g(*args) if k == 0 else ac.grad(fn, argnums=k)(*args)
    x = np.asarray(args[k], dtype=float)
    numeric = np.zeros(x.size)
    for j in range(x.size):
        step = np.zeros(x.size)
        step[j] = 1e-6
        up = list(args)
        down = list(args)
        up[k] = (x.ravel() + step).reshape(x.shape) if x.ndim else float(x + 1e-6)
        down[k] = (x.ravel() - step).reshape(x.shape) if x.ndim else float(x - 1e-6)
        numeric[j] = (scalar(*up) - scalar(*down)) / 2e-6
    np.testing.assert_allclose(np.ravel(grad), numeric, rtol=1e-5, atol=1e-6)


def test_grad_source_reads_like_hand_written_code():
    source = ac.grad(c.dot).source(c.V, c.W)
    assert "def dot_grad(x, y)" in source and "x_bar[" in source and "# grad of: s += x[i]" \
        in source


def test_grad_needs_a_scalar_float_result():
    with pytest.raises(TypeError, match="returning a float scalar"):
        ac.grad(c.cumsum_inplace)(c.V)
    with pytest.raises(TypeError, match="argument 0 \\('n'\\)"):
        ac.grad(c.sum_range)(3)


def test_tape_memory_is_linear_in_machine_words():
    n = 1_000_000
    x = np.linspace(0.0, 1.0, n)
    g = ac.grad(c.array_sum)
    g(x[:10])
    tracemalloc.start()
    g(x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # the gradient array (8 MB) plus the index tape (8 bytes per iteration, sized once)
    assert peak < 8 * n * 2.5, f"{peak / n:.1f} bytes per iteration"


def copy_into(x, out):
    s = 0.0
    for i in range(len(x)):
        out[i] = 2 * x[i]
        s += out[i] * x[i]
    return s


def test_differentiated_array_aliasing_a_written_one_is_refused():
    x = np.arange(3.0)
    assert ac.grad(copy_into)(x, np.zeros(3)) == pytest.approx(4 * x)
    with pytest.raises(ac.CompileError, match="shares memory with argument 1"):
        ac.grad(copy_into)(x, x)


def rosenbrock(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def running_product(x):
    p = 1.0
    for i in range(x.shape[0]):
        p = p * x[i]
    return p


def sum_then_square(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s * s


@pytest.mark.parametrize("fn,loops", [(rosenbrock, 1), (running_product, 2),
                                      (sum_then_square, 2)])
@pytest.mark.parametrize("backend", ["python", "llvm"])
def test_forward_and_reverse_loops_fuse_only_when_order_cannot_matter(fn, loops, backend):
    """value_and_grad runs a loop's adjoint inside the loop when its adjoints are constant
    (Rosenbrock); a product (adjoint depends on later iterations) and a squared sum (the
    seed needs the loop's result) keep two loops. Either way the gradient is right."""
    x = np.random.default_rng(3).uniform(0.5, 1.5, 9)
    f = ac.value_and_grad(ac.adcompile(fn, backend=backend))
    program = f.specialize(x).ir
    passes = [op for op in walk(program.body) if op.prim == "for" and
              any(o.prim == "load" for o in walk(op.regions[0]))]  # (not zero-filling loops)
    assert len(passes) == loops
    value, g = f(x)
    assert value == pytest.approx(fn(x), rel=1e-13)
    eps = 1e-6
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = eps
        assert g[k] == pytest.approx((fn(x + e) - fn(x - e)) / (2 * eps), rel=1e-6, abs=1e-6)

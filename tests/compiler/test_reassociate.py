"""fastmath=True's IR rewrites (backends/llvm/reassociate.py): the rewritten programs give the
strict programs' results to rounding, the rewrite fires where the table says it does, and
fastmath=False compiles the IR as written (the very function object, hence the same bits)."""

import numpy as np
import pytest

import adcompile as ac
from adcompile.backends.llvm import reassociate


def centred_product(x, mu, w):
    return np.sum(np.tanh((x - mu) @ w))


def scaled_centred_product(x, mu, w):
    return np.sum(np.sin(((x - mu) @ w) * 0.5))


def _rng_args(m, k, n, mu_shape, seed=0):
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=mu_shape) if mu_shape is not None else np.float64(rng.normal())
    return rng.normal(size=(m, k)), mu, rng.normal(size=(k, n))


# (function, argument shapes (m, k, n, mu's shape; None: a number), argnums, whether mu's
# adjoint is a row sum of a product that the rewrite turns into a vector times a matrix)
CASES = [
    (centred_product, (40, 30, 20, (30,)), (1, 2), True),
    (centred_product, (40, 30, 20, (1,)), (1, 2), True),  # summed to length 1: every element
    (centred_product, (40, 30, 20, None), (1,), True),  # a number: everything
    (centred_product, (1, 3, 2, (3,)), (1, 2), True),
    (centred_product, (0, 3, 2, (3,)), (1, 2), True),  # no rows
    (scaled_centred_product, (30, 16, 24, (16,)), (1, 2), True),
    (centred_product, (30, 16, 24, (16,)), (0, 1), False),  # x's adjoint is the product
]


@pytest.mark.parametrize("fn,shapes,argnums,fires", CASES)
def test_fastmath_gradients_match_strict(fn, shapes, argnums, fires):
    args = _rng_args(*shapes)
    strict = ac.grad(ac.adcompile(fn), argnums=argnums)
    fast = ac.grad(ac.adcompile(fn, fastmath=True), argnums=argnums)
    reference = ac.grad(ac.adcompile(fn, backend="interp"), argnums=argnums)(*args)
    for got, want in zip(fast(*args), reference):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    for got, want in zip(strict(*args), reference):  # BLAS orders products its own way
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    spec = fast.specialize(*args)
    assert (spec.native.fn is not spec.ir) == fires
    assert strict.specialize(*args).native.fn is strict.specialize(*args).ir


def test_rewrite_sums_rows_before_the_product():
    """The rewritten copy sums the cotangent's rows and multiplies a vector; the IR it was
    made from (cached, shown by ir()) still has the matrix product of the cotangent."""
    args = _rng_args(8, 5, 6, (5,))
    fast = ac.grad(ac.adcompile(centred_product, fastmath=True), argnums=(1,))
    spec = fast.specialize(*args)
    before = [op.prim for op in _ops(spec.ir)].count("matmul")
    after = _ops(spec.native.fn)
    assert [op.prim for op in after].count("matmul") == before
    vector_products = [op for op in after if op.prim == "matmul" and op.result.type.ndim == 1]
    assert len(vector_products) == 1
    rows = vector_products[0].operands[0].owner
    assert rows.prim == "sum" and rows.attrs["axis"] == (0,)
    assert reassociate.rewritten(spec.native.fn) is spec.native.fn  # nothing left to do


def _ops(fn):
    from adcompile.ir.nodes import walk

    return list(walk(fn.body))

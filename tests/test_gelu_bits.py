"""GELU (erf form) on contiguous float32 agrees with PyTorch 2.13 (oneDNN's element-wise
primitive, runtime/dnnl_eltwise.py) to the bit, forward and backward, on a table of shapes and
value ranges: each of the erf polynomial's 24 intervals, the saturated range past 5.54, signed
zeros, subnormals and large values."""

import numpy as np
import pytest
import torch

import adcompile


def _values(kind, shape, rng):
    n = int(np.prod(shape))
    table = {
        "normal": lambda: rng.standard_normal(n) * 2,
        "wide": lambda: rng.uniform(-12, 12, n),
        # |x| from 2**-30 to 2**4 evenly in the exponent: every interval of the table
        "intervals": lambda: np.exp2(rng.uniform(-30, 4, n)) * rng.choice([-1, 1], n),
        "special": lambda: np.resize([0.0, -0.0, 1e-40, -1e-40, 5.5, -5.54, 5.55, 1e4, -1e4,
                                      3e38, -3e38], n),
    }
    return table[kind]().astype(np.float32).reshape(shape)


def _run(lib, x, g):
    t = lib.tensor(x, requires_grad=True)
    y = lib.nn.functional.gelu(t)
    y.backward(lib.tensor(g))
    return y.detach().numpy(), t.grad.numpy()


@pytest.mark.parametrize("kind", ["normal", "wide", "intervals", "special"])
@pytest.mark.parametrize("shape", [(128, 64), (2,), (7, 3, 5), (4096,)], ids=str)
def test_gelu_bits(shape, kind):
    rng = np.random.default_rng(len(shape) * 7 + len(kind))
    x = _values(kind, shape, rng)
    g = rng.standard_normal(shape).astype(np.float32)
    ours, want = _run(adcompile, x, g), _run(torch, x, g)
    for name, a, b in zip(("out", "x_bar"), ours, want):
        differ = int((a.view(np.int32) != b.view(np.int32)).sum())
        assert differ == 0, f"{name}: {differ} of {a.size} elements differ"


def test_gelu_module_in_a_graph():
    """nn.GELU between two Linear layers: values and gradients bit-equal to PyTorch's."""
    results = []
    for lib in (adcompile, torch):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Linear(16, 64), lib.nn.GELU(), lib.nn.Linear(64, 16))
        x = lib.randn(32, 16)
        net(x).square().sum().backward()
        results.append([p.grad.numpy() for p in net.parameters()])
    for ours, want in zip(*results):
        np.testing.assert_array_equal(ours, want)


@pytest.mark.parametrize("route", ["gelu", "gelu_slope"])
def test_compiled_gelu_equals_the_numpy_reference(route):
    """The compiled kernels (runtime/simd_compiled.py) give the numpy reference's bits on every
    kind of float32 (random bit patterns: all exponents, subnormals, infinities), a nan's sign
    aside (the compiled one keeps it, as oneDNN does)."""
    from runtime import dnnl_eltwise, simd_compiled

    rng = np.random.default_rng(4)
    bits = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([bits.view(np.float32), rng.standard_normal(50_000).astype(np.float32)])
    compiled = simd_compiled.dnnl_gelu(x, slope=route == "gelu_slope")
    if compiled is None:
        pytest.skip("no compiled kernels (llvmlite missing)")
    with np.errstate(all="ignore"):
        reference = getattr(dnnl_eltwise, "numpy_" + route)(x)
    differ = (compiled.view(np.uint32) != reference.view(np.uint32)) \
        & ~(np.isnan(compiled) & np.isnan(reference))
    assert not differ.any(), f"{np.count_nonzero(differ)} differ, first at {x[differ][:3]}"

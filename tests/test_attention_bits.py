"""scaled_dot_product_attention on float32 agrees with PyTorch 2.13's fused CPU kernel (flash
attention, one thread) to the bit where runtime/rules/flash_attention_cpu.py follows it: the
output and the gradients of query, key and value on a table of shapes, one node named as
PyTorch's. With MKL: heads of 4 to 20 values, key counts below, at and across one and several
vectors of lanes (8 or 16), query counts over several of the kernel's blocks; without MKL the
sizes measured with the chain (heads of 4 values, 4 to 8 keys, 8 to 32 queries). And
nn.MultiheadAttention without weights (PyTorch's route through that kernel), every parameter's
gradient. Past one block of keys the composed route stays close."""

import numpy as np
import pytest
import torch

import adcompile
from runtime.rules import flash_attention_cpu as flash_cpu


pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tests/conftest.py


SHAPES = [  # (batch, heads, queries, keys), heads of 4 values
    (16, 4, 8, 8),  # the transformer example's
    (2, 3, 8, 4),
    (1, 2, 32, 5),
    (3, 1, 17, 7),
    (2, 2, 9, 6),
    (4, 2, 24, 8),
]
# (batch, heads, queries, keys, head size): MKL's products only
WIDE_SHAPES = [
    (2, 2, 9, 9, 4),
    (2, 2, 33, 16, 8),
    (1, 2, 40, 17, 16),
    (2, 1, 8, 33, 20),
    (1, 1, 200, 64, 8),
    (1, 2, 12, 100, 4),
]


def _sdpa(lib, arrays):
    q, k, v = (lib.tensor(a, requires_grad=True) for a in arrays[:3])
    out = lib.nn.functional.scaled_dot_product_attention(q, k, v)
    out.backward(lib.tensor(arrays[3]))
    return out.grad_fn.name(), [t.numpy() for t in (out.detach(), q.grad, k.grad, v.grad)]


@pytest.mark.parametrize("shape", SHAPES + WIDE_SHAPES, ids=str)
def test_sdpa_bits(shape):
    b, h, length, keys, e = shape if len(shape) == 5 else shape + (4,)
    rng = np.random.default_rng(sum(shape))
    arrays = [rng.standard_normal(s).astype(np.float32) * 2
              for s in ((b, h, length, e), (b, h, keys, e), (b, h, keys, e), (b, h, length, e))]
    if not flash_cpu.applies(*arrays[:3], None):
        pytest.skip("not followed here: no MKL and a size or CPU its chains do not hold "
                    "on, or PyTorch's build without vector instructions")
    (name, ours), (want_name, want) = _sdpa(adcompile, arrays), _sdpa(torch, arrays)
    assert name == want_name == "ScaledDotProductFlashAttentionForCpuBackward0"
    for label, a, w in zip(("out", "q_bar", "k_bar", "v_bar"), ours, want):
        differ = int((a != w).sum())
        assert differ == 0, f"{label}: {differ} of {a.size} elements differ"


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention_without_weights_bits(batch_first):
    q = np.zeros((2, 4, 8, 4), np.float32)
    if not flash_cpu.applies(q, q, q, None):
        pytest.skip("the fused kernel is not followed here (no MKL on a CPU other than "
                    "Intel's, or PyTorch's build without vector instructions)")
    results = []
    for lib in (adcompile, torch):
        lib.manual_seed(0)
        attn = lib.nn.MultiheadAttention(16, 4, batch_first=batch_first)
        x = lib.randn(*((12, 8, 16) if batch_first else (8, 12, 16)), requires_grad=True)
        out, weights = attn(x, x, x, need_weights=False)
        assert weights is None
        out.square().sum().backward()
        results.append([out.detach().numpy(), x.grad.numpy()]
                       + [p.grad.numpy() for p in attn.parameters()])
    for ours, want in zip(*results):
        np.testing.assert_array_equal(ours, want)


def test_sdpa_outside_the_measured_sizes_is_close():
    """520 keys, past the kernel's block of 512 (blocks merged, not followed): the composed
    route (softmax of the scaled products), close to PyTorch's kernel but not bit-equal."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32)
              for s in ((1, 2, 9, 8), (1, 2, 520, 8), (1, 2, 520, 8), (1, 2, 9, 8))]
    (name, ours), (_, want) = _sdpa(adcompile, arrays), _sdpa(torch, arrays)
    assert name != "ScaledDotProductFlashAttentionForCpuBackward0"
    for a, w in zip(ours, want):
        np.testing.assert_allclose(a, w, rtol=1e-4, atol=1e-5)


def test_sdpa_gradient_has_no_derivative():
    """As in PyTorch: create_graph gives the same first-order gradient, and a backward through
    it raises a RuntimeError (the fused kernel's backward is not differentiable)."""
    q = np.zeros((2, 2, 8, 4), np.float32)
    if not flash_cpu.applies(q, q, q, None):
        pytest.skip("the fused kernel is not followed here (no MKL on a CPU other than "
                    "Intel's, or PyTorch's build without vector instructions)")
    for lib in (adcompile, torch):
        lib.manual_seed(0)
        q = lib.randn(2, 2, 8, 4, requires_grad=True)
        out = lib.nn.functional.scaled_dot_product_attention(q, q, q)
        (plain,) = lib.autograd.grad(out.sum(), q, retain_graph=True)
        (g,) = lib.autograd.grad(out.sum(), q, create_graph=True)
        np.testing.assert_array_equal(g.detach().numpy(), plain.numpy())
        with pytest.raises(RuntimeError):
            g.sum().backward()


@pytest.mark.parametrize("shape", [(64, 8, 4, 8), (3, 5, 1, 7), (2, 1, 9, 1), (4, 6, 13, 3)])
def test_compiled_fma_chain_equals_the_numpy_one(shape):
    """runtime/simd_compiled.py's fma_chain (each output the FMA chain over n in order) gives
    the numpy reference's bits, on contiguous and transposed operands."""
    from runtime import simd_compiled
    from runtime.rules.flash_attention_cpu import _numpy_chain

    batch, m, n, p = shape
    rng = np.random.default_rng(5)
    a = rng.standard_normal((batch, m, n)).astype(np.float32)
    b = rng.standard_normal((batch, p, n)).astype(np.float32).transpose(0, 2, 1)
    for x, y in ((a, b), (a, np.ascontiguousarray(b))):
        compiled = simd_compiled.fma_chain(x, y)
        if compiled is None:
            pytest.skip("no compiled kernels (llvmlite missing)")
        np.testing.assert_array_equal(compiled.view(np.uint32), _numpy_chain(x, y).view(np.uint32))


def test_compiled_sleef_expf_equals_the_numpy_one():
    """The compiled expf_u10 over an array (the backward's probabilities) gives
    simd_softmax.sleef_expf's bits over its whole finite range, past the flush and
    overflow bounds included."""
    from runtime import simd_compiled, simd_softmax

    rng = np.random.default_rng(6)
    x = np.concatenate([rng.uniform(-120, 110, 200_000), rng.standard_normal(20_000) * 5,
                        [0, -0.0, 88.7, 88.8, -103.9, -104, -104.1, 100, 100.1]]).astype(np.float32)
    compiled = simd_compiled.sleef_expf(x)
    if compiled is None:
        pytest.skip("no compiled kernels (llvmlite missing)")
    with np.errstate(all="ignore"):
        reference = simd_softmax.sleef_expf(x)
    np.testing.assert_array_equal(compiled.view(np.uint32), reference.view(np.uint32))
    assert simd_compiled.sleef_expf(np.array([np.inf, 0], np.float32)) is None

"""Layer norm on float32 agrees with PyTorch 2.13's CPU kernel (one thread) to the bit: the
output, the saved statistics and the gradients of the input, weight and bias, with and without
the affine parameters, on a table of shapes chosen to cover each path of
runtime/rules/layer_norm_cpu.py (rows shorter than a vector, whole vectors, a partial last
vector; one Welford run, two, three with a cascade, 32; normalised shapes of two axes)."""

import numpy as np
import pytest
import torch

import adcompile


pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tests/conftest.py


SHAPES = [  # (input shape, normalised shape)
    ((16, 8, 16), (16,)),  # the transformer example's: two vectors per row
    ((9, 7), (7,)),  # a row shorter than a vector
    ((5, 8), (8,)),  # exactly one vector
    ((3, 4, 33), (33,)),  # four vectors and one lane
    ((6, 136), (136,)),  # a run of 16 vectors and a run of one
    ((4, 300), (300,)),  # three runs (a cascade two levels deep) and a tail
    ((3, 1000), (1000,)),
    ((2, 4100), (4100,)),  # 32 runs
    ((5, 2, 12), (2, 12)),  # two normalised axes
    ((7, 1), (1,)),
]
AFFINE = ["weight+bias", "weight", "none"]


def _inputs(shape, norm_shape, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * rng.uniform(0.1, 3) + rng.uniform(-2, 2)
    arrays = dict(x=x, w=rng.standard_normal(norm_shape), b=rng.standard_normal(norm_shape),
                  g=rng.standard_normal(shape))
    return {k: v.astype(np.float32) for k, v in arrays.items()}


def _run(lib, a, norm_shape, affine):
    x = lib.tensor(a["x"], requires_grad=True)
    w = lib.nn.Parameter(lib.tensor(a["w"])) if affine != "none" else None
    b = lib.nn.Parameter(lib.tensor(a["b"])) if affine == "weight+bias" else None
    out = lib.nn.functional.layer_norm(x, norm_shape, w, b, 1e-5)
    out.backward(lib.tensor(a["g"]))
    got = dict(out=out.detach(), x_bar=x.grad)
    got.update({name: p.grad for name, p in (("w_bar", w), ("b_bar", b)) if p is not None})
    return {k: v.numpy() for k, v in got.items()}


@pytest.mark.parametrize("affine", AFFINE)
@pytest.mark.parametrize("shape,norm_shape", SHAPES, ids=str)
def test_layer_norm_bits(shape, norm_shape, affine):
    for seed in (0, 1):
        a = _inputs(shape, norm_shape, seed)
        ours = _run(adcompile, a, norm_shape, affine)
        want = _run(torch, a, norm_shape, affine)
        assert ours.keys() == want.keys()
        for name, value in want.items():
            differ = int((ours[name] != value).sum())
            assert differ == 0, f"{name}: {differ} of {value.size} elements differ (seed {seed})"


# 600 and 1100: five and nine runs, whose cascades fold levels that were emptied on the way
STATISTICS_N = [16, 7, 33, 300, 600, 1100, 4100]


@pytest.mark.parametrize("route", ["moments", "numpy_moments"])
@pytest.mark.parametrize("n", STATISTICS_N)
def test_layer_norm_statistics_bits(n, route):
    """The saved mean and 1 / std (the kernel's own outputs) are PyTorch's, from the compiled
    kernel (runtime/simd_layer_norm.py, where llvmlite is at hand) and from the numpy one."""
    from runtime.rules import layer_norm_cpu

    x = _inputs((64, n), (n,), 2)["x"]
    _, mean, rstd = torch.native_layer_norm(torch.from_numpy(x), (n,), None, None, 1e-5)
    ours = getattr(layer_norm_cpu, route)(x, 1e-5)
    np.testing.assert_array_equal(ours[0].view(np.uint32), mean.numpy().reshape(-1).view(np.uint32))
    np.testing.assert_array_equal(ours[1].view(np.uint32), rstd.numpy().reshape(-1).view(np.uint32))


def test_layer_norm_module_double_backward():
    """The exact kernels answer on numpy only: a gradient of a gradient still records the
    rule's formula (close to PyTorch, not bit-equal)."""
    results = []
    for lib in (adcompile, torch):
        lib.manual_seed(0)
        norm = lib.nn.LayerNorm(12)
        x = lib.randn(3, 12, requires_grad=True)
        (g,) = lib.autograd.grad((norm(x) ** 3).sum(), x, create_graph=True)
        g.sum().backward()
        results.append((g.detach().numpy(), x.grad.numpy()))
    for ours, want in zip(*results):
        np.testing.assert_allclose(ours, want, rtol=1e-4, atol=1e-5)

"""Batch norm on float32 agrees with PyTorch 2.13's CPU kernel (one thread) to the bit: the
output, the saved statistics' effect on the running mean and variance, and the gradients of
the input, weight and bias, in training and eval mode, with and without affine parameters, on
a table of shapes chosen to cover each summation path of runtime/rules/batch_norm_cpu.py
(planes shorter than a vector, whole vectors, a partial last vector; one value per image, with
channels that fill whole vectors and a remainder)."""

import numpy as np
import pytest
import torch

import adcompile



pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tests/conftest.py


SHAPES = [
    (32, 8, 26, 26),  # the example CNN's first batch norm: 84 vectors and a 4-lane tail
    (32, 16, 13, 13),  # its second
    (4, 3, 5, 5),  # one vector and a tail
    (8, 6, 3, 3),  # one vector and one lane
    (2, 5, 7),  # a plane shorter than a vector
    (64, 8, 4, 4),  # exactly two vectors
    (3, 2, 17, 19),
    (7, 2, 33),
    (3, 4, 8, 8),
    (16, 4),  # one value per image: channels in the remainder only
    (32, 10),  # one whole vector of channels and a remainder
    (64, 20),
    (5, 3, 1, 1),
    (4, 17, 1),
]
MODES = [(True, True), (True, False), (False, True), (False, False)]  # (training, affine)


def _inputs(shape, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * rng.uniform(0.1, 3) + rng.uniform(-2, 2)
    c = shape[1]
    arrays = dict(x=x, w=rng.standard_normal(c), b=rng.standard_normal(c),
                  g=rng.standard_normal(shape), rm=rng.standard_normal(c),
                  rv=rng.uniform(0.5, 2, c))
    return {k: v.astype(np.float32) for k, v in arrays.items()}


def _run(lib, a, training, affine, momentum):
    x = lib.tensor(a["x"], requires_grad=True)
    w = lib.nn.Parameter(lib.tensor(a["w"])) if affine else None
    b = lib.nn.Parameter(lib.tensor(a["b"])) if affine else None
    rm, rv = lib.tensor(a["rm"].copy()), lib.tensor(a["rv"].copy())
    out = lib.nn.functional.batch_norm(x, rm, rv, w, b, training, momentum, 1e-5)
    out.backward(lib.tensor(a["g"]))
    got = dict(out=out.detach(), running_mean=rm, running_var=rv, x_bar=x.grad)
    if affine:
        got.update(w_bar=w.grad, b_bar=b.grad)
    return {k: v.numpy() for k, v in got.items()}


@pytest.mark.parametrize("training,affine", MODES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_batch_norm_bits(shape, training, affine):
    for seed, momentum in ((0, 0.1), (1, 0.37)):
        a = _inputs(shape, seed)
        ours = _run(adcompile, a, training, affine, momentum)
        want = _run(torch, a, training, affine, momentum)
        for name, value in want.items():
            differ = int((ours[name] != value).sum())
            assert differ == 0, f"{name}: {differ} of {value.size} elements differ (seed {seed})"


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_module_steps_bits(momentum):
    """Three training steps of a BatchNorm2d module (running averages carried, and the
    cumulative average of momentum=None), then one in eval mode."""
    results = []
    for lib in (adcompile, torch):
        bn = lib.nn.BatchNorm2d(6, momentum=momentum)
        seen = []
        for step in range(4):
            bn.train(step < 3)
            a = _inputs((8, 6, 5, 5), 10 + step)
            x = lib.tensor(a["x"], requires_grad=True)
            out = bn(x)
            out.backward(lib.tensor(a["g"]))
            seen += [out.detach().numpy(), x.grad.numpy(), bn.running_mean.numpy().copy(),
                     bn.running_var.numpy().copy(), bn.weight.grad.numpy().copy()]
        results.append(seen)
    for ours, want in zip(*results):
        np.testing.assert_array_equal(ours, want)

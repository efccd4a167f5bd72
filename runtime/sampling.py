"""Sampling functions over tensors: `torch.normal` (its four overloads) and `torch.bernoulli`.

They draw from `runtime.random`'s generator in PyTorch's order, so after the same seed they
return PyTorch's numbers:
- normal with a tensor mean or std fills a fresh contiguous result with N(0, 1) (N(0, std)
  when only the mean is a tensor), then multiplies by std and adds the mean in place, as
  PyTorch's CPU kernel does;
- bernoulli(p) draws one uniform per element in memory order (24-bit float uniforms, 53-bit
  ones when p is float64) and returns u < p in p's dtype.
Tensor parameters get zero gradients (nodes NormalBackward1/2/3, BernoulliBackward0).

bernoulli with a number p (and Tensor.bernoulli_(p)) is left out: PyTorch's CPU build draws
it through MKL's stream generator, which this module does not reproduce.
"""

import numpy as np

from runtime import random
from runtime.autograd_meta import any_requires_grad, record
from runtime.creation import _finish, _shape, check_device
from runtime.ops._core import get_default_dtype, is_tensor, wrap
from runtime.ops._family import node

_NORMAL_NODES = {(True, False): node("NormalBackward1", "sampled"),
                 (False, True): node("NormalBackward2", "sampled"),
                 (True, True): node("NormalBackward3", "sampled")}
BernoulliBackward0 = node("BernoulliBackward0", "sampled")


def _check_float(t, name):
    if t._dtype.category != 2:
        raise NotImplementedError(f"{name}() samples floating-point tensors only, not {t._dtype}")


def _normal_tensors(mean, std, generator):
    like = mean if is_tensor(mean) else std
    _check_float(like, "normal")
    shape = np.broadcast_shapes(*(t._data.shape for t in (mean, std) if is_tensor(t)))
    data = np.empty(shape, like._dtype.np)
    scale = 1.0 if is_tensor(std) else std
    random.normal_(data, 0.0, scale, generator=generator)
    if is_tensor(std):
        if (std._data < 0).any():
            raise RuntimeError("normal() needs every std to be >= 0")
        data *= std._data
    data += mean._data if is_tensor(mean) else like._dtype.np.type(mean)
    return wrap(data, like._dtype)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):
    """Samples of N(mean, std**2): numbers with a `size`, or tensors broadcast together."""
    if not (is_tensor(mean) or is_tensor(std)):
        if size is None:
            raise TypeError("normal() with a number mean and std needs a size")
        check_device(device)
        dt = dtype or get_default_dtype()
        data = random.normal_(np.empty(_shape((size,)), dt.np), mean, std, generator)
        return _finish(wrap(data, dt), requires_grad)
    out = _normal_tensors(mean, std, generator)
    inputs = tuple(t for t in (mean, std) if is_tensor(t))
    if any_requires_grad(inputs):
        record(_NORMAL_NODES[is_tensor(mean), is_tensor(std)], inputs, out)
    return out


def bernoulli(input, p=None, *, generator=None):
    """0/1 samples, 1 with probability input[i] (in input's dtype)."""
    if p is not None:
        raise NotImplementedError("bernoulli() with a number p is not reproduced (PyTorch "
                                  "draws it through MKL); pass the probabilities as a tensor")
    _check_float(input, "bernoulli")
    probs = np.ascontiguousarray(input._data)
    draw = np.float64 if probs.dtype == np.float64 else np.float32
    u = random.rand(probs.shape, draw, generator=generator)
    out = wrap((u < probs).astype(probs.dtype), input._dtype)
    if any_requires_grad((input,)):
        record(BernoulliBackward0, (input,), out)
    return out


FUNCTIONS = {"normal": normal, "bernoulli": bernoulli}

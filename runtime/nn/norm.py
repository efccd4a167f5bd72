"""Normalisation layers: BatchNorm1d/2d, LayerNorm, GroupNorm (functional forms and modules).

Composed from differentiable eager ops (mean, variance, rsqrt, affine), so gradients and
double backward come from the shared rules; the graph therefore shows the composed nodes,
not PyTorch's fused Native*NormBackward0. Running statistics follow PyTorch: the running
variance uses the unbiased batch variance, num_batches_tracked counts training steps, and
momentum=None means a cumulative average.
"""

import numpy as np

from runtime import dtypes
from runtime import ops as F
from runtime.grad_mode import no_grad
from runtime.nn.modules import Module, Parameter
from runtime.ops._core import wrap
from runtime.tensor import Tensor


def _normalize(x, dims, eps):
    mean = F.mean(x, dims, keepdim=True)
    centered = F.sub(x, mean)
    var = F.mean(F.mul(centered, centered), dims, keepdim=True)
    return F.mul(centered, F.rsqrt(F.add(var, eps))), mean, var


def _affine(y, weight, bias, shape):
    if weight is not None:
        y = F.mul(y, F.reshape(weight, shape))
    if bias is not None:
        y = F.add(y, F.reshape(bias, shape))
    return y


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    x = input
    if x._data.ndim < 2:
        raise ValueError(f"batch_norm expects at least a 2-d input, got shape "
                         f"{list(x._data.shape)}")
    dims = (0,) + tuple(range(2, x._data.ndim))
    shape = (1, -1) + (1,) * (x._data.ndim - 2)
    if not training:
        mean = F.reshape(running_mean, shape)
        inv = F.rsqrt(F.add(F.reshape(running_var, shape), eps))
        return _affine(F.mul(F.sub(x, mean), inv), weight, bias, shape)
    count = x._data.size // x._data.shape[1]
    if count <= 1:
        raise ValueError(f"batch_norm in training needs more than one value per channel, got "
                         f"input of shape {list(x._data.shape)}")
    y, mean, var = _normalize(x, dims, eps)
    if running_mean is not None:
        with no_grad():
            running_mean.mul_(1 - momentum).add_(F.reshape(mean, (-1,)), alpha=momentum)
            unbiased = F.mul(F.reshape(var, (-1,)), count / (count - 1))
            running_var.mul_(1 - momentum).add_(unbiased, alpha=momentum)
    return _affine(y, weight, bias, shape)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    shape = tuple(normalized_shape) if not isinstance(normalized_shape, int) \
        else (normalized_shape,)
    if tuple(input._data.shape[-len(shape):]) != shape:
        raise RuntimeError(f"layer_norm: input shape {list(input._data.shape)} does not end "
                           f"with normalized_shape {list(shape)}")
    dims = tuple(range(-len(shape), 0))
    y, _, _ = _normalize(input, dims, eps)
    return _affine(y, weight, bias, shape)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    n, c = input._data.shape[:2]
    if c % num_groups:
        raise RuntimeError(f"group_norm: {c} channels are not divisible into {num_groups} "
                           "groups")
    grouped = F.reshape(input, (n, num_groups, -1))
    y, _, _ = _normalize(grouped, (2,), eps)
    y = F.reshape(y, input._data.shape)
    return _affine(y, weight, bias, (1, -1) + (1,) * (input._data.ndim - 2))


def _param(shape, fill):
    dt = F.get_default_dtype()
    return Parameter(Tensor._wrap(np.full(shape, fill, dt.np), dt))


def _buffer(shape, fill, np_dtype=None):
    dt = F.get_default_dtype() if np_dtype is None else dtypes.from_numpy(np.dtype(np_dtype))
    return wrap(np.full(shape, fill, dt.np), dt)


class _BatchNorm(Module):
    _dims = (2,)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight, self.bias = _param((num_features,), 1.0), _param((num_features,), 0.0)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _buffer((num_features,), 0.0))
            self.register_buffer("running_var", _buffer((num_features,), 1.0))
            self.register_buffer("num_batches_tracked", _buffer((), 0, np.int64))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def forward(self, input):
        if input._data.ndim not in self._dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._dims)} input "
                             f"(got {input._data.ndim}D input)")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked._data = self.num_batches_tracked._data + 1
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked._data)
        use_batch = self.training or self.running_mean is None
        stats = (None, None) if self.training and not self.track_running_stats else \
            (self.running_mean, self.running_var)
        return batch_norm(input, *stats, self.weight, self.bias, use_batch, momentum, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    _dims = (4,)


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) \
            else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.elementwise_affine = elementwise_affine
        self.weight = _param(shape, 1.0) if elementwise_affine else None
        self.bias = _param(shape, 0.0) if elementwise_affine and bias else None
        for name in ("weight", "bias"):
            if getattr(self, name) is None:
                self.register_parameter(name, None)

    def forward(self, input):
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = (num_groups, num_channels,
                                                                     eps, affine)
        if affine:
            self.weight = _param((num_channels,), 1.0)
            self.bias = _param((num_channels,), 0.0)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.affine}")

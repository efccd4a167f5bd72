"""Normalisation layers: BatchNorm1d/2d, LayerNorm, GroupNorm (functional forms and modules).

Each functional form computes on numpy and records one node, named as PyTorch's
(NativeBatchNormBackward0, NativeLayerNormBackward0, NativeGroupNormBackward0), whose
derivative is written once in runtime/rules/norm.py. Statistics are computed as PyTorch's CPU
kernels compute them (sums accumulated in float64, the output as x * alpha + beta with one
rounding), so float32 results mostly agree to the bit. Running statistics follow PyTorch: the
running variance uses the unbiased batch variance, num_batches_tracked counts training steps,
and momentum=None means a cumulative average.
"""

import numpy as np

from runtime import dtypes
from runtime import ops as F
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class, save_input
from runtime.grad_mode import no_grad
from runtime.nn.modules import Module, Parameter
from runtime.ops._core import wrap
from runtime.rules import batch_norm_cpu as bn_cpu
from runtime.rules import layer_norm_cpu as ln_cpu
from runtime.tensor import Tensor

NativeBatchNormBackward0 = node_class("NativeBatchNormBackward0", "native_batch_norm")
NativeLayerNormBackward0 = node_class("NativeLayerNormBackward0", "native_layer_norm")
NativeGroupNormBackward0 = node_class("NativeGroupNormBackward0", "native_group_norm")


def _wide_sum(x, axes):
    return np.sum(x, axis=axes, dtype=np.float64, keepdims=True)


def _moments(xd, axes, count, eps):
    """(mean, invstd, biased variance) over `axes`, as PyTorch's CPU kernel gets them: a
    float64 two-pass variance rounded to the input's dtype, then invstd from that in float64."""
    mean = _wide_sum(xd, axes) / count
    centered = np.subtract(xd, mean, dtype=np.float64)
    np.square(centered, out=centered)
    var = (_wide_sum(centered, axes) / count).astype(xd.dtype)
    invstd = (1.0 / np.sqrt(var.astype(np.float64) + eps)).astype(xd.dtype)
    return mean.astype(xd.dtype), invstd, var


def _scale_shift(xd, alpha, beta):
    """x * alpha + beta, rounded once for float32 as PyTorch's fused multiply-add does (the
    float64 product of two float32 values is exact)."""
    if xd.dtype == np.float32:
        wide = np.multiply(xd, alpha, dtype=np.float64)
        wide += beta
        return wide.astype(np.float32)
    return xd * alpha + beta


def _data(t, shape=None):
    return None if t is None else (t._data if shape is None else t._data.reshape(shape))


def _record(cls, out, x, weight, bias, stats, geom):
    if any_requires_grad((x, weight, bias)):
        w = None if weight is None else save_input(weight)
        record(cls, (x, weight, bias), out, (save_input(x), w, stats, geom))
    return out


def _exact(xd):
    """Whether PyTorch's float32 batch-norm kernel is reproduced to the bit for this input
    (runtime/rules/batch_norm_cpu.py); other inputs take the float64 route below."""
    return xd.dtype == np.float32 and xd.flags.c_contiguous


def _update_running(running_mean, running_var, mean, var, count, momentum):
    with no_grad():
        running_mean.mul_(1 - momentum).add_(wrap(mean.reshape(-1), None), alpha=momentum)
        unbiased = (var.reshape(-1).astype(np.float64) * (count / (count - 1))).astype(var.dtype)
        running_var.mul_(1 - momentum).add_(wrap(unbiased, None), alpha=momentum)


def _update_running_exact(running_mean, running_var, mean, var_sum, count, momentum):
    new_mean, new_var = bn_cpu.update_running(running_mean._data, running_var._data, mean,
                                              var_sum, count, momentum)
    with no_grad():
        running_mean.copy_(wrap(new_mean, None))
        running_var.copy_(wrap(new_var, None))


def _eval_stats(running_mean, running_var, pshape, eps):
    """(mean, invstd for the output, invstd for the gradients): PyTorch's forward kernel takes
    the square root in the input's dtype, its backward kernel in float64."""
    rv = running_var._data.reshape(pshape)
    invstd = (np.asarray(1, rv.dtype) / np.sqrt(rv + np.asarray(eps, rv.dtype)))
    wide = (1.0 / np.sqrt(rv.astype(np.float64) + eps)).astype(rv.dtype)
    return running_mean._data.reshape(pshape), invstd, wide


def _train_stats_exact(xd, running_mean, running_var, pshape, count, momentum, eps):
    mean, invstd, var_sum = bn_cpu.forward_stats(xd, eps)
    if running_mean is not None:
        _update_running_exact(running_mean, running_var, mean, var_sum, count, momentum)
    return mean.reshape(pshape), invstd.reshape(pshape)


def _train_stats(xd, running_mean, running_var, pshape, count, momentum, eps):
    if _exact(xd):
        return _train_stats_exact(xd, running_mean, running_var, pshape, count, momentum, eps)
    axes = (0,) + tuple(range(2, xd.ndim))
    mean, invstd, var = _moments(xd, axes, count, eps)
    if running_mean is not None:
        _update_running(running_mean, running_var, mean, var, count, momentum)
    return mean, invstd


def _output(xd, mean, invstd, weight, bias, pshape):
    if _exact(xd):
        return bn_cpu.affine(xd, mean.reshape(-1), invstd.reshape(-1), _data(weight),
                             _data(bias))
    alpha = invstd if weight is None else invstd * _data(weight, pshape)
    beta = -(mean * alpha) if bias is None else _scale_shift(-mean, alpha, _data(bias, pshape))
    return _scale_shift(xd, alpha, beta)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    x = input
    xd = x._data
    if xd.ndim < 2:
        raise ValueError(f"batch_norm expects at least a 2-d input, got shape {list(xd.shape)}")
    pshape = (1, -1) + (1,) * (xd.ndim - 2)
    count = xd.size // xd.shape[1]
    if training:
        if count <= 1:
            raise ValueError(f"batch_norm in training needs more than one value per channel, "
                             f"got input of shape {list(xd.shape)}")
        mean, invstd = _train_stats(xd, running_mean, running_var, pshape, count, momentum, eps)
        saved = (mean, invstd)
    else:
        mean, invstd, grad_invstd = _eval_stats(running_mean, running_var, pshape, eps)
        saved = (mean, grad_invstd)
    out = wrap(_output(xd, mean, invstd, weight, bias, pshape), x._dtype)
    axes = (0,) + tuple(range(2, xd.ndim))
    geom = (axes, (1, xd.shape[1]) + (1,) * (xd.ndim - 2), count, eps, bool(training))
    return _record(NativeBatchNormBackward0, out, x, weight, bias, saved, geom)


def _affine_data(yd, weight, bias, shape):
    if weight is not None:
        yd = yd * _data(weight, shape) if bias is None else \
            _scale_shift(yd, _data(weight, shape), _data(bias, shape))
    elif bias is not None:
        yd = yd + _data(bias, shape)
    return yd


def _params_exact(weight, bias):
    return all(p is None or p._data.dtype == np.float32 for p in (weight, bias))


def _layer_norm_exact(xd, count, weight, bias, eps, dims):
    """(mean, invstd, output) by PyTorch's float32 kernel (runtime/rules/layer_norm_cpu.py),
    the statistics shaped to broadcast against the input (`dims` normalised axes)."""
    rows = xd.reshape(-1, count)
    mean, rstd = ln_cpu.moments(rows, eps)
    yd = ln_cpu.forward(rows, mean, rstd, _flat(weight), _flat(bias))
    stat_shape = xd.shape[:xd.ndim - dims] + (1,) * dims
    return mean.reshape(stat_shape), rstd.reshape(stat_shape), yd.reshape(xd.shape)


def _flat(p):
    return None if p is None else np.ascontiguousarray(p._data).reshape(-1)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    shape = tuple(normalized_shape) if not isinstance(normalized_shape, int) \
        else (normalized_shape,)
    xd = input._data
    if tuple(xd.shape[-len(shape):]) != shape:
        raise RuntimeError(f"layer_norm: input shape {list(xd.shape)} does not end "
                           f"with normalized_shape {list(shape)}")
    axes = tuple(range(xd.ndim - len(shape), xd.ndim))
    count = int(np.prod(shape))
    if ln_cpu.applies(xd, count) and _params_exact(weight, bias):
        mean, invstd, yd = _layer_norm_exact(xd, count, weight, bias, eps, len(shape))
    else:
        mean, invstd, _ = _moments(xd, axes, count, eps)
        yd = _affine_data(_scale_shift(xd, invstd, -(invstd * mean)), weight, bias, shape)
    geom = (axes, tuple(range(xd.ndim - len(shape))), count, eps)
    return _record(NativeLayerNormBackward0, wrap(yd, input._dtype), input, weight, bias,
                   (mean, invstd), geom)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    xd = input._data
    n, c = xd.shape[:2]
    if c % num_groups:
        raise RuntimeError(f"group_norm: {c} channels are not divisible into {num_groups} "
                           "groups")
    grouped = (n, num_groups, -1)
    xg = xd.reshape(grouped)
    count = xg.shape[2]
    mean, invstd, _ = _moments(xg, (2,), count, eps)
    pshape = (1, -1) + (1,) * (xd.ndim - 2)
    yd = _scale_shift(xg, invstd, -(invstd * mean)).reshape(xd.shape)
    yd = _affine_data(yd, weight, bias, pshape)
    geom = (grouped, pshape, count, eps)
    return _record(NativeGroupNormBackward0, wrap(yd, input._dtype), input, weight, bias,
                   (mean, invstd), geom)


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

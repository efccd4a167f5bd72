"""Convolutions: F.conv1d / F.conv2d and the Conv1d / Conv2d modules.

The forward pass is im2col + one batched matmul on numpy; the graph gets one
ConvolutionBackward0 node (inputs: input, weight, bias) whose rule is in runtime/rules/conv.py.
Parameters are initialised as PyTorch does (kaiming-uniform weight, uniform bias in
+-1/sqrt(fan_in)), drawing the same random numbers for the same manual_seed.
"""

import numpy as np

from runtime import ops as F
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class, save_input
from runtime.nn.modules import Module, Parameter
from runtime.ops._core import wrap
from runtime.rules.conv import im2col_array, out_size
from runtime.tensor import Tensor

ConvolutionBackward0 = node_class("ConvolutionBackward0", "convolution")


def ntuple(value, n, name="argument"):
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    if len(value) != n or not all(isinstance(v, int) for v in value):
        raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {value}")
    return value


def _padding(padding, kernel, dilation, n):
    if padding == "valid":
        return (0,) * n
    if padding == "same":
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        if any(t % 2 for t in total):
            raise NotImplementedError("padding='same' with an even receptive field (uneven "
                                      "padding) is not supported")
        return tuple(t // 2 for t in total)
    return ntuple(padding, n, "padding")


def geometry(kernel, stride, padding, dilation, groups, n):
    """The (kernel, stride, padding, dilation, groups, ndim) tuple of rules/conv.py, with the
    1-d case lifted to a height-1 2-d convolution."""
    lift = (lambda t, fill: (fill,) + t) if n == 1 else (lambda t, fill: t)
    return (lift(kernel, 1), lift(stride, 1), lift(padding, 0), lift(dilation, 1), groups, n)


def _check_conv(x, w, groups, n):
    if x._data.ndim != n + 2:
        raise RuntimeError(f"conv{n}d expects a batched {n + 2}-d input, got shape "
                           f"{list(x._data.shape)}")
    if x._data.shape[1] != w._data.shape[1] * groups:
        raise RuntimeError(f"conv{n}d: input has {x._data.shape[1]} channels but weight "
                           f"{list(w._data.shape)} with groups={groups} expects "
                           f"{w._data.shape[1] * groups}")
    if w._data.shape[0] % groups:
        raise RuntimeError("conv: out_channels must be divisible by groups")


def convolution(x, w, bias, stride, padding, dilation, groups, n):
    """The n-d convolution (cross-correlation) of a batched input, as torch.convolution; an
    unbatched input is given a batch of one and taken out of it again, as PyTorch does."""
    if x._data.ndim == n + 1:
        one = F.unsqueeze(x, 0)
        return F.squeeze(convolution(one, w, bias, stride, padding, dilation, groups, n), 0)
    _check_conv(x, w, groups, n)
    kernel = w._data.shape[2:]
    stride, dilation = ntuple(stride, n, "stride"), ntuple(dilation, n, "dilation")
    padding = _padding(padding, kernel, dilation, n)
    geom = geometry(tuple(kernel), stride, padding, dilation, groups, n)
    dt = F.result_dtype(x, w)
    cols = im2col_array(x._data.astype(dt.np, copy=False), geom)
    w2 = w._data.astype(dt.np, copy=False).reshape(groups, w._data.shape[0] // groups, -1)
    spatial = [out_size(s, k, st, p, d) for s, k, st, p, d in
               zip(x._data.shape[2:], kernel, stride, padding, dilation)]
    data = np.matmul(w2, cols).reshape([x._data.shape[0], w._data.shape[0]] + spatial)
    if bias is not None:
        data = data + bias._data.astype(dt.np).reshape((-1,) + (1,) * n)
    out = wrap(data, dt)
    if any_requires_grad((x, w, bias)):
        record(ConvolutionBackward0, (x, w, bias), out,
               (save_input(x), save_input(w), geom, bias is not None))
    return out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return convolution(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return convolution(input, weight, bias, stride, padding, dilation, groups, 2)


class _ConvNd(Module):
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__()
        n = self._n
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups > 0")
        if padding_mode != "zeros":
            raise NotImplementedError(f"padding_mode={padding_mode!r} is not supported")
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"padding must be 'same', 'valid' or numbers, got {padding!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = ntuple(kernel_size, n, "kernel_size")
        self.stride = ntuple(stride, n, "stride")
        self.padding = padding if isinstance(padding, str) else ntuple(padding, n, "padding")
        self.dilation = ntuple(dilation, n, "dilation")
        self.groups, self.padding_mode = groups, padding_mode
        dt = dtype or F.get_default_dtype()
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(Tensor._wrap(np.empty(shape, dt.np), dt))
        if bias:
            self.bias = Parameter(Tensor._wrap(np.empty((out_channels,), dt.np), dt))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        from runtime.nn import init

        init.default_layer_init_(self.weight, self.bias, self.weight._data[0].size)

    def forward(self, input):
        return convolution(input, self.weight, self.bias, self.stride, self.padding,
                           self.dilation, self.groups, self._n)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        zero = "valid" if isinstance(self.padding, str) else (0,) * self._n
        if self.padding != zero:
            s += f", padding={self.padding}"
        s += f", dilation={self.dilation}" if self.dilation != (1,) * self._n else ""
        s += f", groups={self.groups}" if self.groups != 1 else ""
        s += ", bias=False" if self.bias is None else ""
        return s


class Conv1d(_ConvNd):
    _n = 1


class Conv2d(_ConvNd):
    _n = 2

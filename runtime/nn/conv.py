"""Convolutions: F.conv1d / conv2d / conv_transpose1d / conv_transpose2d and their modules.

The forward pass is im2col + one batched matmul on numpy (a transposed convolution is the
matmul with the weight's transpose followed by col2im), the patches' rows and the weight's
columns in (kernel row, kernel column, channel) order, which makes sgemm add the products in
the order of PyTorch's oneDNN kernel (runtime/rules/conv.py); the graph gets one
ConvolutionBackward0 node (inputs: input, weight, bias), as PyTorch's, whose rules
("convolution", "convolution_transpose") are in runtime/rules/conv.py.
Parameters are initialised as PyTorch does (kaiming-uniform weight, uniform bias in
+-1/sqrt(fan_in)), drawing the same random numbers for the same manual_seed.
"""

import math

import numpy as np

from runtime import ops as F
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class, save_input
from runtime.nn.modules import Module, Parameter
from runtime.nn.padding import pad
from runtime.ops._core import wrap
from runtime.ops._family import node
from runtime.rules.conv import col2im_array, im2col_array, out_size
from runtime.tensor import Tensor

ConvolutionBackward0 = node_class("ConvolutionBackward0", "convolution")
# PyTorch gives transposed convolutions the same node name; the rule is the transpose's
TransposedConvolutionBackward0 = node("ConvolutionBackward0", "convolution_transpose")


def ntuple(value, n, name="argument"):
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    if len(value) != n or not all(isinstance(v, int) for v in value):
        raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {value}")
    return value


def _padding(padding, kernel, stride, dilation, n):
    """(symmetric padding, extra padding after the input) per spatial axis. padding='same'
    puts the odd one of an odd total after the input, as PyTorch does."""
    if padding == "valid":
        return (0,) * n, (0,) * n
    if padding == "same":
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' needs stride 1 on every axis")
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple(t // 2 for t in total), tuple(t % 2 for t in total)
    return ntuple(padding, n, "padding"), (0,) * n


def _reversed_pairs(before, after):
    """F.pad's list (last axis first) for per-axis padding before and after the input."""
    return [p for b, a in zip(reversed(before), reversed(after)) for p in (b, a)]


def geometry(kernel, stride, padding, dilation, groups, n):
    """The (kernel, stride, padding, dilation, groups, ndim) tuple of rules/conv.py, with the
    1-d case lifted to a height-1 2-d convolution."""
    lift = (lambda t, fill: (fill,) + t) if n == 1 else (lambda t, fill: t)
    return (lift(kernel, 1), lift(stride, 1), lift(padding, 0), lift(dilation, 1), groups, n)


def _channels_last(w):
    """(O, C/G, *K) -> (O, *K, C/G), the row order of rules/conv.py's patches."""
    return np.moveaxis(w, 1, -1)


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
    padding, extra = _padding(padding, kernel, stride, dilation, n)
    if any(extra):
        x = pad(x, _reversed_pairs((0,) * n, extra))
    geom = geometry(tuple(kernel), stride, padding, dilation, groups, n)
    dt = F.result_dtype(x, w)
    cols = im2col_array(x._data.astype(dt.np, copy=False), geom)
    w2 = _channels_last(w._data.astype(dt.np, copy=False)).reshape(
        groups, w._data.shape[0] // groups, -1)
    spatial = [out_size(s, k, st, p, d) for s, k, st, p, d in
               zip(x._data.shape[2:], kernel, stride, padding, dilation)]
    data = np.matmul(w2, cols).reshape([x._data.shape[0], w._data.shape[0]] + spatial)
    if bias is not None:  # in place, the bias spread over an output plane (numpy adds that
        # ~1.6x faster than a broadcast (O, 1, 1))
        b = bias._data.astype(dt.np).reshape(-1, 1)
        np.add(data, np.repeat(b, math.prod(spatial), axis=1).reshape(data.shape[1:]), out=data)
    out = wrap(data, dt)
    if any_requires_grad((x, w, bias)):
        kept = cols if w._requires_grad or w._grad_fn is not None else None
        record(ConvolutionBackward0, (x, w, bias), out,
               (save_input(x), save_input(w), geom, bias is not None, kept))
    return out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return convolution(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return convolution(input, weight, bias, stride, padding, dilation, groups, 2)


def _check_transposed(x, w, groups, n):
    if x._data.ndim != n + 2:
        raise RuntimeError(f"conv_transpose{n}d expects a batched {n + 2}-d input, got shape "
                           f"{list(x._data.shape)}")
    if x._data.shape[1] != w._data.shape[0] or w._data.shape[0] % groups:
        raise RuntimeError(f"conv_transpose{n}d: input has {x._data.shape[1]} channels but "
                           f"weight {list(w._data.shape)} expects {w._data.shape[0]} "
                           f"(divisible by groups={groups})")


def transposed_size(size, k, s, p, d, extra):
    """The output length of a transposed convolution along one axis."""
    return (size - 1) * s - 2 * p + d * (k - 1) + extra + 1


def convolution_transpose(x, w, bias, stride, padding, output_padding, groups, dilation, n):
    """The n-d transposed convolution: the adjoint of convolution with the same geometry."""
    _check_transposed(x, w, groups, n)
    kernel = tuple(w._data.shape[2:])
    stride, dilation = ntuple(stride, n, "stride"), ntuple(dilation, n, "dilation")
    padding, extra = ntuple(padding, n, "padding"), ntuple(output_padding, n, "output_padding")
    if any(e >= max(s, d) for e, s, d in zip(extra, stride, dilation)):
        raise RuntimeError("output_padding must be smaller than either stride or dilation")
    geom = geometry(kernel, stride, padding, dilation, groups, n)
    dt = F.result_dtype(x, w)
    batch, c_in = x._data.shape[:2]
    x2 = x._data.astype(dt.np, copy=False).reshape(batch, groups, c_in // groups, -1)
    w2 = _channels_last(w._data.astype(dt.np, copy=False)).reshape(groups, c_in // groups, -1)
    spatial = [transposed_size(*a) for a in zip(x._data.shape[2:], kernel, stride, padding,
                                                 dilation, extra)]
    out_shape = (batch, w._data.shape[1] * groups, *spatial)
    data = col2im_array(np.matmul(w2.transpose(0, 2, 1), x2), out_shape, geom)
    if bias is not None:  # in place, the bias spread over an output plane (numpy adds that
        # ~1.6x faster than a broadcast (O, 1, 1))
        b = bias._data.astype(dt.np).reshape(-1, 1)
        np.add(data, np.repeat(b, math.prod(spatial), axis=1).reshape(data.shape[1:]), out=data)
    out = wrap(data, dt)
    if any_requires_grad((x, w, bias)):
        record(TransposedConvolutionBackward0, (x, w, bias), out,
               (save_input(x), save_input(w), geom, bias is not None))
    return out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return convolution_transpose(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation, 1)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return convolution_transpose(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation, 2)


_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _check_modes(padding, stride, padding_mode, transposed, name):
    """The module-time checks on padding and padding_mode (ValueError, as PyTorch's)."""
    if isinstance(padding, str) and padding not in ("same", "valid"):
        raise ValueError(f"padding must be 'same', 'valid' or numbers, got {padding!r}")
    if padding == "same" and any(s != 1 for s in np.atleast_1d(stride)):
        raise ValueError("padding='same' needs stride 1 on every axis")
    if padding_mode not in _PADDING_MODES:
        raise ValueError(f"padding_mode must be one of {', '.join(_PADDING_MODES)}; got "
                         f"{padding_mode!r}")
    if transposed and padding_mode != "zeros":
        raise ValueError(f"{name} pads with zeros only (padding_mode='zeros')")


class _ConvNd(Module):
    _n = 2
    transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__()
        n = self._n
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups > 0")
        _check_modes(padding, stride, padding_mode, self.transposed, type(self).__name__)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = ntuple(kernel_size, n, "kernel_size")
        self.stride = ntuple(stride, n, "stride")
        self.padding = padding if isinstance(padding, str) else ntuple(padding, n, "padding")
        self.dilation = ntuple(dilation, n, "dilation")
        self.groups, self.padding_mode = groups, padding_mode
        if padding_mode != "zeros":
            before, after = _padding(self.padding, self.kernel_size, self.stride,
                                     self.dilation, n)
            after = tuple(b + a for b, a in zip(before, after))
            self._reversed_padding_repeated_twice = _reversed_pairs(before, after)
        self.output_padding = (0,) * n
        dt = dtype or F.get_default_dtype()
        channels = (in_channels, out_channels // groups) if self.transposed \
            else (out_channels, in_channels // groups)
        shape = channels + self.kernel_size
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
        if self.padding_mode != "zeros":
            input = pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return convolution(input, self.weight, self.bias, self.stride, 0, self.dilation,
                               self.groups, self._n)
        return convolution(input, self.weight, self.bias, self.stride, self.padding,
                           self.dilation, self.groups, self._n)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding}"
        s += f", dilation={self.dilation}" if self.dilation != (1,) * self._n else ""
        if self.output_padding != (0,) * self._n:
            s += f", output_padding={self.output_padding}"
        s += f", groups={self.groups}" if self.groups != 1 else ""
        s += ", bias=False" if self.bias is None else ""
        s += f", padding_mode={self.padding_mode}" if self.padding_mode != "zeros" else ""
        return s


class Conv1d(_ConvNd):
    _n = 1


class Conv2d(_ConvNd):
    _n = 2


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if isinstance(padding, str):
            raise ValueError("transposed convolutions take numeric padding only")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)
        self.output_padding = ntuple(output_padding, self._n, "output_padding")

    def _output_padding(self, input, output_size):
        """The output_padding that makes the output `output_size` (its last n entries)."""
        if output_size is None:
            return self.output_padding
        wanted = tuple(output_size)[-self._n:]
        smallest = [transposed_size(s, k, st, p, d, 0) for s, k, st, p, d in
                    zip(input._data.shape[2:], self.kernel_size, self.stride, self.padding,
                        self.dilation)]
        extra = tuple(w - m for w, m in zip(wanted, smallest))
        if any(not 0 <= e < st for e, st in zip(extra, self.stride)):
            raise ValueError(f"requested output size {list(wanted)} is not reachable from "
                             f"input size {list(input._data.shape[2:])}")
        return extra

    def forward(self, input, output_size=None):
        return convolution_transpose(input, self.weight, self.bias, self.stride, self.padding,
                                     self._output_padding(input, output_size), self.groups,
                                     self.dilation, self._n)


class ConvTranspose1d(_ConvTransposeNd):
    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    _n = 2

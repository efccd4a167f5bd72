"""Pooling: max, average and adaptive average pooling (functional forms and modules).

Windows come from the same strided patch view as convolution (runtime/rules/conv.py). 1-d
pooling runs the 2-d kernel on a height-1 view and squeezes, which is also how PyTorch
records it (SqueezeBackward1 over the 2-d node). ceil_mode is not implemented.
"""

import numpy as np

from runtime import ops as F
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class
from runtime.nn.conv import geometry, ntuple
from runtime.nn.modules import Module
from runtime.ops._core import wrap
from runtime.rules.conv import im2col_array, out_size

MaxPool2DWithIndicesBackward0 = node_class("MaxPool2DWithIndicesBackward0", "max_pool")
AvgPool2DBackward0 = node_class("AvgPool2DBackward0", "avg_pool")


def _pool_geom(x, kernel_size, stride, padding, dilation, ceil_mode, n=2):
    if ceil_mode:
        raise NotImplementedError("ceil_mode=True is not supported")
    if x._data.ndim not in (3, 4):
        raise RuntimeError(f"2-d pooling expects a 3-d or 4-d input, got shape "
                           f"{list(x._data.shape)}")
    kernel = ntuple(kernel_size, n, "kernel_size")
    stride = kernel if stride is None or stride == [] else ntuple(stride, n, "stride")
    padding, dilation = ntuple(padding, n, "padding"), ntuple(dilation, n, "dilation")
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise RuntimeError("pad should be at most half of the effective kernel size")
    return geometry(kernel, stride, padding, dilation, 1, 2)


def _batched(x):
    """(C, H, W) inputs are pooled as a batch of one."""
    return x._data if x._data.ndim == 4 else x._data[None]


def _windows(x, geom, oh, ow):
    """A strided view (N, C, OH, OW, kh, kw) of each window's elements (padding reads as
    -inf)."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = geom[:4]
    if ph or pw:
        x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=-np.inf)
    s = x.strides
    view = np.lib.stride_tricks.as_strided(
        x, x.shape[:2] + (oh, ow, kh, kw),
        (s[0], s[1], s[2] * sh, s[3] * sw, s[2] * dh, s[3] * dw), writeable=False)
    return view


def _window_max(windows, with_nan):
    """(max, index of the first maximum in the window) with one pass per window element; a
    NaN wins over any number (np.maximum propagates it), as in PyTorch."""
    kh, kw = windows.shape[-2:]
    best = windows[..., 0, 0].copy()
    pick = np.zeros(best.shape, np.int8 if kh * kw < 128 else np.int64)
    better = np.empty(best.shape, bool)
    for k in range(1, kh * kw):
        v = windows[..., k // kw, k % kw]
        np.greater(v, best, out=better)
        if with_nan:
            better |= np.isnan(v) & ~np.isnan(best)
        np.maximum(best, v, out=best)
        pick = np.where(better, pick.dtype.type(k), pick)
    return best, pick


def _picked_position(pick, geom, oh, ow, w):
    """Index in the unpadded (H * W) plane of each window's picked element."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = geom[:4]
    k = np.arange(kh * kw)
    offset = (k // kw) * dh * w + (k % kw) * dw
    base = (np.arange(oh)[:, None] * sh - ph) * w + np.arange(ow)[None, :] * sw - pw
    return base + np.take(offset, pick)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    geom = _pool_geom(input, kernel_size, stride, padding, dilation, ceil_mode)
    x = _batched(input)
    n, c, h, w = x.shape
    oh = out_size(h, geom[0][0], geom[1][0], geom[2][0], geom[3][0])
    ow = out_size(w, geom[0][1], geom[1][1], geom[2][1], geom[3][1])
    with_nan = x.dtype.kind == "f" and bool(np.isnan(x).any())
    data, pick = _window_max(_windows(x, geom, oh, ow), with_nan)
    plane_index = _picked_position(pick, geom, oh, ow, w)
    data = data if input._data.ndim == 4 else data[0]
    plane_index = plane_index if input._data.ndim == 4 else plane_index[0]
    out = wrap(np.ascontiguousarray(data), input._dtype)
    if any_requires_grad((input,)):
        planes = np.arange(n * c).reshape(n, c, 1, 1) * (h * w)
        flat = (plane_index.reshape((n, c, oh, ow)) + planes).reshape(-1)
        record(MaxPool2DWithIndicesBackward0, (input,), out, (input._data.shape, flat))
    if return_indices:
        return out, wrap(plane_index, None)
    return out


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    if not count_include_pad:
        raise NotImplementedError("count_include_pad=False is not supported")
    geom = _pool_geom(input, kernel_size, stride, padding, 1, ceil_mode)
    x = _batched(input)
    n, c, h, w = x.shape
    divisor = divisor_override or geom[0][0] * geom[0][1]
    oh = out_size(h, geom[0][0], geom[1][0], geom[2][0], 1)
    ow = out_size(w, geom[0][1], geom[1][1], geom[2][1], 1)
    cols = im2col_array(x, geom).reshape(n, c, -1, oh, ow)
    data = (cols.sum(axis=2) / x.dtype.type(divisor)).astype(x.dtype)
    out = wrap(data if input._data.ndim == 4 else data[0], input._dtype)
    if any_requires_grad((input,)):
        record(AvgPool2DBackward0, (input,), out, (input._data.shape, geom, divisor))
    return out


def _as_1d(fn2d, input, kernel_size, stride, padding, *rest):
    k = ntuple(kernel_size, 1, "kernel_size")
    s = k if stride is None or stride == [] else ntuple(stride, 1, "stride")
    out = fn2d(F.unsqueeze(input, -2), (1,) + k, (1,) + s, (0,) + ntuple(padding, 1), *rest)
    if isinstance(out, tuple):
        return F.squeeze(out[0], -2), F.squeeze(out[1], -2)
    return F.squeeze(out, -2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _as_1d(max_pool2d, input, kernel_size, stride, padding,
                  (1,) + ntuple(dilation, 1), ceil_mode, return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    return _as_1d(avg_pool2d, input, kernel_size, stride, padding, ceil_mode,
                  count_include_pad)


def _adaptive_bounds(size, out):
    starts = [(i * size) // out for i in range(out)]
    ends = [-((-(i + 1) * size) // out) for i in range(out)]
    return starts, ends


def adaptive_avg_pool2d(input, output_size):
    """Mean over PyTorch's adaptive windows, composed from slicing means and stacking."""
    h, w = input._data.shape[-2:]
    oh, ow = ntuple(output_size, 2, "output_size") if not isinstance(output_size, int) \
        else (output_size, output_size)
    oh, ow = oh or h, ow or w
    if h % oh == 0 and w % ow == 0:
        return avg_pool2d(input, (h // oh, w // ow))
    rs, re = _adaptive_bounds(h, oh)
    cs, ce = _adaptive_bounds(w, ow)
    rows = []
    for i in range(oh):
        cells = [F.mean(input[..., rs[i]:re[i], cs[j]:ce[j]], (-2, -1)) for j in range(ow)]
        rows.append(F.stack(cells, -1))
    return F.stack(rows, -2)


class _Pool(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_Pool):
    def forward(self, input):
        return max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                          self.ceil_mode, self.return_indices)


class MaxPool2d(_Pool):
    def forward(self, input):
        return max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                          self.ceil_mode, self.return_indices)


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(AvgPool2d):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__(ntuple(kernel_size, 1), ntuple(stride if stride is not None
                                                        else kernel_size, 1),
                         ntuple(padding, 1), ceil_mode, count_include_pad)

    def forward(self, input):
        return avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad)


class AdaptiveAvgPool2d(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"

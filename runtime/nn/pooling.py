"""Pooling: max, average and adaptive average pooling (functional forms and modules).

Windows are a strided view of the padded input (the patch layout of runtime/rules/conv.py). 1-d
pooling runs the 2-d kernel on a height-1 view and squeezes, which is also how PyTorch
records it (SqueezeBackward1 over the 2-d node). ceil_mode pads past the input as far as the
last window reaches; average pooling divides each window by PyTorch's count (up to the end of
the padding, only the input elements without count_include_pad, or divisor_override).
"""

import functools

import numpy as np

from runtime import ops as F
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class
from runtime.nn.conv import geometry, ntuple
from runtime.nn.modules import Module
from runtime.ops._core import wrap

MaxPool2DWithIndicesBackward0 = node_class("MaxPool2DWithIndicesBackward0", "max_pool")
AvgPool2DBackward0 = node_class("AvgPool2DBackward0", "avg_pool")

# (test on kernel, stride, padding, dilation; what is wrong when it fails), in PyTorch's order
_POOL_CHECKS = (
    (lambda k, s, p, d: min(s) > 0 and min(k) > 0,
     "pooling needs a kernel size and a stride greater than zero"),
    (lambda k, s, p, d: min(d) > 0, "pooling needs a dilation greater than zero"),
    (lambda k, s, p, d: min(p) >= 0, "pooling padding cannot be negative"),
    (lambda k, s, p, d: all(2 * pp <= kk for pp, kk in zip(p, k)),
     "pooling padding can be at most half the kernel size"),
)


def _pool_tuple(value, n, name):
    try:
        return ntuple(value, n, name)
    except ValueError as e:
        raise RuntimeError(f"pooling: {e}") from None


def _pool_geom(x, kernel_size, stride, padding, dilation, n=2):
    if x._data.ndim not in (3, 4) or 0 in x._data.shape[-3:]:
        raise RuntimeError(f"2-d pooling expects a non-empty 3-d or 4-d input, got shape "
                           f"{list(x._data.shape)}")
    kernel = _pool_tuple(kernel_size, n, "kernel_size")
    stride = kernel if stride is None or stride == [] else _pool_tuple(stride, n, "stride")
    padding = _pool_tuple(padding, n, "padding")
    dilation = _pool_tuple(dilation, n, "dilation")
    for ok, message in _POOL_CHECKS:
        if not ok(kernel, stride, padding, dilation):
            raise RuntimeError(f"{message}: kernel_size={kernel}, stride={stride}, "
                               f"padding={padding}, dilation={dilation}")
    return geometry(kernel, stride, padding, dilation, 1, 2)


def pool_extent(size, k, s, p, d, ceil_mode):
    """(output length, padding after the input) along one pooling axis: PyTorch's floor or
    ceil division, where ceil_mode drops a last window that would start in the right-hand
    padding, and as much padding after the input as the last window reaches."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    reach = (out - 1) * s + d * (k - 1) + 1
    return out, max(0, reach - size - p)


def _extents(x, geom, ceil_mode):
    """((OH, pad below), (OW, pad right)) of a pooling of the 4-d array x."""
    extents = [pool_extent(size, *axis, ceil_mode)
               for size, axis in zip(x.shape[2:], zip(*geom[:4]))]
    if min(out for out, _ in extents) < 1:
        raise RuntimeError(f"pooling input of size {list(x.shape[1:])} is too small: the "
                           f"output would be {[out for out, _ in extents]}")
    return extents


def _batched(x):
    """(C, H, W) inputs are pooled as a batch of one."""
    return x._data if x._data.ndim == 4 else x._data[None]


def _windows(x, geom, extents, fill):
    """The padded input and a strided view (N, C, OH, OW, kh, kw) of each window's elements;
    padding (`fill`) covers as much beyond the input as the windows reach."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = geom[:4]
    (oh, below), (ow, right) = extents
    if ph or pw or below or right:
        x = np.pad(x, ((0, 0), (0, 0), (ph, below), (pw, right)), constant_values=fill)
    s = x.strides
    view = np.lib.stride_tricks.as_strided(
        x, x.shape[:2] + (oh, ow, kh, kw),
        (s[0], s[1], s[2] * sh, s[3] * sw, s[2] * dh, s[3] * dw), writeable=False)
    return x, view


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _inside(geom, extents, h, w):
    """(kh, kw, OH, OW): whether each window element lies on the input rather than in the
    padding; None when no window reaches into padding."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = geom[:4]
    (oh, below), (ow, right) = extents
    if not (ph or pw or below or right):
        return None
    rows = np.arange(oh)[None, :] * sh - ph + np.arange(kh)[:, None] * dh
    cols = np.arange(ow)[None, :] * sw - pw + np.arange(kw)[:, None] * dw
    rows_in, cols_in = (rows >= 0) & (rows < h), (cols >= 0) & (cols < w)
    return rows_in[:, None, :, None] & cols_in[None, :, None, :]


def _window_max(windows, with_nan, inside):
    """(max, index of the first maximum in the window, which windows hold an input element)
    with one pass per window element. A NaN wins over any number (np.maximum propagates it)
    and an input element over padding even when it is -inf, as in PyTorch."""
    kh, kw = windows.shape[-2:]
    best = windows[..., 0, 0].copy()
    pick = np.zeros(best.shape, np.int8 if kh * kw < 128 else np.int64)
    better = np.empty(best.shape, bool)
    best_in = None if inside is None else inside[0, 0]
    for k in range(1, kh * kw):
        v = windows[..., k // kw, k % kw]
        np.greater(v, best, out=better)
        if with_nan:
            better |= np.isnan(v) & ~np.isnan(best)
        if inside is not None:
            here = inside[k // kw, k % kw]
            better |= here & ~best_in
            best_in = best_in | here
        np.maximum(best, v, out=best)
        # pick += better * (k - pick): np.where on a random mask costs ~30x more
        step = np.subtract(pick.dtype.type(k), pick)
        step *= better
        pick += step
    return best, pick, best_in


def _window_offsets(geom, oh, ow, w):
    """(index in the unpadded (H * W) plane of each window's first element (OH, OW), offset
    of each window element from it (kh * kw,))."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = geom[:4]
    k = np.arange(kh * kw)
    offset = (k // kw) * dh * w + (k % kw) * dw
    base = (np.arange(oh)[:, None] * sh - ph) * w + np.arange(ow)[None, :] * sw - pw
    return base, offset


def _picked_position(pick, geom, oh, ow, w):
    """Index in the unpadded (H * W) plane of each window's picked element."""
    base, offset = _window_offsets(geom, oh, ow, w)
    return base + np.take(offset, pick)


@functools.lru_cache(maxsize=16)
def _flat_starts(shape, geom, oh, ow):
    """Index in the whole (N, C, H, W) input of each window's first element (N, C, OH, OW)
    and the window elements' offsets from it: fixed for a shape, so kept (read-only)."""
    n, c, h, w = shape
    base, offset = _window_offsets(geom, oh, ow, w)
    starts = np.arange(n * c).reshape(n, c, 1, 1) * (h * w) + base
    starts.flags.writeable = offset.flags.writeable = False
    return starts, offset


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    geom = _pool_geom(input, kernel_size, stride, padding, dilation)
    x = _batched(input)
    n, c, h, w = x.shape
    extents = _extents(x, geom, ceil_mode)
    (oh, _), (ow, _) = extents
    with_nan = x.dtype.kind == "f" and bool(np.isnan(x).any())
    windows = _windows(x, geom, extents, _lowest(x.dtype))[1]
    data, pick, has_input = _window_max(windows, with_nan, _inside(geom, extents, h, w))
    data = data if input._data.ndim == 4 else data[0]
    out = wrap(np.ascontiguousarray(data), input._dtype)
    if any_requires_grad((input,)):
        starts, offset = _flat_starts(x.shape, geom, oh, ow)
        flat = np.take(offset, pick)
        flat += starts
        # a window wholly in the padding (dilation can make one) passes no gradient on
        spill = has_input is not None and not has_input.all()
        if spill:
            flat = np.where(has_input, flat, n * c * h * w)
        record(MaxPool2DWithIndicesBackward0, (input,), out,
               (input._data.shape, flat.reshape(-1), spill))
    if return_indices:
        plane_index = _picked_position(pick, geom, oh, ow, w)
        return out, wrap(plane_index if input._data.ndim == 4 else plane_index[0], None)
    return out


def _window_counts(size, k, s, p, out, count_include_pad):
    """How many elements each window along one axis averages over: up to the end of the
    padding (windows that ceil_mode lets run past it are cut there), or, without
    count_include_pad, only the input elements."""
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    if count_include_pad:
        return end - start
    return np.minimum(end, size) - np.maximum(start, 0)


def _divisor(x, geom, extents, count_include_pad, divisor_override):
    """A Python number when every window has the same divisor, else an (OH * OW) array."""
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError("avg_pool2d: divisor_override cannot be zero")
        return x.dtype.type(divisor_override)
    counts = [_window_counts(size, k, s, p, out, count_include_pad) for size, k, s, p, out in
              zip(x.shape[2:], geom[0], geom[1], geom[2], [e[0] for e in extents])]
    divisor = np.multiply.outer(*counts).reshape(-1).astype(x.dtype)
    if (divisor == divisor[0]).all():
        return divisor[0]
    divisor.flags.writeable = False
    return divisor


def _window_sum(windows):
    """Each window's sum, added element by element in kernel order (as PyTorch's loop)."""
    kh, kw = windows.shape[-2:]
    total = windows[..., 0, 0].copy()
    for k in range(1, kh * kw):
        total += windows[..., k // kw, k % kw]
    return total


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    if input._data.ndim < 3:
        raise IndexError(f"avg_pool2d expects a 3-d or 4-d input, got shape "
                         f"{list(input._data.shape)}")
    geom = _pool_geom(input, kernel_size, stride, padding, 1)
    x = _batched(input)
    extents = _extents(x, geom, ceil_mode)
    divisor = _divisor(x, geom, extents, count_include_pad, divisor_override)
    padded, windows = _windows(x, geom, extents, 0)
    total = _window_sum(windows)
    data = total / (divisor if np.ndim(divisor) == 0 else divisor.reshape(total.shape[2:]))
    data = data.astype(x.dtype, copy=False)
    out = wrap(data if input._data.ndim == 4 else data[0], input._dtype)
    if any_requires_grad((input,)):
        (ph, pw), (h, w) = geom[2], x.shape[2:]
        crop = (Ellipsis, slice(ph, ph + h), slice(pw, pw + w))
        flat_geom = geometry(geom[0], geom[1], (0, 0), (1, 1), 1, 2)
        record(AvgPool2DBackward0, (input,), out,
               (input._data.shape, padded.shape, flat_geom, divisor, crop))
    return out


def _as_1d(fn2d, input, kernel_size, stride, padding, *rest):
    k = _pool_tuple(kernel_size, 1, "kernel_size")
    s = k if stride is None or stride == [] else _pool_tuple(stride, 1, "stride")
    p = _pool_tuple(padding, 1, "padding")
    out = fn2d(F.unsqueeze(input, -2), (1,) + k, (1,) + s, (0,) + p, *rest)
    if isinstance(out, tuple):
        return F.squeeze(out[0], -2), F.squeeze(out[1], -2)
    return F.squeeze(out, -2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _as_1d(max_pool2d, input, kernel_size, stride, padding,
                  (1,) + _pool_tuple(dilation, 1, "dilation"), ceil_mode, return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    if input._data.ndim not in (2, 3):
        raise RuntimeError(f"avg_pool1d expects a 2-d or 3-d input, got shape "
                           f"{list(input._data.shape)}")
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

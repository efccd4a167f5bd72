"""F.pad (constant, reflect, replicate, circular), F.normalize and F.one_hot.

Constant padding is one primitive (ConstantPadNdBackward0, whose rule slices the cotangent
back); negative pads crop first. Reflect and replicate padding gather along each padded
dimension, recorded as one node named as PyTorch names it (ReflectionPad2DBackward0 ...) whose
rule ("pad_gather", runtime/rules/conv.py) scatter-adds the cotangent back. Circular padding
is composed as PyTorch composes it: an empty output, the input copied into its middle, then
the output's own slices copied into the borders, so the graph is the same chain of CopySlices
over SliceBackward0 nodes.
"""

import numpy as np

from runtime import dtypes
from runtime import ops as F
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class
from runtime.ops._core import wrap

ConstantPadNdBackward0 = node_class("ConstantPadNdBackward0", "constant_pad")

_NP_MODES = {"reflect": "reflect", "replicate": "edge"}
_NODE_PREFIX = {"reflect": "ReflectionPad", "replicate": "ReplicationPad"}
# non-constant padding: number of padded dimensions -> the input ndims it accepts
_NON_CONSTANT_NDIM = {1: (2, 3), 2: (3, 4), 3: (4, 5)}


def _pairs(pad, ndim):
    if len(pad) % 2:
        raise RuntimeError(f"pad needs an even number of values, got {len(pad)}")
    if len(pad) // 2 > ndim:
        raise RuntimeError(f"pad has {len(pad)} values, more than 2 for each of the input's "
                           f"{ndim} dimensions")
    pairs = [(0, 0)] * ndim
    for i in range(len(pad) // 2):
        pairs[ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    return pairs


def _constant(x, pairs, value):
    """One ConstantPadNdBackward0 node, also where negative pads crop the input."""
    crop = tuple(slice(-min(lo, 0), n + min(hi, 0)) for (lo, hi), n in zip(pairs, x._data.shape))
    pos = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    kept = x._data[crop]
    out = wrap(np.pad(kept, pos, constant_values=value), x._dtype)
    if any_requires_grad((x,)):
        key = tuple(slice(lo, lo + n) for (lo, _), n in zip(pos, kept.shape))
        cropped = any(lo < 0 or hi < 0 for lo, hi in pairs)
        record(ConstantPadNdBackward0, (x,), out,
               (key, x._data.shape if cropped else None, crop))
    return out


def _axis_index(n, lo, hi, mode):
    """Which input position each output position reads along one padded dimension (a
    negative pad crops what the other side's padding was computed from, as in PyTorch)."""
    full = np.pad(np.arange(n), (max(lo, 0), max(hi, 0)), mode=_NP_MODES[mode])
    return full[max(-lo, 0):len(full) - max(-hi, 0)]


def _check_gather(shape, pairs, n_pad, mode):
    if 0 in shape[-n_pad - 1:]:
        raise RuntimeError(f"{mode} padding needs non-empty dimensions (but for the batch), "
                           f"got shape {list(shape)}")
    for d in range(len(shape) - n_pad, len(shape)):
        (lo, hi), n = pairs[d], shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"reflect padding ({lo}, {hi}) must be smaller than dimension "
                               f"{d} (size {n})")
        if n + lo + hi < 1:
            raise RuntimeError(f"padding ({lo}, {hi}) leaves nothing of dimension {d} "
                               f"(size {n})")


def _gathered(x, pairs, n_pad, mode):
    _check_gather(x._data.shape, pairs, n_pad, mode)
    steps, data = [], x._data
    for d in range(data.ndim - n_pad, data.ndim):
        if pairs[d] != (0, 0):
            index = _axis_index(data.shape[d], *pairs[d], mode)
            steps.append((d, index, data.shape))
            data = np.take(data, index, axis=d)
    out = wrap(data, x._dtype)
    if any_requires_grad((x,)):
        name = f"{_NODE_PREFIX[mode]}{n_pad}DBackward0"
        record(node_class(name, "pad_gather"), (x,), out, (tuple(steps),))
    return out


def _circular_shape(shape, pairs, n_pad):
    out = list(shape)
    for d in range(len(shape) - n_pad, len(shape)):
        (lo, hi), n = pairs[d], shape[d]
        if lo > n or hi > n:
            raise RuntimeError(f"circular padding ({lo}, {hi}) would wrap around dimension "
                               f"{d} (size {n}) more than once")
        out[d] = n + lo + hi
        if out[d] < 0:
            raise RuntimeError(f"padding ({lo}, {hi}) is more negative than dimension {d} "
                               f"(size {n}) is long")
    return out


def _circular(x, pairs, n_pad):
    """PyTorch's composition: the (cropped) input into the middle of an empty output, then
    each padded dimension's borders copied from the output itself, last dimension first."""
    shape = x._data.shape
    out_shape = _circular_shape(shape, pairs, n_pad)
    out = x.new_empty(out_shape)
    dims = range(len(shape) - 1, len(shape) - 1 - n_pad, -1)
    middle, source = out, x
    for d in dims:
        (lo, hi), n = pairs[d], shape[d]
        middle = F.narrow(middle, d, max(lo, 0), out_shape[d] - max(lo, 0) - max(hi, 0))
        source = F.narrow(source, d, max(-lo, 0), n - max(-lo, 0) - max(-hi, 0))
    middle.copy_(source)
    for d in dims:
        (lo, hi), size = pairs[d], out_shape[d]
        if lo > 0:
            F.narrow(out, d, 0, lo).copy_(F.narrow(out, d, size - lo - max(hi, 0), lo))
        if hi > 0:
            F.narrow(out, d, size - hi, hi).copy_(F.narrow(out, d, max(lo, 0), hi))
    return out


def pad(input, pad, mode="constant", value=None):
    if mode not in ("constant", "circular") and mode not in _NP_MODES:
        raise NotImplementedError(f"F.pad has no mode {mode!r}: use 'constant', 'reflect', "
                                  f"'replicate' or 'circular'")
    pairs = _pairs(pad, input._data.ndim)
    if mode == "constant":
        return _constant(input, pairs, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"F.pad mode {mode!r} pads with the input's own values: it takes "
                           f"no fill value")
    n_pad = len(pad) // 2
    if input._data.ndim not in _NON_CONSTANT_NDIM.get(n_pad, ()):
        raise NotImplementedError(
            f"{mode} padding of {n_pad} dimension(s) needs an input of "
            f"{' or '.join(map(str, _NON_CONSTANT_NDIM.get(n_pad, ())))} dimensions (2 to 6 "
            f"pad values in all), got {len(pad)} values for a {input._data.ndim}-d input")
    if mode == "circular":
        return _circular(input, pairs, n_pad)
    return _gathered(input, pairs, n_pad, mode)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    norm = F.norm(input, p, dim, keepdim=True)
    return F.div(input, F.expand(F.clamp(norm, min=eps), input._data.shape))


def one_hot(tensor, num_classes=-1):
    data = tensor._data
    if data.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensors (int64)")
    if data.size and data.min() < 0:
        raise RuntimeError("one_hot: class values must be non-negative")
    n = (int(data.max()) + 1 if data.size else 0) if num_classes < 0 else num_classes
    if data.size and data.max() >= n:
        raise RuntimeError("one_hot: a class value is not smaller than num_classes")
    return wrap(np.eye(n, dtype=np.int64)[data], dtypes.int64)

"""F.pad (constant, reflect, replicate, circular), F.normalize and F.one_hot.

Constant padding is one primitive (ConstantPadNdBackward0, whose rule slices the cotangent
back); negative pads crop first. The other modes gather along each padded dimension with
index_select, so their gradients come from index_select's rule.
"""

import numpy as np

from runtime import dtypes
from runtime import ops as F
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class
from runtime.ops._core import wrap

ConstantPadNdBackward0 = node_class("ConstantPadNdBackward0", "constant_pad")

_NP_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pairs(pad, ndim):
    if len(pad) % 2 or len(pad) // 2 > ndim:
        raise ValueError(f"pad needs an even number of values, at most 2 per dimension "
                         f"(input has {ndim}), got {len(pad)}")
    pairs = [(0, 0)] * ndim
    for i in range(len(pad) // 2):
        pairs[ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    return pairs


def _crop(x, pairs):
    key = tuple(slice(-min(lo, 0), x._data.shape[d] + min(hi, 0))
                for d, (lo, hi) in enumerate(pairs))
    if all(lo >= 0 and hi >= 0 for lo, hi in pairs):
        return x
    return F.getitem(x, key)


def _constant(x, pairs, value):
    pos = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    x = _crop(x, pairs)
    data = np.pad(x._data, pos, constant_values=value)
    out = wrap(data, x._dtype)
    if any_requires_grad((x,)):
        key = tuple(slice(lo, lo + n) for (lo, _), n in zip(pos, x._data.shape))
        record(ConstantPadNdBackward0, (x,), out, (key,))
    return out


def _gathered(x, pairs, mode):
    for d, (lo, hi) in enumerate(pairs):
        if lo == 0 and hi == 0:
            continue
        n = x._data.shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError("reflect padding must be smaller than the padded dimension")
        index = np.pad(np.arange(n), (lo, hi), mode=_NP_MODES[mode])
        x = F.index_select(x, d, wrap(index.astype(np.int64), dtypes.int64))
    return x


def pad(input, pad, mode="constant", value=None):
    pairs = _pairs(pad, input._data.ndim)
    if mode == "constant":
        return _constant(input, pairs, 0.0 if value is None else value)
    if mode not in _NP_MODES:
        raise NotImplementedError(f"pad mode {mode!r} is not supported")
    return _gathered(input, pairs, mode)


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

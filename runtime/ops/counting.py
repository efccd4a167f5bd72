"""Counting and bucketing ops, none differentiable: searchsorted, bucketize, bincount, histc.

searchsorted works on the last dimension of a sorted sequence (leading dimensions pair up with
the values'); the side rule is PyTorch's: `right=False` finds the first position whose
element is >= the value. histc bins as PyTorch's kernel does, (x - min) / (max - min) * bins
truncated, in the input's dtype, with x == max in the last bin.
"""

import numpy as np

from runtime import dtypes
from runtime.ops._core import is_tensor, wrap


def _side(right, side):
    if side is not None:
        if side not in ("left", "right") or (right and side == "left"):
            raise RuntimeError(f"searchsorted(): side must be 'left' or 'right' and agree "
                               f"with right=, got side={side!r}, right={right}")
        return side
    return "right" if right else "left"


def _index_dtype(out_int32):
    return dtypes.int32 if out_int32 else dtypes.int64


def _batched_positions(seq, values, side):
    if seq.ndim == 1:
        return np.searchsorted(seq, values, side)
    if seq.shape[:-1] != values.shape[:-1]:
        raise RuntimeError(f"searchsorted(): a sequence of shape {list(seq.shape)} needs values "
                           f"with leading dimensions {list(seq.shape[:-1])}, got "
                           f"{list(values.shape)}")
    rows = [np.searchsorted(s, v, side) for s, v in zip(seq.reshape(-1, seq.shape[-1]),
                                                        values.reshape(-1, values.shape[-1]))]
    return np.stack(rows).reshape(values.shape)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Where each value would go in the (last dimension of the) sorted sequence."""
    seq = sorted_sequence._data
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter._data, -1)
    values = input._data if is_tensor(input) else np.asarray(input)
    dt = _index_dtype(out_int32)
    return wrap(np.asarray(_batched_positions(seq, values, _side(right, side)), dt.np), dt)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each element among 1-d sorted boundaries."""
    if boundaries.dim() != 1:
        raise RuntimeError(f"bucketize(): boundaries must be 1-d, got {boundaries.dim()}-d")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def bincount(input, weights=None, minlength=0):
    """How often each non-negative integer occurs (the weights' sum at it, with weights)."""
    if input._dtype.category != dtypes.INT or input.dim() != 1 or (input._data < 0).any():
        error = NotImplementedError if input._dtype.category == dtypes.FLOAT else RuntimeError
        raise error("bincount() counts a 1-d tensor of non-negative integers")
    if weights is None:
        return wrap(np.bincount(input._data, minlength=minlength).astype(np.int64),
                    dtypes.int64)
    dt = weights._dtype if weights._dtype.category == dtypes.FLOAT else dtypes.float64
    counted = np.bincount(input._data, weights._data.astype(np.float64), minlength)
    return wrap(counted.astype(dt.np), dt)


def histc(input, bins=100, min=0, max=0):
    """A histogram of `bins` equal bins over [min, max] (the data's range when both are 0)."""
    if input._dtype.category != dtypes.FLOAT:
        raise NotImplementedError(f"histc() takes floating-point tensors, got {input._dtype}")
    if max < min:
        raise RuntimeError(f"histc(): max ({max}) must not be below min ({min})")
    d = input._data.ravel()
    lo, hi = input._dtype.np.type(min), input._dtype.np.type(max)
    if lo == hi and d.size:
        lo, hi = d.min(), d.max()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    inside = d[(d >= lo) & (d <= hi)]
    pos = ((inside - lo) / (hi - lo) * input._dtype.np.type(bins)).astype(np.int64)
    counts = np.bincount(np.minimum(pos, bins - 1), minlength=bins)
    return wrap(counts.astype(input._dtype.np), input._dtype)


FUNCTIONS = ["searchsorted", "bucketize", "bincount", "histc"]
METHODS = ["bincount", "histc"]

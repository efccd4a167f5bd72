"""PyTorch's memory-overlap checks of in-place operations, on numpy arrays.

An in-place op may not write into a tensor whose elements share memory (made by expand()),
except a fill; an operand may not overlap part of the target (the same memory exactly is
fine). Both checks follow PyTorch's: zero strides for the first, byte ranges of dense
operands for the second.
"""

import numpy as np
from numpy.lib.array_utils import byte_bounds as _byte_bounds

from runtime import ops as F
from runtime.rules.numpy_ops import shares_memory_within


def check_internal_overlap(t, result_fn, args=()):
    """An in-place write into a tensor whose elements share memory (expand()) is refused,
    except a fill by a number (fill_, zero_, masked_fill_), which PyTorch allows (a fill by a
    tensor, as `x[...] = v` does, is refused); a read-only expanded array (a gradient made
    by broadcasting) first gets memory of its own."""
    d = t._data
    if not overlapping(d):
        own_memory(t)
        return
    if result_fn is F.copy_like_op and args and (args[0] is t or _same_data(d, args[0]._data)):
        return  # x.copy_(x), or of a view walking x's memory as x does: PyTorch returns at once
    by_tensor = result_fn is F.fill_like_op and args and hasattr(args[0], "_data")
    if result_fn in (F.fill_like_op, F.zero_like_op, F.masked_fill, F.index_put) \
            and not by_tensor:
        if not d.flags.writeable:
            t._data = _own_expanded(d)
        return
    raise RuntimeError("an in-place operation cannot write into a tensor in which several "
                       "elements share one memory location (made by expand()); clone() it "
                       "first")


def _same_data(d, o):
    return (o.shape == d.shape and o.strides == d.strides and o.dtype == d.dtype
            and o.ctypes.data == d.ctypes.data)


def own_memory(t):
    """A read-only tensor that is no view (a gradient made by broadcasting) gets writable
    memory of its own, laid out as before, so in-place writes into it (or a view of it) work
    as in PyTorch."""
    if not t._data.flags.writeable and t._base is None:
        t._data = _own_expanded(t._data)


overlapping = shares_memory_within


def _own_expanded(d):
    """A writable copy of an expanded array that keeps its zero strides."""
    compact = np.array(d[tuple(slice(0, 1) if st == 0 else slice(None) for st in d.strides)])
    strides = tuple(0 if st == 0 else cs for st, cs in zip(d.strides, compact.strides))
    return np.lib.stride_tricks.as_strided(compact, d.shape, strides)


def check_partial_overlap(t, args, result_fn=None):
    """An operand that overlaps the target's memory without being exactly the target is
    refused (PyTorch's check: both dense, byte ranges intersecting)."""
    d = t._data
    for a in args:
        if not hasattr(a, "_data") or result_fn is F.fill_like_op:
            # a fill reads its 0-dim value once, before writing (PyTorch's fill_ checks not)
            continue
        o = a._data
        # the same memory exactly, walked the same way (x.copy_(x), or a view of x expanded
        # back to x's place); the strides compared as they are, those of dimensions of size
        # 1 too (our views keep PyTorch's there), so x[None] over x, `v[::2] = v` for a v of
        # one element, or a 0-dim view expanded over a (1, 1) w are partial overlaps
        same = _byte_bounds(o) == _byte_bounds(d) and o.strides == d.strides
        if not same and _dense(o) and _dense(d) and np.may_share_memory(o, d):
            raise RuntimeError("an operand of an in-place operation shares part of its memory "
                               "with the tensor being written; clone() the operand first")


def check_no_overlap(target, value):
    """index_put_'s check of its value against the tensor written (PyTorch's
    assert_no_overlap): refused when both are the same tensor, or both are dense with
    intersecting memory; an empty or strided one is not checked."""
    d, o = target._data, value._data
    if value is target:
        raise_overlap()
    if d.size and o.size and _dense(d) and _dense(o) and np.may_share_memory(d, o):
        raise_overlap()


def raise_overlap():
    raise RuntimeError("x[index] = value: the value shares memory with the tensor being "
                       "written; clone() the value first")


def _dense(d):
    lo, hi = _byte_bounds(d)
    return hi - lo == d.size * d.itemsize

"""Memory layout of results as PyTorch lays them out, on numpy arrays.

PyTorch's TensorIterator gives an elementwise result the layout of its inputs: the
dimensions ordered by the inputs' strides (the first input whose strides tell two
dimensions apart decides; broadcast dimensions say nothing), and `empty_like` keeps a dense
input's strides. numpy's own choice (order "K") agrees for plain inputs but not for
expanded or mixed ones; `like_iterator` and `like_input` re-lay a result where they differ.
"""

import numpy as np


def _strides(a, shape):
    """a's strides broadcast to `shape`: 0 along dimensions it does not span."""
    nd, lead = len(shape), len(shape) - a.ndim
    out = [0] * nd
    for i, (n, st) in enumerate(zip(a.shape, a.strides)):
        if not (n == 1 and shape[lead + i] != 1):
            out[lead + i] = st
    return out


def _should_swap(strides, shape, d0, d1):
    for st in strides:
        s0, s1 = st[d0], st[d1]
        if s0 == 0 or s1 == 0:
            continue
        if s0 != s1:
            return 1 if s0 > s1 else -1
        if shape[d0] > shape[d1]:
            return 1
    return 0


def iteration_order(shape, arrays):
    """The dimensions of `shape` from the fastest-varying to the slowest, as TensorIterator
    sorts them (an insertion sort that leaves ambiguous pairs in place)."""
    strides = [_strides(a, shape) for a in arrays]
    perm = list(range(len(shape) - 1, -1, -1))
    for i in range(1, len(shape)):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = _should_swap(strides, shape, perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def _dense(a):
    """PyTorch's is_non_overlapping_and_dense."""
    dims = sorted((d for d in range(a.ndim) if a.shape[d] > 1), key=lambda d: a.strides[d])
    need = a.itemsize
    for d in dims:
        if a.strides[d] != need:
            return False
        need *= a.shape[d]
    return True


def _laid_out(data, perm):
    """`data` copied into memory whose dimensions run from slowest to fastest as `perm`
    (fastest first) reversed."""
    order = perm[::-1]
    out = np.empty([data.shape[d] for d in order], data.dtype)
    view = out.transpose(np.argsort(order))
    view[...] = data
    return view


def _with_strides(data, strides):
    if data.strides == strides:
        return data
    return _laid_out(data, sorted(range(data.ndim), key=lambda d: strides[d]))


def c_contiguous(data):
    return data if data.flags.c_contiguous else np.ascontiguousarray(data)  # keeps 0-dim


def like_iterator(data, arrays):
    """`data`, an elementwise result of `arrays` (the tensor inputs, in PyTorch's operand
    order), laid out as TensorIterator lays out its output."""
    shape = data.shape
    if data.ndim < 2 or all(a.flags.c_contiguous and a.shape == shape for a in arrays):
        return c_contiguous(data)
    if all(a.shape == shape and _dense(a) for a in arrays) and \
            len({a.strides for a in arrays}) == 1:
        return _with_strides(data, arrays[0].strides)
    return _laid_out(data, iteration_order(shape, arrays))


def like_input(data, x):
    """`data` laid out as PyTorch's empty_like(x) (preserve_format) lays out a result."""
    if data.ndim < 2:
        return c_contiguous(data)
    if _dense(x):
        return _with_strides(data, x.strides)
    return _laid_out(data, iteration_order(data.shape, [x]))

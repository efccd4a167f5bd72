"""Memory layout of results as PyTorch lays them out, on numpy arrays.

PyTorch's TensorIterator gives an elementwise result the layout of its inputs: the
dimensions ordered by the inputs' strides (the first input whose strides tell two
dimensions apart decides; broadcast dimensions say nothing), and `empty_like` keeps a dense
input's strides. numpy's own choice (order "K") agrees for plain inputs but not for
expanded or mixed ones; `like_iterator` and `like_input` re-lay a result where they differ.
"""

import numpy as np


def torch_strides(d):
    """d's strides with those of size-1 dimensions as PyTorch sets them (the next
    dimension's extent), where numpy's are arbitrary."""
    out, extent = [], d.itemsize
    for n, st in zip(reversed(d.shape), reversed(d.strides)):
        st = extent if n == 1 else st
        out.append(st)
        extent = st * n
    return tuple(reversed(out))


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


class _Geometry:
    """A shape and strides, all that iteration_order reads of an operand."""

    def __init__(self, shape, strides):
        self.shape, self.strides, self.ndim = tuple(shape), tuple(strides), len(shape)


def like_index(data, x, key):
    """`data` = x[key] (integer index arrays and full slices) laid out as PyTorch's index
    kernel lays it out: a TensorIterator over x restrided to the result (0 along the indexed
    dimensions) and the index arrays. Keys with masks keep the contiguous layout."""
    arrays = [i for i, k in enumerate(key) if isinstance(k, np.ndarray)]
    if data.ndim < 2 or not arrays or any(key[i].dtype.kind not in "iu" for i in arrays):
        return c_contiguous(data)
    bshape = np.broadcast_shapes(*(key[i].shape for i in arrays))
    kept = [d for d in range(x.ndim) if d not in arrays]
    together = arrays == list(range(arrays[0], arrays[-1] + 1))
    p = arrays[0] if together else 0
    lead, tail = (kept[:p], kept[p:]) if together else ([], kept)
    shape = [x.shape[d] for d in lead] + list(bshape) + [x.shape[d] for d in tail]
    zeros = [0] * len(bshape)
    src = [x.strides[d] for d in lead] + zeros + [x.strides[d] for d in tail]
    operands = [_Geometry(shape, src)]
    for i in arrays:
        st = list(np.broadcast_to(key[i], bshape).strides)
        operands.append(_Geometry(shape, [0] * len(lead) + st + [0] * len(tail)))
    if tuple(shape) != data.shape:
        return c_contiguous(data)
    return _laid_out(data, iteration_order(data.shape, operands))

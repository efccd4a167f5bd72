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
    """PyTorch's is_non_overlapping_and_dense (an empty array is)."""
    if a.size == 0:
        return True
    dims = sorted((d for d in range(a.ndim) if a.shape[d] > 1), key=lambda d: a.strides[d])
    need = a.itemsize
    for d in dims:
        if a.strides[d] != need:
            return False
        need *= a.shape[d]
    return True


_CHANNELS_LAST = (1, 3, 2, 0)  # a 4-dim NCHW tensor's dimensions, fastest first


def _channels_last(a):
    """PyTorch's is_contiguous(memory_format=torch.channels_last): size-1 dimensions aside,
    a dense NHWC layout of a 4-dim array."""
    need = a.itemsize
    for d in _CHANNELS_LAST:
        if a.shape[d] != 1:
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


def _with_strides(data, like):
    """`data` with the strides of `like`, a dense array (in elements): those of its size-1
    dimensions too, which PyTorch copies and which take part in TensorIterator's later
    choices of order."""
    strides = like.strides
    if data.itemsize != like.itemsize:
        strides = tuple(st // like.itemsize * data.itemsize for st in strides)
    if data.strides == strides:
        return data
    out = _laid_out(data, sorted(range(data.ndim), key=lambda d: strides[d]))
    if out.strides != strides:  # they differ along size-1 dimensions only
        out = np.lib.stride_tricks.as_strided(out, strides=strides)
    return out


def plain(a):
    """Whether TensorIterator lays out a result of `a` and other operands, all C-contiguous,
    as numpy does (C order): `a` has C-order strides along its size-1 dimensions too (a
    view such as a permute may keep others there, and so may a fresh array laid out like
    one by `empty_like`; when the operands' shapes differ TensorIterator orders the
    dimensions by them). An empty view's strides are arbitrary; a fresh empty array's are
    C order."""
    if not a.flags.c_contiguous:
        return False
    if not a.size:
        return a.base is None
    return 1 not in a.shape or a.strides == torch_strides(a)


def c_contiguous(data):
    return data if data.flags.c_contiguous else np.ascontiguousarray(data)  # keeps 0-dim


def _element_strides(a):
    return tuple(st // a.itemsize for st in a.strides)


def _fast_layout(data, arrays):
    """TensorIterator's fast setup, for operands all of the result's shape: C order when all
    are C-contiguous (size-1 strides aside), channels-last when all are so, the operands'
    own strides (in elements, size-1 dimensions' included) when all are dense with equal
    strides; else None (the general case)."""
    if all(a.flags.c_contiguous for a in arrays):
        return c_contiguous(data)
    if data.ndim == 4 and all(_channels_last(a) for a in arrays):
        return _with_order(data, list(_CHANNELS_LAST))
    if len({_element_strides(a) for a in arrays}) == 1 and all(_dense(a) for a in arrays):
        return _with_strides(data, arrays[-1])
    return None


def like_iterator(data, operands):
    """`data`, an elementwise result of `operands` (in PyTorch's operand order: arrays, and
    the Python numbers and 0-dim tensors it wraps as 0-dim operands, which make the
    operands' shapes differ) laid out as TensorIterator lays out its output."""
    shape = data.shape
    if data.ndim < 2:
        return c_contiguous(data)
    arrays = [a for a in operands if a.__class__ is np.ndarray and a.ndim]
    if len(arrays) == len(operands) and all(a.shape == shape for a in arrays):
        out = _fast_layout(data, arrays)
        if out is not None:
            return out
    return _with_order(data, iteration_order(shape, arrays))


def like_input(data, x):
    """`data` laid out as PyTorch's empty_like(x) (preserve_format) lays out a result."""
    if data.strides == x.strides and data.itemsize == x.itemsize:
        return data  # already x's layout (a fresh array, so x is dense)
    if data.ndim < 2 and data.size != 1:  # (one element keeps x's stride: (1,) of stride 6)
        return c_contiguous(data)
    if _dense(x):
        return _with_strides(data, x)
    return _laid_out(data, iteration_order(data.shape, [x]))


class _Geometry:
    """A shape and strides, all that iteration_order reads of an operand."""

    def __init__(self, shape, strides):
        self.shape, self.strides, self.ndim = tuple(shape), tuple(strides), len(shape)


def like_index(data, x, key):
    """`data` = x[key] (full slices, integer index arrays and masks) laid out as PyTorch's
    index kernel lays it out: a TensorIterator over x restrided to the result (0 along the
    indexed dimensions; those moved to the front when they are not adjacent) and the index
    arrays, each broadcast and viewed with ones around it."""
    if data.ndim < 2:
        return c_contiguous(data)
    operands = _index_iterator_operands(x, key)
    if operands is None or operands[0].shape != data.shape:
        return c_contiguous(data)
    return _with_order(data, iteration_order(data.shape, operands))


def index_put_order(x, key, value):
    """The dimensions of x[key] from the fastest to the slowest as PyTorch's index_put_
    kernel visits them: its TensorIterator writes x restrided (as like_index's), reads
    `value` (broadcast to x[key]'s shape) and the index arrays."""
    operands = _index_iterator_operands(x, key)
    shape = value.shape
    if operands is None or operands[0].shape != shape:
        return list(range(len(shape) - 1, -1, -1))
    return iteration_order(shape, [operands[0], value] + operands[1:])


def _index_iterator_operands(x, key):
    """The _Geometry of x restrided to x[key] and of each index array, as PyTorch's index
    kernels set up their TensorIterator (None for an index of no known geometry)."""
    indices = _index_operands(key, x.ndim)
    indexed = [d for d, k in enumerate(indices) if k is not None]
    if not indexed:
        return None
    bshape = np.broadcast_shapes(*(indices[d].shape for d in indexed))
    if indexed == list(range(indexed[0], indexed[-1] + 1)):
        before, order = indexed[0], list(range(x.ndim))
    else:  # transposed to the front
        before, order = 0, indexed + [d for d in range(x.ndim) if indices[d] is None]
    after = x.ndim - before - len(indexed)
    kept = [d for d in order if indices[d] is None]
    ones = [(x.shape[d], x.strides[d]) for d in kept]
    src = ones[:before] + [(n, 0) for n in bshape] + ones[before:]
    operands = [_Geometry([n for n, _ in src], [st for _, st in src])]
    for d in indexed:
        operands.append(_index_geometry(indices[d], bshape, before, after))
    return operands


def _index_operands(key, nd):
    """Per dimension of the indexed array: None where a full slice (or nothing) indexes it,
    else the _Geometry of its index in elements: an integer array as it is, a k-dim mask as
    k vectors, one per dimension (columns of nonzero's column-major result)."""
    out = []
    for k in key:
        if not isinstance(k, np.ndarray):
            out.append(None)
        elif k.dtype == np.bool_:
            out.extend([_Geometry((int(np.count_nonzero(k)),), (1,))] * max(k.ndim, 1))
        else:
            out.append(_Geometry(k.shape, [st // k.itemsize for st in k.strides]))
    return out + [None] * (nd - len(out))


def _index_geometry(index, bshape, before, after):
    """An index broadcast to `bshape` (expand: 0 along new and stretched dimensions) and
    reshaped to ones * before + bshape + ones * after, a view where PyTorch finds one."""
    lead = len(bshape) - index.ndim
    strides = [0] * lead + [0 if n == 1 and m != 1 else st for n, m, st in
                            zip(index.shape, bshape[lead:], index.strides)]
    new = (1,) * before + tuple(bshape) + (1,) * after
    viewed = view_strides(tuple(bshape), strides, new)
    return _Geometry(new, viewed if viewed is not None else contiguous_strides(new))


def contiguous_strides(shape):
    out, extent = [], 1
    for n in reversed(shape):
        out.append(extent)
        extent *= max(n, 1)
    return tuple(reversed(out))


def view_strides(old, strides, new, unit=1):
    """The strides PyTorch's view gives shape `new` over (old, strides), or None where the
    memory cannot be viewed so (reshape then copies); `unit` is one element's stride (1 for
    strides in elements, the itemsize for bytes)."""
    if not old:
        return (unit,) * len(new)
    if 0 in old:
        if tuple(old) == tuple(new):
            return tuple(strides)
        return tuple(st * unit for st in contiguous_strides(new))
    out, view_d = [0] * len(new), len(new) - 1
    base, numel, view_numel = strides[-1], 1, 1
    for d in range(len(old) - 1, -1, -1):
        numel *= old[d]
        if d > 0 and (old[d - 1] == 1 or strides[d - 1] == numel * base):
            continue  # the chunk of dimensions viewed together goes on
        while view_d >= 0 and (view_numel < numel or new[view_d] == 1):
            out[view_d] = view_numel * base
            view_numel *= new[view_d]
            view_d -= 1
        if view_numel != numel:
            return None
        if d > 0:
            base, numel, view_numel = strides[d - 1], 1, 1
    return tuple(out) if view_d == -1 else None


def expand_strides(shape, strides, new):
    """The strides PyTorch's expand gives shape `new` over (shape, strides): 0 along the
    dimensions it stretches; a new leading dimension of size 1 the extent of the next (0
    when the tensor was 0-dim)."""
    out, lead = [0] * len(new), len(new) - len(shape)
    extent = 0
    for i in range(len(new) - 1, -1, -1):
        n, st = (shape[i - lead], strides[i - lead]) if i >= lead else (1, extent)
        out[i] = st if n == new[i] else 0
        extent = new[i] * out[i]
    return tuple(out)


def restrided(view, strides):
    """`view` (a numpy view of some tensor's memory) with PyTorch's `strides`, in bytes,
    which differ from numpy's only along dimensions of size 1."""
    if view.strides == tuple(strides):
        return view
    return np.lib.stride_tricks.as_strided(view, view.shape, strides,
                                           writeable=view.flags.writeable)


def _with_order(data, perm):
    """`data` laid out in the order `perm` (fastest dimension first), copied only where its
    strides differ from that layout's."""
    strides, extent = [0] * data.ndim, data.itemsize
    for d in perm:
        strides[d] = extent
        extent *= data.shape[d]
    if data.strides == tuple(strides):
        return data
    if data.size == 0:  # nothing to copy, only PyTorch's strides to show
        if perm == list(range(data.ndim - 1, -1, -1)):  # C order: a size 0 counts as 1
            strides = [st * data.itemsize for st in contiguous_strides(data.shape)]
        return np.lib.stride_tricks.as_strided(data, strides=strides)
    return _laid_out(data, perm)

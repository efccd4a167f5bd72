"""Forward kernels of shape operations: views (sharing memory and the version counter),
indexing, joins and splits, copies and dtype conversion."""

import operator

import numpy as np

from runtime import dtypes
from runtime.autograd_meta import (
    MULTI_OUTPUT,
    any_requires_grad,
    make_view,
    record,
    record_multi,
)
from runtime.function import node_class
from runtime.ops._core import is_tensor, wrap
from runtime.ops.layout import (
    c_contiguous,
    expand_strides,
    like_index,
    like_input,
    restrided,
    view_strides,
)

_node = node_class
ViewBackward0 = _node("ViewBackward0", "view")
UnsafeViewBackward0 = _node("UnsafeViewBackward0", "unsafe_view")
ReshapeAliasBackward0 = _node("ReshapeAliasBackward0", "view")
TBackward0 = _node("TBackward0", "t")
TransposeBackward0 = _node("TransposeBackward0", "transpose")
PermuteBackward0 = _node("PermuteBackward0", "permute")
SqueezeBackward0 = _node("SqueezeBackward0", "squeeze")
SqueezeBackward1 = _node("SqueezeBackward1", "squeeze")
SqueezeBackward2 = _node("SqueezeBackward2", "squeeze")
SqueezeBackward4 = _node("SqueezeBackward4", "squeeze")
UnsqueezeBackward0 = _node("UnsqueezeBackward0", "unsqueeze")
ExpandBackward0 = _node("ExpandBackward0", "expand")
SelectBackward0 = _node("SelectBackward0", "select")
SliceBackward0 = _node("SliceBackward0", "slice")
IndexBackward0 = _node("IndexBackward0", "index")
AliasBackward0 = _node("AliasBackward0", "alias")
CatBackward0 = _node("CatBackward0", "cat")
StackBackward0 = _node("StackBackward0", "stack")
CloneBackward0 = _node("CloneBackward0", "clone")
ToCopyBackward0 = _node("ToCopyBackward0", "to_copy")
DiagonalBackward0 = _node("DiagonalBackward0_copy", "diagonal")
DiagBackward = _node("DiagEmbedBackward0", "diag_embed")
IndexSelectBackward0 = _node("IndexSelectBackward0", "index")
GatherBackward0 = _node("GatherBackward0", "index")
RepeatBackward0 = _node("RepeatBackward0", "repeat")


def _dim(d, ndim):
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"dimension {d} is out of range for a tensor with {ndim} dimensions "
                         f"(valid: {-n} to {n - 1})")
    return d % n


def _sizes(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _infer(shape, numel):
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred (-1)")
    if -1 in shape:
        rest = 1
        for s in shape:
            if s != -1:
                rest *= s
        if rest == 0 or numel % rest:
            raise RuntimeError(f"shape {list(shape)} is invalid for a tensor of {numel} elements")
        shape = tuple(numel // rest if s == -1 else s for s in shape)
    size = 1
    for s in shape:
        size *= s
    if size != numel:
        raise RuntimeError(f"shape {list(shape)} is invalid for a tensor of {numel} elements")
    return shape


# -- views -------------------------------------------------------------------------------------

def view(x, *shape):
    if len(shape) == 1 and isinstance(shape[0], dtypes.dtype):
        raise NotImplementedError("view(dtype) reinterpretation is not supported")
    shape = _infer(_sizes(shape), x._data.size)
    try:
        data = _viewed(x._data, shape)
    except ValueError:
        raise RuntimeError(
            "view(): the requested shape needs a copy because the tensor's memory layout "
            "does not fit it (it is not contiguous); use .reshape(...) instead") from None
    return make_view(x, data, ("reshape", shape), ViewBackward0, (x._data.shape,))


def reshape(x, *shape):
    """A view when the memory layout allows one (ViewBackward0 for a contiguous tensor,
    ReshapeAliasBackward0 otherwise, as PyTorch records them), else a reshaped copy."""
    shape = _infer(_sizes(shape), x._data.size)
    try:
        data = _viewed(x._data, shape)
    except ValueError:
        return unsafe_view(clone(x), shape)
    cls = ViewBackward0 if x._data.flags.c_contiguous else ReshapeAliasBackward0
    return make_view(x, data, ("reshape", shape), cls, (x._data.shape,))


def _viewed(d, shape):
    """d reshaped without a copy (ValueError where none exists), with the strides PyTorch's
    view gives dimensions of size 1."""
    data = np.reshape(d, shape, copy=False)
    if 1 not in data.shape:  # strides of dimensions longer than 1 are numpy's too
        return data
    strides = view_strides(d.shape, d.strides, data.shape, d.itemsize)
    return data if strides is None else restrided(data, strides)


def unsafe_view(x, shape):
    """Reshape a fresh (non-view) result; recorded as UnsafeViewBackward0."""
    shape = _infer(shape, x._data.size)
    out = wrap(np.reshape(x._data, shape), x._dtype)
    if any_requires_grad((x,)):
        record(UnsafeViewBackward0, (x,), out, (x._data.shape,))
    return out


def flatten(x, start_dim=0, end_dim=-1):
    nd = x._data.ndim
    if nd == 0:
        return reshape(x, (1,))
    s, e = _dim(start_dim, nd), _dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten(): start_dim must not come after end_dim")
    if s == e:
        return x
    shape = x._data.shape
    return reshape(x, shape[:s] + (int(np.prod(shape[s:e + 1])),) + shape[e + 1:])


def t(x):
    nd = x._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with at most 2 dimensions, got {nd}-D; use "
                           f"transpose(dim0, dim1) or mT")
    perm = (1, 0) if nd == 2 else tuple(range(nd))
    return make_view(x, x._data.transpose(perm), ("permute", perm), TBackward0, ())


def transpose(x, dim0, dim1):
    nd = x._data.ndim
    d0, d1 = _dim(dim0, nd), _dim(dim1, nd)
    perm = list(range(nd))
    if nd:
        perm[d0], perm[d1] = perm[d1], perm[d0]
    perm = tuple(perm)
    return make_view(x, x._data.transpose(perm), ("permute", perm), TransposeBackward0,
                     (d0, d1) if nd else (0, 0))


def permute(x, *dims):
    if not dims:
        raise TypeError("permute() needs the order of the dimensions, e.g. permute(1, 0)")
    nd = x._data.ndim
    perm = tuple(_dim(d, nd) for d in _sizes(dims))
    if sorted(perm) != list(range(nd)):
        raise RuntimeError(f"permute(): {list(_sizes(dims))} is not a permutation of the "
                           f"{nd} dimensions")
    return make_view(x, x._data.transpose(perm), ("permute", perm), PermuteBackward0, (perm,))


def squeeze(x, dim=None):
    shape = x._data.shape
    nd = len(shape)
    if dim is None:
        drop = set(range(nd))
        cls = SqueezeBackward0
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        drop = {_dim(d, nd) for d in dims} if nd else set()
        cls = SqueezeBackward1 if isinstance(dim, int) else SqueezeBackward2
    kept = [i for i, n in enumerate(shape) if not (i in drop and n == 1)]
    new = tuple(shape[i] for i in kept)
    data = restrided(x._data.reshape(new), [x._data.strides[i] for i in kept])
    return make_view(x, data, ("reshape", new), cls, (shape,))


def squeeze_dim_node(x, dim, cls):
    """squeeze_(dim) of a fresh result, recorded under a specific node class (matmul's
    SqueezeBackward4): not a view, as PyTorch squeezes its own mm output in place."""
    shape = x._data.shape
    new = shape[:dim] + shape[dim + 1:]
    out = wrap(x._data.reshape(new), x._dtype)
    if any_requires_grad((x,)):
        record(cls, (x,), out, (shape,))
    return out


def unsqueeze(x, dim):
    nd = x._data.ndim
    if not -nd - 1 <= dim <= nd:
        raise IndexError(f"unsqueeze(): dimension {dim} is out of range for a tensor with "
                         f"{nd} dimensions (valid: {-nd - 1} to {nd})")
    d = dim % (nd + 1)
    shape = x._data.shape
    new = shape[:d] + (1,) + shape[d:]
    strides = x._data.strides
    at = shape[d] * strides[d] if d < nd else x._data.itemsize
    data = restrided(x._data.reshape(new), strides[:d] + (at,) + strides[d:])
    return make_view(x, data, ("reshape", new), UnsqueezeBackward0, (shape,))


def expand(x, *sizes):
    sizes = _sizes(sizes)
    shape = x._data.shape
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(f"expand(): the target has fewer dimensions ({len(sizes)}) than the "
                           f"tensor ({len(shape)})")
    new = tuple(shape[i - lead] if (s == -1 and i >= lead) else s for i, s in enumerate(sizes))
    try:
        if len(new) < len(shape) or np.broadcast_shapes(shape, new) != new:
            raise ValueError
        # writes through a writable one are checked by Tensor._inplace
        data = np.lib.stride_tricks.as_strided(
            x._data, new, expand_strides(shape, x._data.strides, new),
            writeable=x._data.flags.writeable)
    except ValueError:
        raise RuntimeError(f"expand(): a tensor of shape {list(shape)} cannot be expanded to "
                           f"{list(sizes)}; only dimensions of size 1 can grow") from None
    return make_view(x, data, ("expand", new), ExpandBackward0, (shape,))


def expand_as(x, other):
    return expand(x, other._data.shape)


def view_as(x, other):
    return view(x, other._data.shape)


def reshape_as(x, other):
    return reshape(x, other._data.shape)


def swapaxes(x, axis0, axis1):
    """Another name of transpose (numpy's); recorded as TransposeBackward0."""
    return transpose(x, axis0, axis1)


swapdims = swapaxes


def diag(x):
    """The diagonal of a matrix (a copy), or the diagonal matrix of a vector."""
    nd = x._data.ndim
    if nd not in (1, 2):
        raise RuntimeError(f"diag() expects a 1-D or 2-D tensor, got {nd}-D")
    out = wrap(np.diag(x._data).copy(), x._dtype)
    if any_requires_grad((x,)):
        cls = DiagonalBackward0 if nd == 2 else DiagBackward
        record(cls, (x,), out, (x._data.shape,))
    return out


# -- indexing ----------------------------------------------------------------------------------

def _is_advanced(k):
    if is_tensor(k):
        return k._data.ndim > 0 or k._dtype is dtypes.bool_
    return isinstance(k, (list, np.ndarray)) or k is True or k is False


def _plain_key(k):
    if is_tensor(k):
        return k._data
    if isinstance(k, list):  # PyTorch makes a list an index of int64 unless it holds bools
        a = np.asarray([_plain_key(i) if is_tensor(i) else i for i in k])
        return a if a.dtype == np.bool_ else a.astype(np.int64, copy=False)
    return k


def getitem(x, key):
    """x[key] as PyTorch indexes: integers, slices and None first (as views), then the
    advanced indices (lists, index and mask tensors) on that view in one IndexBackward0."""
    single_slice = isinstance(key, slice)
    key = as_key_tuple(key)
    if not any(_is_advanced(k) for k in key):
        return _basic_index(x, key, single_slice)
    basic, rest = _split_key(key, x._data.ndim)
    return _index(_basic_view(x, basic)[0], rest)


def as_key_tuple(key):
    """The key as a tuple of indices. A list shorter than 32 that holds a tensor, a
    sequence, a slice, None or Ellipsis is read as a tuple of indices (numpy's old rule,
    which PyTorch keeps, with a deprecation warning); any other key is one index."""
    if isinstance(key, tuple):
        return key
    if isinstance(key, list) and len(key) < 32 and any(
            is_tensor(k) or isinstance(k, (list, tuple, slice)) or k is None or k is Ellipsis
            for k in key):
        return tuple(key)
    return (key,)


def _split_key(key, nd):
    """(basic, rest): `basic` is `key` with each advanced index replaced by full slices over
    the dimensions it indexes; `rest` indexes the result of `basic` with the advanced ones."""
    used = sum(_dims_indexed(k) for k in key)
    if used > nd:
        raise IndexError(f"too many indices for a tensor of dimension {nd}")
    basic, rest = [], []
    for k in key:
        if k is Ellipsis:
            basic.append(k)
            rest.extend([slice(None)] * (nd - used))
        elif k is None or isinstance(k, slice):
            basic.append(k)
            rest.append(slice(None))
        elif _is_bool_scalar(k):  # a new axis, kept (True) or emptied (False)
            basic.append(None)
            rest.append(np.array([bool(_plain_key(k))]))
        elif _is_advanced(k):
            basic.extend([slice(None)] * _dims_indexed(k))
            rest.append(_plain_key(k))
        else:
            basic.append(k)  # an integer: select() removes the dimension
    return tuple(basic), _drop_past_end(rest, nd - used + sum(k is None for k in key))


def _drop_past_end(rest, nd):
    """`rest` without the full slices a second Ellipsis put past the last dimension."""
    rest = list(rest)
    while len(rest) > nd and isinstance(rest[-1], slice) and rest[-1] == slice(None):
        rest.pop()
    return tuple(rest)


def _is_bool_scalar(k):
    return k is True or k is False or (is_tensor(k) and k._dtype is dtypes.bool_
                                       and k._data.ndim == 0)


def _dims_indexed(k):
    if k is None or k is Ellipsis or _is_bool_scalar(k):
        return 0
    if is_tensor(k) and k._dtype is dtypes.bool_:
        return max(k._data.ndim, 1)
    if isinstance(k, np.ndarray) and k.dtype == np.bool_:
        return max(k.ndim, 1)
    return 1


def _index(x, key):
    try:
        data = like_index(x._data[key], x._data, key)
    except IndexError as e:
        key = empty_result_key(x._data, key, e)
        data = x._data[key]
    out = wrap(data, x._dtype)
    if any_requires_grad((x,)):
        record(IndexBackward0, (x,), out, (x._data.shape, key))
    return out


def index_result_shape(data, key):
    """The shape of data[key] (full slices, integer arrays, masks), with IndexError where
    PyTorch's setup of an advanced index raises: indices that do not broadcast together, a
    mask of the wrong shape, an index into an empty dimension while the indices select
    something. Positions out of range are not checked: PyTorch's kernel finds those as it
    visits them (after the value's shape and dtype are checked)."""
    counts = [(int(np.count_nonzero(k)),) if k.dtype == np.bool_ else k.shape
              for k in key if isinstance(k, np.ndarray)]
    try:
        selected = 0 not in np.broadcast_shapes(*counts)
    except ValueError:
        raise IndexError("the index arrays cannot be broadcast to one shape") from None
    clipped, d = [], 0
    for k in key:
        if isinstance(k, np.ndarray) and k.dtype.kind in "iu":
            n = data.shape[d] if d < data.ndim else 0
            if n == 0 and selected:
                raise IndexError(f"an index into dimension {d}, of size 0, is out of range")
            k = np.clip(k, -n, n - 1) if n else k
        clipped.append(k)
        d += k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_ else 1
    shadow = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), data.shape,
                                             (0,) * data.ndim)
    return shadow[tuple(clipped)].shape


def empty_result_key(data, key, error):
    """PyTorch checks advanced indices element by element as it gathers, so an index out of
    range goes unnoticed when the result is empty (`x[:0, [7]]`), unless the dimension it
    indexes is itself empty. The key with its lists clipped into range when that is so;
    otherwise `error`, numpy's IndexError, raised in our words."""
    clipped, d = [], 0
    for k in key:
        if isinstance(k, np.ndarray) and k.dtype.kind in "iu" and d < data.ndim and data.shape[d]:
            k = np.clip(k, -data.shape[d], data.shape[d] - 1)
        clipped.append(k)
        d += k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_ else 1
    clipped = tuple(clipped)
    try:
        empty = data[clipped].size == 0
    except IndexError:
        empty = False
    if not empty:
        raise IndexError(f"index out of range: {error}") from None
    return clipped


def _basic_index(x, key, single_slice=False):
    """x[key] for integers, slices, None and Ellipsis, as a chain of views. Slices that cover
    a whole dimension (after clamping) are skipped, as PyTorch skips them, except a lone slice
    key of getitem (`single_slice`); when nothing is left, the result is an alias of `x`."""
    out, touched = _basic_view(x, key, single_slice)
    if not touched:
        out = make_view(x, x._data[...], ("getitem", (Ellipsis,)), AliasBackward0, ())
    return out


def _basic_view(x, key, single_slice=False):
    """(view, touched): the basic-indexing view of `x`, or `x` itself when no step applies."""
    nd = x._data.ndim
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > nd:
        raise IndexError(f"too many indices for a tensor of dimension {nd}")
    out, dim, touched = x, 0, False
    for k in key:
        if k is Ellipsis:
            dim += nd - consumed
        elif k is None:
            out = unsqueeze(out, dim)
            dim += 1
            touched = True
        elif isinstance(k, slice):
            if single_slice or not _whole(k, _size_at(out, dim)):
                out = _slice(out, dim, k)
                touched = True
            dim += 1
        else:
            out = select(out, dim, _as_int(k))
            touched = True
    return out, touched


def _size_at(x, dim):
    """The size of dimension `dim`; PyTorch reads past the last dimension (a key with two
    Ellipses moves past it) as a size of 0, where only a slice from 0 with step 1 applies."""
    shape = x._data.shape
    return shape[dim] if dim < len(shape) else 0


def _whole(s, size):
    """Whether PyTorch skips slice `s` of a dimension of `size` elements: it starts at 0 (as
    written, not clamped), reaches the end, and has step 1."""
    start = 0 if s.start is None else _as_int(s.start)
    stop = size if s.stop is None else _as_int(s.stop)
    return start == 0 and stop >= size and s.step in (None, 1)


def _as_int(k):
    if is_tensor(k):
        if k._dtype.category != dtypes.INT:
            raise IndexError(f"a tensor used as an index must have an integer or bool dtype, "
                             f"not {k._dtype}")
        return int(k._data)
    try:
        return operator.index(k)
    except TypeError:
        raise IndexError(f"a tensor can be indexed by integers, slices, None, Ellipsis and "
                         f"integer or bool tensors, not {type(k).__name__}") from None


def index_select(x, dim, index):
    """The slices at `index` (a vector of positions) along `dim`, copied."""
    d = _dim(dim, x._data.ndim)
    idx = _index_tensor(index, "index_select")
    if idx.ndim > 1:
        raise IndexError(f"index_select(): the index must be a vector, got {idx.ndim}-D")
    idx = idx.reshape(-1)
    if x._data.ndim == 0 and idx.size != 1:
        raise RuntimeError(f"index_select(): a 0-dim input takes exactly one index, got "
                           f"{idx.size}")
    size = x._data.shape[d] if x._data.ndim else 1
    if np.any((idx < 0) | (idx >= size)):
        raise IndexError(f"index_select(): an index is out of range for dimension {d} with "
                         f"size {size}")
    key = (slice(None),) * d + (idx,) if x._data.ndim else (Ellipsis,)
    out = wrap(_copy_at(x._data, key), x._dtype)
    if any_requires_grad((x,)):
        record(IndexSelectBackward0, (x,), out, (x._data.shape, key))
    return out


def gather(x, dim, index):
    """out[i][j] = x[index[i][j]][j] (dim 0) and so on: one element of `x` per index entry."""
    nd = x._data.ndim
    d = _dim(dim, nd)
    idx = _index_tensor(index, "gather")
    if idx.ndim != nd:
        raise RuntimeError(f"gather(): the index must have as many dimensions as the input "
                           f"({nd}), got {idx.ndim}")
    shape = x._data.shape
    for i, (n, m) in enumerate(zip(idx.shape, shape)):
        if i != d and n > m:
            raise RuntimeError(f"gather(): the index of shape {list(idx.shape)} is larger than "
                               f"the input of shape {list(shape)} in dimension {i}")
    size = shape[d] if nd else 1
    bad = (idx < 0) | (idx >= size)
    if np.any(bad):
        raise RuntimeError(f"gather(): index {int(idx[bad][0])} is out of bounds for "
                           f"dimension {d} with size {size}")
    key = _along(idx, d)
    out = wrap(_copy_at(x._data, key), x._dtype)
    if any_requires_grad((x,)):
        record(GatherBackward0, (x,), out, (shape, key))
    return out


def _copy_at(data, key):
    """data[key] as a new array (for a 0-dim input the key is (Ellipsis,), which views)."""
    return data[key].copy() if data.ndim == 0 else data[key]


def _along(idx, d):
    """The numpy index that picks x[..., idx[i, j, ...], ...] at each position of `idx`."""
    if idx.ndim == 0:
        return (Ellipsis,)
    key = list(np.indices(idx.shape, sparse=True))
    key[d] = idx
    return tuple(key)


def _index_tensor(index, name):
    if not is_tensor(index):
        raise TypeError(f"{name}(): the index must be a Tensor, not {type(index).__name__}")
    if index._dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(f"{name}(): the index must be an int64 or int32 tensor, got "
                           f"{index._dtype}")
    return index._data.astype(np.int64, copy=False)


def select(x, dim, index):
    nd = x._data.ndim
    if nd == 0:
        raise IndexError("select() cannot index a 0-dim tensor")
    d = _dim(dim, nd)
    size = x._data.shape[d]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {d} with size {size}")
    key = (slice(None),) * d + (index % size, Ellipsis)  # Ellipsis: a 0-d view, not a scalar
    return make_view(x, x._data[key], ("getitem", key), SelectBackward0, (x._data.shape, key))


def _slice(x, dim, s):
    if s.step is not None and s.step <= 0:
        raise ValueError("slices need a positive step")
    key = (slice(None),) * dim + (s,)
    return make_view(x, x._data[key], ("getitem", key), SliceBackward0, (x._data.shape, key))


def _check_not_0d(x, name):
    if x._data.ndim == 0:
        raise RuntimeError(f"{name}() needs a tensor with at least one dimension, got a 0-dim "
                           f"tensor")


def narrow(x, dim, start, length):
    _check_not_0d(x, "narrow")
    d = _dim(dim, x._data.ndim)
    size = x._data.shape[d]
    if not -size <= start <= size:
        raise IndexError(f"narrow(): start {start} is out of range for a dimension of size "
                         f"{size}")
    if start < 0:
        start += size
    if length < 0 or start + length > size:
        raise RuntimeError(f"narrow(): start {start} and length {length} do not fit in a "
                           f"dimension of size {size}")
    return _slice(x, d, slice(start, start + length))


# -- joins and splits --------------------------------------------------------------------------

def cat(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat() needs a non-empty sequence of tensors")
    from runtime.ops._core import result_dtype

    dt = result_dtype(*tensors)
    skip = [t._data.ndim == 1 and t._data.shape[0] == 0 for t in tensors]
    parts = [t for t, s in zip(tensors, skip) if not s] or tensors
    d = _dim(dim, parts[0]._data.ndim)
    try:
        data = np.concatenate([t._data.astype(dt.np, copy=False) for t in parts], axis=d)
    except ValueError as e:
        raise RuntimeError(f"cat(): the tensors' shapes do not fit together: {e}") from None
    out = wrap(np.ascontiguousarray(data), dt)  # contiguous whatever the inputs' layout
    if any_requires_grad(tensors):
        sizes = [None if s else t._data.shape[d] for t, s in zip(tensors, skip)]
        record(CatBackward0, tensors, out, (d, sizes))
    return out


def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack() needs a non-empty sequence of tensors")
    from runtime.ops._core import result_dtype

    dt = result_dtype(*tensors)
    nd = tensors[0]._data.ndim + 1
    if not -nd <= dim < nd:
        raise IndexError(f"stack(): dimension {dim} is out of range for the result's {nd} "
                         f"dimensions (valid: {-nd} to {nd - 1})")
    d = dim % nd
    try:
        data = np.stack([t._data.astype(dt.np, copy=False) for t in tensors], axis=d)
    except ValueError:
        raise RuntimeError("stack() needs tensors of equal shape, got "
                           f"{[list(t._data.shape) for t in tensors]}") from None
    out = wrap(np.ascontiguousarray(data), dt)
    if any_requires_grad(tensors):
        record(StackBackward0, tensors, out, (d,))
    return out


def split(x, split_size_or_sections=None, dim=0, *, split_size=None):
    """Views of consecutive pieces along `dim`: of `split_size` elements each (the last may
    be shorter), or of the listed sizes. `split_size=` is Tensor.split's keyword."""
    if split_size is not None:
        split_size_or_sections = split_size
    _check_not_0d(x, "split")
    d = _dim(dim, x._data.ndim)
    size = x._data.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [int(n) for n in split_size_or_sections]
        if any(n < 0 for n in sizes):
            raise RuntimeError(f"split(): section sizes must not be negative, got {sizes}")
        if sum(sizes) != size:
            raise RuntimeError(f"split(): sizes {sizes} do not add up to {size}")
        return _split_views(x, d, sizes, "SplitWithSizesBackward0")
    return _split_views(x, d, _pieces(int(split_size_or_sections), size), "SplitBackward0")


def _pieces(step, size):
    """The sizes split(step) cuts a dimension of `size` elements into."""
    if step < 0:
        raise RuntimeError(f"split(): the split size must not be negative, got {step}")
    if step == 0:
        if size:
            raise RuntimeError(f"split(): a split size of 0 only fits a dimension of size 0, "
                               f"this one has {size}")
        return [0]
    return [min(step, size - i) for i in range(0, size, step)] or [0]


def chunk(x, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError(f"chunk(): the number of chunks must be positive, got {chunks}")
    _check_not_0d(x, "chunk")
    d = _dim(dim, x._data.ndim)
    size = x._data.shape[d]
    if size == 0:
        return _split_views(x, d, [0] * chunks, "SplitWithSizesBackward0")
    return split(x, -(-size // chunks), d)


def unsafe_chunk(x, chunks, dim=0):
    """chunk whose pieces are fresh tensors rather than views (UnsafeSplitBackward0), so
    they may be modified in place freely, as torch.unsafe_chunk."""
    if chunks <= 0:
        raise RuntimeError(f"unsafe_chunk(): the number of chunks must be positive, got "
                           f"{chunks}")
    _check_not_0d(x, "unsafe_chunk")
    d = _dim(dim, x._data.ndim)
    size = x._data.shape[d]
    sizes = _pieces(-(-size // chunks), size) if size else [0] * chunks
    outs, start = [], 0
    for n in sizes:
        key = (slice(None),) * d + (slice(start, start + n),)
        outs.append(x._new_like(x._data[key].copy()))
        start += n
    if any_requires_grad((x,)):
        cls = node_class("UnsafeSplitBackward0", "split", multi_output=True)
        record_multi(cls, (x,), outs, (x._data.shape, d, sizes))
    return tuple(outs)


def matrix_transpose(x):
    """x.mT: the last two dimensions swapped; a 0-dim tensor is its own transpose."""
    nd = x._data.ndim
    if nd == 0:
        return x
    if nd == 1:
        raise RuntimeError("mT needs a matrix or a batch of matrices, got a 1-D tensor")
    return transpose(x, -2, -1)


def _split_views(x, d, sizes, node_name):
    outs, start = [], 0
    for n in sizes:
        key = (slice(None),) * d + (slice(start, start + n),)
        outs.append(make_view(x, x._data[key], ("getitem", key), creation=MULTI_OUTPUT))
        start += n
    if any_requires_grad((x,)):
        cls = node_class(node_name, "split", multi_output=True)
        record_multi(cls, (x,), outs, (x._data.shape, d, sizes))
    return tuple(outs)


def unbind(x, dim=0):
    d = _dim(dim, x._data.ndim)
    n = x._data.shape[d]
    outs = []
    for i in range(n):
        key = (slice(None),) * d + (i, Ellipsis)
        outs.append(make_view(x, x._data[key], ("getitem", key), creation=MULTI_OUTPUT))
    if any_requires_grad((x,)) and n:
        cls = node_class("UnbindBackward0", "unbind", multi_output=True)
        record_multi(cls, (x,), outs, (x._data.shape, d))
    return tuple(outs)


def repeat(x, *repeats):
    """x tiled `repeats[i]` times along each dimension (leading repeats add dimensions)."""
    reps = _sizes(repeats)
    shape = x._data.shape
    if len(reps) < len(shape):
        raise RuntimeError(f"repeat(): {len(reps)} repeat counts given for a tensor with "
                           f"{len(shape)} dimensions; give at least one per dimension")
    if any(r < 0 for r in reps):
        raise RuntimeError(f"repeat(): repeat counts must not be negative, got {list(reps)}")
    data = np.tile(x._data, reps).reshape(_repeated_shape(shape, reps))
    out = wrap(c_contiguous(data), x._dtype)  # PyTorch's repeat is contiguous
    if any_requires_grad((x,)):
        record(RepeatBackward0, (x,), out, (tuple(reps), shape))
    return out


def _repeated_shape(shape, reps):
    padded = (1,) * (len(reps) - len(shape)) + tuple(shape)
    return tuple(n * r for n, r in zip(padded, reps))


# -- copies and conversions --------------------------------------------------------------------

def clone(x, order="K"):
    """A copy; `order` "K" keeps the memory layout (PyTorch's preserve_format), "C" makes it
    contiguous."""
    data = np.array(x._data, copy=True, order=order)
    out = wrap(like_input(data, x._data) if order == "K" else data, x._dtype)
    if any_requires_grad((x,)):
        record(CloneBackward0, (x,), out, ())
    return out


def contiguous(x):
    return x if x._data.flags.c_contiguous else clone(x, "C")


def to_dtype(x, dt, copy=False):
    if dt is x._dtype and not copy:
        return x
    out = wrap(like_input(x._data.astype(dt.np), x._data), dt)
    if dt.is_floating_point and any_requires_grad((x,)):
        record(ToCopyBackward0, (x,), out, ())
    return out

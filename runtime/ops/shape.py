"""Forward kernels of shape operations: views (sharing memory and the version counter),
indexing, joins and splits, copies and dtype conversion."""

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

_node = node_class
ViewBackward0 = _node("ViewBackward0", "view")
UnsafeViewBackward0 = _node("UnsafeViewBackward0", "unsafe_view")
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
        data = np.reshape(x._data, shape, copy=False)
    except ValueError:
        raise RuntimeError(
            "view(): the requested shape needs a copy because the tensor's memory layout "
            "does not fit it (it is not contiguous); use .reshape(...) instead") from None
    return make_view(x, data, ("reshape", shape), ViewBackward0, (x._data.shape,))


def reshape(x, *shape):
    shape = _infer(_sizes(shape), x._data.size)
    try:
        data = np.reshape(x._data, shape, copy=False)
    except ValueError:
        return unsafe_view(clone(x), shape)
    return make_view(x, data, ("reshape", shape), ViewBackward0, (x._data.shape,))


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
    return reshape(x, shape[:s] + (-1,) + shape[e + 1:])


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
        new = tuple(s for s in shape if s != 1)
        cls = SqueezeBackward0
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        drop = {_dim(d, nd) for d in dims} if nd else set()
        new = tuple(s for i, s in enumerate(shape) if not (i in drop and s == 1))
        cls = SqueezeBackward1 if isinstance(dim, int) else SqueezeBackward2
    return make_view(x, x._data.reshape(new), ("reshape", new), cls, (shape,))


def squeeze_dim_node(x, dim, cls):
    """squeeze(dim) recorded under a specific node class (matmul's SqueezeBackward4)."""
    shape = x._data.shape
    new = shape[:dim] + shape[dim + 1:]
    return make_view(x, x._data.reshape(new), ("reshape", new), cls, (shape,))


def unsqueeze(x, dim):
    nd = x._data.ndim
    if not -nd - 1 <= dim <= nd:
        raise IndexError(f"unsqueeze(): dimension {dim} is out of range for a tensor with "
                         f"{nd} dimensions (valid: {-nd - 1} to {nd})")
    d = dim % (nd + 1)
    shape = x._data.shape
    new = shape[:d] + (1,) + shape[d:]
    return make_view(x, x._data.reshape(new), ("reshape", new), UnsqueezeBackward0, (shape,))


def expand(x, *sizes):
    sizes = _sizes(sizes)
    shape = x._data.shape
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(f"expand(): the target has fewer dimensions ({len(sizes)}) than the "
                           f"tensor ({len(shape)})")
    new = tuple(shape[i - lead] if (s == -1 and i >= lead) else s for i, s in enumerate(sizes))
    try:
        data = np.broadcast_to(x._data, new)
    except ValueError:
        raise RuntimeError(f"expand(): a tensor of shape {list(shape)} cannot be expanded to "
                           f"{list(sizes)}; only dimensions of size 1 can grow") from None
    return make_view(x, data, ("expand", new), ExpandBackward0, (shape,))


def expand_as(x, other):
    return expand(x, other._data.shape)


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
    if isinstance(k, list):
        return np.asarray([_plain_key(i) if is_tensor(i) else i for i in k])
    return k


def getitem(x, key):
    key = key if isinstance(key, tuple) else (key,)
    if any(_is_advanced(k) for k in key):
        return _index(x, tuple(_plain_key(k) for k in key))
    return _basic_index(x, key)


def _index(x, key):
    try:
        data = x._data[key]
    except IndexError as e:
        raise IndexError(f"index out of range: {e}") from None
    out = wrap(data, x._dtype)
    if any_requires_grad((x,)):
        record(IndexBackward0, (x,), out, (x._data.shape, key))
    return out


def _basic_index(x, key):
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
            if k != slice(None):
                out = _slice(out, dim, k)
                touched = True
            dim += 1
        else:
            out = select(out, dim, _as_int(k))
            touched = True
    if not touched:
        out = make_view(x, x._data[...], ("getitem", (Ellipsis,)), AliasBackward0, ())
    return out


def _as_int(k):
    if is_tensor(k):
        return int(k._data)
    return int(k.__index__())


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


def narrow(x, dim, start, length):
    d = _dim(dim, x._data.ndim)
    return _slice(x, d, slice(start, start + length))


# -- joins and splits --------------------------------------------------------------------------

def cat(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("cat() needs a non-empty sequence of tensors")
    from runtime.ops._core import result_dtype

    dt = result_dtype(*tensors)
    skip = [t._data.ndim == 1 and t._data.shape[0] == 0 for t in tensors]
    parts = [t for t, s in zip(tensors, skip) if not s] or tensors
    d = _dim(dim, parts[0]._data.ndim)
    try:
        data = np.concatenate([t._data.astype(dt.np, copy=False) for t in parts], axis=d)
    except ValueError as e:
        raise RuntimeError(f"cat(): the tensors' shapes do not fit together: {e}") from None
    out = wrap(data, dt)
    if any_requires_grad(tensors):
        sizes = [0 if s else t._data.shape[d] for t, s in zip(tensors, skip)]
        record(CatBackward0, tensors, out, (d, sizes))
    return out


def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack() needs a non-empty sequence of tensors")
    from runtime.ops._core import result_dtype

    dt = result_dtype(*tensors)
    d = dim % (tensors[0]._data.ndim + 1)
    try:
        data = np.stack([t._data.astype(dt.np, copy=False) for t in tensors], axis=d)
    except ValueError:
        raise RuntimeError("stack() needs tensors of equal shape, got "
                           f"{[list(t._data.shape) for t in tensors]}") from None
    out = wrap(data, dt)
    if any_requires_grad(tensors):
        record(StackBackward0, tensors, out, (d,))
    return out


def split(x, split_size_or_sections, dim=0):
    d = _dim(dim, x._data.ndim)
    size = x._data.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        sizes = [min(step, size - i) for i in range(0, size, step)] or [0]
        name = "SplitBackward0"
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != size:
            raise RuntimeError(f"split(): sizes {sizes} do not add up to {size}")
        name = "SplitWithSizesBackward0"
    return _split_views(x, d, sizes, name)


def chunk(x, chunks, dim=0):
    d = _dim(dim, x._data.ndim)
    size = x._data.shape[d]
    step = -(-size // chunks) if size else 1
    return split(x, step, d)


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


# -- copies and conversions --------------------------------------------------------------------

def clone(x):
    out = wrap(np.array(x._data, copy=True), x._dtype)
    if any_requires_grad((x,)):
        record(CloneBackward0, (x,), out, ())
    return out


def contiguous(x):
    return x if x._data.flags.c_contiguous else clone(x)


def to_dtype(x, dt, copy=False):
    if dt is x._dtype and not copy:
        return x
    out = wrap(x._data.astype(dt.np), dt)
    if dt.is_floating_point and x._dtype.is_floating_point and any_requires_grad((x,)):
        record(ToCopyBackward0, (x,), out, ())
    return out

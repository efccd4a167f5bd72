"""Forward kernels of issue 16's indexing and shape family: scatters (scatter, scatter_add,
scatter_reduce, index_add/fill/copy/put, masked_scatter), gathers (masked_select, take,
take_along_dim), reorderings (flip, roll, movedim), triangles and diagonals, repetition,
broadcasting, splitting, windows (unfold), sum_to_size, meshgrid / cartesian_prod, and the
in-place view ops t_ / transpose_ / squeeze_ / unsqueeze_.

Ops that PyTorch builds from other ops (movedim, take_along_dim, repeat_interleave, meshgrid,
diff ...) are built from ours the same way, so their graphs carry the same node names.
Scatter-like ops compute on a copy; their rules use the numpy key saved here.
"""

import warnings

import numpy as np

from runtime import dtypes
from runtime.autograd_meta import (
    any_requires_grad,
    check_inplace,
    make_view,
    meta_of,
    new_node,
    record,
)
from runtime.function import save_input
from runtime.ops._family import node, record_freed
from runtime.grad_mode import _state
from runtime.ops import shape as S
from runtime.ops._core import check_operand, is_tensor, wrap
from runtime.ops.layout import like_input
from runtime.ops.shape import _along, _dim, _index_tensor, _sizes
from runtime.rules.numpy_breadth import diagonal_view, unfold_view


ScatterBackward0 = node("ScatterBackward0", "scatter")
ScatterBackward1 = node("ScatterBackward1", "scatter_value")
ScatterAddBackward0 = node("ScatterAddBackward0", "scatter_add")
ScatterReduceBackward0 = node("ScatterReduceBackward0", "scatter_reduce")
IndexAddBackward0 = node("IndexAddBackward0", "index_add")
IndexFillBackward0 = node("IndexFillBackward0", "index_fill")
IndexFillBackward1 = node("IndexFillBackward1", "index_fill_tensor")
IndexCopyBackward0 = node("IndexCopyBackward0", "index_copy")
IndexPutBackward0 = node("IndexPutBackward0", "index_put")
IndexPutAccumulateBackward0 = node("IndexPutBackward0", "index_put_accumulate")
MaskedSelectBackward0 = node("MaskedSelectBackward0", "masked_select")
MaskedScatterBackward0 = node("MaskedScatterBackward0", "masked_scatter")
TakeBackward0 = node("TakeBackward0", "take")
FlipBackward0 = node("FlipBackward0", "flip")
RollBackward0 = node("RollBackward0", "roll")
TrilBackward0 = node("TrilBackward0", "tril")
TriuBackward0 = node("TriuBackward0", "triu")
DiagonalBackward0 = node("DiagonalBackward0", "diagonal_at")
DiagonalCopyBackward0 = node("DiagonalBackward0_copy", "diagonal_at")
DiagEmbedBackward0 = node("DiagEmbedBackward0", "diag_embed_at")
TraceBackward0 = node("TraceBackward0", "trace")
UnfoldBackward0 = node("UnfoldBackward0", "unfold")


def _check_index_range(idx, size, name, d):
    bad = (idx < 0) | (idx >= size)
    if np.any(bad):
        raise RuntimeError(f"{name}(): index {int(idx[bad].flat[0])} is out of bounds for "
                           f"dimension {d} with size {size}")


# -- scatter family ----------------------------------------------------------------------------

def _scatter_key(x, dim, index, src, name):
    """(dim, numpy key of the scattered positions, slices of src that are used)."""
    nd = x._data.ndim
    d = _dim(dim, nd)
    idx = _index_tensor(index, name)
    if idx.ndim != nd and idx.size and not (nd == 0 and idx.size == 1):
        raise RuntimeError(f"{name}(): the index must have as many dimensions as the input "
                           f"({nd}), got {idx.ndim}")
    _check_index_range(idx, x._data.shape[d] if nd else 1, name, d)
    if nd == 0:  # one element: the key and the used part of src are the whole tensors
        return d, (), ()
    for i, n in enumerate(idx.shape):
        if (i != d and n > x._data.shape[i]) or (src is not None and n > src._data.shape[i]):
            raise RuntimeError(f"{name}(): the index of shape {list(idx.shape)} is larger than "
                               f"the input or the source in dimension {i}")
    return d, _along(idx, d), tuple(slice(0, n) for n in idx.shape)


def _source(x, src, name):
    if not is_tensor(src):
        raise TypeError(f"{name}(): the source must be a Tensor, not {type(src).__name__}")
    if src._dtype is not x._dtype:
        raise RuntimeError(f"{name}(): the source's dtype {src._dtype} differs from the "
                           f"input's {x._dtype}")
    return src


def scatter(x, dim, index, src=None, value=None, reduce=None):
    """A copy of x with src[i][j] (or a number) written at x[index[i][j]][j] (dim 0)."""
    if src is None:
        src = value
    if reduce is not None:
        return _scatter_legacy(x, dim, index, src, reduce)
    if is_tensor(src):
        src = _source(x, src, "scatter")
        d, key, slices = _scatter_key(x, dim, index, src, "scatter")
        data = np.array(x._data)
        data[key] = src._data[slices]
        out = wrap(data, x._dtype)
        if any_requires_grad((x, src)):
            record_freed(ScatterBackward0, (x, src), out, (key, slices, src._data.shape))
        return out
    value = check_operand(src, "scatter")
    d, key, _ = _scatter_key(x, dim, index, None, "scatter")
    data = np.array(x._data)
    data[key] = value
    out = wrap(data, x._dtype)
    if any_requires_grad((x,)):
        record_freed(ScatterBackward1, (x,), out, (key,))
    return out


_LEGACY_REDUCE = {"add": np.add, "multiply": np.multiply}


class NotImplementedBackward(node("NotImplemented", "scatter_legacy_reduce")):
    """PyTorch's node for an op without a derivative: its backward raises."""

    __slots__ = ()

    @classmethod
    def name(cls):
        return "torch::autograd::NotImplemented"


NotImplementedBackward.__name__ = NotImplementedBackward.__qualname__ = "NotImplemented"


def _scatter_legacy(x, dim, index, src, reduce):
    """scatter(reduce="add" / "multiply"): computed, but without a derivative (PyTorch
    records a NotImplemented node whose backward raises)."""
    if reduce not in _LEGACY_REDUCE:
        raise RuntimeError(f"scatter(): reduce must be 'add' or 'multiply', not {reduce!r}")
    tensor_src = is_tensor(src)
    if tensor_src:
        _source(x, src, "scatter")
    d, key, slices = _scatter_key(x, dim, index, src if tensor_src else None, "scatter")
    data = np.array(x._data)
    values = src._data[slices] if tensor_src else check_operand(src, "scatter")
    _LEGACY_REDUCE[reduce].at(data, key, np.broadcast_to(values, data[key].shape))
    out = wrap(data, x._dtype)
    live = tuple(t for t in (x, src) if is_tensor(t) and any_requires_grad((t,)))
    if live:
        record(NotImplementedBackward, live, out, ())
    return out


def scatter_add(x, dim, index, src):
    src = _source(x, src, "scatter_add")
    d, key, slices = _scatter_key(x, dim, index, src, "scatter_add")
    data = np.array(x._data)
    np.add.at(data, key, src._data[slices])
    out = wrap(data, x._dtype)
    if any_requires_grad((x, src)):
        record_freed(ScatterAddBackward0, (x, src), out, (key, slices, src._data.shape))
    return out


_REDUCE_AT = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
              "amin": np.minimum}
_IDENTITY = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}


def scatter_reduce(x, dim, index, src, reduce, *, include_self=True):
    if reduce not in _REDUCE_AT:
        raise RuntimeError(f"scatter_reduce(): reduce must be one of sum, prod, mean, amax, "
                           f"amin, not {reduce!r}")
    src = _source(x, src, "scatter_reduce")
    d, key, slices = _scatter_key(x, dim, index, src, "scatter_reduce")
    part = src._data[slices]
    hit = np.zeros(x._data.shape, bool)
    hit[key] = True
    data = np.array(x._data)
    if not include_self:
        data[hit] = _identity(reduce, data.dtype)
    _REDUCE_AT[reduce].at(data, key, part)
    count = np.zeros(x._data.shape, np.int64)
    np.add.at(count, key, 1)
    count += 1 if include_self else 0
    if reduce == "mean":
        data = _mean_of(data, np.maximum(count, 1))
    out = wrap(data, x._dtype)
    if any_requires_grad((x, src)):
        dropped = hit & (not include_self)
        weights = _reduce_weights(reduce, x, part, out, key, count, dropped)
        args = (key, slices, src._data.shape, weights)
        if reduce == "prod":  # weights that depend on x and src: kept for double backward
            args += (save_input(x), save_input(src), d, index, ~dropped)
        record_freed(ScatterReduceBackward0, (x, src), out, args)
    return out


def _identity(reduce, np_dtype):
    value = _IDENTITY[reduce]
    if np.dtype(np_dtype).kind != "f" and reduce in ("amax", "amin"):
        info = np.iinfo(np_dtype)
        value = info.min if reduce == "amax" else info.max
    return value


def _mean_of(total, count):
    if total.dtype.kind == "f":
        return total / count
    return total // count


def _reduce_weights(reduce, x, part, out, key, count, dropped):
    """(d out / d x, d out / d src) elementwise, fixed by the forward values: 1 for sum,
    1/count for mean, the tie share for amax/amin, the other factors' product for prod."""
    dt = x._dtype.np
    keep = (~dropped).astype(dt)
    if reduce == "prod":
        return _prod_weights(x._data, part, key, dropped)
    if reduce == "sum":
        return keep, np.ones(part.shape, dt)
    if reduce == "mean":
        share = 1 / np.maximum(count, 1).astype(dt)
        return keep * share, share[key].copy()
    self_wins = (x._data == out._data) & ~dropped
    src_wins = part == out._data[key]
    ties = np.array(self_wins, dt)
    np.add.at(ties, key, src_wins.astype(dt))
    share = 1 / np.maximum(ties, 1)
    return (self_wins * share).astype(dt), (src_wins * share[key]).astype(dt)


def _prod_weights(x, part, key, dropped):
    """Products of the other factors of each output, without dividing (exact with zeros)."""
    if x.ndim == 0:  # one output, at most one source
        return np.where(dropped, 0, part).astype(x.dtype), np.where(dropped, 1, x).astype(x.dtype)
    sources = np.ones(x.shape, x.dtype)
    np.multiply.at(sources, key, part)
    w_self = np.where(dropped, 0, sources).astype(x.dtype)
    own = np.where(dropped, 1, x)
    with np.errstate(all="ignore"):
        w_src = (own * sources)[key] / part
    target = np.ravel_multi_index(np.broadcast_arrays(*key), x.shape)
    for s in zip(*np.nonzero(part == 0)):  # a zero factor: multiply the others explicitly
        same = target == target[s]
        same[s] = False
        w_src[s] = own.reshape(-1)[target[s]] * np.prod(part[same])
    return w_self, w_src.astype(x.dtype)


def _dim_key(x, dim, index, name):
    """(dim, key selecting the slices at `index` along dim, the index vector)."""
    d = _dim(dim, x._data.ndim)
    idx = _index_tensor(index, name)
    if idx.ndim > 1:
        raise IndexError(f"{name}(): the index must be a vector, got {idx.ndim}-D")
    idx = idx.reshape(-1)
    size = x._data.shape[d] if x._data.ndim else 1
    _check_index_range(idx, size, name, d)
    return d, (slice(None),) * d + (idx,) if x._data.ndim else (Ellipsis,), idx


def _check_slices(x, key, source, name):
    want = x._data[key].shape
    if tuple(source._data.shape) != want:
        raise RuntimeError(f"{name}(): the source must have shape {list(want)}, got "
                           f"{list(source._data.shape)}")


def index_add(x, dim, index, source, *, alpha=1):
    source = _source(x, source, "index_add")
    d, key, _ = _dim_key(x, dim, index, "index_add")
    _check_slices(x, key, source, "index_add")
    data = np.array(x._data)
    np.add.at(data, key, source._data * alpha if alpha != 1 else source._data)
    out = wrap(data, x._dtype)
    if any_requires_grad((x, source)):
        record_freed(IndexAddBackward0, (x, source), out, (key, alpha))
    return out


def index_copy(x, dim, index, source):
    source = _source(x, source, "index_copy")
    d, key, _ = _dim_key(x, dim, index, "index_copy")
    _check_slices(x, key, source, "index_copy")
    data = np.array(x._data)
    data[key] = source._data
    out = wrap(data, x._dtype)
    if any_requires_grad((x, source)):
        record_freed(IndexCopyBackward0, (x, source), out, (key,))
    return out


def index_fill(x, dim, index, value):
    d, key, _ = _dim_key(x, dim, index, "index_fill")
    data = np.array(x._data)
    if is_tensor(value):
        if value._data.ndim:
            raise RuntimeError(f"index_fill(): a tensor value must be 0-dimensional, got "
                               f"{value._data.ndim} dimension(s)")
        data[key] = value._data
        out = wrap(data, x._dtype)
        if any_requires_grad((x, value)):
            record_freed(IndexFillBackward1, (x, value), out, (key,))
        return out
    data[key] = check_operand(value, "index_fill")
    out = wrap(data, x._dtype)
    if any_requires_grad((x,)):
        record_freed(IndexFillBackward0, (x,), out, (key,))
    return out


def index_put(x, indices, values, accumulate=False):
    """x with values written (or added) at x[indices], indices a tuple of index tensors."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError("index_put(): indices must be a tuple of Tensors")
    key = tuple(S._plain_key(i) for i in indices)
    values = check_operand(values, "index_put")
    check_same_dtype(x, values)
    v = values._data if is_tensor(values) else values
    data = np.array(x._data)
    try:
        if accumulate:
            np.add.at(data, key, np.broadcast_to(v, data[key].shape))
        else:
            data[key] = v
    except IndexError as e:
        raise IndexError(f"index_put(): {e}") from None
    out = wrap(data, x._dtype)
    if any_requires_grad((x, values)):
        vshape = values._data.shape if is_tensor(values) else ()
        cls = IndexPutAccumulateBackward0 if accumulate else IndexPutBackward0
        record_freed(cls, (x, values), out, (key, vshape))
    return out


def check_same_dtype(x, values):
    """index_put_ writes a tensor of values only into a tensor of the same dtype."""
    if is_tensor(values) and values._dtype is not x._dtype:
        raise RuntimeError(f"index_put_(): the values have dtype {values._dtype} but the "
                           f"tensor written into has {x._dtype}; they must be the same")


def _bool_mask(mask, name):
    if not is_tensor(mask) or mask._dtype is not dtypes.bool_:
        raise RuntimeError(f"{name}(): the mask must be a bool tensor")
    return mask._data


def masked_select(x, mask):
    m = _bool_mask(mask, "masked_select")
    try:
        shape = np.broadcast_shapes(x._data.shape, m.shape)
    except ValueError:
        raise RuntimeError(f"masked_select(): shapes {list(x._data.shape)} and "
                           f"{list(m.shape)} cannot be broadcast together") from None
    m = np.broadcast_to(m, shape)
    out = wrap(np.broadcast_to(x._data, shape)[m], x._dtype)
    if any_requires_grad((x,)):
        record_freed(MaskedSelectBackward0, (x,), out, (shape, np.array(m), x._data.shape))
    return out


def masked_scatter(x, mask, source):
    m = _bool_mask(mask, "masked_scatter")
    source = _source(x, source, "masked_scatter")
    try:
        m = np.array(np.broadcast_to(m, x._data.shape))
    except ValueError:
        raise RuntimeError(f"masked_scatter(): a mask of shape {list(mask._data.shape)} does "
                           f"not broadcast to the input's shape {list(x._data.shape)}") from None
    count = int(m.sum())
    if source._data.size < count:
        raise RuntimeError(f"masked_scatter(): the source has {source._data.size} elements but "
                           f"the mask selects {count}")
    data = np.array(x._data)
    data[m] = source._data.reshape(-1)[:count]
    out = wrap(data, x._dtype)
    if any_requires_grad((x, source)):
        record_freed(MaskedScatterBackward0, (x, source), out, (m, source._data.shape, count))
    return out


def take(x, index):
    """x viewed as 1-D, read at `index` (negative indices count from the end)."""
    idx = _index_tensor(index, "take")
    n = x._data.size
    if np.any((idx < -n) | (idx >= n)):
        raise IndexError(f"take(): an index is out of range for a tensor of {n} elements")
    flat = np.where(idx < 0, idx + n, idx)
    out = wrap(x._data.reshape(-1)[flat], x._dtype)
    if any_requires_grad((x,)):
        record_freed(TakeBackward0, (x,), out, (flat, x._data.shape))
    return out


def take_along_dim(x, indices, dim=None):
    """gather() after broadcasting x and indices except along dim (flattened x for None)."""
    if dim is None:
        return S.gather(S.reshape(x, (-1,)), 0, S.reshape(indices, (-1,)))
    nd = x._data.ndim
    d = _dim(dim, nd)
    xs, ids = list(x._data.shape), list(indices._data.shape)
    if len(ids) != nd:
        raise RuntimeError(f"take_along_dim(): the indices must have {nd} dimensions, got "
                           f"{len(ids)}")
    xs[d] = ids[d] = 1
    try:
        common = list(np.broadcast_shapes(tuple(xs), tuple(ids)))
    except ValueError:
        raise RuntimeError("take_along_dim(): the input and the indices do not broadcast "
                           "outside dim") from None
    x_shape, i_shape = list(common), list(common)
    x_shape[d], i_shape[d] = x._data.shape[d], indices._data.shape[d]
    return S.gather(S.expand(x, x_shape), d, S.expand(indices, i_shape))


# -- reorderings -------------------------------------------------------------------------------

def _dims(dims, nd):
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    out = tuple(_dim(d, nd) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"a dimension appears more than once in {list(dims)}")
    return out


def flip(x, *dims):
    dims = _dims(_sizes(dims), x._data.ndim)
    data = like_input(np.flip(x._data, dims).copy(), x._data) if x._data.ndim else \
        x._data.copy()
    out = wrap(data, x._dtype)
    if any_requires_grad((x,)):
        record(FlipBackward0, (x,), out, (dims if x._data.ndim else (),))
    return out


def fliplr(x):
    if x._data.ndim < 2:
        raise RuntimeError("fliplr() needs a tensor with at least 2 dimensions")
    return flip(x, 1)


def flipud(x):
    if x._data.ndim < 1:
        raise RuntimeError("flipud() needs a tensor with at least 1 dimension")
    return flip(x, 0)


def roll(x, shifts, dims=None):
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if dims is not None and x._data.ndim == 0:
        raise IndexError("roll(): a 0-dim tensor has no dimension to roll along")
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError("roll(): without dims, give exactly one shift")
        axes = None
        shifts_arg = shifts[0]
    else:
        axes = _dims(dims, x._data.ndim)
        if len(axes) != len(shifts):
            raise RuntimeError(f"roll(): {len(shifts)} shifts for {len(axes)} dims")
        shifts_arg = shifts
    out = wrap(np.roll(x._data, shifts_arg, axes), x._dtype)
    if any_requires_grad((x,)):
        record(RollBackward0, (x,), out, (shifts, axes))
    return out


def movedim(x, source, destination):
    nd = x._data.ndim
    src = _dims(source, nd)
    dst = _dims(destination, nd)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim(): {len(src)} source dims but {len(dst)} destinations")
    if nd == 0:  # nothing moves: an alias, as PyTorch returns
        return S._basic_index(x, ())
    rest = [d for d in range(nd) if d not in src]
    perm = [None] * nd
    for s, t in zip(src, dst):
        perm[t] = s
    it = iter(rest)
    perm = [p if p is not None else next(it) for p in perm]
    return S.permute(x, tuple(perm))


def unflatten(x, dim, sizes):
    if x._data.ndim == 0:
        raise RuntimeError("unflatten() needs a tensor with at least one dimension")
    d = _dim(dim, x._data.ndim)
    shape = x._data.shape
    sizes = tuple(sizes)
    try:
        inner = S._infer(sizes, shape[d])
    except RuntimeError:
        raise RuntimeError(f"unflatten(): sizes {list(sizes)} do not multiply to the size "
                           f"{shape[d]} of dimension {d}") from None
    return S.reshape(x, shape[:d] + inner + shape[d + 1:])


# -- triangles and diagonals -------------------------------------------------------------------

def _triangle(x, k, lower):
    if x._data.ndim < 2:
        raise RuntimeError(f"{'tril' if lower else 'triu'}() needs a tensor with at least 2 "
                           f"dimensions")
    out = wrap((np.tril if lower else np.triu)(x._data, k), x._dtype)
    if any_requires_grad((x,)):
        record(TrilBackward0 if lower else TriuBackward0, (x,), out, (k,))
    return out


def tril(x, diagonal=0):
    return _triangle(x, diagonal, True)


def triu(x, diagonal=0):
    return _triangle(x, diagonal, False)


def _diag_dims(nd, dim1, dim2):
    d1, d2 = _dim(dim1, nd), _dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"the two diagonal dimensions must differ, got {dim1} and {dim2}")
    return d1, d2


def diagonal(x, offset=0, dim1=0, dim2=1):
    """The diagonal as a view sharing x's memory (its last dimension)."""
    d1, d2 = _diag_dims(x._data.ndim, dim1, dim2)
    data = diagonal_view(x._data, offset, d1, d2)
    return make_view(x, data, ("diagonal_at", (offset, d1, d2)), DiagonalBackward0,
                     (x._data.shape, offset, d1, d2))


def diag_embed(x, offset=0, dim1=-2, dim2=-1):
    """Matrices (along dim1, dim2) with the last dimension of x on their offset diagonal."""
    nd = x._data.ndim + 1
    d1, d2 = _diag_dims(nd, dim1, dim2)
    return _diag_embed(x, offset, d1, d2)


def _diag_embed(x, offset, d1, d2):
    n = (x._data.shape[-1] if x._data.ndim else 1) + abs(offset)
    rest = iter(x._data.shape[:-1])
    shape = tuple(n if i in (d1, d2) else next(rest) for i in range(x._data.ndim + 1))
    data = np.zeros(shape, x._dtype.np)
    diagonal_view(data, offset, d1, d2)[...] = x._data
    out = wrap(data, x._dtype)
    if any_requires_grad((x,)):
        record(DiagEmbedBackward0, (x,), out, (offset, d1, d2))
    return out


def diag(x, diagonal=0):
    """A vector's diagonal matrix, or a copy of a matrix's diagonal (offset `diagonal`)."""
    nd = x._data.ndim
    if nd == 1:
        return _diag_embed(x, diagonal, 0, 1)
    if nd != 2:
        raise RuntimeError(f"diag() expects a 1-D or 2-D tensor, got {nd}-D")
    out = wrap(np.diagonal(x._data, diagonal).copy(), x._dtype)
    if any_requires_grad((x,)):
        record(DiagonalCopyBackward0, (x,), out, (x._data.shape, diagonal, 0, 1))
    return out


def trace(x):
    if x._data.ndim != 2:
        raise RuntimeError(f"trace() needs a matrix, got a {x._data.ndim}-D tensor")
    dt = x._dtype if x._dtype.category == dtypes.FLOAT else dtypes.int64
    out = wrap(np.trace(x._data, dtype=dt.np), dt)
    if any_requires_grad((x,)):
        record(TraceBackward0, (x,), out, (x._data.shape,))
    return out


# -- repetition and broadcasting ---------------------------------------------------------------

def repeat_interleave(x, repeats=None, dim=None, *, output_size=None):
    """Each element (or slice along dim) repeated; with only a tensor of counts, the
    indices 0, 1, ... repeated by those counts."""
    if repeats is None:
        counts = _index_tensor(x, "repeat_interleave")
        return wrap(np.repeat(np.arange(counts.size), counts), dtypes.int64)
    if dim is None:
        x, d = S.flatten(x), 0
    else:
        d = _dim(dim, x._data.ndim)
    if is_tensor(repeats):
        counts = np.broadcast_to(_index_tensor(repeats, "repeat_interleave").reshape(-1),
                                 (x._data.shape[d],))
        if np.any(counts < 0):
            raise RuntimeError("repeat_interleave(): repeat counts must not be negative")
        index = wrap(np.repeat(np.arange(x._data.shape[d]), counts), dtypes.int64)
        return S.index_select(x, d, index)
    if repeats < 0:
        raise RuntimeError("repeat_interleave(): the repeat count must not be negative")
    shape = x._data.shape
    wide = shape[:d + 1] + (repeats,) + shape[d + 1:]
    tiled = S.clone(S.expand(S.unsqueeze(x, d + 1), wide))
    return S.reshape(tiled, shape[:d] + (shape[d] * repeats,) + shape[d + 1:])


def tile(x, *dims):
    reps = tuple(_sizes(dims))
    reps = (1,) * (x._data.ndim - len(reps)) + reps
    return S.repeat(x, reps)


def broadcast_to(x, *size):
    return S.expand(x, *size)


def broadcast_shapes(*shapes):
    from runtime.tensor import Size

    try:
        return Size(np.broadcast_shapes(*(_as_shape(s) for s in shapes)))
    except ValueError:
        raise RuntimeError(f"shapes {[list(_as_shape(s)) for s in shapes]} cannot be "
                           f"broadcast together") from None


def _as_shape(s):
    return (s,) if isinstance(s, int) else tuple(s)


def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = tuple(broadcast_shapes(*(t._data.shape for t in tensors)))
    return tuple(t if t._data.shape == shape else S.expand(t, shape) for t in tensors)


def sum_to_size(x, *size):
    """x summed down to `size` (which x must be expandable from): PyTorch's sum_to."""
    from runtime.ops.reductions import sum as sum_

    shape = tuple(_sizes(size))
    have = x._data.shape
    lead = len(have) - len(shape)
    if lead < 0 or any(s != 1 and s != have[lead + i] for i, s in enumerate(shape)):
        raise RuntimeError(f"sum_to_size(): size {list(shape)} is not expandable to the "
                           f"tensor's size {list(have)}")
    if have == shape:
        return sum_(x) if not shape else x  # PyTorch sums a 0-dim tensor to itself
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and have[lead + i] != 1)
    out = sum_(x, dims, True) if dims else x
    return S.view(out, shape) if lead else out


def meshgrid(*tensors, indexing=None):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("meshgrid(): pass indexing='ij' or 'xy'; without it 'ij' is used",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"meshgrid(): indexing must be 'ij' or 'xy', not {indexing!r}")
    for t in tensors:
        if t._data.ndim > 1:
            raise RuntimeError(f"meshgrid(): every tensor must be 0-D or 1-D, got "
                               f"{t._data.ndim}-D")
    swap = indexing == "xy" and len(tensors) >= 2
    order = list(tensors)
    if swap:
        order[0], order[1] = order[1], order[0]
    shape = tuple(t._data.size for t in order)
    grids = []
    for i, t in enumerate(order):
        lined = tuple(-1 if j == i else 1 for j in range(len(order)))
        grids.append(S.expand(S.view(t, lined), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    if any(t._data.ndim != 1 for t in tensors):
        raise RuntimeError("cartesian_prod() takes 1-D tensors only")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return S.stack([S.reshape(g, (-1,)) for g in grids], 1)


# -- splitting and windows ---------------------------------------------------------------------

def tensor_split(x, indices_or_sections, dim=0):
    """Views along dim: `n` nearly equal parts (the first ones one longer), or the parts
    between the given indices."""
    if x._data.ndim == 0:
        raise RuntimeError("tensor_split() needs a tensor with at least one dimension")
    d = _dim(dim, x._data.ndim)
    size = x._data.shape[d]
    spec = indices_or_sections
    if is_tensor(spec):
        spec = spec._data.item() if spec._data.ndim == 0 else spec._data.tolist()
    if isinstance(spec, int):
        if spec <= 0:
            raise RuntimeError(f"tensor_split(): the number of sections must be positive, got "
                               f"{spec}")
        small, extra = divmod(size, spec)
        bounds = np.cumsum([0] + [small + (i < extra) for i in range(spec)]).tolist()
    else:
        bounds = [0] + [min(max(int(i), 0), size) for i in spec] + [size]
    return tuple(S._slice(x, d, slice(a, max(a, b))) for a, b in zip(bounds, bounds[1:]))


def unfold(x, dimension, size, step):
    """Windows of `size` elements every `step` along dimension, as a new last dimension
    (a view)."""
    d = _dim(dimension, x._data.ndim)
    n = x._data.shape[d] if x._data.ndim else 1
    if size > n:
        raise RuntimeError(f"unfold(): a window of {size} does not fit a dimension of size {n}")
    if step <= 0:
        raise RuntimeError(f"unfold(): the step must be positive, got {step}")
    data = unfold_view(x._data, d, size, step)
    return make_view(x, data, ("unfold", (d, size, step)), UnfoldBackward0,
                     (x._data.shape, d, size, step))


# -- in-place view ops -------------------------------------------------------------------------

TBackward1 = node("TBackward1", "t")
TransposeBackward1 = node("TransposeBackward1", "transpose")
SqueezeBackward3 = node("SqueezeBackward3", "squeeze")
SqueezeBackward4 = node("SqueezeBackward4", "squeeze")
SqueezeBackward5 = node("SqueezeBackward5", "squeeze")
UnsqueezeBackward1 = node("UnsqueezeBackward1", "unsqueeze")


def _restride(t, out_of_place, cls, args):
    """Give `t` the shape/strides of `out_of_place(t)` (a view computed without recording)
    and, when recording, a node of class `cls` over its previous history."""
    from runtime.grad_mode import no_grad

    recording = _state.enabled and (t._requires_grad or t._grad_fn is not None)
    check_inplace(t, recording)
    with no_grad():
        view = out_of_place(t)
    grad_fn = new_node(cls, (t,), view, args) if recording else None
    steps = view._meta.view_steps if view._meta is not None else None
    t._data = view._data
    if t._base is not None and steps is not None:
        meta_of(t).view_steps = steps
    if grad_fn is not None:
        t._grad_fn = grad_fn
        t._output_nr = 0
    return t


def t_(x):
    return _restride(x, S.t, TBackward1, ())


def transpose_(x, dim0, dim1):
    nd = x._data.ndim
    d0, d1 = (_dim(dim0, nd), _dim(dim1, nd)) if nd else (0, 0)
    return _restride(x, lambda t: S.transpose(t, dim0, dim1), TransposeBackward1, (d0, d1))


def squeeze_(x, dim=None):
    cls = SqueezeBackward3 if dim is None else (
        SqueezeBackward4 if isinstance(dim, int) else SqueezeBackward5)
    shape = x._data.shape
    return _restride(x, lambda t: S.squeeze(t, dim), cls, (shape,))


def unsqueeze_(x, dim):
    shape = x._data.shape
    return _restride(x, lambda t: S.unsqueeze(t, dim), UnsqueezeBackward1, (shape,))


FUNCTIONS = ["scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_fill",
             "index_put", "masked_select", "masked_scatter", "take", "take_along_dim", "flip",
             "fliplr", "flipud", "roll", "movedim", "moveaxis", "unflatten", "tril", "triu",
             "diagonal", "diag_embed", "diag", "trace", "repeat_interleave", "tile",
             "broadcast_to", "broadcast_tensors", "broadcast_shapes", "tensor_split",
             "meshgrid", "cartesian_prod"]
moveaxis = movedim

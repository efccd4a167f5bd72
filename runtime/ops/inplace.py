"""Out-of-place forms of the in-place-only operations (zero_, fill_, copy_, setitem).

`Tensor._inplace` computes one of these and `autograd_meta.apply_inplace` writes it back,
so each is recorded under the node name PyTorch gives the in-place op.
"""

import numpy as np

from runtime import dtypes
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class
from runtime.ops._core import is_tensor, wrap

ZeroBackward0 = node_class("ZeroBackward0", "zero")
FillBackward2 = node_class("FillBackward2", "fill")
FillBackward3 = node_class("FillBackward3", "fill_tensor")
CopyBackwards = node_class("CopyBackwards", "copy")
IndexPutBackward0 = node_class("IndexPutBackward0", "index_put")


def zero_like_op(x):
    out = wrap(np.zeros_like(x._data), x._dtype)
    if any_requires_grad((x,)):
        record(ZeroBackward0, (x,), out, ())
    return out


def fill_like_op(x, value):
    if is_tensor(value):
        if value._data.ndim:
            raise RuntimeError(f"fill_() takes a 0-dim tensor as value, got "
                               f"{value._data.ndim}-D")
        out = wrap(np.full_like(x._data, value._data), x._dtype)
        if any_requires_grad((x, value)):
            record(FillBackward3, (x, value), out, ())
        return out
    out = wrap(np.full_like(x._data, value), x._dtype)
    if any_requires_grad((x,)):
        record(FillBackward2, (x,), out, ())
    return out


def copy_like_op(x, src):
    if not is_tensor(src):
        raise TypeError(f"copy_() expects a Tensor as source, got {type(src).__name__}")
    try:
        data = np.broadcast_to(src._data, x._data.shape).astype(x._dtype.np)
    except ValueError:
        raise RuntimeError(f"copy_(): a source of shape {list(src._data.shape)} cannot be "
                           f"broadcast to the destination's shape {list(x._data.shape)}") from None
    out = wrap(data, x._dtype)
    # unlike the other in-place ops, PyTorch's copy_ leaves an integer target without history
    if any_requires_grad((x, src)) and x._dtype.category == dtypes.FLOAT:
        record(CopyBackwards, (x, src), out, ())
    return out


def index_put(x, key, value):
    data = np.array(x._data)
    v = value._data if is_tensor(value) else value
    try:
        data[key] = v
    except IndexError as e:
        from runtime.ops.shape import empty_result_key

        key = empty_result_key(data, key, e)
    except ValueError:
        from runtime.ops.shape import index_result_shape

        _check_broadcast(np.shape(v), index_result_shape(data, key))
        raise
    out = wrap(data, x._dtype)
    if any_requires_grad((x, value)):
        vshape = value._data.shape if is_tensor(value) else ()
        record(IndexPutBackward0, (x, value), out, (key, vshape))
    return out


def setitem(x, key, value):
    """x[key] = value: a copy_ into the view for basic keys, index_put_ for advanced ones."""
    from runtime.ops import shape as S
    from runtime.ops._core import check_operand

    from runtime.ops.indexing import check_same_dtype
    from runtime.overlap import check_no_overlap, own_memory

    value = check_operand(value, "setitem")
    if key is False:  # selects nothing: PyTorch writes nothing and records nothing
        return
    own_memory(x)
    # x[True] = v alone is a copy into x[None] (in a tuple True is a 0-dim mask)
    keys = (None,) if key is True else S.as_key_tuple(key)
    if any(S._is_advanced(k) for k in keys):
        # integers and slices first (a view), then the advanced indices on it, as getitem
        basic, rest = S._split_key(keys, x._data.ndim)
        target, _ = S._basic_view(x, basic)
        if is_tensor(value):
            # PyTorch's autograd checks the target (a leaf, a view of one) before index_put_
            # looks at the indices or the value
            _check_target(target, value)
            _check_positions(target, rest)
            masked = _masked_fill(keys, value, S)  # which PyTorch does with masked_fill_
            value = _strip_leading_ones(value, S)  # a view of its own, then checked
            if not masked:
                check_no_overlap(target, value)
            shape = S.index_result_shape(target._data, rest)
            if not masked:
                _check_broadcast(value._data.shape, shape)
                check_same_dtype(x, value)
        target._inplace(index_put, rest, value)
        return
    target, _ = S._basic_view(x, keys)
    if not is_tensor(value):  # PyTorch writes a number as a 0-dim tensor of x's dtype
        value = wrap(np.asarray(value, dtype=x._dtype.np), x._dtype)
    copy_to(target, value, S)


def _check_target(target, value):
    from runtime.autograd_meta import check_inplace
    from runtime.tensor import _recording

    check_inplace(target, _recording(target, (value,)))


def _check_positions(target, rest):
    """PyTorch's index kernel refuses an advanced index placed past the target's last
    dimension (where a second Ellipsis moves it) before it checks for overlap."""
    if len(rest) > target._data.ndim:
        raise IndexError(f"too many indices for a tensor of dimension {target._data.ndim}: "
                         f"an advanced index falls at position {len(rest) - 1}")


def _masked_fill(keys, value, S):
    """Whether x[key] = value is PyTorch's masked fill: a value of one element and, among the
    indices, one advanced index, a bool mask (the value is then converted to x's dtype)."""
    advanced = [k for k in keys if S._is_advanced(k)]
    if value._data.size != 1 or len(advanced) != 1:
        return False
    k = advanced[0]
    if is_tensor(k):
        return k._dtype is dtypes.bool_
    return isinstance(k, list) and bool(k) and all(type(i) is bool for i in k)


def copy_to(target, value, S):
    """PyTorch's setitem copy: copy_ for equal shapes, fill_ from a 0-dim value, else the
    value without its leading 1-sized dimensions (a view), expanded, then copy_."""
    shape = target._data.shape
    if value._data.shape == shape:
        target._inplace(copy_like_op, value)
    elif value._data.ndim == 0:
        target._inplace(fill_like_op, value)
    else:
        value = S.view(value, _without_leading_ones(value._data.shape))
        if value._data.shape != shape:
            value = S.expand(value, shape)
        target._inplace(copy_like_op, value)


def _without_leading_ones(shape):
    i = 0
    while i < len(shape) and shape[i] == 1:
        i += 1
    return shape[i:]


def _check_broadcast(vshape, shape):
    try:
        fits = np.broadcast_shapes(vshape, shape) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(f"a value of shape {list(vshape)} cannot be broadcast to the shape "
                           f"{list(shape)} of the indexed elements")


def _strip_leading_ones(value, S):
    shape = value._data.shape
    short = _without_leading_ones(shape)
    return value if short == shape else S.view(value, short)

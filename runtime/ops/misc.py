"""Forward kernels that do not fit the other groups: softmax family, cumulative ops,
logical reductions, sorting and gathering helpers."""

import numpy as np

from runtime.fma import fma
from runtime.rules import numpy_ops

from runtime import dtypes, simd_softmax
from runtime.autograd_meta import _state, any_requires_grad, record, requires_grad
from runtime.function import node_class, save_input, save_output
from runtime.ops._core import float_dtype, wrap, wrap_reduced
from runtime.ops.reductions import _axes, _rule_dims, normalize_dims

SoftmaxBackward0 = node_class("SoftmaxBackward0", "softmax")
LogSoftmaxBackward0 = node_class("LogSoftmaxBackward0", "log_softmax")
CumsumBackward0 = node_class("CumsumBackward0", "cumsum")
CumprodBackward0 = node_class("CumprodBackward0", "cumprod")
LogsumexpBackward0 = node_class("LogsumexpBackward0", "logsumexp")
AddcmulBackward0 = node_class("AddcmulBackward0", "addcmul")
AddcdivBackward0 = node_class("AddcdivBackward0", "addcdiv")
LerpBackward0 = node_class("LerpBackward0", "lerp")
LerpBackward1 = node_class("LerpBackward1", "lerp_tensor")


def _axis(dim, x):
    return normalize_dims(dim, x._data.ndim)[0] if x._data.ndim else None


def _empty_integral(x, dtype):
    """An empty integer or bool input: PyTorch returns it (copied) instead of refusing it."""
    return dtype is None and x._data.size == 0 and x._dtype.category != dtypes.FLOAT


def _float_input(x, dtype, name):
    """The input converted to `dtype` when given; integer inputs need one (PyTorch has no
    integer softmax kernels)."""
    if dtype is not None:
        from runtime.ops.shape import to_dtype

        return to_dtype(x, dtype)
    if x._dtype.category != dtypes.FLOAT:
        raise NotImplementedError(f"{name}() is not implemented for {x._dtype} inputs; pass "
                                  f"dtype= or convert the tensor to a floating point type")
    return x


# np.max and np.sum without their Python wrappers (the same reductions)
_max = np.maximum.reduce
_sum = np.add.reduce


def softmax(x, dim=None, dtype=None):
    if _empty_integral(x, dtype):
        return wrap(x._data.copy(), x._dtype)
    x = _float_input(x, dtype, "softmax")
    axis = _axis(dim, x)
    d = x._data
    data = simd_softmax.softmax(d) if simd_softmax.applies(d, axis) else None
    if data is None:
        shifted = np.exp(d - _max(d, axis=axis, keepdims=True, initial=-np.inf))
        data = np.ascontiguousarray(shifted / _sum(shifted, axis=axis, keepdims=True))
    out = wrap(data.reshape(d.shape), float_dtype(x))
    if any_requires_grad((x,)):
        record(SoftmaxBackward0, (x,), out, (save_output(out, "SoftmaxBackward0"), axis))
    return out


def log_softmax(x, dim=None, dtype=None):
    if _empty_integral(x, dtype):
        return wrap(x._data.copy(), x._dtype)
    x = _float_input(x, dtype, "log_softmax")
    axis = _axis(dim, x)
    d = x._data
    data = simd_softmax.log_softmax(d) if simd_softmax.applies(d, axis) else None
    if data is None:
        shifted = d - _max(d, axis=axis, keepdims=True, initial=-np.inf)
        # (x - max) - log(sum(exp(x - max))), in PyTorch's order: exact for huge equal values
        data = np.ascontiguousarray(
            shifted - np.log(_sum(np.exp(shifted), axis=axis, keepdims=True))).reshape(d.shape)
    out = wrap(data, float_dtype(x))
    if any_requires_grad((x,)):
        record(LogSoftmaxBackward0, (x,), out, (save_output(out, "LogSoftmaxBackward0"), axis))
    return out


def logsumexp(x, dim, keepdim=False):
    dims = normalize_dims(dim, x._data.ndim)
    ax = _axes(dims, x._data.ndim)
    d = x._data.astype(float_dtype(x).np, copy=False)
    m = np.max(d, axis=ax, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0)
    r = np.log(np.sum(np.exp(d - m), axis=ax, keepdims=True)) + m
    if not keepdim and ax is not None:
        r = np.squeeze(r, axis=ax)
    out = wrap_reduced(r, float_dtype(x))
    if any_requires_grad((x,)):
        record(LogsumexpBackward0, (x,), out,
               (save_input(x), save_output(out, "LogsumexpBackward0"), _rule_dims(dims, x),
                keepdim))
    return out


def cumsum(x, dim, dtype=None):
    axis = _axis(dim, x)
    dt = dtype or (x._dtype if x._dtype.is_floating_point or x._dtype.is_complex
                   else dtypes.int64)  # integers and bools scan in int64
    data = np.ascontiguousarray(numpy_ops.scan(np.cumsum, x._data, axis, dt.np)).reshape(
        x._data.shape)
    if dt.category == dtypes.FLOAT:
        data += 0.0  # PyTorch's running sum starts at +0.0, so it never yields -0.0
    out = wrap(data, dt)
    if any_requires_grad((x,)):
        record(CumsumBackward0, (x,), out, (axis if axis is not None else 0,))
    return out


def cumprod(x, dim, dtype=None):
    axis = _axis(dim, x)
    dt = dtype or (x._dtype if x._dtype.is_floating_point or x._dtype.is_complex
                   else dtypes.int64)  # integers and bools scan in int64
    data = np.ascontiguousarray(numpy_ops.scan(np.cumprod, x._data, axis, dt.np)).reshape(
        x._data.shape)
    out = wrap(data, dt)
    if any_requires_grad((x,)):
        record(CumprodBackward0, (x,), out, (save_input(x), save_output(out, "CumprodBackward0"),
                                            axis if axis is not None else 0))
    return out


def all(x, dim=None, keepdim=False):
    return _logical_reduce(np.all, x, dim, keepdim)


def any(x, dim=None, keepdim=False):
    return _logical_reduce(np.any, x, dim, keepdim)


def _logical_reduce(np_fn, x, dim, keepdim):
    ax = None if dim is None else normalize_dims(dim, x._data.ndim)
    if x._data.ndim == 0:
        ax = None  # dim 0 / -1 of a 0-dim tensor is the tensor itself
    return wrap_reduced(np_fn(x._data, axis=ax, keepdims=keepdim), dtypes.bool_)


def full_like_scalar(x, value):
    return wrap(np.full(x._data.shape, value), x._dtype)


def addcmul(x, t1, t2, value=1):
    """x + value * t1 * t2 (in PyTorch's order of operations), one AddcmulBackward0 node."""
    from runtime.ops.elementwise import add, mul

    value = _check_addc(x, t1, t2, "addcmul", value)
    xs, a, b = _promoted(x, t1, t2)
    out = _unrecorded(lambda: add(xs, mul(mul(a, value), b)))
    _lay_out_as_iterator(out, (xs, a, b))
    if out._data.dtype == np.float32:  # PyTorch's kernel adds with one fused multiply-add
        np.copyto(out._data, addcmul_kernel(xs._data, a._data, b._data, value))
    if any_requires_grad((x, t1, t2)):
        # as PyTorch, each factor is saved only for the other one's gradient
        saved = (_saved_if(t1, t2), _saved_if(t2, t1))
        record(AddcmulBackward0, (x, t1, t2), out, saved + (value,))
    return out


def _promoted(x, t1, t2):
    """The three operands in their common dtype: PyTorch promotes them at once (a bool
    tensor with 0-dim float64 ones gives float64, where promoting pair by pair gives the
    default float)."""
    from runtime.ops._core import result_dtype
    from runtime.ops.shape import to_dtype

    dt = result_dtype(x, t1, t2)
    return tuple(to_dtype(t, dt) for t in (x, t1, t2))


def _saved_if(t, needed_by):
    """save_input(t) when `needed_by`'s gradient needs t, else None (a later in-place
    change of t then does not break backward, as in PyTorch)."""
    return save_input(t) if any_requires_grad((needed_by,)) else None


def addcdiv(x, t1, t2, value=1):
    """x + value * t1 / t2 (in PyTorch's order of operations), one AddcdivBackward0 node."""
    from runtime.ops.elementwise import add, div, mul

    # checked before the dtype checks, as PyTorch does (bool tensors are integers here)
    if _integral(t1) and _integral(t2):
        raise RuntimeError("addcdiv() of two integer tensors would be an integer division, "
                           "which is not supported: convert tensor1 or tensor2 to float")
    value = _check_addc(x, t1, t2, "addcdiv", value)
    xs, a, b = _promoted(x, t1, t2)
    out = _unrecorded(lambda: add(xs, div(mul(a, value), b)))
    _lay_out_as_iterator(out, (xs, a, b))
    if any_requires_grad((x, t1, t2)):
        # PyTorch saves tensor2 whatever needs a gradient (both factors' formulas read it), so
        # changing it in place breaks backward even when only self requires grad
        saved = (_saved_if(t1, t2), save_input(t2))
        record(AddcdivBackward0, (x, t1, t2), out, saved + (value,))
    return out


def _integral(t):
    """A tensor of an integer or bool dtype (anything else is left to _check_addc)."""
    return hasattr(t, "_dtype") and t._dtype.category != dtypes.FLOAT


def _check_addc(x, t1, t2, name, value):
    """The checks PyTorch makes; returns `value` as the result's dtype takes it (an integer
    result truncates a float value: addcmul of int64 tensors with value=0.5 adds nothing)."""
    from runtime.ops._core import result_dtype

    if not (hasattr(t1, "_data") and hasattr(t2, "_data")):
        raise TypeError(f"{name}(): tensor1 and tensor2 must be Tensors")
    result = result_dtype(x, t1, t2)
    if result is dtypes.bool_:
        raise NotImplementedError(f"{name}() is not implemented for bool tensors")
    if result.category != dtypes.FLOAT and isinstance(value, float):
        return int(value)
    return value


def _unrecorded(fn):
    """fn() with recording off: composite kernels whose graph is one node of their own."""
    saved = _state.enabled
    _state.enabled = False
    try:
        return fn()
    finally:
        _state.enabled = saved


def lerp(x, end, weight):
    """x + weight * (end - x), computed from the nearer end as PyTorch does: LerpBackward0
    for a number weight, LerpBackward1 (with an edge to the weight) for a tensor."""
    from runtime.ops.elementwise import add, mul, sub, where

    _check_lerp(x, end, weight)
    if not hasattr(weight, "_data"):
        if weight >= 0.5:
            out = _unrecorded(lambda: sub(end, mul(sub(end, x), 1 - weight)))
        else:
            out = _unrecorded(lambda: add(x, mul(sub(end, x), weight)))
        _lay_out_as_iterator(out, (x, end))
        if out._data.dtype == np.float32:
            np.copyto(out._data, lerp_kernel(x._data, end._data, weight))
        if any_requires_grad((x, end)):
            record(LerpBackward0, (x, end), out, (weight,))
        return out
    from runtime.ops._core import result_dtype
    from runtime.ops.shape import to_dtype

    # a 0-dim weight takes part in the type promotion (int tensors with a float weight
    # interpolate in float), as in PyTorch's TensorIterator
    dt = result_dtype(x, end, weight)
    _check_float(dt)
    xs, e, w = (to_dtype(t, dt) for t in (x, end, weight))
    out = _unrecorded(lambda: where(w.abs() < 0.5, add(xs, mul(sub(e, xs), w)),
                                    sub(e, mul(sub(e, xs), 1 - w))))
    _lay_out_as_iterator(out, (x, end, weight))
    if out._data.dtype == np.float32:
        np.copyto(out._data, lerp_tensor_kernel(xs._data, e._data, w._data))
    if any_requires_grad((x, end, weight)):
        # PyTorch saves x and end only for the weight's gradient
        ends = (save_input(x), save_input(end)) if requires_grad(weight) else (None, None)
        record(LerpBackward1, (x, end, weight), out, ends + (save_input(weight),))
    return out


def _lay_out_as_iterator(out, operands):
    """A fresh result computed in steps gets the layout PyTorch's one TensorIterator over
    `operands` (in its operand order) gives it."""
    from runtime.ops.elementwise import iterator_layout

    out._data = iterator_layout(out._data, [t._data for t in operands])


def addcmul_kernel(x, t1, t2, value, out=None):
    """float32 x + value * t1 * t2 as PyTorch's vector kernel: (value * t1) * t2 + x fused."""
    return fma(np.multiply(t1, np.float32(value)), t2, x, out)


def lerp_kernel(x, end, weight, out=None):
    """float32 lerp with a number weight as PyTorch's vector kernel: one fused multiply-add
    from the nearer end, weight * (end - x) + x or (weight - 1) * (end - x) + end."""
    w = np.float32(weight)
    diff = np.subtract(end, x)
    if abs(w) < 0.5:
        return fma(w, diff, x, out)
    return fma(w - np.float32(1), diff, end, out)


def lerp_tensor_kernel(x, end, weight):
    """float32 lerp with a tensor weight as PyTorch's vector kernel: per element the same
    fused multiply-add from the nearer end as `lerp_kernel`."""
    small = np.abs(weight) < 0.5
    coeff = np.where(small, weight, weight - np.float32(1))
    return fma(coeff, np.subtract(end, x), np.where(small, x, end))


def _check_lerp(x, end, weight):
    if not hasattr(end, "_data"):
        raise TypeError(f"lerp(): end must be a Tensor, not {type(end).__name__}")
    for name, t in (("end", end), ("weight", weight)):
        if hasattr(t, "_data") and t._dtype is not x._dtype and (name == "end" or t._data.ndim):
            raise RuntimeError(f"lerp(): {name} has dtype {t._dtype}, but the input has "
                               f"{x._dtype}; both must have the same dtype")
    # shapes are checked before PyTorch looks for a kernel of the dtype
    shapes = [t._data.shape for t in (x, end, weight) if hasattr(t, "_data")]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise RuntimeError(f"lerp(): the shapes {', '.join(str(list(s)) for s in shapes)} "
                           f"cannot be broadcast together") from None
    if not hasattr(weight, "_data"):
        _check_float(x._dtype)


def check_lerp_target(x, end, weight):
    """lerp_ into x: a 0-dim weight of another dtype takes part in the type promotion, and
    PyTorch refuses a promoted dtype that x cannot hold before it looks for a kernel."""
    from runtime.ops._core import result_dtype

    if hasattr(weight, "_data") and hasattr(end, "_data"):
        dt = result_dtype(x, end, weight)
        if dt.category > x._dtype.category:
            raise RuntimeError(f"lerp_(): the operands promote to {dt}, which cannot be "
                               f"stored in the {x._dtype} tensor written in place")


def _check_float(dt):
    if dt.category != dtypes.FLOAT:
        raise NotImplementedError(f"lerp() is not implemented for {dt} tensors")

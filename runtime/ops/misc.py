"""Forward kernels that do not fit the other groups: softmax family, cumulative ops,
logical reductions, sorting and gathering helpers."""

import numpy as np

from runtime import dtypes
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class, save_input, save_output
from runtime.ops._core import float_dtype, wrap
from runtime.ops.reductions import _axes, _rule_dims, normalize_dims

SoftmaxBackward0 = node_class("SoftmaxBackward0", "softmax")
LogSoftmaxBackward0 = node_class("LogSoftmaxBackward0", "log_softmax")
CumsumBackward0 = node_class("CumsumBackward0", "cumsum")
CumprodBackward0 = node_class("CumprodBackward0", "cumprod")
LogsumexpBackward0 = node_class("LogsumexpBackward0", "logsumexp")


def _axis(dim, x):
    return normalize_dims(dim, x._data.ndim)[0] if x._data.ndim else None


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


def softmax(x, dim=None, dtype=None):
    x = _float_input(x, dtype, "softmax")
    axis = _axis(dim, x)
    d = x._data
    shifted = np.exp(d - np.max(d, axis=axis, keepdims=True))
    out = wrap(shifted / np.sum(shifted, axis=axis, keepdims=True), float_dtype(x))
    if any_requires_grad((x,)):
        record(SoftmaxBackward0, (x,), out, (save_output(out, "SoftmaxBackward0"), axis))
    return out


def log_softmax(x, dim=None, dtype=None):
    x = _float_input(x, dtype, "log_softmax")
    axis = _axis(dim, x)
    d = x._data
    m = np.max(d, axis=axis, keepdims=True)
    lse = np.log(np.sum(np.exp(d - m), axis=axis, keepdims=True)) + m
    out = wrap(d - lse, float_dtype(x))
    if any_requires_grad((x,)):
        record(LogSoftmaxBackward0, (x,), out, (save_output(out, "LogSoftmaxBackward0"), axis))
    return out


def logsumexp(x, dim, keepdim=False):
    dims = normalize_dims(dim, x._data.ndim)
    ax = _axes(dims, x._data.ndim)
    d = x._data
    m = np.max(d, axis=ax, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    r = np.log(np.sum(np.exp(d - m), axis=ax, keepdims=True)) + m
    if not keepdim and ax is not None:
        r = np.squeeze(r, axis=ax)
    out = wrap(r, float_dtype(x))
    if any_requires_grad((x,)):
        record(LogsumexpBackward0, (x,), out,
               (save_input(x), save_output(out, "LogsumexpBackward0"), _rule_dims(dims, x),
                keepdim))
    return out


def cumsum(x, dim, dtype=None):
    axis = _axis(dim, x)
    dt = dtype or (x._dtype if x._dtype.is_floating_point else dtypes.int64)
    data = np.cumsum(x._data, axis=axis, dtype=dt.np).reshape(x._data.shape)
    out = wrap(data, dt)
    if any_requires_grad((x,)):
        record(CumsumBackward0, (x,), out, (axis if axis is not None else 0,))
    return out


def cumprod(x, dim, dtype=None):
    axis = _axis(dim, x)
    dt = dtype or (x._dtype if x._dtype.is_floating_point else dtypes.int64)
    data = np.cumprod(x._data, axis=axis, dtype=dt.np).reshape(x._data.shape)
    out = wrap(data, dt)
    if any_requires_grad((x,)):
        record(CumprodBackward0, (x,), out, (save_input(x), save_output(out, "CumprodBackward0"),
                                            axis if axis is not None else 0))
    return out


def all(x, dim=None, keepdim=False):
    ax = None if dim is None else normalize_dims(dim, x._data.ndim)
    return wrap(np.all(x._data, axis=ax, keepdims=keepdim), dtypes.bool_)


def any(x, dim=None, keepdim=False):
    ax = None if dim is None else normalize_dims(dim, x._data.ndim)
    return wrap(np.any(x._data, axis=ax, keepdims=keepdim), dtypes.bool_)


def full_like_scalar(x, value):
    return wrap(np.full(x._data.shape, value), x._dtype)


def addcmul(x, t1, t2, value=1):
    """x + value * t1 * t2 (in PyTorch's order of operations)."""
    from runtime.ops.elementwise import add, mul

    return add(x, mul(mul(t1, value), t2))


def addcdiv(x, t1, t2, value=1):
    """x + value * t1 / t2 (in PyTorch's order of operations)."""
    from runtime.ops.elementwise import add, div, mul

    return add(x, div(mul(t1, value), t2))


def lerp(x, end, weight):
    """x + weight * (end - x), computed from the nearer end as PyTorch does."""
    from runtime.ops.elementwise import add, mul, rsub, sub

    if isinstance(weight, (int, float)) and weight >= 0.5:
        return sub(end, mul(sub(end, x), 1 - weight))
    return add(x, mul(sub(end, x), weight))

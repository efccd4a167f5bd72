"""Forward kernels of reductions (sum, mean, prod, max/min, norm, var/std)."""

import builtins

import numpy as np

from runtime import dtypes, return_types
from runtime.cascade_sum import mean_like_torch, sum_like_torch
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class, save_input, save_output
from runtime.ops._core import wrap, wrap_reduced

SumBackward0 = node_class("SumBackward0", "sum")
SumBackward1 = node_class("SumBackward1", "sum")
MeanBackward0 = node_class("MeanBackward0", "mean")
MeanBackward1 = node_class("MeanBackward1", "mean")
ProdBackward0 = node_class("ProdBackward0", "prod")
ProdBackward1 = node_class("ProdBackward1", "prod")
MaxBackward1 = node_class("MaxBackward1", "amax_all")
MinBackward1 = node_class("MinBackward1", "amax_all")
MaxBackward0 = node_class("MaxBackward0", "amax_dim")
MinBackward0 = node_class("MinBackward0", "amax_dim")
NormBackward = node_class("LinalgVectorNormBackward0", "norm")
VarBackward0 = node_class("VarBackward0", "var")
StdBackward0 = node_class("StdBackward0", "std")

MaxResult, MinResult = return_types.max, return_types.min


def normalize_dims(dim, ndim):
    """A sorted tuple of non-negative axes, or None for 'all axes'."""
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        return None
    out = []
    for d in dims:
        n = builtins.max(ndim, 1)
        if not -n <= d < n:
            raise IndexError(f"dimension {d} is out of range for a tensor with {ndim} "
                             f"dimensions (valid: {-n} to {n - 1})")
        out.append(d % n)
    return tuple(sorted(out))


def _axes(dims, ndim):
    if ndim == 0:
        return None
    return dims


def _sum_dtype(x, dtype):
    if dtype is not None:
        return dtype
    if x._dtype.category != dtypes.FLOAT:
        return dtypes.int64
    return x._dtype


def sum(x, dim=None, keepdim=False, dtype=None):
    dims = normalize_dims(dim, x._data.ndim)
    dt = _sum_dtype(x, dtype)
    data = x._data if dt.np == x._data.dtype else x._data.astype(dt.np)
    out = wrap_reduced(np.asarray(sum_like_torch(data, _axes(dims, data.ndim), keepdim), dt.np), dt)
    if any_requires_grad((x,)):
        cls = SumBackward0 if dim is None else SumBackward1
        record(cls, (x,), out, (x._data.shape, _rule_dims(dims, x), keepdim))
    return out


def _rule_dims(dims, x):
    return None if dims is None or x._data.ndim == 0 else dims


def mean(x, dim=None, keepdim=False, dtype=None):
    if dtype is None and x._dtype.category != dtypes.FLOAT:
        raise RuntimeError(f"mean() needs a floating point input, got {x._dtype}; pass "
                           f"dtype= or convert the tensor first")
    dims = normalize_dims(dim, x._data.ndim)
    dt = dtype or x._dtype
    data = x._data if dt.np == x._data.dtype else x._data.astype(dt.np)
    data = np.asarray(mean_like_torch(data, _axes(dims, data.ndim), keepdim), dt.np)
    out = wrap_reduced(data, dt)
    if any_requires_grad((x,)):
        count = x._data.size // builtins.max(out._data.size, 1) if x._data.size else 0
        cls = MeanBackward0 if dim is None else MeanBackward1
        record(cls, (x,), out, (x._data.shape, _rule_dims(dims, x), keepdim, count))
    return out


def prod(x, dim=None, keepdim=False, dtype=None):
    dims = normalize_dims(dim, x._data.ndim)
    dt = _sum_dtype(x, dtype)
    out = wrap_reduced(np.prod(x._data, axis=_axes(dims, x._data.ndim), keepdims=keepdim, dtype=dt.np), dt)
    if any_requires_grad((x,)):
        cls = ProdBackward0 if dim is None else ProdBackward1
        record(cls, (x,), out, (save_input(x), save_output(out, cls.__name__),
                                _rule_dims(dims, x), keepdim))
    return out


def max(x, dim=None, keepdim=False):
    return _extreme(x, dim, keepdim, True)


def min(x, dim=None, keepdim=False):
    return _extreme(x, dim, keepdim, False)


def _extreme(x, dim, keepdim, is_max):
    from runtime.tensor import Tensor

    if isinstance(dim, Tensor):
        from runtime.ops.elementwise import maximum, minimum

        return maximum(x, dim) if is_max else minimum(x, dim)
    d = x._data
    if dim is None:
        if d.size == 0:
            raise RuntimeError("max()/min() of an empty tensor has no value; pass dim= "
                               "or check the tensor's size")
        out = wrap(np.max(d) if is_max else np.min(d), x._dtype)
        if any_requires_grad((x,)):
            cls = MaxBackward1 if is_max else MinBackward1
            record(cls, (x,), out, (save_input(x), save_output(out, cls.__name__)))
        return out
    axis = normalize_dims(dim, d.ndim)[0]
    _check_reducible(d, axis, "max()/min()")
    src = d if d.ndim else d.reshape(1)
    pick = np.argmax if is_max else np.argmin
    idx = pick(src, axis=axis, keepdims=True)
    vals = np.take_along_axis(src, idx, axis)
    out_shape = idx.shape if keepdim else src.shape[:axis] + src.shape[axis + 1:]
    if d.ndim == 0:
        out_shape = ()
    values = wrap_reduced(vals.reshape(out_shape), x._dtype)
    indices = wrap_reduced(idx.reshape(out_shape).astype(np.int64), dtypes.int64)
    if any_requires_grad((x,)):
        cls = MaxBackward0 if is_max else MinBackward0
        record(cls, (x,), values, (idx, idx.shape, src.shape, axis, d.shape))
    return (MaxResult if is_max else MinResult)(values, indices)


def argmax(x, dim=None, keepdim=False):
    return _arg(np.argmax, x, dim, keepdim)


def argmin(x, dim=None, keepdim=False):
    return _arg(np.argmin, x, dim, keepdim)


def _arg(fn, x, dim, keepdim):
    if x._dtype is dtypes.bool_:
        raise RuntimeError(f"{fn.__name__}() does not take bool tensors; convert to an "
                           f"integer dtype first")
    if dim is None:
        _check_reducible(x._data.reshape(-1), 0, fn.__name__ + "()")
        return wrap(np.asarray(fn(x._data), np.int64), dtypes.int64)
    axis = normalize_dims(dim, x._data.ndim)[0]
    _check_reducible(x._data, axis, fn.__name__ + "()")
    return wrap_reduced(fn(x._data, axis=axis, keepdims=keepdim).astype(np.int64),
                        dtypes.int64)


def _check_reducible(d, axis, name):
    """Reductions without an identity (max, argmax, ...) refuse an empty reduced dimension."""
    if d.ndim and d.shape[axis] == 0:
        raise IndexError(f"{name} cannot reduce dimension {axis}: it has size 0")


def norm(x, p="fro", dim=None, keepdim=False):
    """The vector p-norm over `dim` (all elements by default); p=0 counts non-zeros,
    p=inf/-inf take the largest/smallest magnitude."""
    if p == "nuc":  # torch.norm's nuclear norm is linalg's
        from runtime.linalg.norms import matrix_norm

        return matrix_norm(x, "nuc", (0, 1) if dim is None else dim, keepdim)
    if p in ("fro", None):
        p = 2
    if x._dtype.category != dtypes.FLOAT:
        raise RuntimeError(f"norm() needs a floating point input, got {x._dtype}")
    dims = normalize_dims(dim, x._data.ndim)
    d = x._data
    out_dtype = x._dtype
    if x._dtype.is_complex:  # the norm of the magnitudes, a real tensor
        d = np.abs(d)
        out_dtype = dtypes.from_numpy(d.dtype)
    ax = _axes(dims, d.ndim)
    if p == 2:
        r = np.sqrt(np.sum(d * d, axis=ax, keepdims=keepdim))
    elif p == 0:
        r = np.sum(d != 0, axis=ax, keepdims=keepdim).astype(d.dtype)
    elif p == float("inf"):
        r = np.max(np.abs(d), axis=ax, keepdims=keepdim)
    elif p == float("-inf"):
        r = np.min(np.abs(d), axis=ax, keepdims=keepdim)
    elif p == 1:
        r = np.sum(np.abs(d), axis=ax, keepdims=keepdim)
    else:
        with np.errstate(divide="ignore"):
            r = np.sum(np.abs(d) ** p, axis=ax, keepdims=keepdim) ** (1.0 / p)
    out = wrap_reduced(r, out_dtype)
    if any_requires_grad((x,)):
        record(NormBackward, (x,), out, (save_input(x), save_output(out, NormBackward.__name__),
                                         p, _rule_dims(dims, x), keepdim))
    return out


DistBackward0 = node_class("DistBackward0", "dist")


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast together); first derivatives only (the node
    keeps the difference as a constant)."""
    from runtime.grad_mode import no_grad
    from runtime.ops import sub

    with no_grad():
        diff = sub(input, other)
        out = norm(diff, p)
    if any_requires_grad((input, other)):
        record(DistBackward0, (input, other), out,
               (save_input(diff), save_output(out, DistBackward0.__name__), p,
                input._data.shape, other._data.shape))
    return out


def var(x, dim=None, unbiased=None, keepdim=False, correction=None):
    return _moment(x, dim, unbiased, keepdim, correction, False)


def std(x, dim=None, unbiased=None, keepdim=False, correction=None):
    return _moment(x, dim, unbiased, keepdim, correction, True)


def _moment(x, dim, unbiased, keepdim, correction, is_std):
    if x._dtype.category != dtypes.FLOAT:
        raise RuntimeError(f"{'std' if is_std else 'var'}() needs a floating point input, got "
                           f"{x._dtype}")
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    if correction is None:
        correction = 0 if unbiased is False else 1
    dims = normalize_dims(dim, x._data.ndim)
    ax = _axes(dims, x._data.ndim)
    d = x._data
    # PyTorch accumulates float32 moments in float64 (a constant slice has variance 0)
    wide = np.float64 if d.dtype == np.float32 else None
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.var(d, axis=ax, ddof=correction, keepdims=keepdim, dtype=wide)
        if is_std:
            r = np.sqrt(r)
    r = r.astype(d.dtype, copy=False)
    out = wrap_reduced(r, x._dtype)
    if any_requires_grad((x,)):
        if is_std:
            record(StdBackward0, (x,), out, (save_input(x), save_output(out, "StdBackward0"),
                                             _rule_dims(dims, x), correction, keepdim))
        else:
            record(VarBackward0, (x,), out, (save_input(x), _rule_dims(dims, x), correction,
                                             keepdim))
    return out

"""Shared machinery of the forward kernels: operand checks, dtype promotion, result wrapping.

Forward kernels compute with numpy on `Tensor._data` and wrap the result; recording happens
only when grad mode is on and some input requires grad (`autograd_meta.any_requires_grad`).
"""

import numpy as np

from runtime import dtypes
from runtime.dtypes import FLOAT, result_type_of, scalar_dtype
from runtime.ops.layout import like_input, plain

_SCALARS = (int, float, bool, complex)
_default = [dtypes.float32]


def get_default_dtype():
    return _default[0]


def set_default_dtype(d):
    if not d.is_floating_point:
        raise TypeError(f"the default dtype must be a floating point type, not {d}")
    _default[0] = d


def is_tensor(x):
    return hasattr(x, "_data") and hasattr(x, "_grad_fn")


def check_operand(x, op):
    if is_tensor(x) or type(x) in _SCALARS:
        return x
    if isinstance(x, (np.integer, np.floating, np.bool_)):
        return x.item()
    if isinstance(x, np.ndarray):  # constants inside derivative rules
        return wrap(x, None)
    raise TypeError(f"{op}(): expected a Tensor or a Python number as operand, got "
                    f"{type(x).__name__}")


def result_dtype(*operands):
    """PyTorch's result_type over tensors and Python scalars."""
    dim = zero = scal = None
    for x in operands:
        if type(x) in _SCALARS:
            d = scalar_dtype(x, _default[0])
            scal = d if scal is None else dtypes.promote_types(scal, d)
        elif x._data.ndim:
            dim = x._dtype if dim is None else dtypes.promote_types(dim, x._dtype)
        else:
            zero = x._dtype if zero is None else dtypes.promote_types(zero, x._dtype)
    return result_type_of(dim, zero, scal)


def binary_dtype(a, b):
    """Fast path of result_dtype for (Tensor, Tensor-or-scalar)."""
    da = a._dtype
    if type(b) in _SCALARS:
        if type(b) is complex and not da.is_complex:
            return result_dtype(a, b)
        if da.category == FLOAT or (da.category == dtypes.INT and type(b) is not float):
            return da
        if type(b) is bool:
            return da
        return result_dtype(a, b)
    if b._dtype is da:
        return da
    return result_dtype(a, b)


def float_dtype(t):
    """Dtype of a floating-point function of `t` (ints and bools give the default float)."""
    return t._dtype if t._dtype.category == FLOAT else _default[0]


def data_of(x, np_dtype):
    """The numpy operand for `x` when computing in `np_dtype`."""
    if type(x) in _SCALARS:
        return x
    d = x._data
    if d.dtype == np_dtype:
        return d
    if d.ndim > 1 and not plain(d):
        # PyTorch converts the operand with .to(), whose copy is laid out as empty_like lays
        # it out (numpy's astype orders an expanded or overlapping array otherwise, and
        # drops a view's strides along size-1 dimensions); the result's layout follows the
        # operands' layouts
        return like_input(d.astype(np_dtype), d)
    return d.astype(np_dtype)


_wrap_tensor = None  # Tensor._wrap, installed by runtime.tensor (which imports this module)


def wrap_reduced(data, dtype):
    """A reduction's result: PyTorch allocates it C-contiguous whatever the input's layout
    (numpy's reductions keep the input's order), so `view` works on it as on PyTorch's."""
    if data.__class__ is np.ndarray and not data.flags.c_contiguous:
        data = np.array(data, order="C")  # (ascontiguousarray would make a 0-dim array 1-dim)
    return wrap(data, dtype)


def wrap(data, dtype):
    """A new result tensor (0-dim numpy scalars become 0-dim arrays); dtype None: from data."""
    if data.__class__ is not np.ndarray:
        data = np.asarray(data)
    if dtype is None:
        dtype = dtypes.from_numpy(data.dtype)
    elif data.dtype != dtype.np:
        data = data.astype(dtype.np)
    if data.size == 0 and data.ndim and not any(data.strides) and data.flags.writeable:
        data = with_contiguous_strides(data)  # (a read-only one is a broadcast: kept)
    return _wrap_tensor(data, dtype)


def with_contiguous_strides(data):
    """An empty array with the strides PyTorch gives an empty tensor: C order, a dimension
    of size 0 counting as 1 (numpy sets them all to 0, which stride() would show)."""
    strides, step = [], data.itemsize
    for size in reversed(data.shape):
        strides.append(step)
        step *= max(size, 1)
    return np.lib.stride_tricks.as_strided(data, data.shape, tuple(reversed(strides)))

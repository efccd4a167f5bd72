"""In-place kernels for the case where nothing needs recording (optimizer steps, no_grad
updates): they write straight into the tensor's memory instead of computing an out-of-place
result and copying it back. Each does the same arithmetic, in the same order, as the
out-of-place op, so results are bit-identical.

`DIRECT[op](data, *args)` returns True when it handled the update, False when the operands
need the general path (mixed dtypes, broadcasting that grows the tensor, ...).
"""

import numpy as np

from runtime.fma import scratch
from runtime.ops.elementwise import fused_axpy
from runtime.ops.misc import addcmul_kernel, lerp_kernel

_SCALARS = (int, float)


def _scratch(like):
    """A per-thread buffer shaped like `like`, reused across calls (no fresh pages per step)."""
    return scratch(like.shape, like.dtype)


def _operand(x, data):
    """numpy operand for x if it can be combined with `data` without promotion, else None."""
    if x.__class__ in _SCALARS:
        return x if data.dtype.kind == "f" else None
    d = getattr(x, "_data", None)
    if d is None or d.dtype != data.dtype:
        return None
    return d


def _fits(d, data):
    if d.__class__ in _SCALARS or d.shape == data.shape or d.ndim == 0:
        return True
    try:
        return np.broadcast_shapes(d.shape, data.shape) == data.shape
    except ValueError:  # the general path raises PyTorch's error
        return False


def _binary(np_fn):
    def kernel(data, other, alpha=1):
        b = _operand(other, data)
        if b is None or data.dtype == np.bool_ or not _fits(b, data):
            return False  # bool - bool must raise, from the out-of-place op
        if alpha != 1 and data.dtype == np.float32 and b.__class__ not in _SCALARS:
            fused_axpy(np_fn, data, b, alpha, out=data)
            return True
        if alpha != 1:
            if b.__class__ in _SCALARS or b.ndim == 0:
                b = b * alpha
            else:
                b = np.multiply(b, alpha, out=_scratch(b))
        np_fn(data, b, out=data)
        return True

    return kernel


def _mul(data, other):
    b = _operand(other, data)
    if b is None or not _fits(b, data):
        return False
    np.multiply(data, b, out=data)
    return True


def _div(data, other, rounding_mode=None):
    b = _operand(other, data)
    if b is None or rounding_mode is not None or data.dtype.kind != "f" or not _fits(b, data):
        return False
    np.true_divide(data, b, out=data)
    return True


def _addc(np_fn):
    def kernel(data, t1, t2, value=1):
        a, b = _operand(t1, data), _operand(t2, data)
        if a is None or b is None or data.dtype.kind != "f" or not (_fits(a, data)
                                                                   and _fits(b, data)):
            return False
        if np_fn is np.multiply and data.dtype == np.float32:
            addcmul_kernel(data, a, b, value, out=data)
            return True
        tmp = np_fn(a * value, b)
        np.add(data, tmp, out=data)
        return True

    return kernel


def _lerp(data, end, weight):
    e = _operand(end, data)
    if e is None or weight.__class__ not in _SCALARS or data.dtype.kind != "f" \
            or not _fits(e, data):
        return False
    if data.dtype == np.float32:
        lerp_kernel(data, e, weight, out=data)
        return True
    if weight >= 0.5:
        return False
    tmp = np.subtract(e, data)
    tmp *= weight
    np.add(data, tmp, out=data)
    return True


def _zero(data):
    data[...] = 0
    return True


def _fill(data, value):
    if value.__class__ not in _SCALARS + (bool,):
        d = getattr(value, "_data", None)  # setitem's 0-dim tensor of the target's dtype
        if d is None or d.ndim or d.dtype != data.dtype:
            return False
        value = d
    data[...] = value
    return True


def _copy(data, src):
    d = getattr(src, "_data", None)
    if d is None:
        return False
    try:
        np.copyto(data, np.broadcast_to(d, data.shape), casting="unsafe")
    except ValueError:
        return False
    return True


def build(ops):
    """The table, keyed by the out-of-place functions Tensor._inplace is called with."""
    return {
        ops.add: _binary(np.add),
        ops.sub: _binary(np.subtract),
        ops.mul: _mul,
        ops.div: _div,
        ops.addcmul: _addc(np.multiply),
        ops.addcdiv: _addc(np.true_divide),
        ops.lerp: _lerp,
        ops.zero_like_op: _zero,
        ops.fill_like_op: _fill,
        ops.copy_like_op: _copy,
    }

"""Forward kernels of elementwise operations, with broadcasting and PyTorch's promotion."""

import operator

import numpy as np

from runtime.autograd_meta import FORWARD_AD, _state, any_requires_grad, record, requires_grad
from runtime.autograd_meta import _new_unary_node as new_unary_node
from runtime.autograd_meta import check_integer_history
from runtime.function import node_class, save_input, save_output
from runtime.rules import numpy_ops
from runtime.mkl import torch_kernel
from runtime.rules.numpy_ops import via_double
from runtime.fma import fma
from runtime.ops._core import (
    _SCALARS,
    binary_dtype,
    check_operand,
    data_of,
    float_dtype,
    get_default_dtype,
    is_tensor,
    result_dtype,
    wrap,
)
from runtime.ops.layout import c_contiguous, like_iterator, plain
from runtime import dtypes
from runtime.rules import numpy_ops

AddBackward0 = node_class("AddBackward0", "add")
SubBackward0 = node_class("SubBackward0", "sub")
RsubBackward0 = node_class("RsubBackward0", "rsub_tensor")
RsubBackward1 = node_class("RsubBackward1", "rsub")
MulBackward0 = node_class("MulBackward0", "mul")
DivBackward0 = node_class("DivBackward0", "div")
DivBackward2 = node_class("DivBackward2", "div_rounding")
PowBackward0 = node_class("PowBackward0", "pow")
PowBackward1 = node_class("PowBackward1", "pow_tensor")
PowBackward2 = node_class("PowBackward2", "rpow")
MaximumBackward0 = node_class("MaximumBackward0", "maximum")
MinimumBackward0 = node_class("MinimumBackward0", "minimum")
WhereBackward0 = node_class("WhereBackward0", "where")
MaskedFillBackward0 = node_class("MaskedFillBackward0", "masked_fill")
MaskedFillBackward1 = node_class("MaskedFillBackward1", "masked_fill_tensor")
ClampBackward1 = node_class("ClampBackward1", "clamp")
ClampBackward0 = node_class("ClampBackward0", "clamp_tensor")
ClampMinBackward0 = node_class("ClampMinBackward0", "clamp")
ClampMaxBackward0 = node_class("ClampMaxBackward0", "clamp")
ClampMinBackward1 = node_class("ClampMinBackward1", "clamp_min_tensor")
ClampMaxBackward1 = node_class("ClampMaxBackward1", "clamp_max_tensor")
NotImplementedNode = node_class("NotImplemented", "not_implemented")
# PyTorch's ready queue gives a NotImplemented node the priority AccumulateGrad nodes share
# (UINT64_MAX): its backward fails before the other nodes ready with it run
ERROR_FIRST = 1 << 62


_ndarray = np.ndarray
_asarray = np.asarray
_FLOAT = dtypes.FLOAT


def _compute(np_fn, a, b, dt):
    try:
        ad, bd = data_of(a, dt.np), data_of(b, dt.np)
        return _result(iterator_layout(np_fn(ad, bd), (ad, bd)), dt)
    except ValueError:
        raise _shape_error(a, b) from None


def _shape_error(*operands):
    shapes = [list(x._data.shape) for x in operands if hasattr(x, "_data")]
    return RuntimeError(f"shapes {' and '.join(map(str, shapes))} cannot be broadcast "
                        f"together: each dimension must be equal, or 1 in one of them")


def _operands(a, b, name):
    """(a_data, b_data, result dtype) for a binary op, with fast paths for the common cases:
    a float scalar on a float tensor, and two tensors of one dtype."""
    da = a._dtype
    cb = b.__class__
    if cb is float or cb is int:
        if da.category == _FLOAT:
            ad = a._data
            # numpy scalars do arithmetic ~10x faster than 0-dim arrays
            return (ad[()] if ad.ndim == 0 else ad), b, da
    elif hasattr(b, "_grad_fn") and b._dtype is da:
        return a._data, b._data, da
    b = check_operand(b, name)
    dt = binary_dtype(a, b)
    return data_of(a, dt.np), data_of(b, dt.np), dt


_wrap_tensor = None  # Tensor._wrap, installed by runtime.tensor


def _result(data, dt):
    if data.__class__ is not _ndarray:
        data = _asarray(data)
    return _wrap_tensor(data, dt)


def _laid_out_result(data, dt, a, b, ad, bd):
    """The result of a binary op on tensor `a` and `b` (computed from their arrays `ad`,
    `bd`) laid out as TensorIterator lays it out. Only an operand that is not C-contiguous (a
    view, or a result laid out as one), or one with strides of its own along size-1
    dimensions, or an empty view (whose strides TensorIterator sorts too), can make numpy's
    layout differ from it, so only then is it checked: this runs on every add and mul (hence
    the common case, no size-1 dimension, inline, cheaper than layout.plain)."""
    if data.__class__ is _ndarray and data.ndim > 1 and not (
            ad.flags.c_contiguous and (1 not in ad.shape and ad.base is None or plain(ad)) and (
                bd.__class__ is not _ndarray or bd.flags.c_contiguous and (
                    1 not in bd.shape and bd.base is None or plain(bd)))):
        data = like_iterator(data, (ad, bd))
    return _result(data, dt)


def iterator_layout(data, operands):
    """`data` laid out as TensorIterator lays out an elementwise result of `operands` (Python
    numbers and 0-dim arrays included where PyTorch wraps them as operands). numpy's own
    layout agrees when every operand is C-contiguous with PyTorch's size-1 strides (checked
    first: the common case); it may not for transposed, expanded or strided ones."""
    for x in operands:
        if x.__class__ is _ndarray and x.ndim and not plain(x):
            return like_iterator(data, operands)
    return data


def _grad_on(a, b):
    """Whether a binary op on a, b must be recorded (grad mode on, some input requiring grad)."""
    if not _state.enabled:
        return False
    if a._requires_grad or a._grad_fn is not None:
        return True
    return hasattr(b, "_grad_fn") and (b._requires_grad or b._grad_fn is not None)


def add(a, b, alpha=1):
    return _additive(operator.add, AddBackward0, a, b, alpha, "add")


def sub(a, b, alpha=1):
    _check_not_bool(a, b)
    return _additive(operator.sub, SubBackward0, a, b, alpha, "sub")


def _check_not_bool(a, b):
    """PyTorch refuses subtraction as soon as one operand is a bool (tensor or Python bool)."""
    bool_ = dtypes.bool_
    if a._dtype is bool_ or b.__class__ is bool or getattr(b, "_dtype", None) is bool_:
        raise RuntimeError("subtraction involving a bool tensor or value is not supported; "
                           "for masks use logical_not() or ~, for two masks logical_xor()")


def _additive(np_fn, cls, a, b, alpha, name):
    """a + alpha * b or a - alpha * b (Python operators: fast on numpy scalars)."""
    ad, bd, dt = _operands(a, b, name)
    fused = False
    scaled = bd
    if alpha.__class__ is not int or alpha != 1:
        fused = dt.np == np.float32 and hasattr(bd, "dtype") and alpha.__class__ is not bool
        if not fused:
            scaled = _scaled(bd, alpha, dt)
    try:
        data = fused_axpy(np_fn, ad, bd, alpha) if fused else np_fn(ad, scaled)
        # the layout follows b itself: alpha * b is numpy's temporary, laid out its own way
        out = _laid_out_result(data, dt, a, b, ad, bd)
    except ValueError:
        raise _shape_error(a, b) from None
    if _grad_on(a, b):
        record(cls, (a, b), out, (alpha,))
    return out


def fused_axpy(np_fn, ad, bd, alpha, out=None):
    """a +- alpha*b on float32 with a single rounding, as PyTorch's kernels compute it (one
    fused multiply-add, alpha first rounded to float32)."""
    alpha = np.float32(alpha)
    return fma(bd, -alpha if np_fn in _SUBTRACTIONS else alpha, ad, out)


_SUBTRACTIONS = (operator.sub, np.subtract)


def _scaled(bd, alpha, dt):
    """alpha * b for add/sub, with PyTorch's checks of alpha against the result dtype (a
    bool result takes an integer alpha too, but not a float one)."""
    if alpha.__class__ is bool and dt is not dtypes.bool_:
        raise RuntimeError("a bool alpha is only allowed when the result is a bool tensor")
    if dt.category != _FLOAT and isinstance(alpha, float):
        raise RuntimeError(f"alpha must be an integer for a result of dtype {dt}, "
                           f"got {alpha}")
    if dt is dtypes.bool_:
        return np.logical_and(bd, bool(alpha))
    return bd * alpha


def rsub(x, c, alpha=1):
    """c - alpha * x, for a Python number c (`2 - x`) or a tensor c (`torch.rsub(x, c)`)."""
    c = check_operand(c, "rsub")
    _check_not_bool(x, c)
    dt = binary_dtype(x, c)
    xd, cd = data_of(x, dt.np), data_of(c, dt.np)
    try:
        # PyTorch computes c - alpha * x with c as the iterator's first operand
        data = np.subtract(cd, np.multiply(xd, alpha) if alpha != 1 else xd)
        out = wrap(iterator_layout(data, (cd, xd)), dt)
    except ValueError:
        raise _shape_error(x, c) from None
    if is_tensor(c):
        if any_requires_grad((x, c)):
            record(RsubBackward0, (x, c), out, (alpha,))
    elif any_requires_grad((x,)):
        record(RsubBackward1, (x,), out, (alpha,))
    return out


def mul(a, b):
    ad, bd, dt = _operands(a, b, "mul")
    try:
        out = _laid_out_result(ad * bd, dt, a, b, ad, bd)
    except ValueError:
        raise _shape_error(a, b) from None
    if _state.enabled:
        ra = a._requires_grad or a._grad_fn is not None
        rb = hasattr(b, "_grad_fn") and (b._requires_grad or b._grad_fn is not None)
        if ra or rb:
            record(MulBackward0, (a, b), out,
                   (save_input(a) if rb else None, save_input(b) if ra else None))
    return out


def div(a, b, rounding_mode=None):
    if rounding_mode is not None:
        return _rounded_div(a, check_operand(b, "div"), rounding_mode)
    ad, bd, dt = _operands(a, b, "div")
    if dt.category != _FLOAT:
        dt = get_default_dtype()
        ad, bd = data_of(a, dt.np), data_of(b, dt.np)
    try:
        out = _laid_out_result(np.true_divide(ad, bd), dt, a, b, ad, bd)
    except ValueError:
        raise _shape_error(a, b) from None
    if _grad_on(a, b):
        ra, rb = requires_grad(a), requires_grad(b)
        record(DivBackward0, (a, b), out, (save_input(a) if rb else None, save_input(b)))
    return out


def _rounded_div(a, b, mode, cls=None):
    """a / b rounded toward -inf ("floor") or toward zero ("trunc"): piecewise constant, so
    recorded as DivBackward2 whose gradients are zeros (`cls` NotImplemented: floor_divide,
    which PyTorch does not differentiate)."""
    if mode not in ("floor", "trunc"):
        raise RuntimeError(f"div(): rounding_mode must be None, 'trunc' or 'floor', not {mode!r}")
    dt = binary_dtype(a, b)
    if dt is dtypes.bool_:
        raise NotImplementedError(f"div() with rounding_mode={mode!r} is not implemented for "
                                  f"bool tensors")
    ad, bd = data_of(a, dt.np), data_of(b, dt.np)
    try:
        if dt.category != dtypes.FLOAT:
            if divides_by_zero(ad, bd):
                raise RuntimeError("integer division by zero (ZeroDivisionError)")
            data = np.floor_divide(ad, bd) if mode == "floor" else _int_trunc_div(ad, bd)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                data = np.floor_divide(ad, bd) if mode == "floor" else np.trunc(ad / bd)
    except ValueError:
        raise _shape_error(a, b) from None
    out = wrap(iterator_layout(data, (ad, bd)), dt)
    # floor_divide (cls) is not differentiated: only its float results get a node, which
    # raises in backward as PyTorch's does
    if any_requires_grad((a, b)) and (cls is None or dt.category == dtypes.FLOAT):
        if cls is None:
            record(DivBackward2, (a, b), out, ())
        else:
            record(cls, tuple(t for t in (a, b) if requires_grad(t)), out, ())
            out._grad_fn._seq = ERROR_FIRST
    return out


def divides_by_zero(a, b):
    """Whether an integer division meets a zero divisor (an empty result meets none)."""
    return bool(np.any(np.equal(b, 0))) and np.broadcast(a, b).size > 0


def _int_trunc_div(a, b):
    q = np.floor_divide(a, b)
    # floor and trunc differ where the quotient is negative and inexact
    return q + ((np.remainder(a, b) != 0) & ((np.sign(a) * np.sign(b)) < 0))


def rdiv(x, c):
    """c / x for a Python number c: recorded as reciprocal(x) * c, as PyTorch does."""
    return mul(reciprocal(x), c)


def floor_divide(a, b):
    if not is_tensor(a):
        return rfloor_divide(b, a)
    return _rounded_div(a, check_operand(b, "floor_divide"), "floor", NotImplementedNode)


def remainder_kernel(a, b):
    """a - floor(a / b) * b as PyTorch computes it: fmod, then b added where the signs differ,
    so a zero remainder keeps the sign of a (numpy's takes the sign of b)."""
    with np.errstate(all="ignore"):
        r = np.fmod(a, b)
        if r.dtype.kind != "f":
            return np.remainder(a, b)
        return np.where((r != 0) & (np.less(b, 0) != np.less(r, 0)), r + b, r)


def rfloor_divide(x, c):
    """c // x for a Python number c: one NotImplemented edge, to x."""
    dt = binary_dtype(x, c)
    return _rounded_div(wrap(np.asarray(c, dt.np), dt), x, "floor", NotImplementedNode)


def pow(a, b):
    if not is_tensor(a):
        return rpow(b, a)
    b = check_operand(b, "pow")
    if type(b) in _SCALARS:
        return _pow_scalar(a, b)
    dt = binary_dtype(a, b)
    if dt is dtypes.bool_:
        raise NotImplementedError("pow() is not implemented for two bool operands")
    out = _compute(numpy_ops.pow if dt.category == _FLOAT else _int_power, a, b, dt)
    if any_requires_grad((a, b)):
        record(PowBackward1, (a, b), out,
               (save_input(a), save_input(b), save_output(out, "PowBackward1")))
    return out


def _int_power(b, e):
    """Integer b ** e as PyTorch computes it: a negative exponent gives 1 for b = 1, +-1 for
    b = -1 by parity, and 0 otherwise (numpy refuses negative integer powers)."""
    neg = np.less(e, 0)
    if not np.any(neg):
        return np.power(b, e)
    r = np.power(b, np.where(neg, 0, e))  # (abs() of the lowest integer stays negative)
    odd = np.equal(np.remainder(e, 2), 1)
    tiny = np.where(np.equal(b, 1), 1, np.where(np.equal(b, -1), np.where(odd, -1, 1), 0))
    return np.where(neg, tiny, r).astype(r.dtype)


def _pow_scalar(a, e):
    dt = binary_dtype(a, e)
    if dt.category != dtypes.FLOAT and e < 0 and type(e) is int:
        raise RuntimeError("integer tensors cannot be raised to negative integer powers")
    ad = data_of(a, dt.np)  # the exponent is no operand of PyTorch's (unary) iterator
    out = wrap(iterator_layout(np.asarray(numpy_ops.pow(ad, e)), (ad,)), dt)
    if any_requires_grad((a,)):
        record(PowBackward0, (a,), out, (save_input(a), e))
    return out


def rpow(x, base):
    """base ** x for a Python number base (`2 ** x`)."""
    dt = binary_dtype(x, base)
    power = numpy_ops.pow if dt.category == _FLOAT else _int_power
    # PyTorch allocates the result C-contiguous before handing it to pow's iterator
    out = wrap(c_contiguous(np.asarray(power(np.asarray(base, dt.np), data_of(x, dt.np)))), dt)
    if any_requires_grad((x,)):
        record(PowBackward2, (x,), out,
               (base, save_output(out, "PowBackward2"), save_input(x)))
    return out


def float_power(x, exponent):
    """x ** exponent computed in float64 (PyTorch converts each tensor operand first)."""
    from runtime.ops.shape import to_dtype

    x, exponent = (to_dtype(v, dtypes.float64) if is_tensor(v) else float(v)
                   for v in (x, exponent))
    return pow(x, exponent)


def ties_keep_first(r, first):
    """r = max or min of `first` and another operand, where a tie of -0 and +0 gives
    `first`'s zero, as PyTorch's kernels (std::max, vector max) do; numpy's gives the other's."""
    if r.dtype.kind == "f" and not np.all(r):
        return np.where(np.equal(r, first), first, r)
    return r


def _maximum_kernel(a, b):
    return ties_keep_first(np.maximum(a, b), a)


def _minimum_kernel(a, b):
    return ties_keep_first(np.minimum(a, b), a)


def _minmax(a, b, is_max):
    if not is_tensor(b):
        raise TypeError(f"{'maximum' if is_max else 'minimum'}() takes two tensors, got "
                        f"{type(b).__name__} as the second operand; use clamp() for a number")
    b = check_operand(b, "maximum")
    dt = binary_dtype(a, b)
    out = _compute(_maximum_kernel if is_max else _minimum_kernel, a, b, dt)
    if any_requires_grad((a, b)):
        cls = MaximumBackward0 if is_max else MinimumBackward0
        record(cls, (a, b), out, (save_input(a), save_input(b), is_max))
    return out


def maximum(a, b):
    return _minmax(a, b, True)


def minimum(a, b):
    return _minmax(a, b, False)


def where(cond, a=None, b=None):
    """a where cond holds, else b; with only `cond`, the indices where it holds (a tuple of
    index tensors, one per dimension, like nonzero(as_tuple=True))."""
    if a is None and b is None:
        return nonzero(cond, as_tuple=True)
    if is_tensor(cond):
        if cond._dtype is not dtypes.bool_ and cond._dtype is not dtypes.uint8:
            raise RuntimeError(f"where(): the condition must be a bool tensor, got {cond._dtype}")
        c = cond._data
    else:
        c = np.asarray(cond)  # a mask saved by a derivative rule
    a, b = check_operand(a, "where"), check_operand(b, "where")
    dt = result_dtype(a, b)
    try:
        ad, bd = data_of(a, dt.np), data_of(b, dt.np)
        # the operands as TensorIterator sees them: converted to dt first (.to() lays the
        # copy out as empty_like does)
        out = wrap(like_iterator(np.where(c, ad, bd), (np.asarray(c), ad, bd)), dt)
    except ValueError:
        raise _shape_error(a, b, cond) from None
    if any_requires_grad((a, b)):
        # the condition is saved as PyTorch saves it: changing it in place breaks backward
        record(WhereBackward0, (a, b), out, (save_input(cond) if is_tensor(cond) else c,))
    return out


def nonzero(x, as_tuple=False):
    """Indices of the non-zero elements: an (n, ndim) int64 tensor, or one per dimension."""
    found = np.nonzero(x._data.reshape(1) if x._data.ndim == 0 else x._data)
    if as_tuple:
        return tuple(wrap(i.astype(np.int64), dtypes.int64) for i in found)
    stacked = np.stack(found, axis=1) if x._data.ndim else np.zeros((int(found[0].size), 0))
    return wrap(stacked.astype(np.int64), dtypes.int64)


def masked_fill(x, mask, value):
    """x with `value` written where `mask` holds. A tensor value (0-dim) is differentiable:
    recorded as MaskedFillBackward1 with edges to x and value."""
    if not is_tensor(mask):  # PyTorch's argument parser refuses it
        raise TypeError(f"masked_fill(): the mask must be a bool tensor, not "
                        f"{type(mask).__name__}")
    if mask._dtype is not dtypes.bool_:
        raise RuntimeError(f"masked_fill(): the mask must be a bool tensor, got {mask._dtype}")
    m = mask._data
    if is_tensor(value):
        if value._data.ndim:
            raise RuntimeError(f"masked_fill(): a tensor value must be 0-dimensional, got "
                               f"{value._data.ndim} dimension(s)")
        # PyTorch fills a contiguous clone of x (expanded to the mask's shape)
        out = wrap(_contiguous_where(m, value._data.astype(x._dtype.np), x._data), x._dtype)
        if any_requires_grad((x, value)):
            record(MaskedFillBackward1, (x, value), out, (save_input(mask),))
        return out
    value = check_operand(value, "masked_fill")
    try:
        out = wrap(_contiguous_where(m, np.asarray(value).astype(x._dtype.np), x._data),
                   x._dtype)
    except ValueError:
        raise _shape_error(x, mask) from None
    if any_requires_grad((x,)):
        record(MaskedFillBackward0, (x,), out, (save_input(mask),))
    return out


def _contiguous_where(m, a, b):
    return c_contiguous(np.where(m, a, b))


def clamp(x, min=None, max=None):
    """min(max(x, min), max); the bounds may be numbers or tensors (not one of each)."""
    if min is None and max is None:
        raise RuntimeError("clamp(): at least one of 'min' and 'max' must be given")
    if is_tensor(min) or is_tensor(max):
        if not all(b is None or is_tensor(b) for b in (min, max)):
            raise TypeError("clamp(): the bounds must both be numbers or both be tensors")
        return _clamp_tensor(ClampBackward0, x, min, max)
    return _clamp_scalar(ClampBackward1, x, min, max)


def _clamp_scalar(cls, x, lo, hi):
    dt = x._dtype
    if dt.category != _FLOAT:
        dt = result_dtype(x, *(b for b in (lo, hi) if b is not None))
    r = xd = data_of(x, dt.np)
    if lo is not None:
        r = np.maximum(r, lo)
    if hi is not None:
        r = np.minimum(r, hi)
    if lo == 0 or hi == 0:
        r = ties_keep_first(r, xd)
    out = _result(iterator_layout(r, (x._data,)), dt)
    if any_requires_grad((x,)):
        record(cls, (x,), out, (save_input(x), lo, hi))
    return out


def _clamp_tensor(cls, x, lo, hi):
    bounds = [b for b in (lo, hi) if b is not None]
    dt = result_dtype(x, *bounds)
    r = xd = data_of(x, dt.np)
    arrays = [xd] + [data_of(b, dt.np) for b in bounds]
    try:
        if lo is not None:
            r = np.maximum(r, arrays[1])
        if hi is not None:
            r = np.minimum(r, arrays[-1])
    except ValueError:
        raise _shape_error(x, *bounds) from None
    out = wrap(iterator_layout(ties_keep_first(r, xd), arrays), dt)
    if any_requires_grad((x, *bounds)):
        saved = (save_input(x), *(None if b is None else save_input(b) for b in (lo, hi)))
        if cls is ClampBackward0:
            record(cls, (x, lo, hi), out, saved)
        else:  # clamp_min / clamp_max: edges to x and the one bound
            record(cls, (x, *bounds), out, saved)
    return out


def clamp_min(x, min):
    if is_tensor(min):
        return _clamp_tensor(ClampMinBackward1, x, min, None)
    return _clamp_scalar(ClampMinBackward0, x, min, None)


def clamp_max(x, max):
    if is_tensor(max):
        return _clamp_tensor(ClampMaxBackward1, x, None, max)
    return _clamp_scalar(ClampMaxBackward0, x, None, max)


# -- unary ------------------------------------------------------------------------------------

def _unary(np_fn, cls, x, saves, keep_dtype=False):
    dt = x._dtype
    if dt.category == _FLOAT or keep_dtype:
        data = x._data
        source = data
        data = np_fn(data[()] if data.ndim == 0 else data)
        if data.__class__ is not _ndarray:
            data = _asarray(data)
        elif data.ndim > 1 and (x._base is not None or data.strides != source.strides):
            # numpy's layout is PyTorch's but for a view or where numpy chose strides of its
            # own (a dense result keeps those of its size-1 dimensions in PyTorch)
            data = iterator_layout(data, (source,))
        if data.dtype is not dt.np and data.dtype != dt.np:  # abs of complex is real
            dt = dtypes.from_numpy(data.dtype)
        out = _wrap_tensor(data, dt)
    else:
        dt = float_dtype(x)
        d = data_of(x, dt.np)
        out = _result(iterator_layout(np_fn(d), (d,)), dt)
    if _state.enabled and (x._requires_grad or x._grad_fn is not None):
        if saves == "input":
            args = (save_input(x),)
        elif saves == "result":
            args = (save_output(out, cls.__name__),)
        else:
            args = ()
        if out._dtype.category != dtypes.FLOAT:
            check_integer_history(out)
        out._grad_fn = new_unary_node(cls, x, out, args)
        if FORWARD_AD:
            FORWARD_AD[0](out._grad_fn, (x,), (out,))
    return out


def _define_unary(name, np_fn, node_name, prim, saves, keep_dtype=False):
    cls = node_class(node_name, prim)

    def op(x):
        return _unary(np_fn, cls, x, saves, keep_dtype)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name}; its backward node is {node_name}."
    return op


def _sigmoid(d):
    return 1.0 / (1.0 + np.exp(-d))


def _relu(d):
    if d.dtype == np.bool_:
        raise RuntimeError("relu() is not implemented for bool tensors")
    return np.maximum(0, d)  # 0 first: -0.0 and nan stay, as PyTorch's relu keeps them


def _rsqrt(d):
    with np.errstate(divide="ignore", invalid="ignore"):  # inf and nan, as PyTorch, quietly
        return 1.0 / np.sqrt(d)


def _reciprocal(d):
    with np.errstate(divide="ignore"):  # 1 / 0 is inf, as PyTorch's, quietly
        return 1.0 / d


def _negate(d):
    if d.dtype == np.bool_:
        raise RuntimeError("negating a bool tensor with - is not supported; for masks use "
                           "logical_not() or ~")
    return np.negative(d)


neg = _define_unary("neg", _negate, "NegBackward0", "neg", None, keep_dtype=True)
def _no_bool(np_fn, name):
    """np_fn for the ops PyTorch has no bool kernel for."""
    def kernel(d):
        if d.dtype == np.bool_:
            raise NotImplementedError(f"{name}() is not implemented for bool tensors")
        return np_fn(d)

    return kernel


abs = _define_unary("abs", _no_bool(np.abs, "abs"), "AbsBackward0", "abs", "input",
                    keep_dtype=True)
exp = _define_unary("exp", torch_kernel("exp", via_double(np.exp)), "ExpBackward0", "exp", "result")
log = _define_unary("log", torch_kernel("log", via_double(np.log)), "LogBackward0", "log", "input")
log1p = _define_unary("log1p", via_double(np.log1p), "Log1PBackward0", "log1p", "input")
sqrt = _define_unary("sqrt", torch_kernel("sqrt", np.sqrt), "SqrtBackward0", "sqrt", "result")
rsqrt = _define_unary("rsqrt", _rsqrt, "RsqrtBackward0", "rsqrt", "result")
sin = _define_unary("sin", torch_kernel("sin", np.sin), "SinBackward0", "sin", "input")
cos = _define_unary("cos", torch_kernel("cos", np.cos), "CosBackward0", "cos", "input")
tan = _define_unary("tan", torch_kernel("tan", via_double(np.tan)), "TanBackward0", "tan", "result")
tanh = _define_unary("tanh", torch_kernel("tanh", via_double(np.tanh)), "TanhBackward0", "tanh",
                     "result")
sigmoid = _define_unary("sigmoid", _sigmoid, "SigmoidBackward0", "sigmoid", "result")
relu = _define_unary("relu", _relu, "ReluBackward0", "relu", "result", keep_dtype=True)
reciprocal = _define_unary("reciprocal", _reciprocal, "ReciprocalBackward0", "reciprocal",
                           "result")
def _real_sign(d):
    if d.dtype.kind == "c":
        raise NotImplementedError("sign() is not defined for complex tensors (numpy's is "
                                  "z / |z|); use sgn()")
    return numpy_ops.sign(d)


sign = _define_unary("sign", _real_sign, "SignBackward0", "sign", None, keep_dtype=True)
floor = _define_unary("floor", _no_bool(np.floor, "floor"), "FloorBackward0", "floor", None,
                      keep_dtype=True)
ceil = _define_unary("ceil", _no_bool(np.ceil, "ceil"), "CeilBackward0", "ceil", None,
                     keep_dtype=True)
trunc = _define_unary("trunc", _no_bool(np.trunc, "trunc"), "TruncBackward0", "trunc", None,
                      keep_dtype=True)
_round0 = _define_unary("round", _no_bool(np.round, "round"), "RoundBackward0", "round", None,
                        keep_dtype=True)


def round(x, decimals=0):
    if decimals == 0:
        return _round0(x)
    return _unary(lambda d: np.round(d, decimals), node_class("RoundBackward1", "round"),
                  x, None, keep_dtype=True)


def square(x):
    return _pow_scalar(x, 2)


# -- comparisons and logic (never differentiable) ----------------------------------------------

def _compare(np_fn, name):
    def op(a, b):
        b = check_operand(b, name)
        dt = binary_dtype(a, b)
        try:
            ad, bd = data_of(a, dt.np), data_of(b, dt.np)
            return _laid_out_result(np_fn(ad, bd), dtypes.bool_, a, b, ad, bd)
        except ValueError:
            raise _shape_error(a, b) from None

    op.__name__ = name
    return op


eq = _compare(np.equal, "eq")
ne = _compare(np.not_equal, "ne")
lt = _compare(np.less, "lt")
le = _compare(np.less_equal, "le")
gt = _compare(np.greater, "gt")
ge = _compare(np.greater_equal, "ge")
logical_and = _compare(np.logical_and, "logical_and")
logical_or = _compare(np.logical_or, "logical_or")
logical_xor = _compare(np.logical_xor, "logical_xor")


def logical_not(x):
    return wrap(np.logical_not(x._data), dtypes.bool_)


def isnan(x):
    return wrap(np.isnan(x._data), dtypes.bool_)


def isinf(x):
    return wrap(np.isinf(x._data), dtypes.bool_)


def isfinite(x):
    return wrap(np.isfinite(x._data), dtypes.bool_)


def bitwise(np_fn, a, b):
    b = check_operand(b, np_fn.__name__)
    dt = binary_dtype(a, b)
    if dt.category == dtypes.FLOAT:
        raise TypeError("bitwise operations need integer or bool tensors")
    return _compute(np_fn, a, b, dt)

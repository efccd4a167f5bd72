"""Forward kernels of the special and inverse-trigonometric functions (issue 16's math family):
acos ... atanh, exp2, erf/erfc/erfinv, logit, lgamma/digamma/polygamma, atan2, hypot, fmod,
remainder (now recorded), xlogy, nan_to_num.

Integer and bool inputs compute in the default float dtype, as PyTorch does; numpy's
floating-point warnings are silenced because PyTorch returns nan/inf without a word. Derivative
rules live in `runtime.rules.special` and `runtime.rules.elementwise`.
"""

import numpy as np
import scipy.special as sp

from runtime import dtypes
from runtime.autograd_meta import any_requires_grad, record, requires_grad
from runtime.function import save_input, save_output
from runtime.libm_float import libm_only, vector_and_libm
from runtime.mkl import torch_kernel
from runtime.ops._family import node
from runtime.ops._core import (
    binary_dtype,
    check_operand,
    data_of,
    float_dtype,
    get_default_dtype,
    is_tensor,
    wrap,
)
from runtime.rules import numpy_ops
from runtime.ops.elementwise import (
    ERROR_FIRST,
    NotImplementedNode,
    _shape_error,
    divides_by_zero,
    iterator_layout,
    remainder_kernel,
    via_double,
)


def _quiet(kernel):
    def run(*arrays):
        with np.errstate(all="ignore"):
            return kernel(*arrays)

    return run


# name: (numpy kernel, node name, rule's primitive, what the rule needs, extra rule args)
UNARY = {
    "acos": (torch_kernel("acos", via_double(np.arccos)), "AcosBackward0", "acos", "input", ()),
    "asin": (torch_kernel("asin", via_double(np.arcsin)), "AsinBackward0", "asin", "input", ()),
    "atan": (torch_kernel("atan", via_double(np.arctan)), "AtanBackward0", "atan", "input", ()),
    "sinh": (numpy_ops.sinh, "SinhBackward0", "sinh", "input", ()),
    "cosh": (numpy_ops.cosh, "CoshBackward0", "cosh", "input", ()),
    "asinh": (libm_only("asinhf", np.arcsinh), "AsinhBackward0", "asinh", "input", ()),
    "acosh": (libm_only("acoshf", np.arccosh), "AcoshBackward0", "acosh", "input", ()),
    "atanh": (vector_and_libm("atanhf", via_double(np.arctanh)), "AtanhBackward0", "atanh",
              "input", ()),
    "expm1": (via_double(np.expm1), "Expm1Backward0", "expm1", "result", ()),
    "log2": (torch_kernel("log2", np.log2), "Log2Backward0", "log2", "input", (2,)),
    "log10": (torch_kernel("log10", np.log10), "Log10Backward0", "log10", "input", (10,)),
    "exp2": (np.exp2, "Exp2Backward0", "exp2", "result", ()),
    "erf": (torch_kernel("erf", sp.erf), "ErfBackward0", "erf", "input", ()),
    "erfc": (torch_kernel("erfc", sp.erfc), "ErfcBackward0", "erfc", "input", ()),
    "erfinv": (torch_kernel("erfinv", sp.erfinv), "ErfinvBackward0", "erfinv", "result", ()),
    "lgamma": (sp.gammaln, "LgammaBackward0", "lgamma", "input", ()),
    "digamma": (sp.digamma, "DigammaBackward0", "digamma", "input", ()),
    "sinc": (np.sinc, "SincBackward0", "sinc", "input", ()),
    "i0": (sp.i0, "I0Backward0", "i0", "input", ()),
}


def _unary(kernel, cls, x, saves, extra):
    dt = float_dtype(x)
    d = data_of(x, dt.np)
    out = wrap(iterator_layout(kernel(d), (d,)), dt)
    if any_requires_grad((x,)):
        saved = save_input(x) if saves == "input" else save_output(out, cls.__name__)
        record(cls, (x,), out, (saved, *extra))
    return out


def _define(name, kernel, node_name, prim, saves, extra):
    cls = node(node_name, prim)
    kernel = _quiet(kernel)

    def op(x):
        return _unary(kernel, cls, x, saves, extra)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name}; its backward node is {node_name}."
    return op


globals().update({name: _define(name, *row) for name, row in UNARY.items()})
SpecialI1Backward0 = node("SpecialI1Backward0", "i1")


def special_i1(x):
    """torch.special.i1 (i0's derivative; it has no torch.* or Tensor name). Its node keeps
    both the input and the result, as PyTorch's does."""
    dt = float_dtype(x)
    d = data_of(x, dt.np)
    out = wrap(iterator_layout(sp.i1(d), (d,)), dt)
    if any_requires_grad((x,)):
        record(SpecialI1Backward0, (x,), out,
               (save_input(x), save_output(out, "SpecialI1Backward0")))
    return out
LogitBackward0 = node("LogitBackward0", "logit")
PolygammaBackward0 = node("PolygammaBackward0", "polygamma")
PolygammaBackward1 = node("PolygammaBackward1", "polygamma")  # polygamma_ (in place)
NanToNumBackward0 = node("NanToNumBackward0", "nan_to_num")


def logit(x, eps=None):
    """log(x / (1 - x)), with x first clamped to [eps, 1 - eps] when eps is given."""
    dt = float_dtype(x)
    d = data_of(x, dt.np)
    if eps is not None:
        d = np.clip(d, eps, 1 - eps)
    with np.errstate(all="ignore"):
        out = wrap(np.log(d / (1 - d)), dt)
    if any_requires_grad((x,)):
        record(LogitBackward0, (x,), out, (save_input(x), eps))
    return out


def polygamma(n, x, _node=PolygammaBackward0):
    """The n-th derivative of digamma (n = 0 is digamma itself)."""
    if type(n) is not int:
        raise TypeError(f"polygamma(): the order n must be an int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"polygamma(): the order n must not be negative, got {n}")
    dt = float_dtype(x)
    with np.errstate(all="ignore"):
        out = wrap(sp.polygamma(n, data_of(x, dt.np)), dt)
    if any_requires_grad((x,)):
        record(_node, (x,), out, (save_input(x), n))
    return out


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """nan, +inf and -inf replaced (by default with 0 and the dtype's largest / lowest value);
    integer tensors come back unchanged."""
    d = x._data
    if x._dtype.category != dtypes.FLOAT:
        return wrap(iterator_layout(d.copy(), (d,)), x._dtype)
    data = np.nan_to_num(d, nan=nan, posinf=posinf, neginf=neginf)
    out = wrap(iterator_layout(data, (d,)), x._dtype)
    if any_requires_grad((x,)):
        record(NanToNumBackward0, (x,), out, (save_input(x),))
    return out


# -- binary ------------------------------------------------------------------------------------

def _binary_data(a, b, name, to_float):
    """(a data, b data, result dtype) with broadcasting checked; ints go to the default float
    when the function is a floating-point one."""
    b = check_operand(b, name)
    dt = binary_dtype(a, b)
    if to_float and dt.category != dtypes.FLOAT:
        dt = get_default_dtype()
    ad, bd = data_of(a, dt.np), data_of(b, dt.np)
    try:
        np.broadcast_shapes(np.shape(ad), np.shape(bd))
    except ValueError:
        raise _shape_error(a, b) from None
    return b, ad, bd, dt


Atan2Backward0 = node("Atan2Backward0", "atan2")
HypotBackward0 = node("HypotBackward0", "hypot")


def _tensors_only(name, a, b):
    """atan2 and hypot take two tensors (PyTorch has no overload with a number)."""
    for position, t in (("first", a), ("second", b)):
        if not is_tensor(t):
            raise TypeError(f"{name}(): the {position} argument must be a Tensor, not "
                            f"{type(t).__name__}")


def _atan2_kernel(yd, xd):
    """float32 atan2 computed in float64 and rounded: PyTorch's vector kernel (SLEEF's,
    within an ulp) agrees with it on 97.6 % of random elements, with numpy's float32 kernel
    on 62 %."""
    if np.result_type(yd, xd) == np.float32:
        return np.arctan2(np.asarray(yd, np.float64), np.asarray(xd, np.float64)).astype(
            np.float32)
    return np.arctan2(yd, xd)


def atan2(y, x):
    _tensors_only("atan2", y, x)
    x, yd, xd, dt = _binary_data(y, x, "atan2", True)
    out = wrap(iterator_layout(_atan2_kernel(yd, xd), (yd, xd)), dt)
    if any_requires_grad((y, x)):
        record(Atan2Backward0, (y, x), out, (save_input(y), save_input(x)))
    return out


arctan2 = atan2


def hypot(a, b):
    _tensors_only("hypot", a, b)
    b, ad, bd, dt = _binary_data(a, b, "hypot", False)
    if dt.category != dtypes.FLOAT:
        raise NotImplementedError(f"hypot() is only implemented for floating point tensors, "
                                  f"not {dt}")
    out = wrap(iterator_layout(np.hypot(ad, bd), (ad, bd)), dt)
    if any_requires_grad((a, b)):
        # PyTorch saves each operand only for its own gradient
        record(HypotBackward0, (a, b), out,
               (save_input(a) if requires_grad(a) else None,
                save_input(b) if requires_grad(b) else None, save_output(out, "HypotBackward0")))
    return out


# (numpy kernel, quotient rounding, node for a number divisor, node for a tensor divisor)
_MODULO = {
    "fmod": (np.fmod, "trunc", node("FmodBackward0", "fmod_scalar"),
             node("FmodBackward1", "fmod_tensor")),
    "remainder": (remainder_kernel, "floor", node("RemainderBackward0", "remainder_scalar"),
                  node("RemainderBackward1", "remainder_tensor")),
}


def _modulo_value(name, a, b):
    """(a mod b, b) computed in the promoted dtype, before any node is recorded."""
    b, ad, bd, dt = _binary_data(a, b, name, False)
    if dt is dtypes.bool_:
        raise NotImplementedError(f"{name}() is not implemented for bool tensors")
    if dt.category != dtypes.FLOAT and divides_by_zero(ad, bd):
        raise RuntimeError(f"{name}(): integer division by zero (ZeroDivisionError)")
    with np.errstate(all="ignore"):
        return wrap(iterator_layout(_MODULO[name][0](ad, bd), (ad, bd)), dt), b


def _modulo(name, a, b):
    _, rounding, scalar_node, tensor_node = _MODULO[name]
    out, b = _modulo_value(name, a, b)
    if not any_requires_grad((a, b)):
        return out
    if not is_tensor(b):
        record(scalar_node, (a,), out, ())
    else:
        # PyTorch saves a and b only for b's gradient (a version check then applies); the
        # quotient is taken in the result's dtype, as PyTorch's (numpy would widen int64 and
        # float32 operands to float64)
        saved = (save_input(a), save_input(b)) if requires_grad(b) else (None, None)
        record(tensor_node, (a, b), out, saved + (rounding, out._dtype.np))
    return out


def fmod(a, b):
    """C's fmod: the remainder of a / b rounded toward zero (the sign follows a)."""
    if not is_tensor(a):
        raise TypeError("fmod(): the first argument must be a Tensor")
    return _modulo("fmod", a, b)


def remainder(a, b):
    """Python's %: the remainder of a / b rounded toward -inf (the sign follows b)."""
    if not is_tensor(a):
        return rremainder(b, a)
    return _modulo("remainder", a, b)


def rremainder(x, c):
    """c % x for a number c (`2 % x`, `torch.remainder(2, x)`): computed in x's dtype promoted
    with c's, and not differentiated: one NotImplemented edge, to x, as in PyTorch."""
    if not is_tensor(x):
        raise TypeError("remainder(): at least one argument must be a Tensor")
    dt = binary_dtype(x, c)
    out, _ = _modulo_value("remainder", wrap(np.asarray(c, dt.np), dt), x)
    if any_requires_grad((x,)):
        record(NotImplementedNode, (x,), out, ())
        out._grad_fn._seq = ERROR_FIRST
    return out


XlogyBackward0 = node("XlogyBackward0", "xlogy")
XlogyBackward1 = node("XlogyBackward1", "xlogy_scalar_self")
XlogyBackward2 = node("XlogyBackward2", "xlogy_scalar_other")


def xlogy(x, y):
    """x * log(y), defined as 0 where x is 0 (unless y is nan)."""
    if not is_tensor(x):
        if not is_tensor(y):
            raise TypeError("xlogy(): at least one argument must be a Tensor")
        x, yd, xd, dt = _binary_data(y, x, "xlogy", True)
    else:
        y, xd, yd, dt = _binary_data(x, y, "xlogy", True)
    with np.errstate(all="ignore"):
        data = np.where((xd == 0) & ~np.isnan(yd), 0.0, xd * np.log(yd))
    out = wrap(iterator_layout(data, (xd, yd)), dt)
    if not any_requires_grad((x, y)):
        return out
    if not is_tensor(y):
        record(XlogyBackward2, (x,), out, (save_input(x), y))
    elif not is_tensor(x):
        record(XlogyBackward1, (y,), out, (x, save_input(y)))
    else:
        record(XlogyBackward0, (x, y), out, (save_input(x), save_input(y)))
    return out


# name: (numpy kernel, backward node); both operands are float tensors, both differentiable
LOG_ADD_EXP = {
    "logaddexp": (np.logaddexp, node("LogaddexpBackward0", "logaddexp")),
    "logaddexp2": (np.logaddexp2, node("Logaddexp2Backward0", "logaddexp2")),
}


def _log_add_exp(name, a, b):
    _tensors_only(name, a, b)
    kernel, cls = LOG_ADD_EXP[name]
    b, ad, bd, dt = _binary_data(a, b, name, False)
    if dt.category != dtypes.FLOAT or dt.is_complex:
        raise NotImplementedError(f"{name}() takes real floating-point tensors, not {dt}")
    out = wrap(iterator_layout(_quiet(kernel)(ad, bd), (ad, bd)), dt)
    if any_requires_grad((a, b)):
        record(cls, (a, b), out, (save_input(a), save_input(b)))
    return out


def logaddexp(a, b):
    """log(exp(a) + exp(b)), without overflow."""
    return _log_add_exp("logaddexp", a, b)


def logaddexp2(a, b):
    """log2(2**a + 2**b), without overflow."""
    return _log_add_exp("logaddexp2", a, b)


CopysignBackward0 = node("CopysignBackward0", "copysign")
CopysignBackward1 = node("CopysignBackward1", "copysign")


def copysign(a, b):
    """|a| with the sign of b (a number or a tensor); integers compute in the default float."""
    b, ad, bd, dt = _binary_data(a, b, "copysign", True)
    out = wrap(iterator_layout(np.copysign(ad, bd), (ad, bd)), dt)
    if any_requires_grad((a, b)):
        saved = (save_input(a), save_output(out, "CopysignBackward0"))
        if is_tensor(b):
            record(CopysignBackward0, (a, b), out, saved)
        else:
            record(CopysignBackward1, (a,), out, saved)
    return out


def heaviside(x, values):
    """0 where x < 0, 1 where x > 0, `values` where x == 0; it has no derivative."""
    _tensors_only("heaviside", x, values)
    if x._dtype is not values._dtype:
        raise RuntimeError(f"heaviside() needs both tensors of one dtype, got {x._dtype} and "
                           f"{values._dtype}")
    values, xd, vd, dt = _binary_data(x, values, "heaviside", False)
    out = wrap(iterator_layout(np.heaviside(xd, vd).astype(dt.np), (xd, vd)), dt)
    if any_requires_grad((x, values)):
        record(NotImplementedNode, (x, values), out, ())
    return out


LdexpBackward0 = node("LdexpBackward0", "ldexp")


def ldexp(x, other):
    """x * 2**other, in the dtype of x promoted with that of 2.0**other (so integer inputs
    give the default float)."""
    _tensors_only("ldexp", x, other)
    scale_dt = other._dtype if other._dtype.category == dtypes.FLOAT else get_default_dtype()
    dt = binary_dtype(x, wrap(np.zeros((), scale_dt.np), scale_dt))
    xd, od = data_of(x, dt.np), data_of(other, dt.np)
    try:
        np.broadcast_shapes(np.shape(xd), np.shape(od))
    except ValueError:
        raise _shape_error(x, other) from None
    with np.errstate(all="ignore"):
        out = wrap(iterator_layout(xd * np.power(dt.np.type(2), od), (xd, od)), dt)
    if any_requires_grad((x, other)):
        integral = other._dtype.category != dtypes.FLOAT
        record(LdexpBackward0, (x, other), out,
               (save_input(other), save_output(out, "LdexpBackward0"), integral))
    return out


NextafterBackward0 = node("NextafterBackward0", "nextafter")


def nextafter(x, other):
    """The next representable number after x toward other. PyTorch records a node whose
    backward passes the cotangent to x unchanged and gives other zeros."""
    _tensors_only("nextafter", x, other)
    other, xd, od, dt = _binary_data(x, other, "nextafter", False)
    if x._dtype is not other._dtype:
        raise RuntimeError(f"nextafter(): expected both inputs of one dtype, got {x._dtype} "
                           f"and {other._dtype}")
    if dt.category != dtypes.FLOAT:
        raise NotImplementedError(f"nextafter() is only implemented for floating point tensors, "
                           f"not {dt}")
    out = wrap(iterator_layout(np.nextafter(xd, od), (xd, od)), dt)
    if any_requires_grad((x, other)):
        record(NextafterBackward0, (x, other), out, (save_input(x), save_input(other)))
    return out


FUNCTIONS = [*UNARY, "ldexp", "nextafter", "logit", "polygamma", "nan_to_num", "atan2", "arctan2",
             "hypot", "fmod", "remainder", "xlogy", *LOG_ADD_EXP, "copysign", "heaviside"]

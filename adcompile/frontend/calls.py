"""Calls in compiled code: builtins, math and numpy scalar functions, array constructors,
and other Python functions (inlined). One table maps each callable to its lowering."""

import ast
import builtins
import math

import numpy as np

from adcompile.frontend import arrays
from adcompile.ir import types as T

MATH = {}
for _name in ("sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "tanh", "sinh",
              "cosh", "asin", "acos", "atan", "log2", "log10", "erf", "erfc"):
    MATH[getattr(math, _name)] = (_name, "math")
for _name in ("floor", "ceil", "trunc"):
    MATH[getattr(math, _name)] = (_name, "math_int")
MATH[math.fabs] = ("abs", "math")
for _name in ("atan2", "hypot", "copysign", "fmod"):
    MATH[getattr(math, _name)] = (_name, "math")
MATH[math.pow] = ("pow", "math")

NUMPY = {}
for _name in ("sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "tanh", "sinh",
              "cosh", "log2", "log10", "floor", "ceil", "trunc"):
    NUMPY[getattr(np, _name)] = (_name, "numpy")
NUMPY[np.arcsin] = ("asin", "numpy")
NUMPY[np.arccos] = ("acos", "numpy")
NUMPY[np.arctan] = ("atan", "numpy")
NUMPY[np.arctan2] = ("atan2", "numpy")
NUMPY[np.hypot] = ("hypot", "numpy")
NUMPY[np.maximum] = ("maximum", "numpy")
NUMPY[np.minimum] = ("minimum", "numpy")
NUMPY[np.abs] = ("abs", "numpy")
NUMPY[np.power] = ("pow", "numpy")

_NP_SPELLING = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2",
                "pow": "power"}
CASTS = {builtins.float: T.FLOAT, builtins.int: T.INT, builtins.bool: T.BOOL,
         np.float64: T.F64, np.float32: T.F32, np.int64: T.I64}
ALLOC = {np.zeros: 0, np.ones: 1, np.empty: None}
ALLOC_LIKE = {np.zeros_like: 0, np.ones_like: 1, np.empty_like: None}
# every callable lowered here rather than inlined (frontend/fingerprint.py describes them by name)
KNOWN = {*MATH, *NUMPY, *CASTS, *ALLOC, *ALLOC_LIKE, *arrays.FUNCTIONS, np.full, builtins.abs, builtins.min,
         builtins.max, builtins.len, builtins.range}
DTYPES = {np.float64: "f64", np.float32: "f32", np.int64: "i64", float: "f64", int: "i64",
          np.bool_: "bool", bool: "bool"}


def lower_call(lw, fn, node):
    if _hashable(fn) and fn in arrays.FUNCTIONS:
        return arrays.FUNCTIONS[fn](lw, node, arrays._args(lw, node), arrays._keywords(lw, node))
    if node.keywords and not all(k.arg == "dtype" for k in node.keywords):
        raise lw.error(node, "keyword arguments are not supported here (only dtype= for array "
                             "constructors, axis=/keepdims= for reductions)")
    for table, handler in ((MATH, _math), (NUMPY, _math)):
        if _hashable(fn) and fn in table:
            return handler(lw, table[fn], node)
    if _hashable(fn) and fn in CASTS:
        return _cast(lw, CASTS[fn], node)
    if fn is builtins.abs:
        return lw.b.value("abs", (_arg(lw, node, 0, 1),), node=node)
    if fn in (builtins.min, builtins.max):
        return _minmax(lw, "min" if fn is builtins.min else "max", node)
    if fn is builtins.len:
        array = _arg(lw, node, 0, 1)
        if not isinstance(array.type, T.Array) or array.type.ndim == 0:
            raise lw.error(node, f"len() needs an array with at least one dimension, not "
                                 f"{array.type}")
        return lw.b.value("shape", (array,), {"axis": 0}, node, name=f"len_{array.name or 'a'}")
    if _hashable(fn) and fn in ALLOC:
        return _alloc(lw, ALLOC[fn], node)
    if fn is np.full:
        return _alloc(lw, "value", node)
    if _hashable(fn) and fn in ALLOC_LIKE:
        return _alloc_like(lw, ALLOC_LIKE[fn], node)
    target = getattr(fn, "__wrapped__", fn)  # an @adcompile function: its Python function
    if callable(target) and hasattr(target, "__code__") and not _from_numpy(fn):
        args = [lw.as_value(lw.expr(a), a) for a in node.args]
        return lw.inline_call(node, target, args)
    name = getattr(fn, "__name__", type(fn).__name__)
    if _from_numpy(fn):
        name = f"np.linalg.{name}" if "linalg" in fn.__module__ else \
            f"np.fft.{name}" if "fft" in fn.__module__ else f"np.{name}"
    nearest = arrays.NEAREST.get(fn) if _hashable(fn) else None
    hint = f"; write it as {nearest}" if nearest else ""
    raise lw.error(node, f"calling {name}() is not supported in compiled code{hint} "
                         f"(supported: math and numpy elementwise functions, numpy reductions, "
                         f"products, joins and constructors, abs/min/max/len/sum/float/int, "
                         f"and Python functions)")


def _from_numpy(fn):
    """numpy's own Python functions are refused by name, never compiled from numpy's source."""
    module = getattr(fn, "__module__", None) or ""
    return module == "numpy" or module.startswith("numpy.")


def _hashable(fn):
    try:
        hash(fn)
    except TypeError:
        return False
    return True


def _arg(lw, node, i, count):
    if len(node.args) != count:
        raise lw.error(node, f"expected {count} argument(s), got {len(node.args)}")
    return lw.as_value(lw.expr(node.args[i]), node.args[i])


def _math(lw, spec, node):
    prim, lib = spec
    arity = 2 if prim in ("atan2", "hypot", "copysign", "fmod", "pow", "maximum",
                          "minimum") else 1
    args = [_arg(lw, node, i, arity) for i in range(arity)]
    if lib.startswith("math") and any(isinstance(a.type, T.Array) for a in args):
        raise lw.error(node, f"math.{node.func.attr if isinstance(node.func, ast.Attribute) else prim}"
                             f"() of an array is a TypeError in Python; use the numpy function "
                             f"(np.{_NP_SPELLING.get(prim, prim)})")
    if prim == "trunc" and lib == "math_int" and isinstance(args[0].type, T.Scalar) and \
            not args[0].type.weak and args[0].type.dtype != "f64":
        kind = {"f32": "np.float32", "i64": "numpy integer", "bool": "numpy bool"}
        raise lw.error(node, f"math.trunc() of a {kind[args[0].type.dtype]} is a TypeError in "
                             f"Python (that numpy type has no __trunc__); use int(), "
                             f"math.floor or math.ceil")
    attrs = {"lib": "math" if lib.startswith("math") else "numpy"}
    if lib == "math_int":
        attrs["int_result"] = True
    if prim in ("abs", "floor", "ceil", "trunc", "maximum", "minimum") and lib == "numpy":
        attrs["keep_int"] = True  # numpy 2 keeps integers integers (and booleans booleans)
    if lib == "math":
        # math.* computes on Python floats: a float32 argument is converted first, so that its
        # derivative is computed in float64 too, as the value is (integers need no tangent)
        args = [lw.b.cast(a, T.FLOAT) if prim == "pow" or a.type.dtype == "f32" else a
                for a in args]
    if prim == "pow" and lib == "numpy":
        attrs["nonneg_int_exponent"] = False
    if arity == 1 and lib == "numpy" and _python_int(args[0]):
        # numpy converts a Python int to int64 first (past 64 bits, OverflowError), a check
        # kept even where the result is unused
        args = [lw.b.cast(args[0], T.Scalar("i64"), node)]
    return lw.b.value(prim, args, attrs, node)


def _python_int(value):
    owner = value.owner
    return value.type == T.Scalar("i64", True) and (owner is None or owner.prim != "const")


def _cast(lw, to, node):
    value = _arg(lw, node, 0, 1)
    if not isinstance(value.type, T.Scalar):
        raise lw.error(node, f"cannot convert a {value.type} to a number")
    return lw.b.value("cast", (value,), {"to": to}, node)


def _minmax(lw, prim, node):
    if len(node.args) < 2:
        raise lw.error(node, f"{prim}() of one array is not supported yet; pass two or more "
                             f"numbers")
    args = [lw.as_value(lw.expr(a), a) for a in node.args]
    result = args[0]
    for a in args[1:]:
        result = lw.b.value(prim, (result, a), node=node)
    return result


def _dtype(lw, node, default):
    for kw in node.keywords:
        if kw.arg == "dtype":
            value = lw.expr(kw.value)
            obj = getattr(value, "obj", None)
            if obj in DTYPES:
                return DTYPES[obj]
            raise lw.error(kw.value, "dtype must be np.float64, np.float32, np.int64 or "
                                     "np.bool_")
    return default


def _shape_args(lw, shape_node):
    shape = lw.expr(shape_node)
    items = shape.obj if hasattr(shape, "obj") and isinstance(shape.obj, tuple) else (shape,)
    dims = [lw.as_value(d, shape_node) for d in items]
    for d in dims:
        if not (isinstance(d.type, T.Scalar) and d.type.is_int):
            raise lw.error(shape_node, f"array sizes must be integers, not {d.type}")
    return dims


def _alloc(lw, fill, node):
    expected = 2 if fill == "value" else 1
    if len(node.args) != expected:
        raise lw.error(node, f"expected {expected} positional argument(s), got "
                             f"{len(node.args)}")
    dims = _shape_args(lw, node.args[0])
    operands = list(dims)
    dtype = _dtype(lw, node, "f64")
    if fill == "value":
        value = lw.as_value(lw.expr(node.args[1]), node.args[1])
        if not any(kw.arg == "dtype" for kw in node.keywords):
            dtype = {"bool": "bool", "i64": "i64"}.get(value.type.dtype, "f64") \
                if value.type.weak else value.type.dtype
        operands.append(value)
    attrs = {"dtype": dtype, "ndim": len(dims), "fill": fill}
    return lw.b.value("alloc", operands, attrs, node)


def _alloc_like(lw, fill, node):
    like = _arg(lw, node, 0, 1)
    if not isinstance(like.type, T.Array):
        raise lw.error(node, f"expected an array, got {like.type}")
    dims = [lw.b.value("shape", (like,), {"axis": i}, node) for i in range(like.type.ndim)]
    dtype = _dtype(lw, node, like.type.dtype)
    return lw.b.value("alloc", dims, {"dtype": dtype, "ndim": like.type.ndim, "fill": fill},
                      node)

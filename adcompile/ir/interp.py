"""The reference interpreter: runs IR directly, with Python/numpy values.

Values are represented as the Python function itself would hold them: weak scalars as Python
int/float/bool, strong scalars as numpy scalars, arrays as numpy arrays. Every backend is
checked against this interpreter.
"""

import builtins
import math
import operator

import numpy as np

from adcompile.errors import InternalError
from adcompile.ir import array_impl
from adcompile.ir import types as T
from adcompile.ir.prims import ELEMENTWISE
from adcompile.ir.tape import Tape

_ARRAY = frozenset(array_impl.ARRAY_PRIMS)


def _array_op(op, args):
    value = array_impl.run(op, args)
    return [array_impl.as_type(value, op.results[0].type)] if op.results else []

_STRONG = {"f64": np.float64, "f32": np.float32, "i64": np.int64, "bool": np.bool_}
_WEAK = {"f64": float, "i64": int, "bool": bool}


def convert(value, type):
    """`value` as the runtime representation of `type`."""
    if isinstance(type, T.Scalar):
        if type.weak:
            return _WEAK[type.dtype](value)
        return _STRONG[type.dtype](value)
    return value


def run(fn, args):
    """Execute IR function `fn` on `args`; returns its result."""
    env = dict(zip(fn.params, args))
    outcome = _block(fn.body, env)
    return outcome[1] if outcome else None


def _block(block, env):
    """Run a block; returns (terminator prim, values) from its terminator."""
    for op in block.ops:
        prim = op.prim
        if prim in _TERMINATORS:
            values = [env[v] for v in op.operands]
            if prim == "return":
                return prim, (values[0] if values else None)
            return prim, values
        handler = _CONTROL.get(prim)
        try:
            if handler is not None:
                results = handler(op, env)
            elif prim in _ARRAY:
                results = _array_op(op, [env[v] for v in op.operands])
            elif op.results and isinstance(op.results[0].type, T.Array) and prim in ELEMENTWISE:
                value = array_impl.elementwise(op, [env[v] for v in op.operands])
                results = [array_impl.as_type(value, op.results[0].type)]
            else:
                results = _IMPL[prim](op, [env[v] for v in op.operands])
        except Exception as e:
            if op.loc and handler is None:
                from adcompile.backends.python.emit import add_location_note

                add_location_note(e, op.loc)
            raise
        for r, value in zip(op.results, results):
            env[r] = value
    raise InternalError("block without terminator")


def _run_if(op, env):
    region = op.regions[0] if env[op.operands[0]] else op.regions[1]
    return _block(region, env)[1]


def _run_for(op, env):
    start, stop, step = (env[v] for v in op.operands[:3])
    carried = [env[v] for v in op.operands[3:]]
    body = op.regions[0]
    for i in range(start, stop, step):
        for p, value in zip(body.params, [i] + carried):
            env[p] = value
        carried = _block(body, env)[1]
    return carried


def _run_while(op, env):
    head, body = op.regions
    carried = [env[v] for v in op.operands]
    while True:
        for p, value in zip(head.params, carried):
            env[p] = value
        _, values = _block(head, env)
        if not values[0]:
            return values[1:]
        for p, value in zip(body.params, values[1:]):
            env[p] = value
        carried = _block(body, env)[1]


_CONTROL = {"if": _run_if, "for": _run_for, "while": _run_while}
_TERMINATORS = {"yield", "condition", "return"}


def _typed(fn):
    """A scalar implementation whose result is converted to the op's result type."""

    def impl(op, args):
        return [convert(fn(*args), op.results[0].type)]

    return impl


COMPLEX_POWER = ("a negative float raised to a fractional power is a complex number, which "
                 "compiled code does not compute")


def real_pow(a, b):
    """Python's `a ** b` for Python numbers, with ValueError where that is a complex number
    (`(-8.0) ** (1 / 3)`). The Python backend calls it where a complex result is possible."""
    result = a**b
    if type(result) is complex:
        raise ValueError(COMPLEX_POWER)
    return result


def _pow(op, args):
    a, b = args
    t = op.results[0].type
    lib = op.attrs.get("lib")
    if lib == "math":
        return [convert(math.pow(a, b), t)]
    if t.is_float and isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        a = convert(a, t)  # integers to a power that may be negative: computed in floats
    if lib == "numpy" or op.attrs.get("ieee"):  # ieee: derivative code
        return [convert(np.power(a, b), t)]
    return [convert(real_pow(a, b), t)]


def _math(op, args):
    lib = math if op.attrs.get("lib") == "math" else np
    name = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2",
            "abs": "abs"}.get(op.prim, op.prim) if lib is np else op.prim
    if lib is np and name in ("erf", "erfc"):
        fn = np.vectorize(getattr(math, name))
    elif lib is math and op.prim == "abs":
        fn = math.fabs
    else:
        fn = getattr(lib, name)
    return [convert(fn(*args), op.results[0].type)]


def _load(op, args):
    array, *index = args
    result = array[tuple(index)]
    return [result]


def _store(op, args):
    array, *index, value = args
    array[tuple(index)] = value
    return []


def _alloc(op, args):
    ndim = op.attrs["ndim"]
    shape = tuple(int(d) for d in args[:ndim])
    dtype = T.NUMPY[op.attrs["dtype"]]
    fill = op.attrs["fill"]
    if fill == "value":
        return [np.full(shape, args[ndim], dtype)]
    if fill is None:
        return [np.empty(shape, dtype)]
    return [np.full(shape, fill, dtype)]


def _add_at(op, args):
    array, *index, value = args
    array[tuple(index)] += value
    return []


def _assert(op, args):
    if not args[0]:
        message = op.attrs.get("message") or f"assert {op.attrs.get('source', '')} failed"
        raise getattr(builtins, op.attrs.get("exception", "AssertionError"))(message)
    return []


def _div(op, args):
    if op.attrs.get("ieee"):  # derivative code: inf and nan where Python raises
        return [convert(np.divide(np.float64(args[0]), args[1]), op.results[0].type)]
    return [convert(operator.truediv(*args), op.results[0].type)]


_IMPL = {
    "const": lambda op, args: [convert(op.attrs["value"], op.attrs["type"])],
    "cast": lambda op, args: [convert(args[0], op.attrs["to"])],
    "add": _typed(operator.add), "sub": _typed(operator.sub), "mul": _typed(operator.mul),
    "div": _div, "floordiv": _typed(operator.floordiv),
    "mod": _typed(operator.mod), "pow": _pow,
    "neg": _typed(operator.neg), "abs": _typed(abs),
    "eq": _typed(operator.eq), "ne": _typed(operator.ne), "lt": _typed(operator.lt),
    "le": _typed(operator.le), "gt": _typed(operator.gt), "ge": _typed(operator.ge),
    "not": _typed(operator.not_), "truth": _typed(bool),
    "min": _typed(min), "max": _typed(max),
    "shape": lambda op, args: [int(args[0].shape[op.attrs["axis"]])],
    "size": lambda op, args: [int(args[0].size)],
    "load": _load, "store": _store, "alloc": _alloc, "assert": _assert,
    "tuple": lambda op, args: [tuple(args)],
    "tape_new": lambda op, args: [Tape(op.attrs["item"])],
    "tape_push": lambda op, args: args[0].push(args[1]) or [],
    "tape_reserve": lambda op, args: args[0].reserve(*args[1:]) or [],
    "tape_size": lambda op, args: [args[0].top],
    "tape_pop": lambda op, args: [convert(args[0].pop(), op.results[0].type)],
    "add_at": _add_at,
    "select": lambda op, args: [convert(args[1] if args[0] else args[2], op.results[0].type)],
    "sign": lambda op, args: [convert(np.sign(args[0]), op.results[0].type)],
    "and": lambda op, args: [bool(args[0] and args[1])],
    "tuple_get": lambda op, args: [args[0][op.attrs["index"]]],
}
for _name in ("sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "tanh", "sinh",
              "cosh", "asin", "acos", "atan", "log2", "log10", "erf", "erfc", "floor", "ceil",
              "trunc", "round", "atan2", "hypot", "copysign", "fmod", "maximum", "minimum"):
    _IMPL[_name] = _math
_ABS = _IMPL["abs"]
_IMPL["abs"] = lambda op, args: _math(op, args) if op.attrs.get("lib") else _ABS(op, args)

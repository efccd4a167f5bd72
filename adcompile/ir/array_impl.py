"""numpy implementations of the whole-array primitives: the reference interpreter runs them,
and the Python backend's generated code calls the few that numpy has no one-call spelling for
(`sum_to`, `take`...). Each returns what numpy returns for the same Python expression, with the
result converted to the op's IR dtype where numpy's differs (bool + bool is int64 in the IR)."""

import math
import warnings

import numpy as np

from adcompile.ir import types as T

UFUNCS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power, "neg": np.negative,
    "abs": np.abs, "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "not": np.logical_not, "sign": np.sign,
    "bit_and": np.bitwise_and, "bit_or": np.bitwise_or, "bit_xor": np.bitwise_xor,
    "invert": np.invert, "sin": np.sin, "cos": np.cos, "tan": np.tan, "exp": np.exp,
    "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt, "tanh": np.tanh,
    "sinh": np.sinh, "cosh": np.cosh, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "log2": np.log2, "log10": np.log10, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "round": np.round, "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
    "fmod": np.fmod, "maximum": np.maximum, "minimum": np.minimum,
}
# the numpy spelling of each elementwise primitive in generated code (np.<name>)
NUMPY_NAMES = {prim: fn.__name__ for prim, fn in UFUNCS.items()}
_ERF = {"erf": np.vectorize(math.erf, otypes=[np.float64]),
        "erfc": np.vectorize(math.erfc, otypes=[np.float64])}


def as_type(value, t):
    """`value` (a numpy result) as IR type `t`: arrays keep their memory unless the dtype
    differs; 0-d results become numpy scalars."""
    if isinstance(t, T.Array):
        want = T.NUMPY[t.dtype]
        if not isinstance(value, np.ndarray):
            return np.asarray(value, want)
        return value if value.dtype == want else value.astype(want)
    if isinstance(t, T.Scalar):
        kind = {"f64": np.float64, "f32": np.float32, "i64": np.int64, "bool": np.bool_}
        if t.weak:
            return {"f64": float, "i64": int, "bool": bool}[t.dtype](value)
        return kind[t.dtype](value)
    return value


def elementwise(op, args):
    prim = op.prim
    t = op.results[0].type
    if prim == "select":
        return np.where(*args)
    if prim == "cast":
        return np.asarray(args[0]).astype(T.NUMPY[t.dtype])
    if prim in _ERF:
        return _ERF[prim](*args)
    if prim in ("pow", "div", "floordiv", "mod") and t.dtype in ("f32", "f64"):
        # integers to a float result (x ** -1 of int arrays): computed in the float dtype
        args = [np.asarray(a, T.NUMPY[t.dtype]) if _is_integral(a) else a for a in args]
    return UFUNCS[prim](*args)


def _is_integral(a):
    return isinstance(a, (int, np.integer, bool, np.bool_)) or (
        isinstance(a, np.ndarray) and a.dtype.kind in "biu")


def _axis(op):
    axis = op.attrs.get("axis")
    return None if axis is None else tuple(axis)


def reduction(op, args):
    (x,) = args
    fn = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "amax": np.max, "amin": np.min}
    if op.prim in fn:
        return fn[op.prim](x, axis=_axis(op), keepdims=bool(op.attrs.get("keepdims")))
    axis = _axis(op)
    if axis is not None:
        (axis,) = axis
    arg = np.argmax if op.prim == "argmax" else np.argmin
    return arg(x, axis=axis, keepdims=bool(op.attrs.get("keepdims")))


def sum_to(g, shape):
    """`g` summed to `shape` (the adjoint of broadcasting `shape` up to g's shape)."""
    g = np.asarray(g)
    if g.shape == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and g.shape[lead + i] != 1)
    out = np.sum(g, axis=axes, keepdims=True) if axes else g
    return out.reshape(shape)


def index_key(items, values):
    """A numpy basic-indexing key from a `slice` op's items and its integer operands."""
    key, values = [], list(values)
    for item in items:
        if item[0] == "int":
            key.append(values.pop(0))
        elif item[0] == "new":
            key.append(None)
        else:
            bounds = [values.pop(0) if present else None for present in item[1:]]
            key.append(slice(*bounds))
    return tuple(key)


def diagonal(x):
    """The main diagonal of matrix x as a view that can be written (np.diagonal's is
    read-only): the shadow of a trace accumulates through it."""
    n = min(x.shape)
    return np.lib.stride_tricks.as_strided(x, (n,), (x.strides[0] + x.strides[1],))


def strided(base, offset, *geometry):
    """The view of base's memory the `strided` primitive makes: from element `offset` of
    base's data on, with the sizes and element strides in `geometry` (unchecked)."""
    ndim = len(geometry) // 2
    step = base.itemsize
    start = np.lib.stride_tricks.as_strided(base, (int(offset) + 1,), (step,))[int(offset):]
    return np.lib.stride_tricks.as_strided(
        start, tuple(int(d) for d in geometry[:ndim]),
        tuple(int(s) * step for s in geometry[ndim:]))


def cofactor(a):
    """The cofactor matrix of square `a`, adj(a)^T: det(a) inv(a)^T, computed so where numpy's
    inv succeeds (the gradient of det keeps its bits), and otherwise from the LU factors the
    failed inverse stopped at (cofactor_singular)."""
    try:
        return np.linalg.det(a) * np.linalg.inv(a).T
    except np.linalg.LinAlgError:
        return cofactor_singular(a).astype(a.dtype)


def cofactor_singular(a):
    """adj(a)^T for a matrix whose LU factorization P L U (LAPACK's getrf, in float64 as
    numpy's det) has a zero pivot: 0 where U has two or more (rank < n - 1), else, with the
    one at k, u_ii's product p over i != k, U x = 0 (x_k = 1, x_j = 0 past k) and y^T U = 0
    (y_k = 1, y_j = 0 before k), adj(U) = p x y^T, adj(L) = L^-1 and adj(P) = det(P) P^T,
    so adj(a)^T = p det(P) (P w) x^T with L^T w = y. Sums run in index order, as the LLVM
    backend's (linalg.py) run them."""
    from scipy.linalg import lu_factor

    n = a.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns of the zero pivot this path is for
        lu, piv = lu_factor(np.asarray(a, np.float64), check_finite=False)
    zeros = [i for i in range(n) if lu[i, i] == 0]
    out = np.zeros((n, n))
    if len(zeros) != 1:
        return out
    k = zeros[0]
    x, w = np.zeros(n), np.zeros(n)
    x[k] = w[k] = 1.0
    for i in range(k - 1, -1, -1):
        x[i] = -_dot_in_order(lu[i, i + 1:k + 1], x[i + 1:k + 1]) / lu[i, i]
    for j in range(k + 1, n):  # y, in w's place
        w[j] = -_dot_in_order(lu[k:j, j], w[k:j]) / lu[j, j]
    for i in range(n - 1, -1, -1):
        w[i] = w[i] - _dot_in_order(lu[i + 1:, i], w[i + 1:])
    scale = 1.0
    for i in range(n):
        scale = scale if i == k else scale * lu[i, i]
    for i in range(n - 1, -1, -1):
        if piv[i] != i:
            scale = -scale
            w[i], w[piv[i]] = w[piv[i]], w[i]
    for i in range(n):
        out[i] = (scale * w[i]) * x
    return out


def _dot_in_order(u, v):
    total = 0.0
    for p, q in zip(u.tolist(), v.tolist()):
        total += p * q
    return total


def stack(items, axis, dtype):
    return np.stack([np.asarray(a) for a in items], axis=axis).astype(dtype, copy=False)


def iadd(dst, value, name="add"):
    UFUNCS[name](dst, value, out=dst, casting="unsafe")


def run(op, args):
    """The value of array primitive `op` (not an elementwise one) on numpy arguments."""
    prim, attrs = op.prim, op.attrs
    if prim in ("sum", "mean", "prod", "amax", "amin", "argmax", "argmin"):
        return reduction(op, args)
    if prim == "sum_to":
        g, like = args
        return sum_to(g, np.shape(like))
    if prim == "broadcast_to":
        return np.broadcast_to(args[0], tuple(int(d) for d in args[1:]))
    if prim == "reshape":
        if attrs.get("ravel"):
            return np.ravel(args[0])
        return np.reshape(args[0], tuple(int(d) for d in args[1:]))
    if prim == "transpose":
        return np.transpose(args[0], attrs["perm"])
    if prim == "slice":
        return args[0][index_key(attrs["index"], args[1:])]
    if prim == "take":
        return args[0][tuple(args[1:])]
    if prim == "mask":
        return args[0][args[1]]
    if prim == "matmul":
        return np.matmul(*args)
    if prim == "trace":
        return np.trace(args[0])
    if prim == "diagonal":
        return diagonal(args[0])
    if prim == "strided":
        return strided(*args)
    if prim == "det":
        return np.linalg.det(args[0])
    if prim == "inv":
        return np.linalg.inv(args[0])
    if prim == "cofactor":
        return cofactor(args[0])
    if prim == "solve":
        return np.linalg.solve(*args)
    if prim == "concatenate":
        return np.concatenate(args, axis=attrs["axis"])
    if prim == "stack":
        return stack(args, attrs["axis"], T.NUMPY[op.results[0].type.dtype])
    if prim == "arange":
        return np.arange(*args, dtype=T.NUMPY[op.results[0].type.dtype])
    if prim == "linspace":
        return np.linspace(args[0], args[1], int(args[2]),
                           dtype=T.NUMPY[op.results[0].type.dtype])
    if prim == "copy":
        return np.array(args[0], copy=True)
    if prim == "assign":
        args[0][...] = args[1]
        return None
    if prim == "iadd":
        if attrs.get("fresh"):  # allocated empty: its elements start from 0 (first_store.py)
            args[0][...] = 0
        iadd(args[0], args[1], attrs.get("op", "add"))
        return None
    if prim == "scatter_add":
        np.add.at(args[0], tuple(args[1:-1]), args[-1])
        return None
    if prim == "mask_add":
        args[0][args[1]] += args[2]
        return None
    raise KeyError(prim)


ARRAY_PRIMS = ("sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "sum_to",
               "broadcast_to", "reshape", "transpose", "slice", "take", "mask", "matmul",
               "trace", "diagonal", "strided", "det", "inv", "cofactor", "solve", "concatenate", "stack", "arange", "linspace",
               "copy", "assign", "iadd", "scatter_add", "mask_add")

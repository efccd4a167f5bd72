"""The compiler's primitives: arity, purity and result-type rule for each, in one table.

Names match the eager runtime's primitives (`add`, `mul`, `sin`...) so that the derivative
rules in `runtime/rules` apply to the IR unchanged. A type rule receives the operand types and
the op's attributes and returns the result types, or raises TypeError with a message for the
user (the front end turns it into a located CompileError).
"""

from adcompile.ir import types as T


class Prim:
    __slots__ = ("name", "arity", "pure", "type_rule", "terminator")

    def __init__(self, name, arity, type_rule, pure=True, terminator=False):
        self.name = name
        self.arity = arity  # None: variadic
        self.type_rule = type_rule
        self.pure = pure
        self.terminator = terminator


PRIMS = {}


def prim(name, arity, pure=True, terminator=False):
    def register(rule):
        PRIMS[name] = Prim(name, arity, rule, pure, terminator)
        return rule

    return register


def _numeric(t, what):
    if not isinstance(t, T.Scalar):
        raise TypeError(f"{what} needs numbers, not {t}")
    return t


def _arith(a, b, what):
    _numeric(a, what)
    _numeric(b, what)
    result = T.promote(a, b)
    if result.dtype == "bool":
        if result.weak:  # Python: True + True is 2
            return T.INT
        if what in ("add", "mul"):  # numpy: np.True_ + np.True_ is np.True_ (or / and)
            return result
        if what == "sub":
            raise TypeError("numpy booleans cannot be subtracted (numpy refuses it); use "
                            "!= for exclusive or, or convert with int() first")
        return T.I64  # numpy gives int8 here; compiled code computes in int64
    return result


for _name in ("add", "sub", "mul", "mod", "floordiv"):
    prim(_name, 2)(lambda ts, attrs, _n=_name: [_arith(ts[0], ts[1], _n)])


@prim("div", 2)
def _div(ts, attrs):
    return [T.float_of(_arith(ts[0], ts[1], "division"))]


@prim("pow", 2)
def _pow(ts, attrs):
    result = _arith(ts[0], ts[1], "**")
    if result.is_int and not attrs.get("nonneg_int_exponent"):
        result = T.float_of(result)
    return [_numpy_result(result, attrs)]


def _numpy_result(t, attrs):
    """numpy functions return numpy scalars, also of Python numbers (np.abs(-0.5))."""
    return T.Scalar(t.dtype) if attrs.get("lib") == "numpy" else t


@prim("neg", 1)
def _neg(ts, attrs):
    t = _numeric(ts[0], "unary minus")
    return [T.INT if t.dtype == "bool" else t]


@prim("abs", 1)
def _abs(ts, attrs):
    t = _numeric(ts[0], "abs()")
    if attrs.get("lib") == "math":  # math.fabs: always a Python float
        return [T.FLOAT]
    if attrs.get("lib") == "numpy":
        return [T.Scalar(t.dtype)]  # np.abs(True) is np.True_
    return [T.INT if t.dtype == "bool" else t]


for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    prim(_name, 2)(lambda ts, attrs, _n=_name: [_compare(ts, _n)])


def _compare(ts, name):
    for t in ts:
        _numeric(t, "a comparison")
    return T.BOOL if ts[0].weak and ts[1].weak else T.Scalar("bool")


@prim("not", 1)
def _not(ts, attrs):
    _numeric(ts[0], "not")
    return [T.BOOL]


@prim("truth", 1)
def _truth(ts, attrs):
    _numeric(ts[0], "a condition")
    return [T.BOOL]


@prim("const", 0)
def _const(ts, attrs):
    return [attrs["type"]]


@prim("cast", 1)
def _cast(ts, attrs):
    """To attrs["to"], a scalar type (of an array: the new element type, as astype)."""
    _numeric(ts[0], "a conversion")
    return [attrs["to"]]


UNARY_MATH = ("sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "tanh", "sinh",
              "cosh", "asin", "acos", "atan", "log2", "log10", "erf", "erfc", "floor", "ceil",
              "trunc", "round")
BINARY_MATH = ("atan2", "hypot", "copysign", "fmod", "maximum", "minimum")


def _math_result(t, attrs):
    """math.* returns Python floats; numpy keeps a float dtype (ints become float64)."""
    if attrs.get("lib") == "math":
        if attrs.get("int_result"):
            return T.INT
        return T.FLOAT
    if attrs.get("keep_int") and not t.is_float:
        return T.Scalar(t.dtype)  # a numpy scalar, also of a Python int or bool
    return T.Scalar(t.dtype if t.is_float else "f64")


for _name in UNARY_MATH:
    prim(_name, 1)(lambda ts, attrs, _n=_name: [_math_result(_numeric(ts[0], _n), attrs)])
for _name in BINARY_MATH:
    prim(_name, 2)(lambda ts, attrs, _n=_name: [
        _math_result(T.promote(_numeric(ts[0], _n), _numeric(ts[1], _n)), attrs)])


def may_raise(op):
    """Whether `op` of the user's program can raise an error the user may rely on: an index
    out of range, Python numbers divided by zero, a math.* domain or range error, NaN or an
    infinity converted to an int. Such an op is kept even when its result is unused, so that a
    derivative program raises what its function raises. Not counted: Python ints or floats
    outgrowing 64 bits in + - * and ** with a constant exponent (the derivative code of such
    an op overflows too, and returning the big int is allowed)."""
    if not op.loc or op.loc.startswith("grad of"):
        return False  # the compiler's own index arithmetic and derivative code do not raise
    name, t = op.prim, op.results[0].type if op.results else None
    if any(isinstance(v.type, T.Array) for v in op.operands) or isinstance(t, T.Array):
        return _array_may_raise(op)
    if name == "load":
        return not op.attrs.get("in_bounds")
    if name in ("add", "sub", "mul", "div", "floordiv", "mod", "pow") and t.is_int and \
            not t.weak and any(x.type.weak and x.type.is_int and _not_const(x)
                               for x in op.operands):
        return True  # numpy refuses a Python int past 64 bits (np.int64(1) + 10**20)
    if name in ("div", "floordiv", "mod"):
        return all(x.type.weak for x in op.operands)
    if name == "pow":  # math.pow's errors; 0.0 ** -1, overflow, a complex result of floats
        exponent = op.operands[1].owner
        constant = exponent is not None and exponent.prim == "const" and \
            float(exponent.attrs["value"]) >= 0 and float(exponent.attrs["value"]).is_integer()
        return op.attrs.get("lib") == "math" or (
            op.attrs.get("lib") != "numpy" and all(x.type.weak for x in op.operands)
            and (not constant or t.is_float))
    if name in UNARY_MATH or name in BINARY_MATH:
        return op.attrs.get("lib") == "math" or (not t.is_float and not op.attrs.get("keep_int"))
    if name == "cast":  # int(nan); np.int64() of a Python int past 64 bits (interp, python)
        source = op.operands[0].type
        return t.is_int and (source.is_float or (source.weak and not t.weak))
    return False


# whole-array primitives that check shapes, bounds or values (numpy's ValueError, IndexError,
# LinAlgError); an elementwise one only when it broadcasts two arrays (or raises ints to powers)
_CHECKING = frozenset(("load", "slice", "take", "mask", "matmul", "reshape", "solve", "inv", "det",
                       "concatenate", "stack", "assign", "iadd", "broadcast_to", "arange",
                       "linspace", "amax", "amin", "argmax", "argmin", "sum_to", "scatter_add",
                       "mask_add"))


def _array_may_raise(op):
    if op.prim == "load":
        return not op.attrs.get("in_bounds")
    if op.prim == "slice":  # bounds clip; an integer item or a step may be out of range
        steps = [item for item in op.attrs["index"] if item[0] == "slice" and item[3]]
        return any(item[0] == "int" for item in op.attrs["index"]) or bool(steps)
    if op.prim in _CHECKING:
        return True
    arrays = sum(isinstance(v.type, T.Array) for v in op.operands)
    return arrays > 1 or (op.prim == "pow" and not op.results[0].type.dtype.startswith("f"))


def _not_const(value):
    return value.owner is None or value.owner.prim != "const"


@prim("min", 2)
def _min(ts, attrs):
    return [T.promote(_numeric(ts[0], "min()"), _numeric(ts[1], "min()"))]


@prim("max", 2)
def _max(ts, attrs):
    return [T.promote(_numeric(ts[0], "max()"), _numeric(ts[1], "max()"))]


# -- arrays -----------------------------------------------------------------------------------

def _array(t, what):
    if not isinstance(t, T.Array):
        raise TypeError(f"{what} needs an array, not {t}")
    return t


@prim("shape", 1)
def _shape(ts, attrs):
    a = _array(ts[0], ".shape")
    if not -a.ndim <= attrs["axis"] < a.ndim:
        raise TypeError(f"axis {attrs['axis']} is out of range for a {a.ndim}-d array")
    return [T.INT]


@prim("size", 1)
def _size(ts, attrs):
    _array(ts[0], ".size")
    return [T.INT]


@prim("load", None)
def _load(ts, attrs):
    a = _array(ts[0], "indexing")
    _indices(ts[1:], a, "indexing")
    if len(ts) - 1 == a.ndim:
        return [a.element]
    return [T.Array(a.dtype, a.ndim - (len(ts) - 1))]


@prim("store", None, pure=False)
def _store(ts, attrs):
    a = _array(ts[0], "an index assignment")
    _indices(ts[1:-1], a, "an index assignment")
    if len(ts) - 2 != a.ndim:
        raise TypeError(f"assigning to a {a.ndim}-d array needs {a.ndim} indices, got "
                        f"{len(ts) - 2}")
    _numeric(ts[-1], "an index assignment")
    return []


def _indices(ts, a, what):
    if len(ts) > a.ndim:
        raise TypeError(f"too many indices for a {a.ndim}-d array")
    for t in ts:
        if not (isinstance(t, T.Scalar) and t.dtype in ("i64", "bool")):
            raise TypeError(f"{what} needs integer indices, not {t}")


@prim("alloc", None, pure=False)
def _alloc(ts, attrs):
    for t in ts[: attrs["ndim"]]:
        if not (isinstance(t, T.Scalar) and t.is_int):
            raise TypeError(f"array sizes must be integers, not {t}")
    return [T.Array(attrs["dtype"], attrs["ndim"])]


@prim("tuple", None)
def _tuple(ts, attrs):
    return [T.Tuple(tuple(ts))]


@prim("tuple_get", 1)
def _tuple_get(ts, attrs):
    return [ts[0].items[attrs["index"]]]


@prim("assert", 1, pure=False)
def _assert(ts, attrs):
    return []


@prim("raise", 0, pure=False)
def _raise(ts, attrs):
    return []


# -- structured control flow (result types come from their regions) --------------------------

for _name in ("if", "for", "while"):
    prim(_name, None, pure=False)(lambda ts, attrs: attrs["result_types"])
for _name in ("yield", "condition", "return"):
    prim(_name, None, pure=False, terminator=True)(lambda ts, attrs: [])


@prim("select", 3)
def _select(ts, attrs):
    """cond ? a : b with both sides already computed (derivative code; no short circuit)."""
    return [T.unify(ts[1], ts[2])]


@prim("sign", 1)
def _sign(ts, attrs):
    return [_numeric(ts[0], "sign")]


@prim("and", 2)
def _and(ts, attrs):
    return [T.BOOL]


@prim("tape_new", 0, pure=False)
def _tape_new(ts, attrs):
    return [T.Tape(attrs["item_type"])]


@prim("tape_push", 2, pure=False)
def _tape_push(ts, attrs):
    return []


@prim("tape_pop", 1, pure=False)
def _tape_pop(ts, attrs):
    return [ts[0].item]


@prim("tape_size", 1, pure=False)
def _tape_size(ts, attrs):
    """How many items a tape holds (a split vjp program hands its tapes over as arrays)."""
    return [T.INT]


@prim("add_at", None, pure=False)
def _add_at(ts, attrs):
    """a[idx] += v on a shadow array (the adjoint of a load)."""
    return []


@prim("tape_reserve", 4, pure=False)
def _tape_reserve(ts, attrs):
    """Make room for len(range(start, stop, step)) pushes (a counted loop's trip count)."""
    return []


# -- whole arrays ------------------------------------------------------------------------------
#
# Arrays are values: an elementwise primitive, a reduction or a product makes a new array; a
# view (`slice`, `transpose`) shares its operand's memory, so writes through it are seen in the
# operand (as in numpy). Shapes are not part of the type: they are runtime values, read with
# `shape`. Elementwise primitives broadcast their operands as numpy does (a shape that does not
# broadcast raises ValueError at run time), and promote element types with numpy 2's rules: an
# array's dtype is strong, a Python number adopts it.

ELEMENTWISE = ("add", "sub", "mul", "div", "floordiv", "mod", "pow", "neg", "abs", "eq", "ne",
               "lt", "le", "gt", "ge", "not", "sign", "select", "cast", "bit_and", "bit_or",
               "bit_xor", "invert") + UNARY_MATH + BINARY_MATH


def _element(t):
    return t.element if isinstance(t, T.Array) else t


def _elementwise(rule, name):
    """A scalar type rule extended to arrays: the rule applies to the element types (an
    array's dtype is strong) and the result has the largest operand ndim. (Integer arrays
    to integer powers stay integers, as in numpy.)"""

    def extended(ts, attrs):
        arrays = [t for t in ts if isinstance(t, T.Array)]
        if not arrays:
            return rule(ts, attrs)
        if any(not isinstance(t, (T.Array, T.Scalar)) for t in ts):
            bad = next(t for t in ts if not isinstance(t, (T.Array, T.Scalar)))
            raise TypeError(f"an elementwise operation needs arrays or numbers, not {bad}")
        if name == "pow":
            attrs = dict(attrs, nonneg_int_exponent=True)
        (element,) = rule([_element(t) for t in ts], attrs)
        return [T.Array(element.dtype, max(a.ndim for a in arrays))]

    return extended


@prim("bit_and", 2)
def _bit_and(ts, attrs):
    return [_bitwise(ts, "&")]


@prim("bit_or", 2)
def _bit_or(ts, attrs):
    return [_bitwise(ts, "|")]


@prim("bit_xor", 2)
def _bit_xor(ts, attrs):
    return [_bitwise(ts, "^")]


def _bitwise(ts, what):
    for t in ts:
        if not (isinstance(t, T.Scalar) and t.dtype in ("bool", "i64")):
            raise TypeError(f"{what} needs booleans or integers, not {t}")
    return T.promote(*ts)


@prim("invert", 1)
def _invert(ts, attrs):
    t = ts[0]
    if not (isinstance(t, T.Scalar) and t.dtype in ("bool", "i64")):
        raise TypeError(f"~ needs booleans or integers, not {t}")
    return [T.INT if t == T.BOOL else t]


for _name in ELEMENTWISE:
    PRIMS[_name].type_rule = _elementwise(PRIMS[_name].type_rule, _name)


def _axes(attrs, ndim, what):
    axis = attrs.get("axis")
    if axis is None:
        return tuple(range(ndim))
    for a in axis:
        if not 0 <= a < ndim:
            raise TypeError(f"{what}: axis {a} is out of range for a {ndim}-d array")
    return axis


_REDUCED_DTYPE = {"sum": {"bool": "i64", "i64": "i64"}, "prod": {"bool": "i64", "i64": "i64"},
                  "mean": {"bool": "f64", "i64": "f64"}}


def _reduction(name):
    def rule(ts, attrs):
        """axis: None (all) or a tuple of distinct non-negative axes; keepdims: bool."""
        a = _array(ts[0], f"np.{name}()")
        axes = _axes(attrs, a.ndim, f"np.{name}()")
        dtype = _REDUCED_DTYPE.get(name, {}).get(a.dtype, a.dtype)
        if name in ("argmax", "argmin"):
            dtype = "i64"
        ndim = a.ndim if attrs.get("keepdims") else a.ndim - len(axes)
        return [T.Scalar(dtype) if ndim == 0 else T.Array(dtype, ndim)]

    return rule


for _name in ("sum", "mean", "prod", "amax", "amin", "argmax", "argmin"):
    prim(_name, 1)(_reduction(_name))


@prim("sum_to", 2)
def _sum_to(ts, attrs):
    """g summed down to the shape of `like` (the adjoint of broadcasting): leading axes and
    axes where `like` has length 1 are summed; a scalar `like` sums everything."""
    g, like = ts
    dtype = _element(g).dtype
    if isinstance(like, T.Array):
        return [T.Array(dtype, like.ndim)]
    return [T.Scalar(dtype)]


@prim("broadcast_to", None)
def _broadcast_to(ts, attrs):
    """x broadcast to the shape given by the integer operands (a read-only view)."""
    x, dims = ts[0], ts[1:]
    for d in dims:
        if not (isinstance(d, T.Scalar) and d.is_int):
            raise TypeError(f"array sizes must be integers, not {d}")
    return [T.Array(_element(x).dtype, len(dims))]


@prim("reshape", None)
def _reshape(ts, attrs):
    """x with the shape given by the integer operands (one may be -1); a copy when x's
    memory does not allow a view (as numpy's reshape)."""
    a, dims = _array(ts[0], "reshape()"), ts[1:]
    for d in dims:
        if not (isinstance(d, T.Scalar) and d.is_int):
            raise TypeError(f"reshape() needs integer sizes, not {d}")
    return [T.Array(a.dtype, len(dims))]


@prim("transpose", 1)
def _transpose(ts, attrs):
    """A view with the axes permuted: attrs["perm"] (x.T reverses them)."""
    a = _array(ts[0], "transpose()")
    if sorted(attrs["perm"]) != list(range(a.ndim)):
        raise TypeError(f"transpose(): axes {attrs['perm']} are not a permutation of the "
                        f"{a.ndim} axes")
    return [a]


@prim("slice", None)
def _slice(ts, attrs):
    """A view by basic indexing. attrs["index"] lists the index items, each consuming
    operands after the array: ("int",) one integer (the axis is dropped), ("slice", start,
    stop, step) as many integers as it has True flags (a missing bound is numpy's default),
    ("new",) a new axis of length 1. Trailing axes are kept whole."""
    a = _array(ts[0], "indexing")
    index = attrs["index"]
    consumed = sum(1 for item in index if item[0] != "new")
    if consumed > a.ndim:
        raise TypeError(f"too many indices for a {a.ndim}-d array")
    for t in ts[1:]:
        if not (isinstance(t, T.Scalar) and t.dtype in ("i64", "bool")):
            raise TypeError(f"indices must be integers, not {t}")
    ndim = a.ndim - sum(1 for item in index if item[0] == "int") + \
        sum(1 for item in index if item[0] == "new")
    if ndim == 0:
        return [a.element]
    return [T.Array(a.dtype, ndim)]


@prim("take", None)
def _take(ts, attrs):
    """x[idx] with integer arrays (advanced indexing on the first len(ts) - 1 axes, all of
    the same shape), a copy."""
    a = _array(ts[0], "indexing")
    idx = ts[1:]
    if len(idx) > a.ndim:
        raise TypeError(f"too many indices for a {a.ndim}-d array")
    shapes = set()
    for t in idx:
        if not (isinstance(t, T.Array) and t.dtype == "i64"):
            raise TypeError(f"an index array must hold integers, not {t}")
        shapes.add(t.ndim)
    ndim = max(shapes) + a.ndim - len(idx)
    return [T.Array(a.dtype, ndim) if ndim else a.element]


@prim("mask", 2)
def _mask(ts, attrs):
    """x[m] for a boolean array m over x's leading m.ndim axes: the selected elements (or
    rows), their axes flattened into one, a copy."""
    a = _array(ts[0], "indexing")
    m = ts[1]
    if not (isinstance(m, T.Array) and m.dtype == "bool" and m.ndim <= a.ndim):
        raise TypeError("a boolean mask must be a bool array of at most the indexed array's "
                        "ndim")
    return [T.Array(a.dtype, a.ndim - m.ndim + 1)]


@prim("matmul", 2)
def _matmul(ts, attrs):
    """numpy's matmul: 1-d operands are vectors, more dimensions are batches (broadcast)."""
    a, b = _array(ts[0], "@"), _array(ts[1], "@")
    if a.ndim == 0 or b.ndim == 0:
        raise TypeError("@ needs arrays with at least one dimension (use * for scalars)")
    dtype = T.promote(a.element, b.element).dtype
    if dtype == "bool":
        dtype = "bool"
    if a.ndim == 1 and b.ndim == 1:
        return [T.Scalar(dtype)]
    ndim = max(a.ndim, b.ndim) - (a.ndim == 1) - (b.ndim == 1)
    return [T.Array(dtype, ndim)]


@prim("trace", 1)
def _trace(ts, attrs):
    a = _array(ts[0], "np.trace()")
    if a.ndim != 2:
        raise TypeError(f"np.trace() of a {a.ndim}-d array is not supported (a matrix only)")
    return [T.Scalar(_REDUCED_DTYPE["sum"].get(a.dtype, a.dtype))]


@prim("diagonal", 1)
def _diagonal(ts, attrs):
    """The main diagonal of a matrix, a view (its stride is the sum of the matrix's two)."""
    a = _array(ts[0], "np.diagonal()")
    if a.ndim != 2:
        raise TypeError(f"np.diagonal() of a {a.ndim}-d array is not supported (a matrix only)")
    return [T.Array(a.dtype, 1)]


@prim("strided", None)
def _strided(ts, attrs):
    """A view of `base`'s memory from element `offset` of its data on, with the given
    shape and strides (in elements, any sign): operands base, offset, attrs["ndim"] sizes,
    as many strides. Unchecked, as numpy's as_strided: made only by the compiler, where it
    rebuilds arrays inside memory it allocated (ad/split.py), never from user code."""
    a = _array(ts[0], "strided()")
    ndim = attrs["ndim"]
    if len(ts) != 2 + 2 * ndim or not all(isinstance(t, T.Scalar) and t.is_int
                                           for t in ts[1:]):
        raise TypeError(f"strided() takes an array, an offset and {ndim} sizes and strides")
    return [T.Array(a.dtype, ndim)]


def _square_matrix(t, what):
    a = _array(t, what)
    if a.ndim != 2 or a.dtype not in ("f32", "f64"):
        raise TypeError(f"{what} needs a float matrix (2-d), not {a}")
    return a


@prim("det", 1)
def _det(ts, attrs):
    return [_square_matrix(ts[0], "np.linalg.det()").element]


@prim("inv", 1)
def _inv(ts, attrs):
    return [_square_matrix(ts[0], "np.linalg.inv()")]


@prim("cofactor", 1)
def _cofactor(ts, attrs):
    """adj(a)^T, the gradient of det (array_impl.cofactor); defined at singular matrices."""
    return [_square_matrix(ts[0], "the cofactor matrix")]


@prim("solve", 2)
def _solve(ts, attrs):
    a = _square_matrix(ts[0], "np.linalg.solve()")
    b = _array(ts[1], "np.linalg.solve()")
    if b.ndim not in (1, 2):
        raise TypeError(f"np.linalg.solve(): the right-hand side must be 1-d or 2-d, not {b}")
    return [T.Array(T.promote(a.element, b.element).dtype, b.ndim)]


@prim("concatenate", None)
def _concatenate(ts, attrs):
    """Arrays joined along attrs["axis"] (non-negative); all have the same ndim."""
    arrays = [_array(t, "np.concatenate()") for t in ts]
    ndim = arrays[0].ndim
    if any(a.ndim != ndim for a in arrays):
        raise TypeError("np.concatenate() needs arrays of the same number of dimensions")
    if not 0 <= attrs["axis"] < ndim:
        raise TypeError(f"np.concatenate(): axis {attrs['axis']} is out of range")
    dtype = arrays[0].element
    for a in arrays[1:]:
        dtype = T.promote(dtype, a.element)
    return [T.Array(dtype.dtype, ndim)]


@prim("stack", None)
def _stack(ts, attrs):
    """Arrays or numbers of one shape stacked along a new axis attrs["axis"] (np.stack and
    np.array([...]) of equal-shaped items)."""
    items = ts
    ndim = items[0].ndim if isinstance(items[0], T.Array) else 0
    for t in items:
        if (t.ndim if isinstance(t, T.Array) else 0) != ndim or \
                not isinstance(t, (T.Array, T.Scalar)):
            raise TypeError("stacked items must all have the same number of dimensions")
    dtype = attrs.get("dtype")
    if dtype is None:
        element = _element(items[0])
        for t in items[1:]:
            element = T.promote(element, _element(t))
        dtype = element.dtype
    if not 0 <= attrs["axis"] <= ndim:
        raise TypeError(f"axis {attrs['axis']} is out of range")
    return [T.Array(dtype, ndim + 1)]


@prim("arange", 3)
def _arange(ts, attrs):
    """np.arange(start, stop, step) (numbers)."""
    element = T.promote(T.promote(_numeric(ts[0], "np.arange()"), _numeric(ts[1], "np.arange()")),
                        _numeric(ts[2], "np.arange()"))
    # numpy: integers give int64, any float (float32 too) float64
    return [T.Array(attrs.get("dtype") or ("i64" if element.dtype in ("i64", "bool") else
                                          "f64"), 1)]


@prim("linspace", 3)
def _linspace(ts, attrs):
    """np.linspace(start, stop, num): float64 (or the dtype asked for)."""
    for t in ts[:2]:
        _numeric(t, "np.linspace()")
    if not (isinstance(ts[2], T.Scalar) and ts[2].is_int):
        raise TypeError("np.linspace(): num must be an integer")
    # numpy: the type of start, stop and a float (float32 bounds stay float32)
    bounds = T.promote(T.promote(ts[0], ts[1]), T.FLOAT)
    return [T.Array(attrs.get("dtype") or bounds.dtype, 1)]


@prim("copy", 1)
def _copy(ts, attrs):
    return [_array(ts[0], "copy()")]


@prim("assign", 2, pure=False)
def _assign(ts, attrs):
    """dst[...] = value: value (broadcast) copied into the array or view dst."""
    _array(ts[0], "an assignment")
    if not isinstance(ts[1], (T.Array, T.Scalar)):
        raise TypeError(f"cannot assign a {ts[1]} to array elements")
    return []


@prim("iadd", 2, pure=False)
def _iadd(ts, attrs):
    """dst += value in place (value broadcast into dst's shape): the accumulation of an
    array adjoint, and `a[i, :] += v`. attrs["op"] may name another operator (sub, mul...)."""
    _array(ts[0], "an augmented assignment")
    if not isinstance(ts[1], (T.Array, T.Scalar)):
        raise TypeError(f"cannot combine a {ts[1]} with array elements")
    return []


@prim("scatter_add", None, pure=False)
def _scatter_add(ts, attrs):
    """np.add.at(dst, idx, value): the adjoint of integer-array indexing (`take`)."""
    _array(ts[0], "np.add.at()")
    return []


@prim("mask_add", 3, pure=False)
def _mask_add(ts, attrs):
    """dst[m] += value: the adjoint of a boolean-mask read."""
    return []

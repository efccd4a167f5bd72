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
    return [_numpy_result(T.INT if t.dtype == "bool" else t, attrs)]


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
    if attrs.get("keep_int") and t.is_int:
        return T.Scalar(t.dtype)  # a numpy scalar, also of a Python int
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
    an op overflows too)."""
    if not op.loc or op.loc.startswith("grad of"):
        return False  # the compiler's own index arithmetic and derivative code do not raise
    name, t = op.prim, op.results[0].type if op.results else None
    if name == "load":
        return not op.attrs.get("in_bounds")
    if name in ("div", "floordiv", "mod"):
        return all(x.type.weak for x in op.operands)
    if name == "pow":  # math.pow's errors; 0.0 ** -1 and a complex result of Python floats
        exponent = op.operands[1].owner
        constant = exponent is not None and exponent.prim == "const" and \
            float(exponent.attrs["value"]) >= 0 and float(exponent.attrs["value"]).is_integer()
        return op.attrs.get("lib") == "math" or (
            op.attrs.get("lib") != "numpy" and all(x.type.weak for x in op.operands)
            and not constant)
    if name in UNARY_MATH or name in BINARY_MATH:
        return op.attrs.get("lib") == "math" or (t.is_int and not op.attrs.get("keep_int"))
    if name == "cast":  # int(nan); np.int64() of a Python int past 64 bits (interp, python)
        source = op.operands[0].type
        return t.is_int and (source.is_float or (source.weak and not t.weak))
    return False


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


@prim("add_at", None, pure=False)
def _add_at(ts, attrs):
    """a[idx] += v on a shadow array (the adjoint of a load)."""
    return []


@prim("tape_reserve", 4, pure=False)
def _tape_reserve(ts, attrs):
    """Make room for len(range(start, stop, step)) pushes (a counted loop's trip count)."""
    return []

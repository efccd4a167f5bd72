"""Random well-typed programs of adcompile's compiled subset, as whole Python modules, for the
fuzzer in test_fuzz.py.

`generate(seed)` walks a small grammar with `random.Random(seed)` and a type-aware environment:
every variable keeps one type for its whole life (names are never reused), both sides of a
conditional expression and all operands of min/max have the same type, and augmented stores
keep their target's type, so the type of every result is Python's whatever the values are.
Types follow numpy 2 promotion (Python numbers are weak: np.float32(1) * 2.0 is a float32).

A module has helper functions (inlined by the compiler; each calls only earlier ones) and
`program(...)`, whose arguments are Python/numpy scalars and float64/float32/int64 arrays.
Argument sets carry special values (NaN, +-inf, -0.0, huge, int64 limits) and array layouts
(C order, strided, reversed, Fortran).

A fraction Gen.P_ARRAYS (0.4) of the programs also has whole-array code (ArrayGen): array
locals from the arguments and from constructors, elementwise expressions and ufuncs with
broadcasting between 1-d, 2-d arrays and scalars, views (slices with steps and negative
bounds, .T, rows, columns, x[None]), slice assignment, reductions with axis/keepdims feeding
scalar code, @ / np.dot between shapes that fit, np.where/maximum/clip, integer-array and
mask indexing, concatenate/stack/np.array([...])/reshape/arange, np.linalg, loops over rows
and arrays carried by loops (h = np.tanh(W @ h + b)). Argument lengths are symbols (N, M, K)
that each argument set gives values, so shapes fit by construction; rarely on purpose they
may not (numpy's ValueError). Which seeds get arrays is drawn apart from the grammar's walk:
the other seeds give the programs they gave before arrays existed.

`Program.render(checked=True)` is the oracle's text: the same program, where Python ints that
leave the int64 range are recorded (`_ck` keeps the array arguments' contents at that point:
compiled code may raise OverflowError there) and float powers with complex results raise
ComplexResult, a ValueError (`_pw`) — the two places where compiled code is specified to
raise instead of doing what CPython does. `render(checked="seq")` and
`render(checked="matmul")` are the same oracle with sums and products in another specified
order (see test_fuzz.py).
"""

import copy
import random
import re
from dataclasses import dataclass, field

import numpy as np

INT, FLOAT, BOOL = "int", "float", "bool"  # Python numbers: weak in numpy 2 promotion
I64, F64, F32, NPBOOL = "i64", "f64", "f32", "np.bool"  # numpy scalars: strong
WEAK = (INT, FLOAT, BOOL)
KIND = {BOOL: 0, NPBOOL: 0, INT: 1, I64: 1, FLOAT: 2, F64: 2, F32: 2}
STRONG = {INT: I64, FLOAT: F64, BOOL: NPBOOL, I64: I64, F64: F64, F32: F32}
CAST = {FLOAT: "float", INT: "int", BOOL: "bool", I64: "np.int64", F64: "np.float64",
        F32: "np.float32"}
NP_DTYPE = {F64: "np.float64", F32: "np.float32", I64: "np.int64"}

UNARY_MATH = ("sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "tanh", "sinh",
              "cosh", "asin", "acos", "atan", "log2", "log10", "erf", "erfc", "fabs")
BINARY_MATH = ("atan2", "hypot", "copysign", "fmod", "pow")
INT_MATH = ("floor", "ceil", "trunc")
NP_UNARY = ("sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "tanh", "sinh",
            "cosh", "log2", "log10", "arcsin", "arccos", "arctan")
NP_ROUNDING = ("floor", "ceil", "trunc")
NP_BINARY = ("arctan2", "hypot", "maximum", "minimum", "power")
CHECKED_INT_CALLS = ("int", "abs", "math.floor", "math.ceil", "math.trunc")

SMALL_INTS = (0, 1, 2, 3, -1, -2, 5, 7, -7, 10)
BIG_INTS = (2**31, 2**53 + 1, 2**62, -2**62, 4611686018427387905)
SMALL_FLOATS = ("0.0", "-0.0", "0.5", "1.5", "-2.0", "2.0", "3.25", "0.001", "100.0", "-0.75")
EDGE_FLOATS = ("1e300", "-1e300", "1e-310", "5e-324", "1.7976931348623157e308", "math.inf",
               "(-math.inf)", "math.nan", "1e20", "710.0")
SPECIAL_FLOATS = (float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1e300, -1e300, 1e-310,
                  5e-324, 1e20, -710.5, 0.5)
SPECIAL_INTS = (0, -1, 1, 2**31, 2**53 + 1, 2**62, -2**63, 2**63 - 1, -2**62, 3037000500)

PRELUDE = "import math\n\nimport numpy as np\n"
CHECKS = '''

class ComplexResult(ValueError):
    """A float power has a complex result: compiled code raises ValueError here."""


_ARRAYS = []  # the array arguments (set by the caller)
_OVERFLOWS = []  # the array arguments' contents wherever a Python int left int64


def _ck(x):
    if type(x) is int and not -2**63 <= x < 2**63 and len(_OVERFLOWS) < 20:
        _OVERFLOWS.append([a.copy() for a in _ARRAYS])
    return x


def _pw(a, b):
    r = a ** b
    if type(r) is complex:
        raise ComplexResult(f"{a!r} ** {b!r}")
    return r
'''
# The oracle of the LLVM backend's sums and products where they may differ from numpy's. np.sum
# and np.mean add, np.prod multiplies, in numpy's order there (adcompile/backends/llvm/
# pairwise.py, arrays.py's product_order), over the array
# the compiled code holds: a view of an argument has numpy's layout, but an array the compiled
# code computed into memory (an elementwise result that is not fused into its consumer, a
# constructor's result) is C-ordered where numpy lays an elementwise result out in its operands'
# order; _rs sums such an array in C order (fused expressions add in numpy's own order: the
# plain oracle). BLAS orders a product's terms its own way, where compiled code adds in order
# (@ adds k = 0, 1, ... in the result's dtype: _rmm). And where numpy has its own SIMD code
# for np.tanh, np.sin... the LLVM backend calls the C library (sin, or sinf of float32): _libm
# gives numpy's results with each element of a finite argument computed so, a NaN's sign
# included (render(checked="seq") spells np.tanh(x) _libm.tanh(x)).
SEQUENTIAL = '''

import ctypes as _ctypes
import ctypes.util as _ctypes_util
import functools


class _Libm:
    C_NAMES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan"}

    def __init__(self):
        try:
            self.lib = _ctypes.CDLL(_ctypes_util.find_library("m") or "libm.so.6")
        except OSError:
            self.lib = None

    def c_function(self, name, dtype):
        c_type = {np.float64: _ctypes.c_double, np.float32: _ctypes.c_float}.get(dtype.type)
        if self.lib is None or c_type is None:
            return None
        fn = getattr(self.lib, self.C_NAMES.get(name, name) + ("f" if c_type is
                                                                _ctypes.c_float else ""))
        fn.restype, fn.argtypes = c_type, [c_type]
        return fn

    def __getattr__(self, name):
        def apply(x):
            exact = getattr(np, name)(x)  # numpy's dtype, shape, nan and inf
            c_fn = self.c_function(name, np.asarray(exact).dtype)
            if c_fn is None:
                return exact
            out = np.array(exact)
            flat, args = out.reshape(-1), np.broadcast_to(np.asarray(x, out.dtype),
                                                          out.shape).reshape(-1)
            for k in range(flat.size):  # a NaN of a finite argument too: its sign is
                if np.isfinite(args[k]) and not np.isinf(flat[k]):  # libm's (acos(2) +nan,
                    flat[k] = c_fn(float(args[k]))  # numpy's arccos(2.0) -nan)
            return out[()] if out.ndim == 0 else out

        return apply


_libm = _Libm()

def _rs(how, x, axis=None, keepdims=False):
    """np.sum / np.mean / np.prod in numpy's order over the layout the compiled code has: C
    order for an array that is not a view of an argument."""
    x = np.asarray(x)
    if not any(np.may_share_memory(x, a) for a in _ARRAYS):
        x = np.ascontiguousarray(x)
    return getattr(np, how)(x, axis=axis, keepdims=keepdims)


def _rmx(how, x, axis=None, keepdims=False):
    """np.max / np.min as the LLVM backend computes them: the reduced elements in C order,
    each one that compares equal replacing the best so far (np.maximum returns its second
    operand on a tie), so that among +0.0 and -0.0 the last wins; numpy's own SIMD loops
    pick among such ties in an order of their own (its sign is not specified)."""
    exact = getattr(np, how)(x, axis=axis, keepdims=keepdims)  # numpy's errors and dtype
    x = np.asarray(x)
    pick = np.maximum if how == "max" else np.minimum
    if axis is None:
        flat = x.reshape(-1)
        total = functools.reduce(pick, flat[1:], flat[0])
        return np.full(exact.shape, total, exact.dtype)[()] if keepdims else total
    total = functools.reduce(pick, np.moveaxis(x, axis, 0))
    return np.expand_dims(total, axis) if keepdims else total


def _rmm(a, b):
    exact = np.matmul(a, b)  # numpy's errors, result dtype and shape
    a, b = np.asarray(a).astype(exact.dtype), np.asarray(b).astype(exact.dtype)
    left = a if a.ndim == 2 else a[None, :]
    right = b if b.ndim == 2 else b[:, None]
    total = np.zeros((left.shape[0], right.shape[1]), exact.dtype)
    for k in range(left.shape[1]):
        total = total + left[:, k:k + 1] * right[k:k + 1, :]
    total = total[0] if a.ndim == 1 else total
    total = total[..., 0] if b.ndim == 1 else total
    return total[()] if total.ndim == 0 else total
'''


@dataclass(frozen=True)
class ArrayType:
    dtype: str  # F64, F32 or I64
    ndim: int

    def __str__(self):
        return f"{self.dtype}[{', '.join(':' * self.ndim)}]"


@dataclass(frozen=True)
class Dim:
    """An array axis's length, symbolically: ceil(max(0, len(base) - cut) / step). `base` is a
    size symbol of the arguments ("N"), a literal length, or a tuple naming a derived length
    (("+", d1, d2) of a concatenation, ("?", k) of a mask or of bounds only known at run
    time). Equal Dims are equal lengths in every argument set; different ones may differ, and
    combining them is then numpy's ValueError."""

    base: object
    cut: int = 0
    step: int = 1

    def __repr__(self):
        return f"{self.base}" + (f"-{self.cut}" if self.cut else "") + \
            (f"/{self.step}" if self.step != 1 else "")


ONE = Dim(1)
MAX_CUT = 3  # x[1:-1][1:] is as short as a sliced axis gets


def sliced_dims(dim):
    """(slice, length) pairs for slicing an axis of length `dim`: the slices whose length is a
    Dim again (negative bounds and steps included)."""
    if dim.step != 1:
        return [("::-1", dim)]
    b, c = dim.base, dim.cut
    out = [("::-1", dim), ("::2", Dim(b, c, 2)), ("::-2", Dim(b, c, 2))]
    if c + 1 <= MAX_CUT:
        out += [("1:", Dim(b, c + 1)), (":-1", Dim(b, c + 1)), ("-2::-1", Dim(b, c + 1)),
                ("1::2", Dim(b, c + 1, 2))]
    if c + 2 <= MAX_CUT:
        out += [("1:-1", Dim(b, c + 2)), ("2:", Dim(b, c + 2)), (":-2:2", Dim(b, c + 2, 2))]
    return out


def slices_between(src, dst):
    """The slices taking an axis of length `src` to length `dst` (none: the empty list)."""
    if src == dst:
        return [":", ":", "::-1"]
    d = dst.cut - src.cut
    if src.base != dst.base or src.step != 1 or d < 0:
        return []
    if dst.step == 1 and d > 0:
        return [f"{d}:", f":-{d}", f"-{d + 1}::-1"] + ([f"1:-{d - 1}"] if d >= 2 else [])
    if dst.step == 2:
        return ["::2", "::-2", "-1::-2"] if d == 0 else [f"{d}::2", f":-{d}:2",
                                                        f"-{d + 1}::-2"]
    return []


LIBM_CALL = re.compile(r"\bnp\.(sin|cos|tan|exp|log|log1p|expm1|tanh|sinh|cosh|log2|log10|"
                       r"arcsin|arccos|arctan)\(")


def promote(a, b):
    """The type of a + b under numpy 2 promotion (Python numbers are weak)."""
    if a in WEAK and b in WEAK:
        return FLOAT if FLOAT in (a, b) else INT
    if a in WEAK:
        a, b = b, a
    if b in WEAK:
        return a if KIND[b] <= KIND[a] else F64
    return a if a == b else F64


def float_of(t):
    return {INT: FLOAT, BOOL: FLOAT, I64: F64}.get(t, t)


def is_int(t):
    return t in (INT, I64, BOOL)


def is_float(t):
    return t in (FLOAT, F64, F32)


def compare_type(a, b):
    return BOOL if a in WEAK and b in WEAK else NPBOOL


# -- expressions ------------------------------------------------------------------------------

class Expr:
    """An expression tree: `kind` selects the rendering, `op` is an operator, a name or a
    literal's text, `args` are sub-expressions; `ty` is a scalar type or an ArrayType. Array
    expressions also carry `shape` (a tuple of Dims) and, for views of a variable, `root` (the
    variable's name)."""

    shape = None
    root = None

    def __init__(self, kind, ty, op=None, args=()):
        self.kind, self.ty, self.op, self.args = kind, ty, op, list(args)

    def render(self, checked=False):
        return getattr(self, "_r_" + self.kind)(checked)

    def _sub(self, checked):
        return [a.render(checked) for a in self.args]

    def _r_lit(self, checked):
        return self.op

    _r_var = _r_lit

    def _r_bin(self, checked):
        left, right = self._sub(checked)
        if checked and self.op == "**" and self.ty == FLOAT:
            return f"_pw({left}, {right})"
        text = f"({left} {self.op} {right})"
        return f"_ck{text}" if checked and self.ty == INT else text

    def _r_neg(self, checked):
        text = f"(-{self._sub(checked)[0]})"
        return f"_ck{text}" if checked and self.ty == INT else text

    def _r_not(self, checked):
        return f"(not {self._sub(checked)[0]})"

    def _r_cmp(self, checked):
        parts = self._sub(checked)
        text = parts[0]
        for op, part in zip(self.op, parts[1:]):
            text += f" {op} {part}"
        return f"({text})"

    def _r_boolop(self, checked):
        return "(" + f" {self.op} ".join(self._sub(checked)) + ")"

    def _r_ifexp(self, checked):
        cond, then, other = self._sub(checked)
        return f"({then} if {cond} else {other})"

    def _r_call(self, checked):
        text = f"{self.op}({', '.join(self._sub(checked))})"
        if checked and self.ty == INT and self.op in CHECKED_INT_CALLS:
            return f"_ck({text})"
        return text

    def _r_index(self, checked):
        parts = self._sub(checked)
        return f"{parts[0]}[{', '.join(parts[1:])}]"

    def _r_attr(self, checked):
        return self.op.format(*self._sub(checked))

    def _r_red(self, checked):
        """A sum or product whose order of additions may differ between spellings: `op` is
        (the program's spelling, SEQUENTIAL's, np.matmul for np.dot and .dot)."""
        return self.op[{"seq": 1, "matmul": 2}.get(checked, 0)].format(*self._sub(checked))


def lit(text, ty):
    return Expr("lit", ty, text)


def var(name, ty):
    return Expr("var", ty, name)


def call(name, ty, *args):
    return Expr("call", ty, name, args)


# -- statements -------------------------------------------------------------------------------

class Stmt:
    """A statement; `blocks()` lists its nested statement lists (for the minimizer)."""

    fixed = False  # the minimizer may not delete it (loop guards, fills of np.empty)

    def blocks(self):
        return []

    def lines(self, checked):
        raise NotImplementedError


def _jumps(stmt):
    return isinstance(stmt, Return) or (isinstance(stmt, Simple) and stmt.word != "pass")


def _indent(lines):
    return ["    " + line for line in lines]


def _block_lines(stmts, checked):
    lines = [line for s in stmts for line in s.lines(checked)]
    return _indent(lines or ["pass"])


class Assign(Stmt):
    def __init__(self, target, value, fixed=False):
        self.target, self.value, self.fixed = target, value, fixed

    def lines(self, checked):
        return [f"{self.target} = {self.value.render(checked)}"]


class AugAssign(Stmt):
    def __init__(self, target, op, value, ty, fixed=False):
        self.target, self.op, self.value, self.ty, self.fixed = target, op, value, ty, fixed

    def lines(self, checked):
        value = self.value.render(checked)
        if checked and self.ty == INT:
            return [f"{self.target} = _ck({self.target} {self.op} {value})"]
        return [f"{self.target} {self.op}= {value}"]


class Store(Stmt):
    """a[i] = v, a[i, j] += v, ..."""

    def __init__(self, target, op, value):
        self.target, self.op, self.value = target, op, value

    def lines(self, checked):
        return [f"{self.target.render(checked)} {self.op} {self.value.render(checked)}"]


class TupleAssign(Stmt):
    def __init__(self, targets, values):
        self.targets, self.values = targets, values  # values: a list, or one call

    def lines(self, checked):
        if isinstance(self.values, Expr):
            rhs = self.values.render(checked)
        else:
            rhs = ", ".join(v.render(checked) for v in self.values)
        return [f"{', '.join(self.targets)} = {rhs}"]


class If(Stmt):
    def __init__(self, cond, body, orelse=()):
        self.cond, self.body, self.orelse = cond, list(body), list(orelse)

    def blocks(self):
        return [self.body, self.orelse]

    def lines(self, checked):
        lines = [f"if {self.cond.render(checked)}:"] + _block_lines(self.body, checked)
        if len(self.orelse) == 1 and isinstance(self.orelse[0], If):
            nested = self.orelse[0].lines(checked)
            return lines + ["el" + nested[0]] + nested[1:]
        if self.orelse:
            lines += ["else:"] + _block_lines(self.orelse, checked)
        return lines


class For(Stmt):
    def __init__(self, target, iterable, body):
        self.target, self.iterable, self.body = target, iterable, list(body)

    def blocks(self):
        return [self.body]

    def lines(self, checked):
        return [f"for {self.target} in {self.iterable.render(checked)}:"] + \
            _block_lines(self.body, checked)


class While(Stmt):
    """A while loop bounded by a counter: `style` is "and" (while cond and k < limit),
    "count" (while k < limit) or "true" (while True: ... if k > limit: break). The counter's
    initialisation is a separate (fixed) statement before it."""

    def __init__(self, counter, cond, limit, style, body):
        self.counter, self.cond, self.limit, self.style = counter, cond, limit, style
        self.body = list(body)

    def blocks(self):
        return [self.body]

    def lines(self, checked):
        k, limit = self.counter, self.limit
        head = {"and": f"while {self.cond.render(checked) if self.cond else 'True'} and "
                       f"{k} < {limit}:",
                "count": f"while {k} < {limit}:", "true": "while True:"}[self.style]
        guard = [f"{k} += 1"]
        if self.style == "true":
            guard += [f"if {k} > {limit}:", "    break"]
        return [head] + _indent(guard + [line for s in self.body for line in s.lines(checked)])


class Guard(Stmt):
    """`k += 1; if k > limit: break` at the top of a loop whose range step may be 0 (so that
    a compiled range(a, b, 0) that fails to raise cannot loop forever)."""

    fixed = True

    def __init__(self, counter, limit):
        self.counter, self.limit = counter, limit

    def lines(self, checked):
        return [f"{self.counter} += 1", f"if {self.counter} > {self.limit}:", "    break"]


class Simple(Stmt):
    """break, continue, pass."""

    def __init__(self, word):
        self.word = word

    def lines(self, checked):
        return [self.word]


class Return(Stmt):
    def __init__(self, values):
        self.values = values

    def lines(self, checked):
        return ["return " + ", ".join(v.render(checked) for v in self.values)]


class Assert(Stmt):
    def __init__(self, cond):
        self.cond = cond

    def lines(self, checked):
        return [f"assert {self.cond.render(checked)}"]


@dataclass
class Function:
    name: str
    params: list  # [(name, type)]
    returns: list  # result types (more than one: a tuple)
    body: list
    writes: set = field(default_factory=set)  # indices of array parameters stored into
    shapes: dict = field(default_factory=dict)  # array parameter -> its shape (array programs)

    def lines(self, checked):
        head = f"def {self.name}({', '.join(name for name, _ in self.params)}):"
        return [head] + _block_lines(self.body, checked)


# -- arguments --------------------------------------------------------------------------------

@dataclass
class Arg:
    """One argument: a scalar value or an array (shape, flat values, layout)."""

    ty: object
    value: object
    layout: str = "C"

    def make(self):
        return eval(self.source(), {"np": np})  # the reproducer's own text

    def source(self):
        """Python text that builds the argument (printed in reproducers)."""
        if not isinstance(self.ty, ArrayType):
            text = _number_text(self.value)
            return text if self.ty in WEAK else f"{CAST[self.ty]}({text})"
        shape, values = self.value
        text = f"np.array([{', '.join(_number_text(v) for v in values)}], " \
               f"dtype={NP_DTYPE[self.ty.dtype]}).reshape({shape})"
        return {"C": "{}", "strided": "np.repeat({}, 2, axis=-1)[..., ::2]",
                "reversed": "np.ascontiguousarray({}[::-1])[::-1]",
                "F": "np.asfortranarray({})"}[self.layout].format(text)


def _scalar(ty, value):
    return {INT: int, FLOAT: float, BOOL: bool, I64: np.int64, F64: np.float64,
            F32: np.float32}[ty](value)


def _number_text(v):
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return f"float('{v}')"
    return repr(v)


def make_args(args):
    return [a.make() for a in args]


# -- the program ------------------------------------------------------------------------------

@dataclass
class Program:
    seed: int
    helpers: list
    main: Function
    arg_sets: list  # lists of Arg
    arrays: bool = False  # whether it has whole-array code

    def functions(self):
        return self.helpers + [self.main]

    def render(self, checked=False):
        """The module's text; checked=True is the oracle's, checked="seq" the oracle's with
        sums and products in the LLVM backend's order, checked="matmul" the oracle's with
        np.dot(a, b) and a.dot(b) spelled np.matmul(a, b), as the compiler reads them (numpy's
        np.dot and np.matmul may order a product's terms differently)."""
        lines = [PRELUDE + (CHECKS if checked else "") + (SEQUENTIAL if checked == "seq"
                                                            else "")]
        for fn in self.functions():
            lines += ["", ""] + fn.lines(checked)
        text = "\n".join(lines) + "\n"
        return LIBM_CALL.sub(r"_libm.\1(", text) if checked == "seq" else text

    def param_types(self):
        return [t for _, t in self.main.params]

    def locations(self):
        """Paths to every statement the minimizer may delete: (function index, index in the
        body, block index, index, ...)."""
        out = []
        for f, fn in enumerate(self.functions()):
            _walk(fn.body, (f,), out)
        return out

    def without(self, path):
        """A copy of the program without the statement at `path`."""
        clone = copy.deepcopy(self)
        stmts, index = clone._resolve(path)
        del stmts[index]
        return clone

    def unwrapped(self, path, block):
        """A copy where the compound statement at `path` is replaced by its block `block`."""
        clone = copy.deepcopy(self)
        stmts, index = clone._resolve(path)
        stmts[index:index + 1] = stmts[index].blocks()[block]
        return clone

    def _resolve(self, path):
        stmts = self.functions()[path[0]].body
        rest = list(path[1:])
        while len(rest) > 1:
            stmts = stmts[rest[0]].blocks()[rest[1]]
            rest = rest[2:]
        return stmts, rest[0]

    def statement_count(self):
        return len(self.locations())

    def reorders(self):
        """Whether a sum or product may add in another order on LLVM (render(checked="seq")
        is then the LLVM backend's oracle besides numpy's)."""
        return any(e.kind == "red" for e in self._all_expressions())

    def respells(self):
        """Whether a product is spelled np.dot or .dot (render(checked="matmul") is then an
        oracle too)."""
        return any(e.kind == "red" and e.op[2] != e.op[0] for e in self._all_expressions())

    def _all_expressions(self):
        for fn in self.functions():
            for stmt in _statements(fn.body):
                yield from _expressions(stmt)

    def uses_float32(self):
        """Whether any value is a float32 (its rounding is coarser than float64's)."""
        return any(_is_f32(t) for _, t in self.main.params) or any(
            _is_f32(e.ty) for fn in self.functions() for stmt in _statements(fn.body)
            for e in _expressions(stmt))

    def rounds_floats(self):
        """Whether float values are rounded anywhere (floor, //, %, int(), float32, stores
        into int64 arrays): then finite differences may see steps finer than their step."""
        for fn in self.functions():
            for stmt in _statements(fn.body):
                if _rounding_statement(stmt) or any(_rounding(e) for e in _expressions(stmt)):
                    return True
        return False


def _statements(stmts):
    for s in stmts:
        yield s
        for block in s.blocks():
            yield from _statements(block)


def _expressions(stmt):
    """Every expression node of one statement (not of its nested blocks)."""
    roots = []
    for value in vars(stmt).values():
        roots += value if isinstance(value, list) else [value]
    stack = [e for e in roots if isinstance(e, Expr)]
    while stack:
        e = stack.pop()
        yield e
        stack += e.args


ROUNDING_CALLS = ("int", "np.int64", "math.floor", "math.ceil", "math.trunc", "np.floor",
                  "np.ceil", "np.trunc")


def _is_f32(t):
    return t == F32 or (isinstance(t, ArrayType) and t.dtype == F32)


def _rounding(e):
    if _is_f32(e.ty):
        return True
    if e.kind == "bin" and e.op in ("//", "%") and is_float(elem(e.ty)):
        return True
    if e.kind == "attr" and any(word in e.op for word in ("np.floor", "np.ceil", "np.int64")):
        return True
    return e.kind == "call" and e.op in ROUNDING_CALLS and is_float(elem(e.args[0].ty))


def _rounding_statement(stmt):
    if isinstance(stmt, Store):
        return stmt.target.ty == I64 and not is_int(stmt.value.ty)
    return isinstance(stmt, AugAssign) and stmt.op in ("//", "%") and is_float(stmt.ty)


def _walk(stmts, prefix, out):
    for i, s in enumerate(stmts):
        if s.fixed:
            continue  # nor what it contains (the fill of an np.empty array)
        if not (isinstance(s, Return) and s is stmts[-1] and len(prefix) == 1):
            out.append(prefix + (i,))
        for b, block in enumerate(s.blocks()):
            _walk(block, prefix + (i, b), out)


# -- array expressions ------------------------------------------------------------------------

ARRAY_UNARY = ("sin", "cos", "tan", "tanh", "exp", "log", "sqrt", "arctan", "arcsin", "log1p",
               "expm1", "sinh", "cosh", "log2", "abs", "square", "floor", "ceil", "sign")
KEEPS_DTYPE = ("abs", "square", "sign", "floor", "ceil")  # of integers too (numpy 2)
REDUCTIONS = {"sum": 5, "mean": 3, "max": 2, "min": 2, "prod": 1}
ACTIVATIONS = ("np.tanh({0})", "np.sin({0})", "np.maximum({0}, 0.0)",
               "(1.0 / (1.0 + np.exp(-{0})))", "np.clip({0}, -1.0, 1.0)", "(0.5 * {0})")


def elem(ty):
    """The element type of an array type; a scalar type itself."""
    return ty.dtype if isinstance(ty, ArrayType) else ty


class ArrayGen:
    """Whole-array numpy code for Gen (issue 12): array locals from arguments and
    constructors, elementwise expressions broadcasting 1-d, 2-d and scalars, views (slices with
    steps and negative bounds, .T, rows, columns, None), slice assignment, reductions with axis
    and keepdims, @ between fitting shapes, np.where/maximum/clip, integer-array and mask
    indexing, np.linalg, arrays carried by loops.

    Shapes are tracked symbolically (Dim): the arguments' lengths are symbols (N, M, K) that
    every argument set gives values, so an expression built from equal Dims fits in every set.
    Rarely an operand of another shape is used on purpose (RISKY_WEIGHT), and one argument set
    of some programs gives an array another length (P_MISMATCH_SET): numpy's ValueError, which
    compiled code must raise too."""

    MAX_ARRAY_DEPTH = 2
    RISKY_WEIGHT = 0.15  # of about 13: an operand whose shape may not broadcast
    P_MISMATCH_SET = 0.1  # the last argument set has one array of another length

    # -- shapes ---------------------------------------------------------------------------

    def known(self, env, want=None):
        """(name, type, shape) of the arrays whose shape is known, of `want`'s kind first."""
        found = [(n, t, env.shapes[n]) for n, t in env.arrays() if env.shapes.get(n)]
        preferred = [k for k in found if self.kind_of(k[1].dtype, want)]
        return preferred or found

    @staticmethod
    def kind_of(dtype, want):
        return want is None or (dtype == I64) == (want == "int")

    def pool(self, env, want=None):
        """The shapes views of known arrays have (the arrays', transposed, rows, columns), in
        a deterministic order."""
        shapes = {}
        for _, _, s in self.known(env, want):
            more = [s] + ([(s[1], s[0]), (s[0],), (s[1],)] if len(s) == 2 else [])
            shapes.update((x, None) for x in more)
        return list(shapes)

    def avar(self, env, name):
        e = var(name, env.type_of(name))
        e.shape, e.root = env.shapes.get(name), name
        return e

    def arr(self, kind, dtype, shape, op, args, root=None):
        e = Expr(kind, ArrayType(dtype, len(shape)), op, args)
        e.shape, e.root = tuple(shape), root
        return e

    def view(self, template, base, shape, *more):
        """A view of `base` (it shares the memory of base's root)."""
        return self.arr("attr", base.ty.dtype, shape, template, [base, *more], base.root)

    def dim_text(self, env, dim):
        """An int expression with the length `dim` (None where no known array has it)."""
        if isinstance(dim.base, int) and dim.cut == 0 and dim.step == 1:
            return lit(str(dim.base), INT)
        for name, ty, s in self.known(env):
            if dim in s:
                axis = s.index(dim)
                text = "len({0})" if axis == 0 and self.chance(0.6) else f"{{0}}.shape[{axis}]"
                return Expr("attr", INT, text, [var(name, ty)])
        return None

    # -- leaves -----------------------------------------------------------------------------

    def views(self, env, shape, want=None, strict=False):
        """(weight, builder) of the views of known arrays that have exactly `shape` (of
        `want`'s kind first; strict: only)."""
        found = []
        known = self.known(env, want)
        for name, ty, s in known:
            if not strict or self.kind_of(ty.dtype, want):
                found += self.views_of(env, self.avar(env, name), s, shape)
        return found

    def views_of(self, env, v, s, shape):
        found = []
        if len(s) == len(shape):
            options = [slices_between(a, b) for a, b in zip(s, shape)]
            if all(options):
                found.append((6 if s == shape else 3, lambda: self.sliced(v, options, shape)))
        if len(s) == 2 and len(shape) == 2 and (s[1], s[0]) == shape:
            text = self.pick(("{0}.T", "{0}.T", "np.transpose({0})", "{0}.transpose()"))
            found.append((2, lambda: self.view(text, v, shape)))
        if len(s) == 2 and len(shape) == 1:
            if s[1] == shape[0]:
                found.append((2, lambda: self.row(env, v, shape)))
            if s[0] == shape[0]:
                found.append((2, lambda: self.column(env, v, shape)))
        if len(s) == 1 and len(shape) == 2 and (ONE, s[0]) == shape:
            found.append((1, lambda: self.view(self.pick(("{0}[None]", "{0}[None, :]",
                                                          "{0}[np.newaxis]")), v, shape)))
        if len(s) == 1 and len(shape) == 2 and (s[0], ONE) == shape:
            found.append((1, lambda: self.view("{0}[:, None]", v, shape)))
        return found

    def sliced(self, v, options, shape):
        specs = [self.pick(o) for o in options]
        if all(spec == ":" for spec in specs):
            return v
        while len(specs) > 1 and specs[-1] == ":" and self.chance(0.5):
            specs.pop()
        return self.view(f"{{0}}[{', '.join(specs)}]", v, shape)

    def row(self, env, v, shape):
        index = self.index(env, v.op, v.ty, 0)
        return self.view(self.pick(("{0}[{1}]", "{0}[{1}, :]")), v, shape, index)

    def column(self, env, v, shape):
        return self.view("{0}[:, {1}]", v, shape, self.index(env, v.op, v.ty, 1))

    def choose(self, options):
        weights = [w for w, _ in options]
        return self.rng.choices([b for _, b in options], weights)[0]()

    def aleaf(self, env, shape, want=None):
        """A view of exactly `shape`, else a new array of it (None if neither can be made)."""
        found = self.views(env, shape, want) or self.views(env, shape)
        if found and not self.chance(0.05):
            return self.choose(found)
        made = self.construct(env, shape, want)
        if made is not None:
            return made
        if found:
            return self.choose(found)
        for s in self.pool(env, want):  # a slice of a row: (m[i])[1:]
            options = [slices_between(a, b) for a, b in zip(s, shape)]
            if len(s) == len(shape) and s != shape and all(options):
                return self.sliced(self.choose(self.views(env, s, want)), options, shape)
        return None

    def construct(self, env, shape, want):
        texts = [self.dim_text(env, d) for d in shape]
        if all(t is not None for t in texts):
            dims = "{0}" if len(shape) == 1 else "({0}, {1})"
            dtype = I64 if want == "int" else self.weighted({F64: 4, F32: 1})
            how = self.weighted({"zeros": 2, "ones": 2, "full": 1})
            if how == "full":
                fill = self.exact(env, {F64: FLOAT, F32: F32, I64: INT}[dtype], 2)
                return self.arr("attr", dtype, shape, f"np.full({dims}, {{{len(shape)}}})",
                                texts + [fill])
            kw = "" if dtype == F64 else f", dtype={NP_DTYPE[dtype]}"
            return self.arr("attr", dtype, shape, f"np.{how}({dims}{kw})", texts)
        if len(shape) == 2:
            left, right = self.views(env, shape[:1], want), self.views(env, shape[1:], want)
            if left and right:
                a, b = self.choose(left), self.choose(right)
                ty = promote(a.ty.dtype, b.ty.dtype)
                text = self.pick(("({0}[:, None] * {1})", "np.outer({0}, {1})"))
                return self.arr("attr", ty, shape, text, [a, b])
        return None

    # -- expressions ------------------------------------------------------------------------

    def aexpr(self, env, shape, depth=0, want=None):
        """An array expression of exactly `shape` (None if no array of it can be made)."""
        if depth >= self.MAX_ARRAY_DEPTH or self.chance(0.3 + 0.2 * depth):
            leaf = self.aleaf(env, shape, want)
            if leaf is not None:
                return leaf
        n = len(shape)
        table = {"arith": 10, "unary": 5 if want != "int" else 1, "maxmin": 2, "where": 2,
                 "neg": 1, "pow": 2, "clip": 1, "astype": 1, "ifexp": 1,
                 "reduce": 3 * bool(self.reductions_to(env, shape)),
                 "matmul": 4 * bool(self.products_to(env, shape)),
                 "T": 1 * (n == 2 and (shape[1], shape[0]) in self.pool(env)),
                 "take": 1, "linalg": 1 * (want != "int" and n >= 1 and
                                           (shape[0], shape[0]) in self.pool(env))}
        e = getattr(self, "a_" + self.weighted(table))(env, shape, depth + 1, want)
        return e if e is not None else self.aleaf(env, shape, want)

    def aoperand(self, env, shape, depth, want=None):
        """A second operand for an array of `shape`: a scalar or an array that broadcasts to
        it (rows against a matrix, keepdims reductions, x[:, None]); rarely one that may
        not (another shape of as many dimensions)."""
        n = len(shape)
        pool = self.pool(env)
        risky = [s for s in pool if len(s) == n and s != shape]
        choice = self.weighted({
            "scalar": 4, "full": 5, "suffix": 2 * (n == 2 and shape[1:] in pool),
            "keep": 2 * (n == 2 and bool(self.keepdims_to(env, shape))),
            "expand": 2 * (n == 2 and (shape[:1] in pool or shape[1:] in pool)),
            "risky": self.RISKY_WEIGHT * bool(risky)})
        if choice == "scalar":
            e = self.expr(env, min(depth + 1, self.MAX_EXPR_DEPTH), want)
            return self.coerce(e, INT) if e.ty in (BOOL, NPBOOL) else e
        if choice == "suffix":
            return self.aexpr(env, shape[1:], depth, want)
        if choice == "keep":
            s, axis = self.pick(self.keepdims_to(env, shape))
            return self.reduction(self.aexpr(env, s, depth, want), axis, True)
        if choice == "expand":
            if shape[:1] in pool and (shape[1:] not in pool or self.chance(0.5)):
                return self.view("{0}[:, None]", self.aexpr(env, shape[:1], depth, want),
                                 (shape[0], ONE))
            text = self.pick(("{0}[None]", "{0}[None, :]"))
            return self.view(text, self.aexpr(env, shape[1:], depth, want), (ONE, shape[1]))
        if choice == "risky":
            return self.aexpr(env, self.pick(risky), depth, want)
        return self.aexpr(env, shape, depth, want)

    def a_arith(self, env, shape, depth, want):
        left = self.aexpr(env, shape, depth, want)
        right = self.aoperand(env, shape, depth, want)
        if self.chance(0.4):
            left, right = right, left
        op = self.weighted({"+": 4, "-": 3, "*": 4, "/": 2 * (want != "int"), "//": 0.3,
                            "%": 0.3})
        ty = promote(elem(left.ty), elem(right.ty))
        return self.arr("bin", float_of(ty) if op == "/" else ty, shape, op, [left, right])

    def a_unary(self, env, shape, depth, want):
        x = self.aexpr(env, shape, depth, want)
        name = self.pick(ARRAY_UNARY)
        dtype = x.ty.dtype if name in KEEPS_DTYPE else float_of(x.ty.dtype)
        text = "abs({0})" if name == "abs" and self.chance(0.3) else f"np.{name}({{0}})"
        return self.arr("attr", dtype, shape, text, [x])

    def a_neg(self, env, shape, depth, want):
        x = self.aexpr(env, shape, depth, want)
        return self.arr("neg", x.ty.dtype, shape, None, [x])

    def a_pow(self, env, shape, depth, want):
        base = self.aexpr(env, shape, depth, want)
        if base.ty.dtype == I64:
            exp = lit(self.pick(("2", "2", "3", "0", "(-1)")), INT)
        elif self.chance(0.25):
            exp = self.aoperand(env, shape, depth, "float")
        else:
            exp = lit(self.pick(("2.0", "0.5", "3.0", "(-1.0)", "1.5", "2", "(-0.5)")), FLOAT)
        ty = promote(base.ty.dtype, elem(exp.ty))
        return self.arr("bin", ty, shape, "**", [base, exp])

    def a_maxmin(self, env, shape, depth, want):
        a = self.aexpr(env, shape, depth, want)
        b = self.aoperand(env, shape, depth, want)
        if self.chance(0.3):
            a, b = b, a
        name = self.pick(("np.maximum", "np.minimum"))
        return self.arr("call", STRONG[promote(elem(a.ty), elem(b.ty))], shape, name, [a, b])

    def a_where(self, env, shape, depth, want):
        left = self.aexpr(env, shape, depth)
        right = self.aoperand(env, shape, depth)
        cond = self.arr("cmp", NPBOOL, shape, [self.pick(("<", "<=", ">", ">=", "!="))],
                        [left, right])
        a = self.aoperand(env, shape, depth, want)
        b = self.aoperand(env, shape, depth, want)
        dtype = STRONG[promote(elem(a.ty), elem(b.ty))]
        return self.arr("call", dtype, shape, "np.where", [cond, a, b])

    def a_clip(self, env, shape, depth, want):
        x = self.aexpr(env, shape, depth, want)
        low, high = self.pick((("0.0", "1.0"), ("(-1.5)", "1.5"), ("(-1)", "2"),
                               ("0", "5"), ("(-0.5)", "0.25")))
        bound = FLOAT if "." in low else INT
        text = self.pick(("np.clip({0}, {1}, {2})", "{0}.clip({1}, {2})"))
        return self.arr("attr", promote(x.ty.dtype, bound), shape, text,
                        [x, lit(low, bound), lit(high, bound)])

    def a_astype(self, env, shape, depth, want):
        x = self.aexpr(env, shape, depth, want)
        if x.ty.dtype == I64 or self.chance(0.85):
            dtype = self.pick([t for t in (F64, F32) if t != x.ty.dtype])
        else:
            dtype = I64  # NaN, inf and huge values: what numpy's cast gives
        return self.cast_array(x, dtype)

    def cast_array(self, x, dtype):
        if x.ty.dtype == dtype:
            return x
        text = self.pick(("{0}.astype(%s)", "np.asarray({0}, dtype=%s)")) % NP_DTYPE[dtype]
        return self.arr("attr", dtype, x.shape, text, [x])

    def a_ifexp(self, env, shape, depth, want):
        a = self.aexpr(env, shape, depth, want)
        b = self.cast_array(self.aexpr(env, shape, depth, want), a.ty.dtype)
        return self.arr("ifexp", a.ty.dtype, shape, None, [self.cond(env, 1), a, b])

    def a_T(self, env, shape, depth, want):
        x = self.aexpr(env, (shape[1], shape[0]), depth, want)
        return self.arr("attr", x.ty.dtype, shape, "{0}.T", [x], x.root)

    def reductions_to(self, env, shape):
        """(shape, axis, keepdims) of the pool's arrays that reduce along axis to `shape`."""
        out = []
        for s in self.pool(env):
            for k in range(len(s)):
                if len(s) == len(shape) + 1 and s[:k] + s[k + 1:] == shape:
                    out.append((s, k, False))
                if len(s) == len(shape) and s[k] != ONE and s[:k] + (ONE,) + s[k + 1:] == shape:
                    out.append((s, k, True))
        return out

    def keepdims_to(self, env, shape):
        """(shape, axis) that reduce with keepdims to a shape broadcasting to `shape` (2-d)."""
        return [(s, k) for s in self.pool(env) if len(s) == 2 for k in (0, 1)
                if s[1 - k] == shape[1 - k]]

    def a_reduce(self, env, shape, depth, want):
        s, axis, keepdims = self.pick(self.reductions_to(env, shape))
        return self.reduction(self.aexpr(env, s, depth, want), axis, keepdims)

    def reduction(self, x, axis, keepdims, name=None):
        """np.sum(x, axis=...) and friends, spelled as function or method; sums, means and
        products have a spelling in the LLVM backend's order too (_rs in SEQUENTIAL)."""
        name = name or self.weighted(REDUCTIONS)
        if axis is None:
            shape, where, seq_axis = (), "", "None"
        else:
            shape = x.shape[:axis] + ((ONE,) if keepdims else ()) + x.shape[axis + 1:]
            spelled = self.pick((axis, axis, axis - x.ty.ndim))
            where, seq_axis = self.pick((f", axis={spelled}", f", {spelled}")), str(spelled)
        keep = ", keepdims=True" if keepdims else ""
        if self.chance(0.3):
            text = f"{{0}}.{name}({(where + keep)[2:]})"
        else:
            text = f"np.{name}({{0}}{where}{keep})"
        dtype = x.ty.dtype
        if name == "mean" and dtype == I64:
            dtype = F64
        if name in ("sum", "mean", "prod", "max", "min"):
            helper = "_rs" if name in ("sum", "mean", "prod") else "_rmx"
            seq = f"{helper}('{name}', {{0}}, {seq_axis}, {keepdims})"
            kind, op = "red", (text, seq, text)
        else:
            kind, op = "attr", text
        if not shape:
            return Expr(kind, dtype, op, [x])
        return self.arr(kind, dtype, shape, op, [x])

    def products_to(self, env, shape):
        """(left, right) shapes in the pool whose @ has `shape`."""
        pool = self.pool(env)
        out = []
        for a in pool:
            if len(shape) == 2 and len(a) == 2 and a[0] == shape[0] and \
                    (a[1], shape[1]) in pool:
                out.append((a, (a[1], shape[1])))
            if len(shape) == 1 and len(a) == 2 and a[0] == shape[0] and a[1:] in pool:
                out.append((a, a[1:]))
            if len(shape) == 1 and len(a) == 2 and a[1] == shape[0] and a[:1] in pool:
                out.append((a[:1], a))
        return out

    def a_matmul(self, env, shape, depth, want):
        left, right = self.pick(self.products_to(env, shape))
        if self.chance(self.RISKY_WEIGHT / 5):
            right = self.pick([s for s in self.pool(env) if len(s) == len(right)])
        return self.matmul(self.aexpr(env, left, depth, want),
                           self.aexpr(env, right, depth, want), shape)

    def matmul(self, a, b, shape):
        text = self.pick(("({0} @ {1})", "({0} @ {1})", "np.dot({0}, {1})", "{0}.dot({1})",
                          "np.matmul({0}, {1})"))
        op = (text, "_rmm({0}, {1})", "np.matmul({0}, {1})")
        dtype = promote(a.ty.dtype, b.ty.dtype)
        if not shape:
            return Expr("red", dtype, op, [a, b])
        return self.arr("red", dtype, shape, op, [a, b])

    def a_take(self, env, shape, depth, want):
        """x[idx % len(x)] with an integer array idx of `shape` (x 1-d), or m[idx % len(m)]
        (rows of a matrix)."""
        sources = [(n, t, s) for n, t, s in self.known(env, want) if len(s) == len(shape) and
                   (len(s) == 1 or s[1] == shape[1])]
        if not sources:
            return None
        name, ty, s = self.pick(sources)
        idx = self.index_array(env, shape[:1])
        if idx is None:
            return None
        text = "{0}[{1} % len({0})]" if not self.chance(0.05) else "{0}[{1}]"
        return self.arr("attr", ty.dtype, shape, text, [self.avar(env, name), idx])

    def index_array(self, env, shape):
        ints = self.views(env, shape, "int", strict=True)
        if ints and self.chance(0.6):
            return self.choose(ints)
        text = self.dim_text(env, shape[0])
        if text is None:
            return None
        order = self.pick(("np.arange({0})", "np.arange({0})[::-1]", "(np.arange({0}) * 2)"))
        return self.arr("attr", I64, shape, order, [text])

    def a_linalg(self, env, shape, depth, want):
        square = (shape[0], shape[0])
        a = self.aexpr(env, square, depth, "float")
        a = self.cast_array(a, F64) if a.ty.dtype == I64 else a
        if shape == square and self.chance(0.5):
            return self.arr("attr", float_of(a.ty.dtype), shape, "np.linalg.inv({0})", [a])
        b = self.aexpr(env, shape, depth, "float")
        return self.arr("attr", float_of(promote(a.ty.dtype, b.ty.dtype)), shape,
                        "np.linalg.solve({0}, {1})", [a, b])

    # -- scalars from arrays ----------------------------------------------------------------

    def e_reduce(self, env, depth, kind):
        """A scalar from arrays: a reduction, a dot product, det, argmax, a masked sum, an
        element of an array expression."""
        want = kind if kind in ("int", "float") else None
        pool = self.pool(env, want)
        vectors = [s for s in pool if len(s) == 1]
        squares = [s for s in pool if len(s) == 2 and s[0] == s[1]]
        choice = self.weighted({"reduce": 8, "dot": 3 * bool(vectors), "det": 1 * bool(squares),
                                "arg": 1, "mask": 2, "element": 2, "builtin": 1 * bool(vectors)})
        shape = self.pick(pool)
        if choice in ("dot", "det", "builtin"):
            shape = self.pick(squares if choice == "det" else vectors)
        return getattr(self, "r_" + choice)(env, max(depth, 1), want, shape)

    def r_dot(self, env, depth, want, shape):
        return self.matmul(self.aexpr(env, shape, depth, want),
                           self.aexpr(env, shape, depth, want), ())

    def r_det(self, env, depth, want, shape):
        a = self.aexpr(env, shape, depth, "float")
        a = self.cast_array(a, F64) if a.ty.dtype == I64 else a
        return Expr("attr", float_of(a.ty.dtype), "np.linalg.det({0})", [a])

    def r_builtin(self, env, depth, want, shape):
        x = self.aexpr(env, shape, depth, want)
        return Expr("attr", x.ty.dtype, "sum({0})", [x])

    def r_arg(self, env, depth, want, shape):
        x = self.aexpr(env, shape, depth, want)
        text = self.pick(("np.argmax({0})", "np.argmin({0})", "{0}.argmax()"))
        return Expr("attr", I64, text, [x])

    def r_element(self, env, depth, want, shape):
        x = self.aexpr(env, shape, depth, want)
        index = ", ".join(self.pick(("0", "-1", "1")) for _ in shape)
        return Expr("attr", x.ty.dtype, f"{{0}}[{index}]", [x])

    def r_mask(self, env, depth, want, shape):
        x = self.aexpr(env, shape, depth, want)
        cond = self.arr("cmp", NPBOOL, shape, [self.pick(("<", ">", ">=", "!="))],
                        [self.aexpr(env, shape, depth), self.literal(None)])
        picked = self.arr("attr", x.ty.dtype, (Dim(("?", self.fresh("mask"))),),
                          "{0}[{1}]", [x, cond])
        return self.reduction(picked, None, False)

    def r_reduce(self, env, depth, want, shape):
        x = self.aexpr(env, shape, depth, want)
        axis = None if len(shape) == 1 or self.chance(0.7) else self.rng.randrange(2)
        if axis is None:
            return self.reduction(x, None, False)
        reduced = self.reduction(x, axis, False)
        return Expr("attr", reduced.ty.dtype, "{0}[0]", [reduced])

    # -- statements -------------------------------------------------------------------------

    def array_statements(self, env, compound):
        """Weights of the array statements (all 0 outside array programs: the scalar
        generator's random choices stay as they were)."""
        on = self.arrays_on and bool(self.pool(env))
        return {"array": 10 * on, "anew": 4 * self.arrays_on, "aassign": 7 * on,
                "aupdate": 5 * on, "recur": 2 * on * compound,
                "rowloop": 2 * compound * bool(on and [s for s in self.pool(env) if len(s) == 2])}

    def new_shape(self, env, want=None):
        """A shape for a new array: one of the pool's, or a known array's sliced."""
        if self.chance(0.3):
            _, _, s = self.pick(self.known(env, want))
            k = self.rng.randrange(len(s))
            _, dim = self.pick(sliced_dims(s[k]))
            return s[:k] + (dim,) + s[k + 1:]
        return self.pick(self.pool(env, want))

    def define_array(self, env, e, prefix="t"):
        name = self.fresh(prefix)
        env.define(name, e.ty, root=env.roots.get(e.root), shape=e.shape)
        return [Assign(name, e)]

    def s_array(self, env):
        e = self.aexpr(env, self.new_shape(env))
        if e is None or self.chance(0.08):
            e = self.wild_view(env)
        return self.define_array(env, e) if e is not None else self.s_assign(env)

    def wild_view(self, env):
        """x[i:], x[:k], x[mask]: a length known only at run time."""
        name, ty, s = self.pick(self.known(env))
        x = self.avar(env, name)
        shape = (Dim(("?", self.fresh("len"))),) + s[1:]
        if self.chance(0.3):
            cond = self.arr("cmp", NPBOOL, s, [self.pick(("<", ">"))],
                            [x, self.literal("float" if ty.dtype != I64 else "int")])
            return self.arr("attr", ty.dtype, (shape[0],), "{0}[{1}]", [x, cond])
        bound = self.bounded(env)
        text = self.pick(("{0}[{1}:]", "{0}[:{1}]", "{0}[{1}::-1]", "{0}[:{1}:2]"))
        return self.view(text, x, shape, bound)

    def s_anew(self, env):
        """A new array: a copy, zeros/ones/full of known lengths, arange, linspace,
        concatenate, stack, np.array([...]), reshape, inv."""
        known = self.known(env)
        choice = self.weighted({"copy": 3 * bool(known), "zeros": 3 * bool(known),
                                "arange": 2 * bool(known), "concat": 2 * bool(known),
                                "stack": 1 * bool(known), "literal": 2,
                                "reshape": 2 * bool(known)})
        e = getattr(self, "new_" + choice)(env, known)
        return self.define_array(env, e) if e is not None else self.s_assign(env)

    def new_copy(self, env, known):
        name, ty, s = self.pick(known)
        text = self.pick(("{0}.copy()", "np.copy({0})", "np.array({0})", "{0}.copy()"))
        return self.arr("attr", ty.dtype, s, text, [self.avar(env, name)])

    def new_zeros(self, env, known):
        _, ty, s = self.pick(known)
        if self.chance(0.25):
            name = self.pick([n for n, t, x in known if x == s])
            fn = self.pick(("np.zeros_like", "np.ones_like"))
            return self.arr("attr", ty.dtype, s, f"{fn}({{0}})", [var(name, ty)])
        return self.construct(env, s, None)

    def new_arange(self, env, known):
        _, _, s = self.pick(known)
        dim = self.pick(s)
        n = self.dim_text(env, dim)
        if self.chance(0.2):
            text, dtype = "np.linspace({1}, {2}, {0})", F64
            return self.arr("attr", dtype, (dim,), text, [n, self.literal("float"),
                                                          self.literal("float")])
        text, dtype = self.pick((("np.arange({0})", I64), ("np.arange({0}) * 0.5", F64),
                                 ("np.arange({0}, dtype=np.float64)", F64),
                                 ("np.arange(0.0, {0})", F64)))
        return self.arr("attr", dtype, (dim,), text, [n])

    def new_concat(self, env, known):
        name, ty, s = self.pick(known)
        others = [k for k in known if len(k[2]) == len(s) and k[1].dtype == ty.dtype]
        other, oty, o = self.pick(others)
        axis = self.rng.randrange(len(s))
        if len(s) == 2 and s[1 - axis] != o[1 - axis]:
            return None
        shape = list(s)
        shape[axis] = Dim(("+", s[axis], o[axis]))
        text = "np.concatenate([{0}, {1}])" if axis == 0 and self.chance(0.6) else \
            f"np.concatenate(({{0}}, {{1}}), axis={axis})"
        return self.arr("attr", ty.dtype, tuple(shape), text,
                        [self.avar(env, name), self.avar(env, other)])

    def new_stack(self, env, known):
        _, _, s = self.pick([k for k in known if len(k[2]) == 1] or known)
        if len(s) != 1:
            return None
        a, b = self.aexpr(env, s, 1), self.aexpr(env, s, 1)
        dtype = promote(a.ty.dtype, b.ty.dtype)
        if self.chance(0.5):
            return self.arr("attr", dtype, (Dim(2), s[0]), "np.stack([{0}, {1}])", [a, b])
        return self.arr("attr", dtype, (s[0], Dim(2)), "np.stack([{0}, {1}], axis=1)", [a, b])

    def new_literal(self, env, known):
        count = self.pick((1, 2, 3, 3, 4))
        items = []
        for _ in range(count):
            e = self.expr(env, 2)
            items.append(self.coerce(e, INT) if e.ty in (BOOL, NPBOOL) else e)
        dtype = STRONG[items[0].ty]
        for e in items[1:]:
            dtype = promote(dtype, STRONG[e.ty])
        text = "np.array([" + ", ".join(f"{{{k}}}" for k in range(count)) + "])"
        return self.arr("attr", dtype, (Dim(count),), text, items)

    def new_reshape(self, env, known):
        name, ty, s = self.pick(known)
        x = self.avar(env, name)
        if len(s) == 2:
            if self.chance(0.6):
                text = self.pick(("{0}.reshape(-1)", "{0}.ravel()", "{0}.flatten()",
                                  "np.reshape({0}, -1)"))
                return self.arr("attr", ty.dtype, (Dim(("*", s[0], s[1])),), text, [x],
                                x.root if "flatten" not in text else None)
            return self.arr("attr", ty.dtype, (s[1], s[0]),
                            "{0}.reshape({0}.shape[1], {0}.shape[0])", [x], x.root)
        if self.chance(0.5):
            return self.arr("attr", ty.dtype, (s[0], ONE), "{0}.reshape(-1, 1)", [x], x.root)
        return self.arr("attr", ty.dtype, (ONE, s[0]), "{0}.reshape((1, len({0})))", [x],
                        x.root)

    def s_aassign(self, env):
        """y[1:] = v, y[i, :] += v, y[:, j] *= v, y[::-1] -= v ...: v broadcast into a view."""
        known = self.known(env)
        weights = [1 if env.roots.get(n) else 4 for n, _, _ in known]
        name, ty, s = self.rng.choices(known, weights)[0]
        target, shape = self.target_view(env, name, ty, s)
        want = "int" if ty.dtype == I64 else None
        op = self.weighted({"=": 5, "+=": 4, "-=": 2, "*=": 2, "/=": 1 * (want is None)})
        value = self.aoperand(env, shape, 1, want) if shape else self.expr(env, 1, want)
        if want and not is_int(elem(value.ty)):  # no float -> int64 casts of NaN, inf
            value = self.literal("int")
        if env.roots.get(name) is not None:
            self.mark_written(env.roots[name])
        return [Store(target, op, value)]

    def target_view(self, env, name, ty, s):
        x = self.avar(env, name)
        choice = self.weighted({"slice": 5, "all": 1, "row": 3 * (len(s) == 2),
                                "column": 2 * (len(s) == 2), "rowslice": 1 * (len(s) == 2)})
        if choice == "all":
            return self.view(self.pick(("{0}[:]", "{0}[...]")), x, s), s
        if choice == "row":
            return self.row(env, x, s[1:]), s[1:]
        if choice == "column":
            return self.column(env, x, s[:1]), s[:1]
        if choice == "rowslice":
            text, dim = self.pick(sliced_dims(s[1]))
            index = self.index(env, name, ty, 0)
            return self.view(f"{{0}}[{{1}}, {text}]", x, (dim,), index), (dim,)
        k = self.rng.randrange(len(s))
        text, dim = self.pick(sliced_dims(s[k]))
        specs = [":"] * len(s)
        specs[k] = text
        shape = s[:k] + (dim,) + s[k + 1:]
        return self.view(f"{{0}}[{', '.join(specs)}]", x, shape), shape

    def s_aupdate(self, env):
        """h = <an expression of h's shape and dtype>, or h += v (in place)."""
        known = [k for k in self.known(env) if k[0] not in env.readonly]
        if not known:
            return self.s_array(env)
        name, ty, s = self.pick(known)
        want = "int" if ty.dtype == I64 else None
        if self.chance(0.3):
            op = self.weighted({"+": 4, "-": 2, "*": 2, "/": 1 * (want is None)})
            value = self.aoperand(env, s, 1, want)
            if want and not is_int(elem(value.ty)):
                value = self.literal("int")
            if env.roots.get(name) is not None:
                self.mark_written(env.roots[name])
            return [AugAssign(name, op, value, ty)]
        value = self.cast_array(self.aexpr(env, s, 0, want), ty.dtype)
        root = env.roots.get(value.root) if value.root is not None else None
        if root is not None and env.roots.get(name) is None:
            env.roots[name] = root  # conservatively a view from now on
        elif root is not None and root != env.roots.get(name):
            self.mark_written(root)  # a view of two arguments: both may be written
        return [Assign(name, value)]

    def s_recur(self, env):
        """h = np.tanh(W @ h + b) in a loop: an array carried by the loop."""
        vectors = [k for k in self.known(env, "float") if len(k[2]) == 1]
        if not vectors:
            return self.s_array(env)
        name, ty, s = self.pick(vectors)
        h = self.fresh("h")
        init = self.pick(("{0}.copy()", "np.tanh({0})", "np.zeros_like({0})", "({0} * 0.5)"))
        dtype = float_of(ty.dtype)
        start = self.arr("attr", dtype if "np.tanh" in init or "*" in init else ty.dtype, s,
                         init, [self.avar(env, name)])
        stmts = [Assign(h, self.cast_array(start, dtype))]
        env.define(h, ArrayType(dtype, 1), shape=s)
        body = self.transition(env, self.avar(env, h), s[0])
        bias = self.aoperand(env, s, 2, "float")
        inner = float_of(promote(elem(body.ty), elem(bias.ty)))
        update = self.arr("attr", inner, s, self.pick(ACTIVATIONS),
                          [self.arr("bin", inner, s, "+", [body, bias])])
        return stmts + self.counted_loop(env, lambda: [Assign(h, self.cast_array(update, dtype))])

    def counted_loop(self, env, first):
        """for i in range(...): first() then 0 to 2 random statements (with s_for's guard where
        the step may be 0); first() is called last (the seeds' programs stay as they were)."""
        loop_var = self.fresh("i")
        iterable, variable_step = self.range_call(env)
        stmts, guard = [], []
        if variable_step:
            counter = self.fresh("g")
            stmts.append(Assign(counter, lit("0", INT), fixed=True))
            env.define(counter, INT, readonly=True)
            guard = [Guard(counter, 20)]
        env.push()
        env.define(loop_var, INT, readonly=True)
        self.loops.append(("for", loop_var))
        self.nest += 1
        rest = self.block(env, self.rng.randint(0, 2))
        self.nest -= 1
        self.loops.pop()
        env.pop()
        return stmts + [For(loop_var, iterable, guard + first() + rest)]

    def transition(self, env, h, dim):
        """W @ h for a matrix of the pool that maps `dim` to `dim` (W.T @ (W @ h) where W is
        not square); h itself where there is none."""
        mats = [s for s in self.pool(env, "float") if len(s) == 2 and dim in s]
        if not mats:
            return self.arr("bin", h.ty.dtype, h.shape, "*", [h, self.literal("float")])
        m = self.pick(mats)
        w = self.aexpr(env, m, 2, "float")
        if m == (dim, dim):
            return self.matmul(w, h, (dim,)) if self.chance(0.7) else self.matmul(h, w, (dim,))
        if m[1] == dim:  # (P, dim)
            return self.matmul(self.view("{0}.T", w, (dim, m[0])), self.matmul(w, h, m[:1]),
                               (dim,))
        return self.matmul(w, self.matmul(h, w, m[1:]), (dim,))

    def s_rowloop(self, env):
        """for i in range(len(m)): r = m[i]; out[i] = f(r) ...: rows and whole-array code."""
        mats = [k for k in self.known(env) if len(k[2]) == 2]
        name, ty, s = self.pick(mats)
        i, r = self.fresh("i"), self.fresh("r")
        m = self.avar(env, name)
        iterable = Expr("attr", None, "range({0})", [self.dim_text(env, s[0]) or
                                                     lit(f"len({name})", INT)])
        env.push()
        env.define(i, INT, readonly=True)
        self.loops.append(("for", i))
        self.nest += 1
        row = self.view(self.pick(("{0}[{1}]", "{0}[{1}, :]")), m, s[1:], var(i, INT))
        env.define(r, row.ty, root=env.roots.get(name), shape=s[1:])
        body = [Assign(r, row)]
        targets = [k for k in self.known(env) if len(k[2]) == 2 and k[2][0] == s[0] and
                   k[0] != name and not env.roots.get(k[0])]
        if targets:
            out, oty, o = self.pick(targets)
            value = self.aoperand(env, o[1:], 1, "int" if oty.dtype == I64 else None)
            if oty.dtype == I64 and not is_int(elem(value.ty)):
                value = self.literal("int")
            target = self.view("{0}[{1}]", self.avar(env, out), o[1:], var(i, INT))
            body.append(Store(target, self.pick(("=", "+=")), value))
        body += self.block(env, self.rng.randint(1, 2))
        self.nest -= 1
        self.loops.pop()
        env.pop()
        return [For(i, iterable, body)]

    # -- arguments --------------------------------------------------------------------------

    def array_params(self):
        """Scalars as in main_params, and 1 to 3 arrays whose lengths are size symbols."""
        symbols = [Dim(n) for n in ("N", "M", "K")[:self.pick((1, 2, 2, 3))]]
        params, shapes = [], {}
        for _ in range(self.rng.randint(0, 3)):
            ty = self.weighted({FLOAT: 5, INT: 4, BOOL: 1, F64: 2, F32: 2, I64: 2})
            params.append((self.fresh({INT: "n", BOOL: "b", I64: "k"}.get(ty, "x")), ty))
        for _ in range(self.pick((1, 2, 2, 3))):
            shape = tuple(self.pick(symbols) for _ in range(self.pick((1, 2, 2))))
            if self.chance(0.1):
                shape = (ONE,) + shape[1:] if len(shape) == 2 else shape
            ty = ArrayType(self.weighted({F64: 6, F32: 2, I64: 2}), len(shape))
            name = self.fresh("a" if len(shape) == 1 else "m")
            params.append((name, ty))
            shapes[name] = shape
        self.rng.shuffle(params)
        self.symbols = [d.base for d in symbols]
        self.mismatch = self.chance(self.P_MISMATCH_SET)
        return params, shapes

    def array_arg_sets(self, params, shapes):
        """Three argument sets; the size symbols get values per set. An array keeps its
        layout in every set, or is C-ordered in all (another layout is another compilation)."""
        layouts = {name: self.weighted({"C": 14, "strided": 3, "reversed": 2,
                                        "F": 1 * (isinstance(t, ArrayType) and t.ndim == 2)})
                   for name, t in params if isinstance(t, ArrayType)}
        sized = []
        for k, special in enumerate((0.0, 0.5, 0.15)):
            sizes = {b: self.extent_value(special) for b in self.symbols}
            sizes[1] = 1
            dims = {name: [sizes[d.base] for d in shape] for name, shape in shapes.items()}
            if self.mismatch and k == 2:
                odd = dims[self.pick(sorted(shapes))]
                odd[self.rng.randrange(len(odd))] += 1
            sized.append((special, dims))
        for name in shapes:
            if not all(_keeps_layout(layouts[name], dims[name]) for _, dims in sized):
                layouts[name] = "C"
        sets = []
        for special, dims in sized:
            sets.append([self.array_arg(t, tuple(dims[name]), special, layouts[name])
                         if isinstance(t, ArrayType) else Arg(t, self.value(t, special))
                         for name, t in params])
        return sets

    def array_arg(self, ty, shape, special, layout):
        """An array argument; more of its elements are special (-0.0, nan, inf) than in the
        scalar programs' arrays: whole-array code must treat each as numpy does."""
        count = int(np.prod(shape))
        values = [self.value(ty.dtype, special * 0.6) for _ in range(count)]
        return Arg(ty, (shape, values), layout)


def _keeps_layout(layout, shape):
    """Whether an array of `shape` in `layout` is not C-contiguous (numpy calls one whose
    reordered axes have one element, or no elements at all, C-contiguous)."""
    if 0 in shape:
        return layout == "C"
    return {"C": True, "strided": shape[-1] >= 2, "reversed": shape[0] >= 2,
            "F": len(shape) == 2 and min(shape) >= 2}[layout]


# -- the generator ----------------------------------------------------------------------------

class Env:
    """Visible variables by scope: name -> type; arrays also record the parameter they view
    (root) so stores into them mark that parameter as written."""

    def __init__(self, params, shapes=None):
        self.scopes = [dict(params)]
        self.roots = {name: name for name, t in params if isinstance(t, ArrayType)}
        self.shapes = dict(shapes or {})  # array name -> shape, where the generator knows it
        self.readonly = set()

    def push(self):
        self.scopes.append({})

    def pop(self):
        self.scopes.pop()

    def define(self, name, ty, root=None, readonly=False, shape=None):
        self.scopes[-1][name] = ty
        if isinstance(ty, ArrayType):
            self.roots[name] = root
            if shape is not None:
                self.shapes[name] = shape
        if readonly:
            self.readonly.add(name)

    def items(self):
        seen = {}
        for scope in self.scopes:
            seen.update(scope)
        return list(seen.items())

    def scalars(self, pred=lambda t: True, writable=False):
        return [(n, t) for n, t in self.items() if not isinstance(t, ArrayType) and t != NPBOOL
                and pred(t) and not (writable and n in self.readonly)]

    def arrays(self, pred=lambda t: True):
        return [(n, t) for n, t in self.items() if isinstance(t, ArrayType) and pred(t)]

    def of_type(self, ty):
        return [n for n, t in self.items() if t == ty]

    def type_of(self, name):
        return next(scope[name] for scope in reversed(self.scopes) if name in scope)


class Gen(ArrayGen):
    """One program's generator: a seeded random walk over the grammar. A fraction P_ARRAYS of
    programs (drawn from the seed apart from the walk, so that the others are the programs
    they were before arrays) also use whole-array code (ArrayGen)."""

    MAX_EXPR_DEPTH = 3
    MAX_NEST = 3
    # how often some constructs appear (tests may lower them to look past a known bug)
    RESULT_COUNTS = {1: 7, 2: 2, 3: 1}  # of the program's result (several: a tuple)
    HELPER_RESULT_COUNTS = {1: 7, 2: 3}
    P_LOOP_VAR_AFTER = 0.12  # a for loop's variable is read after the loop
    P_VARIABLE_STEP = 0.15  # range(a, b, e % 3 - 1): the step may be 0
    CHAIN_WEIGHT = 3  # chained comparisons among conditions
    MAX_CALLS = 3  # helper call sites per program (each is inlined: compile time)
    P_ARRAYS = 0.4  # programs with whole-array code

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.seed = seed
        self.arrays_on = random.Random(f"arrays {seed}").random() < self.P_ARRAYS
        self.symbols, self.mismatch, self.param_shapes, self.array_params_ = [], False, {}, []
        self.counter = 0
        self.helpers = []
        self.fn = None  # the Function being generated
        self.loops = []  # enclosing loops: ("for", var) or ("while", counter)
        self.nest = 0
        self.in_index = 0  # > 0 while generating an index (no loads inside indices)
        self.calls_left = self.MAX_CALLS

    # -- helpers ---------------------------------------------------------------------------

    def chance(self, p):
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(list(seq))

    def weighted(self, table):
        options = [(k, w) for k, w in table.items() if w > 0]
        return self.rng.choices([k for k, _ in options], [w for _, w in options])[0]

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    # -- programs --------------------------------------------------------------------------

    def program(self):
        if self.arrays_on:
            params, self.param_shapes = self.array_params()
        else:
            params = self.main_params()
        self.array_params_ = [(n, t) for n, t in params if isinstance(t, ArrayType)]
        array_types = [t for _, t in params if isinstance(t, ArrayType)]
        # array programs are smaller: an array operation is a loop nest to compile
        for k in range(self.pick((0, 0, 1) if self.arrays_on else (0, 0, 1, 1, 2))):
            self.helpers.append(self.helper(k, array_types))
        returns = self.return_types(array_types)
        count = self.rng.randint(2, 5) if self.arrays_on else self.rng.randint(3, 7)
        main = self.function("program", params, returns, count, self.param_shapes)
        if self.arrays_on:
            arg_sets = self.array_arg_sets(params, self.param_shapes)
        else:
            arg_sets = self.arg_sets(params)
        return Program(self.seed, self.helpers, main, arg_sets, self.arrays_on)

    def main_params(self):
        params = []
        for _ in range(self.rng.randint(1, 4)):
            ty = self.weighted({FLOAT: 5, INT: 4, BOOL: 1, F64: 2, F32: 2, I64: 2})
            params.append((self.fresh({INT: "n", BOOL: "b", I64: "k"}.get(ty, "x")), ty))
        for _ in range(self.pick((0, 1, 1, 2, 2, 3))):
            ty = ArrayType(self.weighted({F64: 5, F32: 2, I64: 2}), self.pick((1, 1, 2)))
            params.append((self.fresh("a" if ty.ndim == 1 else "m"), ty))
        self.rng.shuffle(params)
        return params

    def return_types(self, array_types):
        count = self.weighted(self.RESULT_COUNTS)
        out = []
        for _ in range(count):
            if array_types and self.chance(0.1):
                out.append(self.pick(array_types))
            else:
                out.append(self.weighted({FLOAT: 8, F64: 4, F32: 1, INT: 2, I64: 1, BOOL: 1}))
        return out

    def helper(self, k, array_types):
        params = [(self.fresh("p"), self.weighted({FLOAT: 4, INT: 2, F64: 1, F32: 1, I64: 1}))
                  for _ in range(self.rng.randint(1, 3))]
        shapes = {}
        if array_types and self.chance(0.3):
            if self.arrays_on:  # an array of the lengths of one of program's arrays
                source, ty = self.pick(self.array_params_)
                params.append((self.fresh("q"), ty))
                shapes[params[-1][0]] = self.param_shapes[source]
            else:
                params.append((self.fresh("q"), self.pick(array_types)))
        returns = [self.weighted({FLOAT: 4, INT: 1, F64: 2, F32: 1})
                   for _ in range(self.weighted(self.HELPER_RESULT_COUNTS))]
        return self.function(f"h{k}", params, returns, self.rng.randint(1, 4), shapes)

    def function(self, name, params, returns, count, shapes=None):
        self.fn = Function(name, params, returns, [], shapes=dict(shapes or {}))
        env = Env(params, shapes)
        body = self.block(env, count)
        if not body or not isinstance(body[-1], Return):
            body.append(self.ret(env))
        self.fn.body = body
        return self.fn

    # -- statements ------------------------------------------------------------------------

    def block(self, env, count):
        stmts = []
        for _ in range(count):
            new = self.statement(env)
            stmts += new
            if new and _jumps(new[-1]):
                break  # nothing after a bare return / break / continue
        return stmts

    def nested(self, env, count):
        env.push()
        self.nest += 1
        try:
            return self.block(env, count)
        finally:
            self.nest -= 1
            env.pop()

    def statement(self, env):
        compound = self.nest < self.MAX_NEST
        in_loop = bool(self.loops)
        kind = self.weighted({
            "assign": 18, "update": 14, "store": 12 if env.arrays() else 0,
            "alloc": 4, "if": 10 * compound, "for": 9 * compound, "while": 4 * compound,
            "rows": 2 * compound * bool(env.arrays(lambda t: t.ndim == 2)),
            "tuple": 5, "jump": 7 * in_loop, "return": 3 + 3 * in_loop, "assert": 1,
            "pass": 1, **self.array_statements(env, compound)})
        return getattr(self, "s_" + kind)(env)

    def s_assign(self, env):
        if self.helpers and self.calls_left > 0 and self.chance(0.15):
            return self.helper_call_stmt(env)
        ty = self.weighted({FLOAT: 5, INT: 4, F64: 2, F32: 2, I64: 2, BOOL: 1, NPBOOL: 1})
        if self.chance(0.1):
            row = self.row_view(env)
            if row:
                return row
        value = self.exact(env, ty)
        name = self.fresh("v")
        env.define(name, ty)
        return [Assign(name, value)]

    def row_view(self, env):
        matrices = env.arrays(lambda t: t.ndim == 2)
        if not matrices:
            return None
        name, ty = self.pick(matrices)
        row = Expr("index", ArrayType(ty.dtype, 1), args=[var(name, ty),
                                                          self.index(env, name, ty, 0)])
        new = self.fresh("r")
        shape = env.shapes.get(name)
        env.define(new, row.ty, root=env.roots.get(name), shape=shape and shape[1:])
        return [Assign(new, row)]

    def s_update(self, env):
        targets = env.scalars(lambda t: t != BOOL, writable=True)
        if not targets:
            return self.s_assign(env)
        name, ty = self.pick(targets)
        if self.chance(0.3):
            return [Assign(name, self.exact(env, ty))]
        op = self.weighted({"+": 5, "-": 4, "*": 3, "/": 1 * is_float(ty), "//": 1, "%": 1})
        value = self.expr(env, 1, "int" if is_int(ty) else None)
        if promote(ty, value.ty) != ty:
            value = self.exact(env, ty if ty != INT else self.pick((INT, BOOL)))
        return [AugAssign(name, op, value, ty)]

    def s_store(self, env):
        name, ty = self.pick(env.arrays())
        idx = [self.index(env, name, ty, axis) for axis in range(ty.ndim)]
        target = Expr("index", ty.dtype, args=[var(name, ty)] + idx)
        op = self.weighted({"=": 5, "+=": 4, "-=": 2, "*=": 2, "/=": 1 * (ty.dtype != I64)})
        if ty.dtype == I64 and self.chance(0.7):
            value = self.expr(env, 1, "int")
        else:
            value = self.expr(env, 1, "float" if ty.dtype != I64 else None)
        if env.roots.get(name) is not None:
            self.mark_written(env.roots[name])
        return [Store(target, op, value)]

    def mark_written(self, root):
        names = [n for n, _ in self.fn.params]
        if root in names:
            self.fn.writes.add(names.index(root))

    def s_alloc(self, env):
        dtype = self.weighted({F64: 6, F32: 2, I64: 2})
        ndim = self.pick((1, 1, 2))
        like = env.arrays()
        how = self.weighted({"zeros": 4, "ones": 2, "full": 2 * (ndim == 1), "empty": 3,
                             "like": 2 * bool(like)})
        if how == "like":
            source, sty = self.pick(like)
            dtype, ndim = (dtype, sty.ndim) if self.chance(0.5) else (sty.dtype, sty.ndim)
            fn = self.pick(("np.zeros_like", "np.ones_like", "np.empty_like"))
            dtype_kw = f", dtype={NP_DTYPE[dtype]}" if dtype != sty.dtype else ""
            alloc = Expr("attr", ArrayType(dtype, ndim), f"{fn}({{0}}{dtype_kw})",
                         [var(source, sty)])
            alloc.shape = env.shapes.get(source)
            how = "empty" if "empty" in fn else how
        else:
            alloc = self.alloc_expr(env, how, dtype, ndim)
        name = self.fresh("t")
        stmts = [Assign(name, alloc, fixed=(how == "empty"))]
        if how == "empty":
            stmts.append(self.fill(env, name, alloc.ty))
        env.define(name, alloc.ty, shape=alloc.shape)
        return stmts

    def alloc_expr(self, env, how, dtype, ndim):
        ty = ArrayType(dtype, ndim)
        dims = [self.size(env) for _ in range(ndim)]
        shape = "{0}" if ndim == 1 else "({0}, {1})"
        if how == "full":
            value = self.exact(env, {F64: FLOAT, F32: F32, I64: INT}[dtype])
            return Expr("attr", ty, f"np.full({shape}, {{{ndim}}})", dims + [value])
        kw = "" if dtype == F64 and self.chance(0.7) else f", dtype={NP_DTYPE[dtype]}"
        return Expr("attr", ty, f"np.{how}({shape}{kw})", dims)

    def fill(self, env, name, ty):
        """The fixed loop that writes every element of an np.empty array before any read."""
        env.push()
        loop_vars = [self.fresh("f") for _ in range(ty.ndim)]
        for v in loop_vars:
            env.define(v, INT, readonly=True)
        kind = "int" if ty.dtype == I64 else "float"
        value = self.expr(env, 2, kind)
        env.pop()
        target = Expr("index", ty.dtype, args=[var(name, ty)] + [var(v, INT) for v in loop_vars])
        stmt = Store(target, "=", value)
        for axis in reversed(range(ty.ndim)):
            size = f"len({name})" if axis == 0 else f"{name}.shape[{axis}]"
            stmt = For(loop_vars[axis], lit(f"range({size})", None), [stmt])
        stmt.fixed = True
        return stmt

    def size(self, env):
        """A bounded array size (sometimes negative: np.zeros(-1) raises ValueError)."""
        choice = self.weighted({"lit": 4, "len": 2 * bool(env.arrays()), "mod": 3})
        if choice == "lit":
            return lit(str(self.pick((0, 1, 2, 3, 3, 4, 5, -1) if self.chance(0.3)
                                     else (2, 3, 4))), INT)
        if choice == "len":
            name, ty = self.pick(env.arrays())
            return self.extent(name, ty, self.rng.randrange(ty.ndim))
        base = self.expr(env, 2, "int")
        if not is_int(base.ty):
            base = self.coerce(base, INT)
        modulus = lit(str(self.rng.randint(2, 6)), INT)
        size = Expr("bin", promote(base.ty, INT), "%", [base, modulus])
        if self.chance(0.15):
            size = Expr("bin", size.ty, "-", [size, lit("1", INT)])
        return size

    def extent(self, name, ty, axis):
        text = "len({0})" if axis == 0 and self.chance(0.6) else f"{{0}}.shape[{axis}]"
        if ty.ndim == 1 and self.chance(0.2):
            text = "{0}.size"
        return Expr("attr", INT, text, [var(name, ty)])

    def s_if(self, env):
        cond = self.cond(env)
        body = self.nested(env, self.rng.randint(1, 3))
        orelse = []
        if self.chance(0.4):
            orelse = self.nested(env, self.rng.randint(1, 3))
        elif self.chance(0.2):
            self.nest += 1
            orelse = self.s_if(env)
            self.nest -= 1
        return [If(cond, body, orelse)]

    def s_for(self, env):
        name = self.fresh("i")
        stmts = []
        keep_after = self.chance(self.P_LOOP_VAR_AFTER)
        if keep_after:  # the loop variable is read after the loop
            stmts.append(Assign(name, lit("-1", INT)))
            env.define(name, INT, readonly=True)
        iterable, variable_step = self.range_call(env)
        guard = []
        if variable_step:
            counter = self.fresh("g")
            stmts.append(Assign(counter, lit("0", INT), fixed=True))
            env.define(counter, INT, readonly=True)
            guard = [Guard(counter, 20)]
        env.push()
        env.define(name, INT, readonly=True)
        self.loops.append(("for", name))
        self.nest += 1
        body = guard + self.block(env, self.rng.randint(1, 3))
        self.nest -= 1
        self.loops.pop()
        env.pop()
        return stmts + [For(name, iterable, body)]

    def range_call(self, env):
        """range(...) of small ints, and whether its step is an expression (maybe 0)."""
        nargs = self.weighted({1: 4, 2: 3, 3: 3})
        args = [self.bounded(env) for _ in range(nargs)]
        variable = False
        if nargs == 3:
            if not self.chance(self.P_VARIABLE_STEP):
                step = self.pick((1, 2, 3, -1, -1, -2, -3))
                args[2] = lit(str(step), INT)
                if step < 0 and self.chance(0.7):
                    args[0], args[1] = args[1], args[0]
            else:
                base = self.expr(env, 2, "int")
                base = base if is_int(base.ty) else self.coerce(base, INT)
                args[2] = Expr("bin", promote(base.ty, INT), "-", [
                    Expr("bin", promote(base.ty, INT), "%", [base, lit("3", INT)]),
                    lit("1", INT)])  # may be 0: range() raises ValueError
                variable = True
        return Expr("call", None, "range", args), variable

    def bounded(self, env):
        """A small int: a literal, a length, an enclosing loop's variable, or e % k."""
        loops = [v for kind, v in self.loops if kind == "for"]
        choice = self.weighted({"lit": 4, "len": 3 * bool(env.arrays()),
                                "loop": 2 * bool(loops), "mod": 2})
        if choice == "lit":
            return lit(str(self.rng.randint(-2, 7)), INT)
        if choice == "len":
            name, ty = self.pick(env.arrays())
            return self.extent(name, ty, self.rng.randrange(ty.ndim))
        if choice == "loop":
            return var(self.pick(loops), INT)
        base = self.expr(env, 2, "int")
        base = base if is_int(base.ty) else self.coerce(base, INT)
        return Expr("bin", promote(base.ty, INT), "%", [base, lit(str(self.rng.randint(2, 6)),
                                                                  INT)])

    def s_rows(self, env):
        name, ty = self.pick(env.arrays(lambda t: t.ndim == 2))
        row = self.fresh("r")
        env.push()
        shape = env.shapes.get(name)
        env.define(row, ArrayType(ty.dtype, 1), root=env.roots.get(name), readonly=True,
                   shape=shape and shape[1:])
        self.loops.append(("rows", row))
        self.nest += 1
        body = self.block(env, self.rng.randint(1, 3))
        self.nest -= 1
        self.loops.pop()
        env.pop()
        return [For(row, var(name, ty), body)]

    def s_while(self, env):
        counter = self.fresh("w")
        style = self.weighted({"and": 3, "count": 2, "true": 2})
        cond = self.cond(env) if style == "and" else None
        limit = self.rng.randint(1, 12)
        init = Assign(counter, lit("0", INT), fixed=True)
        env.define(counter, INT, readonly=True)
        env.push()
        self.loops.append(("while", counter))
        self.nest += 1
        early = self.chance(0.6)
        first = early and self.chance(0.5)
        body = [If(self.cond(env), [self.ret(env)])] if first else []
        body += self.block(env, self.rng.randint(1, 3))
        if early and not first:
            body.append(If(self.cond(env), [self.ret(env)]))
        self.nest -= 1
        self.loops.pop()
        env.pop()
        loop = While(counter, cond, limit, style, body)
        loop.fixed = False
        return [init, loop]

    def s_tuple(self, env):
        targets = env.scalars(writable=True)
        if len(targets) >= 2 and self.chance(0.3):  # swap two variables of one type
            by_type = {}
            for n, t in targets:
                by_type.setdefault(t, []).append(n)
            pairs = [names for names in by_type.values() if len(names) >= 2]
            if pairs:
                a, b = self.rng.sample(self.pick(pairs), 2)
                ty = dict(targets)[a]
                return [TupleAssign([a, b], [var(b, ty), var(a, ty)])]
        types = [self.weighted({FLOAT: 3, INT: 2, F64: 1, F32: 1, I64: 1})
                 for _ in range(self.pick((2, 2, 3)))]
        values = [self.exact(env, t) for t in types]
        names = [self.fresh("u") for _ in types]
        for n, t in zip(names, types):
            env.define(n, t)
        return [TupleAssign(names, values)]

    def helper_call_stmt(self, env):
        fn = self.pick(self.helpers)
        value = self.helper_call(env, fn)
        if value is None:
            return [Simple("pass")]
        if len(fn.returns) == 1:
            name = self.fresh("v")
            env.define(name, fn.returns[0])
            return [Assign(name, value)]
        names = [self.fresh("u") for _ in fn.returns]
        for n, t in zip(names, fn.returns):
            env.define(n, t)
        return [TupleAssign(names, value)]

    def helper_call(self, env, fn):
        self.calls_left -= 1
        args = []
        for i, (pname, ty) in enumerate(fn.params):
            if isinstance(ty, ArrayType):
                candidates = env.arrays(lambda t: t == ty)
                if pname in fn.shapes and not self.chance(0.05):  # else: maybe a ValueError
                    candidates = [c for c in candidates if env.shapes.get(c[0]) ==
                                  fn.shapes[pname]]
                if not candidates:
                    return None
                name, _ = self.pick(candidates)
                if i in fn.writes and env.roots.get(name) is not None:
                    self.mark_written(env.roots[name])
                args.append(var(name, ty))
            else:
                args.append(self.exact(env, ty, 2))
        return Expr("call", fn.returns[0] if len(fn.returns) == 1 else None, fn.name, args)

    def s_jump(self, env):
        word = self.pick(("break", "break", "continue"))
        if self.chance(0.85):
            return [If(self.cond(env), [Simple(word)])]
        return [Simple(word)]

    def s_return(self, env):
        if self.nest == 0 and not self.chance(0.2):
            return self.s_assign(env)
        return [If(self.cond(env), [self.ret(env)])]

    def s_assert(self, env):
        return [Assert(self.cond(env))]

    def s_pass(self, env):
        return [Simple("pass")]

    def ret(self, env):
        values = []
        for ty in self.fn.returns:
            if isinstance(ty, ArrayType):
                values.append(self.array_result(env, ty))
            elif self.arrays_on and ty in (FLOAT, F64) and self.pool(env) and self.chance(0.5):
                e = self.e_reduce(env, 1, "float")  # a loss: its gradient is checked
                values.append(e if e.ty == ty else self.coerce(e, ty))
            else:
                values.append(self.exact(env, ty))
        return Return(values)

    def array_result(self, env, ty):
        known = [k for k in self.known(env) if k[1] == ty] if self.arrays_on else []
        if known and self.chance(0.6):
            return self.cast_array(self.aexpr(env, self.pick(known)[2], 1), ty.dtype)
        return var(self.pick(env.of_type(ty)), ty)

    # -- expressions -----------------------------------------------------------------------

    def exact(self, env, ty, depth=1):
        """An expression of exactly type `ty`."""
        if ty == BOOL:
            return self.bool_value(env, depth)
        if ty == NPBOOL:
            left = self.exact(env, self.pick((F64, F32, I64)), depth + 1)
            return Expr("cmp", NPBOOL, [self.pick(("<", "<=", "==", "!=", ">"))],
                        [left, self.expr(env, depth + 1)])
        e = self.expr(env, depth, "int" if is_int(ty) else "float")
        return e if e.ty == ty else self.coerce(e, ty)

    def coerce(self, e, ty):
        return call(CAST[ty], ty, e)

    def bool_value(self, env, depth):
        choice = self.weighted({"not": 2, "cmp": 3, "cast": 1, "var": 2})
        if choice == "var" and env.of_type(BOOL):
            return var(self.pick(env.of_type(BOOL)), BOOL)
        if choice == "not":
            return Expr("not", BOOL, args=[self.cond(env, depth + 1)])
        if choice == "cast":
            return call("bool", BOOL, self.expr(env, depth + 1))
        left = self.exact(env, self.pick((FLOAT, INT)), depth + 1)
        right = self.exact(env, self.pick((FLOAT, INT, BOOL)), depth + 1)
        return Expr("cmp", BOOL, [self.pick(("<", "<=", "==", "!=", ">", ">="))], [left, right])

    def expr(self, env, depth=0, kind=None):
        """A random scalar expression; kind "int"/"float" is a preference, not a promise."""
        if depth >= self.MAX_EXPR_DEPTH or self.chance(0.25 + 0.2 * depth):
            return self.leaf(env, kind)
        table = {"arith": 30, "div": 5 * (kind != "int"), "floordiv": 5, "pow": 6, "neg": 4,
                 "abs": 3, "math": 10, "np": 7, "minmax": 4, "ifexp": 5, "cast": 3,
                 "helper": 4 * bool(self.scalar_helpers()), "andor": 2,
                 "reduce": 8 * (self.arrays_on and not self.in_index and bool(self.pool(env)))}
        return getattr(self, "e_" + self.weighted(table))(env, depth + 1, kind)

    def scalar_helpers(self):
        if self.calls_left <= 0:
            return []
        return [f for f in self.helpers if len(f.returns) == 1 and f is not self.fn]

    def leaf(self, env, kind):
        want = {"int": is_int, "float": is_float, None: lambda t: True}[kind]
        scalars = env.scalars(want)
        arrays = env.arrays(lambda t: kind is None or (t.dtype == I64) == (kind == "int"))
        arrays = arrays if not self.in_index else []
        choice = self.weighted({"var": 6 * bool(scalars), "load": 3 * bool(arrays),
                                "lit": 3, "len": 1 * (kind != "float") * bool(env.arrays())})
        if choice == "var":
            name, ty = self.pick(scalars)
            return var(name, ty)
        if choice == "load":
            return self.load(env, *self.pick(arrays))
        if choice == "len":
            name, ty = self.pick(env.arrays())
            return self.extent(name, ty, self.rng.randrange(ty.ndim))
        return self.literal(kind)

    def literal(self, kind):
        kind = kind or self.pick(("int", "float", "float"))
        if kind == "int":
            if self.chance(0.05):
                return lit("True" if self.chance(0.5) else "False", BOOL)
            value = self.pick(BIG_INTS) if self.chance(0.05) else self.pick(SMALL_INTS)
            text = str(value) if value >= 0 else f"({value})"
            return lit(text, INT) if self.chance(0.9) else call("np.int64", I64, lit(text, INT))
        text = self.pick(EDGE_FLOATS) if self.chance(0.08) else self.pick(SMALL_FLOATS)
        text = f"({text})" if text.startswith("-") else text
        if self.chance(0.12):
            ty = self.pick((F64, F32))
            return call(CAST[ty], ty, lit(text, FLOAT))
        return lit(text, FLOAT)

    def load(self, env, name, ty):
        if ty.ndim == 2 and self.chance(0.15):  # m[i][j]: a row, then an element
            row = Expr("index", ArrayType(ty.dtype, 1), args=[var(name, ty),
                                                              self.index(env, name, ty, 0)])
            return Expr("index", ty.dtype, args=[row, self.index(env, name, ty, 1)])
        idx = [self.index(env, name, ty, axis) for axis in range(ty.ndim)]
        return Expr("index", ty.dtype, args=[var(name, ty)] + idx)

    def index(self, env, name, ty, axis):
        loops = [v for kind, v in self.loops if kind == "for"]
        choice = self.weighted({"mod": 8, "loop": 2 * bool(loops), "lit": 1})
        if choice == "loop":
            return var(self.pick(loops), INT)
        if choice == "lit":
            return lit(str(self.pick((0, 0, -1, 1, 2))), INT) if self.chance(0.9) else \
                lit("(-2)", INT)
        self.in_index += 1
        base = self.expr(env, 2, "int")
        self.in_index -= 1
        base = base if is_int(base.ty) else self.coerce(base, INT)
        extent = self.extent(name, ty, axis)
        return Expr("bin", promote(base.ty, INT), "%", [base, extent])

    def operands(self, env, depth, kind):
        return self.expr(env, depth, kind), self.expr(env, depth, kind)

    def e_arith(self, env, depth, kind):
        left, right = self.operands(env, depth, kind)
        return Expr("bin", promote(left.ty, right.ty), self.pick("+-*"), [left, right])

    def e_div(self, env, depth, kind):
        left, right = self.operands(env, depth, kind)
        return Expr("bin", float_of(promote(left.ty, right.ty)), "/", [left, right])

    def e_floordiv(self, env, depth, kind):
        left, right = self.operands(env, depth, kind)
        return Expr("bin", promote(left.ty, right.ty), self.pick(("//", "%")), [left, right])

    def e_pow(self, env, depth, kind):
        base = self.expr(env, depth, kind)
        choice = self.weighted({"nonneg": 3, "neg": 1 * (base.ty not in (I64,)), "float": 3,
                                "expr": 2 * is_float(base.ty)})
        if choice == "nonneg":  # int ** 2 stays an int
            exp = lit(str(self.pick((0, 1, 2, 2, 3))), INT)
            return Expr("bin", promote(base.ty, INT), "**", [base, exp])
        if choice == "neg":
            exp = lit(self.pick(("(-1)", "(-2)")), INT)
        elif choice == "float":
            exp = lit(self.pick(("0.5", "(-0.5)", "1.5", "0.3333333333333333", "(-2.5)", "2.0",
                                 "0.0", "1e300")), FLOAT)
        else:
            exp = self.expr(env, depth)
        return Expr("bin", float_of(promote(base.ty, exp.ty)), "**", [base, exp])

    def e_neg(self, env, depth, kind):
        e = self.expr(env, depth, kind)
        return Expr("neg", INT if e.ty == BOOL else e.ty, args=[e])

    def e_abs(self, env, depth, kind):
        e = self.expr(env, depth, kind)
        return call("abs", INT if e.ty == BOOL else e.ty, e)

    def e_math(self, env, depth, kind):
        if kind == "int" or self.chance(0.1):
            return call("math." + self.pick(INT_MATH), INT, self.expr(env, depth, "float"))
        if self.chance(0.25):
            name = self.pick(BINARY_MATH)
            return call("math." + name, FLOAT, *self.operands(env, depth, None))
        return call("math." + self.pick(UNARY_MATH), FLOAT, self.expr(env, depth, "float"))

    def np_operand(self, env, depth, kind):
        e = self.expr(env, depth, kind)
        return self.coerce(e, INT) if e.ty == BOOL else e  # numpy of a bool: float16

    def e_np(self, env, depth, kind):
        choice = self.weighted({"unary": 6, "round": 2, "abs": 2, "binary": 3})
        if choice == "binary":
            name = self.pick(NP_BINARY)
            left = self.np_operand(env, depth, kind)
            right = self.np_operand(env, depth, kind)
            ty = STRONG[promote(left.ty, right.ty)]
            if name == "power" and is_int(ty):  # numpy's integer power: see the report
                right = self.coerce(right, self.pick((FLOAT, F64)))
                ty = STRONG[promote(left.ty, right.ty)]
            if name not in ("maximum", "minimum"):
                ty = float_of(ty)
            return call("np." + name, ty, left, right)
        e = self.np_operand(env, depth, kind)
        if choice == "abs":
            return call("np.abs", STRONG[e.ty], e)
        if choice == "round":
            return call("np." + self.pick(NP_ROUNDING), STRONG[e.ty], e)
        return call("np." + self.pick(NP_UNARY), F32 if e.ty == F32 else F64, e)

    def e_minmax(self, env, depth, kind):
        first = self.expr(env, depth, kind)
        others = [self.exact(env, first.ty, depth) for _ in range(self.pick((1, 1, 2)))]
        return call(self.pick(("min", "max")), first.ty, first, *others)

    def e_ifexp(self, env, depth, kind):
        then = self.expr(env, depth, kind)
        return Expr("ifexp", then.ty, args=[self.cond(env, depth), then,
                                            self.exact(env, then.ty, depth)])

    def e_cast(self, env, depth, kind):
        ty = self.pick((INT, I64) if kind == "int" else (FLOAT, F64, F32, INT, I64))
        return self.coerce(self.expr(env, depth), ty)

    def e_helper(self, env, depth, kind):
        e = self.helper_call(env, self.pick(self.scalar_helpers()))
        return e if e is not None else self.leaf(env, kind)

    def e_andor(self, env, depth, kind):
        first = self.expr(env, depth, kind)
        return Expr("boolop", first.ty, self.pick(("and", "or")),
                    [first, self.exact(env, first.ty, depth)])

    def cond(self, env, depth=0):
        """A condition: comparisons (chained), and/or/not, truth values."""
        if depth >= 2:
            return self.comparison(env, depth)
        choice = self.weighted({"cmp": 10, "chain": self.CHAIN_WEIGHT, "not": 2, "andor": 4,
                                "truth": 2})
        if choice == "chain":
            return self.comparison(env, depth, self.pick((2, 2, 3)))
        if choice == "not":
            return Expr("not", BOOL, args=[self.cond(env, depth + 1)])
        if choice == "andor":
            parts = [self.cond(env, depth + 1) for _ in range(self.pick((2, 2, 3)))]
            return Expr("boolop", None, self.pick(("and", "or")), parts)
        if choice == "truth":
            flags = env.of_type(BOOL) + env.of_type(NPBOOL)
            if flags and self.chance(0.6):
                return var(self.pick(flags), None)
            return self.expr(env, depth + 1)
        return self.comparison(env, depth)

    def comparison(self, env, depth, count=1):
        operands = [self.expr(env, depth + 1) for _ in range(count + 1)]
        ops = [self.pick(("<", "<=", ">", ">=", "==", "!=")) for _ in range(count)]
        return Expr("cmp", None, ops, operands)

    # -- arguments -------------------------------------------------------------------------

    def arg_sets(self, params):
        layouts = {name: self.weighted({"C": 14, "strided": 3, "reversed": 2,
                                        "F": 1 * (isinstance(t, ArrayType) and t.ndim == 2)})
                   for name, t in params if isinstance(t, ArrayType)}
        return [[self.arg(t, special, layouts.get(name, "C")) for name, t in params]
                for special in (0.0, 0.5, 0.15)]

    def arg(self, ty, special, layout):
        if isinstance(ty, ArrayType):
            shape = [self.extent_value(special) for _ in range(ty.ndim)]
            # a strided, reversed or Fortran array keeps that layout (numpy calls an array
            # with one element along the reordered axis C-contiguous: another compilation)
            axes = {"C": [], "strided": [-1], "reversed": [0], "F": [0, 1]}[layout]
            shape = [max(e, 1 if axes else 0) for e in shape]  # (empty arrays are C too)
            for axis in axes:
                shape[axis] = max(shape[axis], 2)
            shape = tuple(shape)
            count = int(np.prod(shape))
            values = [self.value(ty.dtype, special * 0.4) for _ in range(count)]
            return Arg(ty, (shape, values), layout)
        return Arg(ty, self.value(ty, special))

    def extent_value(self, special):
        if special and self.chance(0.08):
            return self.pick((0, 1))
        return self.rng.randint(1, 5)

    def value(self, ty, special):
        if ty == BOOL:
            return self.chance(0.5)
        if is_int(ty):
            return self.pick(SPECIAL_INTS) if self.chance(special) else self.rng.randint(-3, 7)
        if self.chance(special):
            return self.pick(SPECIAL_FLOATS)
        return round(self.rng.uniform(-2.5, 2.5), self.pick((1, 3, 6)))


def generate(seed):
    """The program of `seed` (deterministic)."""
    return Gen(seed).program()

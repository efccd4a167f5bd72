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

`Program.render(checked=True)` is the oracle's text: the same program, where Python ints that
leave the int64 range are recorded (`_ck` keeps the array arguments' contents at that point:
compiled code may raise OverflowError there) and float powers with complex results raise
ComplexResult, a ValueError (`_pw`) — the two places where compiled code is specified to
raise instead of doing what CPython does.
"""

import copy
import random
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


@dataclass(frozen=True)
class ArrayType:
    dtype: str  # F64, F32 or I64
    ndim: int

    def __str__(self):
        return f"{self.dtype}[{', '.join(':' * self.ndim)}]"


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
    literal's text, `args` are sub-expressions; `ty` is a scalar type or an ArrayType."""

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

    def functions(self):
        return self.helpers + [self.main]

    def render(self, checked=False):
        lines = [PRELUDE + (CHECKS if checked else "")]
        for fn in self.functions():
            lines += ["", ""] + fn.lines(checked)
        return "\n".join(lines) + "\n"

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
    if e.kind == "bin" and e.op in ("//", "%") and is_float(e.ty):
        return True
    return e.kind == "call" and e.op in ROUNDING_CALLS and is_float(e.args[0].ty)


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


# -- the generator ----------------------------------------------------------------------------

class Env:
    """Visible variables by scope: name -> type; arrays also record the parameter they view
    (root) so stores into them mark that parameter as written."""

    def __init__(self, params):
        self.scopes = [dict(params)]
        self.roots = {name: name for name, t in params if isinstance(t, ArrayType)}
        self.readonly = set()

    def push(self):
        self.scopes.append({})

    def pop(self):
        self.scopes.pop()

    def define(self, name, ty, root=None, readonly=False):
        self.scopes[-1][name] = ty
        if isinstance(ty, ArrayType):
            self.roots[name] = root
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


class Gen:
    """One program's generator: a seeded random walk over the grammar."""

    MAX_EXPR_DEPTH = 3
    MAX_NEST = 3
    # how often some constructs appear (tests may lower them to look past a known bug)
    RESULT_COUNTS = {1: 7, 2: 2, 3: 1}  # of the program's result (several: a tuple)
    HELPER_RESULT_COUNTS = {1: 7, 2: 3}
    P_LOOP_VAR_AFTER = 0.12  # a for loop's variable is read after the loop
    P_VARIABLE_STEP = 0.15  # range(a, b, e % 3 - 1): the step may be 0
    CHAIN_WEIGHT = 3  # chained comparisons among conditions
    MAX_CALLS = 3  # helper call sites per program (each is inlined: compile time)

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.seed = seed
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
        params = self.main_params()
        array_types = [t for _, t in params if isinstance(t, ArrayType)]
        for k in range(self.pick((0, 0, 1, 1, 2))):
            self.helpers.append(self.helper(k, array_types))
        returns = self.return_types(array_types)
        main = self.function("program", params, returns, self.rng.randint(3, 7))
        arg_sets = self.arg_sets(params)
        return Program(self.seed, self.helpers, main, arg_sets)

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
        if array_types and self.chance(0.3):
            params.append((self.fresh("q"), self.pick(array_types)))
        returns = [self.weighted({FLOAT: 4, INT: 1, F64: 2, F32: 1})
                   for _ in range(self.weighted(self.HELPER_RESULT_COUNTS))]
        return self.function(f"h{k}", params, returns, self.rng.randint(1, 4))

    def function(self, name, params, returns, count):
        self.fn = Function(name, params, returns, [])
        env = Env(params)
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
            "pass": 1})
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
        env.define(new, row.ty, root=env.roots.get(name))
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
            how = "empty" if "empty" in fn else how
        else:
            alloc = self.alloc_expr(env, how, dtype, ndim)
        name = self.fresh("t")
        stmts = [Assign(name, alloc, fixed=(how == "empty"))]
        if how == "empty":
            stmts.append(self.fill(env, name, alloc.ty))
        env.define(name, alloc.ty)
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
        env.define(row, ArrayType(ty.dtype, 1), root=env.roots.get(name), readonly=True)
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
        for i, (_, ty) in enumerate(fn.params):
            if isinstance(ty, ArrayType):
                candidates = env.arrays(lambda t: t == ty)
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
                values.append(var(self.pick(env.of_type(ty)), ty))
            else:
                values.append(self.exact(env, ty))
        return Return(values)

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
                 "helper": 4 * bool(self.scalar_helpers()), "andor": 2}
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

"""Python backend: IR -> Python `ast` -> source (astor), loaded through linecache.

The emitted function is the readable form of the IR: one statement per operation, variables
named after the user's, constants inlined, structured control flow kept as if/for/while, and a
`# file:line` comment before the statements each source line produced. Loop-carried values and
if-results share one variable name with the block arguments they merge, as the user wrote them.
The source is registered with linecache under its own file name, so tracebacks, `inspect` and
pdb show it.

Names. The emitted code reads a few names from its module: `np`, `math`, the helpers below and
the builtins it calls (`float`, `range`, `min`, ...). The user's names never shadow them: a
parameter or local that would (a local `float` in code that calls float()) is renamed
(`float_1`), and a helper the function itself is named after (`def np(a)`, `def float(a)`) is
bound under another name (`_np`, `_float`) in that function's module, so the emitted function
keeps the user's name.
"""

import ast
import builtins
import functools
import itertools
import keyword
import linecache
import math
import re
import unicodedata

import astor
import numpy as np

from adcompile.ir import array_impl
from adcompile.ir import types as T
from adcompile.ir.interp import real_pow
from adcompile.ir.prims import ELEMENTWISE
from adcompile.ir.tape import Tape

_COMMENT = "__adcompile_comment__"
_counter = itertools.count()

_BINARY = {"add": ast.Add, "sub": ast.Sub, "mul": ast.Mult, "div": ast.Div,
           "floordiv": ast.FloorDiv, "mod": ast.Mod, "pow": ast.Pow}
_COMPARE = {"eq": ast.Eq, "ne": ast.NotEq, "lt": ast.Lt, "le": ast.LtE, "gt": ast.Gt,
            "ge": ast.GtE}
_CASTS = {("f64", True): "float", ("i64", True): "int", ("bool", True): "bool",
          ("f64", False): "np.float64", ("f32", False): "np.float32",
          ("i64", False): "np.int64", ("bool", False): "np.bool_"}
_BITWISE = {"bit_and": ast.BitAnd, "bit_or": ast.BitOr, "bit_xor": ast.BitXor}
# the numpy function an elementwise primitive's operator stands for (to predict its dtype)
_NUMPY_UFUNC = {prim: name for prim, name in array_impl.NUMPY_NAMES.items()}
_NP_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2"}


def emit_source(fn):
    """The Python source of IR function `fn`."""
    emitter = _Emitter(fn)
    text = emitter.source()
    clashes = emitter.used & emitter.local_names
    if clashes:  # a user's name shadows a global the code reads: emit again, renaming it
        text = _Emitter(fn, reserved=clashes).source()
    return text


def load(fn, source=None):
    """Compile the emitted source and return the Python function it defines."""
    source = source or emit_source(fn)
    filename = f"<adcompile:{fn.name}:{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    name = _function_name(fn)
    namespace = {alias: _GLOBALS[g] for g, alias in _aliases(name).items()
                 if alias != g or g in _HELPERS}
    exec(compile(source, filename, "exec"), namespace)
    generated = namespace[name]

    @functools.wraps(generated)
    def located(*args):
        try:
            return generated(*args)
        except Exception as e:
            _name_the_line(e, filename)
            raise

    return located


def _name_the_line(error, filename):
    """Add a note naming the user's line whose code raised `error` in the generated function
    (the `# file:line` comment above the generated line that raised)."""
    tb, lineno = error.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            lineno = tb.tb_lineno
        tb = tb.tb_next
    if lineno is None:
        return
    lines = linecache.getlines(filename)
    for text in reversed(lines[:lineno]):
        text = text.strip()
        if text.startswith("# ") and ":" in text:
            add_location_note(error, text[2:])
            return


def add_location_note(error, where):
    """Name `where` (file:line, or `grad of: <line>`) in the error's notes, once."""
    notes = getattr(error, "__notes__", ())
    if any(n.startswith("(compiled from ") for n in notes):
        return
    filename, _, line = where.rpartition(":")
    text = linecache.getline(filename, int(line)).strip() if line.isdigit() else ""
    error.add_note(f"(compiled from {where}" + (f": {text})" if text else ")"))


def _comment(loc):
    """`file:line`, or `grad of: <the primal line>` for adjoint code."""
    if not loc.startswith("grad of: "):
        return loc
    where = loc[len("grad of: "):]
    filename, _, line = where.rpartition(":")
    text = linecache.getline(filename, int(line)).strip() if line.isdigit() else ""
    return f"grad of: {text}" if text else loc


def _erf(x, name="erf"):
    fn = getattr(math, name)
    if isinstance(x, np.ndarray):
        return np.vectorize(fn, otypes=[x.dtype if x.dtype.kind == "f" else np.float64])(x)
    return type(x)(fn(x)) if isinstance(x, np.floating) else fn(x)


# what the emitted code may read from its module (besides keywords): helpers bound by load(),
# and builtins
_HELPERS = {"np": np, "math": math, "_erf": _erf, "_Tape": Tape, "_pow": real_pow,
            "_sum_to": array_impl.sum_to, "_stack": array_impl.stack,
            "_diagonal": array_impl.diagonal, "_strided": array_impl.strided,
            "_cofactor": array_impl.cofactor}
_BUILTINS = ("float", "int", "bool", "range", "min", "max", "abs", "sum")
_GLOBALS = {**_HELPERS, **{b: getattr(builtins, b) for b in _BUILTINS}}


def _function_name(fn):
    """The name of the emitted function: the IR function's, made an identifier if need be."""
    name = _identifier(fn.name)
    return name + "_" if keyword.iskeyword(name) else name


def _identifier(text):
    """`text` (NFKC-normalised, as Python normalises identifiers) with every character that
    cannot appear in an identifier replaced by `_`, and a leading digit prefixed."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
        text = "".join(c if ("a" + c).isidentifier() else "_" for c in text)
    else:
        text = re.sub(r"\W", "_", text)
    if not text:
        return "t"
    return "v" + text if text[0].isdigit() else text


def _aliases(function_name):
    """global -> the name the emitted code reads it by: its own, unless the function is called
    that (then an underscore is prepended; locals never start with one)."""
    aliases = {}
    for g in _GLOBALS:
        alias = g
        while alias == function_name or alias in _GLOBALS and alias != g:
            alias = "_" + alias
        aliases[g] = alias
    return aliases


class _Emitter:
    def __init__(self, fn, reserved=()):
        self.fn = fn
        self.fn_name = _function_name(fn)
        self.aliases = _aliases(self.fn_name)
        self.names = {}
        # locals never start with "_", so they can only shadow np, math and the builtins:
        # emit_source() finds which of those the code reads and any local called so, and
        # emits the function again with them reserved
        self.taken = set(keyword.kwlist) | set(reserved)
        self.next_suffix = {}  # base name -> the next suffix fresh() tries
        self.local_names = set()
        self.used = set()  # the globals the code reads (by their aliases)
        self.last_loc = None
        self.like, self.hidden = _allocations_like(fn)

    # -- names ------------------------------------------------------------------------------
    def fresh(self, hint):
        """A new variable name from `hint`: the hint itself (made an identifier), or the hint
        with the smallest numeric suffix `_k` not yet taken."""
        base = _identifier((hint or "t").lstrip("_"))
        k = self.next_suffix.get(base, 0)
        name = f"{base}_{k}" if k else base
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.next_suffix[base] = k + 1
        self.taken.add(name)
        self.local_names.add(name)
        return name

    def name_of(self, value):
        name = self.names.get(value)
        if name is None:
            name = self.names[value] = self.fresh(value.name)
        return name

    def glob(self, name):
        """A read of global `name` (a helper or a builtin)."""
        alias = self.aliases[name]
        self.used.add(alias)
        return ast.Name(alias, ast.Load())

    def call(self, name, args, **kwargs):
        """A call of global `name`, or of an attribute of one (`np.sin`)."""
        head, *rest = name.split(".")
        func = self.glob(head)
        for part in rest:
            func = _attr(func, part)
        keywords = [ast.keyword(k, v) for k, v in kwargs.items()]
        return ast.Call(func, list(args), keywords)

    def to_type(self, node, t):
        """`node` converted to scalar type `t` (`float(node)`, `np.float32(node)`)."""
        return self.call(_CASTS[(t.dtype, t.weak)], [node])

    def literal(self, value, type):
        if isinstance(value, float) and math.isnan(value) and math.copysign(1.0, value) < 0:
            node = ast.UnaryOp(ast.USub(), self.call("float", [ast.Constant("nan")]))
        elif isinstance(value, float) and not math.isfinite(value):  # the NaN keeps its sign
            node = self.call("float", [ast.Constant(repr(value))])
        elif not isinstance(value, bool) and (value < 0 if isinstance(value, int) else
                                              math.copysign(1.0, value) < 0):
            # (an int need not fit a float: int(1.8e308) * 10 folded is one constant)
            # a unary minus, so that astor parenthesises it: (-2.0) ** y, not -2.0 ** y
            node = ast.UnaryOp(ast.USub(), self.literal(-value, None))
        elif isinstance(value, int) and not isinstance(value, bool) and \
                value.bit_length() > 1000:  # no decimal repr past 4300 digits
            node = self.call("int", [ast.Constant(hex(value)), ast.Constant(16)])
        else:
            node = ast.Constant(value)
        if isinstance(type, T.Scalar) and not type.weak:
            return self.to_type(node, type)
        return node

    def expr(self, value):
        owner = value.owner
        if owner is not None and owner.prim == "const":
            return self.literal(owner.attrs["value"], owner.attrs["type"])
        return ast.Name(self.name_of(value), ast.Load())

    def target(self, value):
        return ast.Name(self.name_of(value), ast.Store())

    # -- functions and blocks ---------------------------------------------------------------
    def source(self):
        args = [ast.arg(self.name_of(p)) for p in self.fn.params]
        body = self.block(self.fn.body)
        fdef = ast.FunctionDef(self.fn_name, ast.arguments([], args, None, [], [], None, []),
                               body or [ast.Pass()], [], None)
        text = astor.to_source(ast.Module([fdef], []))  # astor needs no line numbers
        return re.sub(r"(?m)^(\s*)(\"\"\"|'|\")" + _COMMENT + r" (.*?)(\"\"\"|'|\")$",
                      r"\1# \3", text)

    def block(self, block):
        out = []
        for op in block.ops:
            if op.loc and op.loc != self.last_loc and op.prim not in ("const", "yield"):
                self.last_loc = op.loc
                out.append(ast.Expr(ast.Constant(f"{_COMMENT} {_comment(op.loc)}")))
            out.extend(self.op(op))
        return out

    def op(self, op):
        if op in self.hidden:
            return []  # a size only np.zeros_like(x) and the like read
        method = getattr(self, "op_" + op.prim, None)
        if method is not None:
            return method(op)
        return [ast.Assign([self.target(op.result)], self.value_expr(op))]

    # -- expressions for pure ops -----------------------------------------------------------
    def value_expr(self, op):
        prim, args = op.prim, [self.expr(v) for v in op.operands]
        if prim in array_impl.ARRAY_PRIMS or (
                op.results and isinstance(op.result.type, T.Array) and prim in ELEMENTWISE):
            return self.array_expr(op, args)
        if prim in _BINARY:
            return self.binary(op, args)
        if prim in _COMPARE:
            return ast.Compare(args[0], [_COMPARE[prim]()], [args[1]])
        if prim == "neg":
            return ast.UnaryOp(ast.USub(), args[0])
        if prim == "not":
            return ast.UnaryOp(ast.Not(), args[0])
        if prim == "truth":
            return self.call("bool", args)
        if prim == "cast":
            to = op.attrs["to"]
            return self.to_type(args[0], to)
        if prim in ("min", "max"):
            return self.cast_to(op, self.call(prim, args))
        if prim == "abs" and not op.attrs.get("lib"):
            return self.call("abs", args)
        if prim == "shape":
            return _subscript(_attr(args[0], "shape"), ast.Constant(op.attrs["axis"]))
        if prim == "size":
            return _attr(args[0], "size")
        if prim == "load":
            index = args[1] if len(args) == 2 else ast.Tuple(args[1:], ast.Load())
            return _subscript(args[0], index)
        if prim == "alloc":
            return self.alloc(op, args)
        if prim == "tuple":
            return ast.Tuple(args, ast.Load())
        if prim == "tape_new":
            return self.call("_Tape", [ast.Constant(op.attrs["item"])])
        if prim == "tape_size":
            return _attr(args[0], "top")
        if prim == "tape_pop":
            t = op.result.type
            node = ast.Call(_attr(args[0], "pop"), [], [])
            return self.to_type(node, t) if isinstance(t, T.Scalar) else node
        if prim == "select":
            return self.cast_to(op, ast.IfExp(args[0], args[1], args[2]), op.operands[1:])
        if prim == "sign":
            return self.numpy_call(op, "sign", args)
        if prim == "and":
            return ast.BoolOp(ast.And(), args)
        if prim == "tuple_get":
            return _subscript(args[0], ast.Constant(op.attrs["index"]))
        return self.math(op, args)

    def binary(self, op, args):
        t = op.result.type
        if op.prim == "div" and op.attrs.get("ieee"):  # derivative code: inf, not an error
            return self.numpy_call(op, "divide", args)
        if op.prim == "pow":
            lib = op.attrs.get("lib")
            types = [v.type for v in op.operands]
            if t.is_float and all(u.is_int or u.dtype == "bool" for u in types):
                # integers to a power that may be negative: computed in floats
                args, types = [self.to_type(args[0], t), args[1]], [t, types[1]]
            if lib == "math":  # math.pow: ValueError where ** is complex or divides by zero
                node = self.call("math.pow", args)  # a Python float
                return node if t == T.FLOAT else self.to_type(node, t)
            if lib == "numpy" or op.attrs.get("ieee"):  # ieee: derivative code
                return self.numpy_call(op, "power", args, tuple(types))
            if _may_be_complex(op, types):
                return self.call("_pow", args)
        node = ast.BinOp(args[0], _BINARY[op.prim](), args[1])
        if t.dtype == "i64" and not t.weak and all(v.type.dtype == "bool"
                                                   for v in op.operands):
            return self.call("np.int64", [node])
        return node

    # -- whole arrays: numpy expressions ----------------------------------------------------
    def array_expr(self, op, args):
        prim, attrs, t = op.prim, op.attrs, op.result.type
        if prim in _BINARY:
            node = ast.BinOp(args[0], _BINARY[prim](), args[1])
        elif prim in _COMPARE:
            node = ast.Compare(args[0], [_COMPARE[prim]()], [args[1]])
        elif prim in _BITWISE:
            node = ast.BinOp(args[0], _BITWISE[prim](), args[1])
        elif prim == "neg":
            node = ast.UnaryOp(ast.USub(), args[0])
        elif prim == "invert":
            node = ast.UnaryOp(ast.Invert(), args[0])
        elif prim == "not":
            node = self.call("np.logical_not", args)
        elif prim == "select":
            node = self.call("np.where", args)
        elif prim == "cast":
            return ast.Call(_attr(args[0], "astype"), [self.dtype(t.dtype)], [])
        elif prim in ("erf", "erfc"):
            node = self.call("_erf", args + [ast.Constant(prim)])
        elif prim in ELEMENTWISE:
            node = self.call(f"np.{array_impl.NUMPY_NAMES[prim]}", args)
        else:
            return self.array_call(op, args)
        types = [v.type for v in op.operands]
        if prim != "select" and _numpy_dtype(_NUMPY_UFUNC.get(prim, prim), tuple(
                T.Scalar(u.dtype, u.weak) for u in types)) != T.NUMPY[t.dtype]:
            node = ast.Call(_attr(node, "astype"), [self.dtype(t.dtype)], [])
        return node

    def dtype(self, dtype):
        return _attr(self.glob("np"), T.NUMPY[dtype].name)

    def array_call(self, op, args):
        prim, attrs, t = op.prim, op.attrs, op.result.type if op.results else None
        if prim in ("sum", "mean", "prod", "amax", "amin", "argmax", "argmin"):
            name = {"amax": "max", "amin": "min"}.get(prim, prim)
            axis = attrs.get("axis")
            kwargs = {}
            if axis is not None:
                axis = axis[0] if len(axis) == 1 else ast.Tuple(
                    [ast.Constant(a) for a in axis], ast.Load())
                kwargs["axis"] = axis if isinstance(axis, ast.AST) else ast.Constant(axis)
            if attrs.get("keepdims"):
                kwargs["keepdims"] = ast.Constant(True)
            return self.call(f"np.{name}", args, **kwargs)
        if prim == "sum_to":
            return self.call("_sum_to", [args[0], _attr(args[1], "shape")]) \
                if isinstance(op.operands[1].type, T.Array) else self.to_type(
                    self.call("np.sum", [args[0]]), t)
        if prim == "broadcast_to" and op in self.like:  # np.broadcast_to(g, t.shape)
            return self.call("np.broadcast_to", [args[0],
                                                 _attr(self.expr(self.like[op]), "shape")])
        if prim == "reshape" and attrs.get("ravel"):
            return self.call("np.ravel", [args[0]])
        if prim in ("broadcast_to", "reshape"):
            shape = ast.Tuple(args[1:], ast.Load())
            return self.call(f"np.{prim}", [args[0], shape])
        if prim == "transpose":
            perm = attrs["perm"]
            if list(perm) == list(range(len(perm)))[::-1]:
                return _attr(args[0], "T")
            return self.call("np.transpose", [args[0], ast.Tuple(
                [ast.Constant(p) for p in perm], ast.Load())])
        if prim == "slice":
            return _subscript(args[0], self.index(attrs["index"], args[1:]))
        if prim == "take":
            index = args[1] if len(args) == 2 else ast.Tuple(args[1:], ast.Load())
            return _subscript(args[0], index)
        if prim == "mask":
            return _subscript(args[0], args[1])
        if prim == "matmul":
            return ast.BinOp(args[0], ast.MatMult(), args[1])
        if prim == "trace":
            return self.call("np.trace", args)
        if prim == "diagonal":
            return self.call("_diagonal", args)
        if prim == "strided":
            return self.call("_strided", args)
        if prim == "cofactor":
            return self.call("_cofactor", args)
        if prim in ("det", "inv", "solve"):
            return self.call(f"np.linalg.{prim}", args)
        if prim == "concatenate":
            return self.call("np.concatenate", [ast.List(args, ast.Load())],
                             axis=ast.Constant(attrs["axis"]))
        if prim == "stack":
            items = ast.List(args, ast.Load())
            if attrs["axis"] == 0:
                return self.call("np.array", [items], dtype=self.dtype(t.dtype))
            return self.call("_stack", [items, ast.Constant(attrs["axis"]),
                                        self.dtype(t.dtype)])
        if prim in ("arange", "linspace"):
            return self.call(f"np.{prim}", args, dtype=self.dtype(t.dtype))
        if prim == "copy":
            return ast.Call(_attr(args[0], "copy"), [], [])
        raise NotImplementedError(prim)

    def index(self, layout, values):
        """A subscript for a `slice` op's index layout and its integer operands."""
        values, items = list(values), []
        for item in layout:
            if item[0] == "int":
                items.append(values.pop(0))
            elif item[0] == "new":
                items.append(ast.Constant(None))
            else:
                bounds = [values.pop(0) if present else None for present in item[1:]]
                items.append(ast.Slice(*bounds))
        if not items:
            return ast.Constant(Ellipsis)
        return items[0] if len(items) == 1 else ast.Tuple(items, ast.Load())

    def op_assign(self, op):
        dst, value = [self.expr(v) for v in op.operands]
        return [ast.Assign([ast.Subscript(dst, ast.Constant(Ellipsis), ast.Store())], value)]

    def op_iadd(self, op):
        dst, value = [self.expr(v) for v in op.operands]
        target = ast.Name(dst.id, ast.Store()) if isinstance(dst, ast.Name) else dst
        fn = _BINARY[op.attrs.get("op", "add")]()
        fresh = []  # allocated empty: its elements start from 0 (passes/first_store.py)
        if op.attrs.get("fresh"):
            fresh = [ast.Assign([ast.Subscript(dst, ast.Constant(Ellipsis), ast.Store())],
                                ast.Constant(0.0))]
        return fresh + [ast.AugAssign(ast.Subscript(target, ast.Constant(Ellipsis), ast.Store()),
                                      fn, value)]

    def op_scatter_add(self, op):
        dst, *index, value = [self.expr(v) for v in op.operands]
        idx = index[0] if len(index) == 1 else ast.Tuple(index, ast.Load())
        return [ast.Expr(self.call("np.add.at", [dst, idx, value]))]

    def op_mask_add(self, op):
        dst, mask, value = [self.expr(v) for v in op.operands]
        return [ast.AugAssign(ast.Subscript(dst, mask, ast.Store()), ast.Add(), value)]

    def cast_to(self, op, node, operands=None):
        t = op.result.type
        if all(v.type == t for v in (op.operands if operands is None else operands)):
            return node
        return self.to_type(node, t)

    def math(self, op, args):
        if op.attrs.get("lib") == "math":
            name = {"abs": "fabs"}.get(op.prim, op.prim)
            node = self.call(f"math.{name}", args)  # a Python float (int for floor/ceil/trunc)
            returns = T.INT if name in ("floor", "ceil", "trunc") else T.FLOAT
            return node if op.result.type == returns else self.to_type(node, op.result.type)
        if op.prim in ("erf", "erfc"):
            return self.call("_erf", args + [ast.Constant(op.prim)])
        return self.numpy_call(op, _NP_NAMES.get(op.prim, op.prim), args)

    def numpy_call(self, op, name, args, types=None):
        """`np.name(args)` (of operands of IR types `types`, the op's by default), converted
        to the op's type where numpy's result differs from it (a Python number for a weak
        type: `float(np.sign(x))`)."""
        node = self.call(f"np.{name}", args)
        t = op.result.type
        types = types or tuple(v.type for v in op.operands)
        if t.weak or _numpy_dtype(name, types) != T.NUMPY[t.dtype]:
            return self.to_type(node, t)
        return node

    def alloc(self, op, args):
        like = self.like.get(op)
        if like is not None:
            fn = {0: "np.zeros_like", 1: "np.ones_like", None: "np.empty_like"}[
                op.attrs["fill"]]
            # (the dtype, as numpy's zeros_like would keep a big-endian array's byte order)
            return self.call(fn, [self.expr(like)], dtype=self.dtype(op.attrs["dtype"]))
        ndim = op.attrs["ndim"]
        shape = ast.Tuple(args[:ndim], ast.Load())
        dtype = _attr(self.glob("np"), T.NUMPY[op.attrs["dtype"]].name)
        fill = op.attrs["fill"]
        if fill == "value":
            return self.call("np.full", [shape, args[ndim]], dtype=dtype)
        fn = {0: "np.zeros", 1: "np.ones", None: "np.empty"}[fill]
        return self.call(fn, [shape], dtype=dtype)

    # -- statements -------------------------------------------------------------------------
    def op_const(self, op):
        return []

    def op_store(self, op):
        array, *index, value = [self.expr(v) for v in op.operands]
        idx = index[0] if len(index) == 1 else ast.Tuple(index, ast.Load())
        target = ast.Subscript(array, idx, ast.Store())
        return [ast.Assign([target], value)]

    def op_tape_push(self, op):
        tape, value = [self.expr(v) for v in op.operands]
        return [ast.Expr(ast.Call(_attr(tape, "push"), [value], []))]

    def op_tape_reserve(self, op):
        tape, *bounds = [self.expr(v) for v in op.operands]
        return [ast.Expr(ast.Call(_attr(tape, "reserve"), bounds, []))]

    def op_add_at(self, op):
        array, *index, value = [self.expr(v) for v in op.operands]
        idx = index[0] if len(index) == 1 else ast.Tuple(index, ast.Load())
        target = ast.Subscript(array, idx if index else ast.Constant(Ellipsis), ast.Store())
        return [ast.AugAssign(target, ast.Add(), value)]

    def op_assert(self, op):
        message = op.attrs.get("message") or f"assert {op.attrs.get('source', '')} failed"
        exception = op.attrs.get("exception")
        if exception is None:
            return [ast.Assert(self.expr(op.operands[0]), ast.Constant(message))]
        error = ast.Call(ast.Name(exception, ast.Load()), [ast.Constant(message)], [])
        fails = ast.UnaryOp(ast.Not(), self.expr(op.operands[0]))
        return [ast.If(fails, [ast.Raise(error, None)], [])]

    def op_return(self, op):
        return [ast.Return(self.expr(op.operands[0]) if op.operands else None)]

    def op_if(self, op):
        for r in op.results:
            self.name_of(r)
        then = self.region_with_yield(op.regions[0], op.results)
        other = self.region_with_yield(op.regions[1], op.results)
        return [ast.If(self.expr(op.operands[0]), then or [ast.Pass()], other)]

    def op_for(self, op):
        body = op.regions[0]
        fill = self.slice_fill(op)
        if fill is not None:
            return fill
        self.name_of(body.params[0])
        for r, p in zip(op.results, body.params[1:]):
            self.names[p] = self.name_of(r)
        inits = self.assign_all(op.results, op.operands[3:])
        start, stop, step = [self.expr(v) for v in op.operands[:3]]
        range_args = [start, stop, step]
        if _is_literal(step, 1):
            range_args = [stop] if _is_literal(start, 0) else [start, stop]
        loop = ast.For(self.target(body.params[0]), self.call("range", range_args),
                       self.region_with_yield(body, op.results) or [ast.Pass()], [], None)
        return inits + [loop]

    def slice_fill(self, op):
        """`a[start:stop] = v` for a loop that only stores one outside value into consecutive
        elements known to be in bounds (the zero-filling loops of passes/accumulate.py)."""
        body = op.regions[0]
        index = body.params[0]
        if op.results or len(body.ops) != 2 or not _is_literal(self.expr(op.operands[2]), 1):
            return None
        store = body.ops[0]
        if store.prim != "store" or not store.attrs.get("in_bounds") or \
                len(store.operands) != 3 or store.operands[1] is not index or \
                any(v is index or v.owner in body.ops for v in (store.operands[0],
                                                                  store.operands[2])):
            return None
        start, stop = [self.expr(v) for v in op.operands[:2]]
        part = ast.Slice(None if _is_literal(start, 0) else start, stop, None)
        target = ast.Subscript(self.expr(store.operands[0]), part, ast.Store())
        return [ast.Assign([target], self.expr(store.operands[2]))]

    def op_while(self, op):
        head, body = op.regions
        for r, hp, bp in zip(op.results, head.params, body.params):
            self.names[hp] = self.names[bp] = self.name_of(r)
        inits = self.assign_all(op.results, op.operands)
        cond_op = head.terminator
        stmts = self.block_without_terminator(head)
        stmts.append(ast.If(ast.UnaryOp(ast.Not(), self.expr(cond_op.operands[0])),
                            [ast.Break()], []))
        stmts += self.region_with_yield(body, op.results)
        return inits + [ast.While(ast.Constant(True), stmts, [])]

    def block_without_terminator(self, block):
        saved = block.ops
        try:
            block.ops = saved[:-1]
            return self.block(block)
        finally:
            block.ops = saved

    def region_with_yield(self, block, targets):
        stmts = self.block_without_terminator(block)
        yielded = block.terminator.operands
        return stmts + self.assign_all(targets, yielded)

    def assign_all(self, targets, values):
        pairs = [(t, v) for t, v in zip(targets, values)
                 if self.name_of(t) != (self.names.get(v) if v.owner is None or
                                        v.owner.prim != "const" else None)]
        if not pairs:
            return []
        if len(pairs) == 1:
            t, v = pairs[0]
            return [ast.Assign([self.target(t)], self.expr(v))]
        return [ast.Assign([ast.Tuple([self.target(t) for t, _ in pairs], ast.Store())],
                           ast.Tuple([self.expr(v) for _, v in pairs], ast.Load()))]


def _allocations_like(fn):
    """Derivative code's allocations shaped exactly like an array of their dtype ({alloc op:
    that array}), and the `shape` ops only those read (not emitted: np.zeros_like(x) says it
    all)."""
    from adcompile.ir.nodes import walk

    like, readers = {}, {}
    if getattr(fn, "body", None) is None:
        return like, set()
    for op in walk(fn.body):
        for v in op.operands:
            readers.setdefault(v, []).append(op)
        if op.prim == "broadcast_to":
            dims = op.operands[1:]
        elif op.prim != "alloc" or op.attrs["fill"] == "value" or \
                (op.loc and not op.loc.startswith("grad of")):
            continue  # (the user's own np.zeros((n, m)) stays as written)
        else:
            dims = op.operands[: op.attrs["ndim"]]
        owners = [d.owner for d in dims]
        if not dims or any(o is None or o.prim != "shape" for o in owners):
            continue
        arrays = {o.operands[0] for o in owners}
        if len(arrays) != 1:
            continue
        (array,) = arrays
        if [o.attrs["axis"] for o in owners] == list(range(array.type.ndim)) and \
                (op.prim == "broadcast_to" or array.type.dtype == op.attrs["dtype"]):
            like[op] = array
    hidden = set()
    for alloc in like:
        dims = alloc.operands[1:] if alloc.prim == "broadcast_to" else alloc.operands
        for d in dims:
            if all(reader in like for reader in readers.get(d, ())):
                hidden.add(d.owner)
    return like, hidden


def _may_be_complex(op, types):
    """Whether Python's `a ** b` (of IR types `types`) can be a complex number here: a
    Python-number base that may be negative, raised to a Python float that may be fractional."""
    base, exponent = op.operands
    if not (op.result.type.weak and types[0].weak and types[0].dtype != "bool" and
            types[1].weak and types[1].is_float):
        return False
    b, e = _constant(base), _constant(exponent)
    if e is not None and (not math.isfinite(e) or float(e).is_integer()):
        return False
    return b is None or b < 0


def _constant(value):
    owner = value.owner
    return owner.attrs["value"] if owner is not None and owner.prim == "const" else None


@functools.lru_cache(maxsize=None)
def _numpy_dtype(name, types):
    """The dtype numpy's `np.name` returns for operands of IR scalar types `types`."""
    samples = [T.NUMPY[t.dtype].type(1) if not t.weak else
               {"bool": True, "i64": 1, "f64": 1.0}[t.dtype] for t in types]
    with np.errstate(all="ignore"):
        try:
            return np.asarray(getattr(np, name)(*samples)).dtype
        except (TypeError, ValueError):
            return None


def _is_literal(node, value):
    return isinstance(node, ast.Constant) and node.value == value and \
        type(node.value) is type(value)


def _attr(node, name):
    return ast.Attribute(node, name, ast.Load())


def _subscript(node, index):
    return ast.Subscript(node, index, ast.Load())

"""Python backend: IR -> Python `ast` -> source (astor), loaded through linecache.

The emitted function is the readable form of the IR: one statement per operation, variables
named after the user's, constants inlined, structured control flow kept as if/for/while, and a
`# file:line` comment before the statements each source line produced. Loop-carried values and
if-results share one variable name with the block arguments they merge, as the user wrote them.
The source is registered with linecache under its own file name, so tracebacks, `inspect` and
pdb show it.
"""

import ast
import itertools
import keyword
import linecache
import math
import re

import astor
import numpy as np

from adcompile.ir import types as T

_COMMENT = "__adcompile_comment__"
_counter = itertools.count()

_BINARY = {"add": ast.Add, "sub": ast.Sub, "mul": ast.Mult, "div": ast.Div,
           "floordiv": ast.FloorDiv, "mod": ast.Mod, "pow": ast.Pow}
_COMPARE = {"eq": ast.Eq, "ne": ast.NotEq, "lt": ast.Lt, "le": ast.LtE, "gt": ast.Gt,
            "ge": ast.GtE}
_CASTS = {("f64", True): "float", ("i64", True): "int", ("bool", True): "bool",
          ("f64", False): "np.float64", ("f32", False): "np.float32",
          ("i64", False): "np.int64", ("bool", False): "np.bool_"}
_NP_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2"}


def emit_source(fn):
    """The Python source of IR function `fn`."""
    return _Emitter(fn).source()


def load(fn, source=None):
    """Compile the emitted source and return the Python function it defines."""
    source = source or emit_source(fn)
    filename = f"<adcompile:{fn.name}:{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    from adcompile.ir.tape import Tape

    namespace = {"np": np, "math": math, "_erf": _erf, "_Tape": Tape}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[fn.name]


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
    return type(x)(fn(x)) if isinstance(x, np.floating) else fn(x)


class _Emitter:
    def __init__(self, fn):
        self.fn = fn
        self.names = {}
        self.taken = set(keyword.kwlist) | {"np", "math", "_erf", "_Tape"}
        self.last_loc = None

    # -- names ------------------------------------------------------------------------------
    def fresh(self, hint):
        base = re.sub(r"\W", "_", (hint or "t").lstrip("_")) or "t"
        if base[0].isdigit():
            base = "v" + base
        name, k = base, 1
        while name in self.taken:
            name = f"{base}_{k}"
            k += 1
        self.taken.add(name)
        return name

    def name_of(self, value):
        name = self.names.get(value)
        if name is None:
            name = self.names[value] = self.fresh(value.name)
        return name

    def expr(self, value):
        owner = value.owner
        if owner is not None and owner.prim == "const":
            return _literal(owner.attrs["value"], owner.attrs["type"])
        return ast.Name(self.name_of(value), ast.Load())

    def target(self, value):
        return ast.Name(self.name_of(value), ast.Store())

    # -- functions and blocks ---------------------------------------------------------------
    def source(self):
        args = [ast.arg(self.name_of(p)) for p in self.fn.params]
        body = self.block(self.fn.body)
        fdef = ast.FunctionDef(self.fn.name, ast.arguments([], args, None, [], [], None, []),
                               body or [ast.Pass()], [], None)
        module = ast.Module([fdef], [])
        ast.fix_missing_locations(module)
        text = astor.to_source(module)
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
        method = getattr(self, "op_" + op.prim, None)
        if method is not None:
            return method(op)
        return [ast.Assign([self.target(op.result)], self.value_expr(op))]

    # -- expressions for pure ops -----------------------------------------------------------
    def value_expr(self, op):
        prim, args = op.prim, [self.expr(v) for v in op.operands]
        if prim in _BINARY:
            return self.binary(op, args)
        if prim in _COMPARE:
            return ast.Compare(args[0], [_COMPARE[prim]()], [args[1]])
        if prim == "neg":
            return ast.UnaryOp(ast.USub(), args[0])
        if prim == "not":
            return ast.UnaryOp(ast.Not(), args[0])
        if prim == "truth":
            return _call("bool", args)
        if prim == "cast":
            to = op.attrs["to"]
            return _call(_CASTS[(to.dtype, to.weak)], args)
        if prim in ("min", "max"):
            return self.cast_to(op, _call(prim, args))
        if prim == "abs" and not op.attrs.get("lib"):
            return _call("abs", args)
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
            return _call("_Tape", [ast.Constant(op.attrs["item"])])
        if prim == "tape_pop":
            t = op.result.type
            node = ast.Call(_attr(args[0], "pop"), [], [])
            return _call(_CASTS[(t.dtype, t.weak)], [node]) if isinstance(t, T.Scalar) else node
        if prim == "select":
            return self.cast_to(op, ast.IfExp(args[0], args[1], args[2]), op.operands[1:])
        if prim == "sign":
            return self.cast_to(op, _call("np.sign", args))
        if prim == "and":
            return ast.BoolOp(ast.And(), args)
        if prim == "tuple_get":
            return _subscript(args[0], ast.Constant(op.attrs["index"]))
        return self.math(op, args)

    def binary(self, op, args):
        t = op.result.type
        if op.prim == "pow" and t.is_float and all(
                v.type.is_int or v.type.dtype == "bool" for v in op.operands):
            args = [_call("float", [args[0]]), args[1]]
        node = ast.BinOp(args[0], _BINARY[op.prim](), args[1])
        if t.dtype == "i64" and not t.weak and all(v.type.dtype == "bool"
                                                   for v in op.operands):
            return _call("np.int64", [node])
        return node

    def cast_to(self, op, node, operands=None):
        t = op.result.type
        if all(v.type == t for v in (op.operands if operands is None else operands)):
            return node
        return _call(_CASTS[(t.dtype, t.weak)], [node])

    def math(self, op, args):
        if op.attrs.get("lib") == "math":
            name = {"abs": "fabs"}.get(op.prim, op.prim)
            node = _call(f"math.{name}", args)
            return node
        if op.prim in ("erf", "erfc"):
            return _call("_erf", args + [ast.Constant(op.prim)])
        name = _NP_NAMES.get(op.prim, op.prim)
        node = _call(f"np.{name}", args)
        t = op.result.type
        if any(v.type.weak for v in op.operands) and not t.weak:
            return node  # numpy already returns float64 scalars for Python numbers
        return node

    def alloc(self, op, args):
        ndim = op.attrs["ndim"]
        shape = ast.Tuple(args[:ndim], ast.Load())
        dtype = _attr(ast.Name("np", ast.Load()), T.NUMPY[op.attrs["dtype"]].name)
        fill = op.attrs["fill"]
        if fill == "value":
            return _call("np.full", [shape, args[ndim]], dtype=dtype)
        fn = {0: "np.zeros", 1: "np.ones", None: "np.empty"}[fill]
        return _call(fn, [shape], dtype=dtype)

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
        return [ast.Assert(self.expr(op.operands[0]), ast.Constant(message))]

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
        loop = ast.For(self.target(body.params[0]), _call("range", range_args),
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


def _literal(value, type):
    if isinstance(value, float) and not math.isfinite(value):
        node = _call("float", [ast.Constant(repr(value))])
    else:
        node = ast.Constant(value)
    if isinstance(type, T.Scalar) and not type.weak:
        return _call(_CASTS[(type.dtype, False)], [node])
    return node


def _is_literal(node, value):
    return isinstance(node, ast.Constant) and node.value == value and \
        type(node.value) is type(value)


def _call(name, args, **kwargs):
    func = None
    for part in name.split("."):
        func = ast.Name(part, ast.Load()) if func is None else _attr(func, part)
    keywords = [ast.keyword(k, v) for k, v in kwargs.items()]
    return ast.Call(func, list(args), keywords)


def _attr(node, name):
    return ast.Attribute(node, name, ast.Load())


def _subscript(node, index):
    return ast.Subscript(node, index, ast.Load())

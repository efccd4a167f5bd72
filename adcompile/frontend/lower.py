"""AST -> IR for one argument signature: SSA construction over structured control flow.

Variables live in an environment (name -> Value). An `if` lowers both branches from copies of
the environment and yields every variable they assign, so the merge is the if's results; a
loop carries every variable its body assigns as block arguments, re-lowering the body until
the carried types are stable (a variable that starts as an int and becomes a float is carried
as a float). Types are known while lowering (the signature is), so each op's result type comes
from its primitive's type rule as it is built.

`return`, `break` and `continue` become flags (`__ret`, `__brk`, `__cnt`) that guard the
statements after them; a range loop containing `break` or `return` becomes a `while`.
Calls to other Python functions are inlined (recursion is refused).
"""

import ast
import builtins
import math

import numpy as np

from adcompile.errors import ArgumentError, CompileError
from adcompile.frontend import arrays, check, resolve, shapes
from adcompile.frontend.source import Source
from adcompile.ir import types as T
from adcompile.ir.nodes import Block, Function, Op, Value
from adcompile.ir.prims import PRIMS

RET, BRK, CNT, RETVAL = "__ret", "__brk", "__cnt", "__retval"


class Undefined:
    """A variable that is not assigned on every path reaching this point."""

    def __init__(self, type):
        self.type = type


class Static:
    """A compile-time object: a module, a function, a shape tuple..."""

    def __init__(self, obj):
        self.obj = obj


class Builder:
    """Appends typed operations to the current block."""

    def __init__(self, lowerer):
        self.block = None
        self.lowerer = lowerer

    def emit(self, prim, operands=(), attrs=None, node=None, names=()):
        attrs = dict(attrs or {})
        try:
            types = PRIMS[prim].type_rule([v.type for v in operands], attrs)
        except TypeError as e:
            raise self.lowerer.error(node, str(e)) from None
        loc = self.lowerer.source.location(node) if node is not None else None
        op = Op(prim, operands, types, attrs, loc=loc, names=names)
        if any(isinstance(t, T.Array) for t in types) or prim in ("matmul", "load", "store",
                                                                  "assign", "iadd"):
            try:
                shape = shapes.infer(op, self.lowerer.static)
            except ValueError as e:  # lengths the source fixes contradict each other
                raise self.lowerer.error(node, str(e)) from None
            if shape is not None:
                self.lowerer.static[op.results[0]] = shape
        self.block.ops.append(op)
        return op

    def value(self, prim, operands=(), attrs=None, node=None, name=None):
        return self.emit(prim, operands, attrs, node, names=(name,)).result

    def const(self, value, type=None, name=None):
        if type is None:
            type = T.of_value(value)
        return self.value("const", (), {"value": value, "type": type}, name=name)

    def cast(self, v, to, node=None):
        if v.type == to:
            return v
        if isinstance(to, T.Scalar) and isinstance(v.type, T.Scalar):
            return self.value("cast", (v,), {"to": to}, node, name=v.name)
        raise self.lowerer.error(node, f"a value of type {v.type} cannot be used where "
                                       f"{to} is expected")


def lower_function(fn, arg_types, stack=()):
    """Build the IR Function for `fn` called with arguments of `arg_types`."""
    source = Source.of(fn)
    check.check_function(source)
    lowerer = Lowerer(source, stack + (fn,))
    return lowerer.lower_top(arg_types)


class Lowerer:
    def __init__(self, source, stack):
        self.source = source
        self.stack = stack
        self.globals = resolve.Namespace(source.fn)
        self.b = Builder(self)
        self.env = {}
        self.loop_depth = 0
        self.static = {}  # array value -> its shape where the source fixes it (shapes.py)

    def display(self, key):
        """The name shown for an environment entry (compiler entries get readable names)."""
        if not key.startswith("__"):
            return key
        if key.startswith("__index_"):
            return key.split("_")[3] + "_next"
        return _DISPLAY.get(key, key.strip("_"))

    def error(self, node, message):
        if node is None:
            return CompileError(message)
        return self.source.error(node, message)

    # -- entry points -----------------------------------------------------------------------
    def lower_top(self, arg_types):
        fn = self.source.tree
        names = [a.arg for a in fn.args.args]
        if len(names) != len(arg_types):
            raise ArgumentError(f"{fn.name}() takes {len(names)} arguments but "
                            f"{len(arg_types)} were given")
        params = [Value(t, n) for n, t in zip(names, arg_types)]
        body = Block()
        self.b.block = body
        self.env = dict(zip(names, params))
        result = self.lower_body(fn)
        ret_type = result.type if result is not None else T.NONE
        operands = [result] if result is not None else []
        self.b.emit("return", operands, {"type": ret_type})
        return Function(fn.name, params, body, self.source.filename, self.source.first_line)

    def lower_body(self, fn):
        """Lower the function body; returns the merged return value (or None)."""
        self.env[RET] = self.b.const(False, T.BOOL, name=self.display(RET))
        self.env[RETVAL] = Undefined(None)
        self.statements(fn.body)
        retval = self.env.get(RETVAL)
        if isinstance(retval, Undefined):
            return None
        if _always_returns(fn.body):
            return retval
        raise self.error(fn, f"{fn.name}() returns a value on some paths but can also reach "
                             f"its end without one; end every path with a return")

    def inline_call(self, node, fn, args):
        """Lower a call to another Python function in place; returns its result value."""
        if fn in self.stack:
            raise self.error(node, f"{fn.__name__}() calls itself (directly or indirectly): "
                                   f"recursion cannot be compiled; rewrite it as a loop")
        source = Source.of(fn)
        check.check_function(source)
        callee = Lowerer(source, self.stack + (fn,))
        callee.static = self.static  # the caller's arrays keep their known shapes
        callee.b.block = self.b.block
        names = [a.arg for a in source.tree.args.args]
        if len(names) != len(args):
            raise self.error(node, f"{fn.__name__}() takes {len(names)} arguments but "
                                   f"{len(args)} were given")
        callee.env = dict(zip(names, args))
        result = callee.lower_body(source.tree)
        self.b.block = callee.b.block
        return result if result is not None else Static(None)

    # -- statements -------------------------------------------------------------------------
    def statements(self, stmts):
        for i, stmt in enumerate(stmts):
            self.statement(stmt)
            rest = stmts[i + 1:]
            if rest and _may_exit(stmt):
                flag = self.exit_flag()
                if _is_const(flag, True):
                    return  # unreachable code after return/break/continue
                if not _is_const(flag, False):
                    self.guarded(flag, rest)
                    return

    def exit_flag(self):
        """True when a return/break/continue has happened in the current iteration."""
        flags = [self.env[f] for f in (RET, BRK, CNT) if isinstance(self.env.get(f), Value)]
        value = flags[0]
        for f in flags[1:]:
            value = self.logical(value, f, is_and=False)
        return value

    def guarded(self, flag, stmts):
        """The statements after a return/break/continue that may have happened: an `if`
        located at the first of them (an error about what it merges points there)."""
        cond = self.b.value("not", (flag,))
        self.lower_if(cond, lambda: self.statements(stmts), lambda: None, stmts[0])

    def statement(self, node):
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"{type(node).__name__} statements are not supported in "
                                   f"compiled code")
        method(node)

    def stmt_Expr(self, node):
        if isinstance(node.value, ast.Constant):
            return  # docstring
        self.expr(node.value)

    def stmt_Pass(self, node):
        pass

    def stmt_Assign(self, node):
        value = self.expr(node.value)
        for target in node.targets:
            self.assign(target, value, node)

    def stmt_AnnAssign(self, node):
        if node.value is not None:
            self.assign(node.target, self.expr(node.value), node)

    def stmt_AugAssign(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"the operator {type(node.op).__name__} is not supported")
        if isinstance(node.target, ast.Subscript):
            arrays.store(self, node.target, lambda: self.expr(node.value), node, op)
            return  # (the value is evaluated after the target, as Python does)
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "augmented assignment needs a variable or an "
                                          "array element as target")
        old = self.read(node.target.id, node.target)
        if isinstance(old.type, T.Array):  # numpy: in place, seen through every view
            arrays.augment_in_place(self, old, op, self.expr(node.value), node)
            return
        self.bind(node.target.id, self.binary(op, old, self.expr(node.value), node), node)

    def assign(self, target, value, node):
        if isinstance(target, ast.Name):
            if isinstance(value, Static) and not isinstance(value.obj, (int, float)):
                self.env[target.id] = value
                return
            self.bind(target.id, self.as_value(value, node), node)
        elif isinstance(target, ast.Tuple):
            items = self.unpack(value, len(target.elts), node)
            for t, v in zip(target.elts, items):
                self.assign(t, v, node)
        elif isinstance(target, ast.Subscript):
            arrays.store(self, target, lambda: value, node)
        else:
            raise self.error(target, "this assignment target is not supported; assign to a "
                                     "variable, a tuple of variables or an array element")

    def bind(self, name, value, node):
        if name.startswith("__"):
            raise self.error(node, "names starting with __ are reserved by the compiler")
        value.name = value.name or name
        if value.owner is not None and value.owner.prim != "const":
            value.name = name
        self.env[name] = value

    def unpack(self, value, n, node):
        if isinstance(value, Static) and isinstance(value.obj, tuple):
            items = list(value.obj)
        elif isinstance(value, Value) and isinstance(value.type, T.Tuple):
            items = [self.b.value("tuple_get", (value,), {"index": i}, node)
                     for i in range(len(value.type.items))]
        else:
            raise self.error(node, "only tuples can be unpacked")
        if len(items) != n:
            raise self.error(node, f"cannot unpack {len(items)} values into {n} names")
        return items

    def stmt_Return(self, node):
        value = self.expr(node.value) if node.value is not None else None
        if value is None or (isinstance(value, Static) and value.obj is None):
            raise self.error(node, "return without a value is not supported yet: return the "
                                   "result (functions that only fill arrays can return them)")
        value = self.as_value(value, node)
        previous = self.env[RETVAL]
        if isinstance(previous, Value) or previous.type is not None:
            merged = T.unify(previous.type, value.type)
            if merged is None:
                raise self.error(node, f"this return gives a {value.type}, but another return "
                                       f"gives a {previous.type}; return the same kind of "
                                       f"value on every path")
            value = self.b.cast(value, merged, node)
        self.env[RETVAL] = value
        self.env[RET] = self.b.const(True, T.BOOL)

    def stmt_Break(self, node):
        self.env[BRK] = self.b.const(True, T.BOOL)

    def stmt_Continue(self, node):
        self.env[CNT] = self.b.const(True, T.BOOL)

    def stmt_Assert(self, node):
        cond = self.condition(self.expr(node.test), node.test)
        message = node.msg.value if isinstance(node.msg, ast.Constant) else None
        if node.msg is not None and message is None:
            raise self.error(node.msg, "assert messages must be plain strings")
        self.b.emit("assert", (cond,), {"message": message, "source": ast.unparse(node.test)},
                    node)

    # -- if ---------------------------------------------------------------------------------
    def stmt_If(self, node):
        cond = self.condition(self.expr(node.test), node.test)
        self.lower_if(cond, lambda: self.statements(node.body),
                      lambda: self.statements(node.orelse), node)

    def lower_if(self, cond, then_fn, else_fn, node):
        """Lower both branches and merge the variables they assign as the if's results."""
        before = dict(self.env)
        outer = self.b.block
        then_block, then_env = self._branch(then_fn, before)
        else_block, else_env = self._branch(else_fn, before)
        self.b.block = outer
        names = sorted(k for k in set(then_env) | set(else_env)
                       if then_env.get(k) is not before.get(k) or
                       else_env.get(k) is not before.get(k))
        for block, env in ((then_block, then_env), (else_block, else_env)):
            self._tuples_as_values(block, env, names, node)
        names = [k for k in names if not isinstance(then_env.get(k), Static)]
        same = {k: then_env[k] for k in names if _same_const(then_env.get(k), else_env.get(k))}
        names = [k for k in names if k not in same]
        merged = self._merge_types(names, then_env, else_env, node)
        live = [k for k in names if merged[k] is not None]
        self._finish_branch(then_block, then_env, live, merged)
        self._finish_branch(else_block, else_env, live, merged)
        self.b.block = outer
        op = self.b.emit("if", [cond], {"result_types": [merged[k] for k in live]}, node,
                         names=[self.display(k) for k in live])
        op.regions = [then_block, else_block]
        self.env = dict(before)
        for k, v in zip(live, op.results):
            self.env[k] = v
        for k in names:
            if merged[k] is None:
                self.env[k] = Undefined(None)
        for k, v in same.items():
            self.env[k] = self.b.const(v.owner.attrs["value"], v.type, name=v.name)
        return op

    def _tuples_as_values(self, block, env, names, node):
        """A tuple built from values (`pair = (x, y)`, `s = a.shape`) is a compile-time
        tuple of them; one a branch or a loop assigns is merged as a tuple value, built at
        the end of `block` (else the merge would lose the assignment)."""
        self.b.block = block
        for k in names:
            if _static_tuple(env.get(k)):
                env[k] = self.as_value(env[k], node)

    def _branch(self, fn, before):
        block = Block()
        self.b.block = block
        self.env = dict(before)
        fn()
        return block, self.env

    def _merge_types(self, names, a_env, b_env, node):
        """The type of each variable after the merge; None where it is not defined on both
        paths (compiler variables such as the return value get a placeholder instead)."""
        merged = {}
        for k in names:
            a, b = a_env.get(k), b_env.get(k)
            ta = a.type if isinstance(a, Value) else None
            tb = b.type if isinstance(b, Value) else None
            if ta is None or tb is None:
                merged[k] = (ta or tb) if k.startswith("__") else None
                continue
            merged[k] = T.unify(ta, tb)
            if merged[k] is None:
                raise self.error(node, f"'{k}' is a {ta} on one path and a {tb} on another; "
                                       f"give it one type (convert with float() or int())")
        return merged

    def _finish_branch(self, block, env, live, merged):
        self.b.block = block
        values = [self._materialize(env.get(k), merged[k], k) for k in live]
        self.b.emit("yield", values)

    def _materialize(self, value, type, name):
        """A value of `type` for a merge: casts, or a placeholder where it is undefined."""
        if isinstance(value, Undefined) or value is None:
            return self._placeholder(type, self.display(name))
        return self.b.cast(value, type)

    def _placeholder(self, type, name):
        if isinstance(type, T.Scalar):
            zero = {"bool": False, "i64": 0}.get(type.dtype, 0.0)
            return self.b.const(zero, type, name=name)
        if isinstance(type, T.Array):
            dims = [self.b.const(0, T.INT) for _ in range(type.ndim)]
            return self.b.value("alloc", dims, {"dtype": type.dtype, "ndim": type.ndim,
                                                "fill": 0})
        if isinstance(type, T.Tuple):  # a tuple returned on some paths only
            return self.b.value("tuple", [self._placeholder(t, name) for t in type.items])
        raise CompileError(f"variable {name!r} is not defined on every path")

    # -- loops ------------------------------------------------------------------------------
    def stmt_For(self, node):
        saved = {f: self.env.pop(f) for f in (BRK, CNT) if f in self.env}
        self._for(node)
        self.env.update(saved)

    def stmt_While(self, node):
        saved = {f: self.env.pop(f) for f in (BRK, CNT) if f in self.env}
        self._while(node)
        self.env.update(saved)

    def _for(self, node):
        if node.orelse:
            raise self.error(node, "for/else is not supported; use a flag variable")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a single name")
        start, stop, step, array = self.loop_range(node.iter)
        exits = _contains(node.body, (ast.Break, ast.Return))
        if exits:
            self.lower_for_as_while(node, start, stop, step, array)
        else:
            self.lower_for(node, start, stop, step, array)

    def loop_range(self, it):
        """(start, stop, step, array-or-None) for `range(...)` or iteration over an array."""
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" \
                and self.lookup_static(it.func.id) is builtins.range:
            if it.keywords or not 1 <= len(it.args) <= 3:
                raise self.error(it, "range() takes 1 to 3 positional arguments")
            args = [self.as_value(self.expr(a), a) for a in it.args]
            for a, n in zip(args, it.args):
                if not (isinstance(a.type, T.Scalar) and a.type.is_int):
                    raise self.error(n, f"range() needs integers, not {a.type}")
            args = [self.b.cast(a, T.INT) for a in args]
            if len(args) == 1:
                args = [self.b.const(0, T.INT)] + args
            if len(args) == 2:
                args.append(self.b.const(1, T.INT))
            if _is_const(args[2], 0):
                raise self.error(it, "range() step must not be zero")
            if args[2].owner is None or args[2].owner.prim != "const":
                nonzero = self.b.value("ne", (args[2], self.b.const(0, T.INT)), node=it)
                self.b.emit("assert", (nonzero,), {"message": "range() step must not be zero",
                                                   "exception": "ValueError"}, it)
            return args[0], args[1], args[2], None
        iterable = self.as_value(self.expr(it), it)
        if not isinstance(iterable.type, T.Array) or iterable.type.ndim == 0:
            raise self.error(it, f"for loops run over range(...) or over an array's first "
                                 f"axis, not over a {iterable.type}")
        stop = self.b.value("shape", (iterable,), {"axis": 0}, it)
        return self.b.const(0, T.INT), stop, self.b.const(1, T.INT), iterable

    def lower_for(self, node, start, stop, step, array):
        def body(index):
            self.env[CNT] = self.b.const(False, T.BOOL)
            self.bind_loop_target(node, index, array)
            self.statements(node.body)
            self.env.pop(CNT, None)

        carried = self.carried_names(node.body) | self.carried_target(node)
        results = self.build_loop(node, carried, "for", [start, stop, step], body)
        self.finish_loop(carried, results, node)
        self.after_loop_target(node, carried)

    def carried_target(self, node):
        """The loop variable keeps its last value after the loop (Python's semantics): it is
        carried when it has a value before the loop, which it keeps after zero iterations."""
        name = node.target.id
        value = self.env.get(name)
        return {name} if value is not None and not isinstance(value, Static) else set()

    def after_loop_target(self, node, carried):
        """Without a value before the loop, reading the loop variable after it is refused (it
        is unbound after zero iterations)."""
        if node.target.id not in carried:
            self.env[node.target.id] = Undefined(None)

    def bind_loop_target(self, node, index, array):
        if array is None:
            index.name = node.target.id
            self.env[node.target.id] = index
        else:
            self.env[node.target.id] = self.b.value("load", (array, index), node=node.iter,
                                                    name=node.target.id)

    def lower_for_as_while(self, node, start, stop, step, array):
        """A range loop with break/return: a while loop over an explicit counter."""
        counter = "__index_%s_%d" % (node.target.id, id(node))
        self.env[counter] = start
        self.env[BRK] = self.b.const(False, T.BOOL, name=self.display(BRK))

        def cond():
            i = self.env[counter]
            up = self.b.value("gt", (step, self.b.const(0, T.INT)))
            below = self.b.value("lt", (i, stop))
            above = self.b.value("gt", (i, stop))
            in_range = self.select(up, below, above)
            go = self.b.value("not", (self.exit_flag_without_continue(),))
            return self.logical(in_range, go, is_and=True)

        def body(_):
            i = self.env[counter]
            self.env[CNT] = self.b.const(False, T.BOOL)
            self.bind_loop_target(node, i, array)
            self.statements(node.body)
            self.env.pop(CNT, None)
            self.env[counter] = self.b.value("add", (i, step))

        carried = self.carried_names(node.body) | {counter, BRK} | self.carried_target(node)
        results = self.build_loop(node, carried, "while", [], body, cond)
        self.finish_loop(carried, results, node)
        self.after_loop_target(node, carried)
        self.env.pop(counter, None)
        self.env.pop(BRK, None)

    def exit_flag_without_continue(self):
        value = self.env[BRK]
        ret = self.env.get(RET)
        if isinstance(ret, Value) and not _is_const(ret, False):
            value = self.logical(value, ret, is_and=False)
        return value

    def _while(self, node):
        if node.orelse:
            raise self.error(node, "while/else is not supported; use a flag variable")
        exits = _contains(node.body, (ast.Break, ast.Return))
        if exits:
            self.env[BRK] = self.b.const(False, T.BOOL)

        def cond():
            if not exits:
                return self.condition(self.expr(node.test), node.test)
            go = self.b.value("not", (self.exit_flag_without_continue(),))

            def test():  # after a break or return the test is not evaluated (it may raise)
                self.env["__go"] = self.condition(self.expr(node.test), node.test)

            def stop():
                self.env["__go"] = go

            self.lower_if(go, test, stop, node.test)
            return self.env.pop("__go")

        def body(_):
            self.env[CNT] = self.b.const(False, T.BOOL)
            self.statements(node.body)
            self.env.pop(CNT, None)

        carried = self.carried_names(node.body)
        if exits:
            carried.add(BRK)
        results = self.build_loop(node, carried, "while", [], body, cond)
        self.finish_loop(carried, results, node)
        self.env.pop(BRK, None)

    def carried_names(self, body):
        names = _assigned_names(body)
        if _contains(body, (ast.Return,)):
            names |= {RET, RETVAL}
        self._tuples_as_values(self.b.block, self.env, names & set(self.env), body[0])
        return {n for n in names if n in self.env and not isinstance(self.env[n], Static)}

    def build_loop(self, node, carried, kind, operands, body_fn, cond_fn=None):
        """Lower a loop, iterating until the carried variables' types are stable."""
        names = sorted(carried)
        before = dict(self.env)
        types = {n: self._entry_type(before[n]) for n in names}
        for _ in range(8):
            outer = self.b.block
            loop = self._loop_regions(kind, names, types, body_fn, cond_fn, before)
            self.b.block = outer
            new_types = self._widened(names, types, loop[-1], node)
            if new_types == types:
                break
            types = new_types
        else:
            raise self.error(node, "the types of the loop's variables do not settle; give "
                                   "each variable one type")
        regions, yielded_env = loop[0], loop[-1]
        live = [n for n in names if types[n] is not None]
        inits = [self._materialize(before[n], types[n], n) for n in live]
        op = self.b.emit(kind, list(operands) + inits,
                         {"result_types": [types[n] for n in live]}, node,
                         names=[self.display(n) for n in live])
        op.regions = regions
        self.env = before
        return dict(zip(live, op.results))

    def _entry_type(self, value):
        return value.type

    def _loop_regions(self, kind, names, types, body_fn, cond_fn, before):
        live = [n for n in names if types[n] is not None]
        if kind == "for":
            body = Block([Value(T.INT, "i")] + [Value(types[n], self.display(n)) for n in live])
            self._enter(body, before, live, body.params[1:])
            body_fn(body.params[0])
            env = self.env
            self._yield(live, types, env)
            return [body], env
        head = Block([Value(types[n], self.display(n)) for n in live])
        self._enter(head, before, live, head.params)
        c = cond_fn()
        self.b.emit("condition", [c] + list(head.params))
        body = Block([Value(types[n], self.display(n)) for n in live])
        self._enter(body, before, live, body.params)
        body_fn(None)
        env = self.env
        self._yield(live, types, env)
        return [head, body], env

    def _enter(self, block, before, live, params):
        self.b.block = block
        self.env = dict(before)
        for n, p in zip(live, params):
            self.env[n] = p

    def _yield(self, live, types, env):
        values = []
        for n in live:
            value = env.get(n)
            if _static_tuple(value):
                value = self.as_value(value, None)
            if isinstance(value, Value) and T.unify(value.type, types[n]) is None:
                values.append(value)  # a type clash: _widened reports it at the loop
            else:
                values.append(self._materialize(value, types[n], n))
        self.b.emit("yield", values)

    def _widened(self, names, types, env, node):
        new = {}
        for n in names:
            old, value = types[n], env.get(n)
            vt = _type_of(value)
            if old is None or vt is None:
                new[n] = old or vt
                continue
            new[n] = T.unify(old, vt)
            if new[n] is None:
                raise self.error(node, f"'{n}' starts the loop as a {old} and becomes a {vt}; "
                                       f"give it one type (e.g. start with 0.0 instead of 0)")
        return new

    def finish_loop(self, carried, results, node):
        for n in carried:
            self.env[n] = results.get(n, Undefined(None))

    # -- expressions ------------------------------------------------------------------------
    def expr(self, node):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"{type(node).__name__} expressions are not supported in "
                                   f"compiled code")
        return method(node)

    def as_value(self, value, node):
        if isinstance(value, Value):
            return value
        if isinstance(value, Static):
            obj = value.obj
            if isinstance(obj, (bool, int, float)) and not isinstance(obj, np.generic):
                return self.b.const(obj)
            if isinstance(obj, np.generic) and T.of_value(obj) is not None:
                return self.b.const(obj.item(), T.of_value(obj))
            if isinstance(obj, tuple):
                items = [self.as_value(v, node) for v in obj]
                return self.b.value("tuple", items, node=node)
        if isinstance(value, Undefined):
            raise self.error(node, "this variable is not assigned on every path that reaches "
                                   "here; assign it before the if or loop")
        raise self.error(node, f"{_what(value)} cannot be used as a value in compiled code")

    def expr_Constant(self, node):
        if isinstance(node.value, (bool, int, float)):
            return self.b.const(node.value)
        if node.value is None:
            return Static(None)
        if isinstance(node.value, (str, bytes)):
            raise self.error(node, "strings are not supported in compiled code (only as a "
                                   "docstring or an assert message)")
        raise self.error(node, f"constants of type {type(node.value).__name__} are not "
                               f"supported")

    def expr_Name(self, node):
        if node.id in self.env:
            value = self.env[node.id]
            if isinstance(value, Undefined):
                raise self.error(node, f"'{node.id}' is not assigned on every path that "
                                       f"reaches here; assign it before the if or loop")
            return value
        return self.global_value(node)

    def read(self, name, node):
        return self.as_value(self.expr_Name(ast.Name(name, lineno=node.lineno,
                                                     col_offset=node.col_offset)), node)

    def lookup_static(self, name):
        if name in self.env:
            return None
        return self.globals.lookup(name)

    def global_value(self, node):
        found = self.globals.lookup(node.id, resolve.MISSING)
        if found is resolve.MISSING:
            raise self.error(node, f"name '{node.id}' is not defined (neither a local "
                                   f"variable, a parameter nor a module global)")
        if isinstance(found, (bool, int, float)):
            return Static(found)
        if callable(found) or isinstance(found, type(math)) or found is None:
            return Static(found)
        if isinstance(found, np.generic) and T.of_value(found) is not None:
            return Static(found)
        raise self.error(node, f"the global '{node.id}' is a {type(found).__name__}; compiled "
                               f"code can read numbers, modules and functions from globals "
                               f"(pass arrays as arguments)")

    def expr_Tuple(self, node):
        return Static(tuple(self.expr(e) for e in node.elts))

    def expr_List(self, node):  # only as an argument: np.array([...]), np.stack([...])
        return Static(tuple(self.expr(e) for e in node.elts))

    def expr_BinOp(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"the operator {type(node.op).__name__} is not supported")
        return self.binary(op, self.expr(node.left), self.expr(node.right), node)

    def binary(self, op, left, right, node):
        left, right = self.as_value(left, node), self.as_value(right, node)
        attrs = {}
        if op == "pow":
            exp = right.owner.attrs.get("value") if right.owner and right.owner.prim == "const" \
                else None
            attrs["nonneg_int_exponent"] = isinstance(exp, int) and exp >= 0
        return self.b.value(op, (left, right), attrs, node)

    def expr_UnaryOp(self, node):
        value = self.as_value(self.expr(node.operand), node)
        if isinstance(node.op, ast.USub):
            return self.b.value("neg", (value,), node=node)
        if isinstance(node.op, ast.UAdd):
            return value
        if isinstance(node.op, ast.Not):
            if isinstance(value.type, T.Array):
                raise self.error(node, "'not' of an array has no single truth value (numpy "
                                       "raises ValueError); use ~ or np.logical_not")
            return self.b.value("not", (value,), node=node)
        return self.b.value("invert", (value,), node=node)

    def expr_Compare(self, node):
        """`a < b <= c` is `a < b and b <= c` with b evaluated once: c only when a < b."""
        left = self.as_value(self.expr(node.left), node)
        return self.compare_chain(left, list(zip(node.ops, node.comparators)), node)

    def compare_chain(self, left, rest, node):
        (op, right), rest = rest[0], rest[1:]
        prim = _COMPARE.get(type(op))
        if prim is None:
            raise self.error(node, f"the comparison {type(op).__name__} is not supported")
        rhs = self.as_value(self.expr(right), right)
        cmp = self.b.value(prim, (left, rhs), node=node)
        if not rest:
            return cmp
        if all(isinstance(r, (ast.Name, ast.Constant)) for _, r in rest):
            return self.logical(cmp, self.compare_chain(rhs, rest, node), is_and=True)

        def evaluate():  # the rest may raise (an index, a division): only when cmp holds
            self.env["__bool"] = self.compare_chain(rhs, rest, node)

        def keep():
            self.env["__bool"] = cmp

        self.lower_if(cmp, evaluate, keep, node)
        return self.env.pop("__bool")

    def condition(self, value, node):
        value = self.as_value(value, node)
        if isinstance(value.type, T.Scalar) and value.type.dtype == "bool":
            return value
        if isinstance(value.type, T.Scalar):
            return self.b.value("truth", (value,), node=node)
        raise self.error(node, f"a {value.type} cannot be used as a condition")

    def expr_BoolOp(self, node):
        result = self.as_value(self.expr(node.values[0]), node)
        for operand in node.values[1:]:
            result = self.short_circuit(result, operand, isinstance(node.op, ast.And), node)
        return result

    def short_circuit(self, left, right_node, is_and, node):
        """Python's `a and b` / `a or b`: b is evaluated only when needed; the result is
        one of the operands."""
        cond = self.condition(left, node)
        holder = {}

        def evaluate():
            holder["right"] = self.as_value(self.expr(right_node), right_node)
            self.env["__bool"] = holder["right"]

        def keep():
            self.env["__bool"] = left

        op = self.lower_if(cond, evaluate if is_and else keep, keep if is_and else evaluate,
                           node)
        result = self.env.pop("__bool")
        if not isinstance(result, Value):
            raise self.error(node, "the operands of and/or must have compatible types")
        return result

    def logical(self, a, b, is_and):
        """Non-short-circuit and/or of two already computed booleans (compiler flags)."""
        if is_and:
            if _is_const(a, False) or _is_const(b, True):
                return a
            if _is_const(a, True) or _is_const(b, False):
                return b
        else:
            if _is_const(a, True) or _is_const(b, False):
                return a
            if _is_const(a, False) or _is_const(b, True):
                return b
        self.env["__l"] = b
        self.lower_if(a, (lambda: None) if is_and else (lambda: self.env.__setitem__("__l", a)),
                      (lambda: self.env.__setitem__("__l", a)) if is_and else (lambda: None),
                      None)
        return self.env.pop("__l")

    def select(self, cond, a, b):
        self.env["__s"] = a
        self.lower_if(cond, lambda: None, lambda: self.env.__setitem__("__s", b), None)
        return self.env.pop("__s")

    def expr_IfExp(self, node):
        cond = self.condition(self.expr(node.test), node.test)

        def branch(expr):
            def lower():
                value = self.as_value(self.expr(expr), expr)  # may replace self.env
                self.env["__ifexp"] = value

            return lower

        self.lower_if(cond, branch(node.body), branch(node.orelse), node)
        return self.env.pop("__ifexp")

    def expr_Attribute(self, node):
        base = self.expr(node.value)
        if isinstance(base, Static):
            try:
                return Static(getattr(base.obj, node.attr))
            except AttributeError:
                raise self.error(node, f"{_what(base)} has no attribute '{node.attr}'") from None
        value = self.as_value(base, node)
        if isinstance(value.type, T.Array):
            if node.attr == "shape":
                return Static(tuple(self.b.value("shape", (value,), {"axis": i}, node,
                                                 name=f"{value.name or 'a'}_dim{i}")
                                    for i in range(value.type.ndim)))
            if node.attr == "size":
                return self.b.value("size", (value,), node=node)
            if node.attr == "ndim":
                return self.b.const(value.type.ndim)
            found = arrays.attribute(self, value, node.attr, node)
            if found is not None:
                return found
        raise self.error(node, f"'{node.attr}' of a {value.type} is not supported (arrays "
                               f"support .shape, .size, .ndim, .T and the methods "
                               f"{', '.join(arrays.METHODS)})")

    def expr_Subscript(self, node):
        base = self.expr(node.value)
        if isinstance(base, Static) and isinstance(base.obj, tuple):
            index = self.expr(node.slice)
            if not (isinstance(index, Value) and index.owner and index.owner.prim == "const"):
                raise self.error(node.slice, "tuples can only be indexed by integer constants")
            return base.obj[index.owner.attrs["value"]]
        base = self.as_value(base, node.value)
        if isinstance(base.type, T.Array):
            return arrays.subscript(self, node, base)
        if isinstance(base.type, T.Tuple):
            index = self.as_value(self.expr(node.slice), node.slice)
            return self.tuple_item(base, [index], node)
        raise self.error(node, f"a {base.type} cannot be indexed (only arrays and tuples)")

    def tuple_item(self, value, indices, node):
        if len(indices) != 1 or not (indices[0].owner and indices[0].owner.prim == "const"):
            raise self.error(node, "tuples can only be indexed by integer constants")
        return self.b.value("tuple_get", (value,), {"index": indices[0].owner.attrs["value"]},
                            node)

    def expr_Call(self, node):
        func = self.expr(node.func)
        if not isinstance(func, Static):
            raise self.error(node.func, "only functions can be called")
        from adcompile.frontend import calls

        if isinstance(func.obj, arrays.Method):
            return arrays.call_method(self, func.obj, node)
        return calls.lower_call(self, func.obj, node)


def _same_const(a, b):
    return (isinstance(a, Value) and isinstance(b, Value) and a.type == b.type
            and a.owner is not None and b.owner is not None
            and a.owner.prim == "const" and b.owner.prim == "const"
            and a.owner.attrs["value"] == b.owner.attrs["value"]
            and type(a.owner.attrs["value"]) is type(b.owner.attrs["value"]))


def _is_const(value, expected):
    return (isinstance(value, Value) and value.owner is not None and value.owner.prim == "const"
            and value.owner.attrs["value"] is expected)


def _always_returns(stmts):
    """Whether every path through `stmts` ends in a return (syntactically)."""
    for stmt in stmts:
        if isinstance(stmt, ast.Return):
            return True
        if isinstance(stmt, ast.If) and _always_returns(stmt.body) and \
                _always_returns(stmt.orelse):
            return True
        if isinstance(stmt, ast.While) and isinstance(stmt.test, ast.Constant) and \
                stmt.test.value is True and not _contains(stmt.body, (ast.Break,)):
            return True
    return False


def _may_exit(stmt):
    return _contains([stmt], (ast.Return, ast.Break, ast.Continue), top=True)


def _contains(stmts, kinds, top=False):
    """Whether `stmts` contain one of `kinds` acting at this level: break and continue inside
    a nested loop belong to that loop, a return anywhere leaves the function."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, kinds):
            return True
        if isinstance(node, (ast.For, ast.While)):
            if ast.Return in kinds and any(isinstance(n, ast.Return) for n in ast.walk(node)):
                return True
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def _assigned_names(stmts):
    names = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def _static_tuple(value):
    return isinstance(value, Static) and isinstance(value.obj, tuple)


def _type_of(value):
    """A variable's type where it is a value or a tuple of values (else None: unknown)."""
    if isinstance(value, Value):
        return value.type
    if _static_tuple(value):
        items = [_type_of(v) for v in value.obj]
        return None if None in items else T.Tuple(tuple(items))
    return None


def _what(value):
    if isinstance(value, Static):
        obj = value.obj
        return getattr(obj, "__name__", type(obj).__name__)
    return "this value"


_DISPLAY = {RET: "returned", BRK: "broke", CNT: "skipping", RETVAL: "result", "__s": "pick",
            "__l": "flag", "__bool": "either", "__ifexp": "choice", "__go": "go",
            arrays.SUM: "total"}

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
           ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "matmul",
           ast.BitAnd: "bit_and", ast.BitOr: "bit_or", ast.BitXor: "bit_xor"}
_COMPARE = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt",
            ast.GtE: "ge"}

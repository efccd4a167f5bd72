"""LLVM backend (first increment): scalar programs with structured control flow.

IR -> llvmlite.ir, one lowering rule per primitive in a table. The generated function is
`i32 name(args..., result*)`: it returns 0, or an error code that the wrapper turns into the
exception the Python function would raise (ZeroDivisionError, AssertionError), so compiled
code never crashes the process. Floats follow IEEE (no fast-math); integer division and
modulo follow Python (floor) semantics. Arrays, tuples and tapes are the next increment:
`lower_function` raises NotImplementedError for them.
"""

import ctypes
import itertools

import llvmlite.ir as ir

from adcompile.ir import types as T

OK, ZERO_DIVISION, ASSERTION = 0, 1, 2
_counter = itertools.count()
_LL = {"f64": ir.DoubleType(), "f32": ir.FloatType(), "i64": ir.IntType(64),
       "bool": ir.IntType(1)}
_C = {"f64": ctypes.c_double, "f32": ctypes.c_float, "i64": ctypes.c_int64,
      "bool": ctypes.c_bool}
_LIBM = {"sin", "cos", "tan", "exp", "log", "log1p", "expm1", "tanh", "sinh", "cosh", "asin",
         "acos", "atan", "log2", "log10", "erf", "erfc", "atan2", "hypot", "fmod", "pow"}


def _lltype(t):
    if isinstance(t, T.Scalar):
        return _LL[t.dtype]
    raise NotImplementedError(f"the LLVM backend does not handle {t} values yet")


class Lowered:
    def __init__(self, name, text, param_types, result_type, messages):
        self.name = name
        self.text = text
        self.param_types = param_types
        self.result_type = result_type
        self.messages = messages


def lower_function(fn):
    """llvmlite IR text for IR function `fn` (scalar subset)."""
    name = f"adc_{fn.name}_{next(_counter)}"
    module = ir.Module(name=name)
    from adcompile.backends.llvm import jit

    tm = jit.target_machine()
    import llvmlite.binding as llvm

    module.triple = llvm.get_process_triple()
    module.data_layout = str(tm.target_data)
    result_type = fn.result_type
    params = [_lltype(p.type) for p in fn.params]
    fnty = ir.FunctionType(ir.IntType(32), params + [ir.PointerType()])
    func = ir.Function(module, fnty, name=name)
    lowering = _Lowering(module, func)
    for p, arg in zip(fn.params, func.args):
        lowering.values[p] = arg
    entry = func.append_basic_block("entry")
    lowering.b = ir.IRBuilder(entry)
    lowering.block(fn.body)
    return Lowered(name, str(module), [p.type for p in fn.params], result_type,
                   lowering.messages)


class _Lowering:
    def __init__(self, module, func):
        self.module = module
        self.func = func
        self.values = {}
        self.b = None
        self.messages = []

    def v(self, value):
        return self.values[value]

    # -- blocks -----------------------------------------------------------------------------
    def block(self, block):
        """Lower all ops of `block`; returns the terminator's lowered operands."""
        for op in block.ops:
            if op.prim in ("yield", "condition"):
                return [self.v(x) for x in op.operands]
            if op.prim == "return":
                self.ret(op)
                return None
            handler = _RULES.get(op.prim)
            if handler is None:
                raise NotImplementedError(f"the LLVM backend does not lower '{op.prim}' yet")
            result = handler(self, op)
            if op.results and result is not None:
                self.values[op.results[0]] = result
        return None

    def ret(self, op):
        if op.operands:
            value = op.operands[0]
            _lltype(value.type)
            self.b.store(self.v(value), self.func.args[-1])
        self.b.ret(ir.Constant(ir.IntType(32), OK))

    def fail(self, code):
        self.b.ret(ir.Constant(ir.IntType(32), code))

    def check(self, bad, code):
        """Branch to an early error return when `bad` is true."""
        fail_bb = self.func.append_basic_block("fail")
        cont_bb = self.func.append_basic_block("ok")
        self.b.cbranch(bad, fail_bb, cont_bb)
        self.b.position_at_end(fail_bb)
        self.fail(code)
        self.b.position_at_end(cont_bb)

    # -- control flow -----------------------------------------------------------------------
    def lower_if(self, op):
        then_bb = self.func.append_basic_block("then")
        else_bb = self.func.append_basic_block("else")
        merge_bb = self.func.append_basic_block("merge")
        self.b.cbranch(self.v(op.operands[0]), then_bb, else_bb)
        incoming = []
        for region, bb in zip(op.regions, (then_bb, else_bb)):
            self.b.position_at_end(bb)
            yielded = self.block(region)
            incoming.append((yielded, self.b.block))
            self.b.branch(merge_bb)
        self.b.position_at_end(merge_bb)
        results = []
        for k, r in enumerate(op.results):
            phi = self.b.phi(_lltype(r.type), name=r.name or "")
            for yielded, bb in incoming:
                phi.add_incoming(yielded[k], bb)
            results.append(phi)
        self._bind(op, results)

    def _bind(self, op, results):
        for r, value in zip(op.results, results):
            self.values[r] = value

    def lower_for(self, op):
        start, stop, step = (self.v(x) for x in op.operands[:3])
        inits = [self.v(x) for x in op.operands[3:]]
        body = op.regions[0]
        pre = self.b.block
        head = self.func.append_basic_block("for.head")
        loop = self.func.append_basic_block("for.body")
        done = self.func.append_basic_block("for.done")
        self.b.branch(head)
        self.b.position_at_end(head)
        i = self.b.phi(ir.IntType(64), name="i")
        carried = [self.b.phi(_lltype(p.type), name=p.name or "") for p in body.params[1:]]
        i.add_incoming(start, pre)
        for phi, init in zip(carried, inits):
            phi.add_incoming(init, pre)
        zero = ir.Constant(ir.IntType(64), 0)
        up = self.b.icmp_signed(">", step, zero)
        going = self.b.select(up, self.b.icmp_signed("<", i, stop),
                              self.b.icmp_signed(">", i, stop))
        self.b.cbranch(going, loop, done)
        self.b.position_at_end(loop)
        self.values[body.params[0]] = i
        for p, phi in zip(body.params[1:], carried):
            self.values[p] = phi
        yielded = self.block(body)
        i.add_incoming(self.b.add(i, step), self.b.block)
        for phi, y in zip(carried, yielded):
            phi.add_incoming(y, self.b.block)
        self.b.branch(head)
        self.b.position_at_end(done)
        self._bind(op, carried)

    def lower_while(self, op):
        head_region, body_region = op.regions
        pre = self.b.block
        head = self.func.append_basic_block("while.head")
        loop = self.func.append_basic_block("while.body")
        done = self.func.append_basic_block("while.done")
        self.b.branch(head)
        self.b.position_at_end(head)
        phis = [self.b.phi(_lltype(p.type), name=p.name or "") for p in head_region.params]
        for phi, init in zip(phis, op.operands):
            phi.add_incoming(self.v(init), pre)
        for p, phi in zip(head_region.params, phis):
            self.values[p] = phi
        cond, *passed = self.block(head_region)
        exit_bb = self.b.block
        self.b.cbranch(cond, loop, done)
        self.b.position_at_end(loop)
        for p, value in zip(body_region.params, passed):
            self.values[p] = value
        yielded = self.block(body_region)
        for phi, y in zip(phis, yielded):
            phi.add_incoming(y, self.b.block)
        self.b.branch(head)
        self.b.position_at_end(done)
        results = []
        for r, value in zip(op.results, passed):
            phi = self.b.phi(_lltype(r.type), name=r.name or "")
            phi.add_incoming(value, exit_bb)
            results.append(phi)
        self._bind(op, results)

    # -- scalar ops -------------------------------------------------------------------------
    def const(self, op):
        t = op.attrs["type"]
        value = op.attrs["value"]
        if t.dtype == "bool":
            return ir.Constant(_LL["bool"], int(bool(value)))
        if t.dtype == "i64":
            return ir.Constant(_LL["i64"], int(value))
        return ir.Constant(_LL[t.dtype], float(value))

    def convert(self, value, src, dst):
        if src.dtype == dst.dtype:
            return value
        to = _LL[dst.dtype]
        if dst.dtype == "bool":
            if src.is_float:
                return self.b.fcmp_unordered("!=", value, ir.Constant(_LL[src.dtype], 0.0))
            return self.b.icmp_signed("!=", value, ir.Constant(_LL[src.dtype], 0))
        if src.dtype == "bool":
            return self.b.uitofp(value, to) if dst.is_float else self.b.zext(value, to)
        if src.is_int and dst.is_float:
            return self.b.sitofp(value, to)
        if src.is_float and dst.is_int:
            return self.b.fptosi(value, to)
        if src.dtype == "f32":
            return self.b.fpext(value, to)
        return self.b.fptrunc(value, to)

    def operands_as(self, op, t):
        return [self.convert(self.v(x), x.type, t) for x in op.operands]

    def arith(self, op):
        t = op.results[0].type
        a, b = self.operands_as(op, t)
        prim = op.prim
        if t.is_float:
            return {"add": self.b.fadd, "sub": self.b.fsub, "mul": self.b.fmul}[prim](a, b)
        return {"add": self.b.add, "sub": self.b.sub, "mul": self.b.mul}[prim](a, b)

    def div(self, op):
        t = op.results[0].type
        a, b = self.operands_as(op, t)
        if any(x.type.weak for x in op.operands) or all(x.type.is_int for x in op.operands):
            self.check(self.b.fcmp_ordered("==", b, ir.Constant(b.type, 0.0)), ZERO_DIVISION)
        return self.b.fdiv(a, b)

    def floor_ops(self, op):
        t = op.results[0].type
        a, b = self.operands_as(op, t)
        if t.is_int:
            self.check(self.b.icmp_signed("==", b, ir.Constant(b.type, 0)), ZERO_DIVISION)
            q = self.b.sdiv(a, b)
            r = self.b.srem(a, b)
            adjust = self.b.and_(self.b.icmp_signed("!=", r, ir.Constant(r.type, 0)),
                                 self.b.icmp_signed("!=", self.b.icmp_signed("<", r,
                                                    ir.Constant(r.type, 0)),
                                                    self.b.icmp_signed("<", b,
                                                    ir.Constant(b.type, 0))))
            if op.prim == "floordiv":
                return self.b.select(adjust, self.b.sub(q, ir.Constant(q.type, 1)), q)
            return self.b.select(adjust, self.b.add(r, b), r)
        if any(x.type.weak for x in op.operands):
            self.check(self.b.fcmp_ordered("==", b, ir.Constant(b.type, 0.0)), ZERO_DIVISION)
        return self.float_floor(op.prim, a, b)

    def float_floor(self, prim, a, b):
        """Python's float // and %, step by step as CPython computes them."""
        zero, one = ir.Constant(a.type, 0.0), ir.Constant(a.type, 1.0)
        raw = self.b.frem(a, b)
        div = self.b.fdiv(self.b.fsub(a, raw), b)
        nonzero = self.b.fcmp_unordered("!=", raw, zero)
        signs_differ = self.b.icmp_unsigned("!=", self.b.fcmp_ordered("<", b, zero),
                                            self.b.fcmp_ordered("<", raw, zero))
        adjust = self.b.and_(nonzero, signs_differ)
        mod = self.b.select(adjust, self.b.fadd(raw, b), raw)
        mod = self.b.select(nonzero, mod, self.intrinsic("llvm.copysign", [zero, b]))
        if prim == "mod":
            return mod
        div = self.b.select(adjust, self.b.fsub(div, one), div)
        floored = self.intrinsic("llvm.floor", [div])
        half = ir.Constant(a.type, 0.5)
        floored = self.b.select(self.b.fcmp_ordered(">", self.b.fsub(div, floored), half),
                                self.b.fadd(floored, one), floored)
        return self.b.select(self.b.fcmp_unordered("!=", div, zero), floored,
                             self.intrinsic("llvm.copysign", [zero, self.b.fdiv(a, b)]))

    def pow(self, op):
        t = op.results[0].type
        if not t.is_float:
            raise NotImplementedError("integer ** on the LLVM backend")
        a, b = self.operands_as(op, t)
        return self.intrinsic("llvm.pow", [a, b])

    def neg(self, op):
        t = op.results[0].type
        (a,) = self.operands_as(op, t)
        return self.b.fneg(a) if t.is_float else self.b.neg(a)

    def abs(self, op):
        t = op.results[0].type
        (a,) = self.operands_as(op, t)
        if t.is_float:
            return self.intrinsic("llvm.fabs", [a])
        return self.b.select(self.b.icmp_signed("<", a, ir.Constant(a.type, 0)),
                             self.b.neg(a), a)

    def compare(self, op):
        a_t, b_t = (x.type for x in op.operands)
        common = T.promote(a_t, b_t)
        a, b = self.operands_as(op, common)
        pred = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op.prim]
        if common.is_float:
            if pred == "!=":
                return self.b.fcmp_unordered(pred, a, b)
            return self.b.fcmp_ordered(pred, a, b)
        return self.b.icmp_signed(pred, a, b)

    def logical_not(self, op):
        (a,) = [self.convert(self.v(op.operands[0]), op.operands[0].type, T.BOOL)]
        return self.b.not_(a)

    def truth(self, op):
        return self.convert(self.v(op.operands[0]), op.operands[0].type, T.BOOL)

    def cast(self, op):
        return self.convert(self.v(op.operands[0]), op.operands[0].type, op.attrs["to"])

    def select(self, op):
        t = op.results[0].type
        cond = self.v(op.operands[0])
        a = self.convert(self.v(op.operands[1]), op.operands[1].type, t)
        b = self.convert(self.v(op.operands[2]), op.operands[2].type, t)
        return self.b.select(cond, a, b)

    def minmax(self, op):
        t = op.results[0].type
        a, b = self.operands_as(op, t)
        is_max = op.prim in ("max", "maximum")
        if t.is_float:
            pred = ">" if is_max else "<"
            # Python's max(a, b) keeps a unless b is larger (b > a)
            return self.b.select(self.b.fcmp_ordered(pred, b, a), b, a)
        pred = ">" if is_max else "<"
        return self.b.select(self.b.icmp_signed(pred, b, a), b, a)

    def math(self, op):
        t = op.results[0].type
        dtype = t.dtype if t.is_float else "f64"
        args = [self.convert(self.v(x), x.type, T.Scalar(dtype)) for x in op.operands]
        name = op.prim
        if name in ("floor", "ceil", "trunc", "round", "sqrt"):
            value = self.intrinsic(f"llvm.{name if name != 'round' else 'roundeven'}", args)
        else:
            value = self.call_math(name, args, dtype)
        if t.is_int:
            return self.b.fptosi(value, _LL["i64"])
        return value

    def intrinsic(self, name, args):
        t = args[0].type
        fn = self.module.declare_intrinsic(name, [t], ir.FunctionType(t, [t] * len(args)))
        return self.b.call(fn, args)

    def call_math(self, name, args, dtype):
        symbol = name + ("f" if dtype == "f32" else "")
        fn = self.module.globals.get(symbol)
        if fn is None:
            ty = _LL[dtype]
            fn = ir.Function(self.module, ir.FunctionType(ty, [ty] * len(args)), name=symbol)
        return self.b.call(fn, args)

    def assertion(self, op):
        self.messages.append(op.attrs.get("message") or
                             f"assert {op.attrs.get('source', '')} failed")
        cond = self.v(op.operands[0])
        self.check(self.b.not_(cond), ASSERTION + len(self.messages) - 1)

    def logical_and(self, op):
        return self.b.and_(self.v(op.operands[0]), self.v(op.operands[1]))


_RULES = {
    "const": _Lowering.const, "add": _Lowering.arith, "sub": _Lowering.arith,
    "mul": _Lowering.arith, "div": _Lowering.div, "floordiv": _Lowering.floor_ops,
    "mod": _Lowering.floor_ops, "pow": _Lowering.pow, "neg": _Lowering.neg,
    "abs": _Lowering.abs, "cast": _Lowering.cast, "select": _Lowering.select,
    "not": _Lowering.logical_not, "truth": _Lowering.truth, "and": _Lowering.logical_and,
    "min": _Lowering.minmax, "max": _Lowering.minmax, "maximum": _Lowering.minmax,
    "minimum": _Lowering.minmax, "assert": _Lowering.assertion,
    "if": lambda self, op: self.lower_if(op), "for": lambda self, op: self.lower_for(op),
    "while": lambda self, op: self.lower_while(op),
}
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    _RULES[_name] = _Lowering.compare
for _name in ("sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "tanh", "sinh",
              "cosh", "asin", "acos", "atan", "log2", "log10", "erf", "erfc", "floor", "ceil",
              "trunc", "round", "atan2", "hypot", "fmod"):
    _RULES[_name] = _Lowering.math


class Compiled:
    """A native function with a ctypes entry point; keeps its JIT resources alive."""

    def __init__(self, fn):
        from adcompile.backends.llvm import jit

        lowered = lower_function(fn)
        self.lowered = lowered
        self.module = jit.optimize(lowered.text)
        address, self._tracker = jit.load(self.module, lowered.name)
        ret = lowered.result_type
        if not isinstance(ret, T.Scalar):
            raise NotImplementedError("the LLVM backend returns scalars only for now")
        self._out = _C[ret.dtype]()
        self._out_ref = ctypes.byref(self._out)
        argtypes = [_C[t.dtype] for t in lowered.param_types] + [ctypes.c_void_p]
        self._cfunc = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(address)
        self._convert = _converter(ret)

    def __call__(self, *args):
        status = self._cfunc(*args, self._out_ref)
        if status:
            raise _error(status, self.lowered.messages)
        return self._convert(self._out.value)

    def llvm_ir(self):
        return str(self.module)

    def asm(self):
        from adcompile.backends.llvm import jit

        return jit.assembly(self.module)


def _converter(t):
    from adcompile.ir.interp import convert

    return lambda value: convert(value, t)


def _error(status, messages):
    if status == ZERO_DIVISION:
        return ZeroDivisionError("division by zero")
    return AssertionError(messages[status - ASSERTION])

"""IR -> LLVM IR: the kernel of a compiled function, one lowering rule per primitive.

Every IR value becomes a fixed list of LLVM values ("flattening", `values.py`): a scalar is
one register; an array is (owner, data pointer, shape[n], strides[n]) with strides counted in
elements, so an array argument is read once by the entry point and a view (`a[i]`, `x[::2]`,
`x.T`) is just pointer arithmetic; a tuple is its items' lists concatenated; a tape is a
pointer to a {buffer, top, capacity} slot the kernel owns. Loops and branches become LLVM
control flow and merge flattened values with one phi per component.

The kernel is `i32 kernel(ctx*, flattened params..., out*)`. It returns 0, or the code of
the error the Python function would have raised (see `Kernel.errors`); every exit, normal or
not, goes through one cleanup block that frees the tapes. Arrays made inside the kernel are
malloc'd buffers with reference counts (`memory.py`), freed as soon as no value holds them;
the entry point hands those the function returns to numpy. Whole-array primitives lower to
loop nests (`arrays.py`), matrix factorisations to LAPACK or to our own LU (`linalg.py`).
Floats follow IEEE unless fastmath is asked for (then LLVM may reorder them, and subnormals
flush to zero: `fpenv.py`); integer division and modulo follow Python
(floor) semantics; indices wrap like Python's and are checked against the array's shape
unless boundscheck=False.
"""

import functools
import os
import linecache
import math

import llvmlite.ir as ir

from adcompile.backends.llvm import fpenv
from adcompile.backends.llvm.arrays import ARRAY_RULES, ArrayLowering
from adcompile.backends.llvm.fusion import FusionLowering, LazyV, plan
from adcompile.backends.llvm.joins import JoinLowering
from adcompile.backends.llvm.linalg import LINALG_RULES, LinalgLowering
from adcompile.backends.llvm.memory import MemoryLowering, origins
from adcompile.backends.llvm.tiles import TileLowering
from adcompile.backends.llvm.ufuncs import UfuncLowering
from adcompile.backends.llvm.parallel import ParallelLowering, enable as enable_parallel
from adcompile.backends.llvm.values import (CONTEXT, CTX_ERR, F32, F64, I1, I8, I32, I64, MEM,
                                            OK, PTR, REG, TAPE, ArrayV, Builder, JoinV, TapeV,
                                            TupleV, alloca, arrays_in, external, flat,
                                            flat_types, i64, unflat, zero)
from adcompile.ir import types as T
from adcompile.ir.nodes import walk, walk_op
from adcompile.ir.prims import ELEMENTWISE


class Kernel:
    """The lowered kernel: its LLVM function, and the errors its nonzero codes stand for."""

    def __init__(self, function, errors, param_types, result_type, layouts):
        self.function = function
        self.errors = errors  # code -> (exception name, printf-style message)
        self.param_types = param_types
        self.result_type = result_type
        self.layouts = layouts


def lower_kernel(module, fn, name, layouts, target_data, fastmath=False, boundscheck=True,
                 lapack=False, blas=False, parallel=None):
    """Add the kernel of IR function `fn` to `module`. `layouts` has one entry per array
    leaf of the parameters, in order: "C" (C-contiguous, the innermost stride is 1) or "A"."""
    params = [t for p in fn.params for t in flat_types(p.type)]
    result_type = fn.result_type if fn.result_type is not None else T.NONE
    fnty = ir.FunctionType(I32, [PTR] + params + [PTR])
    func = ir.Function(module, fnty, name=name)
    func.linkage = "internal"
    lowering = _Lowering(module, func, fastmath, boundscheck)
    lowering.target_data = target_data
    lowering.origin_of = origins(fn)
    if FUSE:
        lowering.fusion = plan(fn)
        lowering.apart = lowering.fusion.apart
    lowering.lapack = lapack
    lowering.blas = blas
    lowering.array_program = any(isinstance(r.type, T.Array) for op in walk(fn.body)
                                 for r in op.results)
    enable_parallel(module, parallel)  # None: every loop serial (parallel.py)
    lowering.start()
    args = iter(func.args[1:-1])
    layout_iter = iter(layouts)
    for p in fn.params:
        value = unflat(p.type, args)
        lowering.values[p] = lowering.apply_layout(value, layout_iter)
        _set_name(value, p.name)
    lowering.block(fn.body)
    lowering.finish()
    func = fpenv.wrap(module, func, fastmath)
    return Kernel(func, lowering.errors, [p.type for p in fn.params], result_type, layouts)


def _set_name(value, name):
    if name and isinstance(value, ir.Argument):
        value.name = name.replace(".", "_")


class ErrorTable(dict):
    """code -> (exception name, printf-style message) of a function's failures; codes start
    at 2 (0 is success, 1 an exception already set). code_of gives an error already listed
    its code again; add always gives a new one (a run of codes must stay consecutive)."""

    def __init__(self):
        super().__init__()
        self.codes = {}

    def add(self, exception, message):
        code = len(self) + 2
        self[code] = (exception, message)
        self.codes.setdefault((exception, message), code)
        return code

    def code_of(self, exception, message):
        code = self.codes.get((exception, message))
        return self.add(exception, message) if code is None else code


class _Lowering(ParallelLowering, MemoryLowering, ArrayLowering, LinalgLowering,
                FusionLowering, JoinLowering, TileLowering, UfuncLowering):
    def __init__(self, module, func, fastmath, boundscheck):
        # (emptied with the module once its text is printed: native.release)
        module.__dict__.setdefault("adc_lowerings", []).append(self)
        self.module = module
        self.func = func
        self.flags = ("fast",) if fastmath else ()
        self.boundscheck = boundscheck
        self.values = {}
        self.errors = ErrorTable()
        self.b = None
        self.origin_of = {}
        self._deaths = {}
        self.outlined_fns = {}  # key -> (function, result template, output types, errors)
        self.located = True  # error messages name the op's line (not in an outlined op)
        self.kernel_fn = func  # see in_kernel
        self.array_program = False  # the function makes arrays (lower_kernel; outlined_nest)
        self.loop_bodies = 0  # how many loops of this function the code being built is in
        self.last_trip = {}  # a value fusion.spare names -> i1: this trip is its loop's last
        self.exits = {}  # error code -> this function's block that leaves with it
        self.ranges = {}  # (an outlined function's errors, line) -> their codes here

    # -- function skeleton ------------------------------------------------------------------
    def start(self):
        entry = self.func.append_basic_block("entry")
        self.allocas = ir.IRBuilder(entry)
        self.status = alloca(self.allocas, I32, name="status")
        self.tapes = {}  # stack slot -> (hint, item size): memory.tape_grow_fn
        self.cleanup_bb = self.func.append_basic_block("cleanup")
        body = self.func.append_basic_block("body")
        self.b = Builder(body)
        self.ctx = self.func.args[0]
        self.out = self.func.args[-1]

    def finish(self):
        self.allocas.branch(self.func.blocks[2])
        b = ir.IRBuilder(self.cleanup_bb)
        for slot, (hint, itemsize) in self.tapes.items():
            buf, _, cap, block = (b.load(b.gep(slot, [i64(0), ir.Constant(I32, k)],
                                               source_etype=TAPE), typ=t)
                                  for k, t in enumerate(TAPE.elements))
            b.call(self.tape_done_fn(), [self.ctx, buf, block, cap, itemsize, hint])
        b.ret(b.load(self.status, typ=I32))
        if not self.b.block.is_terminated:  # the body ended without a return
            self.exit(OK)

    def exit(self, code):
        self.b.store(code if isinstance(code, ir.Value) else ir.Constant(I32, code),
                     self.status)
        self.b.branch(self.cleanup_bb)

    def error(self, exception, message, loc):
        """A new error code for `exception(message)` raised at `loc`."""
        return self.errors.code_of(exception, message + (_where(loc) if self.located else ""))

    def check(self, bad, code):
        """Leave through the cleanup block with `code` when `bad` is true (one exit block per
        code and function: the checks of one line share it)."""
        fail_bb = self.exits.get(code)
        if fail_bb is None:
            here = self.b.block
            fail_bb = self.exits[code] = self.func.append_basic_block("fail")
            self.b.position_at_end(fail_bb)
            self.exit(code)
            self.b.position_at_end(here)
        cont_bb = self.func.append_basic_block("ok")
        self.b.cbranch(bad, fail_bb, cont_bb)
        self.b.position_at_end(cont_bb)

    def libc(self, name, ret, args):
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
        return fn

    def symbol(self, name):
        """An object or function of the running interpreter, bound when the code is linked."""
        return external(self.module, name)

    def call_symbol(self, name, ret, args, values):
        """Call a C function of the running process whose address is bound at link time."""
        return self.b.call(self.libc(name, ret, args), values)

    def apply_layout(self, value, layouts):
        if isinstance(value, ArrayV):
            value.origin = "arg"
            if next(layouts) == "C":
                value.strides = self.c_strides(value.shape)
            return value
        if isinstance(value, TupleV):
            value.items = [self.apply_layout(v, layouts) for v in value.items]
        return value

    def c_strides(self, shape):
        if not shape:  # a 0-d array has no strides
            return []
        strides = [i64(1)]
        for n in reversed(shape[1:]):
            strides.insert(0, self.b.mul(strides[0], n))
        return strides

    def v(self, value):
        return self.values[value]

    def scalar_rule(self, prim):
        return SCALAR_RULES[prim]

    # -- blocks -----------------------------------------------------------------------------
    def block(self, block):
        """Lower the ops of `block`; returns its terminator's operands (flattened values).
        Arrays a value holds are released after the op that uses the value last; what the
        terminator passes on is retained first (see memory.py)."""
        dying = self.deaths_of(block)
        self.release_dead(dying.get(-1, ()))
        for k, op in enumerate(block.ops):
            if op.prim in ("yield", "condition", "return"):
                passed = [self.v(x) for x in op.operands]
                for value in passed:
                    self.retain(value)
                self.release_dead(dying.get(k, ()))
                if op.prim != "return":
                    return passed
                self.ret(op)
                return None
            if op in self.fusion.later or op in self.fusion.in_run:  # (lowered with the
                self.release_dead(dying.get(k, ()))  # first store of its group, or its run)
                continue
            if op in self.fusion.runs:
                self.tiled_run(self.fusion.runs[op])
                self.release_dead(dying.get(k, ()))
                continue
            if op in self.fusion.groups:
                self.lower_hoisted(op)
                group = self.fusion.groups[op]
                result = self.resolving_sums(group[0], lambda: self.store_group(*group))
            elif op.prim in ("iadd", "assign"):
                result = self.resolving_sums([op], lambda: self.lower_alone(op))
            else:
                result = self.lower_alone(op)
            if op.results:
                if len(op.results) == 1 and op.prim not in ("if", "for", "while"):
                    self.values[op.results[0]] = result
            self.release_dead(dying.get(k, ()))
        return None

    def lower_hoisted(self, first):
        """The constants, shapes and views standing between the stores of the group that
        `first` starts, lowered before it (they are in fusion.later)."""
        for early in self.fusion.hoisted[first]:
            self.values[early.results[0]] = self.lower_alone(early)

    def lower_alone(self, op):
        handler = RULES.get(op.prim)
        if handler is None:
            raise NotImplementedError(f"the LLVM backend does not lower '{op.prim}'")
        if self.outlines(op):
            return self.outlined(op, handler)
        return handler(self, op)

    # -- array ops in functions of their own -----------------------------------------------
    def in_kernel(self):
        """Whether code goes into the kernel itself (not into an outlined op, a parallel piece
        or an outlined loop nest). The kernel's array loop nests are outlined too
        (arrays.loops): a kernel whose loops only call outlined work is compiled with a quick
        pipeline (split.tiers), and its own code runs a few times per call."""
        return OUTLINE and self.outlined_fns is not None and self.func is self.kernel_fn

    def outlines(self, op):
        """Whether op's loop nest goes into a function of its own (see outlined)."""
        if not OUTLINE or self.outlined_fns is None:
            return False
        if op.results and op.results[0] in self.fusion.lazy:
            return False
        if op.prim in _OUTLINED:
            pass
        elif op.prim in ELEMENTWISE and len(op.results) == 1:
            if not isinstance(op.results[0].type, T.Array):
                return False
        else:
            return False
        return not any(isinstance(x.type, T.Tape) for x in op.operands)

    def outlined(self, op, handler):
        """Lower an array op in its own internal noinline function `i32 (ctx, values...,
        out*)` and call it: LLVM's O3 pipeline is superlinear in a function's size, and a
        kernel of a few hundred array ops inlined into one function took tens of seconds.
        The function's parameters are the distinct non-constant LLVM values of the operands
        (constants stay constants, shared values one parameter, so what the rule knows while
        compiling, a unit stride or two equal shapes, it still knows); functions are shared
        by every op with the same key (primitive, attributes, location, types, that pattern
        of parameters and constants, and the owners' kinds), so rk4's four identical steps
        call one function per op. The location is not part of the key: an outlined function
        numbers its errors from 2 on its own, unlocated, and each call site registers them
        with its own line and shifts a failing status into its range, so the same operation
        on the same kinds of operands at many lines (an LSTM's gates) compiles once. The
        result's components that are operand components or constants are rebuilt from them;
        the others come back through `out`."""
        values = [self.values.get(x) for x in op.operands]
        params, index = [], {}
        pattern = [_param_pattern(c, params, index) for v in values for c in flat(v)]
        key = (op.prim, repr(sorted(op.attrs.items(), key=lambda kv: kv[0])),
               tuple(repr(x.type) for x in op.operands), tuple(repr(r.type) for r in op.results),
               tuple(pattern), tuple(a.origin for v in values for a in arrays_in(v)),
               tuple(v.signature() for v in values if isinstance(v, (LazyV, JoinV))),
               tuple(p.type for p in params), op in self.apart)
        made = self.outlined_fns.get(key)
        if made is None:
            before = len(self.module.globals)
            made = self.outlined_fns[key] = self.outline(op, handler, values, params, index)
            batches = getattr(self.module, "adc_batches", None)
            if batches is not None:  # finished: LLVM may compile it now (stream.py)
                batches.finished(made[0], list(self.module.globals.values())[before:])
        fn, template, outputs, errors = made
        out_type = ir.LiteralStructType(outputs)
        out = self.scratch(out_type, "out") if outputs else ir.Constant(PTR, None)
        status = self.b.call(fn, [self.ctx] + params + [out])
        fail_bb = self.func.append_basic_block("op.fail")
        cont_bb = self.func.append_basic_block("op.ok")
        self.b.cbranch(self.b.icmp_signed("!=", status, ir.Constant(I32, OK)), fail_bb,
                       cont_bb)
        self.b.position_at_end(fail_bb)
        self.exit(self.located_status(status, errors, op.loc))
        self.b.position_at_end(cont_bb)
        comps = []
        operand_comps = None
        for kind, x in template[1]:
            if kind == "c":
                comps.append(x)
            elif kind == "p":
                comps.append(params[x])
            elif kind == "f":  # an operand's component the function recomputed
                if operand_comps is None:
                    operand_comps = [c for v in values for c in flat(v)]
                comps.append(operand_comps[x])
            else:
                comps.append(self.b.load(self.b.gep(out, [i64(0), ir.Constant(I32, x)],
                                                    source_etype=out_type), typ=outputs[x]))
        return _rebuild(template[0], iter(comps))

    def located_status(self, status, errors, loc):
        """The kernel's error code for an outlined function's failing `status`: its own
        errors (2, 3, ...) registered here, at `loc`, in order; other statuses unchanged."""
        if not errors:
            return status
        key = (tuple(errors), loc)
        if key not in self.ranges:  # a new run of codes, in order
            self.ranges[key] = [self.errors.add(exception, message + _where(loc))
                                for exception, message in errors]
        codes = self.ranges[key]
        own = self.b.icmp_signed(">=", status, ir.Constant(I32, 2))
        return self.b.select(own, self.b.add(status, ir.Constant(I32, codes[0] - 2)), status)

    def outline(self, op, handler, values, params, index):
        fnty = ir.FunctionType(I32, [PTR] + [p.type for p in params] + [PTR])
        fn = ir.Function(self.module, fnty,
                         name=f"adc.op.{op.prim}.{len(self.outlined_fns)}")
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        sub = _Lowering(self.module, fn, False, self.boundscheck)
        sub.flags = self.flags
        sub.errors = ErrorTable()  # its own, unlocated (see located_status)
        sub.located = False
        sub.origin_of = self.origin_of
        sub.apart = self.apart
        sub.target_data = getattr(self, "target_data", None)
        sub.lapack = getattr(self, "lapack", False)
        sub.blas = getattr(self, "blas", False)
        sub.outlined_fns = None  # an outlined op lowers its nested work inline
        if hasattr(self, "_scopes"):
            sub._scopes = self._scopes
        sub.start()
        args = fn.args[1:-1]
        local = _Recomputed(sub.b, {id(p): a for p, a in zip(params, args)})
        recomputed = {}  # id(a recomputed operand component) -> its index among them all
        for x, v in zip(op.operands, values):
            if v is not None:
                comps = [local(c) for c in flat(v)]
                sub.values[x] = _rebuild(v, iter(comps))
        for k, c in enumerate(c for v in values for c in flat(v)):
            if isinstance(local(c), ir.Instruction):
                recomputed.setdefault(id(local(c)), k)
        result = handler(sub, op)
        if not hasattr(self, "_scopes") and hasattr(sub, "_scopes"):
            self._scopes = sub._scopes
        arg_index = {id(a): k for k, a in enumerate(args)}
        template, outputs = [], []
        for c in flat(result):
            if isinstance(c, ir.Constant):
                template.append(("c", c))
            elif id(c) in arg_index:
                template.append(("p", arg_index[id(c)]))
            elif id(c) in recomputed:
                template.append(("f", recomputed[id(c)]))
            else:
                template.append(("o", len(outputs)))
                outputs.append(c)
        if outputs:
            out_type = ir.LiteralStructType([c.type for c in outputs])
            for k, c in enumerate(outputs):
                sub.b.store(c, sub.b.gep(sub.out, [i64(0), ir.Constant(I32, k)],
                                         source_etype=out_type))
        sub.finish()
        errors = [sub.errors[code] for code in sorted(sub.errors)]
        return fn, (result, template), [c.type for c in outputs], errors

    def ret(self, op):
        if op.operands:
            value = op.operands[0]
            for k, x in enumerate(flat(self.v(value))):
                slot = self.b.gep(self.out, [i64(0), ir.Constant(I32, k)],
                                  source_etype=ir.LiteralStructType(flat_types(value.type)))
                self.b.store(x, slot)
        self.exit(OK)

    # -- control flow -----------------------------------------------------------------------
    def phis(self, types, name=""):
        return [self.b.phi(t, name=name) for t in types]

    def bind(self, results, values):
        for r, value in zip(results, values):
            self.values[r] = value

    def lower_if(self, op):
        then_bb = self.func.append_basic_block("then")
        else_bb = self.func.append_basic_block("else")
        merge_bb = self.func.append_basic_block("endif")
        self.b.cbranch(self.v(op.operands[0]), then_bb, else_bb)
        incoming = []
        for region, bb in zip(op.regions, (then_bb, else_bb)):
            self.b.position_at_end(bb)
            yielded = self.block(region)
            if yielded is None or self.b.block.is_terminated:
                continue
            incoming.append(([self.coerce(y, r.type) for y, r in zip(yielded, op.results)],
                             self.b.block))
            self.b.branch(merge_bb)
        self.b.position_at_end(merge_bb)
        results = []
        for k, r in enumerate(op.results):
            types = flat_types(r.type)
            phis = self.phis(types, r.name or "")
            for yielded, bb in incoming:
                for phi, x in zip(phis, flat(yielded[k])):
                    phi.add_incoming(x, bb)
            results.append(self.set_origin(unflat(r.type, iter(phis)), r))
        self.bind(op.results, results)

    def coerce(self, value, t):
        """A yielded scalar converted to the type of the variable it merges into."""
        if isinstance(t, T.Scalar) and isinstance(value, ir.Value) and \
                value.type != REG[t.dtype]:
            return self.convert_reg(value, REG[t.dtype], t.dtype)
        return value

    def convert_reg(self, value, to, dtype):
        src = value.type
        if src == I1:
            return self.b.uitofp(value, to) if to in (F32, F64) else self.b.zext(value, to)
        if to == I1:
            return self.b.fcmp_unordered("!=", value, zero(src)) if src in (F32, F64) else \
                self.b.icmp_signed("!=", value, zero(src))
        if src == I64:
            return self.b.sitofp(value, to)
        if to == I64:
            return self.b.fptosi(value, to)
        return self.b.fpext(value, to) if src == F32 else self.b.fptrunc(value, to)

    def lower_for(self, op):
        if self.in_kernel() and self.array_program and _scalar_nest(op):
            self.outlined_nest(op)
            return
        start, stop, step = (self.v(x) for x in op.operands[:3])
        inits = [self.v(x) for x in op.operands[3:]]
        for value in inits:  # the carried values own their arrays
            self.retain(value)
        body = op.regions[0]
        pre = self.b.block
        head = self.func.append_basic_block("for.head")
        loop = self.func.append_basic_block("for.body")
        done = self.func.append_basic_block("for.end")
        self.b.branch(head)
        self.b.position_at_end(head)
        i = self.b.phi(I64, name=body.params[0].name or "i")
        i.add_incoming(start, pre)
        carried = []
        for p, init in zip(body.params[1:], inits):
            phis = self.phis(flat_types(p.type), p.name or "")
            for phi, x in zip(phis, flat(self.coerce(init, p.type))):
                phi.add_incoming(x, pre)
            carried.append(phis)
        going = self.going(i, stop, step)
        self.b.cbranch(going, loop, done)
        self.b.position_at_end(loop)
        self.values[body.params[0]] = i
        spare = self.fusion.spare.get(op)
        if spare:  # whether this trip is the last (tiles.py skips those values' loops)
            last = self.b.not_(self.going(self.b.add(i, step), stop, step))
            self.last_trip.update((v, last) for v in spare)
        for p, phis in zip(body.params[1:], carried):
            self.values[p] = self.set_origin(unflat(p.type, iter(phis)), p)
        yielded = self.loop_body(body)
        latch = self.b.block
        i.add_incoming(self.b.add(i, step, flags=["nsw"]), latch)
        for p, phis, y in zip(body.params[1:], carried, yielded):
            for phi, x in zip(phis, flat(self.coerce(y, p.type))):
                phi.add_incoming(x, latch)
        self.b.branch(head)
        self.b.position_at_end(done)
        self.bind(op.results, [self.set_origin(unflat(p.type, iter(phis)), r)
                               for p, r, phis in zip(body.params[1:], op.results, carried)])

    def going(self, i, stop, step):
        """Whether a for loop whose counter is i makes another trip."""
        if isinstance(step, ir.Constant):
            return self.b.icmp_signed("<" if step.constant > 0 else ">", i, stop)
        up = self.b.icmp_signed(">", step, i64(0))
        return self.b.select(up, self.b.icmp_signed("<", i, stop),
                             self.b.icmp_signed(">", i, stop))

    def loop_body(self, region):
        """self.block(region) for a region a loop runs again and again (loop_bodies counts
        them: parallel.env_for)."""
        self.loop_bodies += 1
        try:
            return self.block(region)
        finally:
            self.loop_bodies -= 1

    def outlined_nest(self, op):
        """A loop nest of scalar code in an array program's kernel (build_q's loops in gmm,
        with their tape) lowered into a noinline function of its own (parallel.outlined_range:
        it reads what it needs of the kernel through its env) that leaves the loop's results
        in the kernel's stack slots: compiled with O3 apart from the kernel, which then only
        calls work and may take the quick pipeline (split.tiers)."""
        types = [t for r in op.results for t in flat_types(r.type)]
        slots = [self.scratch(t, "nest") for t in types]

        def body(lo, hi):
            _Lowering.lower_for(self, op)  # (not in the kernel any more: lowered here)
            comps = [c for r in op.results for c in flat(self.values[r])]
            for slot, c in zip(slots, comps):
                self.b.store(c, slot)

        self.outlined_range(i64(1), body, "nest")
        loaded = iter([self.b.load(slot, typ=t) for slot, t in zip(slots, types)])
        self.bind(op.results, [unflat(r.type, loaded) for r in op.results])

    def lower_while(self, op):
        head_region, body_region = op.regions
        for x in op.operands:  # the carried values own their arrays
            self.retain(self.v(x))
        pre = self.b.block
        head = self.func.append_basic_block("while.head")
        loop = self.func.append_basic_block("while.body")
        done = self.func.append_basic_block("while.end")
        self.b.branch(head)
        self.b.position_at_end(head)
        carried = []
        for p, init in zip(head_region.params, op.operands):
            phis = self.phis(flat_types(p.type), p.name or "")
            for phi, x in zip(phis, flat(self.coerce(self.v(init), p.type))):
                phi.add_incoming(x, pre)
            carried.append(phis)
            self.values[p] = self.set_origin(unflat(p.type, iter(phis)), p)
        cond, *passed = self.loop_body(head_region)
        passed = [self.coerce(x, r.type) for x, r in zip(passed, op.results)]
        exit_bb = self.b.block
        self.b.cbranch(cond, loop, done)
        self.b.position_at_end(loop)
        for p, value in zip(body_region.params, passed):
            self.values[p] = value  # the values the head passed, which own their arrays
        yielded = self.loop_body(body_region)
        for p, phis, y in zip(head_region.params, carried, yielded):
            for phi, x in zip(phis, flat(self.coerce(y, p.type))):
                phi.add_incoming(x, self.b.block)
        self.b.branch(head)
        self.b.position_at_end(done)
        results = []
        for r, value in zip(op.results, passed):
            phis = self.phis(flat_types(r.type), r.name or "")
            for phi, x in zip(phis, flat(value)):
                phi.add_incoming(x, exit_bb)
            results.append(self.set_origin(unflat(r.type, iter(phis)), r))
        self.bind(op.results, results)

    # -- scalars ----------------------------------------------------------------------------
    def const(self, op):
        t = op.attrs["type"]
        value = op.attrs["value"]
        if t.dtype == "bool":
            return ir.Constant(I1, int(bool(value)))
        if t.dtype == "i64":
            if not -2 ** 63 <= int(value) < 2 ** 63:  # a Python int the front end folded
                self.check(ir.Constant(I1, 1), self.overflow_code(op))
                return i64(0)
            return i64(int(value))
        return ir.Constant(REG[t.dtype], float(value))

    def convert(self, value, src, dst):
        if src.dtype == dst.dtype:
            return value
        return self.convert_reg(value, REG[dst.dtype], dst.dtype)

    def operands_as(self, op, t):
        return [self.convert(self.v(x), x.type, t) for x in op.operands]

    def arith(self, op):
        t = op.results[0].type
        a, b = self.operands_as(op, t)
        if t.is_float:
            fn = {"add": self.b.fadd, "sub": self.b.fsub, "mul": self.b.fmul}[op.prim]
            return fn(a, b, flags=self.flags)
        if t.dtype == "bool":  # numpy booleans: + is or, * is and
            return {"add": self.b.or_, "mul": self.b.and_}[op.prim](a, b)
        if t.weak and not op.attrs.get("wraps"):  # Python ints do not wrap: past 64 bits
            # is an OverflowError here (derivative code recomputing a value the primal
            # computed says "wraps": modulo 2**64 is exact where the primal's fitted)
            fn = {"add": self.b.sadd_with_overflow, "sub": self.b.ssub_with_overflow,
                  "mul": self.b.smul_with_overflow}[op.prim]
            pair = fn(a, b)
            self.check(self.b.extract_value(pair, 1), self.overflow_code(op))
            return self.b.extract_value(pair, 0)
        return {"add": self.b.add, "sub": self.b.sub, "mul": self.b.mul}[op.prim](a, b)

    def python_numbers(self, op):
        """Both operands are Python numbers: Python raises ZeroDivisionError where numpy
        (any numpy scalar or array element involved) returns inf, nan or 0."""
        return all(x.type.weak for x in op.operands)

    def div(self, op):
        t = op.results[0].type
        a, b = self.operands_as(op, t)
        if self.python_numbers(op) and not op.attrs.get("ieee"):  # ieee: derivative code
            code = self.error("ZeroDivisionError", "division by zero", op.loc)
            self.check(self.b.fcmp_ordered("==", b, zero(b.type)), code)
        return self.b.fdiv(a, b, flags=self.flags)

    def floor_ops(self, op):
        t = op.results[0].type
        a, b = self.operands_as(op, t)
        if t.is_int:
            is_zero = self.b.icmp_signed("==", b, i64(0))
            minus_one = self.b.icmp_signed("==", b, i64(-1))
            if self.python_numbers(op):
                code = self.error("ZeroDivisionError", "integer division or modulo by zero",
                                  op.loc)
                self.check(is_zero, code)
                if op.prim == "floordiv":  # -2**63 // -1 is 2**63
                    self.check(self.b.and_(minus_one, self.b.icmp_signed("==", a, i64(-2**63))),
                               self.overflow_code(op))
            # sdiv/srem by 0, or of INT64_MIN by -1, are undefined in LLVM: divide by 1 then
            safe = self.b.select(self.b.or_(is_zero, minus_one), i64(1), b)
            q = self.b.sdiv(a, safe)
            r = self.b.srem(a, safe)
            adjust = self.b.and_(self.b.icmp_signed("!=", r, i64(0)),
                                 self.b.icmp_unsigned("!=", self.b.icmp_signed("<", r, i64(0)),
                                                      self.b.icmp_signed("<", b, i64(0))))
            if op.prim == "floordiv":
                value = self.b.select(adjust, self.b.sub(q, i64(1)), q)
                value = self.b.select(minus_one, self.b.neg(a), value)
            else:
                value = self.b.select(adjust, self.b.add(r, b), r)
                value = self.b.select(minus_one, i64(0), value)
            return self.b.select(is_zero, i64(0), value)  # numpy's answer for x // 0, x % 0
        if self.python_numbers(op):
            what = "float modulo by zero" if op.prim == "mod" else "float floor division by zero"
            code = self.error("ZeroDivisionError", what, op.loc)
            self.check(self.b.fcmp_ordered("==", b, zero(b.type)), code)
        value = self.float_floor(op.prim, a, b)
        if op.prim == "floordiv":  # numpy: x // 0.0 is x / 0.0 (inf or nan)
            value = self.b.select(self.b.fcmp_ordered("==", b, zero(b.type)),
                                  self.b.fdiv(a, b), value)
        return value

    def float_floor(self, prim, a, b):
        """Python's float // and %, step by step as CPython computes them."""
        zero_, one = ir.Constant(a.type, 0.0), ir.Constant(a.type, 1.0)
        raw = self.b.frem(a, b)
        div = self.b.fdiv(self.b.fsub(a, raw), b)
        nonzero = self.b.fcmp_unordered("!=", raw, zero_)
        signs_differ = self.b.icmp_unsigned("!=", self.b.fcmp_ordered("<", b, zero_),
                                            self.b.fcmp_ordered("<", raw, zero_))
        adjust = self.b.and_(nonzero, signs_differ)
        mod = self.b.select(adjust, self.b.fadd(raw, b), raw)
        mod = self.b.select(nonzero, mod, self.intrinsic("llvm.copysign", [zero_, b]))
        if prim == "mod":
            return mod
        div = self.b.select(adjust, self.b.fsub(div, one), div)
        floored = self.intrinsic("llvm.floor", [div])
        half = ir.Constant(a.type, 0.5)
        floored = self.b.select(self.b.fcmp_ordered(">", self.b.fsub(div, floored), half),
                                self.b.fadd(floored, one), floored)
        return self.b.select(self.b.fcmp_unordered("!=", div, zero_), floored,
                             self.intrinsic("llvm.copysign", [zero_, self.b.fdiv(a, b)]))

    def pow(self, op):
        t = op.results[0].type
        a, b = self.operands_as(op, t)
        if not t.is_float:
            return self.int_pow(a, b, self.overflow_code(op) if t.weak else None)
        exponent = op.operands[1]
        if exponent.owner is not None and exponent.owner.prim == "const" and \
                float(exponent.owner.attrs["value"]) == 2.0:
            value = self.b.fmul(a, a, flags=self.flags)
        else:
            value = self.libm_pow(a, b)
        lib = op.attrs.get("lib")
        if lib == "math":
            self.math_errors("pow", [a, b], value, op.loc)
        elif self.python_numbers(op) and lib != "numpy" and not op.attrs.get("ieee"):
            # np.power and derivative code: inf and nan, no errors
            self.python_pow_errors(a, b, value, op.loc)
        return value

    def libm_pow(self, a, b):
        """libm's pow (powf), which CPython's math.pow and ** and numpy's power call. Not the
        llvm.pow intrinsic: LLVM rewrites pow(2**n, x) (and pow(2**-n, x)) as exp2(n * x),
        whose product rounds (math.pow(8.0, -1.2) came out 1 ulp off, pow(2**62, -1.2) 18),
        and recognises libm's pow by its name as well, unless the declaration says
        nobuiltin (call_math's readnone stays: equal calls still merge). With fastmath=True
        the intrinsic, and whatever LLVM makes of it."""
        if self.flags:
            return self.intrinsic("llvm.pow", [a, b])
        call = self.call_math("pow", [a, b], "f32" if a.type == F32 else "f64")
        call.callee.attributes.add("nobuiltin")
        return call

    def python_pow_errors(self, a, b, value, loc):
        """CPython's float ** float: 0.0 to a negative power raises, a finite negative base to
        a finite fractional power is a complex number (which compiled code cannot return: a
        ValueError here), and a finite result too large for a float an OverflowError."""
        bld, zero_ = self.b, zero(a.type)
        code = self.error("ZeroDivisionError", "zero cannot be raised to a negative power", loc)
        self.check(bld.and_(bld.fcmp_ordered("==", a, zero_), bld.fcmp_ordered("<", b, zero_)),
                   code)
        inf = ir.Constant(a.type, math.inf)
        finite_a = bld.fcmp_ordered("<", self.intrinsic("llvm.fabs", [a]), inf)
        finite_b = bld.fcmp_ordered("<", self.intrinsic("llvm.fabs", [b]), inf)
        fractional = bld.fcmp_ordered("!=", self.intrinsic("llvm.floor", [b]), b)
        complex_ = bld.and_(bld.and_(bld.fcmp_ordered("<", a, zero_), finite_a),
                            bld.and_(finite_b, fractional))
        # CPython computes that complex power, which may itself overflow
        magnitude = self.libm_pow(self.intrinsic("llvm.fabs", [a]), b)
        huge = bld.fcmp_ordered("==", magnitude, inf)
        code = self.error("OverflowError", "complex exponentiation: result too large", loc)
        self.check(bld.and_(complex_, huge), code)
        code = self.error("ValueError", "a negative float raised to a fractional power is a "
                          "complex number, which compiled code does not compute", loc)
        self.check(complex_, code)
        code = self.error("OverflowError", "float ** float: result too large", loc)
        self.check(bld.and_(bld.fcmp_ordered("==", self.intrinsic("llvm.fabs", [value]), inf),
                            bld.and_(finite_a, finite_b)), code)

    def overflow_code(self, op):
        return self.error("OverflowError", "integer result does not fit in 64 bits (Python "
                          "ints would grow; compiled code cannot)", op.loc)

    def int_pow(self, a, b, overflow=None):
        """Exponentiation by squaring (the exponent is known to be >= 0); with an `overflow`
        error code, a product past 64 bits raises it (Python ints)."""
        pre = self.b.block
        head = self.func.append_basic_block("ipow.head")
        body = self.func.append_basic_block("ipow.body")
        done = self.func.append_basic_block("ipow.end")
        self.b.branch(head)
        self.b.position_at_end(head)
        result = self.b.phi(I64)
        base = self.b.phi(I64)
        e = self.b.phi(I64)
        result.add_incoming(i64(1), pre)
        base.add_incoming(a, pre)
        e.add_incoming(b, pre)
        self.b.cbranch(self.b.icmp_signed(">", e, i64(0)), body, done)
        self.b.position_at_end(body)
        odd = self.b.trunc(self.b.and_(e, i64(1)), I1)
        if overflow is None:
            product, square = self.b.mul(result, base), self.b.mul(base, base)
        else:
            pair, pair2 = self.b.smul_with_overflow(result, base), \
                self.b.smul_with_overflow(base, base)
            product, square = self.b.extract_value(pair, 0), self.b.extract_value(pair2, 0)
            more = self.b.icmp_signed(">", e, i64(1))  # the square is used later
            self.check(self.b.or_(self.b.and_(odd, self.b.extract_value(pair, 1)),
                                  self.b.and_(more, self.b.extract_value(pair2, 1))), overflow)
        result.add_incoming(self.b.select(odd, product, result), self.b.block)
        base.add_incoming(square, self.b.block)
        e.add_incoming(self.b.ashr(e, i64(1)), self.b.block)
        self.b.branch(head)
        self.b.position_at_end(done)
        return result

    def neg(self, op):
        t = op.results[0].type
        (a,) = self.operands_as(op, t)
        return self.b.fneg(a) if t.is_float else self.int_neg(a, op)

    def int_neg(self, a, op):
        """-a; for a Python int, -(-2**63) does not fit in 64 bits: OverflowError."""
        if not op.results[0].type.weak:
            return self.b.neg(a)
        pair = self.b.ssub_with_overflow(i64(0), a)
        self.check(self.b.extract_value(pair, 1), self.overflow_code(op))
        return self.b.extract_value(pair, 0)

    def abs(self, op):
        t = op.results[0].type
        if t.dtype == "bool":  # np.abs(True) is True
            return self.convert(self.v(op.operands[0]), op.operands[0].type, t)
        if op.attrs.get("lib") and not t.is_int:
            return self.math(op)
        (a,) = self.operands_as(op, t)
        if t.is_float:
            return self.intrinsic("llvm.fabs", [a])
        negative = self.b.icmp_signed("<", a, i64(0))
        return self.b.select(negative, self.int_neg(self.b.select(negative, a, i64(0)), op), a)

    def compare(self, op):
        a_t, b_t = (x.type for x in op.operands)
        common = T.promote(a_t, b_t)
        a, b = self.operands_as(op, common)
        pred = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op.prim]
        if common.is_float:
            if pred == "!=":
                return self.b.fcmp_unordered(pred, a, b)
            return self.b.fcmp_ordered(pred, a, b)
        if common.dtype == "bool":
            return self.b.icmp_unsigned(pred, a, b)
        return self.b.icmp_signed(pred, a, b)

    def logical_not(self, op):
        return self.b.not_(self.convert(self.v(op.operands[0]), op.operands[0].type, T.BOOL))

    def truth(self, op):
        return self.convert(self.v(op.operands[0]), op.operands[0].type, T.BOOL)

    def cast(self, op):
        src, dst = op.operands[0].type, op.attrs["to"]
        if src.is_float and dst.is_int:
            python = src.weak or dst.weak  # np.int64(a Python float) converts it as int() does
            return self.float_to_int(self.v(op.operands[0]), python, op.loc)
        return self.convert(self.v(op.operands[0]), src, dst)

    def float_to_int(self, value, python, loc):
        """int(x), math.floor(x)... of a Python float, or to a Python int (`python`): NaN is
        a ValueError, and a value outside 64 bits an OverflowError (a Python int would grow).
        numpy's conversions give INT64_MIN for both (LLVM's fptosi of them is undefined)."""
        limit = ir.Constant(value.type, 2.0 ** 63)
        inside = self.b.and_(self.b.fcmp_ordered("<", value, limit),
                             self.b.fcmp_ordered(">=", value, self.b.fneg(limit)))
        if python:
            code = self.error("ValueError", "cannot convert float NaN to integer", loc)
            self.check(self.b.fcmp_unordered("uno", value, value), code)
            code = self.error("OverflowError", "cannot convert a float this large (or "
                              "infinite) to a 64-bit integer", loc)
            self.check(self.b.not_(inside), code)
        safe = self.b.select(inside, value, ir.Constant(value.type, 0.0))
        return self.b.select(inside, self.b.fptosi(safe, I64), i64(-2 ** 63))

    def select(self, op):
        t = op.results[0].type
        cond = self.v(op.operands[0])
        a = self.convert(self.v(op.operands[1]), op.operands[1].type, t)
        b = self.convert(self.v(op.operands[2]), op.operands[2].type, t)
        return self.b.select(cond, a, b)

    def minmax(self, op):
        t = op.results[0].type
        a, b = self.operands_as(op, t)
        bigger = op.prim in ("max", "maximum")
        pred = ">" if bigger else "<"
        if not t.is_float:  # bools compare unsigned: True is 1, not -1
            compare = self.b.icmp_unsigned if t.dtype == "bool" else self.b.icmp_signed
            return self.b.select(compare(pred, b, a), b, a)
        if op.prim in ("maximum", "minimum"):  # numpy: NaN wins, b of equals (0.0, -0.0)
            keep_a = self.b.or_(self.b.fcmp_ordered(pred, a, b),
                                self.b.fcmp_unordered("uno", a, a))
            return self.b.select(keep_a, a, b)
        # Python's max(a, b) keeps a unless b is larger
        return self.b.select(self.b.fcmp_ordered(pred, b, a), b, a)

    def sign(self, op):
        t = op.results[0].type
        (a,) = self.operands_as(op, t)
        if t.dtype == "bool":
            return a
        if t.is_float:
            one = ir.Constant(a.type, 1.0)
            pos = self.b.fcmp_ordered(">", a, zero(a.type))
            neg = self.b.fcmp_ordered("<", a, zero(a.type))
            return self.b.select(pos, one, self.b.select(neg, self.b.fneg(one), a))
        return self.b.sub(self.b.zext(self.b.icmp_signed(">", a, i64(0)), I64),
                          self.b.zext(self.b.icmp_signed("<", a, i64(0)), I64))

    # math.* of finite arguments with an infinite result: OverflowError, except where CPython
    # calls it a domain error (the logarithms of 0, math.pow(0.0, negative))
    _RANGE = {"exp": "OverflowError", "expm1": "OverflowError", "cosh": "OverflowError",
              "sinh": "OverflowError", "pow": "OverflowError", "log": "ValueError",
              "log2": "ValueError", "log10": "ValueError", "log1p": "ValueError"}

    def math(self, op):
        t = op.results[0].type
        dtype = t.dtype if t.is_float else "f64"
        if not t.is_float and op.attrs.get("keep_int"):
            (a,) = self.operands_as(op, t)
            return a  # floor/ceil/trunc/round of an integer or a bool
        args = [self.convert(self.v(x), x.type, T.Scalar(dtype)) for x in op.operands]
        name = op.prim
        if name in ("floor", "ceil", "trunc", "round", "sqrt", "copysign"):
            value = self.intrinsic(f"llvm.{'roundeven' if name == 'round' else name}", args)
        elif name == "abs":
            value = self.intrinsic("llvm.fabs", args)
        else:
            value = self.call_math(name, args, dtype)
        if op.attrs.get("lib") == "math" and not t.is_int:
            self.math_errors(name, args, value, op.loc)
        if t.is_int:
            return self.float_to_int(value, t.weak, op.loc)
        return value

    def math_errors(self, name, args, value, loc):
        """CPython's math module: NaN from arguments that are not NaN is a domain error
        (ValueError); an infinite result from finite arguments a range error."""
        b = self.b
        any_nan = functools.reduce(b.or_, [b.fcmp_unordered("uno", x, x) for x in args])
        code = self.error("ValueError", f"math domain error in math.{name}()", loc)
        self.check(b.and_(b.fcmp_unordered("uno", value, value), b.not_(any_nan)), code)
        if name not in self._RANGE:
            return
        inf = ir.Constant(value.type, math.inf)
        finite = [b.fcmp_ordered("<", self.intrinsic("llvm.fabs", [x]), inf) for x in args]
        overflow = b.and_(b.fcmp_ordered("==", self.intrinsic("llvm.fabs", [value]), inf),
                          functools.reduce(b.and_, finite))
        kind = self._RANGE[name]
        if name == "pow":  # math.pow(0.0, -1.0) is a domain error
            code = self.error("ValueError", "math domain error in math.pow()", loc)
            self.check(b.and_(overflow, b.fcmp_ordered("==", args[0], zero(value.type))), code)
        text = "math range error" if kind == "OverflowError" else "math domain error"
        code = self.error(kind, f"{text} in math.{name}()", loc)
        self.check(overflow, code)

    def intrinsic(self, name, args):
        t = args[0].type
        fn = self.module.declare_intrinsic(name, [t], ir.FunctionType(t, [t] * len(args)))
        return self.b.call(fn, args)

    def call_math(self, name, args, dtype):
        """A libm call, declared `readnone`: the code reads no errno (math_errors tests the
        result), so LLVM may merge two calls with the same argument (a derivative's
        `cos(x)` beside the primal's) and drop unused ones."""
        symbol = name + ("f" if dtype == "f32" else "")
        ty = REG[dtype]
        fn = self.libc(symbol, ty, [ty] * len(args))
        fn.attributes.add("readnone")
        return self.b.call(fn, args)

    def assertion(self, op):
        message = op.attrs.get("message") or f"assert {op.attrs.get('source', '')} failed"
        exception = op.attrs.get("exception", "AssertionError")
        code = self.errors.code_of(exception, message.replace("%", "%%"))
        cond = self.v(op.operands[0])
        self.check(self.b.not_(cond), code)

    def logical_and(self, op):
        return self.b.and_(self.v(op.operands[0]), self.v(op.operands[1]))

    def bitwise(self, op):
        """& | ^ of booleans (logical) or integers (bitwise, two's complement)."""
        a, b = self.operands_as(op, op.results[0].type)
        return {"bit_and": self.b.and_, "bit_or": self.b.or_,
                "bit_xor": self.b.xor}[op.prim](a, b)

    def invert(self, op):
        """~x: logical not of a numpy bool, -(x + 1) of an integer (a Python bool is one)."""
        (a,) = self.operands_as(op, op.results[0].type)
        return self.b.not_(a)

    # -- tuples -----------------------------------------------------------------------------
    def tuple(self, op):
        value = TupleV(self.v(x) for x in op.operands)
        self.retain(value)  # the tuple holds its arrays, as each item's value does
        return value

    def tuple_get(self, op):
        item = self.v(op.operands[0]).items[op.attrs["index"]]
        self.retain(item)
        return item

    # -- arrays -----------------------------------------------------------------------------
    def shape(self, op):
        return self.v(op.operands[0]).shape[op.attrs["axis"]]

    def size(self, op):
        size = i64(1)
        for n in self.v(op.operands[0]).shape:
            size = self.b.mul(size, n)
        return size

    def index(self, array, indices, loc, checked=True):
        """Element offset of `indices` into `array` (Python wrap-around, bounds checked)."""
        offset = None
        for axis, (idx, irtype) in enumerate(indices):
            if irtype.dtype == "bool":
                idx = self.b.zext(idx, I64)
            n = array.shape[axis]
            raw = idx
            if not (isinstance(idx, ir.Constant) and idx.constant >= 0):
                idx = self.b.select(self.b.icmp_signed("<", idx, i64(0)),
                                    self.b.add(idx, n), idx)
            if self.boundscheck and checked:
                code = self.error("IndexError", "index %lld is out of range for axis "
                                  f"{axis} with size %lld", loc)
                bad = self.b.icmp_unsigned(">=", idx, n)
                self.check_index(bad, code, raw, n)
            term = self.b.mul(idx, array.strides[axis], flags=["nsw"])
            offset = term if offset is None else self.b.add(offset, term, flags=["nsw"])
        return offset

    def check_index(self, bad, code, *details):
        """Like check(), recording two integers for the message (index and size)."""
        fail_bb = self.func.append_basic_block("out_of_range")
        cont_bb = self.func.append_basic_block("in_range")
        self.b.cbranch(bad, fail_bb, cont_bb)
        self.b.position_at_end(fail_bb)
        for k, value in enumerate(details):
            self.b.store(value, self.b.gep(self.ctx, [i64(0), ir.Constant(I32, CTX_ERR + k)],
                                           source_etype=CONTEXT))
        self.exit(code)
        self.b.position_at_end(cont_bb)

    def element(self, array, offset):
        return self.b.gep(array.data, [offset], inbounds=True, source_etype=MEM[array.dtype])

    def load_mem(self, array, ptr):
        value = self.b.load(ptr, typ=MEM[array.dtype])
        self.alias_info(value, array)
        return self.b.trunc(value, I1) if array.dtype == "bool" else value

    def store_mem(self, array, ptr, value, src_type):
        value = self.convert(value, src_type, T.Scalar(array.dtype))
        if array.dtype == "bool":
            value = self.b.zext(value, I8)
        self.alias_info(self.b.store(value, ptr), array)

    # (role, scopes) while a store group's loop is lowered (FusionLowering.store_elements):
    # role "dst" for its destinations' elements, "src" for what its values read
    group_access = None

    def alias_info(self, access, array):
        """Arrays the kernel allocates never share memory with its arguments: say so with
        scoped-noalias metadata, so LLVM may keep values in registers across a loop's
        iterations (an adjoint's g[i+1] += ... then g[i] += ... next time round). In a store
        group's loop, its values never read what its stores write (fusion._independent):
        two more scopes say that too, so the additions into one element stay in a register
        and one store is left (passes/adjacent_additions.py's groups)."""
        mine, other = [], []
        if array.origin is not None:
            alloc, args = self.scopes()
            mine, other = ([alloc], [args]) if array.origin == "alloc" else ([args], [alloc])
        if self.group_access is not None:
            role, (dst, src) = self.group_access
            mine.append(dst if role == "dst" else src)
            other.append(src if role == "dst" else dst)
        if mine:
            m = self.module
            access.set_metadata("alias.scope", m.add_metadata(mine))
            access.set_metadata("noalias", m.add_metadata(other))

    def scopes(self):
        """(the allocated arrays' alias scope, the arguments' scope)."""
        if not hasattr(self, "_scopes"):
            m = self.module
            domain = m.add_metadata([ir.MetaDataString(m, "adcompile")])
            self._scopes = tuple(m.add_metadata([ir.MetaDataString(m, name), domain])
                                 for name in ("adcompile.allocated", "adcompile.arguments"))
        return self._scopes

    def new_scopes(self, *names):
        """New alias scopes, one per name, in a domain of their own: LLVM finds two accesses
        apart when, in one domain, every scope of one is on the other's noalias list, so the
        allocated and argument scopes of an access must not count against these."""
        m = self.module
        domain = m.add_metadata([ir.MetaDataString(m, "adcompile.groups")])
        made = []
        for name in names:  # (llvmlite makes one node of equal operands: a number each)
            m.adc_scopes = getattr(m, "adc_scopes", 0) + 1
            made.append(m.add_metadata([ir.MetaDataString(m, f"{name}.{m.adc_scopes}"),
                                        domain]))
        return made

    def typed_indices(self, operands):
        return [(self.v(x), x.type) for x in operands]

    def load(self, op):
        array = self.v(op.operands[0])
        indices = self.typed_indices(op.operands[1:])
        offset = self.index(array, indices, op.loc, checked=not op.attrs.get("in_bounds"))
        k = len(indices)
        if k == array.ndim:
            ptr = self.element(array, offset) if k else array.data
            return self.load_mem(array, ptr)
        data = self.element(array, offset) if k else array.data
        row = array.view(data, array.shape[k:], array.strides[k:])
        self.retain(row)
        return row

    def store(self, op):
        array = self.v(op.operands[0])
        value = op.operands[-1]
        offset = self.index(array, self.typed_indices(op.operands[1:-1]), op.loc,
                            checked=not op.attrs.get("in_bounds"))
        ptr = self.element(array, offset) if offset is not None else array.data
        stored = self.v(value)
        if value.type.is_float and array.dtype == "i64":  # numpy converts as int() does
            stored, value_type = self.float_to_int(stored, True, op.loc), T.I64
        else:
            value_type = value.type
        self.store_mem(array, ptr, stored, value_type)

    def add_at(self, op):
        """array[idx] += value; a whole sub-array when value is an array (a seed) or when
        fewer indices than dimensions are given (a scalar broadcast)."""
        array = self.v(op.operands[0])
        value_ir = op.operands[-1]
        value = self.v(value_ir)
        indices = self.typed_indices(op.operands[1:-1])
        # adjoint index values were checked when the primal loaded through them
        offset = self.index(array, indices, op.loc, checked=False)
        data = self.element(array, offset) if offset is not None else array.data
        rest = ArrayV(array.dtype, array.obj, data, array.shape[len(indices):],
                      array.strides[len(indices):], array.origin)
        if isinstance(value, ArrayV):
            for axis in range(rest.ndim):
                code = self.error("ValueError", "cannot add an array of length %lld along "
                                  f"axis {axis} of one of length %lld", op.loc)
                bad = self.b.icmp_signed("!=", value.shape[axis], rest.shape[axis])
                self.check_index(bad, code, value.shape[axis], rest.shape[axis])

        def add(offsets):
            ptr = self.element(rest, offsets[0]) if offsets[0] is not None else rest.data
            if isinstance(value, ArrayV):
                src = self.element(value, offsets[1]) if offsets[1] is not None else value.data
                inc, inc_type = self.load_mem(value, src), T.Scalar(value.dtype)
            else:
                inc, inc_type = value, value_ir.type
            t = T.Scalar(rest.dtype)
            old = self.load_mem(rest, ptr)
            inc = self.convert(inc, inc_type, t)
            new = self.b.fadd(old, inc, flags=self.flags) if t.is_float else self.b.add(old, inc)
            self.store_mem(rest, ptr, new, t)

        others = [value] if isinstance(value, ArrayV) else []
        self.nest(rest, others, add)

    def nest(self, array, others, body):
        """Loops over every element of `array` (and the same positions of `others`); calls
        body([offset in array, offsets in others...]) innermost."""
        def level(axis, offsets):
            if axis == array.ndim:
                body(offsets)
                return
            pre = self.b.block
            head = self.func.append_basic_block("each.head")
            loop = self.func.append_basic_block("each.body")
            done = self.func.append_basic_block("each.end")
            self.b.branch(head)
            self.b.position_at_end(head)
            i = self.b.phi(I64)
            i.add_incoming(i64(0), pre)
            self.b.cbranch(self.b.icmp_signed("<", i, array.shape[axis]), loop, done)
            self.b.position_at_end(loop)
            new = []
            for a, off in zip([array] + others, offsets):
                term = self.b.mul(i, a.strides[axis])
                new.append(term if off is None else self.b.add(off, term))
            level(axis + 1, new)
            i.add_incoming(self.b.add(i, i64(1)), self.b.block)
            self.b.branch(head)
            self.b.position_at_end(done)

        level(0, [None] * (1 + len(others)))

    def alloc(self, op):
        """np.zeros/ones/empty/full inside the kernel: a new buffer (numpy's ValueError for a
        negative size)."""
        ndim, dtype, fill = op.attrs["ndim"], op.attrs["dtype"], op.attrs["fill"]
        dims = [self.convert(self.v(x), x.type, T.I64) for x in op.operands[:ndim]]
        for n in dims:
            code = self.error("ValueError", "negative dimensions are not allowed", op.loc)
            self.check(self.b.icmp_signed("<", n, i64(0)), code)
        array = self.new_array(dtype, dims, op.loc)
        if fill == 0:
            self.zero_fill(array)
        elif fill is not None:
            t = T.Scalar(dtype)
            if fill == "value":
                source = op.operands[ndim]
                value = self.convert(self.v(source), source.type, t)
            else:
                value = self.convert(self.const_of(fill), T.FLOAT if isinstance(fill, float)
                                     else T.INT, t)
            self.fill(array, value, t)
        return array

    def const_of(self, value):
        if isinstance(value, bool):
            return ir.Constant(I1, int(value))
        if isinstance(value, int):
            return i64(value)
        return ir.Constant(F64, float(value))

    # -- tapes ------------------------------------------------------------------------------
    def tape_item_type(self, item):
        return ir.LiteralStructType([I8 if t == I1 else t for t in flat_types(item)])

    def tape_field(self, slot, k):
        return self.b.gep(slot, [i64(0), ir.Constant(I32, k)], source_etype=TAPE)

    def tape_new(self, op):
        slot = alloca(self.allocas, TAPE, (op.results[0].name or "tape").replace(".", "_"))
        self.allocas.store(ir.Constant(TAPE, [None, 0, 0, None]), slot)
        self.tapes[slot] = (self.tape_hint(), self.tape_item_size(op.results[0].type.item))
        # a tape made again (inside a loop) starts empty and keeps its buffer
        self.b.store(i64(0), self.tape_field(slot, 1))
        return TapeV(slot, op.attrs["item"])

    def tape_item_size(self, item):
        return i64(self.tape_item_type(item).get_abi_size(self.target_data))

    def tape_grow(self, slot, needed):
        """Make the buffer hold `needed` items (at least double the old capacity)."""
        fields = [self.tape_field(slot, k) for k in range(4)]
        old = [self.b.load(field, typ=t) for field, t in zip(fields, TAPE.elements)]
        hint, size = self.tapes[slot]
        hint = self.b.load_atomic(hint, "monotonic", 8, typ=I64)
        grown = self.b.call(self.tape_grow_fn(), [self.ctx] + old + [needed, hint, size])
        buf = self.b.extract_value(grown, 0)
        code = self.error("MemoryError", "no memory left for the reverse pass's tape", None)
        self.check(self.b.icmp_unsigned("==", buf, ir.Constant(PTR, None)), code)
        for k, field in ((0, fields[0]), (1, fields[2]), (2, fields[3])):
            self.b.store(self.b.extract_value(grown, k), field)

    def tape_push(self, op):
        tape, value = self.v(op.operands[0]), self.v(op.operands[1])
        item_type = self.tape_item_type(op.operands[0].type.item)
        top = self.b.load(self.tape_field(tape.slot, 1), typ=I64)
        cap = self.b.load(self.tape_field(tape.slot, 2), typ=I64)
        with self.b.if_then(self.b.icmp_signed(">=", top, cap), likely=False):
            self.tape_grow(tape.slot, self.b.add(top, i64(1)))
        buf = self.b.load(self.tape_field(tape.slot, 0), typ=PTR)
        slot = self.b.gep(buf, [top], source_etype=item_type)
        value = self.coerce(value, op.operands[0].type.item)
        self.retain(value)  # the tape holds the arrays it keeps; tape_pop hands them on
        for k, x in enumerate(flat(value)):
            if x.type == I1:
                x = self.b.zext(x, I8)
            self.b.store(x, self.b.gep(slot, [i64(0), ir.Constant(I32, k)],
                                       source_etype=item_type))
        self.b.store(self.b.add(top, i64(1)), self.tape_field(tape.slot, 1))

    def tape_pop(self, op):
        tape = self.v(op.operands[0])
        item = op.operands[0].type.item
        item_type = self.tape_item_type(item)
        top = self.b.sub(self.b.load(self.tape_field(tape.slot, 1), typ=I64), i64(1))
        self.b.store(top, self.tape_field(tape.slot, 1))
        buf = self.b.load(self.tape_field(tape.slot, 0), typ=PTR)
        slot = self.b.gep(buf, [top], source_etype=item_type)
        values = []
        for k, t in enumerate(flat_types(item)):
            x = self.b.load(self.b.gep(slot, [i64(0), ir.Constant(I32, k)],
                                       source_etype=item_type), typ=I8 if t == I1 else t)
            values.append(self.b.trunc(x, I1) if t == I1 else x)
        value = unflat(item, iter(values))
        r = op.results[0].type
        if isinstance(r, T.Scalar) and r.dtype != item.dtype:
            value = self.convert(value, item, r)
        return value

    def tape_size(self, op):
        return self.b.load(self.tape_field(self.v(op.operands[0]).slot, 1), typ=I64)

    def tape_reserve(self, op):
        tape = self.v(op.operands[0])
        start, stop, step = (self.v(x) for x in op.operands[1:])
        span_up = self.b.sub(stop, start)
        up = self.b.icmp_signed(">", step, i64(0))
        span = self.b.select(up, span_up, self.b.neg(span_up))
        stride = self.b.select(up, step, self.b.neg(step))
        count = self.b.sdiv(self.b.add(span, self.b.sub(stride, i64(1))), stride)
        count = self.b.select(self.b.icmp_signed(">", count, i64(0)), count, i64(0))
        top = self.b.load(self.tape_field(tape.slot, 1), typ=I64)
        needed = self.b.add(top, count)
        cap = self.b.load(self.tape_field(tape.slot, 2), typ=I64)
        with self.b.if_then(self.b.icmp_signed(">", needed, cap), likely=False):
            self.tape_grow(tape.slot, needed)


# what a loop nest outlined_nest takes may do: scalar code, elements of arrays read and
# written, a tape's scalars pushed and popped (nothing that allocates, views or returns)
_NEST_ARRAYS = frozenset(["load", "store", "add_at", "shape"])
_NEST_TAPES = frozenset(["tape_push", "tape_pop", "tape_size", "tape_reserve"])


def _scalar_nest(op):
    """Whether a `for` op and everything in it is scalar code (see outlined_nest)."""
    for inner in walk_op(op):
        if inner.prim == "return" or any(not isinstance(r.type, T.Scalar)
                                         for r in inner.results):
            return False
        for x in inner.operands:
            if isinstance(x.type, T.Array) and inner.prim not in _NEST_ARRAYS:
                return False
            if isinstance(x.type, T.Tape) and (inner.prim not in _NEST_TAPES or
                                               not isinstance(x.type.item, T.Scalar)):
                return False
            if not isinstance(x.type, (T.Scalar, T.Array, T.Tape)):
                return False
    return True


def _elementwise_or_scalar(rule):
    @functools.wraps(rule)
    def lower(self, op):
        if isinstance(op.results[0].type, T.Array):
            return self.elementwise(op)
        return rule(self, op)

    return lower


# integer arithmetic an outlined function recomputes from its parameters instead of taking
# the result as one more parameter (see outlined), at most this deep
_RECOMPUTED = frozenset(["add", "sub", "mul", "shl"])
_RECOMPUTE_DEPTH = 4


def _param_pattern(c, params, index, depth=0):
    """What an outlined function takes for the operand component c: a constant ("c"), a
    parameter ("p", its number; `params` and `index` grow), or integer arithmetic on those
    that the function recomputes ("e", ...), so that what the caller's code knew about c
    (a C-contiguous array's stride is the product of its later dimensions) is known inside:
    LLVM then folds layout tests and drops the loops of layouts that cannot occur."""
    if isinstance(c, ir.Constant):
        return "c", str(c)
    if _recomputable(c) and depth < _RECOMPUTE_DEPTH:
        return ("e", c.opname, tuple(c.flags),
                tuple(_param_pattern(x, params, index, depth + 1) for x in c.operands))
    k = index.get(id(c))
    if k is None:
        k = index[id(c)] = len(params)
        params.append(c)
    return "p", k


def _recomputable(c):
    return type(c) is ir.Instruction and c.opname in _RECOMPUTED and c.type == I64


class _Recomputed:
    """Maps an operand component of the caller to its value inside an outlined function:
    a parameter to its argument, recomputable arithmetic (_param_pattern) to the same
    arithmetic on the function's own values, emitted once each."""

    def __init__(self, builder, args):
        self.b = builder
        self.mapped = dict(args)  # id(caller's value) -> the function's value

    def __call__(self, c, depth=0):
        if isinstance(c, ir.Constant):
            return c
        found = self.mapped.get(id(c))
        if found is None:
            assert _recomputable(c) and depth < _RECOMPUTE_DEPTH, c
            ops = [self(x, depth + 1) for x in c.operands]
            found = ir.Instruction(self.b.block, c.type, c.opname, ops, "", flags=c.flags)
            self.b._insert(found)
            self.mapped[id(c)] = found
        return found


def _rebuild(value, comps):
    """A value of value's structure (dtypes, owner kinds) holding the components `comps`."""
    if isinstance(value, LazyV):
        return value.rebuilt(comps)
    if isinstance(value, JoinV):
        shape = [next(comps)]
        return JoinV(value.dtype, shape, [(next(comps), next(comps), _rebuild(v, comps))
                                          for _, _, v in value.pieces])
    if isinstance(value, ArrayV):
        obj, data = next(comps), next(comps)
        shape = [next(comps) for _ in value.shape]
        strides = [next(comps) for _ in value.strides]
        return ArrayV(value.dtype, obj, data, shape, strides, value.origin)
    if isinstance(value, TupleV):
        return TupleV([_rebuild(item, comps) for item in value.items])
    if isinstance(value, TapeV):
        return TapeV(next(comps), value.item)
    if value is None:
        return None
    return next(comps)


# array ops that run a loop nest (views and reshape stay inline; elementwise primitives with
# an array result too): see _Lowering.outlined. ADCOMPILE_LLVM_OUTLINE=0 inlines them all.
_OUTLINED = frozenset(["copy", "concatenate", "stack", "arange", "linspace", "take", "mask",
                       "assign", "iadd", "scatter_add", "mask_add", "sum", "mean", "prod",
                       "amax", "amin", "argmax", "argmin", "trace", "sum_to", "matmul",
                       "det", "inv", "cofactor", "solve"])
OUTLINE = os.environ.get("ADCOMPILE_LLVM_OUTLINE", "1") != "0"
FUSE = os.environ.get("ADCOMPILE_LLVM_FUSE", "1") != "0"  # 0: every array op computed alone


def _where(loc):
    """', at file.py:12: <the line>' for error messages (% escaped for PyErr_Format)."""
    if not loc:
        return ""
    prefix = ""
    if loc.startswith("grad of: "):
        prefix, loc = "the derivative of ", loc[len("grad of: "):]
    filename, _, line = loc.rpartition(":")
    text = linecache.getline(filename, int(line)).strip() if line.isdigit() else ""
    where = f" (in {prefix}{filename.rsplit('/', 1)[-1]}:{line}" + (f": {text})" if text
                                                                     else ")")
    return where.replace("%", "%%")


RULES = {
    "const": _Lowering.const, "add": _Lowering.arith, "sub": _Lowering.arith,
    "mul": _Lowering.arith, "div": _Lowering.div, "floordiv": _Lowering.floor_ops,
    "mod": _Lowering.floor_ops, "pow": _Lowering.pow, "neg": _Lowering.neg,
    "abs": _Lowering.abs, "cast": _Lowering.cast, "select": _Lowering.select,
    "not": _Lowering.logical_not, "truth": _Lowering.truth, "and": _Lowering.logical_and,
    "min": _Lowering.minmax, "max": _Lowering.minmax, "maximum": _Lowering.minmax,
    "minimum": _Lowering.minmax, "sign": _Lowering.sign, "assert": _Lowering.assertion,
    "tuple": _Lowering.tuple, "tuple_get": _Lowering.tuple_get,
    "shape": _Lowering.shape, "size": _Lowering.size, "load": _Lowering.load,
    "store": _Lowering.store, "add_at": _Lowering.add_at, "alloc": _Lowering.alloc,
    "tape_new": _Lowering.tape_new, "tape_push": _Lowering.tape_push,
    "tape_pop": _Lowering.tape_pop, "tape_reserve": _Lowering.tape_reserve,
    "tape_size": _Lowering.tape_size,
    "if": _Lowering.lower_if, "for": _Lowering.lower_for, "while": _Lowering.lower_while,
    "bit_and": _Lowering.bitwise, "bit_or": _Lowering.bitwise, "bit_xor": _Lowering.bitwise,
    "invert": _Lowering.invert,
}
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    RULES[_name] = _Lowering.compare
for _name in ("sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "tanh", "sinh",
              "cosh", "asin", "acos", "atan", "log2", "log10", "erf", "erfc", "floor", "ceil",
              "trunc", "round", "atan2", "hypot", "fmod", "copysign"):
    RULES[_name] = _Lowering.math
# the scalar rules; an elementwise primitive with an array result runs its scalar rule on
# each element inside a loop nest (arrays.py)
SCALAR_RULES = dict(RULES)
for _name in ELEMENTWISE:
    RULES[_name] = _elementwise_or_scalar(SCALAR_RULES[_name])
RULES.update({name: getattr(_Lowering, method) for name, method in ARRAY_RULES.items()})
RULES.update({name: getattr(_Lowering, method) for name, method in LINALG_RULES.items()})

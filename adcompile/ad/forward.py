"""Forward mode (JVP) as an IR -> IR transform.

The new function takes the primal arguments followed by one tangent per differentiated
argument and returns `(result, result_dot)`. Tangent operations are interleaved with the primal
ones and control flow is kept: an `if` also yields the tangents of its results, a loop also
carries the tangents of its carried values. Only float values that depend on a differentiated
argument get a tangent (the others are a symbolic zero, `None`); which loop-carried values are
active is found by re-transforming the loop body until it is stable.

Each primitive's tangent comes from its rule in runtime/rules, run with the IR ops namespace:
for the scalar primitives of compiled code a vjp rule applied to the tangent of one operand is
that operand's contribution to the output tangent (multiplication commutes), so the tangent is
the sum of the rule's entries over the active operands.
"""

from adcompile.ad import inplace
from adcompile.ad.adjoints import (ADJOINTS, QUOTIENT, ZERO_DERIVATIVE,
                                   FLOAT_OPERANDS, float_operands, quotient_args)
from adcompile.ad.ir_ops import IROps
from adcompile.errors import ArgumentError, CompileError
from adcompile.ir import types as T
from adcompile.ir.builder import IRBuilder
from adcompile.ir.nodes import MEMORY_VIEWS, WRITES, Block, Function, Value, memory_root, walk
from adcompile.ir.prims import ELEMENTWISE
from adcompile.ad.reverse import _OLD_VALUE, _Reverse, _same_shape
from runtime.rules import RULES


# ops linear in their array operands (None: all of them; else those positions): the tangent
# is the op applied to the tangents
_LINEAR = {"sum": None, "mean": None, "copy": None, "trace": None, "stack": None,
           "concatenate": None, "reshape": (0,), "transpose": (0,), "slice": (0,), "take": (0,),
           "mask": (0,), "sum_to": (0,), "broadcast_to": (0,), "diagonal": (0,)}
# ops whose results have no tangent (integers, constants)
_CONSTANT = ("argmax", "argmin", "arange", "linspace")


# ops that only read an array operand and make nothing that shares its memory
_READS = frozenset(ELEMENTWISE) | {"shape", "size", "sum", "mean", "amax", "amin", "prod",
                                   "argmax", "argmin", "matmul", "dot", "trace"}


def _receiving_arrays(fn, depends):
    """The float arrays ops of `fn` make (not `alloc`, which op_alloc handles) into whose
    memory a value that depends on a differentiated argument is written (`depends`: reverse
    mode's activity analysis)."""
    found = set()
    for op in walk(fn.body):
        if op.prim in WRITES and op.operands[-1] in depends:
            root = memory_root(op.operands[0])
            if root.owner is not None and root.owner.prim != "alloc" and \
                    isinstance(root.type, T.Array) and root.type.dtype in ("f32", "f64"):
                found.add(root)
    return found


def _constant_arrays(fn, depends):
    """The arrays `alloc` makes in `fn` whose elements never depend on a differentiated
    argument: each use of their memory (through views too) reads it, or writes a value that
    does not depend on one (`depends`: every value that does, reverse mode's activity
    analysis). Such an array is a constant, so it has no tangent; a tangent of zeros made
    0 * inf = nan of a derivative whose reverse mode is 0 (an element of np.zeros dividing:
    fuzz seed 2619663773223; an array filled with -inf in a loop, then arctan2 of an
    element: fuzz seed 589792254069)."""
    made, used = set(), set()
    for op in walk(fn.body):
        if op.prim == "alloc":
            made.update(op.results)
        if op.prim in _READS or (op.prim == "load" and isinstance(op.results[0].type,
                                                                   T.Scalar)):
            continue  # an element load reads; a load of a sub-array is a view
        if op.prim in MEMORY_VIEWS:
            continue  # a view: its uses count, as uses of the memory it views
        if op.prim in WRITES:
            if op.operands[-1] in depends:
                used.add(memory_root(op.operands[0]))
            continue  # (the value, indices and masks are read)
        used.update(memory_root(v) for v in op.operands if isinstance(v.type, T.Array))
    return made - used


def jvp_function(fn, active):
    """The JVP of IR function `fn`; `active[i]` says whether parameter i is differentiated.
    In-place updates whose derivative needs the array's old value are first rewritten as
    the new value stored back (ad/inplace.py), found by reverse mode's activity analysis."""
    rewritten = inplace.positions(fn, _Reverse(fn, active).needs_old_value())
    t = _Transform(inplace.assign_form(fn, rewritten) or fn, active)
    return t.run()


def _differentiable(type):
    return isinstance(type, (T.Scalar, T.Array)) and type.dtype in ("f32", "f64") or \
        isinstance(type, T.Tuple)


def _tangent_type(type):
    """The type of a tangent of a `type` value: an integer's is a float zero (zero_of), so a
    tuple (f32, int)'s is (f32, float)."""
    if isinstance(type, T.Tuple):
        return T.Tuple(tuple(_tangent_type(t) for t in type.items))
    if isinstance(type, T.Scalar) and not type.is_float:
        return T.FLOAT
    return type


class _Transform:
    def __init__(self, fn, active):
        self.fn = fn
        self.active = active
        self.val = {}
        self.tan = {}
        self.written = set()  # arrays made here that the function writes into
        self.b = IRBuilder()
        self.ops = IROps(self.b)

    def run(self):
        fn = self.fn
        params = [Value(p.type, p.name) for p in fn.params]
        tangents = []
        for old, new, on in zip(fn.params, params, self.active):
            self.val[old] = new
            if on:
                if not _differentiable(old.type):
                    raise ArgumentError(f"cannot differentiate with respect to '{old.name}', a "
                                    f"{old.type}: only float scalars and arrays have tangents")
                t = Value(old.type, f"{old.name}_dot")
                tangents.append(t)
                self.tan[old] = t
        body = Block()
        self.b.block = body
        self._zero_tangents_for_written_arrays(fn)
        activity = _Reverse(fn, self.active)
        activity.needs_old_value()  # (its analysis: every value that depends on an argument)
        self.constant = _constant_arrays(fn, activity.active)
        self.receiving = _receiving_arrays(fn, activity.active)
        self.block(fn.body)
        ret = fn.body.terminator
        result = self.val[ret.operands[0]] if ret.operands else None
        if result is None:
            raise ArgumentError("the function returns nothing, so it has no derivative")
        result_dot = self.tangent_or_zero(ret.operands[0])
        pair = self.b.value("tuple", (result, result_dot))
        self.b.emit("return", [pair], {"type": pair.type})
        return Function(f"{fn.name}_jvp", params + tangents, body, fn.filename, fn.first_line)

    def _zero_tangents_for_written_arrays(self, fn):
        """Arrays the function writes into need a tangent even when not differentiated; the
        ones it makes are noted in `written` (their tangents must be their own)."""
        differentiated = set(self.tan)
        for op in walk(fn.body):
            if op.prim not in ("store", "assign", "iadd", "scatter_add", "mask_add"):
                continue
            root = op.operands[0]
            while root.owner is not None and root.owner.prim in ("load", "slice", "transpose"):
                root = root.owner.operands[0]
            if root in differentiated:
                raise CompileError.at(
                    op.loc, f"the function writes into '{root.name}', an argument being "
                            f"differentiated; differentiate a version that writes into a new "
                            f"array (np.empty_like({root.name}) filled from {root.name})")
            if root not in self.val:  # made in the function, or a loop's block argument
                self.written.add(root)
                continue
            if root.type.dtype in ("f32", "f64"):
                self.tan[root] = self.zeros_like(self.val[root], "_dot")

    # -- blocks and ops ---------------------------------------------------------------------
    def block(self, block):
        """Transform every op of `block` but its terminator (the caller builds that)."""
        for op in block.ops[:-1]:
            shared = None
            if any(r in self.written for r in op.results):
                shared = {id(t) for t in self.tan.values()}
            handler = getattr(self, "op_" + op.prim, None)
            if handler is not None:
                handler(op)
            elif op.prim in _LINEAR:
                self.linear(op, _LINEAR[op.prim])
            elif op.prim in _CONSTANT:
                self.clone(op)
            else:
                self.scalar(op)
            if shared is not None:
                self._own_tangents(op, shared)

    def _own_tangents(self, op, shared):
        """An array the function writes into later gets a tangent of its own: a rule may
        pass an operand's tangent through (`z = x + 0.5`: z's is x's), and the writes into z's
        tangent would then land in x's, the caller's array when x is an argument. One made
        from values without tangents (`A = x * 1.0` of an x not differentiated) into which a
        differentiated value is written later (`A *= a`) gets zeros, made where it is."""
        for r in op.results:
            t = self.tan.get(r)
            if r in self.written and t is not None and id(t) in shared:
                self.tan[r] = self.b.value("copy", (t,), name=_dot(r))
            elif t is None and r in self.receiving:
                self.tan[r] = self.zeros_like(self.val[r], "_dot")

    def clone(self, op):
        new = self.b.emit(op.prim, [self.val[v] for v in op.operands], op.attrs,
                          names=[r.name for r in op.results], loc=op.loc,
                          result_types=[r.type for r in op.results])
        for old, r in zip(op.results, new.results):
            self.val[old] = r
        return new

    def scalar(self, op):
        self.clone(op)
        if not op.results:
            return
        result = op.results[0]
        if not _differentiable(result.type) or op.prim in ZERO_DERIVATIVE:
            return
        entry = ADJOINTS.get(op.prim)
        if entry is None:
            return
        rule_name, positions, args_fn = entry
        active = [i for i in positions if self.tan.get(op.operands[i]) is not None]
        if not active:
            return
        xs = [self.val[v] for v in op.operands]
        r = self.val[result]
        if op.prim in QUOTIENT:
            args = quotient_args(self.b, op, xs)
            diff_operands = list(op.operands)
        else:
            if op.prim in FLOAT_OPERANDS:
                xs = float_operands(self.b, op, xs)
            args = args_fn(op, xs, r)
            diff_operands = [op.operands[i] for i in positions]
        total = None
        for k, operand in enumerate(diff_operands):
            t = self.tan.get(operand)
            if t is None:
                continue
            needs = tuple(j == k for j in range(len(diff_operands)))
            part = RULES[rule_name](self.ops, t, needs, *args)[k]
            if isinstance(result.type, T.Array) and not _same_shape(operand, result):
                part = self.broadcast(part, r)  # a tangent has its primal's shape
            total = part if total is None else self.ops.add(total, part)
        self.tan[result] = self.b.cast(total, result.type) if total.type != result.type \
            else total
        if total.name is None:
            total.name = f"{result.name}_dot" if result.name else None

    def broadcast(self, t, like):
        """Tangent `t` (which broadcasts to `like`'s shape) as a new array of that shape."""
        dims = self.ops.shape(like)
        return self.b.value("copy", (self.b.value("broadcast_to", [t] + list(dims)),))

    # -- whole arrays -----------------------------------------------------------------------
    def linear(self, op, which=None):
        """An op linear in its array operands (sum, reshape, views...): the tangent is the
        op applied to the operands' tangents (zeros for the others)."""
        self.clone(op)
        which = range(len(op.operands)) if which is None else which
        if not any(self.tan.get(op.operands[i]) is not None for i in which):
            return
        result = op.results[0]
        if not _differentiable(result.type):
            return
        operands = [self.tangent_or_zero(v) if i in which else self.val[v]
                    for i, v in enumerate(op.operands)]
        attrs = dict(op.attrs)
        if op.prim == "stack" and "dtype" in attrs:
            attrs["dtype"] = result.type.dtype
        self.tan[result] = self.b.value(op.prim, operands, attrs, name=_dot(result))

    def op_amax(self, op):
        """Ties share the tangent evenly (as the reverse rule shares the cotangent)."""
        self.clone(op)
        t = self.tan.get(op.operands[0])
        if t is None:
            return
        x, r = self.val[op.operands[0]], self.val[op.results[0]]
        dims, keep = op.attrs.get("axis"), bool(op.attrs.get("keepdims"))
        kept = r
        if dims is not None and not keep:
            shape = self.ops.shape(x)
            kept = self.ops.reshape(r, tuple(1 if i in dims else n for i, n in enumerate(shape)))
        hit = self.ops.cast_like(self.ops.eq(x, kept), t)
        count = self.ops.sum(hit) if dims is None else self.ops.sum_dim(hit, dims, True)
        share = self.ops.mul(t, self.ops.div(hit, count))
        self.tan[op.results[0]] = self.b.value("sum", (share,), op.attrs, name=_dot(op.results[0]))

    op_amin = op_amax

    def op_prod(self, op):
        """The tangent of a product: the sum of each tangent times the product of the other
        elements (exact with zeros)."""
        self.clone(op)
        t = self.tan.get(op.operands[0])
        if t is None:
            return
        x, r = self.val[op.operands[0]], self.val[op.results[0]]
        dims, keep = op.attrs.get("axis"), bool(op.attrs.get("keepdims"))
        kept = r
        if dims is not None and not keep:
            shape = self.ops.shape(x)
            kept = self.ops.reshape(r, tuple(1 if i in dims else n for i, n in enumerate(shape)))
        others = self.ops.prod_others(x, kept, dims)
        self.tan[op.results[0]] = self.b.value("sum", (self.ops.mul(t, others),), op.attrs,
                                               name=_dot(op.results[0]))


    def op_matmul(self, op):
        self.clone(op)
        (a, b), (ta, tb) = [self.val[v] for v in op.operands], \
            [self.tan.get(v) for v in op.operands]
        parts = []
        if ta is not None:
            parts.append(self.ops.matmul(ta, b))
        if tb is not None:
            parts.append(self.ops.matmul(a, tb))
        if parts:
            total = parts[0] if len(parts) == 1 else self.ops.add(parts[0], parts[1])
            self.tan[op.results[0]] = total

    def op_det(self, op):
        self.clone(op)
        t = self.tan.get(op.operands[0])
        if t is not None:
            cof = self.ops.cofactor(self.val[op.operands[0]])
            self.tan[op.results[0]] = self.ops.sum(self.ops.mul(cof, t))

    def op_cofactor(self, op):
        """dC = tr(A^-1 dA) C - C dA^T A^-T (runtime/rules/linalg.py's cofactor)."""
        self.clone(op)
        t = self.tan.get(op.operands[0])
        if t is not None:
            a, cof = self.val[op.operands[0]], self.val[op.results[0]]
            inv_t = self.ops.mT(self.ops.inv(a))
            first = self.ops.mul(self.ops.sum(self.ops.mul(inv_t, t)), cof)
            second = self.ops.matmul(self.ops.matmul(cof, self.ops.mT(t)), inv_t)
            self.tan[op.results[0]] = self.ops.sub(first, second)

    def op_inv(self, op):
        self.clone(op)
        t = self.tan.get(op.operands[0])
        if t is not None:
            r = self.val[op.results[0]]
            self.tan[op.results[0]] = self.ops.neg(self.ops.matmul(self.ops.matmul(r, t), r))

    def op_solve(self, op):
        self.clone(op)
        (a, b), (ta, tb) = [self.val[v] for v in op.operands], \
            [self.tan.get(v) for v in op.operands]
        if ta is None and tb is None:
            return
        x = self.val[op.results[0]]
        rhs = tb
        if ta is not None:
            moved = self.ops.neg(self.ops.matmul(ta, x))
            rhs = moved if rhs is None else self.ops.add(rhs, moved)
        self.tan[op.results[0]] = self.ops.solve(a, rhs)

    def op_assign(self, op):
        self.clone(op)
        dst, value = op.operands
        t_dst, t_value = self.tan.get(dst), self.tan.get(value)
        if t_dst is None:
            if t_value is not None and dst.type.dtype in ("f32", "f64") and \
                    not self.made_constant(dst):
                raise CompileError.at(op.loc, "a value that depends on a differentiated "
                                      "argument is written into an array without a "
                                      "derivative; allocate it in the function instead")
            return
        if t_value is None:
            t_value = self.b.const(0.0, T.Scalar(t_dst.type.dtype))
        self.b.emit("assign", [t_dst, t_value])

    def op_iadd(self, op):
        self.clone(op)
        dst, value = op.operands
        t_dst, t_value = self.tan.get(dst), self.tan.get(value)
        kind = op.attrs.get("op", "add")
        if kind not in ("add", "sub"):
            if kind in ("mul", "div") and t_value is None:
                if t_dst is not None:  # d(x * c) = c dx
                    self.b.emit("iadd", [t_dst, self.val[value]], op.attrs)
                return
            if t_value is not None or t_dst is not None:  # (ad/inplace.py rewrites these)
                raise CompileError.at(op.loc, _OLD_VALUE)
            return
        if t_value is None or (t_dst is None and self.made_constant(dst)):
            return
        if t_dst is None:
            raise CompileError.at(op.loc, "a value that depends on a differentiated argument "
                                  "is added into an array without a derivative; allocate it "
                                  "in the function instead")
        self.b.emit("iadd", [t_dst, t_value], op.attrs)

    def op_scatter_add(self, op):
        self.clone(op)
        t_dst, t_value = self.tan.get(op.operands[0]), self.tan.get(op.operands[-1])
        if t_value is not None and t_dst is not None:
            index = [self.val[v] for v in op.operands[1:-1]]
            self.b.emit("scatter_add", [t_dst] + index + [t_value])

    def op_mask_add(self, op):
        self.clone(op)
        t_dst, t_value = self.tan.get(op.operands[0]), self.tan.get(op.operands[-1])
        if t_value is not None and t_dst is not None:
            self.b.emit("mask_add", [t_dst, self.val[op.operands[1]], t_value])

    def made_constant(self, array):
        """Whether `array` is memory of an array _constant_arrays found: what is written
        there depends on no differentiated argument (a tangent it has is zeros)."""
        return memory_root(array) in self.constant

    def op_const(self, op):
        self.clone(op)

    def op_cast(self, op):
        self.clone(op)
        t = self.tan.get(op.operands[0])
        to = op.attrs["to"]
        if t is not None and to.is_float:
            self.tan[op.results[0]] = self.b.cast(t, to)

    def op_load(self, op):
        self.clone(op)
        t = self.tan.get(op.operands[0])
        if t is not None:
            index = [self.val[v] for v in op.operands[1:]]
            self.tan[op.results[0]] = self.b.value("load", [t] + index,
                                                   name=_dot(op.results[0]))

    def op_store(self, op):
        self.clone(op)
        array, *index, value = op.operands
        t_array = self.tan.get(array)
        t_value = self.tan.get(value)
        if t_array is None:
            if t_value is not None and array.type.dtype in ("f32", "f64") and \
                    not self.made_constant(array):
                raise CompileError.at(op.loc, "a value that depends on a differentiated "
                                      "argument is stored into an array without a derivative; "
                                      "allocate it with np.zeros/np.empty in the function "
                                      "instead")
            return  # an int or bool array: what is stored there has no derivative
        if t_value is None:
            t_value = self.b.const(0.0, T.Scalar(t_array.type.dtype))
        self.b.emit("store", [t_array] + [self.val[v] for v in index] + [t_value])

    def op_alloc(self, op):
        self.clone(op)
        result = op.results[0]
        if result.type.dtype not in ("f32", "f64"):
            return
        ndim = op.attrs["ndim"]
        dims = [self.val[v] for v in op.operands[:ndim]]
        fill = op.attrs["fill"]
        t_fill = self.tan.get(op.operands[ndim]) if fill == "value" else None
        if t_fill is not None:
            self.tan[result] = self.b.value("alloc", dims + [t_fill],
                                            dict(op.attrs), name=_dot(result))
        elif result in self.constant:
            return  # its elements stay what they were made: no tangent, not even zeros
        else:
            attrs = dict(op.attrs, fill=0)
            self.tan[result] = self.b.value("alloc", dims, attrs, name=_dot(result))

    def op_tuple(self, op):
        self.clone(op)
        if any(self.tan.get(v) is not None for v in op.operands):
            items = [self.tangent_or_zero(v) for v in op.operands]
            self.tan[op.results[0]] = self.b.value("tuple", items)

    def op_tuple_get(self, op):
        self.clone(op)
        t = self.tan.get(op.operands[0])
        if t is not None:
            self.tan[op.results[0]] = self.b.value("tuple_get", (t,), op.attrs)

    def op_assert(self, op):
        self.clone(op)

    # -- reverse-mode programs (forward over reverse: Hessian-vector products) ---------------
    def op_tape_new(self, op):
        self.clone(op)
        item = op.results[0].type.item
        if _differentiable(item):
            tape = self.b.emit("tape_new", [], op.attrs, names=[_dot(op.results[0])],
                               result_types=[op.results[0].type]).result
            self.tan[op.results[0]] = tape

    def op_tape_push(self, op):
        self.clone(op)
        tape, value = op.operands
        t_tape = self.tan.get(tape)
        if t_tape is not None:
            self.b.emit("tape_push", [t_tape, self.tangent_or_zero(value)])

    def op_tape_reserve(self, op):
        self.clone(op)
        t_tape = self.tan.get(op.operands[0])
        if t_tape is not None:
            self.b.emit("tape_reserve", [t_tape] + [self.val[v] for v in op.operands[1:]])

    def op_tape_pop(self, op):
        self.clone(op)
        t_tape = self.tan.get(op.operands[0])
        if t_tape is not None:
            self.tan[op.results[0]] = self.b.value("tape_pop", (t_tape,),
                                                   name=_dot(op.results[0]))

    def op_add_at(self, op):
        self.clone(op)
        array, *index, value = op.operands
        t_array, t_value = self.tan.get(array), self.tan.get(value)
        if t_value is None:
            return
        if t_array is None:
            raise CompileError("internal: an accumulated array has no tangent")
        self.b.emit("add_at", [t_array] + [self.val[v] for v in index] + [t_value])

    # -- zeros ------------------------------------------------------------------------------
    def tangent_or_zero(self, old):
        t = self.tan.get(old)
        if t is not None:
            return t
        return self.zero_of(old.type, self.val[old])

    def zero_of(self, type, primal):
        if isinstance(type, T.Scalar):
            return self.b.const(0.0, type if type.is_float else T.FLOAT)
        if isinstance(type, T.Array):
            return self.zeros_like(primal, "_dot")
        if isinstance(type, T.Tuple):
            items = [self.zero_of(t, self.b.value("tuple_get", (primal,), {"index": i}))
                     for i, t in enumerate(type.items)]
            return self.b.value("tuple", items)
        raise CompileError(f"a {type} has no derivative")

    def zeros_like(self, array, suffix):
        dims = [self.b.value("shape", (array,), {"axis": i}) for i in range(array.type.ndim)]
        dtype = array.type.dtype if array.type.dtype in ("f32", "f64") else "f64"
        return self.b.value("alloc", dims, {"dtype": dtype, "ndim": array.type.ndim, "fill": 0},
                            name=f"{array.name or 'a'}{suffix}")

    # -- control flow -----------------------------------------------------------------------
    def op_if(self, op):
        cond = self.val[op.operands[0]]
        blocks, yields = [], []
        outer = self.b.block
        for region in op.regions:
            block = Block()
            self.b.block = block
            self.block(region)
            blocks.append(block)
            yields.append(region.terminator.operands)
        active = [any(self.tan.get(y[k]) is not None for y in yields)
                  for k in range(len(op.results))]
        for block, region_yields in zip(blocks, yields):
            self.b.block = block
            values = [self.val[v] for v in region_yields]
            values += [self.tangent_or_zero(v) for v, on in zip(region_yields, active) if on]
            self.b.emit("yield", values)
        self.b.block = outer
        types = [r.type for r in op.results] + [_tangent_type(r.type)
                                                for r, on in zip(op.results, active) if on]
        names = [r.name for r in op.results] + [_dot(r) for r, on in zip(op.results, active)
                                                if on]
        new = self.b.emit("if", [cond], {"result_types": types}, names=names, loc=op.loc,
                          result_types=types)
        new.regions = blocks
        self._bind_results(op.results, active, new.results)

    def _bind_results(self, results, active, new_results):
        n = len(results)
        for old, r in zip(results, new_results[:n]):
            self.val[old] = r
        extra = iter(new_results[n:])
        for old, on in zip(results, active):
            if on:
                self.tan[old] = next(extra)

    def op_for(self, op):
        start, stop, step = (self.val[v] for v in op.operands[:3])
        inits = op.operands[3:]
        body = op.regions[0]
        active = [self.tan.get(v) is not None for v in inits]
        while True:
            outer = self.b.block
            block, yields, params_dot = self._loop_body(body, body.params[1:], active,
                                                        index_param=body.params[0])
            self.b.block = outer
            grown = [a or self.tan.get(y) is not None for a, y in zip(active, yields)]
            if grown == active:
                break
            active = grown
        self._finish_loop_block(block, yields, active)
        self.b.block = outer
        operands = [start, stop, step] + [self.val[v] for v in inits] + \
            [self.tangent_or_zero(v) for v, on in zip(inits, active) if on]
        self._emit_loop(op, "for", operands, [block], active)

    def _loop_body(self, body, params, active, index_param=None, head=None):
        block = Block()
        if index_param is not None:
            new_index = Value(index_param.type, index_param.name)
            block.params.append(new_index)
            self.val[index_param] = new_index
        self._bind_params(block, params, active)
        self.b.block = block
        self.block(body)
        return block, body.terminator.operands, None

    def _bind_params(self, block, params, active):
        for p in params:
            new = Value(p.type, p.name)
            block.params.append(new)
            self.val[p] = new
        for p, on in zip(params, active):
            if on:
                t = Value(_tangent_type(p.type), _dot(p))
                block.params.append(t)
                self.tan[p] = t
            else:
                self.tan.pop(p, None)

    def _finish_loop_block(self, block, yields, active, prefix=()):
        self.b.block = block
        values = list(prefix) + [self.val[v] for v in yields]
        values += [self.tangent_or_zero(v) for v, on in zip(yields, active) if on]
        self.b.emit("yield", values)

    def _emit_loop(self, op, kind, operands, regions, active):
        types = [r.type for r in op.results] + [_tangent_type(r.type)
                                                for r, on in zip(op.results, active) if on]
        names = [r.name for r in op.results] + [_dot(r) for r, on in zip(op.results, active)
                                                if on]
        new = self.b.emit(kind, operands, {"result_types": types}, names=names, loc=op.loc,
                          result_types=types)
        new.regions = regions
        self._bind_results(op.results, active, new.results)

    def op_while(self, op):
        head, body = op.regions
        inits = op.operands
        active = [self.tan.get(v) is not None for v in inits]
        while True:
            outer = self.b.block
            head_block = Block()
            self._bind_params(head_block, head.params, active)
            self.b.block = head_block
            self.block(head)
            cond_op = head.terminator
            passed = cond_op.operands[1:]
            body_block = Block()
            self._bind_params(body_block, body.params, active)
            self.b.block = body_block
            self.block(body)
            yields = body.terminator.operands
            self.b.block = outer
            grown = [a or self.tan.get(y) is not None for a, y in zip(active, yields)]
            if grown == active:
                break
            active = grown
        self.b.block = head_block
        values = [self.val[cond_op.operands[0]]] + [self.val[v] for v in passed]
        values += [self.tangent_or_zero(v) for v, on in zip(passed, active) if on]
        self.b.emit("condition", values)
        self._finish_loop_block(body_block, yields, active)
        self.b.block = outer
        operands = [self.val[v] for v in inits] + \
            [self.tangent_or_zero(v) for v, on in zip(inits, active) if on]
        self._emit_loop(op, "while", operands, [head_block, body_block], active)


def _dot(value):
    return f"{value.name}_dot" if value.name else None

"""Whole-array primitives on the LLVM backend: each op becomes one loop nest over strided
memory, with numpy's semantics (array_impl.py is the reference the tests hold us to).

- Elementwise primitives broadcast at run time (the result shape comes from the operands'
  shapes; a broadcast axis is read with stride 0; shapes that do not broadcast raise numpy's
  ValueError naming the user's line) and run the primitive's *scalar* lowering rule on each
  element, so an element of an array computes exactly what a numpy scalar of its dtype does.
- Views (`slice`, `transpose`, `broadcast_to`, `reshape` where numpy makes a view) share
  their operand's memory and owner; new arrays are buffers (memory.py).
- Float sums and means (np.sum, np.mean, np.trace; means of integers and booleans too) add
  in numpy's order, bit for bit: pairwise sums over the pieces numpy's iterator makes
  (pairwise.py), float32 in float32. Integer sums, products, max/min and arg* keep one
  accumulator per result element and visit the reduced axes in C order (the order does not
  change them); sum_to (the adjoint of broadcasting) adds in C order unless it sums every
  element.
- Stores into arrays (`assign`, `iadd`) read a source that may overlap the destination
  through a copy, as numpy does.
Inner loops are plain counted loops over element offsets, which LLVM vectorises when strides
allow; elementwise ops fuse into the loops of their consumers (fusion.py).
"""

import llvmlite.ir as ir

from adcompile.backends.llvm import ufuncs
from adcompile.backends.llvm.fusion import LazyV, Pack
from adcompile.backends.llvm.pairwise import Cells, Locals, PairwiseLowering, _pick, \
    planning, while_loop
from adcompile.backends.llvm.values import (F64, I1, I8, I64, ITEMSIZE, MEM, PTR, REG,
                                            ArrayV, JoinV, i64, loop_hints, zero)
from adcompile.ir import types as T
from adcompile.ir.nodes import Op, Value
from adcompile.ir.prims import PRIMS

_FLOATS = ("f32", "f64")
_SUM_ACC = {"f64": "f64", "f32": "f64", "i64": "i64", "bool": "i64"}
_NO_IDENTITY = {
    "amax": "zero-size array to reduction operation maximum which has no identity",
    "amin": "zero-size array to reduction operation minimum which has no identity",
    "argmax": "attempt to get argmax of an empty sequence",
    "argmin": "attempt to get argmin of an empty sequence"}


def _unknown_inner(strides):
    """The innermost strides (of every operand, every leaf of a lazy one) that are not
    constants, each once."""
    found = {}
    for s in strides:
        inner = s[-1]
        for x in inner.items if isinstance(inner, Pack) else [inner]:
            if not isinstance(x, ir.Constant):
                found.setdefault(id(x), x)
    return list(found.values())


def _replace_inner(stride, by):
    """An innermost stride with its run-time parts x replaced by by[id(x)]."""
    if isinstance(stride, Pack):
        return Pack([_replace_inner(x, by) for x in stride.items])
    return by.get(id(stride), stride)


def accumulated(prim, dtype, result):
    """The dtype a reduction of `dtype` elements to a `result` accumulates in."""
    if prim in ("sum", "mean"):
        return "f64" if prim == "mean" else _SUM_ACC[dtype]
    return result if prim == "prod" else dtype


class ArrayLowering(PairwiseLowering):
    """The whole-array rules, mixed into the kernel's lowering (lower._Lowering)."""

    # -- loops -----------------------------------------------------------------------------
    def loop(self, n, body, start=None, kind="array"):
        """for i in range(start or 0, n): body(i); `kind` as in loop_hints."""
        first = start if start is not None else i64(0)
        pre = self.b.block
        head = self.func.append_basic_block("loop.head")
        inside = self.func.append_basic_block("loop.body")
        done = self.func.append_basic_block("loop.end")
        self.b.branch(head)
        self.b.position_at_end(head)
        i = self.b.phi(I64, name="i")
        i.add_incoming(first, pre)
        self.b.cbranch(self.b.icmp_signed("<", i, n), inside, done)
        self.b.position_at_end(inside)
        body(i)
        i.add_incoming(self.b.add(i, i64(1), flags=["nsw", "nuw"]), self.b.block)
        self.b.branch(head).set_metadata("llvm.loop", loop_hints(self.module, kind))
        self.b.position_at_end(done)

    def loops(self, shape, strides, body, bases=None, split=False):
        """Loops over every index of `shape` (C order); strides[k] are operand k's element
        strides, one per axis; body(offsets) gets each operand's element offset (from
        bases[k], default 0).

        `split` (a body that reads and writes one element per operand, cheap to emit twice):
        when some innermost strides are known only at run time (a length that may be 1 and
        broadcast, an array of any layout), two loop nests: one where they are all 1, in
        which the innermost strides are constants and the loop vectorises without checks,
        and one for any other strides, kept scalar. Left to itself LLVM makes a copy of the
        loop for each combination of broadcast operands, each vectorised with its own
        checks and remainders, for strides that are 1 at nearly every call."""
        if shape and self.in_kernel():  # (see in_kernel)
            self.outlined_range(i64(1), lambda lo, hi: self.loops(shape, strides, body, bases,
                                                                  split), "loops")
            return
        offsets = list(bases) if bases is not None else [i64(0)] * len(strides)
        unknown = _unknown_inner(strides) if split and shape else []
        if not unknown:
            self.loop_nest(shape, strides, body, offsets)
            return
        unit = ir.Constant(I1, 1)
        for stride in unknown:
            unit = self.b.and_(unit, self.b.icmp_signed("==", stride, i64(1)))
        with self.b.if_else(unit, likely=True) as (fast, other):
            with fast:
                ones = {id(x): i64(1) for x in unknown}
                self.loop_nest(shape, [s[:-1] + [_replace_inner(s[-1], ones)] for s in strides],
                               body, offsets)
            with other:
                hidden = {id(x): self.unknown_to_llvm(x) for x in unknown}
                self.loop_nest(shape, [s[:-1] + [_replace_inner(s[-1], hidden)]
                                       for s in strides], body, offsets, inner="scalar")

    def coalesced(self, shape, strides):
        """(shape, strides) with neighbouring axes a and a + 1 made one wherever every
        operand's stride along a is its stride along a + 1 times the length of a + 1, as the
        values say while compiling (numpy's iterator coalesces so at run time): the loops
        visit the same elements in the same order, in fewer and longer loops (a C-contiguous
        matrix of rows of 2 vectorises; LLVM optimises one loop instead of two)."""
        shape, strides = list(shape), [list(s) for s in strides]
        for a in reversed(range(len(shape) - 1)):
            if all(_chains(s[a], s[a + 1], shape[a + 1]) for s in strides):
                shape[a:a + 2] = [self.b.mul(shape[a], shape[a + 1])]
                for s in strides:
                    s[a:a + 2] = [s[a + 1]]
        return shape, strides

    def unknown_to_llvm(self, value):
        """`value`, which LLVM can no longer see through (an empty inline asm): the generic
        loop of a split nest would otherwise be copied again for each operand's stride that
        a select makes 0 or 1."""
        asm = ir.InlineAsm(ir.FunctionType(I64, [I64]), "", "=r,0")
        return self.b.call(asm, [value])

    def loop_nest(self, shape, strides, body, offsets, inner="array"):
        shape, strides = self.coalesced(shape, strides)

        def level(axis, offsets):
            if axis == len(shape):
                body(offsets)
                return
            self.loop(shape[axis], lambda i: level(axis + 1, [
                self.advance(off, i, s[axis]) for off, s in zip(offsets, strides)]),
                kind=inner if axis == len(shape) - 1 else "array")

        level(0, offsets)

    def advance(self, offset, i, stride):
        """offset + i * stride; a lazy value's offsets and strides are Packs (one per leaf)."""
        if isinstance(stride, Pack):
            offsets = offset.items if isinstance(offset, Pack) else [offset] * len(stride.items)
            return Pack([self.b.add(o, self.b.mul(i, s)) for o, s in zip(offsets, stride.items)])
        return self.b.add(offset, self.b.mul(i, stride))

    def zero_where(self, cond, stride):
        """The stride, or 0 where `cond` (an axis broadcast from length 1)."""
        if isinstance(stride, Pack):
            return Pack([self.zero_where(cond, s) for s in stride.items])
        if isinstance(stride, ir.Constant) and stride.constant == 0:
            return stride  # a constant, which a parallel loop's piece still sees as one
        return self.b.select(cond, i64(0), stride)

    def broadcast_stride(self, d, stride):
        """The stride of an axis of length d broadcast to another length: 0 where d is 1
        (a constant where d is one: the loops, pieces of parallel loops too, see a stride
        LLVM can vectorise with, such as a column broadcast along the rows of a matrix)."""
        if not isinstance(d, ir.Constant):
            return self.zero_where(self.b.icmp_signed("==", d, i64(1)), stride)
        if d.constant != 1:
            return stride
        return Pack([i64(0)] * len(stride.items)) if isinstance(stride, Pack) else i64(0)

    @staticmethod
    def no_stride(a):
        """The stride of an axis `a` is broadcast along (0, for each leaf of a lazy value)."""
        return Pack([i64(0)] * a.width) if isinstance(a, LazyV) else i64(0)

    def at(self, array, offset):
        return self.element(array, offset)

    def read(self, array, offset):
        if isinstance(array, LazyV):
            return self.lazy_element(array, offset)
        return self.load_mem(array, self.at(array, offset))

    def write(self, array, offset, value, dtype):
        """Store a register of `dtype` into an element, converting as numpy's unsafe casts
        do (floats to integers truncate; NaN and out-of-range values give INT64_MIN)."""
        value = self.cast_to(value, dtype, array.dtype)
        if array.dtype == "bool":
            value = self.b.zext(value, I8)
        self.alias_info(self.b.store(value, self.at(array, offset)), array)

    def cast_to(self, value, src, dst):
        if src == dst:
            return value
        if src in _FLOATS and dst == "i64":
            return self.float_to_int(value, False, None)
        return self.convert_reg(value, REG[dst], dst)

    def count(self, shape):
        n = i64(1)
        for d in shape:
            n = self.b.mul(n, d)
        return n

    def fill(self, array, value, t):
        self.parallel_loops(array.shape, [array.strides],
                            lambda offs: self.write(array, offs[0], value, t.dtype), [array])

    def zero_fill(self, array):
        """All bits zero (a new, C-contiguous buffer)."""
        size = self.b.mul(self.count(array.shape), i64(ITEMSIZE[array.dtype]))
        memset = self.module.declare_intrinsic("llvm.memset", [PTR, I64])
        self.b.call(memset, [array.data, ir.Constant(I8, 0), size, ir.Constant(I1, 0)])

    def copy_into(self, dst, src, src_strides=None):
        """dst[...] = src elementwise (same shape, or src_strides broadcasting it)."""
        strides = src_strides if src_strides is not None else src.strides
        self.parallel_loops(dst.shape, [dst.strides, strides], lambda offs: self.write(
            dst, offs[0], self.read(src, offs[1]), src.dtype), [dst])

    def copy_of(self, x, loc=None):
        out = self.new_array(x.dtype, x.shape, loc)
        self.copy_into(out, x)
        return out

    def fail_with(self, bad, exception, message, loc, *details):
        code = self.error(exception, message, loc)
        if details:
            self.check_index(bad, code, *details)
        else:
            self.check(bad, code)

    # -- broadcasting ----------------------------------------------------------------------
    def broadcast(self, arrays, ndim, loc):
        """numpy's broadcasting of `arrays` to `ndim` dimensions: (result shape, each array's
        strides in the result's axes, 0 on broadcast axes)."""
        shape = [None] * ndim
        for a in arrays:
            lead = ndim - a.ndim
            for j, d in enumerate(a.shape):
                k = lead + j
                n = shape[k]
                if n is None or n is d or _is_one(n):  # (1 stretches to d)
                    shape[k] = d
                    continue
                if _is_one(d):
                    continue
                one_d = self.b.icmp_signed("==", d, i64(1))
                bad = self.b.and_(self.b.not_(one_d),
                                  self.b.and_(self.b.icmp_signed("!=", n, i64(1)),
                                              self.b.icmp_signed("!=", n, d)))
                self.fail_with(bad, "ValueError", "operands could not be broadcast together "
                               f"(sizes %lld and %lld on axis {k} of the result)", loc, n, d)
                shape[k] = self.b.select(one_d, n, d)
        shape = [i64(1) if n is None else n for n in shape]
        return shape, [self.strides_in(a, shape) for a in arrays]

    def strides_in(self, a, shape):
        """a's strides as an operand broadcast to `shape` (a's axes aligned to the right)."""
        lead = len(shape) - a.ndim
        strides = [self.no_stride(a)] * lead
        for j, (d, s) in enumerate(zip(a.shape, a.strides)):
            if d is shape[lead + j]:
                strides.append(s)
            else:
                strides.append(self.broadcast_stride(d, s))
        return strides

    def fit_into(self, value, shape, loc, what):
        """Strides reading `value` broadcast into a destination of `shape` (numpy's
        assignment rule: the value's shape must broadcast to the destination's, extra
        leading axes of length 1 allowed)."""
        lead = len(shape) - value.ndim
        for j in range(max(0, -lead)):
            self.fail_with(self.b.icmp_signed("!=", value.shape[j], i64(1)), "ValueError",
                           f"{what}: a value of length %lld on axis {j} does not fit into an "
                           f"array of {len(shape)} dimensions", loc, value.shape[j], i64(1))
        strides = [self.no_stride(value)] * max(0, lead)
        for j in range(max(0, -lead), value.ndim):
            d, n = value.shape[j], shape[lead + j]
            if d is n:
                strides.append(value.strides[j])
                continue
            if not _is_one(d):  # (the constant 1 fits any length)
                bad = self.b.and_(self.b.icmp_signed("!=", d, i64(1)),
                                  self.b.icmp_signed("!=", d, n))
                self.fail_with(bad, "ValueError", f"{what}: could not broadcast a value of "
                               f"length %lld into length %lld (axis {lead + j} of the "
                               "destination)", loc, d, n)
            strides.append(self.broadcast_stride(d, value.strides[j]))
        return strides

    # -- elementwise -----------------------------------------------------------------------
    def elementwise(self, op):
        t = op.results[0].type
        values = [self.v(x) for x in op.operands]
        if ufuncs.replaces(op):
            return self.ufunc_elementwise(op, values)
        if any(isinstance(v, JoinV) for v in values):
            return self.join_elementwise(op, values)
        arrays = [v for v in values if isinstance(v, (ArrayV, LazyV))]
        shape, strides = self.broadcast(arrays, t.ndim, op.loc)
        if op.results[0] in self.fusion.lazy:
            return self.lazy_value(op, values, shape, strides)
        out = self.new_array(t.dtype, shape, op.loc)
        element_op, slots = self.element_op(op)
        rule = self.scalar_rule(op.prim)
        result_type = element_op.results[0].type

        def body(offsets):
            reads = iter(offsets[1:])
            for slot, v in zip(slots, values):
                if slot is not None:
                    self.values[slot] = self.read(v, next(reads))
            if op.prim == "pow" and not result_type.is_float:
                self.negative_power_check(element_op)
            self.write(out, offsets[0], rule(self, element_op), result_type.dtype)

        self.parallel_loops(shape, [out.strides] + strides, body)
        return out

    def element_op(self, op):
        """The op on one element: array operands replaced by values of their element type
        (strong numpy scalars), scalar operands kept. Returns (op, slot per operand)."""
        operands, slots = [], []
        for x in op.operands:
            if isinstance(x.type, T.Array):
                slot = Value(x.type.element, x.name)
                operands.append(slot)
                slots.append(slot)
            else:
                operands.append(x)
                slots.append(None)
        attrs = dict(op.attrs)
        if op.prim == "cast":  # astype converts as numpy does, never as int() does
            attrs["to"] = T.Scalar(attrs["to"].dtype)
        (result,) = PRIMS[op.prim].type_rule([v.type for v in operands], attrs)
        if op.prim == "pow" and isinstance(op.results[0].type, T.Array):
            result = T.Scalar(op.results[0].type.dtype)
        return Op(op.prim, operands, [result], attrs, loc=op.loc), slots

    def negative_power_check(self, op):
        exponent = op.operands[1]
        value = self.convert(self.v(exponent), exponent.type, T.I64)
        self.fail_with(self.b.icmp_signed("<", value, i64(0)), "ValueError",
                       "Integers to negative integer powers are not allowed.", op.loc)

    # -- views -----------------------------------------------------------------------------
    def transpose(self, op):
        x = self.v(op.operands[0])
        perm = op.attrs["perm"]
        if isinstance(x, LazyV):  # the same tree, its leaves read in the new order
            return LazyV(x.dtype, [x.shape[p] for p in perm], [x.strides[p] for p in perm],
                         x.node)
        view = x.view(x.data, [x.shape[p] for p in perm], [x.strides[p] for p in perm])
        self.retain(view)
        return view

    def diagonal(self, op):
        """The main diagonal of a matrix: a view whose stride is the sum of the two."""
        x = self.v(op.operands[0])
        n = self.b.select(self.b.icmp_signed("<", x.shape[0], x.shape[1]), x.shape[0],
                          x.shape[1])
        view = x.view(x.data, [n], [self.b.add(x.strides[0], x.strides[1])])
        self.retain(view)
        return view

    def strided(self, op):
        """A view of base's memory from element `offset` of its data on, with the given
        sizes and element strides (the strided primitive: unchecked)."""
        x = self.v(op.operands[0])
        offset, *geometry = [self.convert(self.v(v), v.type, T.I64) for v in op.operands[1:]]
        ndim = op.attrs["ndim"]
        data = self.b.gep(x.data, [offset], source_etype=MEM[x.dtype])
        view = x.view(data, geometry[:ndim], geometry[ndim:])
        self.retain(view)
        return view

    def slice(self, op):
        """Basic indexing: integers (checked, wrapped), slices (clipped like Python's),
        new axes; trailing axes whole. A slice of a lazy value (fusion.py) is lazy: the same
        tree over the same views of its leaves; a slice of a join (joins.py), its pieces
        clipped."""
        x = self.v(op.operands[0])
        if isinstance(x, LazyV):
            offset, shape, strides = self.indexed(op, x, [Pack([i64(0)] * x.width)] +
                                                  list(x.strides))
            return self.lazy_at(x, offset, shape, strides)
        if isinstance(x, JoinV):  # one axis, no step (fusion.py)
            bounds = iter(self.v(v) for v in op.operands[1:])
            _, has_start, has_stop, _ = op.attrs["index"][0]
            start = next(bounds) if has_start else None
            stop = next(bounds) if has_stop else None
            first, length, _ = self.slice_bounds(x.shape[0], start, stop, None, op.loc)
            return self.join_slice(x, first, length)
        offset, shape, strides = self.indexed(op, x, [i64(0)] + list(x.strides))
        data = self.b.gep(x.data, [offset], source_etype=MEM[x.dtype])
        if isinstance(op.results[0].type, T.Scalar):
            return self.load_mem(x, data)
        view = x.view(data, shape, strides)
        self.retain(view)
        return view

    def indexed(self, op, x, strides):
        """(offset, shape, strides) of slice `op` of x, whose strides are given (a Pack per
        axis for a lazy value, one stride per leaf; `strides[0]` is the offset so far)."""
        operands = iter(op.operands[1:])
        offset, strides = strides[0], strides[1:]
        shape, out, axis = [], [], 0
        for item in op.attrs["index"]:
            if item[0] == "new":
                shape.append(i64(1))
                out.append(self.no_stride(x))
                continue
            n, stride = x.shape[axis], strides[axis]
            if item[0] == "int":
                index = next(operands)
                position = self.wrap_index(self.v(index), index.type, n, axis, op.loc)
                offset = self.plus_times(offset, position, stride)
            else:
                bounds = [self.v(next(operands)) if present else None for present in item[1:]]
                start, length, step = self.slice_bounds(n, *bounds, loc=op.loc)
                offset = self.plus_times(offset, start, stride)
                shape.append(length)
                out.append(self.plus_times(self.no_stride(x), step, stride))
            axis += 1
        return offset, shape + x.shape[axis:], out + strides[axis:]

    def plus_times(self, a, n, stride):
        """a + n * stride, for a stride or a Pack of them (and a Pack a)."""
        if isinstance(stride, Pack):
            return Pack([self.b.add(p, self.b.mul(n, s))
                         for p, s in zip(a.items, stride.items)])
        return self.b.add(a, self.b.mul(n, stride))

    def wrap_index(self, index, irtype, n, axis, loc):
        """A Python index into an axis of length n: wrapped, and checked (IndexError)."""
        if irtype.dtype == "bool":
            index = self.b.zext(index, I64)
        wrapped = self.b.select(self.b.icmp_signed("<", index, i64(0)),
                                self.b.add(index, n), index)
        if self.boundscheck:
            code = self.error("IndexError", "index %lld is out of bounds for axis "
                              f"{axis} with size %lld", loc)
            self.check_index(self.b.icmp_unsigned(">=", wrapped, n), code, index, n)
        return wrapped

    def slice_bounds(self, n, start, stop, step, loc):
        """(start, length, step) of slice(start, stop, step) on an axis of length n, as
        Python's slice.indices computes them (ValueError for a zero step)."""
        b = self.b
        if step is None:
            step = i64(1)
        elif not (isinstance(step, ir.Constant) and step.constant != 0):
            self.fail_with(b.icmp_signed("==", step, i64(0)), "ValueError",
                           "slice step cannot be zero", loc)
        up = self.slice_up(n, start, stop, step)
        if isinstance(step, ir.Constant) and step.constant > 0:
            return up + (step,)
        down = self.slice_down(n, start, stop, step)
        if isinstance(step, ir.Constant):
            return down + (step,)
        positive = b.icmp_signed(">", step, i64(0))
        return (b.select(positive, up[0], down[0]), b.select(positive, up[1], down[1]), step)

    def clip(self, value, low, high):
        b = self.b
        value = b.select(b.icmp_signed("<", value, low), low, value)
        return b.select(b.icmp_signed(">", value, high), high, value)

    def slice_up(self, n, start, stop, step):
        b = self.b

        def bound(v, default):
            if v is None:
                return default
            v = b.select(b.icmp_signed("<", v, i64(0)), b.add(v, n), v)
            return self.clip(v, i64(0), n)

        first, end = bound(start, i64(0)), bound(stop, n)
        span = b.sub(end, first)
        length = b.sdiv(b.add(span, b.sub(step, i64(1))), step)
        return first, b.select(b.icmp_signed(">", span, i64(0)), length, i64(0))

    def slice_down(self, n, start, stop, step):
        b = self.b
        last = b.sub(n, i64(1))

        def bound(v, default):
            if v is None:
                return default
            v = b.select(b.icmp_signed("<", v, i64(0)), b.add(v, n), v)
            return self.clip(v, i64(-1), last)

        first, end = bound(start, last), bound(stop, i64(-1))
        span = b.sub(first, end)
        length = b.sdiv(b.add(span, b.sub(b.neg(step), i64(1))), b.neg(step))
        return first, b.select(b.icmp_signed(">", span, i64(0)), length, i64(0))

    def broadcast_to(self, op):
        x = self.v(op.operands[0])
        dims = [self.convert(self.v(d), d.type, T.I64) for d in op.operands[1:]]
        for n in dims:
            self.fail_with(self.b.icmp_signed("<", n, i64(0)), "ValueError",
                           "negative dimensions are not allowed", op.loc)
        if not isinstance(x, ArrayV):
            t = op.results[0].type
            one = self.new_array(t.dtype, [], op.loc)
            self.write(one, i64(0), x, op.operands[0].type.dtype)
            return one.view(one.data, dims, [i64(0)] * len(dims))
        if x.ndim > len(dims):
            self.fail_with(ir.Constant(I1, 1), "ValueError", "broadcast_to: the array has "
                           "more dimensions than the shape asked for", op.loc)
        strides = self.fit_into(x, dims, op.loc, "broadcast_to")
        view = x.view(x.data, dims, strides)
        self.retain(view)
        return view

    def reshape(self, op):
        """numpy's reshape (C order): a view when numpy makes one (the array is C-contiguous,
        or its axes split and merge without gaps: numpy's _attempt_nocopy_reshape; ravel:
        C-contiguous only), else a C-ordered copy."""
        b = self.b
        x = self.v(op.operands[0])
        dims = self.reshape_dims(x, op)
        strides = [self.scratch(I64, "stride") for _ in dims]
        contiguous = self.is_c_contiguous(x)
        c_strides = self.c_strides(dims)
        for slot, stride in zip(strides, c_strides):
            b.store(stride, slot)
        view = contiguous
        if dims and not op.attrs.get("ravel"):
            view = b.or_(contiguous, self.nocopy_strides(x, dims, strides))
        pre_obj, pre_data = x.obj, x.data
        copy_bb = self.func.append_basic_block("reshape.copy")
        view_bb = self.func.append_basic_block("reshape.view")
        done = self.func.append_basic_block("reshape.end")
        b.cbranch(view, view_bb, copy_bb)
        b.position_at_end(view_bb)
        self.retain(x)
        view_strides = [b.select(contiguous, c, b.load(slot, typ=I64))
                        for c, slot in zip(c_strides, strides)]
        view_end = b.block
        b.branch(done)
        b.position_at_end(copy_bb)
        copied = self.copy_of(x, op.loc)
        copy_end = b.block
        b.branch(done)
        b.position_at_end(done)
        return self.merged_array(x, (pre_obj, pre_data, view_strides), view_end,
                                 (copied.obj, copied.data, c_strides), copy_end, dims)

    def merged_array(self, x, mine, mine_end, made, made_end, shape):
        """At a join: x itself (or a view of its memory: owner, data, strides) from one
        predecessor block, a new buffer (owner, data, strides) from the other. Its owner is a
        buffer for sure only when x's is."""
        b = self.b
        merged = []
        for typ, one, other in [(PTR, mine[0], made[0]), (PTR, mine[1], made[1])] + \
                [(I64, s, o) for s, o in zip(mine[2], made[2])]:
            phi = b.phi(typ)
            phi.add_incoming(one, mine_end)
            phi.add_incoming(other, made_end)
            merged.append(phi)
        obj, data, *strides = merged
        return ArrayV(x.dtype, obj, data, list(shape), strides,
                      "alloc" if x.origin == "alloc" else None)

    def nocopy_strides(self, x, dims, slots):
        """numpy's _attempt_nocopy_reshape in C order: x's axes (those longer than 1) are
        grouped with runs of new axes of the same total length; a group of old axes without
        gaps between them is one stride sequence for the new ones. Writes the new strides
        into `slots`; i1 whether that works (false for an empty array)."""
        b = self.b
        k = max(x.ndim, 1)
        old_dims = self.scratch(ir.ArrayType(I64, k), "old_dims")
        old_strides = self.scratch(ir.ArrayType(I64, k), "old_strides")
        new_dims = self.scratch(ir.ArrayType(I64, len(dims)), "new_dims")
        new_strides = self.scratch(ir.ArrayType(I64, len(dims)), "new_strides")

        def cell(array, index, size):
            return b.gep(array, [i64(0), index], source_etype=ir.ArrayType(I64, size))

        old_n = i64(0)
        for n, stride in zip(x.shape, x.strides):  # axes of length 1 do not matter
            b.store(n, cell(old_dims, old_n, k))
            b.store(stride, cell(old_strides, old_n, k))
            old_n = b.add(old_n, b.zext(b.icmp_signed("!=", n, i64(1)), I64))
        for j, n in enumerate(dims):
            b.store(n, cell(new_dims, i64(j), len(dims)))
        # numpy's algorithm assumes a non-empty array: with a length 0 the axes' products
        # never meet, and it would read past the arrays of lengths (seed 1270583723507)
        ok = self.scratch(I1, "nocopy")
        b.store(ir.Constant(I1, 0), ok)
        with b.if_then(b.icmp_signed(">", self.count(x.shape), i64(0))):
            b.store(b.call(self.nocopy_fn(k, len(dims)), [old_n, old_dims, old_strides,
                                                           new_dims, new_strides]), ok)
            for j, slot in enumerate(slots):
                b.store(b.load(cell(new_strides, i64(j), len(dims)), typ=I64), slot)
        return b.load(ok, typ=I1)

    def nocopy_fn(self, old_size, new_n):
        """adc.nocopy_reshape.<old>.<new>(old_n, old_dims*, old_strides*, new_dims*,
        new_strides*) -> i1: numpy's algorithm, line by line, for `new_n` new axes."""
        name = f"adc.nocopy_reshape.{old_size}.{new_n}"
        fn = self.module.globals.get(name)
        if fn is not None:
            return fn
        fn = ir.Function(self.module, ir.FunctionType(I1, [I64, PTR, PTR, PTR, PTR]), name=name)
        planning(fn)
        old_n, od, ost, nd, nst = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        v = Locals(b, ("oi", "oj", "ni", "nj", "np", "op", "k"))
        old, old_st = Cells(b, od), Cells(b, ost)
        new, new_st = Cells(b, nd), Cells(b, nst)
        for var, value in (("oi", 0), ("oj", 1), ("ni", 0), ("nj", 1)):
            v[var] = i64(value)

        def grow():  # the smaller product takes the next axis
            with b.if_else(b.icmp_signed("<", v["np"], v["op"])) as (new_side, old_side):
                with new_side:
                    v["np"] = b.mul(v["np"], new[v["nj"]])
                    v["nj"] = b.add(v["nj"], i64(1))
                with old_side:
                    v["op"] = b.mul(v["op"], old[v["oj"]])
                    v["oj"] = b.add(v["oj"], i64(1))

        def no_gap():  # old axes oi..oj-1 must follow each other without gaps
            after = b.add(v["k"], i64(1))
            with b.if_then(b.icmp_signed("!=", old_st[v["k"]],
                                         b.mul(old[after], old_st[after]))):
                b.ret(ir.Constant(I1, 0))
            v["k"] = after

        def inner_stride():
            k = v["k"]
            new_st[b.sub(k, i64(1))] = b.mul(new_st[k], new[k])
            v["k"] = b.sub(k, i64(1))

        def group():
            v["np"], v["op"] = new[v["ni"]], old[v["oi"]]
            while_loop(b, lambda: b.icmp_signed("!=", v["np"], v["op"]), grow)
            v["k"] = v["oi"]
            while_loop(b, lambda: b.icmp_signed("<", v["k"], b.sub(v["oj"], i64(1))), no_gap)
            last = b.sub(v["nj"], i64(1))
            new_st[last] = old_st[b.sub(v["oj"], i64(1))]
            v["k"] = last
            while_loop(b, lambda: b.icmp_signed(">", v["k"], v["ni"]), inner_stride)
            v["ni"], v["nj"] = v["nj"], b.add(v["nj"], i64(1))
            v["oi"], v["oj"] = v["oj"], b.add(v["oj"], i64(1))

        while_loop(b, lambda: b.and_(b.icmp_signed("<", v["ni"], i64(new_n)),
                                 b.icmp_signed("<", v["oi"], old_n)), group)
        # trailing new axes (of length 1) take the last stride
        ni = v["ni"]
        some = b.icmp_signed(">=", ni, i64(1))
        last_stride = b.select(some, new_st[b.sub(b.select(some, ni, i64(1)), i64(1))], i64(1))
        v["k"] = ni

        def tail():
            new_st[v["k"]] = last_stride
            v["k"] = b.add(v["k"], i64(1))

        while_loop(b, lambda: b.icmp_signed("<", v["k"], i64(new_n)), tail)
        b.ret(ir.Constant(I1, 1))
        return fn

    def reshape_dims(self, x, op):
        b = self.b
        size = self.count(x.shape)
        dims = [self.convert(self.v(d), d.type, T.I64) for d in op.operands[1:]]
        unknown = [b.icmp_signed("==", d, i64(-1)) for d in dims]
        known = i64(1)
        n_unknown = i64(0)
        for d, u in zip(dims, unknown):
            self.fail_with(b.icmp_signed("<", d, i64(-1)), "ValueError",
                           "negative dimensions are not allowed", op.loc)
            known = b.mul(known, b.select(u, i64(1), d))
            n_unknown = b.add(n_unknown, b.zext(u, I64))
        self.fail_with(b.icmp_signed(">", n_unknown, i64(1)), "ValueError",
                       "can only specify one unknown dimension", op.loc)
        safe = b.select(b.icmp_signed("==", known, i64(0)), i64(1), known)
        inferred = b.sdiv(size, safe)
        # a constant length stays one (a broadcast along it then has a constant stride)
        dims = [d if _constant_length(d) else b.select(u, inferred, d)
                for d, u in zip(dims, unknown)]
        self.fail_with(b.icmp_signed("!=", self.count(dims), size), "ValueError",
                       "cannot reshape array of size %lld into a shape of %lld elements",
                       op.loc, size, b.mul(known, b.select(b.icmp_signed(
                           "==", n_unknown, i64(0)), i64(1), inferred)))
        return dims

    def is_c_contiguous(self, x):
        """Whether x's elements are in C order without gaps (numpy's flag: axes of length 1
        do not count; an empty array is contiguous)."""
        b = self.b
        ok = ir.Constant(I1, 1)
        expected = i64(1)
        for n, s in reversed(list(zip(x.shape, x.strides))):
            fine = b.or_(b.icmp_signed("==", n, i64(1)), b.icmp_signed("==", s, expected))
            ok = b.and_(ok, fine)
            expected = b.mul(expected, n)
        return b.or_(ok, b.icmp_signed("==", expected, i64(0)))

    # -- copies and construction -----------------------------------------------------------
    def copy(self, op):
        if op.results[0] in self.fusion.lazy:
            return self.lazy_copy(op, self.v(op.operands[0]))
        return self.copy_of(self.v(op.operands[0]), op.loc)

    def concatenate(self, op):
        axis = op.attrs["axis"]
        t = op.results[0].type
        arrays = [self.v(x) for x in op.operands]
        if op.results[0] in self.fusion.lazy:
            return self.lazy_join(op, arrays)
        first = arrays[0]
        total = i64(0)
        for k, a in enumerate(arrays):
            for d in range(first.ndim):
                if d == axis or k == 0:
                    continue
                self.fail_with(self.b.icmp_signed("!=", a.shape[d], first.shape[d]),
                               "ValueError", "all the input array dimensions except for the "
                               f"concatenation axis must match exactly, but along dimension "
                               f"{d}, the array at index {k} has size %lld and the array at "
                               f"index 0 has size %lld", op.loc, a.shape[d], first.shape[d])
            total = self.b.add(total, a.shape[axis])
        shape = list(first.shape)
        shape[axis] = total
        out = self.new_array(t.dtype, shape, op.loc)
        start = i64(0)
        for a in arrays:
            data = self.at(out, self.b.mul(start, out.strides[axis]))
            part_shape = list(shape)
            part_shape[axis] = a.shape[axis]
            if isinstance(a, JoinV):
                self.join_into(out.view(data, part_shape, out.strides), a, self.copy_into)
            else:
                self.copy_into(out.view(data, part_shape, out.strides), a)
            start = self.b.add(start, a.shape[axis])
        return out

    def stack(self, op):
        axis = op.attrs["axis"]
        t = op.results[0].type
        items = [(self.v(x), x.type) for x in op.operands]
        first = items[0][0]
        shape = list(first.shape) if isinstance(first, ArrayV) else []
        for k, (item, _) in enumerate(items[1:], 1):
            for d in range(len(shape)):
                self.fail_with(self.b.icmp_signed("!=", item.shape[d], shape[d]), "ValueError",
                               "all input arrays must have the same shape (the array at index "
                               f"{k} has size %lld on axis {d}, the first %lld)", op.loc,
                               item.shape[d], shape[d])
        out_shape = shape[:axis] + [i64(len(items))] + shape[axis:]
        out = self.new_array(t.dtype, out_shape, op.loc)
        part_strides = out.strides[:axis] + out.strides[axis + 1:]
        for k, (item, irtype) in enumerate(items):
            data = self.at(out, self.b.mul(i64(k), out.strides[axis]))
            part = out.view(data, shape, part_strides)
            if isinstance(item, ArrayV):
                self.copy_into(part, item)
            else:
                self.write(part, i64(0), item, irtype.dtype)
        return out

    def arange(self, op):
        """np.arange(start, stop, step): the length from (stop - start) / step rounded up,
        values filled as numpy fills them: v0 = start, v1 = start + step (both converted to
        the result dtype), v[i] = v0 + i * (v1 - v0)."""
        b = self.b
        t = op.results[0].type
        types = [x.type for x in op.operands]
        common = T.promote(T.promote(types[0], types[1]), types[2])
        cdtype = "i64" if common.dtype == "bool" else common.dtype
        start, stop, step = (self.convert(self.v(x), x.type, T.Scalar(cdtype))
                             for x in op.operands)
        if cdtype in _FLOATS:
            self.fail_with(b.fcmp_ordered("==", step, zero(step.type)), "ZeroDivisionError",
                           "arange: step is zero (float division by zero)", op.loc)
            q = b.fpext(b.fdiv(b.fsub(stop, start), step), F64) if cdtype == "f32" else \
                b.fdiv(b.fsub(stop, start), step)
            q = self.intrinsic("llvm.ceil", [q])
            self.fail_with(b.fcmp_unordered("uno", q, q), "ValueError",
                           "arange: cannot compute length", op.loc)
            self.fail_with(b.fcmp_ordered(">=", q, ir.Constant(F64, 2.0 ** 62)), "ValueError",
                           "Maximum allowed size exceeded", op.loc)
            length = b.select(b.fcmp_ordered(">", q, ir.Constant(F64, 0.0)),
                              b.fptosi(q, I64), i64(0))
            second = b.fadd(start, step)
        else:
            self.fail_with(b.icmp_signed("==", step, i64(0)), "ZeroDivisionError",
                           "division by zero", op.loc)
            span = b.sub(stop, start)
            # ceil(span / step) with floor division: -((-span) // step)
            q = self.floor_div_i64(b.neg(span), step)
            length = b.neg(q)
            length = b.select(b.icmp_signed(">", length, i64(0)), length, i64(0))
            second = b.add(start, step)
        out = self.new_array(t.dtype, [length], op.loc)
        first = self.cast_to(start, cdtype, t.dtype)
        second = self.cast_to(second, cdtype, t.dtype)
        delta = self.arith_of(t.dtype, "sub", second, first)

        def body(i):
            value = self.arith_of(t.dtype, "add", first, self.arith_of(
                t.dtype, "mul", self.convert_reg(i, REG[t.dtype], t.dtype)
                if t.dtype != "i64" else i, delta))
            value = b.select(b.icmp_signed("==", i, i64(1)), second, value)
            value = b.select(b.icmp_signed("==", i, i64(0)), first, value)
            self.write(out, i, value, t.dtype)

        self.loop(length, body)
        return out

    def floor_div_i64(self, a, d):
        q = self.b.sdiv(a, d)
        r = self.b.srem(a, d)
        adjust = self.b.and_(self.b.icmp_signed("!=", r, i64(0)),
                             self.b.icmp_unsigned("!=", self.b.icmp_signed("<", r, i64(0)),
                                                  self.b.icmp_signed("<", d, i64(0))))
        return self.b.select(adjust, self.b.sub(q, i64(1)), q)

    def arith_of(self, dtype, name, a, b):
        if dtype in _FLOATS:
            return {"add": self.b.fadd, "sub": self.b.fsub, "mul": self.b.fmul}[name](a, b)
        if dtype == "bool":
            return {"add": self.b.or_, "sub": self.b.xor, "mul": self.b.and_}[name](a, b)
        return {"add": self.b.add, "sub": self.b.sub, "mul": self.b.mul}[name](a, b)

    def linspace(self, op):
        """np.linspace(start, stop, num) as numpy computes it: i * step + start with
        step = (stop - start) / (num - 1), the last value exactly stop."""
        b = self.b
        t = op.results[0].type
        s_t, e_t, n_t = (x.type for x in op.operands)
        common = T.promote(T.promote(s_t, e_t), T.FLOAT)
        cdtype = common.dtype
        ft = REG[cdtype]
        start = self.convert(self.v(op.operands[0]), s_t, T.Scalar(cdtype))
        stop = self.convert(self.v(op.operands[1]), e_t, T.Scalar(cdtype))
        num = self.convert(self.v(op.operands[2]), n_t, T.I64)
        self.fail_with(b.icmp_signed("<", num, i64(0)), "ValueError",
                       "Number of samples, %lld, must be non-negative.", op.loc, num, i64(0))
        out = self.new_array(t.dtype, [num], op.loc)
        div = b.sub(num, i64(1))
        delta = b.fsub(stop, start)
        divf = b.sitofp(div, ft)
        step = b.fdiv(delta, divf)
        step_zero = b.fcmp_ordered("==", step, ir.Constant(ft, 0.0))
        has_div = b.icmp_signed(">", div, i64(0))

        def body(i):
            x = b.sitofp(i, ft)
            scaled = b.select(step_zero, b.fmul(b.fdiv(x, divf), delta), b.fmul(x, step))
            y = b.fadd(b.select(has_div, scaled, b.fmul(x, delta)), start)
            y = b.select(b.and_(has_div, b.icmp_signed("==", i, div)), stop, y)
            if t.dtype == "i64":
                y = self.intrinsic("llvm.floor", [y])
            self.write(out, i, y, cdtype)

        self.loop(num, body)
        return out

    # -- integer arrays and masks ----------------------------------------------------------
    def take(self, op):
        """x[i0, i1, ...] with integer arrays (broadcast together) on the leading axes."""
        x = self.v(op.operands[0])
        indices = [self.v(i) for i in op.operands[1:]]
        k = len(indices)
        t = op.results[0].type
        ndim = max(i.ndim for i in indices)
        bshape, bstrides = self.broadcast(indices, ndim, op.loc)
        rest_shape, rest_strides = x.shape[k:], x.strides[k:]
        if isinstance(t, T.Scalar):  # 0-d index arrays: one element
            offset = self.gathered_offset(x, indices, [i64(0)] * k, op.loc)
            return self.read(x, offset)
        out = self.new_array(t.dtype, bshape + rest_shape, op.loc)
        inner = out.strides[ndim:]

        def position(offsets):
            base = self.gathered_offset(x, indices, offsets[1:], op.loc)
            self.loops(rest_shape, [inner, rest_strides],
                       lambda offs: self.write(out, offs[0], self.read(x, offs[1]), x.dtype),
                       bases=[offsets[0], base])

        self.loops(bshape, [out.strides[:ndim]] + bstrides, position)
        return out

    def gathered_offset(self, x, indices, offsets, loc):
        offset = i64(0)
        for axis, (index, off) in enumerate(zip(indices, offsets)):
            position = self.wrap_index(self.read(index, off), T.I64, x.shape[axis], axis, loc)
            offset = self.b.add(offset, self.b.mul(position, x.strides[axis]))
        return offset

    def check_mask(self, x, m, loc):
        for axis in range(m.ndim):
            self.fail_with(self.b.icmp_signed("!=", x.shape[axis], m.shape[axis]),
                           "IndexError", "boolean index did not match indexed array along "
                           f"axis {axis}; size of axis is %lld but size of corresponding "
                           "boolean axis is %lld", loc, x.shape[axis], m.shape[axis])

    def count_true(self, m):
        total = self.scratch(I64, "count")
        self.b.store(i64(0), total)

        def body(offs):
            bit = self.b.zext(self.read(m, offs[0]), I64)
            self.b.store(self.b.add(self.b.load(total, typ=I64), bit), total)

        self.loops(m.shape, [m.strides], body)
        return self.b.load(total, typ=I64)

    def each_true(self, x, m, body):
        """body(offset in x, k) for the k-th position where m is true (C order of m, which
        covers x's leading axes)."""
        k = self.scratch(I64, "k")
        self.b.store(i64(0), k)

        def visit(offs):
            with self.b.if_then(self.read(m, offs[1])):
                n = self.b.load(k, typ=I64)
                body(offs[0], n)
                self.b.store(self.b.add(n, i64(1)), k)

        self.loops(m.shape, [x.strides[:m.ndim], m.strides], visit)

    def mask(self, op):
        """x[m]: the rows of x (over m's axes) where m is true, in one new first axis."""
        x, m = self.v(op.operands[0]), self.v(op.operands[1])
        self.check_mask(x, m, op.loc)
        rest_shape, rest_strides = x.shape[m.ndim:], x.strides[m.ndim:]
        out = self.new_array(x.dtype, [self.count_true(m)] + rest_shape, op.loc)

        def copy_row(offset, k):
            self.loops(rest_shape, [out.strides[1:], rest_strides], lambda offs: self.write(
                out, offs[0], self.read(x, offs[1]), x.dtype),
                bases=[self.b.mul(k, out.strides[0]), offset])

        self.each_true(x, m, copy_row)
        return out

    # -- stores ----------------------------------------------------------------------------
    def source(self, dst, value, loc, what, assign=False, apart=False):
        """(value to read, its strides in dst's axes, whether it is a copy to release): an
        array that may overlap dst is read through a copy, as numpy's ufuncs do (`apart`:
        the store's value cannot be dst's memory, Fusion.apart; nor can an argument be a
        buffer the kernel made). `assign`:
        as numpy's PyArray_AssignArray, which copies an overlapping source into a 1-d
        destination only when their strides point opposite ways; otherwise its loop reads
        while it writes, in an order of its own (backward_1d), which a copy matches when the
        strides are the same."""
        strides = self.fit_into(value, dst.shape, loc, what)
        if apart or isinstance(value, LazyV) or {dst.origin, value.origin} == {"arg", "alloc"}:
            return value, strides, False
        overlap = self.may_overlap(dst, value)
        if assign and dst.ndim == 1 and value.ndim == 1:
            b = self.b
            opposite = b.icmp_signed("<", b.mul(dst.strides[0], value.strides[0]), i64(0))
            same = b.icmp_signed("==", dst.strides[0], strides[0])
            overlap = b.and_(overlap, b.or_(opposite, same))
        pre = self.b.block
        copy_bb = self.func.append_basic_block("overlap.copy")
        done = self.func.append_basic_block("overlap.end")
        self.b.cbranch(overlap, copy_bb, done)
        self.b.position_at_end(copy_bb)
        copied = self.copy_of(value, loc)
        copy_end = self.b.block
        copied_strides = self.strides_in_fit(copied, value, strides)
        self.b.branch(done)
        self.b.position_at_end(done)
        obj, data = self.b.phi(PTR), self.b.phi(PTR)
        obj.add_incoming(value.obj, pre)
        obj.add_incoming(copied.obj, copy_end)
        data.add_incoming(value.data, pre)
        data.add_incoming(copied.data, copy_end)
        merged = []
        for s, c in zip(strides, copied_strides):
            phi = self.b.phi(I64)
            phi.add_incoming(s, pre)
            phi.add_incoming(c, copy_end)
            merged.append(phi)
        read = ArrayV(value.dtype, obj, data, value.shape, value.strides, None)
        return read, merged, overlap

    def strides_in_fit(self, copied, value, fitted):
        """The fitted strides, for the C-contiguous copy of `value` instead of value."""
        lead = len(fitted) - value.ndim
        out = list(fitted[:max(0, lead)])
        for j in range(max(0, -lead), value.ndim):
            out.append(self.b.select(self.b.icmp_signed("==", value.shape[j], i64(1)), i64(0),
                                     copied.strides[j]))
        return out

    def done_with_source(self, read, overlap):
        if overlap is False:
            return
        with self.b.if_then(overlap):
            self.release(ArrayV(read.dtype, read.obj, read.data, [], [], "alloc"))

    def extent(self, a):
        """(lowest, highest + 1) byte addresses a's elements occupy, as integers, and whether
        it has any."""
        b = self.b
        low, high = i64(0), i64(0)
        empty = ir.Constant(I1, 0)
        for n, s in zip(a.shape, a.strides):
            reach = b.mul(b.sub(n, i64(1)), s)
            negative = b.icmp_signed("<", reach, i64(0))
            low = b.add(low, b.select(negative, reach, i64(0)))
            high = b.add(high, b.select(negative, i64(0), reach))
            empty = b.or_(empty, b.icmp_signed("==", n, i64(0)))
        size = i64(ITEMSIZE[a.dtype])
        base = b.ptrtoint(a.data, I64)
        return (b.add(base, b.mul(low, size)), b.add(base, b.mul(b.add(high, i64(1)), size)),
                empty)

    def may_overlap(self, a, c):
        b = self.b
        a_low, a_high, a_empty = self.extent(a)
        c_low, c_high, c_empty = self.extent(c)
        meet = b.and_(b.icmp_unsigned("<", a_low, c_high), b.icmp_unsigned("<", c_low, a_high))
        return b.and_(meet, b.not_(b.or_(a_empty, c_empty)))

    def assign(self, op):
        """dst[...] = value (broadcast into dst)."""
        dst = self.v(op.operands[0])
        value, vtype = self.v(op.operands[1]), op.operands[1].type
        if isinstance(value, JoinV):
            self.join_store(op, dst, value, lambda d, v: self.assign_array(op, d, v),
                            "assignment")
            return
        if not isinstance(value, (ArrayV, LazyV)):
            if vtype.is_float and dst.dtype == "i64" and vtype.weak:
                value, vtype = self.float_to_int(value, True, op.loc), T.I64
            self.fill(dst, value, vtype)
            return
        self.assign_array(op, dst, value)

    def assign_array(self, op, dst, value):
        read, strides, overlap = self.source(dst, value, op.loc, "assignment", assign=True,
                                             apart=op in self.apart)

        def forward():
            self.parallel_loops(dst.shape, [dst.strides, strides], lambda offs: self.write(
                dst, offs[0], self.read(read, offs[1]), read.dtype), [dst])

        if overlap is False or dst.ndim != 1 or value.ndim != 1:
            forward()
        else:
            b = self.b
            in_place = b.and_(self.may_overlap(dst, value), b.not_(overlap))
            with b.if_else(in_place) as (serial, apart):
                with serial:  # reads what it writes: one thread, in numpy's order
                    back = self.backward_1d(dst, value, strides[0])
                    last = b.sub(dst.shape[0], i64(1))
                    steps = [b.select(back, b.neg(s), s) for s in (dst.strides[0], strides[0])]
                    bases = [b.select(back, b.mul(last, s), i64(0))
                             for s in (dst.strides[0], strides[0])]
                    self.loops([dst.shape[0]], [[steps[0]], [steps[1]]],
                               lambda offs: self.write(dst, offs[0], self.read(read, offs[1]),
                                                       read.dtype), bases=bases)
                with apart:
                    forward()
        self.done_with_source(read, overlap)

    def backward_1d(self, dst, value, s_src):
        """Whether numpy's assignment of the overlapping 1-d `value` (not copied) into dst
        runs from the last index down: its loop first makes dst's stride positive (both
        reversed when it is negative), then goes backward where the source starts below the
        destination and reaches into it (raw_array_assign_array). Such a loop reads what it
        writes, so it runs in one thread (assign_array)."""
        b = self.b
        n, s_dst = dst.shape[0], dst.strides[0]
        size = i64(ITEMSIZE[dst.dtype])

        def lowest(data, stride):
            reach = b.mul(b.sub(n, i64(1)), stride)
            low = b.select(b.icmp_signed("<", reach, i64(0)), reach, i64(0))
            return b.add(b.ptrtoint(data, I64), b.mul(low, size))

        src_low, dst_low = lowest(value.data, s_src), lowest(dst.data, s_dst)
        span = b.mul(b.mul(n, b.select(b.icmp_signed("<", s_src, i64(0)), b.neg(s_src),
                                       s_src)), size)
        back = b.and_(b.icmp_signed("<", src_low, dst_low),
                      b.icmp_signed(">", b.add(src_low, span), dst_low))
        flipped = b.icmp_signed("<", s_dst, i64(0))
        return b.xor(back, flipped)

    def iadd(self, op):
        """dst op= value in place (op is attrs["op"], default add), the result cast back to
        dst's dtype (numpy's unsafe casting, as np.add(dst, v, out=dst, casting='unsafe'))."""
        dst = self.v(op.operands[0])
        value = self.v(op.operands[1])
        name = op.attrs.get("op", "add")
        combine = self.combiner(name, dst.dtype, op.operands[1], op.loc)
        if isinstance(value, JoinV):
            self.join_store(op, dst, value, lambda d, v: self.iadd_array(op, d, v, combine),
                            "augmented assignment")
            return
        if not isinstance(value, (ArrayV, LazyV)):
            self.parallel_loops(dst.shape, [dst.strides], lambda offs: self.write(
                dst, offs[0], combine(self.old_element(op, dst, offs[0]), value),
                combine.dtype), [dst])
            return
        self.iadd_array(op, dst, value, combine)

    def iadd_array(self, op, dst, value, combine):
        read, strides, overlap = self.source(dst, value, op.loc, "augmented assignment",
                                             apart=op in self.apart)
        self.parallel_loops(dst.shape, [dst.strides, strides], lambda offs: self.write(
            dst, offs[0], combine(self.old_element(op, dst, offs[0]), self.read(read, offs[1])),
            combine.dtype), [dst])
        self.done_with_source(read, overlap)

    def old_element(self, op, dst, at):
        """The element an `iadd` combines with: +0 without a load when the destination is
        `fresh` (passes/first_store.py: allocated empty, never written), else dst's."""
        if op.attrs.get("fresh"):
            return zero(REG[dst.dtype])
        return self.read(dst, at)

    def combiner(self, name, dtype, value_ir, loc):
        """A function (old element, value element) -> new element register computing
        `name` as a numpy scalar of dst's dtype would; its .dtype is the result's."""
        left = Value(T.Scalar(dtype), "dst")
        vtype = value_ir.type.element if isinstance(value_ir.type, T.Array) else value_ir.type
        right = Value(vtype, "value")
        (result,) = PRIMS[name].type_rule([left.type, right.type], {})
        if name == "pow" and dtype == "i64" and not vtype.is_float:
            result = T.Scalar("i64")  # numpy's integer power (negative exponents raise)
        element_op = Op(name, [left, right], [result], {}, loc=loc)
        rule = self.scalar_rule(name)

        def combine(old, inc):
            self.values[left] = old
            self.values[right] = inc
            if name == "pow" and not result.is_float:
                self.negative_power_check(element_op)
            return rule(self, element_op)

        combine.dtype = result.dtype
        return combine

    def scatter_add(self, op):
        """np.add.at(dst, (i0, i1, ...), value): unbuffered, repeated indices add again."""
        dst = self.v(op.operands[0])
        indices = [self.v(i) for i in op.operands[1:-1]]
        value_ir = op.operands[-1]
        value = self.v(value_ir)
        k = len(indices)
        combine = self.combiner("add", dst.dtype, value_ir, op.loc)
        arrays = [i for i in indices if isinstance(i, ArrayV)]
        ndim = max([i.ndim for i in arrays], default=0)
        bshape, bstrides = self.broadcast(arrays, ndim, op.loc)
        rest_shape, rest_strides = dst.shape[k:], dst.strides[k:]
        full = bshape + rest_shape
        vstrides = self.fit_into(value, full, op.loc, "np.add.at") \
            if isinstance(value, ArrayV) else [i64(0)] * len(full)

        def position(offsets):
            base = i64(0)
            reads = iter(offsets[2:])
            for axis, index in enumerate(indices):
                if isinstance(index, ArrayV):
                    raw = self.read(index, next(reads))
                else:
                    raw = self.convert(index, op.operands[1 + axis].type, T.I64)
                position = self.wrap_index(raw, T.I64, dst.shape[axis], axis, op.loc)
                base = self.b.add(base, self.b.mul(position, dst.strides[axis]))

            def add(offs):
                inc = self.read(value, offs[1]) if isinstance(value, ArrayV) else value
                self.write(dst, offs[0], combine(self.read(dst, offs[0]), inc), combine.dtype)

            self.loops(rest_shape, [rest_strides, vstrides[ndim:]], add,
                       bases=[base, offsets[1]])

        self.loops(bshape, [[i64(0)] * ndim, vstrides[:ndim]] + bstrides, position)

    def mask_add(self, op):
        """dst[m] += value: value broadcast to (number of true positions,) + the shape of the
        axes m does not cover, added in C order of m."""
        dst, m = self.v(op.operands[0]), self.v(op.operands[1])
        value_ir = op.operands[2]
        value = self.v(value_ir)
        self.check_mask(dst, m, op.loc)
        combine = self.combiner("add", dst.dtype, value_ir, op.loc)
        rest_shape, rest_strides = dst.shape[m.ndim:], dst.strides[m.ndim:]
        if isinstance(value, ArrayV):
            strides = self.fit_into(value, [self.count_true(m)] + rest_shape, op.loc,
                                    "boolean index assignment")
        else:
            strides = [i64(0)] * (1 + len(rest_shape))

        def add_row(offset, k):
            def add(offs):
                inc = self.read(value, offs[1]) if isinstance(value, ArrayV) else value
                self.write(dst, offs[0], combine(self.read(dst, offs[0]), inc), combine.dtype)

            self.loops(rest_shape, [rest_strides, strides[1:]], add,
                       bases=[offset, self.b.mul(k, strides[0])])

        self.each_true(dst, m, add_row)

    # -- reductions ------------------------------------------------------------------------
    def reduce(self, op):
        """A reduction over the op's axes: float sums and means, and means of integers and
        booleans, add in numpy's order (pairwise.py); float products multiply in numpy's
        order (product_order); integer sums and products, max/min and arg* visit the
        reduced axes in C order (order does not change their result)."""
        x = self.v(op.operands[0])
        t = op.results[0].type
        axes = op.attrs.get("axis")
        axes = tuple(range(x.ndim)) if axes is None else tuple(axes)
        if op.prim in _NO_IDENTITY:  # numpy refuses to reduce nothing (even to nothing)
            empty = self.b.icmp_signed("==", self.count([x.shape[a] for a in axes]), i64(0))
            self.fail_with(empty, "ValueError", _NO_IDENTITY[op.prim], op.loc)
        if op.prim == "mean" or (op.prim == "sum" and x.dtype in _FLOATS):
            return self.numpy_sum(op, x, axes)
        shape = [x.shape[a] for a in axes]
        strides = [x.strides[a] for a in axes]
        if op.prim == "prod" and x.dtype in _FLOATS and not self.flags and x.ndim > 1:
            shape, strides = self.product_order(x, axes)
        return self.reduce_into(op, x, axes, lambda base: self.reduce_at(
            op.prim, x, base, shape, strides, t.dtype))

    def product_order(self, x, axes):
        """The reduced axes (sizes, strides), outermost first, in the order numpy's iterator
        visits them, for np.prod: numpy multiplies each output's elements one by one in that
        order (no pairwise scheme, and any split into calls keeps it), nditer's axis order
        by x's strides (order_fn, as sums: an F-ordered or transposed array multiplies in
        memory order), an expression's that of the temporary numpy makes of it (lazy_order).
        Kept axes stay in the list with size 1."""
        b = self.b
        lazy = isinstance(x, LazyV)
        perm = self.lazy_order(x) if lazy else self.axis_order(x.shape, [x.strides])
        outer = list(reversed(perm))
        shape = []
        for p in outer:
            reduced = ir.Constant(I1, 0)
            for a in axes:
                reduced = b.or_(reduced, b.icmp_signed("==", p, i64(a)))
            shape.append(b.select(reduced, _pick(b, x.shape, p), i64(1)))
        if lazy:
            strides = [Pack([_pick(b, [s.items[k] for s in x.strides], p)
                             for k in range(x.width)]) for p in outer]
        else:
            strides = [_pick(b, x.strides, p) for p in outer]
        return shape, strides

    def reduce_into(self, op, x, axes, one):
        """The result of reduction `op` of x over `axes`: one(offset) computes the result
        element whose reduced elements start at that offset of x (a register of the result
        dtype); a number when every axis is reduced, else a new array (keepdims kept)."""
        t = op.results[0].type
        if isinstance(t, T.Scalar):
            return one(i64(0))
        out, out_strides = self.reduced_array(op, x, axes)
        kept = [a for a in range(x.ndim) if a not in axes]
        self.parallel_loops([x.shape[a] for a in kept], [out_strides, [x.strides[a] for a in kept]],
                            lambda offsets: self.write(out, offsets[0], one(offsets[1]), t.dtype),
                            work=self.count(x.shape))
        return out

    def reduced_array(self, op, x, axes):
        """A new array for the result of reduction `op` of x over `axes` (of length 1 along
        them with keepdims), and its strides along x's kept axes."""
        kept = [a for a in range(x.ndim) if a not in axes]
        if op.attrs.get("keepdims"):
            shape = [i64(1) if a in axes else x.shape[a] for a in range(x.ndim)]
        else:
            shape = [x.shape[a] for a in kept]
        out = self.new_array(op.results[0].type.dtype, shape, op.loc)
        if op.attrs.get("keepdims"):
            return out, [out.strides[a] for a in kept]
        return out, out.strides

    def reduce_at(self, prim, x, base, shape, strides, dtype):
        """One reduction over the elements of x at base + the index of `shape` (C order);
        returns a register of `dtype`."""
        b = self.b
        if ufuncs.reduces(prim, x.dtype):
            return self.cast_to(self.ufunc_reduce(prim, x, base, shape, strides), x.dtype, dtype)
        acc_dtype = accumulated(prim, x.dtype, dtype)
        acc_t = REG[acc_dtype]
        acc = self.scratch(acc_t, "acc")
        b.store(self.identity(prim, acc_dtype), acc)
        index = None
        if prim in ("argmax", "argmin"):
            index, counter = self.scratch(I64, "best"), self.scratch(I64, "n")
            b.store(i64(0), index)
            b.store(i64(0), counter)

        def body(offs):
            value = self.cast_to(self.read(x, offs[0]), x.dtype, acc_dtype)
            old = b.load(acc, typ=acc_t)
            if index is None:
                b.store(self.accumulate(prim, acc_dtype, old, value), acc)
                return
            n = b.load(counter, typ=I64)
            better = self.better(prim, acc_dtype, value, old)
            b.store(b.select(better, value, old), acc)
            b.store(b.select(better, n, b.load(index, typ=I64)), index)
            b.store(b.add(n, i64(1)), counter)

        self.loops(shape, [strides], body, bases=[base])
        if index is not None:
            return b.load(index, typ=I64)
        result = b.load(acc, typ=acc_t)
        if prim == "mean":
            result = b.fdiv(result, b.sitofp(self.count(shape), F64), flags=self.flags)
        return self.cast_to(result, acc_dtype, dtype)

    def identity(self, prim, dtype):
        t = REG[dtype]
        if prim in ("sum", "mean"):
            return zero(t)
        if prim == "prod":
            return ir.Constant(t, 1.0 if dtype in _FLOATS else 1)
        low = prim in ("amax", "argmax")  # start below everything (maximum), or above
        if dtype in _FLOATS:
            return ir.Constant(t, float("-inf") if low else float("inf"))
        if dtype == "bool":
            return ir.Constant(I1, 0 if low else 1)
        return i64(-2 ** 63 if low else 2 ** 63 - 1)

    def accumulate(self, prim, dtype, acc, value):
        b = self.b
        if prim in ("sum", "mean"):
            return b.fadd(acc, value, flags=self.flags) if dtype in _FLOATS else \
                b.add(acc, value)
        if prim == "prod":
            if dtype in _FLOATS:
                return b.fmul(acc, value, flags=self.flags)
            return b.and_(acc, value) if dtype == "bool" else b.mul(acc, value)
        return b.select(self.better(prim, dtype, value, acc), value, acc)

    def better(self, prim, dtype, value, best):
        """Whether `value` replaces `best` in a max/min (numpy: NaN wins and stays; a value
        equal to the best replaces it, as np.maximum returns its second operand on a tie, so
        that of +0.0 and -0.0 the last wins; arg*: the first of equal values and the first
        NaN)."""
        b = self.b
        bigger = prim in ("amax", "argmax")
        if dtype in _FLOATS:
            compare = ">" if bigger else "<"
            if not prim.startswith("arg"):
                compare += "="
            beats = b.fcmp_ordered(compare, value, best)
            nan = b.fcmp_unordered("uno", value, value)
            if prim.startswith("arg"):
                nan = b.and_(nan, b.fcmp_ordered("ord", best, best))
            return b.or_(beats, nan)
        if dtype == "bool":
            return b.and_(value, b.not_(best)) if bigger else b.and_(b.not_(value), best)
        return b.icmp_signed(">" if bigger else "<", value, best)

    def trace(self, op):
        """np.trace: the sum of the diagonal (pairwise for floats, as numpy's)."""
        a = self.v(op.operands[0])
        t = op.results[0].type
        n = self.b.select(self.b.icmp_signed("<", a.shape[0], a.shape[1]), a.shape[0],
                          a.shape[1])
        stride = self.b.add(a.strides[0], a.strides[1])
        if a.dtype in _FLOATS:
            return self.added(a, i64(0), n, stride, a.dtype, False)
        return self.reduce_at("sum", a, i64(0), [n], [stride], t.dtype)

    def sum_to(self, op):
        """g summed down to like's shape: leading axes, and axes where like has length 1. An
        array g that turns out to have like's shape already is the result itself (as the
        Python backend's `_sum_to` returns it), without a copy."""
        g, like = self.v(op.operands[0]), self.v(op.operands[1])
        t = op.results[0].type
        if op.results[0] in self.fusion.deferred:  # lowered with its store
            return (g, like, op)
        if not isinstance(g, (ArrayV, LazyV)):
            if isinstance(like, ArrayV):
                raise NotImplementedError("sum_to of a number to an array's shape")
            return self.cast_to(g, op.operands[0].type.dtype, t.dtype)
        if not isinstance(like, ArrayV):  # np.sum(g) (pairwise for floats)
            if g.dtype in _FLOATS:
                return self.cast_to(self.total(g, g.dtype, op.loc), g.dtype, t.dtype)
            return self.reduce_at("sum", g, i64(0), g.shape, g.strides, t.dtype)
        lead = g.ndim - like.ndim
        if lead < 0:
            raise NotImplementedError("sum_to of an array to a shape of more dimensions")
        if lead or g.dtype != t.dtype:
            return self.summed_to(g, like, t, lead, op.loc)
        if isinstance(g, LazyV):
            return self.lazy_sum_to(g, like, t, op.loc)
        b = self.b
        same = self.same_shape(g, like)
        alias_bb = self.func.append_basic_block("sum_to.same")
        sum_bb = self.func.append_basic_block("sum_to.sum")
        done = self.func.append_basic_block("sum_to.end")
        b.cbranch(same, alias_bb, sum_bb)
        b.position_at_end(alias_bb)
        self.retain(g)
        alias_end = b.block
        b.branch(done)
        b.position_at_end(sum_bb)
        out = self.summed_to(g, like, t, lead, op.loc)
        sum_end = b.block
        b.branch(done)
        b.position_at_end(done)
        return self.merged_array(g, (g.obj, g.data, g.strides), alias_end,
                                 (out.obj, out.data, out.strides), sum_end, like.shape)

    def same_shape(self, g, like):
        """i1: g has like's shape (the same number of axes)."""
        same = ir.Constant(I1, 1)
        for n, d in zip(like.shape, g.shape):
            same = self.b.and_(same, self.b.icmp_signed("==", n, d))
        return same

    def lazy_sum_to(self, g, like, t, loc):
        """sum_to of an expression (reverse mode's `sum_to(g, x.shape)` read by a product, not
        by a store): when g has like's shape at run time its elements are written into a new
        array once, the array the Python backend's `_sum_to` returns (-0.0 stays -0.0), with
        no zero fill and no read of what is written; otherwise g is summed as before."""
        b = self.b
        with b.if_else(self.same_shape(g, like), likely=True) as (same, summed):
            with same:
                copied = self.copy_of(g, loc)
                copied_end = b.block
            with summed:
                out = self.summed_to(g, like, t, 0, loc)
                sum_end = b.block
        return self.merged_array(copied, (copied.obj, copied.data, copied.strides), copied_end,
                                 (out.obj, out.data, out.strides), sum_end, like.shape)

    def summed_to(self, g, like, t, lead, loc):
        out = self.new_array(t.dtype, like.shape, loc)
        if not (lead and g.dtype == t.dtype == "f64"):
            self.sums_in_memory(g, like, out, t, lead, loc)
            return out
        # a few sums, each a long chain of additions (reverse mode's sum over the rows of an
        # (n, 2) adjoint): each in a register, all in one pass
        b = self.b
        kept = self.count(like.shape)
        whole = ir.Constant(I1, 1)
        for n, d in zip(like.shape, g.shape[lead:]):
            whole = b.and_(whole, b.icmp_signed("==", n, d))
        with b.if_else(b.and_(whole, b.icmp_signed("<=", kept, i64(FEW_SUMS)))) as \
                (in_registers, in_memory):
            with in_registers:
                self.outlined_range(i64(1), lambda lo, hi: self.sums_in_registers(
                    g, out, lead, kept), "sums")
            with in_memory:
                self.sums_in_memory(g, like, out, t, lead, loc)
        return out

    def sums_in_registers(self, g, out, lead, kept):
        """out (C order, `kept` elements, at most FEW_SUMS; g's trailing axes have its shape)
        = g summed over its `lead` leading axes, element by element in C order as
        sums_in_memory adds them (the same bits with fastmath=False), each sum in a register:
        one pass over g, the chains of additions side by side rather than through memory
        (where each addition waited for the store of the one before). In a function of its
        own (summed_to), on whose stack the sums live."""
        for count in range(1, FEW_SUMS + 1):  # (no switch: parallel._capture rebinds none)
            with self.b.if_then(self.b.icmp_signed("==", kept, i64(count))):
                self.sums_of(g, out, lead, count)

    def sums_of(self, g, out, lead, count):
        """sums_in_registers for `count` sums."""
        b = self.b
        places = []  # each kept element's offset in g's trailing axes (Packs: a lazy g's)
        for j in range(count):
            offset, rest = self.no_stride(g), i64(j)
            for axis in reversed(range(lead, g.ndim)):
                n = g.shape[axis]
                offset = self.advance(offset, b.urem(rest, n), g.strides[axis])
                rest = b.udiv(rest, n)
            places.append(offset)
        cells = [self.scratch(F64, "sum") for _ in range(count)]
        for cell in cells:
            b.store(zero(F64), cell)

        def add(offsets):
            for place, cell in zip(places, cells):
                value = self.read(g, self.advance(offsets[0], i64(1), place))
                self.b.store(self.b.fadd(self.b.load(cell, typ=F64), value,
                                         flags=self.flags), cell)

        self.loop_nest(g.shape[:lead], [g.strides[:lead]], add, [self.no_stride(g)])
        for j, cell in enumerate(cells):
            self.write(out, i64(j), b.load(cell, typ=F64), "f64")

    def sums_in_memory(self, g, like, out, t, lead, loc):
        """out (zero-filled here) += g summed to like's shape, element by element in C order
        through memory (any shapes: length-1 axes of like summed too)."""
        self.zero_fill(out)
        strides = [i64(0)] * lead
        for k, n in enumerate(like.shape):
            d = g.shape[lead + k]
            one = self.b.icmp_signed("==", n, i64(1))
            bad = self.b.and_(self.b.not_(one), self.b.icmp_signed("!=", n, d))
            self.fail_with(bad, "ValueError", "sum_to: length %lld cannot be summed to length "
                           f"%lld (axis {k})", loc, d, n)
            strides.append(self.b.select(one, i64(0), out.strides[k]))
        acc_dtype = _SUM_ACC[g.dtype] if t.dtype != "bool" else "bool"

        def add(offs):
            old = self.cast_to(self.read(out, offs[0]), t.dtype, acc_dtype)
            value = self.cast_to(self.read(g, offs[1]), g.dtype, acc_dtype)
            self.write(out, offs[0], self.accumulate("sum", acc_dtype, old, value), acc_dtype)

        self.loops(g.shape, [strides, g.strides], add, split=True)

    # -- products --------------------------------------------------------------------------
    def matmul(self, op):
        """numpy's matmul: 1-d operands are vectors (the axis is dropped from the result),
        leading axes are batches broadcast together. Each result element is a sum in order of
        k; the loops run i, k, j so that the innermost one walks rows of b and of the result
        (vectorisable, and the same order of additions)."""
        a, c = self.v(op.operands[0]), self.v(op.operands[1])
        t = op.results[0].type
        dtype = t.dtype
        if a.ndim == 1:
            a_batch, m, k, sa_m, sa_k = [], i64(1), a.shape[0], i64(0), a.strides[0]
        else:
            a_batch, (m, k), (sa_m, sa_k) = a.shape[:-2], a.shape[-2:], a.strides[-2:]
        if c.ndim == 1:
            c_batch, k2, n, sc_k, sc_n = [], c.shape[0], i64(1), c.strides[0], i64(0)
        else:
            c_batch, (k2, n), (sc_k, sc_n) = c.shape[:-2], c.shape[-2:], c.strides[-2:]
        self.fail_with(self.b.icmp_signed("!=", k, k2), "ValueError", "matmul: Input operand 1 "
                       "has a mismatch in its core dimension 0, with gufunc signature (n?,k),"
                       "(k,m?)->(n?,m?) (size %lld is different from %lld)", op.loc, k2, k)
        if isinstance(t, T.Scalar):
            return self.dot_at(a, c, i64(0), i64(0), k, sa_k, sc_k, dtype)
        batch_ndim = max(len(a_batch), len(c_batch))
        a_view = a.view(a.data, a_batch, a.strides[:len(a_batch)])
        c_view = c.view(c.data, c_batch, c.strides[:len(c_batch)])
        batch, (a_bs, c_bs) = self.broadcast([a_view, c_view], batch_ndim, op.loc)
        shape = batch + ([m] if a.ndim > 1 else []) + ([n] if c.ndim > 1 else [])
        out = self.new_array(dtype, shape, op.loc)
        so_m = out.strides[batch_ndim] if a.ndim > 1 else i64(0)
        so_n = out.strides[-1] if c.ndim > 1 else i64(0)

        def one(offs):
            o, oa, oc = offs
            sizes, strides = (m, k, n), (so_m, so_n, sa_m, sa_k, sc_k, sc_n)
            if c.ndim == 1:  # matrix times vector: one dot product per row
                def loops():
                    self.loop(m, lambda i: self.write(
                        out, self.b.add(o, self.b.mul(i, so_m)), self.dot_at(
                            a, c, self.b.add(oa, self.b.mul(i, sa_m)), oc, k, sa_k, sc_k,
                            dtype), dtype))
            else:
                def loops():
                    self.product_rows(a, c, out, (o, oa, oc), sizes, strides, dtype)
            if getattr(self, "blas", False) and dtype in _FLOATS and \
                    a.dtype == c.dtype == dtype:
                self.blas_or_loops(a, c, out, (o, oa, oc), sizes, strides, loops)
            else:
                loops()

        self.loops(batch, [out.strides[:batch_ndim], a_bs, c_bs], one)
        return out

    def dot_at(self, a, c, oa, oc, k, sa, sc, dtype):
        b = self.b
        acc = self.scratch(REG[dtype], "dot")
        b.store(self.identity("sum", dtype), acc)

        def body(i):
            x = self.cast_to(self.read(a, b.add(oa, b.mul(i, sa))), a.dtype, dtype)
            y = self.cast_to(self.read(c, b.add(oc, b.mul(i, sc))), c.dtype, dtype)
            product = self.arith_of(dtype, "mul", x, y)
            b.store(self.arith_of(dtype, "add", b.load(acc, typ=REG[dtype]), product), acc)

        self.loop(k, body)
        return b.load(acc, typ=REG[dtype])

    def product_rows(self, a, c, out, offsets, sizes, strides, dtype):
        """Our own loops of a matrix product: i, k, j (the innermost loop walks rows of c and
        of the result, vectorisable), or for a result of fewer than NARROW columns, each
        element a sum in a register (narrow_product: rows of one or two elements made the
        i-k-j loops all overhead). Both add each element's products in order of k from +0.0."""
        b = self.b
        o, oa, oc = offsets
        m, k, n = sizes
        so_m, so_n, sa_m, sa_k, sc_k, sc_n = strides

        def row(i):
            orow = b.add(o, b.mul(i, so_m))
            self.loop(n, lambda j: self.write(out, b.add(orow, b.mul(j, so_n)),
                                              zero(REG[dtype]), dtype))

            def term(kk):
                x = self.cast_to(self.read(a, b.add(b.add(oa, b.mul(i, sa_m)),
                                                    b.mul(kk, sa_k))), a.dtype, dtype)
                crow = b.add(oc, b.mul(kk, sc_k))

                def update(j):
                    where = b.add(orow, b.mul(j, so_n))
                    y = self.cast_to(self.read(c, b.add(crow, b.mul(j, sc_n))), c.dtype, dtype)
                    old = self.read(out, where)
                    new = self.arith_of(dtype, "add", old, self.arith_of(dtype, "mul", x, y))
                    self.write(out, where, new, dtype)

                self.loop(n, update)

            self.loop(k, term)

        with b.if_else(b.icmp_signed("<", n, i64(NARROW))) as (narrow, wide):
            with narrow:
                self.narrow_product(a, c, out, offsets, sizes, strides, dtype)
            with wide:
                self.loop(m, row)

    def narrow_product(self, a, c, out, offsets, sizes, strides, dtype):
        """A product of fewer than NARROW result columns: for each column count, two rows at
        a time, each result element's sum in a register and all 2n of them in one loop over
        k (their chains of additions side by side: reverse mode's x.T @ g of an (n, 2) g is
        four sums of n products); each element adds its products in order of k from +0.0,
        as dot_at does (the same bits, with fastmath=False)."""
        b = self.b
        n = sizes[2]
        for count in range(1, NARROW):  # (no switch: parallel._capture rebinds none)
            with b.if_then(b.icmp_signed("==", n, i64(count))):
                self.narrow_rows(a, c, out, offsets, sizes, strides, dtype, count)

    def narrow_rows(self, a, c, out, offsets, sizes, strides, dtype, count):
        """narrow_product for `count` columns."""
        b = self.b
        o, oa, oc = offsets
        m, k, _ = sizes
        so_m, so_n, sa_m, sa_k, sc_k, sc_n = strides
        t = REG[dtype]

        def rows(first, height):
            b = self.b
            cells = [[self.scratch(t, "dot") for _ in range(count)] for _ in range(height)]
            for cell in (c for line in cells for c in line):
                b.store(self.identity("sum", dtype), cell)
            arows = [b.add(oa, b.mul(b.add(first, i64(r)), sa_m)) for r in range(height)]

            def term(kk):
                b = self.b
                xs = [self.cast_to(self.read(a, b.add(arow, b.mul(kk, sa_k))), a.dtype,
                                   dtype) for arow in arows]
                crow = b.add(oc, b.mul(kk, sc_k))
                ys = [self.cast_to(self.read(c, b.add(crow, b.mul(i64(j), sc_n))),
                                   c.dtype, dtype) for j in range(count)]
                for x, line in zip(xs, cells):
                    for y, cell in zip(ys, line):
                        product = self.arith_of(dtype, "mul", x, y)
                        b.store(self.arith_of(dtype, "add", b.load(cell, typ=t), product),
                                cell)

            self.loop(k, term)
            for r, line in enumerate(cells):
                orow = b.add(o, b.mul(b.add(first, i64(r)), so_m))
                for j, cell in enumerate(line):
                    self.write(out, b.add(orow, b.mul(i64(j), so_n)),
                               b.load(cell, typ=t), dtype)

        pairs = b.sdiv(m, i64(2))
        self.loop(pairs, lambda p: rows(self.b.mul(p, i64(2)), 2))
        with b.if_then(b.icmp_signed("!=", b.mul(pairs, i64(2)), m)):
            rows(b.sub(m, i64(1)), 1)


ARRAY_RULES = {
    "transpose": "transpose", "diagonal": "diagonal", "slice": "slice", "strided": "strided",
    "broadcast_to": "broadcast_to", "reshape": "reshape", "copy": "copy",
    "concatenate": "concatenate", "stack": "stack",
    "arange": "arange", "linspace": "linspace", "take": "take", "mask": "mask",
    "assign": "assign", "iadd": "iadd", "scatter_add": "scatter_add", "mask_add": "mask_add",
    "sum": "reduce", "mean": "reduce", "prod": "reduce", "amax": "reduce", "amin": "reduce",
    "argmax": "reduce", "argmin": "reduce", "trace": "trace", "sum_to": "sum_to",
    "matmul": "matmul",
}


FEW_SUMS = 4  # sum_to's results of at most this many elements add in registers
NARROW = 4  # a product with fewer result columns sums each element in a register


def _constant_length(d):
    return isinstance(d, ir.Constant) and d.constant >= 0


def _is_one(d):
    """Whether a length is the constant 1 (it broadcasts to any length, unchecked)."""
    return isinstance(d, ir.Constant) and d.constant == 1


def _chains(outer, inner, n):
    """Whether a stride `outer` is `inner` times the length n, as values known while compiling
    (constants, or n itself for a unit inner stride, or the product of the two)."""
    if isinstance(inner, Pack) or isinstance(outer, Pack):
        if not (isinstance(inner, Pack) and isinstance(outer, Pack)):
            return False
        return all(_chains(o, i, n) for o, i in zip(outer.items, inner.items))
    if isinstance(inner, ir.Constant) and inner.constant in (0, 1):
        if inner.constant == 0:
            return isinstance(outer, ir.Constant) and outer.constant == 0
        return outer is n or (isinstance(outer, ir.Constant) and isinstance(n, ir.Constant)
                               and outer.constant == n.constant)
    if isinstance(outer, ir.Constant):
        return isinstance(inner, ir.Constant) and isinstance(n, ir.Constant) and \
            outer.constant == inner.constant * n.constant
    return isinstance(outer, ir.Instruction) and outer.opname == "mul" and \
        {id(x) for x in outer.operands} == {id(inner), id(n)} and len(outer.operands) == 2
